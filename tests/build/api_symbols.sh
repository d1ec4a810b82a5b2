#!/bin/sh
# libcairn.so exports exactly the API: every cairn_* function declared in
# include/cairn/*.h and nothing else (no internal helpers such as arena_init or
# the reader's internal cairn_image_*), and the headers give those functions C
# linkage in C++ (a C++ program that uses every one links).
. "$(dirname "$0")/common.inc"
SO=$BUILD/libcairn.so.0
[ -f "$SO" ] || fail "$SO not built"
CC=${CC:-cc} "$ROOT/scripts/api-symbols.sh" "$ROOT/include" > "$WORK/declared" ||
  fail "api-symbols.sh"
[ "$(wc -l < "$WORK/declared")" -gt 50 ] || fail "too few API functions found: $(wc -l < "$WORK/declared")"
nm -D --defined-only "$SO" | awk '{ print $3 }' | sed 's/@.*//' | sort -u > "$WORK/exported"
extra=$(comm -23 "$WORK/exported" "$WORK/declared")
[ -z "$extra" ] || fail "exported but not declared in include/cairn/*.h:" $extra
absent=$(comm -13 "$WORK/exported" "$WORK/declared")
[ -z "$absent" ] || fail "declared in include/cairn/*.h but not exported:" $absent

# C++: take the address of every API function through <cairn/cairn.h> (and
# <cairn/testing.h>, the test hooks); the
# object must refer to each by its plain C name (without extern "C" they are
# mangled, and a C++ program does not link against libcairn).
if command -v g++ >/dev/null 2>&1; then
  { echo '#include <cairn/cairn.h>'
    echo '#include <cairn/testing.h>'
    echo 'int main() {'
    echo '  void (*volatile p)(void);'
    sed 's/.*/  p = reinterpret_cast<void (*)(void)>(\&&); (void)p;/' "$WORK/declared"
    echo '  return 0;'
    echo '}'
  } > "$WORK/use_all.cc"
  g++ -Wall -Wextra -I"$ROOT/include" -c -o "$WORK/use_all.o" "$WORK/use_all.cc" ||
    fail "a C++ program using the whole API does not compile"
  nm -u "$WORK/use_all.o" | awk '{ print $2 }' | sort -u > "$WORK/cxx_refs"
  missing=$(comm -23 "$WORK/declared" "$WORK/cxx_refs")
  [ -z "$missing" ] || fail "C++ does not see these with C linkage (no extern \"C\"?):" $missing
else
  echo "note: no g++, C++ linkage not checked"
fi
echo "api_symbols: $(wc -l < "$WORK/declared") functions, all exported, nothing else"
