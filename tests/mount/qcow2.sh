#!/bin/sh
# `cairn mount` on a qcow2 file (compressed, and a backing chain) shows the same
# tree as the source directory, byte for byte.
set -u
command -v qemu-img >/dev/null 2>&1 || { echo "qemu-img not installed (Debian qemu-utils)"; exit 77; }
[ -e /dev/fuse ] || { echo "no /dev/fuse"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "needs root for FUSE mounts here"; exit 77; }
work=$(mktemp -d /tmp/cairn-qcow2-mnt.XXXXXX)
mnt=$work/mnt
cleanup() {
  if mountpoint -q "$mnt" 2>/dev/null; then fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt"; fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

src=$work/src
mkdir -p "$src/a/b" "$mnt"
head -c 2500000 /dev/urandom > "$src/a/random.bin"
yes "qcow2 mount" | head -c 900000 > "$src/a/b/text"
echo hi > "$src/hello"
ln -s a/random.bin "$src/link"
if ! "$CAIRN" mkfs -q "$src" "$work/img.cairn" 2>"$work/err"; then
  cat "$work/err"
  grep -q "not built yet" "$work/err" && { echo "cairn mkfs not built yet"; exit 77; }
  fail "mkfs"
fi

try_mount() { # $1 = image, $2 = label, $3 = -o options (optional)
  if ! "$CAIRN" mount "$1" "$mnt" ${3:+-o "$3"} 2>"$work/err"; then
    cat "$work/err"
    grep -q "not built yet" "$work/err" && { echo "cairn mount not built yet"; exit 77; }
    fail "$2: mount"
  fi
  diff -r "$src" "$mnt" || fail "$2: tree differs"
  cmp "$src/a/random.bin" "$mnt/a/random.bin" || fail "$2: random.bin differs"
  fusermount3 -u "$mnt" || umount -l "$mnt"
  echo "ok: $2"
}

qemu-img convert -f raw -O qcow2 -c -o cluster_size=16k "$work/img.cairn" "$work/c.qcow2"
try_mount "$work/c.qcow2" "compressed qcow2"
{ head -c 1048576 /dev/zero; cat "$work/c.qcow2"; } > "$work/disk.img"
try_mount "$work/disk.img" "compressed qcow2 1 MiB into a disk, L2 cache off" \
  offset=1M,l2_cache=0
qemu-img convert -f raw -O qcow2 -o extended_l2=on,compression_type=zstd -c \
  "$work/img.cairn" "$work/base.qcow2"
(cd "$work" && qemu-img create -q -f qcow2 -b base.qcow2 -F qcow2 top.qcow2) || fail "chain"
try_mount "$work/top.qcow2" "backing chain over extended-L2 zstd"
echo "all qcow2 mount checks passed"
