#!/bin/sh
# Learned profile against the ordered image, side by side in one run (issue 17's
# goal: profile <= 1.15x ordered + prefetch at 1 ms, <= 1.2x at 20 ms with
# channels). Java Hello from the JDK (-p java), Python start-up with the
# stdlib on the mount (-p python, bench.py's imports) or the small-files walk
# (-p walk, bench.py's quick one: cat of every file of /usr/include/linux), cold (caches dropped, fresh mount), the
# images read through bench/delayfs (as bench.py does: DELAY per request,
# CHANNELS in parallel, BW MB/s, 0 = unlimited), alternating the two mounts,
# RUNS times each. With -u the images are served by nginx on 127.0.0.1 instead
# and mounted by URL with cairn's own delay device over http (-o delay=DELAY,
# delay_rate=BW MB/s, connections=CHANNELS): an emulated remote store, where a
# vectored read is one multi-range GET (one request, one latency):
#   bench/profile_gap.sh [-p java|python|walk] [-d DELAY] [-c CHANNELS] [-r BW] [-n RUNS]
#                        [-b BUILD] [-w WORK] [-u]
# Prints one line per run (wall ms of the workload, device requests and MiB) and
# the medians; each run's stats file stays as WORK/ordered.stats.N and
# WORK/profile.stats.N (N from 0) to tell a slow run's misses and readahead. Builds in WORK (default /dev/shm/cairn-profile-gap): the plain image,
# two traces of it joined (as bench.py takes them), the ordered image built with
# them. MKFS_OPTS adds options to both mkfs runs of a fresh WORK (a publisher's
# choice, such as --granule 32K); PROFILE_OPTS adds mount options to the profile
# mount (segment=32K, say). Needs root (mounts, drop_caches). Run with chrt -f 50 on a busy machine.
set -eu
delay=1ms; channels=1; bw=0; runs=5; build=build; work=/dev/shm/cairn-profile-gap; wl=java; url=
while getopts p:d:c:r:n:b:w:u o; do
  case $o in
    p) wl=$OPTARG ;;
    d) delay=$OPTARG ;; c) channels=$OPTARG ;; r) bw=$OPTARG ;; n) runs=$OPTARG ;;
    b) build=$OPTARG ;; w) work=$OPTARG ;; u) url=1 ;; *) exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
C=$(cd "$build" && pwd)/cairn
mkdir -p "$work/hello" "$work/img" "$work/dev"
DEV=$work/dev
PY_MODULES="json re collections typing dataclasses argparse subprocess threading logging
email.parser email.message http.client urllib.request urllib.parse xml.etree.ElementTree
decimal fractions datetime pathlib tempfile shutil tarfile zipfile csv sqlite3 unittest
asyncio ssl hashlib base64 pickle textwrap inspect ast uuid random statistics socket
selectors gettext locale difflib pprint configparser string struct heapq bisect enum
functools contextlib copy glob fnmatch"
case $wl in
  java) SRC=${JDK:-/usr/lib/jvm/java-17-openjdk-amd64}; M=$work/m ;;
  python) SRC=/usr/lib/python3.11; M=$work/pyhome/lib/python3.11 ;;
  walk) SRC=/usr/include/linux; M=$work/m ;;
  *) echo "profile_gap: -p java, python or walk" >&2; exit 2 ;;
esac
mkdir -p "$M"
workload() {
  if [ "$wl" = java ]; then
    "$M/bin/java" -cp "$work/hello" Hello
  elif [ "$wl" = walk ]; then
    find "$M" -type f -exec cat {} + > /dev/null
  else
    env -u PYTHONPATH PYTHONHOME="$work/pyhome" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3.11 -S \
      -c "import sys, os; import $(echo $PY_MODULES | tr ' ' ,); assert os.__file__.startswith('$M'); print('ok')"
  fi
}
# The last daemon may still hold its image in $DEV open a moment after unmount.
undev() {
  fusermount3 -u "$M" 2>/dev/null
  if [ -n "$url" ]; then [ ! -f "$work/nginx/nginx.pid" ] || kill "$(cat "$work/nginx/nginx.pid")"; return 0; fi
  i=0; until fusermount3 -u "$DEV" 2>/dev/null || [ $i -ge 50 ]; do sleep 0.1; i=$((i + 1)); done
}
trap 'set +e; undev' EXIT
# Cold means the image is cold, not the host (as bench.py has it): the host's
# binaries and the libraries the workload's shared objects pull in (libssl,
# libsqlite3...) are read again after the drop, so the host disk's reads do not
# add their noise to the image's figures.
case $wl in
  java) HOST_BINS="$SRC/bin/java $SRC/lib/server/libjvm.so $SRC/lib/*.so" ;;
  python) HOST_BINS="/usr/bin/python3.11 $SRC/lib-dynload/*.so" ;;
  walk) HOST_BINS="$(command -v find) $(command -v cat)" ;;
esac
HOST_FILES=$(for f in $HOST_BINS; do case $f in "$SRC"/*) ;; *) echo "$f" ;; esac; done
  ldd $HOST_BINS 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; s/^[[:space:]][[:space:]]*\(\/[^ :]*\) .*/\1/p' | sort -u)
cold() { sync; echo 3 > /proc/sys/vm/drop_caches; cat $HOST_FILES > /dev/null 2>&1 || true; }
[ -f "$work/hello/Hello.class" ] || javac -d "$work/hello" "$here/Hello.java"
if [ ! -f "$work/img/$wl-ord.cairn" ]; then
  "$C" mkfs -q ${MKFS_OPTS:-} "$SRC" "$work/img/$wl.cairn"
  for i in 0 1; do
    cold
    "$C" mount -o trace="$work/$wl.trace.$i" "$work/img/$wl.cairn" "$M"
    workload > /dev/null
    fusermount3 -u "$M"; sleep 0.5
  done
  cat "$work/$wl.trace.0" "$work/$wl.trace.1" > "$work/$wl.trace"
  "$C" mkfs -q ${MKFS_OPTS:-} --order "$work/$wl.trace" "$SRC" "$work/img/$wl-ord.cairn"
fi
if [ -n "$url" ]; then
  # nginx on a free loopback port; the delay is cairn's, above its http device.
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  mkdir -p "$work/nginx/tmp"
  printf '%s\n' "daemon on; user root; worker_processes 2; pid $work/nginx/nginx.pid;" \
    "error_log $work/nginx/error.log; events { worker_connections 512; }" \
    "http { access_log off; client_body_temp_path $work/nginx/tmp; keepalive_requests 100000;" \
    "  server { listen 127.0.0.1:$port; root $work/img; } }" > "$work/nginx/nginx.conf"
  nginx -c "$work/nginx/nginx.conf" -p "$work/nginx"
  sleep 0.3
  DEV=http://127.0.0.1:$port
  REMOTE_OPTS="delay=$delay,connections=$channels"
  [ "$bw" = 0 ] || REMOTE_OPTS="$REMOTE_OPTS,delay_rate=$((bw * 1000000))"
else
  "$(dirname "$C")/bench/delayfs" "$work/img" "$DEV" -o "delay=$delay,channels=$channels,bw=$bw"
  i=0; while [ ! -e "$DEV/.delayfs" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
fi
key() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }
# one NAME IMAGE OPTS: a cold run; prints "NAME ms requests MiB"
one() {
  s=$work/$1.stats
  rm -f "$s"
  cold
  "$C" mount -o "stats=$s,$3${url:+,$REMOTE_OPTS}" "$DEV/$2" "$M"
  t0=$(date +%s%N)
  workload > /dev/null
  t1=$(date +%s%N)
  fusermount3 -u "$M"
  i=0; while [ ! -s "$s" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
  echo "$1 $(( (t1 - t0) / 1000000 )) $(key device_requests "$s") $(( $(key device_bytes "$s") >> 20 ))"
  cp "$s" "$s.$n" # each run's full stats (cache misses, readahead) for tracing a slow one
}
echo "# $(date -u +%H:%MZ) $wl delay=$delay channels=$channels bw=$bw runs=$runs${url:+ over http}; $(uptime | sed 's/.*load/load/')"
out=$work/runs.txt
: > "$out"
n=0
while [ $n -lt "$runs" ]; do
  one ordered "$wl-ord.cairn" prefetch | tee -a "$out"
  one profile "$wl.cairn" "prefetch=$work/$wl.trace${PROFILE_OPTS:+,$PROFILE_OPTS}" | tee -a "$out"
  n=$((n + 1))
done
med() { awk -v k="$1" -v f="$2" '$1 == k { print $f }' "$out" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
o=$(med ordered 2); p=$(med profile 2)
echo "median ordered: $o ms, $(med ordered 3) requests, $(med ordered 4) MiB"
echo "median profile: $p ms, $(med profile 3) requests, $(med profile 4) MiB"
awk -v o="$o" -v p="$p" 'BEGIN { printf "profile / ordered: %.2fx\n", p / o }'
