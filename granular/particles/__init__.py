"""The particle engine: model, state, forces, neighbour search, integrators."""
