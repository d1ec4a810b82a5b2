#!/bin/sh
# SPDX-License-Identifier: MIT
# mkfs of a generated tree of N empty files, 1000 per directory (issue 17: 10M
# files), from a manifest (docs/MANIFEST.md) rather than N real files: every line
# names one in-image file and the same empty host file. Then the open and lookup
# costs of the image, cold (page cache dropped before each run).
#
#   bench/manyfiles.sh [-b BUILD] [-r RUNS] [-d DIR] [--reuse] N...
#
# Prints, per N: mkfs wall time and peak RSS (/usr/bin/time -v), image size,
# median over RUNS cold runs of `cairn info` (open: superblock and fixed headers)
# and `cairn stat` of the last file (open + one lookup per path level). Manifests
# and images go to DIR (default /var/tmp/cairn-bench-trees/manyfiles; 10M files
# take 210 MB of manifest and 1.4 GB of image). --reuse keeps an existing image.
# Needs root for drop_caches.
set -eu

build=build
runs=5
dir=/var/tmp/cairn-bench-trees/manyfiles
reuse=0
while [ $# -gt 0 ]; do
  case "$1" in
    -b) build=$2; shift 2 ;;
    -r) runs=$2; shift 2 ;;
    -d) dir=$2; shift 2 ;;
    --reuse) reuse=1; shift ;;
    -*) echo "usage: bench/manyfiles.sh [-b BUILD] [-r RUNS] [-d DIR] [--reuse] N..." >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || set -- 1000000 10000000
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
case "$build" in /*) ;; *) build="$repo/$build" ;; esac
cairn="$build/cairn"
[ -x "$cairn" ] || { echo "manyfiles: $cairn missing: run make first" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "manyfiles: needs root (drop_caches)" >&2; exit 1; }
mkdir -p "$dir"
: > "$dir/empty"

med() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# cold_ms CMD...: median wall milliseconds of CMD over $runs runs with the image
# cold (page cache dropped) and the cairn binary and its libraries loaded again
cold_ms() {
  for _ in $(seq "$runs"); do
    sync
    echo 3 > /proc/sys/vm/drop_caches
    "$cairn" --version > /dev/null 2>&1 || true
    t0=$(date +%s%N)
    "$@" > /dev/null
    t1=$(date +%s%N)
    echo $(( (t1 - t0) / 1000 ))
  done | med | awk '{ printf "%.2f", $1 / 1000 }'
}

# dev CMD...: "requests / KiB" the command read from the image (its --stats line)
dev() {
  "$@" --stats 2>&1 >/dev/null | sed -n 's/^device: \([0-9]*\) requests, \([0-9]*\) bytes.*/\1 \2/p' |
    awk '{ printf "%d / %d", $1, $2 / 1024 }'
}

echo "| files | mkfs s | mkfs peak RSS MiB | image MiB | info ms (cold) | info requests / KiB | stat of the last file ms (cold) | stat requests / KiB |"
echo "|---|---|---|---|---|---|---|---|"
for n in "$@"; do
  man=$dir/files-$n.manifest
  img=$dir/files-$n.cairn
  if [ ! -s "$man" ]; then
    python3 - "$man" "$n" <<'EOF'
import sys
path, n = sys.argv[1], int(sys.argv[2])
with open(path, "w") as f:
    for i in range(n):
        f.write("/d%05d/f%04d: empty\n" % (i // 1000, i % 1000))
EOF
  fi
  if [ "$reuse" = 1 ] && [ -s "$img" ] && [ -s "$img.time" ]; then
    :
  else
    rm -f "$img"
    /usr/bin/time -v "$cairn" mkfs -q --no-fsync --manifest "$man" "$img" 2> "$img.time" ||
      { cat "$img.time" >&2; exit 1; }
  fi
  wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$img.time" |
         awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.1f", s }')
  rss=$(awk '/Maximum resident set size/ { printf "%.0f", $NF / 1024 }' "$img.time")
  size=$(stat -c %s "$img" | awk '{ printf "%.1f", $1 / 1048576 }')
  last=$(printf '/d%05d/f%04d' $(( (n - 1) / 1000 )) $(( (n - 1) % 1000 )))
  info=$(cold_ms "$cairn" info "$img")
  look=$(cold_ms "$cairn" stat "$img" "$last")
  echo "| $n | $wall | $rss | $size | $info | $(dev "$cairn" info "$img") | $look | $(dev "$cairn" stat "$img" "$last") |"
done
echo "(medians of $runs cold runs; load: $(cut -d' ' -f1-3 /proc/loadavg))"
