#!/bin/sh
# Overlay copy-up runs its data copy without the namespace lock (lib/ns/copyup.c):
# with the daemon built with ThreadSanitizer, large image files are copied up
# while other threads look up, list, read and change the tree, append to the
# same files (they wait for the copy), truncate them, unlink and rename around
# them. Every result is checked, and any ThreadSanitizer report fails the test.
. "$(dirname "$0")/../mount/common.inc"
TSAN_LOG=$WORK/tsan
export TSAN_OPTIONS="log_path=$TSAN_LOG"
SRC=$WORK/src
mkdir -p "$SRC/big" "$SRC/small"
for i in 1 2 3; do head -c 24000000 /dev/urandom > "$SRC/big/b$i"; done
i=1
while [ $i -le 200 ]; do echo "small $i" > "$SRC/small/s$i"; i=$((i + 1)); done
"$CAIRN" mkfs -q "$SRC" "$WORK/img.cairn" || fail "mkfs"
M=$WORK/m
mnt "$M" "$WORK/img.cairn" -o overlay || fail "mount -o overlay"

# Two appenders per big file: one copies up, the other waits for that copy.
for i in 1 2 3; do
  (echo "tail-a" >> "$M/big/b$i") &
  (echo "tail-b" >> "$M/big/b$i") &
done
# Meanwhile: lookups (negative and positive), listings, reads, small changes.
(i=1; while [ $i -le 200 ]; do
   stat "$M/small/none$i" >/dev/null 2>&1; cat "$M/small/s$i" >/dev/null || exit 1
   i=$((i + 1)); done) &
(for r in 1 2 3 4 5; do ls -l "$M/small" "$M/big" >/dev/null || exit 1; done) &
(i=1; while [ $i -le 50 ]; do
   echo "new $i" > "$M/small/n$i" && mv "$M/small/n$i" "$M/small/m$i" && rm "$M/small/s$i" || exit 1
   i=$((i + 1)); done) &
wait
for i in 1 2 3; do
  [ "$(stat -c %s "$M/big/b$i")" = $((24000000 + 14)) ] || fail "b$i size $(stat -c %s "$M/big/b$i")"
  head -c 24000000 "$M/big/b$i" | cmp - "$SRC/big/b$i" || fail "b$i data after concurrent copy-ups"
  [ "$(tail -c 14 "$M/big/b$i" | sort | tr '\n' ' ')" = "tail-a tail-b " ] || fail "b$i tails"
done
[ "$(ls "$M/small" | wc -l)" = 200 ] || fail "small: $(ls "$M/small" | wc -l) names"
# O_TRUNC copy-ups and a truncate racing a copy-up of the same file.
cp "$SRC/big/b1" "$SRC/big/b4" && "$CAIRN" mkfs -q "$SRC" "$WORK/img2.cairn" || fail "mkfs 2"
umnt "$M"
mnt "$M" "$WORK/img2.cairn" -o overlay || fail "mount 2"
(echo more >> "$M/big/b4") & (: > "$M/big/b1") & (echo x >> "$M/big/b1") &
wait
[ "$(tail -c 5 "$M/big/b4")" = more ] || fail "b4 tail"
sz=$(stat -c %s "$M/big/b1")
[ "$sz" = 2 ] || [ "$sz" = 0 ] || [ "$sz" = $((24000000 + 2)) ] || fail "b1 size $sz"
umnt "$M"
if ls "$TSAN_LOG".* >/dev/null 2>&1; then
  head -n 80 "$TSAN_LOG".*; fail "ThreadSanitizer reports"
fi
echo "copy-up without the lock: no reports"
