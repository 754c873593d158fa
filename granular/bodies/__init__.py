"""Single-body formulations, batched: one row per body on the backend's arrays.

Each scheme lives in its own module (``ulvc``: unified local velocity coordinates,
paper 001; ``nontwisting``: directors and the non-twisting frame, paper 000; ``newton``:
the batched Newton solver shared by the implicit schemes). Import them directly, e.g.
``from granular.bodies import ulvc``.
"""
