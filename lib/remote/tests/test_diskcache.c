/* SPDX-License-Identifier: MIT */
/* diskcache device over mem -> fault: every read right at odd offsets, served
 * from disk with the device below failing, the bound under a walk of twice the
 * budget, torn and foreign chunks dropped, persistence across opens, the
 * coarse LRU touch and eviction by it, the key;
 * s3:// origins from options, the environment and a credentials file; a
 * vectored read asks the device below once for the chunks it lacks. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <cairn/bdev.h>
#include <cairn/testing.h>
#include <cairn/remote.h>

#define SZ (1000 * 1000 + 123) /* not a multiple of the chunk: a short last chunk */
#define CHUNK 8192

struct fixture {
	char dir[64];
	uint8_t *src;
	struct cairn_bdev *fault; /* borrowed: inside the stack */
};

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	snprintf(fx->dir, sizeof(fx->dir), "/tmp/cairn-dc-test.XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	fx->src = malloc(SZ);
	for (size_t i = 0; i < SZ; i++)
		fx->src[i] = (uint8_t)(i * 131 + (i >> 9));
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	nftw(fx->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(fx->src);
	free(fx);
	return 0;
}

static struct cairn_bdev *open_dc(struct fixture *fx, uint64_t max)
{
	struct cairn_diskcache_config cfg = { .dir = fx->dir, .key = "img-1", .max_bytes = max,
					      .chunk_bytes = CHUNK };
	struct cairn_bdev *m, *f, *d;

	assert_int_equal(cairn_bdev_mem_new(fx->src, SZ, 0, &m), 0);
	assert_int_equal(cairn_bdev_fault_new(m, NULL, &f), 0);
	assert_int_equal(cairn_bdev_diskcache_new(f, &cfg, &d), 0);
	fx->fault = f;
	return d;
}

static void fail_below(struct fixture *fx)
{
	struct cairn_fault_config fc = { .fail_every = 1 };

	assert_int_equal(cairn_bdev_fault_set(fx->fault, &fc), 0);
}

static uint64_t dir_bytes(const char *dir)
{
	char cmd[256];
	unsigned long long n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "find %s -type f ! -name '.*' -printf '%%s\\n' | awk '{s+=$1} END {print s+0}'", dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_int_equal(fscanf(p, "%llu", &n), 1);
	pclose(p);
	return n;
}

static void check_read(struct cairn_bdev *d, const uint8_t *src, size_t len, uint64_t off)
{
	uint8_t *buf = malloc(len);

	assert_int_equal(cairn_bdev_read(d, buf, len, off), (ssize_t)len);
	assert_memory_equal(buf, src + off, len);
	free(buf);
}

static void test_reads_and_offline(void **state)
{
	struct fixture *fx = *state;
	struct cairn_bdev *d = open_dc(fx, 0);
	struct cairn_diskcache_stats st;
	uint8_t b[16];

	check_read(d, fx->src, 100, 5);              /* inside one chunk */
	check_read(d, fx->src, 3 * CHUNK + 7, CHUNK - 3); /* across chunks */
	check_read(d, fx->src, 123, SZ - 123);       /* the short last chunk */
	check_read(d, fx->src, 5 * CHUNK, 0);
	/* Everything read so far now comes from disk, even with the device failing. */
	fail_below(fx);
	check_read(d, fx->src, 100, 50);
	check_read(d, fx->src, 4 * CHUNK, CHUNK);
	check_read(d, fx->src, 123, SZ - 123);
	/* Not cached and the device is down: the error, never stale bytes. */
	assert_int_equal(cairn_bdev_read(d, b, sizeof(b), 100 * CHUNK), -EIO);
	assert_int_equal(cairn_bdev_diskcache_stats(d, &st), 0);
	assert_true(st.hits >= 6);
	assert_true(st.stored >= 5);
	cairn_bdev_close(d);

	/* A new open (a remount) has them too. */
	d = open_dc(fx, 0);
	fail_below(fx);
	check_read(d, fx->src, 3 * CHUNK + 7, CHUNK - 3);
	cairn_bdev_close(d);
}

/* held: the chunks whose files are here, whatever the device below says. */
static void test_held(void **state)
{
	struct fixture *fx = *state;
	struct cairn_bdev *d = open_dc(fx, 0);

	assert_int_equal(cairn_bdev_held(d, 0, 3 * CHUNK), 0);
	assert_int_equal(cairn_bdev_held(fx->fault, 0, CHUNK), -ENOTSUP); /* mem cannot tell */
	check_read(d, fx->src, 3 * CHUNK, 0);
	check_read(d, fx->src, 10, SZ - 10); /* the short last chunk */
	assert_int_equal(cairn_bdev_held(d, 0, 3 * CHUNK), 1);
	assert_int_equal(cairn_bdev_held(d, CHUNK + 5, 10), 1);
	assert_int_equal(cairn_bdev_held(d, 2 * CHUNK, 2 * CHUNK), 0);
	assert_int_equal(cairn_bdev_held(d, SZ - 10, 100), 1); /* clipped to the device */
	cairn_bdev_close(d);
	d = open_dc(fx, 0); /* a remount sees the same */
	assert_int_equal(cairn_bdev_held(d, 0, 3 * CHUNK), 1);
	cairn_bdev_close(d);
}

/* A read that lacks several stretches of chunks asks the device below once,
 * from the first missing chunk to the last (the chunks it has in between come
 * again: bytes cost less than a round trip to a server each). */
static void test_one_request_per_read(void **state)
{
	struct fixture *fx = *state;
	struct cairn_diskcache_config cfg = { .dir = fx->dir, .key = "img-1", .chunk_bytes = CHUNK };
	struct cairn_bdev_counters c;
	struct cairn_bdev *m, *st, *d;

	assert_int_equal(cairn_bdev_mem_new(fx->src, SZ, 0, &m), 0);
	assert_int_equal(cairn_bdev_stats_new(m, &st), 0);
	assert_int_equal(cairn_bdev_diskcache_new(st, &cfg, &d), 0);
	check_read(d, fx->src, CHUNK, CHUNK);     /* chunks 1 and 3 on disk */
	check_read(d, fx->src, CHUNK, 3 * CHUNK);
	check_read(d, fx->src, 5 * CHUNK - 9, 4); /* 0, 2, 4 missing */
	assert_int_equal(cairn_bdev_get_stats(st, &c), 0);
	assert_int_equal(c.requests, 3);
	assert_int_equal(cairn_bdev_held(d, 0, 5 * CHUNK), 1);
	check_read(d, fx->src, 3 * CHUNK, 6 * CHUNK); /* one missing stretch: one request */
	assert_int_equal(cairn_bdev_get_stats(st, &c), 0);
	assert_int_equal(c.requests, 4);
	cairn_bdev_close(d);
}

static void stale_usage(const char *dir, uint64_t v)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/.usage", dir);
	f = fopen(p, "r+");
	assert_non_null(f);
	assert_int_equal(fwrite(&v, sizeof(v), 1, f), 1);
	fclose(f);
}

static void test_bound(void **state)
{
	struct fixture *fx = *state;
	uint64_t max = SZ / 2;
	struct cairn_bdev *d = open_dc(fx, max);
	struct cairn_diskcache_stats st;

	for (int pass = 0; pass < 2; pass++)
		for (uint64_t off = 0; off < SZ; off += 3 * CHUNK) {
			size_t len = off + 3 * CHUNK < SZ ? 3 * CHUNK : SZ - off;

			check_read(d, fx->src, len, off);
			assert_true(dir_bytes(fx->dir) <= max);
		}
	assert_int_equal(cairn_bdev_diskcache_stats(d, &st), 0);
	assert_true(st.evicted > 0);
	assert_true(st.used_bytes <= max);
	cairn_bdev_close(d);
	/* A lowered budget is met at the next open. */
	d = open_dc(fx, max / 4);
	assert_true(dir_bytes(fx->dir) <= max / 4);
	cairn_bdev_close(d);
	/* A counter a crash left low (a chunk renamed in, the count not yet
	 * written): the first store measures afresh, so the bound holds. */
	d = open_dc(fx, max / 4);
	stale_usage(fx->dir, 0);
	for (uint64_t off = 0; off < SZ; off += 3 * CHUNK) {
		check_read(d, fx->src, off + 3 * CHUNK < SZ ? 3 * CHUNK : SZ - off, off);
		assert_true(dir_bytes(fx->dir) <= max / 4);
	}
	cairn_bdev_close(d);
}

/* Files kept beside an image's chunks (its learnt profile): named after the
 * key, outside the bound, never evicted. */
static void test_side_file(void **state)
{
	struct fixture *fx = *state;
	uint64_t max = SZ / 2;
	struct cairn_bdev *d = open_dc(fx, max), *up;
	char path[256], want[256], tiny[8];
	struct stat st;
	FILE *f;

	assert_int_equal(cairn_bdev_diskcache_file(d, ".profile", path, sizeof(path)), 0);
	snprintf(want, sizeof(want), "%s/img-1.profile", fx->dir);
	assert_string_equal(path, want);
	assert_int_equal(cairn_bdev_diskcache_file(d, ".profile", tiny, sizeof(tiny)),
			 -ENAMETOOLONG);
	assert_int_equal(cairn_bdev_stats_new(d, &up), 0); /* found from above too */
	assert_int_equal(cairn_bdev_diskcache_file(up, "", path, sizeof(path)), 0);
	assert_int_equal(cairn_bdev_diskcache_file(fx->fault, "", path, sizeof(path)), -EINVAL);
	f = fopen(want, "w");
	assert_non_null(f);
	for (int i = 0; i < 3 * SZ / 4; i++) /* larger than what the bound leaves */
		fputc('x', f);
	fclose(f);
	for (uint64_t off = 0; off < SZ; off += 3 * CHUNK) {
		size_t len = off + 3 * CHUNK < SZ ? 3 * CHUNK : SZ - off;

		check_read(up, fx->src, len, off);
	}
	assert_int_equal(stat(want, &st), 0);
	assert_int_equal(st.st_size, 3 * SZ / 4);
	cairn_bdev_close(up);
}

static void damage(const char *dir, uint64_t index, int how)
{
	char p[256];
	int fd;

	snprintf(p, sizeof(p), "%s/img-1/%016llx", dir, (unsigned long long)index);
	fd = open(p, O_WRONLY);
	assert_true(fd >= 0);
	if (how == 0)
		assert_int_equal(ftruncate(fd, 1000), 0);  /* torn */
	else
		assert_int_equal(pwrite(fd, "XY", 2, 500), 2); /* flipped bytes */
	close(fd);
}

static void test_torn(void **state)
{
	struct fixture *fx = *state;
	struct cairn_bdev *d = open_dc(fx, 0);
	struct cairn_diskcache_stats st;
	char p[256];

	check_read(d, fx->src, 4 * CHUNK, 0);
	damage(fx->dir, 1, 0);
	damage(fx->dir, 2, 1);
	/* A leftover of a crashed writer goes at the next scan: not at open (which
	 * reads no more than the usage counter), at the first store. */
	snprintf(p, sizeof(p), "%s/img-1/tmp.1.0000000000000003", fx->dir);
	fclose(fopen(p, "w"));
	cairn_bdev_close(d);
	d = open_dc(fx, 0);
	assert_int_equal(access(p, F_OK), 0);
	check_read(d, fx->src, 4 * CHUNK, 0); /* damaged chunks come from below again */
	assert_int_equal(access(p, F_OK), -1);
	assert_int_equal(cairn_bdev_diskcache_stats(d, &st), 0);
	assert_int_equal(st.torn, 2);
	fail_below(fx);
	check_read(d, fx->src, 4 * CHUNK, 0); /* and were stored again */
	cairn_bdev_close(d);
}

static void chunk_path(const char *dir, uint64_t index, char *out, size_t len)
{
	snprintf(out, len, "%s/img-1/%016llx", dir, (unsigned long long)index);
}

/* Sets chunk index's mtime (its last use, for eviction) to `ago` seconds back. */
static void set_age(const char *dir, uint64_t index, time_t ago)
{
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = time(NULL) - ago } };
	char p[256];

	chunk_path(dir, index, p, sizeof(p));
	assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
}

static time_t age(const char *dir, uint64_t index)
{
	struct stat st;
	char p[256];

	chunk_path(dir, index, p, sizeof(p));
	if (stat(p, &st) < 0)
		return -1; /* evicted */
	return time(NULL) - st.st_mtim.tv_sec;
}

/* The LRU is coarse: a hit within a minute of the chunk's last store or hit
 * leaves its time as it is (no utimensat per warm hit), one after it makes it
 * recent, and eviction still goes by that time: oldest first. */
static void test_coarse_touch(void **state)
{
	struct fixture *fx = *state;
	uint64_t one = 32 + CHUNK; /* a chunk file: header and data */
	struct cairn_bdev *d = open_dc(fx, 0);

	check_read(d, fx->src, 4 * CHUNK, 0);
	set_age(fx->dir, 0, 30);   /* hit within the window */
	set_age(fx->dir, 1, 120);  /* hit after it */
	set_age(fx->dir, 2, 1000); /* not hit: the oldest */
	set_age(fx->dir, 3, 500);
	fail_below(fx);
	check_read(d, fx->src, 2 * CHUNK, 0);
	cairn_bdev_close(d);
	assert_true(age(fx->dir, 0) >= 29 && age(fx->dir, 0) <= 31);
	assert_true(age(fx->dir, 1) >= 0 && age(fx->dir, 1) <= 2);
	assert_true(age(fx->dir, 2) >= 999);
	/* A budget of three chunks keeps two (7/8 of it): the two least recently
	 * used go, chunk 0, untouched at its hit, stays before them. */
	d = open_dc(fx, 3 * one);
	cairn_bdev_close(d);
	assert_int_equal(age(fx->dir, 2), -1);
	assert_int_equal(age(fx->dir, 3), -1);
	assert_true(age(fx->dir, 0) >= 29);
	assert_true(age(fx->dir, 1) >= 0 && age(fx->dir, 1) <= 2);
}

/* The one origin note in DIR/.origins. */
static void note_path(const char *dir, char *out, size_t len)
{
	char d[128];
	struct dirent *de;
	DIR *od;

	snprintf(d, sizeof(d), "%s/.origins", dir);
	od = opendir(d);
	assert_non_null(od);
	out[0] = '\0';
	while ((de = readdir(od)))
		if (de->d_name[0] != '.')
			snprintf(out, len, "%s/%s", d, de->d_name);
	closedir(od);
	assert_true(out[0] != '\0');
}

/* What a cache directory can hold besides chunk files, in a chunk's place: a
 * FIFO (an open of it for reading would wait for a writer forever), a
 * directory, a symlink. Each is not a chunk: the bytes come from below, the
 * chunk is stored in place of the FIFO and the symlink, and nothing hangs (the
 * alarm fails the test instead). A usage counter of the
 * wrong length or far too large, and origin notes that are garbage, name a bad
 * key or no size, are survived the same way. */
static void test_hostile_dir(void **state)
{
	struct fixture *fx = *state;
	struct cairn_diskcache_config cfg = { .dir = fx->dir, .key = "img-1", .chunk_bytes = CHUNK };
	static const char *const notes[] = { "", "garbage", "../up 4096\n", "img-1\n", "img-1 0\n",
					     "img-1 -5\n", "img-1 12x\n", "img-1  5\n", " 5\n" };
	struct cairn_bdev *d = open_dc(fx, 0), *off;
	char p[512];
	uint64_t huge = UINT64_MAX;
	FILE *f;

	alarm(60);
	cairn_bdev_close(d); /* makes DIR/img-1 */
	snprintf(p, sizeof(p), "%s/img-1/%016llx", fx->dir, 0ull);
	assert_int_equal(mkfifo(p, 0644), 0);
	snprintf(p, sizeof(p), "%s/img-1/%016llx", fx->dir, 1ull);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/img-1/%016llx", fx->dir, 2ull);
	assert_int_equal(symlink("/dev/zero", p), 0);
	d = open_dc(fx, 0);
	check_read(d, fx->src, 4 * CHUNK, 0);
	check_read(d, fx->src, 4 * CHUNK, 0);
	cairn_bdev_close(d);
	stale_usage(fx->dir, huge); /* over any budget: met at open, by a scan */
	d = open_dc(fx, SZ);
	check_read(d, fx->src, 4 * CHUNK, 0);
	assert_true(dir_bytes(fx->dir) <= SZ);
	cairn_bdev_close(d);
	snprintf(p, sizeof(p), "%s/.usage", fx->dir);
	assert_int_equal(truncate(p, 3), 0);
	d = open_dc(fx, 0);
	check_read(d, fx->src, 4 * CHUNK, 0);
	cairn_bdev_close(d);

	assert_int_equal(cairn_diskcache_remember(fx->dir, "http://x/img", "img-1", SZ), 0);
	note_path(fx->dir, p, sizeof(p));
	for (size_t i = 0; i < sizeof(notes) / sizeof(notes[0]); i++) {
		int rc;

		f = fopen(p, "w");
		assert_non_null(f);
		fputs(notes[i], f);
		fclose(f);
		off = NULL;
		rc = cairn_bdev_diskcache_offline(&cfg, "http://x/img", &off);
		if (rc != -ENOENT && rc != -EINVAL)
			fail_msg("origin note '%s': %d", notes[i], rc);
		assert_null(off);
	}
	/* The note as written stays good. */
	assert_int_equal(cairn_diskcache_remember(fx->dir, "http://x/img", "img-1", SZ), 0);
	assert_int_equal(cairn_bdev_diskcache_offline(&cfg, "http://x/img", &off), 0);
	assert_int_equal(cairn_bdev_size(off), SZ);
	/* From disk, as the device below has no bytes: chunk 0 and 2 (stored in
	 * place of the FIFO and the symlink), 3; not 1, a directory still. */
	check_read(off, fx->src, CHUNK, 0);
	check_read(off, fx->src, 2 * CHUNK, 2 * CHUNK);
	cairn_bdev_close(off);
	alarm(0);
}

static void test_bad_config(void **state)
{
	struct fixture *fx = *state;
	struct cairn_diskcache_config cfg = { .dir = fx->dir, .key = "../x" };
	struct cairn_bdev *m, *d;

	assert_int_equal(cairn_bdev_mem_new(fx->src, SZ, 0, &m), 0);
	assert_int_equal(cairn_bdev_diskcache_new(m, &cfg, &d), -EINVAL);
	cfg.key = "ok";
	cfg.chunk_bytes = 5000;
	assert_int_equal(cairn_bdev_diskcache_new(m, &cfg, &d), -EINVAL);
	cairn_bdev_close(m);
}

static void test_key(void **state)
{
	struct fixture *fx = *state;
	struct cairn_bdev *m;
	char k1[128], k2[128];

	assert_int_equal(cairn_bdev_mem_new(fx->src, SZ, 0, &m), 0);
	assert_int_equal(cairn_diskcache_key(m, k1, sizeof(k1)), 0);
	assert_non_null(strstr(k1, "raw-"));
	cairn_bdev_close(m);
	fx->src[10] ^= 1; /* another image: another key */
	assert_int_equal(cairn_bdev_mem_new(fx->src, SZ, 0, &m), 0);
	assert_int_equal(cairn_diskcache_key(m, k2, sizeof(k2)), 0);
	assert_string_not_equal(k1, k2);
	cairn_bdev_close(m);
}

/* Keys go into the URL as SigV4's canonical URI for S3 spells them: each byte
 * but A-Z a-z 0-9 - . _ ~ / as %XX, once; a key of 3000 bytes fits. */
static void s3_key_escaping(const struct cairn_s3_config *c)
{
	struct cairn_http_origin o;
	char *store, *url, *want;
	size_t n = 3000;

	assert_int_equal(cairn_s3_origin("s3://bkt/my dir/a+b%20c~d_e-f.g(1)&=?#\xc3\xa9\xe2\x82\xac",
					 c, &o, &store), 0);
	assert_string_equal(o.url, "https://bkt.s3.us-west-2.amazonaws.com/"
			    "my%20dir/a%2Bb%2520c~d_e-f.g%281%29%26%3D%3F%23%C3%A9%E2%82%AC");
	free(store);
	url = malloc(n + 16);
	want = malloc(3 * n + 64);
	strcpy(url, "s3://b/");
	strcpy(want, "https://b.s3.us-west-2.amazonaws.com/");
	for (size_t i = 0; i < n; i++) {
		url[7 + i] = '\xff';
		strcat(want, "%FF");
	}
	url[7 + n] = '\0';
	assert_int_equal(cairn_s3_origin(url, c, &o, &store), 0);
	assert_string_equal(o.url, want);
	assert_string_equal(o.session_token, "T");
	free(store);
	free(url);
	free(want);
}

static void test_s3(void **state)
{
	struct fixture *fx = *state;
	struct cairn_s3_config c = { .endpoint = "http://127.0.0.1:9000/", .region = "eu-west-1",
				     .access_key = "AK", .secret_key = "SK" };
	struct cairn_http_origin o;
	char *store, path[128];
	FILE *f;

	assert_int_equal(cairn_s3_origin("s3://bkt/a/b.cairn", &c, &o, &store), 0);
	assert_string_equal(o.url, "http://127.0.0.1:9000/bkt/a/b.cairn");
	assert_string_equal(o.aws_sigv4, "aws:amz:eu-west-1:s3");
	assert_string_equal(o.userpwd, "AK:SK");
	assert_null(o.session_token);
	free(store);
	/* From a credentials file, profile "p", and AWS's own endpoint. */
	snprintf(path, sizeof(path), "%s/creds", fx->dir);
	f = fopen(path, "w");
	fputs("[default]\naws_access_key_id=D\naws_secret_access_key=DS\n[p]\n"
	      " aws_access_key_id = PK \naws_secret_access_key=PS\naws_session_token=T\n", f);
	fclose(f);
	setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_ENDPOINT_URL");
	unsetenv("AWS_ENDPOINT_URL_S3");
	c = (struct cairn_s3_config){ .profile = "p", .region = "us-west-2" };
	assert_int_equal(cairn_s3_origin("s3://bkt/k", &c, &o, &store), 0);
	assert_string_equal(o.url, "https://bkt.s3.us-west-2.amazonaws.com/k");
	assert_string_equal(o.userpwd, "PK:PS");
	assert_string_equal(o.session_token, "T");
	free(store);
	s3_key_escaping(&c);
	assert_int_equal(cairn_s3_origin("s3://bkt", &c, &o, &store), -EINVAL);
	assert_int_equal(cairn_s3_origin("s3:///k", &c, &o, &store), -EINVAL);
	assert_true(cairn_url_is_remote("HTTPS://x/y"));
	assert_false(cairn_url_is_remote("/srv/http://x"));
}

/* A device below that takes vectors (as http does): counts them and their entries. */
struct vec_below {
	struct cairn_bdev base;
	const uint8_t *src;
	unsigned vectors, entries, reads;
};

static ssize_t vb_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	struct vec_below *b = (struct vec_below *)dev;

	b->reads++;
	memcpy(buf, b->src + off, len);
	return (ssize_t)len;
}

static int vb_readv(struct cairn_bdev *dev, const struct cairn_bdev_iov *v, unsigned n)
{
	struct vec_below *b = (struct vec_below *)dev;

	b->vectors++;
	b->entries += n;
	for (unsigned i = 0; i < n; i++)
		memcpy(v[i].buf, b->src + v[i].off, v[i].len);
	return 0;
}

static void vb_close(struct cairn_bdev *dev)
{
	(void)dev; /* on the test's stack */
}

static const struct cairn_bdev_ops vb_ops = { .version = 3, .name = "vecbelow",
					      .read = vb_read, .close = vb_close,
					      .readv = vb_readv };

static void test_readv_one_request(void **state)
{
	struct fixture *fx = *state;
	struct cairn_diskcache_config cfg = { .dir = fx->dir, .key = "img-v", .chunk_bytes = CHUNK };
	struct vec_below b = { .src = fx->src };
	static uint8_t buf[5][3 * CHUNK + 1];
	/* chunk 10 whole, part of 3 (on disk), 50 to 51, 11, 10 again, the short last */
	const struct cairn_bdev_iov v[5] = {
		{ buf[0], CHUNK, 10 * CHUNK }, { buf[1], 100, 3 * CHUNK + 7 },
		{ buf[2], CHUNK + 2, 50 * CHUNK + CHUNK - 1 }, { buf[3], 2 * CHUNK, 11 * CHUNK - CHUNK / 2 },
		{ buf[4], 200, SZ - 200 } };
	struct cairn_bdev *d;

	assert_int_equal(cairn_bdev_init(&b.base, &vb_ops, NULL, SZ), 0);
	assert_int_equal(cairn_bdev_diskcache_new(&b.base, &cfg, &d), 0);
	assert_true(cairn_bdev_readv_native(d));
	assert_int_equal(cairn_bdev_read(d, buf[0], 10, 3 * CHUNK), 10); /* chunk 3 on disk */
	assert_int_equal(b.reads, 1);
	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(cairn_bdev_readv(d, v, 5), 0);
	/* One vector, stretches in the order first asked: 10, 50-51, 11-12, the last */
	assert_int_equal(b.vectors, 1);
	assert_int_equal(b.entries, 4);
	assert_int_equal(b.reads, 1);
	for (int i = 0; i < 5; i++) {
		assert_memory_equal(buf[i], fx->src + v[i].off, v[i].len);
		assert_int_equal(buf[i][v[i].len], 0xee);
	}
	/* All on disk now: nothing asked below. */
	memset(buf, 0, sizeof(buf));
	assert_int_equal(cairn_bdev_readv(d, v, 5), 0);
	assert_int_equal(b.vectors, 1);
	for (int i = 0; i < 5; i++)
		assert_memory_equal(buf[i], fx->src + v[i].off, v[i].len);
	cairn_bdev_close(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reads_and_offline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_request_per_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_side_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_torn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_coarse_touch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_config, setup, teardown),
		cmocka_unit_test_setup_teardown(test_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_s3, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readv_one_request, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
