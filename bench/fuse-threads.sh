#!/bin/sh
# bench/fuse-threads.sh IMAGE [MOUNT_OPTS [RUNS]] (root; needs strace): how many
# threads the FUSE daemon starts during a walk of the mounted IMAGE (find, ls -lR,
# then cat of 300 files), counted as the clone calls strace sees once the mount is
# up, with the daemon's thread count at the end and its peak RSS (VmHWM). libfuse
# starts a worker whenever a request arrives with none idle and ends one whenever
# more than max_idle_threads are idle; a mount that answers OPENDIR gets each
# RELEASEDIR in the background, beside the walk's own requests.
set -eu
img=$1; opts=${2:-ro}; runs=${3:-3}
cairn=${CAIRN:-$(dirname "$0")/../build/cairn}
work=$(mktemp -d /tmp/cairn-fuse-threads.XXXXXX)
mkdir "$work/mnt"
trap 'fusermount3 -u "$work/mnt" 2>/dev/null; rm -rf "$work"' EXIT INT TERM
i=0
while [ "$i" -lt "$runs" ]; do
  i=$((i + 1))
  "$cairn" mount -o "$opts" "$img" "$work/mnt"
  pid=$(pgrep -n -f "cairn-fuse.* $work/mnt")
  strace -f -qq -e trace=clone,clone3 -e signal=none -p "$pid" -o "$work/st" &
  st=$!
  sleep 0.5
  find "$work/mnt" > /dev/null
  ls -lR "$work/mnt" > /dev/null
  find "$work/mnt" -type f | head -300 | xargs cat > /dev/null
  sleep 0.3
  rss=$(awk '/VmHWM/ { print $2 }' "/proc/$pid/status")
  thr=$(ls "/proc/$pid/task" | wc -l)
  kill "$st"; wait "$st" 2>/dev/null || true
  fusermount3 -u "$work/mnt"
  echo "run $i: -o $opts: threads started $(grep -v resumed "$work/st" | grep -c clone || true)," \
       "threads at the end $thr, daemon peak RSS $((rss / 1024)) MiB"
done
