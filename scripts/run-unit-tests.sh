#!/bin/sh
# Runs each cmocka test program; prints a summary and fails if any failed.
set -u
fail=0
for t in "$@"; do
  if ! "$t" >"$t.log" 2>&1; then
    echo "FAIL $t (log: $t.log)"; tail -n 30 "$t.log"; fail=1
  else
    echo "ok   $t"
  fi
done
exit $fail
