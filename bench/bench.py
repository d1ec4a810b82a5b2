#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cairn benchmark harness: cairn beside kernel squashfs, kernel EROFS and squashfuse_ll.

Every image is read through delayfs (bench/delayfs), a FUSE file layer that adds the same
fixed delay to every read request and counts requests and bytes, so every system pays the
same price per request (Ingo Molnar's constant-delay method, seed 003).

Called by bench/run.sh (which owns the work directory and the last-resort cleanup):
    bench.py --mode quick|full --work DIR --build BUILD --out OUTDIR
Writes OUTDIR/BENCHMARKS.md, OUTDIR/bench/coldstart.png and OUTDIR/bench/results.json.
Python 3.11 standard library only.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

from procmem import daemon_mem  # bench/procmem.py: the one definition of daemon memory

MiB = 1 << 20
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
JDK = "/usr/lib/jvm/java-17-openjdk-amd64"
# Emulated disks: a fixed delay per request, and for the network ones a shared link.
PROFILES = {
    "latency": {"delay": "1ms", "bw": 0, "channels": 1},
    "network": {"delay": "1ms", "bw": 100, "channels": 1},
    "remote": {"delay": "20ms", "bw": 100, "channels": 8},
}
ZCODECS = ("lz4hc", "zstd")
# Ordered compressed images built with more mkfs options: key -> (label, options).
# zstd for the cold data, lz4hc for the hot prefix a cold start decompresses
# (mkfs --hot-codec; docs/bench/zorder.md).
ZORDERED_EXTRA = {"zstd-hot-lz4hc": ("zstd hot-lz4hc", ["-z", "zstd", "--hot-codec", "lz4hc"])}
TRACE_RUNS = 2  # traced runs whose orders are joined for `mkfs --order`
PYLIB = "/usr/lib/python3.11"
PYTHON = "/usr/bin/python3.11"
TREE_CACHE = "/var/tmp/cairn-bench-trees"

PY_MODULES = (
    "json re collections typing dataclasses argparse subprocess threading logging "
    "email.parser email.message http.client urllib.request urllib.parse "
    "xml.etree.ElementTree decimal fractions datetime pathlib tempfile shutil tarfile "
    "zipfile csv sqlite3 unittest asyncio ssl hashlib base64 pickle textwrap inspect ast "
    "uuid random statistics socket selectors gettext locale difflib pprint configparser "
    "string struct heapq bisect enum functools contextlib copy glob fnmatch"
).split()


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class BenchError(Exception):
    """A step failed; the system or workload it belongs to is reported as failed."""


def pagecache_drops():
    """How often anyone wrote drop_caches since boot (/proc/vmstat)."""
    with open("/proc/vmstat") as f:
        for line in f:
            if line.startswith("drop_pagecache "):
                return int(line.split()[1])
    return 0


def now():
    return time.perf_counter()


def run(argv, check=True, timeout=600, **kw):
    """Run a command; on failure raise BenchError with the tail of its stderr."""
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    try:
        p = subprocess.run(argv, timeout=timeout, text=True, **kw)
    except subprocess.TimeoutExpired:
        raise BenchError(f"{argv[0]}: timed out after {timeout}s")
    except OSError as e:
        raise BenchError(f"{argv[0]}: {e}")
    if check and p.returncode != 0:
        err = (p.stderr or p.stdout or "").strip().splitlines()[-3:]
        raise BenchError(f"{' '.join(map(str, argv[:4]))}: exit {p.returncode}: {' | '.join(err)}")
    return p


def mounted(path):
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


# ---------------------------------------------------------------- resources and cleanup

class Resources:
    """Everything the run sets up (mounts, loop devices, daemons), undone in reverse.
    run.sh's trap also calls bench/cleanup.sh on the work dir as a backstop."""

    def __init__(self, work):
        self.work = work
        self.mounts, self.loops, self.procs = [], [], []
        self.pidfile = os.path.join(work, "pids")

    def add_proc(self, p):
        self.procs.append(p)
        with open(self.pidfile, "a") as f:
            f.write(f"{p.pid}\n")

    def wait_mount(self, mnt, proc=None, timeout=30.0):
        end = now() + timeout
        while not mounted(mnt):
            if proc is not None and proc.poll() is not None:
                raise BenchError(f"mount of {mnt}: daemon exited with {proc.returncode}: "
                                 f"{self.proc_log_tail(proc)}")
            if now() > end:
                raise BenchError(f"mount of {mnt}: not mounted after {timeout}s")
            time.sleep(0.002)
        self.mounts.append(mnt)

    def proc_log_tail(self, proc):
        path = getattr(proc, "logpath", None)
        if not path or not os.path.exists(path):
            return ""
        with open(path, errors="replace") as f:
            return " | ".join(f.read().strip().splitlines()[-3:])

    def umount(self, mnt, proc=None):
        """Unmount, retrying while busy; then wait for the daemon to exit."""
        for _ in range(50):
            if not mounted(mnt):
                break
            if run(["umount", mnt], check=False).returncode == 0:
                break
            time.sleep(0.1)
        else:
            run(["umount", "-l", mnt], check=False)
        if mnt in self.mounts:
            self.mounts.remove(mnt)
        if proc is not None:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc in self.procs:
                self.procs.remove(proc)

    def loop_attach(self, path):
        p = run(["losetup", "-r", "--direct-io=on", "-f", "--show", path], check=False)
        if p.returncode != 0:  # dio refused: the delayfs file is direct_io anyway
            p = run(["losetup", "-r", "-f", "--show", path])
        dev = p.stdout.strip()
        self.loops.append(dev)
        return dev

    def loop_detach(self, dev):
        for _ in range(50):
            if run(["losetup", "-d", dev], check=False).returncode == 0:
                break
            time.sleep(0.1)
        if dev in self.loops:
            self.loops.remove(dev)

    def cleanup(self):
        for mnt in reversed(list(self.mounts)):
            run(["umount", "-l", mnt], check=False)
        self.mounts.clear()
        for dev in list(self.loops):
            run(["losetup", "-d", dev], check=False)
        self.loops.clear()
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
        self.procs.clear()


# ---------------------------------------------------------------- image formats

class Format:
    """One way to build an image from a tree."""

    def __init__(self, key, label, argv_fn, tool, peer=True):
        self.key, self.label, self.argv_fn, self.tool, self.peer = key, label, argv_fn, tool, peer


def _fmt_table(cairn):
    return {
        "cairn": Format("cairn", "cairn mkfs", lambda s, o: cairn.mkfs_argv(s, o), "cairn",
                        peer=False),
        "cairn-lz4hc": Format("cairn-lz4hc", "cairn mkfs -z lz4hc",
                              lambda s, o: cairn.mkfs_argv(s, o, z="lz4hc"), "cairn", peer=False),
        "cairn-zstd": Format("cairn-zstd", "cairn mkfs -z zstd",
                             lambda s, o: cairn.mkfs_argv(s, o, z="zstd"), "cairn", peer=False),
        "sqfs": Format("sqfs", "mksquashfs uncompressed (-noI -noD -noF -noX)",
                       lambda s, o: ["mksquashfs", s, o, "-noI", "-noD", "-noF", "-noX",
                                     "-no-progress", "-quiet"], "mksquashfs"),
        "sqfs-zstd": Format("sqfs-zstd", "mksquashfs -comp zstd",
                            lambda s, o: ["mksquashfs", s, o, "-comp", "zstd", "-no-progress",
                                          "-quiet"], "mksquashfs"),
        "erofs": Format("erofs", "mkfs.erofs uncompressed",
                        lambda s, o: ["mkfs.erofs", "--quiet", o, s], "mkfs.erofs"),
        "erofs-lz4hc": Format("erofs-lz4hc", "mkfs.erofs -zlz4hc",
                              lambda s, o: ["mkfs.erofs", "--quiet", "-zlz4hc", o, s],
                              "mkfs.erofs"),
    }


# ---------------------------------------------------------------- cairn front end

class Cairn:
    """How the harness drives the cairn tool; probes which pieces have landed."""

    def __init__(self, path, work):
        self.path, self.work = path, work
        self.mkfs_ok = self.mount_ok = self.order_ok = False
        self.quiet = []
        self.why = ""

    def mkfs_argv(self, src, out, order=None, z=None, extra=()):
        argv = [self.path, "mkfs"] + self.quiet
        if order:
            argv += ["--order", order]
        if z:
            argv += ["-z", z]
        return argv + list(extra) + [src, out]

    def probe(self, res):
        if not os.access(self.path, os.X_OK):
            self.why = f"{self.path} not built"
            return
        tiny = os.path.join(self.work, "src", "tiny")
        os.makedirs(os.path.join(tiny, "tmp"), exist_ok=True)
        with open(os.path.join(tiny, "hello.txt"), "w") as f:
            f.write("hello\n")
        img = os.path.join(self.work, "img-direct", "tiny.cairn")
        os.makedirs(os.path.dirname(img), exist_ok=True)
        for quiet in (["-q"], []):
            self.quiet = quiet
            p = run(self.mkfs_argv(tiny, img), check=False)
            if p.returncode == 0:
                self.mkfs_ok = True
                break
        if not self.mkfs_ok:
            self.why = "cairn mkfs: " + (p.stderr.strip().splitlines() or ["failed"])[-1]
            return
        mnt = os.path.join(self.work, "mnt", "probe")
        os.makedirs(mnt, exist_ok=True)
        try:
            h = self.mount(res, img, mnt, [])
            try:
                with open(os.path.join(mnt, "hello.txt")) as f:
                    ok = f.read() == "hello\n"
            finally:
                self.umount(res, mnt, h)
            self.mount_ok = ok
            if not ok:
                self.why = "cairn mount: hello.txt read back wrong"
        except (BenchError, OSError) as e:
            self.why = f"cairn mount: {e}"

    def mount(self, res, image, mnt, opts, empty=False):
        """Start `cairn mount -f` and wait until the mount is there. Returns the daemon."""
        logpath = os.path.join(self.work, "logs", f"cairn-{len(res.procs)}-{os.getpid()}.log")
        os.makedirs(os.path.dirname(logpath), exist_ok=True)
        argv = [self.path, "mount"] + (["--empty", mnt] if empty else [image, mnt]) + ["-f"]
        if opts:
            argv += ["-o", ",".join(opts)]
        with open(logpath, "a") as logf:
            p = subprocess.Popen(argv, stdout=logf, stderr=logf)
        p.logpath = logpath
        res.add_proc(p)
        try:
            res.wait_mount(mnt, p)
        except BenchError:
            if p.poll() is None:
                p.terminate()
                p.wait()
            raise
        return p

    def umount(self, res, mnt, proc):
        res.umount(mnt, proc)


# ---------------------------------------------------------------- systems (read-only)

class System:
    """One way to mount an image read-only. `fmt` names the image it reads."""
    daemon = False

    def __init__(self, name, fmt, peer=True):
        self.name, self.fmt, self.peer = name, fmt, peer
        self.direct = False  # read the image from tmpfs, not through delayfs

    def mount(self, b, image, mnt):
        raise NotImplementedError

    def umount(self, b, h, mnt):
        raise NotImplementedError

    def mem(self, h):
        return None


class KernelFs(System):
    def __init__(self, name, fmt, fstype):
        super().__init__(name, fmt)
        self.fstype = fstype

    def mount(self, b, image, mnt):
        dev = b.res.loop_attach(image)
        p = run(["mount", "-t", self.fstype, "-o", "ro", dev, mnt], check=False)
        if p.returncode != 0:
            b.res.loop_detach(dev)
            raise BenchError(f"mount -t {self.fstype}: {p.stderr.strip()}")
        b.res.mounts.append(mnt)
        return dev

    def umount(self, b, h, mnt):
        b.res.umount(mnt)
        b.res.loop_detach(h)


class SquashfuseLL(System):
    daemon = True

    def mount(self, b, image, mnt):
        logpath = os.path.join(b.work, "logs", "squashfuse.log")
        with open(logpath, "a") as logf:
            p = subprocess.Popen(["squashfuse_ll", "-f", image, mnt], stdout=logf, stderr=logf)
        p.logpath = logpath
        b.res.add_proc(p)
        b.res.wait_mount(mnt, p)
        return p

    def umount(self, b, h, mnt):
        b.res.umount(mnt, h)

    def mem(self, h):
        return daemon_mem(h.pid)


class CairnFs(System):
    daemon = True

    def __init__(self, name, fmt, opts=(), direct_delay=None):
        super().__init__(name, fmt, peer=False)
        self.opts = list(opts)
        self.direct = direct_delay is not None
        self.direct_delay = direct_delay
        self.last_stats = None

    def mount(self, b, image, mnt):
        opts = list(self.opts)
        if self.direct:
            self.stats_file = os.path.join(b.work, "cairn-own-delay.stats")
            if os.path.exists(self.stats_file):
                os.unlink(self.stats_file)
            opts += [f"delay={self.direct_delay}", f"stats={self.stats_file}"]
        return b.cairn.mount(b.res, image, mnt, opts)

    def umount(self, b, h, mnt):
        b.cairn.umount(b.res, mnt, h)

    def mem(self, h):
        return daemon_mem(h.pid)

    def own_counters(self, h):
        """Requests and bytes from cairn's own stats file (SIGUSR1 dumps it)."""
        try:
            os.kill(h.pid, signal.SIGUSR1)
        except OSError:
            return None
        for _ in range(50):
            time.sleep(0.02)
            if os.path.exists(self.stats_file):
                with open(self.stats_file) as f:
                    text = f.read()
                req = re.search(r"^device_requests (\d+)", text, re.M)
                byt = re.search(r"^device_bytes (\d+)", text, re.M)
                if req:
                    return {"requests": int(req.group(1)),
                            "bytes": int(byt.group(1)) if byt else None}
        return None


# ---------------------------------------------------------------- workloads

class Workload:
    key = title = tree = ""

    def mountpoint(self, b):
        return os.path.join(b.work, "mnt", self.key)

    def argv(self, b, root):
        raise NotImplementedError

    def env(self, b, root):
        return dict(os.environ)

    def check(self, b, root, out):
        return True


class JavaHello(Workload):
    key, title, tree = "java", "Java Hello (JDK 17 image)", "jdk"
    about = ("`bin/java -cp <tmpfs> Hello` with the JDK served from the image "
             "(Java 17, class data sharing on: classes.jsa is read from the image)")

    def argv(self, b, root):
        return [os.path.join(root, "bin", "java"), "-cp", b.hello_dir, "Hello"]

    def env(self, b, root):
        env = dict(os.environ)
        for k in ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH"):
            env.pop(k, None)
        return env

    def check(self, b, root, out):
        return out.strip() == "Hello"


class PythonImports(Workload):
    key, title, tree = "python", "Python start-up (stdlib image)", "py"
    about = (f"`{PYTHON} -S` with PYTHONHOME on the mount, the whole stdlib (encodings, "
             f"lib-dynload) from the image, importing {len(PY_MODULES)} modules")

    def mountpoint(self, b):
        # PYTHONHOME=<home> makes python look in <home>/lib/python3.11
        return os.path.join(b.work, "pyhome", "lib", "python3.11")

    def argv(self, b, root):
        code = ("import sys, os\nimport " + ", ".join(PY_MODULES) +
                "\nassert os.__file__.startswith(" + repr(root) + "), os.__file__\n"
                "print('ok', len(sys.modules))")
        return [PYTHON, "-S", "-c", code]

    def env(self, b, root):
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        env["PYTHONHOME"] = os.path.join(b.work, "pyhome")
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        return env

    def check(self, b, root, out):
        return out.startswith("ok ")


class Walk(Workload):
    key, title, tree = "walk", "Small-files walk", "walk"

    def __init__(self, src):
        self.src = src
        self.about = f"`find -type f -exec cat {{}} +` over an image of {src}"

    def argv(self, b, root):
        return ["sh", "-c", f"find '{root}' -type f -exec cat {{}} + >/dev/null"]


# ---------------------------------------------------------------- the bench

class Bench:
    def __init__(self, args):
        self.mode = args.mode
        self.quick = args.mode == "quick"
        self.work = os.path.abspath(args.work)
        self.build = os.path.abspath(args.build)
        self.out = os.path.abspath(args.out)
        prof = PROFILES[args.profile]
        self.profile = args.profile
        self.delay = args.delay or prof["delay"]
        self.channels = args.channels or prof["channels"]
        self.bw = args.bw if args.bw is not None else prof["bw"]
        # compressed cairn images (lz4hc, zstd; default and ordered + prefetch)
        self.compressed = args.compressed or not self.quick
        self.runs = args.runs or (3 if self.quick else 5)
        self.only = set(args.only.split(",")) if args.only else set()
        self.only_systems = set(args.systems.split(",")) if args.systems else set()
        self.rebuild = args.rebuild
        self.res = Resources(self.work)
        self.cairn = Cairn(os.path.join(self.build, "cairn"), self.work)
        self.formats = _fmt_table(self.cairn)
        self.results = {"mode": self.mode, "runs": self.runs, "delay": self.delay,
                        "channels": self.channels, "bw": self.bw, "profile": self.profile, "skipped": [], "failures": [],
                        "workloads": {}, "builds": {}, "rw": {}, "files": {}, "slow": []}
        # a system slower than this per cycle gets no further runs in that workload
        self.slow_limit = 8.0 if self.quick else 20.0
        self.started = now()
        self.results["load_start"] = open("/proc/loadavg").read().split()[:3]
        self.dev = os.path.join(self.work, "dev")
        self.imgdir = os.path.join(self.work, "img")
        self.host_warm = []
        self._versions = {}
        for d in ("img", "img-direct", "dev", "mnt", "src", "logs", "trace", "hello"):
            os.makedirs(os.path.join(self.work, d), exist_ok=True)

    # ---- infrastructure

    def skip(self, what, why):
        log(f"SKIP {what}: {why}")
        self.results["skipped"].append({"what": what, "why": why})

    def note_slow(self, what, n, limit):
        msg = (f"{n} run(s) only: one run took more than {limit:.0f} s, "
               f"so the rest were left out to keep the run short")
        log(f"SLOW {what}: {msg}")
        self.results["slow"].append({"what": what, "why": msg})

    def fail(self, what, why):
        log(f"FAIL {what}: {why}")
        self.results["failures"].append({"what": what, "why": str(why)})

    def drop_caches(self):
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        # Cold means the image is cold, not the host: re-read the host binaries and
        # libraries every workload uses (python, libc, find, cat...) so their disk reads
        # do not add noise to the image's figures.
        for path in self.host_warm:
            try:
                with open(path, "rb") as f:
                    while f.read(MiB):
                        pass
            except OSError:
                pass

    def find_host_files(self):
        bins = [PYTHON, shutil.which("find"), shutil.which("cat"), shutil.which("sh"),
                os.path.join(JDK, "bin", "java"), os.path.join(JDK, "lib", "server", "libjvm.so")]
        # the shared objects in the images pull host libraries (libssl, libsqlite3...)
        bins += [os.path.join(JDK, "lib", n) for n in
                 ("libjli.so", "libjava.so", "libjimage.so", "libzip.so", "libnio.so",
                  "libnet.so", "libverify.so")]
        for dirpath, _, names in os.walk(PYLIB):
            bins += [os.path.join(dirpath, n) for n in names if ".so" in n]
        files = set(b for b in bins if b and not b.startswith((JDK, PYLIB)))
        p = run(["ldd"] + [b for b in bins if b and os.path.isfile(b)], check=False)
        for m in re.finditer(r"=> (/\S+)|^\s+(/\S+)", p.stdout, re.M):
            lib = m.group(1) or m.group(2)
            if not lib.startswith((JDK, PYLIB)) and os.path.isfile(lib):
                files.add(os.path.realpath(lib))
        self.host_warm = sorted(files)

    def start_delayfs(self):
        exe = os.path.join(self.build, "bench", "delayfs")
        if not os.access(exe, os.X_OK):
            raise BenchError(f"{exe} not built (make all)")
        logpath = os.path.join(self.work, "logs", "delayfs.log")
        with open(logpath, "a") as logf:
            p = subprocess.Popen([exe, self.imgdir, self.dev, "-f", "-o",
                                  f"delay={self.delay},channels={self.channels},"
                                  f"bw={self.bw}"],
                                 stdout=logf, stderr=logf)
        p.logpath = logpath
        self.res.add_proc(p)
        self.res.wait_mount(self.dev, p)
        self.delayfs_proc = p

    def dev_reset(self):
        with open(os.path.join(self.dev, ".delayfs"), "w") as f:
            f.write("reset\n")

    def dev_counters(self):
        with open(os.path.join(self.dev, ".delayfs")) as f:
            return {k: int(v) for k, v in (line.split() for line in f if line.strip())}

    def img_path(self, tree, fmt):
        return os.path.join(self.imgdir, f"{tree}.{fmt}")

    def image_for(self, system, tree):
        if system.direct:
            return self.img_path(tree, system.fmt)
        return os.path.join(self.dev, f"{tree}.{system.fmt}")

    def run_workload(self, wl, root):
        p = run(wl.argv(self, root), check=False, timeout=300, env=wl.env(self, root),
                cwd=self.work)
        if p.returncode != 0 or not wl.check(self, root, p.stdout):
            tail = " | ".join((p.stderr or p.stdout).strip().splitlines()[-3:])
            raise BenchError(f"{wl.key} exited {p.returncode}: {tail}")

    # ---- preparation

    def check_peers(self):
        have_fs = open("/proc/filesystems").read()
        for fs in ("squashfs", "erofs"):
            if fs not in have_fs:
                run(["modprobe", fs], check=False)
        have_fs = open("/proc/filesystems").read()
        self.kernel_fs = {fs: fs in have_fs for fs in ("squashfs", "erofs")}
        for fs, ok in self.kernel_fs.items():
            if not ok:
                self.skip(f"kernel {fs}", "not in /proc/filesystems and modprobe failed")
        self.tools = {t: shutil.which(t) is not None
                      for t in ("mksquashfs", "mkfs.erofs", "squashfuse_ll", "fuse-overlayfs",
                                "gnuplot", "javac")}
        pkg = {"mksquashfs": "squashfs-tools", "mkfs.erofs": "erofs-utils",
               "squashfuse_ll": "squashfuse", "fuse-overlayfs": "fuse-overlayfs",
               "gnuplot": "gnuplot-nox", "javac": "default-jdk-headless"}
        for t, ok in self.tools.items():
            if not ok:
                self.skip(t, f"not installed (Debian package {pkg[t]}; scripts/deps.sh bench)")

    def systems(self):
        """Read-only systems of this mode, in table order (cairn first)."""
        s = []
        if self.cairn.mount_ok:
            s.append(CairnFs("cairn", "cairn"))
            # The same image without digest checking (issue 14: verification
            # on by default must cost at most 5% of cold start, in one run).
            s.append(CairnFs("cairn verify=none", "cairn", ["verify=none"]))
            if self.cairn.order_ok:
                s.append(CairnFs("cairn ordered + prefetch", "cairn-ordered", ["prefetch"]))
                # The same traces as a profile of the image as built: no rebuild.
                s.append(CairnFs("cairn + profile (no rebuild)", "cairn",
                                 [f"prefetch={self.profile}"]))
            for z in ZCODECS if self.compressed else ():
                s.append(CairnFs(f"cairn {z}", f"cairn-{z}"))
                if self.cairn.order_ok:
                    s.append(CairnFs(f"cairn {z} ordered + prefetch", f"cairn-{z}-ordered",
                                     ["prefetch"]))
            for key, (label, _) in ZORDERED_EXTRA.items() if self.compressed else ():
                if self.cairn.order_ok:
                    s.append(CairnFs(f"cairn {label} ordered + prefetch",
                                     f"cairn-{key}-ordered", ["prefetch"]))
        if self.tools["mkfs.erofs"] and self.kernel_fs["erofs"]:
            s.append(KernelFs("kernel erofs", "erofs", "erofs"))
            if not self.quick:
                s.append(KernelFs("kernel erofs lz4hc", "erofs-lz4hc", "erofs"))
        if self.tools["mksquashfs"] and self.kernel_fs["squashfs"]:
            s.append(KernelFs("kernel squashfs", "sqfs", "squashfs"))
            if not self.quick:
                s.append(KernelFs("kernel squashfs zstd", "sqfs-zstd", "squashfs"))
        if self.tools["mksquashfs"] and self.tools["squashfuse_ll"]:
            s.append(SquashfuseLL("squashfuse_ll", "sqfs"))
            if not self.quick:
                s.append(SquashfuseLL("squashfuse_ll zstd", "sqfs-zstd"))
        return s

    def formats_needed(self, read_only=True):
        keys = []
        if self.cairn.mkfs_ok:
            keys.append("cairn")
            if self.compressed:
                keys += [f"cairn-{z}" for z in ZCODECS]
        if self.tools["mksquashfs"]:
            keys += ["sqfs"] + ([] if self.quick else ["sqfs-zstd"])
        if self.tools["mkfs.erofs"]:
            keys += ["erofs"] + ([] if self.quick else ["erofs-lz4hc"])
        return keys

    def warm_tree(self, src):
        """Read the tree once so every builder finds it in the page cache."""
        run(["sh", "-c", f"find '{src}' -type f -size +0 -exec cat {{}} + >/dev/null"],
            check=False, timeout=1800)

    def tool_version(self, tool):
        if tool not in self._versions:
            argv = {"mksquashfs": ["mksquashfs", "-version"],
                    "mkfs.erofs": ["dpkg-query", "-W", "-f=${Version}", "erofs-utils"]}[tool]
            out = run(argv, check=False).stdout.splitlines()
            self._versions[tool] = re.sub(r"[^\w.-]+", "_", out[0] if out else "unknown")[:40]
        return self._versions[tool]

    def tree_signature(self, src):
        """Files, bytes and newest mtime of a tree: a changed tree gets fresh images."""
        if os.path.basename(src).startswith("files-"):
            return "generated"
        n = size = newest = 0
        for dirpath, _, names in os.walk(src):
            for name in names:
                try:
                    st = os.lstat(os.path.join(dirpath, name))
                except OSError:
                    continue
                n, size, newest = n + 1, size + st.st_size, max(newest, int(st.st_mtime))
        return f"{n}-{size}-{newest}"

    def cache_path(self, tree, src, fmt):
        sig = self.tree_signature(src)
        return os.path.join(TREE_CACHE, "images",
                            f"{tree}.{fmt.key}.{self.tool_version(fmt.tool)}.{sig}")

    def build_images(self, tree, src, fmts, cached=False):
        """Build each image once (source tree warm), record time and size.

        Peer images that take minutes on a busy 2-core machine (compressed ones, and every
        peer image of a generated tree when `cached`) are kept in TREE_CACHE between runs,
        keyed by tool version and tree signature; a reused image reports the build time
        measured when it was built, marked as such. --rebuild builds everything afresh."""
        rows = self.results["builds"].setdefault(tree, {"src": src, "rows": {}})["rows"]
        warmed = False
        for key in fmts:
            fmt = self.formats[key]
            out = self.img_path(tree, key)
            if os.path.exists(out):
                os.unlink(out)
            cache = None
            if fmt.peer and (cached or key in ("sqfs-zstd", "erofs-lz4hc")):
                cache = self.cache_path(tree, src, fmt)
                if not self.rebuild and os.path.exists(cache) and \
                        os.path.exists(cache + ".json"):
                    with open(cache + ".json") as f:
                        rows[key] = json.load(f)
                    shutil.copyfile(cache, out)
                    log(f"reused {tree}.{key} built {rows[key].get('built')}")
                    continue
            if not warmed:
                self.warm_tree(src)
                warmed = True
            t0 = now()
            try:
                run(fmt.argv_fn(src, out), timeout=1800)
            except BenchError as e:
                self.fail(f"build {tree} with {fmt.label}", e)
                if os.path.exists(out):
                    os.unlink(out)
                continue
            rows[key] = {"label": fmt.label, "peer": fmt.peer, "secs": now() - t0,
                         "bytes": os.path.getsize(out)}
            log(f"built {tree}.{key}: {rows[key]['secs']:.1f}s "
                f"{rows[key]['bytes'] / MiB:.1f} MiB")
            if cache:
                os.makedirs(os.path.dirname(cache), exist_ok=True)
                shutil.copyfile(out, cache + ".tmp")
                os.replace(cache + ".tmp", cache)
                meta = dict(rows[key], built=datetime.datetime.now(
                    datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
                with open(cache + ".json", "w") as f:
                    json.dump(meta, f)

    def build_ordered(self, wl, src):
        """Record wl's first-read order with `-o trace`, rebuild the image in that order."""
        trace = os.path.join(self.work, "trace", f"{wl.tree}.order")
        mnt = wl.mountpoint(self)
        try:
            # Two traced cold runs, concatenated: a page only one run touched is
            # still hot (mkfs keeps each range's first appearance).
            parts = []
            for i in range(TRACE_RUNS):
                part = f"{trace}.{i}"
                sysm = CairnFs("cairn trace", "cairn", [f"trace={part}"])
                self.drop_caches()
                h = sysm.mount(self, self.image_for(sysm, wl.tree), mnt)
                try:
                    self.run_workload(wl, mnt)
                finally:
                    sysm.umount(self, h, mnt)
                if not os.path.exists(part) or os.path.getsize(part) == 0:
                    raise BenchError("-o trace wrote no order file")
                parts.append(part)
            with open(trace, "w") as out_f:
                for part in parts:
                    with open(part) as in_f:
                        out_f.write(in_f.read())
            self.profile = trace
            out = self.img_path(wl.tree, "cairn-ordered")
            t0 = now()
            run(self.cairn.mkfs_argv(src, out, order=trace), timeout=900)
            rows = self.results["builds"][wl.tree]["rows"]
            rows["cairn-ordered"] = {"label": "cairn mkfs --order (trace)", "peer": False,
                                     "secs": now() - t0, "bytes": os.path.getsize(out)}
            for z in ZCODECS if self.compressed else ():
                out = self.img_path(wl.tree, f"cairn-{z}-ordered")
                t0 = now()
                run(self.cairn.mkfs_argv(src, out, order=trace, z=z), timeout=900)
                rows[f"cairn-{z}-ordered"] = {"label": f"cairn mkfs -z {z} --order (trace)",
                                              "peer": False, "secs": now() - t0,
                                              "bytes": os.path.getsize(out)}
            for key, (label, opts) in ZORDERED_EXTRA.items() if self.compressed else ():
                out = self.img_path(wl.tree, f"cairn-{key}-ordered")
                t0 = now()
                run(self.cairn.mkfs_argv(src, out, order=trace, extra=opts), timeout=900)
                rows[f"cairn-{key}-ordered"] = {
                    "label": f"cairn mkfs {' '.join(opts)} --order (trace)", "peer": False,
                    "secs": now() - t0, "bytes": os.path.getsize(out)}
            with open(trace) as f:
                self.results.setdefault("traces", {})[wl.tree] = sum(1 for _ in f)
            return True
        except (BenchError, OSError) as e:
            self.fail(f"ordered cairn image for {wl.key}", e)
            return False

    # ---- read-only workloads

    def cycle(self, wl, sysm, src=None):
        """One cold run (caches dropped, fresh mount and daemon), one warm repeat
        and, with src, one warm run on the source directory beside it."""
        mnt = wl.mountpoint(self)
        image = self.image_for(sysm, wl.tree)
        self.drop_caches()
        drops = pagecache_drops()
        self.dev_reset()
        t0 = now()
        h = sysm.mount(self, image, mnt)
        r = {"mount": now() - t0}
        try:
            t0 = now()
            self.run_workload(wl, mnt)
            r["cold"] = now() - t0
            # The figure the lean-daemon goals name (issue 17): VmRSS right after
            # the cold run of a fresh mount, before the stats dump and the warm run.
            r["mem_cold"] = sysm.mem(h)
            if sysm.direct:
                c = sysm.own_counters(h) or {}
            else:
                c = self.dev_counters()
                self.dev_reset()
            r["req"], r["bytes"] = c.get("requests"), c.get("bytes")
            t0 = now()
            self.run_workload(wl, mnt)
            r["warm"] = now() - t0
            if not sysm.direct:
                r["warm_req"] = self.dev_counters()["requests"]
            r["mem"] = sysm.mem(h)
            # The floor for this warm run, taken right beside it so that load
            # drifts over the hour a benchmark takes hit both alike (measured
            # once at the end, it put systems with no daemon work at all in a
            # warm run 1.05-1.22x off). Its first run only re-warms the tree
            # the drop above cleared.
            if src:
                try:
                    r["plain"] = self.plain_dir(wl, src, 1)[0]
                except BenchError as e:
                    self.fail(f"{wl.key} on the plain directory", e)
            # Someone else's drop_caches between the cold run and here makes
            # the warm run a second cold one (shared machines drop every few
            # seconds); the report leaves such runs out of the warm figures.
            r["foreign_drops"] = pagecache_drops() - drops
        finally:
            sysm.umount(self, h, mnt)
        return r

    def plain_dir(self, wl, src, runs):
        """The same workload on the source directory, warm: the floor for warm runs.
        runs timed runs after one that only warms the cache."""
        if isinstance(wl, PythonImports):
            root = src  # PYTHONHOME=/usr finds /usr/lib/python3.11 itself
            env = dict(wl.env(self, root), PYTHONHOME="/usr")
            argv = wl.argv(self, root)
        else:
            root, env, argv = src, wl.env(self, src), wl.argv(self, src)
        times = []
        for i in range(runs + 1):
            t0 = now()
            p = run(argv, check=False, env=env, cwd=self.work)
            if p.returncode != 0:
                raise BenchError(f"plain {wl.key}: exit {p.returncode}")
            if i:  # the first run only warms the cache
                times.append(now() - t0)
        return times

    def bench_read_only(self, wl, src, extra_systems=()):
        log(f"== {wl.title}: {src}")
        os.makedirs(wl.mountpoint(self), exist_ok=True)
        fmts = self.formats_needed()
        self.build_images(wl.tree, src, fmts)
        if self.cairn.mount_ok:
            self.cairn.order_ok = self.build_ordered(wl, src)
        systems = [s for s in list(self.systems()) + list(extra_systems)
                   if os.path.exists(self.img_path(wl.tree, s.fmt)) and
                   (not self.only_systems or s.name.replace(" ", "_") in self.only_systems)]
        out = {"title": wl.title, "about": wl.about, "src": src, "systems": {}}
        self.results["workloads"][wl.key] = out
        runs = {s.name: [] for s in systems}
        broken, slow = set(), set()
        for i in range(self.runs):
            for s in round_order(systems, i):
                if s.name in broken or s.name in slow:
                    continue
                try:
                    r = self.cycle(wl, s, src)
                    r["round"] = i  # pairs the systems' runs (report.py paired_ratio)
                    runs[s.name].append(r)
                    if r["cold"] + r["warm"] > self.slow_limit:
                        slow.add(s.name)
                except (BenchError, OSError) as e:
                    broken.add(s.name)
                    self.fail(f"{wl.key} on {s.name}", e)
        for s in systems:
            if runs[s.name]:
                out["systems"][s.name] = {"peer": s.peer, "daemon": s.daemon,
                                          "direct": s.direct, "runs": runs[s.name]}
                if s.name in slow:
                    self.note_slow(f"{wl.key} on {s.name}", len(runs[s.name]), self.slow_limit)
                med = statistics.median(r["cold"] for r in runs[s.name])
                log(f"{wl.key} {s.name}: cold {med:.3f}s")
        out["plain_warm"] = [r["plain"] for rs in runs.values() for r in rs if "plain" in r]
        dropped = sum(1 for rs in runs.values() for r in rs if r.get("foreign_drops"))
        if dropped:
            log(f"{wl.key}: {dropped} warm run(s) after another process's drop_caches, "
                f"left out of the warm figures")

    # ---- seed 001 on the writable layer

    def bench_rw(self):
        log("== seed 001 on the writable layer")
        exe = os.path.join(self.build, "bench", "rw")
        size = "16M" if self.quick else "64M"
        base = os.path.join(self.work, "rw")
        targets = []  # (name, setup() -> (dir, teardown))

        def tmpfs():
            d = os.path.join(base, "tmpfs")
            os.makedirs(d, exist_ok=True)
            run(["mount", "-t", "tmpfs", "-o", "size=512m", "tmpfs", d])
            self.res.mounts.append(d)
            return d, lambda: self.res.umount(d)

        def overlay():
            for sub in ("lower", "upper", "work", "ovl"):
                os.makedirs(os.path.join(base, sub), exist_ok=True)
            d = os.path.join(base, "ovl")
            logpath = os.path.join(self.work, "logs", "fuse-overlayfs.log")
            with open(logpath, "a") as logf:
                p = subprocess.Popen(["fuse-overlayfs", "-f", "-o",
                                      f"lowerdir={base}/lower,upperdir={base}/upper,"
                                      f"workdir={base}/work", d], stdout=logf, stderr=logf)
            p.logpath = logpath
            self.res.add_proc(p)
            self.res.wait_mount(d, p)
            return d, lambda: self.res.umount(d, p)

        def cairn_empty(opts=()):
            def setup():
                d = os.path.join(base, "cairn-empty" + "-".join(("",) + tuple(opts)))
                os.makedirs(d, exist_ok=True)
                p = self.cairn.mount(self.res, None, d, list(opts), empty=True)
                return d, lambda: self.cairn.umount(self.res, d, p)
            return setup

        def cairn_tmp(opts=()):
            def setup():
                d = os.path.join(base, "cairn-tmp" + "-".join(("",) + tuple(opts)))
                os.makedirs(d, exist_ok=True)
                img = os.path.join(self.work, "img-direct", "tiny.cairn")
                p = self.cairn.mount(self.res, img, d, ["tmp=/tmp"] + list(opts))
                return os.path.join(d, "tmp"), lambda: self.cairn.umount(self.res, d, p)
            return setup

        targets.append(("kernel tmpfs", tmpfs, True))
        if self.tools["fuse-overlayfs"]:
            targets.append(("fuse-overlayfs over tmpfs", overlay, True))
        if self.cairn.mount_ok:
            targets.append(("cairn --empty", cairn_empty(), False))
            targets.append(("cairn -o tmp=/tmp", cairn_tmp(), False))
            # The kernel's write-back cache: ENOSPC comes at fsync()/close().
            targets.append(("cairn --empty -o writeback", cairn_empty(["writeback"]), False))
            targets.append(("cairn -o tmp=/tmp,writeback", cairn_tmp(["writeback"]), False))
        else:
            self.skip("cairn in the seed 001 test", self.cairn.why or "cairn mount unavailable")
        out = {"size": size, "systems": {}}
        self.results["rw"] = out
        for name, setup, peer in targets:
            rows = []
            try:
                d, teardown = setup()
                try:
                    for _ in range(self.runs):
                        p = run([exe, d, "--size", size], timeout=300)
                        rows.append({k: float(v) for k, v in
                                     (line.split() for line in p.stdout.splitlines())})
                finally:
                    teardown()
            except (BenchError, OSError) as e:
                self.fail(f"seed 001 on {name}", e)
            if rows:
                out["systems"][name] = {"peer": peer, "runs": rows}
                log(f"rw {name}: write {statistics.median(r['write_us'] for r in rows):.2f} us")

    # ---- open/mount time for big trees

    def make_tree(self, n):
        """n empty files, 1000 per directory; generated once and kept in TREE_CACHE."""
        d = os.path.join(TREE_CACHE, f"files-{n}")
        if os.path.exists(os.path.join(d, ".complete")):
            return d
        log(f"generating a tree of {n} files in {d} (once)")
        shutil.rmtree(d, ignore_errors=True)
        per = 1000
        for i in range(0, n, per):
            sub = os.path.join(d, f"d{i // per:04d}")
            os.makedirs(sub)
            for j in range(min(per, n - i)):
                os.close(os.open(os.path.join(sub, f"f{j:04d}"), os.O_CREAT | os.O_WRONLY, 0o644))
        open(os.path.join(d, ".complete"), "w").close()
        return d

    def bench_files(self, counts):
        log(f"== open/mount time for {counts} files")
        for n in counts:
            tree = f"files-{n}"
            try:
                src = self.make_tree(n)
            except OSError as e:
                self.fail(f"generating {n} files", e)
                continue
            fmts = [k for k in ("cairn", "sqfs", "erofs") if k in self.formats_needed()]
            # peer images of generated trees are reused in quick mode, and for 1M files
            # (minutes to build) in full mode too
            self.build_images(tree, src, fmts, cached=self.quick or n >= 1000000)
            systems = [s for s in self.systems()
                       if s.fmt in fmts and os.path.exists(self.img_path(tree, s.fmt))]
            mnt = os.path.join(self.work, "mnt", "files")
            os.makedirs(mnt, exist_ok=True)
            last = f"d{(n - 1) // 1000:04d}"
            probe = os.path.join(last, f"f{(n - 1) % 1000:04d}")
            out = {"n": n, "probe": probe, "systems": {}}
            self.results["files"][str(n)] = out
            for s in systems:
                rows = []
                try:
                    for _ in range(self.runs):
                        if rows and rows[-1]["mount"] + rows[-1]["lookup"] + \
                                rows[-1]["list"] > self.slow_limit / 4:
                            self.note_slow(f"{n} files on {s.name}", len(rows),
                                           self.slow_limit / 4)
                            break
                        self.drop_caches()
                        self.dev_reset()
                        t0 = now()
                        h = s.mount(self, self.image_for(s, tree), mnt)
                        r = {"mount": now() - t0}
                        try:
                            t0 = now()
                            os.stat(os.path.join(mnt, probe))
                            r["lookup"] = now() - t0
                            t0 = now()
                            r["entries"] = len(os.listdir(os.path.join(mnt, last)))
                            r["list"] = now() - t0
                            c = self.dev_counters()
                            r["req"], r["bytes"] = c["requests"], c["bytes"]
                            r["mem"] = s.mem(h)
                        finally:
                            s.umount(self, h, mnt)
                        rows.append(r)
                except (BenchError, OSError) as e:
                    self.fail(f"{n} files on {s.name}", e)
                if rows:
                    out["systems"][s.name] = {"peer": s.peer, "daemon": s.daemon, "runs": rows}

    # ---- reports from other parts of the project

    def other_sections(self):
        """Sections other parts of the project measure themselves (docs/bench/*.md), and
        the RAM fs's own in-process seed 001 test, fresh from this run."""
        if self.cairn.mkfs_ok and not self.quick:
            log("== cairn bench rw (RAM fs in-process)")
            p = run([self.cairn.path, "bench", "rw", "--runs", "3", "--files", "20000"],
                    check=False, timeout=600, cwd=self.work)
            if p.returncode == 0:
                self.results["ramfs_inproc"] = p.stdout
            else:
                self.fail("cairn bench rw", (p.stderr or p.stdout).strip()[-300:])
        # bench/seed-read.sh (the IO stack's seed 000 reproduction) takes minutes; its
        # owner runs it and keeps docs/bench/io.md, which the report includes as is.

    # ---- the whole run

    def main(self):
        self.check_peers()
        self.find_host_files()
        self.start_delayfs()
        self.cairn.probe(self.res)
        if not self.cairn.mkfs_ok:
            self.skip("cairn", self.cairn.why)
        elif not self.cairn.mount_ok:
            self.skip("cairn mount (read-only workloads)", self.cairn.why)
        want = lambda key: not self.only or key in self.only
        if want("java") and self.tools["javac"]:
            run(["javac", "-d", os.path.join(self.work, "hello"), os.path.join(HERE, "Hello.java")])
            self.hello_dir = os.path.join(self.work, "hello")
            self.bench_read_only(JavaHello(), JDK, self.extra_java())
        if want("python"):
            self.bench_read_only(PythonImports(), PYLIB)
        walk = "/usr/include/linux" if self.quick else "/usr/lib/node_modules"
        if not os.path.isdir(walk):
            walk = "/usr/include"
        if want("walk"):
            self.bench_read_only(Walk(walk), walk)
        if want("rw"):
            self.bench_rw()
        if want("files"):
            self.bench_files([1000, 100000] if self.quick else [1000, 100000, 1000000])
        if want("other"):
            self.other_sections()
        self.results["elapsed"] = now() - self.started
        self.results["load_end"] = open("/proc/loadavg").read().split()[:3]
        self.results["finished"] = datetime.datetime.now(
            datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

    def extra_java(self):
        """cairn reading the image from tmpfs with its own -o delay (full mode only)."""
        if self.quick or not self.cairn.mount_ok:
            return []
        return [CairnFs(f"cairn, own -o delay={self.delay} (no delayfs)", "cairn",
                        direct_delay=self.delay)]


def round_order(systems, i):
    """The order of round i: round-robin, so drift over time spreads evenly, and every
    other round backwards, so no system always runs right after another: neighbours
    swap places round by round. (Before, cairn ran first in every round of make bench,
    after the last peer's round, and cairn verify=none always right after it; their
    ratio is issue 14's goal.)"""
    return list(systems) if i % 2 == 0 else list(systems)[::-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("quick", "full"), default="quick")
    ap.add_argument("--work", required=True, help="scratch dir on tmpfs (run.sh makes it)")
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", required=True, help="BENCHMARKS.md goes here, charts in bench/")
    ap.add_argument("--profile", choices=sorted(PROFILES), default="latency",
                    help="emulated disk: latency (1 ms), network (1 ms + 100 MB/s), "
                         "remote (20 ms + 100 MB/s, 8 channels)")
    ap.add_argument("--delay", default="", help="per-request delay (overrides the profile)")
    ap.add_argument("--channels", type=int, default=0, help="(overrides the profile)")
    ap.add_argument("--bw", type=int, default=None,
                    help="MB/s of the emulated disk's shared link (overrides the profile)")
    ap.add_argument("--compressed", action="store_true",
                    help="also compressed cairn images in quick mode (full mode has them)")
    ap.add_argument("--runs", type=int, default=0, help="runs per figure (quick 3, full 5)")
    ap.add_argument("--only", default="",
                    help="comma-separated subset: java,python,walk,rw,files,other")
    ap.add_argument("--systems", default="",
                    help="comma-separated names of the read-only systems to run, spaces "
                         "written as _ (cairn,cairn_verify=none); default: all")
    ap.add_argument("--rebuild", action="store_true",
                    help="build every peer image afresh (no images reused from earlier runs)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench: needs root (loop devices, mounts, drop_caches)")

    def on_signal(sig, frame):
        raise KeyboardInterrupt(f"signal {sig}")
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    b = Bench(args)
    rc = 0
    try:
        b.main()
    except KeyboardInterrupt:
        log("interrupted: cleaning up, no report written")
        rc = 130
    except BenchError as e:
        log(f"error: {e}")
        rc = 1
    finally:
        b.res.cleanup()
    if rc == 0:
        import report
        report.write(b.results, args.out, b)
        log(f"done in {b.results['elapsed']:.0f}s: {os.path.join(args.out, 'BENCHMARKS.md')}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
