#!/bin/sh
# A character device 0/0 made by a user (the whiteout format of overlayfs, which
# overlayfs upper directories and container layer tools hold) is a file like any
# other on every layer: listed, seen by rmdir (ENOTEMPTY), renamed, removed, also
# where it replaces a deleted image file, and one in the image shows in tmp= and
# on the read-only mount. The overlay's own whiteouts stay hidden.
. "$(dirname "$0")/common.inc"
S=$WORK/src
mkdir -p "$S/tmp" "$S/etc"
mknod "$S/tmp/w" c 0 0 && mknod "$S/etc/w" c 0 0 && echo x > "$S/etc/f" || fail "source"
"$CAIRN" mkfs -q "$S" "$WORK/img" || fail "mkfs"

check() { # check DIR: a user's 0/0 device in a new directory of DIR
  mkdir "$1/nd" && mknod "$1/nd/w" c 0 0 || fail "mknod in $1"
  [ "$(ls "$1/nd")" = w ] || fail "$1: the device is not listed: '$(ls -a "$1/nd")'"
  [ "$(stat -c '%F %t:%T' "$1/nd/w")" = "character special file 0:0" ] || fail "$1: stat"
  rmdir "$1/nd" 2>/dev/null && fail "$1: rmdir removed a directory holding a device"
  mv "$1/nd/w" "$1/nd/w2" && [ "$(ls "$1/nd")" = w2 ] || fail "$1: rename"
  rm "$1/nd/w2" && rmdir "$1/nd" || fail "$1: rm, then rmdir"
}

mnt "$WORK/e" --empty || fail "mount --empty"
check "$WORK/e"
echo "--empty: ok"

mnt "$WORK/o" -o overlay "$WORK/img" || fail "mount -o overlay"
check "$WORK/o"
check "$WORK/o/etc"
# Over a deleted image file: the device shows, the image file does not.
rm "$WORK/o/etc/f" && [ "$(ls "$WORK/o/etc")" = w ] || fail "whiteout shown: $(ls "$WORK/o/etc")"
mknod "$WORK/o/etc/f" c 0 0 || fail "mknod over a deleted image name"
[ "$(ls "$WORK/o/etc" | tr '\n' ' ')" = "f w " ] || fail "listing: $(ls "$WORK/o/etc")"
[ "$(stat -c %F "$WORK/o/etc/f")" = "character special file" ] || fail "stat of the device"
rm "$WORK/o/etc/f" && [ "$(ls "$WORK/o/etc")" = w ] || fail "rm of the device: $(ls "$WORK/o/etc")"
echo "overlay: ok"

mnt "$WORK/t" -o tmp=/tmp "$WORK/img" || fail "mount tmp="
[ "$(ls "$WORK/t/tmp")" = w ] || fail "tmp=: the image's device is not shown: '$(ls "$WORK/t/tmp")'"
check "$WORK/t/tmp"
echo "tmp=: ok"
mnt "$WORK/r" "$WORK/img" || fail "mount"
[ "$(ls "$WORK/r/tmp")" = w ] || fail "read-only: the image's device is not shown"
echo "chrdev: ok"
