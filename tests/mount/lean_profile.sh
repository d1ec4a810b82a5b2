#!/bin/sh
# A lean profile mount: -o prefetch=PROFILE on an image built without one reads
# the profile's ranges into the cache, merging them into as few requests as the
# device allows, which also fetches the bytes between them. Once the push has
# stored the ranges, those gap bytes go with them: no range covers them, the
# traced program never read them (kept, they held most of a profile mount's
# 31 MiB after a cold Java Hello). Scattered 4 KiB ranges, two per cache
# segment: checked with the cache's own resident-bytes counter once the push
# has stored every range, against a quarter of what was fetched (a generous
# margin, no timing).
. "$(dirname "$0")/common.inc"
SRC=$WORK/src
mkdir -p "$SRC/sparse"
prof=$WORK/profile
: > "$prof"
for i in 0 1 2 3; do
  head -c 2097152 /dev/urandom > "$SRC/sparse/f$i"
  k=0
  while [ $k -lt 32 ]; do echo "/sparse/f$i $((k * 65536)) 4096" >> "$prof"; k=$((k + 1)); done
done
"$CAIRN" mkfs -q "$SRC" "$WORK/img.cairn" || fail "mkfs"
M=$WORK/m
st=$WORK/st
[ -w /proc/sys/vm/drop_caches ] && { sync; echo 3 > /proc/sys/vm/drop_caches; }
mnt "$M" "$WORK/img.cairn" -o "prefetch=$prof,stats=$st" || fail "mount -o prefetch=PROFILE"
pid=$(daemons_of "$M")
stat_of() { live_stat "$pid" "$st" "$1"; }
ls -l "$M/sparse" > /dev/null # the kernel learns of the files: the push starts
hot=$((4 * 32 * 4096))
i=0
while [ "$(stat_of push_bytes)" -lt "$hot" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
pushed=$(stat_of push_bytes)
[ "$pushed" -ge "$hot" ] || fail "the push stored $pushed of $hot profile bytes"
fetched=$(stat_of device_bytes)
res=$(stat_of cache_resident_bytes)
echo "pushed $pushed bytes; fetched $fetched; cache resident after the push: $res bytes"
[ "$fetched" -ge $((4 * 2097152 / 2)) ] || fail "the prefetch fetched only $fetched bytes"
[ "$res" -le $((fetched / 4)) ] || fail "the cache still holds $res bytes after the push (bound $((fetched / 4)))"
# And what was dropped reads back right (from the kernel, or fetched again).
for i in 0 3; do cmp "$SRC/sparse/f$i" "$M/sparse/f$i" || fail "sparse/f$i reads back wrong"; done
umnt "$M"
echo "lean_profile: ok"
