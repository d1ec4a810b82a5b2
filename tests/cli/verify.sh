#!/bin/sh
# Verified images through the CLI: mkfs prints the root digest, info shows it,
# `cairn digest` recomputes it; --digest refuses a wrong root on every reading
# command before anything is printed; reproducible images have reproducible
# digests; a flipped data byte (a sample of flips over metadata, digest table and
# data) makes cat and extract exit 1 with no wrong bytes written and no finished
# file left (cat writes the good bytes before the bad granule), fsck and
# `cairn digest` name it, and --verify none serves it.
set -u
CAIRN=${CAIRN:-build/cairn}
work=$(mktemp -d /tmp/cairn-verify.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$work/src/d"
python3 -c "import sys; sys.stdout.buffer.write(bytes((i * 7 + (i >> 8)) & 255 for i in range(300000)))" \
  > "$work/src/d/big"
echo small > "$work/src/s"
"$CAIRN" mkfs --mtime 1 "$work/src" "$work/img" > "$work/out" || fail "mkfs failed"
root=$(sed -n 's/.*: root digest \(sha256:[0-9a-f]*\)$/\1/p' "$work/out")
[ ${#root} -eq 71 ] || fail "mkfs printed no root digest: $(cat "$work/out")"
"$CAIRN" mkfs -q --mtime 1 "$work/src" "$work/img2" > "$work/out2" || fail "second mkfs failed"
[ -s "$work/out2" ] && fail "mkfs -q printed: $(cat "$work/out2")"
[ "$("$CAIRN" digest "$work/img2")" = "$root" ] || fail "reproducible build, different digest"
"$CAIRN" info "$work/img" | grep -q "^root digest:   $root\$" || fail "info does not show the root"
"$CAIRN" info --json "$work/img" | grep -q "\"root_digest\": \"$root\"" || fail "info --json"
[ "$("$CAIRN" digest "$work/img")" = "$root" ] || fail "cairn digest differs from mkfs"
"$CAIRN" digest --digest "$root" "$work/img" >/dev/null || fail "digest --digest (right root)"

# A wrong root refuses every reading command, before any output.
wrong=$(echo "$root" | sed 's/.$/0/')
[ "$wrong" = "$root" ] && wrong=$(echo "$root" | sed 's/.$/1/')
for cmd in "info" "ls" "cat /s" "stat /s" "extract $work/x1" "fsck" "bench read" "digest"; do
  # shellcheck disable=SC2086
  set -- $cmd
  c=$1; shift
  if [ "$c" = bench ]; then c="bench read"; shift; fi
  # shellcheck disable=SC2086
  $CAIRN $c --digest "$wrong" "$work/img" "$@" > "$work/o" 2> "$work/e"; rc=$?
  [ $rc -ne 0 ] || fail "$cmd accepted a wrong --digest"
  grep -q "root digest is $root" "$work/o" "$work/e" || fail "$cmd: $(cat "$work/o" "$work/e")"
  case $c in fsck|digest) ;; *) [ -s "$work/o" ] && fail "$cmd printed before refusing" ;; esac
done
[ -e "$work/x1" ] && [ -n "$(ls -A "$work/x1")" ] && fail "extract wrote files for a wrong root"
# digest of sound bytes under a wrong root: one finding, the root; no "mismatch"
# of bytes that all match their own root.
"$CAIRN" digest --digest "$wrong" "$work/img" > "$work/o" 2>&1
[ "$(cat "$work/o")" = "$work/img: root digest is $root, expected $wrong" ] ||
  fail "digest of sound bytes, wrong root: $(cat "$work/o")"
"$CAIRN" cat --digest "$root" "$work/img" /d/big | cmp -s - "$work/src/d/big" ||
  fail "cat with the right digest"
"$CAIRN" cat --verify none --digest "$root" "$work/img" /s >/dev/null 2>&1 &&
  fail "--digest with --verify none was accepted"
"$CAIRN" mkfs -q --no-verity "$work/src" "$work/plain" || fail "mkfs --no-verity"
"$CAIRN" info "$work/plain" | grep -q "^root digest:   none" || fail "info of a plain image"
"$CAIRN" cat --digest "$root" "$work/plain" /s >/dev/null 2>"$work/e" && fail "pinned plain image"
grep -q "the image has no digests" "$work/e" || fail "plain image refusal: $(cat "$work/e")"
"$CAIRN" cat "$work/plain" /s >/dev/null || fail "plain image without --digest"

# Flips: block 0, the digest table, metadata, and data of /d/big.
size=$(stat -c %s "$work/img")
meta=$("$CAIRN" info --json "$work/img" | sed 's/.*"meta_off": \([0-9]*\).*/\1/')
data=$("$CAIRN" info --json "$work/img" | sed 's/.*"data_off": \([0-9]*\).*/\1/')
for off in 0 100 300 400 500 4096 4200 $meta $((meta + 200)) $((data - 1)) $data \
           $((data + 150000)) $((data + 299999)) $((size - 1)); do
  cp "$work/img" "$work/bad"
  printf '\377' | dd of="$work/bad" bs=1 seek="$off" conv=notrunc 2>/dev/null
  cmp -s "$work/img" "$work/bad" && { printf '\376' | dd of="$work/bad" bs=1 seek="$off" conv=notrunc 2>/dev/null; }
  "$CAIRN" digest --digest "$root" "$work/bad" > "$work/o" 2>&1 && fail "digest missed a flip at $off"
  "$CAIRN" fsck --digest "$root" "$work/bad" > "$work/o" 2>&1 && fail "fsck missed a flip at $off"
  "$CAIRN" cat --digest "$root" "$work/bad" /d/big > "$work/cat" 2>"$work/e"; rc=$?
  if [ $rc -eq 0 ]; then
    cmp -s "$work/cat" "$work/src/d/big" || fail "cat returned wrong bytes (flip at $off)"
  else
    [ $rc -eq 1 ] || fail "cat exit $rc (flip at $off)"
    cmp -s "$work/cat" "$work/src/d/big" && fail "cat failed but wrote everything (flip at $off)"
    head -c "$(stat -c %s "$work/cat")" "$work/src/d/big" | cmp -s - "$work/cat" ||
      fail "cat wrote wrong bytes before failing (flip at $off)"
  fi
  rm -rf "$work/x"
  "$CAIRN" extract --digest "$root" "$work/bad" "$work/x" >/dev/null 2>"$work/e"; rc=$?
  if [ $rc -eq 0 ]; then
    cmp -s "$work/x/d/big" "$work/src/d/big" || fail "extract wrote wrong bytes (flip at $off)"
  else
    [ $rc -eq 1 ] || fail "extract exit $rc (flip at $off)"
    if [ -e "$work/x/d/big" ]; then
      cmp -s "$work/x/d/big" "$work/src/d/big" || fail "extract left a bad /d/big (flip at $off)"
    fi
  fi
done

# A data flip: exactly that file's read fails; --verify none serves the bytes.
cp "$work/img" "$work/bad"
printf 'X' | dd of="$work/bad" bs=1 seek=$((data + 200000)) conv=notrunc 2>/dev/null
"$CAIRN" cat "$work/bad" /d/big > "$work/cat" 2>"$work/e" && fail "cat of a bad granule exit 0"
grep -q "data does not match the image digest" "$work/e" || fail "cat message: $(cat "$work/e")"
# cat writes every byte before the bad granule (128K granules), as cat of a
# dm-verity device does, and names the file byte where the bad ones start.
first=$("$CAIRN" stat "$work/img" /d/big | sed -n 's/.*data: bytes \([0-9]*\)\.\..*/\1/p')
good=$(( (data + 200000) / 131072 * 131072 - first ))
[ "$(stat -c %s "$work/cat")" -eq "$good" ] ||
  fail "cat wrote $(stat -c %s "$work/cat") bytes before the bad granule, not $good"
head -c "$good" "$work/src/d/big" | cmp -s - "$work/cat" || fail "cat's good prefix differs"
grep -q "/d/big: from byte $good: data does not match" "$work/e" || fail "cat names no offset: $(cat "$work/e")"
"$CAIRN" cat "$work/bad" /s | grep -q small || fail "other files must still read"
"$CAIRN" cat --verify none "$work/bad" /d/big | cmp -s - "$work/src/d/big" &&
  fail "--verify none should serve the bad bytes as they are"
"$CAIRN" fsck "$work/bad" | grep -q "granule 1 .*digest mismatch" || fail "fsck names the granule"

# A data flip in granule 0, which holds block 0 too: the superblock and records,
# checked by the root digest, still read, so the image opens (pinned or not),
# and only the reads of the bad granule fail. It said "cannot read the
# superblock" for every command.
[ "$first" -lt 131072 ] || fail "/d/big starts at $first, past granule 0"
cp "$work/img" "$work/bad0"
printf 'X' | dd of="$work/bad0" bs=1 seek=$((first + 100)) conv=notrunc 2>/dev/null
cmp -s "$work/img" "$work/bad0" && fail "the flip in granule 0 changed nothing"
"$CAIRN" info --digest "$root" "$work/bad0" >/dev/null || fail "info of a bad granule 0"
"$CAIRN" cat --digest "$root" "$work/bad0" /s | grep -q small || fail "cat /s over a bad granule 0"
"$CAIRN" cat "$work/bad0" /d/big > "$work/cat" 2>"$work/e" && fail "cat of a bad granule 0 exit 0"
grep -q "/d/big: from byte 0: data does not match the image digest" "$work/e" ||
  fail "cat over a bad granule 0: $(cat "$work/e")"
[ -s "$work/cat" ] && fail "cat wrote bytes of a bad granule 0"
"$CAIRN" fsck "$work/bad0" | grep -q "granule 0 .*digest mismatch" || fail "fsck names granule 0"

# Granules larger than the 4 MiB the whole-image passes read at a time (mkfs
# filling the table, `cairn digest` and fsck checking it): each is read whole.
# Both passes once stepped by zero granules and never ended, hence timeout.
mkdir -p "$work/gsrc"
head -c 9000000 /dev/urandom > "$work/gsrc/big"
for g in 8M 16M; do
  timeout 120 "$CAIRN" mkfs -q --granule $g "$work/gsrc" "$work/g.cairn" || fail "mkfs --granule $g"
  timeout 120 "$CAIRN" digest "$work/g.cairn" > /dev/null || fail "digest of a --granule $g image"
  timeout 120 "$CAIRN" fsck --data "$work/g.cairn" > /dev/null || fail "fsck of a --granule $g image"
  "$CAIRN" cat "$work/g.cairn" /big | cmp -s - "$work/gsrc/big" || fail "cat with --granule $g"
  # every bit inverted: a fixed byte would leave one random image in 256 as it was
  python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(6000000); b = f.read(1)
f.seek(6000000); f.write(bytes([b[0] ^ 255]))' "$work/g.cairn" || fail "flip ($g)"
  timeout 120 "$CAIRN" digest "$work/g.cairn" > "$work/out" && fail "a flipped byte went unseen ($g)"
  grep -q "1 mismatch" "$work/out" || fail "digest ($g): $(cat "$work/out")"
done
echo "verify: ok"
