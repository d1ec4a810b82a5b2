#!/bin/sh
# `mount -t cairn` with the layout `make install` makes: the helper in SBINDIR,
# cairn in PREFIX/bin, which is not in the PATH-less environment mount(8) runs
# helpers in. Installs to a temp prefix, then, in a private mount namespace
# (nothing is seen or changed outside it), lays the installed helper over the
# system's sbin with an overlay and mounts through mount(8) with an empty
# environment. The helper must find the cairn it was installed with, and that
# cairn the FUSE daemon installed with it (PREFIX/libexec/cairn/cairn-fuse, not
# beside it: found by the path compiled in). `mount -t fuse.cairn`, the type
# /proc/mounts shows, works the same (make install links mount.fuse.cairn).
. "$(dirname "$0")/common.inc"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
command -v unshare >/dev/null || skip "unshare not installed"
command -v mount >/dev/null || skip "mount(8) not installed"
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null ||
  skip "no overlay file system for the private sbin"
# A chroot whose / is no mount point cannot have its mounts made private (EINVAL):
# say so, rather than report it as a failed step of the test.
unshare -m --propagation private true 2>"$WORK/unshare.err" ||
  skip "cannot make a private mount namespace here: $(cat "$WORK/unshare.err")"
PREFIX=$WORK/prefix
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -s -C "$ROOT" -j2 \
  BUILD="$WORK/build" PREFIX="$PREFIX" SBINDIR="$WORK/sbin" install > "$WORK/install.log" 2>&1 ||
  { tail -n 30 "$WORK/install.log"; fail "make install"; }
[ -x "$PREFIX/bin/cairn" ] && [ -x "$WORK/sbin/mount.cairn" ] &&
  [ -x "$PREFIX/libexec/cairn/cairn-fuse" ] || fail "make install put nothing there"
[ -e "$WORK/sbin/cairn" ] && fail "cairn next to the helper: this would not test the installed layout"

mkdir -p "$WORK/src/dir" "$WORK/m"
echo "installed" > "$WORK/src/dir/file"
"$PREFIX/bin/cairn" mkfs -q "$WORK/src" "$WORK/img.cairn" || fail "mkfs"
sbin=$(readlink -f /sbin)

cat > "$WORK/inside.sh" <<EOS
set -u
trap 'fusermount3 -u "$WORK/m" 2>/dev/null' EXIT
mount -t overlay overlay -o "lowerdir=$WORK/sbin:$sbin" "$sbin" || exit 3
env -i mount -t cairn "$WORK/img.cairn" "$WORK/m" -o tmp=/tmp || exit 4
cat "$WORK/m/dir/file" > "$WORK/read" || exit 5
for p in /proc/[0-9]*; do
  tr '\\0' '\\n' < \$p/cmdline 2>/dev/null | grep -qx "$WORK/m" && readlink \$p/exe >> "$WORK/exe"
done
echo w > "$WORK/m/tmp/w" || exit 6
env -i umount "$WORK/m" || exit 7
env -i mount -t fuse.cairn "$WORK/img.cairn" "$WORK/m" || exit 8
cat "$WORK/m/dir/file" > "$WORK/read2" || exit 9
env -i umount "$WORK/m" || exit 7
EOS
unshare -m --propagation private sh "$WORK/inside.sh"; rc=$?
case $rc in
  0) ;;
  3) skip "cannot mount an overlay over $sbin here" ;;
  4) fail "mount -t cairn with the installed helper and no PATH failed" ;;
  8) fail "mount -t fuse.cairn (the type /proc/mounts shows, as fstab lines copied from it have) failed" ;;
  *) fail "inside the namespace: step $rc failed" ;;
esac
[ "$(cat "$WORK/read")" = installed ] || fail "content via mount -t cairn"
[ "$(cat "$WORK/read2")" = installed ] || fail "content via mount -t fuse.cairn"
grep -qx "$PREFIX/libexec/cairn/cairn-fuse" "$WORK/exe" ||
  fail "the daemon was not the installed cairn-fuse: $(cat "$WORK/exe")"
echo "helper_install: mount -t cairn ran $PREFIX/bin/cairn, which ran $PREFIX/libexec/cairn/cairn-fuse"
