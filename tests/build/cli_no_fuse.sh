#!/bin/sh
# The cairn tool does not link libfuse (the FUSE daemon is its own binary,
# cairn-fuse, which `cairn mount` runs): `cairn info` works on a machine
# without libfuse. The daemon is the one that links it.
. "$(dirname "$0")/common.inc"
command -v ldd >/dev/null 2>&1 || skip "ldd not installed"
[ -x "$BUILD/cairn" ] && [ -x "$BUILD/cairn-fuse" ] || fail "no $BUILD/cairn or cairn-fuse: build first"
if ldd "$BUILD/cairn" | grep -i fuse; then
  fail "$BUILD/cairn links libfuse"
fi
ldd "$BUILD/cairn-fuse" | grep -q 'libfuse3' || fail "$BUILD/cairn-fuse does not link libfuse3"

# Without the daemon (cairn copied alone, as a DESTDIR install or a package
# without it leaves it), `cairn mount --help` still prints the daemon's help
# and exits 0, and a mount names the daemon it could not run.
mkdir "$WORK/alone" && cp "$BUILD/cairn" "$WORK/alone/cairn" || fail "copy cairn"
daemon=$(tr -c '[:print:]' '\n' <"$BUILD/cairn" | grep -m1 '/cairn-fuse$' || true)
if [ -n "$daemon" ] && [ -x "$daemon" ]; then
  echo "cli_no_fuse: $daemon is installed; the no-daemon checks are skipped"
else
  "$WORK/alone/cairn" mount --help >"$WORK/help" 2>"$WORK/err" ||
    fail "cairn mount --help without the daemon: exit $?: $(cat "$WORK/err")"
  "$BUILD/cairn-fuse" --help >"$WORK/help.daemon" || fail "cairn-fuse --help: exit $?"
  cmp -s "$WORK/help" "$WORK/help.daemon" ||
    fail "cairn mount --help without the daemon differs from the daemon's: $(head -3 "$WORK/help")"
  "$WORK/alone/cairn" mount img "$WORK/mnt" >/dev/null 2>"$WORK/err" && fail "mount without the daemon succeeded"
  grep -q "cannot run the FUSE daemon /.*cairn-fuse: No such file or directory" "$WORK/err" ||
    fail "mount without the daemon said: $(cat "$WORK/err")"
fi
echo "cli_no_fuse: cairn links no libfuse; cairn-fuse does; mount --help works without it"
