#!/bin/sh
# mkfs speed and image size on one tree, beside mksquashfs (uncompressed) and
# mkfs.erofs (uncompressed), in the same run. Usage: bench/mkfs.sh [TREE] [RUNS]
# Env CAIRN = the cairn tool (default build/cairn). Prints one line per run and
# tool, then the median per tool. The source tree is read once first (warm).
set -eu
TREE=${1:-/usr/lib/jvm/java-17-openjdk-amd64}
RUNS=${2:-5}
CAIRN=${CAIRN:-build/cairn}
work=$(mktemp -d /tmp/cairn-bench-mkfs.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM

now() { date +%s.%N; }
run() { # name image command...
  name=$1; img=$2; shift 2
  rm -f "$img"; sync
  t0=$(now); "$@" >/dev/null 2>&1 || { echo "$name failed" >&2; return 1; }; t1=$(now)
  t=$(echo "$t1 - $t0" | bc)
  printf '%-22s %6.3f s  %11d bytes\n' "$name" "$t" "$(stat -c %s "$img")"
  echo "$t" >> "$work/$name.times"
}

tar -cf - "$TREE" 2>/dev/null | cat > /dev/null   # warm the page cache
for i in $(seq "$RUNS"); do
  run cairn "$work/c.img" "$CAIRN" mkfs -q --no-fsync "$TREE" "$work/c.img"
  run cairn-fsync "$work/c.img" "$CAIRN" mkfs -q "$TREE" "$work/c.img"
  if command -v mksquashfs >/dev/null; then
    run mksquashfs-noIDFX "$work/s.img" mksquashfs "$TREE" "$work/s.img" -noI -noD -noF -noX \
      -no-progress -quiet
  fi
  if command -v mkfs.erofs >/dev/null; then
    run mkfs.erofs "$work/e.img" mkfs.erofs "$work/e.img" "$TREE"
  fi
done
echo "median of $RUNS runs:"
for f in "$work"/*.times; do
  n=$(basename "$f" .times)
  printf '%-22s %6.3f s\n' "$n" "$(sort -n "$f" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')"
done
