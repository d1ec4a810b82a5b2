/* SPDX-License-Identifier: MIT */
/* Making and freeing a namespace: the root node and the tmp= subtrees. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "ns_internal.h"


/* Find or make directory `name` in RAM dir `up`, shaped after image dir `low`
 * when there is one (have_low), else with mode `mode`. *out gets its inode. */
static int ensure_dir(struct cairn_ns *ns, cairn_ino_t up, const char *name, size_t len,
		      int have_low, cairn_ino_t low, uint32_t mode, int seed, cairn_ino_t *out)
{
	struct cairn_stat st;
	int rc = cairn_ramfs_lookup(ns->ram, up, name, len, &st);

	if (rc == 0) {
		cairn_ramfs_forget(ns->ram, st.ino, 1);
		if (!S_ISDIR(st.mode))
			return -ENOTDIR;
		*out = st.ino;
		return 0;
	}
	if (rc != -ENOENT)
		return rc;
	if (have_low)
		rc = ns_copy_object(ns, low, up, name, len, NS_KEEP_ALL, &st);
	else
		rc = cairn_ramfs_mkdir(ns->ram, up, name, len, mode, NULL, &st);
	if (rc)
		return rc;
	cairn_ramfs_forget(ns->ram, st.ino, 1);
	*out = st.ino;
	if (have_low && seed)
		rc = ns_seed_dir(ns, st.ino, low);
	return rc;
}

/* One tmp= path: walk it in both layers, making the RAM directories. */
static int add_tmp_path(struct cairn_ns *ns, const char *path, size_t plen)
{
	cairn_ino_t up = cairn_ramfs_root(ns->ram), low = cairn_image_root(ns->img);
	int have_low = 1, ncomp = 0;
	size_t i = 0;
	cairn_ino_t *nr;

	if (plen == 0 || path[0] != '/')
		return -EINVAL;
	while (i < plen) {
		size_t s, len;
		int last;
		int rc;

		while (i < plen && path[i] == '/')
			i++;
		s = i;
		while (i < plen && path[i] != '/')
			i++;
		len = i - s;
		if (len == 0)
			break;
		if ((len == 1 && path[s] == '.') || (len == 2 && !memcmp(path + s, "..", 2)))
			return -EINVAL;
		if (len > CAIRN_NAME_MAX)
			return -ENAMETOOLONG;
		{
			size_t j = i;

			while (j < plen && path[j] == '/')
				j++;
			last = j >= plen;
		}
		if (have_low) {
			cairn_ino_t child;
			struct cairn_stat ls;

			rc = cairn_image_lookup(ns->img, low, path + s, len, &child);
			if (rc == 0)
				rc = cairn_image_stat(ns->img, child, &ls);
			if (rc == 0 && S_ISDIR(ls.mode))
				low = child;
			else if (rc == 0)
				return -ENOTDIR; /* a RAM directory would hide the image's file */
			else if (rc == -ENOENT)
				have_low = 0;
			else
				return rc;
		}
		rc = ensure_dir(ns, up, path + s, len, have_low, low, last ? 01777 : 0755, last,
				&up);
		if (rc)
			return rc;
		ncomp++;
	}
	if (ncomp == 0)
		return -EINVAL; /* "/" itself: that is what overlay and --empty are for */
	nr = realloc(ns->tmp_roots, (ns->n_tmp_roots + 1) * sizeof(*nr));
	if (!nr)
		return -ENOMEM;
	ns->tmp_roots = nr;
	ns->tmp_roots[ns->n_tmp_roots++] = up;
	return 0;
}

/* On failure the path at fault goes to cfg->err_path. */
static int add_tmp_paths(struct cairn_ns *ns, const struct cairn_ns_config *cfg)
{
	const char *paths = cfg->tmp_paths;

	while (*paths) {
		const char *end = strchr(paths, ':');
		size_t len = end ? (size_t)(end - paths) : strlen(paths);
		int rc = len ? add_tmp_path(ns, paths, len) : 0;

		if (rc && cfg->err_path && cfg->err_path_size) {
			size_t n = len < cfg->err_path_size - 1 ? len : cfg->err_path_size - 1;

			memcpy(cfg->err_path, paths, n);
			cfg->err_path[n] = 0;
		}
		if (rc)
			return rc;
		paths += len;
		if (*paths == ':')
			paths++;
	}
	return 0;
}

static int make_root(struct cairn_ns *ns)
{
	struct ns_node *r = ns_node_new(ns, NULL, "", 0);

	if (!r)
		return -ENOMEM;
	r->type = S_IFDIR;
	r->nlookup = 1;
	if (ns->img) {
		r->has_lower = 1;
		r->lower = cairn_image_root(ns->img);
		r->st_ino = r->lower;
	}
	if (ns->ram) {
		r->upper = cairn_ramfs_root(ns->ram);
		r->has_upper = 1;
		if (!ns->img)
			r->st_ino = r->upper;
	}
	ns->root = r;
	return 0;
}

/* The overlay's root is shown from RAM: give it the image root's xattrs (ACLs:
 * a default ACL there is what new files in / inherit), mode, owner and times. */
static int root_from_image(struct cairn_ns *ns)
{
	struct cairn_stat ls;
	int rc = cairn_image_stat(ns->img, cairn_image_root(ns->img), &ls);

	if (rc)
		return rc;
	ls.ino = cairn_image_root(ns->img);
	return ns_fill_object(ns, &ls, ns->root->upper, NS_KEEP_ALL, 0, NULL);
}

int cairn_ns_new(const struct cairn_ns_config *cfg, struct cairn_ns **out)
{
	struct cairn_ns *ns;
	struct cairn_ramfs_config rc_cfg = cfg->ram;
	int empty = (cfg->flags & CAIRN_NS_EMPTY) != 0;
	int has_tmp = cfg->tmp_paths && cfg->tmp_paths[0];
	int rc;

	*out = NULL;
	if (!empty && !cfg->image)
		return -EINVAL;
	ns = calloc(1, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	pthread_mutex_init(&ns->lock, NULL);
	util_bufpool_init(&ns->read_bufs, NS_READ_BUF, NS_READ_BUFS, NS_READ_BUFS);
	pthread_cond_init(&ns->copy_done, NULL);
	ns->img = empty ? NULL : cfg->image;
	ns->overlay = empty || (cfg->flags & CAIRN_NS_OVERLAY);
	ns->use_once = !empty && (cfg->flags & CAIRN_NS_USE_ONCE);
	ns->lean = !empty && !ns->overlay && !has_tmp && !(cfg->flags & CAIRN_NS_NAMES);
	rc = ns_table_init(&ns->lower_tab);
	if (!rc)
		rc = ns_table_init(&ns->upper_tab);
	if (!rc)
		rc = ns_set_init(&ns->opaque, 0);
	if (!rc)
		rc = ns_set_init(&ns->gone_links, 1);
	if (rc)
		goto fail;
	if (ns->img) {
		struct cairn_image_info info;
		struct cairn_stat rs;

		cairn_image_get_info(ns->img, &info);
		ns->ino_offset = info.inode_count + 1;
		rc = cairn_image_stat(ns->img, cairn_image_root(ns->img), &rs);
		if (rc)
			goto fail;
		rc_cfg.root_mode = rs.mode & 07777;
		rc_cfg.root_uid = rs.uid;
		rc_cfg.root_gid = rs.gid;
	}
	if (ns->overlay || has_tmp) {
		struct cairn_statfs sf;

		rc = cairn_ramfs_new(&rc_cfg, &ns->ram);
		if (rc)
			goto fail;
		cairn_ramfs_statfs(ns->ram, &sf);
		ns->ram_chunk = (size_t)sf.block_size;
	}
	rc = make_root(ns);
	if (!rc && ns->img && ns->ram)
		ns_node_add(ns, ns->root, 1);
	if (!rc && ns->img && ns->overlay)
		rc = root_from_image(ns);
	if (!rc && has_tmp && !empty)
		rc = add_tmp_paths(ns, cfg);
	if (rc)
		goto fail;
	*out = ns;
	return 0;
fail:
	cairn_ns_free(ns);
	return rc;
}

void cairn_ns_free(struct cairn_ns *ns)
{
	if (!ns)
		return;
	if (ns->lower_tab.b && ns->upper_tab.b)
		ns_node_free_all(ns);
	if (ns->root) {
		free(ns->root->name);
		free(ns->root);
	}
	if (ns->ram)
		cairn_ramfs_free(ns->ram);
	ns_table_destroy(&ns->lower_tab);
	ns_table_destroy(&ns->upper_tab);
	ns_set_destroy(&ns->opaque);
	ns_set_destroy(&ns->gone_links);
	free(ns->tmp_roots);
	util_bufpool_destroy(&ns->read_bufs);
	pthread_cond_destroy(&ns->copy_done);
	pthread_mutex_destroy(&ns->lock);
	free(ns);
}
