"""Counter-based hashing of unsigned 64-bit integers, for reproducible streams
(:mod:`granular.ensemble.spec`) and for telling rows of bits apart
(:func:`granular.particles.forces.bonds.bond_table`)."""

import numpy as np

__all__ = ["splitmix64"]


def splitmix64(z):
    """SplitMix64's finaliser on a uint64 array (wrapping arithmetic; a new array)."""
    z = z.astype(np.uint64, copy=True)
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return z
