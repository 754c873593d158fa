"""Constants shared by the contact laws and the loops around them (:mod:`kernels.contact_laws`)."""

#: ``contact`` answers: not in contact; evaluate the law; the contact has just opened
#: (its history is released).
NONE = 0
EVALUATE = 1
RELEASE = 2

#: Floats of a law's result besides its history: force (3), two moments (3 + 3), the
#: stored energy and four dissipated energies.
RESULT = 14
