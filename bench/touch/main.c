/* SPDX-License-Identifier: MIT */
/*
 * What fresh memory costs on this machine (docs/bench/zorder.md): writes N
 * buffers of SIZE bytes (default 280 x 128 KiB, a Java cold start's
 * decompressed chunks) into fresh malloc'd memory, into one fresh 2 MiB-aligned
 * region asked for transparent huge pages, and over that region again, and
 * prints the milliseconds of each. `build/bench/touch [N [SIZE]]`.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define HUGE (2ul << 20)

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void fill(char *p, size_t n, int c)
{
	memset(p, c, n);
	__asm__ __volatile__("" : : "r"(p) : "memory"); /* keep the stores */
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 280;
	size_t size = argc > 2 ? strtoul(argv[2], NULL, 0) : 128u << 10;
	size_t bytes = n * size;
	char **v = calloc(n ? n : 1, sizeof(*v));
	char *map, *a;
	double t0;

	if (!v || !n || !size)
		return 1;
	t0 = now_ms();
	for (size_t i = 0; i < n; i++) {
		if (!(v[i] = malloc(size)))
			return 1;
		fill(v[i], size, 1);
	}
	printf("fresh malloc'd buffers: %.1f ms\n", now_ms() - t0);
	map = mmap(NULL, bytes + HUGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (map == MAP_FAILED)
		return 1;
	a = (char *)(((uintptr_t)map + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
	(void)madvise(a, bytes, MADV_HUGEPAGE);
	t0 = now_ms();
	for (size_t i = 0; i < n; i++)
		fill(a + i * size, size, 1);
	printf("fresh huge-page region: %.1f ms\n", now_ms() - t0);
	t0 = now_ms();
	for (size_t i = 0; i < n; i++)
		fill(a + i * size, size, 2);
	printf("same region rewritten: %.1f ms\n", now_ms() - t0);
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	munmap(map, bytes + HUGE);
	return 0;
}
