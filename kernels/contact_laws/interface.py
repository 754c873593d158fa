"""Constants shared by the contact laws and the loops around them (:mod:`kernels.contact_laws`)."""

#: ``contact`` answers: not in contact; evaluate the law; the contact has just opened
#: (its history is released).
NONE = 0
EVALUATE = 1
RELEASE = 2

#: Floats of a law's result besides its history: force (3), two moments (3 + 3), the
#: stored energy and four dissipated energies.
RESULT = 14


def in_wall_frame(T, me, u1, u2, u3, o1, o2, o3, e1, e2, e3):
    """A particle's ``body`` tuple seen from a moving wall, for the laws that read
    velocities in the common layout (position 3, radius, mass, the dashpots' velocity and
    angular velocity, the drift's): each velocity less the wall's rigid field at the
    particle's centre (``u`` the dashpots', ``e`` the drift's) and each angular velocity
    less the wall's ``o``. The law then treats the wall as at rest: the relative velocity
    of the contact point and the relative rotation are those of the moving wall."""
    return (me[0], me[1], me[2], me[3], me[4], me[5] - u1, me[6] - u2, me[7] - u3, me[8] - o1, me[9] - o2,
            me[10] - o3, me[11] - e1, me[12] - e2, me[13] - e3, me[14] - o1, me[15] - o2, me[16] - o3)  # fmt: skip
