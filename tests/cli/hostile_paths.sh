#!/bin/sh
# Path safety of `cairn extract` against hostile images: entry names "..",
# ".", absolute and with '/' (hand-crafted with tests/progs/craft, checksums
# recomputed), and symlinks that lead outside the target however they are
# spelled: absolute, "../..", and chains through other links of the image.
# Every refusal is a clear message and a non-zero exit; nothing is ever created
# outside the target; the safe entries are still extracted. Symlinks are
# restored verbatim by default and nothing is written through them;
# --safe-links skips those leading outside, each named.
. "$(dirname "$0")/common.inc"
need_prog craft
trap 'chmod -R u+rwx "$W" 2>/dev/null; rm -rf "$W"' EXIT INT TERM
mkdir "$W/outside"

# Nothing but out/ (and the canary) may appear in $W, the canary stays empty,
# and the absolute targets the crafted names point at never appear. With
# --safe-links ($1 = safe) no symlink in out/ leads outside it either.
check_contained() {
  extra=$(ls -A "$W" | grep -v -x -e out -e outside -e src -e img -e log -e order || true)
  [ -z "$extra" ] || fail "created outside the target: $extra"
  [ -z "$(ls -A "$W/outside")" ] || fail "wrote into the canary directory"
  [ ! -e /xpwn ] || fail "/xpwn was created"
  [ "${1:-}" = safe ] || return 0
  # Every symlink left in out/ must resolve inside out/.
  find "$W/out" -type l | while read -r l; do
    r=$(readlink -m "$l")
    case $r in "$W/out"|"$W/out"/*) ;; *) fail "symlink $l -> $(readlink "$l") leads to $r";; esac
  done
}

# extract IMAGE: must exit 1 with a message; returns its stderr in $W/log.
extract_refused() {
  rm -rf "$W/out"
  set +e; "$CAIRN" extract "$@" "$W/img" "$W/out" 2>"$W/log"; rc=$?; set -e
  [ $rc -eq 1 ] || { cat "$W/log"; fail "extract exited $rc (want 1)"; }
  [ -s "$W/log" ] || fail "extract failed without a message"
  if [ "${1:-}" = --safe-links ]; then check_contained safe; else check_contained; fi
}

# --- 1. crafted entry names -----------------------------------------------
mkdir "$W/src"
for n in dd dots4 abs_n slash; do echo "$n" > "$W/src/$n"; done
mkdir "$W/src/xpwn2"; echo inner > "$W/src/xpwn2/f"
echo keep > "$W/src/safe"
# --no-verity: craft fixes the XXH3 checksums only, so an image with digests
# would be refused at open (tests/cli/verify.sh) before the names are seen.
for pair in "dd .." "dots4 ../x" "abs_n /xpwn" "slash a/b" "xpwn2 ../p2"; do
  set -- $pair
  "$CAIRN" mkfs -q --no-verity --plain-meta "$W/src" "$W/img"
  "$CRAFT" rename "$W/img" "$1" "$2"
  extract_refused
  grep -q -i -e "corrupt" -e "unsafe" "$W/log" || { cat "$W/log"; fail "no reason given for '$2'"; }
  # The other read commands refuse the name too, and none of them crash.
  for cmd in "ls -R" "fsck"; do
    set +e; "$CAIRN" $cmd "$W/img" >/dev/null 2>&1; rc=$?; set -e
    [ $rc -ge 1 ] && [ $rc -lt 128 ] || fail "cairn $cmd on name '$2' exited $rc"
  done
done
rm -rf "$W/src"

# --- 2. symlinks (mkfs stores any target as it is) --------------------------
mkdir -p "$W/src/dir/sub"
echo t > "$W/src/t"
ln -s /xpwn "$W/src/abs"
ln -s "$W/outside" "$W/src/abs_dir"
ln -s ../../x "$W/src/dir/up2"
ln -s .. "$W/src/dir/up_ok"            # the root: inside
ln -s ../.. "$W/src/dir/sub/up_ok2"    # the root: inside
ln -s ../../.. "$W/src/dir/sub/up3"    # one above
ln -s . "$W/src/self"
ln -s self/.. "$W/src/chain"           # "." then ".." climbs out
ln -s dir/sub/up_ok2/.. "$W/src/chain2" # up_ok2 is the root, its ".." is outside
ln -s dir/../t "$W/src/in_ok"
ln -s missing/../../x "$W/src/dangling_up"
ln -s loop2 "$W/src/loop1"; ln -s loop1 "$W/src/loop2"
"$CAIRN" mkfs -q "$W/src" "$W/img"
extract_refused --safe-links
for l in abs abs_dir dir/up2 dir/sub/up3 chain chain2 dangling_up; do
  [ ! -e "$W/out/$l" ] && [ ! -L "$W/out/$l" ] || fail "unsafe symlink $l was extracted"
  grep -q "$l: skipping symlink" "$W/log" || { cat "$W/log"; fail "no message for $l"; }
done
for l in dir/up_ok dir/sub/up_ok2 self in_ok loop1 loop2; do
  [ -L "$W/out/$l" ] || { cat "$W/log"; fail "safe symlink $l is missing"; }
done
[ "$(cat "$W/out/in_ok")" = t ] || fail "in_ok does not read t"

# By default they are all restored verbatim, and nothing is written through them.
rm -rf "$W/out"
"$CAIRN" extract "$W/img" "$W/out" || fail "extract failed"
check_contained
for l in abs abs_dir dir/up2 dir/sub/up3 chain chain2 dangling_up; do
  [ "$(readlink "$W/out/$l")" = "$(readlink "$W/src/$l")" ] || fail "$l not verbatim"
done
# --unsafe-links (old scripts) changes nothing.
rm -rf "$W/out"
"$CAIRN" extract --unsafe-links "$W/img" "$W/out" || fail "extract --unsafe-links failed"
[ "$(readlink "$W/out/abs")" = /xpwn ] || fail "--unsafe-links did not keep abs"

# --- 3. a symlink and a directory under one name: no write through it -----
rm -rf "$W/src" "$W/out"
mkdir -p "$W/src/lnkx" "$W/src/d"
echo pwned > "$W/src/lnkx/pwn"
ln -s "$W/outside" "$W/src/lnky"
"$CAIRN" mkfs -q --plain-meta "$W/src" "$W/img"
"$CRAFT" rename "$W/img" lnkx lnky
set +e; "$CAIRN" extract --unsafe-links "$W/img" "$W/out" 2>"$W/log"; rc=$?; set -e
[ $rc -eq 1 ] || { cat "$W/log"; fail "extract of a name used twice exited $rc"; }
check_contained
[ -z "$(ls -A "$W/outside")" ] || fail "extract wrote through a symlink into the canary"
echo "hostile paths: ok"
