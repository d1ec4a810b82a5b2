#!/bin/sh
# A learned profile of a remote image (no rebuild, no disk cache) prefetched
# with vectored reads: nginx on 127.0.0.1 gets multi-range GETs (its access log
# shows them), the workload reads the right bytes, and the profiled mount asks
# the server for fewer requests than merged runs need (a server with
# max_ranges 1, which answers a multi-range GET with the whole file: cairn
# falls back to runs there) and fewer than the profile has scattered pieces.
# Over an empty disk cache the same: its vectored read asks the server once for
# what it lacks; warm, the profile costs the server nothing (no multi-range
# question either).
# Requests are counted (stats=, nginx's access log), never timed.
. "$(dirname "$0")/common.inc"
net_servers nginx python3

SRC=$WORK/src
mkdir -p "$SRC/d"
i=10
while [ $i -lt 70 ]; do head -c 100000 /dev/urandom > "$SRC/d/f$i"; i=$((i + 1)); done
"$CAIRN" mkfs -q "$SRC" "$NET/www/img.cairn" || fail "mkfs"
nginx_start multi "$NET/www" || fail "nginx"
nginx_start single "$NET/www" "max_ranges 1;" || fail "nginx (max_ranges 1)"
M=$WORK/m
# Every fourth file, last first: scattered pieces of the image, out of order.
FILES="66 62 58 54 50 46 42 38 34 30 26 22 18 14 10"
work() {
  for f in $FILES; do cmp "$M/d/f$f" "$SRC/d/f$f" || fail "f$f differs"; done
}
run_workload trace "http://127.0.0.1:$multi_PORT/img.cairn" "trace=$WORK/t"
[ -s "$WORK/t" ] || fail "no trace"
# Both at 1 MiB requests, the vectors' cap: remote images default to 4 MiB
# (max_io), where runs carry their gaps in fewer, larger requests.
run_workload vec "http://127.0.0.1:$multi_PORT/img.cairn" "prefetch=$WORK/t,max_io=1M"
run_workload runs "http://127.0.0.1:$single_PORT/img.cairn" "prefetch=$WORK/t,max_io=1M"
vec=$(key http_requests "$WORK/vec.stats"); runs=$(key http_requests "$WORK/runs.stats")
multi=$(awk '$4 ~ /,/' "$NET/multi/access.log" | wc -l)
echo "http requests with the profile: $vec with multi-range GETs ($multi of them), $runs with runs"
[ "$multi" -gt 0 ] || fail "no multi-range GET reached nginx: $(tail -3 "$NET/multi/access.log")"
[ "$vec" -lt "$runs" ] || fail "vectored prefetch did not cut requests ($runs -> $vec)"
# 15 files apart, each its own run: vectors of 8 segments carry them in a few.
[ "$vec" -le 8 ] || fail "vectored prefetch: $vec requests for 15 scattered files"
[ "$(key device_errors "$WORK/vec.stats" 2>/dev/null || echo 0)" = 0 ] || fail "device errors"
# The same over a disk cache: cold, one GET per vector; warm, nothing but the
# open's request.
U=http://127.0.0.1:$multi_PORT/img.cairn
run_workload dc_cold "$U" "prefetch=$WORK/t,cache_dir=$WORK/dc"
run_workload dc_warm "$U" "prefetch=$WORK/t,cache_dir=$WORK/dc"
cold=$(key http_requests "$WORK/dc_cold.stats"); warm=$(key http_requests "$WORK/dc_warm.stats")
echo "http requests over a disk cache: $cold cold, $warm warm"
[ "$cold" -le 8 ] || fail "vectored prefetch over an empty disk cache: $cold requests"
[ "$warm" -le 1 ] || fail "warm disk cache: $warm requests (more than the open's)"
