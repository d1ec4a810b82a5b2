#!/bin/sh
# Fault campaign through the CLI: the hidden --fault-* options put a fault
# device under the cache. Every device request of `cairn cat` is failed in
# turn (EIO, and short reads), then cat, ls -R, fsck --data and extract run
# with faults at random: each run either succeeds with exactly the right
# output or exits 1 naming the IO error; nothing crashes (exit < 128), and
# without the fault every command reads everything correctly again.
set -eu
: "${CAIRN:?}"
W=$(mktemp -d /tmp/cairn-faults.XXXXXX)
trap 'rm -rf "$W"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$W/src/d/e"
head -c 700000 /dev/urandom > "$W/src/big"
head -c 9000 /dev/urandom > "$W/src/d/mid"
echo small > "$W/src/d/e/small"
ln -s d/mid "$W/src/link"
i=0; while [ $i -lt 40 ]; do echo "$i" > "$W/src/d/f$i"; i=$((i + 1)); done
"$CAIRN" mkfs -q "$W/src" "$W/img"
CACHE="--segment 16K --max-io 64K --cache-size 256K"

# run_ok_or_eio WHAT EXPECTED_FILE CMD...: exit 0 with the expected stdout, or
# exit 1 (fsck: 4, "cannot be read") with an IO error message. Returns 0 on
# success, 1 on a clean failure.
run_ok_or_eio() {
  what=$1; want=$2; shift 2
  fail_rc=1; [ "$2" = fsck ] && fail_rc=4
  set +e; "$@" >"$W/out" 2>"$W/err"; rc=$?; set -e
  if [ $rc -eq 0 ]; then
    [ -z "$want" ] || cmp -s "$W/out" "$want" || fail "$what: exit 0 with wrong output"
    return 0
  fi
  [ $rc -eq $fail_rc ] || { cat "$W/err"; fail "$what: exit $rc (crash?)"; }
  grep -q -e "Input/output error" -e "I/O error" "$W/err" || { cat "$W/err"; fail "$what: no IO error message"; }
  ! grep -q -i corrupt "$W/err" || { cat "$W/err"; fail "$what: an IO error reported as corruption"; }
  return 1
}

# 1. Each request of `cat /big` in turn, as EIO then as a short read.
for kind in "" --fault-short; do
  n=1; failed=0
  while [ $n -le 200 ]; do
    if run_ok_or_eio "cat /big fault $n $kind" "$W/src/big" \
        "$CAIRN" cat $CACHE --fault-nth $n $kind "$W/img" /big; then
      : # a success: past the last request, or the failed one was speculative
        # readahead that the reader fetched again (timing decides which request
        # that is, so a success does not end the walk)
    else
      failed=$((failed + 1))
    fi
    [ $n -lt 30 ] || break
    n=$((n + 1))
  done
  echo "cat /big: failed requests 1..$n in turn${kind:+ ($kind)}: $failed runs got EIO"
  [ -n "$kind" ] || [ $failed -ge 3 ] || fail "the fault option never fired"
done

# 1b. An EIO says why, once: the image's path (the file under the fault device),
# the byte range and the cause, in one line; exit 1.
"$CAIRN" cat $CACHE --fault-nth 2 --fault-persistent "$W/img" /big >/dev/null 2>"$W/err" && fail "cat: fault 2 did not fire"
[ "$(grep -c . "$W/err")" -eq 1 ] || fail "cat EIO: not one line: $(cat "$W/err")"
grep -q "^cairn cat: $W/img: /big: Input/output error: bytes [0-9]*-[0-9]*: injected fault: EIO$" "$W/err" ||
  fail "cat EIO: the range and cause not named: $(cat "$W/err")"
rm -rf "$W/x"
rc=0; "$CAIRN" extract $CACHE --fault-nth 3 --fault-persistent "$W/img" "$W/x" 2>"$W/err" || rc=$?
[ $rc -eq 1 ] || fail "extract EIO: exit $rc, not 1"
grep -q "^cairn extract: $W/x/big: Input/output error: $W/img: bytes [0-9]*-[0-9]*: injected fault: EIO$" "$W/err" ||
  fail "extract EIO: the path, range and cause not named: $(cat "$W/err")"
"$CAIRN" info --fault-nth 1 "$W/img" 2>"$W/err" && fail "info: fault 1 did not fire"
grep -q "cannot read block 0: Input/output error: $W/img: bytes 0-[0-9]*: injected fault: EIO$" "$W/err" ||
  fail "info EIO at open: the cause not named: $(cat "$W/err")"
echo "an EIO names the file, the range and the cause"

# 2. Random faults on every command, many seeds.
"$CAIRN" ls -R "$W/img" > "$W/ls.want"
fired=0
seed=1
while [ $seed -le 25 ]; do
  F="--fault-random 150 --fault-seed $seed"
  [ $((seed % 4)) -eq 0 ] && F="$F --fault-persistent"
  for c in "cat /big:$W/src/big" "cat /d/mid:$W/src/d/mid" "ls:$W/ls.want"; do
    cmd=${c%%:*}; want=${c#*:}
    if [ "$cmd" = ls ]; then set -- ls -R; else set -- $cmd; fi
    sub=$1; shift
    run_ok_or_eio "$cmd seed $seed" "$want" "$CAIRN" "$sub" $CACHE $F "$W/img" "$@" ||
      fired=$((fired + 1))
  done
  run_ok_or_eio "fsck seed $seed" "" "$CAIRN" fsck --data $CACHE $F "$W/img" ||
    fired=$((fired + 1))
  rm -rf "$W/x"
  run_ok_or_eio "extract seed $seed" "" "$CAIRN" extract $CACHE $F "$W/img" "$W/x" ||
    fired=$((fired + 1))
  seed=$((seed + 1))
done
echo "random faults: $fired of 125 runs failed cleanly with EIO"
[ $fired -ge 10 ] || fail "random faults hardly fired"

# 3. Without the fault everything is right.
"$CAIRN" cat "$W/img" /big | cmp -s - "$W/src/big" || fail "cat after faults"
"$CAIRN" fsck --data "$W/img" >/dev/null || fail "fsck after faults"
rm -rf "$W/x"
"$CAIRN" extract "$W/img" "$W/x" || fail "extract after faults"
cmp -s "$W/x/big" "$W/src/big" && cmp -s "$W/x/d/mid" "$W/src/d/mid" || fail "extracted data"
echo "faults: ok"
