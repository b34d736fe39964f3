#!/usr/bin/env bash
# One run on a GPU machine checks issue 26's bar (and issue 28's GNN budgets), in this order:
#   1. throughput on a quiet GPU, bench/bench_gnn.py, batch 32, dim 64, param-rgcn and gat-egat:
#      one job with steps replayed from CUDA graphs, then N jobs side by side;
#   2. the bar's runs, side by side: `orch graphlog sweep` (2 models x 2 worlds x 2 seeds), the same
#      sweep again (a seeded rerun: identical test accuracies), and `orch run --learners
#      gnn-gat-egat` on a graphlog: dataset; bench/gpu_bar.py reads each store: every job ok or
#      timeout, the device and peak GPU memory in each row, how many jobs shared the GPU at once;
#   3. what lifts or lowers the figures: N jobs under MPS (where nvidia-cuda-mps-control is there),
#      one job compiled (torch.compile, captured in the same graphs), eager steps, the CPU beside it;
#   4. the gpu-marked tests (seeded reruns identical on the GPU, four sweep jobs in one worker, ...);
#   5. a GNN learner fit under a 10 s budget in a fresh process: when it returns, and its setup time;
#   6. gat-egat with deterministic mode off and without autocast (what each costs);
#   7. bench/profile_gnn_step.py: kernels and host time per step, eager and replayed.
# Everything is printed; each step has its own time limit, and all of them together at most
# GPU_CHECK_SECONDS (default 540): a step that would start with too little time left is skipped.
#
#   bash bench/gpu_check.sh            # on a GPU machine, from the repository root
#   bash bench/gpu_check.sh --dry-run  # anywhere: the same steps on the CPU, small sizes (~4 min)
#   GPU_CHECK_ONLY='one job|at once' bash bench/gpu_check.sh   # only the steps so named
#
# Without CUDA the script falls back to --device cpu with small sizes (a dry run of the steps).
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
ORCH="$PY -m orchestrator.cli"
ALLOW=${GPU_CHECK_SECONDS:-540}
WORK=${GPU_CHECK_DIR:-$(mktemp -d)}
DRY=0
[ "${1:-}" = "--dry-run" ] && DRY=1
DEVICE=$($PY -c "import torch; print('cuda' if torch.cuda.is_available() else 'cpu')")
[ "$DEVICE" = "cpu" ] && DRY=1
if [ "$DRY" = 1 ]; then
    DEVICE=cpu TRAIN=200 TRAIN_MANY=200 TEST=50 REPEATS=1 JOBS=2 BUDGET=3 BUDGET_TRAIN=300
    SUITE=(--train 200 --valid 40 --test 40) EPOCHS=2 RAY_CPUS=2 RUN_BUDGET=3s MPS_CPUS=2
else
    TRAIN=4000 TRAIN_MANY=2000 TEST=400 REPEATS=3 JOBS=8 BUDGET=10 BUDGET_TRAIN=2000
    SUITE=(--train 2000 --valid 400 --test 400) EPOCHS=10 RAY_CPUS=$(($(nproc) / 3)) RUN_BUDGET=5s MPS_CPUS=8
fi
status=0
ONLY=${GPU_CHECK_ONLY:-}  # a regular expression: run only the steps whose names match (a short rerun)
step() {  # step NAME LIMIT_S COMMAND...: run, print, remember a failure; skipped when time is short
    local name=$1 limit=$2
    shift 2
    if [ -n "$ONLY" ] && ! [[ $name =~ $ONLY ]]; then
        echo "=== $name: not selected (GPU_CHECK_ONLY)"
        return
    fi
    local left=$((ALLOW - SECONDS))
    echo
    if [ "$left" -lt 20 ]; then
        echo "=== $name: SKIPPED (${left} s left of ${ALLOW})"
        status=1
        return
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    echo "=== $name (limit ${limit}s) ==="
    local t0=$SECONDS
    timeout "$limit" "$@"
    local rc=$?
    echo "--- $name: exit $rc after $((SECONDS - t0)) s"
    [ "$rc" = 0 ] || status=1
}

echo "=== machine (dry run: $DRY, device: $DEVICE) ==="
date -u
git rev-parse --short HEAD 2>/dev/null
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null || echo "nvidia-smi: n/a"
$PY -c "import torch, torch_geometric as g; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
'pyg', g.__version__, 'device', torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'cpu')"

COMMON=(--device "$DEVICE" --batch-size 32 --dim 64 --test "$TEST")
# 1. Throughput, on a quiet GPU: one job, replayed CUDA graphs against eager steps, then N jobs.
step "bench_gnn: one job, CUDA graphs (bar: gat-egat >= 5,000 graphs/s on the GPU)" 90 \
    $PY bench/bench_gnn.py "${COMMON[@]}" --models param-rgcn,gat-egat --collate device --train "$TRAIN" \
    --repeats "$REPEATS"
for model in gat-egat param-rgcn; do  # one model per step: a slow one does not hide the other's figures
    step "bench_gnn: $JOBS $model jobs at once (bar: gat-egat >= 25,000 graphs/s in all)" 90 \
        $PY bench/bench_gnn.py "${COMMON[@]}" --models $model --collate device --train "$TRAIN_MANY" \
        --repeats 2 --concurrent "$JOBS"
done

# 2. The bar's runs, side by side (each its own local Ray): the sweep, the same sweep again (a
#    seeded rerun: identical test accuracies, whatever ran beside it), and orch run on graphlog:.
SWEEP=(supervised --models gat-egat,param-rgcn --seeds 0,1 --worlds rule_0,rule_1 --epochs "$EPOCHS"
       --num-cpus "$RAY_CPUS" --json)
step "bar: a GraphLog suite of 2 worlds" 30 $ORCH graphlog generate "$WORK/suite" "${SUITE[@]}" --worlds 0,1
step "bar: orch graphlog sweep x2 (2 models x 2 worlds x 2 seeds, $EPOCHS epochs) and orch run --learners \
gnn-gat-egat on graphlog: rule_0 ($RUN_BUDGET per predicate), all three at once" 180 bash -c "
    $ORCH graphlog sweep $WORK/suite --setups ${SWEEP[*]} --store $WORK/sweep1 > $WORK/sweep1.json 2> $WORK/sweep1.err &
    $ORCH graphlog sweep $WORK/suite --setups ${SWEEP[*]} --store $WORK/sweep2 > $WORK/sweep2.json 2> $WORK/sweep2.err &
    $ORCH run --dataset graphlog:$WORK/suite --games rule_0 --learners gnn-gat-egat --budget $RUN_BUDGET \
        --num-cpus $RAY_CPUS --store $WORK/run --json > $WORK/run.json 2> $WORK/run.err &
    rc=0; for job in 1 2 3; do wait -n || rc=1; done
    tail -n 5 $WORK/sweep1.err $WORK/sweep2.err $WORK/run.err; exit \$rc"
step "bar: the sweep's rows, and the rerun's test accuracies" 30 \
    $PY bench/gpu_bar.py sweep "$WORK/sweep1" --rerun "$WORK/sweep2"
step "bar: the run's rows" 30 $PY bench/gpu_bar.py run "$WORK/run"
# ... and one sweep of 8 jobs at 1/8 of the GPU each under a private MPS daemon (--mps): its rows,
# the compute apps the driver saw while it ran (under MPS: nvidia-cuda-mps-server only), and no MPS
# process left after it.
if command -v nvidia-cuda-mps-control > /dev/null; then  # NVIDIA's driver utilities
    step "bar: orch graphlog sweep --mps (8 jobs at 1/8 GPU each)" 150 bash -c "
        ( while sleep 1; do nvidia-smi --query-compute-apps=process_name --format=csv,noheader; done ) \
            > $WORK/apps.txt 2>&1 &
        sampler=\$!
        $ORCH graphlog sweep $WORK/suite --setups supervised --models gat-egat,param-rgcn --seeds 0,1 \
            --worlds rule_0,rule_1 --epochs $EPOCHS --num-cpus $MPS_CPUS --gpus-per-job 1/8 --mps --json \
            --store $WORK/sweep-mps > $WORK/sweep-mps.json 2> $WORK/sweep-mps.err
        rc=\$?; kill \$sampler; tail -n 5 $WORK/sweep-mps.err
        echo 'compute apps seen while it ran:'; sort $WORK/apps.txt | uniq -c
        echo \"MPS processes left after it: \$(pgrep -c nvidia-cuda-mps || true)\"; exit \$rc"
    step "bar: the MPS sweep's rows" 30 $PY bench/gpu_bar.py sweep "$WORK/sweep-mps"
fi

# 3. What lifts the figures: MPS (the processes' kernels side by side instead of in turns) and
#    torch.compile (fewer, fused kernels, captured in the same graphs); eager steps for reference.
if command -v nvidia-cuda-mps-control > /dev/null && [ "$DRY" = 0 ]; then
    export CUDA_MPS_PIPE_DIRECTORY=$WORK/mps-pipe CUDA_MPS_LOG_DIRECTORY=$WORK/mps-log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    nvidia-cuda-mps-control -d && step "bench_gnn: $JOBS gat-egat jobs at once under MPS" 90 \
        $PY bench/bench_gnn.py "${COMMON[@]}" --models gat-egat --collate device \
        --train "$TRAIN_MANY" --repeats 2 --concurrent "$JOBS"
    echo quit | nvidia-cuda-mps-control
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
fi
step "bench_gnn: one job, compiled and captured (--compile)" 100 \
    $PY bench/bench_gnn.py "${COMMON[@]}" --models gat-egat,param-rgcn --collate device --train "$TRAIN" \
    --repeats "$REPEATS" --compile
step "bench_gnn: one job, eager steps (--no-cuda-graphs: what the graphs gain)" 60 \
    $PY bench/bench_gnn.py "${COMMON[@]}" --models gat-egat,param-rgcn --collate device --train "$TRAIN_MANY" \
    --repeats 2 --no-cuda-graphs
step "bench_gnn: the same machine's CPU, $(nproc) threads (the figures beside the GPU's)" 60 \
    $PY bench/bench_gnn.py --device cpu --threads "$(nproc)" --batch-size 32 --dim 64 --test "$TEST" \
    --models param-rgcn,gat-egat --collate device --train "$TRAIN_MANY" --repeats 1

if [ "$DRY" = 1 ]; then
    step "gpu-marked tests (skipped without CUDA: listed only)" 120 \
        $PY -m pytest -q -m gpu tests/learners/gnn -rs
else
    # the modules that hold gpu tests (collecting all of tests/ would import the dev tools: moto, duckdb)
    # session 17: 4 passed, then pytest had not exited 70 s later: faulthandler prints every thread's
    # stack if a test (or the exit) hangs
    step "gpu-marked tests" 120 $PY -X faulthandler -m pytest -q -m gpu -rs -p no:cacheprovider \
        -o faulthandler_timeout=60 $(grep -rl "mark.gpu" tests)
fi

step "budget: gnn-gat-egat fits with a ${BUDGET} s budget in a fresh process (bar: <= budget + 2 s)" 60 \
    $PY - "$BUDGET" "$BUDGET_TRAIN" <<'EOF'
"""A job's view. Fit A starts the clock before torch and PyG are imported (as a worker that does not
call ``learner.prepare()``): its overrun is the import allowance. Fit B runs with them imported
(as after ``prepare()``): the bar applies to it."""
import sys
import time

from learners import Budget, make_learner
from tasks.graphlog.as_task import world_task
from tasks.graphlog.generator import GeneratorConfig, generate_suite

budget_s, n_train = float(sys.argv[1]), int(sys.argv[2])
world = generate_suite(GeneratorConfig(n_train=n_train, n_valid=n_train // 5, n_test=100), worlds=[0])[0]
task = world_task(world)
view = task.for_predicate(task.predicates[0]).learning_view()
over = {}
for fit in ("A (imports inside the budget)", "B (after prepare())"):
    budget = Budget(budget_s)
    model = make_learner("gnn-gat-egat").fit(view, budget, seed=0)
    elapsed = time.monotonic() - budget.started
    over[fit] = elapsed - budget_s
    print(f"fit {fit}: returned after {elapsed:.2f} s for {budget_s:.0f} s (over by {over[fit]:+.2f} s); "
          f"setup before the first step {model.setup_s:.2f} s; {model.describe()}", flush=True)
sys.exit(0 if over["B (after prepare())"] <= 2 else 1)
EOF

# What the options cost or gain, gat-egat, device pipeline: deterministic mode off, float32
# instead of bfloat16 autocast.
step "bench_gnn: gat-egat with --no-deterministic, --no-autocast" 80 bash -c '
    for opt in --no-deterministic --no-autocast; do
        "$0" bench/bench_gnn.py "${@}" --models gat-egat --collate device --repeats 2 $opt | tail -n 4
    done' "$PY" "${COMMON[@]}" --train "$TRAIN_MANY"
step "profile: kernels and host time per step, deterministic and autocast costs" 90 \
    $PY bench/profile_gnn_step.py --train "$TRAIN_MANY" --steps 30
echo
echo "=== gpu_check: $([ "$status" = 0 ] && echo 'every step passed' || echo 'a step FAILED (see above)') ==="
exit $status
