/* SPDX-License-Identifier: MIT */
/*
 * Model-based random test of the RAM fs: thousands of random operations (writes at
 * random offsets, appends, truncates, hole punches, fallocate, create, link,
 * unlink while open, rename with every flag, open/close) applied both to the fs
 * and to a simple reference model; every read, stat and directory listing is
 * compared, and everything in full every few hundred operations. Half the seeds
 * run with a size limit, where the model predicts each short write and ENOSPC.
 *
 * Reproducible: CAIRN_SEED=<n> runs that seed alone (CAIRN_MODEL_OPS=<n> sets the
 * operation count); every failure prints its seed and operation number.
 */
#include <inttypes.h>
#include <linux/falloc.h>
#include "helpers.h"
#include "util/tests/model.h"

#define NDIRS 4                 /* root + 3 subdirectories */
#define NNAMES 6                /* file names per directory: n0..n5 */
#define MAXOBJ 512
#define MAXSIZE (640 * 1024)
#define MAXCHUNKS (MAXSIZE / 4096 + 2)

struct obj {
	cairn_ino_t ino;
	int alive, handle, nlink;
	uint64_t size;
	unsigned char *data;    /* MAXSIZE bytes, zero past size */
	unsigned char chunk[MAXCHUNKS];
};

struct model {
	uint64_t seed, rng;
	int op;
	struct cairn_ramfs *fs;
	size_t cs;
	uint64_t limit_chunks, used_chunks; /* 0 = unlimited */
	cairn_ino_t dir_ino[NDIRS];
	int name_obj[NDIRS][NNAMES]; /* object index or -1 */
	struct obj obj[MAXOBJ];
	int nobj;
	unsigned char *buf, *back;
	int trace;              /* CAIRN_MODEL_TRACE=1: print every operation */
};

#define TRACE(m, ...) do { if ((m)->trace) { fprintf(stderr, "%d: ", (m)->op); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

#define CHECK(m, cond, ...) T_MODEL_CHECK((m)->seed, "ramfs", (m)->op, cond, __VA_ARGS__)

static uint64_t rnd(struct model *m)
{
	return t_rng_next(&m->rng);
}

static uint64_t rn(struct model *m, uint64_t n)
{
	return t_rng_below(&m->rng, n);
}

static char *nm(int i, char *b)
{
	b[0] = 'n';
	b[1] = (char)('0' + i);
	b[2] = '\0';
	return b;
}

/* A reference on o for the duration of one call: the handle, or a lookup. */
static cairn_ino_t grab(struct model *m, struct obj *o, int *looked)
{
	*looked = 0;
	if (o->handle)
		return o->ino;
	for (int d = 0; d < NDIRS; d++)
		for (int i = 0; i < NNAMES; i++)
			if (m->name_obj[d][i] >= 0 && &m->obj[m->name_obj[d][i]] == o) {
				char b[4];

				CHECK(m, t_lookup(m->fs, m->dir_ino[d], nm(i, b)) == (int64_t)o->ino,
				      "lookup d%d/%s", d, b);
				*looked = 1;
				return o->ino;
			}
	CHECK(m, 0, "object without name or handle");
	return 0;
}

static void ungrab(struct model *m, struct obj *o, int looked)
{
	if (looked)
		cairn_ramfs_forget(m->fs, o->ino, 1);
}

static uint64_t chunks_of(const struct obj *o, size_t cs)
{
	uint64_t n = 0;

	for (size_t i = 0; i < MAXCHUNKS; i++)
		n += o->chunk[i];
	(void)cs;
	return n;
}

static void obj_die(struct model *m, struct obj *o)
{
	m->used_chunks -= chunks_of(o, m->cs);
	TRACE(m, "dies: obj %d ino %" PRIu64, (int)(o - m->obj), o->ino);
	o->alive = 0;
	free(o->data);
	o->data = NULL;
	CHECK(m, cairn_ramfs_getattr(m->fs, o->ino, &(struct cairn_stat){ 0 }) == -ENOENT,
	      "ino %" PRIu64 " should be freed", o->ino);
}

static struct obj *pick_live(struct model *m)
{
	int live[MAXOBJ], n = 0;

	for (int i = 0; i < m->nobj; i++)
		if (m->obj[i].alive)
			live[n++] = i;
	return n ? &m->obj[live[rn(m, n)]] : NULL;
}

static void check_obj(struct model *m, struct obj *o, int full)
{
	struct cairn_stat st;
	int looked;
	cairn_ino_t ino = grab(m, o, &looked);

	CHECK(m, cairn_ramfs_getattr(m->fs, ino, &st) == 0, "getattr");
	CHECK(m, st.size == o->size, "size %" PRIu64 " want %" PRIu64, st.size, o->size);
	CHECK(m, st.nlink == (uint32_t)o->nlink, "nlink %u want %d", st.nlink, o->nlink);
	CHECK(m, st.blocks == chunks_of(o, m->cs) * m->cs / 512,
	      "ino %" PRIu64 " blocks %" PRIu64 " want %" PRIu64, o->ino, st.blocks, chunks_of(o, m->cs) * m->cs / 512);
	CHECK(m, S_ISREG(st.mode), "mode");
	if (full) {
		ssize_t r = cairn_ramfs_read(m->fs, ino, m->back, MAXSIZE, 0);

		CHECK(m, r == (ssize_t)o->size, "full read %zd want %" PRIu64, r, o->size);
		CHECK(m, !memcmp(m->back, o->data, o->size), "content of ino %" PRIu64, o->ino);
	} else {
		uint64_t off = rn(m, o->size + 100), len = rn(m, 20000);
		ssize_t r = cairn_ramfs_read(m->fs, ino, m->back, len, off);
		uint64_t want = off >= o->size ? 0 : (o->size - off < len ? o->size - off : len);

		CHECK(m, r == (ssize_t)want, "read %zd want %" PRIu64, r, want);
		CHECK(m, !want || !memcmp(m->back, o->data + off, want), "read content");
	}
	ungrab(m, o, looked);
}

struct listing { int n; char names[NNAMES + 8][8]; };

static int list_cb(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
		   uint64_t next)
{
	struct listing *l = ctx;

	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)) || name[0] == 'd')
		return 0;
	if (l->n < NNAMES + 8 && len < 8) {
		memcpy(l->names[l->n], name, len);
		l->names[l->n][len] = '\0';
	}
	l->n++;
	return 0;
}

static void check_dir(struct model *m, int d)
{
	struct listing l = { 0 };
	int want = 0;

	CHECK(m, cairn_ramfs_readdir(m->fs, m->dir_ino[d], 0, list_cb, &l) == 0, "readdir");
	for (int i = 0; i < NNAMES; i++)
		want += m->name_obj[d][i] >= 0;
	CHECK(m, l.n == want, "dir %d has %d entries, want %d", d, l.n, want);
	for (int k = 0; k < l.n && k < NNAMES + 8; k++) {
		int i = l.names[k][1] - '0';

		CHECK(m, l.names[k][0] == 'n' && i >= 0 && i < NNAMES && m->name_obj[d][i] >= 0,
		      "unexpected entry %s in dir %d", l.names[k], d);
	}
}

static void check_all(struct model *m)
{
	for (int i = 0; i < m->nobj; i++)
		if (m->obj[i].alive)
			check_obj(m, &m->obj[i], 1);
	for (int d = 0; d < NDIRS; d++)
		check_dir(m, d);
	struct cairn_ramfs_usage u;
	cairn_ramfs_usage(m->fs, &u);
	CHECK(m, u.chunks == m->used_chunks, "fs has %" PRIu64 " chunks, model %" PRIu64,
	      u.chunks, m->used_chunks);
	CHECK(m, u.bytes_copied == 0, "bytes_copied");
}

static bool have_space(struct model *m)
{
	return !m->limit_chunks || m->used_chunks < m->limit_chunks;
}

static void op_create(struct model *m)
{
	int d = (int)rn(m, NDIRS), i = (int)rn(m, NNAMES);
	char b[4];
	struct cairn_stat st;
	int r = cairn_ramfs_mknod(m->fs, m->dir_ino[d], nm(i, b), 2, S_IFREG | 0644, 0, NULL, &st);

	if (m->name_obj[d][i] >= 0) {
		CHECK(m, r == -EEXIST, "create existing: %d", r);
		return;
	}
	if (m->nobj == MAXOBJ)
		return; /* model full: leave it (the fs entry would be unknown) */
	CHECK(m, r == 0, "create: %d", r);
	struct obj *o = &m->obj[m->nobj];
	memset(o, 0, sizeof(*o));
	o->ino = st.ino;
	o->alive = 1;
	o->nlink = 1;
	o->data = calloc(1, MAXSIZE);
	m->name_obj[d][i] = m->nobj++;
	TRACE(m, "create d%d/n%d ino %" PRIu64, d, i, st.ino);
	if (rn(m, 2)) {
		CHECK(m, cairn_ramfs_open(m->fs, st.ino) == 0, "open");
		o->handle = 1;
	}
	cairn_ramfs_forget(m->fs, st.ino, 1);
}

/* Write [off, off+len) into model object o as the fs would; returns the
 * expected result (short at the space limit). */
static ssize_t model_write(struct model *m, struct obj *o, uint64_t off, uint64_t len)
{
	uint64_t done = 0;

	while (done < len) {
		uint64_t pos = off + done, idx = pos / m->cs, k = m->cs - pos % m->cs;

		if (k > len - done)
			k = len - done;
		if (!o->chunk[idx]) {
			if (!have_space(m))
				break;
			o->chunk[idx] = 1;
			m->used_chunks++;
		}
		memcpy(o->data + pos, m->buf + done, k);
		done += k;
	}
	if (off + done > o->size)
		o->size = off + done;
	return done ? (ssize_t)done : -ENOSPC;
}

static void op_write(struct model *m, int append)
{
	struct obj *o = pick_live(m);
	int looked;

	if (!o)
		return;
	uint64_t len = 1 + rn(m, rn(m, 4) ? 9000 : 70000);
	uint64_t off = append ? o->size : rn(m, MAXSIZE / 2);
	if (off + len > MAXSIZE - m->cs)
		return;
	for (uint64_t i = 0; i < len; i++)
		m->buf[i] = (unsigned char)rnd(m) | 1;
	cairn_ino_t ino = grab(m, o, &looked);
	ssize_t r = cairn_ramfs_write(m->fs, ino, m->buf, len, append ? 999999 : off, append, NULL);
	ssize_t want = model_write(m, o, off, len);
	TRACE(m, "write obj %d ino %" PRIu64 " off %" PRIu64 " len %" PRIu64 " -> %zd", (int)(o - m->obj), o->ino, off, len, r);
	CHECK(m, r == want, "write off %" PRIu64 " len %" PRIu64 ": %zd want %zd", off, len, r,
	      want);
	ungrab(m, o, looked);
}

static void model_truncate(struct model *m, struct obj *o, uint64_t size)
{
	if (size <= o->size) { /* the same size drops preallocation past EOF too */
		uint64_t keep = (size + m->cs - 1) / m->cs;

		memset(o->data + size, 0, o->size - size);
		for (uint64_t i = keep; i < MAXCHUNKS; i++)
			if (o->chunk[i]) {
				o->chunk[i] = 0;
				m->used_chunks--;
			}
	}
	o->size = size;
}

static void op_truncate(struct model *m)
{
	struct obj *o = pick_live(m);
	int looked;

	if (!o)
		return;
	uint64_t size = rn(m, 4) ? rn(m, o->size + 1) : rn(m, MAXSIZE - m->cs);
	struct cairn_setattr sa = { .valid = CAIRN_SET_SIZE, .size = size };
	cairn_ino_t ino = grab(m, o, &looked);
	CHECK(m, cairn_ramfs_setattr(m->fs, ino, &sa, NULL, NULL) == 0, "truncate");
	TRACE(m, "truncate ino %" PRIu64 " %" PRIu64, o->ino, size);
	model_truncate(m, o, size);
	ungrab(m, o, looked);
}

static void op_fallocate(struct model *m)
{
	struct obj *o = pick_live(m);
	int looked, mode;

	if (!o)
		return;
	uint64_t off = rn(m, MAXSIZE / 2), len = 1 + rn(m, 40000);
	mode = (int)rn(m, 3);
	cairn_ino_t ino = grab(m, o, &looked);
	TRACE(m, "fallocate ino %" PRIu64 " mode %d off %" PRIu64 " len %" PRIu64, o->ino, mode,
	      off, len);
	if (mode == 2) {
		int r = cairn_ramfs_fallocate(m->fs, ino, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					      off, len);
		CHECK(m, r == 0, "punch: %d", r);
		uint64_t end = off + len;
		if (off < o->size)
			memset(o->data + off, 0, (end < o->size ? end : o->size) - off);
		for (uint64_t i = (off + m->cs - 1) / m->cs; (i + 1) * m->cs <= end; i++)
			if (o->chunk[i]) {
				o->chunk[i] = 0;
				m->used_chunks--;
			}
	} else {
		int r = cairn_ramfs_fallocate(m->fs, ino, mode ? FALLOC_FL_KEEP_SIZE : 0, off, len);
		uint64_t missing = 0;

		for (uint64_t i = off / m->cs; i <= (off + len - 1) / m->cs; i++)
			missing += !o->chunk[i];
		if (m->limit_chunks && m->used_chunks + missing > m->limit_chunks) {
			CHECK(m, r == -ENOSPC, "fallocate want ENOSPC: %d", r);
		} else {
			CHECK(m, r == 0, "fallocate: %d", r);
			for (uint64_t i = off / m->cs; i <= (off + len - 1) / m->cs; i++)
				o->chunk[i] = 1;
			m->used_chunks += missing;
			if (!mode && off + len > o->size)
				o->size = off + len;
		}
	}
	ungrab(m, o, looked);
}

static void op_link(struct model *m)
{
	struct obj *o = pick_live(m);
	int d = (int)rn(m, NDIRS), i = (int)rn(m, NNAMES), looked;
	char b[4];
	struct cairn_stat st;

	if (!o)
		return;
	cairn_ino_t ino = grab(m, o, &looked);
	int r = cairn_ramfs_link(m->fs, ino, m->dir_ino[d], nm(i, b), 2, &st);
	if (m->name_obj[d][i] >= 0) {
		CHECK(m, r == -EEXIST, "link over existing: %d", r);
	} else if (o->nlink == 0) {
		CHECK(m, r == -ENOENT, "link of unlinked: %d", r);
	} else {
		CHECK(m, r == 0, "link: %d", r);
		cairn_ramfs_forget(m->fs, ino, 1);
		m->name_obj[d][i] = (int)(o - m->obj);
		o->nlink++;
		TRACE(m, "link ino %" PRIu64 " d%d/n%d", o->ino, d, i);
	}
	ungrab(m, o, looked);
}

static void drop_name(struct model *m, int idx)
{
	struct obj *o = &m->obj[idx];

	o->nlink--;
	if (!o->nlink && !o->handle)
		obj_die(m, o);
}

static void op_unlink(struct model *m)
{
	int d = (int)rn(m, NDIRS), i = (int)rn(m, NNAMES);
	char b[4];
	int r = cairn_ramfs_unlink(m->fs, m->dir_ino[d], nm(i, b), 2);

	if (m->name_obj[d][i] < 0) {
		CHECK(m, r == -ENOENT, "unlink missing: %d", r);
		return;
	}
	CHECK(m, r == 0, "unlink: %d", r);
	TRACE(m, "unlink d%d/n%d ino %" PRIu64, d, i, m->obj[m->name_obj[d][i]].ino);
	int idx = m->name_obj[d][i];
	m->name_obj[d][i] = -1;
	drop_name(m, idx);
}

static void op_rename(struct model *m)
{
	int od = (int)rn(m, NDIRS), oi = (int)rn(m, NNAMES);
	int nd = (int)rn(m, NDIRS), ni = (int)rn(m, NNAMES);
	unsigned flags = (unsigned[]){ 0, 0, RENAME_NOREPLACE, RENAME_EXCHANGE }[rn(m, 4)];
	char ob[4], nb[4];
	int r = cairn_ramfs_rename(m->fs, m->dir_ino[od], nm(oi, ob), 2, m->dir_ino[nd],
				   nm(ni, nb), 2, flags);
	int src = m->name_obj[od][oi], dst = m->name_obj[nd][ni];

	if (src < 0 || (flags == RENAME_EXCHANGE && dst < 0)) {
		CHECK(m, r == -ENOENT, "rename missing: %d", r);
		return;
	}
	if (flags == RENAME_NOREPLACE && dst >= 0) {
		CHECK(m, r == -EEXIST, "rename noreplace: %d", r);
		return;
	}
	CHECK(m, r == 0, "rename flags %u: %d", flags, r);
	TRACE(m, "rename d%d/n%d -> d%d/n%d flags %u src %d dst %d", od, oi, nd, ni, flags, src, dst);
	if (src == dst)
		return; /* same object (or same name): POSIX says nothing happens */
	if (flags == RENAME_EXCHANGE) {
		m->name_obj[od][oi] = dst;
		m->name_obj[nd][ni] = src;
		return;
	}
	m->name_obj[od][oi] = -1;
	m->name_obj[nd][ni] = src;
	if (dst >= 0)
		drop_name(m, dst);
}

static void op_openclose(struct model *m)
{
	struct obj *o = pick_live(m);
	int looked;

	if (!o)
		return;
	TRACE(m, "%s ino %" PRIu64, o->handle ? "close" : "open", o->ino);
	if (o->handle) {
		cairn_ramfs_release(m->fs, o->ino);
		o->handle = 0;
		if (!o->nlink)
			obj_die(m, o);
		return;
	}
	cairn_ino_t ino = grab(m, o, &looked);
	CHECK(m, cairn_ramfs_open(m->fs, ino) == 0, "open");
	o->handle = 1;
	ungrab(m, o, looked);
}

static void run_seed(uint64_t seed, int nops)
{
	struct model *m = calloc(1, sizeof(*m));
	struct cairn_ramfs_config cfg = { 0 };

	m->seed = seed;
	m->trace = getenv("CAIRN_MODEL_TRACE") != NULL;
	m->rng = t_rng_seed(seed);
	m->cs = rn(m, 3) ? 4096 : 16384;
	if (rn(m, 2))
		m->limit_chunks = 40 + rn(m, 200);
	cfg.chunk_size = m->cs;
	cfg.size_limit = m->limit_chunks * m->cs;
	assert_int_equal(cairn_ramfs_new(&cfg, &m->fs), 0);
	m->buf = malloc(MAXSIZE);
	m->back = malloc(MAXSIZE);
	m->dir_ino[0] = cairn_ramfs_root(m->fs);
	for (int d = 1; d < NDIRS; d++) {
		char b[4] = { 'd', (char)('0' + d), 0 };
		m->dir_ino[d] = t_dir(m->fs, m->dir_ino[d > 1 ? d - 1 : 0], b);
	}
	memset(m->name_obj, -1, sizeof(m->name_obj));
	for (m->op = 0; m->op < nops; m->op++) {
		switch (rn(m, 16)) {
		case 0: case 1: op_create(m); break;
		case 2: case 3: case 4: op_write(m, 0); break;
		case 5: op_write(m, 1); break;
		case 6: op_truncate(m); break;
		case 7: op_fallocate(m); break;
		case 8: op_link(m); break;
		case 9: op_unlink(m); break;
		case 10: case 11: op_rename(m); break;
		case 12: op_openclose(m); break;
		case 13: case 14: {
			struct obj *o = pick_live(m);
			if (o)
				check_obj(m, o, 0);
			break;
		}
		default: check_dir(m, (int)rn(m, NDIRS)); break;
		}
		if (m->op % 300 == 299)
			check_all(m);
	}
	check_all(m);
	for (int i = 0; i < m->nobj; i++)
		free(m->obj[i].data);
	cairn_ramfs_free(m->fs);
	free(m->buf);
	free(m->back);
	free(m);
}

static void test_model(void **state)
{
	const char *s = getenv("CAIRN_SEED"), *n = getenv("CAIRN_MODEL_OPS");
	int nops = n ? atoi(n) : 2500;

	(void)state;
	if (s) {
		run_seed(strtoull(s, NULL, 0), nops);
		return;
	}
	for (uint64_t seed = 1; seed <= 8; seed++)
		run_seed(seed, nops);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
