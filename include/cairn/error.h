/* SPDX-License-Identifier: MIT */
/*
 * Error convention: every cairn call that can fail returns a negative errno value
 * (-EIO, -ENOENT, -ENOMEM, ...). A structurally invalid image is -CAIRN_ECORRUPT,
 * distinct from -EIO (the device failed) so callers can tell "bad bytes" from
 * "bad disk". The FUSE front end maps -CAIRN_ECORRUPT to EIO for applications.
 */
#ifndef CAIRN_ERROR_H
#define CAIRN_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

#include <errno.h>

#define CAIRN_ECORRUPT EUCLEAN /* 117, "Structure needs cleaning", as EROFS uses */

/* Text for a negative cairn error code; never NULL. */
const char *cairn_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif
