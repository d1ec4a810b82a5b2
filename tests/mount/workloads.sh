#!/bin/sh
# Everyday programs on the RAM layers: git init/commit/gc/fsck in the tmp= /tmp of
# an image, clone into the overlay and into --empty (and git fsck there), a gcc
# build and run in tmp=, python3 compiling a package (py_compile writes .pyc
# files by rename) on the overlay. Each must exit 0 and leave consistent data.
. "$(dirname "$0")/common.inc"
for t in git gcc python3; do
  command -v $t >/dev/null 2>&1 || skip "$t not installed"
done
S=$WORK/src
mkdir -p "$S/tmp" "$S/lib/pkg"
i=0
while [ $i -lt 50 ]; do
  echo "def f$i(): return $i" > "$S/lib/pkg/m$i.py"; i=$((i + 1))
done
: > "$S/lib/pkg/__init__.py"
"$CAIRN" mkfs -q "$S" "$WORK/img" || fail "mkfs"
mnt "$WORK/t" -o tmp=/tmp "$WORK/img" || fail "mount tmp="
mnt "$WORK/o" -o overlay "$WORK/img" || fail "mount -o overlay"
mnt "$WORK/e" --empty || fail "mount --empty"

export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
export GIT_CONFIG_NOSYSTEM=1 HOME=$WORK
R=$WORK/t/tmp/repo
git init -q "$R" || fail "git init"
cp -r "$S/lib" "$R/" && seq 1 20000 > "$R/big"
(cd "$R" && git add -A && git commit -qm one && seq 1 100 >> big && git commit -qam two &&
  git mv big big2 && git commit -qm three && git gc -q --aggressive && git fsck --strict --no-progress) ||
  fail "git in tmp="
for d in "$WORK/o/clone" "$WORK/e/clone"; do
  git clone -q "file://$R" "$d" || fail "git clone into $d"
  (cd "$d" && git fsck --strict --no-progress && git repack -adq && git status --porcelain |
    grep -q . && exit 1; [ "$(git rev-list --count HEAD)" = 3 ]) || fail "clone in $d"
  cmp -s "$R/big2" "$d/big2" || fail "clone data in $d"
done
echo "git: ok"

cat > "$WORK/t/tmp/hello.c" <<'EOF'
#include <stdio.h>
int main(void) { printf("built in RAM\n"); return 0; }
EOF
(cd "$WORK/t/tmp" && gcc -O2 -o hello hello.c -save-temps) || fail "gcc in tmp="
[ "$("$WORK/t/tmp/hello")" = "built in RAM" ] || fail "the program built in tmp="
echo "gcc: ok"

python3 -m compileall -q "$WORK/o/lib/pkg" > /dev/null || fail "compileall on the overlay"
[ "$(ls "$WORK/o/lib/pkg/__pycache__" | wc -l)" = 51 ] || fail "pyc files on the overlay"
(cd "$WORK/o/lib" && python3 -c 'import pkg.m7; assert pkg.m7.f7() == 7') || fail "import"
[ ! -e "$S/lib/pkg/__pycache__" ] || fail "the source tree changed"
echo "python3: ok"
echo "workloads: ok"
