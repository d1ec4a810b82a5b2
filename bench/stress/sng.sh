#!/bin/sh
# Stress scripts of docs/bench/stress.md; outputs under $OUT (default /tmp/stress-out).
# sng.sh NAME DIR: each filesystem stressor, 3 s, --verify; rc per stressor
name=$1 dir=$2
out=${OUT:-/tmp/stress-out}/sng-$name
mkdir -p $out
for s in access chattr chdir chmod chown copy-file dentry dir dirdeep dirmany dnotify dup fallocate fcntl fiemap file-ioctl filename flock fpunch fsize fstat getdent handle hdd inode-flags inotify io iomix lease link locka lockf lockofd mknod open rename symlink sync-file touch utime xattr; do
  d=$dir/sng-$s; mkdir -p $d
  timeout 60 stress-ng --$s 1 -t 3s --verify --temp-path $d > $out/$s.log 2>&1
  echo "$s $?" >> $out/rc
  rm -rf $d
done
