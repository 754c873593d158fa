#!/usr/bin/env bash
# The GPU check: GPU tests, CPU/GPU agreement and the GPU benchmark rows, each step under
# its own time limit, logs and JSON in OUT (a step that fails or runs out of time is named
# in OUT/FAILED and the next step still runs).
#
#     bench/gpu_check.sh [--quick] [OUT]        (make gpu-check-quick OUT=dir)
#
# --quick: first `granular compile` compiles the kernels the later steps need into the
# kernel cache (kernels/cache.py: the GPU kernels are kept there too), one function per
# process on every core, so that the test workers and each benchmark row load them
# instead of compiling them again in every process (`warm`); then the GPU tests stop at
# the first failure (MAXFAIL=k for more), the benchmark rows run at the sizes the targets
# in docs/engine.md name, then the agreement at 1000 steps. Each step has a time limit.
# On an H100 (2026-11-26, before the warm step and the GPU kernel cache) the tests
# reached 134 of 137 in 290 s (compiling the kernels from cold in each worker: the
# longest tests 245 and 201 s), the block rows did not finish in 110 s, float32 at 10^6
# took most of 60 s, the body rows 35 s, the dissipative pair 55 s, the ensemble 57 s,
# the packing 23 s, and the agreement did not finish in 90 s: about 11 minutes. With the
# warm step the aim is under 6; not yet measured on a GPU. SKIP="step ..." leaves steps
# out (a second call after a first that ran out of time). Without --quick: every size,
# the pile and the eager rows (30 minutes or more).
#
# GRANULAR_TEST_LOG (tests/conftest.py) writes each test's outcome as it ends, so a test
# step cut by its limit still names what failed (OUT/tests-progress.log).
#
# TESTS_LIMIT sets the test step's limit in seconds (default 330 with --quick).
#
# PY names the Python (default python3); PYTEST_WORKERS the test processes (default 16:
# the compile time of the kernels, not the GPU, bounds the tests).
set -uo pipefail
quick=0
if [ "${1:-}" = "--quick" ]; then quick=1; shift; fi
OUT=${1:-out/gpu-check}
PY=${PY:-python3}
WORKERS=${PYTEST_WORKERS:-16}
mkdir -p "$OUT"
rm -f "$OUT/FAILED"
export PYTHONUNBUFFERED=1
start=$SECONDS

step() {  # step NAME LIMIT_S COMMAND...: run COMMAND under LIMIT_S seconds, log in OUT/NAME.log
    local name=$1 limit=$2
    shift 2
    case " ${SKIP:-} " in *" $name "*) echo "== $name: skipped (SKIP)"; return 0 ;; esac
    echo "== $name: limit ${limit} s, at $((SECONDS - start)) s: $*"
    local t0=$SECONDS
    timeout -k 10 "$limit" "$@" > >(tee "$OUT/$name.log") 2>&1
    local rc=$?
    local took=$((SECONDS - t0))
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        echo "== $name: out of time after ${took} s"
        echo "$name (out of time after ${took} s)" >> "$OUT/FAILED"
    elif [ $rc -ne 0 ]; then
        echo "== $name: failed (exit $rc) after ${took} s"
        echo "$name (exit $rc)" >> "$OUT/FAILED"
    else
        echo "== $name: passed in ${took} s"
    fi
    echo "$name $rc $took" >> "$OUT/steps.txt"
}

rm -f "$OUT/steps.txt"
step info 60 "$PY" -m granular info --json
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem,driver_version --format=csv > "$OUT/nvidia-smi.csv" 2>&1 || true

if [ $quick -eq 1 ]; then
    # The kernels of both laws the tests and rows use, one function per process on every
    # core (granular.precompile), before anything loads them: the GPU's in both
    # precisions, the CPU's (for the CPU/GPU comparisons) in float64, side by side.
    step warm 240 bash -c "$PY -m granular compile --backend cpu --law hertz,hertz-mindlin --precision float64 \
        --json $OUT/compile-cpu.json & cpu=\$!; $PY -m granular compile --backend gpu --law hertz,hertz-mindlin \
        --precision float64,float32 --json $OUT/compile-gpu.json; gpu=\$?; wait \$cpu && exit \$gpu"
    GRANULAR_TEST_LOG="$OUT/tests-progress.log" step gpu-tests "${TESTS_LIMIT:-330}" "$PY" -m pytest -m gpu -q -p no:cacheprovider \
        -n "$WORKERS" --dist loadfile --maxfail "${MAXFAIL:-1}" -o addopts="" --durations=15 -rfE --tb=short
    # the block at N = 10^6 is bench-friction's block row (the pair the cost ratio needs)
    step bench-block 150 "$PY" -m granular bench --backend gpu --workload block,spheres,torus --n 215 \
        --spheres 10000,100000,1000000 --precision float64 --min-time 0.5 --json "$OUT/bench-block.json"
    step bench-bodies 40 bash -c "$PY bench/bench_ulvc.py --backend gpu --impl new --sizes 1e3,1e6 --min-time 0.5 \
        --json $OUT/bench-ulvc.json && $PY bench/bench_livens.py --backend gpu --impl new --scheme eml \
        --sizes 1e3,1e6 --min-time 0.5 --json $OUT/bench-livens.json"
    step bench-float32 100 "$PY" -m granular bench --backend gpu --workload block --n 100,215 --precision float32 \
        --min-time 0.5 --json "$OUT/bench-float32.json"
    step bench-friction 60 "$PY" -m granular bench --backend gpu --workload block,block-friction --n 100 \
        --min-time 0.5 --json "$OUT/bench-friction.json"
    step bench-ensemble 60 "$PY" bench/bench_particle_ensemble.py --backend gpu --n 10000 --loop 1 --chunk 10000 \
        --json "$OUT/bench-ensemble.json"
    step agreement 150 "$PY" bench/agreement.py --steps 1000 --precision float64 --energy-time 5 \
        --json "$OUT/agreement.json"
    step bench-packing 60 "$PY" bench/bench_packing.py --backend gpu --counts 1e5 --json "$OUT/bench-packing.json"
else
    step gpu-tests 1800 "$PY" -m pytest -m gpu -q -p no:cacheprovider -n "$WORKERS" --dist loadfile \
        -o addopts="" --durations=30 -rfE --tb=short
    step agreement 600 "$PY" bench/agreement.py --json "$OUT/agreement.json"
    step bench-packing 900 "$PY" bench/bench_packing.py --backend gpu --counts 1e4,1e5,1e6 --json "$OUT/bench-packing.json"
    step bench-block 1200 "$PY" -m granular bench --backend gpu --workload block,spheres,torus \
        --n 10,22,100,150,215 --spheres 10000,100000,1000000,10000000 --precision float64,float32 \
        --json "$OUT/bench-block.json"
    step bench-friction 1200 "$PY" -m granular bench --backend gpu --workload block,block-friction,pile --n 22,100 \
        --pile 10000,1000000 --json "$OUT/bench-friction.json"
    step bench-eager 600 "$PY" -m granular bench --backend gpu --eager --workload torus,spheres --spheres 10000 \
        --json "$OUT/bench-eager.json"
    step bench-bodies 1200 bash -c "for b in ulvc rolling_ball livens nontwisting; do $PY bench/bench_\$b.py \
        --backend gpu --sizes 1e3,1e6 --old-max 1e6 --json $OUT/bench-\$b.json || exit 1; done"
    step bench-ensemble 600 "$PY" bench/bench_particle_ensemble.py --backend gpu --n 1000 10000 --loop 3 \
        --json "$OUT/bench-ensemble.json"
fi

echo "== gpu-check: $((SECONDS - start)) s in all"
if [ -f "$OUT/FAILED" ]; then
    echo "gpu-check: these steps failed (logs in $OUT):"
    cat "$OUT/FAILED"
    exit 1
fi
echo "gpu-check: every step passed; logs and JSON in $OUT"
