#!/usr/bin/env bash
# Data-parallel training under mpirun (docs/distributed.md), on a tiny model:
#   1. 2 ranks x batch 16 train the same model as 1 process x batch 32 and as 1 process x
#      accumulate 2 x batch 16 (50 steps, with validation and checkpoints on the way): weights
#      within 2e-4 relative (summation order, see docs/distributed.md); batch 16 alone is not;
#   2. 2 ranks stopped at step 30 and resumed to 50 equal the uninterrupted run bit for bit;
#   3. resuming a 2-rank checkpoint on 1 process is refused unless accumulate makes up the
#      global batch (--accumulate 2 continues);
#   4. kill -9 of rank 1 ends the job with an error within 30 s; the last checkpoint is valid and
#      a resumed run continues from it to the end;
#   5. a rank that hangs (SIGSTOP) ends the job through the other rank's watchdog (dist_timeout).
# In a build without MPI: mpirun -np 2 nazar train is refused with a message naming the cause.
# Usage: test_mpirun.sh NAZAR WITH_MPI(0|1) SANITIZE(0|1) PART MPI_GRADIENT_SUM, PART =
# equivalence (0: the bucketed gradient sum, tests/dist/mpi_gradient_sum.cpp; 1), resume (2, 3)
# or faults (4, 5): three ctest entries, each well under 30 s. Exit 77 = skipped.
set -euo pipefail
nazar=$1 with_mpi=$2 sanitize=$3 part=$4 gradient_sum=$5
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common/state_of.sh"  # state_of file key -> train.state[key]
if [ "$sanitize" = 1 ]; then
  # Open MPI's shared-memory transport and its PMIx client are not ASan/LSan-clean (reports
  # inside libopen-pal at init and leaks at MPI_Finalize), so the instrumented build would fail
  # on Open MPI, not on nazar; the single-process dist.* tests still run there.
  echo "skipped: mpirun tests are not run in the sanitizer build (Open MPI is not ASan-clean)"
  exit 77
fi
if ! command -v mpirun >/dev/null; then
  echo "skipped: mpirun not found (apt-get install openmpi-bin libopenmpi-dev)"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # containers run as root
export OMPI_MCA_btl_base_warn_component_unused=0
mpirun=(mpirun --oversubscribe)
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }

$py - <<'PY'
import random
r = random.Random(1)
for name, n in (("train.tsv", 400), ("dev.tsv", 30)):
    with open(name, "w") as f:
        for _ in range(n):
            s = [chr(97 + r.randrange(8)) for _ in range(2 + r.randrange(5))]
            f.write(" ".join(s) + "\t" + " ".join(reversed(s)) + "\n")
PY
common=(--train train.tsv --dev dev.tsv --valid-interval 20 --valid-sample 5 --tokenizer word
        --embedding-size 8 --hidden-size 12 --lr 0.01 --clip-norm 1 --threads 1
        --progress plain --log-interval 25 --checkpoint-interval 10)

if [ "$with_mpi" != 1 ]; then
  if "${mpirun[@]}" -np 2 "$nazar" train "${common[@]}" --max-steps 5 --save-dir nompi \
      >out.txt 2>&1; then
    fail "a build without MPI ran under mpirun"
  fi
  grep -q "built without MPI" out.txt || { cat out.txt; fail "no clear message without MPI"; }
  echo "ok: a build without MPI refuses mpirun"
  exit 0
fi

if [ "$part" = equivalence ]; then
# 0. The gradient sum's two paths, the drift check and the broadcast, on 2 and 3 ranks.
for np in 2 3; do
  "${mpirun[@]}" -np $np "$gradient_sum" || fail "mpi_gradient_sum on $np ranks"
done
# 1. Equivalence.
"$nazar" train "${common[@]}" --max-steps 50 --batch-size 32 --save-dir one >one.log 2>&1 ||
  { cat one.log; fail "1 x 32"; }
"$nazar" train "${common[@]}" --max-steps 50 --batch-size 16 --accumulate 2 --save-dir acc \
  >acc.log 2>&1 || { cat acc.log; fail "1 x accumulate 2 x 16"; }
"$nazar" train "${common[@]}" --max-steps 50 --batch-size 16 --save-dir small >small.log 2>&1 ||
  { cat small.log; fail "1 x 16"; }
"${mpirun[@]}" -np 2 "$nazar" train "${common[@]}" --max-steps 50 --batch-size 16 \
  --save-dir two >two.log 2>&1 || { cat two.log; fail "2 x 16"; }
[ "$(grep -c '^step 50/50' two.log)" = 1 ] || { cat two.log; fail "rank 1 logged (or nobody did)"; }
grep -q "global batch: 32 sentences = 2 rank(s) x accumulate 1 x 16" two.log ||
  fail "no global-batch line"
$py "$here/compare_weights.py" one/model.safetensors two/model.safetensors 2e-4 ||
  fail "2 ranks x 16 differs from 1 x 32"
$py "$here/compare_weights.py" one/model.safetensors acc/model.safetensors 2e-4 ||
  fail "accumulate 2 x 16 differs from 1 x 32"
$py "$here/compare_weights.py" --differ one/model.safetensors small/model.safetensors 2e-4 ||
  fail "the comparison cannot tell batch 16 from batch 32"
echo "ok: 2 ranks x 16 = 1 x accumulate 2 x 16 = 1 x 32 within 2e-4"
fi

if [ "$part" = resume ]; then

# 2. Resume with the same N.
"${mpirun[@]}" -np 2 "$nazar" train "${common[@]}" --max-steps 50 --batch-size 16 \
  --save-dir two >two.log 2>&1 || { cat two.log; fail "2 x 16"; }
"${mpirun[@]}" -np 2 "$nazar" train "${common[@]}" --max-steps 30 --batch-size 16 \
  --save-dir part >part.log 2>&1 || { cat part.log; fail "2 ranks, 30 steps"; }
"${mpirun[@]}" -np 2 "$nazar" train --resume part --max-steps 50 >part2.log 2>&1 ||
  { cat part2.log; fail "2 ranks, resumed to 50"; }
grep -q "resuming at step 30" part2.log || fail "no resume line"
$py "$here/compare_weights.py" two/last.safetensors part/last.safetensors 0 ||
  fail "stopped at 30 and resumed differs from the uninterrupted 2-rank run"
echo "ok: 2 ranks resumed = uninterrupted, bit for bit"

# 3. Resume with another N.
if "$nazar" train --resume part --max-steps 60 >other.log 2>&1; then
  fail "a 2-rank checkpoint resumed on 1 process with accumulate 1"
fi
grep -q "continue exactly with --accumulate 2 on 1 rank(s)" other.log ||
  { cat other.log; fail "no clear message for another rank count"; }
"$nazar" train --resume part --max-steps 60 --accumulate 2 >other2.log 2>&1 ||
  { cat other2.log; fail "1 process x accumulate 2 could not resume a 2-rank checkpoint"; }
echo "ok: another rank count is refused unless accumulate keeps the global batch"
fi
[ "$part" = faults ] || exit 0

# Starts a long 2-rank run in the background (pid in $job), waits for its first checkpoint and
# prints rank 1's pid.
start_long() {
  "${mpirun[@]}" -np 2 "$nazar" train "${common[@]}" --max-steps 100000 --max-epochs 0 --batch-size 16 \
    --dist-timeout "$2" --save-dir "$1" >"$1.log" 2>&1 &
  job=$!
  for _ in $(seq 300); do
    [ -f "$1/last.safetensors" ] && break
    sleep 0.1
  done
  [ -f "$1/last.safetensors" ] || { cat "$1.log"; fail "$1: no checkpoint after 30 s"; }
  rank1=""
  for p in $(pgrep -P "$job"); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1"; then
      rank1=$p
    fi
  done
  [ -n "$rank1" ] || fail "$1: rank 1 not found among mpirun's children"
}
# Waits at most $2 s for background job $1; sets $rc to its exit status (or fails).
wait_job() {
  for _ in $(seq $(($2 * 10))); do
    kill -0 "$1" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$1" 2>/dev/null; then
    kill -9 "$1"; fail "the job was still running after $2 s"
  fi
  rc=0
  wait "$1" || rc=$?
}

# 4. kill -9 of one rank.
start_long killed 60
t0=$SECONDS
kill -9 "$rank1"
wait_job "$job" 30
[ "$rc" != 0 ] || fail "the job exited 0 after rank 1 was killed"
echo "ok: kill -9 of rank 1 ended the job in $((SECONDS - t0)) s (exit $rc)"
grep -qi "signal 9\|killed" killed.log || { cat killed.log; fail "no message naming the kill"; }
# The resumed run goes 100 updates past the checkpoint it finds. A fixed --max-steps raced the
# machine: on a fast one the killed run had checkpointed step 330 before the kill, and a resume
# to 300 had nothing left to do (a failed CI run, 2026-12-02).
ckpt_step=$(state_of killed/last.safetensors step) || fail "killed/last.safetensors: no train.state step"
target=$((ckpt_step + 100))
"${mpirun[@]}" -np 2 "$nazar" train --resume killed --max-steps "$target" >resumed.log 2>&1 ||
  { cat resumed.log; fail "resume after kill -9"; }
grep -q "resuming at step $ckpt_step " resumed.log && grep -q "^done: $target updates" resumed.log ||
  { cat resumed.log; fail "resume after kill -9 did not continue from step $ckpt_step to $target"; }
echo "ok: the last checkpoint after kill -9 resumes to the end"

# 5. A hung rank.
start_long hung 3
t0=$SECONDS
kill -STOP "$rank1"
wait_job "$job" 30
kill -9 "$rank1" 2>/dev/null || true
[ "$rc" != 0 ] || fail "the job exited 0 with a hung rank"
# (rank 0 may wait in the gradient or the loss all-reduce: with 2 ranks it can finish the former
# with data rank 1 sent before it stopped; mpirun sends SIGCONT before ending rank 1, whose own
# watchdog may then report too.)
grep -q "rank 0 of 2: .* has waited .* (dist_timeout 3 s)" hung.log ||
  { cat hung.log; fail "no watchdog message"; }
echo "ok: a hung rank ended the job in $((SECONDS - t0)) s through the watchdog (exit $rc)"
