"""The contact settings of :class:`granular.particles.builder.ModelBuilder`: materials,
pairs of materials, the contact law and its options, walls, and what ``finalize``
builds of them (the law, its kernels, the contact and wall families) with the checks of
placement (overlaps, particles behind walls).
"""

from __future__ import annotations

import numbers

import numpy as np

from kernels import contact_laws

from .forces import ParticleContacts, Walls
from .forces.laws import LAWS, MATERIAL_LAWS, VELOCITIES, hertz_law, material_law, reach
from .forces.meshes import TriangleMesh, mesh_problem
from .setup import Setup
from .forces.materials import PAIR_FIELDS, Material, check_material, pair_problems
from .forces.motion import WallMotion
from .inputs import _nonnegative
from .placement import overlap_problem, wall_problem


class ContactSettings:
    """Contact methods of :class:`~granular.particles.builder.ModelBuilder` (a mixin: the
    builder holds the lists they fill)."""

    def add_material(self, name, young=None, poisson=0.3, density=1.0, restitution=1.0, friction=0.0,
                     rolling_friction=0.0, twisting_friction=0.0, *, stiffness=None, tangential_stiffness=None,
                     tangential_damping=0.0, surface_energy=0.0, damping=0.0) -> int:  # fmt: skip
        """Define a material for a contact law with materials; return its index.

        Particles (:meth:`add_particles`) and walls (:meth:`add_wall`) name it. Once any
        particle has a material, every contact follows the law of :meth:`set_contacts`
        (default the dissipative law ``"hertz-mindlin"``;
        :mod:`granular.particles.forces.laws`, ``docs/contacts.md``), and every particle
        and wall needs a material. Each law needs some of the fields: ``young`` for
        ``"hertz-mindlin"`` and ``"jkr"``, ``stiffness`` for ``"linear"``; the others have
        defaults.

        Parameters
        ----------
        name : str
            Non-empty name, not defined before.
        young : float
            Young's modulus ``E`` [M/(L T²)], > 0.
        poisson : float, optional
            Poisson's ratio ``ν`` [-], in (-1, 0.5]. Default 0.3.
        density : float, optional
            Density ``ρ`` [M/L³], > 0: the default mass and inertia of spheres of the
            material. Default 1.
        restitution : float, optional
            Coefficient of restitution ``e`` [-], in [0.01, 1] (1: elastic). Default 1.
        friction, rolling_friction, twisting_friction : float, optional
            Sliding, rolling and twisting friction coefficients ``μ``, ``μ_r``, ``μ_t``
            [-], >= 0. Default 0.
        stiffness, tangential_stiffness : float, optional
            The linear law's normal and tangential spring stiffnesses ``k_n``, ``k_t``
            [M/T²], > 0 (``k_t`` default ``2/7 k_n``).
        tangential_damping : float, optional
            The linear law's tangential dashpot as a fraction ``x_γt`` of the normal one,
            >= 0. Default 0.
        surface_energy : float, optional
            JKR's surface energy ``γ`` of one surface [M/T²], >= 0 (the work of adhesion
            is ``2γ``, the pull-off force ``3πγR*``). Default 0.
        damping : float, optional
            JKR's damping coefficient ``d`` [1/(L T)], >= 0: the normal dashpot is
            ``d m* a``. Default 0.

        Returns
        -------
        int
            Index of the material (0, 1, ... in the order of definition).

        Raises
        ------
        ValueError
            A bad or repeated name, or a value out of range (the message names the
            material and the field).
        """
        self._open("add_material")
        if not isinstance(name, str) or not name:
            raise ValueError(f"material name: must be a non-empty string, got {name!r}")
        if name in self._materials:
            raise ValueError(f"material {name!r}: defined twice")
        m = Material(young, poisson, density, restitution, friction, rolling_friction, twisting_friction,
                     stiffness=stiffness, tangential_stiffness=tangential_stiffness,
                     tangential_damping=tangential_damping, surface_energy=surface_energy, damping=damping)
        check_material(name, m)
        self._materials[name] = (len(self._materials), m)
        return len(self._materials) - 1

    def set_pair(self, a, b, **values) -> None:
        """Give the pair of materials ``a``, ``b`` its own restitution or friction
        coefficients in place of the mixing rule's geometric means.

        ``E*`` and ``G*`` still follow from the two materials. A second call for the same
        pair adds to (or replaces) the values of the first; ``a == b`` sets the values
        of contacts between two bodies of one material.

        Parameters
        ----------
        a, b : str
            Names of materials defined by :meth:`add_material`.
        **values : float
            Any of ``restitution`` (in [0.01, 1]; 1: elastic), ``friction``,
            ``rolling_friction``, ``twisting_friction`` (>= 0).

        Raises
        ------
        ValueError
            An unknown material or value name, no value, or a value out of range (the
            message names the pair and the field).

        Examples
        --------
        >>> from granular import ModelBuilder
        >>> b = ModelBuilder()
        >>> b.add_material("glass", 7e10, 0.25, 2500.0, restitution=0.9, friction=0.4)
        0
        >>> b.add_material("steel", 2e11, 0.3, 7800.0, restitution=0.9, friction=0.2)
        1
        >>> b.set_pair("glass", "steel", restitution=0.7, friction=0.15)
        """
        self._open("set_pair")
        for name in (a, b):
            if not isinstance(name, str) or name not in self._materials:
                raise ValueError(f"pair ({a!r}, {b!r}): no material named {name!r}; defined: {sorted(self._materials)}")
        if not values:
            raise ValueError(f"pair ({a!r}, {b!r}): give at least one of {', '.join(PAIR_FIELDS)}")
        problems = pair_problems(values)
        if problems:
            field, msg = problems[0]
            raise ValueError(f"pair ({a!r}, {b!r}): {field}: {msg}")
        key = tuple(sorted((self._materials[a][0], self._materials[b][0])))
        self._pairs[key] = {**self._pairs.get(key, {}), **{k: float(v) for k, v in values.items()}}

    def set_contacts(self, kpp=None, bonded_contacts=True, search="cells", skin=None, velocity="predicted",
                     allow_initial_overlap=False, law=None) -> None:  # fmt: skip
        """Set the contact between particles (and the law at the walls).

        Paper 003's law (``law="hertz"``, the default with ``kpp``) is
        ``U^pp = (2/5) K^pp [1 - r/(r_i + r_j)]_+^{5/2}`` (the factor of (56) as
        ``docs/physics.md`` reads it). With materials (:meth:`add_material`) a law with
        materials acts instead (then ``kpp`` must be left out): ``"hertz-mindlin"`` (the
        default), ``"linear"`` or ``"jkr"`` (:mod:`granular.particles.forces.laws`); it acts
        even without this call, which then only sets the other options. :meth:`finalize`
        refuses particles that overlap at the start unless ``allow_initial_overlap`` (and
        coincident ones always: their contact has no direction). A second call replaces
        every setting of the first.

        Parameters
        ----------
        kpp : float, optional
            Contact stiffness ``K^pp`` [M L²/T²], >= 0; also the default stiffness of the
            walls. Required without materials.
        bonded_contacts : bool, optional
            Whether bonded pairs also interact by contact (default, as in the paper);
            ``False`` leaves a bonded pair out while its bond holds (once it breaks, the
            two grains collide like any other pair).
        search : {"cells", "all-pairs"}, optional
            ``"cells"`` (default): a neighbour list with the margin ``skin``;
            ``"all-pairs"``: every pair, no list (not with materials); see
            :class:`~granular.particles.forces.ParticleContacts`.
        skin : float, optional
            Neighbour-list margin [L], finite and >= 0. Default 0.4 × the largest radius.
        velocity : {"predicted", "half"}, optional
            The velocity the dissipative law's damping and friction see
            (``docs/contacts.md``). Default ``"predicted"``.
        allow_initial_overlap : bool, optional
            Accept particles that overlap at the start. Default ``False``.
        law : {"hertz", "hertz-mindlin", "linear", "jkr"}, optional
            The contact law (default: ``"hertz"`` with ``kpp``, ``"hertz-mindlin"`` with
            materials).

        Raises
        ------
        ValueError
            ``kpp`` not finite and >= 0, or an unknown ``search``, ``velocity`` or
            ``law``, or a ``skin`` not finite and >= 0.
        """
        self._open("set_contacts")
        # every argument is checked before any setting changes: a call that raises
        # leaves the settings of the call before
        if law is not None and (not isinstance(law, str) or law not in LAWS):
            raise ValueError(f"law: must be one of {', '.join(LAWS)}, got {law!r}")
        if not isinstance(velocity, str) or velocity not in VELOCITIES:
            raise ValueError(f"velocity: must be one of {sorted(VELOCITIES)}, got {velocity!r}")
        kpp = None if kpp is None else float(_nonnegative("kpp", kpp, 1, what="value")[0])
        if not isinstance(search, str) or search not in ("cells", "all-pairs"):
            raise ValueError(f"search: must be 'cells' or 'all-pairs', got {search!r}")
        if skin is not None and (isinstance(skin, bool) or not isinstance(skin, numbers.Real)
                                 or not (np.isfinite(skin) and skin >= 0)):  # fmt: skip
            raise ValueError(f"skin: must be finite and >= 0, got {skin!r}")
        self._velocity = velocity
        self._contacts_set = True
        self._allow_overlap = bool(allow_initial_overlap)
        self._kpp = kpp
        self._bonded_contacts = bool(bonded_contacts)
        self._contact_search = (search, skin)
        self._contact_law = law

    def add_wall(self, normal, offset=0.0, k=None, material=None, allow_initial_overlap=False, velocity=None,
                 angular_velocity=None, center=None, name=None, present=True) -> int:  # fmt: skip
        """Add a planar wall ``n·x = offset``; return its id.

        ``n = normal/|normal|`` points into the allowed side. Without materials the wall
        acts by the contact law (56)-(57) with the distance of the centre from the plane
        in place of ``r`` and the particle's radius as the reach (``docs/physics.md``);
        with materials, by the dissipative law. :meth:`finalize` refuses particles that
        start inside or behind the wall unless ``allow_initial_overlap``.

        Parameters
        ----------
        normal : array_like, (3,) float
            Normal of the plane [-], finite and non-zero (normalised here).
        offset : float, optional
            Offset ``c`` of the plane ``n·x = c`` along the unit normal [L]. Default 0.
        k : float, optional
            Stiffness [M L²/T²], >= 0. Default: the contact stiffness ``kpp`` of
            :meth:`set_contacts` as it is at :meth:`finalize` (an error there if there is
            none and no materials).
        material : str, optional
            The wall's material under the dissipative law (:meth:`add_material`);
            required with materials, refused without.
        allow_initial_overlap : bool, optional
            Accept particles that start inside or behind this wall. Default ``False``.
        velocity : 3 numbers, or rows ``[t, v_x, v_y, v_z]``, optional
            Prescribed translation [L/T]: a constant velocity, or a table of velocities
            (times strictly increasing, linear between rows, held before the first row
            and after the last). The wall is at ``n·x = offset`` at ``t = 0``.
        angular_velocity : 3 numbers, optional
            Prescribed rotation [1/T]: the wall turns by ``|ω| t`` about ``ω`` through
            ``center``. The contact law sees each particle's velocity relative to the
            wall's rigid velocity field, and the wall's work on the particles is booked
            (``State.wall_work``, the series' ``work_walls``; ``docs/geometry.md``).
        center : 3 numbers, optional
            A point of the rotation axis at ``t = 0`` [L] (moves with the translation);
            default the origin.
        name : str, optional
            What a change of the set-up during a run calls it (:mod:`granular.particles.setup`,
            a scene's ``[[stages]]``); unique among the walls and meshes. Default ``"wall k"``.
        present : bool, optional
            False: the wall is declared but not in the model until a change of the set-up
            puts it back (``Simulation.change(add=[name])``). Default True.

        Returns
        -------
        int
            Id of the wall (0, 1, ... in the order of the calls).

        Raises
        ------
        ValueError
            ``normal`` not 3 finite numbers or of zero length, ``offset`` not finite,
            ``k`` not finite and >= 0, an unknown ``material``, or a malformed motion
            (``velocity``, ``angular_velocity``, ``center``); the message names the wall.
        """
        self._open("add_wall")
        wid = len(self._walls)
        name = self._boundary_name(name, f"wall {wid}")
        mat = -1
        if material is not None:
            if not isinstance(material, str) or material not in self._materials:
                raise ValueError(f"wall {wid}: material: no material named {material!r}; defined: "
                                 f"{sorted(self._materials)}")  # fmt: skip
            mat = self._materials[material][0]
        try:
            nrm = np.asarray(normal, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"wall {wid}: normal must be 3 numbers, got {normal!r}") from None
        if nrm.shape != (3,) or not np.isfinite(nrm).all():
            raise ValueError(f"wall {wid}: normal must be 3 finite numbers, got {normal!r}")
        length = float(np.linalg.norm(nrm))
        if length == 0.0:
            raise ValueError(f"wall {wid}: normal has zero length")
        off = None
        if np.ndim(offset) == 0 and not isinstance(offset, (bool, np.bool_, str, bytes)):
            try:
                off = float(offset)
            except (TypeError, ValueError):
                off = None
        if off is None or not np.isfinite(off):
            raise ValueError(f"wall {wid}: offset must be a finite number, got {offset!r}")
        kk = None if k is None else float(_nonnegative(f"wall {wid}: k", k, 1, what="value")[0])
        motion = None
        if velocity is not None or angular_velocity is not None or center is not None:
            motion = WallMotion(velocity, angular_velocity, center, what=f"wall {wid}")
        self._walls.append((nrm / length, off, kk, mat))
        self._wall_overlap.append(bool(allow_initial_overlap))
        self._wall_motion.append(motion)
        self._wall_names.append(name)
        self._declare_absent(name, present)
        return wid

    def expect_changes(self) -> None:
        """Say that a run of the model will change its set-up
        (:mod:`granular.particles.setup`: ``Simulation.change``, a scene's ``[[stages]]``),
        as a change requires: the model then keeps the walls' work (the series'
        ``work_walls``), draws its walls and meshes at every frame, and has a gravity
        field (zero if none was set), so that the series and the frames have what a
        change may bring from the first row. A wall or mesh declared ``present=False``
        implies it (but for the gravity field)."""
        self._open("expect_changes")
        if self._setup is None:
            self._setup = Setup()
        self._keep_work = True
        if self._gravity is None:
            self._gravity = np.zeros(3)

    def _declare_absent(self, name, present) -> None:
        if not present:  # a change will put it in: the model expects changes
            old = self._setup or Setup()
            self._setup = Setup(old.absent + [name], list(old.motions), old.gravity)
            self._keep_work = True

    def _boundary_name(self, name, default) -> str:
        """``name`` checked (a string no wall or mesh has yet), or ``default``."""
        if name is None:
            name = default
        if not isinstance(name, str) or not name:
            raise ValueError(f"{default}: name must be a non-empty string, got {name!r}")
        taken = list(self._wall_names) + [m["name"] for m in self._meshes]
        if name in taken:
            raise ValueError(f"{default}: name {name!r} is taken; the walls and meshes are named {taken}")
        return name

    def add_mesh(self, mesh, material=None, k=None, smooth_angle=20.0, allow_initial_overlap=False, velocity=None,
                 angular_velocity=None, center=None, name=None, present=True) -> int:  # fmt: skip
        """Add a rigid triangle mesh as a boundary; return its id.

        A particle meets a mesh from either side, at the closest point of its triangles,
        one contact per flat or smoothly curved region (``docs/geometry.md``), by the
        model's contact law as against a planar wall.

        Parameters
        ----------
        mesh : TriangleMesh
            The triangles (:class:`granular.TriangleMesh`: read from a file, a shape,
            transformed) in their pose at ``t = 0`` [L].
        material : str, optional
            The mesh's material under a law with materials; required there, refused without.
        k : float, optional
            Stiffness [M L²/T²] under paper 003's law; default the contact stiffness ``kpp``.
        smooth_angle : float, optional
            Surfaces of one mesh meeting at less than this angle [degrees] are one region:
            a particle touching both feels one contact, and its history follows it from one
            triangle to the next. Default 20; in (0, 90).
        allow_initial_overlap : bool, optional
            Accept particles that start touching the mesh. Default ``False``.
        velocity, angular_velocity, center
            Prescribed rigid motion, as for :meth:`add_wall`; ``center`` (the point the
            rotation turns about at ``t = 0``) defaults to the mesh's area centroid.
        name : str, optional
            What a change of the set-up during a run calls it (as for :meth:`add_wall`).
            Default ``"mesh k"``.
        present : bool, optional
            As for :meth:`add_wall`. Default True.

        Returns
        -------
        int
            Id of the mesh (0, 1, ... in the order of the calls).
        """
        self._open("add_mesh")
        mid = len(self._meshes)
        what = f"mesh {mid} ({getattr(mesh, 'name', '?')})"
        name = self._boundary_name(name, f"mesh {mid}")
        if not isinstance(mesh, TriangleMesh):
            raise ValueError(f"mesh {mid}: must be a granular.TriangleMesh, got {type(mesh).__name__}")
        mat = -1
        if material is not None:
            if not isinstance(material, str) or material not in self._materials:
                raise ValueError(f"{what}: material: no material named {material!r}; defined: {sorted(self._materials)}")
            mat = self._materials[material][0]
        kk = None if k is None else float(_nonnegative(f"{what}: k", k, 1, what="value")[0])
        try:
            smooth = float(smooth_angle)
        except (TypeError, ValueError):
            smooth = float("nan")
        if not 0.0 < smooth < 90.0:
            raise ValueError(f"{what}: smooth_angle: must be a number of degrees in (0, 90), got {smooth_angle!r}")
        motion = WallMotion(velocity, angular_velocity, mesh.center if center is None else center, what=what)
        self._meshes.append({"mesh": mesh, "k": kk, "mat": mat, "smooth": smooth, "motion": motion,
                             "overlap": bool(allow_initial_overlap), "name": name})  # fmt: skip
        self._declare_absent(name, present)
        return mid

    def _materials_used(self) -> bool:
        """Whether any particle names a material."""
        return bool(self._mat) and bool((np.concatenate(self._mat) >= 0).any())

    def _contact_families(self, be, dtype, bonds, replica, first_wall, period=None):
        """The contact law, its kernels and the contact and wall families, checked."""
        cat = np.concatenate
        forces = []
        dissipative = self._law(be, dtype)
        if self._kpp is None and dissipative is None and self._contacts_set:
            raise ValueError("set_contacts: give kpp (the Hertz law U^pp), or materials for the dissipative law")
        ks = []
        if self._walls:
            # a wall without k takes its replica's contact stiffness
            wall_kpp = [self._kpp] * len(self._walls)
            if self._replica_kpp is not None:
                wall_kpp = np.repeat(self._replica_kpp, self._replica_walls).tolist()
            for wid, (_, _, k, _) in enumerate(self._walls):
                if k is None and self._kpp is None and dissipative is None:
                    raise ValueError(f"wall {wid}: no stiffness k given and no contact stiffness set (set_contacts)")
                ks.append((wall_kpp[wid] or 0.0) if k is None else k)
        mesh_ks = []
        for mid, m in enumerate(self._meshes):
            if m["k"] is None and self._kpp is None and dissipative is None:
                raise ValueError(f"mesh {mid}: no stiffness k given and no contact stiffness set (set_contacts)")
            mesh_ks.append((self._kpp or 0.0) if m["k"] is None else m["k"])
        law = dissipative
        if law is None and (self._kpp is not None or self._walls or self._meshes):
            law = hertz_law(be, self._n, self._kpp, ks + mesh_ks, replica=replica, first_wall=first_wall,
                            kpp_replicas=self._replica_kpp, dtype=dtype)  # fmt: skip
        kernels = be.kernels.for_law(law.kernel if law is not None else contact_laws.hertz,
                                     meshes=bool(self._meshes))  # fmt: skip
        if self._kpp is not None or dissipative is not None:
            search, skin = self._contact_search
            radius_dev = be.asarray(cat(self._radius), dtype=dtype)
            kpp = self._kpp or 0.0
            if self._replica_kpp is not None:
                kpp = float(np.max(self._replica_kpp))
            forces.append(ParticleContacts(be, self._n, law, kpp, bonds, self._bonded_contacts, search, skin,
                                           radius_dev, replica=replica, kernels=kernels, period=period))  # fmt: skip
        if self._walls or self._meshes:
            planes = [np.concatenate([n, [c]]) for n, c, _, _ in self._walls]
            rmax = float(np.concatenate(self._radius).max())
            margin = 1.001 * (rmax + reach(law, rmax))  # the farthest a centre can be from a triangle it meets
            forces.append(Walls(be, self._n, planes, ks + mesh_ks, dtype=dtype, mat=law.wall_mat_host, first=first_wall,
                                replica=replica, motions=self._wall_motion, meshes=self._meshes, margin=margin,
                                history=law.history, keep_work=self._keep_work))  # fmt: skip
        return law, kernels, forces

    def _check_placement(self, x, radius, contacts) -> None:
        """Overlapping or coincident particles (with contacts) and particles inside walls,
        as scene files check them (:mod:`granular.particles.placement`); with replicas,
        within each replica (replicas may overlap each other)."""
        if self._replica_counts is None:
            self._check_system(x, radius, contacts, range(len(self._walls)), "")
            for mid, m in enumerate(self._meshes):
                if not m["overlap"]:
                    problem = mesh_problem(m["mesh"], x, radius)
                    if problem is not None:
                        raise ValueError(f"mesh {mid} ({m['mesh'].name}): {problem}; move the particles, or "
                                         f"add_mesh(..., allow_initial_overlap=True)")  # fmt: skip
            return
        lo = w0 = 0
        for r, (n, nw) in enumerate(zip(self._replica_counts, self._replica_walls)):
            self._check_system(x[lo:lo + n], radius[lo:lo + n], contacts, range(w0, w0 + nw),
                               f"replica {self._replica_names[r]}: ", first_wall=w0)  # fmt: skip
            lo += n
            w0 += nw

    def _check_system(self, x, radius, contacts, walls, where, first_wall=0) -> None:
        """The checks of one system (a replica: its particles ``x``, its walls, named from
        ``first_wall`` on as in its own builder)."""
        problem = None
        if contacts:
            problem = overlap_problem(x, radius, self._allow_overlap, "set_contacts(..., allow_initial_overlap=True)",
                                      period=self._period_rows() if self._replica_counts is None else None)  # fmt: skip
        for wid in walls:
            n, c, _, _ = self._walls[wid]
            local = wid - first_wall
            if problem is None and not self._wall_overlap[wid]:
                problem = wall_problem(n, c, x, radius, f"add_wall(..., allow_initial_overlap=True) for wall {local}")
                if problem is not None:
                    problem = (problem[0], f"wall {local}: {problem[1]}")
        if problem is not None:
            raise ValueError(where + problem[1])

    def _law(self, be, dtype):
        """The law with materials when any particle has a material (then all must, and
        every wall), else ``None`` (paper 003's law, or no contacts)."""
        mat = np.concatenate(self._mat)
        name = self._contact_law
        if not (mat >= 0).any():
            for wid, w in enumerate(self._walls):
                if w[3] >= 0:
                    raise ValueError(f"wall {wid}: has a material but no particle has one; give the particles "
                                     "materials (the dissipative law), or leave the wall's out")  # fmt: skip
            for mid, m in enumerate(self._meshes):
                if m["mat"] >= 0:
                    raise ValueError(f"mesh {mid}: has a material but no particle has one; give the particles "
                                     "materials (the dissipative law), or leave the mesh's out")  # fmt: skip
            if self._pairs or self._replica_pairs:
                raise ValueError("set_pair: values were given to pairs of materials but no particle has a material")
            if name is not None and name != "hertz":
                raise ValueError(f"law: the {name} contact law needs materials (add_material, and a material for "
                                 "every particle and wall)")  # fmt: skip
            return None
        if name == "hertz":
            raise ValueError("law: paper 003's hertz law takes kpp, not materials; choose a law with materials "
                             f"({', '.join(MATERIAL_LAWS)}) or leave the particles' materials out")  # fmt: skip
        name = name or "hertz-mindlin"
        spec = MATERIAL_LAWS[name]
        if (mat < 0).any():
            i = int(np.argmax(mat < 0))
            raise ValueError(f"particle {i} has no material; with materials every particle needs one (the contact "
                             "law acts between every pair)")  # fmt: skip
        for wid, w in enumerate(self._walls):
            if w[3] < 0:
                raise ValueError(f"wall {wid}: material: with materials every wall needs one")
        if self._kpp is not None:
            raise ValueError(f"kpp: with materials the {name} law replaces U^pp; leave kpp out")
        names = sorted(self._materials, key=lambda k: self._materials[k][0])
        mats = [self._materials[k][1] for k in names]
        for table in [mats] + list(self._replica_materials or []):
            for k, m in zip(names, table):
                check_material(k, m, spec.needs)
        for given in [self._pairs] + list(self._replica_pairs or []):
            for (a, b), values in given.items():
                bad = sorted(set(values) - set(spec.pair_fields))
                if bad:
                    raise ValueError(f"pair ({names[a]!r}, {names[b]!r}): {bad[0]}: not a value of a pair under the "
                                     f"{name} law; allowed: {', '.join(spec.pair_fields)}")  # fmt: skip
        for mid, m in enumerate(self._meshes):
            if m["mat"] < 0:
                raise ValueError(f"mesh {mid}: material: with materials every mesh needs one")
        wall_mat = np.asarray([w[3] for w in self._walls] + [m["mat"] for m in self._meshes], dtype=np.int64)
        per, per_pairs = self._replica_materials, self._replica_pairs
        if per is not None or per_pairs is not None:  # replica r's materials are r * M + m (a block of pair rows each)
            count = len(self._replica_counts)
            per = per if per is not None else [mats] * count
            m = len(names)
            mat = mat + m * np.repeat(np.arange(count), self._replica_counts)
            wall_mat = wall_mat + m * np.repeat(np.arange(count), self._replica_walls)
        return material_law(name, be, mats, names, mat, wall_mat, velocity=self._velocity, dtype=dtype,
                            per_replica=per, pairs=self._pairs, per_replica_pairs=per_pairs)  # fmt: skip


