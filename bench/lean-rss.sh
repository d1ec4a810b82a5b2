#!/bin/sh
# SPDX-License-Identifier: MIT
# Daemon memory (issue 17, "A lean daemon"): VmRSS of a fresh `cairn mount` of
# the default JDK image idle (1 s after mount) and right after a cold Java
# Hello (caches dropped, fresh mount), for one or more builds, alternating.
#
#   bench/lean-rss.sh [-r RUNS] BUILD...     e.g. bench/lean-rss.sh ../main/build build
#
# Prints one line per run and the medians per build, with device requests from
# the daemon's stats. Needs root (mount, drop_caches) and the JDK of DESIGN.md.
set -eu
runs=3
[ "${1:-}" = -r ] && { runs=$2; shift 2; }
[ $# -gt 0 ] || { echo "usage: bench/lean-rss.sh [-r RUNS] BUILD..." >&2; exit 2; }
jdk=${JDK:-/usr/lib/jvm/java-17-openjdk-amd64}
work=$(mktemp -d /dev/shm/cairn-lean-rss.XXXXXX)
mnt=$work/mnt
pid=
trap 'if mountpoint -q "$mnt"; then fusermount3 -u "$mnt"; fi; [ -z "$pid" ] || wait "$pid" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$mnt" "$work/hello"
cat > "$work/hello/Hello.java" <<'EOF'
public class Hello { public static void main(String[] a) { System.out.println("Hello"); } }
EOF
"$jdk/bin/javac" -d "$work/hello" "$work/hello/Hello.java"
first=$(cd "$1" && pwd)
"$first/cairn" mkfs -q "$jdk" "$work/jdk.cairn"
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$pid/status"; }
echo "lean-rss: $runs runs per build; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
: > "$work/runs"
for r in $(seq "$runs"); do
  for b in "$@"; do
    b=$(cd "$b" && pwd)
    sync; echo 3 > /proc/sys/vm/drop_caches
    rm -f "$work/st"
    "$b/cairn" mount -f -o "stats=$work/st" "$work/jdk.cairn" "$mnt" & pid=$!
    i=0; while ! mountpoint -q "$mnt"; do i=$((i + 1)); [ $i -lt 300 ] || exit 1; sleep 0.02; done
    sleep 1
    idle=$(rss)
    "$mnt/bin/java" -cp "$work/hello" Hello > /dev/null
    hello=$(rss)
    fusermount3 -u "$mnt"; wait "$pid"; pid=
    req=$(awk '$1 == "device_requests" { print $2 }' "$work/st")
    echo "$b $idle $hello $req" >> "$work/runs"
    echo "lean-rss: run $r $b: idle $idle KiB, after Hello $hello KiB, $req device requests" >&2
  done
done
med() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "| build | idle RSS MiB | RSS after cold Java Hello MiB | device requests |"
echo "|---|---|---|---|"
for b in "$@"; do
  b=$(cd "$b" && pwd)
  i=$(awk -v b="$b" '$1 == b { print $2 }' "$work/runs" | med)
  h=$(awk -v b="$b" '$1 == b { print $3 }' "$work/runs" | med)
  q=$(awk -v b="$b" '$1 == b { print $4 }' "$work/runs" | med)
  awk -v b="$b" -v i="$i" -v h="$h" -v q="$q" 'BEGIN { printf "| %s | %.1f | %.1f | %s |\n", b, i / 1024, h / 1024, q }'
done
echo "(medians of $runs; load at end: $(cut -d' ' -f1-3 /proc/loadavg))"
