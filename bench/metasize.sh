#!/bin/sh
# Metadata size (issue 17): N empty files, 1000 per directory (the tree of
# bench.py's files section, shared through /var/tmp/cairn-bench-trees), as a
# cairn image (default: compressed metadata), a cairn image with --plain-meta,
# mksquashfs uncompressed (-noI -noD -noF -noX, bench.py's "sqfs") and with its
# default compression, and mkfs.erofs, in the same run. Prints bytes and bytes
# per file; exits 1 if the default cairn image is larger than mksquashfs's.
# Usage: bench/metasize.sh [N] (default 100000). Env CAIRN = the tool
# (default build/cairn). Sizes are a benchmark, not a `make test` check.
set -eu
N=${1:-100000}
CAIRN=${CAIRN:-build/cairn}
TREES=/var/tmp/cairn-bench-trees
tree=$TREES/files-$N
work=$(mktemp -d /tmp/cairn-bench-metasize.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM

if [ ! -e "$tree/.complete" ]; then # the layout of bench.py make_tree()
  echo "generating $N empty files in $tree (once)" >&2
  rm -rf "$tree"
  python3 - "$tree" "$N" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(0, n, 1000):
    sub = os.path.join(d, f"d{i // 1000:04d}")
    os.makedirs(sub)
    for j in range(min(1000, n - i)):
        os.close(os.open(os.path.join(sub, f"f{j:04d}"), os.O_CREAT | os.O_WRONLY, 0o644))
open(os.path.join(d, ".complete"), "w").close()
PY
fi

row() { # name image command...
  name=$1; img=$2; shift 2
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>&1 || { echo "$name failed" >&2; return 1; }
  t=$(echo "$(date +%s.%N) - $t0" | bc)
  size=$(stat -c %s "$img")
  printf '%-24s %12d bytes %8.1f B/file %8.1f s\n' "$name" "$size" \
    "$(echo "$size / $N" | bc -l)" "$t"
  echo "$size" > "$work/$name.size"
  rm -f "$img"
}

echo "metadata size, $N empty files; $(uptime | sed 's/.*load/load/')"
row cairn "$work/c.img" "$CAIRN" mkfs -q --no-fsync "$tree" "$work/c.img"
row cairn-plain-meta "$work/p.img" "$CAIRN" mkfs -q --no-fsync --plain-meta "$tree" "$work/p.img"
if command -v mksquashfs >/dev/null; then
  row mksquashfs-noIDFX "$work/s.img" mksquashfs "$tree" "$work/s.img" -noI -noD -noF -noX \
    -no-progress -quiet
  row mksquashfs-gzip "$work/z.img" mksquashfs "$tree" "$work/z.img" -no-progress -quiet
fi
if command -v mkfs.erofs >/dev/null; then
  row mkfs.erofs "$work/e.img" mkfs.erofs --quiet "$work/e.img" "$tree"
fi
if [ -e "$work/mksquashfs-noIDFX.size" ] &&
   [ "$(cat "$work/cairn.size")" -gt "$(cat "$work/mksquashfs-noIDFX.size")" ]; then
  echo "cairn's image is larger than mksquashfs's" >&2
  exit 1
fi
