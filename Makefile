# Convenience targets; each is one plain command you can also type.
PY ?= python

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

bench:              ## throughput: bonded block impact and the bare integrator
	granular bench --backend all --n 10,22,46,100
	$(PY) bench/bench_integrator.py

bench-bodies:       ## body schemes: per-body kernels beside the array code they replaced (CPU and GPU)
	for b in ulvc rolling_ball livens nontwisting; do $(PY) bench/bench_$$b.py --backend all --sizes 1e3,1e4,1e5 || exit 1; done

gpu-check:          ## on a machine with a GPU: the GPU tests, then the body kernels at 10^3 and 10^6 bodies
	$(PY) -m pytest -m gpu -q
	for b in ulvc rolling_ball livens nontwisting; do $(PY) bench/bench_$$b.py --backend gpu --sizes 1e3,1e6 --old-max 1e6 || exit 1; done

info:
	granular info
