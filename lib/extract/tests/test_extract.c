/* SPDX-License-Identifier: MIT */
/*
 * The extract library end to end: a host tree with every file type goes
 * through the mkfs library into an image, cairn_extract_to_dir() restores it,
 * and the restored tree is compared with the source (contents, holes, modes,
 * nanosecond times, hard links, symlinks, xattrs, owners when root). Also the
 * symlinks (restored verbatim, absolute and '..' ones too; safe_links skips
 * and names those leading outside the target), existing directories (merged
 * into, keeping their attributes unless overwrite_dirs; a created target takes
 * the root's), subtree extraction into an open descriptor, and errors (missing
 * path, existing files never overwritten).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <cmocka.h>
#include <cairn/cairn.h>
#include "util/tests/open_image.h"

struct fixture {
	char root[64];           /* temp dir: src/, img, out/ */
	char src[96], img[96], out[96];
	struct cairn_image *img_obj;
	char msgs[8][512];       /* the reports of the last extract */
	unsigned nmsgs;
};

static void pathf(char *buf, size_t n, const char *dir, const char *rel)
{
	snprintf(buf, n, "%s/%s", dir, rel);
}

static void put(struct fixture *f, const char *rel, const char *data, mode_t mode)
{
	char p[256];
	int fd;

	pathf(p, sizeof(p), f->src, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, strlen(data)), (ssize_t)strlen(data));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void src_mkdir(struct fixture *f, const char *rel)
{
	char p[256];

	pathf(p, sizeof(p), f->src, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static void src_symlink(struct fixture *f, const char *target, const char *rel)
{
	char p[256];

	pathf(p, sizeof(p), f->src, rel);
	assert_int_equal(symlink(target, p), 0);
}

/* A file of 3 MiB with data only at 1 MiB: the hole must stay a hole. */
static void put_sparse(struct fixture *f, const char *rel)
{
	char p[256];
	int fd;

	pathf(p, sizeof(p), f->src, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "middle", 6, 1 << 20), 6);
	assert_int_equal(ftruncate(fd, 3 << 20), 0);
	close(fd);
}

static void make_tree(struct fixture *f)
{
	struct timespec ts[2] = { { 1600000000, 123456789 }, { 1500000000, 987654321 } };
	char p[256];

	assert_int_equal(mkdir(f->src, 0755), 0);
	put(f, "hello", "hello world\n", 0644);
	put(f, "suid", "", 04755);
	src_mkdir(f, "dir");
	src_mkdir(f, "dir/sub");
	put(f, "dir/nested", "nested\n", 0600);
	put_sparse(f, "dir/sparse");
	src_symlink(f, "hello", "link");
	src_symlink(f, "../hello", "dir/up");      /* inside the whole image */
	src_symlink(f, "sub/../nested", "dir/rel");
	pathf(p, sizeof(p), f->src, "dir/hard");
	{
		char first[256];

		pathf(first, sizeof(first), f->src, "hello");
		assert_int_equal(link(first, p), 0);
	}
	pathf(p, sizeof(p), f->src, "dir/fifo");
	assert_int_equal(mkfifo(p, 0640), 0);
	pathf(p, sizeof(p), f->src, "hello");
	/* user xattrs need a file system that has them (tmpfs since 6.6). */
	if (setxattr(p, "user.color", "blue", 4, 0) && errno != ENOTSUP)
		fail_msg("setxattr: %s", strerror(errno));
	if (geteuid() == 0)
		assert_int_equal(lchown(p, 1234, 5678), 0);
	assert_int_equal(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
	pathf(p, sizeof(p), f->src, "dir");
	assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
}

/* Builds f->img from f->src plus the extra symlinks (path, target pairs). */
static void build(struct fixture *f, const char *const *links, size_t nlinks)
{
	struct cairn_mkfs_opts o;
	struct cairn_mkfs *m;

	cairn_mkfs_opts_init(&o);
	o.no_fsync = 1;
	assert_int_equal(cairn_mkfs_new(&o, &m), 0);
	if (cairn_mkfs_add_tree(m, "/", f->src))
		fail_msg("mkfs: %s", cairn_mkfs_error(m));
	for (size_t i = 0; i < nlinks; i++)
		assert_int_equal(cairn_mkfs_add_symlink(m, links[2 * i], links[2 * i + 1]), 0);
	if (cairn_mkfs_write_path(m, f->img))
		fail_msg("mkfs: %s", cairn_mkfs_error(m));
	cairn_mkfs_free(m);
	if (f->img_obj)
		cairn_image_close(f->img_obj);
	f->img_obj = NULL;
	assert_int_equal(t_open_image(f->img, &f->img_obj), 0);
}

static void on_report(void *ctx, const char *msg)
{
	struct fixture *f = ctx;

	assert_non_null(msg);
	if (f->nmsgs < 8)
		snprintf(f->msgs[f->nmsgs], sizeof(f->msgs[0]), "%s", msg);
	f->nmsgs++;
}

static void opts_for(struct fixture *f, struct cairn_extract_opts *o)
{
	cairn_extract_opts_init(o);
	o->preserve_owner = geteuid() == 0; /* same_attrs compares owners as root */
	o->image_name = "IMG";
	o->report = on_report;
	o->ctx = f;
	f->nmsgs = 0;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->root, sizeof(f->root), "/tmp/cairn-extract-test.XXXXXX");
	assert_non_null(mkdtemp(f->root));
	snprintf(f->src, sizeof(f->src), "%s/src", f->root);
	snprintf(f->img, sizeof(f->img), "%s/img", f->root);
	snprintf(f->out, sizeof(f->out), "%s/out", f->root);
	make_tree(f);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	if (f->img_obj)
		cairn_image_close(f->img_obj);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

/* ---- comparing the restored tree with the source ---- */

static void same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	char ba[4096], bb[4096];
	int fa, fb;
	ssize_t na, nb;

	assert_int_equal(lstat(a, &sa), 0);
	assert_int_equal(lstat(b, &sb), 0);
	assert_int_equal(sa.st_size, sb.st_size);
	fa = open(a, O_RDONLY);
	fb = open(b, O_RDONLY);
	assert_true(fa >= 0 && fb >= 0);
	do {
		na = read(fa, ba, sizeof(ba));
		nb = read(fb, bb, sizeof(bb));
		assert_int_equal(na, nb);
		assert_memory_equal(ba, bb, (size_t)na);
	} while (na > 0);
	close(fa);
	close(fb);
}

static void same_attrs(const char *a, const char *b)
{
	struct stat sa, sb;

	assert_int_equal(lstat(a, &sa), 0);
	assert_int_equal(lstat(b, &sb), 0);
	assert_int_equal(sa.st_mode, sb.st_mode);
	assert_int_equal(sa.st_mtim.tv_sec, sb.st_mtim.tv_sec);
	assert_int_equal(sa.st_mtim.tv_nsec, sb.st_mtim.tv_nsec);
	if (geteuid() == 0) {
		assert_int_equal(sa.st_uid, sb.st_uid);
		assert_int_equal(sa.st_gid, sb.st_gid);
	}
}

/* Every entry of the source has its twin in out, and nothing more. */
static void compare(struct fixture *f)
{
	static const char *const names[] = { "hello", "suid", "dir", "dir/sub", "dir/nested",
					     "dir/sparse", "link", "dir/up", "dir/rel",
					     "dir/hard", "dir/fifo" };
	char a[256], b[256], la[256], lb[256];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct stat st;

		pathf(a, sizeof(a), f->src, names[i]);
		pathf(b, sizeof(b), f->out, names[i]);
		assert_int_equal(lstat(a, &st), 0);
		same_attrs(a, b);
		if (S_ISREG(st.st_mode))
			same_file(a, b);
		if (S_ISLNK(st.st_mode)) {
			ssize_t na = readlink(a, la, sizeof(la)), nb = readlink(b, lb, sizeof(lb));

			assert_int_equal(na, nb);
			assert_memory_equal(la, lb, (size_t)na);
		}
	}
}

static void test_roundtrip(void **state)
{
	struct fixture *f = *state;
	struct cairn_extract_opts o;
	struct cairn_extract_stats st;
	struct stat s1, s2;
	char a[256], b[256], v[16];
	ssize_t n;

	build(f, NULL, 0);
	opts_for(f, &o);
	assert_int_equal(cairn_extract_to_dir(f->img_obj, "/", f->out, &o, &st), 0);
	assert_int_equal(f->nmsgs, 0);
	assert_int_equal(st.problems, 0);
	compare(f);
	same_attrs(f->src, f->out); /* a target extract made takes the root's attributes */
	assert_int_equal(st.files, 4);      /* hello suid nested sparse; hard is a link */
	assert_int_equal(st.dirs, 2);
	assert_int_equal(st.symlinks, 3);
	assert_int_equal(st.hardlinks, 1);
	assert_int_equal(st.others, 1);
	assert_true(st.data_bytes >= 12 + 7 + 6 && st.data_bytes < (1 << 20));
	/* Hard links share one inode; the hole is not written. */
	pathf(a, sizeof(a), f->out, "hello");
	pathf(b, sizeof(b), f->out, "dir/hard");
	assert_int_equal(lstat(a, &s1), 0);
	assert_int_equal(lstat(b, &s2), 0);
	assert_int_equal(s1.st_ino, s2.st_ino);
	pathf(a, sizeof(a), f->out, "dir/sparse");
	assert_int_equal(lstat(a, &s1), 0);
	assert_true(s1.st_blocks * 512 < (1 << 20));
	pathf(a, sizeof(a), f->src, "hello");
	if (getxattr(a, "user.color", v, sizeof(v)) == 4) {
		pathf(b, sizeof(b), f->out, "hello");
		n = getxattr(b, "user.color", v, sizeof(v));
		assert_int_equal(n, 4);
		assert_memory_equal(v, "blue", 4);
	}
}

static const char *const escaping[] = {
	"/esc", "../outside",    /* climbs above the target */
	"/abs", "/etc/passwd",   /* absolute */
	"/dot", ".",             /* harmless by itself, */
	"/chain", "dot/..",      /* but one level more than its text says */
};

static void test_safe_links_skip_escaping(void **state)
{
	struct fixture *f = *state;
	struct cairn_extract_opts o;
	struct cairn_extract_stats st;
	char p[256], want[512];
	struct stat s;

	build(f, escaping, 4);
	opts_for(f, &o);
	o.safe_links = 1;
	assert_int_equal(cairn_extract_to_dir(f->img_obj, "/", f->out, &o, &st), -EXDEV);
	assert_int_equal(f->nmsgs, 3);
	assert_int_equal(st.problems, 3);
	snprintf(want, sizeof(want), "%s/esc: skipping symlink to '../outside': it leads "
		 "outside %s (--safe-links)", f->out, f->out);
	{
		int found = 0;

		for (unsigned i = 0; i < f->nmsgs; i++)
			found |= !strcmp(f->msgs[i], want);
		if (!found)
			fail_msg("no report naming esc; first: %s", f->msgs[0]);
	}
	for (const char *const *n = (const char *const[]){ "esc", "abs", "chain", NULL }; *n;
	     n++) {
		pathf(p, sizeof(p), f->out, *n);
		assert_int_equal(lstat(p, &s), -1);
	}
	pathf(p, sizeof(p), f->out, "dot");
	assert_int_equal(lstat(p, &s), 0);
	compare(f); /* the rest is extracted */
}

/* By default every symlink is restored as it is, absolute and '..' ones too. */
static void test_links_verbatim(void **state)
{
	struct fixture *f = *state;
	struct cairn_extract_opts o;
	char p[256], t[64];
	ssize_t n;

	build(f, escaping, 4);
	opts_for(f, &o);
	assert_int_equal(cairn_extract_to_dir(f->img_obj, "/", f->out, &o, NULL), 0);
	assert_int_equal(f->nmsgs, 0);
	for (size_t i = 0; i < 4; i++) {
		pathf(p, sizeof(p), f->out, escaping[2 * i] + 1);
		n = readlink(p, t, sizeof(t));
		assert_int_equal(n, (ssize_t)strlen(escaping[2 * i + 1]));
		assert_memory_equal(t, escaping[2 * i + 1], (size_t)n);
	}
	compare(f);
}

/* Extracting into an existing directory (think /tmp or ~) keeps its mode and
 * times, and merges into existing subdirectories without touching what they
 * hold or their attributes; overwrite_dirs gives both the image's. */
static void test_existing_dirs_merged(void **state)
{
	struct fixture *f = *state;
	struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	struct cairn_extract_opts o;
	char p[256], a[256];
	struct timespec root_t[2] = { { 1234567890, 0 }, { 1234567890, 0 } };
	struct stat s;

	assert_int_equal(utimensat(AT_FDCWD, f->src, root_t, 0), 0);
	build(f, NULL, 0);
	assert_int_equal(mkdir(f->out, 0700), 0);
	assert_int_equal(chmod(f->out, 01777), 0);
	pathf(p, sizeof(p), f->out, "dir");
	assert_int_equal(mkdir(p, 0700), 0);
	pathf(p, sizeof(p), f->out, "dir/mine");
	close(open(p, O_WRONLY | O_CREAT | O_EXCL, 0600));
	pathf(p, sizeof(p), f->out, "dir");
	assert_int_equal(utimensat(AT_FDCWD, p, old, 0), 0);
	assert_int_equal(utimensat(AT_FDCWD, f->out, old, 0), 0);
	opts_for(f, &o);
	assert_int_equal(cairn_extract_to_dir(f->img_obj, "/", f->out, &o, NULL), 0);
	assert_int_equal(f->nmsgs, 0);
	assert_int_equal(lstat(f->out, &s), 0);
	/* The mode stays; the mtime is what adding entries made it, not the root's. */
	assert_int_equal(s.st_mode & 07777, 01777);
	assert_int_not_equal(s.st_mtim.tv_sec, 1234567890);
	pathf(p, sizeof(p), f->out, "dir");
	assert_int_equal(lstat(p, &s), 0);
	assert_int_equal(s.st_mode & 07777, 0700);
	assert_int_not_equal(s.st_mtim.tv_sec, 1500000000); /* make_tree's time of src/dir */
	pathf(p, sizeof(p), f->out, "dir/mine");
	assert_int_equal(access(p, F_OK), 0);
	pathf(p, sizeof(p), f->out, "dir/nested");
	pathf(a, sizeof(a), f->src, "dir/nested");
	same_file(a, p);

	/* Again with overwrite_dirs: the directories take the image's attributes
	 * (the files exist, so each is a problem, overwritten none). */
	opts_for(f, &o);
	o.overwrite_dirs = 1;
	assert_int_equal(cairn_extract_to_dir(f->img_obj, "/", f->out, &o, NULL), -EEXIST);
	same_attrs(f->src, f->out);
	pathf(p, sizeof(p), f->out, "dir");
	pathf(a, sizeof(a), f->src, "dir");
	same_attrs(a, p);
}

/* An existing non-directory where the image has a directory (a symlink, say)
 * is not entered: nothing lands where it points. */
static void test_existing_symlink_not_entered(void **state)
{
	struct fixture *f = *state;
	struct cairn_extract_opts o;
	char p[256], want[512];

	build(f, NULL, 0);
	assert_int_equal(mkdir(f->out, 0700), 0);
	pathf(p, sizeof(p), f->root, "elsewhere");
	assert_int_equal(mkdir(p, 0700), 0);
	pathf(p, sizeof(p), f->out, "dir");
	assert_int_equal(symlink("../elsewhere", p), 0);
	opts_for(f, &o);
	assert_int_equal(cairn_extract_to_dir(f->img_obj, "/", f->out, &o, NULL), -ENOTDIR);
	snprintf(want, sizeof(want), "%s/dir: exists and is not a directory", f->out);
	assert_string_equal(f->msgs[0], want);
	pathf(p, sizeof(p), f->root, "elsewhere/nested");
	assert_int_equal(access(p, F_OK), -1);
}

/* A subtree into an open descriptor: its boundary is the subtree, so with
 * safe_links dir/up ("../hello", fine in the whole image) is skipped there. */
static void test_subtree_into_fd(void **state)
{
	struct fixture *f = *state;
	struct cairn_extract_opts o;
	struct cairn_extract_stats st;
	char p[256], a[256];
	int fd;

	build(f, NULL, 0);
	assert_int_equal(mkdir(f->out, 0700), 0);
	fd = open(f->out, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	opts_for(f, &o);
	o.target_name = "T";
	o.safe_links = 1;
	o.overwrite_dirs = 1; /* the target exists: only so does it take /dir's attributes */
	assert_int_equal(cairn_extract(f->img_obj, "/dir", fd, &o, &st), -EXDEV);
	assert_int_equal(fcntl(fd, F_GETFD), 0); /* still open: the caller's */
	close(fd);
	assert_int_equal(f->nmsgs, 1);
	assert_string_equal(f->msgs[0], "T/up: skipping symlink to '../hello': it leads "
			    "outside T (--safe-links)");
	pathf(p, sizeof(p), f->out, "nested");
	pathf(a, sizeof(a), f->src, "dir/nested");
	same_file(a, p);
	pathf(p, sizeof(p), f->out, "rel");
	assert_int_equal(access(p, R_OK), 0); /* sub/../nested stays inside */
	pathf(a, sizeof(a), f->src, "dir");
	same_attrs(a, f->out); /* the subtree's attributes went to the target */
	assert_int_equal(st.dirs, 1);
}

static void test_errors_named(void **state)
{
	struct fixture *f = *state;
	struct cairn_extract_opts o;
	struct cairn_extract_stats st;
	char want[512];

	build(f, NULL, 0);
	opts_for(f, &o);
	assert_int_equal(cairn_extract_to_dir(f->img_obj, "/nope", f->out, &o, &st), -ENOENT);
	assert_int_equal(f->nmsgs, 1);
	assert_string_equal(f->msgs[0], "IMG: /nope: No such file or directory");
	opts_for(f, &o);
	assert_int_equal(cairn_extract_to_dir(f->img_obj, "/hello", f->out, &o, NULL), -ENOTDIR);
	assert_string_equal(f->msgs[0], "IMG: /hello: Not a directory");

	/* The target is a file: nothing is created. */
	opts_for(f, &o);
	assert_int_equal(cairn_extract_to_dir(f->img_obj, "/", f->img, &o, NULL), -ENOTDIR);
	snprintf(want, sizeof(want), "%s: Not a directory", f->img);
	assert_string_equal(f->msgs[0], want);

	/* A second extract into the same place overwrites nothing and names each
	 * file; the subdirectory is merged into, no problem. */
	assert_int_equal(cairn_extract_to_dir(f->img_obj, "/dir", f->out, NULL, NULL), 0);
	opts_for(f, &o);
	assert_int_equal(cairn_extract_to_dir(f->img_obj, "/dir", f->out, &o, &st), -EEXIST);
	assert_int_equal(st.problems, 6); /* every entry but sub */
	snprintf(want, sizeof(want), "%s/fifo: File exists", f->out);
	assert_string_equal(f->msgs[0], want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_safe_links_skip_escaping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_links_verbatim, setup, teardown),
		cmocka_unit_test_setup_teardown(test_existing_dirs_merged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_existing_symlink_not_entered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_subtree_into_fd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors_named, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
