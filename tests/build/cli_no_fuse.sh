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
echo "cli_no_fuse: cairn links no libfuse; cairn-fuse does"
