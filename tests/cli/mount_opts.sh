#!/bin/sh
# The mount command line, before anything is mounted (no root needed): an empty
# option value is called empty, not unknown; fstab's comment= is taken; the
# segment size limits are enforced and in --help, for mount and the read
# commands alike; mount.cairn --help prints its help and exits 0.
set -u
work=$(mktemp -d /tmp/cairn-mount-opts.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }
BUILD=${CAIRN_BUILD:-$(dirname "$CAIRN")}
mkdir -p "$work/src"
echo x > "$work/src/f"
"$CAIRN" mkfs -q "$work/src" "$work/img" || fail "mkfs"

# expect CODE PATTERN CMD...: exit status CODE and PATTERN on stderr.
expect() {
  _code=$1 _pat=$2; shift 2
  "$@" > "$work/out" 2> "$work/err"; _rc=$?
  [ "$_rc" -eq "$_code" ] || fail "$* exited $_rc, not $_code: $(cat "$work/err")"
  grep -q -- "$_pat" "$work/err" || fail "$*: stderr '$(cat "$work/err")' lacks '$_pat'"
}
for opt in cache_size tmp stats trace verify fault_kind size; do
  expect 2 "-o $opt= has an empty value" "$CAIRN" mount -o "$opt=" "$work/img" "$work/none"
done
# Options mount(8) passes from fstab get as far as the mount point.
expect 1 "$work/none" "$CAIRN" mount -o comment=systemd.automount,x-any= "$work/img" "$work/none"
grep -q unknown "$work/err" && fail "comment= called unknown"

expect 2 "power of two from 512 to 64M" "$CAIRN" mount -o segment=128M "$work/img" "$work/none"
expect 2 "power of two from 512 to 64M" "$CAIRN" mount -o segment=256 "$work/img" "$work/none"
expect 2 "power of two from 512 to 64M" "$CAIRN" info --segment 128M "$work/img"
"$CAIRN" info --segment 64M "$work/img" > /dev/null || fail "--segment 64M refused"
"$CAIRN" mount --help | grep -q "segment=SIZE.*512 to 64M" || fail "mount --help lacks the segment limits"
"$CAIRN" info --help | grep -q -- "--segment SIZE.*512 to 64M" || fail "info --help lacks the segment limits"

"$BUILD/mount.cairn" --help > "$work/out" 2> "$work/err" || fail "mount.cairn --help exited $?"
grep -q "usage: mount.cairn" "$work/out" || fail "mount.cairn --help printed no usage on stdout"
if "$BUILD/mount.cairn" > /dev/null 2>&1; then fail "mount.cairn without arguments exited 0"; fi
# delay_bw= takes MB/s, 1..1000000.
for v in 0 x 1000001; do
  expect 2 "delay_bw needs MB/s" "$CAIRN" mount -o "delay_bw=$v" "$work/img" "$work/none"
done
"$CAIRN" mount --help | grep -q "delay_bw=MB" || fail "mount --help lacks delay_bw"

echo "mount options: ok"
