/* SPDX-License-Identifier: MIT */
/*
 * Layer 1: block devices. A bdev is a readable byte range. Devices stack like
 * SQLite VFS shims: delay(stats(file)) and so on. Every read of an image goes
 * through cairn_bdev_read(), which is where delay, counters and faults apply.
 *
 * Ownership: a wrapper owns the device below it. cairn_bdev_close() on the top
 * closes the whole stack. A constructor that fails leaves `below` owned by the
 * caller (nothing was taken).
 */
#ifndef CAIRN_BDEV_H
#define CAIRN_BDEV_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct cairn_bdev;

/* The ops table grows at its end, as SQLite's sqlite3_io_methods do with
 * iVersion: a device says which version of the table it fills in, and the
 * library calls no method that version does not have. Version 1: read, close.
 * Version 2: held (optional, NULL = cannot tell). Version 3: readv (optional,
 * NULL = cairn_bdev_readv() loops over read). Version 4: last_error (optional,
 * NULL = the device records no failures of its own).
 *
 * Fill a table with designated initialisers, which name each field and leave
 * the rest zero:
 *   static const struct cairn_bdev_ops my_ops = {
 *           .version = 1, .name = "mine", .read = my_read, .close = my_close,
 *   };
 * A positional one ({ 1, "mine", my_read, my_close }) still means the same, but
 * warns under -Wextra (missing initializer) each time the table grows. The same
 * goes for every config struct here and in the other headers: name the fields
 * you set (or use the struct's _init() function where it has one). */
#define CAIRN_BDEV_OPS_VERSION 4

/* Why a read failed, as the device that failed saw it: the error an
 * application gets is a bare errno (EIO), this is for the people who read the
 * CLI's message or a daemon's log. */
#define CAIRN_BDEV_ERROR_TEXT 256
struct cairn_bdev_error {
	int err;                            /* negative errno; 0: none recorded */
	uint64_t off, len;                  /* the range, in that device's offsets */
	uint64_t when_ns;                   /* CLOCK_MONOTONIC when recorded */
	uint64_t count;                     /* failures that device recorded in all */
	char device[CAIRN_BDEV_ERROR_TEXT]; /* path or URL; "" when not known */
	char cause[CAIRN_BDEV_ERROR_TEXT];  /* "HTTP 503", curl's text, strerror ... */
};

/* One entry of a vectored read: len bytes of the device at off into buf. */
struct cairn_bdev_iov {
	void *buf;
	size_t len;
	uint64_t off;
};

struct cairn_bdev_ops {
	int version;      /* 1..CAIRN_BDEV_OPS_VERSION: the table as the device knows it */
	const char *name;
	/* Read up to len bytes at off into buf. Returns bytes read (short only at the
	 * end of the device, or when a fault device injects a short read), or a
	 * negative errno. Must be safe to call from several threads at once. */
	ssize_t (*read)(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off);
	/* Free the device and the one below it. */
	void (*close)(struct cairn_bdev *dev);
	/* Version 2. Whether all of [off, off+len) (inside the device) is held
	 * locally, so a read of it costs no request to slow storage below (a disk
	 * cache in front of a server): 1 yes, 0 no, a negative errno when the
	 * device cannot tell. Advice for planning reads (a range may be dropped
	 * the moment after); thread-safe. A wrapper that passes reads through at
	 * the same offsets answers for the device below it. */
	int (*held)(struct cairn_bdev *dev, uint64_t off, uint64_t len);
	/* Version 3. Read every entry of v (n >= 1, each inside the device, as
	 * cairn_bdev_readv() checks) in full: 0, or a negative errno when any entry
	 * failed or came short (the buffers' contents are then undefined, and
	 * nothing outside them is written). Entries may be in any order; a device
	 * that can carry several in one request (http: one multi-range GET) does,
	 * in the order given. Thread-safe. A device with a device below that sets
	 * readv promises a vector costs below what it costs there: it passes the
	 * vector down as one (cairn_bdev_readv_native() relies on this). */
	int (*readv)(struct cairn_bdev *dev, const struct cairn_bdev_iov *v, unsigned n);
	/* Version 3, optional (NULL: yes, when readv is set). Whether readv now
	 * sends a vector as one request: 1 or 0. An http device says 0 once its
	 * server turned out not to answer multi-range GETs (and always for S3). */
	int (*readv_one)(struct cairn_bdev *dev);
	/* Version 4, optional. Fills *out with the device's name (its path or URL,
	 * "" when it has none) and the last failure it recorded of its own
	 * (out->err 0 when none). Thread-safe. */
	void (*last_error)(struct cairn_bdev *dev, struct cairn_bdev_error *out);
};

/* Base of every device; implementations embed it first. */
struct cairn_bdev {
	const struct cairn_bdev_ops *ops;
	struct cairn_bdev *below; /* owned; NULL for a leaf */
	uint64_t size;            /* bytes */
};

/* Registers a device: checks ops (a version this library knows, read and close
 * set) and fills in the base. An embedder's device is set up so before it is
 * stacked or cached (the library's wrappers are too); -EINVAL (dev untouched)
 * for an ops table this library cannot use. */
int cairn_bdev_init(struct cairn_bdev *dev, const struct cairn_bdev_ops *ops,
		    struct cairn_bdev *below, uint64_t size);

/* The single entry point for reads. Rejects reads past size with a short count. */
ssize_t cairn_bdev_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off);
/* Read exactly len bytes or fail: a short read becomes -EIO. */
int cairn_bdev_read_full(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off);
/* The single entry point for vectored reads: every entry in full, or a negative
 * errno (-EINVAL for an entry not inside the device; a short entry is -EIO).
 * A device without a readv method (an ops table of version 1 or 2, or NULL
 * there) is read entry by entry through its read method, in the order given. */
int cairn_bdev_readv(struct cairn_bdev *dev, const struct cairn_bdev_iov *v, unsigned n);
/* A readv method for wrappers that read through at the same offsets: passes the
 * vector to the device below as it is. */
int cairn_bdev_readv_below(struct cairn_bdev *dev, const struct cairn_bdev_iov *v, unsigned n);
/* Whether a vector sent to dev reaches slow storage as one request: dev has a
 * readv method and so has every device below it, none of whose readv_one says
 * no (file, mem, qcow2 and verify have no readv: there a vector of n entries
 * is n requests). The delay and stats
 * devices count a vector as one request when this holds below them, as n
 * requests otherwise. */
int cairn_bdev_readv_native(struct cairn_bdev *dev);
void cairn_bdev_close(struct cairn_bdev *dev);
/* The newest failure recorded by dev or any device below it (the stack is
 * walked down through `below`): 1 with *out filled, 0 when none has recorded
 * one (*out zeroed). When the device that failed has no name of its own (a
 * fault or verify device), out->device is the name of the lowest device that
 * has one (the file or URL under it). Thread-safe; a read on another thread
 * may record a newer failure the moment after. cairn_bdev_error_format()
 * writes e as "DEVICE: bytes A-B: CAUSE" into text (NUL-terminated, cut at
 * len; "" for no error). */
int cairn_bdev_last_error(struct cairn_bdev *dev, struct cairn_bdev_error *out);
void cairn_bdev_error_format(const struct cairn_bdev_error *e, char *text, size_t len);
/* The device's held method, clipped to its size: 1 held, 0 not, -ENOTSUP when it
 * has none (an ops table of version 1, or NULL there). An empty range is held. */
int cairn_bdev_held(struct cairn_bdev *dev, uint64_t off, uint64_t len);
/* A held method for wrappers that read through at the same offsets: asks below. */
int cairn_bdev_held_below(struct cairn_bdev *dev, uint64_t off, uint64_t len);
static inline uint64_t cairn_bdev_size(const struct cairn_bdev *dev) { return dev->size; }

/* file: pread on a file descriptor, which must be a regular file or a block
 * device (-EINVAL for anything else: a directory, a character device, a FIFO). */
#define CAIRN_BDEV_FILE_DIRECT 1u /* O_DIRECT; reads are bounced through aligned buffers */
int cairn_bdev_file_open(const char *path, unsigned flags, struct cairn_bdev **out);
/* Wraps an open fd; the bdev owns it and closes it. */
int cairn_bdev_file_from_fd(int fd, unsigned flags, struct cairn_bdev **out);

/* mem: a byte buffer. With copy the buffer is copied and owned; otherwise the caller
 * keeps it alive and owns it. */
int cairn_bdev_mem_new(const void *buf, size_t len, int copy, struct cairn_bdev **out);

/* delay: fixed latency per request, optional bandwidth cap, `channels` requests
 * served in parallel (others queue). Sleeps to absolute deadlines (CLOCK_MONOTONIC).
 * A vectored read costs one request (one latency, its bytes on the bus) when the
 * device below takes a vector as one request (cairn_bdev_readv_native: http's
 * multi-range GET), and one request per entry otherwise (a local file), spread
 * over the channels as parallel reads would be. */
struct cairn_delay_config {
	uint64_t latency_ns;        /* per request; 0 = none */
	uint64_t bandwidth_bps;     /* bytes per second; 0 = unlimited */
	unsigned channels;          /* parallel requests; 0 = 1 */
};
int cairn_bdev_delay_new(struct cairn_bdev *below, const struct cairn_delay_config *cfg,
			 struct cairn_bdev **out);

/* stats: counts requests and bytes with a histogram of request sizes. A vectored
 * read counts as the delay device counts it: one request of its total size when
 * the device below takes it as one (cairn_bdev_readv_native), else one per entry. */
#define CAIRN_STATS_BUCKETS 24 /* bucket i: sizes in [2^(i+9), 2^(i+10)), bucket 0 below 1 KiB */
struct cairn_bdev_counters {
	uint64_t requests;
	uint64_t bytes;
	uint64_t errors;
	uint64_t hist[CAIRN_STATS_BUCKETS];
};
int cairn_bdev_stats_new(struct cairn_bdev *below, struct cairn_bdev **out);
/* dev must be a stats device (returns -EINVAL otherwise). */
int cairn_bdev_get_stats(struct cairn_bdev *dev, struct cairn_bdev_counters *out);
void cairn_bdev_reset_stats(struct cairn_bdev *dev);

/* qcow2: a read-only view of the virtual disk in a qcow2 file (versions 2 and 3,
 * zlib and zstd compressed clusters, extended L2 with subclusters, backing chains).
 * Takes `below` (the qcow2 file). Backing files are opened by the name the image
 * holds, relative to base_dir (NULL: an image with a backing file is refused).
 * Encryption, external data files and unknown incompatible features are refused
 * with -ENOTSUP, a damaged header or table gives -CAIRN_ECORRUPT, a backing loop
 * or a chain deeper than max_backing_depth gives -ELOOP; `report` hears why.
 * Thread-safe reads; memory: the L1 table, the L2 cache budget, one cluster. */
struct cairn_qcow2_config {
	size_t l2_cache_bytes;      /* 0 = default (1 MiB); SIZE_MAX never evicts */
	int l2_cache_disabled;      /* read the L2 entries from the file on every lookup */
	unsigned max_backing_depth; /* 0 = default (16) */
	size_t l2_slice_bytes;      /* cache entry size: 0 = default (4 KiB); a power of
				       two >= 512, capped at the cluster size */
	/* Opens a backing file (path already joined to base_dir). NULL = read-only
	 * cairn_bdev_file_open(). Lets a caller put delay/stats under backing files. */
	int (*open_backing)(void *ctx, const char *path, struct cairn_bdev **out);
	void *open_ctx;
	/* Receives one line per refusal, corruption or warning found while
	 * cairn_bdev_qcow2_new() runs (never later; may be NULL). Reads report
	 * damage only through their return value (-CAIRN_ECORRUPT). */
	void (*report)(void *ctx, const char *msg);
	void *report_ctx;
};
int cairn_bdev_is_qcow2(struct cairn_bdev *dev); /* 1, 0, or negative errno */
/* 1 when the first four bytes of a file are the qcow2 magic. */
int cairn_bdev_qcow2_magic(const uint8_t head[4]);
int cairn_bdev_qcow2_new(struct cairn_bdev *below, const char *base_dir,
			 const struct cairn_qcow2_config *cfg, struct cairn_bdev **out);

/* Counters of a qcow2 device (its own, not its backing files'). */
struct cairn_qcow2_stats {
	uint64_t l2_hits, l2_misses;   /* slice lookups in the L2 cache */
	uint64_t l2_evictions;
	uint64_t l2_table_reads;       /* requests to `below` for L2 entries */
	uint64_t l2_resident_bytes;    /* now */
	uint64_t data_requests;        /* requests to `below` for cluster data */
	uint64_t compressed_clusters;  /* clusters decompressed */
	uint64_t backing_reads;        /* requests passed to the backing file */
};
/* dev may be the qcow2 device or any device stacked above it (the stack is walked
 * down through `below`); -EINVAL when there is no qcow2 device in it. */
int cairn_bdev_qcow2_stats(struct cairn_bdev *dev, struct cairn_qcow2_stats *out);

/* offset: bytes [off, off+len) of below, e.g. a partition (len 0 = to the end). */
int cairn_bdev_offset_new(struct cairn_bdev *below, uint64_t off, uint64_t len,
			  struct cairn_bdev **out);

#ifdef __cplusplus
}
#endif

#endif
