#!/bin/sh
# Stress scripts of docs/bench/stress.md; outputs under $OUT (default /tmp/stress-out).
# misc.sh NAME DIR: dbench, fs_mark, bonnie++ (-f and not)
name=$1 dir=$2
out=${OUT:-/tmp/stress-out}/misc-$name; mkdir -p $out
t0=$(date +%s.%N)
mkdir -p $dir/db; timeout 120 dbench -c /usr/share/dbench/client.txt -D $dir/db -t 15 2 > $out/dbench.log 2>&1; echo "dbench $?" >> $out/rc; rm -rf $dir/db
mkdir -p $dir/fsm; timeout 120 fs_mark -d $dir/fsm -n 2000 -s 4096 -t 2 -S 1 -L 2 > $out/fsmark.log 2>&1; echo "fs_mark $?" >> $out/rc; rm -rf $dir/fsm
mkdir -p $dir/bf; timeout 300 bonnie++ -d $dir/bf -u root -s 256 -r 128 -n 8:4096:0:8 -f -q > $out/bonnie-f.log 2>&1; echo "bonnie-f $?" >> $out/rc; rm -rf $dir/bf
