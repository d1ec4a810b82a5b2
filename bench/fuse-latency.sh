#!/bin/sh
# SPDX-License-Identifier: MIT
# Where a cold `find MNT` over the million-file images spends its time: every FUSE
# request's latency (kernel send to reply, the fuse:fuse_request_send/end
# tracepoints) by opcode, beside the walk's wall time and find's own CPU. The sum
# of request latencies is the time the walk waited on the daemon; the rest of the
# wall time is find and the kernel working for it (getdents, the listing cache).
#
#   bench/fuse-latency.sh [-r RUNS] [-b BUILD] [-s SYSTEMS]   (cairn, cairn-s, squashfuse_ll)
#
# Uses the images bench/million.sh made (MILLION_IMGS, default
# /var/tmp/cairn-bench-trees/million; run million.sh once first), copied to tmpfs.
# Needs root and perf with the fuse tracepoints (Linux 6.16 or later). Prints one
# table per run; the walks and daemons run under `chrt -f 50` (BENCH_CHRT= to turn off).
set -eu

runs=1
build=build
systems="cairn squashfuse_ll"
while [ $# -gt 0 ]; do
  case "$1" in
    -r) runs=$2; shift 2 ;;
    -b) build=$2; shift 2 ;;
    -s) systems=$2; shift 2 ;;
    *) echo "usage: bench/fuse-latency.sh [-r RUNS] [-b BUILD] [-s SYSTEMS]" >&2; exit 2 ;;
  esac
done
. "$(dirname "$0")/lib.sh"
bench_cairn fuse-latency "$build"
imgs=${MILLION_IMGS:-/var/tmp/cairn-bench-trees/million}
[ "$(id -u)" -eq 0 ] || { echo "fuse-latency: needs root" >&2; exit 1; }
for f in cairn sqfs; do
  [ -s "$imgs/$f.img" ] || { echo "fuse-latency: $imgs/$f.img missing: run bench/million.sh" >&2; exit 1; }
done
perf list 2>/dev/null | grep -q fuse:fuse_request_end ||
  { echo "fuse-latency: perf has no fuse:fuse_request_* tracepoints" >&2; exit 1; }

chrt=${BENCH_CHRT-chrt -f 50}
work=$(mktemp -d /dev/shm/cairn-fuselat.XXXXXX)
mnt=$work/mnt
mkdir -p "$mnt"
pid=
umount_all() {
  if mountpoint -q "$mnt"; then umount "$mnt" 2>/dev/null || umount -l "$mnt"; fi
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; fi
}
trap 'umount_all; rm -rf "$work"' EXIT
trap 'exit 1' INT TERM
cp "$imgs/cairn.img" "$imgs/sqfs.img" "$work/"

for r in $(seq "$runs"); do
  for s in $systems; do
    sync
    echo 3 > /proc/sys/vm/drop_caches
    case "$s" in
      cairn) $chrt "$cairn" mount -f "$work/cairn.img" "$mnt" 2>>"$work/daemon.log" & pid=$! ;;
      cairn-s) $chrt "$cairn" mount -f -s "$work/cairn.img" "$mnt" 2>>"$work/daemon.log" & pid=$! ;;
      squashfuse_ll) $chrt squashfuse_ll -f "$work/sqfs.img" "$mnt" 2>>"$work/daemon.log" & pid=$! ;;
      *) echo "fuse-latency: unknown system $s" >&2; exit 2 ;;
    esac
    bench_wait_mount "fuse-latency: $s" "$mnt"
    conn=$(stat -c %d "$mnt") # the tracepoints' connection id: only this mount's requests
    t0=$(date +%s%N)
    perf record -q -a -e fuse:fuse_request_send -e fuse:fuse_request_end -o "$work/perf.data" -- \
      $chrt /usr/bin/time -f "%U %S" -o "$work/ftime" find "$mnt" > "$work/names" 2>>"$work/perf.log"
    t1=$(date +%s%N)
    umount_all
    perf script -i "$work/perf.data" > "$work/trace" 2>>"$work/perf.log"
    echo "run $r $s: $(wc -l < "$work/names") names, load $(cut -d' ' -f1 /proc/loadavg)"
    python3 - "$work/trace" "$work/ftime" "$t0" "$t1" "$conn" <<'EOF'
import re, statistics, sys
send, lat = {}, {}
pat = re.compile(r' (\d+\.\d+):\s+fuse:fuse_request_(send|end): connection (\d+) req (\d+)'
                 r'(?: opcode \d+ \((\w+)\))?')
for line in open(sys.argv[1]):
    m = pat.search(line)
    if not m or m.group(3) != sys.argv[5]:
        continue
    t, kind, req = float(m.group(1)), m.group(2), m.group(4)
    if kind == 'send':
        send[req] = (t, m.group(5))
    elif req in send:
        t0, op = send.pop(req)
        lat.setdefault(op, []).append((t - t0) * 1e6)
u, s = (float(x) for x in open(sys.argv[2]).read().split()[:2])
wall = (int(sys.argv[4]) - int(sys.argv[3])) / 1e9
total = sum(sum(v) for v in lat.values()) / 1e3
print(f"  wall {wall:.3f} s (with perf), find CPU {(u + s) * 1e3:.0f} ms, "
      f"requests {sum(len(v) for v in lat.values())}, summed latency {total:.1f} ms")
for op, v in sorted(lat.items(), key=lambda kv: -sum(kv[1])):
    print(f"  {op:<17} n={len(v):6d}  median {statistics.median(v):6.1f} us  "
          f"sum {sum(v) / 1e3:7.1f} ms")
EOF
  done
done
