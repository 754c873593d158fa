"""Single-body formulations, batched: one row per body on the backend's arrays.

Every scheme is a :class:`~granular.bodies.core.Scheme` (``step(state, h)``,
``invariants(state)``, one error family, a registry by name; ``docs/bodies.md``) whose
step is a per-body law in ``kernels/bodies_*.py``, compiled for the CPU and the GPU.
Every scheme is found by name in the registry (``schemes()`` lists the names)::

    from granular.bodies import scheme_class
    EML = scheme_class("livens eml")          # granular.bodies.livens.rigid.EML
    top = EML(J, n=1000, mass=1.0, center_of_mass=(0, 0, 0.1), gravity=(0, 0, -9.81))
    s = top.state([1, 0, 0, 0], Omega=(1.0, 2.0, 3.0))
    top.advance(s, 1e-3, 100)

Or import the modules directly, e.g. ``from granular.bodies import ulvc``:

=====================  ============================================================
``core``               the Scheme interface, states, errors and the registry
``newton``             batched array Newton solver (general Livens scheme, multibody)
``directors``          director formulation of the rigid body, EM scheme (paper 000)
``nontwisting``        nonholonomic non-twisting body, EM scheme (paper 000)
``dla``                discrete Lagrange-d'Alembert comparators (paper 000)
``ulvc``               unified local velocity coordinates, Lie-group RK4 (paper 001)
``livens*``            Livens-principle EM schemes with unit quaternions (paper 002)
``rolling_ball``       rolling ball with internal masses on rails (paper 004), with
                       ``rails``, ``rolling_disk``, ``rolling_ball_integrators``
``scenes``             ``[bodies]`` tables of scene files: validation and runs
=====================  ============================================================
"""

from .core import REGISTRY, Scheme, register, scheme_class, schemes  # noqa: E402

__all__ = ["REGISTRY", "Scheme", "register", "scheme_class", "schemes"]
