#!/bin/sh
# The seed-003 experiment, the way Ingo Molnar asked for it: the image sits in RAM
# (/dev/shm) and every request to the image *file* costs a fixed 1 ms (cairn's
# delay bdev under the qcow2 layer), so L2-cache effects show as request counts
# and time without disk noise. A JDK cairn image is read whole, cold (a fresh stack
# each run), raw and through qcow2 with the L2 cache off, too small for the tables
# in use, and at its default size; then `qemu-img convert` reads the same qcow2
# file through delayfs (1 ms per request, one channel) when delayfs is built.
#
#   bench/qcow2.sh [BUILD]        env: JDK, DELAY (1ms), RUNS (3), DELAYFS, OUT
# Prints a markdown report (also written to $OUT, default $BUILD/qcow2-bench.md).
set -eu
build=${1:-build}
JDK=${JDK:-/usr/lib/jvm/java-17-openjdk-amd64}
DELAY=${DELAY:-1ms}
RUNS=${RUNS:-3}
tool=$build/bench/qcow2
CAIRN=$build/cairn
DELAYFS=${DELAYFS:-$build/bench/delayfs}
OUT=${OUT:-$build/qcow2-bench.md}
[ -x "$tool" ] && [ -x "$CAIRN" ] || { echo "build first: make" >&2; exit 1; }
command -v qemu-img >/dev/null || { echo "qemu-img missing (apt-get install qemu-utils)" >&2; exit 1; }
work=$(mktemp -d /dev/shm/cairn-qcow2-bench.XXXXXX)
mnt=$work/mnt
cleanup() {
  if mountpoint -q "$mnt" 2>/dev/null; then fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt"; fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

"$CAIRN" mkfs -q "$JDK" "$work/jdk.cairn"
qemu-img convert -f raw -O qcow2 "$work/jdk.cairn" "$work/jdk-64k.qcow2"
qemu-img convert -f raw -O qcow2 -o cluster_size=4k "$work/jdk.cairn" "$work/jdk-4k.qcow2"
qemu-img convert -f raw -O qcow2 -c "$work/jdk.cairn" "$work/jdk-64k-zlib.qcow2"

field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# One table row: the median-time run of $runs (the request counts do not vary).
row() { # label runs args...
  label=$1; runs=$2; shift 2
  : > "$work/runs"
  i=0
  while [ $i -lt "$runs" ]; do
    "$tool" "$@" --delay "$DELAY" >> "$work/runs"
    i=$((i + 1))
  done
  line=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^time_ms=/) { split($i, a, "="); print a[2], $0 } }' \
    "$work/runs" | sort -n | awk -v m=$(((runs + 1) / 2)) 'NR == m { $1 = ""; print }')
  printf '| %s | %s | %s | %s | %s | %s |\n' "$label" "$(field "$line" requests)" \
    "$(field "$line" l2_table_reads)" "$(field "$line" data_requests)" \
    "$(field "$line" l2_hits)/$(field "$line" l2_misses)/$(field "$line" l2_evictions)" \
    "$(field "$line" time_ms)"
}

table() { # title, extra tool args
  title=$1; shift
  runs=$RUNS
  case "$*" in *random*) runs=1 ;; esac
  printf '\n### %s\n\n' "$title"
  echo "| image | requests | L2 table reads | data requests | L2 hits/misses/evictions | wall ms |"
  echo "|---|---:|---:|---:|---:|---:|"
  row "raw cairn image" "$runs" "$work/jdk.cairn" "$@"
  row "qcow2 64K clusters, L2 cache off" "$runs" "$work/jdk-64k.qcow2" --l2-cache off "$@"
  row "qcow2 64K clusters, L2 cache 8K (2 of 9 slices)" "$runs" "$work/jdk-64k.qcow2" --l2-cache 8k "$@"
  row "qcow2 64K clusters, default L2 cache (1M)" "$runs" "$work/jdk-64k.qcow2" "$@"
  row "qcow2 4K clusters, L2 cache off" "$runs" "$work/jdk-4k.qcow2" --l2-cache off "$@"
  row "qcow2 4K clusters, L2 cache 64K (16 of $tables4k tables)" "$runs" "$work/jdk-4k.qcow2" --l2-cache 64k "$@"
  row "qcow2 4K clusters, default L2 cache (1M)" "$runs" "$work/jdk-4k.qcow2" "$@"
  row "qcow2 64K zlib, L2 cache off" "$runs" "$work/jdk-64k-zlib.qcow2" --l2-cache off "$@"
  row "qcow2 64K zlib, default L2 cache" "$runs" "$work/jdk-64k-zlib.qcow2" "$@"
}

size=$(stat -c %s "$work/jdk.cairn")
tables4k=$(( (size + 2097151) / 2097152 ))
{
  echo "## qcow2 read benchmark ($(date -u +%Y-%m-%dT%H:%MZ))"
  echo
  echo "JDK image: $(ls -l "$work/jdk.cairn" | awk '{print $5}') bytes raw;" \
       "qcow2 64K $(stat -c %s "$work/jdk-64k.qcow2"), 4K $(stat -c %s "$work/jdk-4k.qcow2")," \
       "64K zlib $(stat -c %s "$work/jdk-64k-zlib.qcow2") bytes. Delay $DELAY per request to" \
       "the image file (cairn delay bdev under qcow2), one channel; median of $RUNS runs" \
       "(random order: 1 run). 'requests' = requests to the file."
  table "Whole image through the file system: every file read (walk), default segment cache" --walk
  table "Whole virtual disk in order, 1 MiB reads" --chunk 1M
  table "Whole virtual disk in shuffled order, 64 KiB reads" --chunk 64k --order random
} | tee "$OUT"

# qemu-img convert reads the same files through delayfs: same delay, one channel.
if [ -x "$DELAYFS" ] && [ -e /dev/fuse ]; then
  mkdir -p "$mnt"
  delay_ms=$(echo "$DELAY" | sed 's/ms$//')
  "$DELAYFS" "$work" "$mnt" -o delay="$DELAY",channels=1
  {
    printf '\n### qemu-img convert -O raw, reading through delayfs (%s per request, 1 channel)\n\n' "$DELAY"
    echo "| image | qemu-img -m | requests | wall ms |"
    echo "|---|---:|---:|---:|"
    for img in jdk.cairn jdk-64k.qcow2 jdk-4k.qcow2 jdk-64k-zlib.qcow2; do
      fmt=qcow2; [ "$img" = jdk.cairn ] && fmt=raw
      for m in 1 8; do
        echo reset > "$mnt/.delayfs"
        t0=$(date +%s%N)
        qemu-img convert -m $m -f $fmt -O raw "$mnt/$img" "$work/out.raw"
        t1=$(date +%s%N)
        req=$(sed -n 's/^requests //p' "$mnt/.delayfs")
        rm -f "$work/out.raw"
        printf '| %s | %s | %s | %s |\n' "$img" $m "$req" $(( (t1 - t0) / 1000000 ))
      done
    done
    # cairn itself through delayfs, for the same yardstick.
    echo
    echo "| cairn through delayfs (no in-process delay) | requests (delayfs) | wall ms |"
    echo "|---|---:|---:|"
    for img in jdk.cairn jdk-64k.qcow2 jdk-4k.qcow2; do
      for l2 in off default; do
        [ "$img" = jdk.cairn ] && [ $l2 = off ] && continue
        echo reset > "$mnt/.delayfs"
        if [ $l2 = off ]; then line=$("$tool" "$mnt/$img" --chunk 1M --l2-cache off)
        else line=$("$tool" "$mnt/$img" --chunk 1M); fi
        req=$(sed -n 's/^requests //p' "$mnt/.delayfs")
        printf '| %s, disk in order, 1 MiB reads, L2 %s | %s | %s |\n' "$img" $l2 "$req" \
          "$(field "$line" time_ms)"
      done
    done
  } | tee -a "$OUT"
  fusermount3 -u "$mnt"
  : "$delay_ms"
else
  # No delayfs: count qemu-img's read calls with strace and time it without delay.
  {
    printf '\n### qemu-img convert -O raw (no delayfs here: syscalls counted by strace, no delay)\n\n'
    echo "| image | preads | wall ms (no delay) |"
    echo "|---|---:|---:|"
    for img in jdk.cairn jdk-64k.qcow2 jdk-4k.qcow2 jdk-64k-zlib.qcow2; do
      fmt=qcow2; [ "$img" = jdk.cairn ] && fmt=raw
      t0=$(date +%s%N)
      strace -f -c -e trace=pread64,preadv,preadv2 -o "$work/strace" \
        qemu-img convert -m 1 -f $fmt -O raw "$work/$img" "$work/out.raw"
      t1=$(date +%s%N)
      rm -f "$work/out.raw"
      printf '| %s | %s | %s |\n' "$img" "$(awk '/total/ { print $3 }' "$work/strace")" \
        $(( (t1 - t0) / 1000000 ))
    done
  } | tee -a "$OUT"
fi
