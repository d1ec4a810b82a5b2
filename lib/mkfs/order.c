/* SPDX-License-Identifier: MIT */
/*
 * Planning the --order layout (profile-guided layout, docs/FORMAT.md).
 *
 * An order file lists in-image paths, one per line, optionally followed by
 * "OFFSET LENGTH" (what `cairn mount -o trace=FILE` records). A plain path puts
 * the whole file in the hot prefix. Range lines put only the touched ranges
 * there: they are rounded out to 4 KiB, ranges of one file closer than
 * MK_ORDER_GAP are merged, and the pieces are placed in the order their first
 * record appears. Such a split file becomes an extent-mapped file whose
 * extents tile [0, size): the hot pieces live in the prefix, the rest after it
 * with the other files. The plan is made before the metadata is laid out, as
 * the extent table must know its size.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "mkfs_int.h"

/* Gaps below this between two hot ranges of a file (or between a range and the
 * file's start or end) are laid out hot too. A page the trace missed but a later
 * run touches costs a request of its own, while a gap in the prefix only adds
 * bytes to its 1 MiB requests; small gaps are the pages most likely to be touched
 * next time. Java Hello from a page-exact trace: no filling gives a 23.0 MB
 * prefix and 28-30 requests cold, 16 KiB gives 25.0 MB and 25-27, 32 KiB 26.0 MB. */
#define MK_ORDER_GAP (16u << 10)

struct order_rec {
	uint64_t seq;          /* record number: placement order */
	uint64_t start, end;   /* 4 KiB-rounded file range; whole files: 0, size */
	uint32_t idx;          /* inode index */
	uint32_t whole;
};

struct order_ctx {
	struct cairn_mkfs *m;
	struct mk_vec recs;    /* struct order_rec */
	uint64_t missing;
	char first_missing[256];
};

static uint32_t resolve(struct cairn_mkfs *m, const char *path, size_t len)
{
	uint32_t cur = m->root;
	const char *p = path, *end = path + len;

	while (p < end) {
		while (p < end && *p == '/')
			p++;
		const char *s = p;
		while (p < end && *p != '/')
			p++;
		if (p == s || (p - s == 1 && *s == '.'))
			continue;
		uint32_t e = S_ISDIR(mk_ino(m, cur)->mode) ? mk_lookup(m, cur, s, (size_t)(p - s))
							   : MK_NONE;
		if (e == MK_NONE)
			return MK_NONE;
		cur = mk_ent(m, e)->inode;
	}
	return cur;
}

static int order_line(void *ctx, const struct cairn_order_record *rec)
{
	struct order_ctx *c = ctx;
	struct cairn_mkfs *m = c->m;
	uint32_t idx = resolve(m, rec->path, rec->path_len);

	if (idx == MK_NONE) {
		if (!c->missing++)
			snprintf(c->first_missing, sizeof(c->first_missing), "%.*s",
				 (int)rec->path_len, rec->path);
		return 0;
	}
	struct mk_inode *in = mk_ino(m, idx);
	if (!S_ISREG(in->mode) || (in->flags & CAIRN_IF_INLINE) || !in->size || !in->ino)
		return 0;
	struct order_rec *r = mk_vec_push(&c->recs);
	if (!r)
		return mk_err(m, -ENOMEM, "out of memory");
	r->seq = c->recs.n - 1;
	r->idx = idx;
	r->start = 0;
	r->end = in->size;
	/* Sparse files keep their own extents: they are ordered whole. */
	r->whole = (in->flags & CAIRN_IF_EXTENTS) || !rec->has_range;
	if (!r->whole) {
		uint64_t off = rec->offset, n = rec->length;
		if (off >= in->size || !n) {
			c->recs.n--;
			return 0;
		}
		r->start = off & ~(uint64_t)(CAIRN_BLOCK_SIZE - 1);
		r->end = n > in->size - off ? in->size : MK_ALIGN(off + n);
		if (r->end > in->size)
			r->end = in->size;
	}
	return 0;
}

static int by_file(const void *a, const void *b)
{
	const struct order_rec *x = a, *y = b;

	if (x->idx != y->idx)
		return x->idx < y->idx ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int by_seq(const void *a, const void *b)
{
	const struct order_rec *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int push_ext(struct cairn_mkfs *m, uint64_t file_off, uint64_t len, int hot)
{
	struct mk_ext *e = mk_vec_push(&m->exts);

	if (!e)
		return mk_err(m, -ENOMEM, "out of memory");
	e->file_off = file_off;
	e->len = len;
	e->disk_off = 0;
	e->hot = (uint8_t)hot;
	return 0;
}

/*
 * Records [r, r+n) are one file's, sorted by start. Merge them into pieces
 * written to out (struct order_rec, seq = first record of the piece); a split
 * file gets its extent list, and each piece remembers its extent in `start`'s
 * place via ext (out[k].end holds the extent index for split pieces).
 */
static int plan_file(struct cairn_mkfs *m, struct order_rec *r, size_t n, struct mk_vec *out)
{
	struct mk_inode *in = mk_ino(m, r[0].idx);
	size_t first = out->n;
	uint64_t size = in->size;
	int whole = 0;

	for (size_t i = 0; i < n; i++)
		whole |= (int)r[i].whole;
	for (size_t i = 0; i < n && !whole; i++) {
		struct order_rec *last = first < out->n ? MK_AT(out, struct order_rec, out->n - 1)
							: NULL;
		if (last && r[i].start <= last->end + MK_ORDER_GAP) {
			if (r[i].end > last->end)
				last->end = r[i].end;
			if (r[i].seq < last->seq)
				last->seq = r[i].seq;
			continue;
		}
		struct order_rec *p = mk_vec_push(out);
		if (!p)
			return mk_err(m, -ENOMEM, "out of memory");
		*p = r[i];
	}
	if (!whole) {
		struct order_rec *a = MK_AT(out, struct order_rec, first);
		struct order_rec *b = MK_AT(out, struct order_rec, out->n - 1);
		if (a->start <= MK_ORDER_GAP)
			a->start = 0;
		if (size - b->end <= MK_ORDER_GAP)
			b->end = size;
		whole = out->n - first == 1 && a->start == 0 && a->end == size;
	}
	if (whole) {
		uint64_t seq = UINT64_MAX;
		for (size_t i = 0; i < n; i++)
			if (r[i].seq < seq)
				seq = r[i].seq;
		out->n = first;
		struct order_rec *p = mk_vec_push(out);
		if (!p)
			return mk_err(m, -ENOMEM, "out of memory");
		*p = (struct order_rec){ seq, 0, size, r[0].idx, 1 };
		in->hot = 1;
		return 0;
	}
	/* Split: extents tile the file, hot pieces and the cold gaps between. */
	uint64_t at = 0, ext_first = m->exts.n;
	for (size_t k = first; k < out->n; k++) {
		struct order_rec *p = MK_AT(out, struct order_rec, k);
		int rc = 0;
		if (p->start > at)
			rc = push_ext(m, at, p->start - at, 0);
		if (!rc)
			rc = push_ext(m, p->start, p->end - p->start, 1);
		if (rc)
			return rc;
		at = p->end;
		p->start = m->exts.n - 1; /* the piece now names its extent */
	}
	if (at < size && push_ext(m, at, size - at, 0))
		return -ENOMEM;
	in->flags |= CAIRN_IF_EXTENTS;
	in->ext_first = ext_first;
	in->ext_n = (uint32_t)(m->exts.n - ext_first);
	in->split = 1;
	return 0;
}

/* Undo an earlier plan (mk_write may run more than once on one builder). */
static void plan_reset(struct cairn_mkfs *m)
{
	for (size_t i = 0; i < m->inodes.n; i++) {
		struct mk_inode *in = mk_ino(m, (uint32_t)i);
		in->hot = 0;
		if (in->split) {
			in->flags &= ~CAIRN_IF_EXTENTS;
			in->ext_n = 0;
			in->split = 0;
		}
	}
}

int mk_order_plan(struct cairn_mkfs *m, struct mk_vec *hot)
{
	struct order_ctx c;
	struct mk_vec pieces;
	char *text = NULL;
	size_t len = 0;
	int rc;

	plan_reset(m);
	if (!m->o.order_file)
		return 0;
	if ((rc = mk_read_text(m, m->o.order_file, &text, &len)))
		return rc;
	memset(&c, 0, sizeof(c));
	c.m = m;
	mk_vec_init(&c.recs, sizeof(struct order_rec));
	mk_vec_init(&pieces, sizeof(struct order_rec));
	rc = cairn_order_parse(text, len, order_line, &c);
	if (!rc && m->oom)
		rc = mk_err(m, -ENOMEM, "out of memory");
	struct order_rec *r = c.recs.p;
	if (!rc && c.recs.n)
		qsort(r, c.recs.n, sizeof(*r), by_file);
	for (size_t i = 0; !rc && i < c.recs.n;) {
		size_t j = i + 1;
		while (j < c.recs.n && r[j].idx == r[i].idx)
			j++;
		rc = plan_file(m, r + i, j - i, &pieces);
		i = j;
	}
	if (!rc && pieces.n)
		qsort(pieces.p, pieces.n, sizeof(struct order_rec), by_seq);
	for (size_t i = 0; !rc && i < pieces.n; i++) {
		struct order_rec *p = MK_AT(&pieces, struct order_rec, i);
		struct mk_hot *h = mk_vec_push(hot);
		if (!h) {
			rc = mk_err(m, -ENOMEM, "out of memory");
			break;
		}
		h->idx = p->idx;
		h->ext = p->whole ? MK_HOT_WHOLE : p->start;
	}
	if (!rc && c.missing && m->o.warn) {
		char msg[512];
		snprintf(msg, sizeof(msg), "%s: %llu path(s) not in the image, ignored (first: %s)",
			 m->o.order_file, (unsigned long long)c.missing, c.first_missing);
		m->o.warn(m->o.ctx, msg);
	}
	if (rc)
		plan_reset(m);
	mk_vec_free(&c.recs);
	mk_vec_free(&pieces);
	free(text);
	return rc;
}
