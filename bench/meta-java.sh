#!/bin/sh
# Cold `java -version` and Hello from a JDK image with compressed metadata (the
# default) and with --plain-meta, side by side in one run, through cairn's own
# mount with a fixed delay per device request (1 ms). Prints wall time, device
# requests and bytes per run and the medians. Usage: bench/meta-java.sh [RUNS]
# (default 3). Needs root (mount, drop_caches). Env CAIRN (default build/cairn),
# JDK (default /usr/lib/jvm/java-17-openjdk-amd64), DELAY (default 1ms).
set -eu
RUNS=${1:-3}
CAIRN=${CAIRN:-build/cairn}
JDK=${JDK:-/usr/lib/jvm/java-17-openjdk-amd64}
DELAY=${DELAY:-1ms}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /dev/shm/cairn-meta-java.XXXXXX)
mnt=$work/mnt
cleanup() {
  mountpoint -q "$mnt" 2>/dev/null && fusermount3 -u "$mnt"
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
mkdir -p "$mnt" "$work/cls"
cp "$here/Hello.java" "$work/cls/"
"$JDK/bin/javac" -d "$work/cls" "$work/cls/Hello.java"

"$CAIRN" mkfs -q --no-fsync "$JDK" "$work/z.img"
"$CAIRN" mkfs -q --no-fsync --plain-meta "$JDK" "$work/p.img"
echo "images: compressed metadata $(stat -c %s "$work/z.img") bytes," \
  "plain $(stat -c %s "$work/p.img") bytes; $(uptime | sed 's/.*load/load/')"

one() { # name image what
  sync; echo 3 > /proc/sys/vm/drop_caches
  "$CAIRN" mount -o "delay=$DELAY,stats=$work/stats" "$2" "$mnt"
  t0=$(date +%s.%N)
  if [ "$3" = version ]; then
    "$mnt/bin/java" -Xshare:auto -version >/dev/null 2>&1
  else
    "$mnt/bin/java" -Xshare:auto -cp "$work/cls" Hello >/dev/null 2>&1
  fi
  t=$(echo "($(date +%s.%N) - $t0) * 1000" | bc)
  fusermount3 -u "$mnt"
  req=$(sed -n 's/^device_requests //p' "$work/stats")
  bytes=$(sed -n 's/^device_bytes //p' "$work/stats")
  printf '%-8s %-8s %8.1f ms %5s requests %10s bytes\n' "$1" "$3" "$t" "$req" "$bytes"
  echo "$t $req $bytes" >> "$work/$1-$3"
}

for what in version hello; do
  for i in $(seq "$RUNS"); do
    one meta-z "$work/z.img" "$what"
    one plain "$work/p.img" "$what"
  done
done
med() { # file column: the median of that column
  cut -d' ' -f"$2" "$1" | sort -n | awk '{a[NR]=$0} END {print a[int((NR+1)/2)]}'
}
echo "medians (ms, requests, bytes):"
for f in "$work"/meta-z-* "$work"/plain-*; do
  printf '%-16s %8.1f %5s %10s\n' "$(basename "$f")" "$(med "$f" 1)" "$(med "$f" 2)" "$(med "$f" 3)"
done
