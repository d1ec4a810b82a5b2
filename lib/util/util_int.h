/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the layers of libcairn (not part of the public API). */
#ifndef CAIRN_UTIL_INT_H
#define CAIRN_UTIL_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <cairn/types.h>

/* "a directory", "a character device", "a FIFO", ... for messages about a host
 * object of type (mode & S_IFMT) that is not what a call wanted. */
const char *cairn_mode_kind(unsigned mode);
const char *util_unreadable_kind(const char *path);

/* Bytes that should start a cairn image but lack its magic: writes what was
 * expected and found into why ("... found 68 73 71 73 ...: a squashfs image",
 * naming a format it recognises among the first n bytes) and returns
 * -CAIRN_ENOTIMAGE. n 0 (head may be NULL): an empty file. */
int util_not_cairn(const uint8_t *head, size_t n, char *why, size_t why_len);

/* A file of size bytes, too short for a superblock, starting with the n bytes
 * of head: not an image when they lack the magic (a text file given by
 * mistake: util_not_cairn()), else a truncated image (-CAIRN_ECORRUPT). */
int util_too_short(const uint8_t *head, size_t n, uint64_t size, char *why, size_t why_len);

/* "dir/name" with one '/' between them (none added when dir ends with one), or
 * name alone when dir is empty. name_len bytes of name. malloc'd; NULL on ENOMEM. */
/* Functions that explain a refusal take an optional (why, why_len) buffer: with
 * none given, point them at the caller's scratch `spare` so they can always write
 * one. Leaves *why empty. */
static inline void util_why_init(char **why, size_t *why_len, char *spare, size_t spare_len)
{
	if (!*why || !*why_len) {
		*why = spare;
		*why_len = spare_len;
	}
	(*why)[0] = '\0';
}

/* The namespace of an xattr name of len bytes, as the kernel's xattr_resolve_name():
 * UTIL_XATTR_USER, _TRUSTED, _SECURITY or _SYSTEM; -EINVAL for "user.",
 * "trusted." or "security." with nothing after it, -EOPNOTSUPP for an unknown
 * namespace (and "system." alone). */
enum { UTIL_XATTR_USER, UTIL_XATTR_TRUSTED, UTIL_XATTR_SECURITY, UTIL_XATTR_SYSTEM };
int util_xattr_ns(const char *name, size_t len);

char *util_path_join(const char *dir, const char *name, size_t name_len);
/* name when it is absolute or base is empty, else util_path_join(base, name):
 * a path written relative to base. */
char *util_path_resolve(const char *base, const char *name);
/* The same for a name found in directory dir, where an empty dir is the root
 * ("/name"), not the cwd: a qcow2 backing file named beside an image in "/". */
char *util_path_resolve_in(const char *dir, const char *name);

/* A readdir callback (cairn_dirent_cb) that collects entries but "." and "..",
 * stopping after max of them (0 = all). Zero-initialise, set max, run a readdir
 * with it, then util_dirlist_finish() with the readdir's result. */
struct util_dirlist {
	struct cairn_dirent *e;     /* names as offsets into names until finish */
	size_t n, cap, max;
	char *names;
	size_t names_len, names_cap;
	int err;
};
int util_dirlist_cb(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
		    uint64_t next);
/* Frees l's buffers; on success *out is one malloc'd block (entries, then their
 * names; NULL when there are none) and the count is returned, else a negative
 * errno (rc, or the collector's own -ENOMEM) with *out NULL. */
ssize_t util_dirlist_finish(struct util_dirlist *l, int rc, struct cairn_dirent **out);

#endif
