#!/bin/sh
# Layering (DESIGN.md): the RAM fs is a tmpfs library that knows nothing of
# images. No source of lib/ramfs includes, even through other headers, an
# image, bdev, cache or namespace header, and its objects call no function of
# those layers. (Seeding a RAM tree from an image is the namespace's: lib/ns.)
. "$(dirname "$0")/common.inc"
CC=${CC:-cc}
cd "$ROOT" || fail "cd $ROOT"
bad_headers='cairn/(image|bdev|cache|ns|format|mkfs|extract)\.h|lib/(image|bdev|cache|ns|format|mkfs)/'
for c in lib/ramfs/*.c; do
  $CC -std=c11 -D_GNU_SOURCE -Iinclude -Ilib -MM "$c" > "$WORK/deps" 2>"$WORK/err" ||
    fail "$c: cannot list its headers: $(cat "$WORK/err")"
  hits=$(tr ' \\' '\n\n' < "$WORK/deps" | grep -E "$bad_headers" | sort -u)
  [ -z "$hits" ] || fail "$c includes headers of layers above or beside the RAM fs:" $hits
done
n=0
for o in "$BUILD"/lib/ramfs/*.o; do
  [ -f "$o" ] || fail "no objects in $BUILD/lib/ramfs"
  calls=$(nm -u "$o" | awk '{ print $2 }' | grep -E '^cairn_(image|bdev|cache|ns|mkfs|extract)_' || true)
  [ -z "$calls" ] || fail "$o calls into other layers:" $calls
  n=$((n + 1))
done
echo "layers: lib/ramfs ($n objects) uses no image, device, cache or namespace code"
