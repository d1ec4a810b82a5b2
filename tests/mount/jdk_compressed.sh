#!/bin/sh
# The JDK compressed (mkfs -z zstd, and lz4hc laid out by a trace with -o
# prefetch): every file byte for byte against the source through the mount,
# java -version and a Hello class run from it, the chunk cache within its budget,
# and -o prefetch decompressing the hot prefix before anything reads it.
. "$(dirname "$0")/common.inc"
JDK=${JDK:-/usr/lib/jvm/java-17-openjdk-amd64}
[ -x "$JDK/bin/java" ] || skip "no JDK at $JDK"
command -v javac >/dev/null || skip "javac not installed"

mkdir -p "$WORK/src" "$WORK/cls"
cat > "$WORK/src/Hello.java" <<'JAVA'
public class Hello { public static void main(String[] a) { System.out.println("Hello from cairn"); } }
JAVA
javac -d "$WORK/cls" "$WORK/src/Hello.java" || fail "javac"

same_tree() { # MOUNT: every regular file and symlink as in the JDK
  python3 - "$JDK" "$1" <<'PY'
import os, stat, sys
src, mnt = sys.argv[1], sys.argv[2]
bad = n = 0
for root, dirs, files in os.walk(src):
    for name in files:
        a = os.path.join(root, name)
        b = os.path.join(mnt, os.path.relpath(a, src))
        sa = os.lstat(a)
        if stat.S_ISLNK(sa.st_mode):
            ok = os.readlink(a) == os.readlink(b)
        else:
            with open(a, 'rb') as fa, open(b, 'rb') as fb:
                ok = fa.read() == fb.read()
        n += 1
        if not ok:
            bad += 1
            print("DIFF", a)
print("compared", n, "files,", bad, "differences")
sys.exit(1 if bad else 0)
PY
}

run_java() { # MOUNT
  "$1/bin/java" -version 2>"$WORK/ver" || fail "java -version from $1"
  grep -q "openjdk version" "$WORK/ver" || fail "java -version output: $(cat "$WORK/ver")"
  out=$("$1/bin/java" -cp "$WORK/cls" Hello) || fail "java Hello from $1"
  [ "$out" = "Hello from cairn" ] || fail "Hello printed '$out'"
}

"$CAIRN" mkfs -q -z zstd "$JDK" "$WORK/z.cairn" || fail "mkfs -z zstd"
"$CAIRN" info "$WORK/z.cairn" | grep -q "^compression: *zstd" || fail "not compressed"
M=$WORK/m
mnt "$M" "$WORK/z.cairn" -o chunk_cache=8M,stats="$WORK/stats" || fail "mount"
run_java "$M"
same_tree "$M" || fail "the compressed mount differs from the source"
umnt "$M" || fail "unmount"
wait_file "$WORK/stats" || fail "no stats at unmount"
grep -q '^chunk_misses [1-9]' "$WORK/stats" || fail "stats without chunk counters"
res=$(sed -n 's/^chunk_resident_bytes //p' "$WORK/stats")
[ "$res" -le $((8 << 20)) ] || fail "chunk cache holds $res bytes over its 8M budget"

# A traced run lays out an lz4hc image; its mount with prefetch pushes
# decompressed hot pages, and the program still sees the same bytes.
mnt "$WORK/t" "$WORK/z.cairn" -o trace="$WORK/trace" || fail "trace mount"
run_java "$WORK/t"
umnt "$WORK/t" || fail "unmount trace"
wait_file "$WORK/trace" || fail "no trace written"
"$CAIRN" mkfs -q -z lz4hc --order "$WORK/trace" "$JDK" "$WORK/o.cairn" || fail "mkfs --order -z lz4hc"
"$CAIRN" info "$WORK/o.cairn" | grep -q "^hot prefix: *[1-9]" || fail "no hot prefix"
# -o prefetch decompresses the hot prefix on the read-ahead workers at mount,
# before any file is opened: chunk_readahead grows with nothing reading.
mkdir -p "$WORK/h"
MOUNTS="$MOUNTS $WORK/h"
"$CAIRN" mount -f -o prefetch,stats="$WORK/hstats" "$WORK/o.cairn" "$WORK/h" &
hpid=$!
i=0; while ! mountpoint -q "$WORK/h" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
mountpoint -q "$WORK/h" || fail "prefetch mount (foreground) did not come up"
ahead=0; i=0
while [ "${ahead:-0}" -eq 0 ] && [ $i -lt 300 ]; do
  rm -f "$WORK/hstats"
  kill -USR1 "$hpid"
  wait_file "$WORK/hstats" || fail "no stats after SIGUSR1"
  ahead=$(sed -n 's/^chunk_readahead //p' "$WORK/hstats")
  [ "${ahead:-0}" -gt 0 ] || sleep 0.1
  i=$((i + 1))
done
[ "${ahead:-0}" -gt 0 ] || fail "prefetch decompressed nothing of the hot prefix in 30 s"
reads=$(sed -n 's/^fuse_image_reads //p' "$WORK/hstats")
[ "${reads:-1}" -eq 0 ] || fail "$reads FUSE reads before any program ran"
umnt "$WORK/h" || fail "unmount of the foreground prefetch mount"
wait "$hpid" || fail "foreground prefetch daemon failed"
echo "prefetch decompressed $ahead hot chunks with nothing reading"

mnt "$WORK/p" "$WORK/o.cairn" -o prefetch,stats="$WORK/pstats" || fail "prefetch mount"
run_java "$WORK/p"
same_tree "$WORK/p" || fail "the ordered compressed mount differs from the source"
umnt "$WORK/p" || fail "unmount prefetch"
wait_file "$WORK/pstats" || fail "no stats at unmount"
grep -q '^push_bytes [1-9]' "$WORK/pstats" || fail "prefetch pushed nothing: $(grep push "$WORK/pstats")"
echo "jdk_compressed: ok"
