#!/bin/sh
# Fault campaign at the http layer, in the style of faults_campaign.sh: the
# fault server (tests/net/faultserver.py) answers every Nth request with a 503, a
# reset connection or a short body, for N = 2 and 3. Without retries each read of
# the mount gives the right bytes or EIO (never other errors, never wrong
# bytes) and the daemon keeps serving; once the server behaves, everything
# reads right. With the default retries the application sees no error at all.
. "$(dirname "$0")/common.inc"
net_servers python3
. "$(dirname "$0")/fault_tree.inc"

fault_start flt "$WORK/img.cairn" || fail "fault server"
URL=http://127.0.0.1:$flt_PORT/img.cairn
total=0
mounts=0
for kind in error reset short; do
  for n in 2 3; do
    for retries in 0 default; do
      what="$kind=$n retries=$retries"
      opts="timeout=3s,cache_size=256K,segment=64K,max_io=64K"
      [ $retries = 0 ] && opts="$opts,retries=0"
      rm -f "$NET/flt/pid.mode"
      mnt "$M" "$URL" -o "$opts" || fail "$what: mount"
      echo "$kind=$n" > "$NET/flt/pid.mode"   # faults start after the open
      failed=$(read_all "$what")
      [ $retries = default ] && [ "$failed" != 0 ] &&
        fail "$what: $failed reads failed although retries were on"
      total=$((total + failed))
      [ -n "$(daemons_of "$M")" ] || fail "$what: daemon died"
      rm -f "$NET/flt/pid.mode"
      [ "$(read_all "$what cleared")" = 0 ] || fail "$what: reads still fail after the fault cleared"
      diff "$WORK/ls.got" "$WORK/ls.want" || fail "$what: listing differs after the fault cleared"
      umnt "$M" || fail "$what: unmount"
      mounts=$((mounts + 1))
    done
  done
done
echo "remote fault campaign: $mounts mounts, $total reads failed with EIO, all correct after clearing"
[ $total -gt 0 ] || fail "no fault ever reached the application"
