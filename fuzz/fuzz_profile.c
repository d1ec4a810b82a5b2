/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target over learned profiles: the input is the text of a profile
 * or trace (what -o prefetch=, -o learn=, IMAGE.profile and DIR/KEY.profile
 * hold), loaded against two images the target builds once at start (plain, and
 * zstd-compressed in 16 KiB chunks with an --order hot prefix; each with small,
 * big, sparse and empty files, a directory, a symlink, a hard link). Per input
 * and image: the text is loaded (from memory, then again from a file, which
 * joins it to itself), every file's hot ranges are listed, the profile's
 * prefetch runs, and the profile is saved and loaded into a fresh open of the
 * image. Checked besides memory safety: the counts add up (records split into
 * taken, missing, past the end, dropped), the bounds hold, ranges of a file are
 * inside it and in profile order, and what was saved loads back to the same
 * bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cairn/cairn.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char scratch[PATH_MAX];
static uint8_t *images[2];
static size_t image_len[2];

static const char *const files[] = { "/a", "/big", "/d/small", "/d/sparse", "/empty",
				     "/hard", "/d", "/link", "/nope" };

static void put(const char *rel, size_t size, unsigned seed)
{
	char p[PATH_MAX + 64];
	FILE *f;

	snprintf(p, sizeof(p), "%s/src%s", scratch, rel);
	f = fopen(p, "w");
	if (!f)
		abort();
	for (size_t i = 0; i < size; i++)
		fputc((int)((i * 131 + seed + (i >> 11)) & 0xff), f);
	fclose(f);
}

static void shell(const char *fmt, const char *arg)
{
	char cmd[2 * PATH_MAX];

	snprintf(cmd, sizeof(cmd), fmt, arg, arg, arg);
	if (system(cmd))
		abort();
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET))
		abort();
	b = malloc((size_t)n);
	if (!b || fread(b, 1, (size_t)n, f) != (size_t)n)
		abort();
	fclose(f);
	*len = (size_t)n;
	return b;
}

static void build(int compressed, const char *out)
{
	char src[PATH_MAX + 8], order[PATH_MAX + 16];
	struct cairn_mkfs_opts o;
	struct cairn_mkfs *m;

	cairn_mkfs_opts_init(&o);
	o.no_fsync = 1;
	o.set_mtime = 1;
	o.threads = 1;
	snprintf(src, sizeof(src), "%s/src", scratch);
	if (compressed) {
		snprintf(order, sizeof(order), "%s/order", scratch);
		o.codec = CAIRN_MKFS_ZSTD;
		o.chunk_log2 = 14;
		o.order_file = order;
		o.set_hot_codec = 1;
		o.hot_codec = CAIRN_MKFS_LZ4;
		o.hot_level = CAIRN_MKFS_LEVEL_DEFAULT;
	}
	if (cairn_mkfs_new(&o, &m) || cairn_mkfs_add_tree(m, "/", src) ||
	    cairn_mkfs_write_path(m, out)) {
		fprintf(stderr, "fuzz_profile: mkfs: %s\n", cairn_mkfs_error(m));
		abort();
	}
	cairn_mkfs_free(m);
}

static void cleanup(void)
{
	shell("rm -rf '%s'", scratch);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *base = getenv("CAIRN_FUZZ_SCRATCH");
	char p[PATH_MAX + 32];
	struct stat st;
	FILE *f;

	(void)argc, (void)argv;
	if (!base)
		base = stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp";
	snprintf(scratch, sizeof(scratch), "%s/cairn-fuzz-profile.XXXXXX", base);
	if (!mkdtemp(scratch))
		abort();
	atexit(cleanup);
	shell("mkdir -p '%s/src/d'", scratch);
	put("/a", 3000, 1);
	put("/big", 300000, 2);
	put("/d/small", 40, 3);
	put("/empty", 0, 4);
	shell("truncate -s 200000 '%s/src/d/sparse' && printf x | "
	      "dd of='%s/src/d/sparse' bs=1 seek=100000 conv=notrunc 2>/dev/null", scratch);
	snprintf(p, sizeof(p), "%s/src/hard", scratch);
	{
		char a[PATH_MAX + 16];

		snprintf(a, sizeof(a), "%s/src/a", scratch);
		if (link(a, p))
			abort();
	}
	snprintf(p, sizeof(p), "%s/src/link", scratch);
	if (symlink("big", p))
		abort();
	snprintf(p, sizeof(p), "%s/order", scratch);
	f = fopen(p, "w");
	if (!f)
		abort();
	fputs("/big 65536 40000\n/a\n/d/small\n", f);
	fclose(f);
	for (int i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/img%d", scratch, i);
		build(i, p);
		images[i] = slurp(p, &image_len[i]);
	}
	return 0;
}

static struct cairn_image *open_image(int i)
{
	struct cairn_cache_config cc = { .segment_size = 4096, .budget_bytes = 1u << 20,
					 .threads = 1 };
	struct cairn_bdev *dev;
	struct cairn_cache *cache;
	struct cairn_image *img;

	if (cairn_bdev_mem_new(images[i], image_len[i], 0, &dev) ||
	    cairn_cache_new(dev, &cc, &cache))
		abort();
	if (cairn_image_open(cache, NULL, 0, &img))
		abort();
	return img;
}

struct order {
	uint64_t size, last_pos, n;
};

static int range_cb(void *ctx, uint64_t off, uint64_t pos, uint64_t len)
{
	struct order *o = ctx;

	if (!len || off >= o->size || len > o->size - off)
		abort(); /* a range outside its file */
	if (o->n++ && pos < o->last_pos)
		abort(); /* ranges come in profile order */
	o->last_pos = pos;
	return 0;
}

static void check_stats(const struct cairn_profile_stats *st)
{
	if (st->missing + st->past_eof + st->dropped > st->records)
		abort();
	if (st->bytes > CAIRN_PROFILE_MAX_BYTES || st->ranges > CAIRN_PROFILE_MAX_RANGES)
		abort();
	if (!st->bytes != !st->ranges)
		abort();
}

static void check_ranges(struct cairn_image *img)
{
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct cairn_stat s;
		struct order o = { 0 };
		cairn_ino_t ino;

		if (cairn_image_resolve(img, files[i], 0, &ino) || cairn_image_stat(img, ino, &s))
			continue;
		o.size = s.size;
		if (S_ISREG(s.mode) && cairn_image_hot_ranges(img, ino, range_cb, &o))
			abort();
	}
}

static void one_image(int which, const char *text, size_t len, const char *text_path)
{
	struct cairn_profile_stats st = { 0 }, st2 = { 0 }, back = { 0 };
	struct cairn_image *img = open_image(which), *again;
	char saved[PATH_MAX + 16];
	uint64_t bytes;
	int rc;

	if (cairn_image_profile_load(img, text, len, &st))
		abort(); /* only -ENOMEM may fail, and the fuzzer's limits are far below */
	check_stats(&st);
	if (st.bytes != cairn_image_hot_bytes(img) && st.bytes)
		abort();
	rc = cairn_image_profile_load_file(img, text_path, &st2);
	if (rc && rc != -EFBIG)
		abort();
	check_stats(&st2);
	/* The same text again adds nothing: its ranges are in the profile. */
	if (!rc && st2.bytes != st.bytes && !st2.dropped && !st.dropped)
		abort();
	check_ranges(img);
	cairn_image_prefetch_hot(img);
	snprintf(saved, sizeof(saved), "%s/saved%d", scratch, which);
	if (cairn_image_profile_save(img, NULL, saved, NULL))
		abort();
	bytes = cairn_image_hot_bytes(img);
	cairn_image_close(img);

	again = open_image(which);
	if (cairn_image_profile_load_file(again, saved, &back))
		abort();
	check_stats(&back);
	if (back.missing || back.past_eof || back.dropped)
		abort(); /* a saved profile holds files of the image, inside them */
	if (st.bytes && back.bytes != bytes)
		abort(); /* what was saved comes back */
	check_ranges(again);
	cairn_image_close(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly `size` bytes, so ASan catches a read past the end. */
	char *text = malloc(size ? size : 1);
	char path[PATH_MAX + 16];
	FILE *f;

	if (!text)
		return 0;
	memcpy(text, data, size);
	snprintf(path, sizeof(path), "%s/input", scratch);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f))
		abort();
	for (int i = 0; i < 2; i++)
		one_image(i, text, size, path);
	free(text);
	return 0;
}
