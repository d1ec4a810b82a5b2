#!/bin/sh
# What `cairn mount` refuses, and says why, instead of leaving a broken or
# hidden mount: a mount point that is a regular file, a directory where a cairn
# image is already mounted (it used to stack silently), a dead mount whose daemon
# was killed (the message says how to clear it), a stats= file that cannot be
# written (the stats used to be lost at unmount), a corrupt image (with the
# reason `cairn info` gives). Also: a relative stats= file lands where it was
# named (the daemon runs in /), ps shows the options as they were given, and a
# relative IMAGE is shown absolute in /proc/mounts.
. "$(dirname "$0")/common.inc"
SRC=$WORK/src
mkdir -p "$SRC"
echo data > "$SRC/f"
"$CAIRN" mkfs -q "$SRC" "$WORK/img.cairn" || fail "mkfs"
M=$WORK/m
mkdir -p "$M"
MOUNTS="$M $WORK/file"

# refused LABEL PATTERN cairn-mount-args...: exits non-zero, mounts nothing at
# the last argument's place, and says PATTERN.
refused() {
  _label=$1 _pat=$2; shift 2
  for _a; do _last=$_a; done
  if "$CAIRN" mount "$@" 2>"$WORK/err"; then
    fusermount3 -u "$_last" 2>/dev/null || umount -l "$_last"
    fail "$_label: mounted"
  fi
  grep -q -- "$_pat" "$WORK/err" || fail "$_label: message '$(cat "$WORK/err")' lacks '$_pat'"
  echo "$_label refused: $(head -n 1 "$WORK/err")"
}

touch "$WORK/file"
refused "regular file" "not a directory" "$WORK/img.cairn" "$WORK/file"
mountpoint -q "$WORK/file" && fail "a mount was left on the regular file"

refused "stats= in a missing directory" "stats=$WORK/none/s.*$WORK/none" \
  -o "stats=$WORK/none/s" "$WORK/img.cairn" "$M"
refused "stats= a directory" "is a directory" -o "stats=$WORK" "$WORK/img.cairn" "$M"
mountpoint -q "$M" && fail "a mount was left after a refused stats="

# An IMAGE that is a directory, or a file of another format: the words of
# `cairn info` (it said "Invalid argument: not a cairn image: DIR is a directory").
refused "a directory as IMAGE" "^cairn mount: not a cairn image: $SRC is a directory\$" "$SRC" "$M"
head -c 8192 /dev/zero > "$WORK/zeros"
refused "zeros as IMAGE" "^cairn mount: $WORK/zeros: not a cairn image: expected the magic .* found 00 00 00 00 00 00 00 00: all zero bytes\$" \
  "$WORK/zeros" "$M"

cp "$WORK/img.cairn" "$WORK/bad.cairn"
printf '\377' | dd of="$WORK/bad.cairn" bs=1 seek=40 conv=notrunc 2>/dev/null
reason=$("$CAIRN" info "$WORK/bad.cairn" 2>&1 | sed -n 's/.*corrupt image: //p')
[ -n "$reason" ] || fail "cairn info gives no reason for the damaged image"
refused "corrupt image" "corrupt image: $reason" "$WORK/bad.cairn" "$M"

# Mounted twice on one directory. Relative paths, with a name of its own so the
# daemon is found by its arguments.
rel=$(basename "$WORK")
R=$WORK/$rel
mkdir -p "$R"
MOUNTS="$MOUNTS $R"
(cd "$WORK" && "$CAIRN" mount -o stats=rel.stats,tmp=/tmp img.cairn "$rel") || fail "mount"
refused "mounted twice" "already mounted.*fusermount3 -u" "$WORK/img.cairn" "$R"
[ "$(grep -c " $R fuse.cairn " /proc/mounts)" -eq 1 ] || fail "two mounts stacked on $R"
# The SOURCE findmnt shows names the image from anywhere, not as given in $WORK.
src=$(awk -v m="$R" '$2 == m { print $1 }' /proc/mounts)
[ "$src" = "$(realpath "$WORK/img.cairn")" ] || fail "mount source '$src', not the image's absolute path"
pid=$(daemons_of "$rel")
[ -n "$pid" ] || fail "no daemon for $R"
# ps shows the command line as given (the option string used to be cut up).
tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q -- "-o stats=rel.stats,tmp=/tmp img.cairn $rel" ||
  fail "daemon argv mangled: $(tr '\0' ' ' < "/proc/$pid/cmdline")"
fusermount3 -u "$R" || fail "unmount"
wait_file "$WORK/rel.stats" || fail "relative stats= file not written in the directory it was named in"
grep -q '^device_requests ' "$WORK/rel.stats" || fail "stats file has no counters"

# A dead mount: the daemon is killed, the mount stays, and says so.
"$CAIRN" mount "$WORK/img.cairn" "$M" || fail "mount (to kill)"
pid=$(daemons_of "$M")
kill -9 $pid
i=0; while kill -0 $pid 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
refused "dead mount" "dead mount.*fusermount3 -u $M" "$WORK/img.cairn" "$M"
fusermount3 -u "$M" || fail "fusermount3 -u did not clear the dead mount"
"$CAIRN" mount "$WORK/img.cairn" "$M" || fail "mount after clearing the dead mount"
[ "$(cat "$M/f")" = data ] || fail "content after remount"
umnt "$M" || fail "unmount"
echo "mountpoint: ok"
