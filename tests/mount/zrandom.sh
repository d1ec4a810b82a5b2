#!/bin/sh
# 4 KiB random reads of a compressed file through the mount (issue 12): a read
# of part of a chunk decompresses all of it, and the daemon pushes the rest into
# the kernel's page cache, so the chunk's other pages never reach the daemon and
# each chunk is decompressed about once; the chunk cache drops what it pushed.
# The same for an uncompressed image: a random read fetches and hashes the
# whole 128 KiB segment around it, and the daemon pushes the rest of the
# segment, so its neighbouring pages are read with no FUSE read and no device
# request; a sequential reader gets no such push.
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
random_run() { # IMAGE WHAT [OPTIONS]: a fresh mount, random_pass, stats in $WORK/stats
  rm -f "$WORK/stats"
  mnt "$M" "$1" -o "stats=$WORK/stats${3:+,$3}" || fail "mount ($2)"
  random_pass "$M" || fail "random 4 KiB reads ($2) differ from the source"
  umnt "$M" || fail "unmount ($2)"
  wait_file "$WORK/stats" || fail "no stats at unmount ($2)"
}

random_run "$WORK/z.cairn" compressed
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
random_run "$WORK/z.cairn" traced "trace=$WORK/trace"
[ -z "$(stat_of push_chunks)" ] || fail "a traced mount pushed chunks"

# Uncompressed: 64 segments of 32 pages.
"$CAIRN" mkfs -q "$WORK/src" "$WORK/p.cairn" || fail "mkfs (uncompressed)"
random_run "$WORK/p.cairn" uncompressed
reads=$(stat_of fuse_image_reads)
pushed=$(stat_of push_chunks)
echo "uncompressed, 2048 random page reads: $reads reached the daemon, $pushed segments pushed"
[ "$reads" -le 1024 ] || fail "$reads of 2048 random page reads of the uncompressed file reached the daemon (the push did not serve the rest of each segment)"
[ "$pushed" -ge 32 ] || fail "only $pushed segments pushed"

# One random page read, then its segment's 31 other pages: once the push has
# stored them (mincore says they are resident), they are read with no FUSE
# read and no device request more. Another engineer's drop_caches can take the
# pages away in between (the machine is shared), so a miss is retried on
# another segment, five at most; without the push the pages never appear.
lo=$("$CAIRN" stat "$WORK/p.cairn" /f | sed -n 's/^ *data: bytes \([0-9]*\)\.\..*/\1/p')
[ -n "$lo" ] || fail "cairn stat gave no data range"
mnt "$M" "$WORK/p.cairn" -o stats="$WORK/stats" || fail "mount (neighbours)"
python3 - "$WORK/src/f" "$M/f" "$lo" "$WORK/stats" $(daemons_of "$M") <<'PY' || fail "neighbouring pages of a random read were not served from the page cache"
import ctypes, mmap, os, signal, sys, time
src, path, lo, stats, pid = open(sys.argv[1], "rb").read(), sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
SEG, PAGE = 128 << 10, 4096
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(path, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)

def live():  # the daemon's counters now (SIGUSR1 writes them)
    if os.path.exists(stats):
        os.unlink(stats)
    os.kill(pid, signal.SIGUSR1)
    for _ in range(600):
        if os.path.exists(stats):
            return dict(l.split()[:2] for l in open(stats) if " " in l)
        time.sleep(0.1)
    sys.exit("no stats after SIGUSR1")

libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]

def resident(off):  # pages of [off, off + SEG) in the page cache (mapped, not touched)
    addr = libc.mmap(None, SEG, mmap.PROT_READ, mmap.MAP_SHARED, fd, off)
    assert addr not in (None, ctypes.c_void_p(-1).value), os.strerror(ctypes.get_errno())
    vec = (ctypes.c_ubyte * (SEG // PAGE))()
    rc = libc.mincore(ctypes.c_void_p(addr), ctypes.c_size_t(SEG), vec)
    libc.munmap(ctypes.c_void_p(addr), ctypes.c_size_t(SEG))
    assert rc == 0, os.strerror(ctypes.get_errno())
    return sum(v & 1 for v in vec)

def read(off):
    if os.pread(fd, PAGE, off) != src[off:off + PAGE]:
        sys.exit("page at %d differs from the source" % off)

for attempt in range(5):
    seg = ((lo + (3 << 20) + attempt * 2 * SEG + SEG - 1) // SEG) * SEG - lo
    read(seg + 5 * PAGE)
    for _ in range(100):
        if resident(seg) == SEG // PAGE:
            break
        time.sleep(0.1)
    else:
        sys.exit("the rest of the segment at %d never reached the page cache" % seg)
    s0 = live()
    for p in range(SEG // PAGE):
        read(seg + p * PAGE)
    s1 = live()
    d = [int(s1[k]) - int(s0[k]) for k in ("fuse_image_reads", "device_requests")]
    print("segment at %d: its 32 pages read with %d FUSE reads, %d device requests" % (seg, d[0], d[1]))
    if d == [0, 0]:
        sys.exit(0)
sys.exit("five segments' pages reached the daemon after their push")
PY
umnt "$M" || fail "unmount (neighbours)"

# A sequential reader: its next window is on its way, nothing is pushed.
rm -f "$WORK/stats"
mnt "$M" "$WORK/p.cairn" -o stats="$WORK/stats" || fail "mount (sequential)"
cmp "$WORK/src/f" "$M/f" || fail "cat of the uncompressed file differs"
umnt "$M" || fail "unmount (sequential)"
wait_file "$WORK/stats" || fail "no stats at unmount (sequential)"
echo "sequential read: $(stat_of push_chunks) segments pushed"
[ "$(stat_of push_chunks)" -le 2 ] || fail "a sequential reader got $(stat_of push_chunks) segments pushed"
echo "ok"
