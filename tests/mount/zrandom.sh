#!/bin/sh
# 4 KiB random reads of a compressed file through the mount (issue 12): a read
# of part of a chunk decompresses all of it, and the daemon pushes the rest into
# the kernel's page cache, so the chunk's other pages never reach the daemon and
# each chunk is decompressed about once; the chunk cache drops what it pushed.
# Every page is read once in a shuffled order (POSIX_FADV_RANDOM, as fio does:
# no kernel read-ahead) and compared with the source. Counts, not times.
. "$(dirname "$0")/common.inc"

mkdir -p "$WORK/src"
python3 - "$WORK/src/f" <<'PY'
import random, sys
r = random.Random(12)
# 8 MiB that compresses (runs of words) but not to nothing.
words = [bytes(r.choice(b"abcdefghijklmnop") for _ in range(r.randint(3, 9))) for _ in range(500)]
out, n = [], 0
while n < 8 << 20:
    w = r.choice(words) + b" "
    out.append(w)
    n += len(w)
open(sys.argv[1], "wb").write(b"".join(out)[:8 << 20])
PY
"$CAIRN" mkfs -q -z zstd --chunk-size 64K "$WORK/src" "$WORK/z.cairn" || fail "mkfs -z zstd"

random_pass() { # MOUNT: reads every page of f once, shuffled; 0 if all match
  python3 - "$WORK/src/f" "$1/f" <<'PY'
import os, random, sys
src = open(sys.argv[1], "rb").read()
fd = os.open(sys.argv[2], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
pages = list(range(len(src) // 4096))
random.Random(7).shuffle(pages)
bad = sum(os.pread(fd, 4096, p * 4096) != src[p * 4096:(p + 1) * 4096] for p in pages)
os.close(fd)
print(len(pages), "pages,", bad, "differ")
sys.exit(1 if bad else 0)
PY
}

stat_of() { sed -n "s/^$1 //p" "$WORK/stats"; }

M=$WORK/m
mnt "$M" "$WORK/z.cairn" -o stats="$WORK/stats" || fail "mount"
random_pass "$M" || fail "random 4 KiB reads of the compressed file differ from the source"
umnt "$M" || fail "unmount"
wait_file "$WORK/stats" || fail "no stats at unmount"
reads=$(stat_of fuse_image_reads)
misses=$(stat_of chunk_misses)
pushed=$(stat_of push_chunks)
echo "2048 random page reads: $reads reached the daemon, $misses chunk loads, $pushed chunks pushed"
# 128 chunks of 16 pages: one read per chunk reaches the daemon, and some
# more that the kernel sent before the push stored their pages (or after
# something dropped the page cache: the machine is shared); without the push
# all 2048 do. A dropped chunk is loaded again only for such a read.
[ "$reads" -le 1024 ] || fail "$reads of 2048 random page reads reached the daemon (the push did not serve the rest of each chunk)"
[ "$misses" -le 384 ] || fail "$misses chunk loads for 128 chunks"
[ "$pushed" -ge 64 ] || fail "only $pushed chunks pushed"
# Pushed chunks are delivered, so dropped: the cache ends nearly empty.
res=$(stat_of chunk_resident_bytes)
[ "$res" -le $((2 << 20)) ] || fail "the chunk cache holds $res bytes after pushing everything"

# A traced mount pushes nothing (the trace must see the program's reads), and
# still reads right.
rm -f "$WORK/stats"
mnt "$M" "$WORK/z.cairn" -o trace="$WORK/trace",stats="$WORK/stats" || fail "mount with trace"
random_pass "$M" || fail "random reads of a traced mount differ"
umnt "$M" || fail "unmount traced"
wait_file "$WORK/stats" || fail "no stats at unmount (traced)"
[ -z "$(stat_of push_chunks)" ] || fail "a traced mount pushed chunks"
echo "ok"
