"""The model configuration of nazar.torch (nazar/models/config.h): defaults, validation, the
"nazar.config" JSON string and the sizes derived from it. Plain Python (json)."""

import json
import math


# ---- configuration (nazar/models/config.h) ----


DEFAULT_CONFIG = {
    "src_vocab_size": 0, "tgt_vocab_size": 0, "embedding_size": 256,
    "encoder": {"cell": "gru", "hidden_size": 256, "num_layers": 1, "bidirectional": True, "dropout": 0.0,
                "layer_norm": False, "residual": False, "transition_depth": 1},
    "decoder": {"kind": "bahdanau", "cell": "gru", "hidden_size": 256, "num_layers": 1, "dropout": 0.0,
                "bridge": "auto", "attention_timing": "auto", "input_feeding": False, "deep_output": False,
                "deep_output_size": 0, "layer_norm": False},
    "attention": {"score": "additive", "scale": "none", "local": "global", "window": 10, "attention_size": 0,
                  "position_size": 0, "coverage": False, "monotonic": False, "monotonic_bias_init": -1.0,
                  "monotonic_noise": 1.0, "mocha_chunk": 0},
    "tie_target_embeddings": False,
    "special_ids": {"pad": 0, "unk": 1, "bos": 2, "eos": 3},
    "copy_attention": False,
}


def model_config(config):
    """A complete nazar config dict from a dict or JSON string: defaults filled, unknown keys
    rejected (as config.h's from_json), the main validation rules of config.h checked."""
    given = json.loads(config) if isinstance(config, (str, bytes)) else config
    cfg = json.loads(json.dumps(DEFAULT_CONFIG))
    for k, v in given.items():
        if k not in cfg:
            raise ValueError(f"model config: unknown key '{k}'")
        if isinstance(cfg[k], dict):
            for kk, vv in v.items():
                if kk not in cfg[k]:
                    raise ValueError(f"model config: unknown key '{k}.{kk}'")
                cfg[k][kk] = vv
        else:
            cfg[k] = v
    if cfg["attention"]["score"] == "bahdanau":
        cfg["attention"]["score"] = "additive"
    d, a = cfg["decoder"], cfg["attention"]
    H, C = d["hidden_size"], encoder_output_size(cfg)
    if min(cfg["src_vocab_size"], cfg["tgt_vocab_size"]) < 5:
        raise ValueError(f"vocabulary sizes must be >= 5, got {cfg['src_vocab_size']} and {cfg['tgt_vocab_size']}")
    if a["score"] == "dot" and H != C:
        raise ValueError(f"dot attention needs decoder hidden_size == encoder output size, got {H} vs {C}; "
                         "use 'general'")
    if d["deep_output"] and d["kind"] == "luong":
        raise ValueError("deep_output is for the bahdanau decoder")
    if cfg["encoder"]["residual"] and cfg["encoder"]["num_layers"] < 2:
        raise ValueError("encoder residual connections need num_layers >= 2, got "
                         f"{cfg['encoder']['num_layers']}")
    _check_transition_depth(cfg["encoder"])
    if d["input_feeding"] and d["kind"] == "bahdanau":
        raise ValueError("input_feeding is for the luong decoder")
    if effective_bridge(cfg) == "backward-first" and not cfg["encoder"]["bidirectional"]:
        raise ValueError("bridge backward-first needs a bidirectional encoder")
    if d["kind"] == "bahdanau" and effective_timing(cfg) == "after":
        raise ValueError("attention_timing 'after' is not supported by the bahdanau decoder")
    if a["coverage"] and a["score"] not in ("additive", "concat"):
        raise ValueError(f"coverage needs an additive or concat attention score, got '{a['score']}'")
    if a["monotonic"]:
        _check_monotonic(cfg)
    _check_mocha(a)
    if cfg["tie_target_embeddings"] and generator_input_size(cfg) != cfg["embedding_size"]:
        raise ValueError(f"tie_target_embeddings needs generator input size {generator_input_size(cfg)} "
                         f"== embedding_size {cfg['embedding_size']}")
    return cfg


def _check_transition_depth(e):
    """Deep transition (nazar/nn/transition.h): an integer D in [1, 8]; D > 1 needs GRU cells."""
    D = e["transition_depth"]
    if isinstance(D, bool) or not isinstance(D, int) or not 1 <= D <= 8:
        raise ValueError(f"encoder transition_depth (encoder_transition_depth) must be in [1, 8], got {D!r}")
    if D > 1 and e["cell"] != "gru":
        raise ValueError(f"encoder transition_depth {D} (deep transition) needs GRU cells (cell: gru)")


def _check_monotonic(cfg):
    """Monotonic attention (docs/spec.md §5.6): global only, no coverage, no copy attention, a
    finite bias init and a noise σ >= 0 (both stored as floats, as config.h's)."""
    a = cfg["attention"]
    if a["local"] != "global":
        raise ValueError(f"monotonic attention reads the whole source left to right: it needs global attention, "
                         f"got '{a['local']}'")
    if a["coverage"]:
        raise ValueError("monotonic attention and coverage cannot be combined (each carries its own state from "
                         "step to step); choose one")
    if cfg["copy_attention"]:
        raise ValueError("copy_attention cannot be combined with monotonic attention (copying reads the weights "
                         "as a distribution; monotonic weights may sum to less than 1)")
    for k in ("monotonic_bias_init", "monotonic_noise"):
        if isinstance(a[k], bool) or not isinstance(a[k], (int, float)):
            raise ValueError(f"model config: 'attention.{k}' must be a number, got {a[k]!r}")
        a[k] = float(a[k])
    if not (math.isfinite(a["monotonic_bias_init"]) and math.isfinite(a["monotonic_noise"])
            and a["monotonic_noise"] >= 0):
        raise ValueError(f"monotonic attention: bias init must be finite and noise >= 0, got "
                         f"{a['monotonic_bias_init']} and {a['monotonic_noise']}")


def _check_mocha(a):
    """MoChA (docs/spec.md §5.6): mocha_chunk an integer w in [0, 256], 0 = plain monotonic
    attention; w >= 1 needs monotonic attention and an additive or concat score (the chunk energy
    shares its hidden layer). The messages are config.cpp's validate()."""
    w = a["mocha_chunk"]
    if isinstance(w, bool) or not isinstance(w, int):
        raise ValueError(f"model config: 'attention.mocha_chunk' must be an integer, got {w!r}")
    if not 0 <= w <= 256:
        raise ValueError(f"MoChA: the chunk w must be in [1, 256] (0 = plain monotonic attention), got {w}")
    if w > 0 and not a["monotonic"]:
        raise ValueError(f"mocha_chunk {w} needs monotonic attention (MoChA attends to the chunk ending where "
                         "the monotonic reader stops); set monotonic: true")
    if w > 0 and a["score"] not in ("additive", "concat"):
        raise ValueError(f"MoChA needs an additive or concat score (its chunk energy shares the score's "
                         f"hidden layer), got '{a['score']}'")


def config_json(cfg):
    """The "nazar.config" string: compact, sorted keys (what nlohmann::json::dump writes);
    "coverage" only when true, as nazar writes it; copy_attention only when true (as config.h's
    to_json); the encoder's / decoder's layer_norm and the encoder's residual only when true, its
    transition_depth only when > 1;
    "monotonic" with its "monotonic_bias_init" and "monotonic_noise" only when monotonic is on;
    "mocha_chunk" only when > 0."""
    cfg = model_config(cfg)
    for side in ("encoder", "decoder"):
        if not cfg[side]["layer_norm"]:
            del cfg[side]["layer_norm"]
    if not cfg["encoder"]["residual"]:
        del cfg["encoder"]["residual"]
    if cfg["encoder"]["transition_depth"] == 1:
        del cfg["encoder"]["transition_depth"]
    if not cfg["attention"]["coverage"]:
        del cfg["attention"]["coverage"]
    if not cfg["copy_attention"]:
        del cfg["copy_attention"]
    if not cfg["attention"]["monotonic"]:
        for k in ("monotonic", "monotonic_bias_init", "monotonic_noise"):
            del cfg["attention"][k]
    if not cfg["attention"]["mocha_chunk"]:
        del cfg["attention"]["mocha_chunk"]
    return json.dumps(cfg, sort_keys=True, separators=(",", ":"))


def encoder_output_size(cfg):  # C
    return cfg["encoder"]["hidden_size"] * (2 if cfg["encoder"]["bidirectional"] else 1)


def generator_input_size(cfg):  # d_out
    d = cfg["decoder"]
    return (d["deep_output_size"] or d["hidden_size"]) if d["deep_output"] else d["hidden_size"]


def effective_bridge(cfg):
    b = cfg["decoder"]["bridge"]
    if b != "auto":
        return b
    return "backward-first" if cfg["decoder"]["kind"] == "bahdanau" and cfg["encoder"]["bidirectional"] else "mean"


def effective_timing(cfg):
    t = cfg["decoder"]["attention_timing"]
    if t != "auto":
        return t
    return "before" if cfg["decoder"]["kind"] == "bahdanau" else "after"


def attention_config(cfg):
    """Attention(**attention_config(cfg)): sizes derived as config.h's attention_config()."""
    a, H = cfg["attention"], cfg["decoder"]["hidden_size"]
    return {"score": a["score"], "query_size": H, "context_size": encoder_output_size(cfg),
            "attention_size": a["attention_size"] or H, "scale": a["scale"], "local": a["local"],
            "window": a["window"], "position_size": a["position_size"] or H, "coverage": a["coverage"],
            "monotonic": a["monotonic"], "monotonic_bias_init": a["monotonic_bias_init"],
            "monotonic_noise": a["monotonic_noise"], "mocha_chunk": a["mocha_chunk"]}
