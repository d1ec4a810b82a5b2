/* SPDX-License-Identifier: MIT */
/*
 * Chunk memory. The first write to a fresh page is what growing a file costs:
 * on the VMs this was measured on, touching a new 4 KiB page takes 12-23 us,
 * while a 2 MiB huge page costs 0.3-11 us per 4 KiB of it (docs/bench/ramfs.md).
 * So new chunks are carved from 2 MiB-aligned slabs advised as huge pages
 * (MADV_HUGEPAGE; where THP is off they fault page by page, as malloc would).
 *
 * Freed chunks stay resident for reuse up to pool_max (the "pool", counted in
 * cairn_ramfs_usage.pool_bytes); beyond that their pages go back to the kernel
 * at once (MADV_DONTNEED) and the chunk joins a list of spare addresses, so
 * memory use falls when files shrink, as with malloc. Slabs are unmapped only at
 * cairn_ramfs_free(): address space is cheap, and a slab is never empty for
 * long in a file system that keeps being written.
 *
 * Everything here runs under fs->pool_lock, held for a few instructions except
 * when a new slab is mapped (once per 2 MiB). Under AddressSanitizer a chunk
 * not handed out is poisoned (all but the pool's link), so a use after free
 * is still caught although the memory never goes back to malloc.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sanitizer/asan_interface.h>
#include "internal.h"

#define SLAB_SIZE ((size_t)2 << 20)

static int vec_push(void ***v, size_t *n, size_t *cap, void *p)
{
	if (*n == *cap) {
		size_t ncap = *cap ? 2 * *cap : 64;
		void **nv = realloc(*v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = p;
	return 0;
}

/* A new 2 MiB-aligned slab becomes the one chunks are carved from. */
static int slab_map(struct cairn_ramfs *fs)
{
	size_t span = 2 * SLAB_SIZE;
	char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *slab;
	size_t head;

	if (raw == MAP_FAILED)
		return -ENOMEM;
	/* Trim to an aligned slab, so the kernel can back it with one huge page. */
	head = (size_t)(-(uintptr_t)raw & (SLAB_SIZE - 1));
	slab = raw + head;
	if (head)
		munmap(raw, head);
	munmap(slab + SLAB_SIZE, span - head - SLAB_SIZE);
	if (vec_push(&fs->slabs, &fs->nslabs, &fs->slabs_cap, slab)) {
		munmap(slab, SLAB_SIZE);
		return -ENOMEM;
	}
	(void)madvise(slab, SLAB_SIZE, MADV_HUGEPAGE); /* advice: 4 KiB pages work too */
	ASAN_POISON_MEMORY_REGION(slab, SLAB_SIZE);
	fs->carve = slab;
	fs->carve_left = SLAB_SIZE;
	return 0;
}

void *ramfs_chunk_get(struct cairn_ramfs *fs)
{
	void *ch = NULL;

	pthread_mutex_lock(&fs->pool_lock);
	if (fs->pool) { /* resident: the cheapest */
		ch = fs->pool;
		memcpy(&fs->pool, ch, sizeof(void *));
		fs->pool_count--;
	} else if (fs->nspare) { /* pages given back: faults in again */
		ch = fs->spare[--fs->nspare];
	} else if (fs->carve_left || slab_map(fs) == 0) {
		ch = fs->carve;
		fs->carve += fs->chunk_size;
		fs->carve_left -= fs->chunk_size;
	}
	pthread_mutex_unlock(&fs->pool_lock);
	if (ch)
		ASAN_UNPOISON_MEMORY_REGION(ch, fs->chunk_size);
	return ch;
}

/* Lock held. */
static void pool_push(struct cairn_ramfs *fs, void *ch)
{
	memcpy(ch, &fs->pool, sizeof(void *));
	fs->pool = ch;
	fs->pool_count++;
	ASAN_POISON_MEMORY_REGION((char *)ch + sizeof(void *), fs->chunk_size - sizeof(void *));
}

/* Beyond the pool a chunk's pages go back at once (MADV_DONTNEED), so the
 * daemon's RSS is what it stores plus the pool. MADV_FREE left them resident
 * until memory ran short: 395 MB RSS with no file left after a stress run
 * (docs/bench/stress.md), which looks like a leak and counts against the
 * cgroup until reclaim. The madvise runs outside the lock: the chunk is the
 * caller's until it is listed. */
void ramfs_chunk_put(struct cairn_ramfs *fs, void *ch)
{
	pthread_mutex_lock(&fs->pool_lock);
	if (fs->pool_count < fs->pool_max) {
		pool_push(fs, ch);
		pthread_mutex_unlock(&fs->pool_lock);
		return;
	}
	pthread_mutex_unlock(&fs->pool_lock);
	(void)madvise(ch, fs->chunk_size, MADV_DONTNEED);
	ASAN_POISON_MEMORY_REGION(ch, fs->chunk_size);
	pthread_mutex_lock(&fs->pool_lock);
	if (vec_push(&fs->spare, &fs->nspare, &fs->spare_cap, ch)) {
		/* Cannot even list it: the pool keeps it. Poisoned before it was
		 * listed (then another thread may take it), so open its link. */
		ASAN_UNPOISON_MEMORY_REGION(ch, sizeof(void *));
		pool_push(fs, ch);
	}
	pthread_mutex_unlock(&fs->pool_lock);
}

/* At cairn_ramfs_free(): every chunk is in a slab, so unmapping those is all. */
void ramfs_slabs_free(struct cairn_ramfs *fs)
{
	for (size_t i = 0; i < fs->nslabs; i++) {
		ASAN_UNPOISON_MEMORY_REGION(fs->slabs[i], SLAB_SIZE); /* the range may be reused */
		munmap(fs->slabs[i], SLAB_SIZE);
	}
	free(fs->slabs);
	free(fs->spare);
	fs->slabs = fs->spare = NULL;
	fs->nslabs = fs->nspare = 0;
	fs->pool = NULL;
	fs->pool_count = 0;
}
