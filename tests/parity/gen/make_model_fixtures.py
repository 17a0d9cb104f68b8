#!/usr/bin/python3
"""Writes the whole-model PyTorch parity fixtures of nazar (docs/design.md §8.4, "Reference").

For every case (a nazar model config: Bahdanau GRU, deep output + tied embeddings, LSTM; Luong
dot, general with and without input feeding, concat, local-m, local-p, LSTM; two ablations;
scheduled sampling; coverage attention, Bahdanau and Luong concat, whose training step adds the
coverage loss with the weight in metadata coverage_loss_weight; monotonic attention, Bahdanau
additive and Luong general, whose decoding attends hard; MoChA, monotonic chunkwise attention,
Bahdanau additive with w = 2 and Luong concat with w = 3, whose rows are the chunkwise weights β):
  model_<case>.safetensors          a nazar model file written by python/nazar_torch.py's
                                    save_model (seeded PyTorch init, float32; word tokenizers and
                                    vocabularies "s4".. / "t4".. in the metadata, so `nazar score`
                                    reads it too). nazar must load it, score it identically, and
                                    save it back with the same tensors.
  model_<case>_expect.safetensors   the expected values, computed in float64 from that file:
     inputs   src (B, S), src_lengths (B), tgt_in, tgt_out (B, T)            (I64, batch_from_ids layout)
     outputs  scores (B)     log p(y | x) per sentence (forced decoding, target + </s>)
              loss (1)       Σ over non-pad target tokens of the (label-smoothed) cross-entropy
                             (evaluation: teacher forcing)
              train_loss (1) the same for the training step (= loss, except with scheduled
                             sampling: metadata sampling_prob, or dropout: metadata dropout;
                             + λ Σ min(α, cov) with metadata coverage_loss_weight λ)
     masks    mask.src_emb (B, S, E), mask.enc_out (B, S, C), mask.tgt_emb (T, B, E),
              mask.dec_out (T, B, d_out), mask.attention (T, B, S): the training step's dropout
              masks (0 or 1/(1−p)), only
              in the DROPOUT cases (seq2seq.h DropoutMasks, nazar's layout)
              tokens (1)     non-pad target tokens
              greedy_tokens (B, n) I64, -1 padded; greedy_lengths (B); greedy_scores (B);
              greedy_attention (B, n, S) each token's attention weights (MoChA: β), 0 padded
     grads    grad.<name>    d(train_loss / tokens) / d(parameter), every parameter (nazar's names:
                             with tied embeddings generator.weight is decoder.embedding.weight)
              beam.tokens (B, N, n) I64 -1 padded, beam.lengths / beam.finished (B, N) I64,
              beam.scores (B, N) (GNMT ranking score), beam.log_probs (B, N), beam.attention
              (B, N, n, S) 0 padded: beam search with
              the options in metadata "beam" (K = 3, N = 2, α = 0.6, β = 0.2)
   __metadata__: case, config (the nazar.config JSON), label_smoothing, sampling_prob, seed, beam, inputs /
   params / outputs / grads (comma-separated), generator.
Guards, so float32 nazar cannot take another branch than float64 PyTorch: every greedy step's
best log-probability beats the second by >= 1e-4, every beam decision (last kept vs first
dropped candidate, neighbours in the n-best ranking) has a gap >= 1e-4, every local-p
p_t + 0.5 is >= 1e-3 away from an integer, and every hard decision of monotonic attention while
decoding (greedy and beam search) examines only positions with |e_j + r| >= 1e-3; a case whose
seed violates them moves to the next seed (deterministically), as does a monotonic case whose
hard alignments do not move on, skip, stay and run off the end somewhere (check_monotonic_decoding).

  /usr/bin/python3 tests/parity/gen/make_model_fixtures.py                 # rewrite tests/parity/fixtures
  /usr/bin/python3 tests/parity/gen/make_model_fixtures.py --out DIR       # write elsewhere (CTest: build dir)
  /usr/bin/python3 tests/parity/gen/make_model_fixtures.py --compare A B   # fixtures in A == those in B?
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

# The name this generator writes into its files' metadata and finds its own files by (the
# committed fixtures carry it): kept from when the script lived in tools/.
GENERATOR = "tools/make_model_fixtures.py (python/nazar_torch.py, float64 reference)"
BASE = {"src_vocab_size": 12, "tgt_vocab_size": 13, "embedding_size": 6}
SRC_LENGTHS, TGT_LENGTHS = (5, 3, 1), (4, 6, 2)

# name -> (config, label smoothing, source lengths, target lengths)
CASES = {
    "bahdanau_gru": ({"encoder": {"hidden_size": 4}, "decoder": {"kind": "bahdanau", "hidden_size": 5},
                      "attention": {"score": "additive", "attention_size": 3}}, 0.0, SRC_LENGTHS, TGT_LENGTHS),
    # deep output of size E, so the generator can share the target embedding; 2 decoder layers
    "bahdanau_deep_tied": ({"encoder": {"hidden_size": 4},
                            "decoder": {"kind": "bahdanau", "hidden_size": 5, "num_layers": 2, "bridge": "last",
                                        "deep_output": True, "deep_output_size": 6},
                            "attention": {"score": "additive"}, "tie_target_embeddings": True},
                           0.1, SRC_LENGTHS, TGT_LENGTHS),
    "luong_dot": ({"encoder": {"hidden_size": 3}, "decoder": {"kind": "luong", "hidden_size": 6},
                   "attention": {"score": "dot"}}, 0.0, SRC_LENGTHS, TGT_LENGTHS),
    # unidirectional 2-layer encoder, bridge from its final states
    "luong_general": ({"encoder": {"hidden_size": 4, "num_layers": 2, "bidirectional": False},
                       "decoder": {"kind": "luong", "hidden_size": 5, "bridge": "last"},
                       "attention": {"score": "general"}}, 0.0, SRC_LENGTHS, TGT_LENGTHS),
    "luong_general_feed": ({"encoder": {"hidden_size": 4},
                            "decoder": {"kind": "luong", "hidden_size": 5, "input_feeding": True},
                            "attention": {"score": "general", "scale": "sqrt"}}, 0.1, SRC_LENGTHS, TGT_LENGTHS),
    "luong_concat": ({"encoder": {"hidden_size": 4},
                      "decoder": {"kind": "luong", "hidden_size": 5, "bridge": "zero", "input_feeding": True},
                      "attention": {"score": "concat", "attention_size": 4}}, 0.0, SRC_LENGTHS, TGT_LENGTHS),
    # targets longer than sources: local-m's centre min(t, S_b - 1) clamps; D = 1 clips the window
    "luong_local_m": ({"encoder": {"hidden_size": 4},
                       "decoder": {"kind": "luong", "hidden_size": 5, "input_feeding": True},
                       "attention": {"score": "general", "local": "local-m", "window": 1}},
                      0.0, (4, 2, 3), (7, 5, 6)),
    "luong_local_p": ({"encoder": {"hidden_size": 4}, "decoder": {"kind": "luong", "hidden_size": 5},
                       "attention": {"score": "general", "local": "local-p", "window": 2, "position_size": 3}},
                      0.0, (9, 5, 3), (4, 6, 2)),
    "luong_lstm": ({"encoder": {"cell": "lstm", "hidden_size": 3, "num_layers": 2},
                    "decoder": {"kind": "luong", "cell": "lstm", "hidden_size": 5, "num_layers": 2,
                                "input_feeding": True},
                    "attention": {"score": "general"}}, 0.0, SRC_LENGTHS, TGT_LENGTHS),
    # Bahdanau with LSTM cells and a unidirectional encoder (bridge auto = mean)
    "bahdanau_lstm_mean": ({"encoder": {"cell": "lstm", "hidden_size": 5, "bidirectional": False},
                            "decoder": {"kind": "bahdanau", "cell": "lstm", "hidden_size": 5},
                            "attention": {"score": "additive", "attention_size": 3}}, 0.0, SRC_LENGTHS, TGT_LENGTHS),
    # the ablations docs/spec.md §6 allows when named: a multiplicative score before the RNN step (with a
    # learned scale), and the additive score after it (with local-p)
    "ablation_bahdanau_general": ({"encoder": {"hidden_size": 4},
                                   "decoder": {"kind": "bahdanau", "hidden_size": 5, "attention_timing": "before"},
                                   "attention": {"score": "general", "scale": "learned"}},
                                  0.0, SRC_LENGTHS, TGT_LENGTHS),
    "ablation_luong_additive_local_p": ({"encoder": {"hidden_size": 4},
                                         "decoder": {"kind": "luong", "hidden_size": 5, "attention_timing": "after"},
                                         "attention": {"score": "additive", "attention_size": 3, "local": "local-p",
                                                       "window": 1}}, 0.0, (9, 5, 3), (4, 6, 2)),
    # scheduled sampling with p = 1: every row feeds its own argmax from step 1 on (deterministic,
    # so nazar's train_step can be compared although its draws come from another generator)
    "bahdanau_sampled": ({"encoder": {"hidden_size": 4}, "decoder": {"kind": "bahdanau", "hidden_size": 5},
                          "attention": {"score": "additive", "attention_size": 3}}, 0.0, SRC_LENGTHS, TGT_LENGTHS),
    # dropout at every site with fixed masks (DROPOUT): deep output and the mean bridge (which reads
    # the dropped H); Luong split outputs with per-sentence masks; Luong input feeding
    "bahdanau_dropout": ({"encoder": {"hidden_size": 4},
                          "decoder": {"kind": "bahdanau", "hidden_size": 5, "bridge": "mean", "deep_output": True,
                                      "deep_output_size": 4},
                          "attention": {"score": "additive", "attention_size": 3}}, 0.1, SRC_LENGTHS, TGT_LENGTHS),
    "luong_dropout": ({"encoder": {"hidden_size": 4}, "decoder": {"kind": "luong", "hidden_size": 5},
                       "attention": {"score": "general"}}, 0.0, SRC_LENGTHS, TGT_LENGTHS),
    "luong_feed_dropout": ({"encoder": {"hidden_size": 4},
                            "decoder": {"kind": "luong", "hidden_size": 5, "input_feeding": True},
                            "attention": {"score": "general"}}, 0.0, SRC_LENGTHS, TGT_LENGTHS),
    # coverage attention (w_c drawn at random: nazar initialises it to 0), with the coverage loss
    "bahdanau_coverage": ({"encoder": {"hidden_size": 4}, "decoder": {"kind": "bahdanau", "hidden_size": 5},
                           "attention": {"score": "additive", "attention_size": 3, "coverage": True}},
                          0.0, SRC_LENGTHS, TGT_LENGTHS),
    "luong_concat_coverage": ({"encoder": {"hidden_size": 4}, "decoder": {"kind": "luong", "hidden_size": 5},
                               "attention": {"score": "concat", "attention_size": 4, "coverage": True}},
                              0.0, SRC_LENGTHS, TGT_LENGTHS),
    # layer-normalised cells (gains drawn at random: nazar initialises them to 1): GRU with a 2-layer
    # bidirectional encoder and a 2-layer Bahdanau decoder (layer 0 reads [e_t ; c_t]); GRU Luong
    # with input feeding; LSTM 2+2 layers with input feeding; sizes of 16 and more so that the
    # vector widths are used
    "bahdanau_layer_norm": ({"encoder": {"hidden_size": 16, "num_layers": 2, "layer_norm": True},
                             "decoder": {"kind": "bahdanau", "hidden_size": 16, "num_layers": 2, "layer_norm": True},
                             "attention": {"score": "additive", "attention_size": 8}}, 0.0, SRC_LENGTHS, TGT_LENGTHS),
    "luong_layer_norm_feed": ({"encoder": {"hidden_size": 8, "layer_norm": True},
                               "decoder": {"kind": "luong", "hidden_size": 17, "input_feeding": True,
                                           "layer_norm": True},
                               "attention": {"score": "general"}}, 0.1, SRC_LENGTHS, TGT_LENGTHS),
    "luong_lstm_layer_norm": ({"encoder": {"cell": "lstm", "hidden_size": 8, "layer_norm": True},
                               "decoder": {"kind": "luong", "cell": "lstm", "hidden_size": 16, "num_layers": 2,
                                           "input_feeding": True, "layer_norm": True},
                               "attention": {"score": "general"}}, 0.0, SRC_LENGTHS, TGT_LENGTHS),
    # residual connections in a 3-layer bidirectional encoder (layers 1 and 2 add their inputs)
    "bahdanau_residual": ({"encoder": {"hidden_size": 4, "num_layers": 3, "residual": True},
                           "decoder": {"kind": "bahdanau", "hidden_size": 5, "deep_output": True,
                                       "deep_output_size": 4},
                           "attention": {"score": "additive", "attention_size": 3}}, 0.0, SRC_LENGTHS, TGT_LENGTHS),
    # deep transition (2 GRU cells per encoder step) in a 2-layer bidirectional layer-normalised
    # encoder; sizes of 16 so that the vector widths are used
    "bahdanau_transition": ({"encoder": {"hidden_size": 16, "num_layers": 2, "layer_norm": True,
                                         "transition_depth": 2},
                             "decoder": {"kind": "bahdanau", "hidden_size": 16},
                             "attention": {"score": "additive", "attention_size": 8}}, 0.0, SRC_LENGTHS, TGT_LENGTHS),
    # an empty source sentence (S_b = 0): zero encoder states, mean bridge 0, empty local-p window
    "empty_source": ({"encoder": {"hidden_size": 4}, "decoder": {"kind": "luong", "hidden_size": 5},
                      "attention": {"score": "general", "local": "local-p", "window": 1}},
                     0.0, (4, 0, 2), (3, 2, 4)),
    # monotonic attention (r drawn around monotonic_bias_init, noise 0 so that the training step is
    # deterministic): Bahdanau GRU with the additive score (query s_{t-1}, before the RNN step), and
    # Luong general with a learned scale and input feeding (query s_t, after it); an empty source
    # sentence in the second (α_{-1} = 0: every step attends to nothing)
    "bahdanau_monotonic": ({"encoder": {"hidden_size": 4}, "decoder": {"kind": "bahdanau", "hidden_size": 5},
                            "attention": {"score": "additive", "attention_size": 3, "monotonic": True,
                                          "monotonic_bias_init": 0.125, "monotonic_noise": 0.0}},
                           0.0, (9, 5, 3), (4, 6, 2)),
    "luong_general_monotonic": ({"encoder": {"hidden_size": 4},
                                 "decoder": {"kind": "luong", "hidden_size": 5, "input_feeding": True},
                                 "attention": {"score": "general", "scale": "learned", "monotonic": True,
                                               "monotonic_bias_init": 0.25, "monotonic_noise": 0.0}},
                                0.1, (6, 0, 4), (5, 3, 6)),
    # MoChA (v_c drawn at random, noise 0): the monotonic cases with the chunkwise β over w = 2 (Bahdanau)
    # and w = 3 (Luong concat, input feeding, an empty sentence); decoding attends to the hard chunk
    "bahdanau_mocha": ({"encoder": {"hidden_size": 4}, "decoder": {"kind": "bahdanau", "hidden_size": 5},
                        "attention": {"score": "additive", "attention_size": 3, "monotonic": True,
                                      "monotonic_bias_init": 0.125, "monotonic_noise": 0.0, "mocha_chunk": 2}},
                       0.0, (9, 5, 3), (4, 6, 2)),
    "luong_concat_mocha": ({"encoder": {"hidden_size": 4},
                            "decoder": {"kind": "luong", "hidden_size": 5, "input_feeding": True},
                            "attention": {"score": "concat", "attention_size": 4, "monotonic": True,
                                          "monotonic_bias_init": 0.0, "monotonic_noise": 0.0, "mocha_chunk": 3}},
                           0.1, (7, 0, 5), (5, 3, 6)),
}
SAMPLING = {"bahdanau_sampled": 1.0}  # case -> scheduled sampling probability of the training step
# case -> (dropout p, per_sequence): the training step runs with explicit masks at every dropout
# site of nazar/models/seq2seq.h (DropoutMasks), drawn here and stored in the expect file
DROPOUT = {"bahdanau_dropout": (0.3, False), "luong_dropout": (0.4, True), "luong_feed_dropout": (0.25, False)}
# case -> coverage_loss_weight of the training step (its train_loss and grads include the loss)
COVERAGE_LOSS = {"bahdanau_coverage": 0.7, "luong_concat_coverage": 0.4}
GREEDY_MARGIN, POSITION_MARGIN, MONOTONIC_MARGIN = 1e-4, 1e-3, 1e-3
BEAM = {"beam_size": 3, "n_best": 2, "alpha": 0.6, "beta": 0.2}


def config_of(name):
    cfg = json.loads(json.dumps(BASE))
    cfg.update(json.loads(json.dumps(CASES[name][0])))
    return nt.model_config(cfg)


def vocab_meta(cfg):
    """Word tokenizers and vocabularies "s4".. / "t4".. (Vocab::to_json, Tokenizer::to_string)."""
    specials = ["<pad>", "<unk>", "<s>", "</s>"]
    voc = lambda p, n: json.dumps({"specials": specials, "pieces": [f"{p}{i}" for i in range(4, n)]})  # noqa: E731
    return {"nazar.src_vocab": voc("s", cfg["src_vocab_size"]), "nazar.tgt_vocab": voc("t", cfg["tgt_vocab_size"]),
            "nazar.src_tokenizer": '{"kind":"word"}', "nazar.tgt_tokenizer": '{"kind":"word"}'}


class Guard(Exception):
    pass


def check_positions(model):
    """A forward hook on local-p attention: p_t + 0.5 must stay away from integers."""
    import torch

    def hook(att, args, _out):
        query, _, _, lengths, t = args[:5]  # (a sixth: the dropout mask)
        p = att.positions(query, torch.as_tensor(lengths), t).detach()
        frac = (p + 0.5) - torch.floor(p + 0.5)
        real = torch.as_tensor(lengths) > 0
        if bool(((frac < POSITION_MARGIN) | (frac > 1 - POSITION_MARGIN))[real].any()):
            raise Guard(f"local-p p_t too close to a rounding edge: {p.tolist()}")
    return model.attention.register_forward_hook(hook) if model.attention.local == "local-p" else None


def check_greedy_margins(model, src, results):
    """Replays each greedy result with the step API (decoding's: monotonic attention attends hard,
    as the search did; for the other models the same as forced decoding)."""
    import torch
    sp = model.config["special_ids"]
    for ids, r in zip(src, results):
        if not r["tokens"]:
            continue
        with torch.no_grad():
            enc = model.encode(torch.tensor([ids], dtype=torch.int64).reshape(1, len(ids)), [len(ids)])
            state, rows = model.init_state(enc), []
            for y in [sp["bos"]] + r["tokens"][:-1]:
                lp, _, state = model.step(torch.tensor([y]), enc, state)
                rows.append(lp[0])
        lp = torch.stack(rows).clone()
        lp[:, [sp["pad"], sp["bos"]]] = -math.inf  # the search's choice is among the other tokens
        top = lp.topk(2, -1).values
        if float((top[:, 0] - top[:, 1]).min()) < GREEDY_MARGIN:
            raise Guard("greedy step with a near tie")


def check_monotonic_decoding(lengths, greedy, beams):
    """Monotonic attention's hard alignments must take every branch: over the greedy and beam
    results of the non-empty sentences, a greedy step after the first moves from one position to
    a later one, a step skips a position (p < 1/2 there), one stays where the previous one
    stopped, and one runs off the end (the rest attend to nothing). A row's stop is its last
    nonzero weight: the one-hot position, or the end of MoChA's chunk."""
    greedy_moves = skips = stays = off = 0
    rows = [(r["attention"], n, True) for r, n in zip(greedy, lengths)]
    rows += [(h["attention"], n, False) for hs, n in zip(beams, lengths) for h in hs]
    for a, n, is_greedy in rows:
        where = 0  # α_{-1} = one-hot at 0
        for t, row in enumerate(a.tolist() if n > 0 else []):
            now = max((j for j, x in enumerate(row) if x != 0), default=-1)
            off += now == -1 and where != -1
            greedy_moves += is_greedy and t > 0 and now > where >= 0
            skips += now > where + 1
            stays += now == where != -1
            where = now
    if greedy_moves < 1 or skips < 1 or stays < 1 or off < 1:
        raise Guard(f"monotonic decoding too plain: {greedy_moves} greedy moves, {skips} skips, {stays} stays, "
                    f"{off} runs off the end")


def dropout_masks(cfg, batch, p, per_sequence, seed):
    """Inverted-dropout masks (float64, 0 or 1/(1−p)) for Seq2Seq.forward's `masks`, batch-major;
    per_sequence: one draw per sentence, repeated along the sequence axis."""
    import torch
    g = torch.Generator().manual_seed(seed + 2000)
    B, S = batch.src.shape
    T = batch.tgt_in.shape[1]
    E, C, D = cfg["embedding_size"], nt.encoder_output_size(cfg), nt.generator_input_size(cfg)

    def draw(n, width):
        m = (torch.rand(B, 1 if per_sequence else n, width, generator=g, dtype=torch.float64) >= p)
        return (m.to(torch.float64) / (1 - p)).expand(B, n, width).contiguous()
    masks = {"src_emb": draw(S, E), "enc_out": draw(S, C), "tgt_emb": draw(T, E), "dec_out": draw(T, D)}
    m = (torch.rand(B, 1 if per_sequence else T, S, generator=g, dtype=torch.float64) >= p)
    masks["attention"] = (m.to(torch.float64) / (1 - p)).expand(B, T, S).contiguous()
    return masks


def decoded_tensors(greedy, beams, S):
    """The greedy and beam-search results as the fixture's arrays, padded: tokens with -1,
    attention with 0 (S source positions)."""
    f32 = lambda t: t.detach().numpy().astype(np.float32)  # noqa: E731
    t = {}
    n = max(len(r["tokens"]) for r in greedy)
    t["greedy_tokens"] = np.array([r["tokens"] + [-1] * (n - len(r["tokens"])) for r in greedy], np.int64)
    t["greedy_lengths"] = np.array([len(r["tokens"]) for r in greedy], np.int64)
    t["greedy_scores"] = np.array([r["score"] for r in greedy], np.float32)
    t["greedy_attention"] = np.zeros((len(greedy), n, S), np.float32)
    for b, r in enumerate(greedy):
        a = r["attention"]
        t["greedy_attention"][b, :a.shape[0], :a.shape[1]] = f32(a)
    n = max(len(h["tokens"]) for hs in beams for h in hs)
    t["beam.tokens"] = np.array([[h["tokens"] + [-1] * (n - len(h["tokens"])) for h in hs] for hs in beams], np.int64)
    t["beam.lengths"] = np.array([[len(h["tokens"]) for h in hs] for hs in beams], np.int64)
    t["beam.finished"] = np.array([[int(h["finished"]) for h in hs] for hs in beams], np.int64)
    t["beam.scores"] = np.array([[h["score"] for h in hs] for hs in beams], np.float32)
    t["beam.log_probs"] = np.array([[h["log_prob"] for h in hs] for hs in beams], np.float32)
    t["beam.attention"] = np.zeros(t["beam.tokens"].shape + (S,), np.float32)
    for b, hs in enumerate(beams):
        for k, h in enumerate(hs):
            a = h["attention"]
            t["beam.attention"][b, k, :a.shape[0], :a.shape[1]] = f32(a)
    return t


def new_model(cfg, seed):
    """PyTorch's init (float32), then a sharper output layer with a head start for </s>, so greedy
    decoding both finishes and runs to the limit; the parameters nazar starts at a constant drawn
    at random (coverage w_c, layer-norm gains, monotonic r around its init, with scores 3 times as
    large so that p = σ(e + r) is far from 1/2 and the alignments are neither uniform nor one-hot;
    MoChA's v_c at 2 to 4 in size, so that each chunk's softmax is far from uniform)."""
    import torch
    torch.manual_seed(seed)
    model = nt.Seq2Seq(cfg)
    with torch.no_grad():
        if not cfg["tie_target_embeddings"]:
            model.generator.weight.mul_(3.0)
        model.generator.bias[cfg["special_ids"]["eos"]] += 0.5
        if cfg["attention"]["coverage"]:
            w = torch.Generator().manual_seed(seed + 3000)
            model.attention.coverage.weight.copy_(torch.rand(model.attention.coverage.weight.shape, generator=w) * 3 - 1.5)
        w = torch.Generator().manual_seed(seed + 4000)
        for k, p in model.named_parameters():
            if ".ln_weight_" in k:
                p.copy_(torch.rand(p.shape, generator=w) + 0.5)
        if cfg["attention"]["monotonic"]:
            w = torch.Generator().manual_seed(seed + 5000)
            model.attention.monotonic_bias.add_(torch.rand(1, generator=w) - 0.5)
            att = model.attention
            if hasattr(att, "v") or hasattr(att, "key"):
                (att.v if hasattr(att, "v") else att.key).weight.mul_(3.0)
        if cfg["attention"]["mocha_chunk"]:  # |v_c| in [2, 4), random signs
            w, shape = torch.Generator().manual_seed(seed + 6000), model.attention.chunk_v.weight.shape
            sign = torch.where(torch.rand(shape, generator=w) < 0.5, -1.0, 1.0)
            model.attention.chunk_v.weight.copy_(sign * (2 + 2 * torch.rand(shape, generator=w)))
    return model


def build_case(name, seed):
    import torch
    cfg = config_of(name)
    smoothing, src_len, tgt_len = CASES[name][1:]
    model = new_model(cfg, seed)
    g = torch.Generator().manual_seed(seed + 1000)
    draw = lambda n, V: torch.randint(4, V, (n,), generator=g).tolist()  # noqa: E731  no specials inside
    src = [draw(n, cfg["src_vocab_size"]) for n in src_len]
    tgt = [draw(n, cfg["tgt_vocab_size"]) for n in tgt_len]
    batch = nt.make_batch(src, tgt, cfg["special_ids"])

    model_tensors = {k: v.detach().clone() for k, v in model.state_dict().items()}
    ref = nt.Seq2Seq(cfg).double()
    ref.load_state_dict({k: v.double() for k, v in model_tensors.items()})
    hook = check_positions(ref)
    try:
        scores = nt.score(ref.eval(), batch)
        with torch.no_grad():
            eval_total, tokens = nt.loss(ref, batch, smoothing)
        sampling, margins = SAMPLING.get(name, 0.0), []
        masks = dropout_masks(cfg, batch, *DROPOUT[name], seed) if name in DROPOUT else None
        total, _ = nt.loss(ref.train(), batch, smoothing, sampling_prob=sampling, margins=margins,
                           masks=masks, coverage_loss_weight=COVERAGE_LOSS.get(name, 0.0))  # RNN dropout 0
        if margins and min(margins) < GREEDY_MARGIN:
            raise Guard("scheduled-sampling argmax with a near tie")
        (total / tokens).backward()
        ref.eval()
        ref.attention.margins = []  # monotonic attention's hard decisions: min |e_j + r| examined
        greedy = nt.greedy(ref, src)
        check_greedy_margins(ref, src, greedy)
        margins = []
        beams = nt.beam_search(ref, src, **BEAM, margins=margins)
        if margins and min(margins) < GREEDY_MARGIN:
            raise Guard(f"beam search decision with a near tie ({min(margins):.2g})")
        if ref.attention.margins and min(ref.attention.margins) < MONOTONIC_MARGIN:
            raise Guard(f"monotonic attention: e_j + r too close to 0 ({min(ref.attention.margins):.2g})")
        if cfg["attention"]["monotonic"]:
            check_monotonic_decoding(src_len, greedy, beams)
    finally:
        ref.attention.margins = None
        if hook is not None:
            hook.remove()

    f32 = lambda t: t.detach().numpy().astype(np.float32)  # noqa: E731
    t = {"src": batch.src.numpy(), "src_lengths": batch.src_lengths.numpy(), "tgt_in": batch.tgt_in.numpy(),
         "tgt_out": batch.tgt_out.numpy(), "scores": f32(scores), "loss": f32(eval_total.reshape(1)),
         "train_loss": f32(total.reshape(1)),
         "tokens": np.array([tokens], np.float32)}
    t.update(decoded_tensors(greedy, beams, batch.src.shape[1]))
    params = []
    for k, p in ref.named_parameters():  # tied: generator.weight is decoder.embedding.weight (listed once)
        t["grad." + k] = f32(p.grad)
        params.append(k)
    outputs = ["scores", "loss", "train_loss", "tokens", "greedy_tokens", "greedy_lengths", "greedy_scores", "greedy_attention",
               "beam.tokens", "beam.lengths", "beam.finished", "beam.scores", "beam.log_probs", "beam.attention"]
    if masks is not None:  # nazar's layout: src_emb, enc_out (B, S, ·); tgt_emb, dec_out time-major (T, B, ·)
        for k, m in masks.items():
            t["mask." + k] = f32(m.transpose(0, 1) if k in ("tgt_emb", "dec_out", "attention") else m)
    meta = {"case": name, "config": nt.config_json(cfg), "label_smoothing": repr(smoothing),
            "sampling_prob": repr(sampling), "seed": str(seed),
            "inputs": "src,src_lengths,tgt_in,tgt_out", "params": ",".join(params), "outputs": ",".join(outputs),
            "grads": ",".join(params),
            "beam": json.dumps(BEAM, sort_keys=True), "generator": GENERATOR}
    if name in COVERAGE_LOSS:
        meta["coverage_loss_weight"] = repr(COVERAGE_LOSS[name])
    if masks is not None:
        meta["dropout"] = repr(DROPOUT[name][0])
        meta["dropout_per_sequence"] = str(DROPOUT[name][1]).lower()
    return model, dict(vocab_meta(cfg), generator=GENERATOR, case=name), t, meta


def write_all(out_dir):
    remove_files_of(out_dir, GENERATOR)
    if np is None:
        print(f"make_model_fixtures: {MISSING} (apt install python3-numpy python3-torch); skipped")
        return SKIP
    try:
        import torch
    except ImportError:
        print("make_model_fixtures: torch is not installed (apt install python3-torch); skipped")
        return SKIP
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    total = 0
    for name in sorted(CASES):
        base = zlib.crc32(name.encode()) % 1000003  # by name: adding a case leaves the others unchanged
        for attempt in range(50):
            try:
                model, model_meta, tensors, meta = build_case(name, base + attempt)
                break
            except Guard as e:
                print(f"make_model_fixtures: {name}: seed {base + attempt}: {e}; next seed")
        else:
            raise RuntimeError(f"{name}: no seed passed the guards")
        p_model = os.path.join(out_dir, f"model_{name}.safetensors")
        p_expect = os.path.join(out_dir, f"model_{name}_expect.safetensors")
        nt.save_model(p_model, model, model_meta)
        nt.save_safetensors(p_expect, tensors, meta)
        total += os.path.getsize(p_model) + os.path.getsize(p_expect)
    print(f"make_model_fixtures: {2 * len(CASES)} files, {total} bytes in {out_dir}")
    return 0


def compare(a_dir, b_dir):
    """Same files, tensor names, dtypes, shapes and metadata; model parameters, inputs and integer
    outputs bit-identical; float outputs and gradients within 1e-6 (norm-wise relative)."""
    if np is None:
        print(f"compare: {MISSING}; skipped")
        return SKIP
    a_files, b_files = files_of(a_dir, GENERATOR), files_of(b_dir, GENERATOR)
    if not a_files:
        print(f"compare: no model fixtures in {a_dir} (not regenerated: torch missing?); skipped")
        return SKIP
    bad = []
    if a_files != b_files:
        bad.append(f"file sets differ: {sorted(set(a_files) ^ set(b_files))}")
    for f in sorted(set(a_files) & set(b_files)):
        ta, ma = nt.load_safetensors(os.path.join(a_dir, f))
        tb, mb = nt.load_safetensors(os.path.join(b_dir, f))
        if ma != mb:
            bad.append(f"{f}: metadata differs: {sorted(k for k in set(ma) | set(mb) if ma.get(k) != mb.get(k))}")
        is_model = "nazar.format" in ma
        bad += tensor_differences(f, ta, tb, lambda k, x: is_model or x.dtype.kind == "i", np,
                                  " (parameters and integer tensors must be bit-identical)")
    for line in bad:
        print("compare:", line)
    print(f"compare: {len(a_files)} model fixtures in {a_dir} vs {len(b_files)} in {b_dir}: "
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
