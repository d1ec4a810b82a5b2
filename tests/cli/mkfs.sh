#!/bin/sh
# cairn mkfs from the command line: usage errors (exit 2), errors that name the
# path (exit 1) and leave nothing at IMAGE, reproducible output, SOURCE_DATE_EPOCH,
# --order with trace records, --exclude, --all-root, manifests (globs, symlinks,
# loops), disk full on a small tmpfs, SIGINT cleanup, and a full round trip
# through the reader (fsck --data, extract).
set -u
work=$(mktemp -d /tmp/cairn-mkfs-cli.XXXXXX)
tmpfs=""
cleanup() {
  [ -n "$tmpfs" ] && umount "$tmpfs" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }
le64() { od -An -t u8 -j "$2" -N 8 "$1" | tr -d ' '; }   # file, offset
le32() { od -An -t u4 -j "$2" -N 4 "$1" | tr -d ' '; }

src=$work/src
mkdir -p "$src/dir/sub" "$src/empty" "$src/.git/objects"
head -c 3000000 /dev/urandom > "$src/big.bin"
cp "$src/big.bin" "$src/dir/big-copy.bin"
yes "cairn mkfs line" | head -c 700000 > "$src/dir/text.txt"
echo small > "$src/dir/sub/small"
: > "$src/dir/sub/empty.txt"
echo obj > "$src/.git/objects/x"
echo o > "$src/dir/a.o"
ln -s ../big.bin "$src/dir/link"
ln -s dir/sub "$src/subdir-link"
ln "$src/dir/text.txt" "$src/hardlink.txt"
mkfifo "$src/fifo"
truncate -s 6G "$src/sparse"
printf 'far' | dd of="$src/sparse" bs=1 seek=5000000000 conv=notrunc 2>/dev/null
chmod 4755 "$src/big.bin"
chmod 1777 "$src/dir"
setfattr -n user.tag -v hello "$src/dir/sub/small" 2>/dev/null || true
# readlink updates a symlink's atime while atime <= ctime: move it ahead.
touch -h -a -d '+1 hour' "$src/dir/link" "$src/subdir-link"

# --- usage and help ---
"$CAIRN" mkfs --help | grep -q "usage: cairn mkfs" || fail "--help"
"$CAIRN" mkfs >/dev/null 2>&1; [ $? -eq 2 ] || fail "no arguments should exit 2"
"$CAIRN" mkfs --bogus "$src" "$work/x" 2>/dev/null; [ $? -eq 2 ] || fail "bad option should exit 2"
"$CAIRN" mkfs --uid abc "$src" "$work/x" 2>/dev/null; [ $? -eq 2 ] || fail "bad uid should exit 2"
[ ! -e "$work/x" ] || fail "image left after a usage error"

# --- errors name the path, exit 1, leave nothing ---
"$CAIRN" mkfs -q "$work/nope" "$work/x" 2>"$work/err"; [ $? -eq 1 ] || fail "missing source"
grep -q "$work/nope" "$work/err" || fail "missing source not named: $(cat "$work/err")"
"$CAIRN" mkfs -q "$src" "$work/no/such/dir/x.img" 2>"$work/err"; [ $? -eq 1 ] || fail "bad output dir"
grep -q "no/such/dir" "$work/err" || fail "bad output not named"

# --- round trip through the reader ---
"$CAIRN" mkfs -q "$src" "$work/a.img" || fail "mkfs"
# reproducible (before anything else reads the source: reading changes atimes)
"$CAIRN" mkfs -q "$src" "$work/b.img" || fail "mkfs again"
cmp "$work/a.img" "$work/b.img" || fail "two builds differ"
"$CAIRN" fsck --data "$work/a.img" >/dev/null || fail "fsck --data"
[ "$(stat -c %s "$work/a.img")" -lt 20000000 ] || fail "sparse file or dedup not effective"
"$CAIRN" extract "$work/a.img" "$work/out" || fail "extract"
diff -r --no-dereference "$src" "$work/out" >/dev/null 2>&1 || {
  # diff -r reads fifos; compare without them
  (cd "$src" && find . ! -type p | sort) > "$work/l1"
  (cd "$work/out" && find . ! -type p | sort) > "$work/l2"
  cmp "$work/l1" "$work/l2" || fail "extracted tree has other names"
}
cmp "$src/big.bin" "$work/out/big.bin" || fail "big.bin differs"
[ "$(stat -c %a "$work/out/big.bin")" = 4755 ] || fail "setuid lost"
[ "$(stat -c %h "$work/out/hardlink.txt")" = 2 ] || fail "hard link lost"
[ "$(readlink "$work/out/dir/link")" = ../big.bin ] || fail "symlink lost"
[ -p "$work/out/fifo" ] || fail "fifo lost"
[ "$(stat -c %s "$work/out/sparse")" = 6442450944 ] || fail "sparse size"


# --- building into the tree: the old image is not packed into the new one ---
cp -a "$src" "$work/self"
"$CAIRN" mkfs -q "$work/self" "$work/self/self.img" || fail "mkfs into the tree"
"$CAIRN" mkfs -q "$work/self" "$work/self/self.img" || fail "mkfs into the tree again"
"$CAIRN" ls "$work/self/self.img" / | grep -q self.img && fail "the old image was packed"

# --- SOURCE_DATE_EPOCH clamps times and sets build_time; --all-root ---
SOURCE_DATE_EPOCH=1000000 "$CAIRN" mkfs -q --all-root "$src" "$work/e.img" || fail "mkfs epoch"
[ "$(le64 "$work/e.img" 184)" = 1000000 ] || fail "build_time not SOURCE_DATE_EPOCH"
"$CAIRN" ls -l "$work/e.img" / | grep -q "1970-01-12" || fail "times not clamped"
"$CAIRN" mkfs -q --mtime 12345 --uid 7 --gid 8 "$src" "$work/m.img" || fail "mkfs --mtime"
[ "$(le64 "$work/m.img" 184)" = 12345 ] || fail "build_time not --mtime"
"$CAIRN" info "$work/m.img" | grep -q "^build time: *1970-01-01 03:25:45.* (12345)$" ||
  fail "info: $("$CAIRN" info "$work/m.img" | grep '^build time')"
# Without either, build_time is 0 and info says it is unset, not 1970.
"$CAIRN" mkfs -q "$src" "$work/z.img" || fail "mkfs"
[ "$(le64 "$work/z.img" 184)" = 0 ] || fail "build_time not 0 by default"
"$CAIRN" info "$work/z.img" | grep -q "^build time: *unset (0: no --mtime or SOURCE_DATE_EPOCH at mkfs)$" ||
  fail "info: $("$CAIRN" info "$work/z.img" | grep '^build time')"
"$CAIRN" info --json "$work/z.img" | grep -q '"build_time": 0,' || fail "info --json: build_time"
"$CAIRN" stat "$work/m.img" /big.bin | grep -q 7 || fail "uid not forced"

# --- --exclude and --order with trace records ---
printf '# trace\n/dir/text.txt 0 4096\n/dir/text.txt 16384 4096\n/dir/text.txt 65536 4096\n/big.bin\n/not/there\n' \
  > "$work/order"
"$CAIRN" mkfs --exclude .git --exclude '*.o' --order "$work/order" "$src" "$work/o.img" \
  >/dev/null 2>"$work/err" || fail "mkfs --order"
grep -q "not in the image" "$work/err" || fail "no warning for an unknown order path"
"$CAIRN" ls -R "$work/o.img" / > "$work/ls" || fail "ls"
grep -q "\.git\|a\.o" "$work/ls" && fail "excluded paths present"
[ $(( $(le32 "$work/o.img" 16) & 1 )) = 1 ] || fail "hot prefix flag not set"
# text.txt's first two ranges merge (gap < 16 KiB) into its first 20 KiB, the
# third stays apart (gap 44 KiB); the rest of it goes after the hot prefix;
# big.bin is hot whole.
[ "$(le64 "$work/o.img" 176)" = $((20480 + 4096 + 3002368)) ] || fail "hot_len $(le64 "$work/o.img" 176)"
"$CAIRN" fsck --data "$work/o.img" >/dev/null || fail "fsck of the ordered image"

# --- manifests ---
mkdir -p "$work/m"
cat > "$work/m/app.manifest" <<EOF
# a manifest
/usr/lib/**: ../src/dir/**
/etc/big: ../src/big.bin
/lib -> usr/lib
/lib/extra: ../src/dir/sub/small
/bin/*: ../src/*.bin
EOF
"$CAIRN" mkfs -q --manifest "$work/m/app.manifest" "$work/man.img" || fail "manifest"
"$CAIRN" fsck --data "$work/man.img" >/dev/null || fail "fsck manifest image"
"$CAIRN" cat "$work/man.img" /usr/lib/extra | grep -q small || fail "file through a guest symlink"
"$CAIRN" cat "$work/man.img" /bin/big.bin | cmp - "$src/big.bin" || fail "glob entry"
printf '/a -> b\n/b -> a\n/a/file: ../src/big.bin\n' > "$work/m/loop.manifest"
"$CAIRN" mkfs -q --manifest "$work/m/loop.manifest" "$work/loop.img" 2>"$work/err"
[ $? -eq 1 ] || fail "manifest loop should fail"
grep -q "loop" "$work/err" && grep -q "/a/file" "$work/err" && grep -q ":3:" "$work/err" ||
  fail "loop message: $(cat "$work/err")"
[ ! -e "$work/loop.img" ] || fail "image left after a manifest error"
printf '/x: ../src/big.bin\n/y:\n' > "$work/m/bad.manifest"
"$CAIRN" mkfs -q --manifest "$work/m/bad.manifest" "$work/bad.img" 2>"$work/err"
[ $? -eq 1 ] && grep -q "line 2" "$work/err" || fail "syntax error: $(cat "$work/err")"

# --- disk full: a 1 MiB tmpfs ---
mkdir -p "$work/small"
if mount -t tmpfs -o size=1m tmpfs "$work/small" 2>/dev/null; then
  tmpfs=$work/small
  "$CAIRN" mkfs -q "$src" "$work/small/full.img" 2>"$work/err"; rc=$?
  [ $rc -eq 1 ] || fail "disk full should exit 1 (got $rc)"
  grep -q "full.img" "$work/err" && grep -qi "no space" "$work/err" ||
    fail "disk full message: $(cat "$work/err")"
  [ -z "$(ls -A "$work/small")" ] || fail "files left on the full disk: $(ls -A "$work/small")"
  umount "$work/small"; tmpfs=""
else
  echo "note: cannot mount tmpfs, disk-full case skipped"
fi

# --- SIGINT: nothing half-written at IMAGE, no temporary left ---
jdk=/usr/lib/jvm/java-17-openjdk-amd64
if [ -d "$jdk" ]; then
  "$CAIRN" mkfs -q --no-fsync "$jdk" "$work/int.img" & pid=$!
  sleep 0.2; kill -INT $pid 2>/dev/null; wait $pid; rc=$?
  ls "$work" | grep -q "int.img.tmp" && fail "temporary left after SIGINT"
  if [ $rc -ne 0 ]; then
    [ ! -e "$work/int.img" ] || fail "image left after SIGINT"
  else
    "$CAIRN" fsck "$work/int.img" >/dev/null || fail "finished image broken"
  fi
fi
# --- the digest table fits the image: empty files take no data, so 50,000 of
# them (from a manifest) need one 4 KiB block of table, not a spare 4 KiB of
# bound each (it was 13 blocks here, 10 MiB read at open for 10M files) ---
: > "$work/empty"
awk 'BEGIN { for (i = 0; i < 50000; i++) printf "/d%02d/f%04d: empty\n", i / 1000, i % 1000 }' \
  > "$work/many.manifest"
"$CAIRN" mkfs -q --no-fsync --manifest "$work/many.manifest" "$work/many.img" || fail "mkfs many"
meta_off=$(le64 "$work/many.img" 56)
[ "$meta_off" = 8192 ] || fail "50,000 empty files: metadata at $meta_off, want 8192 (one table block)"
"$CAIRN" fsck -q "$work/many.img" || fail "fsck many"

echo "mkfs cli: all passed"
