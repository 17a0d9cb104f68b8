#!/usr/bin/env python3
"""Load test of `nazar serve` (docs/serve.md), loopback only, bounded in time; not part of
`make test`.

For each mode (cross-request batching on: the default 5 ms window; off: --batch-requests 1) and
each number of concurrent clients (1, 8, 64), wrk (Debian's `wrk`) sends POST /v1/translate
with short sentences for --seconds; the table gives requests/s, p50 and p99 latency and the
failed requests (non-2xx answers and socket errors: must be 0 below the queue limit). Then one
longer run (--rss-seconds, 64 clients, batching on) samples the server's resident memory every
5 s: it must stay flat.

Usage: scripts/serve-load.py --nazar build/nazar [--model M] [--seconds 10] [--rss-seconds 60]
       [--threads 1] [--beam 4]
Without --model, the built-in dates task is trained first (`nazar demo`, about a minute).
Prints a Markdown table and the load average before and after (the figures depend on it)."""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "serve"))
import serve_util  # noqa: E402

SENTENCES = ["14 juillet 1989", "3 March 2001", "le 2 mai 1968", "May 17, 1999",
             "28/02/1975", "1 janvier 2000", "9 Oct 1954", "dec 25 1990"]

LUA = r"""
local bodies = {%s}
local n = 0
request = function()
  n = n + 1
  return wrk.format("POST", "/v1/translate", {["Content-Type"] = "application/json"},
                    bodies[(n %% #bodies) + 1])
end
"""


def to_ms(value, unit):
    return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[unit]


def run_wrk(port, clients, seconds, script):
    out = subprocess.run(["wrk", "-t", str(min(clients, 2)), "-c", str(clients), "-d",
                          "%ds" % seconds, "--timeout", "30s", "--latency", "-s", script,
                          "http://127.0.0.1:%d" % port],
                         capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    lat = {p: to_ms(v, u) for p, v, u in
           re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s|m)\s*$", out, re.M)}
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    failed = (int(non2xx.group(1)) if non2xx else 0) + (sum(map(int, sock.groups())) if sock else 0)
    total = int(re.search(r"(\d+) requests in", out).group(1))
    return {"rps": rps, "p50": lat.get("50"), "p99": lat.get("99"), "failed": failed,
            "total": total}


def cpu_seconds(pid):
    """User + system CPU time of a process so far (all its threads)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def print_table(rows, modes, clients):
    """The table of the load runs, then batched against unbatched at each client count."""
    print("| mode | clients | requests/s | p50 ms | p99 ms | failed / requests | mean batch "
          "| requests per server CPU-second |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for mode, c, r, mb in rows:
        print("| %s | %d | %.1f | %.1f | %.1f | %d / %d | %.1f | %.0f |" % (
            mode, c, r["rps"], r["p50"], r["p99"], r["failed"], r["total"], mb,
            r["total"] / r["cpu"] if r["cpu"] > 0 else 0))
    by = {(m, c): r for m, c, r, _ in rows}
    for mode, _ in modes[:2]:
        for c in clients:
            b, u = by.get((mode, c)), by.get(("unbatched", c))
            if b and u and b["cpu"] > 0 and u["cpu"] > 0:
                print("\n%s vs unbatched at %d clients: %.2fx requests/s, %.2fx requests per "
                      "CPU-second" % (mode, c, b["rps"] / u["rps"],
                                      (b["total"] / b["cpu"]) / (u["total"] / u["cpu"])), end="")
    print()


def rss_run(nazar, model, threads, seconds, script):
    """The server's RSS every 5 s over a run at 64 clients, and its growth."""
    server = serve_util.Server(nazar, ["--model", model, "--threads", str(threads)])
    try:
        samples = []
        proc = subprocess.Popen(["wrk", "-t", "2", "-c", "64", "-d", "%ds" % seconds,
                                 "--timeout", "30s", "-s", script,
                                 "http://127.0.0.1:%d" % server.port],
                                stdout=subprocess.PIPE, text=True)
        start = time.monotonic()
        while proc.poll() is None:
            time.sleep(5)
            if proc.poll() is None:
                samples.append((round(time.monotonic() - start), rss_kb(server.proc.pid)))
        out = proc.stdout.read()
        non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        total = re.search(r"(\d+) requests in", out).group(1)
        print("\nRSS over a %d s run at 64 clients (%s requests, %s non-2xx): %s" %
              (seconds, total, non2xx.group(1) if non2xx else 0,
               ", ".join("%ds %.1f MB" % (t, kb / 1024) for t, kb in samples)))
        half = len(samples) // 2
        if half >= 1:
            print("growth over the second half (%d s to %d s): %+.1f MB; over the whole run: "
                  "%+.1f MB" % (samples[half][0], samples[-1][0],
                                (samples[-1][1] - samples[half][1]) / 1024,
                                (samples[-1][1] - samples[0][1]) / 1024))
    finally:
        server.terminate()
        server.kill()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nazar", required=True)
    ap.add_argument("--model")
    ap.add_argument("--seconds", type=int, default=10, help="per table row; 0: no table")
    ap.add_argument("--rss-seconds", type=int, default=60)
    ap.add_argument("--threads", type=int, default=1, help="the server's --threads")
    ap.add_argument("--beam", type=int, default=4)
    ap.add_argument("--clients", default="1,8,64")
    a = ap.parse_args()
    if not shutil.which("wrk"):
        sys.exit("serve-load: wrk is not installed (scripts/install-deps.sh test installs it)")
    nazar = os.path.abspath(a.nazar)
    work = tempfile.mkdtemp(prefix="nazar_serve_load_")
    model = a.model
    if not model:
        print("training the dates demo model (nazar demo) ...", file=sys.stderr)
        subprocess.run([nazar, "demo", "--color", "never", "--seconds", "60", "--out-dir", work],
                       check=True, stdout=subprocess.DEVNULL)
        model = os.path.join(work, "demo.safetensors")
    script = os.path.join(work, "post.lua")
    bodies = ", ".join('[[{"text": ["%s"], "beam": %d}]]' % (s, a.beam) for s in SENTENCES)
    with open(script, "w") as f:
        f.write(LUA % bodies)

    load_before = open("/proc/loadavg").read().split()[:3]
    rows = []
    clients = [int(c) for c in a.clients.split(",")] if a.seconds > 0 else []
    modes = (("batched, 5 ms window", []), ("batched, no window", ["--batch-window-ms", "0"]),
             ("unbatched", ["--batch-requests", "1"]))
    for mode, flags in modes if clients else ():
        server = serve_util.Server(nazar, ["--model", model, "--threads", str(a.threads)] + flags)
        try:
            server.request("POST", "/v1/translate", {"text": SENTENCES})  # warm up
            for c in clients:
                m0 = server.metrics()
                cpu0 = cpu_seconds(server.proc.pid)
                r = run_wrk(server.port, c, a.seconds, script)
                r["cpu"] = cpu_seconds(server.proc.pid) - cpu0
                m = server.metrics()
                n = m["nazar_batch_requests_count"] - m0["nazar_batch_requests_count"]
                mean_batch = (m["nazar_batch_requests_sum"] - m0["nazar_batch_requests_sum"]) / n \
                    if n else 0
                rows.append((mode, c, r, mean_batch))
                print("%-22s %3d clients: %8.1f req/s  p50 %8.1f ms  p99 %8.1f ms  failed %d "
                      "(%d requests)" % (mode, c, r["rps"], r["p50"], r["p99"], r["failed"],
                                         r["total"]), file=sys.stderr)
        finally:
            server.terminate()
            server.kill()

    if rows:
        print_table(rows, modes, clients)
    if a.rss_seconds > 0:
        rss_run(nazar, model, a.threads, a.rss_seconds, script)
    load_after = open("/proc/loadavg").read().split()[:3]
    print("\nload average before: %s, after: %s; %d cores; server --threads %d" %
          (" ".join(load_before), " ".join(load_after), os.cpu_count(), a.threads))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
