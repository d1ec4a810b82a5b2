/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER: replaced by the IO stack (issue 3). */
#include <errno.h>
#include <cairn/bdev.h>
int cairn_bdev_stats_new(struct cairn_bdev *below, struct cairn_bdev **out) { return -ENOSYS; }
int cairn_bdev_stats_get(struct cairn_bdev *dev, struct cairn_bdev_counters *out) { return -EINVAL; }
void cairn_bdev_stats_reset(struct cairn_bdev *dev) { }
