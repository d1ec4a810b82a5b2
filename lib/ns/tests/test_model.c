/* SPDX-License-Identifier: MIT */
/*
 * Model-based random test of the namespace, as lib/ramfs/tests/test_model.c is
 * for the RAM fs. A small image (files, one with a long run of zeros that
 * copy-up stores as holes, a setuid file, dirs, an empty dir, a fifo, a symlink,
 * user xattrs where the host fs keeps them) is opened as an overlay (the whole tree
 * writable: copy-up, whiteouts, opaque dirs) or with tmp= subtrees (/tmp seeded
 * from the image, /run/x made from nothing, the rest read-only), and thousands of
 * random operations go both to a cairn_ns, through the public API only, and to a
 * reference model: a map of (directory, name) -> object, each object with its
 * type, mode, owner, mtime, content, link count and symlink target.
 *
 * Every result code is predicted, every listing, stat, read and readlink compared;
 * the whole tree is walked every few hundred operations and at the end. Inode
 * numbers are checked for the overlay's promises: an object keeps the number it
 * was first seen with (an image object keeps the image's, through copy-up,
 * rename and forget), two live objects never share one, and a listing shows the
 * numbers stat shows. Some node ids are held across operations (as the kernel
 * holds inodes) and used instead of a fresh lookup.
 *
 * Reproducible: CAIRN_SEED=<n> runs that seed alone (CAIRN_MODEL_OPS=<n> sets the
 * operation count, CAIRN_MODEL_TRACE=1 prints every operation); every failure
 * prints its seed and operation number.
 *
 * Image hard links follow ns.h: changing one name of an image file with several
 * copies that name up alone, as a new inode; the names left keep the image's
 * inode, one link fewer. open(O_TRUNC) empties a file, image files included.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>
#include <cairn/cairn.h>
#include <cairn/mkfs.h>
#include <cairn/ns.h>
#include "util/tests/model.h"
#include "fixture.h"

#define MAXOBJ 1024
#define MAXSIZE (256 * 1024)
#define BIG_SIZE 150000         /* /etc/big: data, a hole of zeros, data */

/* Every name any operation uses; the image's names are among them, so random
 * operations meet image entries often. */
static const char *const names[] = {
	"etc", "motd", "big", "conf", "a", "b", "dir", "sub", "f", "empty",
	"fifo", "ln", "tmp", "seed", "sd", "x", "run", "n",
};
#define NNAMES ((int)(sizeof(names) / sizeof(names[0])))

enum { T_REG = S_IFREG, T_DIR = S_IFDIR, T_LNK = S_IFLNK, T_FIFO = S_IFIFO };

/* The image, as a table: made on disk, packed by mkfs, and loaded into the model. */
struct image_ent {
	const char *path;
	uint32_t type, perm;
	const char *data;       /* regular file content, symlink target, or (T_LINK) the
				   earlier entry this is a hard link to */
};
#define T_LINK 1u               /* another name of an earlier entry; these come last */
static const struct image_ent image_tree[] = {
	{ "etc", T_DIR, 0755, NULL },
	{ "etc/motd", T_REG, 0644, "hello from the image\n" },
	{ "etc/big", T_REG, 0600, NULL }, /* BIG_SIZE bytes, made by big_byte() */
	{ "etc/conf", T_DIR, 0750, NULL },
	{ "etc/conf/a", T_REG, 04755, "setuid" },
	{ "etc/conf/b", T_REG, 0644, "" },
	{ "dir", T_DIR, 0755, NULL },
	{ "dir/sub", T_DIR, 0700, NULL },
	{ "dir/sub/f", T_REG, 0640, "f" },
	{ "dir/empty", T_DIR, 0755, NULL },
	{ "dir/fifo", T_FIFO, 0644, NULL },
	{ "dir/ln", T_LNK, 0777, "../etc/motd" },
	{ "tmp", T_DIR, 01777, NULL },
	{ "tmp/seed", T_REG, 0644, "seeded" },
	{ "tmp/sd", T_DIR, 0755, NULL },
	{ "tmp/sd/x", T_REG, 0600, "x in sd" },
	{ "dir/b", T_REG, 0644, "two names" },
	{ "etc/b", T_LINK, 0, "dir/b" },
};
#define NIMAGE ((int)(sizeof(image_tree) / sizeof(image_tree[0])))
/* Image objects given user.m=IMAGE_XATTR, if the host fs takes user xattrs. */
#define IMAGE_XATTR "img"
static int image_has_xattr(const char *path)
{
	return !strcmp(path, "etc/motd") || !strcmp(path, "etc/conf") || !strcmp(path, "tmp/seed");
}
#define IMAGE_MTIME(i) (1000000000 + 1000 * (int64_t)(i))

#define BIG_HOLE 40000          /* where its run of zeros starts */
#define BIG_ZEROS 70000
static unsigned char big_byte(size_t i)
{
	return i >= BIG_HOLE && i < BIG_HOLE + BIG_ZEROS ? 0 : (unsigned char)(i * 7 + 1);
}

struct obj {
	int alive;
	uint32_t type, perm, uid, gid;
	int nlink;              /* names (directories: 1) */
	int parent, pname;      /* directories: where the one name is */
	int writable;           /* tmp variant: inside a RAM subtree */
	int image_dir;          /* a directory of the image: never moves (-EXDEV) */
	int holes;              /* /etc/big, unchanged: its run of zeros takes no blocks */
	int group;              /* an image file with several names, not copied up */
	int64_t mtime;          /* seconds; -1 = changed to "now" by the fs */
	uint64_t st_ino;        /* 0 until first seen */
	uint64_t held;          /* a node id kept referenced, or 0 */
	size_t size;
	unsigned char *data;    /* MAXSIZE bytes for regular files */
	char target[32];
	char xval[16];          /* the value of user.m, if xlen */
	int xlen;
	int child[NNAMES];      /* directories: object per name, or -1 */
};

struct model {
	uint64_t seed, rng;
	int op, tmp_variant, trace;
	struct cairn_ns *ns;
	struct cairn_image *img;
	struct obj obj[MAXOBJ];
	int nobj;
	unsigned char *buf, *back;
};

#define TRACE(m, ...) do { if ((m)->trace) { fprintf(stderr, "%d: ", (m)->op); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

#define CHECK(m, cond, ...) \
	T_MODEL_CHECK((m)->seed, (m)->tmp_variant ? "tmp" : "overlay", (m)->op, cond, __VA_ARGS__)

static uint64_t rnd(struct model *m)
{
	return t_rng_next(&m->rng);
}

static uint64_t rn(struct model *m, uint64_t n)
{
	return t_rng_below(&m->rng, n);
}

static int name_index(const char *s, size_t len)
{
	for (int i = 0; i < NNAMES; i++)
		if (strlen(names[i]) == len && !memcmp(names[i], s, len))
			return i;
	return -1;
}

/* ---- the model's objects ---- */

static int new_obj(struct model *m, uint32_t type, uint32_t perm)
{
	struct obj *o;

	if (m->nobj == MAXOBJ)
		return -1;
	o = &m->obj[m->nobj];
	memset(o, 0, sizeof(*o));
	o->alive = 1;
	o->type = type;
	o->perm = perm;
	o->nlink = 1;
	o->mtime = -1;
	o->parent = -1;
	memset(o->child, -1, sizeof(o->child));
	if (type == T_REG)
		o->data = calloc(1, MAXSIZE);
	return m->nobj++;
}

static void release_held(struct model *m, struct obj *o)
{
	if (o->held)
		cairn_ns_forget(m->ns, o->held, 1);
	o->held = 0;
}

static void obj_die(struct model *m, int i)
{
	struct obj *o = &m->obj[i];

	TRACE(m, "obj %d dies", i);
	release_held(m, o);
	o->alive = 0;
	free(o->data);
	o->data = NULL;
}

/* Add name `ni` in dir d for object i. */
static void link_name(struct model *m, int d, int ni, int i)
{
	m->obj[d].child[ni] = i;
	m->obj[d].mtime = -1;
	if (m->obj[i].type == T_DIR) {
		m->obj[i].parent = d;
		m->obj[i].pname = ni;
	}
}

/* Drop name `ni` of dir d; the object dies with its last name. */
static void unlink_name(struct model *m, int d, int ni)
{
	int i = m->obj[d].child[ni];

	m->obj[d].child[ni] = -1;
	m->obj[d].mtime = -1;
	if (--m->obj[i].nlink == 0)
		obj_die(m, i);
}

/* Changing name ni of dir d copies it up. For a name of an image file with
 * several, that makes a new inode for this name alone (ns.h): the model splits
 * it off, and the names left keep the image's inode, one link fewer. */
static void copy_up_name(struct model *m, int d, int ni)
{
	int i = m->obj[d].child[ni], j;
	struct obj *o, *c;
	unsigned char *data;

	if (i < 0 || !m->obj[i].group)
		return;
	j = new_obj(m, m->obj[i].type, m->obj[i].perm);
	CHECK(m, j >= 0, "model full"); /* op_create leaves room for this */
	o = &m->obj[i];
	c = &m->obj[j];
	data = c->data;
	*c = *o;
	c->data = data;
	memcpy(c->data, o->data, MAXSIZE);
	c->nlink = 1;
	c->group = 0;
	c->st_ino = 0;
	c->held = 0;
	m->obj[d].child[ni] = j;
	TRACE(m, "obj %d/%s: copied up as obj %d", d, names[ni], j);
	if (--o->nlink == 0)
		obj_die(m, i);
}

static int dir_is_empty(const struct obj *d)
{
	for (int k = 0; k < NNAMES; k++)
		if (d->child[k] >= 0)
			return 0;
	return 1;
}

/* Is directory a the directory d or one of its ancestors? */
static int is_ancestor(struct model *m, int a, int d)
{
	for (; d >= 0; d = m->obj[d].parent)
		if (d == a)
			return 1;
	return 0;
}

static int pick_dir(struct model *m)
{
	int live[MAXOBJ], n = 0;

	for (int i = 0; i < m->nobj; i++)
		if (m->obj[i].alive && m->obj[i].type == T_DIR)
			live[n++] = i;
	return live[rn(m, (uint64_t)n)];
}

/* A live object other than the root, with one of its names; -1 if none. */
static int pick_obj(struct model *m, int *dir, int *ni)
{
	int cand[MAXOBJ * 2][2], n = 0;

	for (int d = 0; d < m->nobj; d++) {
		if (!m->obj[d].alive || m->obj[d].type != T_DIR)
			continue;
		for (int k = 0; k < NNAMES && n < MAXOBJ * 2; k++)
			if (m->obj[d].child[k] >= 0) {
				cand[n][0] = d;
				cand[n][1] = k;
				n++;
			}
	}
	if (!n)
		return -1;
	n = (int)rn(m, (uint64_t)n);
	*dir = cand[n][0];
	*ni = cand[n][1];
	return m->obj[*dir].child[*ni];
}

/* ---- the namespace side ---- */

static void check_ino(struct model *m, int i, uint64_t ino)
{
	struct obj *o = &m->obj[i];

	if (o->st_ino) {
		CHECK(m, ino == o->st_ino, "obj %d: st_ino %" PRIu64 ", first seen as %" PRIu64, i,
		      ino, o->st_ino);
		return;
	}
	for (int k = 0; k < m->nobj; k++)
		CHECK(m, !m->obj[k].alive || m->obj[k].st_ino != ino,
		      "obj %d: st_ino %" PRIu64 " is obj %d's too", i, ino, k);
	o->st_ino = ino;
}

/* Compare what the ns says about object i with the model. */
static void check_entry(struct model *m, int i, const struct cairn_ns_entry *e)
{
	struct obj *o = &m->obj[i];
	const struct cairn_stat *st = &e->st;

	CHECK(m, (st->mode & S_IFMT) == o->type, "obj %d: type %o want %o", i,
	      st->mode & S_IFMT, o->type);
	CHECK(m, o->type == T_LNK || (st->mode & 07777) == o->perm, "obj %d: mode %o want %o", i,
	      st->mode & 07777, o->perm);
	CHECK(m, st->uid == o->uid && st->gid == o->gid, "obj %d: owner %u:%u want %u:%u", i,
	      st->uid, st->gid, o->uid, o->gid);
	CHECK(m, o->mtime < 0 || st->mtime.sec == o->mtime, "obj %d: mtime %" PRId64
	      " want %" PRId64, i, st->mtime.sec, o->mtime);
	CHECK(m, !!(e->flags & CAIRN_NS_E_IMMUTABLE) == !o->writable,
	      "obj %d: flags %u, writable %d", i, e->flags, o->writable);
	if (o->type == T_REG) {
		CHECK(m, st->size == o->size, "obj %d: size %" PRIu64 " want %zu", i, st->size,
		      o->size);
		CHECK(m, st->nlink == (uint32_t)o->nlink, "obj %d: nlink %u want %d", i,
		      st->nlink, o->nlink);
	}
	if (o->type == T_LNK)
		CHECK(m, st->size == strlen(o->target), "obj %d: symlink size %" PRIu64, i,
		      st->size);
	CHECK(m, !o->holes || st->blocks * 512 <= BIG_SIZE - BIG_ZEROS + 2 * 4096,
	      "obj %d: %" PRIu64 " blocks, the zeros were stored", i, st->blocks);
	check_ino(m, i, st->ino);
}

/* Content and target: a full read of a file, a readlink of a symlink. */
static void check_data(struct model *m, int i, uint64_t node)
{
	struct obj *o = &m->obj[i];

	if (o->type == T_REG) {
		ssize_t r = cairn_ns_read(m->ns, node, m->back, MAXSIZE, 0);

		CHECK(m, r == (ssize_t)o->size, "obj %d: read %zd want %zu", i, r, o->size);
		CHECK(m, !memcmp(m->back, o->data, o->size), "obj %d: content differs", i);
	} else if (o->type == T_LNK) {
		char t[64];
		ssize_t r = cairn_ns_readlink(m->ns, node, t, sizeof(t));

		CHECK(m, r == (ssize_t)strlen(o->target) && !memcmp(t, o->target, (size_t)r),
		      "obj %d: readlink %zd", i, r);
	}
}

/* Look up name ni in the node of dir d; checks the result against the model. */
static uint64_t lookup_child(struct model *m, uint64_t dnode, int d, int ni)
{
	struct cairn_ns_entry e;
	int want = m->obj[d].child[ni];
	int r = cairn_ns_lookup(m->ns, dnode, names[ni], strlen(names[ni]), &e);

	if (want < 0) {
		CHECK(m, r == -ENOENT, "lookup of missing obj %d/%s: %d", d, names[ni], r);
		return 0;
	}
	CHECK(m, r == 0, "lookup obj %d/%s (obj %d): %d", d, names[ni], want, r);
	check_entry(m, want, &e);
	return e.node;
}

/* A node id for directory d with one lookup reference (none for the root): its
 * held node or a walk from the root. put_node() drops it. */
static uint64_t dir_node(struct model *m, int d)
{
	int path[64], n = 0;
	uint64_t cur = CAIRN_NS_ROOT;

	if (m->obj[d].held && rn(m, 2)) {
		cairn_ns_hold(m->ns, m->obj[d].held);
		return m->obj[d].held;
	}
	for (int k = d; m->obj[k].parent >= 0; k = m->obj[k].parent)
		path[n++] = k;
	for (int i = n - 1, p = 0; i >= 0; p = path[i--]) {
		uint64_t next = lookup_child(m, cur, p, m->obj[path[i]].pname);

		if (cur != CAIRN_NS_ROOT)
			cairn_ns_forget(m->ns, cur, 1);
		cur = next;
	}
	return cur;
}

static void put_node(struct model *m, uint64_t node)
{
	if (node != CAIRN_NS_ROOT)
		cairn_ns_forget(m->ns, node, 1);
}

/* A node id for object i named ni in dir d, with one lookup reference. */
static uint64_t obj_node(struct model *m, int d, int ni)
{
	int i = m->obj[d].child[ni];
	uint64_t dn, node;

	if (m->obj[i].held && rn(m, 2)) {
		cairn_ns_hold(m->ns, m->obj[i].held);
		return m->obj[i].held;
	}
	dn = dir_node(m, d);
	node = lookup_child(m, dn, d, ni);
	put_node(m, dn);
	return node;
}

/* A listing, read in pages of `page` entries (0 = all at once) as FUSE reads
 * it: a callback that says "full" has not taken that entry, and the next call
 * resumes from the cookie of the last entry taken. */
struct listing {
	int n, page, taken, full;
	int idx[64];
	uint64_t ino[64];
	unsigned dtype[64];
	uint64_t next;
	int bad;
};

static int list_cb(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
		   uint64_t next)
{
	struct listing *l = ctx;
	int k;

	if (l->page && l->taken == l->page) {
		l->full = 1;
		return 1;
	}
	l->taken++;
	l->next = next;
	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)))
		return 0;
	k = name_index(name, len);
	if (k < 0 || l->n == 64) {
		l->bad = 1;
		return 0;
	}
	l->idx[l->n] = k;
	l->ino[l->n] = ino;
	l->dtype[l->n] = dtype;
	l->n++;
	return 0;
}

static int read_listing(struct model *m, uint64_t dnode, struct listing *l)
{
	int r, rounds = 0;

	l->page = rn(m, 2) ? 0 : 1 + (int)rn(m, 3);
	do {
		l->full = 0;
		l->taken = 0;
		r = cairn_ns_readdir(m->ns, dnode, l->next, list_cb, l);
	} while (!r && l->full && ++rounds < 200);
	return r;
}

static unsigned dtype_of(uint32_t type)
{
	switch (type) {
	case T_DIR: return DT_DIR;
	case T_LNK: return DT_LNK;
	case T_FIFO: return DT_FIFO;
	default: return DT_REG;
	}
}

static void check_listing(struct model *m, int d, uint64_t dnode)
{
	struct listing l = { 0 };
	int want = 0, r = read_listing(m, dnode, &l);

	CHECK(m, r == 0, "readdir obj %d: %d", d, r);
	CHECK(m, !l.bad, "readdir obj %d: a name no operation made", d);
	for (int k = 0; k < NNAMES; k++)
		want += m->obj[d].child[k] >= 0;
	CHECK(m, l.n == want, "readdir obj %d: %d entries, want %d", d, l.n, want);
	for (int j = 0; j < l.n; j++) {
		int c = m->obj[d].child[l.idx[j]];

		CHECK(m, c >= 0, "readdir obj %d: %s should not be there", d, names[l.idx[j]]);
		for (int k = 0; k < j; k++)
			CHECK(m, l.idx[k] != l.idx[j], "readdir obj %d: %s twice", d, names[l.idx[j]]);
		CHECK(m, l.dtype[j] == dtype_of(m->obj[c].type), "readdir obj %d: %s dtype %u", d,
		      names[l.idx[j]], l.dtype[j]);
		CHECK(m, !m->obj[c].st_ino || l.ino[j] == m->obj[c].st_ino,
		      "readdir obj %d: %s (obj %d) d_ino %" PRIu64 ", st_ino %" PRIu64, d,
		      names[l.idx[j]], c, l.ino[j], m->obj[c].st_ino);
	}
}

/* Every object under d: attributes, content, listings. */
static void check_tree(struct model *m, int d, uint64_t dnode, int depth)
{
	CHECK(m, depth < 60, "tree too deep");
	for (int k = 0; k < NNAMES; k++) {
		int c = m->obj[d].child[k];
		uint64_t node;

		if (c < 0)
			continue;
		node = lookup_child(m, dnode, d, k);
		if (m->obj[c].type == T_DIR)
			check_tree(m, c, node, depth + 1);
		else
			check_data(m, c, node);
		put_node(m, node);
	}
	check_listing(m, d, dnode);
}

/* ---- operations ---- */

static int can_write(struct model *m, int i)
{
	return m->obj[i].writable;
}

/* mknod, mkdir, symlink. */
static void op_create(struct model *m, uint32_t type)
{
	int d = pick_dir(m), ni = (int)rn(m, NNAMES), r, i;
	uint32_t perm = (uint32_t[]){ 0644, 0600, 0755, 02755 }[rn(m, 4)];
	struct cairn_ns_entry e;
	char target[32];
	uint64_t dn;
	const char *nm = names[ni];

	if (m->nobj >= MAXOBJ - 4)
		return; /* the model is full (copy_up_name needs room too) */
	snprintf(target, sizeof(target), "t%" PRIu64, rn(m, 100000));
	dn = dir_node(m, d);
	if (type == T_DIR)
		r = cairn_ns_mkdir(m->ns, dn, nm, strlen(nm), perm, NULL, &e);
	else if (type == T_LNK)
		r = cairn_ns_symlink(m->ns, dn, nm, strlen(nm), target, NULL, &e);
	else
		r = cairn_ns_mknod(m->ns, dn, nm, strlen(nm), type | perm, 0, NULL, &e);
	put_node(m, dn);
	TRACE(m, "create %o obj %d/%s -> %d", type, d, nm, r);
	if (!can_write(m, d)) {
		CHECK(m, r == -EROFS, "create in read-only obj %d: %d", d, r);
		return;
	}
	if (m->obj[d].child[ni] >= 0) {
		CHECK(m, r == -EEXIST, "create over obj %d/%s: %d", d, nm, r);
		return;
	}
	CHECK(m, r == 0, "create obj %d/%s: %d", d, nm, r);
	i = new_obj(m, type, type == T_LNK ? 0777 : perm);
	m->obj[i].writable = 1;
	if (m->obj[d].perm & S_ISGID) { /* a setgid directory passes on its group */
		m->obj[i].gid = m->obj[d].gid;
		if (type == T_DIR)
			m->obj[i].perm |= S_ISGID;
	}
	if (type == T_LNK)
		strcpy(m->obj[i].target, target);
	link_name(m, d, ni, i);
	check_entry(m, i, &e);
	if (rn(m, 4) == 0)
		m->obj[i].held = e.node;
	else
		cairn_ns_forget(m->ns, e.node, 1);
}

static void op_link(struct model *m)
{
	int sd, sni, i = pick_obj(m, &sd, &sni), d = pick_dir(m), ni = (int)rn(m, NNAMES), r;
	struct cairn_ns_entry e;
	uint64_t sn, dn;

	if (i < 0 || m->obj[i].type != T_REG)
		return;
	sn = obj_node(m, sd, sni);
	dn = dir_node(m, d);
	r = cairn_ns_link(m->ns, sn, dn, names[ni], strlen(names[ni]), &e);
	put_node(m, dn);
	put_node(m, sn);
	TRACE(m, "link obj %d -> obj %d/%s: %d", i, d, names[ni], r);
	if (!can_write(m, d) || !can_write(m, i)) {
		CHECK(m, r == -EROFS, "link with read-only part: %d", r);
		return;
	}
	copy_up_name(m, sd, sni); /* before the name is checked */
	i = m->obj[sd].child[sni];
	if (m->obj[d].child[ni] >= 0) {
		CHECK(m, r == -EEXIST, "link over obj %d/%s: %d", d, names[ni], r);
		return;
	}
	CHECK(m, r == 0, "link obj %d to obj %d/%s: %d", i, d, names[ni], r);
	m->obj[i].nlink++;
	link_name(m, d, ni, i);
	check_entry(m, i, &e);
	cairn_ns_forget(m->ns, e.node, 1);
}

static void op_remove(struct model *m, int isdir)
{
	int d = pick_dir(m), ni = (int)rn(m, NNAMES), c = m->obj[d].child[ni], r;
	uint64_t dn = dir_node(m, d);
	const char *nm = names[ni];

	r = isdir ? cairn_ns_rmdir(m->ns, dn, nm, strlen(nm)) : cairn_ns_unlink(m->ns, dn, nm,
										 strlen(nm));
	put_node(m, dn);
	TRACE(m, "%s obj %d/%s (obj %d): %d", isdir ? "rmdir" : "unlink", d, nm, c, r);
	if (!can_write(m, d)) {
		CHECK(m, r == -EROFS, "remove in read-only obj %d: %d", d, r);
		return;
	}
	if (c < 0) {
		CHECK(m, r == -ENOENT, "remove missing obj %d/%s: %d", d, nm, r);
		return;
	}
	if (isdir && m->obj[c].type != T_DIR) {
		CHECK(m, r == -ENOTDIR, "rmdir of obj %d: %d", c, r);
		return;
	}
	if (!isdir && m->obj[c].type == T_DIR) {
		CHECK(m, r == -EISDIR, "unlink of dir obj %d: %d", c, r);
		return;
	}
	if (isdir && !dir_is_empty(&m->obj[c])) {
		CHECK(m, r == -ENOTEMPTY, "rmdir of full obj %d: %d", c, r);
		return;
	}
	CHECK(m, r == 0, "remove obj %d/%s: %d", d, nm, r);
	unlink_name(m, d, ni);
}

/* The result rename should give, in the order cairn_ns_rename checks. */
static int rename_want(struct model *m, int od, int oni, int nd, int nni, unsigned flags)
{
	int s = m->obj[od].child[oni], t = m->obj[nd].child[nni];
	int sdir, tdir;

	if (!can_write(m, od) || !can_write(m, nd))
		return -EROFS;
	if (s < 0 || (t < 0 && (flags & RENAME_EXCHANGE)))
		return -ENOENT;
	if (t >= 0 && (flags & RENAME_NOREPLACE))
		return -EEXIST;
	if (s == t)
		return 0;
	sdir = m->obj[s].type == T_DIR;
	tdir = t >= 0 && m->obj[t].type == T_DIR;
	if (t >= 0 && !(flags & RENAME_EXCHANGE)) {
		if (sdir && !tdir)
			return -ENOTDIR;
		if (!sdir && tdir)
			return -EISDIR;
		if (tdir && !dir_is_empty(&m->obj[t]))
			return -ENOTEMPTY;
	}
	if ((sdir && m->obj[s].image_dir) ||
	    ((flags & RENAME_EXCHANGE) && tdir && m->obj[t].image_dir))
		return -EXDEV;
	if (sdir && is_ancestor(m, s, nd))
		return -EINVAL;
	if ((flags & RENAME_EXCHANGE) && tdir && is_ancestor(m, t, od))
		return -EINVAL;
	return 0;
}

static void op_rename(struct model *m)
{
	int od = pick_dir(m), nd = pick_dir(m);
	int oni = (int)rn(m, NNAMES), nni = (int)rn(m, NNAMES);
	unsigned flags = (unsigned[]){ 0, 0, RENAME_NOREPLACE, RENAME_EXCHANGE }[rn(m, 4)];
	int s = m->obj[od].child[oni], t = m->obj[nd].child[nni], r, want;
	uint64_t on, nn;

	/* Mostly names that exist, or nothing interesting happens. */
	if (s < 0 && rn(m, 4)) {
		s = pick_obj(m, &od, &oni);
		if (s < 0)
			return;
		t = m->obj[nd].child[nni];
	}
	want = rename_want(m, od, oni, nd, nni, flags);
	on = dir_node(m, od);
	nn = dir_node(m, nd);
	r = cairn_ns_rename(m->ns, on, names[oni], strlen(names[oni]), nn, names[nni],
			    strlen(names[nni]), flags);
	put_node(m, nn);
	put_node(m, on);
	TRACE(m, "rename obj %d/%s (obj %d) -> obj %d/%s (obj %d) flags %u: %d", od, names[oni], s,
	      nd, names[nni], t, flags, r);
	CHECK(m, r == want, "rename obj %d/%s -> obj %d/%s flags %u: %d want %d", od, names[oni],
	      nd, names[nni], flags, r, want);
	if (r || s == t)
		return;
	copy_up_name(m, od, oni);
	s = m->obj[od].child[oni];
	if (flags & RENAME_EXCHANGE) {
		copy_up_name(m, nd, nni);
		t = m->obj[nd].child[nni];
	}
	if (flags & RENAME_EXCHANGE) {
		link_name(m, nd, nni, s);
		link_name(m, od, oni, t);
		return;
	}
	if (t >= 0)
		unlink_name(m, nd, nni);
	m->obj[od].child[oni] = -1;
	m->obj[od].mtime = -1;
	link_name(m, nd, nni, s);
}

static void op_write(struct model *m)
{
	int d, ni, i = pick_obj(m, &d, &ni);
	struct obj *o;
	uint64_t node, off, len;
	ssize_t r;

	if (i < 0 || m->obj[i].type != T_REG)
		return;
	o = &m->obj[i];
	len = 1 + rn(m, rn(m, 4) ? 5000 : 40000);
	off = rn(m, 2) ? rn(m, o->size + 1) : rn(m, MAXSIZE);
	if (off + len > MAXSIZE)
		off = MAXSIZE - len;
	for (uint64_t k = 0; k < len; k++)
		m->buf[k] = (unsigned char)(rnd(m) | 1);
	node = obj_node(m, d, ni);
	r = cairn_ns_write(m->ns, node, m->buf, len, off, 0, NULL);
	put_node(m, node);
	TRACE(m, "write obj %d off %" PRIu64 " len %" PRIu64 ": %zd", i, off, len, r);
	if (!can_write(m, i)) {
		CHECK(m, r == -EROFS, "write of read-only obj %d: %zd", i, r);
		return;
	}
	CHECK(m, r == (ssize_t)len, "write obj %d: %zd want %" PRIu64, i, r, len);
	copy_up_name(m, d, ni);
	i = m->obj[d].child[ni];
	o = &m->obj[i];
	memcpy(o->data + off, m->buf, len);
	if (off + len > o->size)
		o->size = off + len;
	o->mtime = -1;
	o->holes = 0;
}

/* truncate, chmod, chown, utimes: the four kinds of setattr. */
static void op_setattr(struct model *m)
{
	int d, ni, i = pick_obj(m, &d, &ni), kind = (int)rn(m, 4);
	struct cairn_setattr sa;
	struct cairn_ns_entry e;
	struct obj *o;
	uint64_t node;
	int r;

	if (i < 0)
		return;
	o = &m->obj[i];
	if (kind == 0 && o->type != T_REG)
		kind = 3;
	if (kind == 1 && o->type == T_LNK)
		kind = 2;
	memset(&sa, 0, sizeof(sa));
	switch (kind) {
	case 0:
		sa.valid = CAIRN_SET_SIZE;
		sa.size = rn(m, 2) ? rn(m, o->size + 1) : rn(m, MAXSIZE);
		break;
	case 1:
		sa.valid = CAIRN_SET_MODE;
		sa.mode = (uint32_t[]){ 0644, 0600, 04755, 02750, 0700, 01777 }[rn(m, 6)];
		break;
	case 2:
		sa.valid = CAIRN_SET_UID | CAIRN_SET_GID;
		sa.uid = (uint32_t)rn(m, 3) * 1000;
		sa.gid = (uint32_t)rn(m, 3) * 1000;
		break;
	default:
		sa.valid = CAIRN_SET_MTIME | CAIRN_SET_ATIME;
		sa.mtime.sec = 1500000000 + (int64_t)rn(m, 1000000);
		sa.atime = sa.mtime;
		break;
	}
	node = obj_node(m, d, ni);
	r = cairn_ns_setattr(m->ns, node, &sa, NULL, &e);
	TRACE(m, "setattr kind %d obj %d: %d", kind, i, r);
	if (!can_write(m, i)) {
		put_node(m, node);
		CHECK(m, r == -EROFS, "setattr of read-only obj %d: %d", i, r);
		return;
	}
	CHECK(m, r == 0, "setattr kind %d of obj %d: %d", kind, i, r);
	copy_up_name(m, d, ni);
	i = m->obj[d].child[ni];
	o = &m->obj[i];
	switch (kind) {
	case 0:
		if (sa.size < o->size)
			memset(o->data + sa.size, 0, o->size - sa.size);
		o->size = sa.size;
		o->mtime = -1;
		o->holes = 0;
		break;
	case 1:
		o->perm = sa.mode;
		break;
	case 2:
		o->uid = sa.uid;
		o->gid = sa.gid;
		/* chown of a non-directory clears setuid, and setgid if group-executable */
		if (o->type != T_DIR)
			o->perm &= ~(uint32_t)(S_ISUID | ((o->perm & S_IXGRP) ? S_ISGID : 0));
		break;
	default:
		o->mtime = sa.mtime.sec;
		break;
	}
	check_entry(m, i, &e);
	check_data(m, i, node);
	put_node(m, node);
}

static void op_check(struct model *m)
{
	int d, ni, i = pick_obj(m, &d, &ni);
	uint64_t node;
	struct cairn_ns_entry e;

	if (i < 0)
		return;
	node = obj_node(m, d, ni);
	CHECK(m, cairn_ns_getattr(m->ns, node, &e) == 0, "getattr obj %d", i);
	check_entry(m, i, &e);
	if (m->obj[i].type == T_DIR)
		check_listing(m, i, node);
	else
		check_data(m, i, node);
	put_node(m, node);
}

/* user.m on files and directories: set, removed, read back; the namespace's
 * own trusted.cairn.* names are neither listed nor settable. */
static void op_xattr(struct model *m)
{
	int d, ni, i = pick_obj(m, &d, &ni), r, kind = (int)rn(m, 3);
	struct obj *o;
	uint64_t node;
	char v[16], buf[256];
	ssize_t n;

	if (i < 0 || (m->obj[i].type != T_REG && m->obj[i].type != T_DIR))
		return;
	o = &m->obj[i];
	node = obj_node(m, d, ni);
	CHECK(m, cairn_ns_setxattr(m->ns, node, "trusted.cairn.origin", "x", 1, 0) == -EPERM,
	      "obj %d: trusted.cairn.* settable", i);
	snprintf(v, sizeof(v), "v%" PRIu64, rn(m, 1000));
	if (kind == 0)
		r = cairn_ns_setxattr(m->ns, node, "user.m", v, strlen(v), 0);
	else if (kind == 1)
		r = cairn_ns_removexattr(m->ns, node, "user.m");
	else
		r = 0;
	TRACE(m, "xattr kind %d obj %d: %d", kind, i, r);
	if (kind < 2 && can_write(m, i)) {
		copy_up_name(m, d, ni);
		i = m->obj[d].child[ni];
		o = &m->obj[i];
	}
	if (kind < 2 && !can_write(m, i)) {
		CHECK(m, r == -EROFS, "xattr change on read-only obj %d: %d", i, r);
	} else if (kind == 0) {
		CHECK(m, r == 0, "setxattr obj %d: %d", i, r);
		o->xlen = (int)strlen(v);
		memcpy(o->xval, v, strlen(v));
	} else if (kind == 1) {
		CHECK(m, r == (o->xlen ? 0 : -ENODATA), "removexattr obj %d: %d", i, r);
		o->xlen = 0;
	}
	n = cairn_ns_getxattr(m->ns, node, "user.m", buf, sizeof(buf));
	CHECK(m, o->xlen ? n == o->xlen && !memcmp(buf, o->xval, (size_t)n) : n == -ENODATA,
	      "getxattr obj %d: %zd want %d", i, n, o->xlen);
	n = cairn_ns_listxattr(m->ns, node, buf, sizeof(buf));
	CHECK(m, o->xlen ? n == 7 && !memcmp(buf, "user.m", 7) : n == 0,
	      "listxattr obj %d: %zd (%.*s)", i, n, n > 0 ? (int)n : 0, buf);
	put_node(m, node);
}

/* open and release: for writing it copies up, with O_TRUNC it empties the file. */
static void op_open(struct model *m)
{
	int d, ni, i = pick_obj(m, &d, &ni), r;
	int flags = (int[]){ O_RDONLY, O_RDWR, O_WRONLY | O_TRUNC }[rn(m, 3)];
	struct cairn_ns_entry e;
	uint64_t node, fh;
	struct obj *o;

	if (i < 0 || m->obj[i].type != T_REG)
		return;
	node = obj_node(m, d, ni);
	r = cairn_ns_open(m->ns, node, flags, NULL, &fh);
	if (!r)
		cairn_ns_release(m->ns, node, fh);
	TRACE(m, "open obj %d flags %#x: %d", i, (unsigned)flags, r);
	if (flags != O_RDONLY && !can_write(m, i)) {
		put_node(m, node);
		CHECK(m, r == -EROFS, "open for writing of read-only obj %d: %d", i, r);
		return;
	}
	CHECK(m, r == 0, "open obj %d flags %#x: %d", i, (unsigned)flags, r);
	if (flags != O_RDONLY)
		copy_up_name(m, d, ni);
	i = m->obj[d].child[ni];
	o = &m->obj[i];
	if (flags & O_TRUNC) {
		memset(o->data, 0, o->size);
		o->size = 0;
		o->mtime = -1;
		o->holes = 0;
	}
	CHECK(m, cairn_ns_getattr(m->ns, node, &e) == 0, "getattr obj %d", i);
	check_entry(m, i, &e);
	check_data(m, i, node);
	put_node(m, node);
}

/* Keep a node referenced across operations, or let one go. */
static void op_hold(struct model *m)
{
	int d, ni, i = pick_obj(m, &d, &ni);

	if (i < 0 || m->obj[i].group)
		return; /* each name of a group is a node of its own: not modelled */
	if (m->obj[i].held) {
		release_held(m, &m->obj[i]);
		return;
	}
	m->obj[i].held = obj_node(m, d, ni);
}

/* ---- setting up ---- */

/* Returns whether the xattrs could be stored. */
static int make_source(const char *src)
{
	char p[256];
	int xattrs = 1;

	for (int i = 0; i < NIMAGE; i++) {
		const struct image_ent *e = &image_tree[i];

		snprintf(p, sizeof(p), "%s/%s", src, e->path);
		if (e->type == T_LINK) {
			char to[256];

			snprintf(to, sizeof(to), "%s/%s", src, e->data);
			assert_int_equal(link(to, p), 0);
			continue;
		}
		if (e->type == T_DIR) {
			assert_int_equal(mkdir(p, 0700), 0);
		} else if (e->type == T_LNK) {
			assert_int_equal(symlink(e->data, p), 0);
		} else if (e->type == T_FIFO) {
			assert_int_equal(mkfifo(p, 0600), 0);
		} else {
			FILE *f = fopen(p, "w");

			assert_non_null(f);
			if (e->data)
				fputs(e->data, f);
			else /* the run of zeros is skipped: a hole, on the host and in the image */
				for (size_t k = 0; k < BIG_SIZE; k++) {
					if (k == BIG_HOLE)
						assert_int_equal(fseek(f, BIG_ZEROS, SEEK_CUR), 0);
					if (k < BIG_HOLE || k >= BIG_HOLE + BIG_ZEROS)
						fputc(big_byte(k), f);
				}
			assert_int_equal(fclose(f), 0);
		}
		if (e->type != T_LNK)
			assert_int_equal(chmod(p, e->perm), 0);
		if (image_has_xattr(e->path) && xattrs &&
		    setxattr(p, "user.m", IMAGE_XATTR, strlen(IMAGE_XATTR), 0))
			xattrs = 0;
	}
	/* Times last, deepest first, so making children does not change them. */
	for (int i = NIMAGE - 1; i >= 0; i--) {
		struct timespec ts[2] = { { IMAGE_MTIME(i), 0 }, { IMAGE_MTIME(i), 0 } };

		if (image_tree[i].type == T_LINK)
			continue;
		snprintf(p, sizeof(p), "%s/%s", src, image_tree[i].path);
		assert_int_equal(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
	}
	return xattrs;
}

static struct cairn_image *make_image(char *dir, int *xattrs)
{
	char src[128], path[128];

	strcpy(dir, "/tmp/cairn-ns-model.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(src, sizeof(src), "%s/src", dir);
	assert_int_equal(mkdir(src, 0755), 0);
	assert_int_equal(chmod(src, 0755), 0);
	*xattrs = make_source(src);
	snprintf(path, sizeof(path), "%s/img", dir);
	return t_pack(src, path);
}

/* Object index of the model object at an image path ("" = root). */
static int model_obj(struct model *m, const char *path)
{
	int d = 0;
	const char *s = path;

	while (*s) {
		const char *e = strchr(s, '/');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		d = m->obj[d].child[name_index(s, len)];
		s += len + (e != NULL);
	}
	return d;
}

/* Model the image; in the tmp variant, /tmp and /run/x are writable. */
static void load_model(struct model *m, int xattrs)
{
	int root = new_obj(m, T_DIR, 0755);

	m->obj[root].writable = !m->tmp_variant;
	for (int i = 0; i < NIMAGE; i++) {
		const struct image_ent *e = &image_tree[i];
		const char *slash = strrchr(e->path, '/'), *base = slash ? slash + 1 : e->path;
		char parent[64] = "";
		int o, d;

		if (slash)
			snprintf(parent, sizeof(parent), "%.*s", (int)(slash - e->path), e->path);
		d = model_obj(m, parent);
		if (e->type == T_LINK) {
			o = model_obj(m, e->data);
			link_name(m, d, name_index(base, strlen(base)), o);
			m->obj[o].nlink++;
			m->obj[o].group = !m->tmp_variant;
			continue;
		}
		o = new_obj(m, e->type, e->perm);
		link_name(m, d, name_index(base, strlen(base)), o);
		m->obj[o].image_dir = e->type == T_DIR && !m->tmp_variant;
		m->obj[o].writable = !m->tmp_variant || !strncmp(e->path, "tmp", 3);
		if (e->type == T_LNK)
			strcpy(m->obj[o].target, e->data);
		if (xattrs && image_has_xattr(e->path)) {
			m->obj[o].xlen = (int)strlen(IMAGE_XATTR);
			memcpy(m->obj[o].xval, IMAGE_XATTR, strlen(IMAGE_XATTR));
		}
		if (e->type == T_REG) {
			m->obj[o].size = e->data ? strlen(e->data) : BIG_SIZE;
			m->obj[o].holes = !e->data;
			for (size_t k = 0; k < m->obj[o].size; k++)
				m->obj[o].data[k] = e->data ? (unsigned char)e->data[k] : big_byte(k);
		}
	}
	/* Loading children marked their directories changed: they are not. */
	for (int i = 1; i < m->nobj; i++) {
		m->obj[i].mtime = IMAGE_MTIME(i - 1); /* object i is image_tree[i - 1] (links last) */
		m->obj[i].uid = (uint32_t)geteuid();
		m->obj[i].gid = (uint32_t)getegid();
	}
	m->obj[root].uid = (uint32_t)geteuid();
	m->obj[root].gid = (uint32_t)getegid();
	if (m->tmp_variant) {
		/* /run is not in the image: a read-only RAM directory made as root. */
		int run = new_obj(m, T_DIR, 0755), x = new_obj(m, T_DIR, 01777);

		link_name(m, root, name_index("run", 3), run);
		link_name(m, run, name_index("x", 1), x);
		m->obj[x].writable = 1;
	}
}

static void run_seed(struct cairn_image *img, int xattrs, uint64_t seed, int nops)
{
	struct model *m = calloc(1, sizeof(*m));
	struct cairn_ns_config c;
	struct cairn_ns_entry e;
	struct cairn_ns_usage u;
	uint64_t nodes0;

	m->seed = seed;
	m->trace = getenv("CAIRN_MODEL_TRACE") != NULL;
	m->rng = t_rng_seed(seed);
	m->tmp_variant = seed % 4 == 0;
	m->img = img;
	m->buf = malloc(MAXSIZE);
	m->back = malloc(MAXSIZE);
	memset(&c, 0, sizeof(c));
	c.image = img;
	c.flags = m->tmp_variant ? 0 : CAIRN_NS_OVERLAY;
	c.tmp_paths = m->tmp_variant ? "/tmp:/run/x" : NULL;
	assert_int_equal(cairn_ns_new(&c, &m->ns), 0);
	cairn_ns_usage(m->ns, &u);
	nodes0 = u.nodes;
	load_model(m, xattrs);
	CHECK(m, cairn_ns_getattr(m->ns, CAIRN_NS_ROOT, &e) == 0, "getattr /");
	check_entry(m, 0, &e);
	check_tree(m, 0, CAIRN_NS_ROOT, 0);
	for (m->op = 0; m->op < nops; m->op++) {
		switch (rn(m, 20)) {
		case 0: case 1: op_create(m, T_REG); break;
		case 2: op_create(m, T_DIR); break;
		case 3: op_create(m, rn(m, 2) ? T_LNK : T_FIFO); break;
		case 4: op_link(m); break;
		case 5: case 6: op_remove(m, 0); break;
		case 7: op_remove(m, 1); break;
		case 8: case 9: case 10: op_rename(m); break;
		case 11: case 12: op_write(m); break;
		case 13: case 14: op_setattr(m); break;
		case 15: op_hold(m); break;
		case 16: rn(m, 2) ? op_check(m) : op_open(m); break;
		case 17: op_xattr(m); break;
		default: {
			int d = pick_dir(m);
			uint64_t dn = dir_node(m, d);

			check_listing(m, d, dn);
			put_node(m, dn);
			break;
		}
		}
		if (m->op % 250 == 249)
			check_tree(m, 0, CAIRN_NS_ROOT, 0);
	}
	check_tree(m, 0, CAIRN_NS_ROOT, 0);
	for (int i = 0; i < m->nobj; i++) {
		release_held(m, &m->obj[i]);
		free(m->obj[i].data);
	}
	cairn_ns_usage(m->ns, &u);
	CHECK(m, u.nodes == nodes0, "%" PRIu64 " nodes left after every reference was dropped",
	      u.nodes - nodes0);
	cairn_ns_free(m->ns);
	free(m->buf);
	free(m->back);
	free(m);
}

struct fixture {
	char dir[64];
	struct cairn_image *img;
	int xattrs;             /* the image has user.m on image_has_xattr() objects */
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	fx->img = make_image(fx->dir, &fx->xattrs);
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

static void test_model(void **state)
{
	struct fixture *fx = *state;
	const char *s = getenv("CAIRN_SEED"), *n = getenv("CAIRN_MODEL_OPS");
	int nops = n ? atoi(n) : 3000;

	if (s) {
		run_seed(fx->img, fx->xattrs, strtoull(s, NULL, 0), nops);
		return;
	}
	for (uint64_t seed = 1; seed <= 16; seed++)
		run_seed(fx->img, fx->xattrs, seed, nops);
}

/* ---- what the model found, as fixed cases ---- */

static struct cairn_ns *new_overlay(struct fixture *fx)
{
	struct cairn_ns_config c;
	struct cairn_ns *ns;

	memset(&c, 0, sizeof(c));
	c.image = fx->img;
	c.flags = CAIRN_NS_OVERLAY;
	assert_int_equal(cairn_ns_new(&c, &ns), 0);
	return ns;
}

static uint64_t t_lookup(struct cairn_ns *ns, uint64_t dir, const char *name,
			 struct cairn_ns_entry *e)
{
	assert_int_equal(cairn_ns_lookup(ns, dir, name, strlen(name), e), 0);
	return e->node;
}

/* Copying /etc/motd up puts a name in the RAM copy of /etc: that is no change
 * to /etc, whose times stay the image's. The same for /dir/fifo, which is not
 * a regular file, so it is copied the other way (under the namespace lock). */
static void keeps_parent_times(struct fixture *fx, const char *dir, const char *name, int idx)
{
	struct cairn_ns *ns = new_overlay(fx);
	struct cairn_ns_entry d, n, e;
	struct cairn_setattr sa = { .valid = CAIRN_SET_MODE, .mode = 0600 };

	t_lookup(ns, CAIRN_NS_ROOT, dir, &d);
	t_lookup(ns, d.node, name, &n);
	assert_int_equal(cairn_ns_setattr(ns, n.node, &sa, NULL, &e), 0);
	assert_int_equal(cairn_ns_getattr(ns, d.node, &e), 0);
	assert_int_equal(e.st.mtime.sec, IMAGE_MTIME(idx));
	cairn_ns_forget(ns, n.node, 1);
	cairn_ns_forget(ns, d.node, 1);
	cairn_ns_free(ns);
}

static void test_copy_up_keeps_parent_times(void **state)
{
	keeps_parent_times(*state, "etc", "motd", 0); /* image_tree[0] is etc */
	keeps_parent_times(*state, "dir", "fifo", 6); /* and [6] dir */
}

struct find_ino {
	const char *name;
	uint64_t ino;
};

static int find_ino_cb(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
		       uint64_t next)
{
	struct find_ino *f = ctx;

	(void)dtype;
	(void)next;
	if (len == strlen(f->name) && !memcmp(name, f->name, len))
		f->ino = ino;
	return 0;
}

/* A copied-up /etc whose node was forgotten is listed with the inode number
 * stat shows (the image's), not the RAM inode's. */
static void test_readdir_ino_after_copy_up(void **state)
{
	struct cairn_ns *ns = new_overlay(*state);
	struct cairn_ns_entry etc, motd, e;
	struct cairn_setattr sa = { .valid = CAIRN_SET_MODE, .mode = 0600 };
	struct find_ino f = { "etc", 0 };

	t_lookup(ns, CAIRN_NS_ROOT, "etc", &etc);
	t_lookup(ns, etc.node, "motd", &motd);
	assert_int_equal(cairn_ns_setattr(ns, motd.node, &sa, NULL, &e), 0);
	cairn_ns_forget(ns, motd.node, 1);
	cairn_ns_forget(ns, etc.node, 1);
	assert_int_equal(cairn_ns_readdir(ns, CAIRN_NS_ROOT, 0, find_ino_cb, &f), 0);
	t_lookup(ns, CAIRN_NS_ROOT, "etc", &etc);
	assert_int_equal(f.ino, etc.st.ino);
	cairn_ns_forget(ns, etc.node, 1);
	cairn_ns_free(ns);
}

/* A directory made where an image file was deleted holds nothing of the image,
 * so it moves like any RAM directory (overlayfs: a pure upper directory). */
static void test_rename_dir_over_whiteout(void **state)
{
	struct cairn_ns *ns = new_overlay(*state);
	struct cairn_ns_entry etc, e;

	t_lookup(ns, CAIRN_NS_ROOT, "etc", &etc);
	assert_int_equal(cairn_ns_unlink(ns, etc.node, "motd", 4), 0);
	assert_int_equal(cairn_ns_mkdir(ns, etc.node, "motd", 4, 0755, NULL, &e), 0);
	cairn_ns_forget(ns, e.node, 1);
	assert_int_equal(cairn_ns_rename(ns, etc.node, "motd", 4, etc.node, "n", 1, 0), 0);
	assert_int_equal(cairn_ns_lookup(ns, etc.node, "motd", 4, &e), -ENOENT);
	t_lookup(ns, etc.node, "n", &e);
	assert_true(S_ISDIR(e.st.mode));
	cairn_ns_forget(ns, e.node, 1);
	cairn_ns_forget(ns, etc.node, 1);
	cairn_ns_free(ns);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model),
		cmocka_unit_test(test_copy_up_keeps_parent_times),
		cmocka_unit_test(test_readdir_ino_after_copy_up),
		cmocka_unit_test(test_rename_dir_over_whiteout),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
