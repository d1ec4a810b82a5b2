#!/bin/sh
# cairn fsck -j N: the same output and exit status at any thread count on an
# image with problems in several passes (records edited with tests/progs/craft,
# checksums recomputed, then two bytes changed, which the digest scan and the
# content hashes see); bad -j values are refused (exit 2).
# The library side, with faults over many shards, is lib/image/tests/test_fsck_threads.c.
. "$(dirname "$0")/common.inc"
need_prog craft

# 3000 files in 30 directories, some with data, a hard link.
python3 - "$W/src" <<'EOF'
import os, sys
root = sys.argv[1]
for d in range(30):
    p = os.path.join(root, "d%02d" % d)
    os.makedirs(os.path.join(p, "sub"))
    for i in range(100):
        with open(os.path.join(p, "f%03d" % i), "wb") as f:
            f.write(b"" if i % 7 else (b"%d.%d " % (d, i)) * 900)
os.link(os.path.join(root, "d00", "f001"), os.path.join(root, "d01", "hard"))
EOF
"$CAIRN" mkfs -q --plain-meta "$W/src" "$W/img"
for j in 1 2 4; do
  "$CAIRN" fsck -q -j $j "$W/img" || fail "clean image not clean at -j $j"
done

ino=$("$CRAFT" find "$W/img" f050)
"$CRAFT" inode "$W/img" "$ino" nlink 5
ino=$("$CRAFT" find "$W/img" f099)
"$CRAFT" inode "$W/img" "$ino" mode 0170644
ino=$("$CRAFT" find "$W/img" sub)
"$CRAFT" inode "$W/img" "$ino" parent 1
"$CRAFT" rename "$W/img" f010 f09
size=$(stat -c %s "$W/img")
# Two bytes the digests see, one of them in a file's data.
printf 'X' | dd of="$W/img" bs=1 seek=$((size - 5000)) conv=notrunc 2>/dev/null
printf 'X' | dd of="$W/img" bs=1 seek=$((size / 3)) conv=notrunc 2>/dev/null

set +e
"$CAIRN" fsck --data -j 1 "$W/img" >"$W/j1" 2>&1; rc1=$?
set -e
[ $rc1 -eq 1 ] || { cat "$W/j1"; fail "fsck -j 1 exited $rc1, not 1"; }
[ "$(wc -l <"$W/j1")" -ge 5 ] || { cat "$W/j1"; fail "too few findings"; }
for j in 2 3 4 8; do
  set +e
  "$CAIRN" fsck --data -j $j "$W/img" >"$W/j$j" 2>&1; rc=$?
  set -e
  [ $rc -eq $rc1 ] || fail "fsck -j $j exited $rc, -j 1 $rc1"
  cmp -s "$W/j1" "$W/j$j" || { diff "$W/j1" "$W/j$j"; fail "-j $j differs from -j 1"; }
done
# Without -j (every CPU): the same.
set +e
"$CAIRN" fsck --data "$W/img" >"$W/jd" 2>&1
set -e
cmp -s "$W/j1" "$W/jd" || { diff "$W/j1" "$W/jd"; fail "the default differs from -j 1"; }
echo "ok: the same $(wc -l <"$W/j1") lines at -j 1, 2, 3, 4, 8 and the default"

# Random damage, re-sealed so the reader meets it: 40 seeded runs of 8 changed
# bytes each over the metadata region; -j 1 and -j 4 must agree on every one.
"$CAIRN" mkfs -q --plain-meta "$W/src" "$W/clean"
meta=$("$CAIRN" info "$W/clean" | sed -n 's/^metadata: *\([0-9]*\) bytes at \([0-9]*\).*/\2 \1/p')
[ -n "$meta" ] || fail "no metadata region in info"
# One python run picks every change: "SEED OFFSET OCTAL-BYTE" lines.
python3 - "$W/clean" $meta >"$W/changes" <<'EOF'
import random, sys
path, off, length = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
img = open(path, "rb").read()
for seed in range(1, 41):
    r = random.Random(seed)
    for _ in range(8):
        at = off + r.randrange(length)
        print(seed, at, "%03o" % (img[at] ^ (1 << r.randrange(8))))
EOF
seed=1
while [ $seed -le 40 ]; do
  cp "$W/clean" "$W/rand"
  grep "^$seed " "$W/changes" | while read -r _ at byte; do
    # shellcheck disable=SC2059
    printf "\\$byte" | dd of="$W/rand" bs=1 seek="$at" conv=notrunc 2>/dev/null
  done
  "$CRAFT" fix "$W/rand"
  set +e
  "$CAIRN" fsck --data -j 1 "$W/rand" >"$W/r1" 2>&1; rc1=$?
  "$CAIRN" fsck --data -j 4 "$W/rand" >"$W/r4" 2>&1; rc4=$?
  set -e
  [ $rc1 -lt 128 ] && [ $rc4 -lt 128 ] || fail "seed $seed: fsck crashed ($rc1, $rc4)"
  [ $rc1 -eq $rc4 ] || fail "seed $seed: -j 4 exited $rc4, -j 1 $rc1"
  cmp -s "$W/r1" "$W/r4" || { diff "$W/r1" "$W/r4"; fail "seed $seed: -j 4 differs from -j 1"; }
  seed=$((seed + 1))
done
echo "ok: 40 randomly damaged images, the same at -j 1 and -j 4"

for bad in 0 257 x 2x ""; do
  set +e
  "$CAIRN" fsck -j "$bad" "$W/img" >/dev/null 2>"$W/err"; rc=$?
  set -e
  [ $rc -eq 2 ] || fail "-j '$bad' exited $rc, not 2"
  grep -q "bad thread count" "$W/err" || fail "-j '$bad': $(cat "$W/err")"
done
set +e
"$CAIRN" fsck "$W/img" -j >/dev/null 2>"$W/err"; rc=$?
set -e
[ $rc -eq 2 ] || fail "-j without a value exited $rc"
echo "fsck_threads: all checks passed"
