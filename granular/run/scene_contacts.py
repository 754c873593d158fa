"""The semantic checks of a scene's contact settings: materials, pairs of materials, the
contact law and the walls (each error a field path and what is allowed)."""

from __future__ import annotations

from ..particles.forces.laws import MATERIAL_LAWS


def contact_errors(scene) -> list:
    """``(path, message)`` for every inconsistency of ``scene``'s ``[contacts]``,
    ``[materials]``, ``[[material_pairs]]`` and walls."""
    errors = []
    mats = scene.materials
    if mats:
        for k, g in enumerate(scene.particles):
            if g.material is None:
                errors.append((f"particles[{k}].material", f"with [materials] every group names one; defined: "
                               f"{sorted(mats)}"))  # fmt: skip
        for k, w in enumerate(scene.walls):
            if w.material is None:
                errors.append((f"walls[{k}].material", f"with [materials] every wall names one; defined: {sorted(mats)}"))
        law = (scene.contacts.law if scene.contacts is not None else None) or "hertz-mindlin"
        if law == "hertz":
            errors.append(("contacts.law", "'hertz' (paper 003's law) takes kpp, not [materials]; with materials "
                           "choose 'hertz-mindlin', 'linear' or 'jkr'"))  # fmt: skip
        needs = MATERIAL_LAWS[law].needs if law in MATERIAL_LAWS else ()
        for name, m in mats.items():
            for field in needs:
                if getattr(m, field) is None:
                    errors.append((f"materials.{name}.{field}", f"required field is missing (the {law} contact law)"))
        if scene.contacts is not None and scene.contacts.kpp is not None:
            errors.append(("contacts.kpp", f"with [materials] the {law} law replaces U^pp; leave kpp out"))
        if scene.contacts is not None and scene.contacts.search != "cells":
            errors.append(("contacts.search", f"the {law} law (materials) keeps history per contact in the "
                           "neighbour list: it needs 'cells', not 'all-pairs'"))  # fmt: skip
    elif scene.contacts is not None and scene.contacts.law not in (None, "hertz"):
        errors.append(("contacts.law", f"the {scene.contacts.law} law needs [materials] (a material for every "
                       "particle group and wall)"))  # fmt: skip
    elif scene.contacts is not None and scene.contacts.kpp is None:
        errors.append(("contacts.kpp", "required field is missing (or give [materials] for the dissipative law)"))
    for k, pair in enumerate(scene.material_pairs):
        if not mats:
            errors.append((f"material_pairs[{k}]", "needs [materials]: it sets values of the dissipative law"))
            continue
        for name in pair.materials:
            if name not in mats:
                errors.append((f"material_pairs[{k}].materials", f"no material {name!r}; defined: {sorted(mats)}"))
        if not pair.values():
            errors.append((f"material_pairs[{k}]", "gives no value: set restitution, friction, rolling_friction or "
                           "twisting_friction"))  # fmt: skip
        same = [j for j, other in enumerate(scene.material_pairs[:k]) if sorted(other.materials) == sorted(pair.materials)]
        if same:
            errors.append((f"material_pairs[{k}].materials", f"the pair {pair.materials} is given already by "
                           f"material_pairs[{same[0]}]; give each pair once"))  # fmt: skip
    for k, g in enumerate(scene.particles):
        if g.material is not None and g.material not in mats:
            errors.append((f"particles[{k}].material", f"no material {g.material!r}; defined: {sorted(mats)}"))
    for k, w in enumerate(scene.walls):
        if w.material is not None and w.material not in mats:
            errors.append((f"walls[{k}].material", f"no material {w.material!r}; defined: {sorted(mats)}"))
        if w.k is None and w.material is None and not mats and (scene.contacts is None or scene.contacts.kpp is None):
            errors.append((f"walls[{k}].k", "no stiffness: give k or a [contacts] table (its kpp is the default)"))
    return errors
