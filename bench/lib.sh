# SPDX-License-Identifier: MIT
# Shared by the bench/*.sh scripts (sourced; not a benchmark itself). Gives:
#   bench_cairn NAME BUILD   the cairn tool of BUILD (relative to the tree's top
#                            unless absolute) in $cairn; exits naming NAME if missing
#   bench_unmount MNT        fusermount3 -u, retried for 5 s
#   bench_wait_mount NAME MNT   until MNT is a mount point (10 s), else exits
#   bench_median             stdin's numbers: "median min max"
#   bench_rss_kb PID         the daemon's VmRSS in KiB, as bench.py takes it
#                            (bench/procmem.py: the one definition of daemon memory)
bench_root=$(cd "$(dirname "$0")/.." && pwd)

bench_cairn() {
  case "$2" in /*) cairn=$2/cairn ;; *) cairn=$bench_root/$2/cairn ;; esac
  [ -x "$cairn" ] || { echo "$1: $cairn missing: run make first" >&2; exit 1; }
}

# A file just closed may keep the mount busy a moment (the kernel releases it in
# the background): a failed unmount is retried before it counts.
bench_unmount() {
  _i=0
  until fusermount3 -u "$1" 2>/dev/null; do
    _i=$((_i + 1)); [ $_i -lt 25 ] || { fusermount3 -u "$1"; return 1; }; sleep 0.2
  done
}

# A daemon started with -f in the background mounts a little later.
bench_wait_mount() {
  _i=0
  while ! mountpoint -q "$2"; do
    _i=$((_i + 1)); [ $_i -lt 500 ] || { echo "$1: did not mount $2" >&2; exit 1; }
    sleep 0.02
  done
}

bench_median() {
  sort -n | awk '{ v[NR] = $1 } END { printf "%s %s %s\n", v[int((NR + 1) / 2)], v[1], v[NR] }'
}

bench_rss_kb() {
  python3 -B "$bench_root/bench/procmem.py" "$1" | cut -d' ' -f1
}
