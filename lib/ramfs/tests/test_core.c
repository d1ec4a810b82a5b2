/* SPDX-License-Identifier: MIT */
/* RAM fs: files, directories, names, links, readdir, lifetime, owners, times. */
#include "helpers.h"

static void test_create_write_read(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t root = cairn_ramfs_root(fs);
	cairn_ino_t f = t_file(fs, root, "a", 0644);
	char buf[32];
	struct cairn_stat st;

	(void)state;
	assert_int_equal(root, 1);
	t_write(fs, f, "hello", 5, 0);
	assert_int_equal(cairn_ramfs_read(fs, f, buf, sizeof(buf), 0), 5);
	assert_memory_equal(buf, "hello", 5);
	assert_int_equal(cairn_ramfs_read(fs, f, buf, sizeof(buf), 5), 0);
	assert_int_equal(cairn_ramfs_read(fs, f, buf, sizeof(buf), 100), 0);
	st = t_stat(fs, f);
	assert_int_equal(st.size, 5);
	assert_int_equal(st.mode, S_IFREG | 0644);
	assert_int_equal(st.nlink, 1);
	assert_int_equal(st.blocks, 8);
	assert_int_equal(t_lookup(fs, root, "a"), f);
	assert_int_equal(t_lookup(fs, root, "b"), -ENOENT);
	assert_int_equal(cairn_ramfs_mknod(fs, root, "a", 1, S_IFREG | 0644, 0, NULL, &st), -EEXIST);
	/* Reads and writes on a directory. */
	assert_int_equal(cairn_ramfs_read(fs, root, buf, 1, 0), -EISDIR);
	assert_int_equal(cairn_ramfs_write(fs, root, buf, 1, 0, 0, NULL), -EISDIR);
	cairn_ramfs_free(fs);
}

static void test_names(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t root = cairn_ramfs_root(fs);
	char name[300];
	struct cairn_stat st;

	(void)state;
	memset(name, 'x', sizeof(name));
	assert_int_equal(cairn_ramfs_mknod(fs, root, name, 255, S_IFREG | 0600, 0, NULL, &st), 0);
	assert_int_equal(cairn_ramfs_mknod(fs, root, name, 256, S_IFREG | 0600, 0, NULL, &st),
			 -ENAMETOOLONG);
	assert_int_equal(cairn_ramfs_lookup(fs, root, name, 256, &st), -ENAMETOOLONG);
	assert_int_equal(cairn_ramfs_mkdir(fs, root, name, 256, 0700, NULL, &st), -ENAMETOOLONG);
	assert_int_equal(cairn_ramfs_mknod(fs, root, "a/b", 3, S_IFREG, 0, NULL, &st), -EINVAL);
	assert_int_equal(cairn_ramfs_mknod(fs, root, ".", 1, S_IFREG, 0, NULL, &st), -EEXIST);
	assert_int_equal(cairn_ramfs_mkdir(fs, root, "..", 2, 0700, NULL, &st), -EEXIST);
	assert_int_equal(t_lookup(fs, root, "."), root);
	assert_int_equal(t_lookup(fs, root, ".."), root);
	cairn_ino_t d = t_dir(fs, root, "d");
	assert_int_equal(t_lookup(fs, d, ".."), root);
	cairn_ino_t f = t_file(fs, d, "f", 0600);
	assert_int_equal(t_lookup(fs, f, "x"), -ENOTDIR);
	assert_int_equal(cairn_ramfs_mknod(fs, f, "x", 1, S_IFREG, 0, NULL, &st), -ENOTDIR);
	cairn_ramfs_free(fs);
}

static void test_dirs_nlink(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t root = cairn_ramfs_root(fs);

	(void)state;
	assert_int_equal(t_stat(fs, root).nlink, 2);
	cairn_ino_t a = t_dir(fs, root, "a");
	t_dir(fs, root, "b");
	t_file(fs, root, "f", 0644);
	assert_int_equal(t_stat(fs, root).nlink, 4);
	assert_int_equal(t_stat(fs, a).nlink, 2);
	assert_true(S_ISDIR(t_stat(fs, a).mode));
	t_file(fs, a, "x", 0644);
	assert_int_equal(cairn_ramfs_rmdir(fs, root, "a", 1), -ENOTEMPTY);
	assert_int_equal(cairn_ramfs_unlink(fs, root, "a", 1), -EISDIR);
	assert_int_equal(cairn_ramfs_rmdir(fs, root, "f", 1), -ENOTDIR);
	assert_int_equal(cairn_ramfs_rmdir(fs, root, ".", 1), -EINVAL);
	assert_int_equal(cairn_ramfs_rmdir(fs, root, "..", 2), -ENOTEMPTY);
	assert_int_equal(cairn_ramfs_unlink(fs, a, "x", 1), 0);
	assert_int_equal(cairn_ramfs_rmdir(fs, root, "a", 1), 0);
	assert_int_equal(t_stat(fs, root).nlink, 3);
	/* The removed dir is still referenced (lookup from t_dir): nlink 0, no entries. */
	assert_int_equal(t_stat(fs, a).nlink, 0);
	struct cairn_stat st;
	assert_int_equal(cairn_ramfs_mknod(fs, a, "y", 1, S_IFREG, 0, NULL, &st), -ENOENT);
	cairn_ramfs_free(fs);
}

struct rd_list {
	int n;
	char names[64][32];
	cairn_ino_t ino[64];
	unsigned dtype[64];
	uint64_t next[64];
	int stop_after;
};

static int rd_cb(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
		 uint64_t next)
{
	struct rd_list *l = ctx;

	assert_true(l->n < 64 && len < 32);
	memcpy(l->names[l->n], name, len);
	l->names[l->n][len] = '\0';
	l->ino[l->n] = ino;
	l->dtype[l->n] = dtype;
	l->next[l->n] = next;
	l->n++;
	return l->stop_after && l->n >= l->stop_after;
}

static int rd_find(const struct rd_list *l, const char *name)
{
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->names[i], name))
			return i;
	return -1;
}

static void test_readdir(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t root = cairn_ramfs_root(fs);
	struct rd_list l = { 0 };
	struct cairn_stat st;
	char name[16];

	(void)state;
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "f%02d", i);
		t_file(fs, root, name, 0644);
	}
	cairn_ino_t d = t_dir(fs, root, "dir");
	assert_int_equal(cairn_ramfs_symlink(fs, root, "ln", 2, "f00", NULL, &st), 0);
	assert_int_equal(cairn_ramfs_mknod(fs, root, "fifo", 4, S_IFIFO | 0600, 0, NULL, &st), 0);
	assert_int_equal(cairn_ramfs_readdir(fs, root, 0, rd_cb, &l), 0);
	assert_int_equal(l.n, 2 + 43);
	assert_string_equal(l.names[0], ".");
	assert_string_equal(l.names[1], "..");
	assert_int_equal(l.dtype[0], DT_DIR);
	assert_int_equal(l.ino[0], root);
	assert_int_equal(l.dtype[rd_find(&l, "f05")], DT_REG);
	assert_int_equal(l.dtype[rd_find(&l, "dir")], DT_DIR);
	assert_int_equal(l.ino[rd_find(&l, "dir")], d);
	assert_int_equal(l.dtype[rd_find(&l, "ln")], DT_LNK);
	assert_int_equal(l.dtype[rd_find(&l, "fifo")], DT_FIFO);

	/* Stop after 12 entries, then change the directory: the cookie still
	 * resumes right after the last entry seen, nothing seen twice, nothing
	 * that stayed is lost. */
	struct rd_list a = { .stop_after = 12 }, b = { 0 };
	assert_int_equal(cairn_ramfs_readdir(fs, root, 0, rd_cb, &a), 0);
	assert_int_equal(a.n, 12);
	assert_int_equal(cairn_ramfs_unlink(fs, root, "f03", 3), 0);  /* seen */
	assert_int_equal(cairn_ramfs_unlink(fs, root, "f09", 3), 0);  /* last seen */
	assert_int_equal(cairn_ramfs_unlink(fs, root, "f20", 3), 0);  /* not yet seen */
	for (int i = 0; i < 30; i++) {  /* churn: forces compaction */
		snprintf(name, sizeof(name), "f%02d", i + 21);
		if (i < 19)
			assert_int_equal(cairn_ramfs_unlink(fs, root, name, 3), 0);
	}
	t_file(fs, root, "new", 0644);
	assert_int_equal(cairn_ramfs_readdir(fs, root, a.next[11], rd_cb, &b), 0);
	assert_int_equal(rd_find(&b, "."), -1);
	assert_int_equal(rd_find(&b, "f09"), -1);
	assert_int_equal(rd_find(&b, "f20"), -1);
	assert_true(rd_find(&b, "f10") >= 0);
	assert_true(rd_find(&b, "f11") >= 0);
	assert_true(rd_find(&b, "f19") >= 0);
	assert_true(rd_find(&b, "dir") >= 0);
	assert_true(rd_find(&b, "new") >= 0);
	assert_int_equal(b.n, 10 + 3 + 1); /* f10..f19, dir ln fifo, new */
	/* A cookie past the end gives nothing. */
	struct rd_list c = { 0 };
	assert_int_equal(cairn_ramfs_readdir(fs, root, b.next[b.n - 1], rd_cb, &c), 0);
	assert_int_equal(c.n, 0);
	assert_int_equal(cairn_ramfs_readdir(fs, t_lookup(fs, root, "f00"), 0, rd_cb, &c),
			 -ENOTDIR);
	cairn_ramfs_free(fs);
}

static void test_big_dir_shrinks(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t root = cairn_ramfs_root(fs);
	cairn_ino_t d = t_dir(fs, root, "big");
	struct cairn_ramfs_usage u0, u1, u2;
	struct cairn_stat st;
	char name[16];

	(void)state;
	cairn_ramfs_usage(fs, &u0);
	for (int i = 0; i < 10000; i++) {
		int n = snprintf(name, sizeof(name), "e%d", i);
		assert_int_equal(cairn_ramfs_mknod(fs, d, name, (size_t)n, S_IFREG | 0600, 0, NULL,
						   &st), 0);
		cairn_ramfs_forget(fs, st.ino, 1);
	}
	cairn_ramfs_usage(fs, &u1);
	for (int i = 0; i < 10000; i++) {
		int n = snprintf(name, sizeof(name), "e%d", i);
		assert_int_equal(cairn_ramfs_unlink(fs, d, name, (size_t)n), 0);
		if (i % 1000 == 0) {  /* still consistent while shrinking */
			n = snprintf(name, sizeof(name), "e%d", i + 500);
			assert_int_equal(cairn_ramfs_lookup(fs, d, name, (size_t)n, &st), 0);
			cairn_ramfs_forget(fs, st.ino, 1);
		}
	}
	cairn_ramfs_usage(fs, &u2);
	assert_int_equal(u2.inodes, u0.inodes);
	/* The index gave its memory back (the inode table keeps its pages). */
	assert_true(u2.meta_bytes - u0.meta_bytes < (u1.meta_bytes - u0.meta_bytes) / 10);
	assert_int_equal(t_stat(fs, d).size, 40);
	cairn_ramfs_free(fs);
}

static void test_unlink_while_open(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t root = cairn_ramfs_root(fs);
	cairn_ino_t f = t_file(fs, root, "a", 0644);
	struct cairn_ramfs_usage u;
	char buf[8];

	(void)state;
	assert_int_equal(cairn_ramfs_open(fs, f), 0);
	cairn_ramfs_forget(fs, f, 1);                   /* the kernel forgets the name */
	t_write(fs, f, "data", 4, 0);
	assert_int_equal(cairn_ramfs_unlink(fs, root, "a", 1), 0);
	assert_int_equal(t_lookup(fs, root, "a"), -ENOENT);
	assert_int_equal(t_stat(fs, f).nlink, 0);
	t_write(fs, f, "more", 4, 4);                   /* still writable */
	assert_int_equal(cairn_ramfs_read(fs, f, buf, 8, 0), 8);
	assert_memory_equal(buf, "datamore", 8);
	cairn_ramfs_usage(fs, &u);
	assert_int_equal(u.inodes, 2);
	assert_int_equal(u.chunks, 1);
	cairn_ramfs_release(fs, f);                     /* last reference: freed */
	cairn_ramfs_usage(fs, &u);
	assert_int_equal(u.inodes, 1);
	assert_int_equal(u.chunks, 0);
	assert_int_equal(cairn_ramfs_getattr(fs, f, &(struct cairn_stat){ 0 }), -ENOENT);
	cairn_ramfs_free(fs);
}

static void test_lookup_keeps_alive(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t root = cairn_ramfs_root(fs);
	cairn_ino_t f = t_file(fs, root, "a", 0644);   /* 1 lookup */

	(void)state;
	assert_int_equal(t_lookup(fs, root, "a"), f);    /* 2 lookups */
	assert_int_equal(cairn_ramfs_unlink(fs, root, "a", 1), 0);
	cairn_ramfs_forget(fs, f, 1);
	assert_int_equal(t_stat(fs, f).nlink, 0);        /* still there */
	cairn_ramfs_forget(fs, f, 1);
	assert_int_equal(cairn_ramfs_getattr(fs, f, &(struct cairn_stat){ 0 }), -ENOENT);
	cairn_ramfs_free(fs);
}

static void test_inode_numbers(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t root = cairn_ramfs_root(fs);
	cairn_ino_t seen[200];
	char name[16];

	(void)state;
	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		seen[i] = i % 2 ? t_file(fs, root, name, 0600) : t_dir(fs, root, name);
		assert_int_not_equal(seen[i], 0);
		assert_int_not_equal(seen[i], root);
		for (int j = 0; j < i; j++)
			assert_int_not_equal(seen[i], seen[j]);
	}
	for (int i = 0; i < 200; i++) {  /* stable */
		snprintf(name, sizeof(name), "n%d", i);
		assert_int_equal(t_lookup(fs, root, name), seen[i]);
		assert_int_equal(t_stat(fs, seen[i]).ino, seen[i]);
	}
	cairn_ramfs_free(fs);
}

static void test_hardlinks(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t root = cairn_ramfs_root(fs);
	cairn_ino_t d = t_dir(fs, root, "d");
	cairn_ino_t f = t_file(fs, root, "a", 0644);
	struct cairn_stat st, before;
	char buf[4];

	(void)state;
	before = t_stat(fs, d);
	t_tick();
	assert_int_equal(cairn_ramfs_link(fs, f, d, "b", 1, &st), 0);
	assert_int_equal(st.ino, f);
	assert_int_equal(st.nlink, 2);
	assert_true(t_time_cmp(t_stat(fs, d).mtime, before.mtime) > 0);
	assert_true(t_time_cmp(t_stat(fs, f).ctime, before.mtime) > 0);
	t_write(fs, t_lookup(fs, d, "b"), "xyz", 3, 0);
	assert_int_equal(cairn_ramfs_read(fs, f, buf, 3, 0), 3);
	assert_memory_equal(buf, "xyz", 3);
	assert_int_equal(cairn_ramfs_link(fs, f, d, "b", 1, &st), -EEXIST);
	assert_int_equal(cairn_ramfs_link(fs, d, root, "d2", 2, &st), -EPERM);
	assert_int_equal(cairn_ramfs_unlink(fs, root, "a", 1), 0);
	assert_int_equal(t_stat(fs, f).nlink, 1);
	assert_int_equal(cairn_ramfs_read(fs, f, buf, 3, 0), 3);
	cairn_ramfs_free(fs);
}

static void test_symlink(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t root = cairn_ramfs_root(fs);
	struct cairn_stat st;
	char buf[8192];
	cairn_ino_t ino;

	(void)state;
	assert_int_equal(cairn_ramfs_symlink(fs, root, "l", 1, "target/x", NULL, &st), 0);
	assert_int_equal(st.mode, S_IFLNK | 0777);
	assert_int_equal(st.size, 8);
	assert_int_equal(cairn_ramfs_readlink(fs, st.ino, buf, sizeof(buf)), 8);
	assert_memory_equal(buf, "target/x", 8);
	assert_int_equal(cairn_ramfs_readlink(fs, st.ino, buf, 3), -ERANGE);
	assert_int_equal(cairn_ramfs_readlink(fs, root, buf, 3), -EINVAL);
	memset(buf, 'a', 4096);
	buf[4096] = '\0';
	assert_int_equal(cairn_ramfs_symlink(fs, root, "m", 1, buf, NULL, &st), -ENAMETOOLONG);
	buf[4095] = '\0';
	assert_int_equal(cairn_ramfs_symlink(fs, root, "m", 1, buf, NULL, &st), 0);
	/* resolve follows links, and gives ELOOP on a loop. */
	cairn_ino_t d = t_dir(fs, root, "d");
	cairn_ino_t f = t_file(fs, d, "f", 0644);
	assert_int_equal(cairn_ramfs_symlink(fs, root, "ld", 2, "d", NULL, &st), 0);
	assert_int_equal(cairn_ramfs_symlink(fs, d, "up", 2, "../ld/f", NULL, &st), 0);
	assert_int_equal(cairn_ramfs_resolve(fs, "/ld/f", 0, &ino), 0);
	assert_int_equal(ino, f);
	assert_int_equal(cairn_ramfs_resolve(fs, "ld/up", 1, &ino), 0);
	assert_int_equal(ino, f);
	assert_int_equal(cairn_ramfs_resolve(fs, "ld/up", 0, &ino), 0);
	assert_int_equal(ino, st.ino);
	assert_int_equal(cairn_ramfs_resolve(fs, "d/f/x", 0, &ino), -ENOTDIR);
	assert_int_equal(cairn_ramfs_resolve(fs, "d/nope", 0, &ino), -ENOENT);
	assert_int_equal(cairn_ramfs_symlink(fs, root, "loop1", 5, "loop2", NULL, &st), 0);
	assert_int_equal(cairn_ramfs_symlink(fs, root, "loop2", 5, "/loop1", NULL, &st), 0);
	assert_int_equal(cairn_ramfs_resolve(fs, "loop1", 1, &ino), -ELOOP);
	assert_int_equal(cairn_ramfs_resolve(fs, "loop1/x", 0, &ino), -ELOOP);
	assert_int_equal(cairn_ramfs_resolve(fs, "/", 0, &ino), 0);
	assert_int_equal(ino, root);
	cairn_ramfs_free(fs);
}

static void test_mknod(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t root = cairn_ramfs_root(fs);
	struct cairn_stat st;
	char c;

	(void)state;
	assert_int_equal(cairn_ramfs_mknod(fs, root, "c", 1, S_IFCHR | 0620, 0x0501, NULL, &st), 0);
	assert_int_equal(st.mode, S_IFCHR | 0620);
	assert_int_equal(st.rdev, 0x0501);
	assert_int_equal(cairn_ramfs_mknod(fs, root, "b", 1, S_IFBLK | 0600, 0x0802, NULL, &st), 0);
	assert_int_equal(st.rdev, 0x0802);
	assert_int_equal(cairn_ramfs_mknod(fs, root, "p", 1, S_IFIFO | 0600, 7, NULL, &st), 0);
	assert_int_equal(st.mode, S_IFIFO | 0600);
	assert_int_equal(st.rdev, 0);
	assert_int_equal(cairn_ramfs_read(fs, st.ino, &c, 1, 0), -EINVAL);
	assert_int_equal(cairn_ramfs_mknod(fs, root, "s", 1, S_IFSOCK | 0600, 0, NULL, &st), 0);
	assert_int_equal(st.mode, S_IFSOCK | 0600);
	assert_int_equal(cairn_ramfs_mknod(fs, root, "r", 1, 0600, 0, NULL, &st), 0);
	assert_int_equal(st.mode, S_IFREG | 0600);
	assert_int_equal(cairn_ramfs_mknod(fs, root, "d", 1, S_IFDIR | 0600, 0, NULL, &st), -EINVAL);
	cairn_ramfs_free(fs);
}

static void test_owners_setgid(void **state)
{
	struct cairn_ramfs_config cfg = { .root_mode = 0755, .root_uid = 0, .root_gid = 0 };
	struct cairn_ramfs *fs;
	struct cairn_cred alice = { 1000, 1000, 0 }, bob = { 1001, 1001, 0 };
	struct cairn_setattr sa = { 0 };
	struct cairn_stat st;

	(void)state;
	assert_int_equal(cairn_ramfs_new(&cfg, &fs), 0);
	cairn_ino_t root = cairn_ramfs_root(fs);
	assert_int_equal(t_stat(fs, root).mode, S_IFDIR | 0755);
	assert_int_equal(cairn_ramfs_mkdir(fs, root, "g", 1, 0775, &alice, &st), 0);
	assert_int_equal(st.uid, 1000);
	assert_int_equal(st.gid, 1000);
	cairn_ino_t g = st.ino;
	sa.valid = CAIRN_SET_MODE | CAIRN_SET_GID;
	sa.mode = 02775;
	sa.gid = 50;
	assert_int_equal(cairn_ramfs_setattr(fs, g, &sa, NULL, &st), 0);
	assert_int_equal(st.mode, S_IFDIR | 02775);
	/* New objects in a setgid dir take its group; new dirs also its setgid bit. */
	assert_int_equal(cairn_ramfs_mknod(fs, g, "f", 1, S_IFREG | 0644, 0, &bob, &st), 0);
	assert_int_equal(st.uid, 1001);
	assert_int_equal(st.gid, 50);
	assert_int_equal(cairn_ramfs_mkdir(fs, g, "sub", 3, 0755, &bob, &st), 0);
	assert_int_equal(st.gid, 50);
	assert_int_equal(st.mode, S_IFDIR | 02755);
	/* A setgid+group-exec file by a non-member loses setgid. */
	assert_int_equal(cairn_ramfs_mknod(fs, g, "x", 1, S_IFREG | 02755, 0, &bob, &st), 0);
	assert_int_equal(st.mode, S_IFREG | 0755);
	cairn_ramfs_free(fs);
}

static void test_suid_cleared(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t root = cairn_ramfs_root(fs);
	struct cairn_cred user = { 1000, 1000, 0 };
	struct cairn_setattr sa = { .valid = CAIRN_SET_MODE, .mode = 06755 };
	cairn_ino_t f = t_file(fs, root, "f", 0755);

	(void)state;
	assert_int_equal(cairn_ramfs_setattr(fs, f, &sa, NULL, NULL), 0);
	/* root writes keep the bits */
	assert_int_equal(cairn_ramfs_write(fs, f, "x", 1, 0, 0, NULL), 1);
	assert_int_equal(t_stat(fs, f).mode, S_IFREG | 06755);
	assert_int_equal(cairn_ramfs_write(fs, f, "x", 1, 0, 0, &user), 1);
	assert_int_equal(t_stat(fs, f).mode, S_IFREG | 0755);
	/* setgid without group-exec is mandatory locking: it stays. */
	sa.mode = 06745;
	assert_int_equal(cairn_ramfs_setattr(fs, f, &sa, NULL, NULL), 0);
	assert_int_equal(cairn_ramfs_write(fs, f, "x", 1, 0, 0, &user), 1);
	assert_int_equal(t_stat(fs, f).mode, S_IFREG | 02745);
	/* truncate by a user clears them too */
	sa.mode = 06755;
	assert_int_equal(cairn_ramfs_setattr(fs, f, &sa, NULL, NULL), 0);
	struct cairn_setattr tr = { .valid = CAIRN_SET_SIZE, .size = 0 };
	assert_int_equal(cairn_ramfs_setattr(fs, f, &tr, &user, NULL), 0);
	assert_int_equal(t_stat(fs, f).mode, S_IFREG | 0755);
	/* chown clears them, even by root; a dir keeps its setgid */
	assert_int_equal(cairn_ramfs_setattr(fs, f, &sa, NULL, NULL), 0);
	struct cairn_setattr ch = { .valid = CAIRN_SET_UID, .uid = 5 };
	struct cairn_stat st;
	assert_int_equal(cairn_ramfs_setattr(fs, f, &ch, NULL, &st), 0);
	assert_int_equal(st.uid, 5);
	assert_int_equal(st.mode, S_IFREG | 0755);
	/* chown(f, -1, -1) too, and only ctime moves (tmpfs) */
	assert_int_equal(cairn_ramfs_setattr(fs, f, &sa, NULL, NULL), 0);
	struct cairn_setattr none = { .valid = CAIRN_SET_CHOWN };
	struct cairn_stat before = t_stat(fs, f);
	t_tick();
	assert_int_equal(cairn_ramfs_setattr(fs, f, &none, NULL, &st), 0);
	assert_int_equal(st.mode, S_IFREG | 0755);
	assert_int_equal(st.uid, 5);
	assert_true(t_time_cmp(st.ctime, before.ctime) > 0);
	assert_int_equal(t_time_cmp(st.mtime, before.mtime), 0);
	cairn_ino_t d = t_dir(fs, root, "d");
	sa.mode = 02755;
	assert_int_equal(cairn_ramfs_setattr(fs, d, &sa, NULL, NULL), 0);
	assert_int_equal(cairn_ramfs_setattr(fs, d, &ch, NULL, &st), 0);
	assert_int_equal(st.mode, S_IFDIR | 02755);
	cairn_ramfs_free(fs);
}

static void test_times(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t root = cairn_ramfs_root(fs);
	struct cairn_stat a, b;
	cairn_ino_t f;

	(void)state;
	a = t_stat(fs, root);
	t_tick();
	f = t_file(fs, root, "f", 0644);
	b = t_stat(fs, root);
	assert_true(t_time_cmp(b.mtime, a.mtime) > 0);
	assert_true(t_time_cmp(b.ctime, a.ctime) > 0);
	/* write: mtime and ctime */
	a = t_stat(fs, f);
	t_tick();
	t_write(fs, f, "abc", 3, 0);
	b = t_stat(fs, f);
	assert_true(t_time_cmp(b.mtime, a.mtime) > 0);
	assert_true(t_time_cmp(b.ctime, a.ctime) > 0);
	assert_true(b.mtime.nsec < 1000000000u);
	/* truncate */
	a = b;
	t_tick();
	struct cairn_setattr sa = { .valid = CAIRN_SET_SIZE, .size = 1 };
	assert_int_equal(cairn_ramfs_setattr(fs, f, &sa, NULL, &b), 0);
	assert_true(t_time_cmp(b.mtime, a.mtime) > 0);
	assert_true(t_time_cmp(b.ctime, a.ctime) > 0);
	/* truncate to the same size: the times move while the file holds data, as
	 * tmpfs frees pages past EOF then; an empty file keeps them */
	a = b;
	t_tick();
	assert_int_equal(cairn_ramfs_setattr(fs, f, &sa, NULL, &b), 0);
	assert_true(t_time_cmp(b.mtime, a.mtime) > 0);
	assert_true(t_time_cmp(b.ctime, a.ctime) > 0);
	{
		cairn_ino_t z = t_file(fs, root, "z", 0644);
		struct cairn_setattr zero = { .valid = CAIRN_SET_SIZE, .size = 0 };
		struct cairn_stat za = t_stat(fs, z), zb;

		t_tick();
		assert_int_equal(cairn_ramfs_setattr(fs, z, &zero, NULL, &zb), 0);
		assert_int_equal(t_time_cmp(zb.mtime, za.mtime), 0);
		assert_int_equal(t_time_cmp(zb.ctime, za.ctime), 0);
	}
	/* utimensat: explicit atime, mtime OMIT, then mtime NOW */
	sa.valid = CAIRN_SET_ATIME;
	sa.atime = (struct cairn_time){ 1234567890, 123456789 };
	a = b;
	t_tick();
	assert_int_equal(cairn_ramfs_setattr(fs, f, &sa, NULL, &b), 0);
	assert_int_equal(b.atime.sec, 1234567890);
	assert_int_equal(b.atime.nsec, 123456789);
	assert_int_equal(t_time_cmp(b.mtime, a.mtime), 0);
	assert_true(t_time_cmp(b.ctime, a.ctime) > 0);
	sa.valid = CAIRN_SET_MTIME_NOW;
	a = b;
	t_tick();
	assert_int_equal(cairn_ramfs_setattr(fs, f, &sa, NULL, &b), 0);
	assert_true(t_time_cmp(b.mtime, a.mtime) > 0);
	assert_int_equal(b.atime.sec, 1234567890);
	sa.valid = CAIRN_SET_MTIME | CAIRN_SET_CTIME;
	sa.mtime = (struct cairn_time){ 5, 6 };
	sa.ctime = (struct cairn_time){ 7, 8 };
	assert_int_equal(cairn_ramfs_setattr(fs, f, &sa, NULL, &b), 0);
	assert_int_equal(b.mtime.sec, 5);
	assert_int_equal(b.ctime.nsec, 8);
	/* read moves atime (relatime: atime older than mtime) */
	char c;
	assert_int_equal(cairn_ramfs_read(fs, f, &c, 1, 0), 1);
	assert_true(t_stat(fs, f).atime.sec > 1234567890);
	/* unlink: parent mtime/ctime and the file's ctime */
	cairn_ino_t g = t_file(fs, root, "g", 0644);
	assert_int_equal(cairn_ramfs_link(fs, g, root, "g2", 2, &b), 0);
	a = t_stat(fs, root);
	struct cairn_stat gs = t_stat(fs, g);
	t_tick();
	assert_int_equal(cairn_ramfs_unlink(fs, root, "g", 1), 0);
	assert_true(t_time_cmp(t_stat(fs, root).mtime, a.mtime) > 0);
	assert_true(t_time_cmp(t_stat(fs, g).ctime, gs.ctime) > 0);
	cairn_ramfs_free(fs);
}

static void test_setattr_errors(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t root = cairn_ramfs_root(fs);
	struct cairn_setattr sa = { .valid = CAIRN_SET_SIZE, .size = 10 };
	struct cairn_stat st;

	(void)state;
	assert_int_equal(cairn_ramfs_setattr(fs, root, &sa, NULL, &st), -EISDIR);
	assert_int_equal(cairn_ramfs_symlink(fs, root, "l", 1, "x", NULL, &st), 0);
	assert_int_equal(cairn_ramfs_setattr(fs, st.ino, &sa, NULL, &st), -EINVAL);
	assert_int_equal(cairn_ramfs_getattr(fs, 9999, &st), -ENOENT);
	assert_int_equal(cairn_ramfs_getattr(fs, 0, &st), -ENOENT);
	sa.valid = CAIRN_SET_MODE;
	sa.mode = S_IFCHR | 0600;
	assert_int_equal(cairn_ramfs_setattr(fs, root, &sa, NULL, &st), 0);
	assert_int_equal(st.mode, S_IFDIR | 0600); /* type is kept */
	cairn_ramfs_free(fs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_write_read),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_dirs_nlink),
		cmocka_unit_test(test_readdir),
		cmocka_unit_test(test_big_dir_shrinks),
		cmocka_unit_test(test_unlink_while_open),
		cmocka_unit_test(test_lookup_keeps_alive),
		cmocka_unit_test(test_inode_numbers),
		cmocka_unit_test(test_hardlinks),
		cmocka_unit_test(test_symlink),
		cmocka_unit_test(test_mknod),
		cmocka_unit_test(test_owners_setgid),
		cmocka_unit_test(test_suid_cleared),
		cmocka_unit_test(test_times),
		cmocka_unit_test(test_setattr_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
