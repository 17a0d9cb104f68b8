#!/usr/bin/python3
"""Writes the copy-attention PyTorch parity fixtures of nazar (models/copy.h, docs/spec.md §7a).

Per case (Bahdanau GRU global, Luong general + input feeding, Luong local-m):
  model_copy_<case>.safetensors         a nazar model file written by python/nazar/torch/
                                        save_model (seeded PyTorch init, float32, copy.gate.*)
  model_copy_<case>_expect.safetensors  float64 values computed from that file:
     inputs   src, src_lengths, tgt_in, tgt_out (B, S/T; batch_from_ids layout), src_copy (B, S)
              and tgt_copy (B, T) extended ids: every sentence's source holds an out-of-vocabulary
              word twice (id V) that its target needs once (a copy-only target), and a
              vocabulary word that the target also has
     outputs  loss (1), tokens (1)        Σ −log(P(y) + ε) over non-pad targets and their count
              scores (B)                  per-sentence Σ log(P(y) + ε)
              step_log_probs (T, B, V+1)  log(P(w) + ε) of every teacher-forced step
              loss_ls (1)                 the same sum with label smoothing 0.1 (docs/spec.md §7a)
     grads    grad.<name>                 d(loss / tokens) / d(parameter), every parameter
              grad_ls.<name>              d(loss_ls / tokens) / d(parameter)
The C++ side: tests/parity/test_parity_copy.cpp.

  /usr/bin/python3 tests/parity/gen/make_copy_fixtures.py --out DIR
Exit code 77 (CTest SKIP_RETURN_CODE) when torch is missing.
"""

import sys

from fixture_files import case_model, cases_main, import_reference

np, nt, MISSING = import_reference()

LS = 0.1  # the label smoothing of loss_ls / grad_ls.*
# The name this generator writes into its files' metadata and finds its own files by (the
# committed fixtures carry it): kept from when the script lived in tools/.
GENERATOR = "tools/make_copy_fixtures.py (python/nazar/torch.py, float64 reference)"
BASE = {"src_vocab_size": 12, "tgt_vocab_size": 13, "embedding_size": 6, "copy_attention": True}
CASES = {
    "bahdanau_gru": {"encoder": {"hidden_size": 4}, "decoder": {"kind": "bahdanau", "hidden_size": 5},
                     "attention": {"score": "additive", "attention_size": 3}},
    "luong_general_feed": {"encoder": {"hidden_size": 4},
                           "decoder": {"kind": "luong", "hidden_size": 5, "input_feeding": True},
                           "attention": {"score": "general"}},
    "luong_local_m": {"encoder": {"hidden_size": 4}, "decoder": {"kind": "luong", "hidden_size": 5},
                      "attention": {"score": "general", "local": "local-m", "window": 1}},
}
# sources (ids; OOV = the source <unk> 1 standing for word "w") and targets; extended ids below
SRC = [[5, 1, 7, 1, 9], [6, 1, 8], [1]]
TGT = [[7, 1, 4, 10], [1, 6, 6, 4, 5, 11], [1, 1]]


def extended(cfg):
    V = cfg["tgt_vocab_size"]
    src_copy = [[V if x == 1 else x for x in s] for s in SRC]
    tgt_copy = [[V if y == 1 else y for y in t] for t in TGT]
    return src_copy, tgt_copy


def build_case(name, seed):
    import torch
    cfg, model, ref = case_model(nt, BASE, CASES[name], seed)
    batch = nt.make_batch(SRC, TGT, cfg["special_ids"])
    src_copy, tgt_copy = extended(cfg)
    B, S, T = batch.src.shape[0], batch.src.shape[1], batch.tgt_in.shape[1]
    sc = torch.zeros(B, S, dtype=torch.long)
    tc = torch.zeros(B, T, dtype=torch.long)
    for b in range(B):
        sc[b, :len(src_copy[b])] = torch.tensor(src_copy[b])
        tc[b, :len(tgt_copy[b])] = torch.tensor(tgt_copy[b])
        tc[b, len(tgt_copy[b])] = cfg["special_ids"]["eos"]
    V1 = cfg["tgt_vocab_size"] + 1
    # label smoothing LS first (grad_ls.*), then the unsmoothed loss (grad.*)
    total_ls, tokens = nt.copy_loss(ref, batch, sc, tc, V1, label_smoothing=LS)
    (total_ls / tokens).backward()
    grads_ls = {k: p.grad.clone() for k, p in ref.named_parameters()}
    ref.zero_grad()
    total, tokens = nt.copy_loss(ref, batch, sc, tc, V1)
    (total / tokens).backward()
    with torch.no_grad():
        logits, alphas = ref(batch.src, batch.src_lengths, batch.tgt_in)
        lp = nt.copy_log_probs(logits, alphas, ref.copy_gates, sc, V1)  # (B, T, V1)
        pad = cfg["special_ids"]["pad"]
        scores = lp.gather(-1, tc[..., None]).squeeze(-1).masked_fill(tc == pad, 0.0).sum(1)
    f32 = lambda t: t.detach().numpy().astype(np.float32)  # noqa: E731
    t = {"src": batch.src.numpy(), "src_lengths": batch.src_lengths.numpy(), "tgt_in": batch.tgt_in.numpy(),
         "tgt_out": batch.tgt_out.numpy(), "src_copy": sc.numpy(), "tgt_copy": tc.numpy(),
         "loss": f32(total.reshape(1)), "tokens": np.array([tokens], np.float32), "scores": f32(scores),
         "step_log_probs": f32(lp.transpose(0, 1)), "loss_ls": f32(total_ls.reshape(1))}
    params = []
    for k, p in ref.named_parameters():
        t["grad." + k] = f32(p.grad)
        t["grad_ls." + k] = f32(grads_ls[k])
        params.append(k)
    meta = {"case": name, "config": nt.config_json(cfg), "seed": str(seed), "params": ",".join(params),
            "generator": GENERATOR}
    return model, {"generator": GENERATOR, "case": name}, t, meta


if __name__ == "__main__":
    sys.exit(cases_main("make_copy_fixtures", GENERATOR, "copy", CASES, build_case, nt, MISSING))
