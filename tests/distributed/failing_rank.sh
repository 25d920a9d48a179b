#!/usr/bin/env bash
# A rank that fails or is killed ends the whole `mpirun -np 2 qgrad train` job within a bounded
# time, with an error that names it, instead of leaving the other rank waiting in a collective.
#   failing_rank.sh MPIRUN QGRAD
# Exit 0 when both cases behave, 1 otherwise, 77 (Skipped) without the Fashion-MNIST data.
set -uo pipefail
mpirun=$1
qgrad=$2
data=/usr/share/datasets/fashion-mnist
if [[ ! -e $data/train-images-idx3-ubyte.gz && ! -e $data/train-images-idx3-ubyte ]]; then
  echo "failing_rank.sh: no Fashion-MNIST in $data (dataset-fashion-mnist): skipped"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
limit=60  # seconds the job may take to end after the failure
failed=0

cat >"$work/good.json" <<JSON
{"epochs": 50, "batch_size": 64, "threads": 1, "output": {"dir": "$work/run", "progress": "off"}}
JSON
cat >"$work/bad.json" <<JSON
{"epochs": 50, "batch_size": 64, "threads": 1, "data": {"dir": "$work/no-such-folder"},
 "output": {"dir": "$work/run", "progress": "off"}}
JSON

# 1. Rank 1 throws (its data folder does not exist) while rank 0 waits for it in a collective.
start=$SECONDS
timeout $((limit + 30)) "$mpirun" -np 1 "$qgrad" train --config "$work/good.json" : \
  -np 1 "$qgrad" train --config "$work/bad.json" >"$work/out1" 2>&1
rc=$?
took=$((SECONDS - start))
if [[ $rc -eq 0 || $rc -eq 124 || $took -gt $limit ]]; then
  echo "FAIL: a failing rank: exit status $rc after ${took}s (expected an error within ${limit}s)"
  failed=1
elif ! grep -q "qgrad train (rank 1 of 2): error: .*no-such-folder" "$work/out1"; then
  echo "FAIL: a failing rank: the output does not name rank 1 and its error:"
  failed=1
else
  echo "ok: a failing rank ended the job in ${took}s with exit status $rc"
fi
[[ $failed -ne 0 ]] && cat "$work/out1"

# 2. Rank 1 is killed (SIGKILL) while training.
rm -rf "$work/run"
"$mpirun" -np 2 "$qgrad" train --config "$work/good.json" >"$work/out2" 2>&1 &
job=$!
victim=
for _ in $(seq 1 300); do  # the ranks are mpirun's children; wait until both run
  kids=$(pgrep -P "$job" -f "qgrad train" | sort -n)
  if [[ $(wc -w <<<"$kids") -ge 2 ]]; then
    victim=$(tail -n 1 <<<"$kids")
    break
  fi
  sleep 0.1
done
if [[ -z $victim ]]; then
  echo "FAIL: a killed rank: the ranks did not start"
  kill -9 "$job" 2>/dev/null
  cat "$work/out2"
  exit 1
fi
sleep 3  # into training
start=$SECONDS
kill -9 "$victim"
rc=0
for _ in $(seq 1 $((limit * 10))); do
  if ! kill -0 "$job" 2>/dev/null; then break; fi
  sleep 0.1
done
if kill -0 "$job" 2>/dev/null; then
  echo "FAIL: a killed rank: the job still runs ${limit}s later"
  pkill -9 -P "$job"
  kill -9 "$job"
  failed=1
else
  wait "$job"
  rc=$?
  took=$((SECONDS - start))
  if [[ $rc -eq 0 ]]; then
    echo "FAIL: a killed rank: the job exited with status 0"
    failed=1
  else
    echo "ok: a killed rank ended the job in ${took}s with exit status $rc"
  fi
fi
[[ $failed -ne 0 ]] && cat "$work/out2"
exit $failed
