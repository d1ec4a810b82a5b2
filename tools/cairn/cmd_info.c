/* SPDX-License-Identifier: MIT */
/* cairn info: the superblock summary of an image, as text or JSON. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <cairn/format.h>
#include "cli.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: cairn info [--json] [options] IMAGE\n"
		   "Prints the superblock summary of IMAGE (reads only the superblock).\n"
		   "  --json             one JSON object instead of text\n\n%s",
		cli_image_opts_help);
}

static void uuid_string(const uint8_t u[16], char out[37])
{
	char *p = out;

	for (int i = 0; i < 16; i++) {
		p += sprintf(p, "%02x", u[i]);
		if (i == 3 || i == 5 || i == 7 || i == 9)
			*p++ = '-';
	}
	*p = '\0';
}

static void features(uint32_t compat, uint32_t incompat, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	if (compat & CAIRN_COMPAT_HOT_PREFIX)
		n += (size_t)snprintf(buf + n, len - n, "%shot_prefix", n ? "," : "");
	if (compat & CAIRN_COMPAT_FILE_HASH && n < len)
		n += (size_t)snprintf(buf + n, len - n, "%sfile_hash", n ? "," : "");
	if (incompat & CAIRN_INCOMPAT_EXTENTS && n < len)
		n += (size_t)snprintf(buf + n, len - n, "%sextents", n ? "," : "");
	if (incompat & CAIRN_INCOMPAT_CHUNKED && n < len)
		n += (size_t)snprintf(buf + n, len - n, "%schunked", n ? "," : "");
	if (incompat & CAIRN_INCOMPAT_META_Z && n < len)
		n += (size_t)snprintf(buf + n, len - n, "%smeta_z", n ? "," : "");
	if (compat & CAIRN_COMPAT_VERITY && n < len)
		snprintf(buf + n, len - n, "%sverity", n ? "," : "");
}

/* The name mkfs -z takes for the writer's codec and level (CAIRN_CODEC_RAW: none). */
static const char *codec_name(uint32_t codec, uint32_t level)
{
	if (codec == CAIRN_CODEC_RAW)
		return "none";
	if (codec == CAIRN_CODEC_ZSTD)
		return "zstd";
	return level ? "lz4hc" : "lz4";
}

static double ratio(uint64_t logical, uint64_t stored)
{
	return stored ? (double)logical / (double)stored : 0.0;
}

static void print_text(const struct cairn_image_info *in, const char *root)
{
	char uuid[37], feat[128], t[64];
	struct cairn_time bt = { in->build_time, 0 };

	uuid_string(in->uuid, uuid);
	features(in->compat, in->incompat, feat, sizeof(feat));
	cli_format_time(&bt, 0, t, sizeof(t));
	printf("format:        cairn %u.%u\n", in->version_major, in->version_minor);
	printf("uuid:          %s\n", uuid);
	printf("features:      %s (compat 0x%x, incompat 0x%x)\n", feat[0] ? feat : "none",
	       in->compat, in->incompat);
	printf("root digest:   %s\n", root);
	/* 0 is what a reproducible build without --mtime or SOURCE_DATE_EPOCH
	 * records (no clock is read): not a date in 1970. */
	if (in->build_time == 0)
		printf("build time:    unset (0: no --mtime or SOURCE_DATE_EPOCH at mkfs)\n");
	else
		printf("build time:    %s (%" PRId64 ")\n", t, in->build_time);
	printf("image size:    %" PRIu64 " bytes\n", in->image_size);
	printf("inodes:        %" PRIu64 " (including unused inode 0)\n", in->inode_count);
	printf("regular files: %" PRIu64 ", %" PRIu64 " bytes of data\n", in->file_count,
	       in->data_bytes);
	printf("dirents:       %" PRIu64 "\n", in->dirent_count);
	printf("xattrs:        %" PRIu64 "\n", in->xattr_count);
	printf("extents:       %" PRIu64 "\n", in->extent_count);
	/* Compressed metadata is addressed logically, and its range may start where
	 * the data does: say so, or the two lines seem to claim the same bytes. */
	printf("metadata:      %" PRIu64 " bytes at %" PRIu64 " (%sblob %" PRIu64 " bytes)\n",
	       in->meta_len, in->meta_off, in->meta_block_size ? "logical addresses; " : "",
	       in->blob_len);
	if (in->meta_block_size)
		printf("stored meta:   %" PRIu64 " bytes, %" PRIu64 " KiB blocks (zstd)\n",
		       in->meta_stored_len, in->meta_block_size >> 10);
	printf("data:          %" PRIu64 " bytes at %" PRIu64 "\n", in->data_len, in->data_off);
	if (in->compat & CAIRN_COMPAT_HOT_PREFIX)
		printf("hot prefix:    %" PRIu64 " bytes at %" PRIu64 "\n", in->hot_len, in->hot_off);
	else
		printf("hot prefix:    none\n");
	if (in->hot_logical_bytes) /* with --hot-codec, another codec than the rest's */
		printf("hot chunks:    %s,%u: %" PRIu64 " of %" PRIu64 " logical bytes (ratio %.2f)\n",
		       codec_name(in->hot_codec, in->hot_level), in->hot_level,
		       in->hot_stored_bytes, in->hot_logical_bytes,
		       ratio(in->hot_logical_bytes, in->hot_stored_bytes));
	if (!in->chunk_size) {
		printf("compression:   none\n");
		return;
	}
	printf("compression:   %s,%u, %" PRIu64 " KiB chunks\n", codec_name(in->codec, in->level),
	       in->level,
	       in->chunk_size >> 10);
	printf("chunks:        %" PRIu64 " (%" PRIu64 " fragments)\n", in->chunk_count,
	       in->frag_count);
	printf("stored:        %" PRIu64 " of %" PRIu64 " logical bytes (ratio %.2f)\n",
	       in->stored_bytes, in->logical_bytes,
	       ratio(in->logical_bytes, in->stored_bytes));
}

static void print_json(const struct cairn_image_info *in, const char *root)
{
	char uuid[37], feat[128];

	uuid_string(in->uuid, uuid);
	features(in->compat, in->incompat, feat, sizeof(feat));
	printf("{\"version\": \"%u.%u\", \"uuid\": \"%s\", \"root_digest\": \"%s\", \"features\": \"%s\", "
	       "\"compat\": %u, \"incompat\": %u, \"build_time\": %" PRId64 ", "
	       "\"image_size\": %" PRIu64 ", \"inode_count\": %" PRIu64 ", "
	       "\"file_count\": %" PRIu64 ", \"data_bytes\": %" PRIu64 ", "
	       "\"dirent_count\": %" PRIu64 ", \"xattr_count\": %" PRIu64 ", "
	       "\"extent_count\": %" PRIu64 ", \"meta_off\": %" PRIu64 ", \"meta_len\": %" PRIu64 ", "
	       "\"blob_len\": %" PRIu64 ", \"data_off\": %" PRIu64 ", \"data_len\": %" PRIu64 ", "
	       "\"hot_off\": %" PRIu64 ", \"hot_len\": %" PRIu64 ", "
	       "\"codec\": \"%s\", \"level\": %u, \"chunk_size\": %" PRIu64 ", "
	       "\"chunk_count\": %" PRIu64 ", \"frag_count\": %" PRIu64 ", "
	       "\"stored_bytes\": %" PRIu64 ", \"logical_bytes\": %" PRIu64 ", "
	       "\"hot_codec\": \"%s\", \"hot_level\": %u, "
	       "\"hot_stored_bytes\": %" PRIu64 ", \"hot_logical_bytes\": %" PRIu64 ", "
	       "\"meta_block_size\": %" PRIu64 ", \"meta_stored_len\": %" PRIu64 "}\n",
	       in->version_major, in->version_minor, uuid, root, feat, in->compat, in->incompat,
	       in->build_time, in->image_size, in->inode_count, in->file_count, in->data_bytes,
	       in->dirent_count, in->xattr_count, in->extent_count, in->meta_off, in->meta_len,
	       in->blob_len, in->data_off, in->data_len, in->hot_off, in->hot_len,
	       in->chunk_size ? codec_name(in->codec, in->level) : "none", in->level,
	       in->chunk_size, in->chunk_count, in->frag_count, in->stored_bytes, in->logical_bytes,
	       in->hot_logical_bytes ? codec_name(in->hot_codec, in->hot_level) : "none",
	       in->hot_level, in->hot_stored_bytes, in->hot_logical_bytes,
	       in->meta_block_size, in->meta_stored_len);
}

int cmd_info(int argc, char **argv)
{
	struct cli_image_opts o;
	struct cairn_image_info in;
	struct cairn_image *img;
	struct cairn_stack *stack;
	uint8_t d[CAIRN_DIGEST_LEN];
	char root[CAIRN_DIGEST_TEXT_LEN + 32];
	int json = 0, npos, rc;
	char *pos[1];
	const struct cli_flag flags[] = { { "--json", NULL, &json }, { NULL, NULL, NULL } };

	cli_image_opts_init(&o);
	rc = cli_read_args("info", argc, argv, &o, flags, pos, 1, &npos, usage);
	if (rc)
		return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	if (npos != 1) {
		cli_err("info", "needs IMAGE (see cairn info --help)");
		return CLI_EXIT_USAGE;
	}
	stack = cli_open_image("info", pos[0], &o);
	img = stack ? cairn_stack_image(stack) : NULL;
	if (!img)
		return CLI_EXIT_FAIL;
	cairn_image_get_info(img, &in);
	rc = cairn_image_root_digest(img, d);
	if (rc && rc != -ENODATA) {
		cli_img_err("info", pos[0], img, "reading block 0", rc);
		cairn_stack_close(stack);
		return CLI_EXIT_FAIL;
	}
	if (rc)
		snprintf(root, sizeof(root), "none (built without verification)");
	else
		cairn_digest_format(d, root);
	if (json)
		print_json(&in, rc ? "" : root);
	else
		print_text(&in, root);
	cli_print_stats(&o, stack);
	cairn_stack_close(stack);
	return CLI_EXIT_OK;
}
