#!/bin/sh
# Remote images through the CLI, against real servers on 127.0.0.1:
# - nginx: info reads only the first range; ls, cat, stat, extract, fsck and
#   bench read take the URL like a path and give the bytes of the source;
#   404, a non-image and a bad URL are refused with the reason;
# - nginx over TLS with a self-signed certificate: refused by default, read with
#   --cacert or --insecure, over HTTP/2;
# - mirrors: a dead primary fails over; a mirror with another image is refused;
# - a fault server: resets, 503s and short bodies are retried and the bytes are
#   right; a hung server gives EIO (bounded by --timeout); a server that ignores
#   ranges is refused; a size or ETag change mid-read gives EIO.
set -u
command -v nginx >/dev/null 2>&1 || { echo "nginx not installed (Debian nginx-light)"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "python3 not installed"; exit 77; }
NET=$(mktemp -d /tmp/cairn-remote.XXXXXX)
chmod 755 "$NET"
NET_INC=$(dirname "$0")/../net/servers.inc
. "$NET_INC"
trap 'servers_stop; rm -rf "$NET"' EXIT
trap 'exit 130' INT TERM
fail() { echo "FAIL: $*"; exit 1; }
# A command that must not hang: 60 s is far beyond any timeout set here.
bounded() { timeout -k 5 60 "$@"; }

src=$NET/src
mkdir -p "$src/dir" "$NET/www" "$NET/other"
head -c 3000000 /dev/urandom > "$src/big.bin"
yes "cairn remote line" | head -c 700000 > "$src/dir/text.txt"
echo small > "$src/dir/small"
ln -s ../big.bin "$src/dir/link"
"$CAIRN" mkfs -q "$src" "$NET/www/img.cairn" || fail "mkfs"
echo other > "$NET/other.txt"
"$CAIRN" mkfs -q "$NET/other.txt" "$NET/other/img.cairn" 2>/dev/null ||
  { mkdir -p "$NET/o2" && cp "$NET/other.txt" "$NET/o2/" && "$CAIRN" mkfs -q "$NET/o2" "$NET/other/img.cairn"; } ||
  fail "mkfs of the other image"
head -c 10000 /dev/urandom > "$NET/www/junk.bin"

nginx_start web "$NET/www" 'location = /moved.cairn { return 302 /img.cairn; }' ||
  fail "nginx did not start"
URL=http://127.0.0.1:$web_PORT/img.cairn

# info: one request, for the head.
: > "$NET/web/access.log.mark"
lines0=$(wc -l < "$NET/web/access.log")
bounded "$CAIRN" info "$URL" > "$NET/info.out" || fail "info $URL"
grep -q "^uuid:" "$NET/info.out" || fail "info printed no uuid"
lines1=$(wc -l < "$NET/web/access.log")
[ $((lines1 - lines0)) -eq 1 ] || fail "info sent $((lines1 - lines0)) requests, not 1"

bounded "$CAIRN" ls -lR "$URL" / > "$NET/ls.out" || fail "ls"
grep -q text.txt "$NET/ls.out" || fail "ls lists no text.txt"
bounded "$CAIRN" cat "$URL" /big.bin | cmp - "$src/big.bin" || fail "cat big.bin differs"
bounded "$CAIRN" stat "$URL" /dir/text.txt | grep -q 700000 || fail "stat size"
bounded "$CAIRN" extract "$URL" "$NET/out" || fail "extract"
diff -r "$src" "$NET/out" || fail "extracted tree differs from the source"
bounded "$CAIRN" fsck --data "$URL" >/dev/null || fail "fsck --data over http"
bounded "$CAIRN" bench read "$URL" >/dev/null 2>&1 || fail "bench read over http"
bounded "$CAIRN" cat --connections 8 --stats "$URL" /big.bin 2>"$NET/stats" |
  cmp - "$src/big.bin" || fail "cat with 8 connections"
grep -q "^http: .* 0 failed reads; served by the image's URL, origin 0, HTTP/1.1$" "$NET/stats" ||
  fail "no http stats line: $(cat "$NET/stats")"
# Kept alive: far fewer connections than requests.
lines0=$(wc -l < "$NET/web/access.log")
bounded "$CAIRN" cat --connections 2 "$URL" /big.bin /dir/text.txt > /dev/null || fail "cat"
tail -n +$((lines0 + 1)) "$NET/web/access.log" > "$NET/run.log"
reqs=$(wc -l < "$NET/run.log")
conns=$(awk '{ print $5 }' "$NET/run.log" | sort -u | wc -l)
[ "$reqs" -ge 3 ] && [ "$conns" -le 2 ] ||
  fail "$reqs requests on $conns connections (keep-alive, at most 2 connections)"

# A redirect is followed, as curl -L does.
bounded "$CAIRN" cat "http://127.0.0.1:$web_PORT/moved.cairn" /dir/text.txt |
  cmp - "$src/dir/text.txt" || fail "cat through a 302"
# An image inside a bigger file, at --offset.
{ head -c 8192 /dev/zero; cat "$NET/www/img.cairn"; } > "$NET/www/padded.bin"
bounded "$CAIRN" cat --offset 8192 "http://127.0.0.1:$web_PORT/padded.bin" /big.bin |
  cmp - "$src/big.bin" || fail "cat --offset over http"

# Refusals name the reason.
bounded "$CAIRN" info "http://127.0.0.1:$web_PORT/missing.cairn" 2>"$NET/err" && fail "404 opened"
grep -q "HTTP 404" "$NET/err" || fail "404 not named: $(cat "$NET/err")"
# ... once: the URL is not repeated after the reason.
[ "$(cat "$NET/err")" = "cairn info: http://127.0.0.1:$web_PORT/missing.cairn: No such file or directory: HTTP 404" ] ||
  fail "404 message: $(cat "$NET/err")"
bounded "$CAIRN" info "http://127.0.0.1:$web_PORT/junk.bin" 2>"$NET/err" && fail "junk opened"
bounded "$CAIRN" info --mirror /not/a/url "$URL" 2>"$NET/err" && fail "bad mirror accepted"
grep -q "not an http" "$NET/err" || fail "bad mirror not named: $(cat "$NET/err")"
bounded "$CAIRN" info --timeout 2s "http://127.0.0.1:$(free_port)/img.cairn" 2>"$NET/err" &&
  fail "a closed port opened"

# A server that serves a modified image (untrusted storage): pinned to the root
# digest mkfs printed, a flipped byte of file data is EIO for that file only
# (the others still read), and a flipped superblock byte is refused at open.
root=$("$CAIRN" digest "$NET/www/img.cairn" | awk '{ print $NF }')
case "$root" in sha256:*) ;; *) fail "no root digest: $root" ;; esac
off=$(python3 - "$NET/www/img.cairn" "$src/big.bin" <<'PY'
import sys
# 2 MB into big.bin: a granule of its own, away from the metadata's.
img = open(sys.argv[1], "rb").read(); data = open(sys.argv[2], "rb").read()
print(img.index(data[2000000:2004096]) + 1000)
PY
) || fail "big.bin's bytes not found in the image"
cp "$NET/www/img.cairn" "$NET/www/bad-data.cairn"
# Every bit of the byte inverted: writing a fixed byte left one image in 256
# unchanged (big.bin is random), and cat then rightly served it.
python3 -c 'import sys; f = open(sys.argv[1], "r+b"); o = int(sys.argv[2]); f.seek(o); b = f.read(1)
f.seek(o); f.write(bytes([b[0] ^ 255]))' "$NET/www/bad-data.cairn" "$off" || fail "flip at $off"
BURL=http://127.0.0.1:$web_PORT/bad-data.cairn
bounded "$CAIRN" cat --digest "$root" "$BURL" /big.bin > "$NET/bad.out" 2>"$NET/bad.err" &&
  fail "a tampered data byte was served with success"
grep -q "/big.bin: from byte [0-9]*: data does not match the image digest" "$NET/bad.err" ||
  fail "tampered data: not a digest error: $(cat "$NET/bad.err")"
cmp -s "$NET/bad.out" "$src/big.bin" && fail "tampered data: the whole file came out"
bounded "$CAIRN" cat --digest "$root" "$BURL" /dir/text.txt | cmp - "$src/dir/text.txt" ||
  fail "tampered image: an untouched file no longer reads"
cp "$NET/www/img.cairn" "$NET/www/bad-super.cairn"
printf '\001' | dd of="$NET/www/bad-super.cairn" bs=1 seek=216 conv=notrunc 2>/dev/null
bounded "$CAIRN" info --digest "$root" "http://127.0.0.1:$web_PORT/bad-super.cairn" \
  >/dev/null 2>"$NET/bad.err" && fail "a tampered superblock was accepted"
grep -qi "digest" "$NET/bad.err" || fail "tampered superblock: $(cat "$NET/bad.err")"
echo "ok: a modified image from the server: EIO for the bad granule, refused at open"

# TLS with a self-signed certificate.
if command -v openssl >/dev/null 2>&1; then
  nginx_tls_start tls "$NET/www" || fail "nginx over TLS did not start"
  TURL=https://127.0.0.1:$tls_PORT/img.cairn
  bounded "$CAIRN" info "$TURL" 2>"$NET/err" && fail "an untrusted certificate was accepted"
  grep -qi "certificate" "$NET/err" || fail "certificate refusal not named: $(cat "$NET/err")"
  grep -q "the cacert option names a CA file to trust, insecure skips the check" "$NET/err" ||
    fail "the refusal does not say how to trust the certificate: $(cat "$NET/err")"
  bounded "$CAIRN" cat --cacert "$NET/tls/cert.pem" --stats "$TURL" /big.bin 2>"$NET/stats" |
    cmp - "$src/big.bin" || fail "cat over TLS with --cacert"
  grep -q "HTTP/2$" "$NET/stats" || fail "TLS did not use HTTP/2: $(cat "$NET/stats")"
  bounded "$CAIRN" cat --insecure --http1 --stats "$TURL" /dir/text.txt 2>"$NET/stats" |
    cmp - "$src/dir/text.txt" || fail "cat over TLS with --insecure"
  grep -q "HTTP/1.1$" "$NET/stats" || fail "--http1 used HTTP/2"
fi

# Mirrors: a dead primary fails over at open; another image is never mixed in.
dead=http://127.0.0.1:$(free_port)/img.cairn
bounded "$CAIRN" cat --stats --mirror "$URL" "$dead" /big.bin 2>"$NET/stats" |
  cmp - "$src/big.bin" || fail "a mirror did not take over from a dead primary"
grep -q "[1-9][0-9]* failovers" "$NET/stats" || fail "no failover counted: $(cat "$NET/stats")"
grep -q "served by mirror 1," "$NET/stats" || fail "the mirror serving not named: $(cat "$NET/stats")"
nginx_start other "$NET/other" || fail "second nginx"
bounded "$CAIRN" cat --mirror "http://127.0.0.1:$other_PORT/img.cairn" "$URL" /big.bin >/dev/null ||
  fail "a healthy primary with a mismatched mirror"

# The fault server: transient failures are retried, and the bytes are right.
cp "$NET/www/img.cairn" "$NET/fimg"
for mode in reset=2 error=2 short=2 "reset=3 error=5 short=7"; do
  # shellcheck disable=SC2086
  fault_start flt "$NET/fimg" $mode || fail "fault server ($mode)"
  FURL=http://127.0.0.1:$flt_PORT/img.cairn
  bounded "$CAIRN" cat --stats --retries 8 "$FURL" /big.bin 2>"$NET/stats" |
    cmp - "$src/big.bin" || fail "cat through '$mode' differs: $(cat "$NET/stats")"
  # (curl itself re-sends once on a kept-alive connection that died unanswered)
  [ "$mode" = reset=2 ] || grep -q " [1-9][0-9]* retries" "$NET/stats" || fail "'$mode': no retries counted: $(cat "$NET/stats"; cat "$NET/flt/log")"
  fault_stop flt
done

# Give-ups are EIO, within the deadline.
fault_start flt "$NET/fimg" error=1 || fail "fault server"
FURL=http://127.0.0.1:$flt_PORT/img.cairn
bounded "$CAIRN" info --timeout 2s "$FURL" 2>"$NET/err" && fail "a server that only says 503 opened"
grep -q "HTTP 503" "$NET/err" || fail "503 not named: $(cat "$NET/err")"
fault_stop flt
fault_start flt "$NET/fimg" norange || fail "fault server"
bounded "$CAIRN" info "http://127.0.0.1:$flt_PORT/img.cairn" 2>"$NET/err" && fail "norange opened"
grep -q "ignores range requests" "$NET/err" || fail "norange not named: $(cat "$NET/err")"
fault_stop flt

# A server that starts hanging mid-read: EIO, never a hang.
fault_start flt "$NET/fimg" slow=500000 || fail "fault server"
FURL=http://127.0.0.1:$flt_PORT/img.cairn
( sleep 0.5; echo hang > "$NET/flt/pid.mode" ) & bg=$!
bounded "$CAIRN" cat --timeout 2s --stats "$FURL" /big.bin >/dev/null 2>"$NET/stats" &&
  fail "a hung server gave a whole file"
wait $bg
grep -q "Input/output error" "$NET/stats" || fail "hung server: not EIO: $(cat "$NET/stats")"
# ... naming the range and the cause once: curl's timeout, the deadline.
grep -q "^cairn cat: $FURL: /big.bin: Input/output error: bytes [0-9]*-[0-9]*: .*(timed out after 2000 ms, [0-9]* retr[a-z]*)$" \
  "$NET/stats" || fail "hung server: the cause not named: $(cat "$NET/stats")"
rm -f "$NET/flt/pid.mode"
fault_stop flt

# The server gone mid-read (stopped; then one that says 503): exit 1, and the
# message names the URL, the byte range and why, once. The application
# through a mount gets a bare EIO; the CLI says what curl would.
fault_start flt "$NET/fimg" slow=500000 || fail "fault server"
FURL=http://127.0.0.1:$flt_PORT/img.cairn
( sleep 0.7; fault_stop flt ) & bg=$!
bounded "$CAIRN" cat --timeout 3s --retries 2 "$FURL" /big.bin >/dev/null 2>"$NET/err"; rc=$?
wait $bg
[ $rc -eq 1 ] || fail "server stopped: exit $rc, not 1: $(cat "$NET/err")"
[ "$(grep -c . "$NET/err")" -eq 1 ] || fail "server stopped: not one line: $(cat "$NET/err")"
grep -q "^cairn cat: $FURL: /big.bin: Input/output error: bytes [0-9]*-[0-9]*: .*onnect.* (after 2 retries)$" \
  "$NET/err" || fail "server stopped: the cause not named: $(cat "$NET/err")"
fault_start flt "$NET/fimg" slow=500000 || fail "fault server"
FURL=http://127.0.0.1:$flt_PORT/img.cairn
( sleep 0.7; echo error=1 > "$NET/flt/pid.mode" ) & bg=$!
bounded "$CAIRN" extract --timeout 3s --retries 1 "$FURL" "$NET/x503" 2>"$NET/err"; rc=$?
wait $bg
[ $rc -eq 1 ] || fail "a 503 mid-extract: exit $rc, not 1: $(cat "$NET/err")"
grep -q ": Input/output error: $FURL: bytes [0-9]*-[0-9]*: HTTP 503 (after 1 retry)$" "$NET/err" ||
  fail "a 503 mid-extract: the cause not named: $(cat "$NET/err")"
rm -rf "$NET/x503" "$NET/flt/pid.mode"
fault_stop flt
echo "ok: a server gone mid-read: the URL, the range and the cause named"
fault_start flt "$NET/fimg" slow=80000 || fail "slow fault server"
FURL=http://127.0.0.1:$flt_PORT/img.cairn
# At 80 kB/s the head (256 KiB: block 0 and the digest table) takes 3.3 s and the
# 3 MB file 37 s: the 5 s deadline lets the open through and cuts the read short.
bounded "$CAIRN" cat --timeout 5s --retries 1 --stats "$FURL" /big.bin >/dev/null 2>"$NET/stats" &&
  fail "a read slower than the timeout succeeded"
grep -q "Input/output error" "$NET/stats" || fail "slow server: not EIO: $(cat "$NET/stats")"
grep -q " [1-9][0-9]* timeouts" "$NET/stats" || fail "no timeout counted: $(cat "$NET/stats")"
fault_stop flt

# The image changes on the server after the open: EIO, never mixed bytes.
for change in "etag=v2" "size=2000000"; do
  fault_start flt "$NET/fimg" slow=500000 || fail "fault server"
  FURL=http://127.0.0.1:$flt_PORT/img.cairn
  ( sleep 0.5; echo "$change slow=500000" > "$NET/flt/pid.mode" ) & bg=$!
  bounded "$CAIRN" cat --stats "$FURL" /big.bin >"$NET/changed.out" 2>"$NET/stats" &&
    fail "'$change' during a read went unnoticed"
  wait $bg
  grep -q " [1-9][0-9]* changed" "$NET/stats" || fail "'$change': not counted as a change"
  # Whatever came out before the error is a prefix of the true file.
  n=$(wc -c < "$NET/changed.out")
  head -c "$n" "$src/big.bin" | cmp - "$NET/changed.out" || fail "'$change': wrong bytes returned"
  rm -f "$NET/flt/pid.mode"
  fault_stop flt
done
# With the server gone, the disk cache still serves what it holds (at --offset
# too, up to the image's last chunk).
fault_start flt "$NET/www/padded.bin" || fail "fault server"
PURL=http://127.0.0.1:$flt_PORT/padded.bin
all="/big.bin /dir/text.txt /dir/small"
cat "$src/big.bin" "$src/dir/text.txt" "$src/dir/small" > "$NET/all.want"
# shellcheck disable=SC2086
bounded "$CAIRN" cat --offset 8192 --cache-dir "$NET/dc" "$PURL" $all | cmp - "$NET/all.want" ||
  fail "cat --offset with a disk cache"
fault_stop flt
# shellcheck disable=SC2086
bounded "$CAIRN" cat --offset 8192 --cache-dir "$NET/dc" --timeout 2s --stats "$PURL" $all \
  2>"$NET/stats" | cmp - "$NET/all.want" || fail "offline cat from the disk cache: $(cat "$NET/stats")"
grep -q "diskcache: .* 0 misses" "$NET/stats" || fail "offline: $(cat "$NET/stats")"
echo "remote: all passed"
