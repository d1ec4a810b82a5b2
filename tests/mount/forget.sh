#!/bin/sh
# Lookup counts are honoured: after a walk that stats all of a 20,000-file image
# the kernel holds a lookup reference per object (one that needs names only, far
# fewer); once the kernel drops its dentries (drop_caches=2 sends FORGET), the
# references are given back. The image-only mount counts them (ns_refs) and
# keeps no node; a mount with a RAM layer (tmp=) keeps a node per object held,
# freed again on FORGET, so memory stays flat over huge trees.
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

key=ns_refs
nodes() { live_stat "$pid" "$WORK/st" "$key"; }
# walk LABEL OBJECTS: a stat of every object holds a node ($key) each, while
# the kernel keeps them.
walk() {
  n=$(find "$M" -printf '%s\n' | wc -l)
  [ "$n" -eq "$2" ] || fail "${1}find saw $n objects"
  walked=$(nodes)
  echo "${1}nodes after the walk: $walked"
  [ "$walked" -ge 20000 ]
}
# walk_then_forget LABEL OBJECTS: the walk, and the kernel's forgetting what it
# looked up (drop_caches) frees the nodes. Another process's drop_caches during
# the walk frees them early: the walk is tried again then (kept, common.inc).
walk_then_forget() {
  kept 5 : walk "$@"
  case $? in
    1) fail "${1}expected a node per object, got $walked" ;;
    2) skip "${1}every walk met a drop_caches elsewhere: cannot tell" ;;
  esac
  sync; echo 2 > /proc/sys/vm/drop_caches
  sleep 1
  after=$(nodes)
  echo "${1}nodes after the kernel forgot: $after"
  [ "$after" -lt 2000 ] || fail "${1}nodes not freed on FORGET: $after"
}
# A walk that needs names only gets plain READDIRs after each directory's first
# page of READDIRPLUS, and that page of a directory bigger than one page looks
# up its subdirectories only, so no file is looked up (it was about 25 files per
# directory, 5,000 here). A directory that fits the page is looked up whole, so
# `ls -l` there stays one request.
list_small() { # the attributes READDIRPLUS gave hold a node each
  before=$(nodes)
  n=$(find "$M/small" | wc -l)
  [ "$n" -eq 6 ] || fail "find saw $n objects in small"
  small=$(nodes)
  echo "nodes before and after listing a small directory: $before, $small"
  [ "$small" -ge $((before + 6)) ]
}
kept 5 : list_small
case $? in
  1) fail "READDIRPLUS of a small directory gave no attributes" ;;
  2) skip "every listing met a drop_caches elsewhere: cannot tell" ;;
esac
n=$(find "$M" | wc -l)
[ "$n" -eq 20207 ] || fail "find saw $n objects"
named=$(nodes)
echo "nodes after a walk of names: $named"
[ "$named" -lt 1000 ] || fail "a walk of names looked up $named objects"
# -printf %s stats every object, so each one is looked up.
walk_then_forget "" 20207
over=$(awk '/^ns_over_forgets / { print $2 }' "$WORK/st")
[ "$over" = 0 ] || fail "the kernel forgot more than it looked up: ns_over_forgets $over"
grep '^rss_kb' "$WORK/st"
[ "$(key=ns_nodes; nodes)" = 1 ] || fail "an image-only mount kept nodes"
kill -TERM "$pid"; wait "$pid" || fail "daemon exit status"

# The node table of a mount with a RAM layer: a node per object held, freed on
# FORGET.
"$CAIRN" mount -f "$WORK/img.cairn" "$M" -o stats="$WORK/st",tmp=/scratch &
pid=$!
i=0; while ! mountpoint -q "$M" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
mountpoint -q "$M" || fail "tmp= mount did not come up"
key=ns_nodes
walk_then_forget "tmp= mount: " 20208
kill -TERM "$pid"; wait "$pid" || fail "daemon exit status"
echo "forget: ok"
