#!/usr/bin/env python3
"""API tests of `nazar serve` (docs/serve.md) against servers started here on free loopback
ports, with two tiny models trained by the test:

  - every endpoint: /health, /v1/models (names, configs, vocabulary sizes), /metrics
    (Prometheus text), / (the embedded page), /v1/translate (same translations and scores as
    `nazar translate`; attention rows sum to 1; hard alignments are the rows' argmax; soft ones
    the token rows; n-best; the second model by name);
  - every error status with its one-line JSON message: 400 (malformed JSON, invalid UTF-8,
    unknown field, wrong type, too many sentences, too many tokens, n_best > beam, unknown
    model), 404, 405, 413, 503 with Retry-After (queue full), 504 (timeout);
  - batching: concurrent requests are each answered with their own translation (equal to the
    answer alone) and the metrics show batches of more than one request;
  - drain: SIGTERM with requests in flight answers all of them, refuses new connections and
    exits 0.
Usage: test_api.py path/to/nazar"""
import json
import os
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_util  # noqa: E402

NAZAR = os.path.abspath(sys.argv[1])
check = serve_util.check


# --timeout-ms of the servers whose test is not about the timeout: a bound that only a hung server
# reaches (the default 30 s could pass on a heavily loaded machine).
NO_TIMEOUT_MS = "600000"

SENTENCES = ["a b c", "d e f g h", "h g", "b b a c", "e", "c d e f a b", "g a", "f f f"]


def cli_translate(model, sentences, beam, n_best):
    """`nazar translate` with the n-best format: {(i, rank): (text, score)}."""
    import subprocess
    out = subprocess.run([NAZAR, "--threads", "1", "translate", "--model", model, "--beam",
                          str(beam), "--n-best", str(n_best), "--scores"],
                         input="\n".join(sentences) + "\n", capture_output=True, text=True,
                         check=True).stdout
    res = {}
    for line in out.splitlines():
        i, text, score = line.split(" ||| ")
        rank = sum(1 for k in res if k[0] == int(i))
        res[(int(i), rank)] = (text, float(score))
    return res


def error_of(server, req, raw=None):
    status, headers, data = server.request("POST", "/v1/translate",
                                           raw if raw is not None else req)
    try:
        body = json.loads(data)
    except ValueError:
        body = {"error": None, "raw": data[:200]}
    return status, headers, body


def test_endpoints(server, models):
    status, _, data = server.request("GET", "/health")
    check(status == 200 and json.loads(data)["status"] == "ok", "GET /health", data)

    status, _, data = server.request("GET", "/v1/models")
    info = json.loads(data)
    names = [m["name"] for m in info["models"]]
    check(status == 200 and names == ["bahdanau", "luong"] and info["default"] == "bahdanau",
          "GET /v1/models names and default", info)
    m0 = info["models"][0]
    check(m0["src_vocab_size"] == m0["config"]["src_vocab_size"] == 12
          and m0["tgt_vocab_size"] == 12 and m0["src_tokenizer"] == "word"
          and info["models"][1]["config"]["decoder"]["kind"] == "luong",
          "GET /v1/models configs and vocabulary sizes", m0)

    status, headers, data = server.request("GET", "/")
    check(status == 200 and headers["content-type"].startswith("text/html")
          and b"<html" in data and "default-src 'self'" in headers["content-security-policy"],
          "GET / serves the embedded page with a self-only CSP", headers)

    # Same translations and scores as the CLI (beam 4, 3-best).
    want = cli_translate(models["bahdanau"], SENTENCES, 4, 3)
    status, _, res = server.translate({"text": SENTENCES, "beam": 4, "n_best": 3})
    got = {(i, k): (h["text"], h["score"]) for i, t in enumerate(res["translations"])
           for k, h in enumerate(t["hypotheses"])}
    same = status == 200 and set(got) == set(want) and all(
        got[k][0] == want[k][0] and abs(got[k][1] - want[k][1]) < 1e-5 for k in want)
    check(same, "POST /v1/translate equals nazar translate (texts, n-best, scores)",
          (status, got, want))
    check(res["model"] == "bahdanau" and
          [t["source_tokens"] for t in res["translations"]] == [s.split() for s in SENTENCES],
          "translate: default model and source tokens", res.get("model"))
    check(any(h["tokens"] for t in res["translations"] for h in t["hypotheses"]),
          "translate: the trained model emits tokens", res)

    # Attention and alignments.
    status, _, res = server.translate({"text": SENTENCES, "attention": True, "alignment": "hard"})
    ok = status == 200
    for t in res["translations"]:
        for h in t["hypotheses"]:
            att = h["attention"]
            rows = len(h["tokens"]) + (1 if h["finished"] else 0)
            ok &= len(att) == rows and all(len(r) == len(t["source_tokens"]) for r in att)
            ok &= all(abs(sum(r) - 1) < 1e-4 for r in att)
            argmax = [[max(range(len(r)), key=lambda i: (r[i], -i)), j]
                      for j, r in enumerate(att[:len(h["tokens"])])]
            ok &= h["alignment"] == argmax
    check(ok, "translate: attention rows sum to 1; hard alignment = argmax of each token row", res)
    status, _, soft = server.translate({"text": SENTENCES, "alignment": "soft"})
    ok = status == 200 and all(
        hs["alignment"] == ha["attention"][:len(ha["tokens"])] and "attention" not in hs
        for ts, ta in zip(soft["translations"], res["translations"])
        for hs, ha in zip(ts["hypotheses"], ta["hypotheses"]))
    check(ok, "translate: soft alignment = the token rows of the attention", soft)

    # The second model, by name; a single string as text.
    want = cli_translate(models["luong"], ["a b c d"], 5, 1)
    status, _, res = server.translate({"text": "a b c d", "model": "luong"})
    h = res["translations"][0]["hypotheses"][0] if status == 200 else {}
    check(status == 200 and res["model"] == "luong" and h.get("text") == want[(0, 0)][0]
          and abs(h["score"] - want[(0, 0)][1]) < 1e-5,
          "translate: the second model by name equals nazar translate", (res, want))

    status, headers, data = server.request("GET", "/metrics")
    text = data.decode()
    check(status == 200 and headers["content-type"].startswith("text/plain")
          and "# TYPE nazar_request_duration_seconds histogram" in text
          and 'nazar_http_requests_total{path="/v1/translate",status="200"}' in text
          and "nazar_queue_depth 0" in text and "nazar_batch_requests_bucket" in text
          and "nazar_tokens_per_second" in text,
          "GET /metrics: Prometheus text with requests, latency, queue, batches, tokens/s", text)


def test_constraints(server, models):
    """"constraints" and "protect" as `nazar translate --constraints` / `--protect`."""
    import subprocess
    sents = ["a b c", "d e", "h g", "b %s"]
    cons = [{"include": ["a"]}, None, {"exclude": ["g"]}, ["b"]]
    status, _, res = server.translate({"text": sents, "beam": 4, "constraints": cons})
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write("\n".join("" if c is None else json.dumps(c) for c in cons) + "\n")
    try:
        cli = subprocess.run([NAZAR, "--threads", "1", "translate", "--model", models["bahdanau"],
                              "--beam", "4", "--constraints", f.name],
                             input="\n".join(sents) + "\n", capture_output=True, text=True,
                             check=True).stdout.splitlines()
    finally:
        os.unlink(f.name)
    texts = [t["hypotheses"][0]["text"] for t in res["translations"]]
    check(status == 200 and texts == cli, "constraints: the same translations as the CLI",
          (texts, cli))
    check("a" in texts[0].split() and "g" not in texts[2].split()
          and all(t["unmet"] == [] for t in res["translations"])
          and res["translations"][0]["hypotheses"][0]["constraints_met"] is True,
          "constraints: include and exclude phrases hold, nothing unmet", res)
    status, _, res = server.translate({"text": ["b %s"], "protect": True})
    check(status == 200 and res["translations"][0]["unmet"] == ["%s"],
          "protect: a span the vocabulary cannot spell is reported as unmet", res)
    for req, msg in [
            ({"text": ["a", "b"], "constraints": [None]}, "'constraints' has 1 entries for 2 sentences"),
            ({"text": ["a"], "constraints": {"include": ["a"]}}, "'constraints' must be a list"),
            ({"text": ["a"], "constraints": [{"incl": ["a"]}]}, "constraints[0]: unknown field 'incl'"),
            ({"text": ["a"], "constraints": [[""]]}, "constraints[0] must hold non-empty strings"),
            ({"text": ["a"], "constraints": [["a"] * 65]}, "has 65 phrases, more than 64"),
            ({"text": ["a"], "protect": "yes"}, "'protect' must be"),
            ({"text": [" ".join("%%%d" % i for i in range(1, 70))], "protect": True},
             "sentence 1: 69 include phrases with its protected spans, more than 64")]:
        status, _, res = server.translate(req)
        check(status == 400 and msg in res.get("error", ""), "constraints error: " + msg, res)


def test_errors(server):
    cases = [
        ("malformed JSON", None, b'{"text": ["a",', 400, "malformed JSON: parse error at line 1"),
        ("invalid UTF-8", None, b'{"text": ["a \xff b"]}', 400,
         "request body: invalid UTF-8 at byte 14 (0xff)"),
        ("not an object", None, b'["a"]', 400, "the request must be a JSON object, got array"),
        ("deep nesting", None, b"[" * 2000, 400, "malformed JSON: nested deeper than 32"),
        ("unknown field", {"text": ["a"], "beams": 2}, None, 400, "unknown field 'beams'"),
        ("wrong type", {"text": [1]}, None, 400, "'text' item 1 must be a string, got number"),
        ("no text", {"beam": 2}, None, 400, "the request has no 'text'"),
        ("too many sentences", {"text": ["a"] * 9}, None, 400,
         "9 sentences exceed the limit of 8 per request (--max-sentences)"),
        ("too many tokens", {"text": ["a", "a " * 11]}, None, 400,
         "sentence 2 of 2: 11 tokens exceed the limit of 10 (--max-tokens)"),
        ("beam too large", {"text": ["a"], "beam": 9}, None, 400,
         "'beam' must be in [1, 8] (--max-beam), got 9"),
        ("n_best > beam", {"text": ["a"], "beam": 2, "n_best": 3}, None, 400,
         "n_best 3 exceeds beam 2"),
        ("unknown model", {"text": ["a"], "model": "marian"}, None, 400,
         "unknown model 'marian' (models: bahdanau, luong)"),
        ("bad alignment", {"text": ["a"], "alignment": "both"}, None, 400,
         "'alignment' must be null, \"hard\" or \"soft\""),
        ("body too large", None, b'{"text": ["' + b"a " * 3000 + b'"]}', 413,
         "request body of 6014 bytes exceeds the limit of 4096 bytes (--max-body-bytes)"),
    ]
    for what, req, raw, want_status, want_msg in cases:
        status, headers, body = error_of(server, req, raw)
        msg = body.get("error") or ""
        check(status == want_status and body.get("status") == want_status
              and msg.startswith(want_msg) and "\n" not in msg
              and headers.get("content-type", "").startswith("application/json"),
              "%d %s: %s" % (want_status, what, want_msg), (status, body))
    status, _, data = server.request("GET", "/nowhere")
    check(status == 404 and json.loads(data)["error"].startswith("no route GET /nowhere"),
          "404 unknown route", data)
    status, headers, data = server.request("GET", "/v1/translate")
    check(status == 405 and headers.get("allow") == "POST"
          and "method GET not allowed on /v1/translate" in json.loads(data)["error"],
          "405 GET /v1/translate with Allow: POST", (status, data))
    m = server.metrics()
    check(m.get('nazar_http_errors_total{status="400"}', 0) >= 13
          and m.get('nazar_http_errors_total{status="413"}', 0) == 1
          and m.get('nazar_http_errors_total{status="404"}', 0) == 1,
          "metrics count errors by status", m)


def test_batching(nazar, models):
    # Each request alone: a server without cross-request batching.
    server = serve_util.Server(nazar, ["--model", models["bahdanau"], "--batch-requests", "1",
                                       "--timeout-ms", NO_TIMEOUT_MS])
    try:
        alone = {}
        for s in SENTENCES:
            status, _, res = server.translate({"text": [s], "n_best": 2})
            alone[s] = [(h["text"], h["score"]) for h in res["translations"][0]["hypotheses"]]
        check(server.terminate() == 0, "exit 0 after SIGTERM (no batching)")
    finally:
        server.kill()
    # A batch closes when it holds 4 requests, not by time (a one-minute window): the 24
    # concurrent requests form 6 batches of 4 however slowly they arrive on a loaded machine.
    server = serve_util.Server(nazar, ["--model", models["bahdanau"], "--batch-requests", "4",
                                       "--batch-window-ms", "60000", "--timeout-ms",
                                       NO_TIMEOUT_MS])
    try:
        results = {}

        def worker(k):
            s = SENTENCES[k % len(SENTENCES)]
            status, _, res = server.translate({"text": [s], "n_best": 2})
            results[k] = (s, status, res)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(24)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ok = len(results) == 24
        sizes = []
        for k, (s, status, res) in results.items():
            got = [(h["text"], h["score"]) for h in res["translations"][0]["hypotheses"]]
            ok &= status == 200 and res["translations"][0]["source_tokens"] == s.split()
            ok &= [g[0] for g in got] == [a[0] for a in alone[s]]
            ok &= all(abs(g[1] - a[1]) < 1e-4 for g, a in zip(got, alone[s]))
            sizes.append(res["batch"]["requests"])
        check(ok, "24 concurrent requests: each gets its own translation, equal to it alone",
              results)
        m = server.metrics()
        batches = m["nazar_batch_requests_count"]
        singles = m['nazar_batch_requests_bucket{le="1"}']
        check(batches == 6 and singles == 0 and sizes == [4] * 24,
              "metrics show batches of more than one request (%d batches for 24 requests, "
              "sizes %s)" % (batches, sorted(sizes)), m)
    finally:
        server.kill()


def test_queue_full_and_timeout(nazar, models):
    # Requests wait for a 60 s window: two fill the queue, the third is refused at once.
    server = serve_util.Server(nazar, ["--model", models["bahdanau"], "--queue", "2",
                                       "--batch-window-ms", "60000", "--timeout-ms", "100000"])
    try:
        results = []
        threads = [threading.Thread(target=lambda: results.append(server.translate(
            {"text": ["a b"]}))) for _ in range(2)]
        for t in threads:
            t.start()
        server.wait_for(lambda m: m["nazar_queue_depth"] == 2, "a queue depth of 2")
        status, headers, body = server.translate({"text": ["c d"]})
        check(status == 503 and headers.get("retry-after") == "1"
              and body["error"].startswith("the queue is full (2 requests wait, --queue)"),
              "503 with Retry-After when the queue is full", (status, headers, body))
        # SIGTERM closes the window: both waiting requests are answered, then exit 0.
        rc = server.terminate()
        for t in threads:
            t.join()
        check(rc == 0 and len(results) == 2 and all(r[0] == 200 for r in results),
              "after 503, SIGTERM answers the queued requests and exits 0", (rc, results))
    finally:
        server.kill()

    server = serve_util.Server(nazar, ["--model", models["bahdanau"], "--timeout-ms", "200",
                                       "--batch-window-ms", "60000"])
    try:
        status, _, body = server.translate({"text": ["a b"]})
        check(status == 504 and body["error"] == "no answer within 200 ms (--timeout-ms)",
              "504 when a request is not answered within --timeout-ms", (status, body))
        m = server.metrics()
        check(m["nazar_queue_depth"] == 0 and m["nazar_in_flight_requests"] == 0,
              "a timed-out request leaves the queue", m)
        check(server.terminate() == 0, "exit 0 after SIGTERM")
    finally:
        server.kill()


def test_drain(nazar, models):
    server = serve_util.Server(nazar, ["--model", "bahdanau=" + models["bahdanau"], "--model",
                                       "luong=" + models["luong"], "--batch-window-ms", "60000",
                                       "--timeout-ms", NO_TIMEOUT_MS])
    try:
        n = 6
        results = {}

        def worker(k):
            results[k] = server.translate({"text": [SENTENCES[k]],
                                           "model": "luong" if k % 2 else "bahdanau"})

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(n)]
        for t in threads:
            t.start()
        server.wait_for(lambda m: m["nazar_in_flight_requests"] == n, "%d requests in flight" % n)
        rc = server.terminate()
        for t in threads:
            t.join()
        ok = len(results) == n and all(
            results[k][0] == 200 and results[k][2]["translations"][0]["source_tokens"]
            == SENTENCES[k].split() for k in range(n))
        check(ok, "SIGTERM with %d requests in flight: every one answered" % n, results)
        check(rc == 0 and "SIGTERM" in server.stderr, "the server exits 0 after draining",
              (rc, server.stderr))
        try:
            server.request("GET", "/health", timeout=5)
            refused = False
        except OSError:
            refused = True
        check(refused, "after the drain, connections are refused")
    finally:
        server.kill()


def main():
    with tempfile.TemporaryDirectory(prefix="nazar_serve_api_") as work:
        models = serve_util.make_models(NAZAR, work)
        server = serve_util.Server(NAZAR, [
            "--model", "bahdanau=" + models["bahdanau"], "--model", "luong=" + models["luong"],
            "--max-body-bytes", "4096", "--max-sentences", "8", "--max-tokens", "10",
            "--max-beam", "8", "--timeout-ms", NO_TIMEOUT_MS])
        try:
            test_endpoints(server, models)
            test_constraints(server, models)
            test_errors(server)
            check(server.terminate() == 0, "exit 0 after SIGTERM (idle server)")
        finally:
            server.kill()
        test_batching(NAZAR, models)
        test_queue_full_and_timeout(NAZAR, models)
        test_drain(NAZAR, models)
    return serve_util.summary()


if __name__ == "__main__":
    sys.exit(main())
