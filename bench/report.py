# SPDX-License-Identifier: MIT
"""Turn one benchmark run (bench.py's results) into BENCHMARKS.md and PNG charts.

Every figure in the page comes from the run; nothing here is typed in by hand.
"""
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess

MiB = 1 << 20
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def cmd_out(argv):
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=30)
        return p.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def secs(x, unit="s"):
    if x is None:
        return "–"
    if unit == "ms":
        return f"{x * 1e3:.1f}"
    return f"{x:.3f}"


def spread(xs, unit="s"):
    """'median (min–max)' of a list of seconds."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return "–"
    return f"{secs(med(xs), unit)} ({secs(min(xs), unit)}–{secs(max(xs), unit)})"


def ratio(v, best):
    if v is None or not best:
        return "–"
    return f"{v / best:.2f}×"


def count(x):
    return "–" if x is None else f"{x:.0f}"


def mib(x):
    return "–" if x is None else f"{x / MiB:.1f}"


def run_mem(r, key="mem"):
    """A run's daemon memory as {'hwm', 'rss'} KiB, or None. Results written
    before bench/procmem.py hold the pair [VmHWM, VmRSS]."""
    m = r.get(key)
    if isinstance(m, (list, tuple)):
        return {"hwm": m[0], "rss": m[1]}
    return m or None


def mem_mib(runs):
    """Peak VmHWM over the runs, and the median VmRSS after them, MiB
    (bench/procmem.py)."""
    vals = [run_mem(r) for r in runs if run_mem(r)]
    if not vals:
        return "–"
    return (f"{max(v['hwm'] for v in vals) / 1024:.1f} / "
            f"{med([v['rss'] for v in vals]) / 1024:.1f}")


def rss_after_cold(runs):
    """Median VmRSS right after the cold run of a fresh mount, MiB: the figure the
    lean-daemon goals of issue 17 name (bench/procmem.py)."""
    vals = [run_mem(r, "mem_cold")["rss"] for r in runs if run_mem(r, "mem_cold")]
    return f"{med(vals) / 1024:.1f}" if vals else "–"


def rss_peak(runs):
    """Peak VmHWM over the runs (cold and warm), MiB."""
    vals = [run_mem(r)["hwm"] for r in runs if run_mem(r)]
    return f"{max(vals) / 1024:.1f}" if vals else "–"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


# ------------------------------------------------------------------ machine and method

def machine_info(r):
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = ""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    debian = open("/etc/debian_version").read().strip() if os.path.exists("/etc/debian_version") else "?"
    git = cmd_out(["git", "-C", REPO, "rev-parse", "--short", "HEAD"])
    dirty = cmd_out(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"])
    versions = {
        "kernel": platform.release(),
        "cpu": f"{cpu}, {os.cpu_count()} cores",
        "memory": mem,
        "Debian": debian,
        "cairn": f"{git}{' (with local changes)' if dirty else ''}",
        "mksquashfs": cmd_out(["mksquashfs", "-version"]).splitlines()[0:1],
        "mkfs.erofs": cmd_out(["mkfs.erofs", "--help"]).splitlines()[0:1],
        "squashfuse_ll": cmd_out(["squashfuse_ll", "--version"]).splitlines()[0:1],
        "fuse-overlayfs": [l for l in cmd_out(["fuse-overlayfs", "--version"]).splitlines()
                           if "fuse-overlayfs" in l][0:1],
        "libfuse": cmd_out(["pkg-config", "--modversion", "fuse3"]),
        "java": cmd_out([os.path.join("/usr/lib/jvm/java-17-openjdk-amd64/bin/java"),
                         "-version"]).splitlines()[0:1],
        "python": cmd_out(["/usr/bin/python3.11", "--version"]),
    }
    if r.get("load_start"):
        versions["load average"] = (f"{' '.join(r['load_start'])} at the start, "
                                    f"{' '.join(r.get('load_end', ['?']))} at the end "
                                    f"(other work shares this machine)")
    lines = []
    for k, v in versions.items():
        if isinstance(v, list):
            v = v[0] if v else "not installed"
        if k == "mkfs.erofs" and v and "usage" in v:
            v = cmd_out(["dpkg-query", "-W", "-f=${Version}", "erofs-utils"]) or v
        lines.append(f"- {k}: {v}")
    return "\n".join(lines)


def link(r):
    """The shared link of the network profiles, when there is one."""
    bw = r.get("bw") or 0
    if not bw:
        return ""
    return (f"; then its bytes cross **one link of {bw} MB/s** shared by all requests, one"
            f" transfer at a time (profile `{r.get('profile')}`)")


def method(r):
    return f"""- **Emulated disk.** Every image sits in tmpfs and is read through `delayfs`
  (bench/delayfs), a FUSE layer serving the image files with `direct_io` (no page cache of
  its own), which adds a fixed **{r['delay']}** to every read request (absolute-deadline sleep,
  {r['channels']} channel(s): further requests queue){link(r)} and counts requests and bytes. Largest
  request 1 MiB. Kernel squashfs and EROFS read it through a loop device (`losetup -r
  --direct-io=on`), squashfuse_ll and cairn open the delayfs file. Every system pays the same
  price per request (Ingo Molnar's constant-delay method).
- **Cold** run: `echo 3 > /proc/sys/vm/drop_caches`, fresh loop device / mount / daemon,
  then the workload. The host's own binaries and libraries (python, libc, find, cat...) are
  re-read right after the drop, so only the image is cold. **Warm**: the same workload again
  on the same mount. Mount time is measured separately (until the mount appears).
- **{r['runs']} runs** per figure, systems taken round-robin so drift spreads evenly. Times
  are the median with the spread (min–max). Requests and bytes are the median of the cold
  runs as counted by delayfs, and include the mount's own reads.
- **Ratios** (×) are to the best peer (kernel squashfs/EROFS, squashfuse_ll) in the same
  run and column: below 1.00× beats every peer.
- **Floor**: requests × delay, the time the emulated disk alone costs. It has no noise,
  so it tells whether a change helped even when wall times drift: on a busy machine (see
  the load average above) the wall times are mostly CPU scheduling of the workload and the
  daemons, and the spread shows how much.
- Daemon memory of the FUSE daemons (squashfuse_ll, cairn; the kernel file systems have
  none), as bench/procmem.py reads it: "RSS after cold" is VmRSS right after the cold run
  of a fresh mount, before anything else runs on it (median of the runs: the figure the
  lean-daemon goals of issue 17 name); "peak" is VmHWM at the end of the warm run, the
  most over the runs."""


# ------------------------------------------------------------------ tables

def delay_s(text):
    """'1ms', '250us', '2s', '100ns' (bare: microseconds) -> seconds."""
    m = re.fullmatch(r"([\d.]+)(ns|us|ms|s)?", str(text).strip())
    if not m:
        return None
    return float(m.group(1)) * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2) or "us"]


def clean_warm(runs):
    """Warm times of the runs no other process's drop_caches turned into a second
    cold run (bench.py counts them); all of them if none is clean."""
    clean = [x["warm"] for x in runs if not x.get("foreign_drops")]
    return clean or [x["warm"] for x in runs]


def ro_table(w, delay=None):
    systems = w["systems"]
    stat = {}
    for name, s in systems.items():
        runs = s["runs"]
        stat[name] = {
            "cold": med([x["cold"] for x in runs]),
            "warm": med(clean_warm(runs)),
            "req": med([x["req"] for x in runs]),
            "bytes": med([x["bytes"] for x in runs]),
            "mount": med([x["mount"] for x in runs]),
        }
    peers = [n for n, s in systems.items() if s["peer"]]

    def best(key):
        vals = [stat[n][key] for n in peers if stat[n][key] is not None]
        return min(vals) if vals else None
    b_cold, b_warm, b_req, b_bytes = best("cold"), best("warm"), best("req"), best("bytes")
    plain = med(w.get("plain_warm", []))
    rows = []
    for name, s in systems.items():
        runs, st = s["runs"], stat[name]
        rows.append([
            f"**{name}**" if not s["peer"] else name,
            spread([x["cold"] for x in runs]), ratio(st["cold"], b_cold),
            spread(clean_warm(runs)), ratio(st["warm"], plain),
            spread([x["mount"] for x in runs], "ms"),
            count(st["req"]), ratio(st["req"], b_req),
            "–" if st["req"] is None or delay is None else f"{st['req'] * delay:.3f}",
            mib(st["bytes"]), ratio(st["bytes"], b_bytes),
            rss_after_cold(runs) if s["daemon"] else "–",
            rss_peak(runs) if s["daemon"] else "–",
        ])
    header = ["system", "cold s (min–max)", "cold ×best peer", "warm s (min–max)",
              "warm ×plain dir", "mount ms", "requests", "req ×best peer",
              "floor s (req × delay)", "MiB read",
              "MiB ×best peer", "daemon RSS MiB after cold", "daemon peak RSS MiB"]
    text = table(header, rows)
    if plain is not None:
        text += (f"\n\nPlain directory (the source tree on the host disk, warm): "
                 f"{spread(w['plain_warm'])} s.")
    return text, stat, b_cold, b_req, plain


def rw_table(rw):
    systems = rw.get("systems", {})
    if not systems:
        return "Not run."
    phases = ("write_us", "rewrite_us", "read_us")
    st = {n: {p: med([r[p] for r in s["runs"]]) for p in phases} for n, s in systems.items()}
    peers = [n for n, s in systems.items() if s["peer"]]
    best = {p: min((st[n][p] for n in peers), default=None) for p in phases}
    rows = []
    for n, s in systems.items():
        row = [f"**{n}**" if not s["peer"] else n]
        for p in phases:
            vals = [r[p] for r in s["runs"]]
            row += [f"{med(vals):.2f} ({min(vals):.2f}–{max(vals):.2f})", ratio(st[n][p], best[p])]
        rows.append(row)
    return (f"{rw['size']} in 4 KiB calls to one file (bench/rw): write, rewrite from offset 0, "
            f"read back. Microseconds per call, median (min–max).\n\n" +
            table(["system", "write µs", "×best peer", "rewrite µs", "×best peer", "read µs",
                   "×best peer"], rows))


def ramfs_inproc(r):
    out = r.get("ramfs_inproc")
    if not out:
        return ""
    return ("The same test on the RAM file system in-process, without FUSE "
            "(`cairn bench rw --runs 3 --files 20000`, output as printed):\n\n```\n" +
            out.strip() + "\n```\n")


def build_tables(builds):
    parts = []
    for tree, t in builds.items():
        rows_d = t["rows"]
        if not rows_d:
            continue
        peer_t = [r["secs"] for r in rows_d.values() if r["peer"] and r["secs"] is not None]
        peer_s = [r["bytes"] for r in rows_d.values() if r["peer"]]
        bt, bs = (min(peer_t) if peer_t else None), (min(peer_s) if peer_s else None)
        rows = [[f"**{r['label']}**" if not r["peer"] else r["label"],
                 ("–" if r["secs"] is None else f"{r['secs']:.2f}") +
                 (f" (built {r['built']})" if r.get("built") else ""),
                 ratio(r["secs"], bt), mib(r["bytes"]), ratio(r["bytes"], bs)]
                for r in rows_d.values()]
        parts.append(f"`{tree}` ({t['src']}):\n\n" +
                     table(["builder", "time s", "×best peer", "size MiB", "×best peer"], rows))
    return "\n\n".join(parts) if parts else "Not run."


def files_tables(files):
    parts = []
    for n, f in files.items():
        systems = f["systems"]
        if not systems:
            continue
        mounts = {k: med([r["mount"] for r in s["runs"]]) for k, s in systems.items()}
        lookups = {k: med([r["lookup"] for r in s["runs"]]) for k, s in systems.items()}
        peers = [k for k, s in systems.items() if s["peer"]]
        bm = min((mounts[k] for k in peers), default=None)
        bl = min((lookups[k] for k in peers), default=None)
        rows = []
        for k, s in systems.items():
            runs = s["runs"]
            rows.append([f"**{k}**" if not s["peer"] else k,
                         spread([r["mount"] for r in runs], "ms"), ratio(mounts[k], bm),
                         spread([r["lookup"] for r in runs], "ms"), ratio(lookups[k], bl),
                         spread([r["list"] for r in runs], "ms"),
                         count(med([r["req"] for r in runs])),
                         f"{med([r['bytes'] for r in runs]) / 1024:.0f}",
                         mem_mib(runs) if s["daemon"] else "–"])
        parts.append(f"{int(n):,} empty files, 1000 per directory; cold: mount, then `stat` of "
                     f"`{f['probe']}`, then list its directory:\n\n" +
                     table(["system", "mount ms", "×best peer", "first stat ms", "×best peer",
                            "list 1000 ms", "requests", "KiB read", "daemon RSS MiB"], rows))
    return "\n\n".join(parts) if parts else "Not run."


# ------------------------------------------------------------------ charts

def chart(w, path, title):
    """A bar per system: cold median, with min–max error bars."""
    if not shutil.which("gnuplot") or not w.get("systems"):
        return False
    data = path + ".dat"
    n = len(w["systems"])
    with open(data, "w") as f:
        for i, (name, s) in enumerate(w["systems"].items()):
            c = [r["cold"] for r in s["runs"]]
            label = name.replace('"', "'").replace(" (no delayfs)", "").replace(", ", "\\n")
            label = label.replace(" ordered + prefetch", "\\nordered+prefetch")
            f.write(f'{i} "{label}" {med(c):.4f} {min(c):.4f} {max(c):.4f} '
                    f'{0 if s["peer"] else 1}\n')
    plain = med(w.get("plain_warm", []))
    script = f"""
set terminal pngcairo size 1000,520 font "sans,10" noenhanced
set output "{path}"
set title "{title}"
set ylabel "seconds (median, min-max)"
set style fill solid 0.8 border -1
set boxwidth 0.6
set yrange [0:*]
set grid ytics
set key top left
set xtics rotate by -30 left font "sans,9"
set xrange [-0.6:{n - 0.4}]
"""
    plain_line = (f', {plain:.4f} with lines dt 2 lc "gray40" title "warm, plain directory"'
                  if plain is not None else "")
    script += (f'plot "{data}" using 1:($6==1?$3:1/0):xtic(2) with boxes lc "#2a7f62" title "cairn", '
               f'"" using 1:($6==0?$3:1/0) with boxes lc "#8a8f98" title "peers", '
               f'"" using 1:3:4:5 with yerrorbars lc "black" pt 0 notitle, '
               f'"" using 1:5:(sprintf("%.3f", $3)) with labels offset 0,0.8 notitle'
               f'{plain_line}\n')
    p = subprocess.run(["gnuplot"], input=script, text=True, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    os.unlink(data)
    return p.returncode == 0 and os.path.exists(path)


# ------------------------------------------------------------------ summary

def paired_ratio(a_runs, b_runs, key="cold"):
    """Median over the rounds both systems ran of a's figure over b's in that round,
    and how many rounds that was; (None, 0) for none. bench.py runs the systems of a
    round back to back (the order reversed every other round), so a round's two
    figures met the same machine; older results without rounds pair by position."""
    def by_round(runs):
        return {x.get("round", i): x.get(key) for i, x in enumerate(runs)}
    a, b = by_round(a_runs), by_round(b_runs)
    ratios = [a[k] / b[k] for k in a if a[k] and b.get(k)]
    return (statistics.median(ratios), len(ratios)) if ratios else (None, 0)


VERIFIED, UNVERIFIED = "cairn", "cairn verify=none"


def verify_cost(r):
    """Issue 14's goal: cold start verified against verify=none, same image, one run
    (at most 1.05). The figure is the paired ratio; the ratio of the medians (the
    tables' figures) is given beside it, and the warm runs' paired ratio (bytes are
    checked once, when they enter the cache: a warm run should cost nothing)."""
    parts = []
    for key, w in r["workloads"].items():
        s = w.get("systems", {})
        if VERIFIED not in s or UNVERIFIED not in s:
            continue
        on, off = s[VERIFIED]["runs"], s[UNVERIFIED]["runs"]
        p, n = paired_ratio(on, off)
        m_on, m_off = med([x.get("cold") for x in on]), med([x.get("cold") for x in off])
        if p is None or not m_off:
            continue
        pw, _ = paired_ratio(on, off, "warm")  # warm should cost nothing: no hashing
        parts.append(f"{w['title']} cold {p:.3f}× in {n} rounds (goal ≤ 1.05), "
                     f"medians {m_on:.3f} / {m_off:.3f} s = {m_on / m_off:.3f}×"
                     + ("" if pw is None else f", warm {pw:.3f}×"))
    if not parts:
        return []
    return [f"- Verification cost, **{VERIFIED}** against {UNVERIFIED}, the median of "
            "the rounds' ratios: "
            + "; ".join(parts) + "."]


def summary(r, stats):
    lines = []
    j = r["workloads"].get("java")
    if j and "java" in stats:
        st, b_cold, b_req, plain = stats["java"]
        peers = {n: st[n] for n, s in j["systems"].items() if s["peer"]}
        for name in [n for n, s in j["systems"].items() if not s["peer"]]:
            c = st[name]
            parts = [f"{n} {c['cold'] / p['cold']:.2f}× time, "
                     f"{(c['req'] or 0) / p['req']:.2f}× requests"
                     for n, p in peers.items() if p["cold"] and p["req"]]
            lines.append(f"- Java Hello cold, **{name}**: {c['cold']:.3f} s, "
                         f"{count(c['req'])} requests, {mib(c['bytes'])} MiB. Against "
                         + "; ".join(parts) + ".")
        for name in [n for n, s in j["systems"].items() if not s["peer"] and not s["direct"]]:
            c = st[name]
            erofs = st.get("kernel erofs")
            goals = [f"cold/warm {c['cold'] / c['warm']:.2f} (goal ≤ 1.3)"]
            if erofs:
                goals.append(f"cold/erofs cold {c['cold'] / erofs['cold']:.2f} (goal ≤ 0.5)")
            goals.append(f"{count(c['req'])} requests (goal < 30)")
            if plain:
                goals.append(f"warm/plain dir {c['warm'] / plain:.2f} (goal ≤ 1.05)")
            lines.append(f"- Goals, {name}: " + ", ".join(goals) + ".")
    for key in ("python", "walk"):
        w = r["workloads"].get(key)
        if not w or key not in stats:
            continue
        st, b_cold, b_req, plain = stats[key]
        best = min((n for n, s in w["systems"].items() if s["peer"]),
                   key=lambda n: st[n]["cold"], default=None)
        for name in [n for n, s in w["systems"].items() if not s["peer"]]:
            c = st[name]
            if best and c["cold"] and c["req"] is not None:
                lines.append(f"- {w['title']} cold, **{name}**: {c['cold']:.3f} s, "
                             f"{count(c['req'])} requests; {c['cold'] / st[best]['cold']:.2f}× "
                             f"the time of the best peer ({best}), "
                             f"{c['req'] / max(b_req or 1, 1):.2f}× the fewest peer requests.")
    # A learned profile on the image as built, against the image rebuilt in the
    # traced order (issue 17: at most 1.15x the time, 2x the requests).
    for key in ("java", "python", "walk"):
        w = r["workloads"].get(key)
        prof, ordered = "cairn + profile (no rebuild)", "cairn ordered + prefetch"
        if not w or key not in stats or prof not in w["systems"] or ordered not in w["systems"]:
            continue
        st = stats[key][0]
        p, o = st[prof], st[ordered]
        if p["cold"] and o["cold"] and p["req"] and o["req"]:
            lines.append(f"- {w['title']}, **{prof}** against {ordered}: "
                         f"{p['cold'] / o['cold']:.2f}× the time (goal ≤ 1.15), "
                         f"{p['req'] / o['req']:.2f}× the requests (goal ≤ 2).")
    lines += verify_cost(r)
    rw = r.get("rw", {}).get("systems", {})
    if "kernel tmpfs" in rw:
        t = {p: med([x[p] for x in rw["kernel tmpfs"]["runs"]])
             for p in ("write_us", "rewrite_us", "read_us")}
        for name, s in rw.items():
            if s["peer"]:
                continue
            v = {p: med([x[p] for x in s["runs"]]) for p in t}
            lines.append(f"- Seed 001, **{name}** per call vs kernel tmpfs: " + ", ".join(
                f"{ph} {v[k] / t[k]:.2f}× (goal ≤ 1.5×)"
                for ph, k in (("write", "write_us"), ("rewrite", "rewrite_us"),
                              ("read", "read_us"))) + ".")
    return "\n".join(lines) if lines else "- No cairn figures in this run (see Skipped)."


# ------------------------------------------------------------------ the page

def old_machine(out):
    """The Machine section of the page at out, for results measured before bench.py
    stored it."""
    try:
        text = open(os.path.join(out, "BENCHMARKS.md")).read()
    except OSError:
        return "- not recorded"
    m = re.search(r"^## Machine\n\n(.*?)\n\n## ", text, flags=re.S | re.M)
    return m.group(1).strip() if m else "- not recorded"


HISTORY = "<!-- bench:history -->"   # a page's text from here on stays on the page
CURRENT = "<!-- bench:current -->"   # ... until this, which resumes what is included
EXCERPT_LINES = 40                   # a page without markers longer than WHOLE_LINES
WHOLE_LINES = 80                     # gives this many lines


def bench_pages(out):
    """The pages other parts of the project write themselves (docs/bench/*.md), each as
    (name, title, the text the main page includes, what was left out). A page includes
    its text up to HISTORY (or a `## History` heading, which bench/remote.py keeps at the
    end of its page), resumed by CURRENT; the rest is linked. A page with neither is
    included whole up to WHOLE_LINES lines, else its first EXCERPT_LINES lines up to a
    heading, so a new page never buries the main one."""
    pages = []
    for d in (os.path.join(out, "bench"), os.path.join(REPO, "docs", "bench")):
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if name.endswith(".md"):
                pages.append((name, *page_current(open(os.path.join(d, name)).read())))
        if pages:
            break
    return pages


def page_current(text):
    lines = text.strip().splitlines()
    m = re.match(r"#+ (.*)", lines[0]) if lines else None
    title = m.group(1) if m else ""
    body = lines[1:] if m else lines
    marked = any(l.strip() in (HISTORY, CURRENT) or re.match(r"#+ History\s*$", l)
                 for l in body)
    if marked:
        keep, on = [], True
        for l in body:
            if l.strip() == HISTORY or re.match(r"#+ History\s*$", l):
                on = False
            elif l.strip() == CURRENT:
                on = True
            elif on:
                keep.append(l)
        return title, "\n".join(keep).strip(), "history"
    if len(body) <= WHOLE_LINES:
        return title, "\n".join(body).strip(), ""
    cut = EXCERPT_LINES
    heads = [i for i, l in enumerate(body) if l.startswith("#") and 0 < i <= EXCERPT_LINES]
    if heads:
        cut = heads[-1]
    return title, "\n".join(body[:cut]).strip(), "excerpt"


def other_sections(pages):
    """The pages' current parts, headings nested under ours, each with its link."""
    parts = []
    for name, title, text, left in pages:
        text = re.sub(r"^(#+) ", lambda h: "#" * min(len(h.group(1)) + 1, 6) + " ", text,
                      flags=re.M)
        more = {"history": f" Its earlier runs and how it got here stay on "
                           f"[that page](bench/{name}).",
                "excerpt": f" An excerpt: the whole page is [bench/{name}](bench/{name}) "
                           f"(it marks no current part with `{HISTORY}`).",
                "": ""}[left]
        parts.append(f"## {title or name[:-3]}\n\nFrom [bench/{name}](bench/{name}), written "
                     f"by its own benchmark.{more}\n\n{text}\n")
    return "\n".join(parts)


# ------------------------------------------------------------------ goals

GOAL = re.compile(r"\(goal\s*(≤|<=|<|≥|>=|>)\s*([\d.]+(?:\s*\+\s*[\d.]+)*)([^)]*)\)")
NUM = re.compile(r"-?\d+(?:\.\d+)?")


def goal_met(fig, op, target):
    return {"≤": fig <= target, "<=": fig <= target, "<": fig < target,
            "≥": fig >= target, ">=": fig >= target, ">": fig > target}[op]


def split_top(line, seps=",;"):
    """line cut at the separators outside parentheses."""
    out, depth, cur = [], 0, ""
    for ch in line:
        depth += ch == "("
        depth -= ch == ")"
        if ch in seps and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + [cur]


def last_sentence(para, n=90):
    t = re.split(r"(?<=[.:])\s+(?=[A-Z0-9`(])", para.strip())[-1].rstrip(":") if para else ""
    return t if len(t) <= n else t[:n - 1] + "…"


def goal_rows(text, where):
    """Every "FIGURE (goal OP TARGET)" of text (bullets and table cells, as report.py,
    bench/remote.py and the pages write them), and the rows of tables headed `| goal |`
    (goal, measured, verdict), as rows of the goals table: (where, what, figure, goal,
    met). Met is computed from the figure and the target when the text gives both. A
    goal is named by the heading above it (up to its first comma), then the bullet's
    lead or the table row, column and the sentence that introduces the table."""
    rows, head, header, para, intro, blank = [], "", [], "", "", False
    for line in text.splitlines():
        if line.startswith("#"):
            head = split_top(line.lstrip("#").strip(), ",")[0].strip()
            para = ""
            continue
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if set("".join(cells)) <= set("-: "):
                continue
            if not header:
                header, intro = cells, last_sentence(para)
                continue
            if header[0].lower() == "goal" and len(cells) >= 3:
                rows.append((where, head, cells[1], cells[0], cells[-1] or "–"))
                continue
            if "goal" in [h.lower() for h in header[1:]]:  # "| ... | figure | goal |"
                i = [h.lower() for h in header].index("goal")
                g = GOAL.search(f"(goal {cells[i]})") if i < len(cells) else None
                if g and i > 0:
                    what = "; ".join(x for x in (head, intro) if x)
                    rows.append(goal_row(where, what, f"{cells[0]}, {header[i - 1]}: "
                                         f"{cells[i - 1]}", g))
                continue
            for i, c in enumerate(cells):
                for g in GOAL.finditer(c):
                    col = header[i] if i < len(header) else ""
                    what = "; ".join(x for x in (head, intro) if x)
                    rows.append(goal_row(where, what, f"{cells[0]}, {col}: " + c[:g.start()], g))
            continue
        header = []
        if not line.strip():
            blank = True
            continue
        para, blank = (line if blank else para + " " + line), False
        if "(goal" not in line:
            continue
        lead = line.lstrip("-* ").split(":", 1)
        label = lead[0].replace("**", "") if len(lead) == 2 else ""
        for seg in split_top(lead[-1]):
            for g in GOAL.finditer(seg):
                what = f"{head}: {label}" if head and label else head or label
                rows.append(goal_row(where, what.strip(), seg[:g.start()], g))
    return rows


def goal_row(where, what, before, g):
    fig_text = before.strip().replace("**", "").rstrip(",; ")
    nums = NUM.findall(fig_text.split(":")[-1])
    target = sum(float(x) for x in NUM.findall(g.group(2)))
    met = "–"
    if nums:
        met = "met" if goal_met(float(nums[0]), g.group(1), target) else "**not met**"
    return (where, what, fig_text, f"{g.group(1)} {g.group(2)}{g.group(3)}".strip(), met)


def goals_table(summary_text, pages):
    """One row per goal a page states in words, one per group of computed goals (the
    same workload and system), with how many of them are met."""
    rows = goal_rows(summary_text, "[this run](#summary)")
    for name, title, text, _ in pages:
        m = re.search(r"issue (\d+)", title)
        where = f"[{'issue ' + m.group(1) if m else name[:-3]}](bench/{name})"
        rows += goal_rows(text, where)
    if not rows:
        return "- No goals stated by this run or the pages."
    out, groups = [], {}
    for where, what, fig, goal, met in rows:
        if met in ("met", "**not met**", "–") and goal[:1] in "≤<≥>":
            key = (where, what)
            if key not in groups:
                groups[key] = []
                out.append(key)
            groups[key].append(f"{fig} ({goal}){'' if met == 'met' else ' ✗'}")
            groups[key + ("n",)] = groups.get(key + ("n",), 0) + (met == "met")
        else:
            out.append([where, goal, fig, met])
    lines = []
    for o in out:
        if isinstance(o, tuple):
            n, k = len(groups[o]), groups[o + ("n",)]
            lines.append([o[0], o[1], "; ".join(groups[o]),
                          "met" if k == n else f"**{k} of {n} met**"])
        else:
            lines.append(o)
    return table(["issue / page", "goal", "latest figures (✗: not met)", "met"], lines)


def write(r, out, b, keep_json=False):
    """The page from results r into out/BENCHMARKS.md (and out/bench/results.json and
    the charts). The machine is described as it was when r was measured: bench.py's
    runs store it in r; for older results, the page being replaced still has it."""
    os.makedirs(os.path.join(out, "bench"), exist_ok=True)
    if "machine" not in r:
        r["machine"] = old_machine(out) if keep_json else machine_info(r)
    if not keep_json:
        with open(os.path.join(out, "bench", "results.json"), "w") as f:
            json.dump(r, f, indent=1, default=str)
    stats = {}
    sections = []
    charts = []
    for key, w in r["workloads"].items():
        text, st, b_cold, b_req, plain = ro_table(w, delay_s(r["delay"]))
        stats[key] = (st, b_cold, b_req, plain)
        png = "coldstart.png" if key == "java" else f"coldstart-{key}.png"
        if chart(w, os.path.join(out, "bench", png), f"{w['title']}: cold, {r['delay']} per request"):
            charts.append((w["title"], png))
            text += f"\n\n![{w['title']}, cold](bench/{png})"
        sections.append(f"### {w['title']}\n\n{w['about']}.\n\n{text}")
    now = r.get("finished") or \
        datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    skipped = "\n".join(f"- {s['what']}: {s['why']}" for s in r["skipped"]) or "- nothing"
    failed = "\n".join(f"- {s['what']}: {s['why']}" for s in r["failures"]) or "- nothing"
    traces = r.get("traces", {})
    trace_note = ""
    if traces:
        trace_note = ("\n\nThe ordered cairn images were rebuilt with `cairn mkfs --order` from "
                      "the orders recorded by `cairn mount -o trace=FILE` during two cold runs of "
                      "the same workload, joined (" +
                      ", ".join(f"{k}: {v} lines" for k, v in traces.items()) +
                      "), and are mounted with `-o prefetch`.")
    pages = bench_pages(out)
    summ = summary(r, stats)
    page = f"""# cairn benchmarks

Generated by `bench/run.sh {r['mode']}` (`make bench`) on {now}, in {r['elapsed']:.0f} s.
Do not edit: bench/report.py writes this page, and every figure in it comes from that run
(raw data: [bench/results.json](bench/results.json)), except the sections included from
docs/bench/*.md after the tables, which their own benchmarks write: each page's current
part is included (up to a `<!-- bench:history -->` line or a `## History` heading, resumed
by `<!-- bench:current -->`), its history stays on the page, linked; a page with neither
is included whole up to 80 lines, else as an excerpt of its first 40.

![Java Hello cold start per system](bench/coldstart.png)

## Summary

{summ}

## Goals

Every figure stated against a goal, in this run's summary and in the current part of
each docs/bench page, with a link to where it is stated. A page's goal appears here
when it is written as `FIGURE (goal ≤ TARGET)` (in a bullet or a table cell), in a
table with a `goal` column (the figure is the column before it), or as a row of a table
headed `| goal | measured | verdict |`, whose verdict is copied as written; met is
otherwise computed from the figure and the target.

{goals_table(summ, pages)}

## Read-only workloads{trace_note}

{chr(10).join(s + chr(10) + chr(10) for s in sections).rstrip()}

## Writable layer: the seed 001 test

{rw_table(r.get('rw', {}))}

{ramfs_inproc(r)}
## Image build time and size

One build each, source tree warm in the page cache, mksquashfs using all cores. Peer
images that take minutes to build (compressed ones, and those of the 1M-file tree) are kept
between runs for the same tool version and tree; for those the time is the one measured
when they were built, shown with its date (`bench.py --rebuild` builds them all afresh).

{build_tables(r['builds'])}

## Open/mount time for big trees

{files_tables(r['files'])}

## Machine

{r['machine']}

## Method

{method(r)}

{other_sections(pages)}
## Skipped

{skipped}

## Cut short

{chr(10).join(f"- {s['what']}: {s['why']}" for s in r.get('slow', [])) or "- nothing"}

## Failed

{failed}
"""
    page = re.sub(r"\n{3,}", "\n\n", page)
    with open(os.path.join(out, "BENCHMARKS.md"), "w") as f:
        f.write(page)


if __name__ == "__main__":
    # Rewrite the page from a run's results, without measuring again: after a change to
    # this file or to a docs/bench page (`python3 bench/report.py [RESULTS [OUT]]`).
    import sys
    res = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "docs", "bench", "results.json")
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(REPO, "docs")
    with open(res) as f:
        write(json.load(f), out, None, keep_json=True)
