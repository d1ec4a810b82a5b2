#!/bin/sh
# mkfs --order with trace range records: only the traced ranges form the hot
# prefix (rounded to 4 KiB, near ranges merged), split files read back byte for
# byte, fsck --data is clean, and the build is reproducible.
set -eu
CAIRN=${CAIRN:?}
T=$(mktemp -d /tmp/cairn-order-ranges.XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }
le64() { od -An -t u8 -j "$2" -N 8 "$1" | tr -d ' '; }

mkdir -p "$T/src/d"
head -c 3000000 /dev/urandom > "$T/src/big.bin"
head -c 50000 /dev/urandom > "$T/src/d/other.bin"
cp "$T/src/big.bin" "$T/src/d/copy.bin"
cp "$T/src/d/other.bin" "$T/src/d/other2.bin"
# big.bin: [0,8 KiB) and two ranges that merge into [1 MiB, 1 MiB + 100 KiB);
# other.bin whole (a plain path line).
cat > "$T/order" <<'ORD'
/big.bin 0 8192
/d/other.bin
/big.bin 1048576 100000
/big.bin 1100000 4000
ORD
# Times clamped, so reproducibility here checks the range layout alone (the
# atime-keeping reproducibility of plain builds is tests/cli/mkfs.sh's).
export SOURCE_DATE_EPOCH=1000000000
"$CAIRN" mkfs --no-fsync --order "$T/order" "$T/src" "$T/img" > "$T/out" || fail "mkfs --order"
"$CAIRN" mkfs -q --no-fsync --order "$T/order" "$T/src" "$T/img2" || fail "mkfs again"
cmp -s "$T/img" "$T/img2" || fail "not reproducible"
hot=$(le64 "$T/img" 176)
[ "$hot" = $((8192 + 53248 + 102400)) ] || fail "hot_len $hot"
"$CAIRN" info "$T/img" | grep -q '^extents: *4$' || fail "want 4 extents: $("$CAIRN" info "$T/img" | grep extents)"
# other2.bin still shares other.bin's copy.
grep -q ' 1 deduplicated' "$T/out" || fail "dedup of a hot whole file lost"
"$CAIRN" fsck --data "$T/img" >/dev/null || fail "fsck --data"
for f in big.bin d/other.bin d/copy.bin d/other2.bin; do
  "$CAIRN" cat "$T/img" "/$f" | cmp -s - "$T/src/$f" || fail "content of $f"
done
# Ranges covering a whole file keep it contiguous (no extents).
printf '/big.bin 0 1000000\n/big.bin 1000000 2000000\n' > "$T/order2"
"$CAIRN" mkfs -q --no-fsync --order "$T/order2" "$T/src" "$T/img3" || fail "mkfs order2"
[ "$(le64 "$T/img3" 176)" = 3002368 ] || fail "whole-covering ranges: hot_len $(le64 "$T/img3" 176)"
"$CAIRN" info "$T/img3" | grep -q '^extents: *0$' || fail "whole-covering ranges made extents"
"$CAIRN" fsck --data "$T/img3" >/dev/null || fail "fsck --data img3"
echo ok
