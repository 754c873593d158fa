"""Single-body formulations, batched: one row per body on the backend's arrays.

Import the modules directly, e.g. ``from granular.bodies import ulvc``:

=====================  ============================================================
``newton``             batched Newton solver shared by the implicit schemes
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
