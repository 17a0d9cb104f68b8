#!/usr/bin/env python3
"""`nazar serve --tls-cert/--tls-key` (docs/serve.md "TLS"): a self-signed certificate made
here with the openssl command; Python's ssl client, verifying it:

  - GET /health and POST /v1/translate over HTTPS answer as over HTTP (the same translation),
    keep-alive included; the listening line says https;
  - plain HTTP to the TLS port gets no answer and does not disturb the server; a client that
    opens a connection and never starts the handshake is closed at --header-timeout-ms;
  - a key that does not match the certificate, or a missing file, is a one-line error naming
    the file, exit 1, before listening;
  - the explorer's own origin over TLS (https://HOST) is admitted, http://HOST is not.
Skipped (exit 77) without the openssl command.
Usage: test_tls.py path/to/nazar"""
import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_util  # noqa: E402

NAZAR = os.path.abspath(sys.argv[1])
check = serve_util.check


def make_cert(work, name):
    cert, key = os.path.join(work, name + ".pem"), os.path.join(work, name + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key, "-out", cert],
                   check=True, capture_output=True)
    return cert, key


def main():
    if not shutil.which("openssl"):
        print("skipped: no openssl command")
        return 77
    with tempfile.TemporaryDirectory(prefix="nazar_serve_tls_") as work:
        models = serve_util.make_models(NAZAR, work)
        cert, key = make_cert(work, "a")
        _, other_key = make_cert(work, "b")
        server = serve_util.Server(NAZAR, ["--model", models["bahdanau"], "--tls-cert", cert,
                                           "--tls-key", key, "--header-timeout-ms", "1000"])
        try:
            check(server.line.startswith("nazar serve: listening on https://127.0.0.1:"),
                  "the listening line says https", server.line)
            ctx = ssl.create_default_context(cafile=cert)
            conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=ctx, timeout=60)
            conn.request("GET", "/health")
            r = conn.getresponse()
            health = json.loads(r.read())
            check(r.status == 200 and health["status"] == "ok", "GET /health over TLS", health)
            body = json.dumps({"text": ["a b c", "d e f"], "beam": 3})
            conn.request("POST", "/v1/translate", body, {"Content-Type": "application/json"})
            r = conn.getresponse()
            got = json.loads(r.read())
            check(r.status == 200, "POST /v1/translate over TLS, on the same connection", got)
            plain = serve_util.Server(NAZAR, ["--model", models["bahdanau"]])
            try:
                _, _, want = plain.translate(json.loads(body))
            finally:
                plain.kill()
            texts = lambda res: [t["hypotheses"][0]["text"] for t in res["translations"]]
            check(texts(got) == texts(want), "the same translations as over HTTP",
                  (texts(got), texts(want)))
            # The explorer served over HTTPS posts with its own origin, https://HOST (it was
            # once compared with http://HOST and refused); http://HOST is another origin.
            for scheme, want in (("https", 200), ("http", 403)):
                conn.request("POST", "/v1/translate", json.dumps({"text": ["a b"]}),
                             {"Content-Type": "application/json",
                              "Origin": "%s://127.0.0.1:%d" % (scheme, server.port)})
                r = conn.getresponse()
                r.read()
                check(r.status == want, "Origin %s://HOST over TLS: %d" % (scheme, want), r.status)
            conn.close()
            # Plain HTTP to the TLS port: a protocol error, the connection closed, no answer.
            with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
                s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                try:
                    data = s.recv(4096)
                except (ConnectionError, socket.timeout):
                    data = b""
            check(not data.startswith(b"HTTP/"), "plain HTTP to the TLS port gets no answer", data)
            # A connection that never starts its handshake is closed by the header timeout.
            t0 = time.monotonic()
            with socket.create_connection(("127.0.0.1", server.port), timeout=15) as s:
                try:
                    closed = s.recv(1) == b""
                except ConnectionError:
                    closed = True
                except socket.timeout:
                    closed = False
            check(closed and time.monotonic() - t0 < 12,
                  "a silent connection is closed (%.1f s)" % (time.monotonic() - t0))
            conn = http.client.HTTPSConnection("localhost", server.port, context=ctx, timeout=60)
            conn.request("GET", "/health")
            check(conn.getresponse().status == 200, "the server still answers", "")
            conn.close()
            check(server.terminate() == 0, "exit 0 after SIGTERM", server.stderr)
        finally:
            server.kill()
        for args, what in (((cert, other_key), "does not match the certificate"),
                           ((cert, os.path.join(work, "none.key")), "cannot use private key")):
            p = subprocess.run([NAZAR, "serve", "--model", models["bahdanau"], "--port", "0",
                                "--tls-cert", args[0], "--tls-key", args[1]],
                               capture_output=True, text=True, timeout=120)
            err = p.stderr.strip()
            check(p.returncode == 1 and what in err and len(err.splitlines()) == 1,
                  "a bad key: one-line error '... %s', exit 1" % what, (p.returncode, err))
    return serve_util.summary()


if __name__ == "__main__":
    sys.exit(main())
