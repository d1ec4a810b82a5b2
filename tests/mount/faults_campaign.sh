#!/bin/sh
# Fault campaign through FUSE: the device request N after mount fails, for
# N = 1..8 in turn, as EIO, as a short read and persistently, with the cache
# on and off. Each time the application sees the right bytes or EIO (never
# other errors, never wrong bytes), the daemon keeps serving, and once the plan
# is cleared (SIGUSR2) every file and directory reads correctly.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/fault_tree.inc"
mkdir -p "$M"

total=0
for mode in "" ",fault_kind=short" ",fault_persistent" ",cache_size=0"; do
  n=1
  while [ $n -le 8 ]; do
    what="fault_nth=$n$mode"
    "$CAIRN" mount -f "$WORK/img.cairn" "$M" -o "fault_nth=$n$mode" 2>"$WORK/mount.err" &
    pid=$!
    MOUNTS="$M"
    i=0; while ! mountpoint -q "$M" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    mountpoint -q "$M" || fail "$what: mount did not come up: $(cat "$WORK/mount.err")"
    failed=$(read_all "$what")
    total=$((total + failed))
    kill -0 "$pid" || fail "$what: daemon died"
    kill -USR2 "$pid"
    sleep 0.2
    [ "$(read_all "$what cleared")" = 0 ] || fail "$what: reads still fail after the fault cleared"
    diff "$WORK/ls.got" "$WORK/ls.want" || fail "$what: listing differs after the fault cleared"
    umnt "$M" || fail "$what: unmount"
    wait "$pid" || fail "$what: daemon exit status"
    n=$((n + 1))
  done
done
echo "fault campaign: 32 mounts, $total reads failed with EIO, all correct after clearing"
[ $total -gt 0 ] || fail "no fault ever reached the application"
echo "faults_campaign: ok"
