#!/bin/sh
# extract never writes outside DIR, whatever names the image holds. Hostile
# images are made from a real one by renaming entries in place (checksums
# re-sealed): a symlink and a directory of the same name (the directory's files
# must not land where the symlink points), a name holding '/', a name '..'.
set -u
here=$(cd "$(dirname "$0")" && pwd)
CAIRN=${CAIRN:-build/cairn}
work=$(mktemp -d /tmp/cairn-xsafe.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

if "$CAIRN" mkfs --help 2>&1 | grep -q "not built yet"; then
  echo "cairn mkfs is not built yet"; exit 77
fi
python3 -c 'import ctypes; ctypes.CDLL("libxxhash.so.0")' 2>/dev/null ||
  { echo "libxxhash.so.0 not loadable from python"; exit 77; }

mkdir -p "$work/src/a-linl" "$work/src/Q7dir" "$work/outside"
ln -s ../outside "$work/src/a-link"   # from DIR/a-link: $work/outside
echo two > "$work/src/Zq"
echo pwned > "$work/src/a-linl/pwned"
echo pwned > "$work/src/Q7dir/pwned2"
echo data > "$work/src/abc.txt"
# --plain-meta: treetool rename patches names where the superblock says.
"$CAIRN" mkfs -q --plain-meta "$work/src" "$work/good.img" || fail "mkfs"

check() { # image, what
  rm -rf "$work/out"
  if "$CAIRN" extract "$1" "$work/out" >"$work/log" 2>&1; then
    fail "$2: extract succeeded"
  fi
  grep -q "cairn extract" "$work/log" || fail "$2: no error message"
  [ -z "$(ls -A "$work/outside")" ] || fail "$2: wrote into the symlink target"
  [ ! -e "$work/pwned" ] && [ ! -e "$work/pwned2" ] && [ ! -e "$work/pwn" ] ||
    fail "$2: wrote next to DIR"
  echo "ok: $2: $(head -1 "$work/log")"
}

cp "$work/good.img" "$work/dup.img"
python3 "$here/treetool.py" rename "$work/dup.img" a-linl a-link || fail "rename"
check "$work/dup.img" "symlink and directory of one name"
"$CAIRN" fsck -q "$work/dup.img" >/dev/null; [ $? -eq 1 ] || fail "fsck missed the duplicate name"

cp "$work/good.img" "$work/slash.img"
python3 "$here/treetool.py" rename "$work/slash.img" a-linl ../pwn || fail "rename"
check "$work/slash.img" "name with '/'"

cp "$work/good.img" "$work/dotdot.img"
python3 "$here/treetool.py" rename "$work/dotdot.img" Zq .. || fail "rename"
check "$work/dotdot.img" "name '..'"

cp "$work/good.img" "$work/dotdot2.img"
python3 "$here/treetool.py" rename "$work/dotdot2.img" Q7dir ../.. || fail "rename"
check "$work/dotdot2.img" "name '../..'"

# By default the symlink leading outside DIR is restored as it is (exit 0), and
# nothing is written where it points.
rm -rf "$work/out"
"$CAIRN" extract "$work/good.img" "$work/out" 2>"$work/log" || fail "good image: $(cat "$work/log")"
[ "$(readlink "$work/out/a-link")" = ../outside ] || fail "symlink not restored verbatim"
[ -f "$work/out/abc.txt" ] || fail "default extract"
[ -z "$(ls -A "$work/outside")" ] || fail "good image wrote through its symlink"
# A second extract over the first merges into the directories and overwrites
# nothing: the symlink stays a symlink, its target stays empty.
"$CAIRN" extract "$work/good.img" "$work/out" 2>"$work/log" && fail "second extract succeeded"
grep -q "a-link: File exists" "$work/log" || fail "second extract: $(cat "$work/log")"
[ -L "$work/out/a-link" ] && [ -z "$(ls -A "$work/outside")" ] || fail "second extract followed the link"

# --safe-links skips it (exit 1, named), the rest extracts.
rm -rf "$work/out"
"$CAIRN" extract --safe-links "$work/good.img" "$work/out" 2>"$work/log" && fail "--safe-links kept it"
grep -q "skipping symlink to '../outside'" "$work/log" || fail "no message: $(cat "$work/log")"
[ -f "$work/out/abc.txt" ] && [ ! -e "$work/out/a-link" ] || fail "--safe-links extract"

# --unsafe-links is accepted (old scripts) and changes nothing.
rm -rf "$work/out"
"$CAIRN" extract --unsafe-links "$work/good.img" "$work/out" || fail "--unsafe-links"
[ -L "$work/out/a-link" ] || fail "symlink not restored as a symlink"
[ -z "$(ls -A "$work/outside")" ] || fail "good image wrote through its symlink"
echo "extract_safety: all checks passed"
