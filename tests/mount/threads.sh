#!/bin/sh
# The daemon's worker pool does not churn: libfuse ends a worker whenever more
# than max_idle_threads are idle and starts one whenever a request finds none,
# so with 2 idle threads a walk of a mount that answers OPENDIR (tmp=), whose
# RELEASEDIRs arrive in the background beside the walk's own requests, started
# and ended a thread for most directories (744 over the JDK). Counted here as
# the clone calls strace sees during a walk of 300 directories: at most the
# pool itself (tools/fuse/daemon.c, MAX_THREADS) and a few more.
. "$(dirname "$0")/common.inc"
command -v strace > /dev/null || skip "no strace (scripts/deps.sh installs it)"
SRC=$WORK/src
python3 - "$SRC" <<'PY' || fail "making the tree"
import os, sys
for d in range(300):
    p = os.path.join(sys.argv[1], "d%03d" % d)
    os.makedirs(p)
    for f in range(4):
        with open(os.path.join(p, "f%d" % f), "w") as o:
            o.write("x" * (f * 3000))
PY
"$CAIRN" mkfs -q "$SRC" "$WORK/img.cairn" || fail "mkfs"
M=$WORK/m
mkdir -p "$M"
"$CAIRN" mount -f -o tmp=/tmp "$WORK/img.cairn" "$M" &
pid=$!
MOUNTS="$M"
i=0; while ! mountpoint -q "$M" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
mountpoint -q "$M" || fail "mount did not come up"
strace -f -qq -e trace=clone,clone3 -e signal=none -p "$pid" -o "$WORK/strace" &
st=$!
sleep 0.5 # strace has attached to every thread
for round in 1 2 3; do
  find "$M" > /dev/null || fail "find"
  ls -lR "$M" > /dev/null || fail "ls -lR"
  find "$M" -type f -exec cat {} + > /dev/null || fail "cat"
done
sleep 0.3
kill "$st"; wait "$st" 2>/dev/null
started=$(grep -v resumed "$WORK/strace" | grep -c clone)
[ "$started" -le 16 ] || fail "the walks started $started threads (churn: at most 16 expected)"
echo "threads: ok ($started started over three walks of 300 directories)"
