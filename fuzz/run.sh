#!/bin/sh
# `make fuzz`: builds every fuzz target (fuzz/Makefile) and runs each for
# FUZZ_SECONDS (default 60) on its corpus. New interesting inputs go to
# build-fuzz/corpus/<target>/ (the committed corpus is only read), crashes to
# build-fuzz/crashes/<target>/. A target that finds a crash, leak or timeout
# fails the run; minimise the input (fuzz_X -minimize_crash=1 ...), add it to
# fuzz/regressions/<target>/ under a name that says what it caught, fix the bug.
#
# env: FUZZ_SECONDS  time per target (the long runs of docs/HARDENING.md: 1800)
#      FUZZ_TARGETS  space-separated subset (default: all)
#      FUZZ_JOBS     parallel targets (default 1; the machine is shared)
#      FUZZ_BUILD    build folder (default build-fuzz)
#      FUZZ_TIMEOUT  seconds one input may run (default 25; 5 finds hangs sooner)
#      FUZZ_RSS_MB   process RSS limit in MiB (default 1024)
set -u
cd "$(dirname "$0")/.."
: "${FUZZ_SECONDS:=60}" "${FUZZ_JOBS:=1}" "${FUZZ_BUILD:=build-fuzz}"
: "${FUZZ_TIMEOUT:=25}" "${FUZZ_RSS_MB:=1024}"
export FUZZ_BUILD
make -s -f fuzz/Makefile -j2 FUZZ_BUILD="$FUZZ_BUILD" || exit 1
targets=${FUZZ_TARGETS:-$(make -s -f fuzz/Makefile list)}
# Leak checks on; abort on the first report so libFuzzer saves the input.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_OPTIONS UBSAN_OPTIONS

# Seed folders of a target: its own corpus and regressions; extract also
# starts from the image seeds (every image is a valid extract input).
corpus_dirs() {
  echo "fuzz/corpus/$1 fuzz/regressions/$1"
  [ "$1" = extract ] && echo "fuzz/corpus/image fuzz/regressions/image"
  return 0
}

run_one() { # target
  t=$1; name=${t#fuzz_}
  corpus=$FUZZ_BUILD/corpus/$name; crashes=$FUZZ_BUILD/crashes/$name
  mkdir -p "$corpus" "$crashes"
  seeds=""
  for d in $(corpus_dirs "$name"); do [ -d "$d" ] && seeds="$seeds $d"; done
  log=$FUZZ_BUILD/$name.log
  # -malloc_limit_mb: one allocation above this is a finding (bounded memory);
  # -rss_limit_mb the same for the whole process.
  # shellcheck disable=SC2086
  nice -n 10 "$FUZZ_BUILD/$t" -max_total_time="$FUZZ_SECONDS" -timeout="$FUZZ_TIMEOUT" \
    -rss_limit_mb="$FUZZ_RSS_MB" -malloc_limit_mb=256 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$crashes/" "$corpus" $seeds >"$log" 2>&1
  rc=$?
  stats=$(grep -E '^#[0-9]+.*(DONE|cov:)' "$log" | tail -n 1)
  execs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
  printf '%-14s rc=%s execs=%s  %s\n' "$name" "$rc" "${execs:-?}" "$stats"
  [ "$rc" = 0 ] || { echo "  see $log and $crashes/"; return 1; }
}

fail=0
if [ "$FUZZ_JOBS" -gt 1 ]; then
  pids=""
  for t in $targets; do run_one "$t" & pids="$pids $!"; done
  for p in $pids; do wait "$p" || fail=1; done
else
  for t in $targets; do run_one "$t" || fail=1; done
fi
exit $fail
