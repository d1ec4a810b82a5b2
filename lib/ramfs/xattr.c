/* SPDX-License-Identifier: MIT */
/*
 * Extended attributes: a short list per inode, in the order they were set, under
 * the inode's lock. Name and value bytes count against the size limit.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include "ramfs/internal.h"
#include "util/util_int.h"

#define XATTR_NAME_LIMIT 255    /* XATTR_NAME_MAX */
#define XATTR_VALUE_LIMIT 65536 /* XATTR_SIZE_MAX */

static size_t xattr_size(size_t name_len, size_t value_len)
{
	return sizeof(struct ramfs_xattr) + name_len + 1 + value_len;
}

static uint64_t xattr_charge(const struct ramfs_xattr *x)
{
	return (uint64_t)x->name_len + x->value_len;
}

/* Known namespace and a non-empty name after it, as the kernel's xattr_resolve_name();
 * of system.* only the two POSIX ACLs (acl.c). */
static int check_xattr_name(const struct ramfs_inode *n, const char *name, bool writing)
{
	size_t len = strnlen(name, XATTR_NAME_LIMIT + 1);
	int kind;

	if (len == 0)
		return -EINVAL;
	if (len > XATTR_NAME_LIMIT)
		return -ERANGE;
	switch (ramfs_acl_kind(name)) {
	case RAMFS_ACL_IS_ACCESS:
		return S_ISLNK(n->type) ? -EOPNOTSUPP : 0;
	case RAMFS_ACL_IS_DEFAULT:
		if (S_ISLNK(n->type))
			return -EOPNOTSUPP;
		/* Only directories have one (the kernel's set_posix_acl()). */
		return S_ISDIR(n->type) ? 0 : writing ? -EACCES : -ENODATA;
	default:
		break;
	}
	kind = util_xattr_ns(name, len);
	if (kind == UTIL_XATTR_SYSTEM) /* of system.* only the two ACLs */
		return -EOPNOTSUPP;
	/* user.* only on files and directories (xattr_permission()). */
	if (kind == UTIL_XATTR_USER && !S_ISREG(n->type) && !S_ISDIR(n->type))
		return writing ? -EPERM : -ENODATA;
	return kind < 0 ? kind : 0;
}

static struct ramfs_xattr **xattr_find(struct ramfs_inode *n, const char *name)
{
	size_t len = strlen(name);
	struct ramfs_xattr **pp;

	for (pp = &n->xattrs; *pp; pp = &(*pp)->next)
		if ((*pp)->name_len == len && !memcmp((*pp)->data, name, len))
			return pp;
	return NULL;
}

static void xattr_free(struct cairn_ramfs *fs, struct ramfs_xattr *x)
{
	ramfs_unreserve(fs, xattr_charge(x));
	ramfs_meta_free(fs, x, xattr_size(x->name_len, x->value_len));
}

void ramfs_xattr_free_all(struct cairn_ramfs *fs, struct ramfs_inode *n)
{
	while (n->xattrs) {
		struct ramfs_xattr *x = n->xattrs;

		n->xattrs = x->next;
		xattr_free(fs, x);
	}
}

/* Set name (flags as setxattr); caller holds n->lock for writing. */
static int xattr_store(struct cairn_ramfs *fs, struct ramfs_inode *n, const char *name,
		       const void *value, size_t size, int flags)
{
	struct ramfs_xattr **pp = xattr_find(n, name), *x;
	size_t len = strlen(name);
	uint64_t old_charge;
	int err = 0;

	if (pp && (flags & XATTR_CREATE))
		return -EEXIST;
	if (!pp && (flags & XATTR_REPLACE))
		return -ENODATA;
	/* Charge only what the new value adds over the old one, before anything
	 * changes: a failure leaves the old value in place. */
	old_charge = pp ? xattr_charge(*pp) : 0;
	if (len + size > old_charge)
		err = ramfs_reserve(fs, len + size - old_charge);
	if (err)
		return err;
	x = ramfs_meta_alloc(fs, xattr_size(len, size));
	if (!x) {
		if (len + size > old_charge)
			ramfs_unreserve(fs, len + size - old_charge);
		return -ENOMEM;
	}
	x->name_len = (uint32_t)len;
	x->value_len = (uint32_t)size;
	memcpy(x->data, name, len + 1);
	if (size)
		memcpy(x->data + len + 1, value, size);
	if (pp) {
		struct ramfs_xattr *old = *pp;

		x->next = old->next;
		*pp = x;
		if (old_charge > len + size)
			ramfs_unreserve(fs, old_charge - (len + size));
		ramfs_meta_free(fs, old, xattr_size(old->name_len, old->value_len));
	} else {
		x->next = NULL;
		for (pp = &n->xattrs; *pp; pp = &(*pp)->next)
			;
		*pp = x;
	}
	return 0;
}

void *ramfs_xattr_value(struct ramfs_inode *n, const char *name, size_t *len)
{
	struct ramfs_xattr **pp = xattr_find(n, name);

	if (!pp)
		return NULL;
	*len = (*pp)->value_len;
	return (*pp)->data + (*pp)->name_len + 1;
}

int ramfs_xattr_add(struct cairn_ramfs *fs, struct ramfs_inode *n, const char *name,
		    const void *value, size_t size)
{
	int err;

	pthread_rwlock_wrlock(&n->lock);
	err = xattr_store(fs, n, name, value, size, 0);
	pthread_rwlock_unlock(&n->lock);
	return err;
}

/* An access ACL sets the mode's permission bits; one the mode says all of is
 * dropped rather than stored (posix_acl_update_mode()). */
static int set_access_acl(struct cairn_ramfs *fs, struct ramfs_inode *n, const void *value,
			  size_t size, int flags)
{
	int equiv, err = 0;
	uint32_t perm = ramfs_acl_mode(value, size, &equiv);

	if (equiv) {
		struct ramfs_xattr **pp = xattr_find(n, RAMFS_ACL_ACCESS);

		if (!pp && (flags & XATTR_REPLACE))
			return -ENODATA;
		if (pp && (flags & XATTR_CREATE))
			return -EEXIST;
		if (pp) {
			struct ramfs_xattr *x = *pp;

			*pp = x->next;
			xattr_free(fs, x);
		}
	} else {
		err = xattr_store(fs, n, RAMFS_ACL_ACCESS, value, size, flags);
	}
	if (!err)
		n->mode = (n->mode & ~0777u) | perm;
	return err;
}

int cairn_ramfs_setxattr(struct cairn_ramfs *fs, cairn_ino_t ino, const char *name,
			 const void *value, size_t size, int flags)
{
	struct ramfs_inode *n = ramfs_get(fs, ino);
	int kind, err;

	if (!n)
		return -ENOENT;
	if (flags & ~(XATTR_CREATE | XATTR_REPLACE))
		return -EINVAL;
	err = check_xattr_name(n, name, true);
	if (err)
		return err;
	if (size > XATTR_VALUE_LIMIT)
		return -E2BIG;
	kind = ramfs_acl_kind(name);
	if (kind && (err = ramfs_acl_check(value, size)))
		return err;
	pthread_rwlock_wrlock(&n->lock);
	if (kind == RAMFS_ACL_IS_ACCESS)
		err = set_access_acl(fs, n, value, size, flags);
	else
		err = xattr_store(fs, n, name, value, size, flags);
	if (!err)
		ramfs_now(&n->ctime);
	pthread_rwlock_unlock(&n->lock);
	return err;
}

ssize_t cairn_ramfs_getxattr(struct cairn_ramfs *fs, cairn_ino_t ino, const char *name,
			     void *buf, size_t size)
{
	struct ramfs_inode *n = ramfs_get(fs, ino);
	struct ramfs_xattr **pp;
	ssize_t r;

	if (!n)
		return -ENOENT;
	r = check_xattr_name(n, name, false);
	if (r)
		return r;
	pthread_rwlock_rdlock(&n->lock);
	pp = xattr_find(n, name);
	if (!pp) {
		r = -ENODATA;
	} else {
		r = (*pp)->value_len;
		if (size && size < (*pp)->value_len)
			r = -ERANGE;
		else if (size)
			memcpy(buf, (*pp)->data + (*pp)->name_len + 1, (*pp)->value_len);
	}
	pthread_rwlock_unlock(&n->lock);
	return r;
}

ssize_t cairn_ramfs_listxattr(struct cairn_ramfs *fs, cairn_ino_t ino, char *buf, size_t size)
{
	struct ramfs_inode *n = ramfs_get(fs, ino);
	size_t need = 0;
	ssize_t r;

	if (!n)
		return -ENOENT;
	pthread_rwlock_rdlock(&n->lock);
	for (struct ramfs_xattr *x = n->xattrs; x; x = x->next)
		need += x->name_len + 1;
	r = (ssize_t)need;
	if (size && size < need) {
		r = -ERANGE;
	} else if (size) {
		char *p = buf;

		for (struct ramfs_xattr *x = n->xattrs; x; x = x->next) {
			memcpy(p, x->data, x->name_len + 1);
			p += x->name_len + 1;
		}
	}
	pthread_rwlock_unlock(&n->lock);
	return r;
}

int cairn_ramfs_removexattr(struct cairn_ramfs *fs, cairn_ino_t ino, const char *name)
{
	struct ramfs_inode *n = ramfs_get(fs, ino);
	struct ramfs_xattr **pp;
	int err;

	if (!n)
		return -ENOENT;
	err = check_xattr_name(n, name, true);
	if (err)
		return err;
	pthread_rwlock_wrlock(&n->lock);
	pp = xattr_find(n, name);
	if (pp) {
		struct ramfs_xattr *x = *pp;

		*pp = x->next;
		xattr_free(fs, x);
		ramfs_now(&n->ctime);
	} else {
		err = -ENODATA;
	}
	pthread_rwlock_unlock(&n->lock);
	return err;
}
