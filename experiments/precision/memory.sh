#!/usr/bin/env bash
# Memory of fp32 / bf16 / int8 models (docs/performance-log.md, "Memory of a loaded
# model"): for each model file, the RSS of `nazar translate` once the model is loaded and it waits
# for input (VmRSS, VmHWM, RssAnon from /proc), and the maximum RSS (/usr/bin/time) of
# translate --beam 5 --threads 1 at batch 1 and 64 over the sentences of SRC. Give two binaries
# (before / after) to interleave them; EMPTY is a tiny model (the dates demo's) for the baseline.
# Usage: experiments/precision/memory.sh SRC EMPTY_MODEL "NAZAR_A [NAZAR_B]" MODEL_FP32 MODEL_BF16 MODEL_INT8
#   (a model argument may be "fileA:fileB": the file each binary loads)
set -euo pipefail
SRC=$1 EMPTY=$2
read -r -a BINS <<< "$3"
shift 3
loaded() {  # VmRSS VmHWM RssAnon (kB) of `$1 translate --model $2` after loading
  "$1" translate --model "$2" --beam 5 --threads 1 < <(sleep 5) > /dev/null &
  local pid=$!
  sleep 3.5
  awk '/^(VmRSS|VmHWM|RssAnon):/{printf "%s %s kB  ", $1, $2}' /proc/$pid/status
  wait $pid
}
pick() { IFS=: read -r -a f <<< "$1"; echo "${f[$2]:-${f[0]}}"; }
uptime
for round in 1 2; do
  for i in "${!BINS[@]}"; do echo "round $round ${BINS[$i]} empty: $(loaded "${BINS[$i]}" "$EMPTY")"; done
  for m in "$@"; do
    for i in "${!BINS[@]}"; do
      b=${BINS[$i]} f=$(pick "$m" "$i")
      echo "round $round $b $f loaded: $(loaded "$b" "$f")"
      for batch in 1 64; do
        /usr/bin/time -f "%M" -o rss.out "$b" translate --model "$f" --beam 5 --threads 1 \
          --batch $batch < "$SRC" > /dev/null
        echo "round $round $b $f batch $batch: max RSS $(cat rss.out) kB"
      done
    done
  done
done
uptime
