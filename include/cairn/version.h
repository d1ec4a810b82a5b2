/* SPDX-License-Identifier: MIT */
/*
 * The library's version, which changes with the API and ABI. The on-disk format
 * has its own, CAIRN_FORMAT_VERSION_* in <cairn/format.h> (as littlefs keeps
 * LFS_VERSION apart from LFS_DISK_VERSION): a library release need not change the
 * format, and an image does not care which library wrote it.
 *
 * The Makefile reads CAIRN_VERSION_STRING from here (cairn.pc, `cairn --version`).
 */
#ifndef CAIRN_VERSION_H
#define CAIRN_VERSION_H

#ifdef __cplusplus
extern "C" {
#endif

#define CAIRN_VERSION_MAJOR 0
#define CAIRN_VERSION_MINOR 1
#define CAIRN_VERSION_PATCH 0
#define CAIRN_VERSION_STRING "0.1.0"

/* CAIRN_VERSION_STRING of the library linked in, which can differ from the
 * header a program was compiled with when libcairn.so is replaced. */
const char *cairn_version(void);

#ifdef __cplusplus
}
#endif

#endif
