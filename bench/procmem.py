#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The one definition of a daemon's memory that every benchmark reports (issue 17,
"A lean daemon"): /proc/PID/status of the FUSE daemon, in KiB.

  rss   VmRSS, what it holds now. The figure the goals name is this, taken on a
        fresh mount right after the workload's cold run (nothing else run on
        that mount before: no warm run, no stats dump).
  hwm   VmHWM, the peak over the daemon's life.
  anon  RssAnon (heap, segment arena, buffers), file RssFile (libraries).

bench.py imports daemon_mem(); shell benchmarks call `bench/procmem.py PID`
(bench_rss_kb in bench/lib.sh), which prints "rss hwm anon file".
"""
import sys

FIELDS = {"VmRSS": "rss", "VmHWM": "hwm", "RssAnon": "anon", "RssFile": "file"}


def daemon_mem(pid):
    """{rss, hwm, anon, file} of process pid in KiB, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            vals = dict(line.split(":", 1) for line in f if ":" in line)
        return {k: int(vals[f].split()[0]) for f, k in FIELDS.items()}
    except (OSError, KeyError, ValueError):
        return None


if __name__ == "__main__":
    m = daemon_mem(sys.argv[1]) if len(sys.argv) == 2 else None
    if m is None:
        sys.exit(f"usage: {sys.argv[0]} PID (a live process)")
    print(m["rss"], m["hwm"], m["anon"], m["file"])
