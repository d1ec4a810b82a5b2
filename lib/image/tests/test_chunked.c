/* SPDX-License-Identifier: MIT */
/*
 * Compressed images (CAIRN_INCOMPAT_CHUNKED): round trips under every codec and
 * several chunk sizes, the decompressed-chunk cache (one decompression per
 * chunk for a burst of small reads, single-flight across threads, the budget),
 * the incompat bit a v1.0 reader refuses, and hostile chunk maps: every bad
 * record gives -CAIRN_ECORRUPT, never a crash, a hang or a large allocation.
 * Also what the FUSE daemon's push asks of compressed and uncompressed files
 * alike: the span one decompression or segment fetch yields, the random-reader
 * detector, cached-only reads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <pthread.h>
#include <sys/uio.h>
#include <cmocka.h>
#include <zstd.h>
#include "hostile.h"
#include "image/image_int.h"

struct built {
	uint8_t *buf;
	size_t len;
};

static struct built build(unsigned codec, unsigned log2)
{
	struct built b;

	b.buf = hostile_build_ex(&b.len, codec, log2);
	return b;
}

static struct cairn_image *open_buf(const struct built *b)
{
	struct cairn_image *img = NULL;

	assert_int_equal(hostile_open(b->buf, b->len, NULL, NULL, NULL, &img), 0);
	return img;
}

static cairn_ino_t ino_of(struct cairn_image *img, const char *path)
{
	cairn_ino_t ino = 0;

	assert_int_equal(cairn_image_resolve(img, path, 1, &ino), 0);
	return ino;
}

/* The chunk cache's counters once the read-ahead workers are idle (what they
 * did is then counted, whatever the scheduling). */
static struct cairn_chunk_cache_stats drained_stats(struct cairn_image *img)
{
	struct cairn_chunk_cache_stats st;

	cairn_image_chunk_drain(img);
	assert_int_equal(cairn_image_chunk_cache_stats(img, &st), 0);
	return st;
}

/* The whole file matches hostile_write(len, salt). */
static void check_file(struct cairn_image *img, const char *path, size_t len, unsigned salt)
{
	unsigned char *got = malloc(len + 1);
	ssize_t n;

	assert_non_null(got);
	n = cairn_image_read(img, ino_of(img, path), got, len + 1, 0);
	assert_int_equal(n, (ssize_t)len);
	for (size_t i = 0; i < len; i++)
		if (got[i] != hostile_byte(i, salt))
			fail_msg("%s: byte %zu differs", path, i);
	free(got);
}

static void check_sparse(struct cairn_image *img)
{
	cairn_ino_t ino = ino_of(img, "/sparse");
	char buf[8];
	int64_t d;

	assert_int_equal(cairn_image_read(img, ino, buf, 4, 200000), 4);
	assert_memory_equal(buf, "data", 4);
	assert_int_equal(cairn_image_read(img, ino, buf, 4, 900000), 4);
	assert_memory_equal(buf, "tail", 4);
	assert_int_equal(cairn_image_read(img, ino, buf, 4, 500000), 4);
	assert_memory_equal(buf, "\0\0\0\0", 4);
	/* Zero chunks are holes: data starts in the chunk holding byte 200000. */
	d = cairn_image_lseek(img, ino, 0, SEEK_DATA);
	assert_true(d >= 0 && d <= 200000);
	assert_true(cairn_image_lseek(img, ino, (uint64_t)d, SEEK_HOLE) > 200000);
	d = cairn_image_lseek(img, ino, 1000000, SEEK_DATA);
	assert_true(d == -ENXIO || d == 1000000);
}

static void roundtrip(unsigned codec, unsigned log2)
{
	struct built b = build(codec, log2);
	struct cairn_image *img = open_buf(&b);
	struct cairn_image_info in;

	cairn_image_get_info(img, &in);
	assert_true(in.incompat & CAIRN_INCOMPAT_CHUNKED);
	assert_int_equal(in.version_minor, CAIRN_FORMAT_VERSION_MINOR_CHUNKED);
	assert_int_equal(in.chunk_size, 1u << (log2 ? log2 : CAIRN_MKFS_CHUNK_LOG2_DEFAULT));
	assert_true(in.stored_bytes > 0 && in.stored_bytes < in.logical_bytes);
	check_file(img, "/small", 100, 1);
	check_file(img, "/big", 300 * 1024, 2);
	check_file(img, "/hard", 300 * 1024, 2);
	check_file(img, "/dir/mid", 9000, 3);
	check_file(img, "/dir/sub/deep", 5000, 4);
	check_sparse(img);
	assert_int_equal(cairn_image_fsck(img, CAIRN_FSCK_DATA, NULL, NULL), 0);
	cairn_image_close(img);
	free(b.buf);
}

static void test_roundtrip_codecs(void **state)
{
	(void)state;
	roundtrip(CAIRN_MKFS_LZ4, 14);
	roundtrip(CAIRN_MKFS_LZ4HC, 16);
	roundtrip(CAIRN_MKFS_ZSTD, 0);
	roundtrip(CAIRN_MKFS_ZSTD, 20);
}

/* A reader that knows only v1.0's incompat bits (EXTENTS) refuses the image;
 * an uncompressed one carries no new bit and keeps block 0 past 256 zero. */
static void test_incompat_bit(void **state)
{
	struct built z = build(CAIRN_MKFS_ZSTD, 14), p = build(CAIRN_MKFS_NONE, 0);
	uint32_t zi = cairn_le32(hostile_super(z.buf)->incompat);
	uint32_t pi = cairn_le32(hostile_super(p.buf)->incompat);

	(void)state;
	assert_true(zi & ~CAIRN_INCOMPAT_EXTENTS);
	assert_int_equal(pi & ~CAIRN_INCOMPAT_EXTENTS, 0);
	assert_int_equal(cairn_le16(hostile_super(p.buf)->version_minor), 0);
	/* The compression record's bytes stay zero (the verity record has its own). */
	for (size_t i = CAIRN_SUPER_SIZE; i < CAIRN_BLOCK_SIZE; i++)
		if (i < CAIRN_VERITY_SUPER_OFF || i >= CAIRN_VERITY_SUPER_OFF + 128)
			assert_int_equal(p.buf[i], 0);
	/* Without the bit, a chunked inode is corrupt, not read as plain data. */
	hostile_super(z.buf)->incompat = cairn_le32(zi & ~CAIRN_INCOMPAT_CHUNKED);
	cairn_fixup_checksums(z.buf, z.len);
	{
		struct cairn_image *img = open_buf(&z);
		cairn_ino_t ino;
		char c;

		assert_int_equal(cairn_image_resolve(img, "/dir", 1, &ino), 0);
		assert_int_equal(cairn_image_lookup(img, ino, "mid", 3, &ino), 0);
		assert_int_equal(cairn_image_read(img, ino, &c, 1, 0), -CAIRN_ECORRUPT);
		cairn_image_close(img);
	}
	free(z.buf);
	free(p.buf);
}

/* 4 KiB reads over 64 KiB of /big in 16 KiB chunks: each chunk is decompressed
 * once; the first by the reader, every next one by the read-ahead worker, queued
 * when a read reaches the end of the chunk before it. */
static void test_burst_decompresses_once(void **state)
{
	struct built b = build(CAIRN_MKFS_ZSTD, 14);
	struct cairn_image *img = open_buf(&b);
	struct cairn_chunk_cache_stats st;
	cairn_ino_t ino = ino_of(img, "/big");
	char buf[4096];

	(void)state;
	for (uint64_t off = 0; off < 65536; off += sizeof(buf)) {
		assert_int_equal(cairn_image_read(img, ino, buf, sizeof(buf), off), sizeof(buf));
		cairn_image_chunk_drain(img); /* so the counts do not depend on timing */
	}
	assert_int_equal(cairn_image_chunk_cache_stats(img, &st), 0);
	assert_int_equal(st.misses, 1);
	assert_int_equal(st.readahead, 4); /* chunks 1-3, and 4 after the last read */
	assert_int_equal(st.hits, 15);
	assert_int_equal(st.waits, 0);
	assert_int_equal(st.decompressed_bytes, 5 * 16384);
	/* Random reads inside chunks queue nothing. */
	assert_int_equal(cairn_image_read(img, ino, buf, 100, 200000), 100);
	st = drained_stats(img);
	assert_int_equal(st.readahead, 4);
	assert_int_equal(st.misses, 2);
	cairn_image_close(img);
	free(b.buf);
}

/* A random reader's read that happens to end at a chunk's end queues no
 * read-ahead (it decompressed the next chunk for nothing: 4.3x the file under
 * fio randread); a read that goes on from where the last one ended does. */
static void test_random_no_readahead(void **state)
{
	struct built b = build(CAIRN_MKFS_ZSTD, 14);
	struct cairn_image *img = open_buf(&b);
	struct cairn_chunk_cache_stats st;
	cairn_ino_t ino = ino_of(img, "/big");
	char buf[4096], big[16384];

	(void)state;
	assert_int_equal(cairn_image_read(img, ino, buf, sizeof(buf), 5 * 16384 - 4096),
			 sizeof(buf));
	st = drained_stats(img);
	assert_int_equal(st.misses, 1);
	assert_int_equal(st.readahead, 0);
	for (uint64_t off = 5 * 16384; off < 6 * 16384; off += sizeof(buf))
		assert_int_equal(cairn_image_read(img, ino, buf, sizeof(buf), off), sizeof(buf));
	st = drained_stats(img);
	assert_int_equal(st.misses, 2);
	assert_int_equal(st.readahead, 1); /* chunk 6, after the sequential run */
	/* A whole chunk read alone (a push) right after a read that ended at its
	 * start: not a stream, no read-ahead. */
	assert_int_equal(cairn_image_read(img, ino, buf, sizeof(buf), 8 * 16384 - 4096),
			 sizeof(buf));
	assert_int_equal(cairn_image_read_flags(img, ino, big, sizeof(big), 8 * 16384,
						CAIRN_READ_ALONE), sizeof(big));
	st = drained_stats(img);
	assert_int_equal(st.readahead, 1);
	/* A chunk or more read anywhere is a window of a stream: read ahead. */
	assert_int_equal(cairn_image_read(img, ino, big, sizeof(big), 12 * 16384), sizeof(big));
	st = drained_stats(img);
	assert_int_equal(st.readahead, 2);
	cairn_image_close(img);
	free(b.buf);
}

/* Bytes that compress to about half: a random low nibble. */
static unsigned char half_byte(size_t i)
{
	uint32_t x = (uint32_t)i * 2654435761u;

	x ^= x >> 15;
	return (unsigned char)((x * 2246822519u) >> 28);
}

/* An image of one 4 MiB file of half_byte()s, in 16 KiB zstd chunks: about
 * 2 MiB stored, past the 1 MiB the open's metadata reads may read ahead. */
#define HALF_LEN (4096u * 1024)
static struct built build_half(void)
{
	char dir[] = "/tmp/cairn-half-XXXXXX", path[64];
	struct built b;
	FILE *f;

	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/half", dir);
	f = fopen(path, "wb");
	assert_non_null(f);
	for (size_t i = 0; i < HALF_LEN; i++)
		fputc(half_byte(i), f);
	assert_int_equal(fclose(f), 0);
	b.buf = hostile_mkfs_with(dir, CAIRN_MKFS_ZSTD, -1, 14, NULL, 1, &b.len);
	unlink(path);
	rmdir(dir);
	return b;
}

/* The stored bytes of chunks [first, first + n) of ino, none in the segment
 * cache: the stored span's segments each give -EAGAIN on a cached-only read. */
static void assert_chunks_uncached(struct cairn_image *img, cairn_ino_t ino, uint64_t first,
				   unsigned n, size_t seg)
{
	struct cairn_rinode r;
	struct cairn_rchunk c;
	uint64_t idx, start, lo, hi;
	char byte;

	assert_int_equal(cairn_image_inode_load(img, ino, &r), 0);
	assert_int_equal(cairn_image_chunk_at(img, &r, first * 16384, &idx, &start, &c), 0);
	lo = c.disk_off;
	assert_int_equal(cairn_image_chunk_at(img, &r, (first + n - 1) * 16384, &idx, &start, &c),
			 0);
	hi = c.disk_off + c.stored_len;
	for (uint64_t off = lo; off < hi; off += seg)
		assert_int_equal(cairn_cache_read_cached(cairn_image_cache(img), &byte, 1, off),
				 -EAGAIN);
}

/* A read of several compressed chunks fetches all their stored bytes in one
 * device request. Walked one by one, the first chunk's miss fetched its own
 * bytes and the next one's the rest: two round trips one after the other,
 * where a network disk pays its latency each time. Each chunk is still
 * decompressed once, by the reader or a read-ahead worker.
 * The open's metadata reads look sequential to the segment cache, which reads
 * ahead of them to the next 1 MiB: drained before counting, and the chunks read
 * lie past it, so the one request counted is the read's (it once passed
 * because the read waited for that read-ahead, and failed when the read-ahead
 * finished first). */
static void test_multi_chunk_read_one_request(void **state)
{
	struct built b = build_half();
	/* Small segments and no whole-file fetch: the stored bytes of 8 chunks
	 * span many segments, as 1 MiB of 128 KiB chunks spans several
	 * 128 KiB segments. */
	struct cairn_cache_config cc = { .segment_size = 512, .small_file = 512 };
	struct cairn_cache_stats cs;
	struct cairn_chunk_cache_stats st;
	struct cairn_image *img = NULL;
	const uint64_t first = HALF_LEN / 16384 - 16; /* stored past 1 MiB */
	cairn_ino_t ino;
	uint64_t req;
	char *buf = malloc(8 * 16384);

	(void)state;
	assert_non_null(buf);
	assert_int_equal(hostile_open(b.buf, b.len, NULL, &cc, NULL, &img), 0);
	ino = ino_of(img, "/half");
	cairn_cache_drain(cairn_image_cache(img));
	assert_chunks_uncached(img, ino, first, 8, cc.segment_size);
	cairn_cache_get_stats(cairn_image_cache(img), &cs);
	req = cs.requests;
	/* Read alone: no read-ahead past it, so every request is the read's. */
	assert_int_equal(cairn_image_read_flags(img, ino, buf, 8 * 16384, first * 16384,
						CAIRN_READ_ALONE), 8 * 16384);
	for (size_t i = 0; i < 8 * 16384; i++)
		if ((unsigned char)buf[i] != half_byte(first * 16384 + i))
			fail_msg("byte %zu differs", i);
	st = drained_stats(img);
	cairn_cache_drain(cairn_image_cache(img));
	cairn_cache_get_stats(cairn_image_cache(img), &cs);
	assert_int_equal(cs.requests - req, 1);
	assert_int_equal(st.decompressed_bytes, 8 * 16384);
	assert_int_equal(st.misses + st.readahead, 8);
	cairn_image_close(img);
	free(buf);
	free(b.buf);
}

/* Read-ahead stays in the hot prefix: a read that ends at the end of a hot
 * chunk (the push of a hot range, a program's window) queues none of the cold
 * chunks after it (the traced program did not read them, and each is a
 * device request of its own); in the cold part it reads ahead as before. */
static void test_no_readahead_out_of_hot(void **state)
{
	struct built b;
	struct cairn_image *img;
	struct cairn_chunk_cache_stats st;
	cairn_ino_t big;
	char buf[16384];

	(void)state;
	/* /big's chunk 0 hot, its chunks 1.. cold. */
	b.buf = hostile_build_order(&b.len, CAIRN_MKFS_ZSTD, 14, "/big 0 4096\n");
	img = open_buf(&b);
	big = ino_of(img, "/big");
	assert_int_equal(cairn_image_read(img, big, buf, sizeof(buf), 0), sizeof(buf));
	st = drained_stats(img);
	assert_int_equal(st.misses, 1);
	assert_int_equal(st.readahead, 0);
	assert_int_equal(cairn_image_read(img, big, buf, sizeof(buf), 16384), sizeof(buf));
	st = drained_stats(img);
	assert_int_equal(st.misses, 2);
	assert_int_equal(st.readahead, 1); /* chunk 2, cold after cold */
	cairn_image_close(img);
	free(b.buf);
}

/* Use-once: a decompressed chunk is dropped once all its bytes were delivered
 * (the kernel's page cache has them), not before; the file's tail, packed in a
 * fragment with other files' tails, stays until all of the fragment was. */
static void test_delivered_drops(void **state)
{
	struct built b = build(CAIRN_MKFS_LZ4, 14);
	struct cairn_image *img = open_buf(&b);
	struct cairn_chunk_cache_stats st;
	cairn_ino_t ino = ino_of(img, "/big");
	char buf[4096];

	(void)state;
	assert_int_equal(cairn_image_read(img, ino, buf, sizeof(buf), 2 * 16384), sizeof(buf));
	cairn_image_delivered(img, ino, 2 * 16384, 8192);
	assert_int_equal(cairn_image_chunk_cache_stats(img, &st), 0);
	assert_int_equal(st.resident_bytes, 16384);
	assert_int_equal(st.dropped, 0);
	cairn_image_delivered(img, ino, 2 * 16384 + 8000, 8384); /* the rest, overlapping */
	assert_int_equal(cairn_image_chunk_cache_stats(img, &st), 0);
	assert_int_equal(st.dropped, 1);
	assert_int_equal(st.resident_bytes, 0);
	/* Only from the cache: a dropped chunk is not loaded again. */
	assert_int_equal(cairn_image_read_flags(img, ino, buf, sizeof(buf), 2 * 16384,
						CAIRN_READ_CACHED), -EAGAIN);
	assert_int_equal(cairn_image_chunk_cache_stats(img, &st), 0);
	assert_int_equal(st.misses, 1);
	/* A chunk not cached is left alone; reading it again decompresses it. */
	cairn_image_delivered(img, ino, 0, 16384);
	assert_int_equal(cairn_image_read(img, ino, buf, sizeof(buf), 2 * 16384), sizeof(buf));
	assert_int_equal(cairn_image_chunk_cache_stats(img, &st), 0);
	assert_int_equal(st.misses, 2);
	assert_int_equal(st.dropped, 1);
	assert_int_equal(cairn_image_read_flags(img, ino, buf, sizeof(buf), 2 * 16384 + 4096,
						CAIRN_READ_CACHED), sizeof(buf));
	cairn_image_close(img);
	free(b.buf);
}

/* Read-ahead skips a chunk dropped once delivered (the kernel has it): a
 * sequential reader's read-ahead that ran behind a parallel reader decompressed
 * such chunks again for nothing. A read of it loads it. */
static void test_readahead_skips_delivered(void **state)
{
	struct built b = build(CAIRN_MKFS_ZSTD, 14);
	struct cairn_image *img = open_buf(&b);
	struct cairn_chunk_cache_stats st;
	cairn_ino_t ino = ino_of(img, "/big");
	char buf[16384];

	(void)state;
	assert_int_equal(cairn_image_read(img, ino, buf, sizeof(buf), 0), sizeof(buf));
	cairn_image_chunk_drain(img); /* chunk 1 read ahead */
	cairn_image_delivered(img, ino, 16384, 16384);
	assert_int_equal(cairn_image_read(img, ino, buf, sizeof(buf), 0), sizeof(buf));
	st = drained_stats(img);
	assert_int_equal(st.dropped, 1);
	assert_int_equal(st.readahead, 1); /* not chunk 1 again */
	assert_int_equal(cairn_image_read(img, ino, buf, sizeof(buf), 16384), sizeof(buf));
	assert_int_equal(cairn_image_chunk_cache_stats(img, &st), 0);
	assert_int_equal(st.misses, 2);
	cairn_image_close(img);
	free(b.buf);
}

/* Chunks of img by where they are stored and their codec: hot[c] counts the
 * hot prefix's chunks of codec c, cold[c] the others'. */
static void count_codecs(struct cairn_image *img, unsigned hot[4], unsigned cold[4])
{
	for (unsigned c = 0; c < 4; c++)
		hot[c] = cold[c] = 0;
	for (uint64_t idx = 0; idx < img->chunk_count; idx++) {
		struct cairn_rchunk c;

		assert_int_equal(cairn_image_chunk_load(img, idx, &c), 0);
		if (c.codec != CAIRN_CODEC_ZERO && c.disk_off >= img->hot_off &&
		    c.disk_off < img->hot_off + img->hot_len)
			hot[c.codec]++;
		else
			cold[c.codec]++;
	}
}

/* mkfs --hot-codec: the hot prefix's chunks get the hot codec (lz4hc writes
 * LZ4, none stores them raw), every other chunk the image's, and every file
 * still reads back, through the hot walk and on demand. */
static void test_hot_codec(void **state)
{
	static const unsigned hotc[] = { CAIRN_MKFS_LZ4HC, CAIRN_MKFS_NONE };
	static const unsigned want[] = { CAIRN_CODEC_LZ4, CAIRN_CODEC_RAW };

	(void)state;
	for (size_t k = 0; k < sizeof(hotc) / sizeof(hotc[0]); k++) {
		struct built b;
		struct cairn_image *img;
		struct cairn_image_info info;
		struct cairn_disk_chunked_super *z;
		unsigned hot[4], cold[4];

		b.buf = hostile_build_order_hot(&b.len, CAIRN_MKFS_ZSTD, hotc[k], 14,
						"/big\n/dir/mid\n");
		img = open_buf(&b);
		count_codecs(img, hot, cold);
		cairn_image_get_info(img, &info); /* the record names the hot codec */
		assert_int_equal(info.hot_codec, want[k]);
		assert_true(info.hot_logical_bytes > 0);
		assert_true(want[k] == CAIRN_CODEC_RAW ? info.hot_stored_bytes == info.hot_logical_bytes
						       : info.hot_stored_bytes < info.hot_logical_bytes);
		assert_true(info.hot_logical_bytes < info.logical_bytes);
		/* /big's 18 chunks and two fragments (its tail, /dir/mid) */
		assert_int_equal(hot[want[k]], 20);
		for (unsigned c = 0; c < 4; c++)
			if (c != want[k])
				assert_int_equal(hot[c], 0);
		assert_true(cold[CAIRN_CODEC_ZSTD] > 0);
		assert_int_equal(cold[CAIRN_CODEC_LZ4], 0);
		cairn_image_prefetch_hot(img);
		cairn_image_chunk_drain(img);
		check_file(img, "/big", 300 * 1024, 2);
		check_file(img, "/dir/mid", 9000, 3);
		check_file(img, "/dir/sub/deep", 5000, 4);
		check_file(img, "/small", 100, 1);
		check_sparse(img);
		assert_int_equal(cairn_image_fsck(img, 0, NULL, NULL), 0);
		cairn_image_close(img);
		/* fsck holds the record's hot totals to the chunks in the prefix */
		z = (struct cairn_disk_chunked_super *)(b.buf + CAIRN_CHUNKED_SUPER_OFF);
		z->hot_stored_bytes = cairn_le64(cairn_le64(z->hot_stored_bytes) + 1);
		cairn_fixup_checksums(b.buf, b.len);
		img = open_buf(&b);
		assert_int_equal(cairn_image_fsck(img, 0, NULL, NULL), 1);
		cairn_image_close(img);
		free(b.buf);
	}
}

/* --hot-codec on an uncompressed image, or an unknown codec, is refused. */
static void test_hot_codec_refused(void **state)
{
	struct cairn_mkfs_opts o;
	struct cairn_mkfs *m = NULL;

	(void)state;
	cairn_mkfs_opts_init(&o);
	o.set_hot_codec = 1;
	o.hot_codec = CAIRN_MKFS_LZ4;
	assert_int_equal(cairn_mkfs_new(&o, &m), -EINVAL);
	o.codec = CAIRN_MKFS_ZSTD;
	o.hot_codec = 7;
	assert_int_equal(cairn_mkfs_new(&o, &m), -EINVAL);
	assert_null(m);
	o.hot_codec = CAIRN_MKFS_LZ4;
	assert_int_equal(cairn_mkfs_new(&o, &m), 0);
	cairn_mkfs_free(m);
}

/* -o prefetch of an ordered image: the read-ahead workers decompress the hot
 * prefix (/big's 18 chunks of 16 KiB, a fragment with its 12 KiB tail and one
 * with /dir/mid, not the cold files after them) into the chunk cache without a reader, so reading the hot files
 * then misses nothing; a small chunk cache bounds the walk to 3/4 of it. */
static void test_prefetch_hot_decompresses(void **state)
{
	struct built b;
	struct cairn_image *img;
	struct cairn_chunk_cache_stats st;

	(void)state;
	b.buf = hostile_build_order(&b.len, CAIRN_MKFS_ZSTD, 14, "/big\n/dir/mid\n");
	img = open_buf(&b);
	assert_true(cairn_image_hot_bytes(img) > 0);
	cairn_image_prefetch_hot(img);
	st = drained_stats(img);
	assert_int_equal(st.readahead, 20);
	assert_int_equal(st.misses, 0);
	check_file(img, "/big", 300 * 1024, 2);
	check_file(img, "/dir/mid", 9000, 3);
	assert_int_equal(cairn_image_chunk_cache_stats(img, &st), 0);
	assert_int_equal(st.misses, 0);
	assert_true(st.hits >= 20);
	cairn_image_close(img);

	img = open_buf(&b);
	cairn_image_set_chunk_cache(img, 64 << 10);
	cairn_image_prefetch_hot(img);
	st = drained_stats(img);
	assert_int_equal(st.readahead, 3); /* 48 KiB of 64 */
	assert_int_equal(st.evictions, 0);
	check_file(img, "/big", 300 * 1024, 2);
	cairn_image_close(img);
	free(b.buf);

	/* Range lines split /big: the prefix holds its chunk 12, /dir/mid's
	 * fragment and its chunk 0, while the records of its cold chunks 1..11 sit
	 * between those of chunks 0 and 12 (records are in file order). */
	b.buf = hostile_build_order(&b.len, CAIRN_MKFS_ZSTD, 14,
				    "/big 200000 4096\n/dir/mid\n/big 0 4096\n");
	img = open_buf(&b);
	cairn_image_prefetch_hot(img);
	st = drained_stats(img);
	assert_int_equal(st.readahead, 3);
	{
		char buf[4096];
		cairn_ino_t big = ino_of(img, "/big");

		assert_int_equal(cairn_image_read(img, big, buf, sizeof(buf), 200000), sizeof(buf));
		assert_int_equal(cairn_image_read(img, big, buf, sizeof(buf), 0), sizeof(buf));
		for (size_t i = 0; i < sizeof(buf); i++)
			assert_int_equal((unsigned char)buf[i], hostile_byte(i, 2));
	}
	check_file(img, "/dir/mid", 9000, 3);
	assert_int_equal(cairn_image_chunk_cache_stats(img, &st), 0);
	assert_int_equal(st.misses, 0);
	cairn_image_close(img);
	free(b.buf);
}

/* A -o prefetch mount's two paths to a hot chunk: the program reads part of it
 * itself (kept: the push still wants it), then the push stores the rest, or
 * learns the read's pages went to the kernel (push_served: cairn_image_pushed
 * of them). Each chunk is decompressed once, by the hot walk, and dropped once
 * all of it has gone, whichever path delivered which part. */
static void test_hot_chunk_read_then_pushed_once(void **state)
{
	struct built b;
	struct cairn_image *img;
	struct cairn_chunk_cache_stats st;
	char buf[16384];
	cairn_ino_t big;

	(void)state;
	b.buf = hostile_build_order(&b.len, CAIRN_MKFS_ZSTD, 14, "/big\n");
	img = open_buf(&b);
	big = ino_of(img, "/big");
	cairn_image_prefetch_hot(img);
	st = drained_stats(img);
	assert_int_equal(st.readahead, 19); /* 300 KiB in 16 KiB chunks */
	assert_int_equal(st.decompressed_bytes, 300 * 1024);
	/* The program's read of chunk 1's first half: kept for the push. */
	assert_int_equal(cairn_image_read(img, big, buf, 8192, 16384), 8192);
	cairn_image_delivered(img, big, 16384, 8192);
	assert_int_equal(cairn_image_chunk_cache_stats(img, &st), 0);
	assert_int_equal(st.dropped, 0);
	/* The reply reached the kernel: those pages leave the push (push_served). */
	cairn_image_pushed(img, big, 16384, 8192);
	assert_int_equal(cairn_image_chunk_cache_stats(img, &st), 0);
	assert_int_equal(st.dropped, 0); /* its second half is still to be pushed */
	/* The push stores the rest of chunk 1 and all of chunk 0. */
	assert_int_equal(cairn_image_read(img, big, buf, 8192, 24576), 8192);
	cairn_image_pushed(img, big, 24576, 8192);
	assert_int_equal(cairn_image_read(img, big, buf, 16384, 0), 16384);
	cairn_image_pushed(img, big, 0, 16384);
	assert_int_equal(cairn_image_chunk_cache_stats(img, &st), 0);
	assert_int_equal(st.dropped, 2);
	assert_int_equal(st.misses, 0);
	assert_int_equal(st.decompressed_bytes, 300 * 1024); /* nothing twice */
	cairn_image_close(img);
	free(b.buf);
}

/* The span a read at off yields: a compressed file's chunk; an uncompressed
 * one's cache segment (16 KiB here) clipped to the file. The detector calls a
 * short read random unless it starts the file or where a read of it ended (not
 * a CAIRN_READ_ALONE one's); a read a chunk (segment) long is a stream's. A
 * cached-only read of an uncompressed file copies what a read fetched, -EAGAIN
 * with no request for the rest. */
static void test_span_and_random(void **state)
{
	struct built z = build(CAIRN_MKFS_ZSTD, 14), p = build(CAIRN_MKFS_NONE, 0);
	struct cairn_cache_config cc = { .segment_size = 16384 };
	struct cairn_image *img = open_buf(&z);
	struct cairn_cache_stats st;
	cairn_ino_t ino = ino_of(img, "/big");
	uint64_t lo, hi, dlo, dhi, req;
	char buf[8192];

	(void)state;
	assert_int_equal(cairn_image_chunk_span(img, ino, 5 * 16384 + 7, &lo, &hi), 0);
	assert_int_equal(lo, 5 * 16384);
	assert_int_equal(hi, 6 * 16384);
	assert_int_equal(cairn_image_chunk_span(img, ino, 300 * 1024, &lo, &hi), -ENXIO);
	cairn_image_close(img);

	assert_int_equal(hostile_open(p.buf, p.len, NULL, &cc, NULL, &img), 0);
	ino = ino_of(img, "/big");
	assert_int_equal(cairn_image_file_extent(img, ino, &dlo, &dhi), 0);
	assert_int_equal(dhi - dlo, 300 * 1024);
	assert_int_equal(cairn_image_chunk_span(img, ino, 0, &lo, &hi), 0);
	assert_int_equal(lo, 0);
	assert_int_equal(hi, 16384 - dlo % 16384);
	assert_int_equal(cairn_image_chunk_span(img, ino, 200000, &lo, &hi), 0);
	assert_int_equal((dlo + lo) % 16384, 0);
	assert_int_equal(hi - lo, 16384);
	assert_true(lo <= 200000 && 200000 < hi);
	assert_int_equal(cairn_image_chunk_span(img, ino, 300 * 1024 - 1, &lo, &hi), 0);
	assert_int_equal(hi, 300 * 1024);
	assert_int_equal(cairn_image_chunk_span(img, ino, 300 * 1024, &lo, &hi), -ENXIO);
	assert_int_equal(cairn_image_chunk_span(img, ino_of(img, "/small"), 0, &lo, &hi),
			 -ENOENT); /* inline */

	assert_int_equal(cairn_image_read_random(img, ino, 0, 4096), 0);
	assert_int_equal(cairn_image_read_random(img, ino, 100000, 4096), 1);
	assert_int_equal(cairn_image_read_random(img, ino, 100000, 16384), 0);
	assert_int_equal(cairn_image_read(img, ino, buf, 4096, 100000), 4096);
	assert_int_equal(cairn_image_read_random(img, ino, 104096, 4096), 0);
	assert_int_equal(cairn_image_read_flags(img, ino, buf, 4096, 150000, CAIRN_READ_ALONE),
			 4096);
	assert_int_equal(cairn_image_read_random(img, ino, 154096, 4096), 1);

	/* Past the file's first 44 KiB, so the rest is more than the cache fetches
	 * whole (small_file, 256 KiB): a random read there fetches its segment. */
	assert_int_equal(cairn_image_chunk_span(img, ino, 30000, &lo, &hi), 0);
	cairn_cache_get_stats(cairn_image_cache(img), &st);
	req = st.requests;
	assert_int_equal(cairn_image_read_flags(img, ino, buf, 4096, lo, CAIRN_READ_CACHED),
			 -EAGAIN);
	cairn_cache_drain(cairn_image_cache(img));
	cairn_cache_get_stats(cairn_image_cache(img), &st);
	assert_int_equal(st.requests, req);
	assert_int_equal(cairn_image_read(img, ino, buf, 4096, lo), 4096);
	cairn_cache_drain(cairn_image_cache(img));
	cairn_cache_get_stats(cairn_image_cache(img), &st);
	assert_true(st.requests > req);
	req = st.requests;
	assert_int_equal(cairn_image_read_flags(img, ino, buf, 8192, lo + 4096, CAIRN_READ_CACHED),
			 8192);
	for (size_t i = 0; i < 8192; i++)
		assert_int_equal((unsigned char)buf[i], hostile_byte(lo + 4096 + i, 2));
	assert_int_equal(cairn_image_read_flags(img, ino, buf, 8192, hi - 4096, CAIRN_READ_CACHED),
			 -EAGAIN);
	cairn_cache_drain(cairn_image_cache(img));
	cairn_cache_get_stats(cairn_image_cache(img), &st);
	assert_int_equal(st.requests, req);
	cairn_image_close(img);
	free(z.buf);
	free(p.buf);
}

/* A pinned read (cairn_image_read_pinned) of a compressed file, checked in
 * the callback against hostile_write's bytes; with `deliver`, the bytes lent
 * are delivered there (use-once), while the read holds its chunks. */
struct lent {
	struct cairn_image *img;
	cairn_ino_t ino;
	uint64_t off;
	unsigned salt;
	int deliver, calls, iovcnt, bad;
	uint64_t dropped_inside;
};

static int check_lent(void *ctx, const struct iovec *iov, int iovcnt, size_t total)
{
	struct lent *l = ctx;
	uint64_t at = l->off;

	l->calls++;
	l->iovcnt = iovcnt;
	for (int i = 0; i < iovcnt; i++)
		for (size_t k = 0; k < iov[i].iov_len; k++, at++)
			l->bad |= ((const unsigned char *)iov[i].iov_base)[k] != hostile_byte(at, l->salt);
	l->bad |= at != l->off + total;
	if (l->deliver) {
		struct cairn_chunk_cache_stats st;

		cairn_image_delivered(l->img, l->ino, l->off, total);
		assert_int_equal(cairn_image_chunk_cache_stats(l->img, &st), 0);
		l->dropped_inside = st.dropped;
	}
	return 0;
}

/* Compressed files are lent from the chunk cache, one iovec per chunk, each
 * chunk held: delivered while lent, none is dropped until the read lets go.
 * A piece in a zero chunk has nothing to lend: the caller copies. */
static void test_read_pinned(void **state)
{
	struct built b = build(CAIRN_MKFS_LZ4, 14);
	struct cairn_image *img = open_buf(&b);
	struct cairn_chunk_cache_stats st;
	struct lent l = { img, ino_of(img, "/big"), 5000, 2, 0, 0, 0, 0, 0 };
	char buf[4];

	(void)state;
	assert_int_equal(cairn_image_read_pinned(img, l.ino, 100000, l.off, check_lent, &l), 0);
	assert_int_equal(l.calls, 1);
	assert_int_equal(l.bad, 0);
	assert_int_equal(l.iovcnt, 7); /* 16 KiB chunks 0..6 */
	assert_int_equal(cairn_image_chunk_cache_stats(img, &st), 0);
	assert_int_equal(st.lent_bytes, 100000);
	cairn_image_close(img);
	img = open_buf(&b);
	l = (struct lent){ img, ino_of(img, "/big"), 0, 2, 1, 0, 0, 0, 0 };
	assert_int_equal(cairn_image_read_pinned(img, l.ino, 300 * 1024 + 10, 0, check_lent, &l), 0);
	assert_int_equal(l.bad, 0);
	assert_int_equal(l.iovcnt, 19); /* the whole file, its tail included */
	assert_int_equal(l.dropped_inside, 0);
	cairn_image_chunk_drain(img);
	assert_int_equal(cairn_image_chunk_cache_stats(img, &st), 0);
	assert_true(st.dropped >= 18); /* the file's own chunks; the tail may be a fragment */
	assert_int_equal(cairn_image_read_pinned(img, ino_of(img, "/sparse"), 4, 500000,
						 check_lent, &l), CAIRN_CACHE_COPY);
	assert_int_equal(cairn_image_read(img, ino_of(img, "/sparse"), buf, 4, 200000), 4);
	assert_int_equal(l.calls, 1);
	cairn_image_close(img);
	free(b.buf);
}

struct reader_arg {
	struct cairn_image *img;
	cairn_ino_t ino;
	pthread_barrier_t *go;
	int rc;
};

static void *reader(void *p)
{
	struct reader_arg *a = p;
	char buf[512];

	pthread_barrier_wait(a->go);
	a->rc = (int)cairn_image_read(a->img, a->ino, buf, sizeof(buf), 70000);
	return NULL;
}

/* Readers of one chunk at once: it is decompressed once (single-flight). */
static void test_single_flight(void **state)
{
	struct built b = build(CAIRN_MKFS_LZ4, 17);
	struct cairn_image *img = open_buf(&b);
	struct cairn_chunk_cache_stats st;
	struct reader_arg a[8];
	pthread_t t[8];
	pthread_barrier_t go;

	(void)state;
	pthread_barrier_init(&go, NULL, 8);
	for (int i = 0; i < 8; i++) {
		a[i] = (struct reader_arg){ img, ino_of(img, "/big"), &go, 0 };
		assert_int_equal(pthread_create(&t[i], NULL, reader, &a[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(a[i].rc, 512);
	}
	pthread_barrier_destroy(&go);
	assert_int_equal(cairn_image_chunk_cache_stats(img, &st), 0);
	assert_int_equal(st.misses, 1);
	assert_int_equal(st.hits + st.waits, 7);
	cairn_image_close(img);
	free(b.buf);
}

/* With a budget below one chunk, nothing unused stays resident. */
static void test_budget(void **state)
{
	struct built b = build(CAIRN_MKFS_ZSTD, 14);
	struct cairn_image *img = open_buf(&b);
	struct cairn_chunk_cache_stats st;

	(void)state;
	cairn_image_set_chunk_cache(img, 1);
	check_file(img, "/big", 300 * 1024, 2);
	assert_int_equal(cairn_image_chunk_cache_stats(img, &st), 0);
	assert_int_equal(st.resident_bytes, 0);
	assert_true(st.evictions >= 18);
	cairn_image_close(img);
	free(b.buf);
}

/* ---- hostile chunk maps ---- */

static uint64_t chunk_off(const uint8_t *buf)
{
	const struct cairn_disk_chunked_super *z =
		(const struct cairn_disk_chunked_super *)(buf + CAIRN_CHUNKED_SUPER_OFF);

	return cairn_le64(z->chunk_off);
}

static struct cairn_disk_chunk *chunk(uint8_t *buf, uint64_t i)
{
	return (struct cairn_disk_chunk *)(buf + chunk_off(buf) + i * CAIRN_CHUNK_SIZE);
}

static struct cairn_disk_inode *inode_of(const struct built *b, const char *path,
				       cairn_ino_t *ino)
{
	struct cairn_image *img = open_buf(b);

	*ino = ino_of(img, path);
	cairn_image_close(img);
	return hostile_inode(b->buf, *ino);
}

/* Reads all of inode ino from the patched image: must fail as corrupt. fsck
 * must count a problem and not crash. */
static void expect_corrupt(struct built *b, cairn_ino_t ino)
{
	struct cairn_image *img;
	char *buf = malloc(400 * 1024);
	ssize_t n;

	assert_non_null(buf);
	cairn_fixup_checksums(b->buf, b->len);
	img = open_buf(b);
	n = cairn_image_read(img, ino, buf, 400 * 1024, 0);
	assert_int_equal(n, -CAIRN_ECORRUPT);
	assert_non_null(cairn_image_corruption(img));
	cairn_image_close(img);
	img = open_buf(b);
	assert_true(cairn_image_fsck(img, CAIRN_FSCK_DATA, NULL, NULL) > 0);
	cairn_image_close(img);
	free(buf);
}

typedef void (*patch_fn)(struct built *b, struct cairn_disk_chunk *c,
			 struct cairn_disk_inode *d);

static void hostile(patch_fn patch)
{
	struct built b = build(CAIRN_MKFS_ZSTD, 14);
	cairn_ino_t ino;
	struct cairn_disk_inode *d = inode_of(&b, "/big", &ino);

	patch(&b, chunk(b.buf, cairn_le64(d->data_ref) + 1), d);
	expect_corrupt(&b, ino);
	free(b.buf);
}

static void past_image(struct built *b, struct cairn_disk_chunk *c, struct cairn_disk_inode *d)
{
	c->disk_off = cairn_le64(b->len - 10);
}

static void stored_too_long(struct built *b, struct cairn_disk_chunk *c,
			    struct cairn_disk_inode *d)
{
	c->stored_len = cairn_le32(CAIRN_CHUNK_ULEN(cairn_le32(c->info)));
}

static void ulen_too_long(struct built *b, struct cairn_disk_chunk *c, struct cairn_disk_inode *d)
{
	c->info = cairn_le32((cairn_le32(c->info) & 0xff000000u) | (1u << 20));
}

static void ulen_short(struct built *b, struct cairn_disk_chunk *c, struct cairn_disk_inode *d)
{
	c->info = cairn_le32(cairn_le32(c->info) - 1); /* not what the file needs there */
}

static void bad_codec(struct built *b, struct cairn_disk_chunk *c, struct cairn_disk_inode *d)
{
	c->info = cairn_le32((cairn_le32(c->info) & 0xffffffu) | 9u << 24);
}

static void zero_with_bytes(struct built *b, struct cairn_disk_chunk *c,
			    struct cairn_disk_inode *d)
{
	c->info = cairn_le32((cairn_le32(c->info) & 0xffffffu) | CAIRN_CODEC_ZERO << 24);
}

static void garbage(struct built *b, struct cairn_disk_chunk *c, struct cairn_disk_inode *d)
{
	memset(b->buf + cairn_le64(c->disk_off), 0xff, cairn_le32(c->stored_len));
}

/* A frame of twice the chunk in zeros, in the chunk's place: a bomb. */
static void bomb(struct built *b, struct cairn_disk_chunk *c, struct cairn_disk_inode *d)
{
	size_t n = 2u << 14, cap = ZSTD_compressBound(n);
	char *zero = calloc(1, n), *out = malloc(cap);
	size_t got = ZSTD_compress(out, cap, zero, n, 3);

	assert_false(ZSTD_isError(got));
	assert_true(got < cairn_le32(c->stored_len));
	memcpy(b->buf + cairn_le64(c->disk_off), out, got);
	c->stored_len = cairn_le32((uint32_t)got);
	free(zero);
	free(out);
}

static void too_many_chunks(struct built *b, struct cairn_disk_chunk *c,
			    struct cairn_disk_inode *d)
{
	d->data_count = cairn_le64(1ull << 40);
}

static void test_hostile_records(void **state)
{
	(void)state;
	hostile(past_image);
	hostile(stored_too_long);
	hostile(ulen_too_long);
	hostile(ulen_short);
	hostile(bad_codec);
	hostile(zero_with_bytes);
	hostile(garbage);
	hostile(bomb);
	hostile(too_many_chunks);
}

/* A small file lives in a fragment: bad references to it are corrupt. */
static void test_hostile_fragment(void **state)
{
	struct built b = build(CAIRN_MKFS_LZ4, 14);
	cairn_ino_t ino;
	struct cairn_disk_inode *d = inode_of(&b, "/dir/mid", &ino);
	uint64_t ref = cairn_le64(d->frag_ref);

	(void)state;
	assert_int_equal(cairn_le64(d->data_count), 0);
	d->frag_off = cairn_le32(0xfffff000u);
	expect_corrupt(&b, ino);
	d->frag_off = 0;
	d->frag_ref = cairn_le64(1ull << 50);
	expect_corrupt(&b, ino);
	d->frag_ref = cairn_le64(ref);
	d->size = cairn_le64(20000); /* a tail longer than a chunk */
	expect_corrupt(&b, ino);
	free(b.buf);
}

/* Overlapping chunks read without harm; fsck names them. */
static void test_overlap(void **state)
{
	struct built b = build(CAIRN_MKFS_ZSTD, 14);
	cairn_ino_t ino;
	struct cairn_disk_inode *d = inode_of(&b, "/big", &ino);
	struct cairn_disk_chunk *c0 = chunk(b.buf, cairn_le64(d->data_ref));
	struct cairn_image *img;
	char buf[64];

	(void)state;
	chunk(b.buf, cairn_le64(d->data_ref) + 1)->disk_off = c0->disk_off;
	cairn_fixup_checksums(b.buf, b.len);
	img = open_buf(&b);
	assert_int_equal(cairn_image_read(img, ino_of(img, "/big"), buf, sizeof(buf), 16384),
			 sizeof(buf));
	assert_true(cairn_image_fsck(img, 0, NULL, NULL) > 0);
	cairn_image_close(img);
	free(b.buf);
}

/* The compression record: a bad chunk size or table refuses the image at open. */
static void test_hostile_record(void **state)
{
	struct built b = build(CAIRN_MKFS_ZSTD, 14);
	struct cairn_disk_chunked_super *z =
		(struct cairn_disk_chunked_super *)(b.buf + CAIRN_CHUNKED_SUPER_OFF);
	struct cairn_disk_chunked_super keep = *z;
	struct cairn_image *img = NULL;

	(void)state;
	z->chunk_log2 = cairn_le32(25);
	cairn_fixup_checksums(b.buf, b.len);
	assert_int_equal(hostile_open(b.buf, b.len, NULL, NULL, NULL, &img), -CAIRN_ECORRUPT);
	*z = keep;
	z->chunk_count = cairn_le64(1ull << 60);
	cairn_fixup_checksums(b.buf, b.len);
	assert_int_equal(hostile_open(b.buf, b.len, NULL, NULL, NULL, &img), -CAIRN_ECORRUPT);
	*z = keep;
	z->level ^= 1; /* without re-sealing: the record's hash */
	assert_int_equal(hostile_open(b.buf, b.len, NULL, NULL, NULL, &img), -CAIRN_ECORRUPT);
	free(b.buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_codecs),
		cmocka_unit_test(test_incompat_bit),
		cmocka_unit_test(test_burst_decompresses_once),
		cmocka_unit_test(test_random_no_readahead),
		cmocka_unit_test(test_delivered_drops),
		cmocka_unit_test(test_readahead_skips_delivered),
		cmocka_unit_test(test_prefetch_hot_decompresses),
		cmocka_unit_test(test_hot_chunk_read_then_pushed_once),
		cmocka_unit_test(test_hot_codec),
		cmocka_unit_test(test_hot_codec_refused),
		cmocka_unit_test(test_span_and_random),
		cmocka_unit_test(test_single_flight),
		cmocka_unit_test(test_read_pinned),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_multi_chunk_read_one_request),
		cmocka_unit_test(test_no_readahead_out_of_hot),
		cmocka_unit_test(test_hostile_records),
		cmocka_unit_test(test_hostile_fragment),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_hostile_record),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
