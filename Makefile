# Convenience targets; each is one plain command you can also type.
PY ?= python
# a pipeline into tee fails when its command fails
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

.PHONY: install test test-long run validate bench bench-bodies gpu-check gpu-check-quick info

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
gpu-check:          ## on a GPU machine: GPU tests, CPU/GPU agreement, every benchmark size; logs and JSON in OUT
	PY=$(PY) bench/gpu_check.sh $(OUT)

gpu-check-quick:    ## the same at the targets' sizes only, kernels compiled first on every core, each step time-limited (aim: under 6 minutes on an H100)
	PY=$(PY) bench/gpu_check.sh --quick $(OUT)

bench-bodies:       ## body schemes: per-body kernels beside the array code they replaced (CPU and GPU)
	for b in ulvc rolling_ball livens nontwisting; do $(PY) bench/bench_$$b.py --backend all --sizes 1e3,1e4,1e5 || exit 1; done

info:
	granular info
