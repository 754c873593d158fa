# Convenience targets; each is one plain command you can also type.
PY ?= python
# a pipeline into tee fails when its command fails
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

.PHONY: install test test-long run validate bench bench-bodies gpu-check info

install:            ## install with the test extras (editable)
	$(PY) -m pip install -e ".[test]"

test:               ## the README's test command (GPU kernels under the CUDA simulator)
	NUMBA_ENABLE_CUDASIM=1 $(PY) -m pytest

test-long:          ## long validation runs only
	NUMBA_ENABLE_CUDASIM=1 $(PY) -m pytest -m long

run:                ## the README's main job: torus impact to out/torus_impact
	granular run scenes/torus_impact.toml --out out/torus_impact

validate:           ## paper reproductions, figures and plots in out/validate
	for s in pendulum torus nontwisting ulvc livens rollingball; do granular validate $$s --out out/validate || exit 1; done

bench:              ## throughput on the CPU: block impact, Hertz spheres, torus
	$(PY) -m granular bench --backend cpu --n 10,22,40,100 --spheres 10000,100000 --precision float64,float32
	$(PY) bench/bench_integrator.py

OUT ?= out/gpu-check
gpu-check:          ## on a GPU machine: GPU tests, CPU/GPU agreement, GPU benchmark; logs and JSON in OUT
	mkdir -p $(OUT); rm -f $(OUT)/FAILED
	$(PY) -m granular info --json > $(OUT)/info.json; cat $(OUT)/info.json
	$(PY) -m pytest -m gpu -q -n 0 -p no:cacheprovider 2>&1 | tee $(OUT)/gpu-tests.log || echo "gpu tests" >> $(OUT)/FAILED
	$(PY) bench/agreement.py --json $(OUT)/agreement.json 2>&1 | tee $(OUT)/agreement.log || echo agreement >> $(OUT)/FAILED
	$(PY) -m granular bench --backend gpu --n 10,22,100,150,215 --spheres 10000,100000,1000000,10000000 \
		--precision float64,float32 --json $(OUT)/bench-gpu.json 2>&1 | tee $(OUT)/bench-gpu.log || echo bench >> $(OUT)/FAILED
	$(PY) -m granular bench --backend gpu --workload block,block-friction,pile --n 22,100 --pile 10000,1000000 \
		--json $(OUT)/bench-gpu-friction.json 2>&1 | tee $(OUT)/bench-gpu-friction.log || echo "bench friction, pile" >> $(OUT)/FAILED
	$(PY) -m granular bench --backend gpu --eager --workload torus,spheres --spheres 10000 \
		--json $(OUT)/bench-gpu-eager.json 2>&1 | tee $(OUT)/bench-gpu-eager.log || echo "bench --eager" >> $(OUT)/FAILED
	for b in ulvc rolling_ball livens nontwisting; do $(PY) bench/bench_$$b.py --backend gpu --sizes 1e3,1e6 --old-max 1e6 \
		2>&1 | tee $(OUT)/bench-$$b.log || echo "bench $$b" >> $(OUT)/FAILED; done
	@if [ -f $(OUT)/FAILED ]; then echo "gpu-check: these steps failed (logs in $(OUT)):"; cat $(OUT)/FAILED; exit 1; fi
	@echo "gpu-check: every step passed; logs and JSON in $(OUT)"

bench-bodies:       ## body schemes: per-body kernels beside the array code they replaced (CPU and GPU)
	for b in ulvc rolling_ball livens nontwisting; do $(PY) bench/bench_$$b.py --backend all --sizes 1e3,1e4,1e5 || exit 1; done

info:
	granular info
