#!/bin/sh
# A lean prefetching daemon: -o prefetch on an ordered image reads the hot
# prefix into the cache and pushes it into the kernel's page cache. Once the
# push has stored it, the daemon's copy is worth little and is dropped (an
# ordered + prefetch mount held the 25 MiB hot prefix of a Java start after
# the push, 32 MiB RSS). Checked with the cache's own resident-bytes counter
# once the push is done (push_bytes covers the hot data), against half the
# hot data: a generous margin, no timing.
. "$(dirname "$0")/common.inc"
SRC=$WORK/src
mkdir -p "$SRC/hot" "$SRC/cold"
for i in 0 1 2 3 4 5 6 7; do
  head -c 1048576 /dev/urandom > "$SRC/hot/f$i"
  head -c 1048576 /dev/urandom > "$SRC/cold/f$i"
done
# Half hot: its ordered image maps it by extents, the hot one in the prefix.
head -c 1048576 /dev/urandom > "$SRC/hot/split"
"$CAIRN" mkfs -q "$SRC" "$WORK/plain.cairn" || fail "mkfs"
M=$WORK/m
# The workload: the hot files, whole. Its trace orders the image.
work() {
  for i in 0 1 2 3 4 5 6 7; do cat "$M/hot/f$i" > /dev/null || fail "read hot/f$i"; done
  head -c 524288 "$M/hot/split" > /dev/null || fail "read hot/split"
}
mnt "$M" "$WORK/plain.cairn" -o trace="$WORK/trace" || fail "mount with trace="
work
umnt "$M"
"$CAIRN" mkfs -q --order "$WORK/trace" "$SRC" "$WORK/img.cairn" || fail "mkfs --order"

[ -w /proc/sys/vm/drop_caches ] && { sync; echo 3 > /proc/sys/vm/drop_caches; }
st=$WORK/st
mnt "$M" "$WORK/img.cairn" -o "prefetch,stats=$st" || fail "mount -o prefetch"
pid=$(daemons_of "$M")
stat_of() { live_stat "$pid" "$st" "$1"; }
ls -l "$M/hot" > /dev/null # the kernel learns of the files: the push starts
work
hot=$((8 * 1048576))
i=0
# Done: every hot byte stored, or read by the program first (push_served_bytes:
# those leave the queue).
pushed_or_read() { echo $(($(stat_of push_bytes) + $(stat_of push_served_bytes))); }
while [ "$(pushed_or_read)" -lt "$hot" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
pushed=$(pushed_or_read)
[ "$pushed" -ge "$hot" ] || fail "the push stored or saw read $pushed of $hot hot bytes"
res=$(stat_of cache_resident_bytes)
echo "pushed $pushed bytes; cache resident after the push: $res bytes"
[ "$res" -le $((hot / 2)) ] || fail "the cache still holds $res bytes after pushing $hot (bound $((hot / 2)))"
# And what was dropped reads back right (from the kernel, or fetched again).
cmp "$SRC/hot/f3" "$M/hot/f3" || fail "hot/f3 reads back wrong"
# The kernel's read-ahead of the mount (docs/MOUNT.md): 16 KiB with the hot
# prefix prefetched, so that a fault next to a hot range does not read around
# into cold data; 4096 KiB without prefetch.
ra_of() {
  d=$(stat -c %d "$M")
  cat "/sys/class/bdi/$((d >> 8)):$((d & 255))/read_ahead_kb" 2>/dev/null || echo none
}
ra=$(ra_of)
[ "$ra" = none ] || [ "$ra" -eq 16 ] || fail "read_ahead_kb $ra with -o prefetch of an ordered image (want 16)"
umnt "$M"

# The push stores what the caches lend, no copy, the extent-mapped split file's
# hot half too: pushed before the program reads anything, so every lent byte
# (cache_lent_bytes) is the push's own.
[ -w /proc/sys/vm/drop_caches ] && { sync; echo 3 > /proc/sys/vm/drop_caches; }
mnt "$M" "$WORK/img.cairn" -o "prefetch,stats=$st" || fail "mount -o prefetch"
pid=$(daemons_of "$M")
ls -l "$M/hot" > /dev/null
hot=$((hot + 524288))
i=0
while [ "$(stat_of push_bytes)" -lt "$hot" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
pushed=$(stat_of push_bytes)
lent=$(stat_of cache_lent_bytes)
echo "pushed $pushed bytes, $lent of them lent"
[ "$pushed" -ge "$hot" ] || fail "the push stored $pushed of $hot hot bytes"
[ "$lent" -ge "$hot" ] || fail "the push lent $lent of $pushed bytes (copied the rest)"
cmp "$SRC/hot/split" "$M/hot/split" || fail "hot/split reads back wrong"
# The kernel evicts the inodes, their pages with them (the caches dropped their
# copy once pushed): looked up again, the files are pushed again, not read back
# through the 16 KiB read-ahead.
if [ -w /proc/sys/vm/drop_caches ]; then
  files=$(stat_of push_files)
  sync; echo 3 > /proc/sys/vm/drop_caches
  i=0
  while [ "$(stat_of ns_refs)" -gt 0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
  ls -l "$M/hot" > /dev/null
  again=$(stat_of push_files)
  echo "push_files $files, after the inodes were evicted and looked up again $again"
  [ "$again" -ge $((files + files / 2)) ] || fail "evicted files not pushed again: push_files $files -> $again"
  cmp "$SRC/hot/split" "$M/hot/split" || fail "hot/split reads back wrong after the second push"
fi
umnt "$M"
mnt "$M" "$WORK/img.cairn" || fail "mount"
cat "$M/hot/f0" > /dev/null || fail "read hot/f0"
ra=$(ra_of)
[ "$ra" = none ] || [ "$ra" -eq 4096 ] || fail "read_ahead_kb $ra without prefetch (want 4096)"
umnt "$M"
echo "lean_push: ok"
