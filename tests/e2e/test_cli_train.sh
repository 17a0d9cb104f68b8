#!/usr/bin/env bash
# End-to-end check of `nazar train` and `nazar score` (docs/design.md §6):
#   - configuration errors: one line, exit code 2, reported before any data is read;
#   - every configuration key is a flag documented by --help; flags override the YAML file;
#   - training from YAML writes model/best/last files and plain progress lines when not a TTY;
#   - --resume after max_steps, after kill -9 at three points (as training starts, before any
#     checkpoint: --resume says there is none and a restart loses nothing; mid-run between
#     checkpoints; just after an end-of-epoch checkpoint), after a checkpoint write that failed
#     (file-size limit: one error line, the previous checkpoint intact, no temporary file) and
#     after SIGINT (which writes a checkpoint and exits 130; the test fails unless the run was
#     really interrupted) gives the same tensors as an uninterrupted run (thread count fixed);
#   - the run directory: an old run's directory is refused without --resume or --overwrite,
#     --overwrite leaves none of the old run's files, stale checkpoint temporaries are removed,
#     an unwritable save_dir fails before the data is read;
#   - threads: the global --threads overrides the YAML file, train's --threads both;
#   - NaN/inf weights and moments, impossible train.state and equal special ids are refused;
#   - max_minutes stops at an update boundary, validates, saves, and resumes bit-identically;
#   - the example configs/*.yaml load and train one step;
#   - score prints one log-probability per pair.
# Usage: test_cli_train.sh path/to/nazar
. "$(dirname "$0")/lib.sh" "$@"  # NAZAR, SRC (configs/), PY, a temporary current directory, ok, bad

# Reversal task: "a c b<TAB>b c a", deterministic.
$PY - <<'EOF'
import random
r = random.Random(7)
for name, n in (("train.tsv", 200), ("dev.tsv", 20)):
    with open(name, "w") as f:
        for _ in range(n):
            s = [r.choice("abcdefgh") for _ in range(r.randint(2, 6))]
            f.write(" ".join(s) + "\t" + " ".join(reversed(s)) + "\n")
EOF

# Tensors (and train.state) of two safetensors files must be identical.
same_tensors() {
    $PY - "$1" "$2" <<'EOF'
import json, struct, sys
def load(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    meta = h.pop("__metadata__", {})
    return {k: b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in h.items()}, meta
a, ma = load(sys.argv[1])
b, mb = load(sys.argv[2])
diff = sorted(set(a) ^ set(b)) + [k for k in a if k in b and a[k] != b[k]]
if ma.get("train.state") != mb.get("train.state"):
    diff.append("train.state")
print(" ".join(diff[:5]))
sys.exit(1 if diff else 0)
EOF
}

# ---- configuration errors -----------------------------------------------------------------
printf 'model:\n  hiden_size: 3\n' > typo.yaml
base=(train --train train.tsv --save-dir err --progress plain)
check_error() {  # name, expected first line, args...
    local name=$1 expected=$2
    shift 2
    "$NAZAR" "$@" > out.txt 2> err.txt
    local rc=$?
    local first
    first=$(head -1 err.txt)
    if [[ $rc -ne 2 ]]; then bad "$name" "exit code $rc, expected 2" "$(cat err.txt)"; return; fi
    if [[ "$first" != "$expected" ]]; then bad "$name" "expected: $expected" "actual:   $first"; return; fi
    if [[ $(grep -c 'error' err.txt) -ne 1 ]]; then bad "$name" "more than one error line" "$(cat err.txt)"; return; fi
    if grep -q 'pairs read' err.txt || [[ -e err ]]; then bad "$name" "data was read before the error"; return; fi
    ok "$name"
}
check_error "unknown flag, suggestion" "nazar: error: unknown option --hiden-size (did you mean --hidden-size?)" \
    "${base[@]}" --hiden-size 12
check_error "unknown underscore flag" "nazar: error: unknown option --max_step (did you mean --max-steps?)" \
    "${base[@]}" --max_step 12
check_error "unknown YAML key" "nazar: error: typo.yaml: unknown key 'hiden_size' (did you mean 'hidden_size'?)" \
    "${base[@]}" --config typo.yaml
check_error "wrong type" "nazar: error: --hidden-size: hidden_size: expected an integer, got '12x'" \
    "${base[@]}" --hidden-size 12x
check_error "out of range" "nazar: error: --dropout: dropout: 1.5 is out of range [0, 1)" \
    "${base[@]}" --dropout 1.5
check_error "bad choice" "nazar: error: --cell: cell: 'lstn' is not one of gru, lstm (did you mean 'lstm'?)" \
    "${base[@]}" --cell lstn
check_error "missing file" "nazar: error: dev: file 'nope.tsv' does not exist" "${base[@]}" --dev nope.tsv
check_error "missing config" "nazar: error: --config: file 'none.yaml' does not exist" "${base[@]}" --config none.yaml
check_error "dot size mismatch" \
    "nazar: error: attention 'dot' needs d_s == d_h, got d_s = 20 (decoder_hidden_size) and d_h = 256 (hidden_size 128 x 2, bidirectional); use attention: general, or make the sizes equal" \
    "${base[@]}" --decoder luong --attention dot --decoder-hidden-size 20
check_error "resume nothing" "nazar: error: --resume: no checkpoint at 'nowhere'" train --resume nowhere

# ---- YAML + flags, outputs --------------------------------------------------------------------
cat > run.yaml <<'EOF'
data:
  train: train.tsv
  dev: dev.tsv
  batch_size: 16
model:
  embedding_size: 8
  hidden_size: 16
  encoder_layers: 2
  dropout: 0.1
training:
  lr: 0.01
  max_steps: 10
  valid_interval: 10
  valid_sample: 5
  log_interval: 5
  save_dir: full
  threads: 1
EOF
if "$NAZAR" train --config run.yaml --max-steps 24 --scheduled-sampling 0.2 2> train.log; then
    if grep -q 'done: 24 updates' train.log; then ok "flags override YAML"; else bad "flags override YAML" "$(tail -3 train.log)"; fi
    if grep -q $'\r' train.log; then bad "plain progress when not a TTY" "found a carriage return"; else ok "plain progress when not a TTY"; fi
    if grep -q '^step 5/24 | epoch 1 | loss' train.log && grep -q '^valid step 20 | loss' train.log; then
        ok "progress and validation lines"
    else
        bad "progress and validation lines" "$(head -8 train.log)"
    fi
    for f in model best last; do
        [[ -s full/$f.safetensors ]] && ok "writes $f.safetensors" || bad "writes $f.safetensors"
    done
else
    bad "train from YAML" "$(tail -5 train.log)"
fi

# Every key of the stored configuration is a documented flag.
"$NAZAR" train --help > help.txt
missing=$($PY - full/last.safetensors <<'EOF'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
keys = json.loads(json.loads(b[8:8 + n])["__metadata__"]["train.config"]).keys()
help = open("help.txt").read()
print(" ".join(k for k in keys if "--" + k.replace("_", "-") + " " not in help))
EOF
)
[[ -z "$missing" ]] && ok "--help documents every key" || bad "--help documents every key" "missing: $missing"

# ---- resume -----------------------------------------------------------------------------------
"$NAZAR" train --config run.yaml --max-steps 11 --scheduled-sampling 0.2 --save-dir part 2> part.log
"$NAZAR" train --resume part --max-steps 24 2> resume.log
if d=$(same_tensors full/model.safetensors part/model.safetensors) &&
   d2=$(same_tensors full/last.safetensors part/last.safetensors); then
    ok "resume after max_steps is bit-identical"
else
    bad "resume after max_steps is bit-identical" "differ: $d ${d2:-}" "$(tail -3 resume.log)"
fi
# max_minutes: a budget smaller than any update stops after update 1 (a step boundary), validates
# and saves as at the end; resuming that run to 24 updates equals the uninterrupted run.
"$NAZAR" train --config run.yaml --max-steps 0 --max-minutes 1e-9 --scheduled-sampling 0.2 \
    --save-dir timed 2> timed.log
if grep -q '^max_minutes: 1e-09 minutes used up at step 1$' timed.log && grep -q '^valid step 1 |' timed.log &&
   grep -q 'done: 1 updates' timed.log && [[ -s timed/model.safetensors && -s timed/best.safetensors ]]; then
    ok "max_minutes stops at an update boundary, validates and saves"
else
    bad "max_minutes stops at an update boundary, validates and saves" "$(tail -3 timed.log)"
fi
"$NAZAR" train --resume timed --max-minutes 0 --max-steps 24 2> timed-resume.log
if d=$(same_tensors full/model.safetensors timed/model.safetensors) &&
   d2=$(same_tensors full/last.safetensors timed/last.safetensors); then
    ok "resume after max_minutes is bit-identical"
else
    bad "resume after max_minutes is bit-identical" "differ: $d ${d2:-}" "$(tail -3 timed-resume.log)"
fi
# A moved run directory resumes in place, and the data may move too.
mv part moved && cp train.tsv train-moved.tsv
"$NAZAR" train --resume moved/last.safetensors --max-steps 30 --train train-moved.tsv 2> moved.log
if [[ -s moved/model.safetensors && ! -e part ]] && grep -q 'done: 30 updates' moved.log; then
    ok "resume writes next to the checkpoint"
else
    bad "resume writes next to the checkpoint" "$(tail -2 moved.log)"
fi
mv moved part
check_error "resume cannot change the model" \
    "nazar: error: --resume: hidden_size cannot change when resuming (checkpoint: '16', requested: '32'); start a new run instead" \
    train --resume part --hidden-size 32

# ---- kill -9 at three points, then --resume: bit-identical to the uninterrupted run ----------------
# 300 updates (23 epochs of 13 batches), validations (and checkpoints) at 100, 200, 300.
common=(--config run.yaml --max-epochs 0 --valid-interval 100 --log-interval 10)
args=("${common[@]}" --max-steps 300)
"$NAZAR" train "${args[@]}" --save-dir long 2> long.log
. "$SRC/tests/common/state_of.sh"  # state_of file key -> train.state[key] (e.g. step)
# Runs `train args... --save-dir DIR` in the background and kill -9s it as soon as `cond` (shell
# code) holds, polling every 2 ms for at most ~4 s (a run takes ~0.4 s on an idle core).
kill_when() {  # dir cond args...
    local d=$1 cond=$2
    shift 2
    "$NAZAR" train "$@" --save-dir "$d" 2> "$d.log" &
    local pid=$!
    for _ in $(seq 1 2000); do eval "$cond" && break; sleep 0.002; done
    kill -9 $pid 2> /dev/null
    wait $pid 2> /dev/null
}
resumed_same() {  # name dir: --resume DIR, then compare with the uninterrupted run
    "$NAZAR" train --resume "$2" 2> "$2_resume.log"
    if d=$(same_tensors long/model.safetensors "$2/model.safetensors") &&
       d2=$(same_tensors long/last.safetensors "$2/last.safetensors"); then
        ok "$1"
    else
        bad "$1" "differ: $d ${d2:-}" "$(tail -3 "$2_resume.log")"
    fi
}

# 1. Early, as training starts, before any checkpoint exists (no interval checkpoints; the first
#    is written at the validation of step 100): --resume says so in one error line (exit 2, plus the usage hint),
#    the directory is empty, and the same command without --resume starts over, losing nothing.
kill_when early "[[ -d early ]]" "${args[@]}"  # the trainer creates it as training starts
if [[ -e early/last.safetensors ]]; then
    bad "kill -9 before the first checkpoint" "the kill landed after step 100: $(tail -1 early.log)"
else
    "$NAZAR" train --resume early > /dev/null 2> early_resume.log
    rc=$?
    if [[ $rc -eq 2 && $(grep -c error early_resume.log) -eq 1 ]] &&
       [[ "$(head -1 early_resume.log)" == "nazar: error: --resume: no checkpoint at 'early/last.safetensors'" ]] &&
       [[ -z $(ls -A early) ]]; then
        ok "kill -9 before the first checkpoint: --resume says there is none (exit 2), nothing left behind"
    else
        bad "kill -9 before the first checkpoint: --resume says there is none" "rc $rc" "$(cat early_resume.log)" \
            "left: $(ls -A early)"
    fi
    "$NAZAR" train "${args[@]}" --save-dir early 2> early_again.log
    if d=$(same_tensors long/model.safetensors early/model.safetensors); then
        ok "kill -9 before the first checkpoint: starting again is bit-identical"
    else
        bad "kill -9 before the first checkpoint: starting again is bit-identical" "differ: $d"
    fi
fi

# 2. Mid-run between checkpoints (every 7 updates), after the validation of step 100.
kill_when killed "grep -q '^step 150/' killed.log 2> /dev/null" "${args[@]}" --checkpoint-interval 7
step=$(state_of killed/last.safetensors step)
if [[ -e killed/model.safetensors ]]; then
    bad "kill -9 mid-run" "the run finished before the kill"
else
    resumed_same "kill -9 mid-run (last checkpoint: step $step), resume is bit-identical" killed
fi

# 3. Right after a checkpoint write that ends an epoch: with a checkpoint every E updates (E =
#    batches per epoch, from the uninterrupted run's final position; no update is skipped here)
#    every interval checkpoint ends an epoch; the kill follows the first one the moment it
#    appears. Resuming starts the next epoch (a new shuffle) from the checkpoint.
batches=$(state_of long/last.safetensors batches)
E=$(( (batches - $(state_of long/last.safetensors batch)) / $(state_of long/last.safetensors epoch) ))
kill_when epoch "[[ -e epoch/last.safetensors ]]" "${args[@]}" --checkpoint-interval "$E"
pos="epoch $(state_of epoch/last.safetensors epoch), batch $(state_of epoch/last.safetensors batch)"
if [[ "$pos" =~ ^epoch\ [0-9]+,\ batch\ ($E|0)$ ]]; then
    resumed_same "kill -9 just after an end-of-epoch checkpoint ($pos of $E), resume is bit-identical" epoch
else
    bad "kill -9 just after an end-of-epoch checkpoint" "the checkpoint is at $pos, not an epoch end (E = $E)"
fi

# ---- a checkpoint write that fails -----------------------------------------------------------------
# A file-size limit (ulimit -f, SIGXFSZ ignored) makes write() fail with EFBIG, as a full disk
# does. A run to step 150 leaves last.safetensors, the state to protect; resumed with a limit of
# half a checkpoint, its first checkpoint write (step 160) fails. Expected: exit 1 with one error
# line naming the file and the reason, the previous checkpoint intact byte for byte, no
# temporary file left behind; then --resume without the limit finishes bit-identical to the
# uninterrupted run.
"$NAZAR" train "${common[@]}" --max-steps 150 --save-dir efbig 2> efbig.log
cp efbig/last.safetensors efbig-150.safetensors
limit_kb=$(( $(stat -c %s efbig-150.safetensors) / 2048 ))
( ulimit -f "$limit_kb" && trap '' XFSZ && exec "$NAZAR" train --resume efbig --max-steps 300 --checkpoint-interval 10 ) \
    > /dev/null 2> efbig_fail.log
rc=$?
line=$(grep error efbig_fail.log)
if [[ $rc -eq 1 && $(grep -c error efbig_fail.log) -eq 1 && "$line" == "nazar: error: "*"'efbig/last.safetensors'"*"File too large"* ]] &&
   cmp -s efbig/last.safetensors efbig-150.safetensors && [[ $(ls efbig | grep -c '\.tmp\.') -eq 0 ]]; then
    ok "failed checkpoint write: one error line, previous checkpoint intact, no temporary file"
else
    bad "failed checkpoint write: one error line, previous checkpoint intact, no temporary file" "rc $rc" \
        "$(tail -3 efbig_fail.log)" "files: $(ls efbig)" "$(cmp efbig/last.safetensors efbig-150.safetensors)"
fi
"$NAZAR" train --resume efbig --max-steps 300 --checkpoint-interval 10 2> efbig_resume.log
if d=$(same_tensors long/model.safetensors efbig/model.safetensors) &&
   d2=$(same_tensors long/last.safetensors efbig/last.safetensors); then
    ok "failed checkpoint write: --resume afterwards is bit-identical"
else
    bad "failed checkpoint write: --resume afterwards is bit-identical" "differ: $d ${d2:-}" "$(tail -3 efbig_resume.log)"
fi

# SIGINT (Ctrl-C): the update in flight completes, last.safetensors is written, exit code 130.
# The run is set to 100000 updates (minutes), so it cannot end before the signal, and the signal
# is sent only once a checkpoint exists and a progress line was printed. The test fails unless
# the run was really interrupted: exit 130, the "interrupted at step N" line, no
# model.safetensors, and a checkpoint at step N < 100000; resumed to 300 updates it must equal
# the uninterrupted run (when the signal landed after step 300, on a loaded machine, the
# comparison is with a reference run to N + 10 instead).
"$NAZAR" train "${common[@]}" --max-steps 100000 --checkpoint-interval 20 --save-dir sigint 2> sigint.log &
pid=$!
for _ in $(seq 1 2000); do
    [[ -e sigint/last.safetensors ]] && grep -q '^step [0-9]*/100000' sigint.log 2> /dev/null && break
    sleep 0.01
done
kill -INT $pid 2> /dev/null
# A run that ignores the signal would go on for minutes: give it 30 s, then kill it (rc 137).
for _ in $(seq 1 3000); do kill -0 $pid 2> /dev/null || break; sleep 0.01; done
kill -0 $pid 2> /dev/null && kill -9 $pid
wait $pid
rc=$?
n=$(grep -o 'interrupted at step [0-9]*' sigint.log | grep -o '[0-9]*$')
stored=$(state_of sigint/last.safetensors step 2> /dev/null)
if [[ $rc -ne 130 || -z "$n" || -e sigint/model.safetensors || "$stored" != "$n" ]] || (( n >= 100000 )); then
    bad "SIGINT: interrupted (exit 130, checkpoint at the interrupted step, no model.safetensors)" \
        "rc $rc, interrupted at '${n:-}', checkpoint step '${stored:-}'" "$(tail -2 sigint.log)" "files: $(ls sigint)"
else
    ok "SIGINT: interrupted at step $n (exit 130, checkpoint at that step, no model.safetensors)"
    if (( n <= 300 )); then
        ref=long target=300
    else
        ref=sigref target=$((n + 10))
        "$NAZAR" train "${common[@]}" --max-steps $target --save-dir sigref 2> sigref.log
    fi
    "$NAZAR" train --resume sigint --max-steps $target 2> sigint_resume.log
    if d=$(same_tensors $ref/model.safetensors sigint/model.safetensors) &&
       d2=$(same_tensors $ref/last.safetensors sigint/last.safetensors); then
        ok "SIGINT: resume to $target is bit-identical"
    else
        bad "SIGINT: resume to $target is bit-identical" "differ: $d ${d2:-}" "$(tail -2 sigint_resume.log)"
    fi
fi

# ---- the run directory (audit items 9, 12) ------------------------------------------------------
# A fresh run into an old run's directory is refused before any data is read (it would overwrite
# last.safetensors and leave the old best.safetensors beside the new model); --overwrite
# replaces the old run, leaving none of its files; --resume and --overwrite exclude each other.
check_error "fresh run in an old run directory" \
    "nazar: error: save_dir 'full' is not empty (best.safetensors, last.safetensors, model.safetensors): continue that run with --resume full, replace it with --overwrite, or choose another --save-dir" \
    train --config run.yaml --save-dir full
check_error "--overwrite with --resume" \
    "nazar: error: --overwrite and --resume exclude each other: --resume continues the run in its directory, --overwrite starts a new one there" \
    train --resume full --overwrite
grep -v '^  dev:' run.yaml > nodev.yaml  # no dev set: no best.safetensors
cp -r full old
if "$NAZAR" train --config nodev.yaml --save-dir old --overwrite 2> overwrite.log &&
   grep -q '^removed from old: best.safetensors, last.safetensors, model.safetensors$' overwrite.log &&
   [[ ! -e old/best.safetensors && -s old/model.safetensors && -s old/last.safetensors ]]; then
    ok "--overwrite replaces the old run (its best.safetensors is gone)"
else
    bad "--overwrite replaces the old run (its best.safetensors is gone)" "$(tail -3 overwrite.log)" "files: $(ls old)"
fi
# Stale temporaries of a killed checkpoint write are removed at start, by their exact pattern.
cp -r part stale
touch stale/last.safetensors.tmp.AbC123 stale/best.safetensors.tmp.x1Y2z3 stale/notes.tmp.AbC123 \
      stale/last.safetensors.tmp.AbC1234
"$NAZAR" train --resume stale --max-steps 31 2> stale.log
if [[ ! -e stale/last.safetensors.tmp.AbC123 && ! -e stale/best.safetensors.tmp.x1Y2z3 &&
      -e stale/notes.tmp.AbC123 && -e stale/last.safetensors.tmp.AbC1234 ]] &&
   grep -q '^removed from stale: best.safetensors.tmp.x1Y2z3, last.safetensors.tmp.AbC123$' stale.log; then
    ok "stale checkpoint temporaries are removed at start (only ours)"
else
    bad "stale checkpoint temporaries are removed at start (only ours)" "files: $(ls stale)" "$(head -2 stale.log)"
fi
# An unwritable save_dir fails before any data is read: a file-size limit of 0 makes the probe's
# write fail (as a full disk would; works as root too), and, when not root, a mode-0555 parent.
# (The limit applies to every regular file the process writes: its stderr goes through a pipe.)
( ulimit -f 0 && trap '' XFSZ && exec "$NAZAR" train --config run.yaml --save-dir nospace 2>&1 > /dev/null ) |
    cat > nospace.log
rc=${PIPESTATUS[0]}
if [[ $rc -eq 1 && $(wc -l < nospace.log) -eq 1 ]] &&
   [[ "$(cat nospace.log)" == "nazar: error: save_dir 'nospace' is not writable: writing a test file failed: File too large" ]]; then
    ok "unwritable save_dir (file-size limit): one line, exit 1, before the data is read"
else
    bad "unwritable save_dir (file-size limit): one line, exit 1, before the data is read" "rc $rc" "$(cat nospace.log)"
fi
if [[ $(id -u) -ne 0 ]]; then
    mkdir ro && chmod 555 ro
    "$NAZAR" train --config run.yaml --save-dir ro/run > /dev/null 2> ro.log
    rc=$?
    chmod 755 ro
    if [[ $rc -eq 1 && $(wc -l < ro.log) -eq 1 ]] && grep -q "^nazar: error: cannot create save_dir 'ro/run': " ro.log; then
        ok "read-only parent of save_dir: one line, exit 1, before the data is read"
    else
        bad "read-only parent of save_dir: one line, exit 1, before the data is read" "rc $rc" "$(cat ro.log)"
    fi
fi

# ---- threads: defaults < YAML < flags, the global --threads included (audit item 11) -------------
sed 's/^  threads: 1$/  threads: 3/' run.yaml > threads3.yaml
stored_threads() {  # file -> "train.threads train.config[threads]"
    $PY -c 'import json,struct,sys; b=open(sys.argv[1],"rb").read(); n=struct.unpack("<Q",b[:8])[0]; m=json.loads(b[8:8+n])["__metadata__"]; print(m["train.threads"], json.loads(m["train.config"])["threads"])' "$1"
}
"$NAZAR" --threads 2 train --config threads3.yaml --max-steps 2 --save-dir th-global 2> /dev/null
"$NAZAR" --threads 2 train --config threads3.yaml --max-steps 2 --threads 1 --save-dir th-flag 2> /dev/null
"$NAZAR" train --config threads3.yaml --max-steps 2 --save-dir th-yaml 2> /dev/null
got="$(stored_threads th-global/last.safetensors) / $(stored_threads th-flag/last.safetensors) / $(stored_threads th-yaml/last.safetensors)"
if [[ "$got" == "2 2 / 1 1 / 3 3" ]]; then
    ok "global --threads overrides the YAML; train's --threads overrides both"
else
    bad "global --threads overrides the YAML; train's --threads overrides both" "got $got, expected 2 2 / 1 1 / 3 3"
fi

# ---- hostile checkpoints and model files (audit items 4, 5, 11) -------------------------------------
# poke SRC DST KIND ARGS: a copy with one float set (tensor NAME INDEX VALUE), a train.state
# field set (state KEY JSON), or a nazar.config special id set (special KEY ID).
cat > poke.py <<'EOF'
import json, struct, sys
src, dst, kind = sys.argv[1:4]
b = bytearray(open(src, "rb").read())
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
if kind == "tensor":
    name, idx, val = sys.argv[4], int(sys.argv[5]), float(sys.argv[6])
    off = 8 + n + h[name]["data_offsets"][0] + 4 * idx
    b[off:off + 4] = struct.pack("<f", val)
else:
    key, value = sys.argv[4], json.loads(sys.argv[5])
    meta = h["__metadata__"]
    field = "train.state" if kind == "state" else "nazar.config"
    d = json.loads(meta[field])
    (d if kind == "state" else d["special_ids"])[key] = value
    meta[field] = json.dumps(d)
    text = json.dumps(h).encode()
    text += b" " * (-len(text) % 8)
    b = struct.pack("<Q", len(text)) + text + b[8 + n:]
open(dst, "wb").write(b)
EOF
poke() { $PY poke.py "$@"; }
hostile() {  # name expected-substring command...: exit 1 or 2, one line, before any data is read
    local name=$1 expected=$2
    shift 2
    "$@" < /dev/null > /dev/null 2> hostile.log
    local rc=$?
    if [[ ($rc -eq 1 || $rc -eq 2) && $(grep -c error hostile.log) -eq 1 ]] &&
       grep -qF -- "$expected" hostile.log && ! grep -q 'pairs read' hostile.log; then
        ok "$name"
    else
        bad "$name" "rc $rc, expected: $expected" "$(head -3 hostile.log)"
    fi
}
poke full/model.safetensors nan-model.safetensors tensor generator.weight 5 nan
hostile "NaN in generator.weight: translate refuses the model" \
    "'nan-model.safetensors': tensor 'generator.weight' holds a non-finite value (nan) at index 5 (row 0, column 5 of shape" \
    "$NAZAR" translate --model nan-model.safetensors
mkdir nan-moment && poke part/last.safetensors nan-moment/last.safetensors tensor optim.exp_avg_sq.generator.bias 2 inf
hostile "inf in an optimizer moment: --resume refuses the checkpoint" \
    "'nan-moment/last.safetensors': tensor 'optim.exp_avg_sq.generator.bias' holds a non-finite value (inf) at index 2" \
    "$NAZAR" train --resume nan-moment --max-epochs 0 --max-steps 1000
mkdir bad-state && poke part/last.safetensors bad-state/last.safetensors state epoch 1000000000
hostile "train.state epoch 1e9: --resume refuses the checkpoint" "invalid train.state: epoch 1000000000" \
    "$NAZAR" train --resume bad-state
poke part/last.safetensors bad-state/last.safetensors state step -3
hostile "train.state step -3: --resume refuses the checkpoint" "invalid train.state: step = -3 is outside" \
    "$NAZAR" train --resume bad-state
poke full/model.safetensors pad-eos.safetensors special pad 3
hostile "special_ids pad == eos: translate refuses the model" "special ids must be distinct, got pad 3, unk 1, bos 2, eos 3" \
    "$NAZAR" translate --model pad-eos.safetensors

# ---- the example configurations stay valid (configs/*.yaml) ------------------------------------
for cfg in "$SRC"/configs/*.yaml; do
    if "$NAZAR" train --config "$cfg" --train train.tsv --dev dev.tsv --spm-vocab-size 300 --max-steps 1 \
        --valid-interval 1 --valid-sample 2 --save-dir "cfg-$(basename "$cfg" .yaml)" --threads 1 2> cfg.log; then
        ok "configs/$(basename "$cfg") trains"
    else
        bad "configs/$(basename "$cfg") trains" "$(tail -2 cfg.log)"
    fi
done

# ---- score -------------------------------------------------------------------------------------
"$NAZAR" score --model full/model.safetensors --tsv dev.tsv > scores.txt
n=$(wc -l < scores.txt)
neg=$(grep -c '^-[0-9]*\.[0-9]\{6\}$' scores.txt)
[[ $n -eq 20 && $neg -eq 20 ]] && ok "score: 20 log-probabilities" || bad "score: 20 log-probabilities" "$(head -3 scores.txt)"

exit $fail
