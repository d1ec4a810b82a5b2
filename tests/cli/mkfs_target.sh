#!/bin/sh
# What cairn mkfs does with what is at IMAGE already: a character device, a FIFO
# and a directory are refused and left alone; a regular file that is not a cairn image is kept unless --force; an
# empty file or an old image is replaced; a symlink is followed to its target
# (the link stays a link), a dangling one refused; a block device (a loop
# device) is written in place. Errors name IMAGE, never the temporary file.
set -u
CAIRN=${CAIRN:-build/cairn}
work=$(mktemp -d /tmp/cairn-mkfs-target.XXXXXX)
loop=""
cleanup() {
  [ -n "$loop" ] && losetup -d "$loop"
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

mkdir "$work/src"
echo hello > "$work/src/a"
head -c 300000 /dev/urandom > "$work/src/big"

refused() { # path, expected message part
  "$CAIRN" mkfs -q "$work/src" "$1" 2>"$work/err"; rc=$?
  [ $rc -eq 1 ] || fail "mkfs onto $1: exit $rc"
  grep -qF "cairn mkfs: $1: $2" "$work/err" || fail "mkfs onto $1: said: $(cat "$work/err")"
  ls "$work" | grep -q "\.tmp\." && fail "temporary left next to $1"
  echo "ok: refused: $(cat "$work/err")"
}

# A private /dev/null (same major/minor), so a regression cannot break the machine's.
mknod "$work/null" c 1 3 || { echo "cannot mknod"; exit 77; }
refused "$work/null" "is a character device"
[ -c "$work/null" ] || fail "the character device was replaced"
mkfifo "$work/fifo"
refused "$work/fifo" "is a FIFO"
[ -p "$work/fifo" ] || fail "the FIFO was replaced"
mkdir "$work/dir"
refused "$work/dir" "is a directory"

echo "precious data" > "$work/notes.txt"
refused "$work/notes.txt" "exists and is not a cairn image; not replaced (--force replaces it)"
[ "$(cat "$work/notes.txt")" = "precious data" ] || fail "the regular file was changed"
"$CAIRN" mkfs -q --force "$work/src" "$work/notes.txt" || fail "--force"
"$CAIRN" fsck -q "$work/notes.txt" || fail "image written with --force"

: > "$work/empty"
"$CAIRN" mkfs -q "$work/src" "$work/empty" || fail "an empty file is replaced"
"$CAIRN" mkfs -q "$work/src" "$work/empty" || fail "an old image is replaced"
"$CAIRN" fsck -q "$work/empty" || fail "fsck of the replaced image"

ln -s empty "$work/link"
"$CAIRN" mkfs -q "$work/src" "$work/link" || fail "mkfs through a symlink"
[ -L "$work/link" ] || fail "the symlink was replaced by a file"
"$CAIRN" fsck -q "$work/empty" || fail "the symlink's target is not an image"
ln -s notes-missing "$work/dangling"
refused "$work/dangling" "a dangling symlink"
[ ! -e "$work/notes-missing" ] || fail "a dangling symlink's target was created"
ln -s "$work/null" "$work/link-null"
refused "$work/link-null" "is a character device"

# Errors name IMAGE as given, not IMAGE.tmp.PID.N.
"$CAIRN" mkfs -q "$work/src" "$work/nodir/x.img" 2>"$work/err" && fail "mkfs into a missing dir"
grep -qF "cairn mkfs: $work/nodir/x.img: No such file or directory" "$work/err" ||
  fail "message names: $(cat "$work/err")"
echo "ok: $(cat "$work/err")"

# A block device is written in place, as mkfs.erofs does.
if command -v losetup >/dev/null && truncate -s 4M "$work/disk" &&
   loop=$(losetup -f --show "$work/disk" 2>/dev/null) && [ -b "$loop" ]; then
  "$CAIRN" mkfs -q "$work/src" "$loop" || fail "mkfs onto $loop"
  [ -b "$loop" ] || fail "$loop is no longer a block device"
  "$CAIRN" fsck -q --data "$loop" || fail "fsck of $loop"
  [ "$("$CAIRN" cat "$loop" /a)" = hello ] || fail "cat from $loop"
  "$CAIRN" fsck -q --data "$work/disk" || fail "the image is not in the loop's file"
  head -c 6000000 /dev/urandom > "$work/src/too-big"
  "$CAIRN" mkfs -q "$work/src" "$loop" 2>"$work/err" && fail "an image larger than $loop"
  grep -qF "$loop: writing the image: No space left on device" "$work/err" ||
    fail "too small a device: $(cat "$work/err")"
  "$CAIRN" info "$loop" >/dev/null 2>&1 && fail "a half-written device still looks like an image"
  losetup -d "$loop"; loop=""
  echo "ok: block device written in place"
else
  echo "note: no loop device, block device case skipped"
fi
echo "mkfs_target: all checks passed"
