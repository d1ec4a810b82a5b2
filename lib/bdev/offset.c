/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER: replaced by the IO stack (issue 3). */
#include <errno.h>
#include <cairn/bdev.h>
int cairn_bdev_offset_new(struct cairn_bdev *below, uint64_t off, uint64_t len,
			  struct cairn_bdev **out) { return -ENOSYS; }
