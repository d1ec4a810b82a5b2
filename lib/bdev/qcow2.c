/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER: replaced by the qcow2 bdev (issue 8). */
#include <errno.h>
#include <cairn/bdev.h>
int cairn_bdev_is_qcow2(struct cairn_bdev *dev) { return 0; }
int cairn_bdev_qcow2_new(struct cairn_bdev *below, const char *base_dir,
			 const struct cairn_qcow2_config *cfg, struct cairn_bdev **out) { return -ENOTSUP; }
