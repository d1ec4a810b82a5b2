#!/bin/sh
# A bounded stress run of every layer with real tools, failing on any error or
# data mismatch: stress-ng's file system stressors (with --verify) for a few
# seconds, fsx (random pwrite/pread/truncate/mmap/fallocate/copy_file_range/
# reopen with O_TRUNC against a model, and again with O_DIRECT) and fio with
# verify on each writable layer (--empty, with -o writeback too, tmp=, overlay);
# fsx -R readers, several at once, on the read-only image mount against the
# files it was made from.
# stress-ng and fio come from scripts/deps.sh test (as make test runs it).
. "$(dirname "$0")/common.inc"
for t in stress-ng fio; do
  command -v $t >/dev/null 2>&1 || skip "$t not installed (scripts/deps.sh test)"
done
FSX=$PROGS/fsx

# stress-ng: one instance of each stressor, all at once, 3 s; the sizes keep a
# whole layer well inside RAM.
stressng() {
  timeout 120 stress-ng --temp-path "$1" -t 3 --verify --metrics-brief \
    --dir 1 --dir-dirs 256 --dentry 1 --dentries 256 --rename 1 --link 1 --symlink 1 \
    --xattr 1 --fallocate 1 --fallocate-bytes 2M --seek 1 --seek-size 2M \
    --hdd 1 --hdd-bytes 2M --lockf 1 --flock 1 --mmap 1 --mmap-bytes 2M \
    --sync-file 1 --sync-file-bytes 2M --file-ioctl 1 --utime 1 --chmod 1 --chown 1 \
    --readahead 1 --readahead-bytes 2M --getdent 1 --open 1 --open-max 2000 \
    --iomix 1 --iomix-bytes 2M > "$WORK/sng.out" 2>&1
  rc=$?
  if [ $rc -ne 0 ] || grep -qE '(fail|error):' "$WORK/sng.out"; then
    grep -vE '^stress-ng: metrc' "$WORK/sng.out" | tail -n 30
    fail "stress-ng on $1 (exit $rc)"
  fi
  grep -q 'successful run completed' "$WORK/sng.out" || fail "stress-ng on $1: no success line"
}

fiov() { # fio, each pattern written and read back with checksums
  for rw in write randrw; do
    timeout 120 fio --name=v --directory="$1" --rw=$rw --size=4M --bsrange=512-64k \
      --verify=crc32c --do_verify=1 --verify_fatal=1 --ioengine=psync --numjobs=2 \
      --runtime=5 --verify_state_save=0 > "$WORK/fio.out" 2>&1 ||
      { tail -n 20 "$WORK/fio.out"; fail "fio $rw verify on $1"; }
    grep -q 'err= 0' "$WORK/fio.out" || { cat "$WORK/fio.out"; fail "fio $rw on $1"; }
  done
  timeout 120 fio --name=m --directory="$1" --rw=randrw --size=2M --bs=4k --verify=md5 \
    --verify_fatal=1 --verify_state_save=0 --ioengine=mmap > "$WORK/fio.out" 2>&1 ||
    { tail -n 20 "$WORK/fio.out"; fail "fio mmap verify on $1"; }
  rm -f "$1"/v.* "$1"/m.*
}

layer() { # layer DIR NAME
  stressng "$1"
  "$FSX" -n 2000 -s 1 "$1/fsx" || fail "fsx on $2"
  "$FSX" -n 300 -s 2 -D "$1/fsx" || fail "fsx -D (O_DIRECT) on $2"
  fiov "$1"
  [ -z "$(ls -A "$1" | grep -v '^lost')" ] || [ "$2" = overlay ] ||
    fail "$2: the tools left files behind: $(ls -A "$1" | head -n 3)"
  echo "$2: ok"
}

# The image: random files for the read-only checks, and /tmp for tmp=.
S=$WORK/src
mkdir -p "$S/tmp" "$S/data"
head -c 3000000 /dev/urandom > "$S/data/r1"
head -c 777777 /dev/urandom > "$S/data/r2"
"$CAIRN" mkfs -q "$S" "$WORK/img" || fail "mkfs"

mnt "$WORK/e" --empty -o size=256M || fail "mount --empty"
layer "$WORK/e" --empty
mnt "$WORK/w" --empty -o writeback,size=256M || fail "mount --empty -o writeback"
layer "$WORK/w" writeback
mnt "$WORK/t" -o tmp=/tmp,size=256M "$WORK/img" || fail "mount tmp="
layer "$WORK/t/tmp" tmp=
mnt "$WORK/o" -o overlay,size=256M "$WORK/img" || fail "mount -o overlay"
layer "$WORK/o" overlay
cmp -s "$S/data/r1" "$WORK/o/data/r1" || fail "overlay: image file changed by the stress run"

mnt "$WORK/r" "$WORK/img" || fail "mount"
pids=""
for s in 1 2 3 4; do
  "$FSX" -n 1500 -s $s -R "$S/data/r1" "$WORK/r/data/r1" > "$WORK/ro.$s" 2>&1 &
  pids="$pids $!"
done
"$FSX" -n 300 -D -R "$S/data/r2" "$WORK/r/data/r2" > "$WORK/ro.d" 2>&1 || { cat "$WORK/ro.d"; fail "fsx -D -R"; }
for p in $pids; do wait "$p" || { cat "$WORK"/ro.*; fail "fsx -R reader $p"; }; done
echo "read-only: ok"
echo "stress: ok"
