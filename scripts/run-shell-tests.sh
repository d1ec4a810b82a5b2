#!/bin/sh
# Runs shell tests with CAIRN pointing at the built tool:
#   run-shell-tests.sh BUILD SUITE_DIR|TEST.sh...
# a directory stands for every tests/<suite>/*.sh in it, a file for itself.
# Each script exits 0 (pass), 77 (skipped, with a reason) or anything else (fail).
set -u
build=$1; shift
CAIRN=$(cd "$build" && pwd)/cairn; export CAIRN
CAIRN_BUILD=$(cd "$build" && pwd); export CAIRN_BUILD
fail=0
list=$(mktemp)
for a in "$@"; do
  if [ -d "$a" ]; then ls "$a"/*.sh 2>/dev/null; else echo "$a"; fi
done > "$list"
while read -r t; do
  if [ ! -f "$t" ]; then
    echo "FAIL $t: no such test"; fail=1; continue
  fi
  log="$build/$(echo "$t" | tr / _).log"
  sh "$t" >"$log" 2>&1 </dev/null; rc=$?
  case $rc in
    0) echo "ok   $t" ;;
    77) echo "skip $t: $(tail -n 1 "$log")" ;;
    *) echo "FAIL $t (rc=$rc, log: $log)"; tail -n 40 "$log"; fail=1 ;;
  esac
done < "$list"
rm -f "$list"
exit $fail
