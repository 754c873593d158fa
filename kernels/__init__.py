"""Hot loops only: array-in, array-out; no physics API, no IO.

:mod:`kernels.laws` holds scalar laws, :mod:`kernels.particles` the per-particle bodies
built from them, :mod:`kernels.cpu` and :mod:`kernels.cuda` the two compilations with
identical launcher signatures. Nothing is compiled at import of this package.
"""
