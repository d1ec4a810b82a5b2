#!/bin/sh
# Hostile usage of a RAM layer (--empty): names one byte too long, a deep tree,
# the size= limit (ENOSPC, and the space back after rm), an unlinked open file,
# a rename over an open file, a client killed -9 mid-write, fusermount3 -u while
# busy, and SIGTERM to the daemon (it unmounts and exits). After each, the
# daemon still answers. dbench and fs_mark on the layer when installed
# (scripts/deps.sh test). The long campaign is tests/stress-long.sh.
. "$(dirname "$0")/common.inc"
M=$WORK/m
mnt "$M" --empty -o size=64M || fail "mount --empty"
alive() { timeout 10 stat "$M" >/dev/null 2>&1 || fail "daemon dead after $1"; }

n255=$(printf '%255s' | tr ' ' a)
touch "$M/$n255" || fail "a 255-byte name refused"
touch "$M/${n255}b" 2>"$WORK/e" && fail "a 256-byte name accepted"
grep -q 'too long' "$WORK/e" || fail "256-byte name: $(cat "$WORK/e")"
rm "$M/$n255"; alive names

( cd "$M" && i=0 && while [ $i -lt 400 ]; do mkdir d && cd d || exit 1; i=$((i + 1)); done ) ||
  fail "deep tree"
rm -rf "$M/d" && [ ! -e "$M/d" ] || fail "rm -rf of a deep tree"
alive "deep tree"

dd if=/dev/zero of="$M/big" bs=1M count=100 2>"$WORK/e" && fail "100 MiB fit in size=64M"
grep -q 'No space left' "$WORK/e" || fail "past size=: $(cat "$WORK/e")"
rm "$M/big"
dd if=/dev/zero of="$M/big" bs=1M count=48 2>/dev/null || fail "space not back after rm"
rm "$M/big"; alive ENOSPC

echo hello > "$M/open"
exec 3<"$M/open"; rm "$M/open"
[ "$(cat <&3)" = hello ] || fail "unlinked open file lost its data"
exec 3<&-
echo old > "$M/a"; exec 4<"$M/a"; echo new > "$M/b"; mv "$M/b" "$M/a"
[ "$(cat <&4)" = old ] || fail "rename over an open file changed the open one"
[ "$(cat "$M/a")" = new ] || fail "rename over an open file: new name"
exec 4<&-; rm "$M/a"; alive renames

dd if=/dev/zero of="$M/k" bs=64k count=100 status=none &
p=$!
kill -9 $p 2>/dev/null; wait $p 2>/dev/null
rm -f "$M/k"; alive "kill -9 of a writer"

if command -v dbench >/dev/null 2>&1; then
  ( cd "$WORK" && timeout 60 dbench -t 3 -D "$M" 2 > "$WORK/dbench.out" 2>&1 ) ||
    { tail -n 20 "$WORK/dbench.out"; fail dbench; }
  rm -rf "$M/clients"; alive dbench
fi
if command -v fs_mark >/dev/null 2>&1; then
  ( cd "$WORK" && timeout 60 fs_mark -d "$M/fsm" -n 200 -s 4096 -t 2 -L 1 ) > "$WORK/fsm.out" 2>&1 ||
    { tail -n 20 "$WORK/fsm.out"; fail fs_mark; }
  rm -rf "$M/fsm"; alive fs_mark
fi
[ -z "$(ls -A "$M")" ] || fail "left behind: $(ls -A "$M" | head -n 3)"

exec 5<"$M"
fusermount3 -u "$M" 2>/dev/null && fail "unmounted while busy"
exec 5<&-
alive "busy unmount"

pid=$(daemons_of "$M")
[ -n "$pid" ] || fail "no daemon pid"
kill -TERM $pid
i=0
while kill -0 $pid 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill -0 $pid 2>/dev/null && fail "daemon still running 10 s after SIGTERM"
mountpoint -q "$M" && fail "still mounted after SIGTERM"
echo "hostile: ok"
