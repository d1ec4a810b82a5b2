#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Helpers for the CLI tests.

  treetool.py gen DIR [--big]      generate a tree with every file type and odd names
  treetool.py cmp SRC DST [ATIMES] compare two trees: content and metadata (atimes
                                   from the snapshot gen wrote to DIR.atimes)
  treetool.py flip IMAGE CAIRN [LIBCAIRN_SO]
                                   flip each byte of the superblock, checksum table and
                                   metadata (in-process through libcairn.so when given;
                                   in sanitizer builds a spread sample through the CLI);
                                   fsck (or open) must fail on every one
  treetool.py rename IMAGE OLD NEW replace a name (same length) and re-seal the checksums
"""
import json
import os
import stat
import socket
import struct
import subprocess
import sys
import time

GIB = 1 << 30


def put(path, data):
    with open(path, "wb") as f:
        f.write(data)


def pattern(n, seed):
    out = bytearray(n)
    x = seed & 0xFFFFFFFF or 1
    for i in range(n):
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
        out[i] = x >> 24
    return bytes(out)


def gen(root, big):
    os.makedirs(root, exist_ok=True)
    j = lambda *p: os.path.join(root, *p)
    put(j("empty"), b"")
    os.mkdir(j("empty-dir"))
    put(j("small.txt"), b"hello\n")
    put(j("medium.bin"), pattern(100_000, 1))
    put(j("exact-4k.bin"), pattern(4096, 2))
    put(j("dup1.bin"), pattern(20_000, 3))
    put(j("dup2.bin"), pattern(20_000, 3))
    put(j("name with spaces"), b"spaces\n")
    put(j("ünïcødé-名前-🙂"), b"utf8\n")
    put(j("new\nline"), b"newline\n")
    put(j("back\\slash"), b"bs\n")
    put(j("-dash"), b"dash\n")
    put(j("x" * 255), b"long name\n")
    # deep nesting
    d = j("deep")
    for i in range(40):
        d = os.path.join(d, "level%02d" % i)
    os.makedirs(d)
    put(os.path.join(d, "bottom.txt"), b"bottom\n")
    # hard links: three names, two directories
    os.mkdir(j("sub"))
    put(j("hl-a"), b"hard link content\n")
    os.link(j("hl-a"), j("sub", "hl-b"))
    os.link(j("hl-a"), j("sub", "hl-c"))
    # symlinks: to a file, to a directory, dangling, absolute, through ..
    os.symlink("small.txt", j("link-file"))
    os.symlink("deep", j("link-dir"))
    os.symlink("does/not/exist", j("dangling"))
    os.symlink("/etc/passwd", j("abs-link"))
    os.symlink("../small.txt", j("sub", "up-link"))
    os.symlink("t" * 1000, j("long-target"))
    # special files
    os.mkfifo(j("fifo"), 0o640)
    if os.geteuid() == 0:
        os.mknod(j("char-dev"), 0o620 | stat.S_IFCHR, os.makedev(1, 3))
        os.mknod(j("block-dev"), 0o660 | stat.S_IFBLK, os.makedev(7, 200))
        os.chown(j("medium.bin"), 1234, 5678)
        os.chown(j("link-file"), 4321, 8765, follow_symlinks=False)
    cwd = os.getcwd()
    os.chdir(root)
    s = socket.socket(socket.AF_UNIX)
    s.bind("sock")
    s.close()
    os.chdir(cwd)
    # modes
    put(j("setuid"), b"#!/bin/sh\n")
    os.chmod(j("setuid"), 0o4755)
    put(j("setgid"), b"g\n")
    os.chmod(j("setgid"), 0o2711)
    os.mkdir(j("sticky"))
    os.chmod(j("sticky"), 0o1777)
    os.chmod(j("empty"), 0o600)
    os.chmod(j("sub"), 0o750)
    # xattrs
    os.setxattr(j("small.txt"), "user.comment", b"a comment")
    os.setxattr(j("small.txt"), "user.empty", b"")
    os.setxattr(j("small.txt"), "user.binary", bytes(range(256)))
    os.setxattr(j("sub"), "user.dir", b"on a directory")
    os.setxattr(j("hl-a"), "user.hl", b"shared by links")
    # sparse: holes around a few written blocks
    with open(j("sparse"), "wb") as f:
        f.truncate((5 * GIB if big else 64 << 20) + 12345)
        f.seek(0)
        f.write(b"A" * 4096)
        f.seek(1 * GIB if big else 8 << 20)
        f.write(b"B" * 10000)
        f.seek((5 * GIB if big else 64 << 20) + 12000)
        f.write(b"C" * 345)
    with open(j("hole-at-end"), "wb") as f:
        f.write(b"head")
        f.truncate(1 << 20)
    # times: distinct nanoseconds; atime after mtime and recent, so relatime
    # leaves atime alone while mkfs reads the files
    now = time.time_ns()
    entries = []
    for dirpath, dirnames, filenames in os.walk(root):
        for n in filenames + dirnames:
            entries.append(os.path.join(dirpath, n))
    entries.sort(key=lambda p: -p.count("/"))  # deepest first, directories after children
    for i, p in enumerate(entries + [root]):
        mtime = now - 7200 * 10**9 - i * 1_000_003_007
        atime = now - 600 * 10**9 - i * 999_999_937
        os.utime(p, ns=(atime, mtime), follow_symlinks=False)
    # Reading a file or listing a directory moves its atime under relatime (atime <
    # ctime here), and mkfs reads them all: keep the atimes as generated.
    with open(root.rstrip("/") + ".atimes", "w") as f:
        json.dump({rel: st.st_atime_ns for rel, st in walk(root).items()}, f)


def walk(root):
    out = {"": os.lstat(root)}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            out[os.path.relpath(p, root)] = os.lstat(p)
    return out


def xattrs(path):
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return {}
    return {n: os.getxattr(path, n, follow_symlinks=False) for n in names if n.startswith("user.")}


def data_ranges(fd, size):
    """The data ranges of a file (SEEK_DATA/SEEK_HOLE), so holes are not read."""
    out, pos = [], 0
    while pos < size:
        try:
            d = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError:
            break
        h = os.lseek(fd, d, os.SEEK_HOLE)
        out.append((d, h))
        pos = h
    return out


def same_content(a, b):
    """Equal bytes where either file has data; elsewhere both are holes (zeros)."""
    fa, fb = os.open(a, os.O_RDONLY), os.open(b, os.O_RDONLY)
    try:
        size = os.fstat(fa).st_size
        if os.fstat(fb).st_size != size:
            return False
        for lo, hi in data_ranges(fa, size) + data_ranges(fb, size):
            for off in range(lo, hi, 1 << 20):
                n = min(1 << 20, hi - off)
                if os.pread(fa, n, off) != os.pread(fb, n, off):
                    return False
        return True
    finally:
        os.close(fa)
        os.close(fb)


def cmp(src, dst, atimes_file):
    b = walk(dst)  # first: lstat before anything below is listed or read
    a = walk(src)
    atimes = {}
    if atimes_file:
        with open(atimes_file) as f:
            atimes = json.load(f)
    bad = []
    if set(a) != set(b):
        bad.append("only in source: %r" % sorted(set(a) - set(b))[:5])
        bad.append("only in copy: %r" % sorted(set(b) - set(a))[:5])
    groups_a, groups_b = {}, {}
    for rel in sorted(set(a) & set(b)):
        sa, sb = a[rel], b[rel]
        pa, pb = os.path.join(src, rel), os.path.join(dst, rel)
        name = rel or "."
        checks = [("mode", sa.st_mode, sb.st_mode), ("nlink", sa.st_nlink, sb.st_nlink),
                  ("mtime", sa.st_mtime_ns, sb.st_mtime_ns)]
        # Listing a directory or reading a symlink moves its atime (relatime), and
        # mkfs must do both: atimes are compared for files and special files.
        if rel in atimes and not stat.S_ISDIR(sa.st_mode) and not stat.S_ISLNK(sa.st_mode):
            checks.append(("atime", atimes[rel], sb.st_atime_ns))
        if os.geteuid() == 0:
            checks += [("uid", sa.st_uid, sb.st_uid), ("gid", sa.st_gid, sb.st_gid)]
        if not stat.S_ISDIR(sa.st_mode):
            checks.append(("size", sa.st_size, sb.st_size))
        if stat.S_ISCHR(sa.st_mode) or stat.S_ISBLK(sa.st_mode):
            checks.append(("rdev", sa.st_rdev, sb.st_rdev))
        for what, x, y in checks:
            if x != y:
                bad.append("%r: %s %r != %r" % (name, what, x, y))
        if xattrs(pa) != xattrs(pb):
            bad.append("%r: xattrs %r != %r" % (name, xattrs(pa), xattrs(pb)))
        if stat.S_ISLNK(sa.st_mode) and os.readlink(pa) != os.readlink(pb):
            bad.append("%r: symlink target differs" % name)
        if stat.S_ISREG(sa.st_mode):
            if not same_content(pa, pb):
                bad.append("%r: content differs" % name)
            # holes stay holes: the copy uses no more blocks than the source (+ slack)
            if sb.st_blocks > sa.st_blocks + 64:
                bad.append("%r: %d blocks, source %d (holes lost?)" % (name, sb.st_blocks,
                                                                       sa.st_blocks))
            if sa.st_nlink > 1:
                groups_a.setdefault(sa.st_ino, set()).add(rel)
                groups_b.setdefault(sb.st_ino, set()).add(rel)
    if sorted(map(sorted, groups_a.values())) != sorted(map(sorted, groups_b.values())):
        bad.append("hard link groups differ: %r vs %r" % (groups_a, groups_b))
    for line in bad:
        print("treetool cmp:", line)
    print("treetool cmp: %d entries compared, %d differences" % (len(a), len(bad)))
    return 1 if bad else 0


SUPER = struct.Struct("<8sHHIIIIIQQQQQQQQQQQQQQQQQQQq16sQQQ16sQ")


def run_fsck_cli(cairn, image):
    try:
        r = subprocess.run([cairn, "fsck", "-q", image], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=60)
        return r.returncode in (1, 4), r.returncode
    except subprocess.TimeoutExpired:
        return False, "timeout"


def load_lib(path):
    """libcairn.so through ctypes, for in-process checks; None for sanitizer builds
    (their runtime must come first in the process) or when it is missing."""
    import ctypes
    try:
        with open(path, "rb") as f:
            blob = f.read()
        if b"__asan_init" in blob or b"__tsan_init" in blob:
            return None
        lib = ctypes.CDLL(path)
    except OSError:
        return None
    v = ctypes.c_void_p
    lib.cairn_bdev_mem_new.argtypes = [v, ctypes.c_size_t, ctypes.c_int, ctypes.POINTER(v)]
    lib.cairn_cache_new.argtypes = [v, v, ctypes.POINTER(v)]
    lib.cairn_cache_free.argtypes = [v]
    lib.cairn_image_open.argtypes = [v, ctypes.POINTER(v)]
    lib.cairn_image_fsck.argtypes = [v, ctypes.c_uint, v, v]
    lib.cairn_image_fsck.restype = ctypes.c_long
    lib.cairn_image_close.argtypes = [v]
    return lib


def run_fsck_mem(lib, buf, size):
    """open + fsck of the image bytes in buf (a mem device over them, not copied)."""
    import ctypes
    dev, cache, img = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    assert lib.cairn_bdev_mem_new(ctypes.addressof(buf), size, 0, ctypes.byref(dev)) == 0
    assert lib.cairn_cache_new(dev, None, ctypes.byref(cache)) == 0
    if lib.cairn_image_open(cache, None, 0, ctypes.byref(img)) < 0:
        lib.cairn_cache_free(cache)
        return True, "open refused"
    n = lib.cairn_image_fsck(img, 0, None, None)
    lib.cairn_image_close(img)
    return n != 0, n


def flip(image, cairn, libpath):
    import ctypes
    with open(image, "rb") as f:
        data = bytearray(f.read())
    s = SUPER.unpack(data[:256])
    meta_off, meta_len, csum_off = s[11], s[12], s[22]
    # Compressed metadata (incompat bit 2): the logical region is not stored where
    # meta_off says; flip its record, the block index and the stored blocks.
    if s[5] & 4:
        area_off, _, index_off, count, _, stored = struct.unpack_from("<6Q", data, 512 + 16)
        zrecord = list(range(512, 640))
        flip_off, flip_len = index_off, count * 16 + stored
    else:
        zrecord, flip_off, flip_len = [], meta_off, meta_len
    lib = load_lib(libpath) if libpath else None
    if lib is not None:  # in-process: every byte
        offsets = list(range(256)) + zrecord
        offsets += range(csum_off, csum_off + meta_len // 4096 * 8)
        offsets += range(flip_off, flip_off + flip_len)
    else:
        # Sanitizer builds run one slow process per flip: a spread sample (every
        # byte of a hand-made image is flipped in-process by the reader's unit test).
        n = 100
        stride = max(1, flip_len // n)
        offsets = list(range(0, 256, 16)) + zrecord[::8]
        offsets += range(csum_off, csum_off + min(16, meta_len // 4096 * 8))
        offsets += [flip_off + i * stride + (i * 7919) % stride for i in range(min(n, flip_len))]
    buf = (ctypes.c_char * len(data)).from_buffer(data) if lib is not None else None
    missed = []
    if lib is not None and run_fsck_mem(lib, buf, len(data)) != (False, 0):
        print("treetool flip: the unmodified image is not clean in-process")
        return 1
    with open(image, "r+b") as f:
        for k, off in enumerate(offsets):
            # In-process when possible, and the CLI on every 250th flip too so its
            # exit codes are checked; only the CLI in sanitizer builds.
            ok, rc = True, None
            if lib is not None:
                data[off] ^= 0x01
                ok, rc = run_fsck_mem(lib, buf, len(data))
                data[off] ^= 0x01
            if ok and (lib is None or k % 250 == 0):
                f.seek(off)
                f.write(bytes([data[off] ^ 0x01]))
                f.flush()
                ok, rc = run_fsck_cli(cairn, image)
                f.seek(off)
                f.write(bytes([data[off]]))
                f.flush()
            if not ok:
                missed.append((off, rc))
    del buf
    print("treetool flip: %d single-byte flips (%s), %d not detected" %
          (len(offsets), "in-process + CLI" if lib else "CLI", len(missed)))
    for off, rc in missed[:20]:
        print("treetool flip: offset %d: fsck gave %s" % (off, rc))
    return 1 if missed else 0


def rename(image, old, new):
    """Replaces a name in the blob region (same length) and re-seals every
    checksum, so only the reader's own structure checks stand in the way."""
    import ctypes
    xxh = ctypes.CDLL("libxxhash.so.0")
    xxh.XXH3_64bits.restype = ctypes.c_uint64
    xxh.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    old, new = old.encode(), new.encode()
    assert len(old) == len(new)
    with open(image, "r+b") as f:
        img = bytearray(f.read())
        s = list(SUPER.unpack(img[:256]))
        meta_off, meta_len, blob_off, blob_len, csum_off = s[11], s[12], s[20], s[21], s[22]
        assert not s[5] & 4, "compressed metadata: build the image with mkfs --plain-meta"
        at = img.find(old, blob_off, blob_off + blob_len)
        assert at >= 0, "name not found in the blob"
        img[at:at + len(old)] = new
        for b in range(meta_len // 4096):
            blk = bytes(img[meta_off + b * 4096:meta_off + (b + 1) * 4096])
            struct.pack_into("<Q", img, csum_off + b * 8, xxh.XXH3_64bits(blk, 4096))
        table = bytes(img[csum_off:csum_off + meta_len // 4096 * 8])
        struct.pack_into("<Q", img, 208, xxh.XXH3_64bits(table, len(table)))  # csum_table_hash
        struct.pack_into("<Q", img, 248, 0)
        struct.pack_into("<Q", img, 248, xxh.XXH3_64bits(bytes(img[:256]), 256))
        f.seek(0)
        f.write(img)
    return 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "gen":
        gen(sys.argv[2], "--big" in sys.argv)
        return 0
    if len(sys.argv) in (4, 5) and sys.argv[1] == "cmp":
        return cmp(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) == 5 else None)
    if len(sys.argv) in (4, 5) and sys.argv[1] == "flip":
        return flip(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) == 5 else None)
    if len(sys.argv) == 5 and sys.argv[1] == "rename":
        return rename(sys.argv[2], sys.argv[3], sys.argv[4])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
