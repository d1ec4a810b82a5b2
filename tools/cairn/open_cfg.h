/* SPDX-License-Identifier: MIT */
/*
 * The tools' stack options, filled by option parsing (cli_opts.c, cmd_mount.c):
 * every layer's config held by value here, and handed to the library's stack
 * builder (<cairn/stack.h>) as the pointers of a cairn_stack_opts by
 * cli_stack_open(). No FUSE headers needed here.
 */
#ifndef CAIRN_TOOLS_OPEN_CFG_H
#define CAIRN_TOOLS_OPEN_CFG_H

#include <stddef.h>
#include <stdint.h>
#include <cairn/cairn.h>
#include <cairn/testing.h>

struct cli_remote_cfg {
	struct cairn_http_config http;
	const char *mirrors[CAIRN_HTTP_MAX_ORIGINS - 1]; /* -o mirror=URL, in order */
	unsigned n_mirrors;
	struct cairn_s3_config s3;
	const char *cache_dir;                   /* NULL = no disk cache */
	uint64_t cache_max;                      /* 0 = 1 GiB */
	size_t cache_chunk;                      /* 0 = 128 KiB */
};

struct cli_open_cfg {
	struct cairn_cache_config cache;
	struct cairn_delay_config delay;
	const struct cairn_fault_config *fault; /* the hidden test options; NULL = none */
	uint64_t offset;                         /* image starts here in the file */
	unsigned file_flags;                     /* CAIRN_BDEV_FILE_* */
	struct cairn_qcow2_config qcow2;
	struct cairn_verify_config verify;
	size_t chunk_cache;                      /* decompressed-chunk budget; 0 = default */
	unsigned flags;                          /* CAIRN_STACK_* */
	struct cli_remote_cfg remote;
};

/* cairn_stack_open() (cairn_stack_open_faulty() with c->fault) with c's configs. */
int cli_stack_open(const char *path, const struct cli_open_cfg *c, char *why, size_t why_len,
		   struct cairn_stack **out);
/* cairn_stack_fetch_beside() with c's configs: URL+suffix from the server. */
int cli_fetch_beside(const char *url, const struct cli_open_cfg *c, const char *suffix,
		     size_t max, char *why, size_t why_len, char **text, size_t *len,
		     uint64_t *requests);

#endif
