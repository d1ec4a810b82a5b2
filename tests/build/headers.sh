#!/bin/sh
# Every public header compiles on its own, as C11 and (with g++) as C++, with
# warnings as errors; cairn.h includes every public header but testing.h (test
# hooks, not part of the stable API), which it must not include.
. "$(dirname "$0")/common.inc"
CC=${CC:-cc}
for h in "$ROOT"/include/cairn/*.h; do
  name=${h##*/}
  printf '#include <cairn/%s>\n' "$name" > "$WORK/one.c"
  $CC -std=c11 -Wall -Wextra -pedantic -Werror -fsyntax-only -I"$ROOT/include" "$WORK/one.c" ||
    fail "cairn/$name does not compile alone as C11"
  if command -v g++ >/dev/null 2>&1; then
    g++ -x c++ -Wall -Wextra -pedantic -Werror -fsyntax-only -I"$ROOT/include" "$WORK/one.c" ||
      fail "cairn/$name does not compile alone as C++"
  fi
  [ "$name" = cairn.h ] && continue
  if [ "$name" = testing.h ]; then
    ! grep -q "^#include <cairn/testing.h>" "$ROOT/include/cairn/cairn.h" ||
      fail "cairn/cairn.h includes cairn/testing.h, which is outside the stable API"
    grep -q 'extern "C"' "$h" || fail "cairn/$name has no extern \"C\" guard"
    continue
  fi
  grep -q "^#include <cairn/$name>" "$ROOT/include/cairn/cairn.h" ||
    fail "cairn/cairn.h does not include cairn/$name"
  grep -q 'extern "C"' "$h" || fail "cairn/$name has no extern \"C\" guard"
done
echo "headers: ok"
