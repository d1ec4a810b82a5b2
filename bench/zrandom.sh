#!/bin/sh
# 4 KiB random reads through the mount (issue 12, "Random reads";
# docs/bench/compression.md, docs/bench/zrandom.md). fio --rw=randread --bs=4k
# --ioengine=psync --runtime=5 over the JDK's 128 MiB `modules`, in an image of
# that file alone, with 1 and 2 jobs, for cairn (uncompressed, lz4hc, zstd),
# kernel EROFS (uncompressed: erofs-plain, and lz4hc) and squashfuse_ll zstd.
# The images live in /dev/shm (no device cost: this measures the file system,
# not a disk) and every run gets a fresh mount, so the file system's own caches
# start cold without dropping the machine's page cache. With BASE=BUILD2 the
# systems base-cairn, base-cairn-zstd, ... run BUILD2's cairn, for a before and
# after in one run. Prints one markdown row per system: median MiB/s over RUNS
# runs (min-max), and for cairn the daemon's peak RSS (VmHWM) over the runs and,
# from its stats, the medians of the 1-job runs' device requests, device MiB and
# FUSE reads of the file.
#   bench/zrandom.sh [BUILD] [RUNS]     (root; SYSTEMS="cairn-zstd erofs-lz4hc" to pick)
set -eu
build=${1:-build}
runs=${2:-3}
. "$(dirname "$0")/lib.sh"
if [ -n "${BASE:-}" ]; then bench_cairn zrandom "$BASE"; base_cairn=$cairn; fi
bench_cairn zrandom "$build"
src=${ZRANDOM_FILE:-/usr/lib/jvm/java-17-openjdk-amd64/lib/modules}
systems=${SYSTEMS:-"cairn cairn-lz4hc cairn-zstd erofs-plain erofs-lz4hc squashfuse-zstd"}
work=$(mktemp -d /dev/shm/cairn-zrandom.XXXXXX)
mnt=$work/mnt
cleanup() {
  mountpoint -q "$mnt" 2>/dev/null && { bench_unmount "$mnt" || umount "$mnt"; }
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
mkdir -p "$work/src" "$mnt"
cp "$src" "$work/src/"
name=$(basename "$src")

tool() { # system: the cairn that serves it
  case $1 in base-*) echo "$base_cairn" ;; *) echo "$cairn" ;; esac
}

image() { # system: builds its image once (base-X shares X's), prints its path
  i=$work/${1#base-}.img
  [ -e "$i" ] && { echo "$i"; return; }
  case ${1#base-} in
  cairn) "$cairn" mkfs -q --no-fsync "$work/src" "$i" ;;
  cairn-lz4hc) "$cairn" mkfs -q --no-fsync -z lz4hc "$work/src" "$i" ;;
  cairn-zstd) "$cairn" mkfs -q --no-fsync -z zstd "$work/src" "$i" ;;
  erofs-plain) mkfs.erofs --quiet "$i" "$work/src" ;;
  erofs-lz4hc) mkfs.erofs --quiet -zlz4hc "$i" "$work/src" ;;
  squashfuse-zstd) mksquashfs "$work/src" "$i" -comp zstd -no-progress -quiet -noappend ;;
  esac >/dev/null
  echo "$i"
}

mount_sys() { # system image
  case $1 in
  cairn*|base-*) rm -f "$work/st"
    "$(tool "$1")" mount -o "${CAIRN_OPTS:-noprofile},stats=$work/st" "$2" "$mnt" ;;
  erofs*) mount -t erofs -o loop,ro "$2" "$mnt" ;;
  squashfuse*) squashfuse_ll "$2" "$mnt" ;;
  esac
}

umount_sys() {
  case $1 in
  erofs*) umount "$mnt" ;;
  *) bench_unmount "$mnt" ;;
  esac
}

daemon_pid() { # the cairn daemon serving $mnt
  for p in $(pgrep -x cairn-fuse 2>/dev/null; pgrep -x cairn 2>/dev/null); do
    tr '\0' ' ' 2>/dev/null < /proc/$p/cmdline | grep -q -- " $mnt" && { echo "$p"; return; }
  done
  return 0
}

fio_mibs() { # jobs: one fio run, prints MiB/s
  fio --name=r --filename="$mnt/$name" --rw=randread --bs=4k --ioengine=psync \
      --runtime=5 --numjobs="$1" --group_reporting --output-format=terse \
      --terse-version=3 2>/dev/null | awk -F';' '{ printf "%.1f\n", $7 / 1024 }'
}

median() { bench_median | awk '{ printf "%s (%s-%s)", $1, $2, $3 }'; } # "m (min-max)"

stat_of() { # KEY: from the stats the daemon writes at unmount (5 s at most)
  _i=0; while [ ! -s "$work/st" ] && [ $_i -lt 50 ]; do sleep 0.1; _i=$((_i + 1)); done
  awk -v k="$1" '$1 == k { print $2 }' "$work/st"
}

echo "| system | 1 job MiB/s | 2 jobs MiB/s | daemon peak RSS MiB | 1 job: device requests / MiB / FUSE reads |"
echo "|---|---|---|---|---|"
for s in $systems; do
  img=$(image "$s")
  row="| $s"
  hwm=0
  : > "$work/req"; : > "$work/mib"; : > "$work/frd"
  for jobs in 1 2; do
    : > "$work/bw"
    r=0
    while [ $r -lt "$runs" ]; do
      mount_sys "$s" "$img"
      fio_mibs "$jobs" >> "$work/bw"
      p=$(daemon_pid)
      if [ -n "$p" ]; then
        h=$(awk '/VmHWM/ { print int($2 / 1024) }' /proc/$p/status)
        [ "$h" -gt "$hwm" ] && hwm=$h
      fi
      umount_sys "$s"
      if [ -n "$p" ] && [ "$jobs" = 1 ]; then
        stat_of device_requests >> "$work/req"
        stat_of device_bytes | awk '{ printf "%.1f\n", $1 / 1048576 }' >> "$work/mib"
        stat_of fuse_image_reads >> "$work/frd"
      fi
      r=$((r + 1))
    done
    row="$row | $(median < "$work/bw")"
  done
  case $s in
  cairn*|base-*) row="$row | $hwm | $(bench_median < "$work/req" | cut -d' ' -f1) / \
$(bench_median < "$work/mib" | cut -d' ' -f1) / $(bench_median < "$work/frd" | cut -d' ' -f1) |" ;;
  *) row="$row | - | - |" ;;
  esac
  echo "$row"
done
