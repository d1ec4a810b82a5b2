#!/bin/sh
# -o tmp=PATHS: RAM subtrees over a read-only image. The POSIX checks inside one
# (seeded from the image), a path the image lacks (made, its parents read-only),
# and the paths that are refused: one that names or
# passes through a file or symlink of the image (a RAM directory would hide it),
# a relative one, "/" and ".." — each with a message that names the path.
. "$(dirname "$0")/common.inc"
SRC=$WORK/src
mkdir -p "$SRC/tmp/seed" "$SRC/etc"
echo seeded > "$SRC/tmp/seed/f"
echo conf > "$SRC/etc/conf"
ln -s etc "$SRC/link"
"$CAIRN" mkfs -q "$SRC" "$WORK/img.cairn" || fail "mkfs"

M=$WORK/m
mnt "$M" "$WORK/img.cairn" -o tmp=/tmp:/var/log || fail "mount tmp="
[ "$(cat "$M/tmp/seed/f")" = seeded ] || fail "tmp= not seeded from the image"
"$PROGS/posix_check" "$M/tmp" > "$WORK/posix.out" 2>&1 || { cat "$WORK/posix.out"; fail "POSIX checks in tmp="; }
tail -n 1 "$WORK/posix.out"
"$PROGS/posix_check" "$M/var/log" > "$WORK/posix2.out" 2>&1 || { cat "$WORK/posix2.out"; fail "POSIX checks in a tmp= path the image lacks"; }
( echo x > "$M/etc/conf" ) 2>/dev/null && fail "the image part is writable"
umnt "$M"

# A path the image lacks, parents and all, is made (docs/MOUNT.md): the RAM
# directory at the path is writable, its made parents are not.
mnt "$M" "$WORK/img.cairn" -o tmp=/none/there || fail "mount tmp= of a path the image lacks"
[ "$(stat -c %a "$M/none/there")" = 1777 ] || fail "tmp=/none/there: mode $(stat -c %a "$M/none/there")"
echo x > "$M/none/there/f" || fail "tmp=/none/there: not writable"
[ "$(ls "$M/none")" = there ] || fail "tmp=/none/there: /none holds $(ls "$M/none")"
mkdir "$M/none/other" 2>/dev/null && fail "a made parent is writable"
rmdir "$M/none/there" 2>/dev/null && fail "the tmp= directory was removed"
umnt "$M"

# refused PATH MESSAGE-PART
refused() {
  mkdir -p "$WORK/r"
  if "$CAIRN" mount "$WORK/img.cairn" -o tmp="$1" "$WORK/r" 2>"$WORK/err"; then
    fusermount3 -u "$WORK/r"
    fail "tmp=$1 was accepted"
  fi
  grep -q "tmp=$1: .*$2" "$WORK/err" || fail "tmp=$1: message: $(cat "$WORK/err")"
  mountpoint -q "$WORK/r" && fail "tmp=$1 left a mount"
  return 0
}
refused /etc/conf "file or symlink"
refused /link "file or symlink"
refused /etc/conf/sub "file or symlink"
refused /link/x "file or symlink"
refused relative "absolute path"
refused /tmp/../etc "absolute path"
refused / "absolute path"
echo "tmp: ok"
