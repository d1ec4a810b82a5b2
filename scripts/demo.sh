#!/bin/sh
# make demo: the main job on the default workload that exists here, the JDK.
# Packs /usr/lib/jvm/java-17-openjdk-amd64 into an image, shows info and fsck,
# reads libjvm.so back cold through an emulated 1 ms/request disk, then mounts the
# image and runs Java from it.
set -eu
build=${1:-build}
CAIRN="$build/cairn"
JDK=${JDK:-/usr/lib/jvm/java-17-openjdk-amd64}
work=$(mktemp -d /tmp/cairn-demo.XXXXXX)
mnt="$work/mnt"
cleanup() {
  if mountpoint -q "$mnt" 2>/dev/null; then fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt"; fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

step() { printf '\n== %s\n' "$*"; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f s", b - a }'; }

step "cairn mkfs $JDK $work/jdk.cairn"
t=$(now); "$CAIRN" mkfs -q "$JDK" "$work/jdk.cairn"; echo "built in $(elapsed "$t")"
ls -l "$work/jdk.cairn"

step "cairn info"
"$CAIRN" info "$work/jdk.cairn"

step "cairn fsck --data"
"$CAIRN" fsck --data "$work/jdk.cairn"

step "read lib/server/libjvm.so cold, 1 ms per device request"
sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
t=$(now)
"$CAIRN" cat --delay 1ms --stats "$work/jdk.cairn" /lib/server/libjvm.so > "$work/libjvm.so"
echo "read in $(elapsed "$t")"
cmp "$work/libjvm.so" "$JDK/lib/server/libjvm.so" && echo "libjvm.so matches the source byte for byte"

if [ -e /dev/fuse ] && [ "$(id -u)" -eq 0 ]; then
  step "cairn mount (1 ms per device request, /tmp in RAM) and java -version from the image"
  mkdir -p "$mnt"
  "$CAIRN" mount "$work/jdk.cairn" "$mnt" -o delay=1ms,tmp=/tmp
  t=$(now); "$mnt/bin/java" -Xshare:auto -version; echo "cold java -version: $(elapsed "$t")"
  t=$(now); "$mnt/bin/java" -Xshare:auto -version 2>/dev/null; echo "warm java -version: $(elapsed "$t")"
  echo "scratch" > "$mnt/tmp/hello.txt" && echo "wrote $(cat "$mnt/tmp/hello.txt") to the RAM /tmp"
  fusermount3 -u "$mnt"
fi
echo; echo "demo done"
