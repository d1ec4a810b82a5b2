#!/bin/sh
# The front ends (tools/cairn, tools/fuse, tools/mount.cairn) are built on the
# public API alone (DESIGN.md): none includes, even through other headers, a
# private header of lib/ (the on-disk structures in lib/format/disk.h, a
# layer's *_int.h), and none names an on-disk structure (cairn_disk_*).
. "$(dirname "$0")/common.inc"
CC=${CC:-cc}
cd "$ROOT" || fail "cd $ROOT"
n=0
for c in tools/cairn/*.c tools/fuse/*.c tools/mount.cairn/*.c; do
  # -Ilib as the library's own build has it, so a private header would be found.
  $CC -std=c11 -D_GNU_SOURCE -Iinclude -Ilib $(pkg-config --cflags fuse3 2>/dev/null) \
    -MM "$c" > "$WORK/deps" 2>"$WORK/err" || fail "$c: cannot list its headers: $(cat "$WORK/err")"
  hits=$(tr ' \\' '\n\n' < "$WORK/deps" | grep -E '(^|/)lib/' | sort -u)
  [ -z "$hits" ] || fail "$c includes private headers of the library:" $hits
  n=$((n + 1))
done
hits=$(grep -rln 'cairn_disk_' tools || true)
[ -z "$hits" ] || fail "front ends use on-disk structures (cairn_disk_*):" $hits
echo "tools_public: $n front-end sources use only include/cairn"
