#!/bin/sh
# -o trace=FILE records the first reads as "PATH OFFSET LENGTH" in order;
# `cairn mkfs --order` takes the file, and the rebuilt image mounts with
# -o prefetch, pushes a looked-up file's hot pages into the page cache (so reading
# them costs no FUSE read at all) and serves the same bytes.
. "$(dirname "$0")/common.inc"
SRC=$WORK/src
mkdir -p "$SRC/lib" "$SRC/bin"
head -c 4000000 /dev/urandom > "$SRC/lib/big.so"
head -c 300000 /dev/urandom > "$SRC/bin/tool"
echo cold > "$SRC/unused"
"$CAIRN" mkfs -q "$SRC" "$WORK/img.cairn" || fail "mkfs"
M=$WORK/m
mnt "$M" "$WORK/img.cairn" -o trace="$WORK/trace" || fail "mount with trace="
cat "$M/bin/tool" > /dev/null
dd if="$M/lib/big.so" of=/dev/null bs=64k skip=20 count=2 2>/dev/null
cat "$M/bin/tool" > /dev/null                 # second read: nothing new
umnt "$M"
i=0; while [ ! -s "$WORK/trace" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
cat "$WORK/trace"
[ "$(head -n 1 "$WORK/trace" | cut -d' ' -f1)" = /bin/tool ] || fail "first traced file"
grep -q '^/lib/big.so [0-9]* [0-9]*$' "$WORK/trace" || fail "no range of big.so"
grep -q '^/unused' "$WORK/trace" && fail "traced a file nobody read"
[ "$(grep -c '^/bin/tool 0 ' "$WORK/trace")" = 1 ] || fail "the re-read was traced again"
off=$(awk '$1 == "/lib/big.so" { print $2; exit }' "$WORK/trace")
[ "$off" -ge 1048576 ] && [ "$off" -le 1441792 ] || fail "big.so range starts at $off"

"$CAIRN" mkfs -q --order "$WORK/trace" "$SRC" "$WORK/hot.cairn" || fail "mkfs --order trace"
"$CAIRN" info "$WORK/hot.cairn" | grep -i 'hot prefix'
mnt "$M" "$WORK/hot.cairn" -o prefetch,delay=1ms,stats="$WORK/stats" || fail "mount -o prefetch"
pid=$(daemons_of "$M")
stat_of() { live_stat "$pid" "$WORK/stats" "$1"; }
exec 3< "$M/bin/tool"                         # its lookup alone queues the push
i=0; while [ "$(stat_of push_bytes)" != 300000 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(stat_of push_bytes)" = 300000 ] || fail "bin/tool not pushed: $(cat "$WORK/stats")"
cmp "$SRC/bin/tool" "$M/bin/tool" || fail "pushed pages differ"
[ "$(stat_of fuse_image_reads)" = 0 ] || fail "pushed pages were read again: $(cat "$WORK/stats")"
exec 3<&-
diff -r "$SRC" "$M" || fail "ordered image differs"
# An image mounted alone is read-only in the kernel, which opens its files
# itself (no OPEN requests): a second pass reads the same bytes.
awk -v m="$M" '$2 == m { print $4 }' /proc/mounts | grep -q '^ro,' || fail "not mounted ro"
if touch "$M/new" 2>"$WORK/touch.err"; then fail "created a file in a read-only image"; fi
grep -q "Read-only file system" "$WORK/touch.err" || fail "not EROFS: $(cat "$WORK/touch.err")"
diff -r "$SRC" "$M" || fail "second pass differs"
[ "$(stat_of fuse_image_reads)" -gt 0 ] || fail "reads are not counted"
umnt "$M"
echo "trace: ok"
