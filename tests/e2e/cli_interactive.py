#!/usr/bin/env python3
"""Interactive use of `nazar translate` and `nazar attention` (audit items 13 and 14).

A terminal (a pseudo-terminal from the pty module) and a pipe that stays open must be answered
line by line: one line is written, its answer must arrive while the input is still open (the
wait is bounded, 60 s; the old reader answered only at end of input, so it never arrived). The
answers equal a batch run over a file. The global `--threads` holds for `attention`: with
`nazar --threads 3` its process has more threads than with `nazar --threads 1`, counted in
/proc/PID/task while it waits for input.

Usage: cli_interactive.py path/to/nazar model.safetensors workdir
Standard library only. Exit 0 when every check passes.
"""
import os
import select
import subprocess
import sys
import termios
import time

NAZAR, MODEL, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
WAIT = 60.0  # bound on waiting for one answer (a hang fails, it never passes)
LINES = ["3 May 1979", "14 juillet 1989"]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def read_until(fd, predicate, buf=b""):
    """Reads fd until predicate(buf) holds; returns (buf, True) or (buf, False) on timeout/EOF."""
    deadline = time.monotonic() + WAIT
    while not predicate(buf):
        left = deadline - time.monotonic()
        if left <= 0:
            return buf, False
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return buf, False
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the pty's other side closed
            return buf, False
        if not chunk:
            return buf, False
        buf += chunk
    return buf, True


def batch(cmd):
    path = os.path.join(WORK, "batch-in.txt")
    with open(path, "w") as f:
        f.write("".join(l + "\n" for l in LINES))
    r = subprocess.run([NAZAR] + cmd + ["--input", path], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.decode()


def thread_count(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


def through_pipe(name, cmd, expected, global_args=()):
    """Each line's expected text must arrive before the next line is written or stdin closes."""
    p = subprocess.Popen([NAZAR, *global_args] + cmd, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, threads = b"", None
    for line, want in zip(LINES, expected):
        p.stdin.write((line + "\n").encode())
        p.stdin.flush()
        out, ok = read_until(p.stdout.fileno(), lambda b, w=want: w.encode() in b, out)
        check(ok, f"{name}: the answer to '{line}' arrives while the pipe is open")
        if not ok:
            break
        if threads is None:
            threads = thread_count(p.pid)
    p.stdin.close()
    rest, _ = read_until(p.stdout.fileno(), lambda b: False)
    rc = p.wait(timeout=WAIT)
    check(rc == 0, f"{name}: exit 0 at end of input (got {rc}: {p.stderr.read().decode()[-300:]})")
    p.stdout.close()
    p.stderr.close()
    return (out + rest).decode(), threads


def through_pty(name, cmd, expected):
    master, slave = os.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[3] &= ~termios.ECHO  # the answer, not the echo of the typed line, is looked for
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    p = subprocess.Popen([NAZAR] + cmd, stdin=slave, stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    out = b""
    for line, want in zip(LINES, expected):
        os.write(master, (line + "\n").encode())
        out, ok = read_until(master, lambda b, w=want: w.encode() in b.replace(b"\r\n", b"\n"),
                             out)
        check(ok, f"{name}: the answer to '{line}' arrives at a terminal before Ctrl-D")
        if not ok:
            break
    os.write(master, b"\x04")  # Ctrl-D: end of input
    try:
        rc = p.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
    check(rc == 0, f"{name}: exit 0 after Ctrl-D (got {rc}: {p.stderr.read().decode()[-300:]})")
    p.stderr.close()
    os.close(master)


translate = ["translate", "--model", MODEL]
want = [l + "\n" for l in batch(translate).splitlines()]
check(len(want) == 2, "translate: two answers in the batch run")
prefixes = [want[0], want[0] + want[1]]  # the output so far after each line (answers may repeat)
out, _ = through_pipe("translate (pipe)", translate, prefixes)
check(out == "".join(want), "translate (pipe): the same output as the batch run")
through_pty("translate (terminal)", translate, prefixes)

attention = ["attention", "--model", MODEL, "--color", "never"]
heads = [l for l in batch(attention).splitlines() if " -> " in l]
check(len(heads) == 2, "attention: two heatmaps in the batch run")
out, t1 = through_pipe("attention (pipe, --threads 1)", attention, heads, ["--threads", "1"])
check([l for l in out.splitlines() if " -> " in l] == heads,
      "attention (pipe): the same sentences and translations as the batch run")
through_pty("attention (terminal)", attention, heads)
_, t3 = through_pipe("attention (pipe, --threads 3)", attention, heads, ["--threads", "3"])
check(t1 is not None and t3 is not None and t3 > t1,
      f"attention honours the global --threads: {t3} threads with 3, {t1} with 1")

sys.exit(1 if failures else 0)
