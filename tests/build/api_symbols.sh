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

# C++: take the address of every API function through <cairn/cairn.h>; without
# extern "C" the names are mangled and the link fails.
if command -v g++ >/dev/null 2>&1; then
  { echo '#include <cairn/cairn.h>'
    echo 'int main() {'
    echo '  void (*volatile p)(void);'
    sed 's/.*/  p = reinterpret_cast<void (*)(void)>(\&&); (void)p;/' "$WORK/declared"
    echo '  return 0;'
    echo '}'
  } > "$WORK/use_all.cc"
  g++ -I"$ROOT/include" -o "$WORK/use_all" "$WORK/use_all.cc" -L"$BUILD" -l:libcairn.so.0 \
    2> "$WORK/cxx.log" || { cat "$WORK/cxx.log"; fail "a C++ program using the whole API does not link"; }
  LD_LIBRARY_PATH=$BUILD "$WORK/use_all" || fail "the C++ program did not run"
else
  echo "note: no g++, C++ linkage not checked"
fi
echo "api_symbols: $(wc -l < "$WORK/declared") functions, all exported, nothing else"
