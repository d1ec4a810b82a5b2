#!/usr/bin/env python3
"""A model of a learned profile's prefetch on a remote store, to compare ways of
cutting it into requests without running them (bench/profile_gap.sh measures).

The device is bench/delayfs's: each request waits DELAY on one of CHANNELS,
then its bytes cross one link of BW MB/s shared by all (one transfer at a time);
the cache's WORKERS take the requests in queue order, one each at a time. The
program reads the profile's ranges in trace order with CPU ms spread over its
bytes, and waits whenever a range's segments have not arrived. Device offsets
come from `cairn stat` (contiguous files of an image built without --order);
ranges of files inlined in the metadata cost nothing (the metadata is read at
mount). Python start-up at 20 ms, 4 channels, 100 MB/s (CPU 170 ms, measured
with the prefetch done before the run) came within 2% of profile_gap.sh's
times: the cache's rule 274 ms against 276 measured, ordered 200 against 210.

  bench/prefetch_model.py --trace T --image IMG [--cairn build/cairn]
        [--delay 20] [--channels 4] [--bw 100] [--cpu 170] [--segment 131072]

Prints, per strategy, the program's end (ms after the prefetch starts), the
time it waited, requests and MiB. `multi-range` packs segments in the order
wanted, 4 or max_io's worth to a request, wherever they lie (an HTTP Range header with several
ranges): no single-range cut reaches it.
"""
import argparse
import collections
import subprocess

MAX_IO = 1 << 20


def data_ranges(cairn, image, paths):
    out = {}
    for p in paths:
        st = subprocess.run([cairn, "stat", image, p], capture_output=True, text=True).stdout
        for line in st.splitlines():
            line = line.strip()
            if line.startswith("data: bytes "):
                lo, hi = line.split()[2].split("..")
                out[p] = (int(lo), int(hi))
    return out


def load(args):
    recs = []
    for line in open(args.trace):
        f = line.split()
        if len(f) == 3:
            recs.append((f[0], int(f[1]), int(f[2])))
    offs = data_ranges(args.cairn, args.image, list(dict.fromkeys(r[0] for r in recs)))
    seen, ranges, pos = collections.defaultdict(set), [], 0
    for p, o, n in recs:  # a page keeps the place it was first read at
        if p not in offs or offs[p][0] + o >= offs[p][1]:
            continue
        pages = [x for x in range(o // 4096, (o + n + 4095) // 4096) if x not in seen[p]]
        if not pages:
            continue
        seen[p].update(pages)
        a = offs[p][0] + o
        b = min(offs[p][1], a + n)
        ranges.append((a, b, pos))
        pos += b - a
    return ranges, pos


class Model:
    def __init__(self, args, ranges, total):
        self.a, self.ranges, self.total, self.seg = args, ranges, total, args.segment
        self.want = {}
        for a, b, p in ranges:
            for s in range(a // self.seg, (b - 1) // self.seg + 1):
                self.want.setdefault(s, p)

    def run(self, reqs):
        """reqs: lists of segments, one request each, in queue order."""
        a, seg = self.a, self.seg
        bw = a.bw * 1e3 if a.bw else float("inf")  # bytes per ms
        chan, wfree, link, ready = [0.0] * a.channels, [0.0] * a.workers, 0.0, {}
        for r in reqs:
            w = min(range(a.workers), key=lambda i: wfree[i])
            c = min(range(a.channels), key=lambda i: chan[i])
            done = max(chan[c], wfree[w]) + a.delay
            link = max(link, done) + len(r) * seg / bw  # contiguous or not
            done = link
            for s in r:  # a reply is used once it is whole
                ready[s] = done
            chan[c] = wfree[w] = done
        t = waited = 0.0
        for lo, hi, _ in self.ranges:
            need = max(ready.get(s, 1e12) for s in range(lo // seg, (hi - 1) // seg + 1))
            if need > t:
                waited += need - t
                t = need
            t += a.cpu * (hi - lo) / self.total
        return t, waited, len(reqs), sum(len(r) for r in reqs) * seg / 2 ** 20

    def runs_by_offset(self, max_io, gaps):
        """The cache's rule (lib/cache/prefetch.c): sorted by offset, a run takes
        a gap while it stays at least half wanted (gaps=1), none (0); queued by
        the most wanted range each holds."""
        per, runs = max_io // self.seg, []
        for s in sorted(self.want):
            r = runs[-1] if runs else None
            if r and s - r[0] < per and s - r[1] - 1 <= r[2] * gaps:
                r[1], r[2], r[3] = s, r[2] + 1, min(r[3], self.want[s])
                continue
            runs.append([s, s, 1, self.want[s]])
        runs.sort(key=lambda r: (r[3], r[0]))
        return [list(range(r[0], r[1] + 1)) for r in runs]

    def ordered(self):
        """The same bytes packed in trace order (mkfs --order), max_io requests."""
        n = (self.total + self.seg - 1) // self.seg + 1
        m = Model.__new__(Model)
        m.a, m.seg, m.total = self.a, self.seg, self.total
        base, m.ranges = 2 * self.seg, []
        for lo, hi, p in self.ranges:
            m.ranges.append((base + p, base + p + hi - lo, p))
        per, first = MAX_IO // self.seg, base // self.seg
        return m.run([list(range(s, min(s + per, first + n))) for s in range(first, first + n, per)])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--cairn", default="build/cairn")
    ap.add_argument("--delay", type=float, default=20.0, help="ms per request")
    ap.add_argument("--channels", type=int, default=4)
    ap.add_argument("--bw", type=float, default=100.0, help="MB/s of the shared link, 0: none")
    ap.add_argument("--cpu", type=float, default=170.0, help="ms the program computes")
    ap.add_argument("--segment", type=int, default=131072)
    ap.add_argument("--workers", type=int, default=4)
    args = ap.parse_args()
    ranges, total = load(args)
    m = Model(args, ranges, total)
    print(f"{len(ranges)} ranges, {total / 1e6:.2f} MB wanted in {len(m.want)} segments; "
          f"delay {args.delay:g} ms, {args.channels} channels, {args.bw:g} MB/s, cpu {args.cpu:g} ms")
    rows = [("ordered image (packed, max_io requests)", m.ordered()),
            ("cache's rule: half-wanted gaps, 1 MiB", m.run(m.runs_by_offset(MAX_IO, 1))),
            ("no gaps, 1 MiB", m.run(m.runs_by_offset(MAX_IO, 0))),
            ("no gaps, 512 KiB", m.run(m.runs_by_offset(MAX_IO // 2, 0)))]
    order = sorted(m.want, key=lambda s: (m.want[s], s))
    for k in (4, MAX_IO // args.segment):
        rows.append((f"multi-range: {k} segments a request, as wanted",
                     m.run([order[i:i + k] for i in range(0, len(order), k)])))
    print(f"| strategy | end ms | waited ms | requests | MiB |\n|---|---|---|---|---|")
    for name, (t, w, n, mib) in rows:
        print(f"| {name} | {t:.0f} | {w:.0f} | {n} | {mib:.1f} |")


if __name__ == "__main__":
    main()
