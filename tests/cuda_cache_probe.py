"""Compile one GPU kernel of :mod:`kernels.cuda` through numba-cuda's dispatcher with the
on-disk cache (:func:`kernels.cache.cuda_kernel`), without a GPU, and print what the
cache did: ``{"hits", "misses", "dir", "ptx"}`` as one JSON line.

numba-cuda compiles to PTX with NVVM and needs a device only to ask its compute
capability and to load the binary: both are answered here (an sm_90 device; loading is
skipped, so the cache keeps the PTX). Run as a script with ``NUMBA_ENABLE_CUDASIM``
unset: ``python cuda_cache_probe.py LAW [KERNEL]``. Used by ``tests/test_compiling.py``.
"""

import json
import os
import sys
from types import SimpleNamespace

os.environ["NUMBA_ENABLE_CUDASIM"] = "0"

import numba.cuda.codegen as _codegen
import numba.cuda.dispatcher as _dispatcher

_device = SimpleNamespace(compute_capability=(9, 0))
_dispatcher.get_current_device = lambda: _device
_codegen.devices.get_context = lambda: SimpleNamespace(device=_device)
_dispatcher._Kernel.bind = lambda self: None  # loading the binary needs the device

from numba import typeof

import granular as gr
from kernels import cache, contact_laws
from kernels import cuda as K


def main() -> int:
    law = contact_laws.LAWS[sys.argv[1]]
    name = sys.argv[2] if len(sys.argv) > 2 else "_velocities_kernel"
    m = gr.shapes.block_impact_builder(3, gap=0.05).finalize("cpu")
    s = m.state()
    kernel = K.for_law(law).kernels[name]
    sig = (typeof(m.dynamics(s)),)
    kernel.compile(sig)
    ptx = kernel.overloads[sig].inspect_asm((9, 0, "a"))
    print(json.dumps({"hits": sum(kernel._cache_hits.values()), "misses": sum(kernel._cache_misses.values()),
                      "dir": cache.cache_dir(), "ptx": ptx}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
