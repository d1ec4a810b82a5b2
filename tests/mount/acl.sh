#!/bin/sh
# POSIX ACLs, enforced by the kernel (FUSE_POSIX_ACL with default_permissions) and
# checked as an unprivileged user through the mount (allow_other is on for root).
# The image: an ACL deny and an ACL grant hold. The RAM layers (--empty, tmp=,
# overlay): setfacl/getfacl, the mask and mode kept in step both ways, default
# ACLs inherited on create with the umask ignored, all compared with tmpfs.
. "$(dirname "$0")/common.inc"
command -v setfacl >/dev/null 2>&1 || skip "setfacl not installed (apt-get install acl)"
command -v setpriv >/dev/null 2>&1 || skip "setpriv not installed"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
REF=/dev/shm/cairn-acl.$$
mkdir "$REF" && setfacl -m u:nobody:r "$REF" 2>/dev/null || { rm -rf "$REF"; skip "tmpfs here has no ACLs"; }
rm -rf "$REF"
trap 'rm -rf "$REF"; cleanup' EXIT

SRC=$WORK/src
mkdir -p "$SRC/d"
echo secret > "$SRC/d/denied"; chmod 644 "$SRC/d/denied"; setfacl -m u:nobody:--- "$SRC/d/denied"
echo granted > "$SRC/d/granted"; chmod 600 "$SRC/d/granted"; setfacl -m u:nobody:r "$SRC/d/granted"
chmod 755 "$SRC" "$SRC/d"
"$CAIRN" mkfs -q "$SRC" "$WORK/img.cairn" || fail "mkfs"

# image_checks DIR: the image's ACLs decide, not the mode alone.
image_checks() {
  as_nobody cat "$1/d/denied" >/dev/null 2>&1 && fail "$1: u:nobody:--- did not deny"
  [ "$(as_nobody cat "$1/d/granted" 2>&1)" = granted ] || fail "$1: u:nobody:r-- did not grant"
  getfacl -cp "$1/d/granted" 2>/dev/null | grep -q '^user:nobody:r--' || fail "$1: getfacl"
}

# ram_checks DIR: a transcript of what the ACL calls do (tmpfs's must match).
ram_checks() {
  ( cd "$1" || exit 1
    umask 022
    echo data > f; chmod 600 f
    as_nobody cat f >/dev/null 2>&1 && echo "nobody read a 0600 file"
    setfacl -m u:nobody:r f || echo "setfacl failed"
    as_nobody cat f >/dev/null 2>&1 || echo "nobody not granted by the ACL"
    stat -c 'after setfacl %a' f
    setfacl -m u:nobody:rw,m::r f; stat -c 'after setfacl mask %a' f
    chmod 640 f; getfacl -cp f | tr '\n' ' '; echo
    as_nobody sh -c 'echo x >> f' 2>/dev/null && echo "nobody wrote past the mask"
    setfacl -b f; getfacl -cp f | tr '\n' ' '; echo
    mkdir dd; setfacl -d -m u:nobody:rwx,g::r-x,o::--- dd
    umask 077
    touch dd/new; mkdir dd/sub; ln -s new dd/sl
    stat -c '%n %a' dd/new dd/sub
    getfacl -cp dd/new | tr '\n' ' '; echo
    getfacl -cp dd/sub | tr '\n' ' '; echo
    [ "$(as_nobody sh -c 'echo w > dd/new && cat dd/new')" = w ] || echo "inherited grant not enforced"
    umask 022; touch plain; stat -c '%n %a' plain
  ) 2>&1
}

mkdir "$REF"
ram_checks "$REF" > "$WORK/ref.out"
rm -rf "$REF"
grep -q . "$WORK/ref.out" || fail "no reference transcript"

M=$WORK/m
mnt "$M" "$WORK/img.cairn" || fail "mount read-only"
image_checks "$M"
umnt "$M"

mnt "$M" --empty || fail "mount --empty"
ram_checks "$M" > "$WORK/empty.out"
diff -u "$WORK/ref.out" "$WORK/empty.out" || fail "--empty differs from tmpfs"
umnt "$M"

mnt "$M" "$WORK/img.cairn" -o tmp=/d/t || fail "mount tmp="
image_checks "$M"
ram_checks "$M/d/t" > "$WORK/tmp.out"
diff -u "$WORK/ref.out" "$WORK/tmp.out" || fail "tmp= differs from tmpfs"
umnt "$M"

mnt "$M" "$WORK/img.cairn" -o overlay || fail "mount overlay"
image_checks "$M"
ram_checks "$M/d" > "$WORK/ov.out"
diff -u "$WORK/ref.out" "$WORK/ov.out" || fail "overlay differs from tmpfs"
# setfacl on an image file copies it up; the ACLs copied with it still hold.
setfacl -m u:nobody:--- "$M/d/granted" || fail "setfacl on an image file (copy-up)"
as_nobody cat "$M/d/granted" >/dev/null 2>&1 && fail "ACL set on a copied-up file not enforced"
echo more >> "$M/d/denied" || fail "copy-up of a file with an ACL"
as_nobody cat "$M/d/denied" >/dev/null 2>&1 && fail "image ACL lost on copy-up"
umnt "$M"
cat "$WORK/ref.out"
echo "acl: ok"
