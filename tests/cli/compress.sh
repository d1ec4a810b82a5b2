#!/bin/sh
# Compressed images (mkfs -z): the generated test tree (every file type, hard
# links, inline and empty files, a sparse file over 4 GiB, incompressible data)
# round trips under every codec and several chunk sizes; the output does not
# depend on -j; --no-compress and --no-compress-from store chunks raw; info shows
# the codec; fsck --data finds a flipped byte in any stored chunk; -z none is
# today's format.
set -u
here=$(cd "$(dirname "$0")" && pwd)
CAIRN=${CAIRN:-build/cairn}
work=$(mktemp -d /tmp/cairn-compress.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

python3 "$here/treetool.py" gen "$work/src" --big || fail "cannot generate the tree"
# Data that does not compress (its chunks must be stored raw), and text that does
# (the generated files are incompressible).
head -c 1300000 /dev/urandom > "$work/src/random.bin"
seq 1 60000 > "$work/src/text.txt"

"$CAIRN" mkfs -q "$work/src" "$work/plain.img" || fail "mkfs"
"$CAIRN" mkfs -q -z none "$work/src" "$work/none.img" || fail "mkfs -z none"
cmp "$work/plain.img" "$work/none.img" || fail "-z none differs from the uncompressed format"

atimes=$work/src.atimes
for spec in "lz4 16K" "lz4hc,9 64K" "zstd 128K" "zstd,19 1M"; do
  set -- $spec
  img=$work/$1-$2.img
  out=$("$CAIRN" mkfs -z "$1" --chunk-size "$2" "$work/src" "$img" 2>&1) || fail "mkfs -z $1 --chunk-size $2: $out"
  echo "$out" | grep -q "stored raw" || fail "mkfs -z $1: no chunk summary: $out"
  echo "$out" | grep -q " 1 deduplicated" || fail "mkfs -z $1: dup1.bin and dup2.bin not shared: $out"
  raw=$(echo "$out" | sed -n 's/.*fragments, \([0-9]*\) stored raw.*/\1/p')
  [ "${raw:-0}" -gt 0 ] || fail "mkfs -z $1: random data was not stored raw ($out)"
  [ "$(stat -c %s "$img")" -lt "$(stat -c %s "$work/plain.img")" ] || fail "-z $1 is not smaller"
  "$CAIRN" info "$img" | grep -q "^compression: *${1%%,*},.*$(( $(echo "$2" | tr -d K | sed 's/1M/1024/') )) KiB chunks" ||
    fail "info does not show $1 / $2: $("$CAIRN" info "$img" | grep compression)"
  "$CAIRN" fsck --data "$img" >/dev/null || fail "fsck --data of -z $1 --chunk-size $2"
  rm -rf "$work/out"
  "$CAIRN" extract --unsafe-links "$img" "$work/out" || fail "extract -z $1"
  # Atimes only the first time: comparing reads the source, which moves them.
  python3 "$here/treetool.py" cmp "$work/src" "$work/out" $atimes ||
    fail "extracted tree of -z $1 --chunk-size $2 differs from the source"
  blocks=$(stat -c %b "$work/out/sparse")
  [ "$blocks" -lt 8192 ] || fail "-z $1: sparse file uses $blocks blocks after extract"
  "$CAIRN" cat "$img" /hole-at-end | cmp - "$work/src/hole-at-end" || fail "cat /hole-at-end (-z $1)"
  atimes=
  echo "ok: -z $1 --chunk-size $2 round trip ($(stat -c %s "$img") bytes)"
done

# The same bytes whatever the thread count.
for j in 1 2 3; do
  "$CAIRN" mkfs -q -z zstd --chunk-size 16K -j $j "$work/src" "$work/j$j.img" || fail "mkfs -j $j"
done
cmp "$work/j1.img" "$work/j2.img" && cmp "$work/j1.img" "$work/j3.img" || fail "output depends on -j"
echo "ok: -j 1, 2 and 3 give the same image"

# --order with range records: hot chunks go first, the rest after; split files
# end in a short chunk of their own, whole hot files' tails in a hot fragment.
printf '/medium.bin 40960 4096\n/text.txt\n/random.bin 1200000 8192\n/medium.bin 0 4096\n' > "$work/order"
"$CAIRN" mkfs -q -z lz4 --chunk-size 16K --order "$work/order" "$work/src" "$work/o.img" ||
  fail "mkfs -z --order"
"$CAIRN" info "$work/o.img" | grep -q "^hot prefix: *[1-9]" || fail "-z --order: no hot prefix"
"$CAIRN" fsck --data "$work/o.img" >/dev/null || fail "fsck --data of -z --order"
for f in medium.bin text.txt random.bin dup1.bin; do
  "$CAIRN" cat "$work/o.img" "/$f" | cmp - "$work/src/$f" || fail "-z --order: /$f differs"
done
echo "ok: -z with --order ranges"

# --hot-codec: the hot prefix gets its own codec (lz4 there, zstd after it), the
# image reads back whole and checks clean, does not depend on -j, and the
# option is refused without -z or --order, leaving nothing behind.
"$CAIRN" mkfs -q -z zstd --chunk-size 16K --order "$work/order" "$work/src" "$work/oz.img" ||
  fail "mkfs -z zstd --order"
for j in 1 2; do
  "$CAIRN" mkfs -q -z zstd --hot-codec lz4hc,12 --chunk-size 16K -j $j --order "$work/order" \
    "$work/src" "$work/oh$j.img" || fail "mkfs --hot-codec lz4hc -j $j"
done
cmp "$work/oh1.img" "$work/oh2.img" || fail "--hot-codec: output depends on -j"
cmp -s "$work/oz.img" "$work/oh1.img" && fail "--hot-codec lz4hc changed nothing"
"$CAIRN" fsck --data "$work/oh1.img" >/dev/null || fail "fsck --data of --hot-codec"
# info names the hot prefix's codec and its bytes (it showed only -z's)
"$CAIRN" info "$work/oh1.img" > "$work/info" || fail "info of --hot-codec"
grep -q "^hot chunks: *lz4hc,12: [1-9][0-9]* of [1-9][0-9]* logical bytes" "$work/info" ||
  fail "info of --hot-codec lz4hc,12: no hot chunks line: $(cat "$work/info")"
grep -q "^compression: *zstd," "$work/info" || fail "info of --hot-codec: -z codec not zstd"
"$CAIRN" info --json "$work/oh1.img" | grep -q '"hot_codec": "lz4hc", "hot_level": 12, "hot_stored_bytes": [1-9]' ||
  fail "info --json of --hot-codec: no hot_codec lz4hc"
"$CAIRN" info --json "$work/oz.img" | grep -q '"hot_codec": "zstd"' ||
  fail "info --json of -z zstd --order: hot_codec is not zstd"
rm -rf "$work/out"
"$CAIRN" extract --unsafe-links "$work/oh1.img" "$work/out" || fail "extract --hot-codec"
python3 "$here/treetool.py" cmp "$work/src" "$work/out" || fail "--hot-codec: extracted tree differs"
"$CAIRN" mkfs -q -z zstd --hot-codec none --chunk-size 16K --order "$work/order" "$work/src" \
  "$work/on.img" || fail "mkfs --hot-codec none"
hot() { "$CAIRN" info "$1" | sed -n 's/^hot prefix: *\([0-9]*\) bytes.*/\1/p'; }
[ "$(hot "$work/on.img")" -gt "$(hot "$work/oz.img")" ] ||
  fail "--hot-codec none: hot prefix $(hot "$work/on.img") not above zstd's $(hot "$work/oz.img")"
"$CAIRN" cat "$work/on.img" /text.txt | cmp - "$work/src/text.txt" || fail "--hot-codec none: cat"
"$CAIRN" info "$work/on.img" | grep -q "^hot chunks: *none,0: \([0-9]*\) of \1 logical" ||
  fail "info of --hot-codec none: hot chunks not raw"
for args in "--hot-codec lz4 --order $work/order" "-z zstd --hot-codec lz4" \
            "-z zstd --hot-codec lz5 --order $work/order"; do
  # shellcheck disable=SC2086
  "$CAIRN" mkfs -q $args "$work/src" "$work/bad.img" 2>"$work/err"
  [ $? -eq 2 ] || fail "mkfs $args: not a usage error"
  grep -q -- "--hot-codec" "$work/err" || fail "mkfs $args: message does not name --hot-codec"
  [ ! -e "$work/bad.img" ] || fail "mkfs $args: left an image"
done
echo "ok: --hot-codec"

# A compressed image inside a qcow2 file reads the same.
if command -v qemu-img >/dev/null; then
  qemu-img convert -f raw -O qcow2 -c "$work/zstd-128K.img" "$work/z.qcow2" || fail "qemu-img convert"
  "$CAIRN" fsck --data "$work/z.qcow2" >/dev/null || fail "fsck --data of the qcow2 image"
  "$CAIRN" cat "$work/z.qcow2" /text.txt | cmp - "$work/src/text.txt" || fail "cat from qcow2"
  echo "ok: compressed image inside qcow2"
fi

# --no-compress: the matching file's chunks are all stored raw (text.txt is the
# tree's one compressible file).
"$CAIRN" mkfs -q -z zstd --no-compress '/text*' "$work/src" "$work/nc.img" || fail "mkfs --no-compress"
[ "$(stat -c %s "$work/nc.img")" -gt "$(stat -c %s "$work/zstd-128K.img")" ] || fail "--no-compress changed nothing"
"$CAIRN" fsck --data "$work/nc.img" >/dev/null || fail "fsck of --no-compress image"

# --no-compress-from: a rule file (comments, blank lines, white space around a
# pattern) gives the same image as the same patterns on the command line.
printf '# already compressed\n\n   /text*  \n\t# nothing here\n' > "$work/rules"
"$CAIRN" mkfs -q -z zstd --no-compress-from "$work/rules" "$work/src" "$work/rules.img" ||
  fail "mkfs --no-compress-from"
cmp "$work/nc.img" "$work/rules.img" || fail "--no-compress-from differs from --no-compress"
printf '# only comments\n\n' > "$work/rules0"
"$CAIRN" mkfs -q -z zstd --no-compress-from "$work/rules0" "$work/src" "$work/rules0.img" ||
  fail "mkfs --no-compress-from (comments only)"
cmp "$work/zstd-128K.img" "$work/rules0.img" || fail "a rule file of comments changed the image"
printf '/no-such-file*\n' > "$work/rules1"
"$CAIRN" mkfs -q -z zstd --no-compress-from "$work/rules1" --no-compress-from "$work/rules" \
  "$work/src" "$work/rules2.img" || fail "mkfs with two rule files"
cmp "$work/nc.img" "$work/rules2.img" || fail "the patterns of two rule files do not add up"
if "$CAIRN" mkfs -q -z zstd --no-compress-from "$work/missing" "$work/src" "$work/bad.img" 2>"$work/err"; then
  fail "a missing rule file was accepted"
fi
[ -e "$work/bad.img" ] && fail "a missing rule file left an image"
grep -q "cairn mkfs: .*missing" "$work/err" || fail "missing rule file: $(cat "$work/err")"
echo "ok: --no-compress-from rule files"

# Bad arguments: clear message, exit 2, nothing written.
for bad in "-z gzip" "-z zstd,99" "-z lz4hc,1" "--chunk-size 8K" "--chunk-size 100K" "-j 0"; do
  # shellcheck disable=SC2086
  if "$CAIRN" mkfs $bad "$work/src" "$work/bad.img" 2>"$work/err"; then fail "mkfs $bad accepted"; fi
  [ -e "$work/bad.img" ] && fail "mkfs $bad left an image"
  grep -q "cairn mkfs:" "$work/err" || fail "mkfs $bad: $(cat "$work/err")"
done
echo "ok: bad -z / --chunk-size / -j refused"

# fsck --data finds a flipped byte in every stored chunk (a sample of 40); the
# chunk table is read where the superblock says, so the metadata is stored as is.
"$CAIRN" mkfs -q -z zstd --plain-meta "$work/src" "$work/zflip.img" || fail "mkfs --plain-meta"
# info says compressed metadata's range is logical (it may start where the data
# does: two regions "at" the same byte looked like an overlap); stored as is, not.
"$CAIRN" mkfs -q "$work/src" "$work/zmeta.img" || fail "mkfs"
"$CAIRN" info "$work/zmeta.img" | grep -q '^metadata: .* bytes at [0-9]* (logical addresses; blob ' ||
  fail "info of compressed metadata does not call its range logical: $("$CAIRN" info "$work/zmeta.img" | grep ^metadata)"
"$CAIRN" info "$work/zflip.img" | grep '^metadata:' | grep -q logical &&
  fail "info calls metadata stored as is logical"
python3 - "$work/zflip.img" "$CAIRN" <<'PY' || fail "a flipped chunk byte went unnoticed"
import struct, subprocess, sys
path, cairn = sys.argv[1], sys.argv[2]
img = bytearray(open(path, "rb").read())
incompat = struct.unpack_from("<I", img, 20)[0]
assert incompat & 2, "not a chunked image"
off, count = struct.unpack_from("<QQ", img, 256 + 16)
chunks = []
for i in range(count):
    d, n, info = struct.unpack_from("<QII", img, off + 16 * i)
    if n:
        chunks.append((d, n, info >> 24))
step = max(1, len(chunks) // 40)
sample = chunks[::step]
seen = set()
for d, n, codec in sample:
    seen.add(codec)
    for pos in (d, d + n // 2, d + n - 1):
        img[pos] ^= 0x10
        open(path + ".flip", "wb").write(img)
        img[pos] ^= 0x10
        r = subprocess.run([cairn, "fsck", "--data", "-q", path + ".flip"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if r.returncode == 0:
            sys.exit("flip at %d (chunk at %d, codec %d) not found" % (pos, d, codec))
print("ok: %d flips in %d chunks (codecs %s) all found by fsck --data" %
      (3 * len(sample), len(sample), sorted(seen)))
PY
# Options of compressed images on one that is not: a warning (they did nothing,
# silently), none with -q, and the image is built.
for o in "--chunk-size 64K" "--no-compress *.x" "-z none --chunk-size 64K"; do
  # shellcheck disable=SC2086
  "$CAIRN" mkfs $o "$work/src" "$work/w.img" >/dev/null 2>"$work/err" || fail "mkfs $o"
  grep -qx "cairn mkfs: warning: --chunk-size and --no-compress apply to compressed images (-z lz4, lz4hc or zstd); this one is not compressed" \
    "$work/err" || fail "mkfs $o: $(cat "$work/err")"
  # shellcheck disable=SC2086
  "$CAIRN" mkfs -q $o "$work/src" "$work/w.img" 2>"$work/err" || fail "mkfs -q $o"
  [ -s "$work/err" ] && fail "mkfs -q $o warned: $(cat "$work/err")"
done
"$CAIRN" mkfs -z zstd --chunk-size 64K "$work/src" "$work/w.img" 2>"$work/err" >/dev/null &&
  ! grep -q warning "$work/err" || fail "mkfs -z zstd --chunk-size warned: $(cat "$work/err")"
echo "compress: all checks passed"
