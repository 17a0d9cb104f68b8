"""nazar in PyTorch (``nazar.torch``): the same layers, attention and models, with the same
parameter names. Pure Python over torch and numpy; it does not need nazar's extension, and
python/nazar_torch.py still imports it as ``nazar_torch`` from a source checkout (tests, fixture
generators, benchmarks).

The state_dict names follow nazar's weight-naming contract (docs/design.md §5), so a nazar
.safetensors model loads here and vice versa (docs/pytorch.md):

    model, meta = load_model("model.safetensors")    # a Seq2Seq built from meta["nazar.config"]
    score(model, src_ids, tgt_ids)                   # log p(y | x) per sentence (nazar score)
    greedy(model, src_ids); beam_search(model, src_ids, beam_size=5)
    save_model("out.safetensors", model, meta)       # a file nazar reads

    Embedding            weight (V, E)                         torch.nn.Embedding
    Linear               weight (out, in), bias (out)          torch.nn.Linear
    xent_loss            summed (label-smoothed) cross-entropy  nazar/nn/softmax_xent.h
    GRUCell / LSTMCell   weight_ih, weight_hh, bias_ih, bias_hh torch.nn.GRUCell / LSTMCell
    GRU / LSTM           weight_ih_l{k}[_reverse], ...          torch.nn.GRU / LSTM, batch_first,
                         forward(x, lengths): packed, so a padded sentence behaves as if alone
    GRUTransition        weight_hh, bias_ih, bias_hh            a deep-transition GRU step without
                         input (nazar/nn/transition.h); make_rnn(transition_depth=D) names
                         them weight_hh_l{k}[_reverse]_t{j}, ...
    Attention            query.weight (A, H), key.weight (A, C) or (H, C) for general,
                         v.weight (1, A), scale (1), position.weight (P, H),
                         position_v.weight (1, P), coverage.weight (1, A),
                         monotonic_bias (1), chunk_v.weight (1, A) (MoChA)
                                                               (nazar/attention/attention.h)
    Seq2Seq              encoder.*, bridge.*, decoder.*, attention.*, generator.*
                         (nazar/models/seq2seq.h, decoder.h, encoder.h, config.h)

Attention follows nazar/attention/attention.h and local.h to the letter (docs/spec.md §3-5):
scores over the real positions of each sentence (padding gets weight exactly 0); local-m
centres on min(t, S_b - 1); local-p predicts p_t = S_b * sigmoid(v_p . tanh(W_p q)), centres
on min(floor(p_t + 0.5), S_b - 1), and multiplies the window softmax by
exp(-(i - p_t)^2 / (2 sigma^2)), sigma = D / 2, without renormalising. Monotonic attention
(Raffel et al. 2017; global, any score, no coverage) replaces the softmax with the expected
alignment of p_j = sigmoid(e_j + r + noise) given the previous step's alignment, which the decoder
carries; greedy and beam search attend hard (docs/spec.md §5.6). MoChA (mocha_chunk w >= 1,
Chiu & Raffel 2018) attends softly to the w positions ending at the monotonic stop
(chunkwise_weights; decoding: hard_chunk) and still carries the monotonic alignment.

Safetensors I/O (load_safetensors / save_safetensors) needs only struct, json and numpy, so
it works without the `safetensors` package, and without torch (then only it is defined here).

Modules, each re-exported here: weights (safetensors I/O, quantized files) | layers | attention |
config (nazar/models/config.h) | model (encoder, decoder, seq2seq, batches, model files) |
losses (losses and scores, copy attention, guided alignment) | decoding (greedy, beam search).
Run with Debian's torch: /usr/bin/python3.
"""

import json  # noqa: F401  (scripts reach it as nazar_torch.json)

import numpy as np  # noqa: F401

from .weights import (MAX_HEADER, dequantize, load_safetensors, load_state_dict,  # noqa: F401
                      parse_safetensors, save_safetensors, serialize_safetensors)

try:  # the safetensors I/O above works without torch; `torch` is None then
    import torch
    import torch.nn as nn  # noqa: F401
except ImportError:  # pragma: no cover
    torch = None
    nn = None

if torch is not None:
    from .attention import (LOCALS, SCALES, SCORES, Attention, chunkwise_weights,  # noqa: F401
                            chunkwise_weights_reference, hard_chunk, monotonic_alignment,
                            monotonic_alignment_parallel)
    from .config import (DEFAULT_CONFIG, attention_config, config_json, effective_bridge,  # noqa: F401
                         effective_timing, encoder_output_size, generator_input_size, model_config)
    from .decoding import (beam_search, coverage_penalty, greedy, length_penalty,  # noqa: F401
                           max_decode_length)
    from .layers import (GRU, LSTM, Embedding, GRUCell, GRUTransition, LayerNormGRU,  # noqa: F401
                         LayerNormGRUCell, LayerNormLSTM, LayerNormLSTMCell, Linear, LSTMCell, make_rnn,
                         xent_loss)
    from .losses import (COPY_EPSILON, GUIDED_ALIGNMENT_EPSILON, copy_log_probs, copy_loss,  # noqa: F401
                       coverage_loss, guided_alignment_loss, loss, score, train_loss)
    from .model import (MODEL_FORMAT, Batch, Decoder, DeepOutput, Encoded, Encoder, Seq2Seq,  # noqa: F401
                        State, load_model, make_batch, save_model)
