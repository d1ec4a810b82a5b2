#!/bin/sh
# Lookups while a large image file is copied up on an overlay mount (issue 16):
# `bench/copyup-lookups.sh [CAIRN] [SIZE_MB]`. One process appends a byte to a
# SIZE_MB (default 1024) image file, which copies it up; another stats fresh
# names in another directory (each a LOOKUP the daemon answers) until the copy
# is done, and prints how long the copy took and the lookup latencies meanwhile.
# With the copy under the namespace lock, lookups waited for all of it.
set -eu
CAIRN=${1:-build/cairn}
MB=${2:-1024}
[ "$(id -u)" -eq 0 ] || { echo "needs root (FUSE mount)" >&2; exit 1; }
W=$(mktemp -d /dev/shm/cairn-copyup.XXXXXX)
trap 'fusermount3 -u "$W/m" 2>/dev/null || true; rm -rf "$W"' EXIT
mkdir -p "$W/src/big" "$W/src/other" "$W/m"
head -c $((MB * 1048576)) /dev/urandom > "$W/src/big/f"
"$CAIRN" mkfs -q "$W/src" "$W/img.cairn"
rm -rf "$W/src"
"$CAIRN" mount "$W/img.cairn" -o overlay "$W/m"
python3 - "$W/m" <<'PY'
import os, subprocess, sys, time
m = sys.argv[1]
t0 = time.perf_counter()
cp = subprocess.Popen(["sh", "-c", "echo x >> '%s/big/f'" % m])
lat = []
i = 0
while cp.poll() is None:
    s = time.perf_counter()
    try:
        os.stat("%s/other/none%d" % (m, i))
    except FileNotFoundError:
        pass
    lat.append(time.perf_counter() - s)
    i += 1
copy = time.perf_counter() - t0
lat.sort()
ms = lambda x: "%.3f" % (x * 1000)
print("copy-up of the file: %.2f s; lookups meanwhile: %d, median %s ms, max %s ms"
      % (copy, len(lat), ms(lat[len(lat) // 2]) if lat else "-", ms(lat[-1]) if lat else "-"))
PY
