#!/bin/sh
# Seed 000 reproduction (issue 3): libjvm.so read cold at a fixed delay per
# device request, the way OSv MFS did it (512-byte reads, no cache), the way OSv
# ROFS did it (32 KiB segments, one per request), and with cairn's defaults;
# then the whole JDK image, a 4 KiB cache-hit microbenchmark, and (--segments)
# the segment-size sweep behind the default. Prints a markdown report.
#
# usage: bench/seed-read.sh [--out FILE] [--runs N] [--delay TIME] [--segments] [--quick]
#   --runs N     repeat each cached mode N times, report the median (default 3)
#   --quick      skip the MFS mode (about a minute of 1 ms sleeps)
#   --segments   add the segment-size sweep
# env: CAIRN (the built tool, default build/cairn), JDK (default Java 17 path).
set -eu

CAIRN=${CAIRN:-build/cairn}
JDK=${JDK:-/usr/lib/jvm/java-17-openjdk-amd64}
OUT=""
RUNS=3
DELAY=1ms
QUICK=0
SEGMENTS=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --delay) DELAY=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --segments) SEGMENTS=1; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "seed-read: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$CAIRN" ] || { echo "seed-read: $CAIRN not built (make)" >&2; exit 1; }
LIBJVM_HOST=$JDK/lib/server/libjvm.so
[ -f "$LIBJVM_HOST" ] || { echo "seed-read: no $LIBJVM_HOST; skipped" >&2; exit 77; }

TMP=$(mktemp -d /tmp/cairn-seed-read.XXXXXX)
trap 'rm -rf "$TMP"' EXIT INT TERM
IMG=$TMP/jdk.cairn
if "$CAIRN" mkfs -q --no-fsync "$JDK" "$IMG" 2>"$TMP/mkfs.err"; then
  LIBJVM="$IMG /lib/server/libjvm.so"
else
  echo "seed-read: mkfs failed ($(head -1 "$TMP/mkfs.err")); reading libjvm.so raw" >&2
  IMG=""
  LIBJVM="$LIBJVM_HOST --raw"
fi
SIZE=$(stat -c %s "$LIBJVM_HOST")
DELAY_MS=$("$CAIRN" bench read "$LIBJVM_HOST" --raw --no-copy --no-warm --bs 64M \
  --delay "$DELAY" --cache-size 0 | awk -F': ' '$1=="delay_us"{print $2/1000}')
GOAL_REQ=$(( (SIZE + 1048575) / 1048576 + 2 ))

# bench LABEL RUNS ARGS... -> one table row; keeps the median-wall run's figures.
bench() {
  label=$1; runs=$2; shift 2
  : > "$TMP/runs"
  i=0
  while [ $i -lt "$runs" ]; do
    # shellcheck disable=SC2086
    "$CAIRN" bench read "$@" --delay "$DELAY" > "$TMP/one" || { echo "| $label | failed |"; return; }
    awk -F': ' '{v[$1]=$2} END {print v["wall_ms"], v["requests"], v["device_bytes"], v["floor_ms"], v["copy_ms"], v["ratio"], v["hit_4k_ns"], v["memcpy_4k_ns"], v["hit_4k_ns_2threads"]}' "$TMP/one" >> "$TMP/runs"
    i=$((i + 1))
  done
  sort -n "$TMP/runs" | awk -v label="$label" -v n="$runs" -v goal="$GOAL_REQ" -v check="${CHECK:-0}" '
    { w[NR]=$1; line[NR]=$0 }
    END {
      m = int((n + 1) / 2); split(line[m], f, " ")
      met = ""
      if (check) {
        rq = f[2] <= goal ? "requests met" : "requests not met (" f[2] " > " goal ")"
        tm = f[6] <= 1.2 ? "time met" : "time not met"
        met = rq ", " tm
      }
      printf "| %s | %d | %.1f | %.1f (%.1f-%.1f) | %.1f | %.1f | %.2f | %s |\n",
        label, f[2], f[3] / 1048576, f[1], w[1], w[n], f[4], f[5], f[6], met
    }'
  tail -1 "$TMP/runs" > "$TMP/last"
}

{
echo "### Seed 000: libjvm.so ($SIZE bytes) cold, $DELAY_MS ms per device request"
echo
echo "Machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at start."
echo "Wall is the median of $RUNS runs (min-max). Floor = requests x delay. Copy = the same"
echo "cold reads with no delay (the CPU cost of the stack). Goal for the default:"
echo "requests <= ceil(size/1MiB)+2 = $GOAL_REQ and wall <= 1.2 x (floor + copy)."
echo
echo "| mode | requests | device MiB | wall ms | floor ms | copy ms | wall/(floor+copy) | goal |"
echo "|---|---|---|---|---|---|---|---|"
if [ "$QUICK" = 0 ]; then
  # shellcheck disable=SC2086
  bench "MFS: 512-byte reads, no cache" 1 $LIBJVM --cache-size 0 --bs 512
fi
# shellcheck disable=SC2086
bench "OSv ROFS: 32 KiB segments, one per request" "$RUNS" $LIBJVM --segment 32K --max-io 32K
# shellcheck disable=SC2086
CHECK=1 bench "cairn default (image, incl. superblock + qcow2 probe)" "$RUNS" $LIBJVM
CHECK=1 bench "cairn default (libjvm.so alone, --raw)" "$RUNS" "$LIBJVM_HOST" --raw
if [ -n "$IMG" ]; then
  echo
  echo "### Whole JDK image ($(stat -c %s "$IMG") bytes, every file) cold, $DELAY_MS ms per request"
  echo
  echo "| mode | requests | device MiB | wall ms | floor ms | copy ms | wall/(floor+copy) | goal |"
  echo "|---|---|---|---|---|---|---|---|"
  bench "cairn default" "$RUNS" "$IMG"
fi
echo
echo "### 4 KiB cache hit, in-process (cairn_cache_read of a cached range)"
echo
echo "Random 4 KiB-aligned hits over a span of cached data; memcpy of the same pattern"
echo "from a plain buffer is the reference (what any cache must pay)."
echo
echo "| span | cairn_cache_read ns, 1 thread | per call, 2 threads | memcpy ns |"
echo "|---|---|---|---|"
for span in 1M 16M; do
  "$CAIRN" bench read "$LIBJVM_HOST" --raw --no-copy --hit 1000000 --hit-span $span > "$TMP/hit"
  awk -F': ' -v span=$span '{v[$1]=$2} END {
    printf "| %s | %.0f | %.0f | %.0f |\n", span, v["hit_4k_ns"], v["hit_4k_ns_2threads"], v["memcpy_4k_ns"] }' "$TMP/hit"
done

if [ "$SEGMENTS" = 1 ]; then
  echo
  echo "### Segment size sweep ($DELAY_MS ms per request)"
  echo
  echo "libjvm.so sequential in 128 KiB reads; 500 random 4 KiB reads of lib/modules"
  echo "(raw, seeded offsets); the 4 KiB hit cost. Median of $RUNS runs."
  echo
  echo "| segment | libjvm requests | libjvm wall ms | random requests | random device MiB | random wall ms | hit ns |"
  echo "|---|---|---|---|---|---|---|"
  for s in 16K 32K 64K 128K 256K 512K 1M; do
    # shellcheck disable=SC2086
    seq=$(bench x "$RUNS" $LIBJVM --segment $s --no-copy)
    rnd=$(bench x "$RUNS" "$JDK/lib/modules" --raw --random 500 --bs 4K --segment $s --no-copy)
    hit=$("$CAIRN" bench read "$LIBJVM_HOST" --raw --no-copy --hit 300000 --segment $s |
          awk -F': ' '$1=="hit_4k_ns"{print $2}')
    echo "$seq|$rnd|$hit" | awk -F'|' -v s="$s" '{
      split($5, sw, " "); split($15, rw, " ")
      printf "| %s | %s | %s | %s | %s | %s | %.0f |\n", s, $3 + 0, sw[1], $13 + 0, $14 + 0, rw[1], $NF }'
  done
fi
} | if [ -n "$OUT" ]; then tee "$OUT"; else cat; fi
