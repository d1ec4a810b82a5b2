#!/bin/sh
# delayfs (the benchmark's emulated disk): serves a file byte for byte, counts every read
# request (direct_io: no page cache hides one), resets its counters, and a loop device
# plus kernel squashfs read through it.
set -u
d=$CAIRN_BUILD/bench/delayfs
[ -x "$d" ] || { echo "delayfs not built"; exit 1; }
[ -e /dev/fuse ] || { echo "no /dev/fuse"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "needs root"; exit 77; }
t=$(mktemp -d /dev/shm/delayfs-test.XXXXXX)
loop=""
cleanup() {
  umount "$t/sq" 2>/dev/null
  [ -n "$loop" ] && losetup -d "$loop" 2>/dev/null
  umount "$t/dev" 2>/dev/null
  rm -rf "$t"
}
trap cleanup EXIT INT TERM
mkdir -p "$t/src" "$t/dev" "$t/sq" "$t/tree"
head -c 3000000 /dev/urandom > "$t/src/blob"
"$d" "$t/src" "$t/dev" -o delay=100us || { echo "delayfs did not start"; exit 1; }
grep -q " $t/dev fuse.delayfs " /proc/mounts || { echo "not mounted"; exit 1; }
cmp "$t/src/blob" "$t/dev/blob" || { echo "content differs"; exit 1; }
echo reset > "$t/dev/.delayfs"
n=$(awk '$1 == "requests" { print $2 }' "$t/dev/.delayfs")
[ "$n" = 0 ] || { echo "reset left requests=$n"; exit 1; }
# 3000000 bytes in 64 KiB reads: 46 requests, read twice (no caching in between)
dd if="$t/dev/blob" of=/dev/null bs=64k 2>/dev/null
dd if="$t/dev/blob" of=/dev/null bs=64k 2>/dev/null
n=$(awk '$1 == "requests" { print $2 }' "$t/dev/.delayfs")
b=$(awk '$1 == "bytes" { print $2 }' "$t/dev/.delayfs")
[ "$n" = 92 ] || { echo "expected 92 requests, got $n"; cat "$t/dev/.delayfs"; exit 1; }
[ "$b" = 6000000 ] || { echo "expected 6000000 bytes, got $b"; exit 1; }
# writing an image file is refused; a bad control word too
if (echo x > "$t/dev/blob") 2>/dev/null; then echo "image file was writable"; exit 1; fi
if (echo bogus > "$t/dev/.delayfs") 2>/dev/null; then echo "bogus control accepted"; exit 1; fi
# loop device + kernel squashfs on a delayfs file
if command -v mksquashfs >/dev/null && grep -qw squashfs /proc/filesystems; then
  echo hello > "$t/tree/hello.txt"
  mksquashfs "$t/tree" "$t/src/tree.sqfs" -quiet -no-progress >/dev/null || exit 1
  loop=$(losetup -r -f --show "$t/dev/tree.sqfs") || exit 1
  mount -t squashfs -o ro "$loop" "$t/sq" || { echo "squashfs mount failed"; exit 1; }
  [ "$(cat "$t/sq/hello.txt")" = hello ] || { echo "squashfs read wrong"; exit 1; }
fi
echo "delayfs ok"
