"""Op specs: ``functrax.scipy.linalg`` and the ``functrax.lax.linalg`` primitives it adds
(hessenberg, tridiagonal, householder_product, schur, eig, tridiagonal_solve, geqp3), against
``scipy.linalg`` (test-only) or properties where a decomposition is not unique.

Every name starts with ``scipy_linalg_`` (select them with ``-k scipy_linalg_``). Inputs are
well conditioned (``tests.opspec.linalg``'s domains); references loop over batch dimensions.
"""
import numpy as np
import scipy.linalg as sl

import functrax.numpy as fnp
from functrax.lax import linalg as lax_linalg
from functrax.scipy import linalg as L
from tests.opspec.linalg import spd, spread, symmetric, triangular
from tests.opspec.spec import F32, OpSpec, uniform

LA = dict(atol=1e-4, rtol=1e-4)
NOARGS = ((),)
SQUARE = (((3, 3),), ((2, 3, 3),))


def batched(ref, core_ndims):
    """``ref`` applied per batch element: ``core_ndims[i]`` trailing axes of argument ``i``
    are its core; the leading axes (equal across arguments) batch. Tuple outputs stack."""
    def fn(*args, **kw):
        batch = np.shape(args[0])[:np.ndim(args[0]) - core_ndims[0]]
        if not batch:
            return ref(*args, **kw)
        outs = [ref(*[a[idx] for a in args], **kw) for idx in np.ndindex(*batch)]
        if isinstance(outs[0], tuple):
            return tuple(np.stack([o[i] for o in outs]).reshape(batch + np.shape(outs[0][i]))
                         for i in range(len(outs[0])))
        return np.stack(outs).reshape(batch + np.shape(outs[0]))
    return fn


def _eye_like(a):
    return np.broadcast_to(np.eye(a.shape[-1]), a.shape)


def _schur_props(t, z, real_form):
    """Gauge-free facts of a Schur decomposition: ``z t z^H``, ``z^H z`` and the part of
    ``t`` below its (quasi-)triangle."""
    zh = fnp.conj(fnp.swapaxes(z, -1, -2))
    below = fnp.tril(t, -2 if real_form else -1)
    return fnp.matmul(fnp.matmul(z, t), zh), fnp.matmul(zh, z), below


def _schur_ref(a):
    return a, _eye_like(a), np.zeros_like(a)


def _sym_pos_solve(a, b, lower=False):
    sym = (a + fnp.swapaxes(a, -1, -2)) / 2
    return L.solve(sym, b, assume_a="pos", lower=lower)


def _sym_pos_solve_ref(a, b, lower=False):
    return sl.solve((a + a.T) / 2, b, assume_a="pos", lower=lower)


def _gauge_eigh(w, v):
    return w, v * v[..., :1, :]


def _gauge_svd(u, s, vh):
    return s, u * u[..., :1, :], vh * vh[..., :, :1]


def _eig_props(a):
    """Eigenvalues sorted by real part (distinct here) and the residuals of the eigenvector
    equations: gauge-free."""
    w, vl, vr = lax_linalg.eig(a)
    ac = a.astype(w.dtype)
    right = fnp.matmul(ac, vr) - vr * w[..., None, :]
    left = fnp.matmul(fnp.conj(fnp.swapaxes(vl, -1, -2)), ac) - \
        w[..., :, None] * fnp.conj(fnp.swapaxes(vl, -1, -2))
    order = fnp.argsort(fnp.real(w), axis=-1)
    return fnp.take_along_axis(w, order, axis=-1), fnp.abs(right), fnp.abs(left)


def _eig_props_ref(a):
    w = np.linalg.eigvals(a)
    w = np.take_along_axis(w, np.argsort(w.real, axis=-1), axis=-1)
    return w, np.zeros(a.shape), np.zeros(a.shape)


def _eigvals_real(a):
    w = lax_linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]
    return fnp.sort(fnp.real(w), axis=-1)


def _householder_q(a):
    """The Q factor from ``geqrf``'s packed form, rebuilt by ``householder_product``."""
    packed, _, taus = lax_linalg.geqp3(a)  # a QR in packed form (pivoted)
    return lax_linalg.householder_product(packed, taus)


def _householder_q_ref(a):
    qr, _, tau, _, _ = sl.lapack.dgeqp3(a.astype(np.float64))
    q, _, _ = sl.lapack.dorgqr(qr, tau)
    return q.astype(a.dtype)


def _tridiagonal_ref(a, lower=True):
    c, d, e, tau, _ = sl.lapack.dsytrd(a.astype(np.float64), lower=int(lower))
    dt = a.dtype
    return c.astype(dt), d.astype(dt), e.astype(dt), tau.astype(dt)


def _hessenberg_lax_ref(a):
    h, tau, _ = sl.lapack.dgehrd(a.astype(np.float64))
    return h.astype(a.dtype), tau.astype(a.dtype)


def _tridiag_solve(dl, d, du, b):
    return lax_linalg.tridiagonal_solve(dl, d, du, b)


def _tridiag_solve_ref(dl, d, du, b):
    t = np.diag(d) + np.diag(dl[1:], -1) + np.diag(du[:-1], 1)
    return np.linalg.solve(t, b)


def dominant(rng, shape, dtype):
    """Diagonals of a diagonally dominant tridiagonal matrix (values in 3..4)."""
    return rng.uniform(3.0, 4.0, size=shape).astype(dtype)


def _polar_ref(a, side="right", method=None):
    return sl.polar(a, side=side)


def _qdwh_ref(a):
    u, p = sl.polar(a)
    return u, p


def _lax_qdwh(a):
    u, h, _, _ = lax_linalg.qdwh(a)
    return u, h


def _cholesky_update(r, w):
    return lax_linalg.cholesky_update(r, w)


def _cholesky_update_ref(r, w):
    return np.linalg.cholesky(r.T @ r + np.outer(w, w)).T


def upper_chol(rng, shape, dtype):
    return np.linalg.cholesky(spd(rng, shape, np.float64)).swapaxes(-1, -2).astype(dtype)


def _ormqr(a, c, left=True, transpose=False):
    packed, _, taus = lax_linalg.geqp3(a)
    return lax_linalg.ormqr(packed, taus, c, left=left, transpose=transpose)


def _ormqr_ref(a, c, left=True, transpose=False):
    qr, _, tau, _, _ = sl.lapack.dgeqp3(a.astype(np.float64))
    m, k = a.shape[0], len(tau)
    full = np.zeros((m, m))
    full[:, :qr.shape[1]] = qr
    q, _, _ = sl.lapack.dorgqr(full, np.concatenate([tau, np.zeros(m - k)]))
    op = q.T if transpose else q
    return (op @ c if left else c @ op).astype(a.dtype)


SPECS = [
    # --- decompositions and solves ---
    OpSpec("scipy_linalg_cholesky", L.cholesky, batched(sl.cholesky, (2,)), shapes=SQUARE,
           domain=spd, kwargs=({}, {"lower": True}), primitives=("cholesky",), **LA),
    OpSpec("scipy_linalg_cho_solve",
           lambda a, b, lower=False: L.cho_solve(L.cho_factor(a, lower=lower), b),
           lambda a, b, lower=False: sl.cho_solve(sl.cho_factor(a, lower=lower), b),
           shapes=(((3, 3), (3, 2)), ((3, 3), (3,))), domain=(spd, uniform()),
           kwargs=({}, {"lower": True}), **LA),
    OpSpec("scipy_linalg_solve", L.solve, sl.solve,
           shapes=(((3, 3), (3, 2)), ((3, 3), (3,))), domain=(spread, uniform()), **LA),
    # JAX solves 'sym'/'her' as general systems: the same as scipy for symmetric matrices
    OpSpec("scipy_linalg_solve_sym", lambda a, b, **kw: L.solve(a, b, **kw),
           lambda a, b, **kw: sl.solve(a, b, **kw), shapes=(((3, 3), (3, 2)),),
           domain=(symmetric, uniform()), kwargs=({"assume_a": "sym"}, {"assume_a": "her"}),
           **LA),
    OpSpec("scipy_linalg_solve_pos", _sym_pos_solve, _sym_pos_solve_ref,
           shapes=(((3, 3), (3, 2)), ((3, 3), (3,))), domain=(spd, uniform()),
           kwargs=({}, {"lower": True}), **LA),
    OpSpec("scipy_linalg_solve_triangular", L.solve_triangular, sl.solve_triangular,
           shapes=(((3, 3), (3, 2)), ((3, 3), (3,))), domain=(triangular, uniform()),
           kwargs=({}, {"lower": True}, {"trans": 1}, {"trans": "C", "lower": True},
                   {"unit_diagonal": True}), primitives=("triangular_solve",), **LA),
    OpSpec("scipy_linalg_lu", L.lu, sl.lu, shapes=(((3, 3),), ((4, 3),), ((3, 4),)),
           domain=spread, kwargs=({}, {"permute_l": True}), primitives=("lu",), **LA),
    OpSpec("scipy_linalg_lu_factor", L.lu_factor, sl.lu_factor, shapes=(((3, 3),),),
           domain=spread, **LA),
    OpSpec("scipy_linalg_lu_solve",
           lambda a, b, trans=0: L.lu_solve(L.lu_factor(a), b, trans=trans),
           lambda a, b, trans=0: sl.lu_solve(sl.lu_factor(a), b, trans=trans),
           shapes=(((3, 3), (3, 2)), ((3, 3), (3,))), domain=(spread, uniform()),
           kwargs=({}, {"trans": 1}, {"trans": 2}), **LA),
    OpSpec("scipy_linalg_qr", L.qr, sl.qr, shapes=(((3, 3),), ((4, 3),)), domain=spread,
           kwargs=({}, {"mode": "economic"}, {"mode": "r"}), primitives=("qr",), **LA),
    OpSpec("scipy_linalg_qr_pivoting", lambda a, **kw: L.qr(a, pivoting=True, **kw)[:2],
           lambda a, **kw: sl.qr(a, pivoting=True, **kw)[:2], shapes=(((3, 3),), ((4, 3),)),
           domain=spread, kwargs=({}, {"mode": "economic"}), primitives=("geqp3",), **LA),
    OpSpec("scipy_linalg_qr_multiply", L.qr_multiply, sl.qr_multiply,
           shapes=(((4, 3), (2, 4)),), domain=spread, **LA),
    OpSpec("scipy_linalg_qr_multiply_left", lambda a, c: L.qr_multiply(a, c, mode="left"),
           lambda a, c: sl.qr_multiply(a, c, mode="left"), shapes=(((4, 3), (3, 2)),),
           domain=spread, **LA),
    OpSpec("scipy_linalg_det", L.det, batched(sl.det, (2,)), shapes=SQUARE, domain=spread,
           **LA),
    OpSpec("scipy_linalg_inv", L.inv, batched(sl.inv, (2,)), shapes=SQUARE, domain=spread,
           **LA),
    OpSpec("scipy_linalg_svd", lambda a: _gauge_svd(*L.svd(a, full_matrices=False)),
           lambda a: _gauge_svd(*sl.svd(a, full_matrices=False)),
           shapes=(((3, 3),), ((4, 3),)), domain=spread, **LA),
    OpSpec("scipy_linalg_svdvals", lambda a: L.svd(a, compute_uv=False),
           lambda a: sl.svd(a, compute_uv=False), shapes=(((3, 4),),), domain=spread, **LA),
    OpSpec("scipy_linalg_eigh", lambda a, **kw: _gauge_eigh(*L.eigh(a, **kw)),
           lambda a, **kw: _gauge_eigh(*sl.eigh(a, **kw)), shapes=(((3, 3),),),
           domain=symmetric, kwargs=({}, {"lower": False}), **LA),
    OpSpec("scipy_linalg_eigvalsh", lambda a: L.eigh(a, eigvals_only=True),
           batched(lambda a: sl.eigh(a, eigvals_only=True), (2,)), shapes=SQUARE,
           domain=symmetric, **LA),
    OpSpec("scipy_linalg_eigh_tridiagonal",
           lambda d, e, **kw: L.eigh_tridiagonal(d, e, eigvals_only=True, **kw),
           lambda d, e, **kw: sl.eigh_tridiagonal(d, e, eigvals_only=True, **kw),
           shapes=(((4,), (3,)),), domain=uniform(-2.0, 2.0),
           kwargs=({}, {"select": "i", "select_range": (1, 2)}), **LA),
    OpSpec("scipy_linalg_eigh_tridiagonal_1x1",
           lambda d, e: L.eigh_tridiagonal(d, e, eigvals_only=True),
           lambda d, e: sl.eigh_tridiagonal(d, e, eigvals_only=True), shapes=(((1,), (0,)),)),
    OpSpec("scipy_linalg_hessenberg", lambda a: L.hessenberg(a, calc_q=True),
           lambda a: sl.hessenberg(a, calc_q=True), shapes=(((4, 4),), ((1, 1),)),
           domain=spread, primitives=("hessenberg", "householder_product"), **LA),
    OpSpec("scipy_linalg_schur", lambda a: _schur_props(*L.schur(a), True),
           batched(_schur_ref, (2,)), shapes=(((4, 4),), ((2, 3, 3),)), domain=uniform(),
           primitives=("schur",), **LA),
    OpSpec("scipy_linalg_schur_complex",
           lambda a: _schur_props(*L.schur(a, output="complex"), False),
           batched(_schur_ref, (2,)), shapes=(((4, 4),),), domain=uniform(),
           check_dtype=False, **LA),
    OpSpec("scipy_linalg_rsf2csf", lambda a: _schur_props(*L.rsf2csf(*L.schur(a)), False),
           batched(_schur_ref, (2,)), shapes=(((4, 4),), ((2, 3, 3),)), domain=uniform(),
           check_dtype=False, **LA),
    OpSpec("scipy_linalg_polar_svd", lambda a, **kw: L.polar(a, method="svd", **kw),
           _polar_ref, shapes=(((4, 3),), ((3, 3),)), domain=spread,
           kwargs=({}, {"side": "left"}), **LA),
    OpSpec("scipy_linalg_polar_qdwh", L.polar, _polar_ref, shapes=(((4, 3),), ((3, 3),)),
           domain=spread, **LA),
    # --- matrix functions ---
    OpSpec("scipy_linalg_expm", L.expm, batched(sl.expm, (2,)),
           shapes=(((3, 3),), ((2, 3, 3),)), domain=uniform(-1.0, 1.0),
           atol=1e-4, rtol=1e-4),
    OpSpec("scipy_linalg_expm_large_norm", L.expm, sl.expm, shapes=(((3, 3),),),
           domain=uniform(-3.0, 3.0), atol=1e-2, rtol=2e-4),
    OpSpec("scipy_linalg_expm_upper_triangular",
           lambda a: L.expm(fnp.triu(a), upper_triangular=True),
           lambda a: sl.expm(np.triu(a)), shapes=(((3, 3),),), domain=uniform(-1.0, 1.0),
           **LA),
    OpSpec("scipy_linalg_expm_frechet", L.expm_frechet, sl.expm_frechet,
           shapes=(((3, 3), (3, 3)),), domain=uniform(-1.0, 1.0), **LA),
    OpSpec("scipy_linalg_sqrtm", L.sqrtm, batched(lambda a: sl.sqrtm(a.astype(
        np.result_type(a, np.complex64))), (2,)), shapes=(((3, 3),), ((2, 3, 3),)),
        domain=spd, **LA),
    OpSpec("scipy_linalg_funm", lambda a: L.funm(a, fnp.exp),
           lambda a: sl.expm(a).astype(np.result_type(a, np.complex64)),
           shapes=(((3, 3),),), domain=uniform(-1.0, 1.0), **LA),
    OpSpec("scipy_linalg_solve_sylvester", L.solve_sylvester, sl.solve_sylvester,
           shapes=(((3, 3), (2, 2), (3, 2)),), domain=(spd, spd, uniform()), **LA),
    OpSpec("scipy_linalg_solve_sylvester_eigen",
           lambda a, b, c: L.solve_sylvester(a, b, c, method="eigen"), sl.solve_sylvester,
           shapes=(((3, 3), (2, 2), (3, 2)),), domain=(spd, spd, uniform()), **LA),
    # --- special matrices ---
    OpSpec("scipy_linalg_toeplitz", L.toeplitz, sl.toeplitz, shapes=(((3,), (4,)), ((3,),)),
           dtypes=(F32,)),
    OpSpec("scipy_linalg_toeplitz_batched", L.toeplitz,
           batched(sl.toeplitz, (1, 1)), shapes=(((2, 3), (2, 4)),)),
    OpSpec("scipy_linalg_hankel", L.hankel, sl.hankel, shapes=(((3,), (4,)), ((3,),))),
    OpSpec("scipy_linalg_circulant", L.circulant, batched(sl.circulant, (1,)),
           shapes=(((4,),), ((2, 3),))),
    OpSpec("scipy_linalg_companion", L.companion, batched(sl.companion, (1,)),
           shapes=(((4,),), ((2, 3),)), domain=uniform(1.0, 3.0)),
    OpSpec("scipy_linalg_fiedler", L.fiedler, sl.fiedler, shapes=(((4,),),)),
    OpSpec("scipy_linalg_fiedler_companion", L.fiedler_companion, sl.fiedler_companion,
           shapes=(((6,),), ((2,),)), domain=uniform(1.0, 3.0)),
    OpSpec("scipy_linalg_leslie", L.leslie, sl.leslie, shapes=(((4,), (3,)),)),
    OpSpec("scipy_linalg_convolution_matrix", lambda a, **kw: L.convolution_matrix(a, **kw),
           lambda a, **kw: sl.convolution_matrix(a, **kw), shapes=(((3,),),),
           kwargs=({"n": 4}, {"n": 2, "mode": "same"}, {"n": 5, "mode": "valid"})),
    OpSpec("scipy_linalg_block_diag", L.block_diag, sl.block_diag,
           shapes=(((2, 2), (3,), ()), ((1, 3), (2, 1)))),
    OpSpec("scipy_linalg_hilbert", lambda: L.hilbert(4), lambda: sl.hilbert(4), shapes=NOARGS),
    OpSpec("scipy_linalg_invhilbert", lambda: L.invhilbert(4), lambda: sl.invhilbert(4),
           shapes=NOARGS, rtol=1e-6),
    OpSpec("scipy_linalg_pascal", lambda **kw: L.pascal(5, **kw),
           lambda **kw: sl.pascal(5, exact=False, **kw), shapes=NOARGS,
           kwargs=({}, {"kind": "lower"}, {"kind": "upper"})),
    OpSpec("scipy_linalg_invpascal", lambda **kw: L.invpascal(5, **kw),
           lambda **kw: sl.invpascal(5, exact=False, **kw), shapes=NOARGS,
           kwargs=({}, {"kind": "lower"}, {"kind": "upper"})),
    OpSpec("scipy_linalg_hadamard", lambda: L.hadamard(8), lambda: sl.hadamard(8),
           shapes=NOARGS),
    OpSpec("scipy_linalg_helmert", lambda **kw: L.helmert(5, **kw),
           lambda **kw: sl.helmert(5, **kw), shapes=NOARGS, kwargs=({}, {"full": True})),
    OpSpec("scipy_linalg_dft", lambda **kw: L.dft(5, **kw), lambda **kw: sl.dft(5, **kw),
           shapes=NOARGS, kwargs=({}, {"scale": "n"}, {"scale": "sqrtn"})),
    # --- jax.lax.linalg primitives and compositions ---
    OpSpec("scipy_linalg_lax_hessenberg", lax_linalg.hessenberg, batched(
        _hessenberg_lax_ref, (2,)), shapes=(((4, 4),), ((2, 3, 3),)), domain=spread, **LA),
    OpSpec("scipy_linalg_lax_tridiagonal", lax_linalg.tridiagonal,
           batched(_tridiagonal_ref, (2,)), shapes=(((4, 4),), ((2, 3, 3),)),
           domain=symmetric, kwargs=({}, {"lower": False}), primitives=("tridiagonal",),
           **LA),
    OpSpec("scipy_linalg_lax_householder_product", _householder_q, _householder_q_ref,
           shapes=(((4, 3),), ((3, 3),)), domain=spread, **LA),
    OpSpec("scipy_linalg_lax_eig", _eig_props, batched(_eig_props_ref, (2,)),
           shapes=(((3, 3),), ((2, 3, 3),)), domain=spread, check_dtype=False,
           primitives=("eig",), **LA),
    OpSpec("scipy_linalg_lax_eigvals", _eigvals_real,
           batched(lambda a: np.sort(np.linalg.eigvals(a).real), (2,)), shapes=SQUARE,
           domain=symmetric, **LA),
    OpSpec("scipy_linalg_lax_tridiagonal_solve", _tridiag_solve, _tridiag_solve_ref,
           shapes=(((4,), (4,), (4,), (4, 2)),), domain=(uniform(), dominant, uniform(),
                                                        uniform()),
           primitives=("tridiagonal_solve",), **LA),
    OpSpec("scipy_linalg_lax_qdwh", _lax_qdwh, _qdwh_ref, shapes=(((4, 3),),), domain=spread,
           **LA),
    OpSpec("scipy_linalg_lax_cholesky_update", _cholesky_update, _cholesky_update_ref,
           shapes=(((3, 3), (3,)),), domain=(upper_chol, uniform(-1.0, 1.0)), **LA),
    OpSpec("scipy_linalg_lax_symmetric_product",
           lambda a, c: lax_linalg.symmetric_product(a, c, alpha=2.0, beta=0.5),
           lambda a, c: 2.0 * a @ a.T + 0.5 * c, shapes=(((3, 2), (3, 3)),)),
    OpSpec("scipy_linalg_lax_ormqr", _ormqr, _ormqr_ref, shapes=(((4, 3), (4, 2)),),
           domain=spread, kwargs=({}, {"transpose": True}), **LA),
    OpSpec("scipy_linalg_lax_eigh_subset",
           lambda a: lax_linalg.eigh(a, subset_by_index=(1, 3))[1],
           lambda a: np.linalg.eigvalsh(a)[1:3], shapes=(((4, 4),),), domain=symmetric, **LA),
    OpSpec("scipy_linalg_lax_svd_subset",
           lambda a: lax_linalg.svd(a, full_matrices=False, compute_uv=False,
                                    subset_by_index=(0, 2)),
           lambda a: np.linalg.svd(a, compute_uv=False)[:2], shapes=(((4, 3),),),
           domain=spread, **LA),
]
