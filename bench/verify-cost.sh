#!/bin/sh
# What digest checking costs one cold start, and where: a fresh cairn mount per
# run (-o delay=DELAY, the device delay of the latency profile, applied inside
# the daemon), verify on and verify=none alternated run by run, for each build
# given. Prints per run the wall time of CMD, device requests and bytes, the
# bytes hashed (verify_bytes from the stats file), the bytes the FUSE reads
# delivered (fuse_image_read_bytes), and what hashing cost the reads
# (cache_verify_wait_us: their time hashing or waiting for another thread's
# hash, summed over reads; cache_verify_read_bytes: hashed on their threads;
# both empty for a build that does not count them) and the daemon's CPU time
# (cpu_user_us + cpu_sys_us, sys), then medians.
#
#   bench/verify-cost.sh IMAGE RUNS BUILD... -- CMD...
#   (CMD gets the mount point as $M), e.g.
#   chrt -f 50 bench/verify-cost.sh /dev/shm/jdk.cairn 9 build -- \
#     sh -c '"$M"/bin/java -cp /tmp/hello Hello'
#
# A fresh FUSE mount has no page cache, so no drop_caches (the machine is
# shared). DELAY (default 1ms) and OPTS (extra mount options) from the
# environment; RA_KB sets the mount's kernel read-ahead (read_ahead_kb of its
# bdi, 0.2 s after mounting, once the daemon has set its own) to see what a
# smaller window saves in hashed bytes and costs in requests. Needs root (FUSE
# mounts); unmounts what it mounted.
set -eu
[ $# -ge 4 ] || { sed -n '2,22p' "$0" >&2; exit 2; }
img=$1 runs=$2
shift 2
builds=
while [ "$1" != -- ]; do builds="$builds $1"; shift; done
shift
delay=${DELAY:-1ms}
work=$(mktemp -d /tmp/cairn-vcost.XXXXXX)
M=$work/mnt
export M
mkdir -p "$M"
trap 'fusermount3 -u "$M" 2>/dev/null || true; rm -rf "$work"' EXIT

stat_of() { sed -n "s/^$1 //p" "$2"; }
now_ms() { date +%s%N | awk '{ printf "%.1f", $1 / 1e6 }'; }

echo "build verify run ms requests bytes hashed delivered wait_us reader_hashed cpu_us sys_us"
for i in $(seq "$runs"); do
  for b in $builds; do
    for v in on none; do
      o="delay=$delay,stats=$work/st${OPTS:+,$OPTS}"
      [ $v = none ] && o="$o,verify=none"
      rm -f "$work/st"
      "$b/cairn" mount -o "$o" "$img" "$M"
      if [ -n "${RA_KB:-}" ]; then
        sleep 0.2
        d=$(stat -c %d "$M")
        echo "$RA_KB" > "/sys/class/bdi/$((d >> 8)):$((d & 255))/read_ahead_kb"
      fi
      t0=$(now_ms)
      "$@" >/dev/null
      t1=$(now_ms)
      fusermount3 -u "$M"
      for _ in $(seq 100); do [ -s "$work/st" ] && break; sleep 0.05; done
      echo "$b $v $i $(echo "$t1 - $t0" | bc) $(stat_of device_requests "$work/st")" \
        "$(stat_of device_bytes "$work/st") $(stat_of verify_bytes "$work/st" | grep . || echo 0)" \
        "$(stat_of fuse_image_read_bytes "$work/st") $(stat_of cache_verify_wait_us "$work/st" | grep . || echo -)" \
        "$(stat_of cache_verify_read_bytes "$work/st" | grep . || echo -)" \
        "$(($(stat_of cpu_user_us "$work/st") + $(stat_of cpu_sys_us "$work/st")))" \
        "$(stat_of cpu_sys_us "$work/st")"
    done
  done
done | tee "$work/rows"
echo "median over $runs runs: build verify ms requests bytes hashed (those of the median-time run)," \
  "then wait_us cpu_us sys_us (medians of their own); on/none"
for b in $builds; do
  for v in on none; do
    w=; sep=
    for col in 9 11 12; do
      w="$w$sep$(awk -v b="$b" -v v="$v" -v k=$col '$1 == b && $2 == v && $k != "-" { print $k }' \
        "$work/rows" | sort -n | awk '{ w[NR] = $1 } END { print NR ? w[int((NR + 1) / 2)] : "-" }')"; sep=" "
    done
    awk -v b="$b" -v v="$v" '$1 == b && $2 == v { print $4, $5, $6, $7 }' \
      "$work/rows" | sort -n | awk -v b="$b" -v v="$v" -v w="$w" '
      { t[NR] = $1; r[NR] = $2; y[NR] = $3; h[NR] = $4 }
      END { m = int((NR + 1) / 2); printf "%s %s %.1f %d %d %d %s\n", b, v, t[m], r[m], y[m], h[m], w }'
  done
done | tee "$work/med"
awk '{ k = $1; if ($2 == "on") on[k] = $3; else no[k] = $3 }
     END { for (k in on) printf "%s on/none %.3f\n", k, on[k] / no[k] }' "$work/med"
