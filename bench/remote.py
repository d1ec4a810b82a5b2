#!/usr/bin/env python3
"""Remote images: Java Hello and Python start-up, cold, from nginx on 127.0.0.1.

nginx serves the images from tmpfs with `limit_rate` (100 MB/s per connection;
but nginx lets the first 100 MB of each request through unthrottled, so it holds
back only curl's whole-image request: docs/bench/remote13.md). So the link is
emulated where the latency is: cairn's own delay layer adds 20 ms to every HTTP
request and moves at most 100 MiB/s over all connections together (-o
delay=20ms,delay_rate=100M sits above the http device), and curl runs with
--limit-rate 100M. nginx's access.log is a timeline: end time, duration, bytes, range. Side by side, round-robin, in one run:
  http, empty disk cache   drop_caches, a fresh mount with an empty cache_dir
  http, warm disk cache    drop_caches, a fresh mount with the cache of the run before
  http, shipped profile    the plain image with the traced run's profile published
                           beside it (URL.profile), an empty cache_dir
  curl, then run           what users do today: curl the whole image (+20 ms for its
                           one request), then mount the copy and run
  local file, 20 ms        the image file mounted with -o delay=20ms,delay_rate=100M
  local file               the image file, no delay (the "local image" of the goals)
and the first two again on an image ordered by a traced run (mkfs --order) and
mounted with -o prefetch (the hot prefix is read at mount, in parallel ranges).
Times are mount + workload (the mount call returns once the mount is up).

usage: bench/remote.py [--build build] [--runs 3] [--only java,python] [--out FILE]
                      [--variants empty,warm,...] [--opts max_io=4m,...]
                      [--mkfs "--granule 32K"]
--variants runs a subset (to profile one comparison; never with --out): a warm
variant without its empty one is primed by one untimed run first. --opts adds
mount options to the http variants (to compare a setting; never with --out).
--mkfs adds options to the plain image's mkfs (the ordered image's too: a
publisher's choice, such as a finer digest granule; never with --out).
Needs root (drop_caches, mounts). Prints a markdown table per workload, with the
issue's goals; --out also writes them to FILE (docs/bench/remote.md, which
bench/report.py includes in docs/BENCHMARKS.md as is).
"""
import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

JDK = "/usr/lib/jvm/java-17-openjdk-amd64"
PYLIB = "/usr/lib/python3.11"
PYTHON = "/usr/bin/python3.11"
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import PY_MODULES  # noqa: E402  (one list of modules for every benchmark)

DELAY = "20ms"
RATE = "100m"   # nginx's limit_rate: per connection, unthrottled below 100 MB
LINK = "100M"   # the emulated link: delay_rate= of the mounts, curl's --limit-rate


def sh(argv, **kw):
    return subprocess.run(argv, check=True, **kw)


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Nginx:
    def __init__(self, work, root):
        self.dir = os.path.join(work, "nginx")
        os.makedirs(os.path.join(self.dir, "tmp"), exist_ok=True)
        self.port = free_port()
        d = self.dir
        conf = f"""daemon on; user root; worker_processes 1; pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 256; }}
http {{
  log_format timed '$msec $request_time $body_bytes_sent "$http_range"';
  access_log {d}/access.log timed;  # a timeline: end time, duration, bytes, range
  client_body_temp_path {d}/tmp/b; proxy_temp_path {d}/tmp/p; fastcgi_temp_path {d}/tmp/f;
  uwsgi_temp_path {d}/tmp/u; scgi_temp_path {d}/tmp/s;
  keepalive_requests 100000;
  server {{ listen 127.0.0.1:{self.port}; root {root}; limit_rate {RATE}; }}
}}
"""
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write(conf)
        sh(["nginx", "-c", os.path.join(d, "nginx.conf"), "-p", d])
        time.sleep(0.3)

    def stop(self):
        try:
            with open(os.path.join(self.dir, "nginx.pid")) as f:
                os.kill(int(f.read()), 15)
        except OSError:
            pass


def read_stats(path):
    for _ in range(600):
        if os.path.exists(path) and os.path.getsize(path):
            break
        time.sleep(0.05)
    out = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.partition(" ")
            try:
                out[k] = int(v.split()[0])
            except (ValueError, IndexError):
                pass
    return out


class Bench:
    def __init__(self, args):
        self.cairn = os.path.abspath(os.path.join(args.build, "cairn"))
        self.opts = "," + args.opts if args.opts else ""
        self.mkfs = args.mkfs.split()
        self.work = tempfile.mkdtemp(prefix="cairn-bench-remote.", dir="/dev/shm")
        os.chmod(self.work, 0o755)
        self.www = os.path.join(self.work, "www")
        os.makedirs(self.www)
        self.mounts = []
        self.hello = os.path.join(self.work, "hello")
        os.makedirs(self.hello)
        sh(["javac", "-d", self.hello, os.path.join(HERE, "Hello.java")],
           stdout=subprocess.DEVNULL)

    def mount(self, image, mnt, opts):
        os.makedirs(mnt, exist_ok=True)
        self.mounts.append(mnt)
        sh([self.cairn, "mount", "-o", opts, image, mnt])

    def umount(self, mnt):
        sh(["fusermount3", "-u", mnt])
        self.mounts.remove(mnt)

    def cleanup(self):
        for m in list(self.mounts):
            subprocess.run(["fusermount3", "-u", m], stderr=subprocess.DEVNULL)
        shutil.rmtree(self.work, ignore_errors=True)

    def workload(self, key, root):
        if key == "java":
            env = {k: v for k, v in os.environ.items()
                   if k not in ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "CLASSPATH")}
            argv = [os.path.join(root, "bin", "java"), "-cp", self.hello, "Hello"]
            want = "Hello"
        else:
            env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
            env["PYTHONHOME"] = os.path.join(self.work, "pyhome")
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            argv = [PYTHON, "-S", "-c", "import " + ", ".join(PY_MODULES) + "\nprint('ok')"]
            want = "ok"
        out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout
        assert out.strip() == want, out

    def mnt_of(self, key):
        if key == "python":
            return os.path.join(self.work, "pyhome", "lib", "python3.11")
        return os.path.join(self.work, "m-" + key)

    def ordered(self, key, src, image):
        """Trace a cold run from the local image, rebuild the image in that order."""
        trace = os.path.join(self.work, key + ".order")
        mnt = self.mnt_of(key)
        drop_caches()
        self.mount(image, mnt, f"trace={trace}")
        self.workload(key, mnt)
        self.umount(mnt)
        for _ in range(600):
            if os.path.exists(trace) and os.path.getsize(trace):
                break
            time.sleep(0.05)
        out = os.path.join(self.www, key + "-ordered.cairn")
        sh([self.cairn, "mkfs", "-q"] + self.mkfs + ["--order", trace, src, out])
        # The plain image again, its publisher's profile (the same trace) beside it.
        os.link(image, os.path.join(self.www, key + "-shipped.cairn"))
        shutil.copy(trace, os.path.join(self.www, key + "-shipped.cairn.profile"))
        return out

    def one(self, key, variant, url, image, dc):
        mnt = self.mnt_of(key)
        stats = os.path.join(self.work, "stats")
        if os.path.exists(stats):
            os.unlink(stats)
        if variant in ("empty", "oempty", "pempty"):
            shutil.rmtree(dc + {"empty": "", "oempty": "-o", "pempty": "-p"}[variant],
                          ignore_errors=True)
        drop_caches()
        t0 = time.monotonic()
        if variant in ("empty", "warm"):
            self.mount(url, mnt, f"delay={DELAY},delay_rate={LINK},cache_dir={dc},stats={stats}{self.opts}")
        elif variant in ("oempty", "owarm"):
            # noprofile: the hot prefix alone, not a profile learnt in the cache dir
            self.mount(url.replace(".cairn", "-ordered.cairn"), mnt,
                       f"delay={DELAY},delay_rate={LINK},cache_dir={dc}-o,prefetch,noprofile,"
                       f"stats={stats}{self.opts}")
        elif variant == "pempty":
            self.mount(url.replace(".cairn", "-shipped.cairn"), mnt,
                       f"delay={DELAY},delay_rate={LINK},cache_dir={dc}-p,stats={stats}{self.opts}")
        elif variant == "curl":
            time.sleep(0.020)  # the delay of its one request
            copy = os.path.join(self.work, "copy.cairn")
            sh(["curl", "-s", "-f", "--limit-rate", LINK, "-o", copy, url])
            self.mount(copy, mnt, f"stats={stats}")
        elif variant == "nodelay":
            self.mount(image, mnt, f"stats={stats}")
        else:
            self.mount(image, mnt, f"delay={DELAY},delay_rate={LINK},stats={stats}")
        self.workload(key, mnt)
        t = time.monotonic() - t0
        self.umount(mnt)
        s = read_stats(stats)
        if variant == "curl":
            os.unlink(os.path.join(self.work, "copy.cairn"))
        return t, s


VARIANTS = [("empty", "cairn http, empty disk cache"), ("warm", "cairn http, warm disk cache"),
            ("oempty", "cairn http, ordered + prefetch, empty disk cache"),
            ("owarm", "cairn http, ordered + prefetch, warm disk cache"),
            ("pempty", "cairn http, plain image + shipped profile, empty disk cache"),
            ("curl", "curl the whole image, then run"), ("local", "cairn local file, 20 ms delay"),
            ("nodelay", "cairn local file")]
REMOTE = ("empty", "warm", "oempty", "owarm", "pempty")


def main():
    # SIGTERM (bench/run.sh passes signals on) unwinds like an error: mounts and nginx go.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default="java,python")
    ap.add_argument("--out", default=None)
    ap.add_argument("--variants", default=",".join(v for v, _ in VARIANTS))
    ap.add_argument("--opts", default="",
                    help="more mount options for the http variants (to compare settings; "
                         "never with --out)")
    ap.add_argument("--mkfs", default="",
                    help="more mkfs options for the images (to compare a layout choice, "
                         "such as --granule 32K; never with --out)")
    args = ap.parse_args()
    picked = args.variants.split(",")
    if set(picked) - {v for v, _ in VARIANTS} or \
            (args.out and (len(picked) < len(VARIANTS) or args.opts or args.mkfs)):
        ap.error("--variants: a subset of " + ",".join(v for v, _ in VARIANTS) +
                 " (the full set with --out)")
    b = Bench(args)
    ng = None
    try:
        trees = {"java": JDK, "python": PYLIB}
        for key in args.only.split(","):
            image = os.path.join(b.www, key + ".cairn")
            sh([b.cairn, "mkfs", "-q"] + b.mkfs + [trees[key], image])
            b.ordered(key, trees[key], image)
        ng = Nginx(b.work, b.www)
        load0 = os.getloadavg()
        started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        parts = []
        for key in args.only.split(","):
            image = os.path.join(b.www, key + ".cairn")
            url = f"http://127.0.0.1:{ng.port}/{key}.cairn"
            dc = os.path.join(b.work, "dc-" + key)
            res = {v: [] for v, _ in VARIANTS if v in picked}
            for warm, empty in (("warm", "empty"), ("owarm", "oempty")):
                if warm in picked and empty not in picked:
                    b.one(key, empty, url, image, dc)  # untimed: fills the cache
            for _ in range(args.runs):
                for v in res:  # round-robin: drift spreads evenly
                    res[v].append(b.one(key, v, url, image, dc))
            parts.append(report(key, os.path.getsize(image), res, trace_bytes(b, key)))
        load = (f"Run of {started}, {args.runs} runs per figure (medians, min–max), load "
                f"average {load0[0]:.2f} at the start and {os.getloadavg()[0]:.2f} at the end "
                f"(other work shares this machine).")
        text = "\n".join(parts) + "\n" + load + "\n"
        print(text)
        if args.out:
            keep = ""  # a hand-written "## History" section at the end stays
            if os.path.exists(args.out):
                with open(args.out) as f:
                    old = f.read()
                keep = old[old.find("\n## History"):] if "\n## History" in old else ""
            with open(args.out, "w") as f:
                f.write(HEADER + "\n" + text + keep)
    finally:
        if ng:
            ng.stop()  # before cleanup(), which removes its pid file
        b.cleanup()


def trace_bytes(b, key):
    """Bytes the workload reads: the sum of its traced first reads (the floor)."""
    n = 0
    with open(os.path.join(b.work, key + ".order")) as f:
        for line in f:
            parts = line.rsplit(" ", 2)
            if len(parts) == 3:
                n += int(parts[2])
    return n


def med(xs):
    return statistics.median(xs)


HEADER = """# Remote images (issue 13)

`bench/remote.py`, run by `make bench` before the rest (or by hand: `python3
bench/remote.py --runs 3 --out docs/bench/remote.md`).
nginx serves the images from tmpfs on 127.0.0.1 with `limit_rate 100m`; its limiter lets
rate × (seconds elapsed + 1) bytes through, so it never throttles a response under 100 MB
and holds back only curl's whole-image download. The kernel here has no netem, so the
link is emulated in cairn's own delay layer: **20 ms for every HTTP request and 100 MiB/s
shared by all connections** (`-o delay=20ms,delay_rate=100M` sits right above the http
device, one delay channel per connection: 4), and curl runs with `--limit-rate 100M`. Cold = `drop_caches` and a fresh mount; times are mount +
workload. Side by side, round-robin:

- *empty disk cache*: a fresh `cache_dir`; *warm disk cache*: the cache the run before left,
  with the profile that run learnt there (a mount with `cache_dir` learns one by default:
  the warm run pushes it, reading it from the disk cache, and prefetches it
  only when it takes at most a quarter of the cache budget: Python's, not Java's);
- *ordered + prefetch*: the image rebuilt with `mkfs --order` from one traced cold run,
  mounted with `-o prefetch,noprofile` (the hot prefix alone);
- *plain image + shipped profile*: the plain image with that traced run published beside
  it as `URL.profile` (what a publisher can do without rebuilding the image), a fresh
  `cache_dir`: the mount fetches the profile while the image opens and prefetches it;
- *curl the whole image, then run*: what users do today (`curl -o`, plus 20 ms for its one
  request, then a local mount);
- *cairn local file, 20 ms delay*: the same image as a local file through the same delay
  and link (one channel, as the local benchmarks use); *cairn local file*: no delay.

"MiB read by the workload" is the sum of its traced first reads, the floor of
docs/FORMAT.md; "fetched × read" divides the HTTP body bytes by it. Daemon RSS is the
peak (VmHWM) at unmount; the segment cache budget is 64 MiB. Daemon CPU is user + system
time of all its threads (getrusage at unmount): on a shared machine wall times drift with
the other load, CPU time much less.
"""


def report(key, size, res, read):
    title = {"java": "Java Hello (JDK 17 image)", "python": "Python start-up (stdlib image)"}[key]
    out = [f"\n## {title}, {size / 2**20:.0f} MiB image, "
           f"{read / 2**20:.1f} MiB read by the workload (traced)\n"]
    out.append("| variant | s (min–max) | × curl, then run | × local file (no delay) | HTTP requests | MiB fetched "
          "| fetched × read | daemon RSS MiB | daemon CPU ms |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    curl = med([t for t, _ in res["curl"]]) if "curl" in res else None
    local = med([t for t, _ in res["nodelay"]]) if "nodelay" in res else None
    for v, label in VARIANTS:
        if v not in res:
            continue
        ts = [t for t, _ in res[v]]
        ss = [s for _, s in res[v]]
        req = med([s.get("http_requests", 0) for s in ss]) if v in REMOTE else ""
        fetched = med([s.get("http_bytes", 0) for s in ss]) if v in REMOTE else None
        rss = med([s.get("rss_peak_kb", 0) for s in ss]) / 1024
        cpu = [s["cpu_user_us"] + s["cpu_sys_us"] for s in ss if "cpu_user_us" in s]
        cpu = f"{med(cpu) / 1000:.0f}" if cpu else ""
        fx = f"{fetched / read:.2f}" if fetched is not None and read else ""
        fm = f"{fetched / 2**20:.1f}" if fetched is not None else (
            f"{size / 2**20:.1f}" if v == "curl" else "")
        xc = f"{med(ts) / curl:.2f}×" if curl else ""
        xl = f"{med(ts) / local:.2f}×" if local else ""
        out.append(f"| {label} | {med(ts):.3f} ({min(ts):.3f}–{max(ts):.3f}) | {xc} "
              f"| {xl} | {req} | {fm} | {fx} | {rss:.1f} | {cpu} |")
    out.append("")
    if len(res) == len(VARIANTS):
        out.append(goals(res, read, curl, local))
    return "\n".join(out)


def goals(res, read, curl, local):
    """The issue's goals, for the plain and the ordered image."""
    lines = []
    for cold, warm, what in (("empty", "warm", "plain image"),
                             ("oempty", "owarm", "ordered + prefetch")):
        c = med([t for t, _ in res[cold]])
        w = med([t for t, _ in res[warm]])
        fetched = med([s.get("http_bytes", 0) for _, s in res[cold]])
        rss = max(med([s.get("rss_peak_kb", 0) for _, s in res[v]]) for v in (cold, warm)) / 1024
        lines.append(f"- Goals, {what}: cold empty cache / curl-then-run {c / curl:.2f} "
                     f"(goal ≤ 0.2), fetched / read {fetched / read:.2f} (goal ≤ 1.5), "
                     f"warm cache / local file {w / local:.2f} (goal ≤ 1.1), daemon RSS "
                     f"{rss:.1f} MiB (goal ≤ 32 + 64 MiB cache budget).")
    c = med([t for t, _ in res["pempty"]])
    fetched = med([s.get("http_bytes", 0) for _, s in res["pempty"]])
    lines.append(f"- Goals, plain image + shipped profile: cold empty cache / curl-then-run "
                 f"{c / curl:.2f} (goal ≤ 0.2), fetched / read {fetched / read:.2f} (goal ≤ 1.5); "
                 f"its warm run is the plain image's.")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
