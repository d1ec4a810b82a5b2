#!/bin/sh
# Layering (DESIGN.md): the image layer reads a cache and knows nothing of
# files, URLs or how a device stack is put together; that is the stack
# builder's (lib/stack). No source of lib/image includes the remote, stack or
# testing headers, and its objects make no device (no cairn_bdev_*_new, no file,
# http, disk cache or s3 call) and call no stack builder function.
. "$(dirname "$0")/common.inc"
CC=${CC:-cc}
cd "$ROOT" || fail "cd $ROOT"
bad_headers='cairn/(remote|stack|testing)\.h|lib/(stack|remote)/'
bad_calls='^cairn_bdev_[a-z0-9_]*_new$|^cairn_bdev_file_|^cairn_bdev_(http|diskcache)|^cairn_(http|diskcache|s3|url|stack)_'
n=0
for c in lib/image/*.c; do
  $CC -std=c11 -D_GNU_SOURCE -Iinclude -Ilib -MM "$c" > "$WORK/deps" 2>"$WORK/err" ||
    fail "$c: cannot list its headers: $(cat "$WORK/err")"
  hits=$(tr ' \\' '\n\n' < "$WORK/deps" | grep -E "$bad_headers" | sort -u)
  [ -z "$hits" ] || fail "$c includes headers of the stack builder or remote devices:" $hits
  o=$BUILD/${c%.c}.o # the objects of today's sources (a stale .o may linger)
  [ -f "$o" ] || fail "no object $o: build first"
  calls=$(nm -u "$o" | awk '{ print $2 }' | grep -E "$bad_calls" || true)
  [ -z "$calls" ] || fail "$o builds devices or stacks:" $calls
  n=$((n + 1))
done
echo "image_layer: lib/image ($n objects) makes no device and opens no file or URL"
