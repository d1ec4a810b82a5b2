#!/bin/sh
# s3://BUCKET/KEY against s3rver (an S3-protocol server from npm, run with node)
# on 127.0.0.1: the endpoint and keys from the AWS_* environment, then from a
# shared credentials file and a named profile; an unknown key id is refused.
# s3rver checks the key id but not the SigV4 signature itself.
# s3rver is installed into the build folder by this test when missing (npm,
# as root); without node/npm or when the install fails, the test skips.
# A key with a space, '+', '%' and UTF-8 is sent escaped as SigV4's canonical
# URI has it (issue 13): the raw key is a bad request or another object.
set -u
NET=$(mktemp -d /tmp/cairn-s3.XXXXXX)
NET_INC=$(dirname "$0")/../net/servers.inc
. "$NET_INC"
trap 'servers_stop; rm -rf "$NET"' EXIT
trap 'exit 130' INT TERM
fail() { echo "FAIL: $*"; exit 1; }
bounded() { timeout -k 5 60 "$@"; }
s3rver_find "${CAIRN_BUILD:-$(dirname "$CAIRN")}/s3rver" || exit 77

mkdir -p "$NET/src/d"
head -c 2000000 /dev/urandom > "$NET/src/d/blob"
echo hello > "$NET/src/hello"
"$CAIRN" mkfs -q "$NET/src" "$NET/img.cairn" || fail "mkfs"
s3rver_start s3 imgs || fail "s3rver did not start"
EP=http://127.0.0.1:$s3_PORT
# Upload with curl's own SigV4, as any S3 client would.
s3_put s3 imgs/app/img.cairn "$NET/img.cairn" || fail "upload"
# The same image under a key that needs escaping: "odd dir/a+b%c é€.cairn".
s3_put s3 "imgs/odd%20dir/a%2Bb%25c%20%C3%A9%E2%82%AC.cairn" "$NET/img.cairn" || fail "upload (odd key)"

bounded env -u AWS_PROFILE AWS_ENDPOINT_URL="$EP" AWS_ACCESS_KEY_ID=S3RVER \
  AWS_SECRET_ACCESS_KEY=S3RVER HOME="$NET" "$CAIRN" cat "s3://imgs/odd dir/a+b%c é€.cairn" /d/blob |
  cmp - "$NET/src/d/blob" || fail "s3:// with a key that needs escaping"

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
