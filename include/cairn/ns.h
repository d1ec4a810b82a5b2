/* SPDX-License-Identifier: MIT */
/*
 * Layer 5: the namespace. One tree made of a read-only image (the lower layer)
 * and a RAM fs (the upper layer), in one of these shapes:
 *
 *   read-only   the image alone; every write gives -EROFS.
 *   tmp paths   the image, with RAM subtrees at given paths (`/tmp:/var/log`).
 *               A RAM subtree is seeded with the image's content at that path,
 *               if any, by the copy routine copy-up uses (same holes, same
 *               xattrs). Missing parents appear as read-only empty directories.
 *   overlay     the whole tree is writable: an object is copied up into RAM
 *               (data, metadata, xattrs, parents first) the first time it is
 *               changed; deletions leave whiteouts; a directory removed and made
 *               again is opaque. Renaming a directory that exists in the image
 *               gives -EXDEV, as overlayfs does without redirect_dir. One name
 *               of an image file with several hard links copies up alone and
 *               gets an inode number of its own; the names left show the image's
 *               inode with the link count they still have. A file's data is
 *               copied without the namespace lock, into a nameless RAM file that
 *               takes the name when complete.
 *   empty       RAM only, like tmpfs.
 *
 * Objects are named by node ids, which is what FUSE calls inode numbers: the
 * root is CAIRN_NS_ROOT, and every call that returns an entry (lookup, mknod,
 * mkdir, symlink, link) adds one lookup reference that cairn_ns_forget() drops.
 * A node is freed when its lookup count is 0 and nothing below it is referenced,
 * so memory stays flat after a walk of a huge tree if the caller forgets.
 * st.ino in the returned attributes is the stable inode number to show users
 * (the image's for image objects, even after copy-up).
 *
 * A read-only namespace (the image alone) without CAIRN_NS_NAMES is lean: it
 * keeps nothing per object. A node id there is the image inode number with the
 * file type above bit 32, valid for as long as the namespace (image inodes
 * never change): looking an object up again gives the same id, hard links
 * share one, and a forget only lowers the count of references held
 * (cairn_ns_usage). Its memory does not grow with what the caller holds.
 *
 * All calls are thread-safe and return negative errno values (-CAIRN_ECORRUPT
 * for a corrupt image). Node ids passed in must be live (looked up and not yet
 * forgotten), as the FUSE kernel module guarantees.
 *
 * Ownership: cairn_ns_new() does not take the image; the caller closes it after
 * cairn_ns_free(). The ns owns its RAM fs.
 */
#ifndef CAIRN_NS_H
#define CAIRN_NS_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <cairn/image.h>
#include <cairn/ramfs.h>

struct cairn_ns;

#define CAIRN_NS_ROOT 1u

#define CAIRN_NS_OVERLAY 1u /* whole tree writable (copy-up) */
#define CAIRN_NS_EMPTY   2u /* no image: RAM only */
#define CAIRN_NS_USE_ONCE 4u /* the reader of cairn_ns_read_iov keeps what it gets of
			      * image files (a kernel page cache): the image cache drops
			      * it once delivered (cairn_image_delivered) */
#define CAIRN_NS_NAMES 8u    /* read-only too: a node with its name per object held, so
			      * cairn_ns_path() names any of them (traces); else lean */

struct cairn_ns_config {
	struct cairn_image *image;   /* lower tree; NULL only with CAIRN_NS_EMPTY; not owned */
	unsigned flags;              /* CAIRN_NS_* */
	/* ':'-separated absolute paths, or NULL. Each may not be "/", nor hold "."
	 * or ".." (-EINVAL), nor name or pass through a non-directory of the image
	 * (-ENOTDIR: a RAM directory there would hide it). */
	const char *tmp_paths;
	char *err_path;              /* when a tmp path fails, it is copied here; may be NULL */
	size_t err_path_size;
	struct cairn_ramfs_config ram; /* limits of the RAM layer */
};

/* An entry as FUSE needs it. */
#define CAIRN_NS_E_IMMUTABLE 1u /* can never change while mounted: cache it long */
#define CAIRN_NS_E_VOLATILE  2u /* its attributes change without calls on it: don't cache them */
struct cairn_ns_entry {
	uint64_t node;
	struct cairn_stat st;
	unsigned flags;
};

int cairn_ns_new(const struct cairn_ns_config *cfg, struct cairn_ns **out);
void cairn_ns_free(struct cairn_ns *ns);

/* -ENOENT sets e->flags to CAIRN_NS_E_IMMUTABLE when the directory can never
 * gain that name (a negative lookup may then be cached). */
int cairn_ns_lookup(struct cairn_ns *ns, uint64_t dir, const char *name, size_t len,
		    struct cairn_ns_entry *e);
void cairn_ns_forget(struct cairn_ns *ns, uint64_t node, uint64_t nlookup);
/* One more lookup reference on a live node, dropped with cairn_ns_forget(ns, node,
 * 1): keeps the node id standing for the same object while work queued on it
 * runs, even if the kernel forgets it meanwhile. */
void cairn_ns_hold(struct cairn_ns *ns, uint64_t node);
int cairn_ns_getattr(struct cairn_ns *ns, uint64_t node, struct cairn_ns_entry *e);
int cairn_ns_setattr(struct cairn_ns *ns, uint64_t node, const struct cairn_setattr *sa,
		     const struct cairn_cred *cred, struct cairn_ns_entry *e);
int cairn_ns_mknod(struct cairn_ns *ns, uint64_t dir, const char *name, size_t len,
		   uint32_t mode, uint64_t rdev, const struct cairn_cred *cred,
		   struct cairn_ns_entry *e);
int cairn_ns_mkdir(struct cairn_ns *ns, uint64_t dir, const char *name, size_t len,
		   uint32_t mode, const struct cairn_cred *cred, struct cairn_ns_entry *e);
int cairn_ns_symlink(struct cairn_ns *ns, uint64_t dir, const char *name, size_t len,
		     const char *target, const struct cairn_cred *cred, struct cairn_ns_entry *e);
/* O_TMPFILE: a regular file in dir's RAM layer with no name (nlink 0), made as
 * a file in dir would be (owner, default ACL, umask); cairn_ns_link can name it.
 * -EROFS on the read-only part (an overlay copies dir up). */
int cairn_ns_tmpfile(struct cairn_ns *ns, uint64_t dir, uint32_t mode,
		     const struct cairn_cred *cred, struct cairn_ns_entry *e);
int cairn_ns_link(struct cairn_ns *ns, uint64_t node, uint64_t newdir, const char *name,
		  size_t len, struct cairn_ns_entry *e);
int cairn_ns_unlink(struct cairn_ns *ns, uint64_t dir, const char *name, size_t len);
int cairn_ns_rmdir(struct cairn_ns *ns, uint64_t dir, const char *name, size_t len);
/* flags: 0, RENAME_NOREPLACE or RENAME_EXCHANGE, with RENAME_WHITEOUT (not with
 * RENAME_EXCHANGE: a character device 0/0 is left at the old name); others -EINVAL. */
int cairn_ns_rename(struct cairn_ns *ns, uint64_t olddir, const char *oldname, size_t oldlen,
		    uint64_t newdir, const char *newname, size_t newlen, unsigned flags);
ssize_t cairn_ns_readlink(struct cairn_ns *ns, uint64_t node, char *buf, size_t len);
/* Cookies as in cairn_image_readdir (0 starts, `next` resumes); the callback gets
 * st.ino values. The callback runs with no lock held, so it may call back into the
 * ns (e.g. cairn_ns_lookup for readdirplus). */
int cairn_ns_readdir(struct cairn_ns *ns, uint64_t dir, uint64_t cookie, cairn_dirent_cb cb,
		     void *ctx);

/* open flags are open(2)'s: a write access or O_TRUNC copies up (overlay) or
 * gives -EROFS on the read-only part. O_TRUNC empties a regular file and sets its
 * mtime and ctime (an image file is copied up without its data); cred (NULL =
 * root) decides whether that clears setuid. *fh is handed back to release. */
int cairn_ns_open(struct cairn_ns *ns, uint64_t node, int flags, const struct cairn_cred *cred,
		  uint64_t *fh);
void cairn_ns_release(struct cairn_ns *ns, uint64_t node, uint64_t fh);
ssize_t cairn_ns_read(struct cairn_ns *ns, uint64_t node, void *buf, size_t len, uint64_t off);
/* cairn_ns_read() with cairn_image_read_flags()' CAIRN_READ_* flags for image files. */
ssize_t cairn_ns_read_flags(struct cairn_ns *ns, uint64_t node, void *buf, size_t len,
			    uint64_t off, unsigned flags);
/* cairn_image_hot_ranges() of a node that is an image file (not copied up);
 * 0 without calling fn for anything else. */
int cairn_ns_hot_ranges(struct cairn_ns *ns, uint64_t node, cairn_range_cb fn, void *ctx);

/* cairn_image_chunk_span() of a node that is an image file (not copied up);
 * -ENOENT for anything else. */
int cairn_ns_chunk_span(struct cairn_ns *ns, uint64_t node, uint64_t off, uint64_t *lo,
			uint64_t *hi);
/* cairn_image_read_random() of a node that is an image file (not copied up); 0
 * for anything else. */
int cairn_ns_read_random(struct cairn_ns *ns, uint64_t node, uint64_t off, uint64_t len);
/* With CAIRN_NS_USE_ONCE: bytes [off, off+len) of node, read by cairn_ns_read(),
 * were stored by the caller into the kernel's page cache (the push of -o
 * prefetch): the image's caches may drop them, hot data included
 * (cairn_image_pushed). Otherwise a no-op. */
void cairn_ns_delivered(struct cairn_ns *ns, uint64_t node, uint64_t off, uint64_t len);

/* Read and hand the bytes to fn as iovecs: RAM files without a copy (see
 * cairn_ramfs_read_iov), image files lent from the cache where they can be
 * (cairn_image_read_pinned), else through one buffer. Returns fn's value, or a
 * negative errno if reading failed. *from_image (may be NULL) says which layer.
 * fn may reply to whoever holds the node (FUSE): after it has run, the node can be
 * forgotten at any moment, so callers must not use the node id afterwards. */
int cairn_ns_read_iov(struct cairn_ns *ns, uint64_t node, size_t len, uint64_t off,
		      cairn_iov_fn fn, void *ctx, int *from_image);
/* Kill-privilege rules, as the kernel applies them: a write, a truncation (setattr
 * SIZE or open O_TRUNC) or a change of owner (setattr UID/GID) of a regular file
 * drops its security.capability, and by a caller other than root (cred) its
 * set-user-ID bit (set-group-ID too when group-executable); a change of owner
 * clears those bits whoever makes it. */
ssize_t cairn_ns_write(struct cairn_ns *ns, uint64_t node, const void *buf, size_t len,
		       uint64_t off, int append, const struct cairn_cred *cred);
int cairn_ns_fallocate(struct cairn_ns *ns, uint64_t node, int mode, uint64_t off, uint64_t len);
int64_t cairn_ns_lseek(struct cairn_ns *ns, uint64_t node, uint64_t off, int whence);
int cairn_ns_statfs(struct cairn_ns *ns, struct cairn_statfs *out);

int cairn_ns_setxattr(struct cairn_ns *ns, uint64_t node, const char *name, const void *value,
		      size_t size, int flags);
ssize_t cairn_ns_getxattr(struct cairn_ns *ns, uint64_t node, const char *name, void *buf,
			  size_t size);
ssize_t cairn_ns_listxattr(struct cairn_ns *ns, uint64_t node, char *buf, size_t size);
int cairn_ns_removexattr(struct cairn_ns *ns, uint64_t node, const char *name);

/* The node's path from the root ("/a/b"), as last looked up; for traces.
 * Returns its length or -ERANGE. A lean namespace keeps no names: it finds one
 * path of the inode by a bounded walk of the image's directories (for error
 * messages; slow on big images), -ENOENT when the walk gives up. */
ssize_t cairn_ns_path(struct cairn_ns *ns, uint64_t node, char *buf, size_t len);

struct cairn_ns_usage {
	uint64_t nodes;                 /* nodes kept (the root: 1; lean: always 1) */
	uint64_t refs;                  /* lookup references held, the root's aside */
	struct cairn_ramfs_usage ram;   /* zero without a RAM layer */
	uint64_t copy_ups;
	/* cairn_ns_forget() calls that dropped more references than the node had
	 * (a caller's bug; a build with -DCAIRN_DEBUG aborts on the first). */
	uint64_t over_forgets;
};
void cairn_ns_usage(struct cairn_ns *ns, struct cairn_ns_usage *out);
/* The RAM layer, or NULL (read-only namespace); not owned. */
struct cairn_ramfs *cairn_ns_ramfs(struct cairn_ns *ns);

#ifdef __cplusplus
}
#endif

#endif
