/* SPDX-License-Identifier: MIT */
/*
 * mkfs end to end, without the reader library: build a host tree with every
 * file type, write an image, then check it with a small independent parser of
 * format.h (hashes, checksums, sorted directories, contents, attributes) and
 * compare it with the host tree. Also reproducibility, --order, excludes,
 * manifests and error paths.
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
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <xxhash.h>
#include "format/disk.h" /* on-disk structures (private) */
#include <cairn/cache.h>
#include <cairn/image.h>
#include <cairn/mkfs.h>
#include "util/tests/open_image.h"

/* ---- host tree helpers ---- */

static char g_root[256];

static void pathf(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	int k = snprintf(buf, n, "%s/", g_root);
	va_start(ap, fmt);
	vsnprintf(buf + k, n - (size_t)k, fmt, ap);
	va_end(ap);
}

static void put_file(const char *rel, const void *data, size_t len, mode_t mode)
{
	char p[1024];
	pathf(p, sizeof(p), "%s", rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	fchmod(fd, mode);
	close(fd);
}

static void rm_rf(const char *p)
{
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p);
	assert_int_equal(system(cmd), 0);
}

/* ---- a tiny independent image parser ---- */

struct img {
	uint8_t *p;
	size_t len;
	struct cairn_disk_super s;
};

static void img_load(struct img *im, const char *path)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	im->len = (size_t)st.st_size;
	im->p = malloc(im->len);
	assert_non_null(im->p);
	assert_int_equal(pread(fd, im->p, im->len, 0), (ssize_t)im->len);
	close(fd);
	memcpy(&im->s, im->p, sizeof(im->s));
}

static void img_check_super(struct img *im)
{
	struct cairn_disk_super s = im->s;
	uint64_t h = s.super_hash;

	assert_memory_equal(s.magic, CAIRN_MAGIC_BYTES, 8);
	assert_int_equal(s.version_major, CAIRN_FORMAT_VERSION_MAJOR);
	assert_int_equal(s.block_size, CAIRN_BLOCK_SIZE);
	assert_int_equal(s.inode_size, CAIRN_INODE_SIZE);
	s.super_hash = 0;
	assert_true(XXH3_64bits(&s, sizeof(s)) == h);
	assert_true(s.image_size == im->len);
	/* Block 0 is zero but for the verity record (docs/FORMAT.md "Verification"). */
	for (size_t i = CAIRN_SUPER_SIZE; i < CAIRN_BLOCK_SIZE; i++)
		if (!(s.compat & CAIRN_COMPAT_VERITY) || i < CAIRN_VERITY_SUPER_OFF ||
		    i >= CAIRN_VERITY_SUPER_OFF + sizeof(struct cairn_disk_verity_super))
			assert_int_equal(im->p[i], 0);
	assert_true(s.meta_off % 4096 == 0 && s.meta_len % 4096 == 0);
	assert_true(s.data_off % 4096 == 0 && s.image_size % 4096 == 0);
	assert_true(s.data_off + s.data_len == s.image_size);
	assert_true(s.csum_off == s.meta_off + s.meta_len);
	assert_true(s.csum_off + s.meta_len / 4096 * 8 <= s.data_off);
	uint64_t nb = s.meta_len / 4096;
	const uint64_t *cs = (const uint64_t *)(im->p + s.csum_off);
	for (uint64_t b = 0; b < nb; b++)
		assert_true(cs[b] == XXH3_64bits(im->p + s.meta_off + b * 4096, 4096));
	assert_true(s.csum_table_hash == XXH3_64bits(cs, nb * 8));
	assert_true(s.inode_off >= s.meta_off &&
		    s.inode_off + s.inode_count * 128 <= s.meta_off + s.meta_len);
	assert_true(s.blob_off + s.blob_len <= s.meta_off + s.meta_len);
	assert_true(s.root_ino == CAIRN_ROOT_INO);
	assert_int_equal(s.incompat & ~(uint32_t)CAIRN_INCOMPAT_KNOWN, 0);
}

static const struct cairn_disk_inode *img_inode(struct img *im, uint64_t ino)
{
	assert_true(ino > 0 && ino < im->s.inode_count);
	return (const void *)(im->p + im->s.inode_off + ino * CAIRN_INODE_SIZE);
}

static const uint8_t *blob(struct img *im, uint64_t off, uint64_t len)
{
	assert_true(off + len <= im->s.blob_len);
	return im->p + im->s.blob_off + off;
}

/* The logical content of a regular file (malloc'd). */
static uint8_t *img_file(struct img *im, const struct cairn_disk_inode *d)
{
	uint8_t *b = calloc(1, d->size + 1);
	assert_non_null(b);
	if (d->flags & CAIRN_IF_INLINE) {
		assert_true(d->size <= CAIRN_INLINE_MAX);
		memcpy(b, blob(im, d->data_ref, d->size), d->size);
	} else if (d->flags & CAIRN_IF_EXTENTS) {
		assert_true(im->s.incompat & CAIRN_INCOMPAT_EXTENTS);
		uint64_t prev_end = 0;
		for (uint64_t i = 0; i < d->data_count; i++) {
			assert_true(d->data_ref + i < im->s.extent_count);
			const struct cairn_disk_extent *e =
				(const void *)(im->p + im->s.extent_off +
					       (d->data_ref + i) * CAIRN_EXTENT_SIZE);
			assert_true(e->file_off >= prev_end);
			assert_true(e->file_off + e->len <= d->size);
			assert_true(e->disk_off % 4096 == 0 && e->disk_off >= im->s.data_off);
			assert_true(e->disk_off + e->len <= im->s.image_size);
			memcpy(b + e->file_off, im->p + e->disk_off, e->len);
			prev_end = e->file_off + e->len;
		}
	} else if (d->size) {
		assert_true(d->data_ref % 4096 == 0 && d->data_ref >= im->s.data_off);
		assert_true(d->data_ref + d->size <= im->s.image_size);
		memcpy(b, im->p + d->data_ref, d->size);
	}
	if (im->s.compat & CAIRN_COMPAT_FILE_HASH)
		assert_true(d->content_hash == XXH3_64bits(b, d->size));
	return b;
}

static uint64_t g_checked;

/* Compare image directory `ino` with host directory `host`, recursively. */
static void compare_dir(struct img *im, uint64_t ino, const char *host)
{
	const struct cairn_disk_inode *d = img_inode(im, ino);
	assert_true(S_ISDIR(d->mode));
	char prev[256] = "";
	size_t prev_len = 0;
	uint64_t subdirs = 0;

	for (uint64_t i = 0; i < d->data_count; i++) {
		assert_true(d->data_ref + i < im->s.dirent_count);
		const struct cairn_disk_dirent *e =
			(const void *)(im->p + im->s.dirent_off + (d->data_ref + i) * 16);
		char name[256], hp[4096];
		memcpy(name, blob(im, e->name_ref, e->name_len), e->name_len);
		name[e->name_len] = '\0';
		/* sorted: memcmp over the shorter, then shorter first */
		if (i) {
			size_t n = prev_len < e->name_len ? prev_len : e->name_len;
			int c = memcmp(prev, name, n);
			assert_true(c < 0 || (c == 0 && prev_len < e->name_len));
		}
		memcpy(prev, name, e->name_len);
		prev_len = e->name_len;
		snprintf(hp, sizeof(hp), "%s/%s", host, name);
		struct stat st;
		assert_int_equal(lstat(hp, &st), 0);
		const struct cairn_disk_inode *c = img_inode(im, e->ino);
		assert_int_equal(c->mode, st.st_mode);
		assert_int_equal(c->uid, st.st_uid);
		assert_int_equal(c->gid, st.st_gid);
		assert_true(c->mtime_sec == st.st_mtim.tv_sec);
		assert_int_equal(c->mtime_nsec, st.st_mtim.tv_nsec);
		assert_true(c->alloc_blocks == (uint64_t)st.st_blocks);
		if (S_ISDIR(st.st_mode)) {
			subdirs++;
			assert_int_equal(c->parent, ino);
			compare_dir(im, e->ino, hp);
		} else if (S_ISREG(st.st_mode)) {
			assert_true(c->size == (uint64_t)st.st_size);
			assert_int_equal(c->nlink, st.st_nlink);
			uint8_t *b = img_file(im, c);
			uint8_t *h = calloc(1, (size_t)st.st_size + 1);
			int fd = open(hp, O_RDONLY);
			assert_true(fd >= 0);
			assert_int_equal(pread(fd, h, (size_t)st.st_size, 0), st.st_size);
			close(fd);
			assert_memory_equal(b, h, (size_t)st.st_size);
			free(b);
			free(h);
		} else if (S_ISLNK(st.st_mode)) {
			char t[4096];
			ssize_t n = readlink(hp, t, sizeof(t));
			assert_true(n > 0 && (uint64_t)n == c->size);
			assert_memory_equal(blob(im, c->data_ref, c->size), t, (size_t)n);
		} else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
			assert_true(c->data_ref == st.st_rdev);
		}
		/* xattrs */
		char names[4096];
		ssize_t nl = llistxattr(hp, names, sizeof(names));
		uint32_t count = 0;
		for (ssize_t k = 0; nl > 0 && k < nl; k += (ssize_t)strlen(names + k) + 1)
			count++;
		assert_int_equal(c->xattr_count, count);
		for (uint32_t k = 0; k < c->xattr_count; k++) {
			const struct cairn_disk_xattr *x =
				(const void *)(im->p + im->s.xattr_off + (c->xattr_ref + k) * 24);
			char xn[256], xv[512];
			memcpy(xn, blob(im, x->name_ref, x->name_len), x->name_len);
			xn[x->name_len] = '\0';
			ssize_t vl = lgetxattr(hp, xn, xv, sizeof(xv));
			assert_int_equal(vl, x->value_len);
			assert_memory_equal(blob(im, x->value_ref, x->value_len), xv, (size_t)vl);
		}
		g_checked++;
	}
	assert_int_equal(d->nlink, 2 + subdirs);
}

/* ---- fixtures ---- */

static int have_xattrs;

static void make_tree(void)
{
	char p[1024], q[1024];
	strcpy(g_root, "/tmp/cairn-mkfs-test.XXXXXX");
	assert_non_null(mkdtemp(g_root));
	pathf(p, sizeof(p), "src");
	assert_int_equal(mkdir(p, 0755), 0);
	put_file("src/empty", "", 0, 0644);
	put_file("src/small", "hello\n", 6, 0644);
	put_file("src/small-copy", "hello\n", 6, 0600);
	char *big = malloc(3 << 20);
	for (size_t i = 0; i < (3u << 20); i++)
		big[i] = (char)(i * 7 + i / 4099);
	put_file("src/big", big, 3 << 20, 04755);
	put_file("src/big-copy", big, 3 << 20, 0644);
	big[100] ^= 1;
	put_file("src/big-other", big, 3 << 20, 0644);
	put_file("src/edge2048", big, 2048, 0644);
	put_file("src/edge2049", big, 2049, 0644);
	free(big);
	pathf(p, sizeof(p), "src/dir");
	mkdir(p, 01777);
	chmod(p, 01777);
	pathf(p, sizeof(p), "src/dir/sub");
	mkdir(p, 0700);
	put_file("src/dir/sub/deep", "deep", 4, 0644);
	pathf(p, sizeof(p), "src/emptydir");
	mkdir(p, 0755);
	pathf(p, sizeof(p), "src/dir/link-to-file");
	assert_int_equal(symlink("../small", p), 0);
	pathf(p, sizeof(p), "src/link-to-dir");
	assert_int_equal(symlink("dir/sub", p), 0);
	/* readlink updates a symlink's atime while atime <= ctime; put it ahead so
	 * that reading the links does not change them between two builds. */
	struct timespec ts[2] = { { 0, 0 }, { 0, UTIME_OMIT } };
	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec += 3600;
	pathf(p, sizeof(p), "src/dir/link-to-file");
	utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW);
	pathf(p, sizeof(p), "src/link-to-dir");
	utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW);
	pathf(p, sizeof(p), "src/big");
	pathf(q, sizeof(q), "src/dir/hardlink");
	assert_int_equal(link(p, q), 0);
	pathf(p, sizeof(p), "src/fifo");
	assert_int_equal(mkfifo(p, 0640), 0);
	pathf(p, sizeof(p), "src/chardev");
	mknod(p, S_IFCHR | 0600, makedev(1, 3)); /* needs root; absent otherwise */
	pathf(p, sizeof(p), "src/name with spaces \xc3\xa9\n");
	put_file("src/name with spaces \xc3\xa9\n", "x", 1, 0644);
	char longname[256];
	memset(longname, 'n', 255);
	longname[255] = '\0';
	pathf(p, sizeof(p), "src/%s", longname);
	put_file(p + strlen(g_root) + 1, "long", 4, 0644);
	/* sparse: 64 MiB with two data islands */
	pathf(p, sizeof(p), "src/sparse");
	int fd = open(p, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 64 << 20), 0);
	assert_int_equal(pwrite(fd, "island-one", 10, 1 << 20), 10);
	assert_int_equal(pwrite(fd, "island-two", 10, 40 << 20), 10);
	close(fd);
	pathf(p, sizeof(p), "src/small");
	have_xattrs = !setxattr(p, "user.mime", "text/plain", 10, 0);
	if (have_xattrs) {
		setxattr(p, "user.a", "", 0, 0);
		pathf(p, sizeof(p), "src/small-copy");
		setxattr(p, "user.mime", "text/plain", 10, 0);
		setxattr(p, "user.a", "", 0, 0);
		pathf(p, sizeof(p), "src/dir");
		setxattr(p, "user.dir", "yes", 3, 0);
	}
}

static int setup(void **state)
{
	make_tree();
	return 0;
}

static int teardown(void **state)
{
	rm_rf(g_root);
	return 0;
}

static int build(const char *out, struct cairn_mkfs_opts *o, const char *src)
{
	struct cairn_mkfs_opts def;
	struct cairn_mkfs *m;
	char s[1024], img[1024];
	if (!o) {
		cairn_mkfs_opts_init(&def);
		def.plain_meta = 1; /* the checks read the raw tables */
		o = &def;
	}
	pathf(s, sizeof(s), "%s", src);
	pathf(img, sizeof(img), "%s", out);
	assert_int_equal(cairn_mkfs_new(o, &m), 0);
	int rc = cairn_mkfs_add_tree(m, "/", s);
	if (!rc)
		rc = cairn_mkfs_write_path(m, img);
	if (rc)
		print_message("mkfs: %s\n", cairn_mkfs_error(m));
	cairn_mkfs_free(m);
	return rc;
}

/* ---- tests ---- */

static void test_roundtrip(void **state)
{
	char img[1024], src[1024];
	struct img im;

	assert_int_equal(build("a.cairn", NULL, "src"), 0);
	pathf(img, sizeof(img), "a.cairn");
	pathf(src, sizeof(src), "src");
	img_load(&im, img);
	img_check_super(&im);
	g_checked = 0;
	compare_dir(&im, CAIRN_ROOT_INO, src);
	assert_true(g_checked >= 20);
	assert_true(im.s.incompat & CAIRN_INCOMPAT_EXTENTS);
	assert_true(im.s.compat & CAIRN_COMPAT_FILE_HASH);
	/* dedup: big and big-copy share data, big-other does not; sparse stays small */
	assert_true(im.s.image_size < (16u << 20));
	const struct cairn_disk_inode *root = img_inode(&im, 1);
	uint64_t big_ref[2] = { 1, 2 }, x_ref[2] = { 1, 2 };
	for (uint64_t i = 0; i < root->data_count; i++) {
		const struct cairn_disk_dirent *e =
			(const void *)(im.p + im.s.dirent_off + (root->data_ref + i) * 16);
		const char *n = (const char *)blob(&im, e->name_ref, e->name_len);
		const struct cairn_disk_inode *d = img_inode(&im, e->ino);
		if (e->name_len == 3 && !memcmp(n, "big", 3))
			big_ref[0] = d->data_ref;
		if (e->name_len == 8 && !memcmp(n, "big-copy", 8))
			big_ref[1] = d->data_ref;
		if (e->name_len == 5 && !memcmp(n, "small", 5))
			x_ref[0] = d->xattr_ref;
		if (e->name_len == 10 && !memcmp(n, "small-copy", 10))
			x_ref[1] = d->xattr_ref;
	}
	assert_true(big_ref[0] == big_ref[1]);
	if (have_xattrs)
		assert_true(x_ref[0] == x_ref[1]); /* identical xattr sets share entries */
	free(im.p);
}

static void test_reproducible(void **state)
{
	char a[1024], b[1024];
	struct img x, y;

	assert_int_equal(build("r1.cairn", NULL, "src"), 0);
	assert_int_equal(build("r2.cairn", NULL, "src"), 0);
	pathf(a, sizeof(a), "r1.cairn");
	pathf(b, sizeof(b), "r2.cairn");
	img_load(&x, a);
	img_load(&y, b);
	assert_int_equal(x.len, y.len);
	assert_memory_equal(x.p, y.p, x.len);
	free(x.p);
	free(y.p);
}

static void test_options(void **state)
{
	struct cairn_mkfs_opts o;
	const char *ex[] = { "*-copy", "/dir/sub" };
	char order[1024], img[1024];
	struct img im;

	pathf(order, sizeof(order), "order.txt");
	FILE *f = fopen(order, "w");
	/* A range record covering the whole file keeps the file contiguous. */
	fprintf(f, "# trace\n/big-other 0 3145728\n/edge2049\n/nonexistent\n\n/big\n");
	fclose(f);
	cairn_mkfs_opts_init(&o);
	o.plain_meta = 1; /* the checks read the raw tables */
	o.all_root = 1;
	o.gid = 7;
	o.set_epoch = 1;
	o.epoch = 1000;
	o.excludes = ex;
	o.exclude_count = 2;
	o.order_file = order;
	assert_int_equal(build("o.cairn", &o, "src"), 0);
	pathf(img, sizeof(img), "o.cairn");
	img_load(&im, img);
	img_check_super(&im);
	assert_true(im.s.build_time == 1000);
	assert_true(im.s.compat & CAIRN_COMPAT_HOT_PREFIX);
	assert_true(im.s.hot_off == im.s.data_off);
	assert_true(im.s.hot_len == (3u << 20) + 4096 + (3u << 20));
	uint64_t want_off[3] = { im.s.data_off, im.s.data_off + (3u << 20),
				 im.s.data_off + (3u << 20) + 4096 };
	const char *want[3] = { "big-other", "edge2049", "big" };
	unsigned found = 0;
	for (uint64_t ino = 1; ino < im.s.inode_count; ino++) {
		const struct cairn_disk_inode *d = img_inode(&im, ino);
		assert_int_equal(d->uid, 0);
		assert_int_equal(d->gid, 7);
		assert_true(d->mtime_sec <= 1000 && d->atime_sec <= 1000 && d->ctime_sec <= 1000);
	}
	const struct cairn_disk_inode *root = img_inode(&im, 1);
	for (uint64_t i = 0; i < root->data_count; i++) {
		const struct cairn_disk_dirent *e =
			(const void *)(im.p + im.s.dirent_off + (root->data_ref + i) * 16);
		const char *n = (const char *)blob(&im, e->name_ref, e->name_len);
		assert_false(e->name_len == 8 && !memcmp(n, "big-copy", 8));
		for (int k = 0; k < 3; k++)
			if (e->name_len == strlen(want[k]) && !memcmp(n, want[k], e->name_len)) {
				assert_true(img_inode(&im, e->ino)->data_ref == want_off[k]);
				found++;
			}
		if (e->name_len == 3 && !memcmp(n, "dir", 3)) {
			const struct cairn_disk_inode *d = img_inode(&im, e->ino);
			for (uint64_t j = 0; j < d->data_count; j++) {
				const struct cairn_disk_dirent *c =
					(const void *)(im.p + im.s.dirent_off + (d->data_ref + j) * 16);
				assert_false(c->name_len == 3 &&
					     !memcmp(blob(&im, c->name_ref, 3), "sub", 3));
			}
		}
	}
	assert_int_equal(found, 3);
	free(im.p);
}

struct hot_seen {
	uint64_t file_off[8], dev_off[8], len[8];
	unsigned n;
};

static int collect_hot(void *ctx, uint64_t file_off, uint64_t dev_off, uint64_t len)
{
	struct hot_seen *h = ctx;

	assert_true(h->n < 8);
	h->file_off[h->n] = file_off;
	h->dev_off[h->n] = dev_off;
	h->len[h->n++] = len;
	return 0;
}

static void hot_of(struct cairn_image *img, const char *name, struct hot_seen *h)
{
	cairn_ino_t ino;

	memset(h, 0, sizeof(*h));
	assert_int_equal(cairn_image_lookup(img, cairn_image_root(img), name, strlen(name), &ino),
			 0);
	assert_int_equal(cairn_image_hot_ranges(img, ino, collect_hot, h), 0);
}

/* cairn_image_hot_ranges() gives each file's hot ranges in prefix (trace) order,
 * with their device offsets; nothing for files outside the prefix. */
static void test_hot_ranges(void **state)
{
	struct cairn_mkfs_opts o;
	struct cairn_image_info info;
	struct cairn_image *img;
	struct hot_seen h;
	char order[1024], path[1024];

	pathf(order, sizeof(order), "hot.txt");
	FILE *f = fopen(order, "w");
	fprintf(f, "/big-other 1048576 65536\n/edge2049\n/big-other 0 4096\n");
	fclose(f);
	cairn_mkfs_opts_init(&o);
	o.plain_meta = 1; /* the checks read the raw tables */
	o.order_file = order;
	assert_int_equal(build("hot.cairn", &o, "src"), 0);
	pathf(path, sizeof(path), "hot.cairn");
	assert_int_equal(t_open_image(path, &img), 0);
	cairn_image_get_info(img, &info);

	hot_of(img, "big-other", &h);
	assert_int_equal(h.n, 2);
	assert_true(h.file_off[0] == 1048576 && h.len[0] == 65536);
	assert_true(h.dev_off[0] == info.hot_off);
	assert_true(h.file_off[1] == 0 && h.len[1] == 4096);
	assert_true(h.dev_off[1] == info.hot_off + 65536 + 4096); /* after edge2049 */
	hot_of(img, "edge2049", &h);
	assert_int_equal(h.n, 1);
	assert_true(h.file_off[0] == 0 && h.len[0] == 2049 && h.dev_off[0] == info.hot_off + 65536);
	hot_of(img, "big", &h);
	assert_int_equal(h.n, 0);
	cairn_image_close(img);
}

/* The bytes a pinned read was lent, joined, and how many iovecs they came in. */
struct lent_copy {
	char buf[131072];
	size_t total;
	int iovcnt;
};

static int copy_lent(void *ctx, const struct iovec *iov, int iovcnt, size_t total)
{
	struct lent_copy *l = ctx;
	size_t at = 0;

	assert_true(total <= sizeof(l->buf));
	for (int i = 0; i < iovcnt; at += iov[i].iov_len, i++)
		memcpy(l->buf + at, iov[i].iov_base, iov[i].iov_len);
	assert_true(at == total);
	l->total = total;
	l->iovcnt = iovcnt;
	return 0;
}

/* An extent-mapped file (split by --order into a hot range and the rest) is
 * lent from the segment cache for a read inside one extent, right and counted
 * in lent_bytes; a read across two extents says copy. */
static void test_read_pinned_extents(void **state)
{
	static struct lent_copy l;
	static char want[131072];
	struct cairn_cache_stats st;
	struct cairn_mkfs_opts o;
	struct cairn_image *img;
	char order[1024], path[1024];
	cairn_ino_t ino;

	pathf(order, sizeof(order), "hotpin.txt");
	FILE *f = fopen(order, "w");
	fprintf(f, "/big-other 1048576 65536\n");
	fclose(f);
	cairn_mkfs_opts_init(&o);
	o.order_file = order;
	assert_int_equal(build("hotpin.cairn", &o, "src"), 0);
	pathf(path, sizeof(path), "hotpin.cairn");
	assert_int_equal(t_open_image(path, &img), 0);
	assert_int_equal(cairn_image_lookup(img, cairn_image_root(img), "big-other", 9, &ino), 0);

	/* The hot range, then a cold piece after it: each inside one extent. */
	const uint64_t offs[2] = { 1048576, 1048576 + 65536 + 8192 };
	for (int k = 0; k < 2; k++) {
		memset(&l, 0, sizeof(l));
		assert_int_equal(cairn_image_read(img, ino, want, 65536, offs[k]), 65536);
		assert_int_equal(cairn_image_read_pinned(img, ino, 65536, offs[k], copy_lent, &l), 0);
		assert_true(l.total == 65536 && l.iovcnt >= 1);
		assert_memory_equal(l.buf, want, 65536);
	}
	cairn_cache_get_stats(cairn_image_cache(img), &st);
	assert_true(st.lent_bytes == 2 * 65536);

	/* Across the hot range's end: two extents, copied. */
	memset(&l, 0, sizeof(l));
	assert_int_equal(cairn_image_read_pinned(img, ino, 8192, 1048576 + 65536 - 4096, copy_lent,
						 &l),
			 CAIRN_CACHE_COPY);
	assert_int_equal(l.total, 0);
	cairn_cache_get_stats(cairn_image_cache(img), &st);
	assert_true(st.lent_bytes == 2 * 65536);
	cairn_image_close(img);
}

static void test_manifest_build(void **state)
{
	char man[1024], img[1024];
	struct cairn_mkfs_opts o;
	struct cairn_mkfs *m;
	struct img im;

	pathf(man, sizeof(man), "m.manifest");
	FILE *f = fopen(man, "w");
	fprintf(f, "# test\n\n/usr/lib/**: src/dir/**\n/etc/hello: src/small\n"
		   "/lib -> usr/lib\n/lib/extra: src/big\n/bin/*: src/edge*\n");
	fclose(f);
	cairn_mkfs_opts_init(&o);
	o.plain_meta = 1; /* the checks read the raw tables */
	assert_int_equal(cairn_mkfs_new(&o, &m), 0);
	int rc = cairn_mkfs_add_manifest(m, man);
	if (rc)
		print_message("%s\n", cairn_mkfs_error(m));
	assert_int_equal(rc, 0);
	pathf(img, sizeof(img), "m.cairn");
	assert_int_equal(cairn_mkfs_write_path(m, img), 0);
	struct cairn_mkfs_stats st;
	cairn_mkfs_get_stats(m, &st);
	/* / usr lib(dir) sub deep link-to-file hardlink etc hello lib(link) extra bin 2 files */
	assert_int_equal(st.dirs, 6);
	assert_int_equal(st.symlinks, 2);
	cairn_mkfs_free(m);
	img_load(&im, img);
	img_check_super(&im);
	free(im.p);

	/* a symlink loop in the manifest is named */
	f = fopen(man, "w");
	fprintf(f, "/a -> b\n/b -> a\n/a/file: src/small\n");
	fclose(f);
	assert_int_equal(cairn_mkfs_new(&o, &m), 0);
	assert_int_equal(cairn_mkfs_add_manifest(m, man), -ELOOP);
	assert_non_null(strstr(cairn_mkfs_error(m), "/a/file"));
	assert_non_null(strstr(cairn_mkfs_error(m), ":3:"));
	cairn_mkfs_free(m);
}

static void test_errors(void **state)
{
	struct cairn_mkfs_opts o;
	struct cairn_mkfs *m;
	char p[1024], img[1024];

	cairn_mkfs_opts_init(&o);
	o.plain_meta = 1; /* the checks read the raw tables */
	assert_int_equal(cairn_mkfs_new(&o, &m), 0);
	pathf(p, sizeof(p), "does-not-exist");
	assert_int_equal(cairn_mkfs_add_tree(m, "/", p), -ENOENT);
	assert_non_null(strstr(cairn_mkfs_error(m), "does-not-exist"));
	char longname[300];
	memset(longname, 'x', 256);
	longname[0] = '/';
	longname[257] = '\0';
	longname[256] = 'x';
	assert_int_equal(cairn_mkfs_add_symlink(m, longname, "t"), -ENAMETOOLONG);
	cairn_mkfs_free(m);

	if (geteuid() != 0) { /* root reads everything */
		put_file("src/unreadable", "secret", 6, 0000);
		assert_int_not_equal(build("u.cairn", NULL, "src"), 0);
		pathf(p, sizeof(p), "src/unreadable");
		unlink(p);
	}
	/* nothing left behind at IMAGE when the output directory is missing */
	pathf(img, sizeof(img), "no/such/dir/x.cairn");
	assert_int_equal(cairn_mkfs_new(&o, &m), 0);
	pathf(p, sizeof(p), "src/dir");
	assert_int_equal(cairn_mkfs_add_tree(m, "/", p), 0);
	assert_int_not_equal(cairn_mkfs_write_path(m, img), 0);
	assert_int_not_equal(access(img, F_OK), 0);
	cairn_mkfs_free(m);
}

static void add_line(struct cairn_mkfs **m, const struct cairn_mkfs_opts *o, const char *text,
		     int want)
{
	char base[1024];

	pathf(base, sizeof(base), "%s", "");
	assert_int_equal(cairn_mkfs_new(o, m), 0);
	int rc = cairn_mkfs_add_manifest_text(*m, text, strlen(text), base, "M");
	if (rc != want)
		print_message("%s: %s\n", text, cairn_mkfs_error(*m));
	assert_int_equal(rc, want);
}

/* A glob matching nothing is an error (allow_empty_globs accepts it); a '..'
 * in an in-image path is refused and leaves no stray directory behind. */
static void test_manifest_rules(void **state)
{
	struct cairn_mkfs_opts o;
	struct cairn_mkfs_stats st;
	struct cairn_mkfs *m;
	char img[1024];

	cairn_mkfs_opts_init(&o);
	o.plain_meta = 1; /* the checks read the raw tables */
	add_line(&m, &o, "/bin/*: src/no-such-*.so\n", -ENOENT);
	assert_non_null(strstr(cairn_mkfs_error(m), "M:1: "));
	assert_non_null(strstr(cairn_mkfs_error(m), "src/no-such-*.so: the glob matches nothing"));
	cairn_mkfs_free(m);
	o.allow_empty_globs = 1;
	add_line(&m, &o, "/bin/*: src/no-such-*.so\n", 0);
	cairn_mkfs_free(m);
	o.allow_empty_globs = 0;

	pathf(img, sizeof(img), "dotdot.cairn");
	for (const char *const *t = (const char *const[]){ "/a/../b: src/small\n",
							   "/a/..: src/small\n",
							   "/x/../y -> t\n", "/../z/**: src/dir/**\n",
							   NULL };
	     *t; t++) {
		add_line(&m, &o, *t, -EINVAL);
		assert_non_null(strstr(cairn_mkfs_error(m), "M:1: "));
		assert_non_null(strstr(cairn_mkfs_error(m), "'..'") ||
				strstr(cairn_mkfs_error(m), "invalid in-image path"));
		assert_int_equal(cairn_mkfs_write_path(m, img), 0);
		cairn_mkfs_get_stats(m, &st);
		assert_int_equal(st.dirs, 1); /* the root alone: nothing stray */
		cairn_mkfs_free(m);
	}
	/* Names merely starting or ending in dots are names. */
	add_line(&m, &o, "/a../..b/...: src/small\n", 0);
	cairn_mkfs_free(m);
}

struct warns {
	char first[1024];
	unsigned n;
};

static void on_warn(void *ctx, const char *msg)
{
	struct warns *w = ctx;

	if (!w->n++)
		snprintf(w->first, sizeof(w->first), "%s", msg);
}

/* A file that grows between the scan and the data copy is stored at its
 * scanned size, with a warning naming it (tar's "file changed as we read it"). */
static void test_file_grew(void **state)
{
	static char data[256 << 10];
	struct cairn_mkfs_opts o;
	struct cairn_mkfs *m;
	struct warns w = { "", 0 };
	struct cairn_image *im;
	struct cairn_stat st;
	cairn_ino_t ino;
	char dir[1024], file[1024], img[1024];

	memset(data, 'g', sizeof(data));
	pathf(dir, sizeof(dir), "grow");
	assert_int_equal(mkdir(dir, 0755), 0);
	put_file("grow/file", data, sizeof(data), 0644);
	cairn_mkfs_opts_init(&o);
	o.plain_meta = 1; /* the checks read the raw tables */
	o.warn = on_warn;
	o.ctx = &w;
	assert_int_equal(cairn_mkfs_new(&o, &m), 0);
	assert_int_equal(cairn_mkfs_add_tree(m, "/", dir), 0);
	pathf(file, sizeof(file), "grow/file");
	FILE *f = fopen(file, "a");
	assert_non_null(f);
	fputs("more", f);
	fclose(f);
	pathf(img, sizeof(img), "grow.cairn");
	assert_int_equal(cairn_mkfs_write_path(m, img), 0);
	cairn_mkfs_free(m);
	assert_int_equal(w.n, 1);
	if (!strstr(w.first, "grow/file: file changed as we read it (grew from 262144 to "
		    "262148 bytes; the image holds the first 262144)"))
		fail_msg("warning: '%s'", w.first);
	assert_int_equal(t_open_image(img, &im), 0);
	assert_int_equal(cairn_image_resolve(im, "/file", 1, &ino), 0);
	assert_int_equal(cairn_image_stat(im, ino, &st), 0);
	assert_int_equal(st.size, sizeof(data));
	cairn_image_close(im);
}

/* Paths longer than PATH_MAX: the walk and the data copy still reach them. */
static void test_deep(void **state)
{
	char p[1024], img[1024];
	struct img im;

	pathf(p, sizeof(p), "deep");
	assert_int_equal(mkdir(p, 0755), 0);
	int fd = open(p, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	for (int i = 0; i < 250; i++) { /* 250 * 30 bytes > PATH_MAX */
		char name[64];
		snprintf(name, sizeof(name), "level-%03d-xxxxxxxxxxxxxxxxxxxx", i);
		assert_int_equal(mkdirat(fd, name, 0755), 0);
		int nfd = openat(fd, name, O_RDONLY | O_DIRECTORY);
		assert_true(nfd >= 0);
		close(fd);
		fd = nfd;
	}
	int f = openat(fd, "leaf", O_WRONLY | O_CREAT, 0644);
	char data[10000];
	memset(data, 'd', sizeof(data));
	assert_int_equal(write(f, data, sizeof(data)), (ssize_t)sizeof(data));
	close(f);
	assert_int_equal(symlinkat("leaf", fd, "link"), 0);
	close(fd);
	assert_int_equal(build("deep.cairn", NULL, "deep"), 0);
	pathf(img, sizeof(img), "deep.cairn");
	img_load(&im, img);
	img_check_super(&im);
	assert_true(im.s.inode_count == 1 + 1 + 250 + 2);
	/* the leaf's data: the one contiguous file */
	const struct cairn_disk_inode *leaf = NULL;
	for (uint64_t ino = 1; ino < im.s.inode_count; ino++)
		if (S_ISREG(img_inode(&im, ino)->mode))
			leaf = img_inode(&im, ino);
	assert_non_null(leaf);
	uint8_t *b = img_file(&im, leaf);
	assert_memory_equal(b, data, sizeof(data));
	free(b);
	free(im.p);
}

/* ---- parsers ---- */

struct collect {
	char out[2048];
};

static int collect_entry(void *ctx, const struct cairn_manifest_entry *e)
{
	struct collect *c = ctx;
	size_t n = strlen(c->out);
	snprintf(c->out + n, sizeof(c->out) - n, "%d|%s|%s|%s;", (int)e->kind, e->guest, e->host,
		 e->pattern ? e->pattern : "");
	return 0;
}

static void test_manifest_parse(void **state)
{
	struct collect c = { "" };
	char err[256];
	const char *text = "# comment\n\n  /a/b: host/b  \n/usr/lib/**: /usr/lib/**\r\n"
			   "/x -> ../y z\n/**: **\n/bin/*: build/*.so\n"
			   "/c:d: e";
	assert_int_equal(cairn_manifest_parse(text, strlen(text), collect_entry, &c, err,
					      sizeof(err)), 0);
	assert_string_equal(c.out, "0|/a/b|host/b|;1|/usr/lib|/usr/lib|;3|/x|../y z|;1|/|.|;"
				   "2|/bin|build|*.so;0|/c:d|e|;");
	const char *bad[] = {
		"relative: x\n", "/a\n", "/a: \n", "/a/**: b\n", "/a: b/**\n",
		"/a/*: b\n", "/a: b/*.so\n", "/a/**/c: b/**\n", "/a: b*/c\n", "/x ->\n", "/r: rel/**x\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c.out[0] = '\0';
		assert_int_equal(cairn_manifest_parse(bad[i], strlen(bad[i]), collect_entry, &c,
						      err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "line 1"));
	}
	/* NUL bytes and a missing final newline are handled */
	assert_int_equal(cairn_manifest_parse("/a: b\0x", 7, collect_entry, &c, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(cairn_manifest_parse("", 0, collect_entry, &c, err, sizeof(err)), 0);
}

static int collect_order(void *ctx, const struct cairn_order_record *r)
{
	struct collect *c = ctx;
	size_t n = strlen(c->out);
	snprintf(c->out + n, sizeof(c->out) - n, "%u:%.*s", r->line, (int)r->path_len, r->path);
	n = strlen(c->out);
	if (r->has_range)
		snprintf(c->out + n, sizeof(c->out) - n, "@%llu+%llu",
			 (unsigned long long)r->offset, (unsigned long long)r->length);
	n = strlen(c->out);
	snprintf(c->out + n, sizeof(c->out) - n, ";");
	return 0;
}

static void test_order_parse(void **state)
{
	struct collect c = { "" };
	const char *text = "/a\n# c\n/b 0 4096\n\n/with space 12 34\n/c 5\n  /d  \n/e 1 2 3";
	assert_int_equal(cairn_order_parse(text, strlen(text), collect_order, &c), 0);
	assert_string_equal(c.out, "1:/a;3:/b@0+4096;5:/with space@12+34;6:/c 5;7:/d;"
				   "8:/e 1@2+3;");
}

/* Names with a newline, backslashes, control bytes, leading '#' and spaces at
 * either end: written by cairn_order_write_record() (the trace), read back
 * the same by cairn_order_parse(), one record per line. */
static void test_order_escape_roundtrip(void **state)
{
	static const char *const names[] = { "/a\nb", "/new\nline", "/back\\slash\\n",
					     "/tab\tand\001ctl\177", "/trailing space ",
					     "# not a comment", " /lead", "/plain name 1 2",
					     "/odd \\x \\0 \\9" };
	size_t n = sizeof(names) / sizeof(names[0]);
	struct collect c = { "" }, want = { "" };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(cairn_order_write_record(f, names[i], 4096 * i, 4096), 0);
	fclose(f);
	size_t lines = 0;
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	assert_int_equal(lines, n);
	assert_int_equal(cairn_order_parse(text, len, collect_order, &c), 0);
	for (size_t i = 0; i < n; i++) {
		size_t k = strlen(want.out);
		snprintf(want.out + k, sizeof(want.out) - k, "%zu:%s@%zu+4096;", i + 1, names[i],
			 4096 * i);
	}
	assert_string_equal(c.out, want.out);
	/* Hand-written files: a backslash that starts no escape stays itself. */
	c.out[0] = '\0';
	const char *hand = "/C:\\dir\\x\\400\n/a\\\\b\\012c\n";
	assert_int_equal(cairn_order_parse(hand, strlen(hand), collect_order, &c), 0);
	assert_string_equal(c.out, "1:/C:\\dir\\x\\400;2:/a\\b\nc;");
	free(text);
}

static int collect_pattern(void *ctx, const char *pat, size_t len, unsigned line)
{
	struct collect *c = ctx;
	size_t n = strlen(c->out);

	snprintf(c->out + n, sizeof(c->out) - n, "%u:%.*s;", line, (int)len, pat);
	return line == 99 ? -ECANCELED : 0;
}

/* --no-compress-from: one pattern per line, trimmed; comments and blank lines
 * skipped; a callback's error stops the parse. */
static void test_pattern_list_parse(void **state)
{
	struct collect c = { "" };
	const char *text = "*.zip\n# comment\n\n  /usr/*.jar \t\r\n  # indented comment\n"
			   "with space*\n*.gz";
	assert_int_equal(cairn_pattern_list_parse(text, strlen(text), collect_pattern, &c), 0);
	assert_string_equal(c.out, "1:*.zip;4:/usr/*.jar;6:with space*;7:*.gz;");
	c.out[0] = '\0';
	assert_int_equal(cairn_pattern_list_parse("", 0, collect_pattern, &c), 0);
	assert_int_equal(cairn_pattern_list_parse("#\n \n", 4, collect_pattern, &c), 0);
	assert_string_equal(c.out, "");
	char many[300] = "";
	for (int i = 0; i < 120; i++)
		strcat(many, "x\n");
	assert_int_equal(cairn_pattern_list_parse(many, strlen(many), collect_pattern, &c),
			 -ECANCELED);
}

static void test_exclude(void **state)
{
	const char *p1[] = { "*.o" };
	const char *p2[] = { "/usr/*" };
	const char *p3[] = { "usr/lib" };
	assert_true(cairn_mkfs_path_excluded("/a/b/x.o", p1, 1));
	assert_false(cairn_mkfs_path_excluded("/a/b/x.c", p1, 1));
	assert_true(cairn_mkfs_path_excluded("/usr/lib/x", p2, 1));
	assert_false(cairn_mkfs_path_excluded("/usr", p2, 1));
	assert_true(cairn_mkfs_path_excluded("/usr/lib", p3, 1));
	assert_false(cairn_mkfs_path_excluded("/a/usr/lib", p3, 1));
	assert_false(cairn_mkfs_path_excluded("/x", NULL, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_manifest_parse),
		cmocka_unit_test(test_order_parse),
		cmocka_unit_test(test_order_escape_roundtrip),
		cmocka_unit_test(test_pattern_list_parse),
		cmocka_unit_test(test_exclude),
		cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reproducible, setup, teardown),
		cmocka_unit_test_setup_teardown(test_options, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hot_ranges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_pinned_extents, setup, teardown),
		cmocka_unit_test_setup_teardown(test_manifest_build, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deep, setup, teardown),
		cmocka_unit_test_setup_teardown(test_manifest_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_grew, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
