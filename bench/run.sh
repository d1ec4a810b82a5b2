#!/bin/sh
# cairn benchmarks: `bench/run.sh quick|full [PROFILE]` (make bench-quick / make bench).
# PROFILE is the emulated disk: latency (1 ms per request, the default), network
# (1 ms + one shared 100 MB/s link) or remote (20 ms + 100 MB/s, 8 channels).
# full writes docs/BENCHMARKS.md and docs/bench/*.png; quick writes the same into
# $BUILD/bench-quick/ so checking a change does not touch the committed results.
# BENCH_ARGS passes options to bench.py, e.g. BENCH_ARGS="--only java,rw --runs 3"
# (--systems cairn,cairn_verify=none runs only those two on the read-only workloads).
# Needs root (loop devices, mounts, drop_caches). Everything it mounts, attaches or starts
# lives under one work dir on tmpfs and is undone on exit, error or interrupt.
set -eu

mode=${1:-quick}
profile=${2:-latency}
case "$mode" in
  quick|full) ;;
  *) echo "usage: bench/run.sh quick|full [latency|network|remote]" >&2; exit 2 ;;
esac
case "$profile" in
  latency|network|remote) ;;
  *) echo "bench: profile is latency (1 ms), network (1 ms + 100 MB/s) or remote (20 ms + 100 MB/s, 8 channels)" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
build=${BUILD:-build}
case "$build" in /*) ;; *) build="$repo/$build" ;; esac
if [ "$mode" = full ]; then out="$repo/docs"; else out="$build/bench-quick"; fi
# The latency profile writes docs/BENCHMARKS.md; the others their own page beside it.
[ "$profile" = latency ] || out="$out/bench/profile-$profile"

if [ "$(id -u)" -ne 0 ]; then
  echo "bench: needs root (loop devices, mounts, drop_caches)" >&2
  exit 1
fi
for t in delayfs rw; do
  if [ ! -x "$build/bench/$t" ]; then
    echo "bench: $build/bench/$t missing: run make first" >&2
    exit 1
  fi
done

# Images live in RAM (tmpfs) so the only disk is the emulated one.
work=$(mktemp -d /dev/shm/cairn-bench.XXXXXX)
cleanup() {
  "$here/cleanup.sh" "$work" || true
}
trap cleanup EXIT

mkdir -p "$out/bench"
# Remote images first (bench/remote.py, nginx on 127.0.0.1): its page, bench/remote.md,
# is included by the report bench.py writes at its end. A failure skips only it.
if command -v nginx >/dev/null 2>&1; then
  runs=3; [ "$mode" = quick ] && runs=1
  nice -n "${BENCH_NICE:--5}" /usr/bin/python3 -B "$here/remote.py" --build "$build" \
    --runs "$runs" --out "$out/bench/remote.md" >/dev/null ||
    echo "bench: remote images failed; bench/remote.md left as it was" >&2
fi
# A little priority over background compiles keeps scheduling noise out of the figures
# (BENCH_NICE=0 to turn off). Every workload and daemon inherits it.
# The driver runs in the background so a signal to this script can be passed on to it
# (it unmounts and detaches what it set up); cleanup.sh then sweeps whatever is left.
nice -n "${BENCH_NICE:--5}" /usr/bin/python3 -B "$here/bench.py" --mode "$mode" --work "$work" \
  --build "$build" --out "$out" --profile "$profile" ${BENCH_ARGS:-} &
py=$!
trap 'kill -TERM "$py" 2>/dev/null' INT TERM HUP
set +e
rc=0
while :; do
  wait "$py"; rc=$?
  kill -0 "$py" 2>/dev/null || break   # wait was cut short by a signal: keep waiting
done
exit "$rc"
