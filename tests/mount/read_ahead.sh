#!/bin/sh
# `cairn mount -o read_ahead=SIZE`: the kernel's read-ahead window of the mount
# (bdi read_ahead_kb) is what was asked, over the daemon's own choice (4096 KiB
# by default, 0 with trace=); a bad size is refused, naming the option.
. "$(dirname "$0")/common.inc"

mkdir -p "$WORK/src"
echo hello > "$WORK/src/f"
"$CAIRN" mkfs -q "$WORK/src" "$WORK/img.cairn" || fail "mkfs"

# ra_of DIR WANT: the daemon sets the knob once the kernel has taken the INIT
# reply, which may be just after the mount command returns.
ra_of() {
  _f=/sys/class/bdi/$(mountpoint -d "$1")/read_ahead_kb
  [ -e "$_f" ] || skip "no $_f"
  _i=0
  while [ "$(cat "$_f")" != "$2" ] && [ $_i -lt 100 ]; do sleep 0.1; _i=$((_i + 1)); done
  cat "$_f"
}

check() { # check WANT_KB [mount options]
  _want=$1; shift
  M=$WORK/m$_want
  mnt "$M" "$WORK/img.cairn" "$@" || fail "mount $*"
  got=$(ra_of "$M" "$_want")
  [ "$got" = "$_want" ] || fail "mount $*: read_ahead_kb is $got, want $_want"
  [ "$(cat "$M/f")" = hello ] || fail "mount $*: data"
  umnt "$M"
  echo "mount $*: read_ahead_kb $got: ok"
}

check 4096
check 512 -o read_ahead=512K
check 0 -o read_ahead=0
check 2048 -o "trace=$WORK/trace,read_ahead=2M"

mkdir -p "$WORK/mbad"
for bad in 65M x; do
  if "$CAIRN" mount -o "read_ahead=$bad" "$WORK/img.cairn" "$WORK/mbad" 2> "$WORK/err"; then
    fusermount3 -u "$WORK/mbad"; fail "read_ahead=$bad was taken"
  fi
  grep -q "read_ahead" "$WORK/err" || fail "read_ahead=$bad: error does not name the option: $(cat "$WORK/err")"
done
echo "bad sizes refused: ok"
