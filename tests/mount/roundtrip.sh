#!/bin/sh
# rsync -aHAXS, tar (--xattrs --acls -S) and cp -a round trips of a tree with hard
# links, a sparse file, xattrs, ACLs (default ACLs too, on the root as well), a
# FIFO, set-user-ID, a sticky directory, old times and a newline in a name: into
# every writable layer (--empty, tmp=, overlay) and out of the read-only and
# overlay mounts, each result compared with the tree by treecmp.py (names, types,
# modes, owners, mtimes in ns, data, xattrs, link groups). The overlay root shows
# the image root's times and ACLs.
. "$(dirname "$0")/common.inc"
for t in rsync tar setfacl python3; do
  command -v $t >/dev/null 2>&1 || skip "$t not installed"
done
CMP="python3 $(cd "$(dirname "$0")" && pwd)/treecmp.py"
S=$WORK/src
mkdir "$S" && cd "$S" || fail "mkdir"
echo data > a && ln a b && mkdir d && ln a d/c
truncate -s 300M sp && echo x | dd of=sp bs=1 seek=200000000 conv=notrunc 2>/dev/null
setfattr -n user.k -v v a && setfattr -n user.dir -v 1 d
touch acl && setfacl -m u:nobody:rw acl
mkdir dacl && setfacl -d -m g:daemon:rx dacl && touch dacl/in
setfacl -d -m u:nobody:rwx . && setfacl -m u:nobody:rx .
ln -s a sl && mkfifo ff && echo s > suid && chown 1234:5678 suid && chmod 4755 suid
chmod 1777 d && touch "$(printf 'n\nl')"
touch -d '2001-02-03 04:05:06.123456789' a && touch -h -d '2002-01-01' sl
touch -d '2003-04-05 06:07:08.5' d dacl ff . # (rsync leaves a FIFO made this second alone)
cd "$WORK" || fail "cd"
"$CAIRN" mkfs -q "$S" "$WORK/img" || fail "mkfs"

into() { # into DIR: each tool copies the tree into DIR/<tool>
  rsync -aHAXS "$S/" "$1/rsync/" || fail "rsync into $1"
  mkdir "$1/tar" && (cd "$S" && tar --xattrs --xattrs-include='*' --acls -cSf - .) |
    (cd "$1/tar" && tar --xattrs --xattrs-include='*' --acls -xpf -) || fail "tar into $1"
  cp -a "$S" "$1/cp" || fail "cp -a into $1"
  for t in rsync tar cp; do $CMP "$S" "$1/$t" || fail "$t into $1"; done
}
out_of() { # out_of DIR: each tool copies DIR out to $WORK/out/<tool>
  rm -rf "$WORK/out" && mkdir "$WORK/out" || fail "out"
  rsync -aHAXS "$1/" "$WORK/out/rsync/" || fail "rsync out of $1"
  mkdir "$WORK/out/tar" && (cd "$1" && tar --xattrs --xattrs-include='*' --acls -cSf - .) |
    (cd "$WORK/out/tar" && tar --xattrs --xattrs-include='*' --acls -xpf -) || fail "tar out of $1"
  cp -a "$1" "$WORK/out/cp" || fail "cp -a out of $1"
  for t in rsync tar cp; do $CMP "$S" "$WORK/out/$t" || fail "$t out of $1"; done
  # Sparse stays sparse: the copy of 300 MB with one byte of data takes < 1 MB.
  [ "$(du -k "$WORK/out/cp/sp" | cut -f1)" -lt 1024 ] || fail "cp out of $1 lost the holes"
}

mnt "$WORK/e" --empty || fail "mount --empty"
into "$WORK/e"; out_of "$WORK/e/cp"
echo "--empty: ok"
mnt "$WORK/t" -o tmp=/d "$WORK/img" || fail "mount tmp="
into "$WORK/t/d"; out_of "$WORK/t/d/tar"
echo "tmp=: ok"
mnt "$WORK/r" "$WORK/img" || fail "mount"
out_of "$WORK/r"
echo "read-only: ok"
mnt "$WORK/o" -o overlay "$WORK/img" || fail "mount -o overlay"
out_of "$WORK/o"
# New files in the overlay root inherit the image root's default ACL.
touch "$WORK/o/new" && getfacl -p "$WORK/o/new" | grep -q '^user:nobody:rwx' ||
  fail "overlay root lost the image root's default ACL"
into "$WORK/o/d"; out_of "$WORK/o/d/rsync"
echo "overlay: ok"
echo "roundtrip: ok"
