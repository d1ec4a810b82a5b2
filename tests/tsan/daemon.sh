#!/bin/sh
# The mount daemon built with ThreadSanitizer (`make tsan-test` runs this with
# CAIRN pointing at build-tsan/cairn). FUSE worker threads, the cache's
# read-ahead workers and the prefetch push thread all meet in the daemon:
# - an ordered image mounted with -o prefetch, read by parallel readers while
#   the hot pages are being pushed; the image as built with its trace as a
#   profile (prefetch=TRACE); the plain mount, dropping delivered data;
# - a compressed image read at random (chunk rests pushed and dropped) and in
#   sequence (chunk read-ahead) at once;
# - an overlay mount written, read and removed by parallel writers, then the
#   POSIX checks on it.
# Any ThreadSanitizer report fails the test.
. "$(dirname "$0")/../mount/common.inc"
TSAN_LOG=$WORK/tsan
export TSAN_OPTIONS="log_path=$TSAN_LOG"
tsan_clean() {
  if ls "$TSAN_LOG".* >/dev/null 2>&1; then
    head -n 60 "$TSAN_LOG".*; fail "ThreadSanitizer: $1"
  fi
}

SRC=$WORK/src
mkdir -p "$SRC/d" "$SRC/e"
i=1
while [ $i -le 40 ]; do
  head -c $((i * 37000)) /dev/urandom > "$SRC/d/f$i"
  head -c $((i * 1000)) /dev/urandom > "$SRC/e/s$i"
  i=$((i + 1))
done
"$CAIRN" mkfs -q "$SRC" "$WORK/img.cairn" || fail "mkfs"
M=$WORK/m
mnt "$M" "$WORK/img.cairn" -o trace="$WORK/order" || fail "mount with trace="
cat "$M"/d/* "$M"/e/* > /dev/null
umnt "$M"
wait_file "$WORK/order" || fail "no trace"
"$CAIRN" mkfs -q --order "$WORK/order" "$SRC" "$WORK/hot.cairn" || fail "mkfs --order"

# The ordered image with -o prefetch; the same trace as a profile of the image
# as built (prefetch=TRACE); the plain mount, whose readers drop delivered data
# from the cache (use-once).
for c in "hot.cairn prefetch,delay=1ms" "img.cairn prefetch=$WORK/order,delay=1ms" \
         "img.cairn delay=1ms"; do
  img=${c%% *}; o=${c#* }
  mnt "$M" "$WORK/$img" -o "$o" || fail "mount $img -o $o"
  for r in 1 2 3 4; do
    (for f in "$M"/d/* "$M"/e/*; do cat "$f" > /dev/null; done) &
  done
  wait
  diff -r "$SRC" "$M" || fail "$img -o $o: content differs"
  umnt "$M"
  tsan_clean "$img -o $o"
  echo "$img -o $o: no reports"
done

# A compressed image: random 4 KiB readers, whose partly read chunks the push
# thread stores into the page cache and delivers (the chunk cache drops them),
# beside sequential readers of other files and the chunk read-ahead workers
# (other files: a file read whole first would give the random readers nothing
# but page-cache hits).
ZSRC=$WORK/zsrc
mkdir -p "$ZSRC/d"
python3 - "$ZSRC/d" <<'PY'
import random, sys
r = random.Random(3)
words = [bytes(r.choice(b"abcdefgh") for _ in range(r.randint(2, 8))) for _ in range(300)]
for i in range(1, 21): # text that compresses, 50 KB to 1 MB
    open("%s/f%d" % (sys.argv[1], i), "wb").write(b" ".join(r.choice(words) for _ in range(i * 10000)))
PY
"$CAIRN" mkfs -q -z zstd --chunk-size 16K "$ZSRC" "$WORK/z.cairn" || fail "mkfs -z zstd"
mnt "$M" "$WORK/z.cairn" -o stats="$WORK/zstats" || fail "mount z.cairn"
for r in 1 2; do
  python3 - "$M/d" "$r" <<'PY' &
import os, random, sys
r = random.Random(int(sys.argv[2]))
names = ["f%d" % i for i in range(1, 11)] # the sequential readers take f11-f20
for _ in range(3000):
    fd = os.open(os.path.join(sys.argv[1], r.choice(names)), os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    size = os.fstat(fd).st_size
    os.pread(fd, 4096, r.randrange(0, max(size, 1)) & ~4095)
    os.close(fd)
PY
done
for r in 1 2; do
  (for i in $(seq 11 20); do cat "$M/d/f$i" > /dev/null; done) &
done
wait
diff -r "$ZSRC" "$M" || fail "z.cairn: content differs"
umnt "$M"
wait_file "$WORK/zstats" || fail "no stats for z.cairn"
grep -q '^push_chunks [1-9]' "$WORK/zstats" || fail "z.cairn: no chunk pushed"
tsan_clean "z.cairn random and sequential readers"
echo "z.cairn random readers: no reports"

mnt "$M" "$WORK/img.cairn" -o overlay || fail "mount -o overlay"
for w in 1 2 3 4; do
  (dd if=/dev/urandom of="$M/d/w$w" bs=64k count=40 2>/dev/null &&
   cat "$M/d/w$w" "$M/d/f$w" > /dev/null && rm "$M/d/w$w" && printf x >> "$M/e/s$w") &
done
wait
mkdir "$M/posix" || fail "mkdir"
"$PROGS/posix_check" "$M/posix" > "$WORK/posix.out" 2>&1 || { cat "$WORK/posix.out"; fail "POSIX checks"; }
umnt "$M"
tsan_clean "overlay writers"
echo "overlay mount: no reports"
