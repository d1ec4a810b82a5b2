#!/bin/sh
# Bad images and IO faults: a corrupt or truncated image is refused before
# anything is mounted; a failing device gives the application EIO while the
# daemon keeps serving, and files read correctly once the fault clears (SIGUSR2).
. "$(dirname "$0")/common.inc"
SRC=$WORK/src
mkdir -p "$SRC/d"
head -c 20000000 /dev/urandom > "$SRC/big"
head -c 3000000 /dev/urandom > "$SRC/d/medium"
echo small > "$SRC/small"
"$CAIRN" mkfs -q "$SRC" "$WORK/img.cairn" || fail "mkfs"
M=$WORK/m
mkdir -p "$M"

refused() { # $1 = image, $2 = label
  if "$CAIRN" mount "$1" "$M" 2>"$WORK/err"; then
    MOUNTS="$M"; fail "$2: mounted"
  fi
  mountpoint -q "$M" && { MOUNTS="$M"; fail "$2: a mount was left behind"; }
  [ -s "$WORK/err" ] || fail "$2: no error message"
  echo "$2 refused: $(head -n 1 "$WORK/err")"
}
# refused_or_eio IMAGE LABEL: damage the root digest covers but block 0 does
# not (metadata past it) may be found only when read: refused at mount, or
# mounted with every file and listing either right or EIO, never wrong.
refused_or_eio() {
  if ! "$CAIRN" mount "$1" "$M" 2>"$WORK/err"; then
    mountpoint -q "$M" && { MOUNTS="$M"; fail "$2: a mount was left behind"; }
    [ -s "$WORK/err" ] || fail "$2: no error message"
    echo "$2 refused: $(head -n 1 "$WORK/err")"
    return
  fi
  MOUNTS="$M"
  for f in big d/medium small; do
    if cat "$M/$f" > "$WORK/got" 2>"$WORK/err"; then
      cmp -s "$WORK/got" "$SRC/$f" || fail "$2: $f read wrong bytes"
    else
      grep -q "Input/output error" "$WORK/err" || fail "$2: $f: $(cat "$WORK/err")"
    fi
  done
  if (cd "$M" && ls -R .) > "$WORK/ls.got" 2>"$WORK/err"; then
    (cd "$SRC" && ls -R .) | cmp -s - "$WORK/ls.got" || fail "$2: wrong listing"
  else
    grep -q "Input/output error" "$WORK/err" || fail "$2: ls: $(cat "$WORK/err")"
  fi
  umnt "$M" || fail "$2: unmount"
  MOUNTS=""
  echo "$2: mounted, reads right or EIO"
}
# Superblock damage (first 4 KiB), metadata damage, truncation, not an image.
meta_end=$("$CAIRN" info "$WORK/img.cairn" | awk '/^metadata:/ { print $2 + $5 - 100 }')
for off in 0 64 200 5000 $meta_end; do
  cp "$WORK/img.cairn" "$WORK/bad.cairn"
  printf '\377\377\377\377' | dd of="$WORK/bad.cairn" bs=1 seek=$off conv=notrunc 2>/dev/null
  if [ "$off" -lt 4096 ]; then
    refused "$WORK/bad.cairn" "byte $off flipped"
  else
    refused_or_eio "$WORK/bad.cairn" "byte $off flipped"
  fi
done
head -c 4096 "$WORK/img.cairn" > "$WORK/short.cairn"
refused "$WORK/short.cairn" "truncated image"
refused "$SRC/small" "not an image"
refused "$WORK/none.cairn" "missing image"
"$CAIRN" mount "$WORK/img.cairn" "$WORK/nodir" 2>/dev/null && fail "mounted on a missing directory"

# IO faults: every device request fails once mounted, no cache so every read
# reaches it. (Not every 5th: the kernel retries a failed large read page by
# page, and with large FUSE reads those retries mostly succeed, so a read that
# must fail has to meet a device that keeps failing.)
"$CAIRN" mount -f "$WORK/img.cairn" "$M" -o cache_size=0,fault_every=1 2>"$WORK/daemon.err" &
pid=$!
MOUNTS="$M"
i=0; while ! mountpoint -q "$M" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
mountpoint -q "$M" || fail "fault mount did not come up"
failed=0
for f in big d/medium big; do
  if ! cat "$M/$f" > /dev/null 2>"$WORK/cat.err"; then
    grep -q "Input/output error" "$WORK/cat.err" || fail "error was not EIO: $(cat "$WORK/cat.err")"
    failed=1
  fi
done
[ $failed -eq 1 ] || fail "no read failed under fault_every=1"
kill -0 "$pid" || fail "daemon died on IO errors"
mountpoint -q "$M" || fail "mount gone after IO errors"
ls "$M" > /dev/null || true # metadata may fail too; the daemon must answer
# The daemon's log names the device, a range and the cause, once for many
# failed reads (rate-limited, not one line per read).
grep -q "^cairn: $WORK/img.cairn: bytes [0-9]*-[0-9]*: injected fault: EIO (EIO to the application; [0-9]* failures\{0,1\} of this device in all)$" \
  "$WORK/daemon.err" || fail "the daemon did not log the cause: $(cat "$WORK/daemon.err")"
[ "$(grep -c "injected fault" "$WORK/daemon.err")" -le 3 ] ||
  fail "the cause logged per read: $(grep -c "injected fault" "$WORK/daemon.err") lines"
kill -USR2 "$pid"   # clear the fault plan
sleep 0.2
for f in big d/medium small; do
  cmp "$M/$f" "$SRC/$f" || fail "$f wrong after the fault cleared"
done
echo "IO faults: ok"
umnt "$M" || fail "unmount"
wait "$pid" || fail "daemon exit status"
echo "faults: ok"
