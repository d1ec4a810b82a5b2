#!/bin/sh
# s3://BUCKET/KEY against s3rver (an S3-protocol server from npm, run with node)
# on 127.0.0.1: the endpoint and keys from the AWS_* environment, then from a
# shared credentials file and a named profile; an unknown key id is refused.
# s3rver checks the key id but not the SigV4 signature itself.
# s3rver is installed into the build folder by this test when missing (npm,
# as root); without node/npm or when the install fails, the test skips.
set -u
command -v node >/dev/null 2>&1 || { echo "node not installed (Debian nodejs), s3rver needs it"; exit 77; }
BUILD=${CAIRN_BUILD:-$(dirname "$CAIRN")}
S3DIR=$BUILD/s3rver
S3RVER=$S3DIR/node_modules/s3rver/bin/s3rver.js
if [ ! -f "$S3RVER" ]; then
  command -v npm >/dev/null 2>&1 || { echo "npm not installed: cannot install s3rver"; exit 77; }
  [ "$(id -u)" -eq 0 ] || { echo "s3rver missing; run as root to let this test install it"; exit 77; }
  mkdir -p "$S3DIR"
  (cd "$S3DIR" && timeout 300 npm install --no-audit --no-fund --loglevel=error s3rver@3) \
    >"$S3DIR/npm.log" 2>&1 || { echo "npm install s3rver failed (see $S3DIR/npm.log)"; exit 77; }
fi
NET=$(mktemp -d /tmp/cairn-s3.XXXXXX)
NET_INC=$(dirname "$0")/../net/servers.inc
. "$NET_INC"
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; servers_stop; rm -rf "$NET"' EXIT
trap 'exit 130' INT TERM
fail() { echo "FAIL: $*"; exit 1; }
bounded() { timeout -k 5 60 "$@"; }

mkdir -p "$NET/src/d" "$NET/data"
head -c 2000000 /dev/urandom > "$NET/src/d/blob"
echo hello > "$NET/src/hello"
"$CAIRN" mkfs -q "$NET/src" "$NET/img.cairn" || fail "mkfs"
port=$(free_port)
node "$S3RVER" -d "$NET/data" -a 127.0.0.1 -p "$port" --configure-bucket imgs --silent \
  >"$NET/s3rver.log" 2>&1 &
pid=$!
wait_port "$port" || fail "s3rver did not start: $(cat "$NET/s3rver.log")"
EP=http://127.0.0.1:$port
# Upload with curl's own SigV4, as any S3 client would.
code=$(curl -s -o "$NET/put.out" -w '%{http_code}' -X PUT --aws-sigv4 aws:amz:us-east-1:s3 \
  -u S3RVER:S3RVER -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
  --data-binary @"$NET/img.cairn" "$EP/imgs/app/img.cairn")
[ "$code" = 200 ] || fail "upload to s3rver: HTTP $code $(cat "$NET/put.out")"

bounded env -u AWS_PROFILE AWS_ENDPOINT_URL="$EP" AWS_ACCESS_KEY_ID=S3RVER \
  AWS_SECRET_ACCESS_KEY=S3RVER HOME="$NET" "$CAIRN" cat s3://imgs/app/img.cairn /d/blob | cmp - "$NET/src/d/blob" ||
  fail "s3:// with keys from the environment"

mkdir -p "$NET/.aws"
printf '[default]\naws_access_key_id = nobody\naws_secret_access_key = x\n\n[ci]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n' \
  > "$NET/.aws/credentials"
bounded env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_ENDPOINT_URL HOME="$NET" \
  "$CAIRN" extract --s3-endpoint "$EP" --s3-profile ci --s3-region eu-west-1 \
  s3://imgs/app/img.cairn "$NET/out" || fail "s3:// with a profile from ~/.aws/credentials"
diff -r "$NET/src" "$NET/out" || fail "extract from s3:// differs"

bounded env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_PROFILE HOME="$NET" \
  AWS_ENDPOINT_URL="$EP" "$CAIRN" info s3://imgs/app/img.cairn 2>"$NET/err" &&
  fail "an unknown key id (the default profile) was accepted"
grep -q "HTTP 403" "$NET/err" || fail "refusal not named: $(cat "$NET/err")"
"$CAIRN" info s3://imgs 2>"$NET/err" && fail "s3://BUCKET without a key accepted"
grep -q "not s3://BUCKET/KEY" "$NET/err" || fail "bad s3 URL not named: $(cat "$NET/err")"
echo "remote s3: all passed"
