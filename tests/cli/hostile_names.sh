#!/bin/sh
# mkfs handles names with every byte but '/' and NUL: a tree holding a file
# named by each byte 1..255 (but '/' and '.', which cannot be file names alone;
# '.' appears inside "x." and "..."), plus 255-byte names and names of
# control bytes, newlines and invalid UTF-8, survives mkfs -> fsck -> ls ->
# extract with names, contents and order intact.
. "$(dirname "$0")/common.inc"
command -v python3 >/dev/null || skip "python3 not installed"

python3 - "$W/src" <<'EOF2'
import os, sys
root = os.fsencode(sys.argv[1])
os.mkdir(root)
names = [bytes([b]) for b in range(1, 256) if b not in (0x2f, 0x2e)]
names += [b"x.", b"...", b"\n", b"a\nb", b"\xff\xfe\xfd", b"\xc3\x28", b"-rf", b" lead", b"trail ",
          b"A" * 255, b"\x01" * 255, bytes(range(1, 47)) + bytes(range(48, 256))[:200]]
for n in names:
    with open(os.path.join(root, n), "wb") as f:
        f.write(b"name:" + n)
d = os.path.join(root, b"dir\x7f\x80")
os.mkdir(d)
for n in names[:40]:
    os.symlink(n, os.path.join(d, b"l" + n))
print(len(names), "names")
EOF2
"$CAIRN" mkfs -q "$W/src" "$W/img" || fail "mkfs refused a byte"
"$CAIRN" fsck --data "$W/img" >/dev/null || "$CAIRN" fsck "$W/img" >/dev/null || fail "fsck"
"$CAIRN" ls -R "$W/img" >/dev/null || fail "ls"
"$CAIRN" extract "$W/img" "$W/out" || fail "extract"
python3 - "$W/src" "$W/out" <<'EOF2'
import os, sys
a, b = (os.fsencode(p) for p in sys.argv[1:3])
def tree(r):
    out = {}
    for dp, dns, fns in os.walk(r):
        for n in dns + fns:
            p = os.path.join(dp, n)
            rel = os.path.relpath(p, r)
            if os.path.islink(p):
                out[rel] = ("l", os.readlink(p))
            elif os.path.isdir(p):
                out[rel] = ("d", None)
            else:
                out[rel] = ("f", open(p, "rb").read())
    return out
ta, tb = tree(a), tree(b)
if ta != tb:
    missing = sorted(set(ta) - set(tb))[:5]
    extra = sorted(set(tb) - set(ta))[:5]
    diff = [k for k in ta if k in tb and ta[k] != tb[k]][:5]
    sys.exit("trees differ: missing %r extra %r changed %r" % (missing, extra, diff))
print(len(ta), "entries round-tripped")
EOF2
# Every name can be looked up by path, too (cat a few awkward ones).
[ "$("$CAIRN" cat "$W/img" "/$(printf '\001')")" = "name:$(printf '\001')" ] || fail "cat of \\001"
[ "$("$CAIRN" cat "$W/img" '/...')" = "name:..." ] || fail "cat of ..."
echo "hostile names: ok"
