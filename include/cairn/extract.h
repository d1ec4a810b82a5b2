/* SPDX-License-Identifier: MIT */
/*
 * Layer 3 (reader side): restore an image, or a directory of it, into a host
 * directory: every file type, hard links as links, modes (setuid, sticky),
 * owners (opt-in, needs root), atime/mtime to the nanosecond, xattrs, and sparse
 * files with their holes. `cairn extract` is a front end over this.
 *
 *   struct cairn_extract_opts o;
 *   cairn_extract_opts_init(&o);
 *   o.report = print_line;                      one call per problem
 *   cairn_extract_to_dir(img, "/", "out", &o, &stats);
 *
 * Safety: everything is created relative to an open directory descriptor
 * (openat/mkdirat/symlinkat/mknodat/linkat), and no symlink is ever followed
 * while writing: directories are opened with O_NOFOLLOW, files are created
 * with O_EXCL|O_NOFOLLOW, attributes are set on descriptors or with
 * AT_SYMLINK_NOFOLLOW, and names other than single components ('/', '.', '..',
 * empty) are refused. So nothing is written outside the target whatever the
 * image holds. Symlinks are restored verbatim, as tar does (an absolute or
 * '..' target is fine: creating a link writes nothing where it points);
 * safe_links skips those that would lead outside the target when followed.
 *
 * Existing objects: files are never overwritten ("File exists"); existing
 * directories are merged into, as tar does, and keep their own mode, owner and
 * times unless overwrite_dirs. That holds for the target itself: only a target
 * that cairn_extract_to_dir() creates takes the attributes of the image
 * directory (extracting into /tmp keeps its sticky bit).
 *
 * Errors: a problem with one entry is reported through opts->report as a
 * one-line message naming the path ("DIR/a/b: File exists"), and extraction
 * goes on with the next entry, but for a full target (ENOSPC, EDQUOT:
 * "DIR/a/b: No space left on device; extraction stopped"), which ends it. Each call returns 0 when everything was
 * extracted, else the negative errno of the first problem (-CAIRN_ECORRUPT for
 * a corrupt image).
 *
 * Resources: one descriptor per directory level is open at a time (deep trees
 * may need a higher RLIMIT_NOFILE), memory is a few bytes per image inode plus
 * the paths of multi-link files. Calls keep no state between them; several
 * may run at once on one image (the reader is thread-safe).
 */
#ifndef CAIRN_EXTRACT_H
#define CAIRN_EXTRACT_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stdint.h>
#include <cairn/image.h>

struct cairn_extract_opts {
	int safe_links;             /* nonzero: skip symlinks that would lead outside the
				     * target when followed (rsync's --safe-links), each
				     * reported as a problem (-EXDEV); default: restore
				     * every symlink */
	int overwrite_dirs;         /* nonzero: existing directories (the target too) take
				     * the image's attributes (tar --overwrite-dir) */
	int preserve_owner;         /* nonzero: chown to the image's uid/gid (needs root) */
	const char *image_name;     /* names the image in corruption messages ("IMAGE:
				     * corrupt image: ..."); NULL = "image" */
	const char *target_name;    /* names the target in messages ("DIR/a/b: ..."); NULL
				     * = "." (cairn_extract_to_dir: the dir argument) */
	cairn_report_cb report;     /* one call per problem; may be NULL */
	void *ctx;
};

/* Defaults: every symlink restored, existing directories keep their attributes,
 * owners not restored, no report. */
void cairn_extract_opts_init(struct cairn_extract_opts *o);

/* What was created (the root of the subtree, which exists already, not
 * counted) and how many problems were reported. */
struct cairn_extract_stats {
	uint64_t files, dirs, symlinks, hardlinks, others; /* others: devices, fifos, sockets */
	uint64_t data_bytes;        /* bytes of file data written (holes not counted) */
	uint64_t problems;
};

/* Extract the directory `path` of the image ("/" or NULL for the whole image;
 * symlinks in it are followed) into the open directory target_dirfd: its
 * entries become entries of the target; the target, which exists, takes its
 * attributes only with overwrite_dirs. The target is the boundary for
 * safe_links. opts may be NULL (defaults), stats too. The caller keeps
 * target_dirfd (it is not closed). */
int cairn_extract(struct cairn_image *img, const char *path, int target_dirfd,
		  const struct cairn_extract_opts *opts, struct cairn_extract_stats *stats);
/* As cairn_extract(), into the host directory `dir`, created (mode 0700 until
 * the attributes are set) when missing; a `dir` created so takes the image
 * directory's attributes. */
int cairn_extract_to_dir(struct cairn_image *img, const char *path, const char *dir,
			 const struct cairn_extract_opts *opts, struct cairn_extract_stats *stats);

#ifdef __cplusplus
}
#endif

#endif
