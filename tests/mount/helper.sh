#!/bin/sh
# mount.cairn: `mount -t cairn IMAGE DIR -o ...` and an fstab line (through
# `mount -T FILE`, so the system fstab is untouched). mount(8) looks for the
# helper in /sbin only. If none is installed, the test runs in a private mount
# namespace and lays the built helper over /sbin there (a read-only overlay),
# so the host's /sbin is never touched, whatever way the test ends (it once
# linked the helper into the real /sbin and removed it from an exit trap).
if [ ! -e /sbin/mount.cairn ] && [ -z "${CAIRN_HELPER_NS:-}" ] &&
   unshare -m --propagation private true 2>/dev/null; then
  CAIRN_HELPER_NS=1 exec unshare -m --propagation private sh "$0" "$@"
fi
. "$(dirname "$0")/common.inc"
command -v mount >/dev/null || skip "mount(8) not installed"
SRC=$WORK/src
mkdir -p "$SRC/dir"
echo "via mount(8)" > "$SRC/dir/file"
"$CAIRN" mkfs -q "$SRC" "$WORK/img.cairn" || fail "mkfs"

if [ ! -e /sbin/mount.cairn ]; then
  [ -n "${CAIRN_HELPER_NS:-}" ] || skip "no /sbin/mount.cairn and no private mount namespace to lay one in"
  mkdir "$WORK/sbin"
  ln -s "$(cd "$BUILD" && pwd)/mount.cairn" "$WORK/sbin/mount.cairn"
  sbin=$(readlink -f /sbin)
  mount -t overlay overlay -o lowerdir="$WORK/sbin:$sbin" "$sbin" ||
    skip "cannot lay mount.cairn over $sbin in a private namespace"
fi

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
