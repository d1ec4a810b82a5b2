#!/bin/sh
# SIGUSR1 (write the stats file) sent all through a daemon's life under
# ThreadSanitizer: while it sets up (the image opened, the push started), while
# it serves, and while it tears down. write_stats once ran on the signal thread
# while the main thread was still writing cf.push, and could meet push_stop's
# free at exit. Any report fails the test.
. "$(dirname "$0")/../mount/common.inc"
TSAN_LOG=$WORK/tsan
export TSAN_OPTIONS="log_path=$TSAN_LOG"

SRC=$WORK/src
mkdir -p "$SRC"
head -c 3000000 /dev/urandom > "$SRC/f"
"$CAIRN" mkfs -q -z zstd "$SRC" "$WORK/img.cairn" || fail "mkfs"
M=$WORK/m
mkdir -p "$M"
MOUNTS="$M"
for round in 1 2 3 4 5; do
  "$CAIRN" mount -f -o stats="$WORK/st" "$WORK/img.cairn" "$M" &
  pid=$!
  # From the moment SIGUSR1 is blocked (before that it would kill the process)
  # until the daemon is gone: a signal every 0.2 ms, the mount read meanwhile,
  # then a SIGTERM in the middle of the stream.
  python3 - "$pid" "$M" <<'PY' || fail "round $round: signal stream"
import os, signal, sys, time
pid, mnt = int(sys.argv[1]), sys.argv[2]
def blocked():
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith("SigBlk:"):
                return int(line.split()[1], 16) & (1 << (signal.SIGUSR1 - 1))
    except OSError:
        return None
    return 0
t = time.time() + 20
while not blocked():
    if blocked() is None or time.time() > t:
        sys.exit("the daemon never blocked SIGUSR1")
term = None
while True:
    try:
        os.kill(pid, signal.SIGUSR1)
    except ProcessLookupError:
        break
    if term is None and os.path.ismount(mnt):
        open(os.path.join(mnt, "f"), "rb").read()
        term = time.time() + 0.05
    if term and time.time() > term:
        os.kill(pid, signal.SIGTERM)
        term = float("inf")
    time.sleep(0.0002)
PY
  wait "$pid"; rc=$?
  if ls "$TSAN_LOG".* >/dev/null 2>&1; then
    head -n 60 "$TSAN_LOG".*; fail "ThreadSanitizer: SIGUSR1 in round $round"
  fi
  [ $rc -eq 0 ] || fail "round $round: daemon exit status $rc"
  mountpoint -q "$M" && fail "round $round: still mounted"
done
grep -q '^push_files ' "$WORK/st" || fail "stats: $(cat "$WORK/st")"
echo "signals: no reports"
