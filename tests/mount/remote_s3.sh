#!/bin/sh
# s3://BUCKET/KEY through a real FUSE mount, from s3rver on 127.0.0.1, with a
# key that needs escaping (a space, '+', '%', UTF-8: sent as SigV4's canonical
# URI spells it, issue 13): the tree reads back byte for byte, from the server
# and then from the disk cache with the server stopped.
. "$(dirname "$0")/common.inc"
net_servers
s3rver_find "$BUILD/s3rver" || exit 77
bounded() { timeout -k 5 60 "$@"; }

mkdir -p "$WORK/src/sub dir"
head -c 3000000 /dev/urandom > "$WORK/src/sub dir/blob"
echo hello > "$WORK/src/hello"
ln -s "sub dir/blob" "$WORK/src/link"
"$CAIRN" mkfs -q "$WORK/src" "$WORK/img.cairn" || fail "mkfs"
s3rver_start s3 imgs || fail "s3rver did not start"
s3_put s3 "imgs/v1%2Bbeta/my%20app%20%C3%A9%25.cairn" "$WORK/img.cairn" || fail "upload"
KEY="s3://imgs/v1+beta/my app é%.cairn"
export AWS_ENDPOINT_URL=http://127.0.0.1:$s3_PORT AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
unset AWS_PROFILE AWS_ENDPOINT_URL_S3

M=$WORK/m
mnt "$M" "$KEY" -o cache_dir="$WORK/dc",timeout=5s || fail "mount $KEY"
bounded diff -r --no-dereference "$WORK/src" "$M" || fail "the tree from s3:// differs"
umnt "$M"
servers_stop
mnt "$M" "$KEY" -o cache_dir="$WORK/dc",timeout=2s,retries=1 || fail "mount with s3rver stopped"
bounded diff -r --no-dereference "$WORK/src" "$M" || fail "the tree from the disk cache differs"
umnt "$M"
echo "remote s3 mount: all passed"
