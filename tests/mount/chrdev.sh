#!/bin/sh
# A character device 0/0 made by a user (the whiteout format of overlayfs, which
# overlayfs upper directories and container layer tools hold) is a file like any
# other on every layer: listed, seen by rmdir (ENOTEMPTY), renamed, removed, also
# where it replaces a deleted image file, and one in the image shows in tmp= and
# on the read-only mount. The overlay's own whiteouts stay hidden. rename(2) with
# RENAME_WHITEOUT leaves such a device at the old name, so a RAM layer can be the
# upper directory of a kernel overlayfs mount (which needs it).
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

# renamew DIR FROM TO: renameat2(RENAME_WHITEOUT), then FROM must be a 0/0 device.
renamew() {
  python3 - "$1/$2" "$1/$3" <<'EOF' || fail "RENAME_WHITEOUT in $1"
import ctypes, os, stat, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 4):
    print("renameat2:", os.strerror(ctypes.get_errno())); sys.exit(1)
st = os.lstat(sys.argv[1])
sys.exit(0 if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0 else 1)
EOF
}

mnt "$WORK/e" --empty || fail "mount --empty"
check "$WORK/e"
echo x > "$WORK/e/rw" && renamew "$WORK/e" rw rw2
[ "$(cat "$WORK/e/rw2")" = x ] || fail "RENAME_WHITEOUT moved the data"
if command -v python3 >/dev/null 2>&1 && grep -qw overlay /proc/filesystems; then
  mkdir -p "$WORK/e/up" "$WORK/e/work" "$WORK/ovl" "$WORK/low"
  echo low > "$WORK/low/f"
  mount -t overlay overlay -o "lowerdir=$WORK/low,upperdir=$WORK/e/up,workdir=$WORK/e/work" \
    "$WORK/ovl" || fail "overlayfs with its upper directory on --empty"
  MOUNTS="$WORK/ovl $MOUNTS"
  rm "$WORK/ovl/f" && [ ! -e "$WORK/ovl/f" ] && [ -c "$WORK/e/up/f" ] ||
    fail "overlayfs whiteout in the upper directory"
  umount "$WORK/ovl" || fail "umount overlayfs"
fi
echo "--empty: ok"

mnt "$WORK/o" -o overlay "$WORK/img" || fail "mount -o overlay"
check "$WORK/o"
check "$WORK/o/etc"
# RENAME_WHITEOUT of an image file: the device hides it at the old name.
renamew "$WORK/o/etc" f f2
[ "$(cat "$WORK/o/etc/f2")" = x ] || fail "overlay: RENAME_WHITEOUT moved the data"
rm "$WORK/o/etc/f" && mv "$WORK/o/etc/f2" "$WORK/o/etc/f" || fail "overlay: undo"
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
