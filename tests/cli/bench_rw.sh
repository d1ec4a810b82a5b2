#!/bin/sh
# `cairn bench rw` (the RAM fs seed-001 benchmark) runs end to end on a small size,
# reports every phase, zero bytes copied while growing and an unmoved first chunk,
# and refuses bad options with exit 2 and a message naming the option.
set -u
CAIRN=${CAIRN:-build/cairn}
work=$(mktemp -d /tmp/cairn-bench-rw.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
fail() { echo "FAIL: $*"; cat "$work/out" 2>/dev/null; exit 1; }

"$CAIRN" bench rw --size 2M --runs 1 --threads 2 --files 500 --small 10 >"$work/out" 2>&1 ||
  fail "bench rw failed"
for want in "write (grow)" "rewrite" "read" "regrow (pool)" "floor: memcpy" \
            "bytes_copied 0, first chunk moved: no" "memory per MiB stored" \
            "2 threads at once" "small files: 500 x 10 B"; do
  grep -qF "$want" "$work/out" || fail "output lacks '$want'"
done
"$CAIRN" bench rw --chunk 16K --size 1M --runs 1 --threads 0 --files 0 >"$work/out" 2>&1 ||
  fail "bench rw --chunk 16K failed"
grep -q "chunk 16384 B" "$work/out" || fail "chunk size not reported"

for bad in "--chunk 5000" "--bs 0" "--runs 0" "--size nope" "--bogus"; do
  # shellcheck disable=SC2086
  "$CAIRN" bench rw $bad >"$work/out" 2>&1; rc=$?
  [ "$rc" -eq 2 ] || fail "'bench rw $bad' exited $rc, want 2"
  grep -qE "^cairn bench: (rw: |unknown option '--bogus' \(see cairn bench rw --help\))" "$work/out" ||
    fail "'bench rw $bad' gave no clear message"
done
echo "bench rw ok"
