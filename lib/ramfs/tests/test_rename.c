/* SPDX-License-Identifier: MIT */
/* RAM fs rename: replace, NOREPLACE, EXCHANGE, errors, nlink and times. */
#include "helpers.h"

static int ren(struct cairn_ramfs *fs, cairn_ino_t od, const char *on, cairn_ino_t nd,
	       const char *nn, unsigned flags)
{
	return cairn_ramfs_rename(fs, od, on, strlen(on), nd, nn, strlen(nn), flags);
}

static void test_rename_replace(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t root = cairn_ramfs_root(fs);
	cairn_ino_t a = t_file(fs, root, "a", 0644), b = t_file(fs, root, "b", 0644);
	struct cairn_ramfs_usage u;
	char c;

	(void)state;
	t_write(fs, a, "A", 1, 0);
	t_write(fs, b, "B", 1, 0);
	cairn_ramfs_forget(fs, b, 1);                      /* nothing holds b but its name */
	assert_int_equal(ren(fs, root, "a", root, "b", 0), 0);
	assert_int_equal(t_lookup(fs, root, "a"), -ENOENT);
	assert_int_equal(t_lookup(fs, root, "b"), a);
	assert_int_equal(cairn_ramfs_read(fs, a, &c, 1, 0), 1);
	assert_int_equal(c, 'A');
	cairn_ramfs_usage(fs, &u);
	assert_int_equal(u.inodes, 2);                     /* old b freed */
	assert_int_equal(u.chunks, 1);
	/* rename to itself / to a hard link of itself: nothing happens */
	assert_int_equal(ren(fs, root, "b", root, "b", 0), 0);
	struct cairn_stat st;
	assert_int_equal(cairn_ramfs_link(fs, a, root, "h", 1, &st), 0);
	assert_int_equal(ren(fs, root, "b", root, "h", 0), 0);
	assert_int_equal(t_lookup(fs, root, "b"), a);
	assert_int_equal(t_lookup(fs, root, "h"), a);
	assert_int_equal(t_stat(fs, a).nlink, 2);
	assert_int_equal(ren(fs, root, "nope", root, "x", 0), -ENOENT);
	cairn_ramfs_free(fs);
}

static void test_rename_flags(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t root = cairn_ramfs_root(fs);
	cairn_ino_t a = t_file(fs, root, "a", 0644), b = t_file(fs, root, "b", 0644);

	(void)state;
	assert_int_equal(ren(fs, root, "a", root, "b", RENAME_NOREPLACE), -EEXIST);
	assert_int_equal(ren(fs, root, "a", root, "c", RENAME_NOREPLACE), 0);
	assert_int_equal(t_lookup(fs, root, "c"), a);
	assert_int_equal(ren(fs, root, "c", root, "b", RENAME_NOREPLACE | RENAME_EXCHANGE),
			 -EINVAL);
	assert_int_equal(ren(fs, root, "c", root, "b", RENAME_WHITEOUT), -EINVAL);
	assert_int_equal(ren(fs, root, "c", root, "b", 1u << 7), -EINVAL);
	assert_int_equal(ren(fs, root, "c", root, "zz", RENAME_EXCHANGE), -ENOENT);
	assert_int_equal(t_lookup(fs, root, "c"), a);     /* nothing changed */
	assert_int_equal(t_lookup(fs, root, "b"), b);
	cairn_ramfs_free(fs);
}

static void test_rename_exchange(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t root = cairn_ramfs_root(fs);
	cairn_ino_t d1 = t_dir(fs, root, "d1"), d2 = t_dir(fs, root, "d2");
	cairn_ino_t f = t_file(fs, d1, "f", 0644);
	cairn_ino_t sub = t_dir(fs, d2, "sub");
	struct cairn_stat before = t_stat(fs, f);

	(void)state;
	t_tick();
	/* a file and a directory in different parents swap places */
	assert_int_equal(ren(fs, d1, "f", d2, "sub", RENAME_EXCHANGE), 0);
	assert_int_equal(t_lookup(fs, d1, "f"), sub);
	assert_int_equal(t_lookup(fs, d2, "sub"), f);
	assert_int_equal(t_lookup(fs, sub, ".."), d1);
	assert_int_equal(t_stat(fs, d1).nlink, 3);
	assert_int_equal(t_stat(fs, d2).nlink, 2);
	assert_true(t_time_cmp(t_stat(fs, f).ctime, before.ctime) > 0);
	assert_true(t_time_cmp(t_stat(fs, d1).mtime, before.ctime) > 0);
	assert_true(t_time_cmp(t_stat(fs, d2).mtime, before.ctime) > 0);
	/* two directories where one contains the other: EINVAL */
	assert_int_equal(ren(fs, root, "d1", d1, "f", RENAME_EXCHANGE), -EINVAL);
	assert_int_equal(ren(fs, d1, "f", root, "d1", RENAME_EXCHANGE), -EINVAL);
	/* same parent */
	t_file(fs, root, "x", 0600);
	assert_int_equal(ren(fs, root, "x", root, "d2", RENAME_EXCHANGE), 0);
	assert_true(S_ISDIR(t_stat(fs, t_lookup(fs, root, "x")).mode));
	assert_true(S_ISREG(t_stat(fs, t_lookup(fs, root, "d2")).mode));
	assert_int_equal(t_stat(fs, root).nlink, 4);
	cairn_ramfs_free(fs);
}

static void test_rename_dirs(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t root = cairn_ramfs_root(fs);
	cairn_ino_t a = t_dir(fs, root, "a"), b = t_dir(fs, a, "b"), c = t_dir(fs, b, "c");
	cairn_ino_t e = t_dir(fs, root, "e"), f = t_file(fs, root, "f", 0644);

	(void)state;
	/* into its own subtree */
	assert_int_equal(ren(fs, root, "a", c, "x", 0), -EINVAL);
	assert_int_equal(ren(fs, root, "a", a, "x", 0), -EINVAL);
	/* type mismatches */
	assert_int_equal(ren(fs, root, "a", root, "f", 0), -ENOTDIR);
	assert_int_equal(ren(fs, root, "f", root, "a", 0), -EISDIR);
	/* non-empty target; target that is an ancestor of the source */
	assert_int_equal(ren(fs, root, "e", root, "a", 0), -ENOTEMPTY);
	assert_int_equal(ren(fs, b, "c", root, "a", 0), -ENOTEMPTY);
	/* over an empty directory: nlink of both parents */
	assert_int_equal(t_stat(fs, root).nlink, 4);
	assert_int_equal(ren(fs, b, "c", root, "e", 0), 0);
	assert_int_equal(t_lookup(fs, root, "e"), c);
	assert_int_equal(t_lookup(fs, c, ".."), root);
	assert_int_equal(t_stat(fs, e).nlink, 0);          /* replaced dir, still referenced */
	assert_int_equal(t_stat(fs, root).nlink, 4);
	assert_int_equal(t_stat(fs, b).nlink, 2);
	/* moving a directory up changes nlink on both sides */
	assert_int_equal(ren(fs, a, "b", root, "b", 0), 0);
	assert_int_equal(t_stat(fs, root).nlink, 5);
	assert_int_equal(t_stat(fs, a).nlink, 2);
	assert_int_equal(t_lookup(fs, b, ".."), root);
	/* "." and ".." cannot be renamed */
	assert_int_equal(ren(fs, root, ".", root, "z", 0), -EBUSY);
	assert_int_equal(ren(fs, a, "..", root, "z", 0), -EBUSY);
	/* long names */
	char name[300];
	memset(name, 'n', sizeof(name));
	assert_int_equal(cairn_ramfs_rename(fs, root, "f", 1, root, name, 256, 0), -ENAMETOOLONG);
	assert_int_equal(cairn_ramfs_rename(fs, root, "f", 1, root, name, 255, 0), 0);
	assert_int_equal(cairn_ramfs_lookup(fs, root, name, 255, &(struct cairn_stat){ 0 }), 0);
	(void)f;
	cairn_ramfs_free(fs);
}

static void test_rename_times(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t root = cairn_ramfs_root(fs);
	cairn_ino_t d1 = t_dir(fs, root, "d1"), d2 = t_dir(fs, root, "d2");
	cairn_ino_t f = t_file(fs, d1, "f", 0644);
	struct cairn_stat s1 = t_stat(fs, d1), s2 = t_stat(fs, d2), sf = t_stat(fs, f);

	(void)state;
	t_tick();
	assert_int_equal(ren(fs, d1, "f", d2, "g", 0), 0);
	assert_true(t_time_cmp(t_stat(fs, d1).mtime, s1.mtime) > 0);
	assert_true(t_time_cmp(t_stat(fs, d1).ctime, s1.ctime) > 0);
	assert_true(t_time_cmp(t_stat(fs, d2).mtime, s2.mtime) > 0);
	assert_true(t_time_cmp(t_stat(fs, d2).ctime, s2.ctime) > 0);
	assert_true(t_time_cmp(t_stat(fs, f).ctime, sf.ctime) > 0);
	assert_int_equal(t_time_cmp(t_stat(fs, f).mtime, sf.mtime), 0);
	assert_int_equal(t_stat(fs, d1).size, 40);
	assert_int_equal(t_stat(fs, d2).size, 60);
	cairn_ramfs_free(fs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rename_replace),
		cmocka_unit_test(test_rename_flags),
		cmocka_unit_test(test_rename_exchange),
		cmocka_unit_test(test_rename_dirs),
		cmocka_unit_test(test_rename_times),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
