#!/bin/sh
# SPDX-License-Identifier: MIT
# `find` over a million files (issue 17): cairn beside squashfuse_ll, and kernel
# squashfs and EROFS for reference.
#
#   bench/million.sh [-r RUNS] [-b BUILD] [-w names|stat|both|warm] [-s SYSTEMS] [--rebuild]
#
# The tree (1,000,000 empty files, 1000 per directory, the same as bench.py's
# "files" section) and the peer images are made once and kept in
# /var/tmp/cairn-bench-trees; the cairn image is rebuilt when cairn is newer than
# it (or with --rebuild). The images are copied to a work dir on tmpfs, so that a
# cold run (caches dropped, fresh mount and daemon) reads them from RAM and the
# time is the file system's own work, not the disk's. Two walks per system:
#   find MNT | wc -l                   names only (READDIR, d_type)
#   find MNT -type f -size 0 | wc -l   every entry stat'ed (READDIRPLUS / LOOKUP)
# and on request (-w warm) the names walk again on the same mount, after an
# untimed first one (what the kernel's listing cache serves).
# Prints one line per run and a median table (seconds, daemon RSS in MiB after the
# walk). Needs root. Everything it mounts is unmounted on exit. The walks run under
# `chrt -f 50`, the FUSE daemons too (BENCH_CHRT= to turn off): less noise from
# other builds on a shared machine. CAIRN_OPTS adds options to `cairn mount`
# (e.g. CAIRN_OPTS="-s" or "-o cache_size=32M"). With CAIRN_BASE=PATH (another
# build's cairn, e.g. main's) the system `base` mounts the same image with it,
# so a change is measured against its base in one interleaved run:
#   CAIRN_BASE=../main/build/cairn bench/million.sh -s "base cairn squashfuse_ll"
set -eu

runs=3
build=build
rebuild=0
walks="names stat"
only=
while [ $# -gt 0 ]; do
  case "$1" in
    -r) runs=$2; shift 2 ;;
    -b) build=$2; shift 2 ;;
    -w) walks= # one or more, e.g. -w "names warm"
      for x in $2; do
        case "$x" in both) walks="$walks names stat" ;; names|stat|warm) walks="$walks $x" ;; *) exit 2 ;; esac
      done
      shift 2 ;;
    -s) only=$2; shift 2 ;; # e.g. -s "cairn squashfuse_ll"; cairn-s: cairn mount -s; base: CAIRN_BASE
    --rebuild) rebuild=1; shift ;;
    *) echo "usage: bench/million.sh [-r RUNS] [-b BUILD] [-w names|stat|both|warm] [-s SYSTEMS] [--rebuild]" >&2; exit 2 ;;
  esac
done
. "$(dirname "$0")/lib.sh"
bench_cairn million "$build"
[ "$(id -u)" -eq 0 ] || { echo "million: needs root (mounts, drop_caches)" >&2; exit 1; }

cache=/var/tmp/cairn-bench-trees
tree=$cache/files-1000000
# MILLION_IMGS: a private image dir (so a branch with another cairn build does not
# rebuild the shared cairn.img under someone else's run)
imgs=${MILLION_IMGS:-$cache/million}
mkdir -p "$imgs"
if [ ! -e "$tree/.complete" ]; then
  echo "million: generating $tree (once)" >&2
  rm -rf "$tree"
  python3 - "$tree" <<'EOF'
import os, sys
d, per = sys.argv[1], 1000
for i in range(0, 1000000, per):
    sub = os.path.join(d, f"d{i // per:04d}")
    os.makedirs(sub)
    for j in range(per):
        os.close(os.open(os.path.join(sub, f"f{j:04d}"), os.O_CREAT | os.O_WRONLY, 0o644))
open(os.path.join(d, ".complete"), "w").close()
EOF
  rm -f "$imgs"/*.img
fi
# build NAME COMMAND...: make $imgs/NAME.img once, recording wall time and peak RSS.
build_img() {
  name=$1; shift
  [ -s "$imgs/$name.img" ] && return 0
  echo "million: building $name.img" >&2
  /usr/bin/time -f "$name mkfs: %e s, peak RSS %M KiB" "$@" 2>>"$imgs/build.log" >/dev/null
  tail -n 1 "$imgs/build.log" >&2
}
if [ "$rebuild" = 1 ] || [ "$cairn" -nt "$imgs/cairn.img" ]; then rm -f "$imgs/cairn.img"; fi
build_img cairn "$cairn" mkfs -q --no-fsync "$tree" "$imgs/cairn.img"
systems=cairn
if command -v mksquashfs >/dev/null; then
  build_img sqfs mksquashfs "$tree" "$imgs/sqfs.img" -noI -noD -noF -noX -no-progress \
    -quiet -noappend
  command -v squashfuse_ll >/dev/null && systems="$systems squashfuse_ll"
  systems="$systems squashfs"
fi
if command -v mkfs.erofs >/dev/null; then
  build_img erofs mkfs.erofs --quiet "$imgs/erofs.img" "$tree"
  systems="$systems erofs"
fi

[ -z "$only" ] || systems=$only
work=$(mktemp -d /dev/shm/cairn-million.XXXXXX)
mnt=$work/mnt
mkdir -p "$mnt"
pid=
loop=
umount_all() {
  if mountpoint -q "$mnt"; then umount "$mnt" 2>/dev/null || umount -l "$mnt"; fi
  if [ -n "$pid" ]; then
    # a FUSE daemon exits once unmounted; wait for it, never leave one behind
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=
  fi
  if [ -n "$loop" ]; then losetup -d "$loop"; loop=; fi
}
trap 'umount_all; rm -rf "$work"' EXIT
trap 'exit 1' INT TERM
for f in "$imgs"/*.img; do cp "$f" "$work/"; done
ls -l "$work"/*.img | awk '{ printf "million: %s %.1f MiB\n", $NF, $5 / 1048576 }' >&2

mount_sys() {
  case "$1" in
    cairn) $chrt "$cairn" mount -f $CAIRN_OPTS -o "stats=$work/stats" "$work/cairn.img" "$mnt" \
      2>>"$work/daemon.log" & pid=$! ;;
    cairn-s) $chrt "$cairn" mount -f -s $CAIRN_OPTS -o "stats=$work/stats" "$work/cairn.img" "$mnt" \
      2>>"$work/daemon.log" & pid=$! ;;
    base) $chrt "${CAIRN_BASE:?base needs CAIRN_BASE}" mount -f $CAIRN_OPTS -o "stats=$work/stats" \
      "$work/cairn.img" "$mnt" 2>>"$work/daemon.log" & pid=$! ;;
    squashfuse_ll) $chrt squashfuse_ll -f "$work/sqfs.img" "$mnt" 2>>"$work/daemon.log" & pid=$! ;;
    squashfs) loop=$(losetup -f --show -r "$work/sqfs.img"); mount -t squashfs -o ro "$loop" "$mnt" ;;
    erofs) loop=$(losetup -f --show -r "$work/erofs.img"); mount -t erofs -o ro "$loop" "$mnt" ;;
  esac
  bench_wait_mount "million: $1" "$mnt"
}
# cpu_ms: the FUSE daemon's CPU time (user + sys, all its threads, in clock
# ticks from /proc) right after the walk; a steadier figure than wall time on a
# loaded machine, taken the same way for cairn and squashfuse_ll.
cpu_ms() {
  [ -n "$pid" ] || { echo -; return; }
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.0f", ($12 + $13) * 1000 / hz }' \
    "/proc/$pid/stat"
}
rss_mib() {
  [ -n "$pid" ] || { echo -; return; }
  bench_rss_kb "$pid" | awk '{ printf "%.1f", $1 / 1024 }'
}
now_ns() { date +%s%N; }

chrt=${BENCH_CHRT-chrt -f 50}
CAIRN_OPTS=${CAIRN_OPTS:-}
out=$work/runs
: > "$out"
echo "million: $runs cold runs per system and walk; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq "$runs"); do
  for s in $systems; do
    for w in $walks; do
      sync
      echo 3 > /proc/sys/vm/drop_caches
      rm -f "$work/stats"
      mount_sys "$s"
      # warm: daemon CPU is then of both walks
      [ $w != warm ] || $chrt find "$mnt" > /dev/null
      # find's own CPU (user + sys: its getdents and the kernel's work for them)
      if [ $w = stat ]; then set -- "$mnt" -type f -size 0; else set -- "$mnt"; fi
      t0=$(now_ns)
      n=$($chrt /usr/bin/time -f "%U %S" -o "$work/ftime" find "$@" | wc -l)
      t1=$(now_ns)
      rss=$(rss_mib)
      cpu=$(cpu_ms)
      umount_all
      # a cairn daemon's own account (-o stats=, written at unmount): user and
      # sys CPU of all its threads, and the lookup references it was holding
      ust=$(awk '$1 == "cpu_user_us" { u = $2 } $1 == "cpu_sys_us" { s = $2 }
        END { if (u != "") printf ", cpu_user_us %s cpu_sys_us %s", u, s }' "$work/stats" 2>/dev/null ||
        true)
      t=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
      fcpu=$(awk '{ printf "%.0f", ($1 + $2) * 1000 }' "$work/ftime")
      echo "$s $w $t $rss $n $cpu $fcpu" >> "$out"
      echo "million: run $r $s find-$w: $t s, $n entries, daemon RSS $rss MiB, daemon CPU $cpu ms, find CPU $fcpu ms$ust" >&2
    done
  done
done

med() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; else print "-" }'; }
echo "| system | find s | find -size 0 s | find s, warm | daemon RSS MiB after find / after find -size 0 | daemon CPU ms find / find -size 0 | find's CPU ms find / find -size 0 |"
echo "|---|---|---|---|---|---|---|"
for s in $systems; do
  a=$(awk -v s="$s" '$1 == s && $2 == "names" { print $3 }' "$out" | med)
  b=$(awk -v s="$s" '$1 == s && $2 == "stat" { print $3 }' "$out" | med)
  c=$(awk -v s="$s" '$1 == s && $2 == "warm" { print $3 }' "$out" | med)
  ra=$(awk -v s="$s" '$1 == s && $2 == "names" { print $4 }' "$out" | med)
  rb=$(awk -v s="$s" '$1 == s && $2 == "stat" { print $4 }' "$out" | med)
  ca=$(awk -v s="$s" '$1 == s && $2 == "names" { print $6 }' "$out" | med)
  cb=$(awk -v s="$s" '$1 == s && $2 == "stat" { print $6 }' "$out" | med)
  fa=$(awk -v s="$s" '$1 == s && $2 == "names" { print $7 }' "$out" | med)
  fb=$(awk -v s="$s" '$1 == s && $2 == "stat" { print $7 }' "$out" | med)
  case $s in squashfs|erofs) ra=-; rb=- ;; esac
  echo "| $s | $a | $b | $c | $ra / $rb | $ca / $cb | $fa / $fb |"
done
echo "(medians of $runs cold runs; load at end: $(cut -d' ' -f1-3 /proc/loadavg))"
