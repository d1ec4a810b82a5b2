#!/bin/sh
# The reference workload through cairn extract: the JDK's absolute and '..'
# symlinks (lib/security/cacerts -> /etc/ssl/certs/java/cacerts, ...) are
# restored verbatim, extract exits 0 without a word, and the extracted java and
# keytool run. Then extract into an existing directory: its own mode stays
# (think /tmp's sticky bit) unless --overwrite-dir, subdirectories are merged.
set -u
CAIRN=${CAIRN:-build/cairn}
JDK=${JDK:-/usr/lib/jvm/java-17-openjdk-amd64}
[ -x "$JDK/bin/java" ] || { echo "no JDK at $JDK"; exit 77; }
work=$(mktemp -d /tmp/cairn-extract-jdk.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

"$CAIRN" mkfs -q --no-fsync "$JDK" "$work/jdk.img" || fail "mkfs"
"$CAIRN" extract "$work/jdk.img" "$work/out" 2>"$work/err" ||
  fail "extract exit $?: $(head -3 "$work/err")"
[ -s "$work/err" ] && fail "extract said: $(head -3 "$work/err")"
(cd "$JDK" && find . -type l | sort | while read -r l; do echo "$l -> $(readlink "$l")"; done) \
  >"$work/links.src"
(cd "$work/out" && find . -type l | sort | while read -r l; do echo "$l -> $(readlink "$l")"; done) \
  >"$work/links.out"
cmp -s "$work/links.src" "$work/links.out" ||
  fail "symlinks differ: $(diff "$work/links.src" "$work/links.out" | head -5)"
echo "ok: $(wc -l < "$work/links.out") symlinks restored verbatim"
"$work/out/bin/java" -version 2>"$work/java" || fail "extracted java: $(cat "$work/java")"
echo "ok: $(head -1 "$work/java")"
if [ -r /etc/ssl/certs/java/cacerts ]; then
  "$work/out/bin/keytool" -list -cacerts -storepass changeit >"$work/kt" 2>&1 ||
    fail "extracted keytool: $(head -3 "$work/kt")"
  echo "ok: keytool: $(head -1 "$work/kt")"
fi

# An existing target keeps its attributes; subdirectories are merged into.
mkdir -m 1777 "$work/tmpdir"
mkdir -m 0700 "$work/tmpdir/bin"
echo mine > "$work/tmpdir/bin/mine"
"$CAIRN" extract "$work/jdk.img" "$work/tmpdir" 2>"$work/err" || fail "extract into tmpdir: $(head -3 "$work/err")"
[ "$(stat -c %a "$work/tmpdir")" = 1777 ] || fail "DIR's mode became $(stat -c %a "$work/tmpdir")"
[ "$(stat -c %a "$work/tmpdir/bin")" = 700 ] || fail "bin's mode became $(stat -c %a "$work/tmpdir/bin")"
[ -f "$work/tmpdir/bin/mine" ] && [ -x "$work/tmpdir/bin/java" ] || fail "bin/ not merged"
"$work/tmpdir/bin/java" -version 2>/dev/null || fail "java from the merged tree"
mkdir -m 1777 "$work/tmpdir2"
"$CAIRN" extract --overwrite-dir "$work/jdk.img" "$work/tmpdir2" || fail "--overwrite-dir"
[ "$(stat -c %a "$work/tmpdir2")" = "$(stat -c %a "$JDK")" ] || fail "--overwrite-dir: mode kept"
echo "ok: an existing DIR keeps its mode, --overwrite-dir gives it the root's"
echo "extract_jdk: all checks passed"
