/* SPDX-License-Identifier: MIT */
/* http device against tests/net/faultserver.py on 127.0.0.1 (started here; the
 * test skips without python3 or when not run from the repository root): size
 * and head from the first request, reads at odd offsets and from parallel
 * threads, an ETag or size change gives EIO and counts, 503s are retried and
 * counted, a hung server gives EIO (bounded by the timeout), a dead primary fails
 * over to the mirror, and bad configs are refused. Vectors: one multi-range GET,
 * parts in any order; a server answering with one range or the whole file gets
 * separate requests from then on; bad multipart answers fail the vector and
 * write nothing outside its buffers. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <cairn/bdev.h>
#include <cairn/remote.h>

#define SERVER "tests/net/faultserver.py"
#define SZ (3 * 1024 * 1024 + 777)

struct fx {
	char dir[64], file[96], pidfile[96], mode[112], url[96], dead[96];
	uint8_t *data;
	pid_t server;
};

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0), port;

	assert_true(s >= 0);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	close(s);
	return port;
}

static int port_open(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int s = socket(AF_INET, SOCK_STREAM, 0), ok;

	ok = connect(s, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(s);
	return ok;
}

static void set_mode(struct fx *f, const char *mode)
{
	FILE *m;

	if (!mode) {
		unlink(f->mode);
		return;
	}
	m = fopen(f->mode, "w");
	assert_non_null(m);
	fputs(mode, m);
	fclose(m);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char port[16];
	FILE *o;
	int p;

	snprintf(f->dir, sizeof(f->dir), "/tmp/cairn-http-test.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->file, sizeof(f->file), "%s/img", f->dir);
	snprintf(f->pidfile, sizeof(f->pidfile), "%s/pid", f->dir);
	snprintf(f->mode, sizeof(f->mode), "%s/pid.mode", f->dir);
	f->data = malloc(SZ);
	for (size_t i = 0; i < SZ; i++)
		f->data[i] = (uint8_t)(i * 2654435761u >> 13);
	o = fopen(f->file, "w");
	assert_int_equal(fwrite(f->data, 1, SZ, o), SZ);
	fclose(o);
	p = free_port();
	snprintf(port, sizeof(port), "%d", p);
	snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%d/img", p);
	snprintf(f->dead, sizeof(f->dead), "http://127.0.0.1:%d/img", free_port());
	f->server = fork();
	if (f->server == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2); /* its tracebacks for connections we cut on purpose */
		execlp("python3", "python3", SERVER, port, f->file, f->pidfile, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200 && !port_open(p); i++)
		usleep(50000);
	assert_true(port_open(p));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	kill(f->server, SIGTERM);
	waitpid(f->server, NULL, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	if (system(cmd))
		return -1;
	free(f->data);
	free(f);
	return 0;
}

static struct cairn_bdev *open_http(struct fx *f, const char *mirror, uint64_t timeout_ns,
				    unsigned retries, int *rc)
{
	struct cairn_http_origin o[2] = { { .url = mirror ? f->dead : f->url }, { .url = f->url } };
	struct cairn_http_config cfg = { .origins = o, .n_origins = mirror ? 2 : 1,
					 .timeout_ns = timeout_ns, .retries = retries,
					 .backoff_ns = 10000000 };
	struct cairn_bdev *d = NULL;

	*rc = cairn_bdev_http_new(&cfg, &d);
	return d;
}

static void check(struct cairn_bdev *d, const uint8_t *data, size_t len, uint64_t off)
{
	uint8_t *b = malloc(len);

	assert_int_equal(cairn_bdev_read(d, b, len, off), (ssize_t)len);
	assert_memory_equal(b, data + off, len);
	free(b);
}

static void test_reads(void **state)
{
	struct fx *f = *state;
	struct cairn_http_stats st;
	int rc;
	struct cairn_bdev *d = open_http(f, NULL, 0, 0, &rc);

	assert_int_equal(rc, 0);
	assert_int_equal(cairn_bdev_size(d), SZ);
	check(d, f->data, 100, 7);             /* from the head: no request */
	assert_int_equal(cairn_bdev_http_stats(d, &st), 0);
	assert_int_equal(st.requests, 1);
	check(d, f->data, 200000, 1000000);
	check(d, f->data, 777, SZ - 777);       /* the very end */
	check(d, f->data, 131072 + 5, 131072 - 5); /* across the head's end */
	assert_int_equal(cairn_bdev_http_stats(d, &st), 0);
	assert_int_equal(st.requests, 4);
	assert_int_equal(st.failed, 0);
	cairn_bdev_close(d);
}

struct par {
	struct cairn_bdev *d;
	const uint8_t *data;
	int seed, bad;
};

static void *reader(void *arg)
{
	struct par *p = arg;
	uint8_t b[65536];

	for (int i = 0; i < 12; i++) {
		uint64_t off = ((uint64_t)(p->seed * 7919 + i * 104729) * 4099) % (SZ - sizeof(b));

		if (cairn_bdev_read(p->d, b, sizeof(b), off) != (ssize_t)sizeof(b) ||
		    memcmp(b, p->data + off, sizeof(b)))
			p->bad++;
	}
	return NULL;
}

static void test_parallel(void **state)
{
	struct fx *f = *state;
	struct par p[6];
	pthread_t t[6];
	int rc;
	struct cairn_bdev *d = open_http(f, NULL, 0, 0, &rc);

	assert_int_equal(rc, 0);
	for (int i = 0; i < 6; i++) {
		p[i] = (struct par){ d, f->data, i, 0 };
		pthread_create(&t[i], NULL, reader, &p[i]);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(p[i].bad, 0);
	}
	cairn_bdev_close(d);
}

/* The device's last failure: its URL, the range asked and a cause holding want. */
static void check_last_error(struct cairn_bdev *d, const char *url, uint64_t off, uint64_t len,
			     const char *want)
{
	struct cairn_bdev_error e;

	assert_int_equal(cairn_bdev_last_error(d, &e), 1);
	assert_int_equal(e.err, -EIO);
	assert_string_equal(e.device, url);
	assert_int_equal(e.off, off);
	assert_int_equal(e.len, len);
	if (!strstr(e.cause, want))
		fail_msg("cause '%s' lacks '%s'", e.cause, want);
}

static void test_changed(void **state)
{
	struct fx *f = *state;
	struct cairn_http_stats st;
	uint8_t b[4096];
	int rc;
	struct cairn_bdev *d = open_http(f, NULL, 0, 0, &rc);

	assert_int_equal(rc, 0);
	set_mode(f, "etag=v2");
	assert_int_equal(cairn_bdev_read(d, b, sizeof(b), 500000), -EIO);
	check_last_error(d, f->url, 500000, sizeof(b), "the image changed on the server (validator)");
	set_mode(f, "size=2000000");
	assert_int_equal(cairn_bdev_read(d, b, sizeof(b), 500000), -EIO);
	assert_int_equal(cairn_bdev_read(d, b, sizeof(b), 2500000), -EIO); /* past the new end */
	assert_int_equal(cairn_bdev_http_stats(d, &st), 0);
	assert_int_equal(st.changed, 3);
	assert_int_equal(st.failed, 3);
	set_mode(f, NULL);
	check(d, f->data, 4096, 500000);
	cairn_bdev_close(d);
}

static void test_retries_and_timeout(void **state)
{
	struct fx *f = *state;
	struct cairn_http_stats st;
	uint8_t b[4096];
	int rc;
	struct cairn_bdev *d = open_http(f, NULL, 1000000000ull, 3, &rc);

	assert_int_equal(rc, 0);
	set_mode(f, "error=2");              /* every other request: retried */
	for (int i = 0; i < 4; i++)
		check(d, f->data, 4096, 300000 + 10000 * (uint64_t)i);
	set_mode(f, "error=1");              /* always: EIO after 3 retries */
	assert_int_equal(cairn_bdev_read(d, b, sizeof(b), 400000), -EIO);
	check_last_error(d, f->url, 400000, sizeof(b), "HTTP 503 (after 3 retries)");
	assert_int_equal(cairn_bdev_http_stats(d, &st), 0);
	assert_true(st.retries >= 5);
	set_mode(f, "hang");                 /* never answers: EIO at the 1 s deadline */
	assert_int_equal(cairn_bdev_read(d, b, sizeof(b), 600000), -EIO);
	check_last_error(d, f->url, 600000, sizeof(b), "(timed out after 1000 ms");
	assert_int_equal(cairn_bdev_http_stats(d, &st), 0);
	assert_true(st.timeouts >= 1);
	set_mode(f, NULL);
	check(d, f->data, 4096, 600000);
	cairn_bdev_close(d);
}

static void test_mirror_and_config(void **state)
{
	struct fx *f = *state;
	struct cairn_http_config bad = { 0 };
	struct cairn_http_stats st;
	struct cairn_bdev *d;
	int rc;

	d = open_http(f, "dead first", 0, 0, &rc);
	assert_int_equal(rc, 0);
	check(d, f->data, 70000, 2000000);
	assert_int_equal(cairn_bdev_http_stats(d, &st), 0);
	assert_int_equal(st.origin, 1);
	assert_true(st.failovers >= 1);
	cairn_bdev_close(d);
	assert_int_equal(cairn_bdev_http_new(&bad, &d), -EINVAL);
	set_mode(f, "norange");
	d = open_http(f, NULL, 0, 0, &rc);
	assert_int_equal(rc, -ENOTSUP);
	set_mode(f, NULL);
}

/* A Content-Range that sscanf's %llu would read but RFC 9110 does not allow
 * (a sign, no space after "bytes", a number past 2^64-1) is no range: the first
 * answer is refused, so no image of a made-up size is opened. */
static void test_hostile_content_range(void **state)
{
	static const char *bad[] = {
		"crange=bytes_{first}-{last}/+{size}",
		"crange=bytes_-{first}-{last}/{size}",
		"crange=bytes{first}-{last}/{size}",
		"crange=bytes_{first}-{last}/{size}0000000000000000000000",
		"crange=bytes_{first}-{last}/{size}_x",
	};
	struct fx *f = *state;
	struct cairn_bdev *d;
	int rc;

	set_mode(f, "crange=bytes_{first}-{last}/{size}"); /* what a server sends */
	d = open_http(f, NULL, 0, 0, &rc);
	assert_int_equal(rc, 0);
	cairn_bdev_close(d);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		set_mode(f, bad[i]);
		d = open_http(f, NULL, 0, 0, &rc);
		if (rc >= 0)
			fail_msg("opened with %s", bad[i]);
		assert_null(d);
	}
	set_mode(f, NULL);
}

/* Scattered entries out of order (as a profile asks), one in the head, with a
 * guard byte after each buffer. */
#define NV 5
static const uint64_t v_off[NV] = { 2500000, 7, 300001, 1048576, SZ - 1000 };
static const size_t v_len[NV] = { 70000, 100, 4095, 131072, 1000 };

static void fill_vec(struct cairn_bdev_iov *v, uint8_t **b)
{
	for (int i = 0; i < NV; i++) {
		b[i] = realloc(b[i], v_len[i] + 1);
		memset(b[i], 0xee, v_len[i] + 1);
		v[i] = (struct cairn_bdev_iov){ b[i], v_len[i], v_off[i] };
	}
}

static void check_guards(uint8_t **b)
{
	for (int i = 0; i < NV; i++)
		assert_int_equal(b[i][v_len[i]], 0xee);
}

static void check_vec(struct fx *f, uint8_t **b)
{
	for (int i = 0; i < NV; i++)
		assert_memory_equal(b[i], f->data + v_off[i], v_len[i]);
	check_guards(b);
}

static uint64_t requests(struct cairn_bdev *d)
{
	struct cairn_http_stats st;

	assert_int_equal(cairn_bdev_http_stats(d, &st), 0);
	return st.requests;
}

/* A vector of NV entries, one in the head: one GET for the other NV - 1, in
 * the order given or answered in reverse; bad answers fail it. */
static void test_readv_multirange(void **state)
{
	static const char *bad[] = { "mr=badboundary", "mr=badrange", "mr=noclose", "etag=v9" };
	struct fx *f = *state;
	struct cairn_bdev_iov v[NV];
	uint8_t *b[NV] = { 0 };
	int rc;
	struct cairn_bdev *d = open_http(f, NULL, 2000000000ull, 1, &rc);

	assert_int_equal(rc, 0);
	assert_true(cairn_bdev_readv_native(d)); /* asks the server: one request */
	assert_true(cairn_bdev_readv_native(d)); /* and remembers */
	assert_int_equal(requests(d), 2);
	fill_vec(v, b);
	assert_int_equal(cairn_bdev_readv(d, v, NV), 0);
	check_vec(f, b);
	assert_int_equal(requests(d), 3); /* the probe, the question, one GET */
	set_mode(f, "mr=reorder");
	fill_vec(v, b);
	assert_int_equal(cairn_bdev_readv(d, v, NV), 0);
	check_vec(f, b);
	assert_int_equal(requests(d), 4);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		set_mode(f, bad[i]);
		fill_vec(v, b);
		assert_int_equal(cairn_bdev_readv(d, v, NV), -EIO);
		check_guards(b);
	}
	assert_int_equal(requests(d), 4 + 4); /* failed, not sent again */
	/* Cut short: a transport failure, sent again as separate requests. */
	set_mode(f, "mr=truncate");
	fill_vec(v, b);
	assert_int_equal(cairn_bdev_readv(d, v, NV), 0);
	check_vec(f, b);
	assert_int_equal(requests(d), 4 + 4 + 1 + NV - 1);
	set_mode(f, NULL);
	fill_vec(v, b); /* still multi-range: a cut transfer is not remembered */
	assert_int_equal(cairn_bdev_readv(d, v, NV), 0);
	check_vec(f, b);
	assert_int_equal(requests(d), 4 + 4 + NV + 1);
	cairn_bdev_close(d);
	for (int i = 0; i < NV; i++)
		free(b[i]);
}

/* A server that answers a multi-range GET with one range or the whole file:
 * the vector is read with separate requests, and so are later ones. Found by
 * the device's own 2-byte question (mr=single), or by the first vector. */
static void test_readv_fallback(void **state)
{
	static const char *modes[] = { "mr=single", "mr=whole" };
	struct fx *f = *state;
	struct cairn_bdev_iov v[NV];
	uint8_t *b[NV] = { 0 };

	for (int m = 0; m < 2; m++) {
		int rc;
		struct cairn_bdev *d = open_http(f, NULL, 0, 0, &rc);

		assert_int_equal(rc, 0);
		set_mode(f, modes[m]);
		if (m == 0)
			assert_false(cairn_bdev_readv_native(d)); /* asks: one request */
		fill_vec(v, b);
		assert_int_equal(cairn_bdev_readv(d, v, NV), 0);
		check_vec(f, b);
		assert_int_equal(requests(d), 1 + 1 + NV - 1);
		assert_false(cairn_bdev_readv_native(d)); /* the cache then fetches runs */
		set_mode(f, NULL); /* would answer multipart now: not asked again */
		fill_vec(v, b);
		assert_int_equal(cairn_bdev_readv(d, v, NV), 0);
		check_vec(f, b);
		assert_int_equal(requests(d), 1 + 1 + 2 * (NV - 1));
		cairn_bdev_close(d);
	}
	for (int i = 0; i < NV; i++)
		free(b[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reads),
		cmocka_unit_test(test_parallel),
		cmocka_unit_test(test_changed),
		cmocka_unit_test(test_retries_and_timeout),
		cmocka_unit_test(test_mirror_and_config),
		cmocka_unit_test(test_hostile_content_range),
		cmocka_unit_test(test_readv_multirange),
		cmocka_unit_test(test_readv_fallback),
	};

	if (access(SERVER, R_OK) || system("python3 -c '' 2>/dev/null")) {
		printf("skipped: needs python3 and %s (run from the repository root)\n", SERVER);
		return 0;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
