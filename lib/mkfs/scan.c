/* SPDX-License-Identifier: MIT */
/*
 * Host scanning: turns host directories and files into in-memory inodes. Only
 * metadata is kept (plus the bytes of inline-sized files); large files are
 * remembered by host path and copied by write.c.
 *
 * Source atimes are preserved: files and directories are opened with O_NOATIME
 * where allowed, so building twice gives the same image.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <xxhash.h>
#include "util/util_int.h"
#include "mkfs_int.h"

int mk_open_long(const char *path, int flags)
{
	if (strlen(path) < PATH_MAX)
		return open(path, flags);
	/* Too long for one syscall: open leading directories piece by piece. */
	int dfd = path[0] == '/' ? open("/", O_PATH | O_DIRECTORY | O_CLOEXEC) : AT_FDCWD;
	const char *p = path;
	char *buf = malloc(PATH_MAX);
	if (!buf || (path[0] == '/' && dfd < 0)) {
		free(buf);
		if (dfd >= 0)
			close(dfd);
		errno = ENOMEM;
		return -1;
	}
	while (strlen(p) >= PATH_MAX) {
		while (*p == '/')
			p++;
		size_t cut = PATH_MAX - 1;
		while (cut > 0 && p[cut] != '/')
			cut--;
		if (!cut) {
			cut = strcspn(p, "/"); /* one component: let openat report it */
		}
		memcpy(buf, p, cut);
		buf[cut] = '\0';
		int nfd = openat(dfd, buf, O_PATH | O_DIRECTORY | O_CLOEXEC);
		int e = errno;
		if (dfd != AT_FDCWD)
			close(dfd);
		if (nfd < 0) {
			free(buf);
			errno = e;
			return -1;
		}
		dfd = nfd;
		p += cut;
	}
	while (*p == '/')
		p++;
	int fd = openat(dfd, *p ? p : ".", flags);
	int e = errno;
	if (dfd != AT_FDCWD)
		close(dfd);
	free(buf);
	errno = e;
	return fd;
}

static int open_at(int dfd, const char *path, int flags)
{
	return dfd == AT_FDCWD ? mk_open_long(path, flags) : openat(dfd, path, flags);
}

int mk_open_noatime(int dfd, const char *path, int flags)
{
	int fd = open_at(dfd, path, flags | O_NOATIME);
	if (fd < 0 && errno == EPERM)
		fd = open_at(dfd, path, flags);
	return fd;
}

static void fill_attrs(struct cairn_mkfs *m, struct mk_inode *in, const struct stat *st)
{
	in->mode = st->st_mode;
	in->uid = st->st_uid;
	in->gid = st->st_gid;
	in->atime = st->st_atim.tv_sec;
	in->atime_ns = (uint32_t)st->st_atim.tv_nsec;
	in->mtime = st->st_mtim.tv_sec;
	in->mtime_ns = (uint32_t)st->st_mtim.tv_nsec;
	in->ctime = st->st_ctim.tv_sec;
	in->ctime_ns = (uint32_t)st->st_ctim.tv_nsec;
	in->blocks = (uint64_t)st->st_blocks;
	in->size = S_ISREG(st->st_mode) || S_ISLNK(st->st_mode) ? (uint64_t)st->st_size : 0;
	in->rdev = S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode) ? (uint64_t)st->st_rdev : 0;
	mk_apply_opts(m, in);
}

static int xbuf_grow(struct cairn_mkfs *m, size_t n)
{
	if (n <= m->xbuf_cap)
		return 0;
	char *p = realloc(m->xbuf, n);
	if (!p)
		return -ENOMEM;
	m->xbuf = p;
	m->xbuf_cap = n;
	return 0;
}

static int xname_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Read all xattrs of an object, through fd if >= 0, else through path without
 * following a symlink, into m->xattrs (sorted by name) for inode `ino`.
 */
static int read_xattrs(struct cairn_mkfs *m, uint32_t ino, int fd, const char *path)
{
	ssize_t n;
	int rc = 0;

	for (;;) {
		n = fd >= 0 ? flistxattr(fd, m->xbuf, m->xbuf_cap) : llistxattr(path, m->xbuf, m->xbuf_cap);
		if (n >= 0 && (m->xbuf_cap || n == 0))
			break;
		if (n < 0 && errno != ERANGE) {
			if (errno == ENOTSUP || errno == ENOSYS)
				return 0;
			return mk_err(m, -errno, "%s: listxattr: %s", path, strerror(errno));
		}
		ssize_t need = fd >= 0 ? flistxattr(fd, NULL, 0) : llistxattr(path, NULL, 0);
		if (need < 0)
			return mk_err(m, -errno, "%s: listxattr: %s", path, strerror(errno));
		if (xbuf_grow(m, (size_t)need + 1 > 4096 ? (size_t)need + 1 : 4096))
			return mk_err(m, -ENOMEM, "out of memory");
	}
	if (n == 0)
		return 0;
	/* Copy the names out: the buffer is reused for the values. */
	char *names = malloc((size_t)n);
	size_t count = 0;
	if (!names)
		return mk_err(m, -ENOMEM, "out of memory");
	memcpy(names, m->xbuf, (size_t)n);
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1)
		count++;
	char **list = malloc(count * sizeof(*list));
	if (!list) {
		free(names);
		return mk_err(m, -ENOMEM, "out of memory");
	}
	count = 0;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1)
		list[count++] = names + i;
	qsort(list, count, sizeof(*list), xname_cmp);
	uint64_t first = m->xattrs.n;
	for (size_t i = 0; i < count && !rc; i++) {
		size_t nl = strlen(list[i]);
		if (nl == 0 || nl > CAIRN_XATTR_NAME_MAX) {
			rc = mk_err(m, -ENAMETOOLONG, "%s: xattr name '%s' too long", path, list[i]);
			break;
		}
		ssize_t vl;
		for (;;) {
			vl = fd >= 0 ? fgetxattr(fd, list[i], m->xbuf, m->xbuf_cap)
				     : lgetxattr(path, list[i], m->xbuf, m->xbuf_cap);
			if (vl >= 0 || errno != ERANGE)
				break;
			ssize_t need = fd >= 0 ? fgetxattr(fd, list[i], NULL, 0)
					       : lgetxattr(path, list[i], NULL, 0);
			if (need < 0)
				break;
			if (xbuf_grow(m, (size_t)need + 1)) {
				rc = mk_err(m, -ENOMEM, "out of memory");
				break;
			}
		}
		if (rc)
			break;
		if (vl < 0) {
			if (errno == ENODATA) /* removed while we looked */
				continue;
			rc = mk_err(m, -errno, "%s: getxattr %s: %s", path, list[i], strerror(errno));
			break;
		}
		if ((size_t)vl > CAIRN_XATTR_VALUE_MAX) {
			rc = mk_err(m, -E2BIG, "%s: xattr %s value too large", path, list[i]);
			break;
		}
		int64_t no = mk_arena_str(m, list[i], nl);
		int64_t vo = mk_arena_str(m, m->xbuf, (size_t)vl);
		struct mk_xattr *x = mk_vec_push(&m->xattrs);
		if (no < 0 || vo < 0 || !x) {
			rc = mk_err(m, -ENOMEM, "out of memory");
			break;
		}
		x->name = (uint64_t)no;
		x->name_len = (uint32_t)nl;
		x->value = (uint64_t)vo;
		x->value_len = (uint32_t)vl;
	}
	free(list);
	free(names);
	if (!rc) {
		struct mk_inode *in = mk_ino(m, ino);
		in->xattr_first = first;
		in->xattr_n = (uint32_t)(m->xattrs.n - first);
	}
	return rc;
}

/* Record the data extents of a file that may be sparse (SEEK_DATA/SEEK_HOLE).
 * A file whose data turns out to be one extent from 0 to the end stays plain. */
static int scan_extents(struct cairn_mkfs *m, uint32_t ino, int fd, const char *path)
{
	uint64_t size = mk_ino(m, ino)->size, off = 0;
	size_t first = m->exts.n;

	while (off < size) {
		off_t d = lseek(fd, (off_t)off, SEEK_DATA);
		if (d < 0) {
			if (errno == ENXIO)
				break;
			if (errno == EINVAL || errno == ENOTSUP) { /* no hole support */
				m->exts.n = first;
				return 0;
			}
			return mk_err(m, -errno, "%s: SEEK_DATA: %s", path, strerror(errno));
		}
		if ((uint64_t)d >= size)
			break;
		off_t h = lseek(fd, d, SEEK_HOLE);
		if (h < 0)
			return mk_err(m, -errno, "%s: SEEK_HOLE: %s", path, strerror(errno));
		uint64_t end = (uint64_t)h > size ? size : (uint64_t)h;
		struct mk_ext *e = mk_vec_push(&m->exts);
		if (!e)
			return mk_err(m, -ENOMEM, "out of memory");
		e->file_off = (uint64_t)d;
		e->len = end - (uint64_t)d;
		off = end;
	}
	size_t n = m->exts.n - first;
	struct mk_ext *e0 = MK_AT(&m->exts, struct mk_ext, first);
	if (n == 1 && e0->file_off == 0 && e0->len == size) {
		m->exts.n = first; /* not sparse after all */
		return 0;
	}
	struct mk_inode *in = mk_ino(m, ino);
	in->flags |= CAIRN_IF_EXTENTS;
	in->ext_first = first;
	in->ext_n = (uint32_t)n;
	if (n > UINT32_MAX)
		return mk_err(m, -EFBIG, "%s: too many extents", path);
	return 0;
}

/* Path usable by l*xattr for dfd/name whatever the length of `path`. */
static const char *short_path(const char *path, int dfd, const char *name, char *buf,
			      size_t buflen)
{
	if (strlen(path) < PATH_MAX || dfd == AT_FDCWD)
		return path;
	snprintf(buf, buflen, "/proc/self/fd/%d/%s", dfd, name);
	return buf;
}

/* Regular file: xattrs, inline bytes or extents, host path for the copy. */
static int scan_regular(struct cairn_mkfs *m, uint32_t ino, int dfd, const char *at,
			const char *path, int follow)
{
	int flags = O_RDONLY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW);
	struct mk_inode *in = mk_ino(m, ino);
	char pbuf[64 + NAME_MAX];
	int fd, rc;

	/* Empty and large dense files are not opened here (three syscalls fewer per
	 * file): xattrs by path, data later by write.c. */
	if (in->size == 0 || (in->size > CAIRN_INLINE_MAX && in->blocks * 512 >= in->size)) {
		if (!follow) {
			rc = read_xattrs(m, ino, -1, short_path(path, dfd, at, pbuf, sizeof(pbuf)));
			if (!rc && in->size) {
				int64_t off = mk_arena_str(m, path, strlen(path));
				if (off < 0)
					return mk_err(m, -ENOMEM, "out of memory");
				mk_ino(m, ino)->str = (uint64_t)off;
			}
			return rc;
		}
	}
	fd = mk_open_noatime(dfd, at, flags);
	if (fd < 0)
		return mk_err(m, -errno, "%s: cannot read: %s", path, strerror(errno));
	rc = read_xattrs(m, ino, fd, path);
	in = mk_ino(m, ino);
	uint64_t size = in->size;
	if (!rc && size > 0 && size <= CAIRN_INLINE_MAX) {
		char buf[CAIRN_INLINE_MAX];
		size_t got = 0;
		while (got < size) {
			ssize_t r = pread(fd, buf + got, size - got, (off_t)got);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				rc = r < 0 ? mk_err(m, -errno, "%s: read: %s", path, strerror(errno))
					   : mk_err(m, -EIO, "%s: file shrank while reading", path);
				break;
			}
			got += (size_t)r;
		}
		if (!rc) {
			int64_t off = mk_vec_append(&m->arena, buf, size);
			if (off < 0)
				rc = mk_err(m, -ENOMEM, "out of memory");
			in = mk_ino(m, ino);
			in->str = (uint64_t)off;
			in->str_len = (uint32_t)size;
			in->flags |= CAIRN_IF_INLINE;
		}
	} else if (!rc && size > 0) {
		if (in->blocks * 512 < size)
			rc = scan_extents(m, ino, fd, path);
		int64_t off = rc ? 0 : mk_arena_str(m, path, strlen(path));
		if (off < 0)
			rc = mk_err(m, -ENOMEM, "out of memory");
		in = mk_ino(m, ino);
		in->str = (uint64_t)off;
	}
	close(fd);
	return rc;
}

static uint64_t hl_hash(uint64_t dev, uint64_t ino)
{
	uint64_t k[2] = { dev, ino };
	return XXH3_64bits(k, sizeof(k));
}

struct hl_key {
	struct cairn_mkfs *m;
	uint64_t dev, ino;
};

static int hl_eq(void *ctx, uint64_t val)
{
	struct hl_key *k = ctx;
	struct mk_hardlink *h = MK_AT(&k->m->hl, struct mk_hardlink, val);
	return h->dev == k->dev && h->ino == k->ino;
}

/*
 * Any non-directory: make (or, for a hard link already seen, find) its inode.
 * `at` is the name relative to dfd (dfd may be AT_FDCWD with a full path).
 */
static int scan_leaf(struct cairn_mkfs *m, int dfd, const char *at, const char *path,
		     const struct stat *st, int follow, uint32_t *out)
{
	struct hl_key k = { m, (uint64_t)st->st_dev, (uint64_t)st->st_ino };
	uint64_t h = hl_hash(k.dev, k.ino), v;
	char pbuf[64 + NAME_MAX];
	int rc;

	if (st->st_nlink > 1 && mk_map_find(&m->hardlinks, h, hl_eq, &k, &v)) {
		*out = MK_AT(&m->hl, struct mk_hardlink, v)->inode;
		return 0;
	}
	uint32_t ino;
	if ((rc = mk_inode_new(m, &ino)))
		return rc;
	fill_attrs(m, mk_ino(m, ino), st);
	if (S_ISREG(st->st_mode)) {
		rc = scan_regular(m, ino, dfd, at, path, follow);
	} else if (S_ISLNK(st->st_mode)) {
		char *t = malloc(CAIRN_SYMLINK_MAX + 2);
		ssize_t n = t ? readlinkat(dfd, at, t, CAIRN_SYMLINK_MAX + 1) : -1;
		if (!t)
			rc = mk_err(m, -ENOMEM, "out of memory");
		else if (n < 0)
			rc = mk_err(m, -errno, "%s: readlink: %s", path, strerror(errno));
		else if (n == 0 || n > (ssize_t)CAIRN_SYMLINK_MAX)
			rc = mk_err(m, -ENAMETOOLONG, "%s: symlink target empty or too long", path);
		/* readlink updates the link's atime (no O_NOATIME for symlinks): take
		 * the attributes again after it, so a second build sees the same. */
		struct stat st2;
		if (!rc && !fstatat(dfd, at, &st2, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st2.st_mode))
			fill_attrs(m, mk_ino(m, ino), &st2);
		if (!rc) {
			int64_t off = mk_arena_str(m, t, (size_t)n);
			struct mk_inode *in = mk_ino(m, ino);
			in->str = (uint64_t)off;
			in->str_len = (uint32_t)n;
			in->size = (uint64_t)n;
			if (off < 0)
				rc = mk_err(m, -ENOMEM, "out of memory");
		}
		free(t);
		if (!rc)
			rc = read_xattrs(m, ino, -1, short_path(path, dfd, at, pbuf, sizeof(pbuf)));
	} else {
		rc = read_xattrs(m, ino, -1, short_path(path, dfd, at, pbuf, sizeof(pbuf)));
	}
	if (rc)
		return rc;
	if (st->st_nlink > 1) {
		struct mk_hardlink *hl = mk_vec_push(&m->hl);
		if (!hl || mk_map_put(&m->hardlinks, h, m->hl.n - 1))
			return mk_err(m, -ENOMEM, "out of memory");
		hl->dev = k.dev;
		hl->ino = k.ino;
		hl->inode = ino;
	}
	*out = ino;
	return 0;
}

/* A directory inode for `name` in `dir`: the existing one (merge) or a new one. */
static int dir_inode(struct cairn_mkfs *m, uint32_t dir, const char *name, size_t nl,
		     const char *guest, int fresh, uint32_t *out)
{
	uint32_t e = fresh ? MK_NONE : mk_lookup(m, dir, name, nl);
	int rc;

	if (e != MK_NONE && S_ISDIR(mk_ino(m, mk_ent(m, e)->inode)->mode)) {
		*out = mk_ent(m, e)->inode;
		return 0;
	}
	if ((rc = mk_inode_new(m, out)))
		return rc;
	mk_ino(m, *out)->parent = dir;
	return mk_link(m, dir, name, nl, *out, guest, fresh);
}

struct sub {
	uint32_t ino;
	char *name;
};

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void mk_free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int mk_list_dir(struct cairn_mkfs *m, DIR *d, const char *host, const char *pattern,
		char ***out, size_t *count)
{
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	*out = NULL;
	*count = 0;
	errno = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (pattern && fnmatch(pattern, de->d_name, FNM_PERIOD)) {
			errno = 0;
			continue;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 32;
			char **nn = realloc(names, cap * sizeof(*nn));
			if (!nn)
				goto nomem;
			names = nn;
		}
		if (!(names[n] = strdup(de->d_name)))
			goto nomem;
		n++;
		errno = 0;
	}
	if (errno) {
		int e = errno;
		mk_free_names(names, n);
		return mk_err(m, -e, "%s: readdir: %s", host, strerror(e));
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), str_cmp);
	*out = names;
	*count = n;
	return 0;
nomem:
	mk_free_names(names, n);
	return mk_err(m, -ENOMEM, "out of memory");
}

/* Scan the contents of host directory `host` into directory inode `dir`. One
 * directory fd is open at a time: subdirectories are visited after closing it. */
static int scan_dir(struct cairn_mkfs *m, uint32_t dir, const char *host, const char *guest,
		    int recurse)
{
	int fd = mk_open_noatime(AT_FDCWD, host, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return mk_err(m, -errno, "%s: cannot open directory: %s", host, strerror(errno));
	int rc = read_xattrs(m, dir, fd, host);
	if (rc || !recurse) {
		close(fd);
		return rc;
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return mk_err(m, -errno, "%s: %s", host, strerror(errno));
	}
	char **names = NULL;
	size_t n = 0, nsub = 0;
	struct sub *subs = NULL;
	/* A directory with no entries yet (the common case) needs no lookups:
	 * host names are unique. */
	int fresh = mk_ino(m, dir)->nchild == 0;
	rc = mk_list_dir(m, d, host, NULL, &names, &n);
	if (!rc && n && !(subs = malloc(n * sizeof(*subs))))
		rc = mk_err(m, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n && !rc; i++) {
		size_t nl = strlen(names[i]);
		char *g = util_path_join(guest[0] ? guest : "/", names[i], nl);
		char *h = util_path_join(host, names[i], nl);
		struct stat st;
		uint32_t ino;
		if (!g || !h) {
			rc = mk_err(m, -ENOMEM, "out of memory");
		} else if (cairn_mkfs_path_excluded(g, m->o.excludes, m->o.exclude_count)) {
			/* skipped, with its subtree */
		} else if (nl > CAIRN_NAME_MAX) {
			rc = mk_err(m, -ENAMETOOLONG, "%s: name longer than %u bytes", h,
				    CAIRN_NAME_MAX);
		} else if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW)) {
			rc = mk_err(m, -errno, "%s: %s", h, strerror(errno));
		} else if (m->skip_set && (uint64_t)st.st_dev == m->skip_dev &&
			   (uint64_t)st.st_ino == m->skip_ino) {
			/* the image being replaced, inside the tree being packed */
		} else if (S_ISDIR(st.st_mode)) {
			rc = dir_inode(m, dir, names[i], nl, g, fresh, &ino);
			if (!rc) {
				fill_attrs(m, mk_ino(m, ino), &st);
				subs[nsub].ino = ino;
				subs[nsub++].name = names[i];
				names[i] = NULL;
			}
		} else {
			rc = scan_leaf(m, dirfd(d), names[i], h, &st, 0, &ino);
			if (!rc)
				rc = mk_link(m, dir, names[i], nl, ino, g, fresh);
		}
		free(g);
		free(h);
	}
	closedir(d);
	mk_free_names(names, n);
	for (size_t i = 0; i < nsub; i++) {
		if (!rc) {
			size_t nl = strlen(subs[i].name);
			char *g = util_path_join(guest[0] ? guest : "/", subs[i].name, nl);
			char *h = util_path_join(host, subs[i].name, nl);
			if (!g || !h)
				rc = mk_err(m, -ENOMEM, "out of memory");
			else
				rc = scan_dir(m, subs[i].ino, h, g, 1);
			free(g);
			free(h);
		}
		free(subs[i].name);
	}
	free(subs);
	return rc;
}

int mk_scan_tree_into(struct cairn_mkfs *m, uint32_t dir_ino, const char *host,
		      const char *guest, int recurse)
{
	struct stat st;

	if (stat(host, &st))
		return mk_err(m, -errno, "%s: %s", host,
			      errno == ELOOP ? "symlink loop" : strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return mk_err(m, -ENOTDIR, "%s: not a directory", host);
	struct mk_inode *in = mk_ino(m, dir_ino);
	fill_attrs(m, in, &st);
	return scan_dir(m, dir_ino, host, guest, recurse);
}

int mk_scan_path(struct cairn_mkfs *m, uint32_t dir, const char *name, size_t name_len,
		 const char *host, const char *guest, int follow, int recurse)
{
	struct stat st;
	uint32_t ino;
	int rc;

	if ((follow ? stat(host, &st) : lstat(host, &st)))
		return mk_err(m, -errno, "%s: %s", host,
			      errno == ELOOP ? "symlink loop" : strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		if ((rc = dir_inode(m, dir, name, name_len, guest, 0, &ino)))
			return rc;
		return mk_scan_tree_into(m, ino, host, guest, recurse);
	}
	if (recurse)
		return mk_err(m, -ENOTDIR, "%s: not a directory", host);
	if ((rc = scan_leaf(m, AT_FDCWD, host, host, &st, follow, &ino)))
		return rc;
	return mk_link(m, dir, name, name_len, ino, guest, 0);
}
