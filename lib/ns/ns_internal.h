/* SPDX-License-Identifier: MIT */
/*
 * Namespace internals shared by the files of lib/ns. A node is what a node id points at:
 * the object seen through the merged tree, with its image inode (lower) and its
 * RAM inode (upper) if it has been copied up or lives in RAM.
 */
#ifndef CAIRN_NS_INTERNAL_H
#define CAIRN_NS_INTERNAL_H

#include <pthread.h>
#include <sys/stat.h>
#include <stdint.h>
#include <cairn/ns.h>
#include "util/bufpool.h"

struct ns_node {
	struct ns_node *parent;     /* pinned; NULL for the root */
	char *name;                 /* in the parent, as last looked up (copy-up, traces) */
	size_t name_len;
	uint64_t nlookup;           /* kernel lookup references */
	uint64_t pins;              /* children that point here */
	cairn_ino_t lower;          /* image inode, valid when has_lower */
	cairn_ino_t upper;          /* RAM inode, valid once has_upper is set (atomic) */
	int has_upper;              /* set with release order after upper is stored */
	uint64_t st_ino;            /* the inode number users see */
	uint32_t type;              /* S_IFMT bits */
	unsigned has_lower : 1;
	unsigned tmp : 1;           /* inside a RAM subtree of a tmp= namespace */
	unsigned keyed_lower : 1;   /* in the lower table */
	unsigned keyed_upper : 1;   /* in the upper table */
	/* A copy-up of it runs without the lock (copyup.c). Not a bit field: the
	 * bits above are read without the lock, so no word they share may change. */
	int copying;
	struct ns_node *next_lower, *next_upper; /* hash chains */
	struct ns_node *all_prev, *all_next;     /* every node, for teardown */
};

/* Node tables: image inode -> node, RAM inode -> node. */
struct ns_table {
	struct ns_node **b;
	size_t mask, count;
};

/* A set of inode numbers (opaque directories), or with counts a map from them
 * (image inodes with names gone). */
struct ns_set {
	uint64_t *keys;             /* 0 = empty slot, UINT64_MAX = deleted */
	uint64_t *vals;             /* counts beside keys, or NULL for a plain set */
	size_t mask, used;
};

#define NS_READ_BUF (1u << 20)     /* the largest read a kernel sends (FUSE max_read) */
#define NS_READ_BUF_MIN (128u << 10)/* smaller buffers come cheap from the heap */
#define NS_READ_BUFS 2u             /* kept: at most 2 MiB resident */

struct cairn_ns {
	pthread_mutex_t lock;       /* node tables, node links, every tree change */
	pthread_cond_t copy_done;   /* a node's `copying` went back to 0 (with lock) */
	struct cairn_image *img;    /* NULL when empty */
	struct cairn_ramfs *ram;    /* NULL when read-only */
	int overlay;                /* whole tree writable */
	int use_once;               /* CAIRN_NS_USE_ONCE */
	/* The image alone and no CAIRN_NS_NAMES: node ids are image inode numbers
	 * (node.c) and no node is kept but the root. */
	int lean;
	struct ns_node *root;
	struct ns_node *all;        /* list of every node but the root */
	struct ns_table lower_tab, upper_tab;
	struct ns_set opaque;       /* upper dirs that hide the image below them */
	/* Image files with several names: how many of those names no longer show
	 * the image inode (copied up, removed or renamed over), so the names that
	 * still do show the right link count. */
	struct ns_set gone_links;
	cairn_ino_t *tmp_roots;     /* RAM inodes of the tmp= subtrees */
	size_t n_tmp_roots;
	uint64_t ino_offset;        /* added to RAM inode numbers shown to users */
	size_t ram_chunk;           /* the RAM fs's chunk size: the grain of holes */
	uint64_t nodes, copy_ups;
	uint64_t refs;              /* lookup references the caller holds (atomic) */
	uint64_t over_forgets;      /* forgets beyond the lookup count (caller bugs; atomic) */
	/* Large buffers of image reads (cairn_ns_read_iov), NS_READ_BUF bytes
	 * each, kept for reuse, all resident (ns.c, read_buf_get). */
	struct util_bufpool read_bufs;
};

static inline int ns_has_upper(const struct ns_node *n)
{
	return __atomic_load_n(&n->has_upper, __ATOMIC_ACQUIRE);
}

/* node.c (lock held unless said otherwise) */
/* The node id names (live: looked up and not yet forgotten). In a lean
 * namespace no node stands for it: *view is filled to (image inode, type, no
 * upper, no parent, no name) and returned, to be used for this call only.
 * Without the lock in a lean namespace. */
struct ns_node *ns_node_get(struct cairn_ns *ns, uint64_t id, struct ns_node *view);
uint64_t ns_node_id(struct cairn_ns *ns, struct ns_node *n);
/* A lean namespace's id for image inode ino of mode `mode`. */
uint64_t ns_lean_id(cairn_ino_t ino, uint32_t mode);
struct ns_node *ns_table_find_lower(struct cairn_ns *ns, cairn_ino_t ino);
struct ns_node *ns_table_find_upper(struct cairn_ns *ns, cairn_ino_t ino);
int ns_table_add_upper(struct cairn_ns *ns, struct ns_node *n);
void ns_table_del(struct cairn_ns *ns, struct ns_node *n);
int ns_table_init(struct ns_table *t);
void ns_table_destroy(struct ns_table *t);
/* A new node under parent (pinned), not yet in any table; NULL on ENOMEM. */
struct ns_node *ns_node_new(struct cairn_ns *ns, struct ns_node *parent, const char *name,
			    size_t len);
int ns_node_add(struct cairn_ns *ns, struct ns_node *n, int share_lower);
void ns_node_put(struct cairn_ns *ns, struct ns_node *n, uint64_t nlookup);
void ns_node_free_all(struct cairn_ns *ns);
/* n's name becomes name in parent. name is a copy made with ns_name_dup (NULL
 * on ENOMEM), which n takes over: the copy is made before anything changes, so
 * the move itself cannot fail and no node keeps a stale name. */
char *ns_name_dup(const char *name, size_t len);
void ns_node_move(struct cairn_ns *ns, struct ns_node *n, struct ns_node *parent, char *name,
		  size_t len);

/* with_counts: keep a count per key (ns_set_count, ns_set_inc). */
int ns_set_init(struct ns_set *s, int with_counts);
void ns_set_destroy(struct ns_set *s);
int ns_set_has(const struct ns_set *s, uint64_t key);
int ns_set_add(struct ns_set *s, uint64_t key);
void ns_set_del(struct ns_set *s, uint64_t key);
uint64_t ns_set_count(const struct ns_set *s, uint64_t key);
int ns_set_inc(struct ns_set *s, uint64_t key);

/* copy.c: the one copy routine from the image into the RAM layer. */
/* Copy image object `lower` to name in RAM dir `updir`; *st gets its attributes and
 * one RAM lookup reference. Only file data below `keep` bytes is copied (the rest
 * reads as a hole until the caller truncates): NS_KEEP_ALL for all of it. On
 * failure nothing is left behind. */
#define NS_KEEP_ALL UINT64_MAX
int ns_copy_object(struct cairn_ns *ns, cairn_ino_t lower, cairn_ino_t updir, const char *name,
		   size_t len, uint64_t keep, struct cairn_stat *st);
/* Everything but the object itself onto RAM inode ino: the data below keep,
 * xattrs, with NS_COPY_ORIGIN the origin xattr (copy-up), then mode, owner and
 * times of image object ls (ls->ino is its image inode); *st (may be NULL) gets
 * the result. */
#define NS_COPY_ORIGIN 1u
int ns_fill_object(struct cairn_ns *ns, const struct cairn_stat *ls, cairn_ino_t ino,
		   uint64_t keep, unsigned flags, struct cairn_stat *st);
/* Seed RAM dir dst with the content of image dir lower (recursively, with hard
 * links inside the subtree kept), then give dst lower's xattrs and attributes.
 * Directories already there are merged; any other name already there gives
 * -EEXIST. What was copied before an error stays. */
int ns_seed_dir(struct cairn_ns *ns, cairn_ino_t dst, cairn_ino_t lower);

/* copyup.c */
/* Give n an upper inode (parents first), copying data below `keep` (see above).
 * -EROFS when the namespace forbids it. Lock held. With may_unlock, a regular
 * file's data is copied with the lock dropped meanwhile (so the caller must hold
 * no state the lock guards across the call), and a copy-up of n already running
 * is waited for; without it, the copy runs under the lock and a running one
 * gives -EAGAIN (wait on ns->copy_done and start over). */
int ns_copy_up(struct cairn_ns *ns, struct ns_node *n, uint64_t keep, int may_unlock);
/* An image file with several names loses one of them (copy-up, unlink, rename
 * over it): its other names show one link less. Lock held. */
int ns_link_gone(struct cairn_ns *ns, const struct cairn_stat *ls);
/* Image files with several names get an inode number of their own on copy-up:
 * the other names still show the image's inode and data. */
static inline int ns_link_group(const struct cairn_stat *ls)
{
	return (ls->mode & S_IFMT) != S_IFDIR && ls->nlink > 1;
}

/* ns.c */
/* Whether n may change: everything in an overlay or RAM-only namespace, only the
 * RAM subtrees otherwise. */
static inline int ns_writable(const struct cairn_ns *ns, const struct ns_node *n)
{
	return ns->overlay || n->tmp;
}
int ns_is_tmp_root(const struct cairn_ns *ns, cairn_ino_t upper);
/* The inode number users see for a RAM inode no image object is merged with:
 * the image's for a copy-up (its origin), else the RAM number past the image's. */
uint64_t ns_upper_st_ino(struct cairn_ns *ns, cairn_ino_t up);
/* -ENAMETOOLONG, or -EINVAL for an empty name or one holding '/'. */
int ns_check_name(const char *name, size_t len);
/* Make n changeable: -EROFS where the namespace is read-only, else copy it up
 * with its data below `keep` (NS_KEEP_ALL; a truncation needs no more). Lock
 * held; it may be dropped meanwhile (ns_copy_up with may_unlock). */
int ns_prep_write(struct cairn_ns *ns, struct ns_node *n, uint64_t keep);

/* merge.c: one name seen through both layers. */
/* A directory's layers as seen at one moment. */
struct ns_dsnap {
	int has_lower, has_upper, opaque;
	cairn_ino_t lower, upper;
};
void ns_snap_dir(struct cairn_ns *ns, struct ns_node *d, struct ns_dsnap *s);
/* Does the image show through below an upper directory? */
static inline int ns_merged(const struct ns_dsnap *s)
{
	return s->has_lower && !s->opaque;
}
/* One name in a merged directory. */
struct ns_mentry {
	int in_upper, whiteout, in_lower;
	struct cairn_stat ust;          /* upper attributes */
	cairn_ino_t lower;
	uint32_t lower_mode, lower_nlink;
};
#define NS_FIND_LOCKED   1u /* the caller holds ns->lock */
#define NS_FIND_KEEP_REF 2u /* an upper entry keeps its RAM lookup reference */
#define NS_FIND_HIDDEN   4u /* also the image name an upper entry covers (changes
			     * need it: removing such a name leaves a whiteout) */
/* The upper layer first: a whiteout hides the image's name, an upper entry
 * shows (a directory merged with the image's when neither is opaque). Without
 * NS_FIND_HIDDEN the image is only asked what shows. */
int ns_find_entry(struct cairn_ns *ns, const struct ns_dsnap *d, const char *name, size_t len,
		  unsigned how, struct ns_mentry *m);
static inline int ns_entry_exists(const struct ns_mentry *m)
{
	return m->in_upper || (m->in_lower && !m->whiteout);
}
static inline uint32_t ns_entry_mode(const struct ns_mentry *m)
{
	return m->in_upper ? m->ust.mode : m->lower_mode;
}
/* The layers of a directory entry that is itself a directory. Lock held. */
void ns_entry_dir_layers(struct cairn_ns *ns, const struct ns_mentry *m, int *has_up,
			 cairn_ino_t *up, int *has_low, cairn_ino_t *low);
/* Upper dir up hides the image below it (opaque, or a tmp= root). */
int ns_upper_hides(struct cairn_ns *ns, cairn_ino_t up, int locked);
/* 1 when RAM dir `dir` has the name (an entry or a whiteout), 0 when not, or a
 * negative errno. */
int ns_upper_has(struct cairn_ns *ns, cairn_ino_t dir, const char *name, size_t len);
int ns_make_whiteout(struct cairn_ns *ns, cairn_ino_t dir, const char *name, size_t len);
/* Is the merged directory (upper `up`, image `low`) empty? Whiteouts don't count. */
int ns_dir_empty(struct cairn_ns *ns, int has_up, cairn_ino_t up, int has_low, cairn_ino_t low);
/* Remove the whiteouts of an upper directory that is about to go away. */
int ns_purge_whiteouts(struct cairn_ns *ns, cairn_ino_t up);
/* Image object `lower` loses a name that showed it (ns_link_gone). Lock held. */
int ns_lower_name_gone(struct cairn_ns *ns, cairn_ino_t lower);

/* A whiteout is a RAM character device 0/0 marked with NS_XATTR_WHITEOUT: a 0/0
 * device a user makes (overlayfs's own whiteout format, which overlayfs upper
 * directories and container layers hold) is a file like any other. */
int ns_is_whiteout(struct cairn_ns *ns, const struct cairn_stat *st);

#define NS_WHITEOUT_MODE (S_IFCHR | 0)

/* A copied-up RAM inode remembers the image inode it came from, so its inode
 * number stays the same after the node is forgotten and looked up again. Names
 * under this prefix are the namespace's own and hidden from users. */
#define NS_XATTR_PREFIX "trusted.cairn."
#define NS_XATTR_ORIGIN "trusted.cairn.origin"
#define NS_XATTR_WHITEOUT "trusted.cairn.whiteout"
int ns_reserved_xattr(const char *name);

#endif
