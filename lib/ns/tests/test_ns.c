/* SPDX-License-Identifier: MIT */
/*
 * Namespace tests over a small image made with cairn_mkfs: read-only, tmp=
 * subtrees, the overlay (copy-up, whiteouts, opaque dirs, merged listings,
 * renames), RAM only, and lookup counts (nodes are freed on forget).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cairn/cairn.h>
#include <cairn/mkfs.h>
#include <cairn/ns.h>
#include "fixture.h"

struct fixture {
	char dir[64];
	char img_path[96];
	struct cairn_image *img;
};

static const struct cairn_cred root = { 0, 0, 0 };

static void put(const char *dir, const char *rel, const char *data)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/src/%s", dir, rel);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(data, f);
	fclose(f);
}

static void mk(const char *dir, const char *rel)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/src/%s", dir, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	char src[128], a[256], b[256];

	strcpy(fx->dir, "/tmp/cairn-ns-test.XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	snprintf(src, sizeof(src), "%s/src", fx->dir);
	assert_int_equal(mkdir(src, 0755), 0);
	mk(fx->dir, "etc");
	mk(fx->dir, "etc/conf");
	mk(fx->dir, "tmp");
	mk(fx->dir, "dir");
	mk(fx->dir, "dir/sub");
	put(fx->dir, "etc/motd", "original");
	put(fx->dir, "etc/conf/a", "a");
	put(fx->dir, "etc/conf/b", "b");
	put(fx->dir, "tmp/seed", "seeded");
	put(fx->dir, "dir/sub/f", "f");
	put(fx->dir, "hard1", "hard");
	snprintf(a, sizeof(a), "%s/hard1", src);
	snprintf(b, sizeof(b), "%s/hard2", src);
	assert_int_equal(link(a, b), 0);
	snprintf(a, sizeof(a), "%s/link", src);
	assert_int_equal(symlink("etc/motd", a), 0);
	/* A sparse file: data at 0 and at 512 KiB, holes around. */
	snprintf(a, sizeof(a), "%s/dir/sparse", src);
	{
		int fd = open(a, O_WRONLY | O_CREAT, 0644);

		assert_true(fd >= 0);
		assert_int_equal(pwrite(fd, "head", 4, 0), 4);
		assert_int_equal(pwrite(fd, "mid", 3, 512 * 1024), 3);
		assert_int_equal(ftruncate(fd, 1024 * 1024), 0);
		close(fd);
	}
	/* An old root mtime, to tell it from the time of the mount. */
	{
		struct timespec ts[2] = { { 1000000000, 0 }, { 1000000000, 0 } };

		assert_int_equal(utimensat(AT_FDCWD, src, ts, 0), 0);
	}

	snprintf(fx->img_path, sizeof(fx->img_path), "%s/img", fx->dir);
	fx->img = t_pack(src, fx->img_path);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	cairn_image_close(fx->img);
	t_remove_tree(fx->dir);
	free(fx);
	return 0;
}

static struct cairn_ns *new_ns(struct fixture *fx, unsigned flags, const char *tmp)
{
	struct cairn_ns_config c;
	struct cairn_ns *ns;

	memset(&c, 0, sizeof(c));
	c.image = fx ? fx->img : NULL;
	c.flags = flags;
	c.tmp_paths = tmp;
	assert_int_equal(cairn_ns_new(&c, &ns), 0);
	return ns;
}

/* Look a path up component by component; every reference taken is forgotten
 * again except the last one's (returned). */
static int walk(struct cairn_ns *ns, const char *path, struct cairn_ns_entry *out)
{
	char buf[256], *save = NULL;
	uint64_t cur = CAIRN_NS_ROOT;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	out->node = CAIRN_NS_ROOT;
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		struct cairn_ns_entry e;

		rc = cairn_ns_lookup(ns, cur, c, strlen(c), &e);
		if (cur != CAIRN_NS_ROOT)
			cairn_ns_forget(ns, cur, 1);
		if (rc)
			return rc;
		cur = e.node;
		*out = e;
	}
	return rc;
}

static void release_entry(struct cairn_ns *ns, const struct cairn_ns_entry *e)
{
	if (e->node != CAIRN_NS_ROOT)
		cairn_ns_forget(ns, e->node, 1);
}

static void read_str(struct cairn_ns *ns, const char *path, char *out, size_t len)
{
	struct cairn_ns_entry e;
	ssize_t n;

	assert_int_equal(walk(ns, path, &e), 0);
	n = cairn_ns_read(ns, e.node, out, len - 1, 0);
	assert_true(n >= 0);
	out[n] = 0;
	release_entry(ns, &e);
}

struct names {
	char buf[1024];
	size_t count;
};

static int name_cb(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
		   uint64_t next)
{
	struct names *n = ctx;

	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)))
		return 0;
	strncat(n->buf, name, len);
	strcat(n->buf, " ");
	n->count++;
	return 0;
}

static void list(struct cairn_ns *ns, const char *path, struct names *n)
{
	struct cairn_ns_entry e;

	memset(n, 0, sizeof(*n));
	assert_int_equal(walk(ns, path, &e), 0);
	assert_int_equal(cairn_ns_readdir(ns, e.node, 0, name_cb, n), 0);
	release_entry(ns, &e);
}

static uint64_t nodes(struct cairn_ns *ns)
{
	struct cairn_ns_usage u;

	cairn_ns_usage(ns, &u);
	return u.nodes;
}

static void test_readonly(void **state)
{
	struct fixture *fx = *state;
	struct cairn_ns *ns = new_ns(fx, 0, NULL);
	struct cairn_ns_entry e, e2;
	char buf[64];
	uint64_t fh;
	cairn_ino_t ino;

	read_str(ns, "/etc/motd", buf, sizeof(buf));
	assert_string_equal(buf, "original");
	assert_int_equal(walk(ns, "/etc/motd", &e), 0);
	assert_true(e.flags & CAIRN_NS_E_IMMUTABLE);
	assert_int_equal(cairn_image_resolve(fx->img, "/etc/motd", 0, &ino), 0);
	assert_int_equal(e.st.ino, ino);
	assert_int_equal(cairn_ns_open(ns, e.node, O_WRONLY, NULL, &fh), -EROFS);
	assert_int_equal(cairn_ns_open(ns, e.node, O_RDONLY, NULL, &fh), 0);
	cairn_ns_release(ns, e.node, fh);
	assert_int_equal(cairn_ns_write(ns, e.node, "x", 1, 0, 0, &root), -EROFS);
	/* xattr names follow the kernel's rules as on the RAM layer (tmpfs) */
	assert_int_equal(cairn_ns_getxattr(ns, e.node, "user.", buf, sizeof(buf)), -EINVAL);
	assert_int_equal(cairn_ns_getxattr(ns, e.node, "bogus.x", buf, sizeof(buf)), -EOPNOTSUPP);
	assert_int_equal(cairn_ns_getxattr(ns, e.node, "user.none", buf, sizeof(buf)), -ENODATA);
	release_entry(ns, &e);
	assert_int_equal(cairn_ns_mkdir(ns, CAIRN_NS_ROOT, "new", 3, 0755, &root, &e), -EROFS);
	assert_int_equal(cairn_ns_unlink(ns, CAIRN_NS_ROOT, "hard1", 5), -EROFS);
	assert_int_equal(cairn_ns_lookup(ns, CAIRN_NS_ROOT, "nope", 4, &e), -ENOENT);
	assert_true(e.flags & CAIRN_NS_E_IMMUTABLE); /* negative entry may be cached */
	/* hard links share the inode number */
	assert_int_equal(walk(ns, "/hard1", &e), 0);
	assert_int_equal(walk(ns, "/hard2", &e2), 0);
	assert_int_equal(e.st.ino, e2.st.ino);
	release_entry(ns, &e);
	release_entry(ns, &e2);
	assert_int_equal(walk(ns, "/link", &e), 0);
	assert_int_equal(cairn_ns_readlink(ns, e.node, buf, sizeof(buf)), 8);
	release_entry(ns, &e);
	assert_int_equal(nodes(ns), 1);
	cairn_ns_free(ns);
}

/* An image-only namespace keeps nothing per object (cairn/ns.h): a lookup of
 * every name, all held, leaves one node (the root); an object looked up again,
 * even after its references are gone, has the same id; hard links share one;
 * the listing's inode numbers are those lookups give, ".." included; forgets
 * are counted in refs. With CAIRN_NS_NAMES the node table is back. */
struct lean_walk {
	struct cairn_ns *ns;
	uint64_t dir, dir_ino, parent_ino;
	uint64_t held[64];
	size_t n;
	int bad;
};

static int lean_cb(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
		   uint64_t next)
{
	struct lean_walk *w = ctx;
	struct cairn_ns_entry e, again;

	if (len == 1 && name[0] == '.') {
		w->bad += ino != w->dir_ino;
		return 0;
	}
	if (len == 2 && !memcmp(name, "..", 2)) {
		w->bad += ino != w->parent_ino;
		return 0;
	}
	assert_int_equal(cairn_ns_lookup(w->ns, w->dir, name, len, &e), 0);
	assert_int_equal(cairn_ns_lookup(w->ns, w->dir, name, len, &again), 0);
	w->bad += e.node != again.node || e.st.ino != ino || (e.st.mode >> 12) != dtype;
	cairn_ns_forget(w->ns, again.node, 1);
	w->held[w->n++] = e.node;
	return 0;
}

static void lean_list(struct lean_walk *w, uint64_t dir, uint64_t dir_ino, uint64_t parent_ino)
{
	w->dir = dir;
	w->dir_ino = dir_ino;
	w->parent_ino = parent_ino;
	assert_int_equal(cairn_ns_readdir(w->ns, dir, 0, lean_cb, w), 0);
}

static void test_lean(void **state)
{
	struct fixture *fx = *state;
	struct cairn_ns *ns = new_ns(fx, 0, NULL);
	struct lean_walk w = { .ns = ns };
	struct cairn_ns_entry root_e, e, h1, h2, sub;
	struct cairn_ns_usage u;
	char buf[64];

	assert_int_equal(cairn_ns_getattr(ns, CAIRN_NS_ROOT, &root_e), 0);
	lean_list(&w, CAIRN_NS_ROOT, root_e.st.ino, root_e.st.ino);
	for (size_t i = 0, end = w.n; i < end; i++) {
		assert_int_equal(cairn_ns_getattr(ns, w.held[i], &e), 0);
		if (S_ISDIR(e.st.mode))
			lean_list(&w, w.held[i], e.st.ino, root_e.st.ino);
	}
	assert_int_equal(w.bad, 0);
	assert_true(w.n > 8);
	cairn_ns_usage(ns, &u);
	assert_int_equal(u.nodes, 1);
	assert_int_equal(u.refs, w.n);
	for (size_t i = 0; i < w.n; i++)
		cairn_ns_forget(ns, w.held[i], 1);
	cairn_ns_usage(ns, &u);
	assert_int_equal(u.refs, 0);
	assert_int_equal(u.over_forgets, 0);

	/* hard links: one id, one inode number, through either name */
	assert_int_equal(walk(ns, "/hard1", &h1), 0);
	assert_int_equal(walk(ns, "/hard2", &h2), 0);
	assert_int_equal(h1.node, h2.node);
	assert_int_equal(h1.st.ino, h2.st.ino);
	assert_int_equal(h1.st.nlink, 2);
	release_entry(ns, &h1);
	release_entry(ns, &h2);
	/* an id stays good for the same object after its last forget */
	assert_int_equal(cairn_ns_read(ns, h1.node, buf, sizeof(buf), 0), 4);
	assert_memory_equal(buf, "hard", 4);
	/* ".." of a directory two down is its parent's inode */
	assert_int_equal(walk(ns, "/dir", &e), 0);
	assert_int_equal(walk(ns, "/dir/sub", &sub), 0);
	w.n = 0;
	lean_list(&w, sub.node, sub.st.ino, e.st.ino);
	assert_int_equal(w.bad, 0);
	assert_int_equal(w.n, 1);
	release_entry(ns, &sub);
	/* types come with the id: a file is not a directory, nor a link */
	assert_int_equal(cairn_ns_lookup(ns, h1.node, "x", 1, &sub), -ENOTDIR);
	assert_int_equal(cairn_ns_readdir(ns, h1.node, 0, lean_cb, &w), -ENOTDIR);
	assert_int_equal(cairn_ns_readlink(ns, h1.node, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(cairn_ns_read(ns, e.node, buf, sizeof(buf), 0), -EISDIR);
	assert_int_equal(cairn_ns_mkdir(ns, e.node, "new", 3, 0755, &root, &sub), -EROFS);
	/* no names kept, but a path is found in the image (for error messages) */
	assert_int_equal(cairn_ns_path(ns, e.node, buf, sizeof(buf)), 4);
	assert_string_equal(buf, "/dir");
	assert_true(cairn_ns_path(ns, h1.node, buf, sizeof(buf)) == 6);
	assert_true(!strcmp(buf, "/hard1") || !strcmp(buf, "/hard2"));
	assert_int_equal(cairn_ns_path(ns, e.node, buf, 4), -ENOENT); /* does not fit */
	release_entry(ns, &e);
	cairn_ns_forget(ns, w.held[0], 2); /* one more than was looked up */
	cairn_ns_usage(ns, &u);
	assert_int_equal(u.nodes, 1);
	assert_int_equal(u.over_forgets, 1);
	cairn_ns_free(ns);

	/* CAIRN_NS_NAMES: a node per object held, with its path */
	ns = new_ns(fx, CAIRN_NS_NAMES, NULL);
	assert_int_equal(walk(ns, "/dir/sub", &sub), 0);
	assert_int_equal(cairn_ns_path(ns, sub.node, buf, sizeof(buf)), 8);
	assert_string_equal(buf, "/dir/sub");
	cairn_ns_usage(ns, &u);
	assert_int_equal(u.nodes, 3);
	assert_int_equal(u.refs, 1);
	release_entry(ns, &sub);
	cairn_ns_usage(ns, &u);
	assert_int_equal(u.nodes, 1);
	assert_int_equal(u.refs, 0);
	cairn_ns_free(ns);
}

/* SEEK_DATA/SEEK_HOLE on an image file follow its extents, read-only and on
 * the overlay before copy-up (they answered "all data" once). */
static void test_holes(void **state)
{
	struct fixture *fx = *state;
	unsigned flags[2] = { 0, CAIRN_NS_OVERLAY };

	for (int i = 0; i < 2; i++) {
		struct cairn_ns *ns = new_ns(fx, flags[i], NULL);
		struct cairn_ns_entry e;

		assert_int_equal(walk(ns, "/dir/sparse", &e), 0);
		assert_int_equal(cairn_ns_lseek(ns, e.node, 0, SEEK_DATA), 0);
		assert_int_equal(cairn_ns_lseek(ns, e.node, 0, SEEK_HOLE), 4096);
		assert_int_equal(cairn_ns_lseek(ns, e.node, 5000, SEEK_DATA), 512 * 1024);
		assert_int_equal(cairn_ns_lseek(ns, e.node, 512 * 1024, SEEK_HOLE),
				 512 * 1024 + 4096);
		assert_int_equal(cairn_ns_lseek(ns, e.node, 600 * 1024, SEEK_DATA), -ENXIO);
		assert_int_equal(cairn_ns_lseek(ns, e.node, 600 * 1024, SEEK_HOLE), 600 * 1024);
		assert_int_equal(cairn_ns_lseek(ns, e.node, 1024 * 1024, SEEK_HOLE), -ENXIO);
		assert_int_equal(cairn_ns_lseek(ns, e.node, -1, SEEK_DATA), -ENXIO);
		release_entry(ns, &e);
		cairn_ns_free(ns);
	}
}

/* The overlay's root (RAM from the start) shows the image root's times. */
static void test_overlay_root(void **state)
{
	struct fixture *fx = *state;
	struct cairn_ns *ns = new_ns(fx, CAIRN_NS_OVERLAY, NULL);
	struct cairn_ns_entry e;

	assert_int_equal(cairn_ns_getattr(ns, CAIRN_NS_ROOT, &e), 0);
	assert_int_equal(e.st.mtime.sec, 1000000000);
	assert_int_equal(e.st.mode & 07777, 0755);
	cairn_ns_free(ns);
}

static void test_tmp(void **state)
{
	struct fixture *fx = *state;
	struct cairn_ns *ns = new_ns(fx, 0, "/tmp:/var/log");
	struct cairn_ns_entry e, f;
	struct names n;
	char buf[64];

	read_str(ns, "/tmp/seed", buf, sizeof(buf));
	assert_string_equal(buf, "seeded");
	assert_int_equal(walk(ns, "/tmp", &e), 0);
	assert_false(e.flags & CAIRN_NS_E_IMMUTABLE);
	assert_int_equal(cairn_ns_mknod(ns, e.node, "new", 3, S_IFREG | 0644, 0, &root, &f), 0);
	assert_int_equal(cairn_ns_write(ns, f.node, "hello", 5, 0, 0, &root), 5);
	release_entry(ns, &f);
	release_entry(ns, &e);
	read_str(ns, "/tmp/new", buf, sizeof(buf));
	assert_string_equal(buf, "hello");
	assert_int_equal(walk(ns, "/var", &e), 0);
	assert_true(e.flags & CAIRN_NS_E_IMMUTABLE);
	assert_int_equal(cairn_ns_mkdir(ns, e.node, "x", 1, 0755, &root, &f), -EROFS);
	release_entry(ns, &e);
	assert_int_equal(walk(ns, "/var/log", &e), 0);
	assert_int_equal(cairn_ns_mkdir(ns, e.node, "x", 1, 0755, &root, &f), 0);
	release_entry(ns, &f);
	release_entry(ns, &e);
	list(ns, "/", &n);
	assert_non_null(strstr(n.buf, "tmp "));
	assert_non_null(strstr(n.buf, "var "));
	assert_int_equal(n.count, 7); /* dir etc hard1 hard2 link tmp var, tmp once */
	assert_int_equal(nodes(ns), 1);
	cairn_ns_free(ns);
}

/* tmp= paths that would hide an image file or symlink are refused, and the
 * caller learns which one. */
static void test_tmp_refused(void **state)
{
	struct fixture *fx = *state;
	static const char *const bad[] = { "/etc/motd", "/link", "/hard1/x", "/tmp:/link/y" };
	struct cairn_ns_config c;
	struct cairn_ns *ns;
	char err[64];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&c, 0, sizeof(c));
		c.image = fx->img;
		c.tmp_paths = bad[i];
		c.err_path = err;
		c.err_path_size = sizeof(err);
		err[0] = 0;
		assert_int_equal(cairn_ns_new(&c, &ns), -ENOTDIR);
		assert_string_equal(err, strrchr(bad[i], ':') ? strrchr(bad[i], ':') + 1 : bad[i]);
	}
	c.tmp_paths = "relative";
	assert_int_equal(cairn_ns_new(&c, &ns), -EINVAL);
	assert_string_equal(err, "relative");
}

/* open(O_TRUNC) copies an image file up at size 0 (no data needed: it fits
 * where the data would not); a name of a hard-linked image file copies up
 * alone, with an inode number of its own, and the others show the links left;
 * O_TMPFILE makes a nameless file that link() names. */
static void test_overlay_trunc_links_tmpfile(void **state)
{
	struct fixture *fx = *state;
	struct cairn_ns_config c;
	struct cairn_ns *ns;
	struct cairn_ns_entry h1, h2, e, t, l, root_e;
	uint64_t fh;
	char buf[16];

	memset(&c, 0, sizeof(c));
	c.image = fx->img;
	c.flags = CAIRN_NS_OVERLAY;
	c.ram.size_limit = 2048; /* less than a chunk: no room for any data */
	assert_int_equal(cairn_ns_new(&c, &ns), 0);
	assert_int_equal(walk(ns, "/etc/motd", &e), 0);
	assert_int_equal(cairn_ns_open(ns, e.node, O_WRONLY, &root, &fh), -ENOSPC);
	assert_int_equal(cairn_ns_open(ns, e.node, O_WRONLY | O_TRUNC, &root, &fh), 0);
	assert_int_equal(cairn_ns_getattr(ns, e.node, &e), 0);
	assert_int_equal(e.st.size, 0);
	cairn_ns_release(ns, e.node, fh);
	release_entry(ns, &e);
	/* the same for a truncation */
	assert_int_equal(walk(ns, "/etc/conf/a", &e), 0);
	{
		struct cairn_setattr sa = { .valid = CAIRN_SET_SIZE, .size = 0 };

		assert_int_equal(cairn_ns_setattr(ns, e.node, &sa, &root, &e), 0);
	}
	assert_int_equal(e.st.size, 0);
	release_entry(ns, &e);
	cairn_ns_free(ns);

	c.ram.size_limit = 0;
	assert_int_equal(cairn_ns_new(&c, &ns), 0);

	assert_int_equal(walk(ns, "/hard1", &h1), 0);
	assert_int_equal(walk(ns, "/hard2", &h2), 0);
	assert_int_equal(h1.st.ino, h2.st.ino);
	assert_int_equal(h1.st.nlink, 2);
	assert_true(h2.flags & CAIRN_NS_E_VOLATILE);
	assert_int_equal(cairn_ns_write(ns, h1.node, "H", 1, 0, 0, &root), 1);
	assert_int_equal(cairn_ns_getattr(ns, h1.node, &h1), 0);
	assert_int_equal(cairn_ns_getattr(ns, h2.node, &h2), 0);
	assert_int_not_equal(h1.st.ino, h2.st.ino);
	assert_int_equal(h1.st.nlink, 1);
	assert_int_equal(h2.st.nlink, 1);
	assert_int_equal(cairn_ns_read(ns, h2.node, buf, sizeof(buf), 0), 4);
	assert_memory_equal(buf, "hard", 4);
	release_entry(ns, &h1);
	release_entry(ns, &h2);

	assert_int_equal(cairn_ns_getattr(ns, CAIRN_NS_ROOT, &root_e), 0);
	assert_int_equal(cairn_ns_tmpfile(ns, CAIRN_NS_ROOT, 0600, &root, &t), 0);
	assert_int_equal(t.st.nlink, 0);
	assert_int_equal(cairn_ns_lookup(ns, CAIRN_NS_ROOT, "named", 5, &e), -ENOENT);
	assert_int_equal(cairn_ns_link(ns, t.node, CAIRN_NS_ROOT, "named", 5, &l), 0);
	assert_int_equal(l.node, t.node);
	assert_int_equal(l.st.nlink, 1);
	release_entry(ns, &l);
	release_entry(ns, &t);
	assert_int_equal(walk(ns, "/named", &e), 0);
	release_entry(ns, &e);
	cairn_ns_free(ns);
}

static void test_overlay(void **state)
{
	struct fixture *fx = *state;
	struct cairn_ns *ns = new_ns(fx, CAIRN_NS_OVERLAY, NULL);
	struct cairn_ns_entry e, d, f;
	struct names n;
	char buf[64];
	uint64_t fh, ino;
	cairn_ino_t lino;

	/* copy-up on open for writing keeps the inode number */
	assert_int_equal(walk(ns, "/etc/motd", &e), 0);
	ino = e.st.ino;
	assert_int_equal(cairn_ns_open(ns, e.node, O_WRONLY, NULL, &fh), 0);
	assert_int_equal(cairn_ns_write(ns, e.node, "CHANGED!", 8, 0, 0, &root), 8);
	cairn_ns_release(ns, e.node, fh);
	assert_int_equal(cairn_ns_getattr(ns, e.node, &f), 0);
	assert_int_equal(f.st.ino, ino);
	release_entry(ns, &e);
	read_str(ns, "/etc/motd", buf, sizeof(buf));
	assert_string_equal(buf, "CHANGED!");
	/* forgotten and looked up again: the same inode number, no private xattrs */
	assert_int_equal(walk(ns, "/etc/motd", &e), 0);
	assert_int_equal(e.st.ino, ino);
	assert_int_equal(cairn_ns_listxattr(ns, e.node, buf, sizeof(buf)), 0);
	assert_int_equal(cairn_ns_getxattr(ns, e.node, "trusted.cairn.origin", buf, 8), -ENODATA);
	assert_int_equal(cairn_ns_setxattr(ns, e.node, "trusted.cairn.x", "1", 1, 0), -EPERM);
	release_entry(ns, &e);
	/* the image is untouched */
	assert_int_equal(cairn_image_resolve(fx->img, "/etc/motd", 0, &lino), 0);
	assert_int_equal(cairn_image_read(fx->img, lino, buf, 8, 0), 8);
	assert_memory_equal(buf, "original", 8);

	/* a copy-up into a RAM directory moves none of its times, ctime included */
	struct cairn_ns_entry before, after;
	struct cairn_setattr ch = { .valid = CAIRN_SET_MODE, .mode = 0600 };
	struct timespec nap = { 0, 2000000 };
	assert_int_equal(walk(ns, "/etc", &before), 0);
	nanosleep(&nap, NULL);
	assert_int_equal(walk(ns, "/etc/conf/a", &e), 0);
	assert_int_equal(cairn_ns_setattr(ns, e.node, &ch, &root, &f), 0);
	release_entry(ns, &e);
	assert_int_equal(cairn_ns_getattr(ns, before.node, &after), 0);
	assert_int_equal(after.st.ctime.sec, before.st.ctime.sec);
	assert_int_equal(after.st.ctime.nsec, before.st.ctime.nsec);
	assert_int_equal(after.st.mtime.nsec, before.st.mtime.nsec);
	release_entry(ns, &before);

	/* whiteouts and merged listings */
	assert_int_equal(walk(ns, "/etc/conf", &d), 0);
	assert_int_equal(cairn_ns_unlink(ns, d.node, "a", 1), 0);
	assert_int_equal(cairn_ns_lookup(ns, d.node, "a", 1, &e), -ENOENT);
	assert_int_equal(cairn_ns_unlink(ns, d.node, "a", 1), -ENOENT);
	assert_int_equal(cairn_ns_mknod(ns, d.node, "c", 1, S_IFREG | 0644, 0, &root, &e), 0);
	release_entry(ns, &e);
	release_entry(ns, &d);
	list(ns, "/etc/conf", &n);
	assert_string_equal(n.buf, "c b ");

	/* rmdir of a non-empty image dir, then of an emptied one, then mkdir: opaque */
	assert_int_equal(walk(ns, "/dir", &d), 0);
	assert_int_equal(cairn_ns_rmdir(ns, d.node, "sub", 3), -ENOTEMPTY);
	assert_int_equal(walk(ns, "/dir/sub", &e), 0);
	assert_int_equal(cairn_ns_unlink(ns, e.node, "f", 1), 0);
	release_entry(ns, &e);
	assert_int_equal(cairn_ns_rmdir(ns, d.node, "sub", 3), 0);
	assert_int_equal(cairn_ns_lookup(ns, d.node, "sub", 3, &e), -ENOENT);
	assert_int_equal(cairn_ns_mkdir(ns, d.node, "sub", 3, 0755, &root, &e), 0);
	release_entry(ns, &e);
	release_entry(ns, &d);
	list(ns, "/dir/sub", &n);
	assert_int_equal(n.count, 0);

	/* RENAME_EXCHANGE of a RAM directory with the opaque one that replaced an
	 * image directory: the image's entries stay hidden (difftest seed 127) */
	assert_int_equal(cairn_ns_mkdir(ns, CAIRN_NS_ROOT, "ramdir", 6, 0755, &root, &e), 0);
	release_entry(ns, &e);
	assert_int_equal(walk(ns, "/dir", &d), 0);
	assert_int_equal(cairn_ns_rename(ns, CAIRN_NS_ROOT, "ramdir", 6, d.node, "sub", 3,
					 RENAME_EXCHANGE), 0);
	release_entry(ns, &d);
	list(ns, "/dir/sub", &n);
	assert_int_equal(n.count, 0);
	list(ns, "/ramdir", &n);
	assert_int_equal(n.count, 0);
	assert_int_equal(cairn_ns_rmdir(ns, CAIRN_NS_ROOT, "ramdir", 6), 0);

	/* renames: image directories give EXDEV, files move */
	assert_int_equal(cairn_ns_rename(ns, CAIRN_NS_ROOT, "etc", 3, CAIRN_NS_ROOT, "etc2", 4, 0),
			 -EXDEV);
	assert_int_equal(cairn_ns_rename(ns, CAIRN_NS_ROOT, "hard1", 5, CAIRN_NS_ROOT, "moved", 5,
					 0), 0);
	read_str(ns, "/moved", buf, sizeof(buf));
	assert_string_equal(buf, "hard");
	assert_int_equal(walk(ns, "/hard1", &e), -ENOENT);
	read_str(ns, "/hard2", buf, sizeof(buf));
	assert_string_equal(buf, "hard");
	assert_int_equal(cairn_ns_rename(ns, CAIRN_NS_ROOT, "moved", 5, CAIRN_NS_ROOT, "hard2", 5,
					 RENAME_NOREPLACE), -EEXIST);
	assert_int_equal(cairn_ns_rename(ns, CAIRN_NS_ROOT, "moved", 5, CAIRN_NS_ROOT, "link", 4,
					 RENAME_EXCHANGE), 0);
	assert_int_equal(walk(ns, "/moved", &e), 0);
	assert_true(S_ISLNK(e.st.mode));
	release_entry(ns, &e);
	list(ns, "/", &n);
	/* upper entries first, then the image's not hidden: each name once */
	assert_int_equal(n.count, 6);
	assert_null(strstr(n.buf, "hard1"));
	assert_non_null(strstr(n.buf, "moved "));
	assert_non_null(strstr(n.buf, "tmp "));
	assert_int_equal(nodes(ns), 1);
	cairn_ns_free(ns);
}

static void test_empty(void **state)
{
	struct cairn_ns *ns = new_ns(NULL, CAIRN_NS_EMPTY, NULL);
	struct cairn_ns_entry d, f;
	struct names n;
	char buf[8];

	assert_int_equal(cairn_ns_mkdir(ns, CAIRN_NS_ROOT, "d", 1, 0755, &root, &d), 0);
	assert_int_equal(cairn_ns_mknod(ns, d.node, "f", 1, S_IFREG | 0600, 0, &root, &f), 0);
	assert_int_equal(cairn_ns_write(ns, f.node, "abc", 3, 0, 0, &root), 3);
	assert_int_equal(cairn_ns_read(ns, f.node, buf, sizeof(buf), 0), 3);
	assert_int_equal(cairn_ns_unlink(ns, d.node, "f", 1), 0);
	/* still readable while referenced */
	assert_int_equal(cairn_ns_read(ns, f.node, buf, sizeof(buf), 0), 3);
	release_entry(ns, &f);
	assert_int_equal(cairn_ns_rmdir(ns, CAIRN_NS_ROOT, "d", 1), 0);
	release_entry(ns, &d);
	list(ns, "/", &n);
	assert_int_equal(n.count, 0);
	assert_int_equal(nodes(ns), 1);
	cairn_ns_free(ns);
}

/* Every lookup of a full walk kept, then forgotten: nodes go back to the root. */
struct walk_ctx {
	struct cairn_ns *ns;
	uint64_t dir;
	uint64_t *held;
	size_t n;
};

static int collect_cb(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
		      uint64_t next)
{
	struct walk_ctx *w = ctx;
	struct cairn_ns_entry e;

	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)))
		return 0;
	assert_int_equal(cairn_ns_lookup(w->ns, w->dir, name, len, &e), 0);
	w->held[w->n++] = e.node;
	return 0;
}

static void test_forget(void **state)
{
	struct fixture *fx = *state;
	struct cairn_ns *ns = new_ns(fx, CAIRN_NS_OVERLAY, NULL);
	uint64_t held[64];
	struct walk_ctx w = { ns, CAIRN_NS_ROOT, held, 0 };
	size_t start = 0;

	/* breadth-first over the whole tree, keeping every reference */
	assert_int_equal(cairn_ns_readdir(ns, CAIRN_NS_ROOT, 0, collect_cb, &w), 0);
	while (start < w.n) {
		size_t end = w.n;

		for (size_t i = start; i < end; i++) {
			struct cairn_ns_entry e;

			assert_int_equal(cairn_ns_getattr(ns, held[i], &e), 0);
			if (S_ISDIR(e.st.mode)) {
				w.dir = held[i];
				assert_int_equal(cairn_ns_readdir(ns, held[i], 0, collect_cb, &w),
						 0);
			}
		}
		start = end;
	}
	assert_int_equal(w.n, 14); /* dir/sparse too */
	assert_true(nodes(ns) > 10);
	/* forget in lookup order: parents go before children, which keep them */
	for (size_t i = 0; i < w.n; i++)
		cairn_ns_forget(ns, held[i], 1);
	assert_int_equal(nodes(ns), 1);
	cairn_ns_free(ns);
}

/* Threads change one image directory at once (its copy-up races) while another
 * lists it and looks names up; run under TSan by `make tsan-test`. */
struct stress {
	struct cairn_ns *ns;
	int id;
	int errors;
};

static void *stress_writer(void *arg)
{
	struct stress *st = arg;
	struct cairn_ns *ns = st->ns;
	char name[32];

	for (int i = 0; i < 200; i++) {
		struct cairn_ns_entry d, f;
		size_t len = (size_t)snprintf(name, sizeof(name), "t%d-%d", st->id, i % 8);

		if (walk(ns, "/etc/conf", &d)) {
			st->errors++;
			continue;
		}
		if (cairn_ns_mknod(ns, d.node, name, len, S_IFREG | 0644, 0, &root, &f) == 0) {
			if (cairn_ns_write(ns, f.node, name, len, 0, 0, &root) != (ssize_t)len)
				st->errors++;
			release_entry(ns, &f);
		}
		if (i % 3 == 0)
			cairn_ns_rename(ns, d.node, name, len, d.node, "shared", 6, 0);
		else if (i % 3 == 1)
			cairn_ns_unlink(ns, d.node, name, len);
		release_entry(ns, &d);
	}
	return NULL;
}

static void *stress_reader(void *arg)
{
	struct stress *st = arg;
	struct cairn_ns *ns = st->ns;

	for (int i = 0; i < 200; i++) {
		struct cairn_ns_entry d, e;
		struct names n;
		char buf[32];

		list(ns, "/etc/conf", &n);
		if (walk(ns, "/etc/conf", &d))
			continue;
		if (cairn_ns_lookup(ns, d.node, "b", 1, &e) == 0) {
			if (cairn_ns_read(ns, e.node, buf, sizeof(buf), 0) != 1)
				st->errors++;
			release_entry(ns, &e);
		} else {
			st->errors++;
		}
		release_entry(ns, &d);
	}
	return NULL;
}

static void test_threads(void **state)
{
	struct fixture *fx = *state;
	struct cairn_ns *ns = new_ns(fx, CAIRN_NS_OVERLAY, NULL);
	struct stress st[4];
	pthread_t t[4];

	for (int i = 0; i < 4; i++) {
		st[i] = (struct stress){ ns, i, 0 };
		assert_int_equal(pthread_create(&t[i], NULL, i == 3 ? stress_reader : stress_writer,
						&st[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(st[i].errors, 0);
	}
	assert_int_equal(nodes(ns), 1);
	cairn_ns_free(ns);
}

/* Large image reads reuse kept buffers (cairn_ns_read_iov): readers on four
 * threads, each read checked byte for byte in the callback, while the buffer
 * is still the read's. Two readers handed one buffer, or a buffer handed back
 * too early, would show another read's bytes. */
struct iov_reader {
	struct cairn_ns *ns;
	uint64_t node;
	int id, errors;
};

struct iov_want {
	uint64_t off;
	size_t len;
	int bad;
};

/* dir/sparse: "head" at 0, "mid" at 512 KiB, zeros elsewhere (1 MiB). */
static int sparse_byte(uint64_t at)
{
	if (at < 4)
		return "head"[at];
	if (at >= 512 * 1024 && at < 512 * 1024 + 3)
		return "mid"[at - 512 * 1024];
	return 0;
}

static int iov_check(void *ctx, const struct iovec *iov, int iovcnt, size_t total)
{
	struct iov_want *w = ctx;
	const unsigned char *p = iov[0].iov_base;

	if (iovcnt != 1 || total != w->len || iov[0].iov_len != w->len)
		w->bad = 1;
	for (size_t i = 0; i < iov[0].iov_len && !w->bad; i++)
		if (p[i] != sparse_byte(w->off + i))
			w->bad = 1;
	return 0;
}

static void *iov_reader_main(void *arg)
{
	struct iov_reader *r = arg;
	static const struct { uint64_t off; size_t len; } reads[] = {
		{ 0, 1024 * 1024 }, { 512 * 1024 - 100, 200000 }, { 1, 300 * 1024 },
		{ 512 * 1024 + 1, 4096 },
	};

	for (int i = 0; i < 40; i++) {
		unsigned k = (unsigned)(i + r->id) % 4;
		struct iov_want w = { reads[k].off, reads[k].len, 0 };
		int from_image = 0;

		if (cairn_ns_read_iov(r->ns, r->node, w.len, w.off, iov_check, &w, &from_image) ||
		    w.bad || !from_image)
			r->errors++;
	}
	return NULL;
}

/* Four readers of node at once, each running fn; none may see an error. */
static void run_iov_readers(struct cairn_ns *ns, uint64_t node, void *(*fn)(void *))
{
	struct iov_reader r[4];
	pthread_t t[4];

	for (int i = 0; i < 4; i++) {
		r[i] = (struct iov_reader){ ns, node, i, 0 };
		assert_int_equal(pthread_create(&t[i], NULL, fn, &r[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(r[i].errors, 0);
	}
}

static void test_read_iov_buffers(void **state)
{
	struct fixture *fx = *state;
	struct cairn_ns *ns = new_ns(fx, 0, NULL);
	struct cairn_ns_entry e;

	assert_int_equal(walk(ns, "/dir/sparse", &e), 0);
	run_iov_readers(ns, e.node, iov_reader_main);
	release_entry(ns, &e);
	cairn_ns_free(ns);
}

/* Reads of a file stored in one piece are lent from the segment cache
 * (cairn_ns_read_iov without a copy): readers on four threads of a use-once
 * namespace, so segments are dropped once delivered while others hold them,
 * each read checked byte for byte in the callback, over however many iovecs
 * it was given. */
#define LENT_SIZE (3u * 1024 * 1024 + 123)

static unsigned char lent_byte(uint64_t at)
{
	return (unsigned char)(at * 131 + (at >> 12));
}

static int iov_check_lent(void *ctx, const struct iovec *iov, int iovcnt, size_t total)
{
	struct iov_want *w = ctx;
	uint64_t at = w->off;

	w->bad |= total != w->len;
	for (int i = 0; i < iovcnt && !w->bad; i++) {
		const unsigned char *p = iov[i].iov_base;

		for (size_t k = 0; k < iov[i].iov_len; k++)
			w->bad |= p[k] != lent_byte(at + k);
		at += iov[i].iov_len;
	}
	w->bad |= at != w->off + w->len;
	return 0;
}

static void *lent_reader_main(void *arg)
{
	struct iov_reader *r = arg;
	uint64_t rng = 77u * (unsigned)(r->id + 1);

	for (int i = 0; i < 60; i++) {
		struct iov_want w = { 0, 0, 0 };
		int from_image = 0;

		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		w.off = (rng >> 20) % LENT_SIZE;
		w.len = i % 3 ? 1024 * 1024 : (size_t)(rng >> 44) % 20000 + 1;
		if (w.len > LENT_SIZE - w.off)
			w.len = LENT_SIZE - w.off;
		if (cairn_ns_read_iov(r->ns, r->node, w.len, w.off, iov_check_lent, &w,
				      &from_image) || w.bad || !from_image)
			r->errors++;
	}
	return NULL;
}

static void test_read_iov_lent(void **state)
{
	struct fixture fx = { .dir = "/tmp/cairn-ns-lent.XXXXXX" };
	struct cairn_cache_stats cs;
	struct cairn_ns_entry e;
	struct cairn_ns *ns;
	char src[96], path[128];
	unsigned char *data = malloc(LENT_SIZE);
	FILE *f;

	(void)state;
	assert_non_null(data);
	assert_non_null(mkdtemp(fx.dir));
	snprintf(src, sizeof(src), "%s/src", fx.dir);
	assert_int_equal(mkdir(src, 0755), 0);
	snprintf(path, sizeof(path), "%s/big", src);
	for (size_t i = 0; i < LENT_SIZE; i++)
		data[i] = lent_byte(i);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, LENT_SIZE, f), LENT_SIZE);
	fclose(f);
	free(data);
	snprintf(fx.img_path, sizeof(fx.img_path), "%s/img", fx.dir);
	fx.img = t_pack(src, fx.img_path);
	ns = new_ns(&fx, CAIRN_NS_USE_ONCE, NULL);
	assert_int_equal(walk(ns, "/big", &e), 0);
	run_iov_readers(ns, e.node, lent_reader_main);
	cairn_cache_get_stats(cairn_image_cache(fx.img), &cs);
	assert_true(cs.lent_bytes > 0); /* not all copied */
	release_entry(ns, &e);
	cairn_ns_free(ns);
	cairn_image_close(fx.img);
	t_remove_tree(fx.dir);
}

/* The kill-privilege rules belong to the namespace, so an embedder gets all of
 * them: a write, a truncation (setattr or O_TRUNC) and a chown drop
 * security.capability; a write by another user clears set-user-ID. */
static int has_caps(struct cairn_ns *ns, uint64_t node)
{
	char v[32];

	return cairn_ns_getxattr(ns, node, "security.capability", v, sizeof(v)) > 0;
}

static void set_caps(struct cairn_ns *ns, uint64_t node)
{
	static const char caps[20] = { 1, 0, 0, 2 }; /* a VFS_CAP_REVISION_2 header */

	assert_int_equal(cairn_ns_setxattr(ns, node, "security.capability", caps, sizeof(caps),
					   0), 0);
	assert_true(has_caps(ns, node));
}

static void test_kill_priv(void **state)
{
	struct cairn_ns *ns = new_ns(NULL, CAIRN_NS_EMPTY, NULL);
	const struct cairn_cred user = { 1, 1, 022 };
	struct cairn_setattr sa;
	struct cairn_ns_entry e, f;
	uint64_t fh;

	(void)state;
	assert_int_equal(cairn_ns_mknod(ns, CAIRN_NS_ROOT, "bin", 3, S_IFREG | 0755, 0, &root, &e),
			 0);
	set_caps(ns, e.node);
	assert_int_equal(cairn_ns_write(ns, e.node, "x", 1, 0, 0, &root), 1);
	assert_false(has_caps(ns, e.node));

	set_caps(ns, e.node);
	memset(&sa, 0, sizeof(sa));
	sa.valid = CAIRN_SET_SIZE;
	sa.size = 0;
	assert_int_equal(cairn_ns_setattr(ns, e.node, &sa, &root, &f), 0);
	assert_false(has_caps(ns, e.node));

	set_caps(ns, e.node);
	assert_int_equal(cairn_ns_open(ns, e.node, O_WRONLY | O_TRUNC, &root, &fh), 0);
	cairn_ns_release(ns, e.node, fh);
	assert_false(has_caps(ns, e.node));

	set_caps(ns, e.node);
	sa.valid = CAIRN_SET_UID | CAIRN_SET_GID;
	sa.uid = sa.gid = 1;
	assert_int_equal(cairn_ns_setattr(ns, e.node, &sa, &root, &f), 0);
	assert_false(has_caps(ns, e.node));

	/* A mode change alone keeps them; so does reading. */
	set_caps(ns, e.node);
	sa.valid = CAIRN_SET_MODE;
	sa.mode = 06775;
	assert_int_equal(cairn_ns_setattr(ns, e.node, &sa, &root, &f), 0);
	assert_true(has_caps(ns, e.node));
	/* set-user-ID and set-group-ID go on another user's write */
	assert_int_equal(cairn_ns_write(ns, e.node, "y", 1, 0, 0, &user), 1);
	assert_int_equal(cairn_ns_getattr(ns, e.node, &f), 0);
	assert_int_equal(f.st.mode & 07777, 0775);
	assert_false(has_caps(ns, e.node));
	release_entry(ns, &e);
	cairn_ns_free(ns);
}

/* A forget of more references than a node has is the caller's bug: it is
 * counted (and fatal in a CAIRN_DEBUG build), and the namespace stays sound. */
static void test_over_forget(void **state)
{
	struct fixture *fx = *state;
	struct cairn_ns *ns = new_ns(fx, CAIRN_NS_OVERLAY, NULL);
	struct cairn_ns_entry e;
	struct cairn_ns_usage u;

	assert_int_equal(walk(ns, "/etc/motd", &e), 0);
#ifdef CAIRN_DEBUG
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		cairn_ns_forget(ns, e.node, 2);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	cairn_ns_forget(ns, e.node, 1);
#else
	cairn_ns_forget(ns, e.node, 2);
	cairn_ns_usage(ns, &u);
	assert_int_equal(u.over_forgets, 1);
#endif
	cairn_ns_usage(ns, &u);
	assert_int_equal(u.nodes, 1);
	assert_int_equal(walk(ns, "/etc/motd", &e), 0); /* looked up afresh */
	release_entry(ns, &e);
	cairn_ns_usage(ns, &u);
	assert_int_equal(u.nodes, 1);
	cairn_ns_free(ns);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_readonly, setup, teardown),
		cmocka_unit_test_setup_teardown(test_holes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lean, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlay_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tmp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlay, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tmp_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlay_trunc_links_tmpfile, setup, teardown),
		cmocka_unit_test(test_empty),
		cmocka_unit_test_setup_teardown(test_forget, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_iov_buffers, setup, teardown),
		cmocka_unit_test(test_read_iov_lent),
		cmocka_unit_test(test_kill_priv),
		cmocka_unit_test_setup_teardown(test_over_forget, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
