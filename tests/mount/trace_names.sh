#!/bin/sh
# -o trace= with file names that would break a line-based trace: a newline, a
# backslash, a trailing space. Each read gives one escaped record, and
# `cairn mkfs --order` reads the names back: the files form the hot prefix.
. "$(dirname "$0")/common.inc"
SRC=$WORK/src
mkdir -p "$SRC/d"
nl='
'
head -c 300000 /dev/urandom > "$SRC/d/new${nl}line"
head -c 300000 /dev/urandom > "$SRC/d/back\\slash"
head -c 300000 /dev/urandom > "$SRC/d/trailing "
head -c 300000 /dev/urandom > "$SRC/d/cold"
"$CAIRN" mkfs -q "$SRC" "$WORK/img.cairn" || fail "mkfs"
M=$WORK/m
mnt "$M" "$WORK/img.cairn" -o trace="$WORK/trace" || fail "mount with trace="
cat "$M/d/new${nl}line" "$M/d/back\\slash" "$M/d/trailing " > /dev/null
umnt "$M"
i=0; while [ ! -s "$WORK/trace" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
# Every line is one record of one of the three names, escaped; all three are there.
bad=$(grep -cvE '^/d/(new\\nline|back\\\\slash|trailing\\040) [0-9]+ [0-9]+$' "$WORK/trace")
[ "$bad" -eq 0 ] || fail "$bad malformed trace lines: $(grep -vE '^/d/' "$WORK/trace" | head -3)"
grep -q '^/d/new\\nline 0 ' "$WORK/trace" || fail "newline not escaped"
grep -q '^/d/back\\\\slash 0 ' "$WORK/trace" || fail "backslash not escaped"
grep -q '^/d/trailing\\040 0 ' "$WORK/trace" || fail "trailing space not escaped"
printf "ok: %s records, e.g. %s\n" "$(wc -l < "$WORK/trace")" "$(head -1 "$WORK/trace")"
"$CAIRN" mkfs --order "$WORK/trace" "$SRC" "$WORK/hot.cairn" >"$WORK/out" 2>&1 ||
  fail "mkfs --order: $(cat "$WORK/out")"
grep -q "warning" "$WORK/out" && fail "mkfs --order: $(cat "$WORK/out")"
hot=$("$CAIRN" info --json "$WORK/hot.cairn" | sed 's/.*"hot_len": \([0-9]*\).*/\1/')
[ "$hot" -ge 900000 ] && [ "$hot" -lt 1200000 ] || fail "hot prefix of $hot bytes, not the 3 files"
echo "trace_names: ok"
