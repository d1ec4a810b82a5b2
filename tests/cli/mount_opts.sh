#!/bin/sh
# The mount command line, before anything is mounted (no root needed): an empty
# option value is called empty, not unknown; fstab's comment= is taken; the
# segment size limits are enforced and in --help, for mount and the read
# commands alike; mount.cairn --help prints its help and exits 0; mount --help
# describes each option once (a stale second verify= line said the opposite of
# the first) and every option docs/MOUNT.md's tables list; a typo in an option
# is answered with the option meant.
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

# threads and max_io have bounds: 0 was taken as the default, threads=99999
# asked libfuse for that many workers, a max_io typo of 100G for that much buffer.
for v in 0 257 4294967297; do
  expect 2 "-o threads must be from 1 to 256, got $v" "$CAIRN" mount -o threads=$v "$work/img" "$work/none"
done
for v in 0 256 100G; do
  expect 2 "-o max_io must be from 512 to 256M" "$CAIRN" mount -o max_io=$v "$work/img" "$work/none"
done
expect 2 "cairn cat: --max-io must be from 512 to 256M, got 107374182400" \
  "$CAIRN" cat --max-io 100G "$work/img" /f
"$CAIRN" cat --max-io 512 "$work/img" /f > /dev/null || fail "--max-io 512 refused"
"$CAIRN" mount --help | grep -q "threads=N.*1\.\.256" || fail "mount --help lacks the threads bounds"

"$CAIRN" mount --help > "$work/help" || fail "mount --help exited $?"
dups=$(grep -oE '^  [a-z_0-9]+=?' "$work/help" | sort | uniq -d)
[ -z "$dups" ] || fail "mount --help describes these options twice: $dups"
docs=$(dirname "$0")/../../docs/MOUNT.md
for opt in $(grep -oE '^\| `[a-z_0-9]+' "$docs" | sed 's/^| `//' | sort -u); do
  grep -qE "(^  |[ ,;(])$opt([=,: ]|\$)" "$work/help" || fail "mount --help lacks $opt (docs/MOUNT.md has it)"
done
# ... and the other way round: every option mount --help names (at a line's
# start, or "key=" in a list) has a row or a mention in docs/MOUNT.md (l2_cache had none).
for opt in $( { grep -oE '^  [a-z][a-z_0-9]+' "$work/help"; grep -oE '[,;] [a-z][a-z_0-9]+=' "$work/help"; } |
             sed -E 's/^(  |[,;] )//; s/=$//' | sort -u); do
  grep -qE "\`$opt[=\`|]" "$docs" || fail "docs/MOUNT.md lacks $opt (mount --help has it)"
done
# A typo in an option names the option meant; a known option missing its value,
# or given one it takes none, says so (all were only "unknown option").
expect 2 "did you mean 'cache_size'" "$CAIRN" mount -o tmp=/tmp,cache_sze=1M "$work/img" "$work/none"
expect 2 "did you mean 'prefetch'" "$CAIRN" mount -o prefech "$work/img" "$work/none"
expect 2 "did you mean 'chunk_cache'" "$CAIRN" mount -o chunk-cache=1M "$work/img" "$work/none"
expect 2 "tmp needs a value" "$CAIRN" mount -o tmp "$work/img" "$work/none"
expect 2 "delay_rate needs a size" "$CAIRN" mount -o delay=1ms,delay_rate=fast "$work/img" "$work/none"
expect 2 "overlay takes no value" "$CAIRN" mount -o overlay=1 "$work/img" "$work/none"
expect 2 "did you mean '--delay'" "$CAIRN" cat --delya 1ms "$work/img" /f
expect 2 "did you mean '--long'" "$CAIRN" ls --lnog "$work/img"
expect 2 "did you mean '--exclude'" "$CAIRN" mkfs --exlude x "$work/src" "$work/img2"
expect 2 "unknown option 'fooo'\$" "$CAIRN" mount -o fooo "$work/img" "$work/none"
# A word of the help's prose is no option to suggest ("fail device reads, for tests").
expect 2 "unknown option 'foo'\$" "$CAIRN" mount -o foo "$work/img" "$work/none"
expect 2 "did you mean 'direct'" "$CAIRN" mount -o dirct "$work/img" "$work/none"
# -o rw on a mount with nothing writable was taken in silence, and every write
# then failed with EROFS: refused, naming the image and what gives writes. With
# a RAM layer it says what is so, and gets as far as the mount point.
expect 2 "-o rw: $work/img is mounted read-only.*-o overlay.*-o tmp=PATHS" \
  "$CAIRN" mount -o rw "$work/img" "$work/none"
expect 2 "unknown option 'rw=1'" "$CAIRN" mount -o rw=1 "$work/img" "$work/none"
for o in overlay,rw tmp=/tmp,rw; do
  expect 1 "$work/none" "$CAIRN" mount -o $o "$work/img" "$work/none"
done
expect 1 "$work/none" "$CAIRN" mount --empty -o rw "$work/none"
# mount(8) adds rw to every mount that is not ro: the helper drops it, so a
# plain fstab line (defaults) still mounts; what is left reaches cairn mount.
expect 1 "mount.cairn: cairn mount $work/img $work/none -o tmp=/tmp,x-a\$" \
  "$BUILD/mount.cairn" -v "$work/img" "$work/none" -o rw,tmp=/tmp,rw,x-a
grep -q "read-only" "$work/err" && fail "mount.cairn passed mount(8)'s rw on"
expect 1 "mount.cairn: cairn mount $work/img $work/none\$" \
  "$BUILD/mount.cairn" -v "$work/img" "$work/none" -o rw
# A helper that finds no cairn says where it looked (not only "No such file").
if [ ! -e /usr/local/bin/cairn ]; then
  mkdir "$work/alone" && cp "$BUILD/mount.cairn" "$work/alone/" || fail "copy mount.cairn"
  expect 1 "cannot run cairn: No such file or directory (looked beside this helper, in /.* and in PATH)" \
    env PATH=/nonexistent "$work/alone/mount.cairn" "$work/img" "$work/none"
fi
"$BUILD/mount.cairn" --help > "$work/out" 2> "$work/err" || fail "mount.cairn --help exited $?"
grep -q "usage: mount.cairn" "$work/out" || fail "mount.cairn --help printed no usage on stdout"
if "$BUILD/mount.cairn" > /dev/null 2>&1; then fail "mount.cairn without arguments exited 0"; fi

echo "mount options: ok"
