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

Or import the modules directly, e.g. ``from granular.bodies.ulvc import LieGroupRK4``.
One package per paper, each with the modules below:

==============================  ============================================================
``core``                        the Scheme interface, states, the failure kinds, the
                                registry (the errors live in :mod:`granular.errors`)
``newton``                      batched array Newton solver (general Livens scheme,
                                multibody)
``directors.schemes``           director formulation of the rigid body, EM scheme (paper 000)
``directors.nontwisting``       nonholonomic non-twisting body, EM scheme (paper 000)
``directors.dla``               discrete Lagrange-d'Alembert comparators (paper 000)
``ulvc.coordinates``            unified local velocity coordinates: D̄, N̄, M̄, Γ̄, Q̄ (paper 001)
``ulvc.schemes``                Lie-group RK4 and the Newton-Euler RK4 reference (paper 001)
``livens.schemes``              Livens EM scheme (72) for mechanical systems (paper 002)
``livens.problems``             its model problems: redundant mass-spring, spring pendulum
``livens.rigid``                rigid bodies in quaternions: EML, REML, Null-EML (paper 002)
``livens.comparators``          the comparators MPL, EMH, MPH (paper 002, Table 1)
``livens.multibody``            bodies with joints, closed loops (paper 002)
``rolling_ball.ball``           rolling ball with internal masses on rails (paper 004)
``rolling_ball.rails``          rails and actuations of the masses
``rolling_ball.integrators``    RK4 and adaptive Dormand-Prince per ball
``rolling_ball.disk``           the planar rolling disk and its RK4
``rolling_ball.reference``      independent Newton-Euler reference (SciPy)
``rolling_ball.output``         ParaView frames of the balls and their masses
``scenes``                      ``[bodies]`` tables of scene files: schema, parsing,
                                validation, the run loop's adapters
==============================  ============================================================
"""

from .core import REGISTRY, Scheme, register, scheme_class, schemes  # noqa: E402

__all__ = ["REGISTRY", "Scheme", "register", "scheme_class", "schemes"]
