#!/bin/sh
# An embedder's program (tests/build/embedder.c: its own bdev with a version 1
# and a version 2 ops table, the cache, the image) compiles with -Wall -Wextra
# -Werror against include/cairn alone, under gcc and clang where installed, and
# links and runs against libcairn. The ops table grew a field in version 2, so
# a positional initialiser of a version 1 table ({1, "name", read, close})
# warns (missing initializer): the designated ones README.md shows do not.
# That the compile catches it is checked too, so this test can fail.
. "$(dirname "$0")/common.inc"
SRC=$ROOT/tests/build/embedder.c
[ -f "$BUILD/libcairn.so" ] || fail "$BUILD/libcairn.so not built"
flags="-std=c11 -Wall -Wextra -Werror -I$ROOT/include"
ccs=${CC:-cc}
for c in gcc clang; do
  command -v $c >/dev/null 2>&1 && [ "$c" != "$ccs" ] && ccs="$ccs $c"
done
for c in $ccs; do
  # shellcheck disable=SC2086
  $c $flags -c -o "$WORK/embedder-$c.o" "$SRC" || fail "embedder.c does not compile cleanly with $c"
  # A version 1 table written positionally is what this guards against.
  sed 's/^static const struct cairn_bdev_ops v1_ops = {$/&\n#if 0/; s/^\t.close = my_close,$/&\n#endif\n1, "v1", my_read, my_close/' \
    "$SRC" > "$WORK/positional.c"
  grep -q '^1, "v1", my_read, my_close$' "$WORK/positional.c" || fail "could not write the positional variant"
  # shellcheck disable=SC2086
  if $c $flags -c -o "$WORK/positional.o" "$WORK/positional.c" 2>"$WORK/positional.err"; then
    fail "$c -Wextra -Werror accepted a positional version 1 ops table: the check proves nothing"
  fi
  grep -q 'missing.*initializer' "$WORK/positional.err" ||
    fail "$c refused the positional table for another reason: $(head -n 3 "$WORK/positional.err")"
done

mkdir -p "$WORK/tree"
printf 'hello embedder' > "$WORK/tree/msg"
"$CAIRN" mkfs -q "$WORK/tree" "$WORK/img.cairn" || fail "mkfs"
${CC:-cc} -o "$WORK/embedder" "$WORK/embedder-${CC:-cc}.o" -L"$BUILD" -lcairn -Wl,-rpath,"$BUILD" ||
  fail "embedder does not link against libcairn.so"
"$WORK/embedder" "$WORK/img.cairn" /msg 'hello embedder' || fail "embedder run"
echo "embedder: ok ($ccs)"
