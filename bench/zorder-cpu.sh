#!/bin/sh
# Where a compressed ordered + prefetch mount spends its time (docs/bench/zorder.md):
#   bench/zorder-cpu.sh ROUNDS IMAGE...
# mounts each JDK 17 image in turn (IMAGE: built by `cairn mkfs [-z ALG] --order
# TRACE`, e.g. the ones bench.py leaves in its work dir's img/), cold (caches
# dropped), with -o prefetch and cairn's own 1 ms delay per request (no
# delayfs, so the figures are the daemon's alone), runs `java Hello` once and
# prints the median over ROUNDS of: the cold wall time, the daemon's CPU (user,
# system), device requests and bytes, chunks decompressed on demand (misses) and
# by the read-ahead workers, decompressed and pushed bytes (the stats file).
# BUILD (default build) picks the binaries; runs under chrt -f 50 when it can.
set -eu
rounds=${1:?usage: bench/zorder-cpu.sh ROUNDS IMAGE...}
shift
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
build=${BUILD:-build}
case "$build" in /*) ;; *) build="$repo/$build" ;; esac
[ "$(id -u)" -eq 0 ] || { echo "bench/zorder-cpu.sh: needs root (drop_caches, mount)" >&2; exit 1; }
command -v javac >/dev/null || { echo "bench/zorder-cpu.sh: needs javac" >&2; exit 1; }
rt=""
chrt -f 50 true 2>/dev/null && rt="chrt -f 50"
tmp=$(mktemp -d /tmp/cairn-zorder-cpu.XXXXXX)
mnt=$tmp/mnt
pid=""
cleanup() {
  if mountpoint -q "$mnt" 2>/dev/null; then fusermount3 -u "$mnt" || true; fi
  [ -z "$pid" ] || wait "$pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
mkdir -p "$mnt" "$tmp/hello"
javac -d "$tmp/hello" "$here/Hello.java"
uptime
for r in $(seq "$rounds"); do
  for img in "$@"; do
    sync
    echo 3 > /proc/sys/vm/drop_caches
    rm -f "$tmp/stats"
    $rt "$build/cairn" mount "$img" "$mnt" -f -o "prefetch,delay=1ms,stats=$tmp/stats" \
      2>"$tmp/daemon.log" &
    pid=$!
    n=0
    until mountpoint -q "$mnt"; do
      n=$((n + 1))
      [ $n -lt 5000 ] || { echo "bench/zorder-cpu.sh: $img: no mount" >&2; exit 1; }
      sleep 0.002
    done
    t0=$(date +%s%N)
    $rt "$mnt/bin/java" -cp "$tmp/hello" Hello >/dev/null
    t1=$(date +%s%N)
    sleep 0.2
    fusermount3 -u "$mnt"
    wait "$pid"
    pid=""
    printf '%s cold_us %s ' "$img" $(( (t1 - t0) / 1000 ))
    grep -E '^(device_requests|device_bytes|chunk_misses|chunk_readahead|chunk_decompressed_bytes|push_bytes|cpu_user_us|cpu_sys_us) ' \
      "$tmp/stats" | tr '\n' ' '
    echo
  done
done >"$tmp/runs"
/usr/bin/python3 -B - "$tmp/runs" <<'EOF'
import collections, statistics, sys
keys = ("cold_us", "cpu_user_us", "cpu_sys_us", "device_requests", "device_bytes",
        "chunk_misses", "chunk_readahead", "chunk_decompressed_bytes", "push_bytes")
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    f = line.split()
    for i in range(1, len(f) - 1, 2):
        rows[f[0]][f[i]].append(int(f[i + 1]))
print("image: medians of", " ".join(keys))
for img, v in rows.items():
    print(img, " ".join(f"{k}={statistics.median(v[k]) if v[k] else '-'}" for k in keys))
EOF
uptime
