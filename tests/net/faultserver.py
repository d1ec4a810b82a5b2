#!/usr/bin/env python3
"""A tiny HTTP/1.1 origin on 127.0.0.1 that serves one file with range requests
and misbehaves on purpose, for the http bdev's fault tests.

usage: faultserver.py PORT FILE PIDFILE [MODE...]

Modes (also re-read before every request from PIDFILE.mode, one per line, so a
test can change them mid-run):
  reset=N      every Nth request: close the connection without an answer
  error=N      every Nth request: 503
  short=N      every Nth request: announce the whole range, send half, close
  slow=BPS     send bodies at BPS bytes per second
  hang         accept, then never answer
  norange      ignore Range (200 with the whole file)
  etag=TAG     the ETag sent (default "v1"); changing it = the image changed
  size=BYTES   pretend the file is this long (truncate: smaller)
  crange=T     send T as the Content-Range of a single-range 206 ('_' stands for
               a space; {first}, {last} and {size} are filled in)
  mr=HOW       a multi-range request (bytes=a-b,c-d,...) is answered with
               multipart/byteranges unless HOW is: single (the first range
               alone), whole (200, the whole file), badboundary (the body's
               boundary is not the Content-Type's), badrange (a part names
               bytes one off what was asked), truncate (the last part cut
               short, then the connection closed), noclose (no close
               delimiter), reorder (the parts in reverse order: fine)
Each request is logged to stdout as "n range status".
"""
import http.server
import os
import socketserver
import sys
import threading
import time

PORT, FILE, PIDFILE = int(sys.argv[1]), sys.argv[2], sys.argv[3]
INITIAL = sys.argv[4:]
LOCK = threading.Lock()
COUNT = [0]


def modes():
    lines = INITIAL
    try:
        with open(PIDFILE + ".mode") as f:
            lines = f.read().split()
    except OSError:
        pass
    m = {}
    for item in lines:
        k, _, v = item.partition("=")
        m[k] = v
    return m


def every(m, key, n):
    k = int(m.get(key, "0") or 0)
    return k > 0 and n % k == 0


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        with LOCK:
            COUNT[0] += 1
            n = COUNT[0]
        m = modes()
        with open(FILE, "rb") as f:
            data = f.read()
        if "size" in m:
            data = data[: int(m["size"])]
        rng = self.headers.get("Range", "")
        print(n, rng, flush=True)
        if "hang" in m:
            time.sleep(3600)
            return
        if every(m, "reset", n):
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if every(m, "error", n):
            body = b"busy\n"
            self.send_response(503)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        size = len(data)
        if rng.startswith("bytes=") and "," in rng and "norange" not in m:
            return self.multi(m, data, rng[6:].split(","))
        status, first, last = 200, 0, size - 1
        if rng.startswith("bytes=") and "norange" not in m:
            a, _, b = rng[6:].partition("-")
            first = int(a)
            last = min(int(b) if b else size - 1, size - 1)
            if first >= size:
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % size)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        body = data[first : last + 1]
        self.send_response(status)
        self.send_header("ETag", '"%s"' % m.get("etag", "v1"))
        self.send_header("Content-Length", str(len(body)))
        if status == 206:
            crange = m.get("crange", "bytes_{first}-{last}/{size}").replace("_", " ")
            self.send_header("Content-Range", crange.format(first=first, last=last, size=size))
        self.end_headers()
        if every(m, "short", n):
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        bps = int(m.get("slow", "0") or 0)
        if bps:
            step = max(1, bps // 10)
            for i in range(0, len(body), step):
                self.wfile.write(body[i : i + step])
                self.wfile.flush()
                time.sleep(step / bps)
            return
        self.wfile.write(body)


    def multi(self, m, data, specs):
        size, how = len(data), m.get("mr", "")
        parts = []
        for s in specs:
            a, _, b = s.partition("-")
            parts.append((int(a), min(int(b), size - 1)))
        if how == "whole":
            self.send_response(200)
            self.send_header("ETag", '"%s"' % m.get("etag", "v1"))
            self.send_header("Content-Length", str(size))
            self.end_headers()
            self.wfile.write(data)
            return
        if how == "single":
            a, b = parts[0]
            self.send_response(206)
            self.send_header("ETag", '"%s"' % m.get("etag", "v1"))
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Range", "bytes %d-%d/%d" % (a, b, size))
            self.send_header("Content-Length", str(b - a + 1))
            self.end_headers()
            self.wfile.write(data[a : b + 1])
            return
        if how == "reorder":
            parts.reverse()
        bnd = "00000000000000000042"
        body = b""
        for i, (a, b) in enumerate(parts):
            ra = a + 1 if how == "badrange" and i == len(parts) - 1 else a
            rb = b + 1 if how == "badrange" and i == len(parts) - 1 else b
            body += ("\r\n--%s\r\nContent-Type: application/octet-stream\r\n"
                     "Content-Range: bytes %d-%d/%d\r\n\r\n"
                     % ("XX" + bnd if how == "badboundary" else bnd, ra, rb, size)).encode()
            body += data[ra : rb + 1]
        if how != "noclose":
            body += ("\r\n--%s--\r\n" % bnd).encode()
        self.send_response(206)
        self.send_header("ETag", '"%s"' % m.get("etag", "v1"))
        self.send_header("Content-Type", "multipart/byteranges; boundary=" + bnd)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if how == "truncate":
            self.wfile.write(body[: len(body) - 300])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        self.wfile.write(body)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


srv = Server(("127.0.0.1", PORT), Handler)
with open(PIDFILE, "w") as f:
    f.write("%d\n" % os.getpid())
srv.serve_forever()
