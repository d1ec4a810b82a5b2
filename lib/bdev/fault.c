/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER: replaced by the IO stack (issue 3). */
#include <errno.h>
#include <cairn/bdev.h>
int cairn_bdev_fault_new(struct cairn_bdev *below, const struct cairn_fault_config *cfg,
			 struct cairn_bdev **out) { return -ENOSYS; }
int cairn_bdev_fault_set(struct cairn_bdev *dev, const struct cairn_fault_config *cfg) { return -EINVAL; }
