"""Ctrl-C and cancellation (docs/python.md "Ctrl-C and cancellation"): SIGINT reaches Python's
handler within a decoder step of Translator.translate and within an update of nazar.train, and
a nazar.CancelToken stops a translation running in another thread.

The SIGINT tests run a child process (signal handlers are process-wide) and send the signal
from here with os.kill. Machines are noisy, so the bounds are relative and generous: the input
is sized so that a translation timed in the same child takes at least a second, the signal is
sent a quarter of the way through the next one, and the handler must run before half of that
time has passed, where one decoder step takes milliseconds (before these changes Python ran it
only once nazar had returned, three quarters later)."""

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

import nazar
from conftest import TRAIN_CONFIG

SENTENCE = "a b c d e f g h a b c d"

TRANSLATE_CHILD = r"""
import signal, sys, time
import nazar

tr = nazar.Translator(sys.argv[1], threads=1)
tr.translate([sys.argv[2]] * 50, beam=5)  # warm-up
n = 50
while True:  # an input that takes at least a second
    t = time.monotonic()
    tr.translate([sys.argv[2]] * n, beam=5)
    took = time.monotonic() - t
    if took >= 1.0:
        break
    n = int(n * min(10.0, 1.5 / max(took, 1e-3)))
sentences = [sys.argv[2]] * n
print("full", took, flush=True)

# 1. A handler that does not raise runs during translate, which then goes on to the end.
ran = []
signal.signal(signal.SIGINT, lambda sig, frame: ran.append(time.monotonic()))
print("start", time.monotonic(), flush=True)
out = tr.translate(sentences, beam=5)
assert len(out) == n and out[-1].text == out[0].text != ""
print("end", time.monotonic(), ran[0] if ran else -1.0, flush=True)

# 2. Python's own handler: KeyboardInterrupt out of translate, the Translator still usable.
signal.signal(signal.SIGINT, signal.default_int_handler)
print("start", time.monotonic(), flush=True)
try:
    tr.translate(sentences, beam=5)
    print("finished", time.monotonic(), flush=True)
except KeyboardInterrupt:
    print("interrupted", time.monotonic(), flush=True)
print("after", tr.translate(["a b c"], beam=1)[0].text, flush=True)
"""


def fields(p, first):
    line = p.stdout.readline().split()
    assert line and line[0] == first, f"child said {line!r}; stderr: {p.stderr.read()}"
    return [float(x) if i else x for i, x in enumerate(line)][1:]


def test_ctrl_c_interrupts_translate_within_a_decoder_step(model_path):
    p = subprocess.Popen(
        [sys.executable, "-c", TRANSLATE_CHILD, model_path, SENTENCE],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        (full,) = fields(p, "full")

        fields(p, "start")
        time.sleep(full / 4)
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        end, ran = fields(p, "end")
        assert sent < end, "the translation ended before the signal was sent: cannot tell"
        # generous: half the translation's time left after the signal, where one step is ms
        assert sent <= ran < sent + full / 2, (ran - sent, full)

        (start,) = fields(p, "start")
        time.sleep(full / 4)
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        (stopped,) = fields(p, "interrupted")
        # generous: half the translation's time left after the signal, where one step is ms
        assert stopped - sent < full / 2, (stopped - sent, full)
        assert p.stdout.readline().split() == ["after", "c", "b", "a"]
        assert p.wait(timeout=60) == 0
    finally:
        p.kill()
        p.wait()


def test_cancel_token_stops_a_translation_in_another_thread(model_path):
    tr = nazar.Translator(model_path)
    n = 50
    while True:  # an input that takes at least a second
        t = time.monotonic()
        tr.translate([SENTENCE] * n, beam=5)
        full = time.monotonic() - t
        if full >= 1.0:
            break
        n = int(n * min(10.0, 1.5 / max(full, 1e-3)))
    token = nazar.CancelToken()
    assert not token.cancelled
    outcome = {}

    def work():
        try:
            outcome["result"] = tr.translate([SENTENCE] * n, beam=5, cancel=token)
        except nazar.Cancelled as e:
            outcome["error"], outcome["when"] = e, time.monotonic()

    th = threading.Thread(target=work)
    th.start()
    time.sleep(full / 4)
    sent = time.monotonic()
    token.cancel()
    th.join()
    assert token.cancelled
    e = outcome.get("error")
    assert e is not None, "translate finished although cancelled"
    assert isinstance(e, nazar.Error) and isinstance(e, RuntimeError)
    finished, total = map(int, re.search(r"(\d+) of (\d+) sentences", str(e)).groups())
    assert total == n and finished < n  # it stopped before the end
    assert outcome["when"] - sent < full / 2  # generous: a decoder step is milliseconds
    # the Translator goes on; a token cancelled beforehand stops the call before any work
    assert tr.translate(["a b c"], beam=1)[0].text == "c b a"
    with pytest.raises(nazar.Cancelled, match="0 of 3 sentences"):
        tr.translate(["a", "b", "c"], cancel=token)
    with pytest.raises(TypeError, match="cancel must be a nazar.CancelToken"):
        tr.translate(["a"], cancel=threading.Event())


TRAIN_CHILD = r"""
import json, os, signal, sys
import nazar

config, train, dev, run = json.loads(sys.argv[1])

class Stop(Exception):
    pass

def handler(sig, frame):
    raise Stop("from the handler")

def progress(record):
    if record["type"] == "train" and record["step"] == 10:
        print("training", flush=True)

# 1. A handler of the program's own: it runs within an update; what it raises comes after the
#    checkpoint.
signal.signal(signal.SIGINT, handler)
try:
    nazar.train(config, train=train, dev=dev, save_dir=run + "1", max_steps=10**7,
                valid_interval=10**6, callback=progress)
    print("finished", flush=True)
except Stop:
    print("stopped", os.path.exists(os.path.join(run + "1", "last.safetensors")), flush=True)

# 2. Python's own handler: KeyboardInterrupt with the resume hint.
signal.signal(signal.SIGINT, signal.default_int_handler)
try:
    nazar.train(config, train=train, dev=dev, save_dir=run + "2", max_steps=10**7,
                valid_interval=10**6, callback=progress)
    print("finished", flush=True)
except KeyboardInterrupt as e:
    print("interrupted", str(e).replace(" ", "_"), flush=True)
"""


def test_ctrl_c_interrupts_training_after_the_update_in_flight(tmp_path, data_paths):
    train, dev = data_paths
    args = json.dumps([TRAIN_CONFIG, train, dev, str(tmp_path / "run")])
    p = subprocess.Popen([sys.executable, "-c", TRAIN_CHILD, args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "training"
        p.send_signal(signal.SIGINT)
        # today's failure: nazar's own SIGINT handler replaced the program's during the run
        assert p.stdout.readline().split() == ["stopped", "True"]
        assert p.stdout.readline().strip() == "training"
        p.send_signal(signal.SIGINT)
        word, message = p.stdout.readline().split()
        assert word == "interrupted"
        m = re.search(r"interrupted_at_step_(\d+):_checkpoint_written", message)
        assert m and int(m.group(1)) >= 10, message
        assert "resume" in message
        assert os.path.exists(tmp_path / "run2" / "last.safetensors")
        assert not os.path.exists(tmp_path / "run2" / "model.safetensors")
        assert p.wait(timeout=60) == 0
    finally:
        p.kill()
        p.wait()


RANDOM_CHILD = r"""
import json, os, re, signal, sys
import nazar

config, train, dev, run, n = json.loads(sys.argv[1])
for i in range(n):
    try:
        print("start", i, flush=True)
        nazar.train(config, train=train, dev=dev, save_dir=run, overwrite=True, threads=2,
                    max_steps=10**7, max_epochs=0, valid_interval=40)
        print("finished", i, flush=True)
    except KeyboardInterrupt as e:
        m = re.search(r"interrupted at step (\d+)", str(e))
        written = os.path.exists(os.path.join(run, "last.safetensors"))
        print("interrupted", i, m.group(1) if m else -1, written, flush=True)
blocked = signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
print("done", signal.getsignal(signal.SIGINT) is signal.default_int_handler, blocked, flush=True)
"""


def test_ctrl_c_at_random_moments_never_aborts_training(tmp_path, data_paths):
    """SIGINT at a random moment of a Python training, many times in one process (the CLI's
    loop of interrupts, docs/reliability.md "Known issues"): each run stops with
    KeyboardInterrupt, its checkpoint written when the signal came after the first update; the
    process never aborts (a signal delivered into a computing thread corrupted the heap about
    once in 30-150), and Python's handler and signal mask are as before. NAZAR_TEST_INTERRUPTS
    sets the count (200 for the issue's check)."""
    train, dev = data_paths
    n = int(os.environ.get("NAZAR_TEST_INTERRUPTS", "25"))
    args = json.dumps([TRAIN_CONFIG, train, dev, str(tmp_path / "run"), n])
    # stderr to a file: the runs' messages would fill a pipe nobody reads, and block the child
    err_path = tmp_path / "child.err"
    with open(err_path, "a") as err:
        p = subprocess.Popen([sys.executable, "-c", RANDOM_CHILD, args], stdout=subprocess.PIPE,
                             stderr=err, text=True)

    def said():
        return err_path.read_text(errors="replace")[-2000:]

    rng = random.Random(int(os.environ.get("NAZAR_TEST_SEED", "0")) or None)
    checkpoints = 0
    try:
        for i in range(n):
            assert p.stdout.readline().split() == ["start", str(i)], said()
            time.sleep(rng.uniform(0.02, 0.4))
            p.send_signal(signal.SIGINT)
            line = p.stdout.readline().split()
            assert line[:2] == ["interrupted", str(i)], (
                f"run {i}: child said {line!r}, exit {p.poll()}; stderr: {said()}"
            )
            step, written = int(line[2]), line[3] == "True"
            assert written or step <= 0, line  # stopped in training: the checkpoint is there
            checkpoints += written
        assert p.stdout.readline().split() == ["done", "True", "False"]
        assert p.wait(timeout=60) == 0
    finally:
        p.kill()
        p.wait()
    # most signals land in training, not while the data is read
    assert checkpoints >= n // 2, f"{checkpoints} of {n} interrupts came after an update"
