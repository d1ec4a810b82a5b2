/* SPDX-License-Identifier: MIT */
/*
 * FUSE low-level handlers: each translates one request into cairn_ns calls and
 * replies exactly once. Objects that can never change (the read-only image) are
 * cached by the kernel for a day, negative lookups included; writable ones for a
 * second (every change goes through this mount, and the kernel invalidates what
 * it changes itself).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include "daemon.h"
#include "../cairn/cli.h"

#define RO_TIMEOUT 86400.0
#define RW_TIMEOUT 1.0

/* Node ids (node addresses, cairn/ns.h) are the kernel's inode numbers, and a
 * file handle carries a pointer. */
_Static_assert(sizeof(fuse_ino_t) >= sizeof(uint64_t), "fuse_ino_t must hold node ids");
_Static_assert(sizeof(((struct fuse_file_info *)0)->fh) >= sizeof(uintptr_t),
	       "fi->fh must hold a pointer");

/* An open file: what release needs, and whether the kernel may keep its pages. */
struct daemon_file {
	uint64_t ns_fh;
	int append;
};

static struct daemon *ctx_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* Negative errno from the library to a positive one for the kernel; a corrupt
 * image is an IO error to applications. */
static int to_errno(long rc)
{
	if (rc == -CAIRN_ECORRUPT || rc == -CAIRN_EDIGEST)
		return EIO;
	return rc < 0 ? (int)-rc : EIO;
}

#define DAEMON_IO_LOG_NS (10 * 1000000000ull)
#define DAEMON_IO_NEW_CAUSE_NS 1000000000ull /* causes that keep changing: 1 line/s */

/* After an EIO: the cause the image's device recorded, logged once; the same
 * cause again at most every DAEMON_IO_LOG_NS, a new one at most every
 * DAEMON_IO_NEW_CAUSE_NS (a server gone answers every read of every
 * application with one; short reads give causes that differ only in counts). The
 * application gets a bare EIO; this is for whoever reads the log. */
static void log_io_error(struct daemon *cf)
{
	struct cairn_bdev_error e;
	char key[sizeof(cf->io_cause)], text[CLI_DEV_WHY_LEN];
	int log;

	if (!cf->stack || cairn_stack_last_error(cf->stack, &e) != 1)
		return;
	if (snprintf(key, sizeof(key), "%s\n%s", e.device, e.cause) < 0)
		return;
	pthread_mutex_lock(&cf->io_lock);
	log = e.count != cf->io_count &&
	      (e.when_ns - cf->io_logged_ns >= DAEMON_IO_LOG_NS ||
	       (strcmp(key, cf->io_cause) && e.when_ns - cf->io_logged_ns >= DAEMON_IO_NEW_CAUSE_NS));
	if (log) {
		memcpy(cf->io_cause, key, sizeof(key));
		cf->io_count = e.count;
		cf->io_logged_ns = e.when_ns;
	}
	pthread_mutex_unlock(&cf->io_lock);
	if (!log)
		return;
	cli_dev_error_text(&e, cf->o->image, text, sizeof(text));
	daemon_log(cf, "cairn: %s%s (EIO to the application; %llu failure%s of this device "
		   "in all)", cf->o->image, text, (unsigned long long)e.count,
		   e.count == 1 ? "" : "s");
}

/* to_errno(), logging why when it is an EIO from the image's device. */
static int err_of(fuse_req_t req, long rc)
{
	if (rc == -EIO)
		log_io_error(ctx_of(req));
	return to_errno(rc);
}

static void cred_of(fuse_req_t req, struct cairn_cred *c)
{
	const struct fuse_ctx *fc = fuse_req_ctx(req);

	c->uid = fc->uid;
	c->gid = fc->gid;
	c->umask = fc->umask; /* the kernel leaves it to us (FUSE_CAP_DONT_MASK) */
}

static void to_stat(const struct cairn_stat *s, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = s->ino;
	st->st_mode = s->mode;
	st->st_nlink = s->nlink;
	st->st_uid = s->uid;
	st->st_gid = s->gid;
	st->st_size = (off_t)s->size;
	st->st_blocks = (blkcnt_t)s->blocks;
	st->st_blksize = 4096;
	st->st_rdev = s->rdev;
	st->st_atim.tv_sec = s->atime.sec;
	st->st_atim.tv_nsec = s->atime.nsec;
	st->st_mtim.tv_sec = s->mtime.sec;
	st->st_mtim.tv_nsec = s->mtime.nsec;
	st->st_ctim.tv_sec = s->ctime.sec;
	st->st_ctim.tv_nsec = s->ctime.nsec;
}

static double timeout_of(const struct cairn_ns_entry *e)
{
	return (e->flags & CAIRN_NS_E_IMMUTABLE) ? RO_TIMEOUT : RW_TIMEOUT;
}

static double attr_timeout_of(const struct cairn_ns_entry *e)
{
	return (e->flags & CAIRN_NS_E_VOLATILE) ? 0.0 : timeout_of(e);
}

static void to_entry(const struct cairn_ns_entry *e, struct fuse_entry_param *fe)
{
	memset(fe, 0, sizeof(*fe));
	fe->ino = e->node;
	fe->attr_timeout = attr_timeout_of(e);
	fe->entry_timeout = timeout_of(e);
	to_stat(&e->st, &fe->attr);
}

static void reply_entry(fuse_req_t req, int rc, const struct cairn_ns_entry *e)
{
	struct fuse_entry_param fe;

	if (rc) {
		fuse_reply_err(req, err_of(req, rc));
		return;
	}
	to_entry(e, &fe);
	if (fuse_reply_entry(req, &fe) == -ENOENT) /* interrupted: the kernel never saw it */
		cairn_ns_forget(ctx_of(req)->ns, e->node, 1);
}

/* -o prefetch: queue the hot pages of an image file the kernel is about to learn
 * of (push.c). The kernel knows a node only through a lookup or a readdirplus
 * entry, so these two are the only places to ask. Called while the entry's node
 * is still ours to use: before the reply that hands its reference over. */
static void push_entry(fuse_req_t req, const struct cairn_ns_entry *e)
{
	struct daemon *cf = ctx_of(req);

	if (cf->push && S_ISREG(e->st.mode) && (e->flags & CAIRN_NS_E_IMMUTABLE))
		push_file(cf->push, e->node, e->st.ino);
}

static void daemon_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct cairn_ns_entry e;
	int rc = cairn_ns_lookup(ctx_of(req)->ns, parent, name, strlen(name), &e);

	if (rc == -ENOENT && (e.flags & CAIRN_NS_E_IMMUTABLE)) {
		struct fuse_entry_param fe;

		memset(&fe, 0, sizeof(fe)); /* ino 0: a negative entry the kernel may cache */
		fe.entry_timeout = RO_TIMEOUT;
		fuse_reply_entry(req, &fe);
		return;
	}
	if (rc == 0)
		push_entry(req, &e);
	reply_entry(req, rc, &e);
}

/* A FORGET: the kernel evicted the inode (it sends one only then, with every
 * lookup it counted), so a pushed file's pages are gone too: let the push store
 * them again when the file is looked up next. Asked while the node is ours. */
static void forget_node(struct daemon *cf, fuse_ino_t ino, uint64_t nlookup)
{
	struct cairn_ns_entry e;

	if (push_remembers_files(cf->push) && cairn_ns_getattr(cf->ns, ino, &e) == 0 &&
	    S_ISREG(e.st.mode) && (e.flags & CAIRN_NS_E_IMMUTABLE))
		push_forgotten(cf->push, e.st.ino);
	cairn_ns_forget(cf->ns, ino, nlookup);
}

static void daemon_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	forget_node(ctx_of(req), ino, nlookup);
	fuse_reply_none(req);
}

static void daemon_forget_multi(fuse_req_t req, size_t count,
				    struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		forget_node(ctx_of(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void daemon_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct cairn_ns_entry e;
	struct stat st;
	int rc = cairn_ns_getattr(ctx_of(req)->ns, ino, &e);

	if (rc) {
		fuse_reply_err(req, err_of(req, rc));
		return;
	}
	to_stat(&e.st, &st);
	fuse_reply_attr(req, &st, attr_timeout_of(&e));
}

static void daemon_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			       struct fuse_file_info *fi)
{
	struct cairn_setattr sa;
	struct cairn_ns_entry e;
	struct cairn_cred cred;
	struct stat st;
	int rc;

	memset(&sa, 0, sizeof(sa));
	if (to_set & FUSE_SET_ATTR_MODE) {
		sa.valid |= CAIRN_SET_MODE;
		sa.mode = attr->st_mode & 07777;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		sa.valid |= CAIRN_SET_UID;
		sa.uid = attr->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		sa.valid |= CAIRN_SET_GID;
		sa.gid = attr->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		sa.valid |= CAIRN_SET_SIZE;
		sa.size = (uint64_t)attr->st_size;
		/* ftruncate(2) sets mtime and ctime whatever the size (the VFS adds
		 * ATTR_MTIME | ATTR_CTIME), but FUSE sends its SETATTR with the size and
		 * the handle alone, as truncate(2)'s, which moves them only as the RAM
		 * layer says (a file that holds data). */
		if (fi && !(to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW)))
			sa.valid |= CAIRN_SET_MTIME_NOW;
	}
	if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
		sa.valid |= CAIRN_SET_ATIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_ATIME) {
		sa.valid |= CAIRN_SET_ATIME;
		sa.atime.sec = attr->st_atim.tv_sec;
		sa.atime.nsec = (uint32_t)attr->st_atim.tv_nsec;
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		sa.valid |= CAIRN_SET_MTIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		sa.valid |= CAIRN_SET_MTIME;
		sa.mtime.sec = attr->st_mtim.tv_sec;
		sa.mtime.nsec = (uint32_t)attr->st_mtim.tv_nsec;
	}
	if (to_set & FUSE_SET_ATTR_CTIME) {
		sa.valid |= CAIRN_SET_CTIME;
		sa.ctime.sec = attr->st_ctim.tv_sec;
		sa.ctime.nsec = (uint32_t)attr->st_ctim.tv_nsec;
	}
	/* Nothing to set but (with the write-back cache) ctime is a chown(f, -1,
	 * -1): the kernel's notify_change carries ATTR_CTIME alone (FUSE passes it
	 * on only with the write-back cache) and, with handle_killpriv_v2, leaves
	 * clearing setuid to the daemon. */
	if (!(sa.valid & ~CAIRN_SET_CTIME))
		sa.valid |= CAIRN_SET_CHOWN;
	cred_of(req, &cred);
	rc = cairn_ns_setattr(ctx_of(req)->ns, ino, &sa, &cred, &e);
	if (rc) {
		fuse_reply_err(req, err_of(req, rc));
		return;
	}
	to_stat(&e.st, &st);
	fuse_reply_attr(req, &st, attr_timeout_of(&e));
}

static void daemon_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[PATH_MAX + 1];
	ssize_t n = cairn_ns_readlink(ctx_of(req)->ns, ino, buf, PATH_MAX);

	if (n < 0) {
		fuse_reply_err(req, err_of(req, n));
		return;
	}
	buf[n] = 0;
	fuse_reply_readlink(req, buf);
}

static void daemon_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
			     dev_t rdev)
{
	struct cairn_ns_entry e;
	struct cairn_cred cred;

	cred_of(req, &cred);
	reply_entry(req, cairn_ns_mknod(ctx_of(req)->ns, parent, name, strlen(name), mode, rdev,
					&cred, &e), &e);
}

static void daemon_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct cairn_ns_entry e;
	struct cairn_cred cred;

	cred_of(req, &cred);
	reply_entry(req, cairn_ns_mkdir(ctx_of(req)->ns, parent, name, strlen(name), mode & 07777,
					&cred, &e), &e);
}

static void daemon_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
			       const char *name)
{
	struct cairn_ns_entry e;
	struct cairn_cred cred;

	cred_of(req, &cred);
	reply_entry(req, cairn_ns_symlink(ctx_of(req)->ns, parent, name, strlen(name), link, &cred,
					  &e), &e);
}

static void daemon_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
			    const char *newname)
{
	struct cairn_ns_entry e;

	reply_entry(req, cairn_ns_link(ctx_of(req)->ns, ino, newparent, newname, strlen(newname),
				       &e), &e);
}

static void reply_rc(fuse_req_t req, long rc)
{
	fuse_reply_err(req, rc ? err_of(req, rc) : 0);
}

static void daemon_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	reply_rc(req, cairn_ns_unlink(ctx_of(req)->ns, parent, name, strlen(name)));
}

static void daemon_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	reply_rc(req, cairn_ns_rmdir(ctx_of(req)->ns, parent, name, strlen(name)));
}

static void daemon_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
			      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	reply_rc(req, cairn_ns_rename(ctx_of(req)->ns, parent, name, strlen(name), newparent,
				      newname, strlen(newname), flags));
}

/* ---- files ---- */

/* flags: fi->flags, less O_TRUNC for a file CREATE has just made. */
static int open_file(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int flags)
{
	struct daemon_file *f = calloc(1, sizeof(*f));
	struct cairn_cred cred;
	int rc;

	if (!f)
		return -ENOMEM;
	cred_of(req, &cred);
	rc = cairn_ns_open(ctx_of(req)->ns, ino, flags, &cred, &f->ns_fh);
	if (rc) {
		free(f);
		return rc;
	}
	/* With the write-back cache the kernel places appends itself and writes
	 * pages back at their offsets; appending again here would move them. */
	f->append = (fi->flags & O_APPEND) && !ctx_of(req)->o->writeback;
	fi->fh = (uint64_t)(uintptr_t)f;
	/* Nothing is buffered here, so close() need not ask (FLUSH) at all; with
	 * the write-back cache the kernel still writes back and reports errors.
	 * There is no flush handler either: the first FLUSH (from a file opened
	 * without a handle, as on a read-only image) gets ENOSYS, and the kernel
	 * sends none after it. */
	fi->noflush = 1;
	/* Keep the file's pages across opens. Image files never change, and RAM
	 * files change only through this mount, where the kernel updates or drops
	 * the pages itself (write-through, truncate, punch hole). */
	fi->keep_cache = 1;
	return 0;
}

static void daemon_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int rc;

	/* A read-only image needs no handles: ENOSYS tells the kernel to open
	 * every file itself from now on (keeping its page cache) and to send
	 * neither OPEN nor RELEASE again, two round trips per open saved. */
	if (ctx_of(req)->no_open) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	rc = open_file(req, ino, fi, fi->flags);

	if (rc) {
		fuse_reply_err(req, err_of(req, rc));
		return;
	}
	if (fuse_reply_open(req, fi) == -ENOENT) { /* interrupted */
		struct daemon_file *f = (void *)(uintptr_t)fi->fh;

		cairn_ns_release(ctx_of(req)->ns, ino, f->ns_fh);
		free(f);
	}
}

static void daemon_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
			      struct fuse_file_info *fi)
{
	struct daemon *cf = ctx_of(req);
	struct cairn_ns_entry e;
	struct cairn_cred cred;
	struct fuse_entry_param fe;
	int rc, flags;

	cred_of(req, &cred);
	if (!strcmp(name, DAEMON_TMPFILE_NAME)) /* FUSE_TMPFILE (killpriv.c) */
		rc = cairn_ns_tmpfile(cf->ns, parent, mode & 07777, &cred, &e);
	else
		rc = cairn_ns_mknod(cf->ns, parent, name, strlen(name), S_IFREG | (mode & 07777),
				    0, &cred, &e);
	/* A file made here has nothing to truncate, and open(2) does not truncate
	 * it: truncating would move its times past the ones the reply gives. */
	flags = fi->flags & ~O_TRUNC;
	if (rc == -EEXIST && !(fi->flags & O_EXCL)) { /* made meanwhile: open it */
		rc = cairn_ns_lookup(cf->ns, parent, name, strlen(name), &e);
		flags = fi->flags;
	}
	if (rc) {
		fuse_reply_err(req, err_of(req, rc));
		return;
	}
	rc = open_file(req, e.node, fi, flags);
	if (rc) {
		cairn_ns_forget(cf->ns, e.node, 1);
		fuse_reply_err(req, err_of(req, rc));
		return;
	}
	to_entry(&e, &fe);
	if (fuse_reply_create(req, &fe, fi) == -ENOENT) {
		struct daemon_file *f = (void *)(uintptr_t)fi->fh;

		cairn_ns_release(cf->ns, e.node, f->ns_fh);
		cairn_ns_forget(cf->ns, e.node, 1);
		free(f);
	}
}

static void daemon_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct daemon_file *f = (void *)(uintptr_t)fi->fh;

	if (f) {
		cairn_ns_release(ctx_of(req)->ns, ino, f->ns_fh);
		free(f);
	}
	fuse_reply_err(req, 0);
}

static void daemon_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
			     struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0); /* RAM and a read-only image: nothing to make durable */
}

struct read_reply {
	fuse_req_t req;
	int replied;
	size_t bytes; /* replied with */
};

static int reply_iov(void *ctx, const struct iovec *iov, int iovcnt, size_t total)
{
	struct read_reply *r = ctx;

	r->replied = 1;
	r->bytes = total;
	return fuse_reply_iov(r->req, iov, iovcnt);
}

/* A read met bytes that do not match the image's digests: log it once per
 * inode and 128 KiB of the file (the kernel retries page by page), with its path
 * (a lean namespace searches the image for one, and may give up: then the image
 * inode number). The daemon goes on serving. */
static void log_mismatch(struct daemon *cf, fuse_ino_t ino, off_t off, size_t size)
{
	uint64_t key[2] = { ino, (uint64_t)off >> 17 };
	char path[PATH_MAX];
	int seen = 0;

	__atomic_add_fetch(&cf->bad_reads, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&cf->bad_lock);
	for (unsigned i = 0; i < cf->bad_n && i < 64 && !seen; i++)
		seen = cf->bad_keys[i][0] == key[0] && cf->bad_keys[i][1] == key[1];
	if (!seen) {
		memcpy(cf->bad_keys[cf->bad_n % 64], key, sizeof(key));
		cf->bad_n++;
	}
	pthread_mutex_unlock(&cf->bad_lock);
	if (seen)
		return;
	if (cairn_ns_path(cf->ns, ino, path, sizeof(path)) <= 0) {
		struct cairn_ns_entry e;

		snprintf(path, sizeof(path), "(inode %llu)", cairn_ns_getattr(cf->ns, ino, &e) ?
			 (unsigned long long)ino : (unsigned long long)e.st.ino);
	}
	daemon_log(cf, "cairn: %s: %s: read of %zu bytes at offset %lld: data does not match "
		   "the image digest (EIO)", cf->o->image, path, size, (long long)off);
}

/* A read that leaves part of a compressed chunk unread (a random reader's 4 KiB,
 * either end of a sequential window) decompresses the chunk all the same, and
 * a random reader's read of an uncompressed file fetches and hashes the whole
 * cache segment around it: the chunks or segments at either end the read
 * leaves partly unread go to the page-cache push once the read has them cached,
 * so the kernel has the rest when it is read (push.c). Uncompressed, only for
 * a random reader (cairn_ns_read_random): a sequential one's next window is
 * on its way, and a push would only race it. Found before the read, with a
 * lookup reference each taken before the reply, which may let the kernel
 * forget the node. Returns how many spans (at most 2) it put in sp. */
static int partial_chunks(struct daemon *cf, fuse_ino_t ino, size_t size, off_t off,
			  uint64_t sp[2][2])
{
	uint64_t lo = 0, hi = 0, end = (uint64_t)off + size;
	int n = 0;

	if (!cf->push || !size)
		return 0;
	/* A learning mount traces the program's reads: a push racing them would make
	 * what the trace sees of an uncompressed file differ from run to run, and
	 * the profile grow on the same workload (tests/mount/profile.sh). */
	if (!cf->compressed && (cf->trace || !cairn_ns_read_random(cf->ns, ino, (uint64_t)off, size)))
		return 0;
	if (cairn_ns_chunk_span(cf->ns, ino, (uint64_t)off, &lo, &hi) == 0 &&
	    (lo < (uint64_t)off || hi > end)) {
		sp[n][0] = lo;
		sp[n++][1] = hi;
	}
	if (end > hi && cairn_ns_chunk_span(cf->ns, ino, end - 1, &lo, &hi) == 0 && hi > end) {
		sp[n][0] = lo;
		sp[n++][1] = hi;
	}
	for (int i = 0; i < n; i++)
		cairn_ns_hold(cf->ns, ino);
	return n;
}

static void daemon_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			    struct fuse_file_info *fi)
{
	struct daemon *cf = ctx_of(req);
	struct read_reply r = { req, 0, 0 };
	char path[PATH_MAX];
	int from_image = 0, rc;
	/* The path is taken before replying: once the kernel has its data it may
	 * forget the node on another thread. */
	int traced = cf->trace && cairn_ns_path(cf->ns, ino, path, sizeof(path)) > 0;
	uint64_t sp[2][2];
	int nsp = partial_chunks(cf, ino, size, off, sp);

	if (cf->push) /* the node must outlive the reply for push_served */
		cairn_ns_hold(cf->ns, ino);
	rc = cairn_ns_read_iov(cf->ns, ino, size, (uint64_t)off, reply_iov, &r, &from_image);
	for (int i = 0; i < nsp; i++) /* decompressed now: the push finds them cached */
		push_span(cf->push, ino, sp[i][0], sp[i][1]);
	if (cf->push) {
		if (r.replied && rc >= 0)
			push_served(cf->push, ino, (uint64_t)off, r.bytes);
		cairn_ns_forget(cf->ns, ino, 1);
	}
	if (from_image) {
		__atomic_add_fetch(&cf->image_reads, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&cf->image_read_bytes, size, __ATOMIC_RELAXED);
	}
	if (rc == -CAIRN_EDIGEST)
		log_mismatch(cf, ino, off, size);
	if (!r.replied)
		fuse_reply_err(req, err_of(req, rc));
	else if (traced && from_image)
		trace_read(cf->trace, path, (uint64_t)off, size);
}

static void daemon_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
			     off_t off, struct fuse_file_info *fi)
{
	struct daemon *cf = ctx_of(req);
	struct daemon_file *f = (void *)(uintptr_t)fi->fh;
	struct cairn_ns_entry e;
	struct cairn_cred cred;
	ssize_t n;
	int sid;

	cred_of(req, &cred);
	sid = cred.uid != 0 && __atomic_load_n(&cf->killpriv_v2, __ATOMIC_RELAXED) &&
	      cairn_ns_getattr(cf->ns, ino, &e) == 0 && (e.st.mode & (S_ISUID | S_ISGID));
	n = cairn_ns_write(cf->ns, ino, buf, size, (uint64_t)off, f && f->append, &cred);
	/* The write cleared set-user-ID behind the kernel's back (KILLPRIV_V2):
	 * drop its cached mode before write() returns. */
	if (n > 0 && sid)
		fuse_lowlevel_notify_inval_inode(cf->se, ino, -1, 0);
	if (n < 0)
		fuse_reply_err(req, err_of(req, n));
	else
		fuse_reply_write(req, (size_t)n);
}

static void daemon_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
				 off_t len, struct fuse_file_info *fi)
{
	reply_rc(req, cairn_ns_fallocate(ctx_of(req)->ns, ino, mode, (uint64_t)off,
					 (uint64_t)len));
}

static void daemon_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
			     struct fuse_file_info *fi)
{
	int64_t r;

	/* With the write-back cache the kernel holds data and size the daemon has
	 * not seen yet, and sends LSEEK without writing them back first: an
	 * answer from here would call dirty data a hole (cp --sparse would skip
	 * it) or say ENXIO below the kernel's end of file. ENOSYS makes the
	 * kernel answer from its own size, every file all data. */
	if (ctx_of(req)->writeback) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	r = cairn_ns_lseek(ctx_of(req)->ns, ino, off, whence);
	if (r < 0)
		fuse_reply_err(req, err_of(req, r));
	else
		fuse_reply_lseek(req, r);
}

/* ---- directories ---- */

static void daemon_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct cairn_ns_entry e;
	int rc;

	if (ctx_of(req)->no_opendir) { /* as open: listings are then cached too */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	rc = cairn_ns_getattr(ctx_of(req)->ns, ino, &e);

	if (rc) {
		fuse_reply_err(req, err_of(req, rc));
		return;
	}
	if (!S_ISDIR(e.st.mode)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (e.flags & CAIRN_NS_E_IMMUTABLE) { /* the listing never changes */
		fi->cache_readdir = 1;
		fi->keep_cache = 1;
	}
	fuse_reply_open(req, fi);
}

static void daemon_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

struct dir_fill {
	fuse_req_t req;
	fuse_ino_t dir;
	char *buf;
	size_t size, used;
	int plus;
	int files_too; /* plus: attributes for every entry, not subdirectories only */
	int err;
};

static int is_dot(const char *name, size_t len)
{
	return (len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.');
}

static int fill_dirent(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
		       uint64_t next)
{
	struct dir_fill *d = ctx;
	char cname[CAIRN_NAME_MAX + 1];
	size_t room = d->size - d->used, need;

	if (len > CAIRN_NAME_MAX)
		return 0;
	memcpy(cname, name, len);
	cname[len] = 0;
	if (!d->plus) {
		struct stat st = { .st_ino = ino, .st_mode = dtype << 12 };

		need = fuse_add_direntry(d->req, d->buf + d->used, room, cname, &st, (off_t)next);
		if (need > room)
			return 1;
	} else {
		struct fuse_entry_param fe;
		struct cairn_ns_entry e;

		memset(&fe, 0, sizeof(fe));
		/* Node id 0: the kernel lists the name and learns nothing else. */
		if (is_dot(name, len) || (!d->files_too && dtype != DT_DIR)) {
			fe.attr.st_ino = ino;
			fe.attr.st_mode = dtype << 12;
		} else {
			int rc = cairn_ns_lookup(ctx_of(d->req)->ns, d->dir, name, len, &e);

			if (rc) {
				d->err = rc;
				return 1;
			}
			to_entry(&e, &fe);
		}
		need = fuse_add_direntry_plus(d->req, d->buf + d->used, room, cname, &fe,
					      (off_t)next);
		if (need > room) {
			if (fe.ino)
				cairn_ns_forget(ctx_of(d->req)->ns, fe.ino, 1);
			return 1;
		}
		if (fe.ino)
			push_entry(d->req, &e);
	}
	d->used += need;
	return 0;
}

/* Does the listing from `cookie` end within `size` bytes of READDIRPLUS reply?
 * Counts entry sizes only (fuse_add_direntry_plus with no buffer). */
struct dir_probe {
	fuse_req_t req;
	size_t size, used;
};

static int probe_dirent(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
			uint64_t next)
{
	struct dir_probe *p = ctx;
	struct fuse_entry_param fe;
	char cname[CAIRN_NAME_MAX + 1];

	if (len > CAIRN_NAME_MAX)
		return 0;
	memcpy(cname, name, len);
	cname[len] = 0;
	memset(&fe, 0, sizeof(fe));
	p->used += fuse_add_direntry_plus(p->req, NULL, 0, cname, &fe, (off_t)next);
	return p->used > p->size;
}

static int listing_fits(fuse_req_t req, fuse_ino_t ino, uint64_t cookie, size_t size)
{
	struct dir_probe p = { req, size, 0 };

	return cairn_ns_readdir(ctx_of(req)->ns, ino, cookie, probe_dirent, &p) == 0 &&
	       p.used <= size;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, int plus,
		       int files_too)
{
	struct dir_fill d = { req, ino, NULL, size, 0, plus, files_too, 0 };
	int rc;

	d.buf = malloc(size ? size : 1);
	if (!d.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	rc = cairn_ns_readdir(ctx_of(req)->ns, ino, (uint64_t)off, fill_dirent, &d);
	if (!rc)
		rc = d.err;
	/* Entries already added stand (the kernel takes their references); an error
	 * only counts when nothing could be listed. */
	if (rc && d.used == 0)
		fuse_reply_err(req, err_of(req, rc));
	else
		fuse_reply_buf(req, d.buf, d.used);
	free(d.buf);
}

static void daemon_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			       struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, 0, 0);
}

/*
 * READDIRPLUS hands the kernel a looked-up inode per entry. The kernel asks for
 * it at the start of every directory, and later only when the program went on
 * to stat entries (READDIRPLUS_AUTO); but since it offers up to max_pages (1 MiB)
 * per request, one reply would cover a whole directory and `find` over a million
 * files would look every one of them up. Replying one page at a time keeps the
 * heuristic working: a walk that only needs names gets plain READDIRs after the
 * first page.
 *
 * That first page is a guess, not a sign of stat calls. A directory that ends
 * within it gets every entry's attributes (`ls -l` of a small directory is one
 * request). A bigger one gets them for its subdirectories only, which a walk
 * descends into anyway: the files' inodes, about 25 of them, would cost a read
 * of their inode table granule per directory (the whole 128 MiB table over 1M
 * files) and spare a program that stats them 25 of its N LOOKUPs. Once the
 * program stats, the kernel asks again mid-directory and gets them all.
 */
#define PLUS_REPLY_MAX 4096
static void daemon_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
				   struct fuse_file_info *fi)
{
	size_t page = size < PLUS_REPLY_MAX ? size : PLUS_REPLY_MAX;
	int files_too = off != 0 || listing_fits(req, ino, 0, page);

	do_readdir(req, ino, page, off, 1, files_too);
}

static void daemon_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct cairn_statfs s;
	struct statvfs v;
	int rc = cairn_ns_statfs(ctx_of(req)->ns, &s);

	if (rc) {
		fuse_reply_err(req, err_of(req, rc));
		return;
	}
	memset(&v, 0, sizeof(v));
	v.f_bsize = s.block_size;
	v.f_frsize = s.block_size;
	v.f_blocks = s.blocks;
	v.f_bfree = s.blocks_free;
	v.f_bavail = s.blocks_free;
	v.f_files = s.files;
	v.f_ffree = s.files_free;
	v.f_favail = s.files_free;
	v.f_namemax = s.name_max ? s.name_max : CAIRN_NAME_MAX;
	fuse_reply_statfs(req, &v);
}

/* ---- xattrs ---- */

static void reply_xattr_value(fuse_req_t req, size_t size, ssize_t n, const void *buf)
{
	if (n < 0)
		fuse_reply_err(req, err_of(req, n));
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

static void daemon_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	char *buf = size ? malloc(size) : NULL;
	ssize_t n;

	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = cairn_ns_getxattr(ctx_of(req)->ns, ino, name, buf, size);
	reply_xattr_value(req, size, n, buf);
	free(buf);
}

static void daemon_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char *buf = size ? malloc(size) : NULL;
	ssize_t n;

	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = cairn_ns_listxattr(ctx_of(req)->ns, ino, buf, size);
	reply_xattr_value(req, size, n, buf);
	free(buf);
}

static void daemon_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
				const char *value, size_t size, int flags)
{
	reply_rc(req, cairn_ns_setxattr(ctx_of(req)->ns, ino, name, value, size, flags));
}

static void daemon_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	reply_rc(req, cairn_ns_removexattr(ctx_of(req)->ns, ino, name));
}

/* ---- session ---- */

static void daemon_init(void *userdata, struct fuse_conn_info *conn)
{
	struct daemon *cf = userdata;

	conn->max_write = 1u << 20;             /* 1 MiB requests (256 pages) */
	conn->max_read = 0;                     /* no cap below max_pages */
	conn->max_readahead = 1u << 20;         /* clamped to the kernel's offer */
	conn->want |= FUSE_CAP_CACHE_SYMLINKS & conn->capable;
	conn->want |= FUSE_CAP_READDIRPLUS & conn->capable;
	conn->want |= FUSE_CAP_PARALLEL_DIROPS & conn->capable;
	/* POSIX ACLs enforced by the kernel (with default_permissions), read from
	 * the system.posix_acl_* xattrs the image and the RAM fs keep. A new object
	 * takes its directory's default ACL with the umask ignored, so the kernel
	 * hands the umask over (DONT_MASK) and the RAM fs applies it when there is
	 * no default ACL. */
	/* open(O_TRUNC) reaches OPEN, where cairn_ns_open truncates (an image
	 * file then copies up without its data); without it the kernel would send a
	 * SETATTR, which cairn_ns_setattr handles as well. */
	conn->want |= FUSE_CAP_ATOMIC_O_TRUNC & conn->capable;
	if (conn->capable & FUSE_CAP_POSIX_ACL)
		conn->want |= FUSE_CAP_POSIX_ACL | (FUSE_CAP_DONT_MASK & conn->capable);
	/* Data changes only through this mount, and the kernel keeps its pages
	 * right itself. With AUTO_INVAL_DATA it would drop a file's pages whenever
	 * a GETATTR shows an mtime it has not seen, which every write-through
	 * write makes: a file just written would be read back through FUSE. */
	conn->want &= ~(unsigned)FUSE_CAP_AUTO_INVAL_DATA;
	if (daemon_image_only(cf->o)) {
		cf->no_open = !!(conn->capable & FUSE_CAP_NO_OPEN_SUPPORT);
		cf->no_opendir = !!(conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT);
	}
	if (cf->o->writeback && (conn->capable & FUSE_CAP_WRITEBACK_CACHE)) {
		/* -o writeback: the page cache takes small writes and the kernel
		 * sends large WRITEs later, so ENOSPC shows at fsync()/close(). Pages
		 * are written back with the flusher's credentials (root); with
		 * KILLPRIV_V2 (killpriv.c) a write that must clear set-user-ID goes
		 * through at once with the writer's, so the daemon clears it then.
		 * The old KILLPRIV would leave that to the daemon for written-back
		 * pages too, where it cannot tell who wrote. */
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
		conn->want &= ~(unsigned)FUSE_CAP_HANDLE_KILLPRIV;
		cf->writeback = 1;
	} else {
		conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE; /* ENOSPC must reach write() */
	}
	pthread_mutex_lock(&cf->init_lock);
	cf->init_done = 1;
	pthread_cond_broadcast(&cf->init_cond);
	pthread_mutex_unlock(&cf->init_lock);
}

const struct fuse_lowlevel_ops daemon_ops = {
	.init = daemon_init,
	.lookup = daemon_lookup,
	.forget = daemon_forget,
	.forget_multi = daemon_forget_multi,
	.getattr = daemon_getattr,
	.setattr = daemon_setattr,
	.readlink = daemon_readlink,
	.mknod = daemon_mknod,
	.mkdir = daemon_mkdir,
	.symlink = daemon_symlink,
	.link = daemon_link,
	.unlink = daemon_unlink,
	.rmdir = daemon_rmdir,
	.rename = daemon_rename,
	.open = daemon_open,
	.create = daemon_create,
	.read = daemon_read,
	.write = daemon_write,
	.release = daemon_release,
	.fsync = daemon_fsync,
	.fallocate = daemon_fallocate,
	.lseek = daemon_lseek,
	.opendir = daemon_opendir,
	.readdir = daemon_readdir,
	.readdirplus = daemon_readdirplus,
	.releasedir = daemon_releasedir,
	.statfs = daemon_statfs,
	.getxattr = daemon_getxattr,
	.listxattr = daemon_listxattr,
	.setxattr = daemon_setxattr,
	.removexattr = daemon_removexattr,
};
