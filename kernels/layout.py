"""The argument bundles of the particle kernels: named tuples of arrays and typed scalars.

A kernel takes a handful of these instead of thirty loose arrays. Numba passes a named
tuple to a compiled loop or a CUDA kernel field by field, and the bodies read
``bonds.rest_length[k]`` by name. Shapes for ``N`` particles, ``B`` bonds, ``W`` walls,
``P`` pendula; floats have the run's dtype (float64 or float32) unless said otherwise,
and scalar fields are NumPy scalars of that dtype, so a float32 run stays single
precision. Units are consistent units of length, time and mass.

``Dynamics``: what a step changes (and a failed block restores)
    ``x`` (N, 3) position; ``v`` (N, 3) velocity; ``q`` (N, 4) unit quaternion;
    ``omega`` (N, 3) spatial angular velocity Ω; ``F`` (N, 3) force and ``RM`` (N, 3)
    spatial moment at the current configuration; ``broken`` (B,) int8, 1 once a bond
    broke; ``released`` (B,) the energy each broken bond had when it broke [M L²/T²].
    With a contact law that reads velocities or keeps history
    (:mod:`kernels.contact_laws`), else one-row placeholders: ``vp``, ``wp`` (N, 6) the
    velocities the law sees (written by the advance pass, read by the force pass;
    columns 0-2 the dashpots', 3-5 the drift velocity that stretches the springs; (N, 3)
    outside a step: both are ``v``; see ``docs/contacts.md``); ``hist`` (N, capacity, H)
    the contacts' history (springs), parallel to the neighbour rows (both ends of a pair
    hold identical copies); ``live`` (N, capacity) uint8, 1 where a slot holds history
    (its last float is non-zero), so that the force pass reads one byte, not a slot's
    history, for each listed pair that does not touch; ``whist`` (N, W, H) the history
    of the wall contacts; ``dissip`` (N, 4) the energy each particle's contacts
    dissipated so far (normal, friction, rolling, twisting; a pair's is booked to its
    lower index, a wall contact's to its particle) [M L²/T²];
    ``nbr``, ``count``, ``x_ref``: the neighbour list the history is keyed to (the same
    arrays as in ``Contacts``), saved and restored with it.
    ``wpeak`` (N,) with walls, else (0,): the largest magnitude of the force of one
    particle-wall contact on each particle at any force evaluation of a step (the
    running maximum the force pass keeps, ``|f|`` of each contact evaluated with
    ``update``) [M L/T²]; a failed block restores it with the rest.
    ``wwork`` (N,) with moving walls, else (0,): the work the moving walls did on each
    particle so far (the power ``f·u_c - M_wall·ω`` of each wall contact, times ``h``,
    at each force evaluation of a step) [M L²/T²].
    ``image`` (N, 3) int32 in a periodic box, else (0, 3): the periods each particle
    crossed along each axis since the start (its unwrapped position is ``x + image L``);
    the advance pass keeps ``x`` in the box and counts here.

``Particles``: fixed per-particle parameters
    ``mass`` (N,) [M]; ``inertia`` (N,) scalar moment of inertia [mass·length²];
    ``radius`` (N,) [L].

``Bonds``: binder bonds (paper 003, Sect. 4)
    ``offsets`` (N+1,) int64 and ``incident`` (2B,) int64: CSR list of each particle's
    bonds in a canonical geometric order; ``a``, ``b`` (B,) int64 the two ends;
    ``rest_length`` (B,); ``n0a``, ``n0b`` (B, 3) the reference bond direction in the
    body frames of ``a`` and ``b``; ``qref`` (B, 4) the reference relative rotation;
    ``ka``, ``ks``, ``km`` (B,) stiffnesses [M L²/T²]; ``strain_max``, ``angle_max`` (B,)
    breakage thresholds (inf: never); ``can_break`` bool; ``skip_contacts`` bool: bonded
    pairs do not interact by contact; ``terms`` (B, 9) per-bond buffer ``(F_a, RM_a,
    RM_b)`` for the per-bond pass, or (0, 9) when each end evaluates its bonds itself;
    parallel bonds (:func:`kernels.laws.parallel_bond`): ``form`` (B,) int8, 0 for paper
    003's bond, 1 for a parallel bond failing on the larger of its stress ratios, 2 on
    their sum; for a parallel bond ``ka``, ``ks``, ``km`` hold ``k_n`` [M/T²], ``k_s``
    [M/T²] and ``k_b`` [M L²/T²], ``kt`` (B,) the torsion stiffness [M L²/T²], ``arm``
    (B, 2) the arms of ends ``a`` and ``b`` [L], ``crit`` (B, 4) the failure index's
    coefficients; all four are empty (length 0) when the model has no parallel bond.
    ``period``: the periodic box, as in ``Contacts`` (a bond across the boundary is
    measured by the minimum image). ``row`` (B,) int32 and ``table`` (K, 14): the same
    ``qref``, ``n0a``, ``n0b``, ``rest_length``, ``ka``, ``ks``, ``km`` as rows of a
    table of distinct rows (bond ``k``'s is ``table[row[k]]``, bit for bit), which the
    CPU's per-bond pass reads; empty where the backend has no per-bond pass.

``Contacts``: contact candidates and the contact law's fixed data
    ``mode`` int (:data:`kernels.laws.CONTACTS_NONE`, ``_LIST``, ``_ALL_PAIRS``);
    ``nbr`` (N, capacity) int32 neighbour indices, each row sorted ascending; ``count``
    (N,) int32 entries of each row (may exceed the capacity: then the list overflowed);
    ``x_ref`` (N, 3) positions at the last build; ``skin`` [L]; ``skin_half2`` =
    (skin/2)²; ``vel`` which velocity the law sees (:data:`kernels.laws.VELOCITY_HALF`,
    ``_PREDICTED``); ``mat`` (N,) int32 each particle's material; ``pair`` (rows,
    columns) the law's parameters per pair of materials (row
    :func:`kernels.contacts.build` ``pair_row``); ``nmat`` the materials of one system;
    ``hist``, ``live`` as in ``Dynamics``; ``nbr_old``, ``count_old``, ``hist_old``,
    ``live_old`` the rows, history (of the held slots only) and held flags before a
    rebuild (carried into the new rows); ``res`` (N, capacity,
    8) and ``got`` (N, capacity) uint8, the slots of the per-pair passes, or (0, 1, 8) and
    (0, 1) where each end evaluates its pairs itself; ``acc`` (N, 12) the CPU's direct
    pass's running sums of each particle's contact force and moment (with their
    compensations), or (0, 12). ``period`` (3, 3) in a periodic box, else (0, 3): per
    axis ``(lo, L, 1/L)``, the box ``[lo, lo + L)`` along a periodic axis, ``L = 0``
    along one that is not; every separation of two particles is then the minimum image
    (:func:`kernels.laws.min_image`) and the grids wrap around the periodic axes.

``Grid``: the hash grid the neighbour list is built from
    ``inv_cell`` = 1/cell size (the cell is at least the largest contact cutoff);
    ``mask`` = buckets - 1 (a power of two minus one); ``bucket_count`` (buckets,) int32;
    ``members`` (buckets, M) int32 particle ids per bucket; ``replica`` (N,) int32 the
    replica of each particle (a model of independent replicas: the replica is part of the
    cell, so particles of different replicas are never neighbours), or (0,) for one system.

``Walls``: planar walls ``n·x = c``
    ``planes`` (W, 4) rows ``(n1, n2, n3, c)`` with unit ``n`` into the allowed side;
    ``mat`` (W,) int32 each wall's material (the contact law's parameters of a particle
    and a wall are row ``pair_row(mat_particle, mat_wall)`` of ``Contacts.pair``); with
    replicas, ``first`` (R+1,) int64, the walls of replica ``r``
    being ``first[r]:first[r+1]``, and ``replica`` (N,) int32 each particle's replica; for
    one system both are (0,) and every particle meets every wall. A particle's wall
    springs (``Dynamics.whist``) are indexed by the wall's place within its replica.
    Prescribed motion (:mod:`kernels.walls`): ``ref`` (W, 4) float64 the planes at
    ``t = 0``; ``motion`` (W, 9) float64 each wall's rotation centre, angular velocity,
    rows of ``table`` and whether it moves; ``table`` (K, 7) float64 the tabulated
    translation velocities; ``frame`` (W + M, 22) where each moving wall and mesh is and
    how fast it goes at the clock's time (the run's dtype); ``clock`` (3,) float64
    ``(t_0, k, h)``, the time being ``t_0 + k h``, or (0,) when nothing moves (then
    ``planes`` never change). ``motion`` and ``frame`` have a row per plane then one per
    mesh.
    Triangle meshes (:mod:`kernels.meshes`; all empty without): ``tri`` (T, 12) each
    triangle's vertices and unit normal in its mesh's reference pose; ``mesh_geo`` (M,
    11) and ``mesh_idx`` (M, 3) int64 each mesh's bins, smooth angle, reference centre,
    frame row and material; ``cell_first`` (C+1,) int64 and ``cell_tri`` (K,) int32 the
    triangles binned in each cell (CSR); ``pick`` (N, 4, 9) and ``pick_tri`` (N, 4) int32
    the contacts each particle chose (scratch).

``Fields``: uniform gravity and the 3D pendulum (39)
    ``gravity`` (3,) or (0,) for none [length/time²]; ``pendulum_of`` (N,) int32 the
    pendulum slot of each particle (-1: none) or (0,) for no pendula; ``rho0`` (P, 3)
    body-frame pivot-to-centre-of-mass vector; ``mg`` (P,) ``m g``; ``vertical`` (P, 3)
    unit vertical ``e``.

``Flags``
    ``status`` (N,) int32 bit set of the failures of each particle since the block
    started (bits 1 << (code - 1) of the ``STATUS_*`` codes); ``report`` (R,) float64,
    the block's reductions at the ``REPORT_*`` slots below.
"""

from collections import namedtuple

Dynamics = namedtuple(
    "Dynamics", "x v q omega F RM broken released vp wp hist live whist dissip nbr count x_ref wpeak wwork image"
)
Particles = namedtuple("Particles", "mass inertia radius")
Bonds = namedtuple(
    "Bonds",
    "offsets incident a b rest_length n0a n0b qref ka ks km strain_max angle_max can_break skip_contacts terms "
    "form kt arm crit period row table",
)
Contacts = namedtuple(
    "Contacts",
    "mode nbr count x_ref skin skin_half2 vel mat pair nmat hist live nbr_old count_old hist_old live_old res got acc "
    "period",
)
#: The neighbour search's grids: the hash grid (``inv_cell mask bucket_count members``, the
#: GPU's, and the CPU's for replicas) and the CPU's sorted cell list (``order start xs cells
#: box cell``, ``xs`` the sorted particles' ``x y z r``, ``cell`` each particle's cell:
#: :func:`kernels.grid.build` ``sort_cells``; empty arrays where it is not used).
Grid = namedtuple("Grid", "inv_cell mask bucket_count members replica order start xs cells box cell")
Walls = namedtuple(
    "Walls", "planes mat first replica ref motion table frame clock tri mesh_geo mesh_idx cell_first cell_tri pick pick_tri"
)
Fields = namedtuple("Fields", "gravity pendulum_of rho0 mg vertical replica")
Flags = namedtuple("Flags", "status report")

# Slots of the report array (float64) a block leaves behind.
REPORT_ROTATION = 0  # 1 if some particle left the rotation domain of its map
REPORT_NOT_FINITE = 1  # 1 if a NaN or infinity appeared
REPORT_SKIN = 2  # 1 if a particle moved more than skin/2 since the last build
REPORT_DISPLACEMENT2 = 3  # largest |x - x_ref|² at the end of the block
REPORT_SPEED2 = 4  # largest |v|² at the end of the block
REPORT_NEIGHBORS = 5  # largest neighbour count found by a build in the block
REPORT_BUCKET = 6  # largest bucket occupancy found by a build in the block
REPORT_ACCEL2 = 7  # largest |F/m|² at the end of the block
REPORT_REBUILDS = 8  # neighbour rebuilds inside the block's steps (kernels that do them)
REPORT_SIZE = 9
#: Stands for a non-finite or absurd value in the report (float64).
REPORT_BIG = 1e300

# Status bits (one per STATUS_* code of kernels.laws).
BIT_ROTATION = 1
BIT_NOT_FINITE = 2
BIT_SKIN = 4

#: Columns of the per-particle diagnostics row (:func:`kernels.interactions.build`,
#: ``diagnostics_body``); their sums over particles are the series quantities.
DIAGNOSTICS = (
    "kinetic_translational",
    "kinetic_rotational",
    "U_gravity",
    "U_pendulum",
    "U_a",
    "U_s",
    "U_m",
    "U_pp",
    "U_pw",
    "P_x",
    "P_y",
    "P_z",
    "L_x",
    "L_y",
    "L_z",
    "broken_bonds",
    "U_released",
    "dissipated_normal",
    "dissipated_friction",
    "dissipated_rolling",
    "dissipated_twisting",
    "contacts",
    "work_walls",
)
DIAG = {name: k for k, name in enumerate(DIAGNOSTICS)}

# Interaction families, for the per-family force kernel (analysis and tests).
FAMILY_GRAVITY = 0
FAMILY_PENDULUM = 1
FAMILY_BONDS = 2
FAMILY_CONTACTS = 3
FAMILY_WALLS = 4
