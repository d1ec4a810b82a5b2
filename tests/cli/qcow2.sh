#!/bin/sh
# A cairn image converted by qemu-img (cluster sizes 4K..2M, zlib and zstd
# compression, extended L2, version 2) reads through `cairn cat/extract/ls/fsck`
# exactly as the raw image does; a qcow2 inside a larger file reads with --offset;
# a backing chain reads through; an encrypted or damaged qcow2 is refused with a
# message that says why.
set -u
command -v qemu-img >/dev/null 2>&1 || { echo "qemu-img not installed (Debian qemu-utils)"; exit 77; }
work=$(mktemp -d /tmp/cairn-qcow2-cli.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

src=$work/src
mkdir -p "$src/dir/sub" "$src/empty"
head -c 3000000 /dev/urandom > "$src/big.bin"
yes "cairn qcow2 line" | head -c 700000 > "$src/dir/text.txt"
head -c 70000 /dev/zero > "$src/dir/zeros"
: > "$src/dir/sub/empty.txt"
echo small > "$src/dir/sub/small"
ln -s ../big.bin "$src/dir/link"

if ! "$CAIRN" mkfs -q "$src" "$work/img.cairn" 2>"$work/err"; then
  cat "$work/err"
  grep -q "not built yet" "$work/err" && { echo "cairn mkfs not built yet"; exit 77; }
  fail "mkfs"
fi
"$CAIRN" extract "$work/img.cairn" "$work/raw.out" || fail "extract of the raw image"
diff -r "$src" "$work/raw.out" || fail "raw extract differs from the source"

check() { # $1 = image file, $2 = label; extra args = image options
  img=$1; label=$2; shift 2
  "$CAIRN" info "$@" "$img" >/dev/null || fail "$label: info"
  "$CAIRN" fsck --data "$@" "$img" >/dev/null || fail "$label: fsck"
  "$CAIRN" cat "$@" "$img" /big.bin > "$work/big.out" || fail "$label: cat"
  cmp "$work/big.out" "$src/big.bin" || fail "$label: cat differs"
  "$CAIRN" ls "$@" "$img" /dir > "$work/ls.out" || fail "$label: ls"
  rm -rf "$work/q.out"
  "$CAIRN" extract "$@" "$img" "$work/q.out" || fail "$label: extract"
  diff -r "$work/raw.out" "$work/q.out" || fail "$label: extract differs"
  echo "ok: $label"
}

for opts in "-o cluster_size=4k" "-o cluster_size=64k" "-o cluster_size=2M" \
            "-c -o cluster_size=4k" "-c -o cluster_size=64k" "-c -o cluster_size=2M" \
            "-c -o compression_type=zstd,cluster_size=64k" \
            "-o extended_l2=on,cluster_size=16k" "-c -o extended_l2=on,cluster_size=64k" \
            "-o compat=0.10" "-c -o compat=0.10"; do
  rm -f "$work/img.qcow2"
  # shellcheck disable=SC2086
  qemu-img convert -f raw -O qcow2 $opts "$work/img.cairn" "$work/img.qcow2" || fail "qemu-img $opts"
  check "$work/img.qcow2" "qcow2 $opts"
done

# The L2 cache knobs do not change what is read.
check "$work/img.qcow2" "qcow2 with default options and --delay" --delay 10us

# A qcow2 image 1 MiB into a larger file (a partition): --offset.
qemu-img convert -f raw -O qcow2 -c "$work/img.cairn" "$work/part.qcow2"
{ head -c 1048576 /dev/zero; cat "$work/part.qcow2"; head -c 4096 /dev/zero; } > "$work/disk.img"
check "$work/disk.img" "qcow2 at --offset 1M" --offset 1M

# A backing chain: the base holds the image, the overlays rewrite nothing.
qemu-img convert -f raw -O qcow2 "$work/img.cairn" "$work/base.qcow2"
(cd "$work" && qemu-img create -q -f qcow2 -b base.qcow2 -F qcow2 mid.qcow2 &&
  qemu-img create -q -f qcow2 -b mid.qcow2 -F qcow2 top.qcow2) || fail "chain"
check "$work/top.qcow2" "backing chain of three"
# ... and a copy of the top in another directory still finds its base by name
# relative to its own directory, so it must fail there cleanly.
mkdir -p "$work/elsewhere"
cp "$work/top.qcow2" "$work/elsewhere/"
if "$CAIRN" info "$work/elsewhere/top.qcow2" 2>"$work/err" >/dev/null; then
  fail "an image with a missing backing file opened"
fi
cat "$work/err"
grep -q "backing" "$work/err" || fail "no message about the backing file"
# A backing file that is a directory: named, with what it is, after the image's
# path (it was "cairn info: qcow2: cannot open backing file DIR: Invalid argument").
qemu-img create -q -f qcow2 -F raw -b "$src" -u "$work/dirback.qcow2" 1M || fail "qemu-img create"
"$CAIRN" info "$work/dirback.qcow2" >/dev/null 2>"$work/err" && fail "a directory as backing file opened"
[ "$(cat "$work/err")" = "cairn info: $work/dirback.qcow2: qcow2: backing file $src is a directory" ] ||
  fail "directory backing file: $(cat "$work/err")"

# Refusals: encryption (crypt_method = 1) and damage (cluster_bits = 40).
cp "$work/img.qcow2" "$work/enc.qcow2"
printf '\001' | dd of="$work/enc.qcow2" bs=1 seek=35 conv=notrunc 2>/dev/null
if "$CAIRN" info "$work/enc.qcow2" 2>"$work/err" >/dev/null; then fail "encrypted qcow2 opened"; fi
cat "$work/err"
grep -qi "encrypt" "$work/err" || fail "no message about encryption"
cp "$work/img.qcow2" "$work/bad.qcow2"
printf '\050' | dd of="$work/bad.qcow2" bs=1 seek=23 conv=notrunc 2>/dev/null
if "$CAIRN" cat "$work/bad.qcow2" /big.bin 2>"$work/err" >/dev/null; then fail "damaged qcow2 opened"; fi
cat "$work/err"
grep -q "cluster_bits" "$work/err" || fail "no message about cluster_bits"
echo "all qcow2 CLI checks passed"
