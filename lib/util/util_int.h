/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the layers of libcairn (not part of the public API). */
#ifndef CAIRN_UTIL_INT_H
#define CAIRN_UTIL_INT_H

/* "a directory", "a character device", "a FIFO", ... for messages about a host
 * object of type (mode & S_IFMT) that is not what a call wanted. */
const char *cairn_mode_kind(unsigned mode);

#endif
