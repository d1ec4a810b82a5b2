/* SPDX-License-Identifier: MIT */
/*
 * Readahead: a small table of recent streams decides when reads are sequential,
 * and worker threads fetch ahead of them.
 *
 * A stream is keyed by the file extent given in the hint (a read of the same
 * file finds its stream) or, without a hint, by position (a read that starts
 * within one segment of where the last one ended). The table is consulted only
 * on a miss or on the first use of a speculatively fetched segment, never on a
 * plain hit, so the hit path takes no shared lock.
 *
 * A sequential stream keeps at least one window of data in flight ahead of the
 * reader. Each time it issues more, the window doubles up to readahead_max. The
 * issued range ends on a ra_unit boundary (max_io, at most 1 MiB) counted from
 * the file's first segment (from the device start without a hint), or at the
 * end of the file, so every request but the file's last is a full ra_unit; it
 * never goes past the hint's end (or the device end).
 *
 * Readahead segments are claimed (put in the table as FETCHING) when queued, so
 * a reader that gets there first waits for the queued fetch instead of issuing
 * a second request for the same segment.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cache/cache_internal.h"
#include "util/thread.h"

static void stream_reset(struct stream *st)
{
	st->window = 0;
	st->ra_end = 0;
}

static struct stream *stream_find(struct cairn_cache *c, uint64_t off, size_t len,
				  uint64_t hlo, uint64_t hhi, int *found)
{
	struct stream *victim = &c->streams[0];

	for (unsigned i = 0; i < CACHE_STREAMS; i++) {
		struct stream *st = &c->streams[i];

		if (st->used && st->lo == hlo && st->hi == hhi &&
		    (hhi > hlo || (off + len >= st->last_off && off <= st->next + c->seg_size))) {
			*found = 1;
			return st;
		}
		if (st->used < victim->used)
			victim = st;
	}
	*found = 0;
	memset(victim, 0, sizeof(*victim));
	victim->lo = hlo;
	victim->hi = hhi;
	return victim;
}

void stream_consult(struct cairn_cache *c, uint64_t off, size_t len,
		    const struct cairn_cache_hint *hint, struct ra_plan *plan)
{
	uint64_t hlo = 0, hhi = 0, limit = c->dev_size, pos = off + len, base = 0;
	struct stream *st;
	int found, seq;

	memset(plan, 0, sizeof(*plan));
	if (hint && hint->hi > hint->lo && off >= hint->lo && off < hint->hi) {
		hlo = hint->lo;
		hhi = hint->hi < c->dev_size ? hint->hi : c->dev_size;
		limit = hhi;
		/* Requests are max_io pieces counted from the file's first segment, so
		 * a file costs ceil(size / max_io) requests, not one more whenever it
		 * straddles a device max_io boundary. */
		base = hlo & ~(uint64_t)(c->seg_size - 1);
	}
	pthread_mutex_lock(&c->stream_lock);
	st = stream_find(c, off, len, hlo, hhi, &found);
	if (found)
		seq = off >= st->last_off && off <= st->next + c->seg_size;
	else
		seq = hhi > hlo && off == hlo; /* reading a file from its start */
	if (seq) {
		if (!st->window) {
			st->window = 4 * round_up(len, c->seg_size);
			if (st->window < c->ra_unit / 4)
				st->window = c->ra_unit / 4;
			if (st->window > c->ra_max)
				st->window = c->ra_max;
		}
		if (st->ra_end < pos)
			st->ra_end = pos;
		if (st->ra_end - pos < st->window && st->ra_end < limit) {
			uint64_t hi = base + round_up(st->ra_end + st->window - base, c->ra_unit);

			plan->ra_lo = st->ra_end;
			plan->ra_hi = hi < limit ? hi : limit;
			st->ra_end = plan->ra_hi;
			st->window = st->window * 2 < c->ra_max ? st->window * 2 : c->ra_max;
		}
		plan->sync_hi = base + round_up(pos - base, c->ra_unit);
		if (plan->sync_hi > limit)
			plan->sync_hi = limit;
	} else {
		stream_reset(st);
	}
	st->last_off = off;
	st->next = pos;
	st->used = ++c->stream_tick;
	pthread_mutex_unlock(&c->stream_lock);
}

/* ---- worker threads ---- */

/* Readahead at the tail; a reader's demand and checks (hashing is CPU, fetches
 * wait on the device) at the head. */
static void job_push(struct cairn_cache *c, struct ra_job *j, int front)
{
	pthread_mutex_lock(&c->job_lock);
	j->next = NULL;
	if (front) {
		j->next = c->job_head;
		c->job_head = j;
		if (!c->job_tail)
			c->job_tail = j;
	} else if (c->job_tail) {
		c->job_tail->next = j;
		c->job_tail = j;
	} else {
		c->job_head = c->job_tail = j;
	}
	pthread_cond_signal(&c->job_cond);
	pthread_mutex_unlock(&c->job_lock);
}

static struct ra_job *job_new(struct seg **s, size_t n, int kind)
{
	struct ra_job *j = malloc(sizeof(*j) + n * sizeof(j->segs[0]));

	if (j) {
		j->kind = kind;
		j->own_lo = 1;
		j->own_hi = 0;
		j->n = n;
		memcpy(j->segs, s, n * sizeof(j->segs[0]));
	}
	return j;
}

void queue_claims(struct cairn_cache *c, struct seg **s, size_t n)
{
	size_t per = c->max_io / c->seg_size;

	for (size_t i = 0; i < n;) {
		size_t k = 1;
		struct ra_job *j;

		while (i + k < n && k < per && s[i + k]->idx == s[i + k - 1]->idx + 1)
			k++;
		j = job_new(s + i, k, JOB_FETCH);
		if (!j)
			fail_claims(c, s + i, k, -ENOMEM);
		else
			job_push(c, j, 0);
		i += k;
	}
}

void queue_vec(struct cairn_cache *c, struct seg **s, size_t n)
{
	struct ra_job *j = n ? job_new(s, n, JOB_VEC) : NULL;

	if (j)
		job_push(c, j, 0);
	else if (n)
		fail_claims(c, s, n, -ENOMEM);
}

void queue_demand(struct cairn_cache *c, struct seg **s, size_t n, uint64_t own_lo,
		  uint64_t own_hi)
{
	struct ra_job *j = job_new(s, n, JOB_FETCH);

	if (!j) {
		fetch_run(c, s, n, own_lo, own_hi, NULL);
		return;
	}
	j->own_lo = own_lo;
	j->own_hi = own_hi;
	job_push(c, j, 1);
}

void queue_checks(struct cairn_cache *c, struct seg **s, size_t n)
{
	struct ra_job *j = n ? job_new(s, n, JOB_CHECK) : NULL;

	if (!j) { /* no job: readers check them when they need them */
		for (size_t i = 0; i < n; i++)
			seg_release(c, s[i]);
		return;
	}
	for (size_t i = 0; i < n; i++) /* from the last one back */
		j->segs[i] = s[n - 1 - i];
	job_push(c, j, 1);
}

void queue_spare(struct cairn_cache *c, struct seg **s, size_t n)
{
	struct ra_job *j;

	j = n ? job_new(s, n, JOB_SPARE) : NULL;
	if (!j) { /* no job: readers check them when they need them */
		for (size_t i = 0; i < n; i++)
			seg_release(c, s[i]);
		return;
	}
	if (!c->nspare) { /* no spare thread: a worker checks them */
		job_push(c, j, 1);
		return;
	}
	pthread_mutex_lock(&c->job_lock);
	if (c->spare_tail)
		c->spare_tail->next = j;
	else
		c->spare_head = j;
	c->spare_tail = j;
	j->next = NULL;
	pthread_cond_signal(&c->spare_cond);
	pthread_mutex_unlock(&c->job_lock);
}

/* Pops and runs the first queued spare check (job_lock held; dropped while it
 * runs). Once closing, the job's references are dropped instead. */
static void spare_run(struct cairn_cache *c)
{
	struct ra_job *j = c->spare_head;
	int stop = c->spare_stopping;

	c->spare_head = j->next;
	if (!c->spare_head)
		c->spare_tail = NULL;
	c->spare_running++;
	pthread_mutex_unlock(&c->job_lock);
	if (stop)
		for (size_t i = 0; i < j->n; i++)
			seg_release(c, j->segs[i]);
	else
		spare_check(c, j->segs, j->n);
	free(j);
	pthread_mutex_lock(&c->job_lock);
	c->spare_running--;
	if (!c->spare_head && !c->spare_running)
		pthread_cond_broadcast(&c->idle_cond);
}

/* The spare checks' thread. Apart from the workers, so that hashing bytes
 * fetched ahead never holds up a fetch queued behind it (the workers stay free
 * for the device), and never holding what a reader waits for (spare_check): a
 * reader that needs a segment first checks it itself. (At the lowest CPU
 * priority, SCHED_IDLE, it did no better: on a busy machine readers then did
 * nearly all the hashing, on their own threads; docs/bench/verify.md.) */
static void *spare_main(void *arg)
{
	struct cairn_cache *c = arg;

	pthread_mutex_lock(&c->job_lock);
	for (;;) {
		while (!c->spare_head && !c->spare_stopping)
			pthread_cond_wait(&c->spare_cond, &c->job_lock);
		if (!c->spare_head)
			break;
		spare_run(c);
	}
	pthread_mutex_unlock(&c->job_lock);
	return NULL;
}

#define WARM_IDLE_S 1 /* idle seconds before kept segment memory goes back */

/* Wait for work (job_lock held). While free segment memory is kept beyond the
 * idle allowance, wait at most WARM_IDLE_S, and give it back if no job came
 * meanwhile. */
static void workers_wait(struct cairn_cache *c)
{
	struct timespec ts;

	if (!atomic_load_explicit(&c->warm_excess, memory_order_relaxed)) {
		pthread_cond_wait(&c->job_cond, &c->job_lock);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += WARM_IDLE_S;
	if (pthread_cond_timedwait(&c->job_cond, &c->job_lock, &ts) == ETIMEDOUT &&
	    !c->job_head && !c->stopping) {
		pthread_mutex_unlock(&c->job_lock);
		arena_trim(c);
		pthread_mutex_lock(&c->job_lock);
	}
}

static void *worker_main(void *arg)
{
	struct cairn_cache *c = arg;

	pthread_mutex_lock(&c->job_lock);
	for (;;) {
		struct ra_job *j;

		while (!c->job_head && !c->stopping)
			workers_wait(c);
		if (!c->job_head)
			break;
		j = c->job_head;
		c->job_head = j->next;
		if (!c->job_head)
			c->job_tail = NULL;
		c->jobs_running++;
		pthread_mutex_unlock(&c->job_lock);

		if (j->kind == JOB_CHECK)
			check_spare(c, j->segs, j->n);
		else if (j->kind == JOB_SPARE)
			spare_check(c, j->segs, j->n);
		else if (j->kind == JOB_VEC)
			fetch_vec(c, j->segs, j->n);
		else
			fetch_run(c, j->segs, j->n, j->own_lo, j->own_hi, NULL);
		free(j);

		pthread_mutex_lock(&c->job_lock);
		c->jobs_running--;
		if (!c->job_head && !c->jobs_running)
			pthread_cond_broadcast(&c->idle_cond);
	}
	pthread_mutex_unlock(&c->job_lock);
	return NULL;
}

/* Spare checks need a verify device; half as many threads as workers (none
 * for one worker: it checks them itself, queue_spare), at most one per CPU.
 * Fewer is no error. */
static void spare_start(struct cairn_cache *c)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned want = c->nthreads / 2;

	if (cpus > 0 && (unsigned long)cpus < want)
		want = (unsigned)cpus;
	pthread_cond_init(&c->spare_cond, NULL);
	if (!c->verify || !(c->spare_threads = calloc(want, sizeof(*c->spare_threads))))
		return;
	while (c->nspare < want &&
	       !util_thread_create(&c->spare_threads[c->nspare], spare_main, c))
		c->nspare++;
}

int workers_start(struct cairn_cache *c)
{
	c->threads = calloc(c->nthreads, sizeof(*c->threads));
	if (!c->threads)
		return -ENOMEM;
	spare_start(c);
	for (unsigned i = 0; i < c->nthreads; i++) {
		if (util_thread_create(&c->threads[i], worker_main, c)) {
			c->nthreads = i;
			workers_stop(c);
			return -EAGAIN;
		}
	}
	return 0;
}

/* Waits for the workers and the spare threads, and runs the spare checks still
 * queued itself rather than wait for a spare thread to take them. Afterwards
 * every fetched segment is checked, except bad ones and those only a reader's
 * check may patch (cairn_bdev_verify_match): they stay unchecked. */
void workers_drain(struct cairn_cache *c)
{
	pthread_mutex_lock(&c->job_lock);
	for (;;) {
		if (c->spare_head) {
			spare_run(c);
			continue;
		}
		if (!c->job_head && !c->jobs_running && !c->spare_running)
			break;
		pthread_cond_wait(&c->idle_cond, &c->job_lock);
	}
	pthread_mutex_unlock(&c->job_lock);
}

/* Finishes queued work first: queued readahead holds claims others may wait on.
 * The spare checks stop after the workers, which may queue more of them; the
 * ones left are dropped, not hashed. */
/* Raises *flag under job_lock, wakes the threads waiting on cond, joins and
 * frees all n of them. */
static void join_threads(struct cairn_cache *c, int *flag, pthread_cond_t *cond,
			 pthread_t **threads, unsigned n)
{
	pthread_mutex_lock(&c->job_lock);
	*flag = 1;
	pthread_cond_broadcast(cond);
	pthread_mutex_unlock(&c->job_lock);
	for (unsigned i = 0; i < n; i++)
		pthread_join((*threads)[i], NULL);
	free(*threads);
	*threads = NULL;
}

void workers_stop(struct cairn_cache *c)
{
	if (!c->threads)
		return;
	join_threads(c, &c->stopping, &c->job_cond, &c->threads, c->nthreads);
	join_threads(c, &c->spare_stopping, &c->spare_cond, &c->spare_threads, c->nspare);
	c->nspare = 0;
	pthread_cond_destroy(&c->spare_cond);
}
