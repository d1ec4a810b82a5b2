#!/bin/sh
# Compressed images, Java Hello (issue 12, docs/bench/compression.md):
#   bench/compression.sh PROFILE [RUNS]      PROFILE: latency | network | remote
# runs bench.py's Java workload with every system, the compressed cairn images
# included (lz4hc, zstd; default and ordered + prefetch), in full mode (so EROFS
# lz4hc and squashfs zstd are there), and writes the page to
# $BUILD/bench-compression/PROFILE/BENCHMARKS.md. Unlike `bench/run.sh full`,
# it touches no committed page: copy the figures into docs/bench/compression.md.
# BUILD (default build) picks the binaries, so two builds can be compared.
# Runs under chrt -f 50 when it can (less noise from builds on a shared machine).
set -eu
profile=${1:?usage: bench/compression.sh latency|network|remote [RUNS]}
runs=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
build=${BUILD:-build}
case "$build" in /*) ;; *) build="$repo/$build" ;; esac
out="$build/bench-compression/$profile"
[ "$(id -u)" -eq 0 ] || { echo "bench/compression.sh: needs root" >&2; exit 1; }
[ -x "$build/bench/delayfs" ] || { echo "bench/compression.sh: $build/bench/delayfs missing: run make" >&2; exit 1; }

work=$(mktemp -d /dev/shm/cairn-bench.XXXXXX)
trap '"$here/cleanup.sh" "$work" || true' EXIT
mkdir -p "$out/bench"
rt=""
chrt -f 50 true 2>/dev/null && rt="chrt -f 50"
uptime
# shellcheck disable=SC2086
$rt /usr/bin/python3 -B "$here/bench.py" --mode full --work "$work" --build "$build" \
  --out "$out" --profile "$profile" --only java --runs "$runs" --compressed
uptime
echo "bench/compression.sh: $out/BENCHMARKS.md"
