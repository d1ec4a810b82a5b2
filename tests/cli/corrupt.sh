#!/bin/sh
# Hostile images: every single-byte flip of the superblock and checksum table and
# every byte of the metadata region (a spread sample in sanitizer builds) is detected by
# `cairn fsck` (exit 1 or 4, never 0, never a crash or hang); truncated images
# are refused cleanly with a "corrupt image" message by every read command.
set -u
here=$(cd "$(dirname "$0")" && pwd)
CAIRN=${CAIRN:-build/cairn}
work=$(mktemp -d /tmp/cairn-corrupt.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

if "$CAIRN" mkfs --help 2>&1 | grep -q "not built yet"; then
  echo "cairn mkfs is not built yet"; exit 77
fi
python3 "$here/treetool.py" gen "$work/src" || fail "cannot generate the tree"
"$CAIRN" mkfs -q "$work/src" "$work/img" || fail "mkfs failed"
"$CAIRN" fsck -q "$work/img" || fail "fresh image not clean"

python3 "$here/treetool.py" flip "$work/img" "$CAIRN" "${CAIRN_BUILD:-build}/libcairn.so.0" ||
  fail "some flips were not detected"
"$CAIRN" fsck -q "$work/img" || fail "image not restored after flips"

size=$(stat -c %s "$work/img")
for len in 0 255 4096 8192 $((size / 2)) $((size - 1)); do
  head -c "$len" "$work/img" > "$work/trunc"
  for cmd in "info" "ls -R" "cat" "stat" "fsck"; do
    case $cmd in
      cat|stat) args="/small.txt" ;;
      *) args="" ;;
    esac
    # shellcheck disable=SC2086
    "$CAIRN" $cmd "$work/trunc" $args >/dev/null 2>"$work/err"; rc=$?
    [ $rc -ne 0 ] || fail "$cmd accepted an image truncated to $len bytes"
    [ $rc -lt 128 ] || fail "$cmd crashed (rc $rc) on an image truncated to $len bytes"
    # (0 bytes is an empty file, no image at all: tests/cli/errors.sh)
    grep -qE "corrupt image|not a cairn image: the file is empty" "$work/err" ||
      fail "$cmd on an image truncated to $len: $(cat "$work/err")"
  done
  "$CAIRN" fsck "$work/trunc" >/dev/null 2>&1; rc=$?
  [ $rc -eq 4 ] || fail "fsck of an image truncated to $len exits $rc, not 4"
done
echo "ok: truncated images refused"

# A directory is not an image; a missing file neither.
"$CAIRN" fsck "$work" >/dev/null 2>&1; [ $? -eq 4 ] || fail "fsck of a directory"
"$CAIRN" fsck "$work/nope" >/dev/null 2>&1; [ $? -eq 4 ] || fail "fsck of a missing file"
echo "corrupt: all checks passed"
