#!/bin/sh
# `cairn mount --empty`: a RAM filesystem through FUSE. The POSIX checks, ENOSPC
# at size= with files intact, concurrent readers and writers, unmount while busy,
# SIGTERM unmounting cleanly, stats on SIGUSR1.
. "$(dirname "$0")/common.inc"

M=$WORK/e
mnt "$M" --empty || fail "mount --empty"
"$PROGS/posix_check" "$M" > "$WORK/posix.out" 2>&1 || { cat "$WORK/posix.out"; fail "POSIX checks on --empty"; }
tail -n 1 "$WORK/posix.out"

# Concurrent writers (each its own file) and readers (a shared file, checked).
head -c 3000000 /dev/urandom > "$WORK/blob"
cp "$WORK/blob" "$M/shared" || fail "copy in"
pids=""
for i in 1 2 3 4; do
  ( for j in 1 2 3 4 5; do
      head -c 500000 "$WORK/blob" > "$M/w$i" || exit 1
      cmp -s "$M/shared" "$WORK/blob" || exit 2
      cmp -s -n 500000 "$M/w$i" "$WORK/blob" || exit 3
    done ) &
  pids="$pids $!"
done
for p in $pids; do wait "$p" || fail "concurrent reader/writer $p"; done
for i in 1 2 3 4; do [ "$(stat -c %s "$M/w$i")" = 500000 ] || fail "w$i size"; done
echo "concurrent readers and writers: ok"

# Unmount while busy: EBUSY, the mount stays and works; lazy unmount then works.
exec 7<"$M/shared"
fusermount3 -u "$M" 2>/dev/null && fail "unmounted while a file was open"
mountpoint -q "$M" || fail "mount gone after a refused unmount"
cmp -s "$M/shared" "$WORK/blob" || fail "data after refused unmount"
exec 7<&-
umnt "$M" || fail "unmount after closing"
mountpoint -q "$M" && fail "still mounted"
echo "unmount while busy: ok"

# ENOSPC at size= with files intact.
mnt "$M" --empty -o size=8M,nr_inodes=1000 || fail "mount size=8M"
"$PROGS/posix_check" "$M" --enospc > "$WORK/enospc.out" 2>&1 || { cat "$WORK/enospc.out"; fail "ENOSPC checks"; }
df "$M" | tail -n 1
umnt "$M"

# Foreground daemon: SIGUSR1 writes stats, SIGTERM unmounts cleanly.
mkdir -p "$M"
"$CAIRN" mount -f --empty -o stats="$WORK/st" "$M" &
pid=$!
MOUNTS="$MOUNTS $M"
i=0; while ! mountpoint -q "$M" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
mountpoint -q "$M" || fail "foreground mount did not come up"
echo x > "$M/f"
kill -USR1 "$pid"
wait_file "$WORK/st" || fail "no stats after SIGUSR1"
grep -q '^ram_inodes [1-9]' "$WORK/st" || fail "stats: $(cat "$WORK/st")"
kill -TERM "$pid"
wait "$pid"; rc=$?
[ $rc -eq 0 ] || fail "daemon exit status $rc after SIGTERM"
mountpoint -q "$M" && fail "still mounted after SIGTERM"
echo "signals: ok"
echo "empty: ok"
