"""Shared set-up of the Python package's tests (python/tests, ctest label `python`).

A tiny word-level model of a reversal task ("a c b" -> "b c a") is trained once with the
command line (`nazar train`), so every test compares the package with the CLI on the same file.
Under ctest the test `python.setup_model` runs `conftest.py --prepare` first and the test files
reuse its model; run alone (`pytest python/tests`), the first test that needs it trains it.

Environment (ctest sets all three; docs/python.md):
  PYTHONPATH       the build tree's package folder, build/python
  NAZAR_CLI        the nazar program (default: build/nazar under the repository)
  NAZAR_TEST_WORK  where the shared data and model live (default: a folder under /tmp)
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.environ.get("NAZAR_CLI") or os.path.join(REPO, "build", "nazar")
WORK = os.environ.get("NAZAR_TEST_WORK") or os.path.join(tempfile.gettempdir(), "nazar-python-tests")

# The training configuration of the shared model (and of the CLI-vs-Python training test):
# small, one thread, fixed seed, so the run is deterministic and takes seconds.
TRAIN_CONFIG = {
    "data": {"tokenizer": "word", "batch_size": 16},
    "model": {
        "cell": "gru",
        "embedding_size": 16,
        "hidden_size": 16,
        "bidirectional": True,
        "decoder": "bahdanau",
        "attention": "additive",
    },
    "training": {
        "optimizer": "adam",
        "lr": 0.01,
        "max_steps": 60,
        "valid_interval": 30,
        "valid_sample": 10,
        "seed": 3,
        "threads": 1,
        "progress": "none",
        "log_interval": 10,
    },
}

SENTENCES = ["a b c", "h g f e", "c", "d d a b e f", "b a", "e f g h a b c d"]

# The score / align tests' targets: the reversal of each of SENTENCES, the first one wrong.
TARGETS = [" ".join(reversed(s.split())) for s in SENTENCES]
TARGETS[0] = "c a b"


def write_pairs(folder) -> tuple[str, str]:
    """SENTENCES and TARGETS as the --src / --tgt files of `nazar score` and `nazar align`."""
    src, tgt = os.path.join(folder, "src.txt"), os.path.join(folder, "tgt.txt")
    with open(src, "w", encoding="utf-8") as f:
        f.write("\n".join(SENTENCES) + "\n")
    with open(tgt, "w", encoding="utf-8") as f:
        f.write("\n".join(TARGETS) + "\n")
    return src, tgt


def write_data(folder: str) -> tuple[str, str]:
    """Reversal pairs over 8 symbols, lengths 1-7 (deterministic)."""
    os.makedirs(folder, exist_ok=True)
    r = random.Random(11)
    paths = []
    for name, n in (("train.tsv", 400), ("dev.tsv", 30)):
        path = os.path.join(folder, name)
        with open(path, "w", encoding="utf-8") as f:
            for _ in range(n):
                s = [r.choice("abcdefgh") for _ in range(r.randint(1, 7))]
                f.write(" ".join(s) + "\t" + " ".join(reversed(s)) + "\n")
        paths.append(path)
    return paths[0], paths[1]


def write_yaml(path: str, config: dict) -> None:
    """The config as YAML (JSON is YAML; the CLI reads it with --config)."""
    import json

    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=1)


def run_cli(*args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([CLI, *args], input=input, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"nazar {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    return p


def prepare(work: str = WORK) -> str:
    """Trains the shared model with the CLI into work/model; returns its model file."""
    if not os.path.exists(CLI):
        raise SystemExit(f"the nazar program is not built at {CLI} (set NAZAR_CLI)")
    if os.path.exists(work):
        shutil.rmtree(work)
    # longer than TRAIN_CONFIG's 60 steps, so that the reversals are mostly learnt
    return train_with_cli(work, "--max-steps", "600", "--valid-interval", "300")


def train_with_cli(work: str, *options: str) -> str:
    """`nazar train` of TRAIN_CONFIG, then `options`, on write_data(work/data) into work/model;
    returns its model file."""
    train, dev = write_data(os.path.join(work, "data"))
    yaml_path = os.path.join(work, "tiny.yaml")
    write_yaml(yaml_path, TRAIN_CONFIG)
    save_dir = os.path.join(work, "model")
    run_cli("train", "--config", yaml_path, "--train", train, "--dev", dev, "--save-dir", save_dir,
            *options)
    return os.path.join(save_dir, "model.safetensors")


def model_file() -> str:
    path = os.path.join(WORK, "model", "model.safetensors")
    return path if os.path.exists(path) else prepare()


if __name__ == "__main__":
    if sys.argv[1:] != ["--prepare"]:
        raise SystemExit("usage: conftest.py --prepare")
    print(prepare())
else:
    import pytest

    @pytest.fixture(scope="session")
    def model_path() -> str:
        return model_file()

    @pytest.fixture(scope="session")
    def data_paths() -> tuple[str, str]:
        model_file()
        return (os.path.join(WORK, "data", "train.tsv"), os.path.join(WORK, "data", "dev.tsv"))
