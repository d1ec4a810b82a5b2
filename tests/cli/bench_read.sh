#!/bin/sh
# cairn bench read: raw and image modes report the figures scripts parse,
# request counts follow the cache settings, bad input fails cleanly.
set -eu
CAIRN=${CAIRN:?}
T=$(mktemp -d /tmp/cairn-bench-read.XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

head -c 3000000 /dev/urandom > "$T/blob"
out=$("$CAIRN" bench read "$T/blob" --raw --delay 100us --hit 1000)
for k in wall_ms requests device_bytes hit_rate floor_ms copy_ms ratio hit_4k_ns memcpy_4k_ns; do
  echo "$out" | grep -q "^$k: " || fail "raw: no $k in output"
done
echo "$out" | grep -q '^bytes: 3000000$' || fail "raw: wrong byte count"
# 3000000 bytes in 1 MiB requests from the file start: 3 requests
echo "$out" | grep -q '^requests: 3$' || fail "raw: expected 3 requests: $(echo "$out" | grep requests)"
# no cache, 64 KiB reads: one request per read
out=$("$CAIRN" bench read "$T/blob" --raw --cache-size 0 --bs 64K --no-copy)
echo "$out" | grep -q '^requests: 46$' || fail "pass-through: $(echo "$out" | grep requests)"
echo "$out" | grep -q '^cache: off$' || fail "pass-through: cache not off"
echo "ok: raw mode"

mkdir -p "$T/src/d"
cp "$T/blob" "$T/src/d/big"
echo small > "$T/src/small"
if "$CAIRN" mkfs -q --no-fsync "$T/src" "$T/img" 2>"$T/mkfs.err"; then
  out=$("$CAIRN" bench read "$T/img" --delay 50us)
  echo "$out" | grep -q '^files: 2$' || fail "image: files: $(echo "$out" | grep files)"
  echo "$out" | grep -q '^bytes: 3000006$' || fail "image: bytes"
  out=$("$CAIRN" bench read "$T/img" /d/big --bs 4K --no-copy)
  echo "$out" | grep -q '^files: 1$' || fail "image path: files"
  if "$CAIRN" bench read "$T/img" /nope 2>"$T/err"; then fail "missing path accepted"; fi
  grep -q nope "$T/err" || fail "missing path: error does not name it"
  echo "ok: image mode"
else
  echo "note: mkfs failed, image mode not tested: $(head -1 "$T/mkfs.err")"
fi

if "$CAIRN" bench read "$T/nonexistent" --raw 2>"$T/err"; then fail "missing image accepted"; fi
grep -q nonexistent "$T/err" || fail "missing image: error does not name it"
set +e
"$CAIRN" bench read "$T/blob" --raw --bs 0 2>/dev/null; rc=$?
set -e
[ $rc -eq 2 ] || fail "--bs 0: exit $rc, want 2"
echo "ok: bad input"
