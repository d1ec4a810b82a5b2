#!/bin/sh
# SPDX-License-Identifier: MIT
# Daemon memory (issue 17, "A lean daemon"): the daemon's VmRSS idle (1 s after
# a fresh mount) and right after a cold Java Hello on that mount, for one or
# more cairn builds and squashfuse_ll, alternating, on the default JDK image.
#
#   bench/lean-rss.sh [-r RUNS] [-o OPTS] BUILD...   e.g. bench/lean-rss.sh ../main/build build
#
# The same reading as bench.py's "daemon RSS MiB after cold" column: the image
# is read through bench/delayfs (1 ms per request, one channel: bench.py's
# latency profile) and VmRSS is taken with bench/procmem.py (bench_rss_kb)
# right after the cold run, before anything else runs on the mount. -o adds
# cairn mount options (e.g. cache_size=64M). Prints one line per run and the
# medians per system, with the device requests delayfs counted for the cold run
# (the mount's own reads included). Needs root (mount, drop_caches), the JDK of
# DESIGN.md, and squashfs-tools + squashfuse for the squashfuse_ll row.
set -eu
. "$(dirname "$0")/lib.sh"
runs=3 opts=
while getopts r:o: f; do
  case $f in r) runs=$OPTARG ;; o) opts=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: bench/lean-rss.sh [-r RUNS] [-o OPTS] BUILD..." >&2; exit 2; }
jdk=${JDK:-/usr/lib/jvm/java-17-openjdk-amd64}
work=$(mktemp -d /dev/shm/cairn-lean-rss.XXXXXX)
mnt=$work/mnt dev=$work/dev
pid= dpid=
cleanup() {
  if mountpoint -q "$mnt"; then fusermount3 -u "$mnt"; fi
  [ -z "$pid" ] || wait "$pid" 2>/dev/null || true
  if mountpoint -q "$dev"; then fusermount3 -u "$dev"; fi
  [ -z "$dpid" ] || wait "$dpid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$mnt" "$dev" "$work/img" "$work/hello"
cat > "$work/hello/Hello.java" <<'JAVA'
public class Hello { public static void main(String[] a) { System.out.println("Hello"); } }
JAVA
"$jdk/bin/javac" -d "$work/hello" "$work/hello/Hello.java"
bench_cairn lean-rss "$1"
"$cairn" mkfs -q "$jdk" "$work/img/jdk.cairn"
systems=
for b in "$@"; do systems="$systems $(cd "$b" && pwd)"; done
if command -v squashfuse_ll > /dev/null && command -v mksquashfs > /dev/null; then
  mksquashfs "$jdk" "$work/img/jdk.sqfs" -noI -noD -noF -noX -no-progress -quiet
  systems="$systems squashfuse_ll"
fi
"$(dirname "$cairn")/bench/delayfs" "$work/img" "$dev" -f -o delay=1ms,channels=1,bw=0 &
dpid=$!
bench_wait_mount lean-rss "$dev"
echo "lean-rss: $runs runs per system; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
: > "$work/runs"
for r in $(seq "$runs"); do
  for s in $systems; do
    sync; echo 3 > /proc/sys/vm/drop_caches
    echo reset > "$dev/.delayfs"
    if [ "$s" = squashfuse_ll ]; then
      squashfuse_ll -f "$dev/jdk.sqfs" "$mnt" & pid=$!
    else
      "$s/cairn" mount -f ${opts:+-o "$opts"} "$dev/jdk.cairn" "$mnt" & pid=$!
    fi
    bench_wait_mount lean-rss "$mnt"
    sleep 1
    idle=$(bench_rss_kb "$pid")
    "$mnt/bin/java" -cp "$work/hello" Hello > /dev/null
    hello=$(bench_rss_kb "$pid")
    req=$(awk '$1 == "requests" { print $2 }' "$dev/.delayfs")
    bench_unmount "$mnt"; wait "$pid"; pid=
    echo "$s $idle $hello $req" >> "$work/runs"
    echo "lean-rss: run $r $s: idle $idle KiB, after cold Hello $hello KiB, $req device requests" >&2
  done
done
med() { bench_median | cut -d' ' -f1; }
echo "| system | idle RSS MiB | RSS after cold Java Hello MiB | device requests |"
echo "|---|---|---|---|"
for s in $systems; do
  i=$(awk -v s="$s" '$1 == s { print $2 }' "$work/runs" | med)
  h=$(awk -v s="$s" '$1 == s { print $3 }' "$work/runs" | med)
  q=$(awk -v s="$s" '$1 == s { print $4 }' "$work/runs" | med)
  awk -v s="$s" -v i="$i" -v h="$h" -v q="$q" 'BEGIN { printf "| %s | %.1f | %.1f | %s |\n", s, i / 1024, h / 1024, q }'
done
echo "(medians of $runs; cairn options: ${opts:-none}; load at end: $(cut -d' ' -f1-3 /proc/loadavg))"
