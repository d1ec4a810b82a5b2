#!/bin/sh
# Compressed ordered + prefetch images against the uncompressed one (issue 12,
# docs/bench/zorder.md): `bench/zorder.sh [PROFILE] [ROUNDS] [RUNS]` runs
# bench.py's java, python and walk workloads ROUNDS times (default 3) with RUNS
# cold runs each (default 5) on cairn ordered + prefetch, its lz4hc and zstd
# twins and zstd with an lz4hc hot prefix (mkfs --hot-codec), under chrt -f 50
# when it can, and prints per round the median cold time, requests and MiB of
# each, with the ratio to the uncompressed image of the same round, then the
# median of those ratios. PROFILE: latency (default) | network | remote.
# BUILD (default build) picks the binaries. Touches no committed page.
set -eu
profile=${1:-latency}
rounds=${2:-3}
runs=${3:-5}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
build=${BUILD:-build}
case "$build" in /*) ;; *) build="$repo/$build" ;; esac
[ "$(id -u)" -eq 0 ] || { echo "bench/zorder.sh: needs root" >&2; exit 1; }
[ -x "$build/bench/delayfs" ] || { echo "bench/zorder.sh: $build/bench/delayfs missing: run make" >&2; exit 1; }
rt=""
chrt -f 50 true 2>/dev/null && rt="chrt -f 50"
systems="cairn_ordered_+_prefetch,cairn_lz4hc_ordered_+_prefetch,cairn_zstd_ordered_+_prefetch"
systems="$systems,cairn_zstd_hot-lz4hc_ordered_+_prefetch"
out=$(mktemp -d /tmp/cairn-zorder.XXXXXX)
work=""
trap '[ -z "$work" ] || "$here/cleanup.sh" "$work" || true; rm -rf "$out"' EXIT
for r in $(seq "$rounds"); do
  work=$(mktemp -d /dev/shm/cairn-bench.XXXXXX)
  echo "round $r: $(uptime)"
  # shellcheck disable=SC2086
  $rt /usr/bin/python3 -B "$here/bench.py" --mode quick --work "$work" --build "$build" \
    --out "$out/$r" --profile "$profile" --compressed --only java,python,walk \
    --runs "$runs" --systems "$systems" >"$out/$r.log" 2>&1 ||
    { tail -5 "$out/$r.log" >&2; exit 1; }
  "$here/cleanup.sh" "$work" || true
  work=""
  echo "round $r done: $(uptime)"
done
/usr/bin/python3 -B - "$out" "$rounds" <<'EOF'
import json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
base = "cairn ordered + prefetch"
ratios = {}
for r in range(1, rounds + 1):
    res = json.load(open(os.path.join(out, str(r), "bench", "results.json")))
    for wl, w in res["workloads"].items():
        rows = {}
        for name, s in w["systems"].items():
            ok = [x for x in s["runs"] if x.get("cold") is not None]
            if ok:
                rows[name] = (statistics.median(x["cold"] for x in ok),
                              statistics.median(x["req"] or 0 for x in ok),
                              statistics.median(x["bytes"] or 0 for x in ok) / 2**20)
        for name, (t, req, mib) in rows.items():
            ratio = t / rows[base][0] if base in rows else float("nan")
            ratios.setdefault((wl, name), []).append(ratio)
            print(f"round {r} {wl:6} {name:45} {t:.3f} s {req:5.0f} req {mib:6.1f} MiB"
                  f" {ratio:.2f}x")
print("median ratio to cairn ordered + prefetch over the rounds:")
for (wl, name), v in ratios.items():
    print(f"  {wl:6} {name:45} {statistics.median(v):.2f}x  ({', '.join(f'{x:.2f}' for x in v)})")
EOF
