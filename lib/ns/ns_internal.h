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

struct cairn_ns {
	pthread_mutex_t lock;       /* node tables, node links, every tree change */
	pthread_cond_t copy_done;   /* a node's `copying` went back to 0 (with lock) */
	struct cairn_image *img;    /* NULL when empty */
	struct cairn_ramfs *ram;    /* NULL when read-only */
	int overlay;                /* whole tree writable */
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
	uint64_t nodes, copy_ups;
};

static inline int ns_has_upper(const struct ns_node *n)
{
	return __atomic_load_n(&n->has_upper, __ATOMIC_ACQUIRE);
}

/* node.c (lock held unless said otherwise) */
struct ns_node *ns_node_get(struct cairn_ns *ns, uint64_t id);
uint64_t ns_node_id(struct cairn_ns *ns, struct ns_node *n);
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
int ns_node_rename(struct cairn_ns *ns, struct ns_node *n, struct ns_node *parent,
		   const char *name, size_t len);

/* with_counts: keep a count per key (ns_set_count, ns_set_inc). */
int ns_set_init(struct ns_set *s, int with_counts);
void ns_set_destroy(struct ns_set *s);
int ns_set_has(const struct ns_set *s, uint64_t key);
int ns_set_add(struct ns_set *s, uint64_t key);
void ns_set_del(struct ns_set *s, uint64_t key);
uint64_t ns_set_count(const struct ns_set *s, uint64_t key);
int ns_set_inc(struct ns_set *s, uint64_t key);

/* copyup.c */
/* Copy image object `lower` to name in RAM dir `updir`; *st gets its attributes and
 * one RAM lookup reference. Only file data below `keep` bytes is copied (the rest
 * reads as a hole until the caller truncates): NS_KEEP_ALL for all of it. On
 * failure nothing is left behind. */
#define NS_KEEP_ALL UINT64_MAX
int ns_copy_object(struct cairn_ns *ns, cairn_ino_t lower, cairn_ino_t updir, const char *name,
		   size_t len, uint64_t keep, struct cairn_stat *st);
/* Xattrs (ACLs), mode, owner and times of image object `lower` onto the existing
 * RAM inode `upper`: the overlay's root, which is RAM from the start. */
int ns_copy_meta(struct cairn_ns *ns, cairn_ino_t lower, cairn_ino_t upper);
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

/* Directory listings collected from one layer (names copied). */
struct ns_dent {
	char *name;
	size_t len;
	cairn_ino_t ino;
	unsigned dtype;
	uint64_t next;
};
struct ns_dlist {
	struct ns_dent *e;
	size_t n, cap;
	int full;                   /* stopped because `max` entries were collected */
};
/* Up to max entries (0 = all) from cookie on, without "." and "..". */
int ns_dlist_read(struct cairn_ns *ns, int upper, cairn_ino_t dir, uint64_t cookie, size_t max,
		  struct ns_dlist *l);
void ns_dlist_free(struct ns_dlist *l);

#define NS_WHITEOUT_MODE (S_IFCHR | 0)

/* A copied-up RAM inode remembers the image inode it came from, so its inode
 * number stays the same after the node is forgotten and looked up again. Names
 * under this prefix are the namespace's own and hidden from users. */
#define NS_XATTR_PREFIX "trusted.cairn."
#define NS_XATTR_ORIGIN "trusted.cairn.origin"
int ns_reserved_xattr(const char *name);

#endif
