#!/bin/sh
# The long differential run (minutes): tests/mount/difftest.sh over many seeds
# and more ops per seed, on --empty, tmp=, the overlay and the overlay with -o
# writeback over a compressed image. Root, /dev/fuse.
#   tests/difftest-long.sh [FIRST [COUNT [OPS]]]    (default 1 200 3000)
# Build first (make). On a mismatch it prints the seed, the op index, what
# differed and the op log; rerun one seed with
#   DIFFTEST_SEEDS=N DIFFTEST_OPS=OPS CAIRN=build/cairn sh tests/mount/difftest.sh
# or run build/progs/difftest -s N -n OPS REF TEST on two directories yourself.
cd "$(dirname "$0")/.." || exit 2
first=${1:-1} count=${2:-200} ops=${3:-3000}
CAIRN=${CAIRN:-$PWD/build/cairn} DIFFTEST_OPS=$ops \
  DIFFTEST_SEEDS="$(seq "$first" $((first + count - 1)) | tr '\n' ' ')" \
  exec sh tests/mount/difftest.sh
