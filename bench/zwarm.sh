#!/bin/sh
# Warm Java Hello on compressed mounts against the plain directory (issue 12,
# "Warm": at most 1.05x). The JDK as `cairn mkfs -z zstd` and `-z lz4hc` images
# in /dev/shm, each mounted once and warmed by one run; then RUNS rounds, each
# running Hello from the plain JDK directory and from every mount in turn, so
# load drifts hit all of them alike. Prints the median wall time of each (min-max)
# and its ratio to the plain directory's median, and the daemon's RSS after.
#   bench/zwarm.sh [BUILD] [RUNS]     (root; `chrt -f 50 bench/zwarm.sh` for less noise)
set -eu
build=${1:-build}
runs=${2:-7}
. "$(dirname "$0")/lib.sh"
bench_cairn zwarm "$build"
jdk=${JDK:-/usr/lib/jvm/java-17-openjdk-amd64}
here=$(dirname "$(realpath "$0")")
work=$(mktemp -d /dev/shm/cairn-zwarm.XXXXXX)
codecs="zstd lz4hc"
cleanup() {
  for c in $codecs; do
    mountpoint -q "$work/m-$c" 2>/dev/null && bench_unmount "$work/m-$c"
  done
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
mkdir -p "$work/cls"
javac -d "$work/cls" "$here/Hello.java"

secs() { # JAVA_HOME: one Hello, prints its wall time in seconds
  t0=$(date +%s.%N); "$1/bin/java" -cp "$work/cls" Hello >/dev/null; t1=$(date +%s.%N)
  echo "$t1 $t0" | awk '{ printf "%.3f\n", $1 - $2 }'
}

for c in $codecs; do
  "$cairn" mkfs -q --no-fsync -z "$c" "$jdk" "$work/$c.cairn"
  mkdir -p "$work/m-$c"
  "$cairn" mount -o noprofile,stats="$work/st-$c" "$work/$c.cairn" "$work/m-$c"
  secs "$work/m-$c" >/dev/null # warm it
done
secs "$jdk" >/dev/null
i=0
while [ $i -lt "$runs" ]; do
  secs "$jdk" >> "$work/t-plain"
  for c in $codecs; do secs "$work/m-$c" >> "$work/t-$c"; done
  i=$((i + 1))
done
set -- $(bench_median < "$work/t-plain")
plain=$1
echo "| system | warm s (min-max) | x plain dir | daemon RSS MiB |"
echo "|---|---|---|---|"
echo "| plain directory | $1 ($2-$3) | 1.00 | - |"
for c in $codecs; do
  bench_unmount "$work/m-$c"
  i=0; while [ ! -s "$work/st-$c" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  rss=$(awk '$1 == "rss_kb" { printf "%.1f", $2 / 1024 }' "$work/st-$c")
  set -- $(bench_median < "$work/t-$c")
  echo "| cairn $c | $1 ($2-$3) | $(echo "scale=2; $1 / $plain" | bc | sed 's/^\./0./') | $rss |"
done
