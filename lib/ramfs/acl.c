/* SPDX-License-Identifier: MIT */
/*
 * POSIX ACLs, kept as tmpfs keeps them: the xattrs system.posix_acl_access and
 * system.posix_acl_default hold the kernel's xattr format (a version word, then
 * tag/perm/id entries, little-endian). The kernel enforces them (FUSE with
 * default_permissions and FUSE_POSIX_ACL); the RAM fs keeps them and the mode in
 * step, as the kernel's posix_acl_* helpers do for a local filesystem:
 *   - setting an access ACL sets the mode's permission bits (group = the mask),
 *     and an ACL that says no more than the mode is not stored at all;
 *   - chmod rewrites the owner, mask (or group) and other entries;
 *   - a new object in a directory with a default ACL gets it as its access ACL,
 *     masked by the mode asked for (umask ignored), and directories inherit the
 *     default ACL itself.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include "ramfs/internal.h"

#define ACL_VERSION 2u
#define ACL_HDR 4u
#define ACL_ENTRY 8u
#define TAG_USER_OBJ 0x01u
#define TAG_USER 0x02u
#define TAG_GROUP_OBJ 0x04u
#define TAG_GROUP 0x08u
#define TAG_MASK 0x10u
#define TAG_OTHER 0x20u

static uint16_t get16(const unsigned char *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return le16toh(v);
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static void put16(unsigned char *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
}

int ramfs_acl_kind(const char *name)
{
	if (!strcmp(name, RAMFS_ACL_ACCESS))
		return RAMFS_ACL_IS_ACCESS;
	if (!strcmp(name, RAMFS_ACL_DEFAULT))
		return RAMFS_ACL_IS_DEFAULT;
	return 0;
}

/* Entries sorted by tag, one each of owner, group and other, a mask when there
 * are named entries (the kernel's posix_acl_valid(), without the id order). */
int ramfs_acl_check(const void *value, size_t size)
{
	const unsigned char *p = value;
	unsigned seen = 0, prev = 0, named = 0;

	if (size < ACL_HDR || (size - ACL_HDR) % ACL_ENTRY || get32(p) != ACL_VERSION)
		return -EINVAL;
	for (size_t off = ACL_HDR; off < size; off += ACL_ENTRY) {
		unsigned tag = get16(p + off), perm = get16(p + off + 2);

		if (perm & ~7u || tag < prev)
			return -EINVAL;
		switch (tag) {
		case TAG_USER_OBJ: case TAG_GROUP_OBJ: case TAG_MASK: case TAG_OTHER:
			if (seen & tag)
				return -EINVAL;
			break;
		case TAG_USER: case TAG_GROUP:
			named = 1;
			break;
		default:
			return -EINVAL;
		}
		seen |= tag;
		prev = tag;
	}
	if ((seen & (TAG_USER_OBJ | TAG_GROUP_OBJ | TAG_OTHER)) !=
	    (TAG_USER_OBJ | TAG_GROUP_OBJ | TAG_OTHER) || (named && !(seen & TAG_MASK)))
		return -EINVAL;
	return 0;
}

uint32_t ramfs_acl_mode(const void *value, size_t size, int *equiv)
{
	const unsigned char *p = value;
	uint32_t mode = 0, group = 0, mask = 0;
	int has_mask = 0;

	*equiv = 1;
	for (size_t off = ACL_HDR; off + ACL_ENTRY <= size; off += ACL_ENTRY) {
		unsigned perm = get16(p + off + 2);

		switch (get16(p + off)) {
		case TAG_USER_OBJ: mode |= perm << 6; break;
		case TAG_GROUP_OBJ: group = perm; break;
		case TAG_MASK: mask = perm; has_mask = 1; *equiv = 0; break;
		case TAG_OTHER: mode |= perm; break;
		default: *equiv = 0; break;
		}
	}
	return mode | (has_mask ? mask : group) << 3;
}

void ramfs_acl_chmod(void *value, size_t size, uint32_t mode)
{
	unsigned char *p = value, *group = NULL;
	int has_mask = 0;

	for (size_t off = ACL_HDR; off + ACL_ENTRY <= size; off += ACL_ENTRY) {
		switch (get16(p + off)) {
		case TAG_USER_OBJ: put16(p + off + 2, (mode >> 6) & 7); break;
		case TAG_GROUP_OBJ: group = p + off; break;
		case TAG_MASK: put16(p + off + 2, (mode >> 3) & 7); has_mask = 1; break;
		case TAG_OTHER: put16(p + off + 2, mode & 7); break;
		default: break;
		}
	}
	if (group && !has_mask)
		put16(group + 2, (mode >> 3) & 7);
}

int ramfs_acl_create(void *value, size_t size, uint32_t *mode)
{
	unsigned char *p = value, *group = NULL, *mask = NULL;
	uint32_t m = *mode & 0777;
	int not_equiv = 0;

	for (size_t off = ACL_HDR; off + ACL_ENTRY <= size; off += ACL_ENTRY) {
		unsigned perm = get16(p + off + 2);

		switch (get16(p + off)) {
		case TAG_USER_OBJ:
			perm &= (m >> 6) & 7;
			m &= (perm << 6) | ~0700u;
			put16(p + off + 2, (uint16_t)perm);
			break;
		case TAG_GROUP_OBJ: group = p + off; break;
		case TAG_MASK: mask = p + off; not_equiv = 1; break;
		case TAG_OTHER:
			perm &= m & 7;
			m &= perm | ~07u;
			put16(p + off + 2, (uint16_t)perm);
			break;
		default: not_equiv = 1; break;
		}
	}
	/* The mask stands for the group class when there is one (as the kernel). */
	if (mask || group) {
		unsigned char *g = mask ? mask : group;
		unsigned perm = get16(g + 2) & ((m >> 3) & 7);

		m &= (perm << 3) | ~070u;
		put16(g + 2, (uint16_t)perm);
	}
	*mode = (*mode & ~0777u) | m;
	return not_equiv;
}
