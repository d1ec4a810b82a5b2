#!/bin/sh
# Regenerates the seed corpora of fuzz_image and fuzz_extract from tiny trees,
# one per feature, built with `cairn mkfs --mtime 0` (reproducible bytes), plus
# a few truncations and bit flips of them. The seeds are committed; rerun this
# after a format change:  fuzz/seeds.sh build/cairn
# Needs root for the device nodes (skipped otherwise) and user xattrs on /tmp.
set -eu
CAIRN=${1:-build/cairn}
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/fuzz/corpus/image
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir -p "$out"
rm -f "$out"/*.cairn

mk() { # name [mkfs options]: build $tmp/NAME into $out/NAME.cairn (metadata as is)
  n=$1; shift
  "$CAIRN" mkfs -q --mtime 0 --plain-meta "$@" "$tmp/$n" "$out/$n.cairn"
}
mkz() { # name [mkfs options]: the same tree with compressed metadata, $out/mz-NAME.cairn
  n=$1; shift
  "$CAIRN" mkfs -q --mtime 0 "$@" "$tmp/$n" "$out/mz-$n.cairn"
}
tree() { rm -rf "$tmp/$1"; mkdir -p "$tmp/$1"; }

tree empty; mk empty
tree small; echo hello > "$tmp/small/a"; mkdir "$tmp/small/d"; echo x > "$tmp/small/d/b"; mk small
tree big; head -c 9000 /dev/urandom > "$tmp/big/f"; head -c 100 /dev/zero > "$tmp/big/z"; mk big
tree sparse; truncate -s 64K "$tmp/sparse/s"; printf data | dd of="$tmp/sparse/s" bs=1 seek=20000 conv=notrunc 2>/dev/null
printf tail | dd of="$tmp/sparse/s" bs=1 seek=60000 conv=notrunc 2>/dev/null; truncate -s 1M "$tmp/sparse/hole"; mk sparse
tree links; echo target > "$tmp/links/t"; ln "$tmp/links/t" "$tmp/links/hard"; mkdir "$tmp/links/dir"
ln -s t "$tmp/links/rel"; ln -s /etc/passwd "$tmp/links/abs"; ln -s dir "$tmp/links/todir"
ln -s ../links/t "$tmp/links/dir/up"; ln -s loop "$tmp/links/loop"; mk links
tree xattr; echo v > "$tmp/xattr/f"
if setfattr -n user.mime -v text/plain "$tmp/xattr/f" 2>/dev/null; then
  setfattr -n user.empty "$tmp/xattr/f"; setfattr -n user.d -v 1 "$tmp/xattr"; fi; mk xattr
tree special; mkfifo "$tmp/special/fifo"
if [ "$(id -u)" = 0 ]; then mknod "$tmp/special/null" c 1 3; mknod "$tmp/special/blk" b 7 0; fi; mk special
tree modes; echo s > "$tmp/modes/suid"; chmod 4755 "$tmp/modes/suid"; mkdir "$tmp/modes/sticky"
chmod 1777 "$tmp/modes/sticky"; echo p > "$tmp/modes/none"; chmod 000 "$tmp/modes/none"; mk modes
tree many; i=0; while [ $i -lt 60 ]; do echo $i > "$tmp/many/f$i"; i=$((i + 1)); done; mk many
tree deep; d=$tmp/deep; for c in a b c d e f g h; do d=$d/$c; mkdir "$d"; done; echo deep > "$d/leaf"; mk deep
tree dedup; echo same > "$tmp/dedup/a"; echo same > "$tmp/dedup/b"; head -c 5000 /dev/zero > "$tmp/dedup/c"
cp "$tmp/dedup/c" "$tmp/dedup/d"; mk dedup
tree names; for n in ' ' '-' 'a b' '.hidden' '...' 'tab	x' 'nl
x' "$(printf '\001')" "$(printf '\377\376')"; do echo n > "$tmp/names/$n"; done; mk names
tree hot; head -c 6000 /dev/urandom > "$tmp/hot/one"; head -c 6000 /dev/urandom > "$tmp/hot/two"
printf '/two\n/one\n' > "$tmp/order"; mk hot --order "$tmp/order"

# Compressed images: every codec, small chunks, fragments, a hot prefix, raw and
# zero chunks, shared files.
tree z; seq 1 9000 > "$tmp/z/text"; head -c 40000 /dev/urandom > "$tmp/z/rand"
head -c 20000 /dev/zero > "$tmp/z/zeros"; echo small > "$tmp/z/s"; seq 1 700 > "$tmp/z/tail"
cp "$tmp/z/text" "$tmp/z/text2"; printf '/tail\n/text 16384 4096\n' > "$tmp/zorder"
mk z --chunk-size 16K -z zstd; mv "$out/z.cairn" "$out/z-zstd.cairn"
mk z --chunk-size 16K -z lz4; mv "$out/z.cairn" "$out/z-lz4.cairn"
mk z --chunk-size 16K -z lz4hc --order "$tmp/zorder"; mv "$out/z.cairn" "$out/z-hot.cairn"
# --hot-codec: the hot prefix's chunks in another codec (lz4, or stored raw).
mk z --chunk-size 16K -z zstd --hot-codec lz4 --order "$tmp/zorder"; mv "$out/z.cairn" "$out/z-hotcodec.cairn"
mk z --chunk-size 16K -z lz4 --hot-codec none --order "$tmp/zorder"; mv "$out/z.cairn" "$out/z-hotraw.cairn"

# Compressed metadata (mkfs's default): the richest trees again.
for n in small links xattr sparse many deep; do mkz $n; done
mkz z --chunk-size 16K -z zstd
mkz z --chunk-size 16K -z zstd --hot-codec lz4hc --order "$tmp/zorder"; mv "$out/mz-z.cairn" "$out/mz-z-hotcodec.cairn"
mkz z --chunk-size 16K -z zstd

# Damaged variants: truncations and flips of the richest seeds.
cd "$out"
for s in small links sparse z-zstd mz-links mz-z; do
  size=$(stat -c %s $s.cairn)
  head -c 4096 $s.cairn > trunc-super-$s.cairn
  head -c $((size - 4096)) $s.cairn > trunc-tail-$s.cairn
done
python3 - "$out" <<'EOF'
import sys, os
out = sys.argv[1]
for s, offs in (("small", (4096 + 7, 8192 + 100)), ("links", (4200, 60)),
                ("mz-links", (520, 8192 + 40)), ("mz-small", (560, 8192 + 200))):
    b = bytearray(open(os.path.join(out, s + ".cairn"), "rb").read())
    for o in offs:
        c = bytearray(b); c[o] ^= 0x40
        open(os.path.join(out, "flip-%s-%d.cairn" % (s, o)), "wb").write(c)
EOF
du -sh "$out"
