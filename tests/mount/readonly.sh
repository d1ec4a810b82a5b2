#!/bin/sh
# The read-only image mount as a new user meets it, compared with the tree it
# was made from: ls/find metadata, hard links, xattrs and ACLs, SEEK_DATA and
# SEEK_HOLE over a 5 GiB sparse file, mmap, sendfile, splice, O_DIRECT, flock,
# a FIFO that works, device nodes (nodev), an empty file, names with spaces,
# newlines and bytes that are not UTF-8, a path near PATH_MAX, a directory of
# 100,000 entries, EROFS for every change, df and statvfs.
. "$(dirname "$0")/common.inc"
command -v setfacl >/dev/null 2>&1 || skip "setfacl (acl) not installed"
command -v python3 >/dev/null 2>&1 || skip "python3 not installed"

S=$WORK/src M=$WORK/m
mkdir "$S" && cd "$S" || fail "mkdir"
echo data > a && ln a b && ln a c && mkdir d && ln a d/e
setfattr -n user.color -v blue a && setfattr -n user.bin -v 0x00ff00 d
# 5 GiB with data at 0, 1 GiB and 4.5 GiB: holes between.
truncate -s 5G sparse
echo head | dd of=sparse conv=notrunc 2>/dev/null
printf X | dd of=sparse bs=1 seek=1073741824 conv=notrunc 2>/dev/null
printf Y | dd of=sparse bs=1 seek=4831838208 conv=notrunc 2>/dev/null
touch aclf && setfacl -m u:nobody:r--,g:daemon:rw- aclf
mkdir acld && setfacl -m u:nobody:r-x acld && setfacl -d -m u:nobody:rwx acld
mkfifo fifo && mknod cdev c 1 3 && mknod bdev b 7 0 && : > empty
touch "with space" "$(printf 'new\nline')" "$(printf 'bad\377\376name')"
mkdir "$(printf 'dir\377x')"
ln -s a sl && ln -s /etc/passwd abs && ln -s nowhere dangling
touch -d '2001-02-03 04:05:06.123456789' a
echo s > suid && chown 1234:5678 suid && chmod 4755 suid
mkdir big && (cd big && seq -f 'f%06g' 1 100000 | xargs touch) || fail "big dir"
p=deep
while [ ${#p} -lt 4000 ]; do p="$p/dddddddddddddddddddddddddddddddddddddddddddddddd"; done
mkdir -p "$p" && echo deep > "$p/leaf" || fail "deep dir"
cd "$WORK" || fail "cd"

"$CAIRN" mkfs "$S" "$WORK/img" > /dev/null || fail "mkfs"
mnt "$M" "$WORK/img" || fail "mount"

# Names, types, modes, owners, link counts, times, sizes (but of directories) and
# symlink targets: find prints every name, NUL-terminated, so newlines survive.
meta() {
  (cd "$1" && find . -printf '%p %m %U %G %n %T@ %C@ %y %l |%s\0' |
    tr '\0\n' '\n?' | sed '/ d *|/s/|.*//' | LC_ALL=C sort)
}
meta "$S" > "$WORK/src.meta" && meta "$M" > "$WORK/mnt.meta" || fail "find"
cmp -s "$WORK/src.meta" "$WORK/mnt.meta" ||
  { diff "$WORK/src.meta" "$WORK/mnt.meta" | head; fail "metadata differs from the source"; }
[ "$(ls "$M/big" | wc -l)" = 100000 ] || fail "100k directory: $(ls "$M/big" | wc -l) names"
[ "$(ls -f "$M/big" | sort | uniq -d | wc -l)" = 0 ] || fail "100k directory lists a name twice"
echo "find metadata of $(wc -l < "$WORK/mnt.meta") names: ok"
[ "$(stat -c %i "$M/a")" = "$(stat -c %i "$M/d/e")" ] || fail "hard links have different inodes"
[ "$(getfattr -d --absolute-names "$M/a" | grep color)" = 'user.color="blue"' ] || fail "getfattr a"
[ "$(getfattr --absolute-names --only-values -n user.bin "$M/d" | od -An -tx1 | tr -d ' ')" = 00ff00 ] ||
  fail "binary xattr"
(cd "$S" && getfacl -p aclf acld) > "$WORK/src.acl" && (cd "$M" && getfacl -p aclf acld) > "$WORK/mnt.acl"
cmp -s "$WORK/src.acl" "$WORK/mnt.acl" || { diff "$WORK/src.acl" "$WORK/mnt.acl"; fail "getfacl"; }
echo "hard links, xattrs, ACLs: ok"

# Syscalls, each checked against the source tree.
python3 - "$S" "$M" <<'EOF' || fail "syscall checks"
import errno, fcntl, mmap, os, sys
src, mnt = sys.argv[1], sys.argv[2]
bad = 0
def check(name, got, want):
    global bad
    if got != want:
        print("FAIL %s: got %r, want %r" % (name, got, want)); bad += 1

def seeks(path):
    fd = os.open(path, os.O_RDONLY)
    out = []
    for off in (0, 10, 4096, 5000, 1 << 30, (1 << 30) + 4096, 4831838208, (5 << 30) - 1):
        for w in (os.SEEK_DATA, os.SEEK_HOLE):
            try:
                out.append(os.lseek(fd, off, w))
            except OSError as e:
                out.append(errno.errorcode[e.errno])
    os.close(fd)
    return out
check("SEEK_DATA/SEEK_HOLE of the sparse file", seeks(mnt + "/sparse"), seeks(src + "/sparse"))
check("SEEK_DATA of an empty file", seeks(mnt + "/empty"), seeks(src + "/empty"))

fd = os.open(mnt + "/sparse", os.O_RDONLY)
os.lseek(fd, 4831838207, 0)
check("read at 4.5 GiB", os.read(fd, 3), b"\0Y\0")
check("read at EOF", os.pread(fd, 10, 5 << 30), b"")
m = mmap.mmap(fd, 8192, prot=mmap.PROT_READ, offset=1 << 30)
check("mmap at 1 GiB", m[:2], b"X\0"); m.close()
os.close(fd)

fd = os.open(mnt + "/a", os.O_RDONLY)
m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
check("mmap", m[:], b"data\n"); m.close()
out = os.open(os.path.dirname(mnt) + "/out", os.O_RDWR | os.O_CREAT | os.O_TRUNC)
check("sendfile", os.sendfile(out, fd, 0, 100), 5)
check("sendfile data", os.pread(out, 100, 0), b"data\n")
r, w = os.pipe()
check("splice", os.splice(fd, w, 100, offset_src=0), 5)
check("splice data", os.read(r, 100), b"data\n")
fcntl.flock(fd, fcntl.LOCK_EX); fcntl.flock(fd, fcntl.LOCK_UN)
fcntl.lockf(fd, fcntl.LOCK_SH); fcntl.lockf(fd, fcntl.LOCK_UN)
os.close(fd)

fd = os.open(mnt + "/sparse", os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 1 << 20)
check("O_DIRECT read", os.readv(fd, [buf]), 1 << 20)
check("O_DIRECT data", buf[:6], b"head\n\0")
os.close(fd)

check("empty file", open(mnt + "/empty", "rb").read(), b"")
for n in ("fifo", "cdev", "bdev"):
    a, b = os.lstat(src + "/" + n), os.lstat(mnt + "/" + n)
    check(n + " mode/rdev", (b.st_mode, b.st_rdev), (a.st_mode, a.st_rdev))
try:
    os.open(mnt + "/cdev", os.O_RDONLY); check("device node opened on nodev", 1, 0)
except OSError as e:
    check("device node on nodev", e.errno, errno.EACCES)
pid = os.fork()
if pid == 0:
    with open(mnt + "/fifo", "wb") as f: f.write(b"through the fifo")
    os._exit(0)
with open(mnt + "/fifo", "rb") as f: check("fifo", f.read(), b"through the fifo")
os.waitpid(pid, 0)
deep = [p for p, d, f in os.walk(mnt) if "leaf" in f][0]
check("path near PATH_MAX", open(deep + "/leaf").read(), "deep\n")
check("non-UTF-8 name", os.path.exists(os.fsencode(mnt) + b"/bad\xff\xfename"), True)

for what, call in (("open O_WRONLY", lambda: os.open(mnt + "/a", os.O_WRONLY)),
                   ("open O_TRUNC", lambda: os.open(mnt + "/a", os.O_RDONLY | os.O_TRUNC)),
                   ("utime", lambda: os.utime(mnt + "/a")),
                   ("setxattr", lambda: os.setxattr(mnt + "/a", "user.x", b"1")),
                   ("mkdir", lambda: os.mkdir(mnt + "/x")),
                   ("unlink", lambda: os.unlink(mnt + "/a")),
                   ("chmod", lambda: os.chmod(mnt + "/a", 0o600)),
                   ("truncate", lambda: os.truncate(mnt + "/a", 0))):
    try:
        call(); check(what, "succeeded", "EROFS")
    except OSError as e:
        check(what, errno.errorcode[e.errno], "EROFS")
v = os.statvfs(mnt)
check("statvfs ST_RDONLY", bool(v.f_flag & os.ST_RDONLY), True)
check("statvfs f_files", v.f_files >= 100000, True)
sys.exit(1 if bad else 0)
EOF
echo "syscalls: ok"
df "$M" | tail -n 1 | grep -q . || fail "df"
stat -f "$M" > /dev/null || fail "stat -f"
[ "$(du -s --apparent-size -B1 "$M/sparse" | cut -f1)" = 5368709120 ] || fail "du --apparent-size"
umnt "$M"
echo "readonly: ok"
