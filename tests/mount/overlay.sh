#!/bin/sh
# -o overlay: the whole tree writable in RAM over an image that never changes.
# Copy-up (data, metadata, xattrs, inode number kept), whiteouts, opaque
# directories, merged listings, renames (EXDEV for image directories), the POSIX
# checks at the root and inside an image directory, and the image unchanged after.
. "$(dirname "$0")/common.inc"
command -v python3 >/dev/null || skip "python3 not installed"
SRC=$WORK/src
mkdir -p "$SRC/etc/conf.d" "$SRC/usr/lib" "$SRC/empty" "$SRC/gone/deep"
echo "original" > "$SRC/etc/motd"
seq 1 100000 > "$SRC/usr/lib/data"
echo a > "$SRC/etc/conf.d/a"; echo b > "$SRC/etc/conf.d/b"; echo c > "$SRC/etc/conf.d/c"
echo deep > "$SRC/gone/deep/f"
ln -s ../etc/motd "$SRC/usr/motd-link"
ln "$SRC/usr/lib/data" "$SRC/usr/lib/data-hard"
setfattr -n user.tag -v kept "$SRC/etc/motd" 2>/dev/null || true
chmod 4755 "$SRC/usr/lib/data"
truncate -s 5M "$SRC/usr/sparse"; echo tail >> "$SRC/usr/sparse"
"$CAIRN" mkfs -q "$SRC" "$WORK/img.cairn" || fail "mkfs"
cp "$WORK/img.cairn" "$WORK/img.orig"

M=$WORK/o
mnt "$M" "$WORK/img.cairn" -o overlay,size=64M,stats="$WORK/stats" || fail "mount -o overlay"
diff -r --no-dereference "$SRC" "$M" || fail "overlay differs from the source before changes"

# Copy-up on write keeps the inode number, data and xattrs.
ino1=$(stat -c %i "$M/etc/motd")
echo "appended" >> "$M/etc/motd" || fail "append to an image file"
[ "$(cat "$M/etc/motd")" = "$(printf 'original\nappended')" ] || fail "copy-up content"
[ "$(stat -c %i "$M/etc/motd")" = "$ino1" ] || fail "inode number changed on copy-up"
if getfattr -n user.tag "$SRC/etc/motd" >/dev/null 2>&1; then
  [ "$(getfattr --only-values -n user.tag "$M/etc/motd")" = kept ] || fail "xattr lost on copy-up"
fi
# Metadata-only copy-up keeps data; setuid survives a root chmod of others bits.
chmod 4750 "$M/usr/lib/data" || fail "chmod image file"
[ "$(stat -c %a "$M/usr/lib/data")" = 4750 ] || fail "mode after copy-up: $(stat -c %a "$M/usr/lib/data")"
cmp "$M/usr/lib/data" "$SRC/usr/lib/data" || fail "data after metadata copy-up"
cmp "$M/usr/sparse" "$SRC/usr/sparse" || fail "sparse file"
touch "$M/usr/sparse" && cmp "$M/usr/sparse" "$SRC/usr/sparse" || fail "sparse file after copy-up"

# Whiteouts: deleted image entries stay gone; the listing merges the layers.
rm "$M/etc/conf.d/b" || fail "unlink image file"
echo d > "$M/etc/conf.d/d" || fail "create in image dir"
[ "$(ls "$M/etc/conf.d" | tr '\n' ' ')" = "a c d " ] || fail "merged listing: $(ls "$M/etc/conf.d")"
[ -e "$M/etc/conf.d/b" ] && fail "whited-out file visible"
echo b2 > "$M/etc/conf.d/b" && [ "$(cat "$M/etc/conf.d/b")" = b2 ] || fail "re-create over a whiteout"
rm "$M/etc/conf.d/b"

# rmdir of an image directory, then mkdir: the new one is empty (opaque).
rm -r "$M/gone" || fail "rm -r image dir"
[ -e "$M/gone" ] && fail "removed dir visible"
mkdir "$M/gone" || fail "mkdir over a whiteout"
[ -z "$(ls -A "$M/gone")" ] || fail "new dir shows image content: $(ls -A "$M/gone")"
rmdir "$M/empty" || fail "rmdir empty image dir"

# Renames: image files move (copy-up), image directories give EXDEV.
mv "$M/etc/conf.d/a" "$M/etc/a-moved" || fail "rename image file"
[ "$(cat "$M/etc/a-moved")" = a ] && [ ! -e "$M/etc/conf.d/a" ] || fail "rename result"
python3 -c "
import errno, os, sys
try:
    os.rename('$M/usr/lib', '$M/usr/lib2')
except OSError as e:
    sys.exit(0 if e.errno == errno.EXDEV else 1)
sys.exit(1)" || fail "rename of an image directory did not give EXDEV"
mv "$M/usr/lib" "$M/usr/lib2" || fail "mv falls back to copying on EXDEV"
[ -f "$M/usr/lib2/data" ] && [ ! -e "$M/usr/lib" ] || fail "mv of image dir"
ln "$M/etc/motd" "$M/etc/motd-link" || fail "hard link to a copied-up file"
ln "$M/usr/motd-link" "$M/usr/ml2" || fail "hard link to an image symlink"
[ "$(readlink "$M/usr/ml2")" = ../etc/motd ] || fail "linked symlink target"

# The POSIX checks at the root and inside an image directory.
"$PROGS/posix_check" "$M" > "$WORK/p1" 2>&1 || { cat "$WORK/p1"; fail "POSIX checks at the overlay root"; }
"$PROGS/posix_check" "$M/etc" > "$WORK/p2" 2>&1 || { cat "$WORK/p2"; fail "POSIX checks in an image dir"; }
tail -n 1 "$WORK/p2"

umnt "$M" || fail "unmount"
wait_file "$WORK/stats" || fail "no stats"
grep -q '^ns_copy_ups [1-9]' "$WORK/stats" || fail "no copy-ups counted"
cmp "$WORK/img.cairn" "$WORK/img.orig" || fail "the image file changed"
mnt "$M" "$WORK/img.cairn" -o overlay || fail "remount"
diff -r --no-dereference "$SRC" "$M" || fail "changes survived a remount"
umnt "$M"

# A copy-up that does not fit gives ENOSPC and leaves the image's file visible.
head -c 3000000 /dev/urandom > "$WORK/rnd"
mkdir -p "$WORK/src2" && cp "$WORK/rnd" "$WORK/src2/big" && touch -d @1000000000 "$WORK/src2/big"
cp "$WORK/rnd" "$WORK/src2/big2"
"$CAIRN" mkfs -q "$WORK/src2" "$WORK/img2.cairn" || fail "mkfs 2"
mnt "$M" "$WORK/img2.cairn" -o overlay,size=1M || fail "mount size=1M"
( echo more >> "$M/big" ) 2>"$WORK/err" && fail "copy-up of 3 MB fit in 1 MB"
grep -q "No space left" "$WORK/err" || fail "copy-up error: $(cat "$WORK/err")"
cmp "$M/big" "$WORK/rnd" || fail "image file changed after a failed copy-up"
echo small > "$M/small" || fail "RAM not usable after a failed copy-up"
# open(O_TRUNC) of an image file copies it up at size 0, without its data (so
# 3 MB need not fit in 1 MB), and sets mtime and ctime.
old_mtime=$(stat -c %Y "$M/big")
echo hi > "$M/big" || fail "O_TRUNC of a 3 MB image file in 1 MB of RAM"
[ "$(cat "$M/big")" = hi ] || fail "O_TRUNC copy-up content: $(head -c 20 "$M/big" | od -c | head -2)"
[ "$(stat -c %Y "$M/big")" -gt "$old_mtime" ] && [ "$(stat -c %Z "$M/big")" -gt "$old_mtime" ] || fail "O_TRUNC copy-up kept the image's mtime"
# truncate(2) (a SETATTR size) copies up only the data it keeps.
python3 -c "import os; os.truncate('$M/big2', 5000)" || fail "truncate(2) of a 3 MB image file to 5000 bytes in 1 MB of RAM"
head -c 5000 "$WORK/rnd" | cmp - "$M/big2" || fail "data kept by a truncating copy-up"
umnt "$M"

# Hard links in the image: writing one name copies up that name alone, which
# gets an inode number of its own; the other names keep the image's inode and
# data, with the link count of the names left (tar, rsync and cp -a trust it).
mkdir -p "$WORK/src3/d"
echo old > "$WORK/src3/d/a"; ln "$WORK/src3/d/a" "$WORK/src3/d/b"; ln "$WORK/src3/d/a" "$WORK/src3/c"
"$CAIRN" mkfs -q "$WORK/src3" "$WORK/img3.cairn" || fail "mkfs 3"
mnt "$M" "$WORK/img3.cairn" -o overlay || fail "mount hard links"
[ "$(stat -c '%i %h' "$M/d/a")" = "$(stat -c '%i %h' "$M/c")" ] && [ "$(stat -c %h "$M/c")" = 3 ] ||
  fail "image hard links: $(stat -c '%n %i %h' "$M/d/a" "$M/d/b" "$M/c")"
echo new >> "$M/d/a" || fail "append to a hard-linked image file"
[ "$(cat "$M/d/a")" = "$(printf 'old\nnew')" ] && [ "$(cat "$M/d/b")" = old ] || fail "contents after copy-up"
ia=$(stat -c %i "$M/d/a"); ib=$(stat -c %i "$M/d/b"); ic=$(stat -c %i "$M/c")
[ "$ia" != "$ib" ] || fail "different contents under one st_ino $ia"
[ "$ib" = "$ic" ] || fail "the names left lost their shared inode: $ib $ic"
[ "$(stat -c %h "$M/d/a")" = 1 ] || fail "copied-up name nlink $(stat -c %h "$M/d/a")"
[ "$(stat -c %h "$M/d/b")" = 2 ] && [ "$(stat -c %h "$M/c")" = 2 ] ||
  fail "nlink of the names left: $(stat -c '%n %h' "$M/d/b" "$M/c")"
rm "$M/c" || fail "unlink an image hard link"
[ "$(stat -c %h "$M/d/b")" = 1 ] || fail "nlink after unlink: $(stat -c %h "$M/d/b")"
# What tar sees: two files, no hard link between them.
tar -C "$M" -cf "$WORK/t.tar" d/a d/b || fail "tar"
[ "$(tar -tvf "$WORK/t.tar" | grep -c ' link to ')" = 0 ] || fail "tar links the split names: $(tar -tvf "$WORK/t.tar")"
umnt "$M"
echo "overlay: ok"
