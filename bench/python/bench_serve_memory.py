"""Memory of `nazar serve` with one decoder against several: the server's peak RSS (VmHWM).

    python3 bench/python/bench_serve_memory.py NAZAR MODEL SOURCES \
        [--decoders 1 4] [--clients 4] [--sentences 32] [--beam 5] [--rounds 2]

For each decoder count, a fresh server (`--threads 2 --batch-requests 1`, so that each request is
one batch and concurrent requests run on different decoders) receives `rounds` times `clients`
concurrent POST /v1/translate requests of the first N lines of SOURCES; then its VmRSS idle and
its VmHWM (docs/decoding.md "Thread safety").
"""
import argparse
import json
import socket
import subprocess
import threading
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_mb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) / 1024
    return 0.0


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        out = json.load(r)
    if "translations" not in out and "results" not in out:
        raise RuntimeError(f"unexpected answer: {str(out)[:200]}")


def measure(a, decoders, src):
    port = free_port()
    cmd = [a.nazar, "serve", "--model", a.model, "--port", str(port), "--decoders", str(decoders),
           "--threads", "2", "--batch-requests", "1", "--max-sentences", str(len(src)),
           "--max-beam", str(a.beam)]
    server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(600):
            try:
                urllib.request.urlopen(base + "/health", timeout=1).read()
                break
            except OSError:
                if server.poll() is not None:
                    raise RuntimeError(f"the server stopped: {' '.join(cmd)}")
                time.sleep(0.1)
        idle = status_mb(server.pid, "VmRSS")
        body = {"text": src, "beam": a.beam}
        for _ in range(a.rounds):
            ts = [threading.Thread(target=post, args=(base + "/v1/translate", body))
                  for _ in range(a.clients)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        peak = status_mb(server.pid, "VmHWM")
    finally:
        server.terminate()
        server.wait()
    print(f"decoders {decoders}: idle {idle:.0f} MB, peak {peak:.0f} MB")
    return peak


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("nazar")
    p.add_argument("model")
    p.add_argument("sources")
    p.add_argument("--decoders", type=int, nargs="+", default=[1, 4])
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--sentences", type=int, default=32)
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--rounds", type=int, default=2)
    a = p.parse_args()
    with open(a.sources, encoding="utf-8") as f:
        src = [line.rstrip("\n") for line in f][: a.sentences]
    peaks = [measure(a, d, src) for d in a.decoders]
    if len(peaks) > 1:
        print(f"ratio {peaks[-1] / peaks[0]:.2f}")


if __name__ == "__main__":
    main()
