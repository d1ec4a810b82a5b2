#!/bin/sh
# -o size= above the memory the RAM layer can have is no limit (the daemon is
# OOM-killed, or the machine swaps, before ENOSPC): the mount warns, naming the
# limit, and still mounts. Above MemAvailable; above the memory limit of the
# cgroup cairn mount runs in (a child cgroup made for the test, v1 or v2); and
# no warning within both. Without size=, the bound is tmpfs's: half of the
# smaller of RAM and the cgroup's limit, which df shows and ENOSPC enforces,
# and an inode per 4 KiB page of it; size=0 and nr_inodes=0 stay no limit.
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

# No size=: half of the cgroup's 64 MiB, as df says; a write past it is ENOSPC.
in_cg "$CAIRN" mount --empty "$M" 2> "$WORK/err" || fail "mount without size= in the cgroup: $(cat "$WORK/err")"
[ -s "$WORK/err" ] && fail "the default size warned: $(cat "$WORK/err")"
total=$(df -B1 --output=size "$M" | tail -n 1 | tr -d ' ')
[ "$total" = $((32 << 20)) ] || fail "df without size= in a 64M cgroup: $total bytes, not 32M"
dd if=/dev/zero of="$M/big" bs=1M count=64 2> "$WORK/err" && fail "64M written to a 32M default RAM layer"
grep -q "No space left on device" "$WORK/err" || fail "not ENOSPC past the default bound: $(cat "$WORK/err")"
got=$(stat -c %s "$M/big")
[ "$got" -le $((32 << 20)) ] && [ "$got" -ge $((28 << 20)) ] ||
  fail "the default-bound RAM layer took $got bytes, not about 32M"
rm "$M/big" && echo x > "$M/f" || fail "no space back after rm at the default bound"
# And one inode per 4 KiB page of it, as tmpfs's nr_inodes: 8192.
inodes=$(df --output=itotal "$M" | tail -n 1 | tr -d ' ')
[ "$inodes" = 8192 ] || fail "df -i without nr_inodes= in a 64M cgroup: $inodes, not 8192"
mkdir "$M/many" && (cd "$M/many" && seq 9000 | xargs touch 2> "$WORK/err") && fail "9000 inodes made past the default 8192"
grep -q "No space left on device" "$WORK/err" || fail "not ENOSPC past the default inode bound: $(head -2 "$WORK/err")"
rm -r "$M/many" && touch "$M/g" || fail "no inode back after rm at the default bound"
umnt "$M"
# size=0 and nr_inodes=0 are no limit, as on tmpfs: df shows more than the default.
in_cg "$CAIRN" mount --empty -o size=0,nr_inodes=0 "$M" || fail "mount size=0 in the cgroup"
total=$(df -B1 --output=size "$M" | tail -n 1 | tr -d ' ')
[ "$total" -gt $((32 << 20)) ] || fail "size=0 bounded at $total bytes, like the default"
inodes=$(df --output=itotal "$M" | tail -n 1 | tr -d ' ')
[ "$inodes" -gt 8192 ] || fail "nr_inodes=0 bounded at $inodes, like the default"
umnt "$M"
echo "size_limit: ok"
