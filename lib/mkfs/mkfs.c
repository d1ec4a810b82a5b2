/* SPDX-License-Identifier: MIT */
/*
 * The image builder object: containers, the in-memory tree, guest path
 * resolution (with symlink-loop detection) and manifest application.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include "util/util_int.h"
#include "mkfs_int.h"

/* ---- containers ---- */

void mk_vec_init(struct mk_vec *v, size_t elem)
{
	memset(v, 0, sizeof(*v));
	v->elem = elem;
}

void mk_vec_free(struct mk_vec *v)
{
	free(v->p);
	v->p = NULL;
	v->n = v->cap = 0;
}

static int mk_vec_reserve(struct mk_vec *v, size_t more)
{
	if (v->n + more <= v->cap)
		return 0;
	size_t cap = v->cap ? v->cap : 64;
	while (cap < v->n + more)
		cap *= 2;
	void *p = realloc(v->p, cap * v->elem);
	if (!p)
		return -ENOMEM;
	v->p = p;
	v->cap = cap;
	return 0;
}

void *mk_vec_push(struct mk_vec *v)
{
	if (mk_vec_reserve(v, 1))
		return NULL;
	void *e = (char *)v->p + v->n * v->elem;
	memset(e, 0, v->elem);
	v->n++;
	return e;
}

int64_t mk_vec_append(struct mk_vec *v, const void *data, size_t len)
{
	if (mk_vec_reserve(v, len))
		return -1;
	int64_t off = (int64_t)v->n;
	if (len)
		memcpy((char *)v->p + v->n, data, len);
	v->n += len;
	return off;
}

void mk_map_free(struct mk_map *m)
{
	free(m->s);
	memset(m, 0, sizeof(*m));
}

int mk_map_find(const struct mk_map *m, uint64_t hash, mk_eq_fn eq, void *ctx, uint64_t *val)
{
	if (!m->cap)
		return 0;
	for (size_t i = hash & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		const struct mk_slot *s = &m->s[i];
		if (!s->val1)
			return 0;
		if (s->hash == hash && eq(ctx, s->val1 - 1)) {
			*val = s->val1 - 1;
			return 1;
		}
	}
}

static void map_insert(struct mk_slot *s, size_t cap, uint64_t hash, uint64_t val1)
{
	size_t i = hash & (cap - 1);
	while (s[i].val1)
		i = (i + 1) & (cap - 1);
	s[i].hash = hash;
	s[i].val1 = val1;
}

int mk_map_put(struct mk_map *m, uint64_t hash, uint64_t val)
{
	if ((m->n + 1) * 4 > m->cap * 3) {
		size_t cap = m->cap ? m->cap * 2 : 1024;
		struct mk_slot *s = calloc(cap, sizeof(*s));
		if (!s)
			return -ENOMEM;
		for (size_t i = 0; i < m->cap; i++)
			if (m->s[i].val1)
				map_insert(s, cap, m->s[i].hash, m->s[i].val1);
		free(m->s);
		m->s = s;
		m->cap = cap;
	}
	map_insert(m->s, m->cap, hash, val + 1);
	m->n++;
	return 0;
}

int mk_err(struct cairn_mkfs *m, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->err, sizeof(m->err), fmt, ap);
	va_end(ap);
	return rc;
}

int64_t mk_arena_str(struct cairn_mkfs *m, const void *s, size_t len)
{
	int64_t off = mk_vec_append(&m->arena, s, len);
	if (off < 0 || mk_vec_append(&m->arena, "", 1) < 0)
		return -1;
	return off;
}

/* ---- the tree ---- */

int mk_inode_new(struct cairn_mkfs *m, uint32_t *out)
{
	if (m->inodes.n >= CAIRN_INO_MAX - 1)
		return mk_err(m, -EFBIG, "too many inodes (limit %llu)",
			      (unsigned long long)CAIRN_INO_MAX);
	struct mk_inode *in = mk_vec_push(&m->inodes);
	if (!in)
		return mk_err(m, -ENOMEM, "out of memory");
	if (m->o.scan_progress && !(m->inodes.n & 8191))
		m->o.scan_progress(m->o.ctx, m->inodes.n);
	in->first_child = MK_NONE;
	in->parent = MK_NONE;
	*out = (uint32_t)(m->inodes.n - 1);
	return 0;
}

struct name_key {
	struct cairn_mkfs *m;
	uint32_t dir;
	const char *name;
	size_t len;
};

static uint64_t name_hash(uint32_t dir, const char *name, size_t len)
{
	return XXH3_64bits_withSeed(name, len, dir);
}

static int name_eq(void *ctx, uint64_t val)
{
	struct name_key *k = ctx;
	struct mk_entry *e = mk_ent(k->m, (uint32_t)val);

	return e->dir == k->dir && e->name_len == k->len &&
	       !memcmp(mk_str(k->m, e->name), k->name, k->len);
}

/*
 * The (dir, name) index is built on the first lookup: a plain directory scan
 * never needs it (host names are unique), and inserting a million names into a
 * hash table costs more than the rest of the scan's user time.
 */
static int names_index(struct cairn_mkfs *m)
{
	if (m->names_active)
		return 0;
	for (size_t i = 0; i < m->entries.n; i++) {
		struct mk_entry *e = mk_ent(m, (uint32_t)i);
		if (mk_map_put(&m->names, name_hash(e->dir, mk_str(m, e->name), e->name_len), i)) {
			mk_map_free(&m->names);
			return -ENOMEM;
		}
	}
	m->names_active = 1;
	return 0;
}

uint32_t mk_lookup(struct cairn_mkfs *m, uint32_t dir, const char *name, size_t len)
{
	struct name_key k = { m, dir, name, len };
	uint64_t v;

	if (names_index(m)) {
		m->oom = 1; /* reported by the next mk_link */
		return MK_NONE;
	}

	if (mk_map_find(&m->names, name_hash(dir, name, len), name_eq, &k, &v))
		return (uint32_t)v;
	return MK_NONE;
}

int mk_link(struct cairn_mkfs *m, uint32_t dir, const char *name, size_t len, uint32_t ino,
	    const char *guest_path, int fresh)
{
	if (len == 0 || len > CAIRN_NAME_MAX)
		return mk_err(m, -ENAMETOOLONG, "%s: name longer than %u bytes", guest_path,
			      CAIRN_NAME_MAX);
	if (memchr(name, '/', len) || (len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return mk_err(m, -EINVAL, "%s: invalid name", guest_path);
	if (m->o.no_compress_count &&
	    cairn_mkfs_path_excluded(guest_path, m->o.no_compress, m->o.no_compress_count))
		mk_ino(m, ino)->raw = 1;
	uint32_t e = fresh ? MK_NONE : mk_lookup(m, dir, name, len);
	if (m->oom)
		return mk_err(m, -ENOMEM, "out of memory");
	if (e != MK_NONE) {
		mk_ent(m, e)->inode = ino;
		return 0;
	}
	int64_t off = mk_arena_str(m, name, len);
	struct mk_entry *ent = mk_vec_push(&m->entries);
	if (off < 0 || !ent)
		return mk_err(m, -ENOMEM, "out of memory");
	uint32_t idx = (uint32_t)(m->entries.n - 1);
	ent->name = (uint64_t)off;
	ent->name_len = (uint32_t)len;
	ent->dir = dir;
	ent->inode = ino;
	struct mk_inode *d = mk_ino(m, dir);
	ent->next = d->first_child;
	d->first_child = idx;
	d->nchild++;
	if (m->names_active && mk_map_put(&m->names, name_hash(dir, name, len), idx))
		return mk_err(m, -ENOMEM, "out of memory");
	return 0;
}

static void clamp_time(const struct cairn_mkfs *m, int64_t *sec, uint32_t *nsec)
{
	if (m->o.set_mtime) {
		*sec = m->o.mtime;
		*nsec = 0;
	} else if (m->o.set_epoch && *sec >= m->o.epoch) {
		*sec = m->o.epoch;
		*nsec = 0;
	}
}

/* Owner and time overrides of the options, applied to every inode as it is made. */
void mk_apply_opts(struct cairn_mkfs *m, struct mk_inode *in)
{
	if (m->o.all_root)
		in->uid = in->gid = 0;
	if (m->o.uid >= 0)
		in->uid = (uint32_t)m->o.uid;
	if (m->o.gid >= 0)
		in->gid = (uint32_t)m->o.gid;
	clamp_time(m, &in->atime, &in->atime_ns);
	clamp_time(m, &in->mtime, &in->mtime_ns);
	clamp_time(m, &in->ctime, &in->ctime_ns);
}

/* A directory made up by mkfs (root of a manifest, parents of guest paths). */
static int mk_synth(struct cairn_mkfs *m, uint32_t mode, uint32_t *out)
{
	int rc = mk_inode_new(m, out);
	if (rc)
		return rc;
	struct mk_inode *in = mk_ino(m, *out);
	in->mode = mode;
	in->atime = in->mtime = in->ctime = m->build_time;
	mk_apply_opts(m, in);
	return 0;
}

/* ---- guest paths ---- */

#define MK_MAX_HOPS 40

/*
 * Walk `path` (relative to directory `cur`, or to the root if it starts with '/')
 * as a chain of directories, creating missing ones, following guest symlinks.
 * `shown` is the path for messages. hops counts symlinks followed (loop guard).
 */
static int walk_dirs(struct cairn_mkfs *m, uint32_t cur, const char *path, size_t len,
		     const char *shown, int *hops, uint32_t *out)
{
	const char *p = path, *end = path + len;

	if (p < end && *p == '/')
		cur = m->root;
	while (p < end) {
		while (p < end && *p == '/')
			p++;
		const char *c = p;
		while (p < end && *p != '/')
			p++;
		size_t cl = (size_t)(p - c);
		if (!cl || (cl == 1 && c[0] == '.'))
			continue;
		if (cl == 2 && c[0] == '.' && c[1] == '.') {
			uint32_t up = mk_ino(m, cur)->parent;
			cur = up == MK_NONE ? m->root : up;
			continue;
		}
		uint32_t e = mk_lookup(m, cur, c, cl);
		uint32_t ino;
		if (e == MK_NONE) {
			int rc = mk_synth(m, S_IFDIR | 0755, &ino);
			if (!rc)
				rc = mk_link(m, cur, c, cl, ino, shown, 1);
			if (rc)
				return rc;
			mk_ino(m, ino)->parent = cur;
		} else {
			ino = mk_ent(m, e)->inode;
		}
		struct mk_inode *in = mk_ino(m, ino);
		if (S_ISLNK(in->mode)) {
			if (++*hops > MK_MAX_HOPS)
				return mk_err(m, -ELOOP, "%s: symlink loop in the image (at '%.*s')",
					      shown, (int)cl, c);
			const char *t = mk_str(m, in->str);
			int rc = walk_dirs(m, cur, t, in->str_len, shown, hops, &cur);
			if (rc)
				return rc;
			continue;
		}
		if (!S_ISDIR(in->mode))
			return mk_err(m, -ENOTDIR, "%s: '%.*s' is not a directory in the image",
				      shown, (int)cl, c);
		cur = ino;
	}
	*out = cur;
	return 0;
}

/* Split a guest path into its parent directory (created as needed) and last name. */
static int guest_parent(struct cairn_mkfs *m, const char *guest, uint32_t *dir,
			const char **name, size_t *name_len)
{
	size_t len = strlen(guest);
	int hops = 0;

	while (len > 1 && guest[len - 1] == '/')
		len--;
	const char *slash = guest + len;
	while (slash > guest && slash[-1] != '/')
		slash--;
	*name = slash;
	*name_len = (size_t)(guest + len - slash);
	if (*name_len == 0 || (*name_len == 1 && **name == '.') ||
	    (*name_len == 2 && !memcmp(*name, "..", 2)))
		return mk_err(m, -EINVAL, "%s: invalid in-image path", guest);
	return walk_dirs(m, m->root, guest, (size_t)(slash - guest), guest, &hops, dir);
}

/* A '..' component in an in-image path: refused, as it is ambiguous with
 * in-image symlinks and walking it would leave the directory it climbs out of
 * behind ("/a/../b" made an empty /a). */
static int guest_has_dotdot(const char *guest)
{
	for (const char *p = guest; (p = strstr(p, "..")); p += 2)
		if ((p == guest || p[-1] == '/') && (p[2] == '/' || !p[2]))
			return 1;
	return 0;
}

static int guest_is_root(const char *guest)
{
	for (; *guest; guest++)
		if (*guest != '/')
			return 0;
	return 1;
}

/* ---- public API ---- */

void cairn_mkfs_opts_init(struct cairn_mkfs_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->uid = o->gid = -1;
	o->level = CAIRN_MKFS_LEVEL_DEFAULT;
}

int cairn_mkfs_new(const struct cairn_mkfs_opts *o, struct cairn_mkfs **out)
{
	struct cairn_mkfs *m = calloc(1, sizeof(*m));

	*out = NULL;
	if ((o->granule_shift && (o->granule_shift < CAIRN_VERITY_SHIFT_MIN ||
				  o->granule_shift > CAIRN_VERITY_SHIFT_MAX)) ||
	    (o->set_hot_codec && (o->codec == CAIRN_MKFS_NONE || o->hot_codec > CAIRN_MKFS_ZSTD))) {
		free(m);
		return -EINVAL;
	}
	if (!m)
		return -ENOMEM;
	m->o = *o;
	m->o.excludes = NULL;
	m->o.order_file = NULL;
	mk_vec_init(&m->arena, 1);
	mk_vec_init(&m->inodes, sizeof(struct mk_inode));
	mk_vec_init(&m->entries, sizeof(struct mk_entry));
	mk_vec_init(&m->xattrs, sizeof(struct mk_xattr));
	mk_vec_init(&m->exts, sizeof(struct mk_ext));
	mk_vec_init(&m->hl, sizeof(struct mk_hardlink));
	m->build_time = o->set_mtime ? o->mtime : o->set_epoch ? o->epoch : 0;
	if (o->exclude_count) {
		m->excludes = calloc(o->exclude_count, sizeof(char *));
		if (!m->excludes)
			goto nomem;
		for (size_t i = 0; i < o->exclude_count; i++)
			if (!(m->excludes[i] = strdup(o->excludes[i])))
				goto nomem;
		m->o.excludes = (const char *const *)m->excludes;
	}
	if (o->order_file && !(m->o.order_file = strdup(o->order_file)))
		goto nomem;
	m->o.no_compress = NULL;
	if (o->no_compress_count) {
		m->no_compress = calloc(o->no_compress_count, sizeof(char *));
		if (!m->no_compress)
			goto nomem;
		for (size_t i = 0; i < o->no_compress_count; i++)
			if (!(m->no_compress[i] = strdup(o->no_compress[i])))
				goto nomem;
		m->o.no_compress = (const char *const *)m->no_compress;
	}
	m->o.output = NULL;
	struct stat st;
	if (o->output && !stat(o->output, &st) && S_ISREG(st.st_mode)) {
		m->skip_set = 1;
		m->skip_dev = (uint64_t)st.st_dev;
		m->skip_ino = (uint64_t)st.st_ino;
	}
	uint32_t root;
	if (mk_synth(m, S_IFDIR | 0755, &root))
		goto nomem;
	m->root = root;
	*out = m;
	return 0;
nomem:
	cairn_mkfs_free(m);
	return -ENOMEM;
}

void cairn_mkfs_free(struct cairn_mkfs *m)
{
	if (!m)
		return;
	if (m->excludes)
		for (size_t i = 0; i < m->o.exclude_count; i++)
			free(m->excludes[i]);
	free(m->excludes);
	if (m->no_compress)
		for (size_t i = 0; i < m->o.no_compress_count; i++)
			free(m->no_compress[i]);
	free(m->no_compress);
	free((char *)m->o.order_file);
	mk_vec_free(&m->arena);
	mk_vec_free(&m->inodes);
	mk_vec_free(&m->entries);
	mk_vec_free(&m->xattrs);
	mk_vec_free(&m->exts);
	mk_vec_free(&m->hl);
	mk_map_free(&m->names);
	mk_map_free(&m->hardlinks);
	free(m->xbuf);
	free(m);
}

const char *cairn_mkfs_error(const struct cairn_mkfs *m)
{
	return m->err;
}

void cairn_mkfs_get_stats(const struct cairn_mkfs *m, struct cairn_mkfs_stats *out)
{
	*out = m->stats;
}

/* add_tree and add_path: host object `host` at in-image path `guest`. */
static int add_host(struct cairn_mkfs *m, const char *guest, const char *host, int follow,
		    int recurse)
{
	if (guest[0] != '/')
		return mk_err(m, -EINVAL, "%s: in-image path must start with '/'", guest);
	if (guest_has_dotdot(guest))
		return mk_err(m, -EINVAL, "%s: '..' in an in-image path", guest);
	if (guest_is_root(guest))
		return mk_scan_tree_into(m, m->root, host, "", recurse);
	uint32_t dir;
	const char *name;
	size_t nl;
	int rc = guest_parent(m, guest, &dir, &name, &nl);
	if (rc)
		return rc;
	return mk_scan_path(m, dir, name, nl, host, guest, follow, recurse);
}

int cairn_mkfs_add_tree(struct cairn_mkfs *m, const char *guest_dir, const char *host_dir)
{
	return add_host(m, guest_dir, host_dir, 1, 1);
}

int cairn_mkfs_add_path(struct cairn_mkfs *m, const char *guest_path, const char *host_path,
			int follow)
{
	return add_host(m, guest_path, host_path, follow, 0);
}

int cairn_mkfs_add_symlink(struct cairn_mkfs *m, const char *guest_path, const char *target)
{
	size_t tl = strlen(target);
	uint32_t dir, ino;
	const char *name;
	size_t nl;

	if (guest_path[0] != '/' || guest_is_root(guest_path))
		return mk_err(m, -EINVAL, "%s: invalid in-image path for a symlink", guest_path);
	if (guest_has_dotdot(guest_path))
		return mk_err(m, -EINVAL, "%s: '..' in an in-image path", guest_path);
	if (tl == 0 || tl > CAIRN_SYMLINK_MAX)
		return mk_err(m, -ENAMETOOLONG, "%s: symlink target empty or longer than %u bytes",
			      guest_path, CAIRN_SYMLINK_MAX);
	int rc = guest_parent(m, guest_path, &dir, &name, &nl);
	if (rc)
		return rc;
	if ((rc = mk_synth(m, S_IFLNK | 0777, &ino)))
		return rc;
	int64_t off = mk_arena_str(m, target, tl);
	if (off < 0)
		return mk_err(m, -ENOMEM, "out of memory");
	struct mk_inode *in = mk_ino(m, ino);
	in->str = (uint64_t)off;
	in->str_len = (uint32_t)tl;
	in->size = tl;
	return mk_link(m, dir, name, nl, ino, guest_path, 0);
}

/* ---- manifests ---- */

struct manifest_ctx {
	struct cairn_mkfs *m;
	const char *base;
	const char *name;
};

/* GLOB: entries of host dir matching the pattern, sorted, each as guest/name. */
static int apply_glob(struct cairn_mkfs *m, const char *guest, const char *host,
		      const char *pattern)
{
	int fd = mk_open_noatime(AT_FDCWD, host, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return mk_err(m, -errno, "%s: %s", host, strerror(errno));
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return mk_err(m, -errno, "%s: %s", host, strerror(errno));
	}
	char **names;
	size_t n;
	int rc = mk_list_dir(m, d, host, pattern, &names, &n);
	closedir(d);
	/* Most likely a typo or a missing build product: say so, unless asked not to. */
	if (!rc && !n && !m->o.allow_empty_globs)
		return mk_err(m, -ENOENT, "%s/%s: the glob matches nothing (--allow-empty-glob "
			      "accepts that)", host, pattern);
	for (size_t i = 0; i < n && !rc; i++) {
		size_t nl = strlen(names[i]);
		char *g = util_path_join(guest, names[i], nl), *h = util_path_join(host, names[i], nl);
		struct stat st;
		if (!g || !h)
			rc = mk_err(m, -ENOMEM, "out of memory");
		else if (cairn_mkfs_path_excluded(g, m->o.excludes, m->o.exclude_count))
			; /* skipped, with its subtree */
		else if (lstat(h, &st))
			rc = mk_err(m, -errno, "%s: %s", h, strerror(errno));
		else if (S_ISDIR(st.st_mode))
			rc = cairn_mkfs_add_tree(m, g, h);
		else
			rc = cairn_mkfs_add_path(m, g, h, 0);
		free(g);
		free(h);
	}
	mk_free_names(names, n);
	return rc;
}

static int manifest_entry(void *ctx, const struct cairn_manifest_entry *e)
{
	struct manifest_ctx *c = ctx;
	struct cairn_mkfs *m = c->m;
	char *host = NULL;
	int rc;

	if (e->kind != CAIRN_MANIFEST_SYMLINK && !(host = util_path_resolve(c->base, e->host)))
		return mk_err(m, -ENOMEM, "out of memory");
	switch (e->kind) {
	case CAIRN_MANIFEST_SYMLINK:
		rc = cairn_mkfs_add_symlink(m, e->guest, e->host);
		break;
	case CAIRN_MANIFEST_TREE:
		rc = cairn_mkfs_add_tree(m, e->guest, host);
		break;
	case CAIRN_MANIFEST_GLOB:
		rc = apply_glob(m, e->guest, host, e->pattern);
		break;
	default:
		rc = cairn_mkfs_add_path(m, e->guest, host, 1);
		break;
	}
	free(host);
	if (rc) {
		char msg[sizeof(m->err)];
		snprintf(msg, sizeof(msg), "%s", m->err);
		mk_err(m, rc, "%s:%u: %s", c->name, e->line, msg);
	}
	return rc;
}

int cairn_mkfs_add_manifest_text(struct cairn_mkfs *m, const char *text, size_t len,
				 const char *base_dir, const char *name)
{
	struct manifest_ctx c = { m, base_dir ? base_dir : "", name ? name : "manifest" };
	char perr[256];

	m->err[0] = '\0';
	int rc = cairn_manifest_parse(text, len, manifest_entry, &c, perr, sizeof(perr));
	if (rc && !m->err[0])
		mk_err(m, rc, "%s: %s", c.name, perr[0] ? perr : strerror(-rc));
	return rc;
}

int mk_read_text(struct cairn_mkfs *m, const char *path, char **text, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	size_t got = 0;

	if (fd < 0 || fstat(fd, &st)) {
		int rc = mk_err(m, -errno, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	if (!(*text = malloc((size_t)st.st_size + 1))) {
		close(fd);
		return mk_err(m, -ENOMEM, "out of memory");
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, *text + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int rc = mk_err(m, r ? -errno : -EIO, "%s: read failed", path);
			close(fd);
			free(*text);
			*text = NULL;
			return rc;
		}
		got += (size_t)r;
	}
	close(fd);
	(*text)[got] = '\0';
	*len = got;
	return 0;
}

int cairn_mkfs_add_manifest(struct cairn_mkfs *m, const char *path)
{
	char *text = NULL, *base = NULL;
	size_t len = 0;
	int rc = mk_read_text(m, path, &text, &len);

	if (rc)
		return rc;
	if (!(base = strdup(path))) {
		free(text);
		return mk_err(m, -ENOMEM, "out of memory");
	}
	char *slash = strrchr(base, '/');
	if (slash == base)
		base[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		strcpy(base, ".");
	rc = cairn_mkfs_add_manifest_text(m, text, len, base, path);
	free(text);
	free(base);
	return rc;
}

struct pattern_ctx {
	struct cairn_mkfs *m;
	const char *path;
};

/* Appends one pattern of a --no-compress-from file to m's --no-compress list. */
static int add_pattern(void *ctx, const char *pat, size_t len, unsigned line)
{
	struct pattern_ctx *c = ctx;
	struct cairn_mkfs *m = c->m;
	size_t n = m->o.no_compress_count;
	char **v = realloc(m->no_compress, (n + 1) * sizeof(*v));

	(void)line;
	if (!v)
		return mk_err(m, -ENOMEM, "out of memory");
	m->no_compress = v;
	m->o.no_compress = (const char *const *)v;
	if (!(v[n] = strndup(pat, len)))
		return mk_err(m, -ENOMEM, "out of memory");
	m->o.no_compress_count = n + 1;
	return 0;
}

int cairn_mkfs_add_no_compress_file(struct cairn_mkfs *m, const char *path)
{
	struct pattern_ctx c = { m, path };
	char *text = NULL;
	size_t len = 0;
	int rc;

	/* The patterns mark files as they are linked (mk_link). */
	if (m->entries.n)
		return mk_err(m, -EINVAL, "%s: --no-compress-from must come before the tree is added",
			      path);
	if ((rc = mk_read_text(m, path, &text, &len)))
		return rc;
	rc = cairn_pattern_list_parse(text, len, add_pattern, &c);
	free(text);
	return rc;
}
