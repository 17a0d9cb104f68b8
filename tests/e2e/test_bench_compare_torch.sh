#!/usr/bin/env bash
# The PyTorch side of `make bench-compare` (bench/compare/torch_bench.py) runs on the files that
# `nazar bench` writes (--save-init, --dump-batches) and agrees with nazar: the first training
# step's loss is the same (same weights, same batch) for global, local-p and input-feeding
# models, beam decoding runs to the end, `nazar bench train` warms up over every distinct batch
# and reports each step's rate and its share of the sgemm peak measured after it, and the
# products probe that chooses PyTorch's OpenBLAS core (run.py) reports a rate for every shape and
# the core that ran. A change to python/nazar/torch/'s signatures that the benchmark's patched
# attention does not follow fails here, not only in a long benchmark run. Exit 77 (skipped)
# without PyTorch.
# Usage: test_bench_compare_torch.sh path/to/nazar
set -u
NAZAR=${1:?usage: test_bench_compare_torch.sh path/to/nazar}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
/usr/bin/python3 -c "import torch, numpy" 2>/dev/null || { echo "skipped: no torch/numpy"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
TB="$SRC/bench/compare/torch_bench.py"
field() { /usr/bin/python3 -c "import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])['$1'])"; }

for att in bahdanau local-p general-feed; do
    m="$dir/$att.safetensors" b="$dir/$att.json"
    nz=$("$NAZAR" bench train --json --preset small --attention "$att" --steps 1 --warmup 0 \
         --batches 1 --threads 1 --save-init "$m" --dump-batches "$b" 2>"$dir/err") ||
        { echo "FAIL nazar bench train $att"; cat "$dir/err"; fail=1; continue; }
    pt=$(/usr/bin/python3 "$TB" train --model "$m" --batches "$b" --steps 1 --warmup 0 \
         --threads 1 2>"$dir/err") ||
        { echo "FAIL torch_bench.py train $att"; tail -5 "$dir/err"; fail=1; continue; }
    a=$(field first_loss <<<"$nz") p=$(field first_loss <<<"$pt")
    if /usr/bin/python3 -c "import sys; a,p=map(float,sys.argv[1:]); sys.exit(abs(a-p) > 1e-4*abs(a))" "$a" "$p"; then
        echo "ok   train $att: first loss nazar $a, PyTorch $p"
    else
        echo "FAIL train $att: first loss nazar $a, PyTorch $p"; fail=1
    fi
done

# the default warm-up is one pass over the distinct batches, every step's rate is reported, and
# the rate as a share of the sgemm peak measured right after
if out=$("$NAZAR" bench train --json --preset small --steps 1 --batches 2 --threads 1 2>"$dir/err") &&
   /usr/bin/python3 -c "
import json, sys
r = json.loads(sys.argv[1].strip().splitlines()[-1])
ok = r['warmup'] == 2 and len(r['step_gflops']) == 3 and min(r['step_gflops']) > 0
ok = ok and r['sgemm_peak_after']['gflops'] > 0 and 0 < r['of_sgemm_peak_after']['wall'] < 2
sys.exit(0 if ok else 1)" "$out"; then
    echo "ok   train warm-up: $(field warmup <<<"$out") steps, per-step rates $(field step_gflops <<<"$out")"
else
    echo "FAIL nazar bench train default warm-up: $out"; tail -5 "$dir/err"; fail=1
fi

m="$dir/decode.safetensors" s="$dir/src.json"
"$NAZAR" bench decode --json --preset small --beam 2 --batch 2 --sentences 2 --max-length 8 \
    --threads 1 --save-init "$m" --dump-batches "$s" >/dev/null 2>"$dir/err" ||
    { echo "FAIL nazar bench decode"; cat "$dir/err"; fail=1; }
for beam in 1 2; do
    if out=$(/usr/bin/python3 "$TB" decode --model "$m" --sources "$s" --beam $beam --batch 2 \
             --max-length 8 --threads 1 2>"$dir/err"); then
        echo "ok   decode beam $beam: $(field sentences <<<"$out") sentences"
    else
        echo "FAIL torch_bench.py decode beam $beam"; tail -5 "$dir/err"; fail=1
    fi
done
# run.py's probe: every shape timed, a positive rate, the BLAS core named
if out=$(OPENBLAS_NUM_THREADS=1 /usr/bin/python3 "$TB" gemm --threads 1 2>"$dir/err") &&
   /usr/bin/python3 -c "
import json, sys
r = json.loads(sys.argv[1].strip().splitlines()[-1])
ok = len(r['shapes']) == 6 and all(s['gflops'] > 0 for s in r['shapes']) and r['gflops'] > 0 and r['blas_core']
sys.exit(0 if ok else 1)" "$out"; then
    echo "ok   gemm probe: $(field gflops <<<"$out") GFLOP/s on $(field blas_core <<<"$out")"
else
    echo "FAIL torch_bench.py gemm: $out"; tail -5 "$dir/err"; fail=1
fi
exit $fail
