#!/bin/sh
# Learned prefetch without a rebuild: -o prefetch=TRACE on an image laid out in
# path order, IMAGE.profile by default (and noprofile), a stale profile (another
# tree's), and -o learn=FILE across runs, including a daemon killed with -9.
# Device requests are counted with -o stats=, never timed.
. "$(dirname "$0")/common.inc"
SRC=$WORK/src
mkdir -p "$SRC/d" "$SRC/lib"
for i in 00 01 02 03 04 05 06 07 08 09 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29; do
  head -c 100000 /dev/urandom > "$SRC/d/f$i"
done
head -c 2000000 /dev/urandom > "$SRC/lib/big.so"
"$CAIRN" mkfs -q "$SRC" "$WORK/img.cairn" || fail "mkfs"
M=$WORK/m
# The workload: every third small file whole, and a piece of big.so.
work() {
  for i in 00 03 06 09 12 15 18 21 24 27; do cat "$M/d/f$i" > /dev/null || fail "read f$i"; done
  dd if="$M/lib/big.so" of=/dev/null bs=64k skip=10 count=2 2>/dev/null || fail "read big.so"
}
# run_cold NAME OPTS: mount, run the workload, unmount; counters in $WORK/NAME.stats
run_cold() { run_workload "$1" "$WORK/img.cairn" "$2"; }

mnt "$M" "$WORK/img.cairn" -o trace="$WORK/trace" || fail "mount with trace="
work
umnt "$M"
[ -s "$WORK/trace" ] || fail "no trace"

run_cold plain ""
run_cold prof "prefetch=$WORK/trace"
plain=$(key device_requests "$WORK/plain.stats"); prof=$(key device_requests "$WORK/prof.stats")
echo "device requests: $plain without a profile, $prof with prefetch=TRACE"
[ "$(key profile_missing "$WORK/prof.stats")" = 0 ] || fail "profile paths missing"
[ "$(key profile_records "$WORK/prof.stats")" -gt 0 ] || fail "profile not used"
[ "$(key push_bytes "$WORK/prof.stats")" -gt 0 ] || fail "nothing pushed"
[ "$prof" -lt "$plain" ] || fail "prefetch=TRACE did not cut requests ($plain -> $prof)"

# A profile that cannot be read fails the mount, before anything is mounted.
mkdir -p "$M"
if "$CAIRN" mount -o prefetch="$WORK/none" "$WORK/img.cairn" "$M" 2>"$WORK/err"; then
  fail "mounted with a missing prefetch= file"
fi
grep -q "$WORK/none" "$WORK/err" || fail "error does not name the profile: $(cat "$WORK/err")"
mountpoint -q "$M" && fail "half-mounted"

# IMAGE.profile is used by default; noprofile turns it off.
cp "$WORK/trace" "$WORK/img.cairn.profile"
run_cold beside ""
[ "$(key profile_records "$WORK/beside.stats")" -gt 0 ] || fail "IMAGE.profile not used"
[ "$(key device_requests "$WORK/beside.stats")" -lt "$plain" ] || fail "IMAGE.profile: no fewer requests"
run_cold noprof noprofile
grep -q '^profile_records' "$WORK/noprof.stats" && fail "noprofile still used IMAGE.profile"
rm -f "$WORK/img.cairn.profile"

# A stale profile: another tree's trace, ranges past the end, garbage. The mount
# works and every byte is right.
{ sed 's|^/d/|/gone/|' "$WORK/trace"; echo "/lib/big.so 999999999 4096"; echo "/d/f01 0 99999999";
  echo "/d 0 4096"; head -c 3000 /dev/urandom | tr -d '\000'; echo; } > "$WORK/stale"
mnt "$M" "$WORK/img.cairn" -o "prefetch=$WORK/stale,stats=$WORK/stale.stats" 2>"$WORK/stale.err" ||
  fail "stale profile refused"
diff -r "$SRC" "$M" || fail "content differs under a stale profile"
umnt "$M"
grep -q warning "$WORK/stale.err" && fail "a profile with ranges that match warned: $(cat "$WORK/stale.err")"
# ... and one of which nothing matches (the wrong file given) mounts too, but
# says so: it was silent.
{ sed 's|^/|/gone/|' "$WORK/trace"; echo "/d/f01 999999999 4096"; } > "$WORK/other"
mnt "$M" "$WORK/img.cairn" -o "prefetch=$WORK/other" 2>"$WORK/other.err" || fail "foreign profile refused"
diff -r "$SRC" "$M" || fail "content differs under a foreign profile"
umnt "$M"
grep -q "^cairn mount: $WORK/other: warning: no range of the profile is in this image (of [0-9]* records, [0-9]* name no file of it and 1 start past its end); nothing is prefetched\$" \
  "$WORK/other.err" || fail "a profile that matches nothing: $(cat "$WORK/other.err")"
wait_file "$WORK/stale.stats" || fail "no stats"
[ "$(key profile_missing "$WORK/stale.stats")" -gt 0 ] || fail "stale paths not counted"
[ "$(key profile_past_eof "$WORK/stale.stats")" -gt 0 ] || fail "ranges past EOF not counted"

# learn=FILE: the first run traces, the next prefetch and refine it.
L=$WORK/app.profile
run_cold learn1 "learn=$L"
[ -s "$L" ] || fail "learn= wrote no profile"
grep -q "^/d/f00 0 " "$L" || fail "profile lacks the first file: $(head -3 "$L")"
grep -q "^/d/f01 " "$L" && fail "profile holds a file nobody read"
cp "$L" "$WORK/learn1.profile"
run_cold learn2 "learn=$L"
[ "$(key profile_records "$WORK/learn2.stats")" -gt 0 ] || fail "learn= did not use its profile"
[ "$(key device_requests "$WORK/learn2.stats")" -lt "$plain" ] || fail "learn=: no fewer requests"
cmp "$L" "$WORK/learn1.profile" || { diff "$WORK/learn1.profile" "$L"; fail "the same workload grew the profile"; }
# A new file read joins the profile, after what was there.
mnt "$M" "$WORK/img.cairn" -o "learn=$L" || fail "mount learn= (3)"
work; cat "$M/d/f01" > /dev/null
umnt "$M"
head -n "$(wc -l < "$WORK/learn1.profile")" "$L" | cmp - "$WORK/learn1.profile" ||
  fail "refining reordered the profile"
grep -q "^/d/f01 0 " "$L" || fail "the new file was not learned"
ls "$WORK" | grep -q 'app.profile\.' && fail "temporary files left: $(ls "$WORK")"

# kill -9 of a learning daemon leaves the profile as it was.
cp "$L" "$WORK/before.profile"
mnt "$M" "$WORK/img.cairn" -o "learn=$L" || fail "mount learn= (kill)"
work; cat "$M/d/f02" > /dev/null
kill_daemon "$M"
cmp "$L" "$WORK/before.profile" || fail "profile changed by a killed daemon"
ls "$WORK" | grep -q '^app.profile.trace.' || fail "the killed run left no trace (test is stale)"
# The next learning run sweeps the dead run's trace away, and works.
run_cold learn4 "learn=$L"
ls "$WORK" | grep -q '^app.profile.trace.' && fail "dead run's trace left behind: $(ls "$WORK")"
cmp "$L" "$WORK/before.profile" || fail "profile changed by a run that read nothing new"
echo "profile: ok"
