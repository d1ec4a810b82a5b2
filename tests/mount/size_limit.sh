#!/bin/sh
# -o size= above the memory the RAM layer can have is no limit (the daemon is
# OOM-killed, or the machine swaps, before ENOSPC): the mount warns, naming the
# limit, and still mounts. Above MemAvailable; above the memory limit of the
# cgroup cairn mount runs in (a child cgroup made for the test, v1 or v2); and
# no warning within both.
. "$(dirname "$0")/common.inc"
M=$WORK/m
avail_m=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
[ -n "$avail_m" ] || skip "no MemAvailable in /proc/meminfo"

mnt "$M" --empty -o size=$((avail_m * 2))M 2> "$WORK/err" || fail "mount size=2*MemAvailable: $(cat "$WORK/err")"
grep -q "warning: -o size=$((avail_m * 2))M is more than .*MemAvailable in /proc/meminfo" "$WORK/err" ||
  fail "no warning naming MemAvailable: '$(cat "$WORK/err")'"
echo x > "$M/f" || fail "write after the warning"
umnt "$M"
mnt "$M" --empty -o size=8M 2> "$WORK/err" || fail "mount size=8M"
[ -s "$WORK/err" ] && fail "size=8M warned: $(cat "$WORK/err")"
umnt "$M"

# A child of this process's memory cgroup, limited to 64 MiB.
cg=""
v1=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3 }' /proc/self/cgroup)
v2=$(awk -F: '$1 == 0 { print $3 }' /proc/self/cgroup)
if [ -n "$v1" ] && [ -d "/sys/fs/cgroup/memory$v1" ]; then
  cg=/sys/fs/cgroup/memory${v1%/}/cairn-size-$$ limit=memory.limit_in_bytes
elif [ -n "$v2" ] && grep -qw memory "/sys/fs/cgroup${v2%/}/cgroup.subtree_control" 2>/dev/null; then
  cg=/sys/fs/cgroup${v2%/}/cairn-size-$$ limit=memory.max
fi
[ -n "$cg" ] && mkdir "$cg" 2>/dev/null && echo $((64 << 20)) > "$cg/$limit" ||
  { [ -n "$cg" ] && rmdir "$cg" 2>/dev/null; skip "no memory cgroup to limit (MemAvailable part passed)"; }
trap 'cleanup; sleep 0.5; rmdir "$cg" 2>/dev/null' EXIT
in_cg() { sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg" "$@"; }
MOUNTS="$MOUNTS $M"
in_cg "$CAIRN" mount --empty -o size=1G "$M" 2> "$WORK/err" || fail "mount in the cgroup: $(cat "$WORK/err")"
grep -q "warning: -o size=1024M is more than the memory the RAM layer can have, 64M ($cg/$limit, the cgroup's memory limit)" "$WORK/err" ||
  fail "no warning naming $cg/$limit: '$(cat "$WORK/err")'"
umnt "$M"
in_cg "$CAIRN" mount --empty -o size=32M "$M" 2> "$WORK/err" || fail "mount size=32M in the cgroup"
[ -s "$WORK/err" ] && fail "size=32M in a 64M cgroup warned: $(cat "$WORK/err")"
umnt "$M"
echo "size_limit: ok"
