#!/bin/sh
# The compression sweep behind mkfs -z's defaults (docs/bench/compression.md, "The
# sweep behind the defaults"): image size and build time of each reference tree
# under cairn's codecs, levels and chunk sizes, beside mksquashfs -comp zstd and
# mkfs.erofs -zlz4hc. One build each,
# the tree warm in the page cache, every tool on all cores; the images go to tmpfs.
#   bench/zsweep.sh [BUILD]    (prints a markdown table)
# ZSWEEP_TREES and ZSWEEP_CONFIGS ("CODEC[,LEVEL]:CHUNK ...") narrow the sweep.
set -eu
build=${1:-build}
cairn=$build/cairn
work=$(mktemp -d /dev/shm/cairn-zsweep.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
walk=/usr/lib/node_modules; [ -d "$walk" ] || walk=/usr/include
trees=${ZSWEEP_TREES:-"/usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/python3.11 $walk"}
configs=${ZSWEEP_CONFIGS:-"none:128K lz4:128K lz4hc:128K zstd:64K zstd:128K zstd:256K zstd:1M zstd,9:128K zstd,9:512K zstd,15:128K"}

secs() { # command...: run it, print its wall time in seconds
  t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc | sed 's/^\./0./'
}
mib() { echo "scale=1; $(stat -c %s "$1") / 1048576" | bc | sed 's/^\./0./'; }

echo "| tree | image | MiB | build s |"
echo "|---|---|---|---|"
for t in $trees; do
  find "$t" -type f -exec cat {} + >/dev/null 2>&1 || true
  name=$(basename "$t")
  for c in $configs; do
    z=${c%%:*}; cs=${c#*:}
    s=$(secs "$cairn" mkfs -q --no-fsync -z "$z" --chunk-size "$cs" "$t" "$work/i")
    echo "| $name | cairn -z $z --chunk-size $cs | $(mib "$work/i") | $s |"
  done
  if command -v mksquashfs >/dev/null; then
    s=$(secs mksquashfs "$t" "$work/s" -comp zstd -no-progress -quiet -noappend)
    echo "| $name | mksquashfs -comp zstd | $(mib "$work/s") | $s |"; rm -f "$work/s"
  fi
  if command -v mkfs.erofs >/dev/null; then
    s=$(secs mkfs.erofs --quiet -zlz4hc "$work/e" "$t")
    echo "| $name | mkfs.erofs -zlz4hc | $(mib "$work/e") | $s |"; rm -f "$work/e"
  fi
done
