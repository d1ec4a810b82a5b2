#!/bin/sh
# Learned profiles of remote images, served by nginx on 127.0.0.1:
# - with cache_dir=, the first mount traces into <cache dir>/<key>.profile and
#   the second pushes it (stats say so), with no profile option, reading it from
#   the disk cache that holds it all (profile_held) rather than prefetching it;
# - noprofile turns that off; an explicit prefetch= or learn= wins;
# - a stale profile (another image's) is harmless, and is cleaned at save;
# - a kill -9 leaves the profile as it was, and the leftovers of a killed run
#   (its trace, a save's temporary file) are swept by the next;
# - two mounts sharing the cache dir both add to the profile;
# - URL.profile on the server is used (one request; a 404 costs one request and
#   says nothing), from a mirror when the primary is down, and seeds the
#   profile learnt in the cache dir.
# Requests are counted (stats=, nginx's access log), never timed.
. "$(dirname "$0")/common.inc"
net_servers nginx python3

SRC=$WORK/src
mkdir -p "$SRC/d" "$SRC/lib"
for i in 00 01 02 03 04 05 06 07 08 09 10 11 12 13 14 15 16 17 18 19; do
  head -c 100000 /dev/urandom > "$SRC/d/f$i"
done
head -c 2000000 /dev/urandom > "$SRC/lib/big.so"
"$CAIRN" mkfs -q "$SRC" "$NET/www/img.cairn" || fail "mkfs"
nginx_start web "$NET/www" || fail "nginx"
URL=http://127.0.0.1:$web_PORT/img.cairn
LOG=$NET/web/access.log
M=$WORK/m
work() {
  for i in 00 03 06 09 12 15 18; do cat "$M/d/f$i" > /dev/null || fail "read f$i"; done
  dd if="$M/lib/big.so" of=/dev/null bs=64k skip=10 count=2 2>/dev/null || fail "read big.so"
}
# run NAME CACHE_DIR [OPTS]: mount, the workload, unmount; counters in $WORK/NAME.stats
run() {
  _o=${2:+cache_dir=$2}
  [ -z "${3:-}" ] || _o="${_o:+$_o,}$3"
  run_workload "$1" "$URL" "$_o"
}
profile_reqs() { grep -c '^/img.cairn.profile ' "$LOG"; }

# 1. First mount with a disk cache: traces, asks for URL.profile once (404).
DC=$WORK/dc
before=$(profile_reqs)
run first "$DC"
grep -q '^profile_records' "$WORK/first.stats" && fail "the first mount prefetched a profile"
[ "$(profile_reqs)" -eq $((before + 1)) ] || fail "URL.profile asked $(($(profile_reqs) - before)) times, not once"
grep '^/img.cairn.profile ' "$LOG" | tail -1 | grep -q ' 404 ' || fail "URL.profile: not a 404"
P=$(ls "$DC"/*.profile 2>/dev/null)
[ -n "$P" ] && [ -s "$P" ] || fail "no profile learnt in the cache dir: $(ls "$DC")"
grep -q "^/d/f00 0 " "$P" || fail "profile lacks the first file: $(head -3 "$P")"
grep -q "^/d/f01 " "$P" && fail "profile holds a file nobody read"
cp "$P" "$WORK/first.profile"

# 2. The second mount, same URL and cache dir, no profile option: pushes the
#    profile. The disk cache holds all its data, more than a quarter of the
#    cache's budget (1 MiB here, for a profile of 0.8 MiB), so the push reads it
#    from there: not prefetched at mount and held in memory (Java Hello: 54 MiB
#    daemon RSS against 20, and a slower run; docs/bench/remote13.md).
run second "$DC" cache_size=1M
[ "$(key profile_records "$WORK/second.stats")" -gt 0 ] || fail "second mount: profile not used"
[ "$(key profile_missing "$WORK/second.stats")" -eq 0 ] || fail "second mount: paths missing"
[ "$(key push_bytes "$WORK/second.stats")" -gt 0 ] || fail "second mount: nothing pushed"
[ "$(key profile_held "$WORK/second.stats")" = 1 ] || fail "second mount: held profile prefetched"
cmp "$P" "$WORK/first.profile" || fail "the same workload grew the profile"
# The same profile in an empty cache dir: it cuts the network requests.
DCP=$WORK/dcp; DCN=$WORK/dcn
mkdir -p "$DCP"; cp "$P" "$DCP/"
run noprof_cold "$DCN" noprofile
run prof_cold "$DCP"
[ "$(key profile_held "$WORK/prof_cold.stats")" = 0 ] || fail "empty disk cache: profile not prefetched"
[ "$(key push_bytes "$WORK/prof_cold.stats")" -gt 0 ] || fail "empty disk cache: nothing pushed"
plain=$(key http_requests "$WORK/noprof_cold.stats"); prof=$(key http_requests "$WORK/prof_cold.stats")
echo "http requests, empty disk cache: $plain without a profile, $prof with the learnt one"
[ "$prof" -lt "$plain" ] || fail "the learnt profile did not cut requests ($plain -> $prof)"
grep -q '^profile_records' "$WORK/noprof_cold.stats" && fail "noprofile still used a profile"
ls "$DCN" | grep -q '\.profile' && fail "noprofile learnt a profile: $(ls "$DCN")"

# 3. noprofile: no profile used, none asked for, the learnt one untouched.
before=$(profile_reqs)
run noprof "$DC" noprofile
grep -q '^profile_records' "$WORK/noprof.stats" && fail "noprofile used the cache dir's profile"
# With every byte the profile names in the disk cache, prefetching it asks the
# network for nothing more than a warm mount without it: no gap between two
# cached pieces is filled from the server (a prefetch run mixing cached and
# uncached segments makes the cached ones wait for a round trip).
warm=$(key http_requests "$WORK/noprof.stats"); warmp=$(key http_requests "$WORK/second.stats")
[ "$warmp" -le "$warm" ] || fail "warm disk cache: $warmp http requests with the learnt profile, $warm without"
[ "$(profile_reqs)" -eq "$before" ] || fail "noprofile asked for URL.profile"
cmp "$P" "$WORK/first.profile" || fail "noprofile changed the profile"

# 4. An explicit prefetch= or learn= wins over the cache dir's profile.
grep '^/d/f01 ' "$WORK/first.profile" > /dev/null
printf '/d/f01\n' > "$WORK/other"
run explicit "$DC" "prefetch=$WORK/other"
[ "$(key profile_records "$WORK/explicit.stats")" -eq 1 ] || fail "prefetch= did not win"
cmp "$P" "$WORK/first.profile" || fail "prefetch= mount changed the learnt profile"
run explicit_learn "$DC" "learn=$WORK/mine.profile"
[ -s "$WORK/mine.profile" ] || fail "learn= wrote no profile of its own"
grep -q '^profile_records' "$WORK/explicit_learn.stats" && fail "learn= (absent) prefetched the cache dir's"
cmp "$P" "$WORK/first.profile" || fail "learn= mount changed the learnt profile"

# 5. A stale profile (another image's paths, ranges past the end, garbage):
#    harmless, and the save keeps only what names this image.
{ sed 's|^/d/|/gone/|' "$WORK/first.profile"; echo "/lib/big.so 999999999 4096";
  head -c 2000 /dev/urandom | tr -d '\000'; echo; } > "$P"
mnt "$M" "$URL" -o "cache_dir=$DC,stats=$WORK/stale.stats" || fail "stale profile refused"
diff -r "$SRC" "$M" || fail "content differs under a stale profile"
umnt "$M"
wait_file "$WORK/stale.stats" || fail "no stats (stale)"
[ "$(key profile_missing "$WORK/stale.stats")" -gt 0 ] || fail "stale paths not counted"
grep -q '^/gone/' "$P" && fail "the stale paths were saved again"
grep -q '^/d/f01 0 ' "$P" || fail "the stale run's reads were not learnt"

# 6. kill -9 of a learning daemon leaves the profile as it was; a killed save's
#    temporary file and the killed run's trace are swept by the next run.
cp "$P" "$WORK/before.profile"
mnt "$M" "$URL" -o "cache_dir=$DC" || fail "mount (kill)"
work; cat "$M/lib/big.so" > /dev/null
kill_daemon "$M"
cmp "$P" "$WORK/before.profile" || fail "profile changed by a killed daemon"
ls "$DC" | grep -q '\.profile\.trace\.' || fail "the killed run left no trace (test is stale)"
head -c 100 "$P" > "$P.AbC123" # what a save killed before its rename leaves
run after_kill "$DC"
ls "$DC" | grep -q '\.profile\.' && fail "leftovers not swept: $(ls "$DC")"
cmp "$P" "$WORK/before.profile" || fail "profile changed by a run that read nothing new"
[ "$(key profile_records "$WORK/after_kill.stats")" -gt 0 ] || fail "profile not used after a kill"

# 7. Two mounts sharing the cache dir, each reading other files: both are learnt.
M2=$WORK/m2
mnt "$M" "$URL" -o "cache_dir=$DC" || fail "mount A"
mnt "$M2" "$URL" -o "cache_dir=$DC" || fail "mount B"
cat "$M/d/f04" "$M2/d/f05" > /dev/null || fail "reads of A and B"
umnt "$M"; umnt "$M2"
grep -q '^/d/f04 0 ' "$P" || fail "mount A's read was lost"
grep -q '^/d/f05 0 ' "$P" || fail "mount B's read was lost"
head -n "$(wc -l < "$WORK/before.profile")" "$P" | cmp - "$WORK/before.profile" ||
  fail "sharing reordered the profile"

# 8. URL.profile shipped beside the image: used with and without a disk cache,
#    in one request, and it seeds the profile learnt in an empty cache dir.
cp "$WORK/first.profile" "$NET/www/img.cairn.profile"
before=$(profile_reqs)
run shipped "" ""
[ "$(key profile_shipped "$WORK/shipped.stats")" = 1 ] || fail "URL.profile not used"
[ "$(key profile_records "$WORK/shipped.stats")" -gt 0 ] || fail "URL.profile: no records"
[ "$(key push_bytes "$WORK/shipped.stats")" -gt 0 ] || fail "URL.profile: nothing pushed"
[ "$(key profile_shipped_requests "$WORK/shipped.stats")" -eq 1 ] || fail "URL.profile took more than one request"
DC2=$WORK/dc2
run shipped_dc "$DC2"
[ "$(key profile_shipped "$WORK/shipped_dc.stats")" = 1 ] || fail "URL.profile not used with a cache dir"
cmp "$(ls "$DC2"/*.profile)" "$WORK/first.profile" || fail "the learnt profile does not start from URL.profile"
# Once learnt, the cache dir's profile is the one used.
run learnt_dc "$DC2"
[ "$(key profile_shipped "$WORK/learnt_dc.stats")" = 0 ] || fail "URL.profile used over the learnt one"
[ "$(key profile_records "$WORK/learnt_dc.stats")" -gt 0 ] || fail "learnt profile not used"
rm -f "$NET/www/img.cairn.profile"

# 9. With the primary down, URL.profile comes from the mirror, as the image does.
mkdir -p "$NET/www2"
cp "$NET/www/img.cairn" "$NET/www2/"; cp "$WORK/first.profile" "$NET/www2/img.cairn.profile"
nginx_start web2 "$NET/www2" || fail "nginx (mirror)"
nginx_stop web
mnt "$M" "$URL" -o "mirror=http://127.0.0.1:$web2_PORT/img.cairn,timeout=5s,stats=$WORK/mirror.stats" ||
  fail "mount with the primary down"
work
umnt "$M"
wait_file "$WORK/mirror.stats" || fail "no stats (mirror)"
[ "$(key profile_shipped "$WORK/mirror.stats")" = 1 ] || fail "URL.profile not taken from the mirror"
nginx_start web "$NET/www" || fail "nginx (again)"
URL=http://127.0.0.1:$web_PORT/img.cairn

# 10. A remote mount still answers its first lookups after at most 2 requests.
mnt "$M" "$URL" -o "cache_dir=$WORK/dc3,stats=$WORK/rt.stats" || fail "mount (round trips)"
ls "$M" "$M/d" > /dev/null || fail "ls"
umnt "$M"
wait_file "$WORK/rt.stats" || fail "no stats (round trips)"
[ "$(key http_requests "$WORK/rt.stats")" -le 2 ] || fail "mount + ls sent $(key http_requests "$WORK/rt.stats") requests"
echo "remote_profile: ok"
