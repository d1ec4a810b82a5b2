#!/bin/sh
# Request size of a remote image (nginx on 127.0.0.1): a remote mount's device
# requests default to 4 MiB (lib/stack/stack.c, REMOTE_MAX_IO), so the hot
# prefix of an ordered image, 12 MiB here, is fetched in 3 requests beside the
# mount's own, not in 12 of 1 MiB; -o max_io= still sets any size. Sequential
# reads keep 1 MiB units (lib/cache/readahead.c, ra_unit). Requests are counted
# (stats=), never timed.
. "$(dirname "$0")/common.inc"
net_servers nginx python3

SRC=$WORK/src
mkdir -p "$SRC"
head -c 12582912 /dev/urandom > "$SRC/hot.bin"
head -c 16777216 /dev/urandom > "$SRC/cold.bin"
"$CAIRN" mkfs -q "$SRC" "$WORK/plain.cairn" || fail "mkfs"
M=$WORK/m
# The order: a traced run that reads hot.bin only.
mnt "$M" "$WORK/plain.cairn" -o trace="$WORK/order" || fail "traced mount"
cat "$M/hot.bin" > /dev/null || fail "traced read"
umnt "$M"
wait_file "$WORK/order" || fail "no trace"
"$CAIRN" mkfs -q --order "$WORK/order" "$SRC" "$NET/www/img.cairn" || fail "mkfs --order"
nginx_start web "$NET/www" || fail "nginx"
URL=http://127.0.0.1:$web_PORT/img.cairn

work() { cmp "$SRC/hot.bin" "$M/hot.bin" || fail "hot.bin differs"; }

# 1. The default: the 12 MiB prefix in 4 MiB requests (3, plus at most one
#    more where the prefix does not start on a 4 MiB boundary), beside the
#    mount's head and metadata requests.
run_workload big "$URL" prefetch,noprofile
n=$(key http_requests "$WORK/big.stats")
[ "$n" -le 7 ] || fail "the hot prefix took $n requests (more than 7: not 4 MiB ones)"

# 2. -o max_io=1M: 1 MiB requests again, at least 12 of them.
run_workload small "$URL" prefetch,noprofile,max_io=1M
n1=$(key http_requests "$WORK/small.stats")
[ "$n1" -ge 12 ] || fail "max_io=1M: $n1 requests for a 12 MiB prefix (fewer than 12)"

# 3. The first MiB of a 16 MiB file outside the prefix: streams are rounded
#    to 1 MiB units, not to max_io, so a short read does not pull 4 MiB pieces
#    of the file after it (the kernel's own read-ahead comes on top).
work() {
  dd if="$M/cold.bin" of="$WORK/head" bs=1M count=1 2>/dev/null || fail "read cold.bin"
  head -c 1048576 "$SRC/cold.bin" | cmp - "$WORK/head" || fail "cold.bin differs"
}
run_workload seq "$URL" noprofile
b=$(key http_bytes "$WORK/seq.stats")
[ "$b" -le 4194304 ] || fail "1 MiB read from a 16 MiB file fetched $b bytes"
echo "ok: prefix $n requests (max_io=1M: $n1), 1 MiB read fetched $b bytes"
