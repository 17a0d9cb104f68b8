#!/usr/bin/python3
"""Writes the guided-alignment PyTorch parity fixtures of nazar (models/guided_alignment.h,
docs/spec.md §7 "Guided alignment").

Per case (Bahdanau additive, Luong general + input feeding, Luong local-m and local-p, Bahdanau
coverage with its loss):
  model_guided_<case>.safetensors         a nazar model file written by python/nazar/torch/
                                          save_model (seeded PyTorch init, float32)
  model_guided_<case>_expect.safetensors  float64 values computed from that file:
     inputs   src, src_lengths, tgt_in, tgt_out (B, S/T; make_batch layout), links (N, 3): rows
              (b, i, j) of the sentences' alignment links (many-to-one, one-to-many, unaligned
              targets, links outside local windows)
     outputs  ce (1), tokens (1)               Σ cross-entropy over non-pad targets, their count
              alignment_loss (1), aligned (1)  λ · guided_alignment_loss, aligned positions
              coverage_loss (1)                λ_cov · coverage_loss (coverage case; else 0)
     grads    grad.<name>     d((ce + coverage_loss + alignment_loss) / tokens) / d(parameter)
  metadata guided_alignment_weight λ, coverage_loss_weight λ_cov.
The C++ side: tests/parity/test_parity_guided.cpp.

  /usr/bin/python3 tests/parity/gen/make_guided_fixtures.py --out DIR
Exit code 77 (CTest SKIP_RETURN_CODE) when torch is missing.
"""

import sys

from fixture_files import case_model, cases_main, import_reference

np, nt, MISSING = import_reference()

# The name this generator writes into its files' metadata and finds its own files by (the
# committed fixtures carry it): kept from when the script lived in tools/.
GENERATOR = "tools/make_guided_fixtures.py (python/nazar/torch.py, float64 reference)"
BASE = {"src_vocab_size": 12, "tgt_vocab_size": 13, "embedding_size": 6}
CASES = {
    "bahdanau_additive": {"encoder": {"hidden_size": 4}, "decoder": {"kind": "bahdanau", "hidden_size": 5},
                          "attention": {"score": "additive", "attention_size": 3}},
    "luong_general_feed": {"encoder": {"hidden_size": 4},
                           "decoder": {"kind": "luong", "hidden_size": 5, "input_feeding": True},
                           "attention": {"score": "general"}},
    "luong_local_m": {"encoder": {"hidden_size": 4}, "decoder": {"kind": "luong", "hidden_size": 5},
                      "attention": {"score": "general", "local": "local-m", "window": 1}},
    "luong_local_p": {"encoder": {"hidden_size": 4}, "decoder": {"kind": "luong", "hidden_size": 5},
                      "attention": {"score": "general", "local": "local-p", "window": 1}},
    "bahdanau_coverage": {"encoder": {"hidden_size": 4}, "decoder": {"kind": "bahdanau", "hidden_size": 5},
                          "attention": {"score": "additive", "attention_size": 3, "coverage": True}},
}
WEIGHT = {"bahdanau_additive": 0.8, "luong_general_feed": 1.3, "luong_local_m": 0.6, "luong_local_p": 0.9,
          "bahdanau_coverage": 0.7}
COVERAGE = {"bahdanau_coverage": 0.4}
SRC = [[5, 6, 7, 8, 9], [6, 4, 8], [10]]
TGT = [[7, 5, 4, 10], [9, 6, 6, 4, 5, 11], [8, 8]]
# (i, j) per sentence: target 0 of sentence 0 has three sources, 4→0 outside a local window of 1;
# its target 2 is unaligned; sentence 1 has a one-to-many source (1→1, 1→2)
LINKS = [[(0, 0), (1, 0), (4, 0), (2, 1), (3, 3)],
         [(0, 0), (1, 1), (1, 2), (2, 3), (2, 5)],
         [(0, 0), (0, 1)]]


def build_case(name, seed):
    import torch

    def draw_coverage(model, cfg):
        if cfg["attention"]["coverage"]:  # nazar initialises w_c to 0: draw it so that it matters
            with torch.no_grad():
                w = torch.Generator().manual_seed(seed)
                model.attention.coverage.weight.copy_(
                    torch.rand(model.attention.coverage.weight.shape, generator=w) * 3 - 1.5)

    cfg, model, ref = case_model(nt, BASE, CASES[name], seed, draw_coverage)
    batch = nt.make_batch(SRC, TGT, cfg["special_ids"])
    pad = cfg["special_ids"]["pad"]
    logits, alphas = ref(batch.src, batch.src_lengths, batch.tgt_in)
    ce = nt.xent_loss(logits.reshape(-1, logits.shape[-1]), batch.tgt_out.reshape(-1), pad)
    tokens = int((batch.tgt_out != pad).sum())
    lam = WEIGHT[name]
    ga, aligned = nt.guided_alignment_loss(alphas, LINKS)
    ga = lam * ga
    cov = COVERAGE.get(name, 0.0) * nt.coverage_loss(alphas, batch.tgt_out, pad)
    ((ce + cov + ga) / tokens).backward()
    f32 = lambda t: t.detach().numpy().astype(np.float32).reshape(-1)  # noqa: E731
    links = np.array([[b, i, j] for b, ls in enumerate(LINKS) for i, j in ls], np.int64)
    t = {"src": batch.src.numpy(), "src_lengths": batch.src_lengths.numpy(), "tgt_in": batch.tgt_in.numpy(),
         "tgt_out": batch.tgt_out.numpy(), "links": links, "ce": f32(ce), "tokens": np.array([tokens], np.float32),
         "alignment_loss": f32(ga), "aligned": np.array([aligned], np.float32),
         "coverage_loss": np.array([float(cov)], np.float32)}
    params = []
    for k, p in ref.named_parameters():
        t["grad." + k] = p.grad.detach().numpy().astype(np.float32)
        params.append(k)
    meta = {"case": name, "config": nt.config_json(cfg), "seed": str(seed), "params": ",".join(params),
            "generator": GENERATOR, "guided_alignment_weight": repr(lam),
            "coverage_loss_weight": repr(COVERAGE.get(name, 0.0))}
    return model, {"generator": GENERATOR, "case": name}, t, meta


if __name__ == "__main__":
    sys.exit(cases_main("make_guided_fixtures", GENERATOR, "guided", CASES, build_case, nt,
                        MISSING))
