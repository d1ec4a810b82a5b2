#!/bin/sh
# Stress scripts of docs/bench/stress.md; outputs under $OUT (default /tmp/stress-out).
# fio.sh NAME DIR: verify=crc32c jobs; rc per job
name=$1 dir=$2
out=${OUT:-/tmp/stress-out}/fio-$name; mkdir -p $out
common="--directory=$dir --size=32M --verify=crc32c --do_verify=1 --verify_fatal=1 --group_reporting"
run() { j=$1; shift; timeout 120 fio --name=$j $common "$@" > $out/$j.log 2>&1; echo "$j $?" >> $out/rc; rm -f $dir/$j.*; }
run seqw --rw=write --bs=1M --ioengine=psync
run randw --rw=randwrite --bs=4k --ioengine=psync --numjobs=2
run randw_odd --rw=randwrite --bs=3k --ioengine=psync
run mmap --rw=randwrite --bs=4k --ioengine=mmap
run aio --rw=randwrite --bs=16k --ioengine=libaio --iodepth=8
run direct --rw=randwrite --bs=4k --ioengine=psync --direct=1
run fsync --rw=randwrite --bs=8k --ioengine=psync --fsync=4
run trim --rw=randtrim --bs=64k --ioengine=psync --verify=0 --do_verify=0
run randrw --rw=randrw --bs=4k --ioengine=psync --verify_backlog=64 --numjobs=2
