"""Op specs: products, contractions, einsum and norms (functrax.numpy and functrax.numpy.linalg).

Every name starts with ``linalg_`` (select them with ``-k linalg_``).
"""
import numpy as np

import functrax.numpy as fnp
from functrax import lax
from tests.opspec.spec import F32, I8, I32, OpSpec, uniform

DG = ("dot_general",)
NUM = (F32, I32)


def _vecdot_ref(a, b, axis=-1):
    return np.sum(np.moveaxis(np.conj(a), axis, -1) * np.moveaxis(b, axis, -1), axis=-1)


def _einsum_name(subscripts):
    s = subscripts.replace("->", "_to_").replace("...", "ell").replace(",", "_")
    return "linalg_einsum_" + (s or "scalar")


# (subscripts, operand shapes): several shape sets per string where useful
EINSUM_TABLE = [
    ("ii->i", (((3, 3),), ((1, 1),))),
    ("ii", (((3, 3),),)),
    ("ij,jk->ik", (((2, 3), (3, 4)),)),
    ("bij,bjk->bik", (((2, 2, 3), (2, 3, 4)),)),
    ("...ij,...jk", (((2, 3), (3, 4)), ((2, 2, 3), (2, 3, 4)), ((2, 1, 2, 3), (3, 3, 4)))),
    ("i,i", (((3,), (3,)),)),
    ("i,j->ij", (((2,), (3,)),)),
    ("ijk->kji", (((2, 3, 4),),)),
    ("ij->", (((2, 3),),)),
    ("ij", (((2, 3),),)),
    ("ji", (((2, 3),),)),
    ("ij,jk,kl->il", (((2, 3), (3, 4), (4, 2)),)),
    ("iij->ji", (((3, 3, 2),),)),
    ("iji->j", (((2, 3, 2),),)),
    ("ij,ij->ij", (((2, 3), (2, 3)), ((1, 3), (2, 3)))),
    ("ij,ij->", (((2, 3), (2, 3)),)),
    ("ij,j->i", (((2, 3), (3,)),)),
    ("i,i->", (((3,), (3,)), ((1,), (3,)))),
    ("bi,bj->bij", (((2, 3), (2, 4)),)),
    ("ab,bc,cd,de->ae", (((2, 3), (3, 2), (2, 4), (4, 2)),)),
    ("...,...->...", (((2, 3), (3,)), ((), (2,)))),
    ("i...->...", (((3, 2, 2),),)),
    (",ij->ij", (((), (2, 3)),)),
    ("Ab,bA->A", (((2, 3), (3, 2)),)),
]


def _einsum_spec(subscripts, shapes):
    return OpSpec(_einsum_name(subscripts),
                  lambda *xs, _s=subscripts: fnp.einsum(_s, *xs),
                  lambda *xs, _s=subscripts: np.einsum(_s, *xs),
                  shapes=shapes, dtypes=NUM, primitives=DG)


SPECS = [
    OpSpec("linalg_dot", fnp.dot, np.dot,
           shapes=(((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                   ((2, 2, 3), (4, 3, 2)), ((2, 3), (2, 3, 4)), ((), (2, 3)), ((2, 3), ()),
                   ((), ())),
           dtypes=(F32, I32, (F32, I32)), primitives=DG),
    OpSpec("linalg_matmul", fnp.matmul, np.matmul,
           shapes=(((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                   ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((2, 1, 2, 3), (4, 3, 2)),
                   ((1, 2, 3), (5, 3, 4)), ((3,), (2, 3, 4)), ((2, 2, 3), (3,)),
                   ((2, 1, 2, 3), (1, 3, 3, 2)), ((1, 1, 2, 3), (1, 3, 2))),
           dtypes=(F32, I32, (I32, F32)), primitives=DG),
    OpSpec("linalg_matmul_operator", lambda a, b: a @ b, np.matmul,
           shapes=(((2, 3), (3, 4)), ((4, 1, 2, 3), (3, 3, 2)), ((3,), (3,))), dtypes=NUM),
    OpSpec("linalg_rmatmul_method", lambda a, b: b.__rmatmul__(a), np.matmul,
           shapes=(((2, 3), (3, 4)), ((3,), (2, 3, 2))), dtypes=NUM),
    OpSpec("linalg_vdot", fnp.vdot, np.vdot,
           shapes=(((3,), (3,)), ((2, 3), (6,)), ((2, 2), (2, 2))), dtypes=NUM, primitives=DG),
    OpSpec("linalg_vecdot", fnp.vecdot, _vecdot_ref,
           shapes=(((3,), (3,)), ((2, 3), (3,)), ((4, 1, 3), (2, 3))), dtypes=NUM, primitives=DG),
    OpSpec("linalg_vecdot_axis", fnp.vecdot, _vecdot_ref,
           shapes=(((3, 2), (3, 2)), ((3, 2), (3, 1))), dtypes=NUM, kwargs=({"axis": 0},)),
    OpSpec("linalg_inner", fnp.inner, np.inner,
           shapes=(((3,), (3,)), ((2, 3), (4, 3)), ((2, 2, 3), (3,)), ((), (2, 3)), ((2, 3), ())),
           dtypes=NUM, primitives=DG),
    OpSpec("linalg_outer", fnp.outer, np.outer,
           shapes=(((3,), (4,)), ((2, 2), (3,)), ((), (2,))), dtypes=(F32, I32, (I32, F32))),
    OpSpec("linalg_tensordot", fnp.tensordot, np.tensordot,
           shapes=(((2, 3, 4), (3, 4, 5)), ((3, 4), (3, 4))), dtypes=NUM,
           kwargs=({}, {"axes": 2}), primitives=DG),
    OpSpec("linalg_tensordot_int_axes", fnp.tensordot, np.tensordot,
           shapes=(((2, 3), (3, 4)),), dtypes=NUM, kwargs=({"axes": 1}, {"axes": 0})),
    OpSpec("linalg_tensordot_pairs", fnp.tensordot, np.tensordot,
           shapes=(((2, 3, 4), (4, 3, 5)),), dtypes=NUM,
           kwargs=({"axes": ((1, 2), (1, 0))}, {"axes": ([2], [0])}, {"axes": (-1, 0)},
                   {"axes": [[1, -1], [-2, 0]]})),
    OpSpec("linalg_kron", fnp.kron, np.kron,
           shapes=(((2, 3), (3, 2)), ((2,), (3,)), ((2, 3), (2,)), ((), (2,)), ((2, 1, 2), (2, 3))),
           dtypes=(F32, I32, (I32, F32))),
    OpSpec("linalg_trace", fnp.trace, np.trace,
           shapes=(((3, 3),), ((3, 4),), ((4, 2),)), dtypes=(F32, I32, I8),
           kwargs=({}, {"offset": 1}, {"offset": -1}, {"offset": 1, "axis1": 1, "axis2": 0},
                   {"offset": 7}, {"axis1": -1, "axis2": -2})),
    OpSpec("linalg_trace_3d", fnp.trace, np.trace, shapes=(((2, 3, 4),),), dtypes=NUM,
           kwargs=({}, {"axis1": 2, "axis2": 0, "offset": -1}, {"axis1": 1, "axis2": 2},
                   {"dtype": np.float32})),
    OpSpec("linalg_diagonal", fnp.diagonal, np.diagonal,
           shapes=(((3, 3),), ((3, 4),), ((4, 2),), ((1, 1),)), dtypes=NUM,
           kwargs=({}, {"offset": 1}, {"offset": -2}, {"offset": 9}, {"axis1": 1, "axis2": 0})),
    OpSpec("linalg_diagonal_3d", fnp.diagonal, np.diagonal, shapes=(((2, 3, 4),),), dtypes=NUM,
           kwargs=({}, {"axis1": 2, "axis2": 0, "offset": 1}, {"axis1": -1, "axis2": 1},
                   {"axis1": 0, "axis2": 2, "offset": -1})),
    OpSpec("linalg_cross", fnp.cross, np.cross,
           shapes=(((3,), (3,)), ((4, 3), (3,)), ((2, 1, 3), (4, 3))), dtypes=NUM),
    OpSpec("linalg_cross_axes", fnp.cross, np.cross, shapes=(((3, 4), (3, 4)), ((3, 4), (3, 1))),
           dtypes=NUM, kwargs=({"axisa": 0, "axisb": 0}, {"axis": 0},
                               {"axisa": 0, "axisb": 0, "axisc": 0})),
    OpSpec("linalg_matrix_transpose", fnp.matrix_transpose, lambda x: np.swapaxes(x, -1, -2),
           shapes=(((2, 3),), ((4, 2, 3),)), dtypes=NUM),
    # --- functrax.numpy.linalg ---
    OpSpec("linalg_norm", fnp.linalg.norm, np.linalg.norm, shapes=(((4,),), ((2, 3),)),
           dtypes=NUM, rtol=1e-5,
           kwargs=({}, {"keepdims": True}, {"axis": 0}, {"axis": -1, "ord": 1},
                   {"axis": -1, "ord": np.inf}, {"axis": -1, "ord": -np.inf},
                   {"axis": -1, "ord": 0}, {"axis": -1, "ord": 3}, {"axis": -1, "ord": 0.5},
                   {"axis": -1, "ord": 2, "keepdims": True})),
    OpSpec("linalg_norm_negative_p", fnp.linalg.norm, np.linalg.norm, shapes=(((4,),), ((2, 3),)),
           kwargs=({"axis": -1, "ord": -2}, {"axis": 0, "ord": -1.5})),
    OpSpec("linalg_norm_matrix", fnp.linalg.norm, np.linalg.norm,
           shapes=(((3, 4),), ((2, 3, 4),)), dtypes=NUM,
           kwargs=tuple({"ord": o, "axis": (-2, -1)} for o in (None, "fro", 1, -1, np.inf,
                                                               -np.inf))
           + ({"ord": 1, "axis": (-1, -2), "keepdims": True},
              {"ord": np.inf, "axis": (0, -1)}, {"ord": -1, "axis": (-1, 0)},
              {"ord": -np.inf, "axis": (-1, -2), "keepdims": True})),
    OpSpec("linalg_norm_2d_default_axes", fnp.linalg.norm, np.linalg.norm,
           shapes=(((3, 4),),), dtypes=NUM,
           kwargs=({"ord": 1}, {"ord": "fro"}, {"ord": -np.inf, "keepdims": True})),
    OpSpec("linalg_norm_flat", fnp.linalg.norm, np.linalg.norm, shapes=(((2, 3, 2),), ((),)),
           dtypes=NUM, kwargs=({}, {"keepdims": True})),
    OpSpec("linalg_vector_norm", fnp.linalg.vector_norm, np.linalg.vector_norm,
           shapes=(((2, 3),), ((4,),)), dtypes=NUM, reduces=True,
           kwargs=({}, {"ord": 1}, {"axis": 0, "ord": np.inf}, {"axis": (0,), "ord": 3},
                   {"ord": 0, "keepdims": True})),
    OpSpec("linalg_matrix_norm", fnp.linalg.matrix_norm, np.linalg.matrix_norm,
           shapes=(((3, 4),), ((2, 3, 4),)), dtypes=NUM,
           kwargs=({}, {"ord": 1}, {"ord": -np.inf, "keepdims": True})),
    OpSpec("linalg_la_matmul", fnp.linalg.matmul, np.linalg.matmul,
           shapes=(((2, 3), (3, 4)), ((3,), (2, 3, 2))), dtypes=NUM, primitives=DG),
    OpSpec("linalg_la_outer", fnp.linalg.outer, np.linalg.outer, shapes=(((3,), (2,)),),
           dtypes=NUM),
    OpSpec("linalg_la_trace", fnp.linalg.trace, np.linalg.trace,
           shapes=(((3, 3),), ((2, 3, 4),)), dtypes=NUM, kwargs=({}, {"offset": 1})),
    OpSpec("linalg_la_diagonal", fnp.linalg.diagonal, np.linalg.diagonal,
           shapes=(((3, 3),), ((2, 3, 4),)), dtypes=NUM, kwargs=({}, {"offset": -1})),
    OpSpec("linalg_la_vecdot", fnp.linalg.vecdot, _vecdot_ref,
           shapes=(((2, 3), (3,)),), dtypes=NUM),
    OpSpec("linalg_la_tensordot", fnp.linalg.tensordot, np.linalg.tensordot,
           shapes=(((2, 3, 4), (4, 3, 2)), ((2, 3), (3, 4))), dtypes=NUM,
           kwargs=({"axes": 1},)),
    OpSpec("linalg_la_cross", fnp.linalg.cross, np.linalg.cross,
           shapes=(((2, 3), (3,)), ((4, 3), (4, 3))), dtypes=NUM),
    OpSpec("linalg_la_matrix_transpose", fnp.linalg.matrix_transpose,
           np.linalg.matrix_transpose, shapes=(((2, 3),), ((4, 2, 3),)), dtypes=NUM),
    OpSpec("linalg_multi_dot", lambda *xs: fnp.linalg.multi_dot(xs),
           lambda *xs: np.linalg.multi_dot(xs),
           shapes=(((3,), (3, 4), (4, 2)), ((2, 3), (3, 4), (4,)), ((2, 3), (3, 2))), dtypes=NUM),
    OpSpec("linalg_matrix_power", fnp.linalg.matrix_power, np.linalg.matrix_power,
           shapes=(((3, 3),), ((2, 2, 2),)), dtypes=NUM, atol=1e-4, rtol=1e-4,
           kwargs=({"n": 0}, {"n": 1}, {"n": 2}, {"n": 5})),
] + [_einsum_spec(s, shapes) for s, shapes in EINSUM_TABLE]


# --- decompositions (functrax.lax.linalg primitives, functrax.numpy.linalg) ---
# Inputs are well conditioned so float32 results and float64 finite differences are stable:
# singular values / eigenvalues well separated, positive-definite matrices for cholesky.


def _orthogonal(rng, batch, n):
    return np.linalg.qr(rng.standard_normal(tuple(batch) + (n, n)))[0]


def _spread_values(k):
    return 1.0 + 0.75 * np.arange(k)[::-1]


def spread(rng, shape, dtype):
    """Matrices ``Q1 diag(s) Q2`` with singular values 1, 1.75, 2.5, ... (well separated)."""
    *batch, m, n = shape
    k = min(m, n)
    s = np.zeros(tuple(batch) + (m, n))
    s[..., np.arange(k), np.arange(k)] = _spread_values(k)
    return (_orthogonal(rng, batch, m) @ s @ _orthogonal(rng, batch, n)).astype(dtype)


def low_rank(rng, shape, dtype):
    """Like ``spread`` with the smallest singular value zero (rank min(m, n) - 1)."""
    *batch, m, n = shape
    k = min(m, n)
    s = np.zeros(tuple(batch) + (m, n))
    s[..., np.arange(k - 1), np.arange(k - 1)] = _spread_values(k - 1)
    return (_orthogonal(rng, batch, m) @ s @ _orthogonal(rng, batch, n)).astype(dtype)


def square_tensor(rng, shape, dtype):
    """A tensor whose flattening to a square matrix is well conditioned (2 I + noise)."""
    n = int(round(np.sqrt(np.prod(shape))))
    return (2 * np.eye(n) + 0.3 * rng.normal(size=(n, n))).reshape(shape).astype(dtype)


def symmetric(rng, shape, dtype):
    """Exactly symmetric matrices with eigenvalues -2, -1.25, ... (well separated)."""
    *batch, n, _ = shape
    q = _orthogonal(rng, batch, n)
    w = -2.0 + 0.75 * np.arange(n)
    a = (q * w[..., None, :]) @ np.swapaxes(q, -1, -2)
    return ((a + np.swapaxes(a, -1, -2)) / 2).astype(dtype)


def spd(rng, shape, dtype):
    """Symmetric positive-definite matrices ``q diag(w) q^T`` with w in [1, 3]."""
    *batch, n, _ = shape
    q = _orthogonal(rng, batch, n)
    w = 1.0 + 2.0 * np.arange(n) / max(n - 1, 1)
    a = (q * w[..., None, :]) @ np.swapaxes(q, -1, -2)
    return ((a + np.swapaxes(a, -1, -2)) / 2).astype(dtype)


def triangular(rng, shape, dtype):
    """Well-conditioned triangular-solve matrices: small entries, a diagonal near +-2."""
    x = rng.uniform(-0.5, 0.5, size=shape)
    n = shape[-1]
    d = np.where(rng.uniform(size=shape[:-1]) < 0.5, -2.0, 2.0)
    x[..., np.arange(n), np.arange(n)] = d
    return x.astype(dtype)


def _tri_solve_ref(a, b, left_side=False, lower=False, transpose_a=False,
                   unit_diagonal=False):
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        t = t - np.diag(np.diagonal(t)) + np.eye(t.shape[-1], dtype=t.dtype)
    if transpose_a:
        t = t.T
    if left_side:
        return np.linalg.solve(t, b)
    return np.linalg.solve(t.T, b.T).T


def _lu_ref(a):
    """LU with partial pivoting, one matrix at a time, straight from the textbook."""
    *batch, m, n = a.shape
    flat = a.reshape(-1, m, n).astype(np.float64)
    k = min(m, n)
    lus, pivs, perms = [], [], []
    for x in flat:
        x = x.copy()
        piv, perm = [], list(range(m))
        for j in range(k):
            p = j + int(np.argmax(np.abs(x[j:, j])))
            piv.append(p)
            x[[j, p]] = x[[p, j]]
            perm[j], perm[p] = perm[p], perm[j]
            if x[j, j] != 0:
                x[j + 1:, j] /= x[j, j]
            x[j + 1:, j + 1:] -= np.outer(x[j + 1:, j], x[j, j + 1:])
        lus.append(x)
        pivs.append(piv)
        perms.append(perm)
    return (np.asarray(lus).reshape(a.shape).astype(a.dtype),
            np.asarray(pivs, np.int32).reshape(*batch, k),
            np.asarray(perms, np.int32).reshape(*batch, m))


def _gauge_eigh(w, v):
    """Eigenvectors times their first row: independent of each column's sign."""
    return w, v * v[..., :1, :]


def _gauge_svd(u, s, vh):
    return s, u * u[..., :1, :], vh * vh[..., :, :1]


def _lu_fn(a):
    return lax.linalg.lu(a)


LA = dict(atol=1e-4, rtol=1e-4)
SQUARE = (((3, 3),), ((2, 3, 3),), ((1, 1),))
RECT = (((3, 3),), ((4, 3),), ((3, 4),), ((2, 4, 3),))

SPECS += [
    OpSpec("linalg_cholesky", fnp.linalg.cholesky, np.linalg.cholesky, shapes=SQUARE,
           domain=spd, kwargs=({}, {"upper": True}), primitives=("cholesky",), **LA),
    OpSpec("linalg_lax_cholesky_lower_triangle",
           lambda a: lax.linalg.cholesky(a, symmetrize_input=False), np.linalg.cholesky,
           shapes=(((3, 3),),), domain=spd, **LA),
    OpSpec("linalg_triangular_solve_left", lax.linalg.triangular_solve, _tri_solve_ref,
           shapes=(((3, 3), (3, 2)), ((3, 3), (3, 4)), ((1, 1), (1, 1))),
           domain=(triangular, uniform()), primitives=("triangular_solve",),
           kwargs=tuple({"left_side": True, "lower": lo, "transpose_a": tr}
                        for lo in (True, False) for tr in (False, True))
           + ({"left_side": True, "lower": True, "unit_diagonal": True},), **LA),
    OpSpec("linalg_triangular_solve_right", lax.linalg.triangular_solve, _tri_solve_ref,
           shapes=(((3, 3), (2, 3)), ((3, 3), (4, 3))), domain=(triangular, uniform()),
           kwargs=tuple({"lower": lo, "transpose_a": tr} for lo in (True, False)
                        for tr in (False, True)) + ({"unit_diagonal": True},), **LA),
    OpSpec("linalg_lax_lu", _lu_fn, _lu_ref, shapes=RECT + (((2, 3, 3),),), domain=spread,
           primitives=("lu",), **LA),
    OpSpec("linalg_qr", fnp.linalg.qr, np.linalg.qr,
           shapes=(((3, 3),), ((4, 3),), ((2, 4, 3),), ((3, 4),)), domain=spread,
           primitives=("qr",), **LA),
    OpSpec("linalg_qr_modes", fnp.linalg.qr, np.linalg.qr, shapes=RECT, domain=spread,
           kwargs=({"mode": "complete"}, {"mode": "r"}), **LA),
    OpSpec("linalg_eigh", lambda a, **kw: _gauge_eigh(*fnp.linalg.eigh(a, **kw)),
           lambda a, **kw: _gauge_eigh(*np.linalg.eigh(a, **kw)), shapes=SQUARE,
           domain=symmetric, kwargs=({}, {"UPLO": "U"}), primitives=("eigh",), **LA),
    OpSpec("linalg_eigvalsh", fnp.linalg.eigvalsh, np.linalg.eigvalsh, shapes=SQUARE,
           domain=symmetric, **LA),
    OpSpec("linalg_svd", lambda a: _gauge_svd(*fnp.linalg.svd(a, full_matrices=False)),
           lambda a: _gauge_svd(*np.linalg.svd(a, full_matrices=False)), shapes=RECT,
           domain=spread, primitives=("svd",), **LA),
    OpSpec("linalg_svd_full", lambda a: _gauge_svd(*fnp.linalg.svd(a)),
           lambda a: _gauge_svd(*np.linalg.svd(a)), shapes=RECT, domain=spread, **LA),
    OpSpec("linalg_svdvals", fnp.linalg.svdvals, np.linalg.svdvals, shapes=RECT,
           domain=spread, **LA),
    OpSpec("linalg_solve", fnp.linalg.solve, np.linalg.solve,
           shapes=(((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 2)),
                   ((2, 3, 3), (3,)), ((3, 3), (2, 3, 1)), ((2, 1, 3, 3), (4, 3, 2))),
           domain=(spread, uniform()), **LA),
    OpSpec("linalg_inv", fnp.linalg.inv, np.linalg.inv, shapes=SQUARE, domain=spread, **LA),
    OpSpec("linalg_det", fnp.linalg.det, np.linalg.det, shapes=SQUARE + (((4, 4),),),
           domain=spread, **LA),
    OpSpec("linalg_slogdet", fnp.linalg.slogdet, np.linalg.slogdet,
           shapes=SQUARE + (((4, 4),),), domain=spread, **LA),
    OpSpec("linalg_pinv", fnp.linalg.pinv, np.linalg.pinv, shapes=RECT, domain=spread, **LA),
    OpSpec("linalg_lstsq", fnp.linalg.lstsq, lambda a, b: np.linalg.lstsq(a, b, rcond=None),
           shapes=(((5, 3), (5,)), ((5, 3), (5, 2)), ((4, 4), (4, 1))),
           domain=(spread, uniform()), **LA),
    OpSpec("linalg_matrix_rank", fnp.linalg.matrix_rank, np.linalg.matrix_rank,
           shapes=RECT, domain=low_rank),
    OpSpec("linalg_norm_svd", fnp.linalg.norm, np.linalg.norm,
           shapes=(((3, 4),), ((2, 3, 3),)), domain=spread,
           kwargs=({"ord": 2, "axis": (-2, -1)}, {"ord": -2, "axis": (-2, -1)},
                   {"ord": "nuc", "axis": (-2, -1)}, {"ord": 2, "axis": (-1, -2),
                                                      "keepdims": True}), **LA),
    OpSpec("linalg_matrix_norm_svd", fnp.linalg.matrix_norm, np.linalg.matrix_norm,
           shapes=(((3, 4),),), domain=spread, kwargs=({"ord": "nuc"}, {"ord": -2}), **LA),
    OpSpec("linalg_matrix_power_negative", fnp.linalg.matrix_power, np.linalg.matrix_power,
           shapes=(((3, 3),), ((2, 2, 2),)), domain=spread, kwargs=({"n": -1}, {"n": -3}),
           atol=1e-3, rtol=1e-3),
    OpSpec("linalg_cond", fnp.linalg.cond, np.linalg.cond, shapes=SQUARE[:2], domain=spread,
           kwargs=({}, {"p": -2}, {"p": 1}, {"p": np.inf}, {"p": "fro"}), atol=1e-3, rtol=1e-3),
    OpSpec("linalg_eigvals", lambda a: fnp.sort_complex(fnp.linalg.eigvals(a)),
           lambda a: np.sort_complex(np.linalg.eigvals(a)).astype(
               np.result_type(a.dtype, np.complex64)),
           shapes=(((3, 3),), ((2, 4, 4),)), domain=symmetric, primitives=("eig",), **LA),
    OpSpec("linalg_eig_residual", lambda a: _eig_residual(fnp, *fnp.linalg.eig(a), a),
           lambda a: _eig_residual(np, *np.linalg.eig(a), a),
           shapes=(((3, 3),), ((2, 4, 4),)), domain=spread, primitives=("eig",), **LA),
    OpSpec("linalg_tensorinv", fnp.linalg.tensorinv, np.linalg.tensorinv,
           shapes=(((4, 2, 2),), ((6, 2, 3),)), domain=square_tensor, kwargs=({"ind": 1},),
           **LA),
    OpSpec("linalg_tensorsolve", fnp.linalg.tensorsolve, np.linalg.tensorsolve,
           shapes=(((2, 3, 6), (2, 3)), ((6, 2, 3), (6,))), domain=(square_tensor, uniform()),
           **LA),
]


def _eig_residual(xp, w, v, a):
    """|a v - v w| and the unit column norms of v (eigenvectors are unique up to a phase)."""
    return (xp.abs(a @ v - v * w[..., None, :]).max(axis=(-2, -1)),
            xp.sqrt((xp.abs(v) ** 2).sum(axis=-2)))
