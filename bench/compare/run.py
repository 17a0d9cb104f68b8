#!/usr/bin/python3
"""`make bench-compare`: nazar vs PyTorch (python/nazar_torch.py) on identical configurations,
weights and data, and nazar vs the machine's measured sgemm peak, in one run, printed as one
table (method: docs/performance.md). The nazar side is `nazar bench ...`, whose runners live in
apps/bench/ (runners.h: train, decode; util.h: presets, FLOP counts, GEMM rates, CPU report). The "precision" section decodes in
fp32, bf16 and int8 side by side, each against its own GEMM roofline measured by the same process.

    bench/compare/run.py --nazar build/nazar [--quick] [--kernels auto|env] [--out F.json]

--kernels auto (default): nazar chooses its kernels from the CPU's feature bits whatever the
environment says; PyTorch (Debian's, on OpenBLAS) is run the way a user gets it fastest on this
machine: the OpenBLAS core is chosen by measurement. The candidates are the environment's
OPENBLAS_CORETYPE (if set), the core for the feature bits nazar reports (`nazar bench cpu`:
AVX-512 -> SkylakeX, AVX2 -> Haswell) and OpenBLAS's own model table (unset); `torch_bench.py
gemm` times the model's products under each, and PyTorch runs on the fastest. Neither the
environment's core nor the model table is trusted: the table falls back to SSE3 kernels on CPUs
it does not know (Intel family 6 model 207), and an environment may force narrower kernels than
the CPU has (OPENBLAS_CORETYPE=Haswell on an AVX-512 AMD EPYC: 1.8x slower products). `env`
keeps the environment as it is for both. The kernels each side ran and the probe's rates are
recorded and printed (nazar's "blas"/"cpu", PyTorch's OpenBLAS core).
Every process gets the same glibc malloc setting (freed memory is kept, no mmap per large
block): MALLOC_MMAP_MAX_=0, MALLOC_TRIM_THRESHOLD_=16 GiB, MALLOC_TOP_PAD_=64 MiB.
PyTorch runs at its best thread setting (torch.set_num_threads(1), OPENBLAS_NUM_THREADS = cores)
and, for the "obvious" rows, set_num_threads(cores) with OpenBLAS's default pool.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH = os.path.join(HERE, "torch_bench.py")
PY = "/usr/bin/python3"


# OpenBLAS core for the widest kernels the CPU's features allow (nazar's gemm_expected_isa).
CORE_FOR_ISA = {"avx512": "SkylakeX", "avx2": "Haswell"}


def torch_env(nazar, kernels, env, cores):
    """PyTorch's environment and the probe behind it: with --kernels auto, the OPENBLAS_CORETYPE
    (environment's, feature bits', or unset) under which PyTorch multiplies the model's shapes
    fastest."""
    env = dict(env)
    if kernels != "auto":
        return env, []
    candidates = []
    if "OPENBLAS_CORETYPE" in env:
        candidates.append(env["OPENBLAS_CORETYPE"])
    p = subprocess.run([nazar, "bench", "cpu", "--json"], stdout=subprocess.PIPE, text=True)
    try:
        isa = json.loads(p.stdout.strip().splitlines()[-1])["cpu"]["gemm_expected_isa"]
        if isa in CORE_FOR_ISA:
            candidates.append(CORE_FOR_ISA[isa])
    except (ValueError, KeyError, IndexError):
        pass
    candidates.append(None)  # OpenBLAS's model table
    probe, best = [], None
    for core in dict.fromkeys(candidates):
        e = {k: v for k, v in env.items() if k != "OPENBLAS_CORETYPE"}
        if core is not None:
            e["OPENBLAS_CORETYPE"] = core
        r = run_json([PY, TORCH, "gemm", "--threads", "1"], dict(e, OPENBLAS_NUM_THREADS=str(cores)))
        if r is None:
            continue
        probe.append({"coretype": core or "unset", "blas_core": r.get("blas_core"), "gflops": r["gflops"]})
        if best is None or r["gflops"] > best[0]:
            best = (r["gflops"], e)
    return (best[1] if best else env), probe


def base_env(kernels):
    env = dict(os.environ)
    env.update({"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(16 << 30), "MALLOC_TOP_PAD_": str(64 << 20)})
    return env


def run_json(cmd, env):
    t0 = time.time()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.stderr.write(f"FAILED ({p.returncode}): {' '.join(cmd)}\n{p.stderr}\n")
        return None
    r = json.loads(p.stdout.strip().splitlines()[-1])
    r["elapsed"] = time.time() - t0
    sys.stderr.write(f"  {' '.join(os.path.basename(c) if i == 0 else c for i, c in enumerate(cmd[:3]))} ... "
                     f"{time.time() - t0:.1f}s (load {os.getloadavg()[0]:.1f})\n")
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nazar", required=True)
    ap.add_argument("--quick", action="store_true", help="fewer steps and sentences (about 5 minutes)")
    ap.add_argument("--kernels", choices=["auto", "env"], default="auto")
    ap.add_argument("--out", default="")
    ap.add_argument("--only", default="",
                    help="comma list of sections: gemm,train,decode,precision,local,epoch")
    a = ap.parse_args()
    cores = os.cpu_count() or 1
    env = base_env(a.kernels)
    nz = [a.nazar, "bench"]
    sections = set(a.only.split(",")) if a.only else {"gemm", "train", "decode", "precision", "local", "epoch"}
    q = a.quick
    res = {"quick": q, "kernels": a.kernels, "cores": cores, "load_start": os.getloadavg()[0],
           "cpu": cpu_name(), "train": [], "decode": [], "precision": []}
    tmp = tempfile.mkdtemp(prefix="nazar-bench-")
    sys.stderr.write("PyTorch's OpenBLAS core: the model's products under each candidate\n")
    tenv, res["torch_core_probe"] = torch_env(a.nazar, a.kernels, env, cores)
    res["torch_openblas_coretype"] = tenv.get("OPENBLAS_CORETYPE", "unset (OpenBLAS's model table)")
    best_env = dict(tenv, OPENBLAS_NUM_THREADS=str(cores))
    obvious_env = dict(tenv)
    obvious_env.pop("OPENBLAS_NUM_THREADS", None)

    if "gemm" in sections:
        sys.stderr.write("sgemm peak and the model's GEMM shapes\n")
        res["gemm"] = run_json(nz + ["gemm", "--json", "--size", "1536" if q else "2048"], env)
    if "gemm" in sections or "train" in sections:
        # the bf16 roofline of bf16 training: the machine's bf16 GEMM peak, and every bf16 kernel on
        # the training shapes (conversions included)
        sys.stderr.write("bf16 GEMM peak and the training shapes in bf16\n")
        res["gemm_bf16"] = run_json(nz + ["gemm", "--json", "--precision", "bf16", "--size",
                                          "1536" if q else "2048"], env)
    peak = (res.get("gemm") or {}).get("peak", {}).get("gflops")

    if "train" in sections:
        bench_train(res, nz, tmp, q, cores, env, best_env, obvious_env)
    if "decode" in sections:
        bench_decode(res, nz, tmp, q, env, best_env)
    if "precision" in sections:
        bench_precision(res, nz, q, env)

    if "local" in sections:
        sys.stderr.write("per-step decoder time vs source length\n")
        res["local"] = run_json(nz + ["local", "--json"], env)
    if "epoch" in sections:
        sys.stderr.write("epoch time vs corpus size\n")
        res["epoch"] = run_json(nz + ["epoch", "--json", "--preset", "small", "--corpus",
                                      "320,640,1280" if q else "640,1280,2560,5120"], env)
    res["load_end"] = os.getloadavg()[0]
    print_table(res, peak, (res.get("gemm") or {}).get("peak", {}).get("gflops_per_cpu_s"))
    out = a.out or os.path.join(tmp, "results.json")
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"\nraw results: {out}")


def bench_train(res, nz, tmp, q, cores, env, best_env, obvious_env):
    """Training rows: nazar and PyTorch (best and obvious thread settings) on the same initial
    weights and batches, per preset and attention; bf16 on both sides for the standard preset."""
    atts = ["bahdanau", "general", "local-p"] + ([] if q else ["general-feed"])
    for preset in ["standard", "small"]:
        steps = 3 if q else 12
        if preset == "small":
            steps = 8 if q else 30
        # the warm-up (untimed, both sides) is one pass over the distinct batches: the first
        # pass grows every buffer to the longest batch and runs up to 3x slower (the per-step
        # rates in nazar's JSON, step_gflops), which is a run's start, not its steady state
        nb = warm = min(steps, 8)
        for att in atts:
            sys.stderr.write(f"train {preset} {att}\n")
            m, b = os.path.join(tmp, f"{preset}-{att}.safetensors"), os.path.join(tmp, f"{preset}-{att}.json")
            r = {"preset": preset, "attention": att}
            r["nazar"] = run_json(nz + ["train", "--json", "--preset", preset, "--attention", att, "--steps",
                                        str(steps), "--warmup", str(warm), "--batches", str(nb),
                                        "--save-init", m, "--dump-batches", b], env)
            tb = [PY, TORCH, "train", "--model", m, "--batches", b, "--steps", str(steps), "--warmup", str(warm)]
            r["torch_best"] = run_json(tb + ["--threads", "1"], best_env)
            if preset == "standard" and (not q or att == "bahdanau"):
                # mixed precision on both sides: nazar --precision bf16, PyTorch bf16 autocast
                r["nazar_bf16"] = run_json(nz + ["train", "--json", "--preset", preset, "--attention", att,
                                                 "--steps", str(steps), "--warmup", str(warm), "--batches",
                                                 str(nb), "--precision", "bf16", "--size",
                                                 "1024"], env)
                r["torch_autocast"] = run_json(tb + ["--threads", "1", "--autocast", "bf16"], best_env)
            if not q or (preset == "standard" and att == "bahdanau"):
                # the obvious setting is slow (its pools spin against each other): fewer steps
                to = [PY, TORCH, "train", "--model", m, "--batches", b, "--steps", str(max(2, steps // 3)),
                      "--warmup", "1"]
                r["torch_obvious"] = run_json(to + ["--threads", str(cores)], obvious_env)
            res["train"].append(r)


def bench_decode(res, nz, tmp, q, env, best_env):
    """Decoding rows: greedy and beam 5 at batch 1 and 64, nazar and PyTorch on the same weights
    and sources."""
    for beam in [1, 5]:
        for batch in [1, 64]:
            n = batch if batch > 1 else (4 if q else 12)
            if batch > 1 and not q:
                n = 128
            if beam == 1 and batch == 1:
                n *= 2
            sys.stderr.write(f"decode standard bahdanau beam {beam} batch {batch}\n")
            m, s = os.path.join(tmp, "decode.safetensors"), os.path.join(tmp, f"src-{n}.json")
            r = {"preset": "standard", "attention": "bahdanau", "beam": beam, "batch": batch}
            r["nazar"] = run_json(nz + ["decode", "--json", "--beam", str(beam), "--batch", str(batch),
                                        "--sentences", str(n), "--save-init", m, "--dump-batches", s], env)
            r["torch_best"] = run_json([PY, TORCH, "decode", "--model", m, "--sources", s, "--beam", str(beam),
                                        "--batch", str(batch), "--threads", "1"], best_env)
            res["decode"].append(r)


def bench_precision(res, nz, q, env):
    """Reduced-precision rows: the same decode in fp32, bf16 and int8."""
    # reduced-precision inference (bf16 and int8 weights): the same decode in fp32, bf16 and
    # int8 one after the other; each process also measures its precision's GEMM roofline
    # (gemm_roofline)
    for beam, batch in [(5, 64), (5, 1), (1, 1)]:
        n = (64 if q else 128) if batch > 1 else (4 if q else 12) * (2 if beam == 1 else 1)
        r = {"preset": "standard", "attention": "bahdanau", "beam": beam, "batch": batch}
        for prec in ["fp32", "bf16", "int8"]:
            sys.stderr.write(f"decode standard bahdanau beam {beam} batch {batch} {prec}\n")
            r[prec] = run_json(nz + ["decode", "--json", "--beam", str(beam), "--batch", str(batch),
                                     "--sentences", str(n), "--precision", prec], env)
        res["precision"].append(r)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def fmt(x, d=0):
    return "—" if x is None else f"{x:,.{d}f}"


def get(r, *keys):
    for k in keys:
        if r is None:
            return None
        r = r.get(k)
    return r


def pct(x):
    return "—" if x is None else f"{100 * x:,.0f}%"


def ratio(a, b):
    return None if a is None or b in (None, 0) else a / b


def of_peaks(nzr, kind, rate, start_peak):
    """'a% / b%': rate against the sgemm peak nazar measured right after the timed work (same
    process, seconds apart: what the targets are read against) / against the run's start peak."""
    after = get(nzr, "of_sgemm_peak_after", kind)
    start = None if not start_peak or rate is None else 100 * rate / start_peak
    return f"{fmt(None if after is None else 100 * after)}% / {fmt(start)}%"


def print_header(res):
    """The machine, the BLAS on each side, the load, and the sgemm peak and the model's GEMM shapes."""
    g = res.get("gemm") or {}
    blas = g.get("blas") or next((get(r, "nazar", "blas") for r in res["train"] if get(r, "nazar")), "?")
    tcore = next((get(r, "torch_best", "blas_core") for r in res["train"] + res["decode"]
                  if get(r, "torch_best")), "?")
    print(f"\nmachine: {res['cpu']}, {res['cores']} cores; BLAS: {blas}; PyTorch BLAS: {tcore} "
          f"(OPENBLAS_CORETYPE {res.get('torch_openblas_coretype')}); kernels: {res['kernels']}; "
          f"load average {res['load_start']:.1f} at start, {res['load_end']:.1f} at end"
          f"{' (quick mode)' if res['quick'] else ''}")
    if res.get("torch_core_probe"):
        print("PyTorch's OpenBLAS core, chosen by timing the model's products (torch_bench.py gemm): " +
              ", ".join(f"{p['coretype']} ({p['blas_core']}) {p['gflops']:.1f} GFLOP/s"
                        for p in res["torch_core_probe"]))
    if g:
        print(f"sgemm peak ({g['peak']['M']}³): {g['peak']['gflops']:.1f} GFLOP/s wall, "
              f"{g['peak']['gflops_per_cpu_s']:.1f} GFLOP per CPU-second")
        print("\n| GEMM shape (standard config) | M×N×K | GFLOP/s | of peak | GFLOP per CPU-s | of peak |"
              "\n|---|---|---|---|---|---|")
        for s in g["shapes"]:
            print(f"| {s['name']} | {s['M']}×{s['N']}×{s['K']} | {s['gflops']:.1f} | "
                  f"{100 * s['gflops'] / g['peak']['gflops']:.0f}% | {s['gflops_per_cpu_s']:.1f} | "
                  f"{100 * s['gflops_per_cpu_s'] / g['peak']['gflops_per_cpu_s']:.0f}% |")


def print_decode_roofline(res, peak):
    """nazar's decoding rows against the FLOP and bandwidth rooflines."""
    rows = [r for r in res["decode"] if get(r, "nazar", "gflops") is not None]
    if rows:
        # The decoding targets (docs/performance.md): beam 5 at batch 64 against the FLOP
        # roofline (sgemm peak x FLOPs per sentence), batch 1 against the bandwidth roofline (a step's weights / the read
        # bandwidth of a working set that size, measured by the same process after decoding); the
        # fastest batch's step against that bandwidth (best against best, for a shared machine),
        # and the step's FLOP floor: at beam 5 it is as high as the bandwidth floor on some CPUs.
        print("\n| decode (nazar) | sentences/s | GFLOP/s | of FLOP roofline (sgemm peak: after / start) | step weights MB | "
              "weights streamed GB/s | read bandwidth GB/s | of bandwidth roofline | fastest batch | "
              "step µs at the FMA peak |\n|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            nzr = r["nazar"]
            kind = "greedy" if r["beam"] == 1 else f"beam {r['beam']}"
            print(f"| {r['preset']} {r['attention']} {kind}, batch {r['batch']} | {fmt(nzr['sentences_per_s'], 1)} | "
                  f"{fmt(nzr['gflops'], 1)} | {of_peaks(nzr, 'wall', nzr['gflops'], peak)} | "
                  f"{fmt(nzr['step_weight_mb'], 1)} | {fmt(nzr['weight_gbs'], 1)} | {fmt(nzr['read_gbs_step_weights'], 1)} | "
                  f"{fmt(100 * ratio(nzr['weight_gbs'], nzr['read_gbs_step_weights']))}% | "
                  f"{pct(get(nzr, 'fraction_of_bandwidth_roofline_best_batch'))} | "
                  f"{fmt(get(r, 'nazar', 'step_us_at_fma_peak'))} |")


def print_local_and_epoch(res):
    """Per-step decoder time against the source length; epoch time against the corpus size."""
    loc = res.get("local")
    if loc:
        print("\n| source length S | global: step CPU ms | local-p: step CPU ms | global: attention CPU ms | "
              "local-p: attention CPU ms | global / local-p step wall ms |\n|---|---|---|---|---|---|")
        rows = {(x["attention"], x["S"]): x for x in loc["rows"]}
        for S in sorted({x["S"] for x in loc["rows"]}):
            gl, lp = rows.get(("general", S)), rows.get(("local-p", S))
            print(f"| {S} | {gl['step_cpu_ms']:.2f} | {lp['step_cpu_ms']:.2f} | {gl['attention_cpu_ms']:.3f} | "
                  f"{lp['attention_cpu_ms']:.3f} | {gl['step_ms']:.2f} / {lp['step_ms']:.2f} |")
        print(f"(standard config, Luong general, {loc['rows'][0]['rows']} rows per step; CPU time = process CPU "
              f"time, robust to load; load average {loc['load_avg']:.1f})")
    ep = res.get("epoch")
    if ep:
        print("\n| corpus (pairs) | target tokens | epoch CPU s | CPU ms per pair | epoch wall s |\n|---|---|---|---|---|")
        for x in ep["rows"]:
            print(f"| {x['pairs']} | {x['target_tokens']} | {x['epoch_cpu_s']:.2f} | {x['cpu_ms_per_pair']:.2f} | "
                  f"{x['epoch_s']:.2f} |")
        print(f"(small config, Bahdanau; load average {ep['load_avg']:.1f})")


def print_table(res, peak, peak_cpu):
    print_header(res)
    if not res["train"] and not res["decode"]:
        print_bf16_table(res, peak)
        print_precision_table(res)
        return
    print("\n| measurement | nazar | PyTorch best | nazar / PyTorch | PyTorch obvious | nazar FLOP rate "
          "(of sgemm peak: after / start) | nazar GFLOP per CPU-s (of peak: after / start) | per CPU-s nazar / PyTorch | "
          "peak RSS nazar / PyTorch (MB) |\n|---|---|---|---|---|---|---|---|---|")
    for r in res["train"]:
        nzr, tb, to = r.get("nazar"), r.get("torch_best"), r.get("torch_obvious")
        gf, gc = get(nzr, "gflops"), get(nzr, "gflops_per_cpu_s")
        cpu_ratio = ratio(ratio(get(nzr, "target_tokens"), get(nzr, "cpu_s")), ratio(get(tb, "target_tokens"), get(tb, "cpu_s")))
        print(f"| train {r['preset']} {r['attention']}: target tokens/s | {fmt(get(nzr, 'tokens_per_s'))} | "
              f"{fmt(get(tb, 'tokens_per_s'))} | {fmt(ratio(get(nzr, 'tokens_per_s'), get(tb, 'tokens_per_s')), 2)}× | "
              f"{fmt(get(to, 'tokens_per_s'))} | {fmt(gf, 1)} GFLOP/s"
              f" ({of_peaks(nzr, 'wall', gf, peak)}) | {fmt(gc, 1)}"
              f" ({of_peaks(nzr, 'per_cpu_s', gc, peak_cpu)}) | {fmt(cpu_ratio, 2)}× | "
              f"{fmt(get(nzr, 'peak_rss_mb'))} / {fmt(get(tb, 'peak_rss_mb'))} |")
    for r in res["decode"]:
        nzr, tb = r.get("nazar"), r.get("torch_best")
        kind = "greedy" if r["beam"] == 1 else f"beam {r['beam']}"
        print(f"| decode {r['preset']} {r['attention']} {kind}, batch {r['batch']}: sentences/s | "
              f"{fmt(get(nzr, 'sentences_per_s'), 1)} | {fmt(get(tb, 'sentences_per_s'), 1)} | "
              f"{fmt(ratio(get(nzr, 'sentences_per_s'), get(tb, 'sentences_per_s')), 2)}× | | | | "
              f"{fmt(ratio(ratio(get(nzr, 'sentences'), get(nzr, 'cpu_s')), ratio(get(tb, 'sentences'), get(tb, 'cpu_s'))), 2)}× | "
              f"{fmt(get(nzr, 'peak_rss_mb'))} / {fmt(get(tb, 'peak_rss_mb'))} |")
    timed = [r["nazar"] for r in res["train"] if get(r, "nazar", "warmup") is not None]
    if timed:
        print(f"\nTraining rows: {', '.join(sorted({str(t['steps']) for t in timed}))} timed steps after an "
              f"untimed warm-up of {', '.join(sorted({str(t['warmup']) for t in timed}))} (one pass over the "
              "distinct batches), the same on both sides.")
    after = [x["sgemm_peak_after"] for x in (get(r, "nazar") for r in res["train"] + res["decode"])
             if x and x.get("sgemm_peak_after")]
    if after:
        print(f"Fractions of the sgemm peak, 'after / start': 'after' is the {after[0]['M']}³ peak nazar measured "
              "right after each timed run (same process, seconds apart; "
              f"{min(a['gflops'] for a in after):.1f}-{max(a['gflops'] for a in after):.1f} GFLOP/s over this run), "
              "the figure the targets are read against, since a shared machine's speed drifts; 'start' is the "
              "peak measured at the start.")
    print_decode_roofline(res, peak)
    print_bf16_table(res, peak)
    print_precision_table(res)
    if res["train"]:
        r0 = res["train"][0]
        print(f"\nfirst-step loss, same weights and batch ({r0['preset']} {r0['attention']}): nazar "
              f"{fmt(get(r0, 'nazar', 'first_loss'), 5)}, PyTorch {fmt(get(r0, 'torch_best', 'first_loss'), 5)}; "
              f"analytic FLOPs per target token: {fmt(get(r0, 'nazar', 'flop_per_token'))}")
    print_local_and_epoch(res)

# bytes per weight of each precision (int8's per-row scales are 1/K of it and left out)
WEIGHT_BYTES = {"fp32": 4, "bf16": 2, "int8": 1}


def print_precision_table(res):
    """Reduced-precision decoding: each precision against fp32 in the same run, against its own GEMM
    roofline (the packed product of the generator's shape at beam 5 batch 64, measured by the same
    process), and (batch 1) the weights it streams against the measured read bandwidth."""
    if not res.get("precision"):
        return
    print("\n| decode standard bahdanau | precision [kernel] | sentences/s | × fp32 | per CPU-s × fp32 | "
          "GFLOP/s | GEMM roofline GFLOP/s (M×N×K) | of roofline, wall / per CPU-s | weights streamed GB/s | "
          "of read bandwidth |\n|---|---|---|---|---|---|---|---|---|---|")
    for r in res["precision"]:
        kind = "greedy" if r["beam"] == 1 else f"beam {r['beam']}"
        f32 = r.get("fp32")
        for prec in ["fp32", "bf16", "int8"]:
            x = r.get(prec)
            roof = get(x, "gemm_roofline") or {}
            per_cpu = ratio(ratio(get(x, "sentences"), get(x, "cpu_s")), ratio(get(f32, "sentences"), get(f32, "cpu_s")))
            streamed = None if x is None else x["weight_gbs"] * WEIGHT_BYTES[prec] / 4
            shape = f" ({roof['M']}×{roof['N']}×{roof['K']})" if roof else ""
            of_wall = None if not roof.get("gflops") else 100 * get(x, "gflops") / roof["gflops"]
            of_cpu = (None if not roof.get("gflops_per_cpu_s") or not get(x, "cpu_s") else
                      100 * x["gflop"] / x["cpu_s"] / roof["gflops_per_cpu_s"])
            print(f"| {kind}, batch {r['batch']} | {prec} [{get(x, 'kernel') or '?'}] | "
                  f"{fmt(get(x, 'sentences_per_s'), 1)} | "
                  f"{fmt(ratio(get(x, 'sentences_per_s'), get(f32, 'sentences_per_s')), 2)}× | {fmt(per_cpu, 2)}× | "
                  f"{fmt(get(x, 'gflops'), 1)} | {fmt(roof.get('gflops'), 1)}{shape} | "
                  f"{fmt(of_wall)}% / {fmt(of_cpu)}% | "
                  f"{fmt(streamed, 1)} | {fmt(None if streamed is None else 100 * ratio(streamed, x['read_gbs_step_weights']))}% |")


def print_bf16_table(res, peak):
    """Mixed-precision training: nazar fp32 / bf16 against PyTorch fp32 / bf16 autocast, and the
    bf16 GEMM roofline measured in the same run."""
    gb = res.get("gemm_bf16") or {}
    bpeak = get(gb, "peak", "bf16_gflops")
    rows = [r for r in res["train"] if r.get("nazar_bf16") or r.get("torch_autocast")]
    if not gb and not rows:
        return
    if gb:
        p = gb["peak"]
        print(f"\nbf16 GEMM peak ({p['M']}³, {gb.get('kernel')}): {fmt(bpeak, 1)} GFLOP/s wall "
              f"({fmt(p.get('bf16_over_fp32'), 2)}× the fp32 sgemm measured beside it, "
              f"{fmt(get(p, 'fp32', 'gflops'), 1)} GFLOP/s); per kernel: "
              + ", ".join(f"{k} {v['gflops']:.1f}" for k, v in p.items()
                          if isinstance(v, dict) and "gflops" in v))
    print("\n| train (mixed precision) | nazar fp32 | nazar bf16 | bf16 / fp32 | PyTorch fp32 best | "
          "PyTorch bf16 autocast | nazar bf16 / PyTorch autocast | nazar bf16 FLOP rate (of bf16 peak) |"
          "\n|---|---|---|---|---|---|---|---|")
    for r in rows:
        n32, n16, tb, ta = r.get("nazar"), r.get("nazar_bf16"), r.get("torch_best"), r.get("torch_autocast")
        gf = get(n16, "gflops")
        print(f"| {r['preset']} {r['attention']}: target tokens/s | {fmt(get(n32, 'tokens_per_s'))} | "
              f"{fmt(get(n16, 'tokens_per_s'))} | {fmt(ratio(get(n16, 'tokens_per_s'), get(n32, 'tokens_per_s')), 2)}× | "
              f"{fmt(get(tb, 'tokens_per_s'))} | {fmt(get(ta, 'tokens_per_s'))} | "
              f"{fmt(ratio(get(n16, 'tokens_per_s'), get(ta, 'tokens_per_s')), 2)}× | {fmt(gf, 1)} GFLOP/s "
              f"({fmt(None if not bpeak or gf is None else 100 * gf / bpeak)}%) |")
    # `--precision bf16` keeps fp32 products where bf16 ones would be slower (bf16_verdict)
    verdicts = {get(r.get("nazar_bf16"), "bf16_verdict") for r in rows} - {None}
    products = {get(r.get("nazar_bf16"), "products") for r in rows} - {None}
    if verdicts:
        print(f"\nnazar bf16 ran {' / '.join(sorted(products))} products: {'; '.join(sorted(verdicts))}")


if __name__ == "__main__":
    main()
