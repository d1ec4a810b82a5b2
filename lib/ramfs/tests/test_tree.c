/* SPDX-License-Identifier: MIT */
/*
 * Random directory-tree operations (mkdir, rmdir, create, unlink, link, symlink,
 * rename with every flag, across directories and into subtrees) checked against
 * invariants after every step, by walking the tree from the root:
 *   - every directory is reached once (no cycles), its ".." is its parent,
 *     nlink = 2 + subdirectories, size = 20 * (entries + 2);
 *   - a non-directory's nlink is the number of names it has in the tree;
 *   - the fs holds exactly the reachable inodes plus removed directories the test
 *     still references;
 *   - a failed operation changes nothing; a successful rename leaves the source
 *     where it was asked to go.
 * Seeded and reproducible: CAIRN_SEED=<n> runs one seed (CAIRN_TREE_OPS=<n> ops).
 */
#include <inttypes.h>
#include "helpers.h"

#define MAXDIRS 256
#define NNAMES 5

struct tree {
	uint64_t seed, rng;
	int op;
	struct cairn_ramfs *fs;
	cairn_ino_t dirs[MAXDIRS]; /* every dir ever made; we hold a lookup ref on each */
	int ndirs;
	unsigned stats[9][40];      /* [op kind][-result]: coverage, CAIRN_TREE_STATS=1 */
};

#define CHECK(t, cond, ...) do { \
	if (!(cond)) { \
		print_error("seed=%" PRIu64 " op=%d: ", (t)->seed, (t)->op); \
		print_error(__VA_ARGS__); \
		print_error("\n(rerun with CAIRN_SEED=%" PRIu64 ")\n", (t)->seed); \
		fail(); \
	} \
} while (0)

static uint64_t rn(struct tree *t, uint64_t n)
{
	t->rng ^= t->rng >> 12;
	t->rng ^= t->rng << 25;
	t->rng ^= t->rng >> 27;
	return n ? (t->rng * 2685821657736338717ull) % n : 0;
}

/* The walk: a signature of the tree (for "nothing changed") and the checks. */
struct seen { cairn_ino_t ino; int names; uint32_t mode; };
struct walk {
	struct tree *t;
	struct seen s[4096];
	int n;
	char sig[65536];
	size_t siglen;
};

static struct seen *seen_get(struct walk *w, cairn_ino_t ino)
{
	for (int i = 0; i < w->n; i++)
		if (w->s[i].ino == ino)
			return &w->s[i];
	CHECK(w->t, w->n < 4096, "too many inodes");
	w->s[w->n] = (struct seen){ ino, 0, 0 };
	return &w->s[w->n++];
}

struct ent { char name[8]; cairn_ino_t ino; unsigned dtype; };
struct ents { struct ent e[64]; int n; };

static int ents_cb(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
		   uint64_t next)
{
	struct ents *l = ctx;

	if (l->n < 64 && len < 8) {
		memcpy(l->e[l->n].name, name, len);
		l->e[l->n].name[len] = '\0';
		l->e[l->n].ino = ino;
		l->e[l->n].dtype = dtype;
	}
	l->n++;
	return 0;
}

static void walk_dir(struct walk *w, cairn_ino_t dir, cairn_ino_t parent, int depth)
{
	struct tree *t = w->t;
	struct ents l = { .n = 0 };
	struct cairn_stat st;
	int subdirs = 0;

	CHECK(t, depth < 64, "tree too deep (a cycle?)");
	struct seen *sd = seen_get(w, dir);
	CHECK(t, sd->names == 0, "directory %" PRIu64 " reached twice", dir);
	sd->names = 1;
	CHECK(t, cairn_ramfs_readdir(t->fs, dir, 0, ents_cb, &l) == 0, "readdir");
	CHECK(t, l.n >= 2 && l.n <= 64, "readdir count %d", l.n);
	CHECK(t, !strcmp(l.e[0].name, ".") && l.e[0].ino == dir, "'.' entry");
	CHECK(t, !strcmp(l.e[1].name, "..") && l.e[1].ino == parent, "'..' entry of %" PRIu64
	      " is %" PRIu64 ", want %" PRIu64, dir, l.e[1].ino, parent);
	for (int i = 2; i < l.n; i++) {
		struct ent *e = &l.e[i];

		CHECK(t, cairn_ramfs_getattr(t->fs, e->ino, &st) == 0, "getattr %s", e->name);
		CHECK(t, e->dtype == ((st.mode & S_IFMT) >> 12), "d_type of %s", e->name);
		w->siglen += (size_t)snprintf(w->sig + w->siglen, sizeof(w->sig) - w->siglen,
					      "%" PRIu64 "/%s=%" PRIu64 ":%o;", dir, e->name, e->ino,
					      st.mode);
		CHECK(t, w->siglen < sizeof(w->sig), "signature overflow");
		if (S_ISDIR(st.mode)) {
			subdirs++;
			walk_dir(w, e->ino, dir, depth + 1);
		} else {
			struct seen *s = seen_get(w, e->ino);
			s->names++;
			s->mode = st.mode;
		}
	}
	CHECK(t, cairn_ramfs_getattr(t->fs, dir, &st) == 0, "getattr dir");
	CHECK(t, st.nlink == (uint32_t)(2 + subdirs), "dir %" PRIu64 " nlink %u, want %d", dir,
	      st.nlink, 2 + subdirs);
	CHECK(t, st.size == (uint64_t)(l.n * 20), "dir size %" PRIu64 " want %d", st.size, l.n * 20);
	sd->mode = S_IFDIR;
}

static void walk(struct tree *t, struct walk *w)
{
	struct cairn_ramfs_usage u;
	struct cairn_stat st;
	int extra = 0;

	w->t = t;
	w->n = 0;
	w->siglen = 0;
	w->sig[0] = '\0';
	walk_dir(w, cairn_ramfs_root(t->fs), cairn_ramfs_root(t->fs), 0);
	for (int i = 0; i < w->n; i++) {
		if (S_ISDIR(w->s[i].mode))
			continue;
		CHECK(t, cairn_ramfs_getattr(t->fs, w->s[i].ino, &st) == 0, "getattr file");
		CHECK(t, st.nlink == (uint32_t)w->s[i].names, "ino %" PRIu64 " nlink %u, %d names",
		      w->s[i].ino, st.nlink, w->s[i].names);
	}
	/* Removed directories we still reference are alive, with nlink 0. */
	for (int i = 0; i < t->ndirs; i++) {
		int found = 0;

		for (int k = 0; k < w->n && !found; k++)
			found = w->s[k].ino == t->dirs[i];
		if (!found) {
			CHECK(t, cairn_ramfs_getattr(t->fs, t->dirs[i], &st) == 0 && st.nlink == 0,
			      "removed dir %" PRIu64 " should be alive with nlink 0", t->dirs[i]);
			extra++;
		}
	}
	cairn_ramfs_usage(t->fs, &u);
	CHECK(t, u.inodes == (uint64_t)(w->n + extra), "fs has %" PRIu64 " inodes, tree %d + %d",
	      u.inodes, w->n, extra);
}

static char *pick_name(struct tree *t, char *b)
{
	b[0] = (char)('a' + rn(t, NNAMES));
	b[1] = '\0';
	return b;
}

static cairn_ino_t pick_dir(struct tree *t)
{
	/* Mostly live directories (the root counts twice as often). */
	int i = (int)rn(t, (uint64_t)t->ndirs + 2);

	return i >= t->ndirs ? cairn_ramfs_root(t->fs) : t->dirs[i];
}

static void one_op(struct tree *t, struct walk *before, struct walk *after)
{
	char a[2], b[2];
	cairn_ino_t d1 = pick_dir(t), d2 = pick_dir(t);
	struct cairn_stat st;
	int r = 0, kind = (int)rn(t, 9);
	unsigned flags = 0;

	pick_name(t, a);
	pick_name(t, b);
	walk(t, before);
	switch (kind) {
	case 0:
		r = cairn_ramfs_mkdir(t->fs, d1, a, 1, 0755, NULL, &st);
		if (!r) {
			if (t->ndirs < MAXDIRS)
				t->dirs[t->ndirs++] = st.ino;   /* keep the reference */
			else
				cairn_ramfs_forget(t->fs, st.ino, 1);
		}
		break;
	case 1:
		r = cairn_ramfs_mknod(t->fs, d1, a, 1, S_IFREG | 0644, 0, NULL, &st);
		if (!r)
			cairn_ramfs_forget(t->fs, st.ino, 1);
		break;
	case 2:
		r = cairn_ramfs_symlink(t->fs, d1, a, 1, "x", NULL, &st);
		if (!r)
			cairn_ramfs_forget(t->fs, st.ino, 1);
		break;
	case 3:
		r = cairn_ramfs_rmdir(t->fs, d1, a, 1);
		break;
	case 4:
		r = cairn_ramfs_unlink(t->fs, d1, a, 1);
		break;
	case 5:
		r = cairn_ramfs_lookup(t->fs, d1, a, 1, &st);
		if (!r) {
			cairn_ino_t f = st.ino;
			r = cairn_ramfs_link(t->fs, f, d2, b, 1, &st);
			if (!r)
				cairn_ramfs_forget(t->fs, st.ino, 1);
			cairn_ramfs_forget(t->fs, f, 1);
		}
		break;
	default:
		flags = (unsigned[]){ 0, 0, RENAME_NOREPLACE, RENAME_EXCHANGE }[rn(t, 4)];
		{
			cairn_ino_t src = 0, dst = 0;
			if (!cairn_ramfs_lookup(t->fs, d1, a, 1, &st)) {
				src = st.ino;
				cairn_ramfs_forget(t->fs, st.ino, 1);
			}
			if (!cairn_ramfs_lookup(t->fs, d2, b, 1, &st)) {
				dst = st.ino;
				cairn_ramfs_forget(t->fs, st.ino, 1);
			}
			r = cairn_ramfs_rename(t->fs, d1, a, 1, d2, b, 1, flags);
			if (!r && src != dst) {
				CHECK(t, t_lookup(t->fs, d2, b) == (int64_t)src, "rename: target");
				cairn_ramfs_forget(t->fs, src, 1);
				if (flags == RENAME_EXCHANGE) {
					CHECK(t, t_lookup(t->fs, d1, a) == (int64_t)dst, "exchange: source");
					cairn_ramfs_forget(t->fs, dst, 1);
				} else if (!(d1 == d2 && a[0] == b[0])) {
					CHECK(t, t_lookup(t->fs, d1, a) == -ENOENT, "rename: source left");
				}
			}
		}
		break;
	}
	CHECK(t, r <= 0, "op %d returned %d", kind, r);
	t->stats[kind][-r < 40 ? -r : 39]++;
	walk(t, after);
	if (r) {
		CHECK(t, before->siglen == after->siglen && !strcmp(before->sig, after->sig),
		      "failed op %d (error %d, flags %u) changed the tree", kind, r, flags);
		static const int ok[] = { -EEXIST, -ENOENT, -ENOTDIR, -EISDIR, -ENOTEMPTY, -EINVAL,
					  -EPERM };
		int known = 0;
		for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
			known |= r == ok[i];
		CHECK(t, known, "op %d: unexpected error %d", kind, r);
	}
}

static void run_seed(uint64_t seed, int nops)
{
	struct tree *t = calloc(1, sizeof(*t));
	struct walk *w1 = malloc(sizeof(*w1)), *w2 = malloc(sizeof(*w2));

	t->seed = seed;
	t->rng = seed * 0x9E3779B97F4A7C15ull + 7;
	assert_int_equal(cairn_ramfs_new(NULL, &t->fs), 0);
	for (t->op = 0; t->op < nops; t->op++)
		one_op(t, w1, w2);
	if (getenv("CAIRN_TREE_STATS"))
		for (int k = 0; k < 9; k++) {
			fprintf(stderr, "op %d:", k);
			for (int e = 0; e < 40; e++)
				if (t->stats[k][e])
					fprintf(stderr, " %s=%u", e ? strerror(e) : "ok", t->stats[k][e]);
			fputc('\n', stderr);
		}
	for (int i = 0; i < t->ndirs; i++)
		cairn_ramfs_forget(t->fs, t->dirs[i], 1);
	cairn_ramfs_free(t->fs);
	free(w1);
	free(w2);
	free(t);
}

static void test_tree(void **state)
{
	const char *s = getenv("CAIRN_SEED"), *n = getenv("CAIRN_TREE_OPS");
	int nops = n ? atoi(n) : 1500;

	(void)state;
	if (s) {
		run_seed(strtoull(s, NULL, 0), nops);
		return;
	}
	for (uint64_t seed = 1; seed <= 6; seed++)
		run_seed(seed, nops);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
