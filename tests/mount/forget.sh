#!/bin/sh
# Lookup counts are honoured: after a walk that stats all of a 20,000-file image
# the daemon holds a node per object (one that needs names only, far fewer); once the kernel drops its dentries (drop_caches=2 sends
# FORGET), the nodes are freed again, so memory stays flat over huge trees.
. "$(dirname "$0")/common.inc"
[ -w /proc/sys/vm/drop_caches ] || skip "cannot drop caches here"
SRC=$WORK/src
python3 - "$SRC" <<'PY' || fail "making the tree"
import os, sys
root = sys.argv[1]
for d in range(200):
    p = os.path.join(root, "d%03d" % d)
    os.makedirs(p)
    for f in range(100):
        open(os.path.join(p, "f%03d" % f), "w").close()
os.makedirs(os.path.join(root, "small"))
for f in range(5):
    open(os.path.join(root, "small", "s%d" % f), "w").close()
PY
"$CAIRN" mkfs -q "$SRC" "$WORK/img.cairn" || fail "mkfs"
M=$WORK/m
mkdir -p "$M"
"$CAIRN" mount -f "$WORK/img.cairn" "$M" -o stats="$WORK/st" &
pid=$!
MOUNTS="$M"
i=0; while ! mountpoint -q "$M" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
mountpoint -q "$M" || fail "mount did not come up"

nodes() { # ask for stats, print ns_nodes
  rm -f "$WORK/st"
  kill -USR1 "$pid"
  wait_file "$WORK/st" || fail "no stats after SIGUSR1"
  awk '/^ns_nodes / { print $2 }' "$WORK/st"
}
# A walk that needs names only gets plain READDIRs after each directory's first
# page of READDIRPLUS, and that page of a directory bigger than one page looks
# up its subdirectories only, so no file is looked up (it was about 25 files per
# directory, 5,000 here). A directory that fits the page is looked up whole, so
# `ls -l` there stays one request.
before=$(nodes)
n=$(find "$M/small" | wc -l)
[ "$n" -eq 6 ] || fail "find saw $n objects in small"
small=$(nodes)
echo "nodes before and after listing a small directory: $before, $small"
[ "$small" -ge $((before + 6)) ] || fail "READDIRPLUS of a small directory gave no attributes"
n=$(find "$M" | wc -l)
[ "$n" -eq 20207 ] || fail "find saw $n objects"
named=$(nodes)
echo "nodes after a walk of names: $named"
[ "$named" -lt 1000 ] || fail "a walk of names looked up $named objects"
# -printf %s stats every object, so each one is looked up.
n=$(find "$M" -printf '%s\n' | wc -l)
[ "$n" -eq 20207 ] || fail "find saw $n objects"
walked=$(nodes)
echo "nodes after the walk: $walked"
[ "$walked" -ge 20000 ] || fail "expected a node per object, got $walked"
sync; echo 2 > /proc/sys/vm/drop_caches
sleep 1
after=$(nodes)
echo "nodes after the kernel forgot: $after"
[ "$after" -lt 2000 ] || fail "nodes not freed on FORGET: $after"
over=$(awk '/^ns_over_forgets / { print $2 }' "$WORK/st")
[ "$over" = 0 ] || fail "the kernel forgot more than it looked up: ns_over_forgets $over"
grep '^rss_kb' "$WORK/st"
kill -TERM "$pid"; wait "$pid" || fail "daemon exit status"
echo "forget: ok"
