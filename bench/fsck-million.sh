#!/bin/sh
# fsck of the 1M-empty-file image (issue 17: at most 4 s on both cores):
# wall time, CPU time, peak RSS, device requests and bytes of `cairn fsck -j N`
# for each N given, the counts alternated run by run, medians of RUNS runs.
# N = 0 runs without -j (the default count). -b adds a row for another cairn
# (say main's build), run without -j in the same alternation: before and after
# side by side. -x passes more options to every fsck (say "--direct": each
# device read goes to the disk, not the page cache: a cold image).
#
#   bench/fsck-million.sh [-r RUNS] [-j "1 2"] [-n FILES] [-b BASE_CAIRN] [-x "FSCK ARGS"]
#                         [--data] [--fifo]
#
# The tree is bench.py's make_tree layout (dNNNN/fNNNN, 1000 empty files per
# directory) in /var/tmp/cairn-bench-trees/files-N, generated once and shared
# with bench.py; the image is built once into $WORK (default
# /var/tmp/cairn-bench-fsck). --fifo runs each fsck under `chrt -f 50` (less noise
# from other builds on a shared machine). Needs /usr/bin/time.
set -eu
CAIRN=${CAIRN:-build/cairn}
WORK=${WORK:-/var/tmp/cairn-bench-fsck}
runs=5 counts="1 2" n=1000000 data= fifo= base= extra=
while [ $# -gt 0 ]; do
  case $1 in
    -r) runs=$2; shift 2 ;;
    -j) counts=$2; shift 2 ;;
    -n) n=$2; shift 2 ;;
    -b) base=$2; shift 2 ;;
    --data) data=--data; shift ;;
    -x) extra=$2; shift 2 ;;
    --fifo) fifo="chrt -f 50"; shift ;;
    *) echo "usage: $0 [-r RUNS] [-j \"1 2\"] [-n FILES] [-b BASE_CAIRN] [-x ARGS] [--data] [--fifo]" >&2; exit 2 ;;
  esac
done
tree=/var/tmp/cairn-bench-trees/files-$n
img=$WORK/files-$n.cairn
mkdir -p "$WORK"
# bench.py's own generator (it keeps the tree for bench.py and the next run).
[ -e "$tree/.complete" ] ||
  python3 -c "import sys; sys.path.insert(0, '$(dirname "$0")'); import bench; bench.Bench.make_tree(None, $n)"
[ -e "$img" ] || "$CAIRN" mkfs -q "$tree" "$img"

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs${fifo:+, chrt -f 50}"
echo "# $("$CAIRN" info "$img" | grep -E '^(inodes|metadata|image size):' | tr -s ' ' | paste -sd';' -)"
out=$WORK/runs.txt
: > "$out"
# run LABEL CAIRN JARG: one fsck, one line of $out.
run() {
  # shellcheck disable=SC2086
  $fifo /usr/bin/time -f "time %e %U %S %M" "$2" fsck -q --stats $data $extra $3 "$img" \
    > /dev/null 2> "$WORK/err" || { cat "$WORK/err"; exit 1; }
  t=$(grep '^time ' "$WORK/err")
  dev=$(grep '^device:' "$WORK/err" | sed 's/device: \([0-9]*\) requests, \([0-9]*\) bytes.*/\1 \2/')
  echo "$1 $t $dev" >> "$out"
}
i=0
while [ $i -lt "$runs" ]; do
  [ -z "$base" ] || run "base" "$base" ""
  for j in $counts; do
    if [ "$j" = 0 ]; then run "no-j" "$CAIRN" ""; else run "-j_$j" "$CAIRN" "-j $j"; fi
  done
  i=$((i + 1))
done
python3 - "$out" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, _, wall, usr, sys_, rss, req, byt = line.split()
    rows.setdefault(label.replace("_", " "), []).append(
        (float(wall), float(usr) + float(sys_), int(rss), int(req), int(byt)))
base = None
print("| run | wall s (median, min-max) | CPU s | peak RSS MiB | device requests | device MiB | x first row |")
print("|---|---|---|---|---|---|---|")
for label, r in rows.items():
    w = statistics.median(x[0] for x in r)
    base = base or w
    print(f"| {label} | {w:.2f} ({min(x[0] for x in r):.2f}-{max(x[0] for x in r):.2f}) "
          f"| {statistics.median(x[1] for x in r):.2f} | {statistics.median(x[2] for x in r) / 1024:.0f} "
          f"| {statistics.median(x[3] for x in r):.0f} | {statistics.median(x[4] for x in r) / 2**20:.0f} "
          f"| {w / base:.2f}x |")
print(f"({len(next(iter(rows.values())))} runs each, alternated)")
EOF
