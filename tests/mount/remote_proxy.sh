#!/bin/sh
# The fleet pattern: nginx as the origin, squid as a caching proxy in front,
# several mounts (no disk cache) through the proxy (-o proxy=, then the
# http_proxy environment). Every mount reads the whole tree right, and the
# origin sends each byte of the image once (nginx's access log).
. "$(dirname "$0")/common.inc"
net_servers nginx squid python3
mkdir -p "$WORK/src/d"

for i in 1 2 3 4; do head -c 3000000 /dev/urandom > "$WORK/src/d/f$i"; done
yes "proxy line" | head -c 500000 > "$WORK/src/text"
"$CAIRN" mkfs -q "$WORK/src" "$NET/www/img.cairn" || fail "mkfs"
size=$(stat -c %s "$NET/www/img.cairn")
nginx_start web "$NET/www" || fail "nginx"
squid_start proxy || skip "squid did not start here: $(tail -n 3 "$NET/proxy/cache.log" 2>/dev/null)"
URL=http://127.0.0.1:$web_PORT/img.cairn
PROXY=http://127.0.0.1:$proxy_PORT

for n in 1 2 3; do
  M=$WORK/m$n
  if [ $n -eq 3 ]; then
    # no -o proxy=: curl's http_proxy from the environment (no_proxy must not cover it)
    http_proxy=$PROXY no_proxy= mnt "$M" "$URL" -o stats="$WORK/s$n" || fail "mount $n"
  else
    mnt "$M" "$URL" -o proxy="$PROXY",stats="$WORK/s$n" || fail "mount $n"
  fi
  diff -r "$WORK/src" "$M" || fail "mount $n through the proxy differs"
  umnt "$M"
done
sent=$(nginx_bytes web /img.cairn)
[ "$sent" -le "$size" ] ||
  fail "the origin sent $sent bytes for a $size-byte image through the proxy (3 mounts)"
[ "$sent" -gt 0 ] || fail "the origin sent nothing: the proxy was not in the path"
grep -q "img.cairn" "$NET/proxy/access.log" || fail "squid saw no request"
echo "remote proxy: origin sent $sent of $size bytes for 3 mounts"
