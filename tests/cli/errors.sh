#!/bin/sh
# Exit codes and messages of the read-side commands: output that cannot be
# written (> /dev/full) is exit 1 with a message; info on something that is not
# an image (a character device, a directory, a FIFO) says what it is, naming the
# path, and does not hang; fsck prints one bad metadata block once, well formed;
# a missing argument is one line naming it.
set -u
CAIRN=${CAIRN:-build/cairn}
work=$(mktemp -d /tmp/cairn-errors.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

mkdir "$work/src"
echo hello > "$work/src/a"
mkdir "$work/src/d"
# --plain-meta: the damage below is written where meta_off says.
"$CAIRN" mkfs -q --plain-meta "$work/src" "$work/img" || fail "mkfs"

[ -w /dev/full ] || { echo "no /dev/full"; exit 77; }
for args in "info $work/img" "info --json $work/img" "ls -l $work/img /" "stat $work/img /a" \
            "fsck $work/img" "--help" "info --help" "ls --help" "mkfs --help" "--version" \
            "cat $work/img /a" "digest $work/img" "bench read $work/img"; do
  # shellcheck disable=SC2086
  "$CAIRN" $args >/dev/full 2>"$work/err"; rc=$?
  [ $rc -eq 1 ] || fail "cairn $args > /dev/full: exit $rc, not 1"
  grep -q "writing to stdout: No space left on device" "$work/err" ||
    fail "cairn $args > /dev/full: no message: $(cat "$work/err")"
done
echo "ok: a failed write to stdout is exit 1 with a message"

expect_msg() { # want, args...
  want=$1; shift
  timeout 20 "$CAIRN" "$@" >/dev/null 2>"$work/err"; rc=$?
  [ $rc -eq 1 ] || fail "cairn $*: exit $rc, not 1"
  grep -qF "$want" "$work/err" || fail "cairn $*: said '$(cat "$work/err")', not '$want'"
}
expect_msg "cairn info: not a cairn image: /dev/null is a character device" info /dev/null
expect_msg "cairn info: not a cairn image: $work/src is a directory" info "$work/src"
expect_msg "cairn ls: not a cairn image: $work/src is a directory" ls "$work/src"
mkfifo "$work/fifo"
expect_msg "cairn info: not a cairn image: $work/fifo is a FIFO" info "$work/fifo"
echo "ok: info on a device, a directory, a FIFO says what it is"

# A file of another format is "not a cairn image" (not "corrupt"), with the magic
# expected and the bytes found, and the format when cairn knows it; with or
# without verification (two decoders of block 0), and for fsck (exit 4).
printf 'hsqs\4\0\0\0' > "$work/squash"
head -c 8192 /dev/zero >> "$work/squash"
magic='not a cairn image: expected the magic 43 41 49 52 4e 00 00 00 ("CAIRN") at byte 0, found'
expect_msg "cairn info: $work/squash: $magic 68 73 71 73 04 00 00 00: a squashfs image" info "$work/squash"
expect_msg "cairn ls: $work/squash: $magic 68 73 71 73 04 00 00 00: a squashfs image" \
  ls --verify none "$work/squash" /
head -c 8192 /dev/zero > "$work/zeros"
expect_msg "cairn cat: $work/zeros: $magic 00 00 00 00 00 00 00 00: all zero bytes" cat "$work/zeros" /a
"$CAIRN" fsck "$work/squash" >/dev/null 2>"$work/err"; rc=$?
[ $rc -eq 4 ] && grep -qF "cairn fsck: $work/squash: $magic 68 73" "$work/err" ||
  fail "fsck of a squashfs file: exit $rc: $(cat "$work/err")"
grep -q "corrupt" "$work/err" && fail "fsck calls a squashfs file corrupt: $(cat "$work/err")"
: > "$work/empty"
expect_msg "cairn info: $work/empty: not a cairn image: the file is empty (0 bytes)" info "$work/empty"
expect_msg "cairn ls: $work/empty: not a cairn image: the file is empty (0 bytes)" ls --verify none "$work/empty"
head -c 1000 "$work/img" > "$work/short"
expect_msg "cairn info: $work/short: corrupt image: too short for a superblock (1000 bytes)" info "$work/short"
# A text file shorter than a superblock is not an image, not a damaged one;
# info (through the verifier) and fsck (without it) say the same.
printf 'root:x:0:0\n' > "$work/text"
expect_msg "cairn info: $work/text: $magic 72 6f 6f 74 3a 78 3a 30" info "$work/text"
expect_msg "cairn info: $work/text: $magic 72 6f 6f 74 3a 78 3a 30" info --verify none "$work/text"
"$CAIRN" fsck "$work/text" >/dev/null 2>"$work/err"; rc=$?
[ $rc -eq 4 ] && grep -qF "cairn fsck: $work/text: $magic 72 6f 6f 74" "$work/err" ||
  fail "fsck of a short text file: exit $rc: $(cat "$work/err")"
size=$(stat -c %s "$work/img")
expect_msg "cairn info: $work/img: the image offset 10737418240 is past the end of the file ($size bytes)" \
  info --offset 10G "$work/img"
echo "ok: a file of another format is not a cairn image, with what was expected and found"

# A missing argument is one line that says what is missing and where the help is,
# exit 2, for every command (mount and bench read printed all of --help instead).
for args in "info" "ls" "cat $work/img" "stat $work/img" "extract $work/img" "fsck" "digest" \
            "mkfs $work/src" "mkfs --manifest $work/m" "mount $work/img" "mount" "mount --empty" \
            "bench read"; do
  # shellcheck disable=SC2086
  "$CAIRN" $args >/dev/null 2>"$work/err"; rc=$?
  [ $rc -eq 2 ] || fail "cairn $args: exit $rc, not 2"
  [ "$(wc -l < "$work/err")" -eq 1 ] || fail "cairn $args: $(wc -l < "$work/err") lines, not one"
  grep -qE "needs|expected" "$work/err" && grep -q -- "--help" "$work/err" ||
    fail "cairn $args: '$(cat "$work/err")' names neither what is missing nor --help"
done
# ... in the same words everywhere: "needs X (see cairn CMD --help)"; mkfs said
# "expected: SRC_DIR IMAGE (try --help)", and nothing of --help with --manifest.
"$CAIRN" mkfs --manifest "$work/m" 2>&1 | grep -qx "cairn mkfs: needs --manifest FILE and IMAGE (see cairn mkfs --help)" ||
  fail "mkfs --manifest without IMAGE: $("$CAIRN" mkfs --manifest "$work/m" 2>&1)"
"$CAIRN" mkfs "$work/src" 2>&1 | grep -qx "cairn mkfs: needs SRC_DIR and IMAGE (see cairn mkfs --help)" ||
  fail "mkfs without IMAGE: $("$CAIRN" mkfs "$work/src" 2>&1)"
"$CAIRN" mkfs "$work/src" "$work/i1" "$work/i2" 2>&1 | grep -qx "cairn mkfs: too many arguments (see cairn mkfs --help)" ||
  fail "mkfs with three arguments: $("$CAIRN" mkfs "$work/src" "$work/i1" "$work/i2" 2>&1)"
"$CAIRN" mkfs "$work/src/a" "$work/i1" 2>"$work/err" && fail "mkfs of a file as SRC_DIR"
grep -qx "cairn mkfs: $work/src/a: Not a directory (SRC_DIR is a directory; files from elsewhere go in a --manifest, docs/MANIFEST.md)" "$work/err" ||
  fail "mkfs of a file as SRC_DIR: $(cat "$work/err")"
[ -e "$work/i1" ] && fail "mkfs of a file as SRC_DIR left $work/i1"
# An empty argument is refused as such, exit 2 (info said ": No such file or
# directory", ls and stat took it for the root).
for args in "info @" "ls $work/img @" "stat $work/img @" "cat $work/img /a @" "mkfs @ $work/i1" \
            "extract $work/img @" "mount $work/img @"; do
  # shellcheck disable=SC2086
  set -- $args
  cmd=$1
  for a; do shift; [ "$a" = @ ] && a=""; set -- "$@" "$a"; done
  "$CAIRN" "$@" >"$work/out" 2>"$work/err"; rc=$?
  [ $rc -eq 2 ] || fail "cairn $args (@ empty): exit $rc, not 2"
  [ "$(cat "$work/err")" = "cairn $cmd: an empty argument names no file (see cairn $cmd --help)" ] ||
    fail "cairn $args (@ empty): $(cat "$work/err")"
  [ -s "$work/out" ] && fail "cairn $args (@ empty) printed $(cat "$work/out")"
done
echo "ok: a missing argument is one line naming it"
# A URL of a scheme cairn does not read names no file: say which URLs it reads
# (it was a bare "No such file or directory"); a missing plain path stays bare.
for u in ftp://host/img.cairn file://$work/img gs://bucket/img; do
  "$CAIRN" info "$u" >/dev/null 2>"$work/err" && fail "info $u succeeded"
  [ "$(cat "$work/err")" = "cairn info: $u: No such file or directory: not a URL cairn reads (http://, https://, s3://BUCKET/KEY)" ] ||
    fail "info $u: $(cat "$work/err")"
done
# A bound of a disk cache without the cache is refused, not ignored.
for o in "--cache-max 1M" "--cache-chunk 64K"; do
  # shellcheck disable=SC2086
  "$CAIRN" cat $o "$work/img" /a >"$work/out" 2>"$work/err" && fail "cat $o without --cache-dir"
  [ "$(cat "$work/err")" = "cairn cat: $work/img: cache_max and cache_chunk bound a disk cache: give cache_dir too" ] ||
    fail "cat $o without --cache-dir: $(cat "$work/err")"
  [ -s "$work/out" ] && fail "cat $o without --cache-dir printed $(cat "$work/out")"
done
"$CAIRN" info "$work/none" 2>"$work/err"
[ "$(cat "$work/err")" = "cairn info: $work/none: No such file or directory" ] ||
  fail "info of a missing file: $(cat "$work/err")"

# A bad option value is named by the command it was given to and the option as
# written (--digest, --segment and friends said "cairn:"; the remote ones
# "cairn :" and the key without its dashes).
expect_usage() { # want, args...
  want=$1; shift
  timeout 20 "$CAIRN" "$@" >/dev/null 2>"$work/err"; rc=$?
  [ $rc -eq 2 ] || fail "cairn $*: exit $rc, not 2"
  [ "$(cat "$work/err")" = "$want" ] || fail "cairn $*: said '$(cat "$work/err")', not '$want'"
}
expect_usage "cairn info: --digest needs sha256:<64 hex digits>, got 'sha256:00'" \
  info --digest sha256:00 "$work/img"
expect_usage "cairn ls: --segment must be a power of two from 512 to 64M, got 3" \
  ls --segment 3 "$work/img"
expect_usage "cairn stat: --delay needs a time (e.g. 1ms), got 'soon'" stat --delay soon "$work/img" /a
expect_usage "cairn cat: --verify is on or none, got 'off'" cat --verify off "$work/img" /a
expect_usage "cairn info: --connections needs a number (1..64), got '0'" \
  info --connections 0 "$work/img"
expect_usage "cairn extract: --timeout needs a time of at least 1ms (e.g. 10s), got '0'" \
  extract --timeout 0 "$work/img" "$work/out.d"
expect_usage "cairn bench: --max-io needs a size (e.g. 64M), got 'big'" \
  bench read --max-io big "$work/img"
expect_usage "cairn mount: -o segment must be a power of two from 512 to 64M, got 3" \
  mount -o segment=3 "$work/img" "$work/src/d"
expect_usage "cairn mount: -o timeout needs a time of at least 1ms (e.g. 10s), got '0'" \
  mount -o timeout=0 "$work/img" "$work/src/d"
echo "ok: a bad option value names the command and the option"

# An unknown command is answered with the one meant, as an unknown option is.
for pair in "mkfd mkfs" "extact extract" "--verison --version"; do
  set -- $pair
  "$CAIRN" "$1" >/dev/null 2>"$work/err"; rc=$?
  [ $rc -eq 2 ] || fail "cairn $1: exit $rc, not 2"
  [ "$(head -1 "$work/err")" = "cairn: unknown command '$1': did you mean '$2'?" ] ||
    fail "cairn $1: $(head -1 "$work/err")"
done
"$CAIRN" --help | grep -q -- "--version" || fail "cairn --help does not name --version"
# bench's subcommands answer an unknown option as the other commands do: one
# line with the option meant (rw printed all of its --help; read gave no hint).
"$CAIRN" bench rw --sise 1M 2>"$work/err"; rc=$?
[ $rc -eq 2 ] && [ "$(cat "$work/err")" = "cairn bench: unknown option '--sise': did you mean '--size'? (see cairn bench rw --help)" ] ||
  fail "bench rw --sise: exit $rc: $(cat "$work/err")"
"$CAIRN" bench read --no-wram "$work/img" 2>"$work/err"; rc=$?
[ $rc -eq 2 ] && [ "$(cat "$work/err")" = "cairn bench: unknown option '--no-wram': did you mean '--no-warm'? (see cairn bench read --help)" ] ||
  fail "bench read --no-wram: exit $rc: $(cat "$work/err")"
echo "ok: an unknown command names the one meant"

# Damage the first metadata block: every inode in it fails with the same reason.
# (It starts after block 0 and the digest table: meta_off, from info.)
meta_off=$("$CAIRN" info --json "$work/img" | sed -n 's/.*"meta_off": \([0-9]*\).*/\1/p')
[ -n "$meta_off" ] || fail "info --json gives no meta_off"
cp "$work/img" "$work/bad"
printf 'XXXX' | dd of="$work/bad" bs=1 seek=$((meta_off + 904)) conv=notrunc 2>/dev/null
"$CAIRN" fsck "$work/bad" >"$work/out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "fsck of a damaged image: exit $rc: $(cat "$work/out")"
[ "$(grep -c "checksum mismatch" "$work/out")" -eq 1 ] ||
  fail "fsck: the bad block is not reported once: $(cat "$work/out")"
grep -q ": :" "$work/out" && fail "fsck: empty field: $(cat "$work/out")"
grep -q "^$work/bad: metadata: metadata block 0 (offset $meta_off): checksum mismatch\$" "$work/out" ||
  fail "fsck: message: $(cat "$work/out")"
echo "ok: fsck: $(head -1 "$work/out")"
# A full disk (a 64 KiB tmpfs, as root): mkfs leaves nothing, not even its
# temporary; extract stops at the first file that does not fit, saying so once
# (it went on and printed the same error for every later file), and leaves no
# partial file.
if [ "$(id -u)" -eq 0 ] && mkdir "$work/full" && mount -t tmpfs -o size=64k tmpfs "$work/full" 2>/dev/null; then
  trap 'umount "$work/full" 2>/dev/null; rm -rf "$work"' EXIT INT TERM
  mkdir "$work/big"
  for i in 1 2 3 4 5 6; do head -c 40000 /dev/urandom > "$work/big/f$i"; done
  "$CAIRN" mkfs -q "$work/big" "$work/big.img" || fail "mkfs big"
  "$CAIRN" mkfs -q "$work/big" "$work/full/x.img" 2>"$work/err" && fail "mkfs onto a full disk"
  grep -q "No space left on device" "$work/err" || fail "mkfs onto a full disk: $(cat "$work/err")"
  [ -z "$(ls -A "$work/full")" ] || fail "mkfs onto a full disk left $(ls -A "$work/full")"
  "$CAIRN" extract "$work/big.img" "$work/full/out" 2>"$work/err"; rc=$?
  [ $rc -eq 1 ] || fail "extract onto a full disk: exit $rc"
  [ "$(wc -l < "$work/err")" -eq 1 ] && grep -q "No space left on device; extraction stopped\$" "$work/err" ||
    fail "extract onto a full disk: $(cat "$work/err")"
  for f in "$work/full/out"/*; do
    [ -e "$f" ] || continue
    cmp -s "$f" "$work/big/${f##*/}" || fail "extract onto a full disk left a partial $f"
  done
  umount "$work/full"
  echo "ok: a full disk: mkfs leaves nothing, extract stops once, no partial file"
fi
echo "errors: all checks passed"
