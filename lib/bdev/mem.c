/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER: replaced by the IO stack (issue 3). */
#include <errno.h>
#include <cairn/bdev.h>
int cairn_bdev_mem_new(const void *buf, size_t len, int copy, struct cairn_bdev **out) { return -ENOSYS; }
