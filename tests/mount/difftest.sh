#!/bin/sh
# Differential conformance: tests/progs/difftest.c runs one seeded random
# sequence of system calls in a kernel tmpfs directory (the reference) and in a
# cairn writable layer side by side, and fails on the first difference in a
# result, errno, data, stat, listing or open descriptor. A bounded run: a fixed
# set of seeds on --empty, a tmp= subtree, the overlay (whose reference is a
# copy of the image's source on tmpfs) and the overlay with -o writeback over a
# compressed image, and as user nobody on --empty. The long
# run is tests/difftest-long.sh.
# DIFFTEST_SEEDS and DIFFTEST_OPS override the seeds and the ops per seed.
. "$(dirname "$0")/common.inc"
DT=$PROGS/difftest
SEEDS=${DIFFTEST_SEEDS:-"1 2 8"}
OPS=${DIFFTEST_OPS:-400}

# The image: an empty /tmp for tmp=, and names of difftest's name space for the
# overlay (a file with an xattr, a directory tree, a symlink). No hard link: an
# image file's names copy up one by one (docs/MOUNT.md), so there its link
# count differs from tmpfs by design.
S=$WORK/src
mkdir -p "$S/tmp" "$S/d/e"
printf 'image file\n' > "$S/a"
head -c 70000 /dev/urandom > "$S/d/a"
head -c 5000 /dev/urandom > "$S/d/b"
ln -s d/a "$S/l"
echo deep > "$S/d/e/a"
setfattr -n user.a -v lower "$S/a" 2>/dev/null || true
"$CAIRN" mkfs -q "$S" "$WORK/img" || fail "mkfs"
"$CAIRN" mkfs -q -z zstd --chunk-size 16K "$S" "$WORK/imgz" || fail "mkfs -z zstd"

# ref [DIR]: a fresh tmpfs reference at $WORK/ref, empty with tmpfs's root (1777
# root:root, as --empty's) or a copy of DIR, the root's attributes included.
ref() {
  if mountpoint -q "$WORK/ref"; then umount "$WORK/ref" || fail "umount the reference"; fi
  mkdir -p "$WORK/ref"
  MOUNTS="$MOUNTS $WORK/ref"
  mount -t tmpfs difftest-ref "$WORK/ref" || skip "cannot mount a tmpfs"
  [ $# -eq 0 ] && return 0
  cp -a "$1/." "$WORK/ref/" && chmod --reference="$1" "$WORK/ref" &&
    chown --reference="$1" "$WORK/ref" || fail "copy $1 to the reference"
}

# run NAME TESTROOT [difftest flags]: one seed on a fresh pair, $seed set.
run() {
  _n=$1 _root=$2; shift 2
  "$DT" -q -s "$seed" -n "$OPS" "$@" "$WORK/ref" "$_root" > "$WORK/dt.out" 2>&1 ||
    { head -n 60 "$WORK/dt.out"; fail "difftest on $_n, seed $seed"; }
}

for seed in $SEEDS; do
  ref
  mnt "$WORK/e" --empty || fail "mount --empty"
  run --empty "$WORK/e"
  umnt "$WORK/e" || fail "unmount --empty"

  ref "$S/tmp"
  mnt "$WORK/t" -o tmp=/tmp "$WORK/img" || fail "mount tmp="
  run tmp= "$WORK/t/tmp"
  umnt "$WORK/t" || fail "unmount tmp="

  ref "$S"
  mnt "$WORK/o" -o overlay "$WORK/img" || fail "mount -o overlay"
  run overlay "$WORK/o" -x
  umnt "$WORK/o" || fail "unmount overlay"

  # The write-back cache, over a compressed image: the kernel then keeps sizes
  # and times (-w allows what that changes, tests/progs/difftest.c), and
  # copy-up reads compressed chunks.
  ref "$S"
  mnt "$WORK/ow" -o overlay,writeback "$WORK/imgz" || fail "mount -o overlay,writeback"
  run overlay,writeback "$WORK/ow" -x -w
  umnt "$WORK/ow" || fail "unmount overlay,writeback"
  echo "seed $seed: ok"
done
# As user nobody (default_permissions, allow_other): a root-owned tree with a
# sticky world-writable directory, so EACCES, EPERM and the sticky rules come up.
populate() {
  chmod 0777 "$1"
  mkdir -m 1777 "$1/d" && mkdir -m 0755 "$1/d/e" && echo root > "$1/d/a" &&
    echo root > "$1/a" && chmod 0666 "$1/a" && ln -s d/a "$1/l" || fail "populate $1"
}
if command -v setpriv >/dev/null 2>&1; then
  for seed in $SEEDS; do
    ref
    mnt "$WORK/e" --empty || fail "mount --empty"
    populate "$WORK/ref"
    populate "$WORK/e"
    setpriv --reuid=65534 --regid=65534 --clear-groups \
      "$DT" -q -s "$seed" -n "$OPS" "$WORK/ref" "$WORK/e" > "$WORK/dt.out" 2>&1 ||
      { head -n 60 "$WORK/dt.out"; fail "difftest as nobody on --empty, seed $seed"; }
    umnt "$WORK/e" || fail "unmount --empty"
    echo "seed $seed as nobody: ok"
  done
fi
umount "$WORK/ref"
echo "difftest: ok (seeds $SEEDS, $OPS ops each, 4 layers)"
