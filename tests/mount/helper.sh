#!/bin/sh
# mount.cairn: `mount -t cairn IMAGE DIR -o ...` and an fstab line (through
# `mount -T FILE`, so the system fstab is untouched). mount(8) looks for the
# helper in /sbin; if none is installed, this test links the built one there for
# its duration.
. "$(dirname "$0")/common.inc"
command -v mount >/dev/null || skip "mount(8) not installed"
SRC=$WORK/src
mkdir -p "$SRC/dir"
echo "via mount(8)" > "$SRC/dir/file"
"$CAIRN" mkfs -q "$SRC" "$WORK/img.cairn" || fail "mkfs"

LINKED=""
if [ ! -e /sbin/mount.cairn ]; then
  ln -s "$BUILD/mount.cairn" /sbin/mount.cairn || skip "cannot install /sbin/mount.cairn"
  LINKED=/sbin/mount.cairn
fi
trap 'cleanup; [ -n "$LINKED" ] && rm -f "$LINKED"' EXIT

M=$WORK/m
mkdir -p "$M"
MOUNTS="$M"
mount -t cairn "$WORK/img.cairn" "$M" -o tmp=/tmp || fail "mount -t cairn"
[ "$(cat "$M/dir/file")" = "via mount(8)" ] || fail "content via mount -t cairn"
echo w > "$M/tmp/w" || fail "tmp= option did not reach the daemon"
grep -q " $M fuse.cairn " /proc/mounts || fail "not in /proc/mounts as fuse.cairn"
umount "$M" || fail "umount"
mountpoint -q "$M" && fail "still mounted after umount"

printf '%s %s cairn ro,nofail,tmp=/tmp:/run,x-test=1 0 0\n' "$WORK/img.cairn" "$M" > "$WORK/fstab"
mount -T "$WORK/fstab" "$M" || fail "mount from an fstab line"
[ -d "$M/run" ] || fail "fstab options did not reach the daemon"
[ "$(cat "$M/dir/file")" = "via mount(8)" ] || fail "content via fstab"
umount "$M" || fail "umount (fstab)"
# mount(8) hands the helper "-o rw" for a line without ro; the image alone is
# read-only, and cairn mount refuses an rw it was given itself: the helper drops
# mount(8)'s, so a plain line still mounts (read-only, as /proc/mounts says).
printf '%s %s cairn defaults 0 0\n' "$WORK/img.cairn" "$M" > "$WORK/fstab"
mount -T "$WORK/fstab" "$M" || fail "mount from a defaults fstab line"
grep " $M fuse.cairn " /proc/mounts | grep -q ' ro[ ,]' || fail "plain image mount not ro in /proc/mounts"
umount "$M" || fail "umount (defaults)"
echo "helper: ok"
