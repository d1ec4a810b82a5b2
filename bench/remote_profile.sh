#!/bin/sh
# The profile a remote mount learns in its disk cache by default, side by side
# with noprofile, in one run: nginx on 127.0.0.1 serves the image (limit_rate
# 100 MB/s per connection, as bench/remote.py), cairn's -o delay= adds DELAY per
# HTTP request (default 20ms). Each round, cold (drop_caches, fresh mount):
#   empty noprofile   a fresh cache_dir, -o noprofile (as before the default)
#   empty learn       a fresh cache_dir, no option: traces into DIR/KEY.profile
#   warm noprofile    that cache_dir again, -o noprofile
#   warm learn        that cache_dir again, no option: prefetches + pushes the profile
#   empty shipped     a fresh cache_dir, the profile shipped beside the image on
#                     the server (URL.profile: the joined traces profile_gap.sh took,
#                     which mkfs --order used): what a first cold start can reach
#                     without a rebuild
# Times are mount + workload (ms), with HTTP requests and MiB fetched, and the
# medians over RUNS rounds.
#   bench/remote_profile.sh [-p java|python] [-d DELAY] [-n RUNS] [-b BUILD] [-w WORK]
# Uses the images bench/profile_gap.sh builds in WORK (run it once first).
# Needs root and nginx. Run with chrt -f 50 on a busy machine.
set -eu
delay=20ms; runs=3; build=build; work=/dev/shm/cairn-profile-gap; wl=java
while getopts p:d:n:b:w: o; do
  case $o in
    p) wl=$OPTARG ;; d) delay=$OPTARG ;; n) runs=$OPTARG ;; b) build=$OPTARG ;;
    w) work=$OPTARG ;; *) exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
C=$(cd "$build" && pwd)/cairn
[ -f "$work/img/$wl.cairn" ] || { echo "remote_profile: run bench/profile_gap.sh -p $wl first" >&2; exit 1; }
NET=$(mktemp -d /tmp/cairn-rprof.XXXXXX)
NET_INC=$here/../tests/net/servers.inc
. "$NET_INC"
case $wl in
  java) M=$work/m ;;
  python) M=$work/pyhome/lib/python3.11 ;;
  *) echo "remote_profile: -p java or python" >&2; exit 2 ;;
esac
trap 'set +e; fusermount3 -u "$M" 2>/dev/null; servers_stop; rm -rf "$NET" "$work/rdc" "$work/ship"' EXIT
PY_IMPORTS="json,re,collections,typing,dataclasses,argparse,subprocess,threading,logging,email.parser,email.message,http.client,urllib.request,urllib.parse,xml.etree.ElementTree,decimal,fractions,datetime,pathlib,tempfile,shutil,tarfile,zipfile,csv,sqlite3,unittest,asyncio,ssl,hashlib,base64,pickle,textwrap,inspect,ast,uuid,random,statistics,socket,selectors,gettext,locale,difflib,pprint,configparser,string,struct,heapq,bisect,enum,functools,contextlib,copy,glob,fnmatch"
workload() {
  if [ "$wl" = java ]; then
    "$M/bin/java" -cp "$work/hello" Hello
  else
    env -u PYTHONPATH PYTHONHOME="$work/pyhome" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3.11 -S \
      -c "import sys, os; import $PY_IMPORTS; assert os.__file__.startswith('$M'); print('ok')"
  fi
}
nginx_start web "$work/img" "limit_rate 100m;" >/dev/null
URL=http://127.0.0.1:$web_PORT/$wl.cairn
mkdir -p "$work/ship"
ln -sf "$work/img/$wl.cairn" "$work/ship/$wl.cairn"
cp "$work/$wl.trace" "$work/ship/$wl.cairn.profile"
nginx_start ship "$work/ship" "limit_rate 100m;" >/dev/null
SHIP_URL=http://127.0.0.1:$ship_PORT/$wl.cairn
DC=$work/rdc
key() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }
one() { # NAME OPTS [URL]
  s=$work/rp.stats
  rm -f "$s"
  sync; echo 3 > /proc/sys/vm/drop_caches
  t0=$(date +%s%N)
  "$C" mount -o "delay=$delay,cache_dir=$DC,stats=$s$2" "${3:-$URL}" "$M"
  workload > /dev/null
  t1=$(date +%s%N)
  fusermount3 -u "$M"
  i=0; while [ ! -s "$s" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
  echo "$1 $(( (t1 - t0) / 1000000 )) $(key http_requests "$s") $(( $(key http_bytes "$s") >> 20 )) $(key push_bytes "$s")"
}
echo "# $(date -u +%H:%MZ) $wl delay=$delay runs=$runs; $(uptime | sed 's/.*load/load/')"
echo "# variant ms http_requests MiB push_bytes"
out=$work/rp-runs.txt
: > "$out"
n=0
while [ $n -lt "$runs" ]; do
  rm -rf "$DC"; one empty-noprofile ",noprofile" | tee -a "$out"
  rm -rf "$DC"; one empty-learn "" | tee -a "$out"
  one warm-noprofile ",noprofile" | tee -a "$out"
  one warm-learn "" | tee -a "$out"
  rm -rf "$DC"; one empty-shipped "" "$SHIP_URL" | tee -a "$out"
  n=$((n + 1))
done
for v in empty-noprofile empty-learn warm-noprofile warm-learn empty-shipped; do
  awk -v k="$v" '$1 == k { print $2, $3, $4 }' "$out" | sort -n |
    awk -v k="$v" '{ t[NR] = $1; r[NR] = $2; b[NR] = $3 } END { m = int((NR + 1) / 2);
      printf "median %-16s %5d ms  (%d requests, %d MiB: those of the median run)\n", k, t[m], r[m], b[m] }'
done
