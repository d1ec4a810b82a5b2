#!/bin/sh
# The long stress campaign (not in make test): every stress-ng stressor of
# --class filesystem and the file ones of --class io, one at a time with
# --verify, on each layer, and after each one checks that the daemon still
# answers. Prints one line per stressor and layer: ok, skip (stress-ng could not
# run it here: exit 3/4), FAIL (stress-ng exit 1/2 or a verify/fail line), DEAD
# (the mount no longer answers). Then dbench, bonnie++, fs_mark and fio (below)
# on each writable layer.
#   CAIRN=build/cairn tests/stress-long.sh [stressor...]
# Environment: LAYERS (default "empty writeback tmp overlay ro"), T (seconds per
# stressor, default 5), N (instances, default 1), MOPTS (extra mount options,
# e.g. "-s" for the single-threaded daemon), NOTOOLS (set: stress-ng only), OUT (log dir, default a temp dir
# that is kept).
set -u
: "${CAIRN:?CAIRN must point at the cairn tool}"
LAYERS=${LAYERS:-"empty writeback tmp overlay ro"}
T=${T:-5}
N=${N:-1}
MOPTS=${MOPTS:-}
OUT=${OUT:-$(mktemp -d /tmp/cairn-stress-long.XXXXXX)}
mkdir -p "$OUT"
STRESSORS=${*:-"access chattr chdir chmod chown copy-file dentry dir dirdeep dirmany
 dnotify dup eventfd fallocate fanotify fcntl fiemap file-ioctl filename flock
 fpunch fsize fstat getdent handle hdd inode-flags inotify io iomix ioprio lease
 link locka lockf lockofd mknod open procfs rename symlink sync-file touch utime
 verity xattr aio aiol io-uring readahead revio seek"}
W=$OUT/w
mkdir -p "$W/src/tmp" "$W/src/data"
head -c 1000000 /dev/urandom > "$W/src/data/r1"
"$CAIRN" mkfs -q "$W/src" "$W/img" || { echo "mkfs failed"; exit 1; }
M=""
cleanup() { [ -z "$M" ] || fusermount3 -u "$M" 2>/dev/null; }
trap cleanup EXIT
trap 'exit 130' INT TERM

mount_layer() { # mount_layer LAYER: sets M and D (the directory to stress)
  M=$W/m.$1; mkdir -p "$M"
  # shellcheck disable=SC2086
  case $1 in
    empty) "$CAIRN" mount $MOPTS --empty -o size=1G "$M"; D=$M ;;
    writeback) "$CAIRN" mount $MOPTS --empty -o writeback,size=1G "$M"; D=$M ;;
    tmp) "$CAIRN" mount $MOPTS -o tmp=/tmp,size=1G "$W/img" "$M"; D=$M/tmp ;;
    overlay) "$CAIRN" mount $MOPTS -o overlay,size=1G "$W/img" "$M"; D=$M ;;
    ro) "$CAIRN" mount $MOPTS "$W/img" "$M"; D=$M/tmp ;;
  esac
}
alive() { timeout 10 stat "$D" >/dev/null 2>&1 && mountpoint -q "$M"; }

# The other tools, on a writable layer: dbench, bonnie++ (no per-char tests:
# one FUSE request a byte), fs_mark, fio with each engine and O_DIRECT, verify.
tools() {
  run() { # run NAME CMD...: one result line
    _n=$1; shift
    if ! command -v "$1" >/dev/null 2>&1; then echo "$l $_n skip"; return; fi
    ( cd "$OUT" && timeout 600 "$@" ) > "$OUT/$l.$_n.log" 2>&1
    _rc=$?
    if ! alive; then echo "$l $_n DEAD"; bad=1
    elif [ $_rc -ne 0 ]; then echo "$l $_n FAIL(rc=$_rc)"; bad=1
    else echo "$l $_n ok"
    fi
    rm -rf "${D:?}"/* 2>/dev/null
  }
  run dbench dbench -t $((T * 4)) -D "$D" $((N * 4))
  run bonnie bonnie++ -u root -d "$D" -r 64 -s 128 -n 4 -f -q
  run fs_mark fs_mark -d "$D/fsm" -n 2000 -s 4096 -t 4 -L 2
  for e in psync libaio io_uring mmap; do
    for o in 0 1; do
      [ $e = mmap ] && [ $o = 1 ] && continue
      run "fio-$e-direct$o" fio --name=v --directory="$D" --rw=randrw --size=8M --bs=4k \
        --verify=crc32c --do_verify=1 --verify_fatal=1 --ioengine=$e --iodepth=16 \
        --direct=$o --numjobs=$((N * 6)) --runtime=$T --verify_state_save=0
    done
  done
}

bad=0
for l in $LAYERS; do
  mount_layer "$l" || { echo "$l: mount failed"; bad=1; continue; }
  for s in $STRESSORS; do
    log=$OUT/$l.$s.log
    timeout $((T * 4 + 60)) stress-ng --temp-path "$D" --"$s" "$N" -t "$T" \
      --verify --metrics-brief > "$log" 2>&1
    rc=$?
    if ! alive; then
      r=DEAD; bad=1
    elif [ $rc -eq 3 ] || [ $rc -eq 4 ]; then r=skip
    elif [ "$s" = io-uring ] && grep -q 'IORING_OP_STATX), error=2' "$log"; then
      r="stress-ng-bug" # its STATX fails on ext4 and tmpfs as well
    elif grep -q 'must be readable and writeable' "$log"; then
      r="refused-at-start" # stress-ng checks the temp path is writable first
    elif [ $rc -ne 0 ] || grep -qE '(fail|error):' "$log"; then
      if [ "$l" = ro ]; then r="ro-refused(rc=$rc)"; else r="FAIL(rc=$rc)"; bad=1; fi
    else r=ok
    fi
    echo "$l $s $r"
    if [ "$r" = DEAD ]; then
      fusermount3 -u "$M" 2>/dev/null || umount -l "$M"
      mount_layer "$l" || break
    fi
  done
  [ "$l" = ro ] || [ -n "${NOTOOLS:-}" ] || tools
  # stress-ng's children may hold the mount a moment after it returns.
  i=0
  until fusermount3 -u "$M" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 50 ] || { echo "$l: unmount failed"; bad=1; break; }
    sleep 0.2
  done
  M=""
done
echo "logs in $OUT"
exit $bad
