#!/bin/sh
# Runs every tests/<suite>/*.sh with CAIRN pointing at the built tool.
# Each script exits 0 (pass), 77 (skipped, with a reason) or anything else (fail).
set -u
build=$1; dir=$2
CAIRN=$(cd "$build" && pwd)/cairn; export CAIRN
CAIRN_BUILD=$(cd "$build" && pwd); export CAIRN_BUILD
fail=0
for t in "$dir"/*.sh; do
  [ -e "$t" ] || continue
  log="$build/$(echo "$t" | tr / _).log"
  sh "$t" >"$log" 2>&1; rc=$?
  case $rc in
    0) echo "ok   $t" ;;
    77) echo "skip $t: $(tail -n 1 "$log")" ;;
    *) echo "FAIL $t (rc=$rc, log: $log)"; tail -n 40 "$log"; fail=1 ;;
  esac
done
exit $fail
