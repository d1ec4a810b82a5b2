/* SPDX-License-Identifier: MIT */
/*
 * Node ids and their lifetime. A node id is the node's address (the root is
 * CAIRN_NS_ROOT), so the FUSE hot path needs no table lookup; in a lean
 * namespace it is the image inode number, and no node is kept at all. Two hash tables find
 * the node already standing for an image or RAM inode, so hard links and repeated
 * lookups share one node. A node lives while the kernel holds lookup references or
 * a child points at it; then it is freed and its RAM lookup reference dropped.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <sys/types.h>
#include <stdlib.h>
#include <string.h>
#include <cairn/format.h>
#include "ns_internal.h"

static size_t hash64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (size_t)k;
}

/* A node id is the node's address, which must fit, and can never be the root's
 * id (nodes are aligned), so the id needs no table (as passthrough_ll does). */
_Static_assert(sizeof(uint64_t) >= sizeof(uintptr_t), "node ids hold node addresses");
_Static_assert(_Alignof(struct ns_node) > CAIRN_NS_ROOT, "no node address is CAIRN_NS_ROOT");

/* A lean namespace (ns->lean) keeps no node but the root: a node id is the
 * image inode number, with the object's file type (S_IFMT >> 12, never 0 in a
 * readable inode) above it, so the id alone says what a handler needs to know.
 * Image inodes never change, so the id names the same object for as long as
 * the image is open: the kernel may hold it, forget it and be given it again,
 * and hard links share it. The root (type 0 here, CAIRN_ROOT_INO) is
 * CAIRN_NS_ROOT; the root reached through a name of a hostile image is not. */
#define LEAN_TYPE_SHIFT 32
_Static_assert(CAIRN_INO_MAX < (1ull << LEAN_TYPE_SHIFT), "lean ids hold an image inode");
_Static_assert(CAIRN_ROOT_INO == CAIRN_NS_ROOT, "the image root's lean id is the root's");

uint64_t ns_lean_id(cairn_ino_t ino, uint32_t mode)
{
	return (uint64_t)((mode & S_IFMT) >> 12) << LEAN_TYPE_SHIFT | ino;
}

struct ns_node *ns_node_get(struct cairn_ns *ns, uint64_t id, struct ns_node *view)
{
	assert(id != 0);
	if (id == CAIRN_NS_ROOT)
		return ns->root;
	if (!ns->lean)
		return (struct ns_node *)(uintptr_t)id;
	/* Only what the image layer has: no parent, no name, no RAM inode. */
	memset(view, 0, sizeof(*view));
	view->lower = id & ((1ull << LEAN_TYPE_SHIFT) - 1);
	view->st_ino = view->lower;
	view->type = (uint32_t)(id >> LEAN_TYPE_SHIFT) << 12;
	view->has_lower = 1;
	return view;
}

uint64_t ns_node_id(struct cairn_ns *ns, struct ns_node *n)
{
	if (n == ns->root)
		return CAIRN_NS_ROOT;
	return ns->lean ? ns_lean_id(n->lower, n->type) : (uint64_t)(uintptr_t)n;
}

int ns_table_init(struct ns_table *t)
{
	t->mask = 255;
	t->count = 0;
	t->b = calloc(t->mask + 1, sizeof(*t->b));
	return t->b ? 0 : -ENOMEM;
}

void ns_table_destroy(struct ns_table *t)
{
	free(t->b);
	t->b = NULL;
}

/* Chains go through next_lower or next_upper, chosen by `upper`. */
static struct ns_node **chain_next(struct ns_node *n, int upper)
{
	return upper ? &n->next_upper : &n->next_lower;
}

static cairn_ino_t node_key(const struct ns_node *n, int upper)
{
	return upper ? n->upper : n->lower;
}

static void table_grow(struct ns_table *t, int upper)
{
	size_t nmask = t->mask * 2 + 1;
	struct ns_node **nb = calloc(nmask + 1, sizeof(*nb));

	if (!nb)
		return; /* keep the longer chains; still correct */
	for (size_t i = 0; i <= t->mask; i++) {
		struct ns_node *n = t->b[i], *next;

		for (; n; n = next) {
			size_t h = hash64(node_key(n, upper)) & nmask;

			next = *chain_next(n, upper);
			*chain_next(n, upper) = nb[h];
			nb[h] = n;
		}
	}
	free(t->b);
	t->b = nb;
	t->mask = nmask;
}

static void table_add(struct ns_table *t, struct ns_node *n, int upper)
{
	size_t h;

	if (t->count > t->mask)
		table_grow(t, upper);
	h = hash64(node_key(n, upper)) & t->mask;
	*chain_next(n, upper) = t->b[h];
	t->b[h] = n;
	t->count++;
}

static void table_del(struct ns_table *t, struct ns_node *n, int upper)
{
	struct ns_node **p = &t->b[hash64(node_key(n, upper)) & t->mask];

	for (; *p; p = chain_next(*p, upper))
		if (*p == n) {
			*p = *chain_next(n, upper);
			t->count--;
			return;
		}
	assert(!"node keyed in a table it is not in");
}

static struct ns_node *table_find(struct ns_table *t, cairn_ino_t ino, int upper)
{
	struct ns_node *n = t->b[hash64(ino) & t->mask];

	for (; n; n = *chain_next(n, upper))
		if (node_key(n, upper) == ino)
			return n;
	return NULL;
}

struct ns_node *ns_table_find_lower(struct cairn_ns *ns, cairn_ino_t ino)
{
	return table_find(&ns->lower_tab, ino, 0);
}

struct ns_node *ns_table_find_upper(struct cairn_ns *ns, cairn_ino_t ino)
{
	return table_find(&ns->upper_tab, ino, 1);
}

int ns_table_add_upper(struct cairn_ns *ns, struct ns_node *n)
{
	if (!n->keyed_upper) {
		table_add(&ns->upper_tab, n, 1);
		n->keyed_upper = 1;
	}
	return 0;
}

void ns_table_del(struct cairn_ns *ns, struct ns_node *n)
{
	if (n->keyed_lower)
		table_del(&ns->lower_tab, n, 0);
	if (n->keyed_upper)
		table_del(&ns->upper_tab, n, 1);
	n->keyed_lower = n->keyed_upper = 0;
}

struct ns_node *ns_node_new(struct cairn_ns *ns, struct ns_node *parent, const char *name,
			    size_t len)
{
	struct ns_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->name = malloc(len + 1);
	if (!n->name) {
		free(n);
		return NULL;
	}
	memcpy(n->name, name, len);
	n->name[len] = 0;
	n->name_len = len;
	n->parent = parent;
	if (parent) {
		parent->pins++;
		n->all_next = ns->all;
		if (ns->all)
			ns->all->all_prev = n;
		ns->all = n;
	}
	ns->nodes++;
	return n;
}

/* Put a fresh node into the tables its layers call for. Image objects with
 * several names are not shared: each name copies up on its own, as overlayfs
 * does without an index. */
int ns_node_add(struct cairn_ns *ns, struct ns_node *n, int share_lower)
{
	if (n->has_lower && !ns_has_upper(n) && share_lower) {
		table_add(&ns->lower_tab, n, 0);
		n->keyed_lower = 1;
	}
	if (ns_has_upper(n))
		ns_table_add_upper(ns, n);
	return 0;
}

static void node_free(struct cairn_ns *ns, struct ns_node *n)
{
	while (n && n != ns->root && n->nlookup == 0 && n->pins == 0) {
		struct ns_node *parent = n->parent;

		ns_table_del(ns, n);
		if (ns_has_upper(n))
			cairn_ramfs_forget(ns->ram, n->upper, 1);
		if (n->all_prev)
			n->all_prev->all_next = n->all_next;
		else
			ns->all = n->all_next;
		if (n->all_next)
			n->all_next->all_prev = n->all_prev;
		free(n->name);
		free(n);
		ns->nodes--;
		if (!parent)
			break;
		assert(parent->pins > 0);
		parent->pins--;
		n = parent;
	}
}

void ns_node_put(struct cairn_ns *ns, struct ns_node *n, uint64_t nlookup)
{
	if (n == ns->root)
		return;
	if (nlookup > n->nlookup) {
		/* More forgotten than was looked up: the caller's bug (the FUSE kernel
		 * never does it). Counted, and fatal in a debug build; the node goes,
		 * as it would have with the right count. */
		__atomic_add_fetch(&ns->over_forgets, 1, __ATOMIC_RELAXED);
#ifdef CAIRN_DEBUG
		fprintf(stderr, "cairn_ns: node %p forgotten %llu times with %llu lookups\n",
			(void *)n, (unsigned long long)nlookup, (unsigned long long)n->nlookup);
		abort();
#endif
		nlookup = n->nlookup;
	}
	n->nlookup -= nlookup;
	__atomic_sub_fetch(&ns->refs, nlookup, __ATOMIC_RELAXED);
	node_free(ns, n);
}

/* At teardown: free every node. The RAM fs goes next, so no RAM references are
 * dropped one by one. */
void ns_node_free_all(struct cairn_ns *ns)
{
	struct ns_node *n = ns->all, *next;

	for (; n; n = next) {
		next = n->all_next;
		free(n->name);
		free(n);
	}
	ns->all = NULL;
}

char *ns_name_dup(const char *name, size_t len)
{
	char *copy = malloc(len + 1);

	if (copy) {
		memcpy(copy, name, len);
		copy[len] = 0;
	}
	return copy;
}

void ns_node_move(struct cairn_ns *ns, struct ns_node *n, struct ns_node *parent, char *name,
		  size_t len)
{
	free(n->name);
	n->name = name;
	n->name_len = len;
	if (n->parent != parent) {
		struct ns_node *old = n->parent;

		assert(old && old->pins > 0);
		parent->pins++;
		n->parent = parent;
		old->pins--;
		node_free(ns, old);
	}
}

/* ---- a set of uint64 keys (open addressing) ---- */

#define SET_EMPTY 0
#define SET_DEAD UINT64_MAX

int ns_set_init(struct ns_set *s, int with_counts)
{
	s->mask = 63;
	s->used = 0;
	s->keys = calloc(s->mask + 1, sizeof(*s->keys));
	s->vals = with_counts ? calloc(s->mask + 1, sizeof(*s->vals)) : NULL;
	return s->keys && (s->vals || !with_counts) ? 0 : -ENOMEM;
}

void ns_set_destroy(struct ns_set *s)
{
	free(s->keys);
	free(s->vals);
	s->keys = NULL;
	s->vals = NULL;
}

/* Keys 0 and UINT64_MAX are stored shifted by one so they never collide with the
 * slot markers. */
static uint64_t set_key(uint64_t k)
{
	return k + 1 == SET_DEAD ? 1 : k + 1;
}

/* The slot holding key, or -1. */
static ssize_t set_find(const struct ns_set *s, uint64_t key)
{
	uint64_t k = set_key(key);

	for (size_t i = hash64(k) & s->mask;; i = (i + 1) & s->mask) {
		if (s->keys[i] == k)
			return (ssize_t)i;
		if (s->keys[i] == SET_EMPTY)
			return -1;
	}
}

int ns_set_has(const struct ns_set *s, uint64_t key)
{
	return set_find(s, key) >= 0;
}

uint64_t ns_set_count(const struct ns_set *s, uint64_t key)
{
	ssize_t i = s->used ? set_find(s, key) : -1;

	return i >= 0 && s->vals ? s->vals[i] : 0;
}

static int set_rehash(struct ns_set *s, size_t nmask)
{
	uint64_t *old = s->keys, *oldv = s->vals;
	size_t omask = s->mask;

	s->keys = calloc(nmask + 1, sizeof(*s->keys));
	s->vals = oldv ? calloc(nmask + 1, sizeof(*s->vals)) : NULL;
	if (!s->keys || (oldv && !s->vals)) {
		free(s->keys);
		free(s->vals);
		s->keys = old;
		s->vals = oldv;
		return -ENOMEM;
	}
	s->mask = nmask;
	s->used = 0;
	for (size_t i = 0; i <= omask; i++)
		if (old[i] != SET_EMPTY && old[i] != SET_DEAD) {
			size_t j = hash64(old[i]) & nmask;

			while (s->keys[j] != SET_EMPTY)
				j = (j + 1) & nmask;
			s->keys[j] = old[i];
			if (oldv)
				s->vals[j] = oldv[i];
			s->used++;
		}
	free(old);
	free(oldv);
	return 0;
}

int ns_set_add(struct ns_set *s, uint64_t key)
{
	uint64_t k = set_key(key);
	size_t i;

	if (ns_set_has(s, key))
		return 0;
	if ((s->used + 1) * 2 > s->mask) {
		int rc = set_rehash(s, s->mask * 2 + 1);

		if (rc)
			return rc;
	}
	for (i = hash64(k) & s->mask; s->keys[i] != SET_EMPTY && s->keys[i] != SET_DEAD;
	     i = (i + 1) & s->mask)
		;
	if (s->keys[i] == SET_EMPTY)
		s->used++;
	s->keys[i] = k;
	if (s->vals)
		s->vals[i] = 0;
	return 0;
}

int ns_set_inc(struct ns_set *s, uint64_t key)
{
	int rc;

	assert(s->vals); /* a set made with counts */
	rc = ns_set_add(s, key);

	if (!rc)
		s->vals[set_find(s, key)]++;
	return rc;
}

void ns_set_del(struct ns_set *s, uint64_t key)
{
	ssize_t i = set_find(s, key);

	if (i >= 0)
		s->keys[i] = SET_DEAD;
}
