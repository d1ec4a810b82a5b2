/* SPDX-License-Identifier: MIT */
/*
 * RAM fs under concurrency (run by TSan too): readers and writers on separate
 * files, O_APPEND writers sharing one file, namespace churn (create, rename,
 * unlink, readdir, lookup/forget) beside data IO, and writers racing for the
 * last free space.
 */
#include <pthread.h>
#include <linux/falloc.h>
#include "helpers.h"

#define NTHREADS 4
#define REC 512

struct shared {
	struct cairn_ramfs *fs;
	cairn_ino_t root, dir, append_file;
	int id;
	int failures;
	int iters;
};

struct targ { struct shared *s; int id; };

static void *file_worker(void *p)
{
	struct targ *a = p;
	struct cairn_ramfs *fs = a->s->fs;
	char name[16], buf[8192], back[8192];
	struct cairn_stat st;

	snprintf(name, sizeof(name), "own%d", a->id);
	if (cairn_ramfs_mknod(fs, a->s->root, name, strlen(name), S_IFREG | 0644, 0, NULL, &st)) {
		__atomic_add_fetch(&a->s->failures, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	for (int i = 0; i < a->s->iters; i++) {
		uint64_t off = (uint64_t)(i * 7919 % 64) * 3000;

		memset(buf, 'a' + (i + a->id) % 26, sizeof(buf));
		if (cairn_ramfs_write(fs, st.ino, buf, sizeof(buf), off, 0, NULL) != sizeof(buf) ||
		    cairn_ramfs_read(fs, st.ino, back, sizeof(back), off) != sizeof(back) ||
		    memcmp(buf, back, sizeof(buf)))
			__atomic_add_fetch(&a->s->failures, 1, __ATOMIC_RELAXED);
		if (i % 50 == 49) {
			struct cairn_setattr sa = { .valid = CAIRN_SET_SIZE, .size = off };
			cairn_ramfs_setattr(fs, st.ino, &sa, NULL, NULL);
			cairn_ramfs_fallocate(fs, st.ino, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					      0, 4096);
			cairn_ramfs_lseek(fs, st.ino, 0, SEEK_DATA);
		}
	}
	cairn_ramfs_forget(fs, st.ino, 1);
	return NULL;
}

static void *append_worker(void *p)
{
	struct targ *a = p;
	char rec[REC];

	for (int i = 0; i < a->s->iters; i++) {
		memset(rec, 'A' + a->id, REC);
		rec[0] = (char)a->id;
		if (cairn_ramfs_write(a->s->fs, a->s->append_file, rec, REC, 0, 1, NULL) != REC)
			__atomic_add_fetch(&a->s->failures, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static int count_cb(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
		    uint64_t next)
{
	(*(int *)ctx)++;
	return 0;
}

struct distinct { cairn_ino_t ino[4096]; int n; };

static int distinct_cb(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
		       uint64_t next)
{
	struct distinct *d = ctx;

	for (int i = 0; i < d->n; i++)
		if (d->ino[i] == ino)
			return 0;
	if (d->n < 4096)
		d->ino[d->n++] = ino;
	return 0;
}

static void *ns_worker(void *p)
{
	struct targ *a = p;
	struct cairn_ramfs *fs = a->s->fs;
	cairn_ino_t dir = a->s->dir;
	struct cairn_stat st;
	char n1[16], n2[16];

	for (int i = 0; i < a->s->iters; i++) {
		int k = i % 8;
		int n = 0;

		snprintf(n1, sizeof(n1), "t%d_%d", a->id, k);
		snprintf(n2, sizeof(n2), "t%d_%d", (a->id + 1) % NTHREADS, (k + 3) % 8);
		switch (i % 6) {
		case 0:
			if (!cairn_ramfs_mknod(fs, dir, n1, strlen(n1), S_IFREG | 0600, 0, NULL, &st)) {
				cairn_ramfs_write(fs, st.ino, n1, strlen(n1), 0, 0, NULL);
				cairn_ramfs_forget(fs, st.ino, 1);
			}
			break;
		case 1:
			cairn_ramfs_rename(fs, dir, n1, strlen(n1), dir, n2, strlen(n2),
					   i % 12 == 1 ? RENAME_EXCHANGE : 0);
			break;
		case 2:
			if (!cairn_ramfs_lookup(fs, dir, n2, strlen(n2), &st)) {
				char b[16];
				if (!cairn_ramfs_open(fs, st.ino)) {
					cairn_ramfs_read(fs, st.ino, b, sizeof(b), 0);
					cairn_ramfs_release(fs, st.ino);
				}
				cairn_ramfs_forget(fs, st.ino, 1);
			}
			break;
		case 3:
			cairn_ramfs_unlink(fs, dir, n2, strlen(n2));
			break;
		case 4:
			cairn_ramfs_readdir(fs, dir, 0, count_cb, &n);
			/* chmod/chown while others rename, link and list the same names */
			if (!cairn_ramfs_lookup(fs, dir, n1, strlen(n1), &st)) {
				struct cairn_setattr sa = { .valid = CAIRN_SET_MODE | CAIRN_SET_UID,
							    .mode = 0600 | (i & 1 ? 04000 : 0),
							    .uid = (uint32_t)i };
				struct cairn_stat lst;

				cairn_ramfs_setattr(fs, st.ino, &sa, NULL, NULL);
				if (!cairn_ramfs_link(fs, st.ino, dir, n2, strlen(n2), &lst))
					cairn_ramfs_forget(fs, lst.ino, 1);
				cairn_ramfs_forget(fs, st.ino, 1);
			}
			break;
		default:
			if (!cairn_ramfs_mkdir(fs, dir, n1, strlen(n1), 0700, NULL, &st))
				cairn_ramfs_forget(fs, st.ino, 1);
			cairn_ramfs_rmdir(fs, dir, n1, strlen(n1));
			cairn_ramfs_setxattr(fs, dir, "user.x", n1, strlen(n1), 0);
			break;
		}
	}
	return NULL;
}

static void run(void *(*fn)(void *), struct shared *s)
{
	pthread_t th[NTHREADS];
	struct targ a[NTHREADS];

	for (int i = 0; i < NTHREADS; i++) {
		a[i].s = s;
		a[i].id = i;
		assert_int_equal(pthread_create(&th[i], NULL, fn, &a[i]), 0);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
}

static void test_separate_files(void **state)
{
	struct shared s = { .fs = t_new(0, 0), .iters = 400 };

	(void)state;
	s.root = cairn_ramfs_root(s.fs);
	run(file_worker, &s);
	assert_int_equal(s.failures, 0);
	cairn_ramfs_free(s.fs);
}

static void test_append_shared(void **state)
{
	struct shared s = { .fs = t_new(0, 0), .iters = 500 };
	char rec[REC];

	(void)state;
	s.root = cairn_ramfs_root(s.fs);
	s.append_file = t_file(s.fs, s.root, "log", 0644);
	run(append_worker, &s);
	assert_int_equal(s.failures, 0);
	assert_int_equal(t_stat(s.fs, s.append_file).size, (uint64_t)NTHREADS * 500 * REC);
	/* Every record is whole: appends never interleave. */
	for (int i = 0; i < NTHREADS * 500; i++) {
		assert_int_equal(cairn_ramfs_read(s.fs, s.append_file, rec, REC, (uint64_t)i * REC),
				 REC);
		for (int k = 1; k < REC; k++)
			assert_int_equal(rec[k], 'A' + rec[0]);
	}
	cairn_ramfs_free(s.fs);
}

static void test_namespace_churn(void **state)
{
	struct shared s = { .fs = t_new(0, 0), .iters = 1500 };
	struct cairn_ramfs_usage u;
	int n = 0;

	(void)state;
	s.root = cairn_ramfs_root(s.fs);
	s.dir = t_dir(s.fs, s.root, "shared");
	pthread_t io;
	struct targ a = { &s, 9 };
	assert_int_equal(pthread_create(&io, NULL, file_worker, &a), 0);
	run(ns_worker, &s);
	pthread_join(io, NULL);
	assert_int_equal(s.failures, 0);
	/* The fs is consistent: nlink matches the subdirectories (none left), and
	 * the inode count matches what readdir sees. */
	struct distinct *dd = calloc(1, sizeof(*dd));
	assert_int_equal(cairn_ramfs_readdir(s.fs, s.dir, 2, distinct_cb, dd), 0);
	assert_int_equal(t_stat(s.fs, s.dir).nlink, 2);
	cairn_ramfs_usage(s.fs, &u);
	assert_int_equal(u.inodes, 3 + dd->n); /* root, shared, own9 + the entries' inodes */
	free(dd);
	(void)n;
	cairn_ramfs_free(s.fs);
}

static void *space_worker(void *p)
{
	struct targ *a = p;
	char name[16], buf[4096] = { 1 };
	struct cairn_stat st;
	uint64_t off = 0;

	snprintf(name, sizeof(name), "sp%d", a->id);
	if (cairn_ramfs_mknod(a->s->fs, a->s->root, name, strlen(name), S_IFREG | 0600, 0, NULL,
			      &st))
		return NULL;
	for (;;) {
		ssize_t r = cairn_ramfs_write(a->s->fs, st.ino, buf, 3000, off, 0, NULL);

		if (r <= 0)
			break;
		off += (uint64_t)r;
	}
	cairn_ramfs_forget(a->s->fs, st.ino, 1);
	return NULL;
}

static void test_space_race(void **state)
{
	struct shared s = { .fs = t_new(100 * 4096, 0) };
	struct cairn_ramfs_usage u;
	struct cairn_statfs sf;

	(void)state;
	s.root = cairn_ramfs_root(s.fs);
	run(space_worker, &s);
	cairn_ramfs_usage(s.fs, &u);
	assert_int_equal(u.chunks, 100);
	assert_int_equal(cairn_ramfs_statfs(s.fs, &sf), 0);
	assert_int_equal(sf.blocks_free, 0);
	cairn_ramfs_free(s.fs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_separate_files),
		cmocka_unit_test(test_append_shared),
		cmocka_unit_test(test_namespace_churn),
		cmocka_unit_test(test_space_race),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
