#!/bin/sh
# Remote images through a real FUSE mount, served by nginx on 127.0.0.1:
# - a mount and its first lookups cost at most 2 requests;
# - the JDK from nginx runs java, and the tree matches the source byte for byte;
# - the primary stops mid-run: its mirror takes over (failovers counted);
# - the origin stops mid-run: files in the disk cache still read, others give
#   EIO (bounded), and the daemon stays up; a mount made with the origin down
#   serves what the cache holds;
# - a remount reads what the disk cache holds without the network;
# - the image replaced on the server mid-mount: EIO, never the new bytes;
# - the disk cache stays within cache_max under a walk of twice its size;
# - a kill -9 mid-fetch, a torn chunk and a stray tmp file leave a cache the
#   next mount uses correctly; two mounts share one cache.
. "$(dirname "$0")/common.inc"
JDK=${JDK:-/usr/lib/jvm/java-17-openjdk-amd64}
[ -x "$JDK/bin/java" ] || skip "no JDK at $JDK"
net_servers nginx python3
bounded() { timeout -k 5 120 "$@"; }

mkdir -p "$NET/www2"
"$CAIRN" mkfs -q "$JDK" "$NET/www/jdk.cairn" || fail "mkfs of the JDK"
cp "$NET/www/jdk.cairn" "$NET/www2/jdk.cairn"
nginx_start web "$NET/www" || fail "nginx"
nginx_start web2 "$NET/www2" || fail "nginx (mirror)"
URL=http://127.0.0.1:$web_PORT/jdk.cairn
URL2=http://127.0.0.1:$web2_PORT/jdk.cairn
DC=$WORK/dc

# 0. A remote mount opens, and answers its first lookups, in at most 2 requests.
M=$WORK/m0
mnt "$M" "$URL" -o stats="$WORK/s0" || fail "mount $URL"
ls "$M" "$M/bin" > /dev/null || fail "ls of the mount"
umnt "$M"
wait_file "$WORK/s0" || fail "no stats"
[ "$(key http_requests "$WORK/s0")" -le 2 ] ||
  fail "mount + ls sent $(key http_requests "$WORK/s0") requests (more than 2)"

# 1. java from the mount, then half the tree; the primary goes away; the rest
#    (and a byte-for-byte comparison of everything) comes from the mirror.
M=$WORK/m1
mnt "$M" "$URL" -o mirror="$URL2",cache_dir="$DC",cache_max=2G,timeout=5s,stats="$WORK/s1" ||
  fail "mount $URL"
bounded "$M/bin/java" -Xshare:auto -version 2>"$WORK/java.out" || fail "java -version from the mount"
grep -q "version" "$WORK/java.out" || fail "java printed no version"
bounded diff -r --no-dereference "$JDK/bin" "$M/bin" || fail "bin/ differs"
nginx_stop web
bounded diff -r --no-dereference "$JDK" "$M" || fail "the mounted JDK differs from the source"
umnt "$M"
wait_file "$WORK/s1" || fail "no stats"
[ "$(key http_failovers "$WORK/s1")" -ge 1 ] || fail "no failover counted: $(grep http_ "$WORK/s1")"
[ "$(key http_failed "$WORK/s1")" -eq 0 ] || fail "reads failed: $(grep http_ "$WORK/s1")"

# 2. A remount from the warm cache: the mirror sends only the head.
M=$WORK/m2
mnt "$M" "$URL2" -o cache_dir="$DC",cache_max=2G,stats="$WORK/s2" || fail "remount"
bounded diff -r --no-dereference "$JDK" "$M" || fail "the remounted JDK differs"
umnt "$M"
wait_file "$WORK/s2" || fail "no stats"
[ "$(key http_requests "$WORK/s2")" -eq 1 ] ||
  fail "a warm remount sent $(key http_requests "$WORK/s2") requests, not 1"

# 3. The origin stops mid-run: cached files read, uncached ones give EIO.
DC3=$WORK/dc3
M=$WORK/m3
mnt "$M" "$URL2" -o cache_dir="$DC3",timeout=2s,retries=2,stats="$WORK/s3" || fail "mount 3"
cat "$M/lib/libjava.so" > /dev/null || fail "read libjava.so"
umnt "$M"
mnt "$M" "$URL2" -o cache_dir="$DC3",timeout=2s,retries=2,stats="$WORK/s3" || fail "mount 3b"
nginx_stop web2
cmp "$JDK/lib/libjava.so" "$M/lib/libjava.so" || fail "a cached file did not read with the origin down"
bounded cat "$M/lib/modules" > /dev/null 2>"$WORK/err" && fail "an uncached file read with the origin down"
grep -q "Input/output error" "$WORK/err" || fail "uncached read: not EIO: $(cat "$WORK/err")"
[ -n "$(daemons_of "$M")" ] || fail "the daemon died"
ls "$M/lib" > /dev/null || fail "the mount stopped answering"
umnt "$M"
# A mount made while the server is down serves what the cache holds.
mnt "$M" "$URL2" -o cache_dir="$DC3",timeout=2s,retries=1 || fail "offline mount"
cmp "$JDK/lib/libjava.so" "$M/lib/libjava.so" || fail "offline mount: a cached file"
cat "$M/lib/modules" > /dev/null 2>&1 && fail "offline mount: an uncached file read"
umnt "$M"
"$CAIRN" info --cache-dir "$DC3" --timeout 2s "$URL2" > /dev/null || fail "offline info"
"$CAIRN" info --cache-dir "$WORK/empty-dc" --timeout 2s "$URL2" 2>/dev/null &&
  fail "an offline open with nothing cached worked"

# 4. The image is replaced on the server while mounted: EIO, never new bytes.
mkdir -p "$WORK/alt/lib"
head -c 5000000 /dev/urandom > "$WORK/alt/lib/modules"
cp "$JDK/release" "$WORK/alt/"
nginx_start web3 "$NET/www" || fail "nginx 3"
URL3=http://127.0.0.1:$web3_PORT/jdk.cairn
M=$WORK/m4
mnt "$M" "$URL3" -o timeout=2s || fail "mount 4"
cmp "$JDK/release" "$M/release" || fail "release before the change"
"$CAIRN" mkfs -q "$WORK/alt" "$NET/www/new.cairn" || fail "mkfs alt"
mv "$NET/www/new.cairn" "$NET/www/jdk.cairn"
bounded cat "$M/lib/modules" > "$WORK/got" 2>"$WORK/err" && fail "a changed image read on"
grep -q "Input/output error" "$WORK/err" || fail "change: not EIO: $(cat "$WORK/err")"
n=$(wc -c < "$WORK/got")
head -c "$n" "$JDK/lib/modules" | cmp - "$WORK/got" || fail "bytes of the new image were returned"
umnt "$M"
nginx_stop web3

# 5. The bound: a 48 MB image walked twice through a 24 MB cache.
mkdir -p "$WORK/big" "$NET/www4"
for i in 1 2 3 4 5 6; do head -c 8000000 /dev/urandom > "$WORK/big/f$i"; done
"$CAIRN" mkfs -q "$WORK/big" "$NET/www4/big.cairn" || fail "mkfs big"
nginx_start web4 "$NET/www4" || fail "nginx 4"
URL4=http://127.0.0.1:$web4_PORT/big.cairn
DC5=$WORK/dc5
MAX=$((24 * 1024 * 1024))
M=$WORK/m5
for pass in 1 2; do
  mnt "$M" "$URL4" -o cache_dir="$DC5",cache_max=$MAX,stats="$WORK/s5" || fail "mount 5"
  for i in 1 2 3 4 5 6; do
    cmp "$WORK/big/f$i" "$M/f$i" || fail "f$i differs (pass $pass)"
    used=$(find "$DC5" -type f ! -name '.*' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
    # cache_max plus one request (1 MiB and the chunk headers)
    [ "$used" -le $((MAX + 1024 * 1024 + 4096)) ] || fail "disk cache at $used bytes, over $MAX"
  done
  umnt "$M"
done
wait_file "$WORK/s5" || fail "no stats"
[ "$(key diskcache_evicted "$WORK/s5")" -ge 1 ] || fail "nothing was evicted"

# 6. kill -9 mid-fetch, then damage: the next mount reads the right bytes.
# 1 MB/s per connection: the 48 MB take at least 12 s, the kill comes after 2.
fault_start slow "$NET/www4/big.cairn" slow=1000000 || fail "fault server"
SURL=http://127.0.0.1:$slow_PORT/big.cairn
DC6=$WORK/dc6
M=$WORK/m6
mnt "$M" "$SURL" -o cache_dir="$DC6",timeout=30s || fail "mount 6"
cat "$M"/f* > /dev/null 2>&1 &
reader=$!
sleep 2
kill -0 $reader 2>/dev/null || fail "the reader finished before the kill"
kill_daemon "$M"
wait $reader 2>/dev/null
fault_stop slow
key=$(ls "$DC6" | grep -v '^\.' | head -n 1)
[ -n "$key" ] || fail "the killed mount stored nothing"
chunks=$(ls "$DC6/$key" | grep -v '^tmp' | head -n 2)
[ -n "$chunks" ] || fail "no chunk was stored before the kill"
first=$(echo "$chunks" | head -n 1)
truncate -s 1000 "$DC6/$key/$first"         # torn by a crash
last=$(echo "$chunks" | tail -n 1)
printf 'XXXX' | dd of="$DC6/$key/$last" bs=1 seek=100 conv=notrunc 2>/dev/null
echo junk > "$DC6/$key/tmp.99999.0000000000000000"
mnt "$M" "$URL4" -o cache_dir="$DC6",stats="$WORK/s6" || fail "mount after kill -9"
for i in 1 2 3 4 5 6; do cmp "$WORK/big/f$i" "$M/f$i" || fail "f$i differs after kill -9"; done
umnt "$M"
wait_file "$WORK/s6" || fail "no stats"
[ "$(key diskcache_torn "$WORK/s6")" -ge 1 ] || fail "torn chunks were not noticed"
[ ! -e "$DC6/$key/tmp.99999.0000000000000000" ] || fail "a stray tmp file survived"

# 7. Two mounts share one cache, in parallel.
DC7=$WORK/dc7
mnt "$WORK/m7a" "$URL4" -o cache_dir="$DC7",cache_max=$MAX || fail "mount 7a"
mnt "$WORK/m7b" "$URL4" -o cache_dir="$DC7",cache_max=$MAX || fail "mount 7b"
( for i in 1 2 3 4 5 6; do cmp "$WORK/big/f$i" "$WORK/m7a/f$i" || echo "f$i"; done ) \
  > "$WORK/7a.out" 2>&1 &
walker=$!
for i in 6 5 4 3 2 1; do cmp "$WORK/big/f$i" "$WORK/m7b/f$i" || fail "shared cache: f$i differs"; done
wait $walker
[ -s "$WORK/7a.out" ] && fail "shared cache, other mount: $(cat "$WORK/7a.out")"
umnt "$WORK/m7a"
umnt "$WORK/m7b"
used=$(find "$DC7" -type f ! -name '.*' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
[ "$used" -le $((MAX + 2 * 1024 * 1024 + 8192)) ] || fail "shared cache at $used bytes, over $MAX"
# 7. A server that never answers: the mount fails after timeout= with one line
# naming the URL once (it also said why URL.profile was not used, the same
# timeout again, and each named its URL twice).
fault_start hang "$NET/www4/big.cairn" hang || fail "fault server (hang)"
HURL=http://127.0.0.1:$hang_PORT/big.cairn
M=$WORK/m7
if mnt "$M" "$HURL" -o timeout=1s 2>"$WORK/err7"; then fail "mounted from a server that never answers"; fi
[ "$(wc -l < "$WORK/err7")" -eq 1 ] || fail "hang: $(cat "$WORK/err7")"
grep -qx "cairn mount: $HURL: Input/output error: Operation timed out after [0-9]* milliseconds with 0 bytes received" \
  "$WORK/err7" || fail "hang: $(cat "$WORK/err7")"
mountpoint -q "$M" && fail "hang: something is mounted"

echo "remote mount: all passed"
