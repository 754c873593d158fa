"""GPU kernels of the body schemes: the per-body laws of ``kernels.bodies_*`` compiled by
``numba.cuda.jit(device=True, forceinline=True)``, one thread per body, each thread
advancing its body by a block of steps. Launched on CuPy arrays or, under Numba's CUDA
simulator (``NUMBA_ENABLE_CUDASIM=1``), on NumPy arrays.

Every launcher has the same signature as its twin in :mod:`kernels.bodies_cpu`. Launches
go to the default stream, like CuPy's own work. :data:`KERNELS` lists the ``cuda.jit``
kernels behind each launcher (the tests compile each one to PTX).
"""

import contextlib
import os

from numba import cuda

from . import bodies_algebra, bodies_directors, bodies_livens, bodies_rolling, bodies_ulvc
from .cache import cuda_kernel

SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")
# One body per thread; 128 threads per block leave registers for the larger laws. The
# simulator runs every thread as a Python thread and every device-function call of a thread
# takes a per-module lock: threads of one block then queue on that lock at the GIL's switch
# interval (seconds per step for a handful of balls), so one thread per block there (the
# body kernels share nothing within a block).
THREADS_PER_BLOCK = 1 if SIMULATED else 128
#: most internal masses per rolling ball (the per-thread kinematics array has a fixed size)
MAX_MASSES = 16

# Device functions are inlined by NVVM (LLVM ``alwaysinline``), not at Numba IR level:
# the same code, at a tenth of the compile time. The simulator takes no such option.
_jit = cuda.jit(device=True) if SIMULATED else cuda.jit(device=True, forceinline=True)
H = bodies_algebra.build(_jit, simulated=SIMULATED)
U = bodies_ulvc.build(_jit, H)
B = bodies_rolling.build(_jit, H)
L = bodies_livens.build(_jit, H)
D = bodies_directors.build(_jit, H)

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

name = "cuda"


def threads_for(n):
    """The CPU twin's thread choice; nothing to choose on the GPU."""
    return contextlib.nullcontext()


def _grid(n):
    return max(1, (n + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK), THREADS_PER_BLOCK


# ------------------------------------------------------------------------ ULVC (001)


@cuda_kernel()
def _ulvc_rk4_free_kernel(steps, h, paper_stages, flags, scales, D, Dinv, mass, J, Jinv, points, fbody, fspat, tbody,
                          tspat, R, x, w, R1, x1, w1, status, value):  # fmt: skip
    i = cuda.grid(1)
    if i < w.shape[0]:
        _ulvc_rk4_free_body(i, steps, h, paper_stages, flags, scales, D, Dinv, mass, J, Jinv, points, fbody, fspat,
                            tbody, tspat, R, x, w, R1, x1, w1, status, value)  # fmt: skip


@cuda_kernel()
def _ulvc_rk4_kernel(steps, h, paper_stages, flags, scales, D, Dinv, mass, J, Jinv, points, fbody, fspat, tbody, tspat,
                     R, x, w, R1, x1, w1, status, value):  # fmt: skip
    i = cuda.grid(1)
    if i < w.shape[0]:
        _ulvc_rk4_body(i, steps, h, paper_stages, flags, scales, D, Dinv, mass, J, Jinv, points, fbody, fspat, tbody,
                       tspat, R, x, w, R1, x1, w1, status, value)  # fmt: skip


def ulvc_rk4(steps, h, paper_stages, flags, scales, D, Dinv, mass, J, Jinv, points, fbody, fspat, tbody, tspat, R, x,
             w, R1, x1, w1, status, value):  # fmt: skip
    kernel = _ulvc_rk4_kernel if flags else _ulvc_rk4_free_kernel
    kernel[_grid(w.shape[0])](steps, h, paper_stages, flags, scales, D, Dinv, mass, J, Jinv, points, fbody, fspat,
                              tbody, tspat, R, x, w, R1, x1, w1, status, value)  # fmt: skip


@cuda_kernel()
def _newton_euler_free_kernel(steps, h, flags, scales, mass, J, Jinv, points, fbody, fspat, tbody, tspat, R, x, v, Om,
                              R1, x1, v1, Om1, status, value):  # fmt: skip
    i = cuda.grid(1)
    if i < v.shape[0]:
        _newton_euler_rk4_free_body(i, steps, h, flags, scales, mass, J, Jinv, points, fbody, fspat, tbody, tspat, R, x,
                                    v, Om, R1, x1, v1, Om1, status, value)  # fmt: skip


@cuda_kernel()
def _newton_euler_kernel(steps, h, flags, scales, mass, J, Jinv, points, fbody, fspat, tbody, tspat, R, x, v, Om, R1,
                         x1, v1, Om1, status, value):  # fmt: skip
    i = cuda.grid(1)
    if i < v.shape[0]:
        _newton_euler_rk4_body(i, steps, h, flags, scales, mass, J, Jinv, points, fbody, fspat, tbody, tspat, R, x, v,
                               Om, R1, x1, v1, Om1, status, value)  # fmt: skip


def newton_euler_rk4(steps, h, flags, scales, mass, J, Jinv, points, fbody, fspat, tbody, tspat, R, x, v, Om, R1, x1,
                     v1, Om1, status, value):  # fmt: skip
    kernel = _newton_euler_kernel if flags else _newton_euler_free_kernel
    kernel[_grid(v.shape[0])](steps, h, flags, scales, mass, J, Jinv, points, fbody, fspat, tbody, tspat, R, x, v, Om,
                              R1, x1, v1, Om1, status, value)  # fmt: skip


# ------------------------------------------------------------------ rolling ball (004)


@cuda_kernel()
def _rolling_ball_rk4_kernel(steps, h, t0, first, y, y1, radius, inertia, shell_com, m_all, gravity, rail_info, rail_par,
                             act_par, force_mode, force_par, force_tab, status, value):  # fmt: skip
    i = cuda.grid(1)
    if i < y.shape[0]:
        S = cuda.local.array((9, 15), y.dtype)
        C = cuda.local.array((MAX_MASSES, 10), y.dtype)
        _rolling_ball_rk4_body(i, steps, h, t0, first, y, y1, S, C, radius, inertia, shell_com, m_all, gravity, rail_info,
                               rail_par, act_par, force_mode, force_par, force_tab, status, value)  # fmt: skip


def rolling_ball_rk4(steps, h, t0, first, y, y1, radius, inertia, shell_com, m_all, gravity, rail_info, rail_par, act_par,
                     force_mode, force_par, force_tab, status, value):  # fmt: skip
    _rolling_ball_rk4_kernel[_grid(y.shape[0])](steps, h, t0, first, y, y1, radius, inertia, shell_com, m_all, gravity,
                                                rail_info, rail_par, act_par, force_mode, force_par, force_tab, status,
                                                value)  # fmt: skip


@cuda_kernel()
def _rolling_ball_dopri_kernel(H, t0, y, y1, dt, dt1, acc, acc1, rej, rej1, jr, jr1, radius, inertia, shell_com, m_all, gravity,
                               rail_info, rail_par, act_par, force_mode, force_par, force_tab, rtol, atol, h0, h_max,
                               max_steps, safety, fac_min, fac_max, status, value):  # fmt: skip
    i = cuda.grid(1)
    if i < y.shape[0]:
        S = cuda.local.array((9, 15), y.dtype)
        C = cuda.local.array((MAX_MASSES, 10), y.dtype)
        _rolling_ball_dopri_body(i, H, t0, y, y1, dt, dt1, acc, acc1, rej, rej1, jr, jr1, S, C, radius, inertia, shell_com, m_all,
                                 gravity, rail_info, rail_par, act_par, force_mode, force_par, force_tab, rtol, atol,
                                 h0, h_max, max_steps, safety, fac_min, fac_max, status, value)  # fmt: skip


def rolling_ball_dopri(H, t0, y, y1, dt, dt1, acc, acc1, rej, rej1, jr, jr1, radius, inertia, shell_com, m_all, gravity,
                       rail_info, rail_par, act_par, force_mode, force_par, force_tab, rtol, atol, h0, h_max, max_steps,
                       safety, fac_min, fac_max, status, value):  # fmt: skip
    _rolling_ball_dopri_kernel[_grid(y.shape[0])](H, t0, y, y1, dt, dt1, acc, acc1, rej, rej1, jr, jr1, radius, inertia,
                                                  shell_com, m_all, gravity, rail_info, rail_par, act_par, force_mode,
                                                  force_par, force_tab, rtol, atol, h0, h_max, max_steps, safety,
                                                  fac_min, fac_max, status, value)  # fmt: skip


@cuda_kernel()
def _rolling_disk_rk4_kernel(steps, h, t0, first, y, y1, radius, inertia_y, shell_com, m_all, gravity, rail_info, rail_par,
                             act_par, force_mode, force_x, force_tab, status, value):  # fmt: skip
    i = cuda.grid(1)
    if i < y.shape[0]:
        _rolling_disk_rk4_body(i, steps, h, t0, first, y, y1, radius, inertia_y, shell_com, m_all, gravity, rail_info,
                               rail_par, act_par, force_mode, force_x, force_tab, status, value)  # fmt: skip


def rolling_disk_rk4(steps, h, t0, first, y, y1, radius, inertia_y, shell_com, m_all, gravity, rail_info, rail_par, act_par,
                     force_mode, force_x, force_tab, status, value):  # fmt: skip
    _rolling_disk_rk4_kernel[_grid(y.shape[0])](steps, h, t0, first, y, y1, radius, inertia_y, shell_com, m_all, gravity,
                                                rail_info, rail_par, act_par, force_mode, force_x, force_tab, status,
                                                value)  # fmt: skip


# ------------------------------------------------------------------ Livens (002)


@cuda_kernel()
def _livens_eml_kernel(midpoint, steps, h, rtol, max_iter, J, HV, q, v, p, lam, v_half, it_total, q1, v1, p1, lam1, vh1,
                       iters1, it_total1, status, value):  # fmt: skip
    i = cuda.grid(1)
    if i < q.shape[0]:
        A = cuda.local.array((13, 14), q.dtype)
        X = cuda.local.array(13, q.dtype)
        _eml_body(i, midpoint, steps, h, rtol, max_iter, J, HV, q, v, p, lam, v_half, it_total, q1, v1, p1, lam1, vh1,
                  iters1, it_total1, A, X, status, value)  # fmt: skip


def livens_eml(midpoint, steps, h, rtol, max_iter, J, HV, q, v, p, lam, v_half, it_total, q1, v1, p1, lam1, vh1,
               iters1, it_total1, status, value):  # fmt: skip
    _livens_eml_kernel[_grid(q.shape[0])](midpoint, steps, h, rtol, max_iter, J, HV, q, v, p, lam, v_half, it_total,
                                          q1, v1, p1, lam1, vh1, iters1, it_total1, status, value)  # fmt: skip


@cuda_kernel()
def _livens_reml_kernel(steps, h, rtol, max_iter, J, HV, q, v, p, lam, v_half, it_total, q1, v1, p1, lam1, vh1, iters1,
                        it_total1, status, value):  # fmt: skip
    i = cuda.grid(1)
    if i < q.shape[0]:
        A = cuda.local.array((5, 6), q.dtype)
        X = cuda.local.array(5, q.dtype)
        _reml_body(i, steps, h, rtol, max_iter, J, HV, q, v, p, lam, v_half, it_total, q1, v1, p1, lam1, vh1, iters1,
                   it_total1, A, X, status, value)  # fmt: skip


def livens_reml(steps, h, rtol, max_iter, J, HV, q, v, p, lam, v_half, it_total, q1, v1, p1, lam1, vh1, iters1,
                it_total1, status, value):  # fmt: skip
    _livens_reml_kernel[_grid(q.shape[0])](steps, h, rtol, max_iter, J, HV, q, v, p, lam, v_half, it_total, q1, v1, p1,
                                           lam1, vh1, iters1, it_total1, status, value)  # fmt: skip


@cuda_kernel()
def _livens_null_eml_kernel(steps, h, rtol, max_iter, J, HV, q, v, p, lam, v_half, it_total, q1, v1, p1, lam1, vh1,
                            iters1, it_total1, status, value):  # fmt: skip
    i = cuda.grid(1)
    if i < q.shape[0]:
        A = cuda.local.array((3, 4), q.dtype)
        X = cuda.local.array(3, q.dtype)
        _null_eml_body(i, steps, h, rtol, max_iter, J, HV, q, v, p, lam, v_half, it_total, q1, v1, p1, lam1, vh1,
                       iters1, it_total1, A, X, status, value)  # fmt: skip


def livens_null_eml(steps, h, rtol, max_iter, J, HV, q, v, p, lam, v_half, it_total, q1, v1, p1, lam1, vh1, iters1,
                    it_total1, status, value):  # fmt: skip
    _livens_null_eml_kernel[_grid(q.shape[0])](steps, h, rtol, max_iter, J, HV, q, v, p, lam, v_half, it_total, q1, v1,
                                               p1, lam1, vh1, iters1, it_total1, status, value)  # fmt: skip


@cuda_kernel()
def _livens_hamiltonian_kernel(equivariant, steps, h, rtol, max_iter, HV, W, q, v, p, lam, v_half, it_total, q1, v1,
                               p1, lam1, vh1, iters1, it_total1, status, value):  # fmt: skip
    i = cuda.grid(1)
    if i < q.shape[0]:
        A = cuda.local.array((9, 10), q.dtype)
        X = cuda.local.array(9, q.dtype)
        _hamiltonian_body(i, equivariant, steps, h, rtol, max_iter, HV, W, q, v, p, lam, v_half, it_total, q1, v1, p1,
                          lam1, vh1, iters1, it_total1, A, X, status, value)  # fmt: skip


def livens_hamiltonian(equivariant, steps, h, rtol, max_iter, HV, W, q, v, p, lam, v_half, it_total, q1, v1, p1, lam1,
                       vh1, iters1, it_total1, status, value):  # fmt: skip
    _livens_hamiltonian_kernel[_grid(q.shape[0])](equivariant, steps, h, rtol, max_iter, HV, W, q, v, p, lam, v_half,
                                                  it_total, q1, v1, p1, lam1, vh1, iters1, it_total1, status,
                                                  value)  # fmt: skip


# ---------------------------------------------------------------- directors (000)


@cuda_kernel()
def _directors_kernel(dla, nonholonomic, steps, h, rtol, max_iter, a, E, Einv, flags, ms, mc, prof, d, v, lam, mu,
                      v_half, lam_end, mu_end, it_total, d1, v1, lam1, mu1, vh1, lam_end1, mu_end1, iters1, it_total1,
                      status, value):  # fmt: skip
    i = cuda.grid(1)
    if i < d.shape[0]:
        A = cuda.local.array((16, 17), d.dtype)
        X = cuda.local.array(16, d.dtype)
        Wk = cuda.local.array((4, 9), d.dtype)
        _director_body(i, dla, nonholonomic, steps, h, rtol, max_iter, a, E, Einv, flags, ms, mc, prof, d, v, lam, mu,
                       v_half, lam_end, mu_end, it_total, d1, v1, lam1, mu1, vh1, lam_end1, mu_end1, iters1, it_total1,
                       A, X, Wk, status, value)  # fmt: skip


def directors(dla, nonholonomic, steps, h, rtol, max_iter, a, E, Einv, flags, ms, mc, prof, d, v, lam, mu, v_half,
              lam_end, mu_end, it_total, d1, v1, lam1, mu1, vh1, lam_end1, mu_end1, iters1, it_total1, status,
              value):  # fmt: skip
    _directors_kernel[_grid(d.shape[0])](dla, nonholonomic, steps, h, rtol, max_iter, a, E, Einv, flags, ms, mc, prof, d,
                                         v, lam, mu, v_half, lam_end, mu_end, it_total, d1, v1, lam1, mu1, vh1,
                                         lam_end1, mu_end1, iters1, it_total1, status, value)  # fmt: skip


KERNELS = {
    "ulvc_rk4": (_ulvc_rk4_free_kernel, _ulvc_rk4_kernel),
    "newton_euler_rk4": (_newton_euler_free_kernel, _newton_euler_kernel),
    "rolling_ball_rk4": (_rolling_ball_rk4_kernel,),
    "rolling_ball_dopri": (_rolling_ball_dopri_kernel,),
    "rolling_disk_rk4": (_rolling_disk_rk4_kernel,),
    "livens_eml": (_livens_eml_kernel,),
    "livens_reml": (_livens_reml_kernel,),
    "livens_null_eml": (_livens_null_eml_kernel,),
    "livens_hamiltonian": (_livens_hamiltonian_kernel,),
    "directors": (_directors_kernel,),
}
