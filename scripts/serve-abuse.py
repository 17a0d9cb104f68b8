#!/usr/bin/env python3
"""A bounded abuse test of `nazar serve` (docs/serve.md "Under abuse"), on 127.0.0.1 only.

Starts `nazar serve --model MODEL --port 0`, then for --seconds at once: --clients keep-alive
clients that translate without pause (in 4 processes), --slow sockets that send one byte every
2 s (slowloris), and a /health prober (its own process) every 50 ms. Then it sends the largest
request the default limits allow, and compares the server's RSS before and after.

Checks (exit 1 if one fails): every /health answered within --health-ms; every client request
answered (200 or 503) within --answer-ms; the largest request's peak RSS (VmHWM) under
--peak-mb; RSS after the load within 10% (+8 MB) of before (after a 2 s warm-up). Prints requests/s, p50/p99, RSS.
Usage: serve-abuse.py NAZAR MODEL [--clients 200 --slow 130 --seconds 20]"""
import argparse
import http.client
import json
import multiprocessing as mp
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time


def start(nazar, model, extra):
    p = subprocess.Popen([nazar, "--threads", "1", "serve", "--model", model, "--port", "0"]
                         + extra, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    line = b""
    while not line.endswith(b"\n"):
        if not select.select([p.stdout], [], [], 120)[0]:
            p.kill()
            sys.exit("nazar serve did not start")
        c = os.read(p.stdout.fileno(), 1)
        if not c:
            sys.exit("nazar serve exited")
        line += c
    return p, int(line.decode().split("127.0.0.1:")[1].split("/")[0])


def rss_kb(pid, key="VmRSS"):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def client_proc(port, threads, until, out):
    lat, codes = [], {}
    lock = threading.Lock()
    body = json.dumps({"text": ["a b c d", "e f g"], "beam": 2}).encode()

    def loop():
        conn = None
        while time.monotonic() < until:
            t0 = time.monotonic()
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                conn.request("POST", "/v1/translate", body, {"Content-Type": "application/json"})
                r = conn.getresponse()
                r.read()
                code = r.status
                if r.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException):
                code = 0
                conn = None
            with lock:
                lat.append(time.monotonic() - t0)
                codes[code] = codes.get(code, 0) + 1
    ts = [threading.Thread(target=loop) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    out.put((lat, codes))


def prober(port, until, out):
    worst, n, failed = 0.0, 0, 0
    while time.monotonic() < until:
        t0 = time.monotonic()
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("GET", "/health")
            ok = c.getresponse().status == 200
            c.close()
        except (OSError, http.client.HTTPException):
            ok = False
        worst = max(worst, time.monotonic() - t0)
        n += 1
        failed += 0 if ok else 1
        time.sleep(0.05)
    out.put((worst, n, failed))


def slow_sockets(port, count, until):
    socks = []
    for _ in range(count):
        try:
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        except OSError:
            pass
    msg = b"POST /v1/translate HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    i = 0
    while time.monotonic() < until:
        for s in socks:
            try:
                s.send(msg[i % len(msg):i % len(msg) + 1])
            except OSError:
                pass
        i += 1
        time.sleep(2)
    for s in socks:
        s.close()


def largest_request(port):
    # 64 sentences of 255 tokens at beam 7: 64 x 7 x 515 = 230,720 hypothesis steps, under the
    # default --max-work of 262,144; no attention (its answer would exceed --max-answer-bytes).
    text = [" ".join("abcdefgh"[(i + k) % 8] for k in range(255)) for i in range(64)]
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", "/v1/translate", json.dumps({"text": text, "beam": 7}),
              {"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    return r.status


def report_load(results, a, failures):
    """The clients' latencies and statuses and the /health probes' of the load run, printed and
    checked against the bounds (a failure appended to failures)."""
    lat, codes, health = [], {}, None
    for r in results:
        if len(r) == 3:
            health = r
        else:
            lat += r[0]
            for k, v in r[1].items():
                codes[k] = codes.get(k, 0) + v
    lat.sort()
    n = len(lat)
    p50 = lat[n // 2] * 1000 if n else 0
    p99 = lat[min(n - 1, int(n * 0.99))] * 1000 if n else 0
    print("clients %d, slow sockets %d, %.0f s: %d requests, %.0f/s, p50 %.1f ms, p99 %.1f ms,"
          " max %.1f ms; statuses %s" % (a.clients, a.slow, a.seconds, n, n / a.seconds, p50,
                                         p99, lat[-1] * 1000 if n else 0, codes))
    print("/health: %d probes, worst %.1f ms, %d not 200" % (health[1], health[0] * 1000,
                                                            health[2]))
    if health[0] * 1000 > a.health_ms or health[2]:
        failures.append("/health slower than %g ms or failed" % a.health_ms)
    if set(codes) - {200, 503} or (n and lat[-1] * 1000 > a.answer_ms):
        failures.append("a client got no answer, or none within %g ms" % a.answer_ms)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("nazar")
    ap.add_argument("model")
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--slow", type=int, default=130)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--health-ms", type=float, default=100)
    ap.add_argument("--answer-ms", type=float, default=1000)
    ap.add_argument("--peak-mb", type=float, default=512)
    ap.add_argument("--no-rss", action="store_true",
                    help="report RSS without checking it (a sanitizer build's quarantine holds "
                         "freed memory)")
    a = ap.parse_args()
    proc, port = start(a.nazar, a.model, [])
    failures = []
    try:
        # Warm-up: the threads' stacks and allocator arenas exist before RSS is taken.
        q = mp.Queue()
        warm = mp.Process(target=client_proc, args=(port, a.clients // 4,
                                                    time.monotonic() + 2, q))
        warm.start()
        q.get(timeout=300)
        warm.join()
        time.sleep(0.5)
        rss0 = rss_kb(proc.pid)
        until = time.monotonic() + a.seconds
        procs = [mp.Process(target=client_proc, args=(port, a.clients // 4, until, q))
                 for _ in range(4)]
        procs.append(mp.Process(target=prober, args=(port, until, q)))
        for p in procs:
            p.start()
        slow = threading.Thread(target=slow_sockets, args=(port, a.slow, until))
        slow.start()
        results = [q.get(timeout=a.seconds + 300) for _ in procs]
        for p in procs:
            p.join()
        slow.join()
        report_load(results, a, failures)
        time.sleep(0.5)
        before_big = rss_kb(proc.pid)
        status = largest_request(port)
        peak = rss_kb(proc.pid, "VmHWM") / 1024
        print("largest default request: status %d, peak RSS %.0f MB" % (status, peak))
        if status != 200 or (peak > a.peak_mb and not a.no_rss):
            failures.append("the largest request: status %d, peak %.0f MB" % (status, peak))
        time.sleep(0.5)
        rss1 = rss_kb(proc.pid)
        print("RSS before %.1f MB, after the load %.1f MB, after the largest request %.1f MB"
              % (rss0 / 1024, before_big / 1024, rss1 / 1024))
        # The largest request leaves the model's decoding workspaces at their largest size
        # (reused by the next requests, as long as they belong to the model), so only the load is
        # checked.
        if before_big > rss0 * 1.1 + 8192 and not a.no_rss:
            failures.append("RSS after the load exceeds its value before by more than 10%")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
