/* SPDX-License-Identifier: MIT */
/*
 * -o trace=FILE: the order in which image files and their ranges are first read,
 * one "PATH OFFSET LENGTH" line per newly touched range, which is what
 * `cairn mkfs --order FILE` takes (written by its library, which escapes
 * newlines and other awkward bytes of names: docs/MANIFEST.md). Ranges are tracked in pages and a request
 * that touches several new ones gives one line. The traced mount turns the
 * kernel's read-ahead off (daemon.c), so requests are the pages the program
 * itself read or faulted in: the hot prefix built from the trace holds what the
 * program needs, not read-ahead windows around it (Java Hello: 22 MiB traced,
 * against 31 MiB with 128 KiB read-ahead and 64 KiB granules).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <cairn/mkfs.h>
#include "daemon.h"

#define GRANULE_SHIFT 12

struct trace_file {
	char *path;
	uint8_t *bits;          /* one bit per granule */
	size_t nbits;
	struct trace_file *next;
};

struct trace {
	pthread_mutex_t lock;
	FILE *out;
	struct trace_file **b;
	size_t mask, count;
};

int trace_open(const char *path, struct trace **out)
{
	struct trace *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->mask = 1023;
	t->b = calloc(t->mask + 1, sizeof(*t->b));
	t->out = fopen(path, "w");
	if (!t->b || !t->out) {
		int err = t->out ? ENOMEM : errno;

		if (t->out)
			fclose(t->out);
		free(t->b);
		free(t);
		return -err;
	}
	pthread_mutex_init(&t->lock, NULL);
	*out = t;
	return 0;
}

static size_t hash_str(const char *s)
{
	size_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static struct trace_file *find_file(struct trace *t, const char *path)
{
	size_t h = hash_str(path) & t->mask;
	struct trace_file *f;

	for (f = t->b[h]; f; f = f->next)
		if (!strcmp(f->path, path))
			return f;
	f = calloc(1, sizeof(*f));
	if (!f || !(f->path = strdup(path))) {
		free(f);
		return NULL;
	}
	f->next = t->b[h];
	t->b[h] = f;
	t->count++;
	return f;
}

static int test_and_set(struct trace_file *f, size_t g)
{
	int was;

	if (g >= f->nbits) {
		size_t nbits = (g + 1) * 2, oldb = (f->nbits + 7) / 8, newb = (nbits + 7) / 8;
		uint8_t *nb = realloc(f->bits, newb);

		if (!nb)
			return 1; /* out of memory: treat as seen, lose a trace line */
		memset(nb + oldb, 0, newb - oldb);
		f->bits = nb;
		f->nbits = nbits;
	}
	was = (f->bits[g / 8] >> (g % 8)) & 1;
	f->bits[g / 8] |= (uint8_t)(1u << (g % 8));
	return was;
}

void trace_read(struct trace *t, const char *path, uint64_t off, uint64_t len)
{
	struct trace_file *f;
	uint64_t g0, g1, run = UINT64_MAX;

	if (!len)
		return;
	g0 = off >> GRANULE_SHIFT;
	g1 = (off + len - 1) >> GRANULE_SHIFT;
	pthread_mutex_lock(&t->lock);
	f = find_file(t, path);
	for (uint64_t g = g0; f && g <= g1 + 1; g++) {
		int seen = g > g1 || test_and_set(f, (size_t)g);

		if (!seen && run == UINT64_MAX)
			run = g;
		if (seen && run != UINT64_MAX) {
			cairn_order_write_record(t->out, path, run << GRANULE_SHIFT,
						 (g - run) << GRANULE_SHIFT);
			run = UINT64_MAX;
		}
	}
	pthread_mutex_unlock(&t->lock);
}

void trace_close(struct trace *t)
{
	if (!t)
		return;
	for (size_t i = 0; i <= t->mask; i++)
		for (struct trace_file *f = t->b[i], *n; f; f = n) {
			n = f->next;
			free(f->path);
			free(f->bits);
			free(f);
		}
	free(t->b);
	fclose(t->out);
	pthread_mutex_destroy(&t->lock);
	free(t);
}
