/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER: replaced by the IO stack (issue 3). */
#include <errno.h>
#include <cairn/bdev.h>
int cairn_bdev_delay_new(struct cairn_bdev *below, const struct cairn_delay_config *cfg,
			 struct cairn_bdev **out) { return -ENOSYS; }
