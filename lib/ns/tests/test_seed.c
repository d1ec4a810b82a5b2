/* SPDX-License-Identifier: MIT */
/* Seeding a tmp= subtree from the image (lib/ns/copy.c): a host tree is packed
 * with mkfs, a namespace with tmp=/tmp is made over it, and the RAM layer it
 * seeded is compared with what the host had. The image's trusted.cairn.* names
 * are the namespace's own and must not be imported. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <unistd.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <cairn/image.h>
#include <cairn/mkfs.h>
#include <cairn/ns.h>
#include "ramfs/tests/helpers.h"
#include "util/tests/open_image.h"

struct fixture {
	char dir[64];           /* host tree and image live here */
	struct cairn_image *img;
	struct cairn_ns *ns;
	struct cairn_ramfs *fs;  /* the namespace's RAM layer */
	int have_xattr;
	int have_trusted;        /* the host let us plant trusted.cairn.* (root) */
};

/* What a hostile or careless image may carry: the overlay's own origin name. */
static const uint64_t planted_origin = 12345;

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(p);
}

static void put_file(const char *path, const char *data, size_t len, off_t off)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, data, len, off), (ssize_t)len);
	close(fd);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char p[256], img[128];
	struct cairn_mkfs_opts o;
	struct cairn_mkfs *m;

	strcpy(f->dir, "/tmp/cairn-ramfs-img.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	*state = f;
	snprintf(p, sizeof(p), "%s/src", f->dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/src/tmp", f->dir);
	mkdir(p, 01777);
	snprintf(p, sizeof(p), "%s/src/tmp/small", f->dir);
	put_file(p, "small file\n", 11, 0);
	chmod(p, 0640);
	snprintf(p, sizeof(p), "%s/src/tmp/sparse", f->dir);
	put_file(p, "end", 3, 5 * 4096 + 7);  /* a hole, then data */
	snprintf(p, sizeof(p), "%s/src/tmp/sub", f->dir);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/src/tmp/sub/deep", f->dir);
	put_file(p, "deep", 4, 0);
	snprintf(img, sizeof(img), "%s/src/tmp/sub/hard", f->dir);
	assert_int_equal(link(p, img), 0);
	snprintf(p, sizeof(p), "%s/src/tmp/link", f->dir);
	assert_int_equal(symlink("sub/deep", p), 0);
	snprintf(p, sizeof(p), "%s/src/tmp/fifo", f->dir);
	assert_int_equal(mkfifo(p, 0600), 0);
	snprintf(p, sizeof(p), "%s/src/tmp/small", f->dir);
	f->have_xattr = setxattr(p, "user.color", "blue", 4, 0) == 0;
	f->have_trusted = setxattr(p, "trusted.cairn.origin", &planted_origin,
				   sizeof(planted_origin), 0) == 0 &&
			  setxattr(p, "trusted.cairn.other", "x", 1, 0) == 0;
	struct timeval tv[2] = { { 1000000000, 0 }, { 1100000000, 500000 } };
	assert_int_equal(utimes(p, tv), 0);
	snprintf(p, sizeof(p), "%s/src/tmp", f->dir);
	assert_int_equal(chmod(p, 01777), 0);
	snprintf(p, sizeof(p), "%s/src/other", f->dir);
	put_file(p, "not copied", 10, 0);

	cairn_mkfs_opts_init(&o);
	o.no_fsync = 1;
	assert_int_equal(cairn_mkfs_new(&o, &m), 0);
	snprintf(p, sizeof(p), "%s/src", f->dir);
	assert_int_equal(cairn_mkfs_add_tree(m, "/", p), 0);
	snprintf(img, sizeof(img), "%s/img.cairn", f->dir);
	assert_int_equal(cairn_mkfs_write_path(m, img), 0);
	cairn_mkfs_free(m);
	assert_int_equal(t_open_image(img, &f->img), 0);
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (f->ns)
		cairn_ns_free(f->ns);
	if (f->img)
		cairn_image_close(f->img);
	nftw(f->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static int new_ns(struct fixture *f, const struct cairn_ramfs_config *ram)
{
	struct cairn_ns_config c;

	memset(&c, 0, sizeof(c));
	c.image = f->img;
	c.tmp_paths = "/tmp";
	if (ram)
		c.ram = *ram;
	f->ns = NULL;
	int rc = cairn_ns_new(&c, &f->ns);
	f->fs = f->ns ? cairn_ns_ramfs(f->ns) : NULL;
	return rc;
}

/* A path inside the seeded /tmp of the RAM layer. */
static cairn_ino_t path_of(struct cairn_ramfs *fs, const char *path)
{
	char full[128];
	cairn_ino_t ino;

	snprintf(full, sizeof(full), "/tmp/%s", path);
	assert_int_equal(cairn_ramfs_resolve(fs, path[0] ? full : "/tmp", 0, &ino), 0);
	cairn_ramfs_forget(fs, ino, 1); /* the tree keeps it alive */
	return ino;
}

static void test_seed_tmp(void **state)
{
	struct fixture *f = *state;
	cairn_ino_t root;
	char buf[64 * 1024];
	struct cairn_stat st;

	assert_int_equal(new_ns(f, NULL), 0);
	root = path_of(f->fs, "");
	/* the destination took /tmp's own mode */
	assert_int_equal(t_stat(f->fs, root).mode, S_IFDIR | 01777);
	assert_int_equal(t_lookup(f->fs, root, "other"), -ENOENT);

	st = t_stat(f->fs, path_of(f->fs, "small"));
	assert_int_equal(st.mode, S_IFREG | 0640);
	assert_int_equal(st.size, 11);
	assert_int_equal(st.mtime.sec, 1100000000);
	assert_int_equal(st.mtime.nsec, 500000000);
	assert_int_equal(st.atime.sec, 1000000000);
	assert_int_equal(cairn_ramfs_read(f->fs, st.ino, buf, sizeof(buf), 0), 11);
	assert_memory_equal(buf, "small file\n", 11);
	if (f->have_xattr) {
		assert_int_equal(cairn_ramfs_getxattr(f->fs, st.ino, "user.color", buf, 64), 4);
		assert_memory_equal(buf, "blue", 4);
	}

	st = t_stat(f->fs, path_of(f->fs, "sparse"));
	assert_int_equal(st.size, 5 * 4096 + 10);
	assert_int_equal(st.blocks, 4096 / 512);         /* the hole stayed a hole */
	assert_int_equal(cairn_ramfs_read(f->fs, st.ino, buf, sizeof(buf), 0), 5 * 4096 + 10);
	for (int i = 0; i < 5 * 4096 + 7; i++)
		assert_int_equal(buf[i], 0);
	assert_memory_equal(buf + 5 * 4096 + 7, "end", 3);

	cairn_ino_t sub = path_of(f->fs, "sub");
	assert_int_equal(t_stat(f->fs, sub).mode, S_IFDIR | 0700);
	assert_int_equal(t_stat(f->fs, root).nlink, 3);
	cairn_ino_t deep = path_of(f->fs, "sub/deep");
	assert_int_equal(path_of(f->fs, "sub/hard"), deep);  /* hard link kept */
	assert_int_equal(t_stat(f->fs, deep).nlink, 2);

	st = t_stat(f->fs, path_of(f->fs, "link"));
	assert_true(S_ISLNK(st.mode));
	assert_int_equal(cairn_ramfs_readlink(f->fs, st.ino, buf, sizeof(buf)), 8);
	assert_memory_equal(buf, "sub/deep", 8);
	assert_true(S_ISFIFO(t_stat(f->fs, path_of(f->fs, "fifo")).mode));
}

/* Holes are kept at the RAM fs's own grain: with 64 KiB chunks the 20 KiB of
 * zeros before "end" share its chunk, and nothing else is stored. */
static void test_seed_big_chunks(void **state)
{
	struct fixture *f = *state;
	struct cairn_ramfs_config ram = { .chunk_size = 64 * 1024 };
	char buf[8];

	assert_int_equal(new_ns(f, &ram), 0);
	assert_int_equal(t_stat(f->fs, path_of(f->fs, "sparse")).blocks, 64 * 1024 / 512);
	assert_int_equal(cairn_ramfs_read(f->fs, path_of(f->fs, "sparse"), buf, 3, 5 * 4096 + 7),
			 3);
	assert_memory_equal(buf, "end", 3);
}

/* The image's trusted.cairn.* names are the namespace's own (the overlay's
 * origin): a seeded file must not take them, and users never see them. */
static void test_seed_no_reserved_xattrs(void **state)
{
	struct fixture *f = *state;
	struct cairn_ns_entry d, e;
	uint64_t origin = 0;
	cairn_ino_t small;
	char names[256];
	ssize_t len;

	if (!f->have_trusted)
		skip(); /* not root, or the host fs keeps no trusted.* */
	assert_int_equal(new_ns(f, NULL), 0);
	small = path_of(f->fs, "small");
	assert_int_equal(cairn_ramfs_getxattr(f->fs, small, "trusted.cairn.origin", &origin,
					      sizeof(origin)), -ENODATA);
	assert_int_equal(cairn_ramfs_getxattr(f->fs, small, "trusted.cairn.other", names,
					      sizeof(names)), -ENODATA);
	len = cairn_ramfs_listxattr(f->fs, small, names, sizeof(names));
	assert_true(len >= 0);
	for (ssize_t i = 0; i < len; i += (ssize_t)strlen(names + i) + 1)
		assert_int_not_equal(strncmp(names + i, "trusted.cairn.", 14), 0);
	/* Through the namespace: hidden on the image object and on the copy. */
	assert_int_equal(cairn_ns_lookup(f->ns, CAIRN_NS_ROOT, "tmp", 3, &d), 0);
	assert_int_equal(cairn_ns_lookup(f->ns, d.node, "small", 5, &e), 0);
	assert_int_equal(cairn_ns_getxattr(f->ns, e.node, "trusted.cairn.origin", &origin,
					   sizeof(origin)), -ENODATA);
	cairn_ns_forget(f->ns, e.node, 1);
	cairn_ns_forget(f->ns, d.node, 1);
}

static void test_seed_enospc(void **state)
{
	struct fixture *f = *state;
	struct cairn_ramfs_config ram = { .size_limit = 2 * 4096 };

	assert_int_equal(new_ns(f, &ram), -ENOSPC);
	assert_null(f->ns);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_seed_tmp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_seed_big_chunks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_seed_no_reserved_xattrs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_seed_enospc, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
