/* SPDX-License-Identifier: MIT */
/*
 * Error convention: every cairn call that can fail returns a negative errno value
 * (-EIO, -ENOENT, -ENOMEM, ...). A structurally invalid image is -CAIRN_ECORRUPT,
 * distinct from -EIO (the device failed) so callers can tell "bad bytes" from
 * "bad disk". The FUSE front end maps -CAIRN_ECORRUPT and -CAIRN_EDIGEST to EIO
 * for applications.
 */
#ifndef CAIRN_ERROR_H
#define CAIRN_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

#include <errno.h>

#define CAIRN_ECORRUPT EUCLEAN /* 117, "Structure needs cleaning", as EROFS uses */
/* Bytes that do not match the image's SHA-256 digests (include/cairn/verify.h):
 * tampered, torn or stale storage. Applications see EIO, like a corrupt image. */
#define CAIRN_EDIGEST  EBADMSG /* 74 */
/* Bytes that are not a cairn image at all (no magic at byte 0: another format,
 * zeros, the wrong file), as opposed to a damaged one. */
#define CAIRN_ENOTIMAGE ENOEXEC /* 8, "Exec format error": the wrong format */

/* Text for a negative cairn error code; never NULL. */
const char *cairn_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif
