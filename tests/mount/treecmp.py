#!/usr/bin/env python3
# treecmp.py A B [--no-atime-ish options]: compares two trees as rsync -aHAXS,
# tar and cp -a promise to keep them: the same names; per name the type, mode,
# owner, mtime (ns), size (but of directories), device numbers, symlink target,
# data, every xattr (system.posix_acl_* included, so ACLs and default ACLs), and
# the same hard-link groups. Prints each difference; exit 1 if any.
#   --mtime-s   compare mtimes to the second (tar's default format)
#   --no-dirtime  skip directory mtimes (a tool that writes into a directory last)
import hashlib
import os
import stat
import sys


def entries(root):
    out = {}
    for dirpath, dirs, files in os.walk(os.fsencode(root)):
        for n in dirs + files:
            p = os.path.join(dirpath, n)
            out[os.path.relpath(p, os.fsencode(root))] = p
    out[b"."] = os.fsencode(root)
    return out


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                return h.hexdigest()
            h.update(b)


def xattrs(path):
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return {}
    return {n: os.getxattr(path, n, follow_symlinks=False) for n in sorted(names)}


def describe(path, args):
    st = os.lstat(path)
    d = {"mode": oct(st.st_mode), "uid": st.st_uid, "gid": st.st_gid}
    mt = st.st_mtime_ns // 10**9 if "--mtime-s" in args else st.st_mtime_ns
    if not (stat.S_ISDIR(st.st_mode) and "--no-dirtime" in args):
        d["mtime"] = mt
    if stat.S_ISLNK(st.st_mode):
        d["target"] = os.readlink(path)
    elif stat.S_ISREG(st.st_mode):
        d["size"] = st.st_size
        d["data"] = digest(path)
        d["nlink"] = st.st_nlink
    elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        d["rdev"] = st.st_rdev
    d["xattrs"] = xattrs(path)
    return d, (st.st_dev, st.st_ino)


def main():
    a, b = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    ea, eb = entries(a), entries(b)
    bad = 0
    for n in sorted(set(ea) ^ set(eb)):
        print("only in %s: %r" % (a if n in ea else b, n))
        bad += 1
    groups = {}
    for n in sorted(set(ea) & set(eb)):
        da, ia = describe(ea[n], args)
        db, ib = describe(eb[n], args)
        for k in sorted(set(da) | set(db)):
            if da.get(k) != db.get(k):
                print("%r: %s %r != %r" % (n, k, da.get(k), db.get(k)))
                bad += 1
        if not stat.S_ISDIR(os.lstat(ea[n]).st_mode):
            groups.setdefault(ia, set()).add(ib)
    for ia, ibs in groups.items():
        if len(ibs) != 1:
            print("one inode in %s is %d inodes in %s" % (a, len(ibs), b))
            bad += 1
    if len(set(ib for ibs in groups.values() for ib in ibs)) != len(groups):
        print("separate inodes in %s share an inode in %s" % (a, b))
        bad += 1
    sys.exit(1 if bad else 0)


main()
