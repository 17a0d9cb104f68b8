"""Shared helpers of the server tests (tests/serve/test_api.py, test_browser.py): tiny models
trained by `nazar train` on a reversal task, a server started on a free loopback port, and plain
HTTP calls. Standard library only."""
import http.client
import json
import os
import random
import select
import signal
import subprocess
import time

failures = []


def check(cond, what, detail=""):
    """Prints ok/FAIL for one check of a test script and remembers the failures."""
    print(("ok   " if cond else "FAIL ") + what + ("" if cond else ": " + str(detail)[:2000]))
    if not cond:
        failures.append(what)


def summary(passed="all checks passed"):
    """The script's exit code after its checks: 0, or 1 with the failed checks listed."""
    if failures:
        print("%d check(s) failed: %s" % (len(failures), ", ".join(failures)))
        return 1
    print(passed)
    return 0


def make_models(nazar, work, steps=150):
    """Trains two tiny word-level models on reversing 2-6 letters (a few seconds): a Bahdanau
    one and a Luong general one. Returns {"bahdanau": path, "luong": path}."""
    data = os.path.join(work, "train.tsv")
    r = random.Random(7)
    with open(data, "w") as f:
        for _ in range(400):
            s = [r.choice("abcdefgh") for _ in range(r.randint(2, 6))]
            f.write(" ".join(s) + "\t" + " ".join(reversed(s)) + "\n")
    models = {}
    for name, flags in (("bahdanau", []),
                        ("luong", ["--decoder", "luong", "--attention", "general"])):
        out = os.path.join(work, name)
        subprocess.run([nazar, "--threads", "1", "train", "--train", data, "--tokenizer", "word",
                        "--hidden-size", "16", "--embedding-size", "8", "--lr", "0.01",
                        "--max-steps", str(steps), "--save-dir", out, "--progress", "plain",
                        "--overwrite"] + flags,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        models[name] = os.path.join(out, "model.safetensors")
    return models


class Server:
    """`nazar serve ... --port 0` as a child process; port read from its first stdout line."""

    def __init__(self, nazar, args, startup_s=120):
        self.proc = subprocess.Popen([nazar, "--threads", "1", "serve", "--port", "0"] + args,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + startup_s
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.proc.stdout], [], [], max(left, 0))
            if not ready:
                self.kill()
                raise RuntimeError("nazar serve printed no listening line in %d s" % startup_s)
            c = os.read(self.proc.stdout.fileno(), 1)  # unbuffered: select sees all
            if not c:
                err = self.proc.stderr.read().decode(errors="replace")
                raise RuntimeError("nazar serve exited before listening: " + err.strip())
            line += c
        self.line = line.decode()
        # "nazar serve: listening on http://127.0.0.1:PORT/ (...)"
        self.port = int(self.line.split("127.0.0.1:")[1].split("/")[0])

    def request(self, method, path, body=None, headers=None, timeout=120):
        """(status, headers dict with lower-case names, body bytes); a new connection each time."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body).encode()
            elif isinstance(body, str):
                body = body.encode()
            headers = dict(headers or {})
            if method == "POST" and not any(k.lower() == "content-type" for k in headers):
                headers["Content-Type"] = "application/json"
            conn.request(method, path, body=body, headers=headers)
            res = conn.getresponse()
            data = res.read()
            return res.status, {k.lower(): v for k, v in res.getheaders()}, data
        finally:
            conn.close()

    def translate(self, req, timeout=120):
        status, headers, data = self.request("POST", "/v1/translate", req, timeout=timeout)
        return status, headers, json.loads(data)

    def metrics(self):
        status, _, data = self.request("GET", "/metrics")
        assert status == 200, status
        values = {}
        for line in data.decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values

    def wait_for(self, predicate, what, limit_s=120):
        """Polls /metrics until predicate(metrics) holds (no timing assumption, only a bound)."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            m = self.metrics()
            if predicate(m):
                return m
            time.sleep(0.02)
        raise AssertionError("metrics never showed " + what)

    def terminate(self, limit_s=120):
        """SIGTERM, then the exit code (the server must exit by itself)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(limit_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("nazar serve did not exit within %d s of SIGTERM" % limit_s)
        self.stderr = self.proc.stderr.read().decode(errors="replace")
        return rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
