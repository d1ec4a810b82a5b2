/* SPDX-License-Identifier: MIT */
/* RAM fs xattrs, and the size and inode limits (ENOSPC with nothing lost, statfs). */
#include <sys/xattr.h>
#include "helpers.h"

#define CS 4096

static void test_xattr_basic(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t f = t_file(fs, cairn_ramfs_root(fs), "f", 0644);
	char buf[128];

	(void)state;
	assert_int_equal(cairn_ramfs_setxattr(fs, f, "user.a", "1", 1, 0), 0);
	assert_int_equal(cairn_ramfs_setxattr(fs, f, "trusted.b", "22", 2, XATTR_CREATE), 0);
	assert_int_equal(cairn_ramfs_setxattr(fs, f, "security.c", "", 0, 0), 0);
	assert_int_equal(cairn_ramfs_setxattr(fs, f, "user.a", "x", 1, XATTR_CREATE), -EEXIST);
	assert_int_equal(cairn_ramfs_setxattr(fs, f, "user.z", "x", 1, XATTR_REPLACE), -ENODATA);
	assert_int_equal(cairn_ramfs_setxattr(fs, f, "user.a", "333", 3, XATTR_REPLACE), 0);
	assert_int_equal(cairn_ramfs_getxattr(fs, f, "user.a", NULL, 0), 3);  /* size query */
	assert_int_equal(cairn_ramfs_getxattr(fs, f, "user.a", buf, 2), -ERANGE);
	assert_int_equal(cairn_ramfs_getxattr(fs, f, "user.a", buf, sizeof(buf)), 3);
	assert_memory_equal(buf, "333", 3);
	assert_int_equal(cairn_ramfs_getxattr(fs, f, "security.c", buf, sizeof(buf)), 0);
	assert_int_equal(cairn_ramfs_getxattr(fs, f, "user.none", buf, sizeof(buf)), -ENODATA);
	/* list: NUL-separated, size query, ERANGE */
	const char want[] = "user.a\0trusted.b\0security.c";
	assert_int_equal(cairn_ramfs_listxattr(fs, f, NULL, 0), sizeof(want));
	assert_int_equal(cairn_ramfs_listxattr(fs, f, buf, 5), -ERANGE);
	assert_int_equal(cairn_ramfs_listxattr(fs, f, buf, sizeof(buf)), sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(cairn_ramfs_removexattr(fs, f, "trusted.b"), 0);
	assert_int_equal(cairn_ramfs_removexattr(fs, f, "trusted.b"), -ENODATA);
	assert_int_equal(cairn_ramfs_listxattr(fs, f, NULL, 0), sizeof("user.a\0security.c"));
	/* namespaces */
	assert_int_equal(cairn_ramfs_setxattr(fs, f, "system.posix_acl_access", "x", 1, 0),
			 -EINVAL); /* not an ACL (test_acl.c has the rest) */
	assert_int_equal(cairn_ramfs_setxattr(fs, f, "system.other", "x", 1, 0), -EOPNOTSUPP);
	assert_int_equal(cairn_ramfs_setxattr(fs, f, "other", "x", 1, 0), -EOPNOTSUPP);
	assert_int_equal(cairn_ramfs_setxattr(fs, f, "user.", "x", 1, 0), -EINVAL);
	assert_int_equal(cairn_ramfs_setxattr(fs, f, "user.a", "x", 1, 7), -EINVAL);
	char big[70000] = { 0 };
	assert_int_equal(cairn_ramfs_setxattr(fs, f, "user.big", big, sizeof(big), 0), -E2BIG);
	char lname[300];
	memset(lname, 'n', sizeof(lname));
	memcpy(lname, "user.", 5);
	lname[299] = '\0';
	assert_int_equal(cairn_ramfs_setxattr(fs, f, lname, "x", 1, 0), -ERANGE);
	/* user.* only on files and directories */
	struct cairn_stat st;
	assert_int_equal(cairn_ramfs_symlink(fs, cairn_ramfs_root(fs), "l", 1, "f", NULL, &st), 0);
	assert_int_equal(cairn_ramfs_setxattr(fs, st.ino, "user.a", "x", 1, 0), -EPERM);
	assert_int_equal(cairn_ramfs_setxattr(fs, st.ino, "trusted.a", "x", 1, 0), 0);
	assert_int_equal(cairn_ramfs_setxattr(fs, cairn_ramfs_root(fs), "user.d", "x", 1, 0), 0);
	cairn_ramfs_free(fs);
}

static void test_xattr_ctime(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t f = t_file(fs, cairn_ramfs_root(fs), "f", 0644);
	struct cairn_stat a = t_stat(fs, f);

	(void)state;
	t_tick();
	assert_int_equal(cairn_ramfs_setxattr(fs, f, "user.a", "1", 1, 0), 0);
	assert_true(t_time_cmp(t_stat(fs, f).ctime, a.ctime) > 0);
	assert_int_equal(t_time_cmp(t_stat(fs, f).mtime, a.mtime), 0);
	cairn_ramfs_free(fs);
}

static void test_enospc_write(void **state)
{
	struct cairn_ramfs *fs = t_new(10 * CS, 0);
	cairn_ino_t root = cairn_ramfs_root(fs);
	cairn_ino_t a = t_file(fs, root, "a", 0644), b = t_file(fs, root, "b", 0644);
	char *buf = malloc(16 * CS), *back = malloc(16 * CS);
	struct cairn_statfs sf;

	(void)state;
	for (int i = 0; i < 16 * CS; i++)
		buf[i] = (char)(i * 13 + 1);
	assert_int_equal(cairn_ramfs_statfs(fs, &sf), 0);
	assert_int_equal(sf.blocks, 10);
	assert_int_equal(sf.blocks_free, 10);
	t_write(fs, a, buf, 6 * CS, 0);
	assert_int_equal(cairn_ramfs_statfs(fs, &sf), 0);
	assert_int_equal(sf.blocks_free, 4);
	/* b: 4 chunks fit; a write of 6 comes up short (starting mid-chunk) */
	assert_int_equal(cairn_ramfs_write(fs, b, buf, 6 * CS, 100, 0, NULL), 4 * CS - 100);
	assert_int_equal(cairn_ramfs_write(fs, b, buf, 6 * CS, 4 * CS, 0, NULL), -ENOSPC);
	assert_int_equal(cairn_ramfs_write(fs, b, buf, 1, 4 * CS, 1, NULL), -ENOSPC);
	assert_int_equal(t_stat(fs, b).size, 4 * CS);
	assert_int_equal(cairn_ramfs_statfs(fs, &sf), 0);
	assert_int_equal(sf.blocks_free, 0);
	/* rewriting stored data still works, and nothing was lost */
	t_write(fs, a, buf + 7, 6 * CS, 0);
	assert_int_equal(cairn_ramfs_read(fs, a, back, 16 * CS, 0), 6 * CS);
	assert_memory_equal(back, buf + 7, 6 * CS);
	assert_int_equal(cairn_ramfs_read(fs, b, back, 16 * CS, 0), 4 * CS);
	assert_true(back[0] == 0 && back[99] == 0);
	assert_memory_equal(back + 100, buf, 4 * CS - 100);
	/* fallocate is all or nothing; xattrs are charged too */
	cairn_ino_t c = t_file(fs, root, "c", 0644);
	assert_int_equal(cairn_ramfs_fallocate(fs, c, 0, 0, CS), -ENOSPC);
	assert_int_equal(t_stat(fs, c).size, 0);
	assert_int_equal(cairn_ramfs_setxattr(fs, c, "user.x", "v", 1, 0), -ENOSPC);
	/* freeing space makes room again */
	assert_int_equal(cairn_ramfs_unlink(fs, root, "b", 1), 0);
	cairn_ramfs_forget(fs, b, 1);
	assert_int_equal(cairn_ramfs_statfs(fs, &sf), 0);
	assert_int_equal(sf.blocks_free, 4);
	assert_int_equal(cairn_ramfs_fallocate(fs, c, 0, 0, 3 * CS), 0);
	assert_int_equal(cairn_ramfs_setxattr(fs, c, "user.x", buf, 1000, 0), 0);
	assert_int_equal(cairn_ramfs_statfs(fs, &sf), 0);
	assert_int_equal(sf.blocks_free, 0);  /* CS - 1006 bytes left: less than a block */
	assert_int_equal(cairn_ramfs_setxattr(fs, c, "user.y", buf, CS, 0), -ENOSPC);
	/* replacing with a same-size value needs no extra space */
	assert_int_equal(cairn_ramfs_setxattr(fs, c, "user.x", buf + 1, 1000, XATTR_REPLACE), 0);
	free(buf);
	free(back);
	cairn_ramfs_free(fs);
}

static void test_enospc_inodes(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 5);
	cairn_ino_t root = cairn_ramfs_root(fs);
	struct cairn_statfs sf;
	struct cairn_stat st;

	(void)state;
	assert_int_equal(cairn_ramfs_statfs(fs, &sf), 0);
	assert_int_equal(sf.files, 5);
	assert_int_equal(sf.files_free, 4);
	assert_int_equal(sf.name_max, 255);
	t_file(fs, root, "a", 0644);
	t_dir(fs, root, "b");
	assert_int_equal(cairn_ramfs_symlink(fs, root, "c", 1, "a", NULL, &st), 0);
	assert_int_equal(cairn_ramfs_mknod(fs, root, "d", 1, S_IFIFO | 0644, 0, NULL, &st), 0);
	assert_int_equal(cairn_ramfs_mknod(fs, root, "e", 1, S_IFREG | 0644, 0, NULL, &st), -ENOSPC);
	assert_int_equal(cairn_ramfs_mkdir(fs, root, "e", 1, 0755, NULL, &st), -ENOSPC);
	assert_int_equal(t_lookup(fs, root, "e"), -ENOENT);
	assert_int_equal(cairn_ramfs_statfs(fs, &sf), 0);
	assert_int_equal(sf.files_free, 0);
	/* hard links need no inode */
	assert_int_equal(cairn_ramfs_link(fs, t_lookup(fs, root, "a"), root, "a2", 2, &st), 0);
	assert_int_equal(cairn_ramfs_unlink(fs, root, "d", 1), 0);
	cairn_ramfs_forget(fs, st.ino, 0);
	cairn_ramfs_free(fs);
}

static void test_statfs_unlimited(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	struct cairn_statfs sf;

	(void)state;
	assert_int_equal(cairn_ramfs_statfs(fs, &sf), 0);
	assert_int_equal(sf.block_size, CS);
	assert_true(sf.blocks >= sf.blocks_free);
	assert_true(sf.blocks_free > 0);
	assert_true(sf.files_free > 1000000);
	assert_true(sf.files > sf.files_free);
	cairn_ramfs_free(fs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xattr_basic),
		cmocka_unit_test(test_xattr_ctime),
		cmocka_unit_test(test_enospc_write),
		cmocka_unit_test(test_enospc_inodes),
		cmocka_unit_test(test_statfs_unlimited),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
