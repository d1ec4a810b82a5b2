#!/bin/sh
# An image-only mount keeps nothing per object the kernel holds: node ids are
# image inode numbers (cairn/ns.h, "lean"). A stat walk of 100,000 files, every
# one of whose inodes the kernel then keeps, must not grow the daemon by
# anything per file (the node table cost about 190 bytes each: 18 MiB here);
# the segment cache's bounded growth is allowed for with a wide margin. And
# what users see stays consistent: stat's inode numbers are readdir's, hard
# links share one (and one kernel inode: one copy of their pages), ".." is the
# parent, and every name shows the same number after the kernel forgot it
# (drop_caches sends FORGET) and on a traced mount, which keeps the node table.
. "$(dirname "$0")/common.inc"
[ -w /proc/sys/vm/drop_caches ] || skip "cannot drop caches here"
N=100000
SRC=$WORK/src
python3 - "$SRC" "$N" <<'PY' || fail "making the tree"
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, "d%03d" % (i // 1000))
    if i % 1000 == 0:
        os.makedirs(d)
    open(os.path.join(d, "f%03d" % (i % 1000)), "w").close()
os.makedirs(os.path.join(root, "h", "sub"))
for i in range(5):
    p = os.path.join(root, "h", "x%d" % i)
    with open(p, "w") as f:
        f.write("link %d\n" % i)
    os.link(p, os.path.join(root, "h", "sub", "y%d" % i))
    os.link(p, os.path.join(root, "h%d" % i))
os.symlink("h/x0", os.path.join(root, "sym"))
PY
"$CAIRN" mkfs -q "$SRC" "$WORK/img.cairn" || fail "mkfs"

M=$WORK/m
mkdir -p "$M"
pid=
start() { # start TAG [MOUNT-OPTIONS...]: a foreground daemon with stats
  st=$WORK/st$1; shift
  "$CAIRN" mount -f "$WORK/img.cairn" "$M" -o "stats=$st" "$@" &
  pid=$!
  MOUNTS="$M"
  i=0; while ! mountpoint -q "$M" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  mountpoint -q "$M" || fail "mount did not come up"
}
stop() {
  kill -TERM "$pid"; wait "$pid" || fail "daemon exit status"
}
stat_of() { live_stat "$pid" "$st" "$1"; }
# inodes OUT: path, inode number and link count of every object, from stat(2),
# checked against readdir's d_ino and each directory's "..".
inodes() {
  python3 - "$M" "$1" <<'PY' || fail "inode numbers are inconsistent"
import os, sys
m, out = sys.argv[1], sys.argv[2]
rows, bad = [], []
def walk(d, parent_ino):
    st = os.lstat(d)
    if os.stat(os.path.join(d, "..")).st_ino != parent_ino:
        bad.append(d + ": .. is not the parent")
    with os.scandir(d) as it:
        for e in it:
            s = os.lstat(e.path)
            if e.inode() != s.st_ino:
                bad.append("%s: readdir ino %d, stat %d" % (e.path, e.inode(), s.st_ino))
            rows.append("%s %d %d" % (e.path[len(m):], s.st_ino, s.st_nlink))
            if e.is_dir(follow_symlinks=False):
                walk(e.path, st.st_ino)
walk(m, os.stat(os.path.join(m, "..")).st_ino)
for i in range(5):
    names = [m + "/h/x%d" % i, m + "/h/sub/y%d" % i, m + "/h%d" % i]
    sts = [os.stat(p) for p in names]
    if len({s.st_ino for s in sts}) != 1 or any(s.st_nlink != 3 for s in sts):
        bad.append("hard links of h/x%d differ" % i)
    if any(open(p).read() != "link %d\n" % i for p in names):
        bad.append("hard links of h/x%d read wrong" % i)
if bad:
    print("\n".join(bad[:10]))
    sys.exit(1)
open(out, "w").write("\n".join(sorted(rows)) + "\n")
PY
}

# Half the files first: the caches (the segment cache's budget, the 4 MiB of
# decompressed metadata blocks) fill up on the way, so what the second half
# adds is what the daemon keeps per file. Only valid while the kernel still
# holds every inode: another job's drop_caches makes it forget them all, and
# then the walk is tried again on a fresh mount (kept, common.inc).
measure() {
  start 1
  find "$M" > /dev/null
  n=$(find "$M"/d0[0-4]? -printf '%s\n' | wc -l)
  [ "$n" -ge $((N / 2)) ] || fail "the stat walk saw $n objects"
  mid=$(stat_of rss_kb)
  n=$(find "$M" -printf '%s\n' | wc -l)
  [ "$n" -ge "$N" ] || fail "the stat walk saw $n objects"
  stat_of rss_kb > /dev/null # one snapshot for the three
  after=$(awk '$1 == "rss_kb" { print $2 }' "$st")
  refs=$(awk '$1 == "ns_refs" { print $2 }' "$st")
  nodes=$(awk '$1 == "ns_nodes" { print $2 }' "$st")
  echo "stat walk of $n objects: rss $mid KiB after half, $after KiB after all;" \
    "ns_refs $refs, ns_nodes $nodes"
  [ "$refs" -ge "$N" ]
}
kept 3 stop measure
case $? in
  1) fail "ns_refs $refs after a stat walk of $N objects: a lookup reference per object was expected" ;;
  2) skip "the kernel kept only $refs of $N inodes (drop_caches elsewhere): cannot tell" ;;
esac
[ "$nodes" -le 1 ] || fail "an image-only mount kept $nodes nodes"
# 1 MiB and 100 bytes a file (5.9 MiB here) for the second half: the heaps
# still grow a little as decompressed metadata blocks come and go (0.8-3 MiB
# measured). The node table took about 200 bytes a file (11 MiB).
limit=$((1024 + N / 2 * 100 / 1024))
[ $((after - mid)) -le $limit ] ||
  fail "RSS grew by $((after - mid)) KiB over a walk of $((N / 2)) more files (limit $limit KiB)"
inodes "$WORK/ino1"
# The kernel forgets (FORGET reaches the daemon: refs fall) and is told the
# same numbers again.
sync; echo 2 > /proc/sys/vm/drop_caches
sleep 1
left=$(stat_of ns_refs)
echo "ns_refs after the kernel forgot: $left"
[ "$left" -lt $((N / 10)) ] || fail "FORGET not counted: ns_refs $left"
inodes "$WORK/ino2"
cmp -s "$WORK/ino1" "$WORK/ino2" || fail "inode numbers changed after the kernel forgot them"
[ "$(stat_of ns_over_forgets)" = 0 ] || fail "the kernel forgot more than it looked up"
stop

# A traced mount keeps the node table (for the trace's paths): the same numbers.
start 2 -o trace="$WORK/trace"
inodes "$WORK/ino3"
nodes=$(stat_of ns_nodes)
echo "traced mount: ns_nodes $nodes"
[ "$nodes" -gt 1000 ] || fail "a traced mount kept no node table ($nodes nodes)"
stop
cmp -s "$WORK/ino1" "$WORK/ino3" || fail "a traced mount shows other inode numbers"
grep -q "^/h/x0 " "$WORK/trace" || fail "the trace does not name /h/x0: $(head -3 "$WORK/trace")"
echo "lean: ok"
