/* SPDX-License-Identifier: MIT */
/* cairn mkfs: build an image from a directory or a manifest (lib/mkfs). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cairn/format.h>
#include <cairn/mkfs.h>
#include "cli.h"

static const char mkfs_help[] =
	"usage: cairn mkfs [options] SRC_DIR IMAGE\n"
	"       cairn mkfs [options] --manifest FILE IMAGE\n"
	"\n"
	"Build a cairn image from a directory tree or a manifest (docs/MANIFEST.md).\n"
	"The image is written to a temporary file next to IMAGE, synced and renamed;\n"
	"on any error nothing is left at IMAGE. An existing IMAGE is replaced only if\n"
	"it is empty or a cairn image (else --force); a block device is written in\n"
	"place; a symlink is followed to its target; a directory, character device,\n"
	"FIFO or socket is refused. An old IMAGE inside SRC_DIR is left out of the\n"
	"new one. Source atimes are preserved (files are read O_NOATIME).\n"
	"\n"
	"options:\n"
	"  --manifest FILE    take the tree from FILE ('/guest: host', '**' globs, '->')\n"
	"  --all-root         make every file owned by uid 0, gid 0\n"
	"  --uid N            make every file owned by uid N\n"
	"  --gid N            make every file owned by gid N\n"
	"  --mtime SECONDS    set every atime/mtime/ctime and the build time to SECONDS\n"
	"                     (env SOURCE_DATE_EPOCH: clamp later times to it instead)\n"
	"  --exclude PATTERN  leave out paths matching PATTERN (fnmatch; repeatable):\n"
	"                     '/x/*.o' matches the in-image path, 'x/*.o' the path\n"
	"                     without its leading '/', '*.o' (no '/') any name\n"
	"  --order FILE       put the data of the files listed in FILE first, in that\n"
	"                     order (one in-image path per line, or 'PATH OFFSET LENGTH'\n"
	"                     records of a mount trace); they form the hot prefix\n"
	"  --allow-empty-glob a manifest glob that matches nothing is not an error\n"
	"  --force            replace an existing IMAGE that is not a cairn image\n"
	"  -z ALG[,LEVEL]     compress file data: none (default), lz4, lz4hc or zstd,\n"
	"                     with the codec's level (lz4hc 3..12, zstd 1..22)\n"
	"  --hot-codec ALG[,LEVEL]  codec of the hot prefix's chunks (with -z and\n"
	"                     --order; default: the -z one): the chunks a cold start\n"
	"                     decompresses, so lz4hc there costs it less CPU than zstd\n"
	"                     (none stores them raw)\n"
	"  --chunk-size SIZE  logical chunk size of a compressed image, a power of two\n"
	"                     from 16K to 1M (default 128K)\n"
	"  -j N               compress on N threads (default: every online CPU); the\n"
	"                     image is the same whatever N is\n"
	"  --no-compress PAT  store the chunks of paths matching PAT raw (patterns as\n"
	"                     --exclude; repeatable), for data compressed already\n"
	"  --no-compress-from FILE  the same for every pattern in FILE (one per line;\n"
	"                     blank lines and lines starting with '#' are skipped)\n"
	"  --no-fsync         do not fsync the image before renaming it (faster, unsafe)\n"
	"  --granule SIZE     bytes per SHA-256 digest of the image (4K..16M, a power\n"
	"                     of two; default 128K, the reader's cache segment)\n"
	"  --no-verity        no digest table and no root digest (readers then check\n"
	"                     metadata checksums only)\n"
	"  --plain-meta       store the metadata as is, not in compressed blocks (an\n"
	"                     image that cairn readers before format 1.2 can read)\n"
	"  -q, --quiet        no progress bar, summary or warnings\n"
	"  -h, --help         show this help\n"
	"\n"
	"exit status: 0 success, 1 failure (the message names the path), 2 bad usage\n";

/* The builder being written, whose temporary file the signal handler removes on
 * SIGINT/SIGTERM/SIGHUP. A front-end global: signal handlers cannot be handed a
 * context. */
static struct cairn_mkfs *g_mkfs;

static void on_signal(int sig)
{
	const char *tmp = g_mkfs ? cairn_mkfs_temp_path(g_mkfs) : NULL;

	if (tmp)
		unlink(tmp);
	_exit(128 + sig);
}

static void catch_signals(void (*handler)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

struct ui {
	int bar;
	int quiet;
	int drawn;
	int scan_line;
};

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct ui *ui = ctx;
	char bar[41];
	unsigned pct = total ? (unsigned)(done * 100 / total) : 100;
	unsigned fill = pct * 40 / 100;

	if (!ui->bar)
		return;
	if (ui->scan_line) { /* keep the scan count on its own line */
		fputc('\n', stderr);
		ui->scan_line = 0;
	}
	memset(bar, '#', fill);
	memset(bar + fill, '.', 40 - fill);
	bar[40] = '\0';
	fprintf(stderr, "\rmkfs [%s] %3u%% %" PRIu64 "/%" PRIu64 " MiB", bar, pct,
		done >> 20, total >> 20);
	fflush(stderr);
	ui->drawn = 1;
}

static void on_scan(void *ctx, uint64_t entries)
{
	struct ui *ui = ctx;

	if (!ui->bar)
		return;
	fprintf(stderr, "\rmkfs: scanning, %" PRIu64 " entries", entries);
	fflush(stderr);
	ui->drawn = ui->scan_line = 1;
}

static void on_warn(void *ctx, const char *msg)
{
	struct ui *ui = ctx;

	if (!ui->quiet)
		cli_err("mkfs", "warning: %s", msg);
}

static int parse_i64(const char *s, int64_t min, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < min)
		return -EINVAL;
	*out = v;
	return 0;
}

/* cairn_mkfs_write_path() decides how (a temporary file and rename, or a block
 * device in place) and refuses what it must not replace. */
static int write_image(struct cairn_mkfs *m, const char *image)
{
	int rc;

	g_mkfs = m;
	catch_signals(on_signal);
	rc = cairn_mkfs_write_path(m, image);
	catch_signals(SIG_DFL);
	g_mkfs = NULL;
	if (rc)
		cli_err("mkfs", "%s", cairn_mkfs_error(m));
	return rc ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

/* The --no-compress-from files, then the manifest or the source tree; 0, or -1
 * with the reason printed. */
static int add_sources(struct cairn_mkfs *m, const char *manifest, const char *src,
		       const char **rules, size_t nrules)
{
	struct stat st;
	int r = 0;

	for (size_t i = 0; !r && i < nrules; i++)
		r = cairn_mkfs_add_no_compress_file(m, rules[i]);
	if (!r && manifest) {
		r = cairn_mkfs_add_manifest(m, manifest);
	} else if (!r) {
		/* Checked here so the message names the argument, not a path inside. */
		if (stat(src, &st)) {
			cli_err("mkfs", "%s: %s", src, strerror(errno));
			return -1;
		}
		if (!S_ISDIR(st.st_mode)) {
			cli_err("mkfs", "%s: Not a directory (SRC_DIR is a directory; files from "
				"elsewhere go in a --manifest, docs/MANIFEST.md)", src);
			return -1;
		}
		r = cairn_mkfs_add_tree(m, "/", src);
	}
	if (r)
		cli_err("mkfs", "%s", cairn_mkfs_error(m));
	return r ? -1 : 0;
}

/* What was written: the counts, the root digest, the compressed chunks. */
static void print_summary(struct cairn_mkfs *m, const char *image)
{
	struct cairn_mkfs_stats s;

	cairn_mkfs_get_stats(m, &s);
	printf("%s: %" PRIu64 " inodes (%" PRIu64 " files, %" PRIu64 " dirs, %" PRIu64
	       " symlinks, %" PRIu64 " other), %" PRIu64 " inline, %" PRIu64
	       " sparse, %" PRIu64 " deduplicated; %" PRIu64 " bytes of data; image %" PRIu64
	       " bytes (metadata %" PRIu64 ", stored in %" PRIu64 ", hot prefix %" PRIu64 ")\n",
	       image, s.inodes, s.files, s.dirs, s.symlinks, s.others, s.inline_files,
	       s.sparse_files, s.dedup_files, s.data_bytes, s.image_size, s.meta_len,
	       s.meta_stored, s.hot_len);
	if (s.verity) {
		char d[CAIRN_DIGEST_TEXT_LEN];

		cairn_digest_format(s.root, d);
		printf("%s: root digest %s\n", image, d);
	}
	if (s.chunks)
		printf("%s: %" PRIu64 " chunks (%" PRIu64 " fragments, %" PRIu64
		       " stored raw), %" PRIu64 " bytes stored\n",
		       image, s.chunks, s.fragments, s.raw_chunks, s.stored_bytes);
}

int cmd_mkfs(int argc, char **argv)
{
	struct cairn_mkfs_opts o;
	struct ui ui = { 0, 0, 0, 0 };
	const char *manifest = NULL, *pos[2];
	const char **excl = NULL, **nocomp = NULL, **rules = NULL;
	size_t npos = 0, nexcl = 0, nnocomp = 0, nrules = 0;
	int rc = CLI_EXIT_USAGE;
	int64_t v;

	cairn_mkfs_opts_init(&o);
	excl = calloc((size_t)argc + 1, sizeof(*excl));
	nocomp = calloc((size_t)argc + 1, sizeof(*nocomp));
	rules = calloc((size_t)argc + 1, sizeof(*rules));
	if (!excl || !nocomp || !rules) {
		free(excl);
		free(nocomp);
		free(rules);
		return CLI_EXIT_FAIL;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		int takes = !strcmp(a, "--manifest") || !strcmp(a, "--uid") || !strcmp(a, "--gid") ||
			    !strcmp(a, "--mtime") || !strcmp(a, "--exclude") || !strcmp(a, "--order") ||
			    !strcmp(a, "--granule") ||
			    !strcmp(a, "-z") || !strcmp(a, "--hot-codec") ||
			    !strcmp(a, "--chunk-size") || !strcmp(a, "-j") ||
			    !strcmp(a, "--no-compress") || !strcmp(a, "--no-compress-from");
		if (takes && !val) {
			cli_err("mkfs", "%s needs a value", a);
			goto out;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(mkfs_help, stdout);
			rc = CLI_EXIT_OK;
			goto out;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			ui.quiet = 1;
		} else if (!strcmp(a, "--all-root")) {
			o.all_root = 1;
		} else if (!strcmp(a, "--no-fsync")) {
			o.no_fsync = 1;
		} else if (!strcmp(a, "--force")) {
			o.force = 1;
		} else if (!strcmp(a, "--allow-empty-glob")) {
			o.allow_empty_globs = 1;
		} else if (!strcmp(a, "--no-verity")) {
			o.no_verity = 1;
		} else if (!strcmp(a, "--plain-meta")) {
			o.plain_meta = 1;
		} else if (!strcmp(a, "--granule")) {
			uint64_t g;

			if (cli_parse_size(val, &g) || g < 4096 || g > (16u << 20) || (g & (g - 1))) {
				cli_err("mkfs", "--granule: needs a power of two from 4K to 16M, got '%s'",
					val);
				goto out;
			}
			o.granule_shift = (unsigned)__builtin_ctzll(g);
		} else if (!strcmp(a, "--manifest")) {
			manifest = val;
		} else if (!strcmp(a, "--uid") || !strcmp(a, "--gid")) {
			if (parse_i64(val, 0, &v) || v > UINT32_MAX) {
				cli_err("mkfs", "%s: bad id '%s'", a, val);
				goto out;
			}
			*(a[2] == 'u' ? &o.uid : &o.gid) = v;
		} else if (!strcmp(a, "--mtime")) {
			if (parse_i64(val, INT64_MIN, &v)) {
				cli_err("mkfs", "--mtime: bad time '%s' (seconds since the epoch)", val);
				goto out;
			}
			o.set_mtime = 1;
			o.mtime = v;
		} else if (!strcmp(a, "--exclude")) {
			excl[nexcl++] = val;
		} else if (!strcmp(a, "--order")) {
			o.order_file = val;
		} else if (!strcmp(a, "-z")) {
			if (cairn_mkfs_parse_codec(val, &o.codec, &o.level)) {
				cli_err("mkfs", "-z: bad codec '%s' (none, lz4, lz4hc[,3..12], "
					"zstd[,1..22])", val);
				goto out;
			}
		} else if (!strcmp(a, "--hot-codec")) {
			if (cairn_mkfs_parse_codec(val, &o.hot_codec, &o.hot_level)) {
				cli_err("mkfs", "--hot-codec: bad codec '%s' (none, lz4, "
					"lz4hc[,3..12], zstd[,1..22])", val);
				goto out;
			}
			o.set_hot_codec = 1;
		} else if (!strcmp(a, "--chunk-size")) {
			uint64_t cs;

			if (cli_parse_size(val, &cs) || cs < (1u << CAIRN_CHUNK_LOG2_MIN) ||
			    cs > (1u << CAIRN_CHUNK_LOG2_MAX) || (cs & (cs - 1))) {
				cli_err("mkfs", "--chunk-size: '%s' is not a power of two from 16K "
					"to 1M", val);
				goto out;
			}
			o.chunk_log2 = (unsigned)__builtin_ctzll(cs);
		} else if (!strcmp(a, "-j")) {
			if (parse_i64(val, 1, &v) || v > 256) {
				cli_err("mkfs", "-j: bad thread count '%s' (1..256)", val);
				goto out;
			}
			o.threads = (unsigned)v;
		} else if (!strcmp(a, "--no-compress")) {
			nocomp[nnocomp++] = val;
		} else if (!strcmp(a, "--no-compress-from")) {
			rules[nrules++] = val;
		} else if (a[0] == '-' && a[1]) {
			char near[80];

			cli_suggest(mkfs_help, a, near, sizeof(near));
			cli_err("mkfs", "unknown option '%s'%s (see cairn mkfs --help)", a, near);
			goto out;
		} else if (cli_empty_arg("mkfs", a)) {
			goto out;
		} else if (npos < 2) {
			pos[npos++] = a;
			continue;
		} else {
			cli_err("mkfs", "too many arguments (see cairn mkfs --help)");
			goto out;
		}
		if (takes)
			i++;
	}
	if (npos != (manifest ? 1u : 2u)) {
		cli_err("mkfs", "needs %s (see cairn mkfs --help)",
			manifest ? "--manifest FILE and IMAGE" : "SRC_DIR and IMAGE");
		goto out;
	}
	if (o.set_hot_codec && (o.codec == CAIRN_MKFS_NONE || !o.order_file)) {
		cli_err("mkfs", "--hot-codec sets the codec of the hot prefix of a compressed "
			"image: it needs -z ALG and --order FILE");
		goto out;
	}
	/* Options of compressed images on an image that is not: they change
	 * nothing, so say so (not refused: a script may loop over -z none too). */
	if (o.codec == CAIRN_MKFS_NONE && (o.chunk_log2 || nnocomp || nrules))
		on_warn(&ui, "--chunk-size and --no-compress apply to compressed images "
			"(-z lz4, lz4hc or zstd); this one is not compressed");
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	if (sde && *sde) {
		if (parse_i64(sde, INT64_MIN, &v)) {
			cli_err("mkfs", "SOURCE_DATE_EPOCH: bad value '%s'", sde);
			goto out;
		}
		o.set_epoch = 1;
		o.epoch = v;
	}
	o.output = pos[npos - 1];
	o.excludes = excl;
	o.exclude_count = nexcl;
	o.no_compress = nocomp;
	o.no_compress_count = nnocomp;
	ui.bar = !ui.quiet && isatty(STDERR_FILENO);
	o.progress = on_progress;
	o.scan_progress = on_scan;
	o.warn = on_warn;
	o.ctx = &ui;

	struct cairn_mkfs *m;
	rc = CLI_EXIT_FAIL;
	if (cairn_mkfs_new(&o, &m)) {
		cli_err("mkfs", "out of memory");
		goto out;
	}
	const char *image = pos[npos - 1];
	if (!add_sources(m, manifest, pos[0], rules, nrules)) {
		rc = write_image(m, image);
		if (ui.drawn)
			fputc('\n', stderr);
		if (!rc && !ui.quiet)
			print_summary(m, image);
	}
	cairn_mkfs_free(m);
out:
	free(excl);
	free(nocomp);
	free(rules);
	return rc;
}
