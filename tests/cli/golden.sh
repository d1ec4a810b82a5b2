#!/bin/sh
# Golden tests of the read-side commands: exact output of info/ls/cat/stat/fsck
# on a small fixed tree, and the exact errors (missing image, not an image,
# missing path, bad options) with their exit codes.
set -u
CAIRN=${CAIRN:-build/cairn}
work=$(mktemp -d /tmp/cairn-golden.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

if "$CAIRN" mkfs --help 2>&1 | grep -q "not built yet"; then
  echo "cairn mkfs is not built yet"; exit 77
fi
[ "$(id -u)" -eq 0 ] || { echo "needs root (mknod)"; exit 77; }

cd "$work" || exit 1
mkdir -p src/dir/sub src/empty
printf 'hello world\n' > src/hello.txt
printf 'nested\n' > src/dir/nested.txt
ln -s hello.txt src/link
ln -s dir src/dirlink
printf x > "src/odd
name"
: > src/exec
chmod 4755 src/exec
chmod 600 src/dir/nested.txt
setfattr -n user.color -v blue src/hello.txt
setfattr -n user.bin -v 0x00ff src/hello.txt
mkfifo src/dir/fifo
mknod src/dir/null c 1 3
ln src/hello.txt src/dir/hard
"$CAIRN" mkfs -q --all-root --mtime 1600000000 src img || fail "mkfs"
head -c 8192 /dev/zero | tr '\0' 'j' > junk
printf 'hello\n' > short

# Runs each command line of $1 (relative to $work), prints "$ cairn ..." and its
# output (stdout and stderr) and "[exit N]"; stat's inode numbers are mkfs's
# choice, so they are left out.
run() {
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    echo "\$ cairn $line"
    # shellcheck disable=SC2086
    eval "\"\$CAIRN\" $line" 2>&1 | grep -v '^  inode: '
    echo "[exit $(eval "\"\$CAIRN\" $line" >/dev/null 2>&1; echo $?)]"
  done
}

run > got <<'EOF'
ls img
ls -l img
ls -lR img
ls -R img /dir
ls -l img /link
cat img /hello.txt /dir/nested.txt /link
stat img /hello.txt
stat img /link
stat -L img /link
stat img /dir/null
fsck img
fsck --data -q img
ls /nonexistent/img
info junk
info short
cat img /nope
cat img /dir
cat img
ls --bogus img
info --cache-size abc img
stat img /dir/nope/x
stat img /hello.txt/x
extract img short
fsck
fsck junk
info img extra
EOF

cat > want <<'EOF'
$ cairn ls img
dir
dirlink
empty
exec
hello.txt
link
odd\nname
[exit 0]
$ cairn ls -l img
drwxr-xr-x   3     0     0         80 2020-09-13 12:26 dir
lrwxrwxrwx   1     0     0          3 2020-09-13 12:26 dirlink -> dir
drwxr-xr-x   2     0     0          0 2020-09-13 12:26 empty
-rwsr-xr-x   1     0     0          0 2020-09-13 12:26 exec
-rw-r--r--   2     0     0         12 2020-09-13 12:26 hello.txt
lrwxrwxrwx   1     0     0          9 2020-09-13 12:26 link -> hello.txt
-rw-r--r--   1     0     0          1 2020-09-13 12:26 odd\nname
[exit 0]
$ cairn ls -lR img
/:
drwxr-xr-x   3     0     0         80 2020-09-13 12:26 dir
lrwxrwxrwx   1     0     0          3 2020-09-13 12:26 dirlink -> dir
drwxr-xr-x   2     0     0          0 2020-09-13 12:26 empty
-rwsr-xr-x   1     0     0          0 2020-09-13 12:26 exec
-rw-r--r--   2     0     0         12 2020-09-13 12:26 hello.txt
lrwxrwxrwx   1     0     0          9 2020-09-13 12:26 link -> hello.txt
-rw-r--r--   1     0     0          1 2020-09-13 12:26 odd\nname

/dir:
prw-r--r--   1     0     0          0 2020-09-13 12:26 fifo
-rw-r--r--   2     0     0         12 2020-09-13 12:26 hard
-rw-------   1     0     0          7 2020-09-13 12:26 nested.txt
crw-r--r--   1     0     0    1,    3 2020-09-13 12:26 null
drwxr-xr-x   2     0     0          0 2020-09-13 12:26 sub

/dir/sub:

/empty:
[exit 0]
$ cairn ls -R img /dir
/dir:
fifo
hard
nested.txt
null
sub

/dir/sub:
[exit 0]
$ cairn ls -l img /link
lrwxrwxrwx   1     0     0          9 2020-09-13 12:26 /link -> hello.txt
[exit 0]
$ cairn cat img /hello.txt /dir/nested.txt /link
hello world
nested
hello world
[exit 0]
$ cairn stat img /hello.txt
  path: /hello.txt
  type: regular file
  mode: 0644 (-rw-r--r--)
  links: 2
  uid: 0
  gid: 0
  size: 12
  blocks: 8
  atime: 2020-09-13 12:26:40.000000000 UTC (1600000000.000000000)
  mtime: 2020-09-13 12:26:40.000000000 UTC (1600000000.000000000)
  ctime: 2020-09-13 12:26:40.000000000 UTC (1600000000.000000000)
  xattr: user.bin = 0x00ff
  xattr: user.color = "blue"
[exit 0]
$ cairn stat img /link
  path: /link -> hello.txt
  type: symbolic link
  mode: 0777 (lrwxrwxrwx)
  links: 1
  uid: 0
  gid: 0
  size: 9
  blocks: 0
  atime: 2020-09-13 12:26:40.000000000 UTC (1600000000.000000000)
  mtime: 2020-09-13 12:26:40.000000000 UTC (1600000000.000000000)
  ctime: 2020-09-13 12:26:40.000000000 UTC (1600000000.000000000)
[exit 0]
$ cairn stat -L img /link
  path: /link
  type: regular file
  mode: 0644 (-rw-r--r--)
  links: 2
  uid: 0
  gid: 0
  size: 12
  blocks: 8
  atime: 2020-09-13 12:26:40.000000000 UTC (1600000000.000000000)
  mtime: 2020-09-13 12:26:40.000000000 UTC (1600000000.000000000)
  ctime: 2020-09-13 12:26:40.000000000 UTC (1600000000.000000000)
  xattr: user.bin = 0x00ff
  xattr: user.color = "blue"
[exit 0]
$ cairn stat img /dir/null
  path: /dir/null
  type: character device
  mode: 0644 (crw-r--r--)
  links: 1
  uid: 0
  gid: 0
  size: 0
  blocks: 0
  device: 1, 3
  atime: 2020-09-13 12:26:40.000000000 UTC (1600000000.000000000)
  mtime: 2020-09-13 12:26:40.000000000 UTC (1600000000.000000000)
  ctime: 2020-09-13 12:26:40.000000000 UTC (1600000000.000000000)
[exit 0]
$ cairn fsck img
img: clean (structures, checksums, digests)
[exit 0]
$ cairn fsck --data -q img
[exit 0]
$ cairn ls /nonexistent/img
cairn ls: /nonexistent/img: No such file or directory
[exit 1]
$ cairn info junk
cairn info: junk: not a cairn image: expected the magic 43 41 49 52 4e 00 00 00 ("CAIRN") at byte 0, found 6a 6a 6a 6a 6a 6a 6a 6a
[exit 1]
$ cairn info short
cairn info: short: not a cairn image: expected the magic 43 41 49 52 4e 00 00 00 ("CAIRN") at byte 0, found 68 65 6c 6c 6f 0a
[exit 1]
$ cairn cat img /nope
cairn cat: img: /nope: No such file or directory
[exit 1]
$ cairn cat img /dir
cairn cat: img: /dir: Is a directory
[exit 1]
$ cairn cat img
cairn cat: needs IMAGE and PATH (see cairn cat --help)
[exit 2]
$ cairn ls --bogus img
cairn ls: unknown option '--bogus' (see cairn ls --help)
[exit 2]
$ cairn info --cache-size abc img
cairn info: --cache-size needs a size (e.g. 64M), got 'abc'
[exit 2]
$ cairn stat img /dir/nope/x
cairn stat: img: /dir/nope/x: No such file or directory
[exit 1]
$ cairn stat img /hello.txt/x
cairn stat: img: /hello.txt/x: Not a directory
[exit 1]
$ cairn extract img short
cairn extract: short: Not a directory
[exit 1]
$ cairn fsck
cairn fsck: needs IMAGE (see cairn fsck --help)
[exit 2]
$ cairn fsck junk
cairn fsck: junk: not a cairn image: expected the magic 43 41 49 52 4e 00 00 00 ("CAIRN") at byte 0, found 6a 6a 6a 6a 6a 6a 6a 6a
[exit 4]
$ cairn info img extra
cairn info: too many arguments (see cairn info --help)
[exit 2]
EOF
diff -u want got || fail "output differs from the golden text (- want, + got)"

# info: the fields that do not depend on mkfs's layout choices.
"$CAIRN" info --json img > info.json || fail "info --json"
python3 - info.json <<'EOF' || fail "info --json fields"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["version"] == "1.2", d  # compressed metadata, the default
assert "meta_z" in d["features"].split(",") and d["meta_stored_len"] < d["meta_len"], d
assert d["build_time"] == 1600000000, d
assert d["file_count"] == 4 and d["data_bytes"] == 20, d
assert d["inode_count"] == 13 and d["dirent_count"] == 12, d
assert d["xattr_count"] == 2, d
EOF
"$CAIRN" info img | grep -q "^format:        cairn 1.2$" || fail "info text"

# --help on every command: usage on stdout, exit 0.
for c in info ls cat stat extract fsck; do
  "$CAIRN" $c --help > help 2>&1 || fail "$c --help exits non-zero"
  grep -q "^usage: cairn $c" help || fail "$c --help: $(head -1 help)"
  grep -q -- "--cache-size" help || fail "$c --help lacks the image options"
done

# The shared image options are accepted by every reader command.
"$CAIRN" cat --cache-size 0 --segment 4K --max-io 64K --stats img /hello.txt >out 2>err ||
  fail "cat with image options: $(cat err)"
[ "$(cat out)" = "hello world" ] || fail "cat with image options: wrong content"
echo "golden: all checks passed"
