#!/usr/bin/env bash
# Quality of bf16 / int8 model files against fp32 (docs/performance-log.md,
# "Decoding: speed, quality, memory"): nazar quantize, then BLEU on a test set, the translations
# that differ, the per-sentence `nazar score` differences, and the dates demo's exact match.
# Usage: experiments/precision/quality.sh NAZAR MODEL TEST_TSV [DATES_MODEL DATES_SRC DATES_REF]
#   run in a scratch directory (it writes the quantized files, hypotheses and scores there).
set -euo pipefail
N=$1 M=$2 TSV=$3
T=${THREADS:-1}
cut -f1 "$TSV" > test.src
cut -f2 "$TSV" > test.ref
for p in int8 bf16; do "$N" quantize --model "$M" --precision $p -o model-$p.safetensors; done
for p in fp32 bf16 int8; do
  f=$M; [ $p = fp32 ] || f=model-$p.safetensors
  "$N" translate --model "$f" --beam 5 --batch 64 --threads "$T" < test.src > hyp.$p
  echo "$p: $("$N" eval --metric bleu --ref test.ref --hyp hyp.$p | head -1)"
  "$N" --threads "$T" score --model "$f" --tsv "$TSV" > score.$p
done
if [ $# -ge 6 ]; then
  D=$4
  for p in int8 bf16; do "$N" quantize --model "$D" --precision $p -o dates-$p.safetensors; done
  for p in fp32 bf16 int8; do
    f=$D; [ $p = fp32 ] || f=dates-$p.safetensors
    "$N" translate --model "$f" --beam 5 --threads "$T" < "$5" > dates.$p
    echo "dates $p: $("$N" eval --metric exact --ref "$6" --hyp dates.$p | head -1)"
  done
  cmp -s dates.fp32 dates.int8 && cmp -s dates.fp32 dates.bf16 &&
    echo "dates: the three outputs are byte-identical"
fi
python3 - <<'PY'
import statistics as st
def load(p): return [float(x) for x in open(f"score.{p}")]
s = {p: load(p) for p in ("fp32", "bf16", "int8")}
def pct(v, q): v = sorted(v); return v[min(len(v) - 1, int(q / 100 * len(v)))]
for p in ("bf16", "int8"):
    d = [a - b for a, b in zip(s[p], s["fp32"])]
    a = [abs(x) for x in d]
    rel = [x / abs(b) for x, b in zip(a, s["fp32"]) if b]
    print(f"{p} - fp32 log-prob per sentence: mean {st.mean(d):+.4f}, |d| median {st.median(a):.4f}, "
          f"p90 {pct(a, 90):.4f}, p99 {pct(a, 99):.4f}, max {max(a):.4f}; relative median "
          f"{st.median(rel):.2e}; fp32 median {st.median(s['fp32']):.1f}")
    h0 = open("hyp.fp32").read().splitlines(); h = open(f"hyp.{p}").read().splitlines()
    print(f"{p}: {sum(x != y for x, y in zip(h0, h))} of {len(h0)} translations differ from fp32")
PY
