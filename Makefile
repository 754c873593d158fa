# Convenience targets; each is one plain command you can also type.
PY ?= python

.PHONY: install test test-long run validate bench info

install:            ## install with the test extras (editable)
	$(PY) -m pip install -e ".[test]"

test:               ## the README's test command (GPU kernels under the CUDA simulator)
	NUMBA_ENABLE_CUDASIM=1 $(PY) -m pytest

test-long:          ## long validation runs only
	NUMBA_ENABLE_CUDASIM=1 $(PY) -m pytest -m long

run:                ## the README's main job: torus impact to out/torus_impact
	granular run scenes/torus_impact.toml --out out/torus_impact

validate:           ## paper reproductions, figures and plots in out/validate
	for s in pendulum torus nontwisting ulvc; do granular validate $$s --out out/validate || exit 1; done

bench:              ## throughput: bonded block impact and the bare integrator
	granular bench --backend all --n 10,22,46,100
	$(PY) bench/bench_integrator.py

info:
	granular info
