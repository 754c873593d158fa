# Convenience targets; each is one plain command you can also type.
PY ?= python

.PHONY: install test test-long run validate bench info

install:            ## install with the test extras (editable)
	$(PY) -m pip install -e ".[test]"

test:               ## the README's test command (GPU kernels under the CUDA simulator)
	NUMBA_ENABLE_CUDASIM=1 $(PY) -m pytest

test-long:          ## long validation runs only
	NUMBA_ENABLE_CUDASIM=1 $(PY) -m pytest -m long

validate:           ## paper reproductions
	granular validate pendulum --out out/pendulum

bench:              ## throughput of the explicit integrator
	$(PY) bench/bench_integrator.py

info:
	granular info
