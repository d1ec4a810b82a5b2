#!/bin/sh
# bench/fuse-threads-rss.sh IMAGE [RUNS] (root): the daemon's RSS an idle worker
# pool costs after writes: a -o tmp=/tmp mount, 8 writers of 16 MiB each in 1 MiB
# write() calls (each WRITE request fills a worker's 1 MiB request buffer), the files
# removed, then the daemon's VmRSS and thread count (bench/fuse-threads.sh counts the
# threads a walk starts).
set -eu
img=$1; runs=${2:-3}
cairn=${CAIRN:-$(dirname "$0")/../build/cairn}
work=$(mktemp -d /tmp/cairn-fuse-rss.XXXXXX)
mkdir "$work/mnt"
trap 'fusermount3 -u "$work/mnt" 2>/dev/null; rm -rf "$work"' EXIT INT TERM
i=0
while [ "$i" -lt "$runs" ]; do
  i=$((i + 1))
  "$cairn" mount -o tmp=/tmp "$img" "$work/mnt"
  pid=$(pgrep -n -f "cairn-fuse.* $work/mnt")
  before=$(awk '/VmRSS/ { print $2 }' "/proc/$pid/status")
  for w in 1 2 3 4 5 6 7 8; do
    dd if=/dev/zero of="$work/mnt/tmp/f$w" bs=1M count=16 status=none &
  done
  wait
  rm -f "$work/mnt/tmp/f"*
  sleep 0.3
  after=$(awk '/VmRSS/ { print $2 }' "/proc/$pid/status")
  thr=$(ls "/proc/$pid/task" | wc -l)
  fusermount3 -u "$work/mnt"
  echo "run $i: daemon RSS $((before / 1024)) MiB after mount, $((after / 1024)) MiB after the writes" \
       "(files removed), $thr threads"
done
