"""Test references: the whole-array NumPy/CuPy implementations of the body schemes that
the per-body kernels of ``kernels/bodies_*`` replaced. Each module keeps the array code
of one scheme family as it was, on the package's models, states and diagnostics; the
tests compare the kernels against it."""
