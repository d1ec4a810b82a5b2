#!/bin/sh
# The Makefile's promises (README "Build and test"):
# - CFLAGS=... on the command line keeps the sanitizer flags of SAN=;
# - examples and the mount helper have dependency files that make reads;
# - fuzz/Makefile compiles with the main build's standard and warnings;
# - one test runs by name: make check T=<shell test or unit test>.
. "$(dirname "$0")/common.inc"
# joined FILE: the commands make printed, one a line (recipes may use \-newline).
joined() { sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$1"; }

# Sanitizers survive CFLAGS=.
for san in asan:-fsanitize=address tsan:-fsanitize=thread; do
  submake -n -B BUILD="$WORK/b" SAN="${san%%:*}" CFLAGS=-O1 "$WORK/b/lib/util/error.o" \
    > "$WORK/san.log" 2>&1 || fail "make -n SAN=${san%%:*}"
  joined "$WORK/san.log" | grep -- '-c lib/util/error.c' | grep -q -- "${san#*:}" ||
    fail "SAN=${san%%:*} CFLAGS=-O1 compiles without ${san#*:}"
done

# Dependency files of the examples and the helper are part of the build graph.
[ -f "$BUILD/mount.cairn" ] || fail "$BUILD not built"
BUILD=${BUILD#"$ROOT"/} # as make was given it, the name its dependency files use
submake -pq BUILD="$BUILD" FORCE > "$WORK/db" 2>/dev/null || true
for ex in "$ROOT"/examples/*.c; do
  o=$BUILD/examples/$(basename "$ex" .c).o
  grep "^$o:" "$WORK/db" | grep -q 'include/cairn/' ||
    fail "make does not know what $o depends on (no dependency file read)"
done
grep '^MAKEFILE_LIST :=' "$WORK/db" | grep -q "$BUILD/tools/mount.cairn/main.d" ||
  fail "the mount helper's dependency file is not read"

# fuzz/Makefile shares the main flags.
for var in STD_CFLAGS WARN; do
  flags=$(sed -n "s/^$var := //p" "$WORK/db")
  [ -n "$flags" ] || fail "no $var in the main Makefile"
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -C "$ROOT" -n -B \
    -f fuzz/Makefile FUZZ_BUILD="$WORK/f" "$WORK/f/obj/lib/util/error.o" > "$WORK/fuzz.log" 2>&1 ||
    fail "make -n -f fuzz/Makefile"
  line=$(joined "$WORK/fuzz.log" | grep -- '-c lib/util/error.c')
  for f in $flags; do
    # -Werror comes from WERROR=1 on the command line, which the fuzz make above
    # does not get (MAKEFLAGS is dropped so it reads its own defaults).
    [ "$f" = -Werror ] && continue
    case " $line " in *" $f "*) ;; *) fail "fuzz/Makefile compiles without $f ($var)" ;; esac
  done
done

# What has PREFIX/BINDIR compiled in is rebuilt when they change (the helper's
# BINDIR, cairn.pc), and only then.
prefix_build() { # PREFIX: builds the helper and cairn.pc into $WORK/h
  submake BUILD="$WORK/h" PREFIX="$1" "$WORK/h/mount.cairn" "$WORK/h/cairn.pc" > "$WORK/h.log" 2>&1 ||
    { cat "$WORK/h.log"; fail "make mount.cairn PREFIX=$1"; }
}
prefix_build /opt/cairn-a
grep -q /opt/cairn-a/bin "$WORK/h/mount.cairn" || fail "the helper lacks BINDIR /opt/cairn-a/bin"
prefix_build /opt/cairn-b
grep -q /opt/cairn-b/bin "$WORK/h/mount.cairn" || fail "the helper was not rebuilt for PREFIX=/opt/cairn-b"
grep -q '^prefix=/opt/cairn-b$' "$WORK/h/cairn.pc" || fail "cairn.pc was not rebuilt for the new PREFIX"
prefix_build /opt/cairn-b
grep -q 'mount.cairn/main.c' "$WORK/h.log" && fail "the helper was rebuilt with PREFIX unchanged"

# make check T=: one shell test (its verdict is the result), one unit test.
printf '#!/bin/sh\necho fine\n' > "$WORK/pass.sh"
printf '#!/bin/sh\necho broken\nexit 1\n' > "$WORK/fail.sh"
submake check BUILD="$BUILD" T="$WORK/pass.sh" > "$WORK/check.log" 2>&1 ||
  { cat "$WORK/check.log"; fail "make check T=pass.sh failed"; }
grep -q "^ok .*pass.sh" "$WORK/check.log" || fail "make check did not run pass.sh"
if submake check BUILD="$BUILD" T="$WORK/fail.sh" > "$WORK/check.log" 2>&1; then
  fail "make check T=fail.sh passed"
fi
grep -q "^FAIL .*fail.sh" "$WORK/check.log" || fail "make check did not report fail.sh"
if submake check BUILD="$BUILD" > "$WORK/check.log" 2>&1; then fail "make check without T passed"; fi
grep -q 'make check T=' "$WORK/check.log" || fail "make check without T does not say how to use it"
submake check BUILD="$BUILD" T=lib/format/tests/test_format.c > "$WORK/check.log" 2>&1 ||
  { cat "$WORK/check.log"; fail "make check T=lib/format/tests/test_format.c"; }
grep -q '^ok .*format_test_format' "$WORK/check.log" || fail "the unit test did not run"
echo "makefile: ok"
