/* SPDX-License-Identifier: MIT */
/*
 * How much memory a RAM layer can really have. Its data lives in the daemon's
 * memory, so a size= above the daemon's cgroup limit (memory.max on cgroup v2,
 * memory.limit_in_bytes on v1; the smallest along the path to the hierarchy's
 * root) or above the machine's MemAvailable is no limit at all: the daemon is
 * OOM-killed, with every file in RAM, or the machine swaps, before the RAM layer
 * answers ENOSPC. tmpfs has the same trap and does not warn; we can, at mount.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "daemon.h"

struct mem_limit {
	uint64_t bytes;            /* UINT64_MAX: none found */
	char what[PATH_MAX + 64];  /* names it: a file, with a word on what it is */
};

/* A decimal number of bytes from file; "max" (v2's no limit) and anything else
 * not a number give -1. */
static int read_bytes(const char *file, uint64_t *out)
{
	FILE *f = fopen(file, "r");
	int ok = f && fscanf(f, "%" SCNu64, out) == 1;

	if (f)
		fclose(f);
	return ok ? 0 : -1;
}

static void lower(struct mem_limit *m, uint64_t bytes, const char *fmt, const char *arg)
{
	if (bytes >= m->bytes)
		return;
	m->bytes = bytes;
	snprintf(m->what, sizeof(m->what), fmt, arg);
}

/* The cgroup path of this process in one hierarchy of /proc/self/cgroup: v2's
 * line is "0::PATH", a v1 hierarchy's "ID:CONTROLLERS:PATH" with the controller
 * in its comma-separated list. Empty when there is none. */
static void cgroup_path(int v2, char *path, size_t size)
{
	char line[PATH_MAX + 128];
	FILE *f = fopen("/proc/self/cgroup", "r");

	path[0] = 0;
	while (f && fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':'), *p = ctl ? strchr(ctl + 1, ':') : NULL, *tok, *save;

		if (!p)
			continue;
		*p++ = 0;
		p[strcspn(p, "\n")] = 0;
		if (v2 && !strcmp(line, "0") && !ctl[1]) {
			snprintf(path, size, "%s", p);
			break;
		}
		for (tok = strtok_r(ctl + 1, ",", &save); !v2 && tok; tok = strtok_r(NULL, ",", &save))
			if (!strcmp(tok, "memory")) {
				snprintf(path, size, "%s", p);
				goto out;
			}
	}
out:
	if (f)
		fclose(f);
}

struct hierarchy {
	int v2;
	const char *path;       /* this process's cgroup in it */
	struct mem_limit *m;
};

/* Lowers m to the limit file of each cgroup from this one up to the mount's
 * root. A cgroup of another namespace than the mount's is not under it: only
 * the mount's root is looked at then. */
static int walk_cgroups(const struct mountinfo_entry *e, void *arg)
{
	const struct hierarchy *h = arg;
	const char *limit = h->v2 ? "memory.max" : "memory.limit_in_bytes";
	size_t root_len = strcmp(e->root, "/") ? strlen(e->root) : 0;
	char dir[PATH_MAX], file[PATH_MAX + 32];
	uint64_t v;

	if (h->v2 ? strcmp(e->fstype, "cgroup2") :
		    strcmp(e->fstype, "cgroup") || !strstr(e->super, "memory"))
		return 0;
	if (!strncmp(h->path, e->root, root_len) && (!h->path[root_len] || h->path[root_len] == '/'))
		snprintf(dir, sizeof(dir), "%s%s", e->point, h->path + root_len);
	else
		snprintf(dir, sizeof(dir), "%s", e->point);
	if (strlen(dir) > strlen(e->point) && dir[strlen(dir) - 1] == '/')
		dir[strlen(dir) - 1] = 0; /* the process is in the root cgroup: "/" */
	for (;;) {
		char *slash;

		snprintf(file, sizeof(file), "%s/%s", dir, limit);
		if (read_bytes(file, &v) == 0)
			lower(h->m, v, "%s, the cgroup's memory limit", file);
		slash = strrchr(dir, '/');
		if (strlen(dir) <= strlen(e->point) || !slash)
			break;
		*slash = 0;
	}
	return 1; /* one mount of the hierarchy is enough */
}

/* The smallest memory limit of the cgroups this process is in, v1 and v2. */
static void cgroup_limit(struct mem_limit *m)
{
	char path[PATH_MAX];

	for (int v2 = 0; v2 < 2; v2++) {
		struct hierarchy h = { v2, path, m };

		cgroup_path(v2, path, sizeof(path));
		if (path[0])
			mountinfo_each(walk_cgroups, &h);
	}
}

static void mem_limit(struct mem_limit *m)
{
	char line[256];
	FILE *f;

	m->bytes = UINT64_MAX;
	m->what[0] = 0;
	cgroup_limit(m);
	f = fopen("/proc/meminfo", "r");
	while (f && fgets(line, sizeof(line), f)) {
		uint64_t kb;

		if (sscanf(line, "MemAvailable: %" SCNu64 " kB", &kb) == 1)
			lower(m, kb << 10, "%sMemAvailable in /proc/meminfo", "");
	}
	if (f)
		fclose(f);
}

uint64_t memlimit_default_size(void)
{
	struct mem_limit m = { .bytes = UINT64_MAX };
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	uint64_t half;

	cgroup_limit(&m);
	if (pages > 0 && page > 0)
		lower(&m, (uint64_t)pages * (uint64_t)page, "%sphysical RAM", "");
	if (m.bytes == UINT64_MAX)
		return 0; /* neither known: no limit, as before */
	half = (m.bytes / 2) & ~(uint64_t)4095; /* in whole pages, as tmpfs counts */
	return half ? half : 4096;              /* never 0, which would mean none */
}

void memlimit_check_size(const struct mount_opts *o)
{
	struct mem_limit m;

	if (!o->size_limit || daemon_image_only(o))
		return;
	mem_limit(&m);
	if (o->size_limit <= m.bytes)
		return;
	fprintf(stderr,
		"cairn mount: warning: -o size=%" PRIu64 "M is more than the memory the RAM layer "
		"can have, %" PRIu64 "M (%s): filling it would get the daemon OOM-killed, with "
		"its files, or the machine swapping, before it gives ENOSPC\n",
		o->size_limit >> 20, m.bytes >> 20, m.what);
}
