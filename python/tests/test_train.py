"""nazar.train runs the CLI's trainer: same config and seed -> bit-identical model files;
progress callback; KeyboardInterrupt writes a checkpoint and resuming equals an uninterrupted
run; configuration errors are ValueErrors with the CLI's messages."""

import os
import shutil
import signal

import numpy as np
import pytest

import nazar
from conftest import TRAIN_CONFIG, run_cli, write_yaml


def read(path):
    with open(path, "rb") as f:
        return f.read()


def same_params(a, b):
    pa, pb = nazar.load(a).params, nazar.load(b).params
    assert pa.keys() == pb.keys()
    for k in pa:
        np.testing.assert_array_equal(pa[k], pb[k], err_msg=k)


def test_python_and_cli_training_give_identical_files(tmp_path, data_paths):
    train, dev = data_paths
    cfg = tmp_path / "tiny.yaml"
    write_yaml(str(cfg), TRAIN_CONFIG)
    run_dir = str(tmp_path / "run")  # train.config records save_dir: both runs use the same
    run_cli("train", "--config", str(cfg), "--train", train, "--dev", dev, "--save-dir", run_dir,
            "--max-steps", "40")
    cli_files = {n: read(os.path.join(run_dir, n)) for n in ("model.safetensors", "last.safetensors")}
    shutil.rmtree(run_dir)

    records = []
    r = nazar.train(str(cfg), train=train, dev=dev, save_dir=run_dir, max_steps=40,
                    callback=records.append)
    assert r.model_path == os.path.join(run_dir, "model.safetensors") and r.step == 40
    for n, data in cli_files.items():
        assert read(os.path.join(run_dir, n)) == data, n
    # the dict form of the same configuration gives the same file too
    shutil.rmtree(run_dir)
    nazar.train(TRAIN_CONFIG, train=train, dev=dev, save_dir=run_dir, max_steps=40)
    assert read(r.model_path) == cli_files["model.safetensors"]
    assert r.averaged is None

    train_steps = [x["step"] for x in records if x["type"] == "train"]
    assert train_steps == [10, 20, 30, 40]
    assert all(x["loss"] > 0 and x["tokens_per_s"] > 0 for x in records if x["type"] == "train")
    valid = [x for x in records if x["type"] == "valid"]
    assert [x["step"] for x in valid] == [30, 40]  # every valid_interval, and at the end
    assert {"loss", "perplexity", "exact", "bleu"} <= valid[0].keys()


def test_keyboard_interrupt_then_resume_equals_uninterrupted(tmp_path, data_paths):
    train, dev = data_paths
    full = str(tmp_path / "full")
    nazar.train(TRAIN_CONFIG, train=train, dev=dev, save_dir=full, max_steps=50)

    run = str(tmp_path / "run")

    def ctrl_c_at_20(record):
        if record["type"] == "train" and record["step"] == 20:
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt, match="resume"):
        nazar.train(TRAIN_CONFIG, train=train, dev=dev, save_dir=run, max_steps=50,
                    callback=ctrl_c_at_20)
    assert os.path.exists(os.path.join(run, "last.safetensors"))
    assert not os.path.exists(os.path.join(run, "model.safetensors"))
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # Python's is back
    r = nazar.train(resume=run)
    assert r.step == 50 and not r.interrupted
    same_params(r.model_path, os.path.join(full, "model.safetensors"))


def test_callback_false_stops_with_a_checkpoint(tmp_path, data_paths):
    train, dev = data_paths
    run = str(tmp_path / "run")
    r = nazar.train(TRAIN_CONFIG, train=train, dev=dev, save_dir=run, max_steps=50,
                    callback=lambda rec: rec["step"] < 10)
    # the update in flight when the callback answers completes first, as with Ctrl-C
    assert r.interrupted and r.step == 11 and r.model_path == ""
    assert os.path.exists(os.path.join(run, "last.safetensors"))


def test_callback_exception_propagates(tmp_path, data_paths):
    train, dev = data_paths

    def boom(rec):
        raise ZeroDivisionError("from the callback")

    with pytest.raises(ZeroDivisionError, match="from the callback"):
        nazar.train(TRAIN_CONFIG, train=train, dev=dev, save_dir=str(tmp_path / "r"),
                    max_steps=20, callback=boom)


def test_a_used_save_dir_is_refused_unless_resumed_or_overwritten(tmp_path, data_paths):
    train, dev = data_paths
    run = str(tmp_path / "run")
    nazar.train(TRAIN_CONFIG, train=train, dev=dev, save_dir=run, max_steps=5)
    before = read(os.path.join(run, "model.safetensors"))
    with pytest.raises(ValueError, match="is not empty"):
        nazar.train(TRAIN_CONFIG, train=train, dev=dev, save_dir=run, max_steps=5)
    assert read(os.path.join(run, "model.safetensors")) == before  # nothing was touched
    with pytest.raises(ValueError, match="exclude each other"):
        nazar.train(TRAIN_CONFIG, train=train, dev=dev, save_dir=run, resume=run, overwrite=True)
    r = nazar.train(TRAIN_CONFIG, train=train, dev=dev, save_dir=run, max_steps=3, overwrite=True)
    assert r.step == 3 and read(os.path.join(run, "model.safetensors")) != before


def test_configuration_errors_are_the_clis(tmp_path, data_paths):
    train, dev = data_paths
    bad = dict(TRAIN_CONFIG, model=dict(TRAIN_CONFIG["model"], hiden_size=8))
    yaml = tmp_path / "bad.yaml"
    write_yaml(str(yaml), bad)
    cli = run_cli("train", "--config", str(yaml), "--train", train, check=False)
    assert cli.returncode == 2
    cli_msg = [l for l in cli.stderr.splitlines() if l.startswith("nazar: error: ")][0]
    with pytest.raises(ValueError) as e:
        nazar.train(bad, train=train)
    assert "\n" not in str(e.value)
    assert cli_msg.endswith(str(e.value).replace("config: ", "", 1))
    with pytest.raises(ValueError) as e:
        nazar.train(str(yaml), train=train)
    assert cli_msg == f"nazar: error: {e.value}"

    with pytest.raises(ValueError, match=r"unknown option 'hiden_size' \(did you mean 'hidden_size'\?\)"):
        nazar.train(TRAIN_CONFIG, train=train, hiden_size=8)
    with pytest.raises(ValueError, match=r"dropout: 1.5 is out of range \[0, 1\)"):
        nazar.train(TRAIN_CONFIG, train=train, dropout=1.5)
    with pytest.raises(ValueError, match="does not exist"):
        nazar.train(TRAIN_CONFIG, train=str(tmp_path / "nope.tsv"))


def test_resolve_config_and_keys():
    cfg = nazar.resolve_config(TRAIN_CONFIG, hidden_size=24, train="x.tsv")
    assert cfg["hidden_size"] == 24 and cfg["decoder"] == "bahdanau"
    keys = {k["key"]: k for k in nazar.config_keys()}
    assert keys["hidden_size"]["section"] == "model" and not keys["hidden_size"]["resumable"]


def test_average_best_reports_the_averaged_file(tmp_path, data_paths):
    train, dev = data_paths
    run_dir = str(tmp_path / "avg")
    records = []
    r = nazar.train(TRAIN_CONFIG, train=train, dev=dev, save_dir=run_dir, max_steps=40,
                    valid_interval=10, valid_metric="loss", average_best=2,
                    callback=records.append)
    losses = sorted((x["loss"], x["step"]) for x in records if x["type"] == "valid")
    assert r.averaged["steps"] == [s for _, s in losses[:2]]
    assert r.averaged["path"] == os.path.join(run_dir, "averaged.safetensors")
    assert os.path.exists(r.averaged["path"]) and r.averaged["valid"]["loss"] > 0
    final = [x for x in records if x["type"] == "final" and x["file"] == "averaged.safetensors"]
    assert len(final) == 1 and final[0]["steps"] == r.averaged["steps"]
    kept = sorted(n for n in os.listdir(run_dir) if n.startswith("best-"))
    assert kept == sorted(f"best-{s}.safetensors" for s in r.averaged["steps"])
