#!/usr/bin/python3
"""Writes the PyTorch parity fixtures of nazar (docs/design.md §8.4, "Reference").

For every case: build the layer of python/nazar_torch.py with seeded float32 weights and
inputs (every batch has a padded sentence), switch to float64 (so the reference is exact up to
float64 rounding of float32-representable values), run forward, take the loss
    L = Σ_k Σ out_k ⊙ R_k          (fixed random R_k per output, float32-representable)
and backpropagate. Each case becomes tests/parity/fixtures/<case>.safetensors holding:
    inputs         by name ("x", "h0", "ids", "lengths", "query", "enc_out", ...)
    parameters     by state_dict name ("weight", "weight_ih_l0_reverse", "key.weight", ...)
    outputs        by name ("y", "out", "h_n", "context", "weights", ...)
    "R.<output>"   the loss weights (outputs in config["observed"], e.g. attention weights,
                   are compared but not in the loss: nazar's backward takes no gradient for them)
    "grad.<name>"  dL/d(every float input and every parameter)
  and __metadata__: case, config (JSON), inputs / params / outputs / loss_outputs / grads (comma-separated
  name lists), generator. Integer inputs are I64, everything else F32.
Deterministic: the same torch build gives the same bytes.

  /usr/bin/python3 tests/parity/gen/make_fixtures.py                 # rewrite tests/parity/fixtures
  /usr/bin/python3 tests/parity/gen/make_fixtures.py --out DIR       # write elsewhere (CTest: build dir)
  /usr/bin/python3 tests/parity/gen/make_fixtures.py --compare A B   # fixtures in A == those in B?
Exit code 77 (CTest SKIP_RETURN_CODE) when torch is missing, or --compare finds no A.
"""

import argparse
import json
import math
import os
import sys
import zlib

from fixture_files import ROOT, SKIP, files_of, import_reference, remove_files_of, tensor_differences

np, nt, MISSING = import_reference()
CASES = {}  # name -> function(seed) returning (module, inputs dict, run(module, inputs) -> outputs dict, config)


def case(name):
    def register(fn):
        CASES[name] = fn
        return fn
    return register


def gen(seed):
    import torch
    g = torch.Generator().manual_seed(seed)
    return g


def rand(g, *shape, lo=-1.0, hi=1.0):
    import torch
    return (torch.rand(*shape, generator=g, dtype=torch.float32) * (hi - lo) + lo)


# ---- nn ---------------------------------------------------------------------------------------

@case("linear")
def _linear(g):
    m = nt.Linear(5, 4)
    return m, {"x": rand(g, 2, 3, 5)}, lambda m, i: {"y": m(i["x"])}, {"in_features": 5, "out_features": 4}


@case("linear_nobias")
def _linear_nobias(g):
    m = nt.Linear(6, 3, bias=False)
    return m, {"x": rand(g, 4, 6)}, lambda m, i: {"y": m(i["x"])}, {"in_features": 6, "out_features": 3,
                                                                      "bias": False}


@case("embedding")
def _embedding(g):
    import torch
    m = nt.Embedding(7, 4, padding_idx=0)
    ids = torch.tensor([[3, 1, 3, 6, 2], [5, 3, 0, 0, 0]], dtype=torch.int64)  # repeats + padding
    return m, {"ids": ids}, lambda m, i: {"out": m(i["ids"])}, {"num_embeddings": 7, "embedding_dim": 4,
                                                                 "padding_idx": 0}


@case("gru_cell")
def _gru_cell(g):
    m = nt.GRUCell(5, 4)
    return (m, {"x": rand(g, 3, 5), "h": rand(g, 3, 4)}, lambda m, i: {"h_new": m(i["x"], i["h"])},
            {"input_size": 5, "hidden_size": 4})


def _random_gains(g, m):
    """LN gains away from their initial 1, so that a gain used in the wrong place shows."""
    import torch
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.startswith("ln_weight"):
                p.copy_(rand(g, *p.shape, lo=0.5, hi=1.5))


@case("gru_cell_layer_norm")
def _gru_cell_layer_norm(g):  # H = 16: the vector widths of the fused kernels
    m = nt.LayerNormGRUCell(20, 16)
    _random_gains(g, m)
    return (m, {"x": rand(g, 3, 20), "h": rand(g, 3, 16)}, lambda m, i: {"h_new": m(i["x"], i["h"])},
            {"input_size": 20, "hidden_size": 16, "layer_norm": True})


@case("lstm_cell_layer_norm")
def _lstm_cell_layer_norm(g):  # H = 16: the vector widths of the fused kernels
    m = nt.LayerNormLSTMCell(20, 16)
    _random_gains(g, m)

    def run(m, i):
        h, c = m(i["x"], (i["h"], i["c"]))
        return {"h_new": h, "c_new": c}
    return (m, {"x": rand(g, 3, 20), "h": rand(g, 3, 16), "c": rand(g, 3, 16)}, run,
            {"input_size": 20, "hidden_size": 16, "layer_norm": True})


@case("lstm_cell")
def _lstm_cell(g):
    m = nt.LSTMCell(5, 4)

    def run(m, i):
        h, c = m(i["x"], (i["h"], i["c"]))
        return {"h_new": h, "c_new": c}
    return m, {"x": rand(g, 3, 5), "h": rand(g, 3, 4), "c": rand(g, 3, 4)}, run, {"input_size": 5, "hidden_size": 4}


def _xent(g, smoothing, bias):
    """Output layer + cross-entropy, summed over non-pad rows. The loss is a scalar, so its R is
    one number: the C++ side passes it as grad_scale."""
    import torch
    N, H, V, pad = 7, 5, 11, 0
    m = nt.Linear(H, V, bias=bias)
    targets = torch.tensor([3, 0, 10, 7, 0, 3, 1], dtype=torch.int64)  # 0 = padding (ignored)

    def run(m, i):
        logits = m(i["x"])
        correct = ((logits.argmax(-1) == i["targets"]) & (i["targets"] != pad)).sum()
        return {"loss": nt.xent_loss(logits, i["targets"], pad, smoothing).reshape(1),
                "tokens": (i["targets"] != pad).sum().reshape(1).double(), "correct": correct.reshape(1).double()}
    cfg = {"in_features": H, "out_features": V, "bias": bias, "ignore_index": pad, "label_smoothing": smoothing,
           "chunk_rows": 3, "observed": ["tokens", "correct"]}
    return m, {"x": rand(g, N, H, lo=-2.0, hi=2.0), "targets": targets}, run, cfg


@case("softmax_xent")
def _softmax_xent(g):
    return _xent(g, 0.0, True)


@case("softmax_xent_smoothing_nobias")
def _softmax_xent_smooth(g):
    return _xent(g, 0.1, False)


def _rnn(g, cell, layers, bidirectional, with_initial, lengths, I=5, H=4, layer_norm=False, residual=False,
         transition_depth=1):
    import torch
    m = nt.make_rnn(cell, I, H, num_layers=layers, bidirectional=bidirectional, layer_norm=layer_norm,
                    residual=residual, transition_depth=transition_depth)
    if layer_norm:
        _random_gains(g, m)
    B, T = len(lengths), max(lengths)
    dirs = 2 if bidirectional else 1
    x = rand(g, B, T, I)
    for b, n in enumerate(lengths):  # padding holds garbage: it must not matter
        x[b, n:] = 9.0
    inputs = {"x": x, "lengths": torch.tensor(lengths, dtype=torch.int64)}
    if with_initial:
        inputs["h0"] = rand(g, layers * dirs, B, H)
        if cell == "lstm":
            inputs["c0"] = rand(g, layers * dirs, B, H)

    def run(m, i):
        hx = None
        if "h0" in i:
            hx = (i["h0"], i["c0"]) if cell == "lstm" else i["h0"]
        out, h_n = m(i["x"], i["lengths"], hx)
        if cell == "lstm":
            return {"out": out, "h_n": h_n[0], "c_n": h_n[1]}
        return {"out": out, "h_n": h_n}
    cfg = {"cell": cell, "input_size": I, "hidden_size": H, "num_layers": layers, "bidirectional": bidirectional}
    if layer_norm:
        cfg["layer_norm"] = True
    if residual:
        cfg["residual"] = True
    if transition_depth > 1:
        cfg["transition_depth"] = transition_depth
    return m, inputs, run, cfg


@case("rnn_gru_1layer_init")
def _rnn_gru_1(g):
    return _rnn(g, "gru", 1, False, True, [6, 3, 1])


@case("rnn_gru_2layer_bidir")
def _rnn_gru_2b(g):
    return _rnn(g, "gru", 2, True, False, [6, 4, 1])


@case("rnn_gru_layer_norm_2layer_bidir_init")
def _rnn_gru_ln(g):
    return _rnn(g, "gru", 2, True, True, [6, 4, 1], H=16, layer_norm=True)


@case("rnn_gru_residual_3layer_bidir_init")
def _rnn_gru_res(g):  # layers 1 and 2 add their inputs (two residual sums in a row)
    return _rnn(g, "gru", 3, True, True, [6, 4, 1], residual=True)


@case("rnn_lstm_layer_norm_residual_2layer")
def _rnn_lstm_ln_res(g):  # unidirectional: the residual sum of width H; layer norm with it
    return _rnn(g, "lstm", 2, False, False, [5, 2, 4], H=16, layer_norm=True, residual=True)


@case("rnn_gru_transition3_2layer_bidir_init")
def _rnn_gru_tr(g):  # deep transition: 2 transitions per step, layer 1 reads layer 0's chain outputs
    return _rnn(g, "gru", 2, True, True, [6, 4, 1], transition_depth=3)


@case("rnn_gru_layer_norm_transition2_2layer_bidir_init")
def _rnn_gru_ln_tr(g):  # H = 16: the vector widths; the transitions' own LN gains (drawn at random)
    return _rnn(g, "gru", 2, True, True, [6, 4, 1], H=16, layer_norm=True, transition_depth=2)


@case("rnn_lstm_layer_norm_1layer_bidir_init")
def _rnn_lstm_ln(g):
    return _rnn(g, "lstm", 1, True, True, [5, 2, 4], H=16, layer_norm=True)


@case("rnn_lstm_1layer_bidir_init")
def _rnn_lstm_1b(g):
    return _rnn(g, "lstm", 1, True, True, [5, 2, 4])


@case("rnn_lstm_2layer")
def _rnn_lstm_2(g):
    return _rnn(g, "lstm", 2, False, False, [5, 5, 3])


# ---- attention ---------------------------------------------------------------------------------
# T decoder steps over one encoder batch: keys once (precompute), one forward per step, as the
# decoders use it; gradients w.r.t. enc_out sum the key path and every step's context path.

def _attention(g, steps=4, lengths=(7, 4, 2), H=5, C=6, **cfg):
    import torch
    if cfg.get("score") == "dot":
        H = C
    m = nt.Attention(query_size=H, context_size=C, **cfg)
    if cfg.get("scale") == "learned":
        with torch.no_grad():
            m.scale.fill_(0.7)  # away from the 1/sqrt(C) init, so a mixed-up scale shows
    B, S = len(lengths), max(lengths)
    enc = rand(g, B, S, C)
    for b, n in enumerate(lengths):
        enc[b, n:] = 0.0  # an encoder's output is 0 at padding (rnn.h)
    inputs = {"query": rand(g, steps, B, H), "enc_out": enc,
              "lengths": torch.tensor(lengths, dtype=torch.int64)}

    def run(m, i):
        keys = m.precompute(i["enc_out"])
        ctx, w = [], []
        for t in range(steps):
            c, a = m(i["query"][t], keys, i["enc_out"], i["lengths"], t)
            if m.local == "local-p":  # the window choice must not sit on a rounding edge
                p = m.positions(i["query"][t], i["lengths"], t).detach()
                frac = (p + 0.5) - torch.floor(p + 0.5)
                assert bool(((frac > 1e-3) & (frac < 1 - 1e-3)).all()), f"p_t too close to x.5: {p}"
            ctx.append(c)
            w.append(a)
        return {"context": torch.stack(ctx), "weights": torch.stack(w)}
    full = {"score": "additive", "scale": "none", "local": "global", "window": 10, "query_size": H,
            "context_size": C, "attention_size": 0, "position_size": 0, "steps": steps, "observed": ["weights"]}
    full.update(cfg)
    return m, inputs, run, full


@case("attention_additive")
def _att_additive(g):
    return _attention(g, score="additive", attention_size=3)


@case("attention_concat")
def _att_concat(g):
    return _attention(g, score="concat", attention_size=4)


@case("attention_dot")
def _att_dot(g):
    return _attention(g, score="dot")


@case("attention_general")
def _att_general(g):
    return _attention(g, score="general")


@case("attention_scaled_dot")
def _att_scaled_dot(g):
    return _attention(g, score="dot", scale="sqrt")


@case("attention_general_learned_scale")
def _att_general_learned(g):
    return _attention(g, score="general", scale="learned")


@case("attention_local_m")
def _att_local_m(g):  # 8 steps: t runs past S_b - 1 of the short sentences; D = 1 clips
    return _attention(g, steps=8, score="general", local="local-m", window=1)


@case("attention_local_p")
def _att_local_p(g):
    return _attention(g, steps=4, lengths=(9, 5, 3), score="general", local="local-p", window=2, position_size=3)


@case("attention_local_p_additive")
def _att_local_p_additive(g):
    return _attention(g, steps=3, lengths=(9, 6, 2), score="additive", attention_size=3, local="local-p",
                      window=1)


# ---- driver ----------------------------------------------------------------------------------

def build_case(name, seed):
    import torch
    torch.manual_seed(seed)  # module init
    g = gen(seed + 1000)
    module, inputs, run, config = CASES[name](g)
    module = module.double().eval()
    x64 = {}
    for k, v in inputs.items():
        if v.dtype.is_floating_point:
            x64[k] = v.double().requires_grad_(True)
        else:
            x64[k] = v
    outputs = run(module, x64)
    # Outputs listed in config["observed"] are compared but not part of the loss (nazar's
    # backward takes no gradient for them, e.g. attention weights).
    in_loss = [k for k in outputs if k not in config.get("observed", [])]
    R = {k: rand(g, *outputs[k].shape).double() for k in in_loss}
    loss = sum((outputs[k] * R[k]).sum() for k in in_loss)
    loss.backward()

    f32 = lambda t: t.detach().numpy().astype(np.float32)  # noqa: E731
    tensors, grads = {}, []
    for k, v in inputs.items():
        tensors[k] = v.numpy() if not v.dtype.is_floating_point else v.numpy().astype(np.float32)
        if v.dtype.is_floating_point:
            tensors["grad." + k] = f32(x64[k].grad)
            grads.append(k)
    params = []
    for k, p in module.named_parameters():
        tensors[k] = f32(p)
        tensors["grad." + k] = f32(p.grad) if p.grad is not None else np.zeros(p.shape, np.float32)
        params.append(k)
        grads.append(k)
    for k, o in outputs.items():
        tensors[k] = f32(o)
    for k in in_loss:
        tensors["R." + k] = f32(R[k])
    meta = {"case": name, "config": json.dumps(config, sort_keys=True), "inputs": ",".join(inputs),
            "params": ",".join(params), "outputs": ",".join(outputs), "loss_outputs": ",".join(in_loss),
            "grads": ",".join(grads),
            "generator": GENERATOR}
    return tensors, meta


# The name this generator writes into its files' metadata and finds its own files by (the
# committed fixtures carry it): kept from when the script lived in tools/.
GENERATOR = "tools/make_fixtures.py (python/nazar_torch.py, float64 reference)"


def write_all(out_dir):
    remove_files_of(out_dir, GENERATOR)
    if np is None:
        print(f"make_fixtures: {MISSING} (apt install python3-numpy python3-torch); skipped")
        return SKIP
    try:
        import torch
    except ImportError:
        print("make_fixtures: torch is not installed (apt install python3-torch); skipped")
        return SKIP
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    total = 0
    for name in sorted(CASES):
        # the seed depends on the name only: adding a case leaves the others' bytes unchanged
        tensors, meta = build_case(name, seed=zlib.crc32(name.encode()) % 1000003)
        path = os.path.join(out_dir, name + ".safetensors")
        nt.save_safetensors(path, tensors, meta)
        total += os.path.getsize(path)
    print(f"make_fixtures: {len(CASES)} fixtures, {total} bytes in {out_dir}")
    return 0


def compare(a_dir, b_dir):
    """The files of this generator (by metadata) in A and B: same files, names, dtypes, shapes and metadata; inputs/params/R bit-identical; outputs and
    grads within 1e-6 (norm-wise): a float64 reference from another BLAS build may round to a
    neighbouring float32."""
    if np is None:
        print(f"compare: {MISSING}; skipped")
        return SKIP
    a_files, b_files = files_of(a_dir, GENERATOR), files_of(b_dir, GENERATOR)
    if not a_files:
        print(f"compare: no fixtures in {a_dir} (not regenerated: torch missing?); skipped")
        return SKIP
    bad = []
    if a_files != b_files:
        bad.append(f"file sets differ: {sorted(set(a_files) ^ set(b_files))}")
    for f in sorted(set(a_files) & set(b_files)):
        ta, ma = nt.load_safetensors(os.path.join(a_dir, f))
        tb, mb = nt.load_safetensors(os.path.join(b_dir, f))
        if ma != mb:
            bad.append(f"{f}: metadata differs")
        exact = set(ma["inputs"].split(",")) | set(ma["params"].split(",")) | {k for k in ta if k.startswith("R.")}
        bad += tensor_differences(f, ta, tb, lambda k, x: k in exact, np,
                                  " (inputs, parameters and R must be bit-identical)")
    for line in bad:
        print("compare:", line)
    print(f"compare: {len(a_files)} fixtures in {a_dir} vs {len(b_files)} in {b_dir}: "
          f"{'OK' if not bad else str(len(bad)) + ' differences'}")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "parity", "fixtures"))
    ap.add_argument("--compare", nargs=2, metavar=("NEW", "COMMITTED"))
    args = ap.parse_args()
    if args.compare:
        return compare(*args.compare)
    return write_all(args.out)


if __name__ == "__main__":
    sys.exit(main())
