/* SPDX-License-Identifier: MIT */
/*
 * Test hooks: NOT part of the stable API. Like SQLite's SQLITE_TEST shims these
 * exist so that the test suites (and the hidden --fault-* / fault_* options of
 * the tools) can inject device errors into a real stack. They may change or go
 * in any release; <cairn/cairn.h> does not include this header.
 */
#ifndef CAIRN_TESTING_H
#define CAIRN_TESTING_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>
#include <cairn/bdev.h>
#include <cairn/stack.h>

/* fault: fail chosen requests, counted from 1 in arrival order. */
enum cairn_fault_kind { CAIRN_FAULT_EIO, CAIRN_FAULT_SHORT };
struct cairn_fault_config {
	uint64_t fail_nth;          /* fail request N (0 = off) */
	uint64_t fail_every;        /* fail every Kth request (0 = off) */
	uint32_t random_permille;   /* fail at random with this rate (0 = off) */
	uint64_t seed;              /* for random */
	enum cairn_fault_kind kind;
	int persistent;             /* once failed, the same (offset) keeps failing */
};
int cairn_bdev_fault_new(struct cairn_bdev *below, const struct cairn_fault_config *cfg,
			 struct cairn_bdev **out);
/* Change or clear (cfg NULL) the fault plan; clears persistent failures. */
int cairn_bdev_fault_set(struct cairn_bdev *dev, const struct cairn_fault_config *cfg);
/* Requests seen and faults injected since the plan was last set. A fault on a
 * speculative request (readahead) may be absorbed by a retry above, so tests ask
 * "did the plan fire" here rather than infer it from what the caller saw. */
int cairn_bdev_fault_counts(struct cairn_bdev *dev, uint64_t *requests, uint64_t *injected);

/* As cairn_stack_open(), with a fault device (bdev.h) right above the file or
 * http device (above the offset device when there is one), under delay and
 * stats, so injected errors look like the disk's or the network's. */
int cairn_stack_open_faulty(const char *path, const struct cairn_stack_opts *opts,
			    const struct cairn_fault_config *fault, char *why, size_t why_len,
			    struct cairn_stack **out);
/* The fault device of a stack opened so (for cairn_bdev_fault_set() and
 * cairn_bdev_fault_counts()), or NULL. */
struct cairn_bdev *cairn_stack_fault_dev(struct cairn_stack *s);

#ifdef __cplusplus
}
#endif

#endif
