#!/bin/bash
# deep.sh: rm -rf of a 300-deep tree, a file per level; 5 interleaved rounds
for r in 1 2 3 4 5; do
  for n in tmpfs ov ovwb tp/t tpwb/t; do
    d=${ROOT:?ROOT: the dir holding the mounts tmpfs ov ovwb tp tpwb}/$n/deep; p=$d
    for i in $(seq 300); do p=$p/d; done
    mkdir -p $p; q=$d; for i in $(seq 300); do q=$q/d; echo x > $q/f; done
    sync
    s=$(date +%s%N); rm -rf $d; e=$(date +%s%N)
    echo "$n $(( (e - s) / 1000000 ))"
  done
done
