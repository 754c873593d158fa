"""CPU kernels of the body schemes: the per-body laws of ``kernels.bodies_*`` compiled by
``numba.njit`` and run in ``prange`` loops over bodies (each iteration reads and writes
only its own body's rows, so the result does not depend on the thread schedule).

Every launcher has the same signature as its twin in :mod:`kernels.bodies_cuda`. The
implicit schemes get their Newton scratch matrix here (``np.empty`` once per body and
launch); the GPU twin uses ``cuda.local.array``.
"""

import numba
import numpy as np
from numba import njit, prange

from . import bodies_algebra, bodies_directors, bodies_livens, bodies_rolling, bodies_ulvc
from . import cache  # noqa: F401  (the compiled laws are cached where kernels.cache says)

# Helpers and laws are plain njit functions (LLVM inlines the helpers into the law); the
# prange loop calls the law once per body and block. Inlining at Numba IR level
# (inline="always") ran about 15 % faster but took 5x longer to compile (~45 s per law),
# and the parallel pipeline's array analysis rejects the tuples of tuples the helpers
# return when the law itself is inlined into the loop. error_model="numpy": a division by
# zero gives inf/NaN (caught by the laws' finiteness checks) instead of a Python
# exception, and divisions need no branch. fastmath={"contract"} lets LLVM fuse a
# multiply and an add into one rounding (FMA), as the GPU does by default; nothing else of
# fast-math (NaN and infinity semantics stay IEEE). Without it the rounding of R·exp(θ)
# made det R drift about three times faster over 10^5 steps of the ULVC example.
_jit = njit(error_model="numpy", fastmath={"contract"})
H = bodies_algebra.build(_jit)
U = bodies_ulvc.build(_jit, H)
B = bodies_rolling.build(_jit, H)
D = bodies_directors.build(_jit, H)
# The Livens laws without contraction: with it, LLVM fused their multiply-adds differently
# in a process that compiled the kernel and in one that loaded it from Numba's cache (the
# results differed by 4e-13 after 20 steps), so a Dask worker disagreed with the process
# that started it. Without contraction every rounding is fixed by the source.
_jit_exact = njit(error_model="numpy")
L = bodies_livens.build(_jit_exact, bodies_algebra.build(_jit_exact))

name = "cpu"

#: below this many bodies a launch runs on one thread: waking the thread pool costs more
#: than the work (milliseconds on a busy machine) when a few bodies take one step
MIN_PARALLEL_BODIES = 64


class threads_for:
    """Context manager: one thread for a launch on fewer than
    :data:`MIN_PARALLEL_BODIES` bodies, Numba's thread count otherwise."""

    def __init__(self, n):
        self.n = n

    def __enter__(self):
        self.saved = numba.get_num_threads()
        if self.n < MIN_PARALLEL_BODIES:
            numba.set_num_threads(1)
        return self

    def __exit__(self, *exc):
        numba.set_num_threads(self.saved)
        return False


_ulvc_rk4_free_body = U.ulvc_rk4_free_body
_ulvc_rk4_body = U.ulvc_rk4_body
_newton_euler_rk4_free_body = U.newton_euler_rk4_free_body
_newton_euler_rk4_body = U.newton_euler_rk4_body
_rolling_ball_rk4_body = B.rolling_ball_rk4_body
_rolling_ball_dopri_body = B.rolling_ball_dopri_body
_rolling_disk_rk4_body = B.rolling_disk_rk4_body
_eml_body = L.eml_body
_reml_body = L.reml_body
_null_eml_body = L.null_eml_body
_hamiltonian_body = L.hamiltonian_body
_director_body = D.director_body

# One loop per law (not a factory of closures: Numba's disk cache keys functions by name
# and source line, so closures from one factory would overwrite each other's entries).


@njit(parallel=True, cache=True)
def _ulvc_rk4_free(steps, h, paper_stages, flags, scales, D, Dinv, mass, J, Jinv, points, fbody, fspat, tbody, tspat,
                   R, x, w, R1, x1, w1, status, value):  # fmt: skip
    for i in prange(w.shape[0]):
        _ulvc_rk4_free_body(i, steps, h, paper_stages, flags, scales, D, Dinv, mass, J, Jinv, points, fbody, fspat,
                            tbody, tspat, R, x, w, R1, x1, w1, status, value)  # fmt: skip


@njit(parallel=True, cache=True)
def _ulvc_rk4_loaded(steps, h, paper_stages, flags, scales, D, Dinv, mass, J, Jinv, points, fbody, fspat, tbody, tspat,
                     R, x, w, R1, x1, w1, status, value):  # fmt: skip
    for i in prange(w.shape[0]):
        _ulvc_rk4_body(i, steps, h, paper_stages, flags, scales, D, Dinv, mass, J, Jinv, points, fbody, fspat, tbody,
                       tspat, R, x, w, R1, x1, w1, status, value)  # fmt: skip


@njit(parallel=True, cache=True)
def _newton_euler_free(steps, h, flags, scales, mass, J, Jinv, points, fbody, fspat, tbody, tspat, R, x, v, Om, R1, x1,
                       v1, Om1, status, value):  # fmt: skip
    for i in prange(v.shape[0]):
        _newton_euler_rk4_free_body(i, steps, h, flags, scales, mass, J, Jinv, points, fbody, fspat, tbody, tspat, R, x,
                                    v, Om, R1, x1, v1, Om1, status, value)  # fmt: skip


@njit(parallel=True, cache=True)
def _newton_euler_loaded(steps, h, flags, scales, mass, J, Jinv, points, fbody, fspat, tbody, tspat, R, x, v, Om, R1,
                         x1, v1, Om1, status, value):  # fmt: skip
    for i in prange(v.shape[0]):
        _newton_euler_rk4_body(i, steps, h, flags, scales, mass, J, Jinv, points, fbody, fspat, tbody, tspat, R, x, v,
                               Om, R1, x1, v1, Om1, status, value)  # fmt: skip


@njit(parallel=True, cache=True)
def rolling_ball_rk4(steps, h, t0, first, y, y1, radius, inertia, shell_com, m_all, gravity, rail_info, rail_par, act_par,
                     force_mode, force_par, force_tab, status, value):  # fmt: skip
    """``steps`` RK4 steps of every rolling ball (:mod:`kernels.bodies_rolling`)."""
    for i in prange(y.shape[0]):
        S = np.empty((9, 15), y.dtype)
        C = np.empty((max(m_all.shape[1] - 1, 1), 10), y.dtype)
        _rolling_ball_rk4_body(i, steps, h, t0, first, y, y1, S, C, radius, inertia, shell_com, m_all, gravity, rail_info,
                               rail_par, act_par, force_mode, force_par, force_tab, status, value)  # fmt: skip


@njit(parallel=True, cache=True)
def rolling_ball_dopri(H, t0, y, y1, dt, dt1, acc, acc1, rej, rej1, jr, jr1, radius, inertia, shell_com, m_all, gravity,
                       rail_info, rail_par, act_par, force_mode, force_par, force_tab, rtol, atol, h0, h_max, max_steps,
                       safety, fac_min, fac_max, status, value):  # fmt: skip
    """Every rolling ball from ``t0`` to ``t0 + H``, adaptive Dormand-Prince per ball."""
    for i in prange(y.shape[0]):
        S = np.empty((9, 15), y.dtype)
        C = np.empty((max(m_all.shape[1] - 1, 1), 10), y.dtype)
        _rolling_ball_dopri_body(i, H, t0, y, y1, dt, dt1, acc, acc1, rej, rej1, jr, jr1, S, C, radius, inertia, shell_com, m_all,
                                 gravity, rail_info, rail_par, act_par, force_mode, force_par, force_tab, rtol, atol,
                                 h0, h_max, max_steps, safety, fac_min, fac_max, status, value)  # fmt: skip


@njit(parallel=True, cache=True)
def rolling_disk_rk4(steps, h, t0, first, y, y1, radius, inertia_y, shell_com, m_all, gravity, rail_info, rail_par, act_par,
                     force_mode, force_x, force_tab, status, value):  # fmt: skip
    """``steps`` RK4 steps of every rolling disk."""
    for i in prange(y.shape[0]):
        _rolling_disk_rk4_body(i, steps, h, t0, first, y, y1, radius, inertia_y, shell_com, m_all, gravity, rail_info,
                               rail_par, act_par, force_mode, force_x, force_tab, status, value)  # fmt: skip


# ------------------------------------------------------------------ Livens (002)
# One Newton scratch per body and launch: A (k, k + 1) holds [J | -r], X (k,) the unknowns.


@njit(parallel=True, cache=True)
def livens_eml(midpoint, steps, h, rtol, max_iter, J, HV, q, v, p, lam, v_half, it_total, q1, v1, p1, lam1, vh1,
               iters1, it_total1, status, value):  # fmt: skip
    """``steps`` steps of EML (``midpoint = 0``) or MPL (``1``) for every body."""
    for i in prange(q.shape[0]):
        A = np.empty((13, 14), q.dtype)
        X = np.empty(13, q.dtype)
        _eml_body(i, midpoint, steps, h, rtol, max_iter, J, HV, q, v, p, lam, v_half, it_total, q1, v1, p1, lam1, vh1,
                  iters1, it_total1, A, X, status, value)  # fmt: skip


@njit(parallel=True, cache=True)
def livens_reml(steps, h, rtol, max_iter, J, HV, q, v, p, lam, v_half, it_total, q1, v1, p1, lam1, vh1, iters1,
                it_total1, status, value):  # fmt: skip
    """``steps`` steps of REML for every body."""
    for i in prange(q.shape[0]):
        A = np.empty((5, 6), q.dtype)
        X = np.empty(5, q.dtype)
        _reml_body(i, steps, h, rtol, max_iter, J, HV, q, v, p, lam, v_half, it_total, q1, v1, p1, lam1, vh1, iters1,
                   it_total1, A, X, status, value)  # fmt: skip


@njit(parallel=True, cache=True)
def livens_null_eml(steps, h, rtol, max_iter, J, HV, q, v, p, lam, v_half, it_total, q1, v1, p1, lam1, vh1, iters1,
                    it_total1, status, value):  # fmt: skip
    """``steps`` steps of Null-EML for every body."""
    for i in prange(q.shape[0]):
        A = np.empty((3, 4), q.dtype)
        X = np.empty(3, q.dtype)
        _null_eml_body(i, steps, h, rtol, max_iter, J, HV, q, v, p, lam, v_half, it_total, q1, v1, p1, lam1, vh1,
                       iters1, it_total1, A, X, status, value)  # fmt: skip


@njit(parallel=True, cache=True)
def livens_hamiltonian(equivariant, steps, h, rtol, max_iter, HV, W, q, v, p, lam, v_half, it_total, q1, v1, p1, lam1,
                       vh1, iters1, it_total1, status, value):  # fmt: skip
    """``steps`` steps of EMH (``equivariant = 1``) or MPH (``0``) for every body."""
    for i in prange(q.shape[0]):
        A = np.empty((9, 10), q.dtype)
        X = np.empty(9, q.dtype)
        _hamiltonian_body(i, equivariant, steps, h, rtol, max_iter, HV, W, q, v, p, lam, v_half, it_total, q1, v1, p1,
                          lam1, vh1, iters1, it_total1, A, X, status, value)  # fmt: skip


# ---------------------------------------------------------------- directors (000)


@njit(parallel=True, cache=True)
def directors(dla, nonholonomic, steps, h, rtol, max_iter, a, E, Einv, flags, ms, mc, prof, d, v, lam, mu, v_half,
              lam_end, mu_end, it_total, d1, v1, lam1, mu1, vh1, lam_end1, mu_end1, iters1, it_total1, status,
              value):  # fmt: skip
    """``steps`` steps of a director scheme (EM or DLA, standard or non-twisting) for every body."""
    for i in prange(d.shape[0]):
        A = np.empty((16, 17), d.dtype)
        X = np.empty(16, d.dtype)
        Wk = np.empty((4, 9), d.dtype)
        _director_body(i, dla, nonholonomic, steps, h, rtol, max_iter, a, E, Einv, flags, ms, mc, prof, d, v, lam, mu,
                       v_half, lam_end, mu_end, it_total, d1, v1, lam1, mu1, vh1, lam_end1, mu_end1, iters1, it_total1,
                       A, X, Wk, status, value)  # fmt: skip



def ulvc_rk4(steps, h, paper_stages, flags, scales, D, Dinv, mass, J, Jinv, points, fbody, fspat, tbody, tspat, R, x,
             w, R1, x1, w1, status, value):  # fmt: skip
    """``steps`` steps of the ULVC RK4 law for every body (:mod:`kernels.bodies_ulvc`)."""
    (_ulvc_rk4_loaded if flags else _ulvc_rk4_free)(steps, h, paper_stages, flags, scales, D, Dinv, mass, J, Jinv,
                                                    points, fbody, fspat, tbody, tspat, R, x, w, R1, x1, w1, status,
                                                    value)  # fmt: skip


def newton_euler_rk4(steps, h, flags, scales, mass, J, Jinv, points, fbody, fspat, tbody, tspat, R, x, v, Om, R1, x1,
                     v1, Om1, status, value):  # fmt: skip
    """``steps`` steps of the Newton-Euler RK4 reference law for every body."""
    (_newton_euler_loaded if flags else _newton_euler_free)(steps, h, flags, scales, mass, J, Jinv, points, fbody,
                                                            fspat, tbody, tspat, R, x, v, Om, R1, x1, v1, Om1, status,
                                                            value)  # fmt: skip
