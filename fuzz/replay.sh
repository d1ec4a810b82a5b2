#!/bin/sh
# Called by `make test`: builds every fuzz target with clang and
# -fsanitize=fuzzer,address,undefined (fuzz/Makefile) and replays the seed
# corpus fuzz/corpus/<target>/ and every crash ever found,
# fuzz/regressions/<target>/, once each (-runs=0). Leak checks are on. Fails on
# the first sanitizer report, crash, leak or timeout. Needs only the Debian
# packages of scripts/deps.sh (clang, libclang-rt-14-dev).
set -u
cd "$(dirname "$0")/.."
: "${FUZZ_BUILD:=build-fuzz}"
make -s -f fuzz/Makefile -j2 FUZZ_BUILD="$FUZZ_BUILD" || { echo "fuzz: build failed"; exit 1; }
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS UBSAN_OPTIONS

# Seed folders of a target: its own corpus and regressions; extract also
# starts from the image seeds (every image is a valid extract input).
corpus_dirs() {
  echo "fuzz/corpus/$1 fuzz/regressions/$1"
  [ "$1" = extract ] && echo "fuzz/corpus/image fuzz/regressions/image"
  return 0
}
fail=0
for t in $(make -s -f fuzz/Makefile list); do
  name=${t#fuzz_}
  dirs=""
  for d in $(corpus_dirs "$name"); do
    [ -d "$d" ] && [ -n "$(ls -A "$d")" ] && dirs="$dirs $d"
  done
  if [ -z "$dirs" ]; then echo "skip fuzz/$t: no corpus"; continue; fi
  log=$FUZZ_BUILD/replay-$name.log
  n=$(find $dirs -type f | wc -l)
  # shellcheck disable=SC2086
  if "$FUZZ_BUILD/$t" -runs=0 -timeout=60 -rss_limit_mb=1024 -malloc_limit_mb=256 \
       $dirs >"$log" 2>&1; then
    echo "ok   fuzz/$t: $n inputs replayed"
  else
    echo "FAIL fuzz/$t (log: $log)"; tail -n 40 "$log"; fail=1
  fi
done
exit $fail
