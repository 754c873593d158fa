"""The paper's torus impact as a model: moved to :mod:`granular.particles.paper_torus` (runtime code
such as ``granular bench`` uses it, and runtime code does not import the studies)."""

from ..particles.paper_torus import D_P, D_T, K_A, K_M, K_PP, K_S, N_P, V0, torus_builder, torus_model

__all__ = ["D_P", "D_T", "K_A", "K_M", "K_PP", "K_S", "N_P", "V0", "torus_builder", "torus_model"]
