"""Linear-algebra decompositions, as ``jax.lax.linalg``'s primitives.

Every operand is a (batch of) matrices: batch dimensions lead, the matrix is in the last two
axes. Only float32/float64/complex64/complex128 are accepted (LAPACK's types).

- ``cholesky(a)``: the lower Cholesky factor of the Hermitian positive-definite ``a``
  (``[..., n, n]``); only the lower triangle of ``a`` is read; NaNs where it fails.
- ``triangular_solve(a, b; left_side, lower, transpose_a, conjugate_a, unit_diagonal)``:
  ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b``; ``a`` is ``[..., m, m]``, ``b``
  ``[..., m, n]`` (left) or ``[..., n, m]``; equal batch dimensions.
- ``lu(a) -> (lu, pivots, permutation)``: partial pivoting, ``P @ a = L @ U``; ``pivots``
  int32 ``[..., min(m, n)]`` (row swaps), ``permutation`` int32 ``[..., m]``.
- ``qr(a; full_matrices) -> (q, r)``.
- ``eigh(a; lower, sort_eigenvalues) -> (v, w)``: eigenvectors (columns) and the real
  eigenvalues (ascending) of a Hermitian matrix; only the ``lower`` (or upper) triangle is
  read.
- ``svd(a; full_matrices, compute_uv) -> (s, u, vh)`` or ``(s,)``.
- ``geqp3(a) -> (a, jpvt, taus)``: QR with column pivoting in LAPACK's packed form (``jpvt``
  int32 ``[..., n]``, 0-based); ``qr(x, pivoting=True)`` uses only its pivots.

More primitives (Hessenberg, tridiagonal, Schur, eig, ...) are in ``linalg_more.py``.
"""
from __future__ import annotations

import enum

from functrax import core
from functrax.primitives.contraction import dot_general
from functrax.primitives.define import Family, ShapedArray, new_primitive, np
from functrax.primitives.elementwise import (
    add, conj, convert_element_type, div, eq, select, stop_gradient,
)
from functrax.primitives.reductions import reduce_sum
from functrax.primitives.shape import (
    broadcast_in_dim, broadcasted_iota, expand_dims, full, full_like, slice_in_dim, squeeze,
    transpose,
)


_LAPACK_TYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64,
                                            np.complex128))

cholesky_p = new_primitive("cholesky", family=Family.LINALG)
triangular_solve_p = new_primitive("triangular_solve", family=Family.LINALG)
lu_p = new_primitive("lu", multiple_results=True, family=Family.LINALG)
qr_p = new_primitive("qr", multiple_results=True, family=Family.LINALG)
eigh_p = new_primitive("eigh", multiple_results=True, family=Family.LINALG)
svd_p = new_primitive("svd", multiple_results=True, family=Family.LINALG)
geqp3_p = new_primitive("geqp3", multiple_results=True, family=Family.LINALG)


def real_dtype(dtype) -> np.dtype:
    """float32 for complex64, float64 for complex128; real dtypes unchanged."""
    return np.empty((), dtype).real.dtype


def check_matrix(name: str, x: ShapedArray, square: bool = False, what: str = "input"):
    """Raise (as JAX) unless ``x`` is a batch of (square) matrices of a LAPACK dtype."""
    if x.dtype not in _LAPACK_TYPES:
        raise TypeError(f"{name} does not accept dtype {x.dtype.name}: the {what} must be "
                        "float32, float64, complex64 or complex128 (convert with .astype)")
    if x.ndim < 2:
        raise ValueError(f"The {what} to {name} must have rank >= 2 (a matrix or a batch of "
                         f"matrices, shape [..., m, n]), got shape {x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"The {what} to {name} must be a square matrix (shape [..., n, n]), "
                         f"got shape {x.shape}")


@cholesky_p.def_abstract_eval
def _cholesky_abstract(a):
    check_matrix("cholesky", a, square=True)
    return a.strip_weak_type()


@triangular_solve_p.def_abstract_eval
def _triangular_solve_abstract(a, b, *, left_side=False, lower=False, transpose_a=False,
                               conjugate_a=False, unit_diagonal=False):
    if a.ndim < 2:
        raise TypeError(f"triangular_solve requires a.ndim to be at least 2, got {a.ndim}.")
    if b.ndim < 2:
        raise TypeError(f"triangular_solve requires b.ndim to be at least 2, got {b.ndim}.")
    check_matrix("triangular_solve", a, what="matrix a")
    if a.dtype != b.dtype:
        raise TypeError(f"triangular_solve requires arguments of the same dtype, got "
                        f"{a.dtype.name} and {b.dtype.name}")
    if a.shape[-1] != a.shape[-2]:
        raise TypeError(f"triangular_solve requires the last two dimensions of a to be equal "
                        f"in size, got a.shape of {a.shape}.")
    if a.shape[:-2] != b.shape[:-2]:
        raise TypeError(f"triangular_solve requires both arguments to have the same number "
                        f"of dimensions and equal batch dimensions, got {a.shape} and "
                        f"{b.shape}.")
    common = -2 if left_side else -1
    if a.shape[-1] != b.shape[common]:
        raise TypeError(f"Incompatible shapes for arguments to triangular_solve: {a.shape} and "
                        f"{b.shape} (left_side={left_side}).")
    return b.strip_weak_type()


@lu_p.def_abstract_eval
def _lu_abstract(a):
    check_matrix("lu", a)
    *batch, m, n = a.shape
    return [a.strip_weak_type(), ShapedArray((*batch, min(m, n)), np.int32),
            ShapedArray((*batch, m), np.int32)]


@qr_p.def_abstract_eval
def _qr_abstract(a, *, full_matrices=True):
    check_matrix("qr", a)
    *batch, m, n = a.shape
    k = m if full_matrices else min(m, n)
    return [ShapedArray((*batch, m, k), a.dtype), ShapedArray((*batch, k, n), a.dtype)]


@eigh_p.def_abstract_eval
def _eigh_abstract(a, *, lower=True, sort_eigenvalues=True):
    check_matrix("eigh", a, square=True)
    *batch, n, _ = a.shape
    return [a.strip_weak_type(), ShapedArray((*batch, n), real_dtype(a.dtype))]


@svd_p.def_abstract_eval
def _svd_abstract(a, *, full_matrices=True, compute_uv=True):
    check_matrix("svd", a)
    *batch, m, n = a.shape
    k = min(m, n)
    s = ShapedArray((*batch, k), real_dtype(a.dtype))
    if not compute_uv:
        return [s]
    u = ShapedArray((*batch, m, m if full_matrices else k), a.dtype)
    vh = ShapedArray((*batch, n if full_matrices else k, n), a.dtype)
    return [s, u, vh]


@geqp3_p.def_abstract_eval
def _geqp3_abstract(a):
    check_matrix("geqp3", a)
    *batch, m, n = a.shape
    return [a.strip_weak_type(), ShapedArray((*batch, n), np.int32),
            ShapedArray((*batch, min(m, n)), a.dtype)]


# --- wrappers that bind the primitives (re-exported by functrax.lax.linalg) ---


def _aval(x):
    return core.get_aval(x)


def matrix_operand(name, x):
    if not core.is_arraylike(x):
        raise TypeError(f"{name}: expected an array, got {type(x).__name__} (convert with "
                        "functrax.numpy.asarray)")
    return x


def symmetrize(x):
    """``(x + x^H) / 2``: the Hermitian part of a (batch of) square matrices."""
    return div(add(x, adjoint(x)), full_like_matrix(x, 2))


def cholesky(x, *, symmetrize_input: bool = True):
    """The lower Cholesky factor ``L`` (``x = L @ L^H``) of Hermitian positive-definite
    matrices ``[..., n, n]``; NaNs where ``x`` is not positive definite.

    Args:
      x: a batch of square matrices.
      symmetrize_input: use ``(x + x^H) / 2``; if False only the lower triangle is read.
    """
    x = matrix_operand("cholesky", x)
    if symmetrize_input:
        _square("cholesky", x)
        x = symmetrize(x)
    return cholesky_p.bind(x)


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
    """Solve ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b`` for triangular ``a``.

    ``op`` transposes ``a`` if ``transpose_a`` and conjugates it if ``conjugate_a``; only the
    ``lower`` (or upper) triangle of ``a`` is read, and its diagonal is taken as ones if
    ``unit_diagonal``. ``b`` may have one dimension fewer than ``a`` (a batch of vectors).

    >>> import functrax.numpy as fnp
    >>> triangular_solve(fnp.array([[2.0, 0.0], [1.0, 1.0]]), fnp.array([2.0, 3.0]),
    ...                  left_side=True, lower=True)
    Array([1., 2.], dtype=float32)
    """
    a, b = matrix_operand("triangular_solve", a), matrix_operand("triangular_solve", b)
    conjugate_a = bool(conjugate_a) and _aval(a).dtype.kind == "c"
    singleton = _aval(b).ndim == _aval(a).ndim - 1
    if singleton:
        b = expand_dims(b, (_aval(b).ndim if left_side else _aval(b).ndim - 1,))
    out = triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                  transpose_a=bool(transpose_a), conjugate_a=conjugate_a,
                                  unit_diagonal=bool(unit_diagonal))
    if singleton:
        nd = _aval(out).ndim
        out = squeeze(out, (nd - 1 if left_side else nd - 2,))
    return out


def lu(x):
    """LU decomposition with partial pivoting: ``(lu, pivots, permutation)`` with
    ``x[..., permutation, :] == L @ U``; ``L`` (unit diagonal, not stored) and ``U`` share
    ``lu``; ``pivots`` are the row swaps (int32)."""
    lu_, pivots, perm = lu_p.bind(matrix_operand("lu", x))
    return lu_, pivots, perm


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation (int32 ``[..., permutation_size]``) that the row swaps ``pivots``
    perform, computed with static shapes from a loop of selects."""
    shape = _aval(pivots).shape
    if not shape or _aval(pivots).dtype.kind not in "iu":
        raise ValueError(f"lu_pivots_to_permutation: pivots must be an integer array of rank "
                         f">= 1, got {_aval(pivots).str_short()}")
    k = shape[-1]
    if permutation_size < k:
        raise ValueError(f"Output permutation size {permutation_size} has to exceed the "
                         f"trailing dimension of the pivots. Got pivots shape {shape}")
    out_shape = shape[:-1] + (permutation_size,)
    nd = len(out_shape)
    perm = broadcasted_iota(np.int32, out_shape, nd - 1)
    pos = broadcasted_iota(np.int32, out_shape, nd - 1)
    pivots = convert_element_type(pivots, np.int32)
    for i in range(k):
        j = broadcast_in_dim(squeeze(slice_in_dim(pivots, i, i + 1, axis=nd - 1),
                                             (nd - 1,)), out_shape, tuple(range(nd - 1)))
        pi = broadcast_in_dim(squeeze(slice_in_dim(perm, i, i + 1, axis=nd - 1),
                                              (nd - 1,)), out_shape, tuple(range(nd - 1)))
        pj = _take_last(perm, j)
        at_i = eq(pos, full(out_shape, i, np.int32))
        perm = select(at_i, pj, select(eq(pos, j), pi, perm))
    return perm


def _take_last(x, idx):
    """``x[..., idx]`` for an index broadcast along the last axis (a one-hot sum)."""
    nd = _aval(x).ndim
    hit = eq(broadcasted_iota(np.int32, _aval(x).shape, nd - 1), idx)
    picked = reduce_sum(select(hit, x, full_like(x, 0)), (nd - 1,))
    return broadcast_in_dim(picked, _aval(x).shape, tuple(range(nd - 1)))


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
    """QR decomposition ``x = q @ r``: ``q`` ``[..., m, m]`` and ``r`` ``[..., m, n]``
    (``full_matrices``), else ``[..., m, k]`` and ``[..., k, n]`` with ``k = min(m, n)``.

    With ``pivoting``, ``(q, r, p)``: ``x[..., :, p] = q @ r`` with the int32 column
    permutation ``p`` ``[..., n]`` chosen as LAPACK's ``?geqp3`` (largest remaining column
    norm first); derivatives treat ``p`` as constant. ``use_magma`` is accepted and unused.
    """
    del use_magma
    x = matrix_operand("qr", x)
    if not pivoting:
        q, r = qr_p.bind(x, full_matrices=bool(full_matrices))
        return q, r
    _, jpvt, _ = geqp3_p.bind(stop_gradient(x))
    xp = batched_matmul(x, transpose_last(permutation_matrix(jpvt, _aval(x).dtype)))
    q, r = qr_p.bind(xp, full_matrices=bool(full_matrices))
    return q, r, jpvt


def geqp3(a):
    """QR with column pivoting in LAPACK's packed form: ``(a, jpvt, taus)`` (``r`` in the
    upper triangle of ``a``, the reflectors below; ``jpvt`` 0-based int32)."""
    a, jpvt, taus = geqp3_p.bind(matrix_operand("geqp3", a))
    return a, jpvt, taus


class EighImplementation(enum.Enum):
    """The eigh algorithms of JAX (all run the numpy rule here)."""
    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


class SvdAlgorithm(enum.Enum):
    """The SVD algorithms of JAX (all run the numpy rule here)."""
    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"


def _subset(name, subset_by_index, k):
    if subset_by_index is None:
        return None
    try:
        start, end = (int(i) for i in subset_by_index)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: subset_by_index must be a pair (start, end) of ints, got "
                         f"{subset_by_index!r}") from None
    if not 0 <= start <= end <= k:
        raise ValueError(f"{name}: subset_by_index={subset_by_index!r} must satisfy "
                         f"0 <= start <= end <= {k}")
    return start, end


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index=None, implementation=None):
    """Eigendecomposition of Hermitian matrices: ``(v, w)``, eigenvectors in the columns of
    ``v`` and the real eigenvalues ``w`` in ascending order.

    Args:
      x: a batch of square matrices ``[..., n, n]``.
      lower: without ``symmetrize_input``, which triangle is read.
      symmetrize_input: use ``(x + x^H) / 2``.
      sort_eigenvalues: eigenvalues ascending (they always are here).
      subset_by_index: ``(start, end)``: only the eigenpairs ``start:end`` (ascending).
      implementation: an ``EighImplementation`` (accepted, unused).
    """
    del implementation
    x = matrix_operand("eigh", x)
    if symmetrize_input:
        _square("eigh", x)
        x = symmetrize(x)
    v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues))
    sub = _subset("eigh", subset_by_index, _aval(w).shape[-1])
    if sub is not None:
        nd = _aval(v).ndim
        v = slice_in_dim(v, sub[0], sub[1], axis=nd - 1)
        w = slice_in_dim(w, sub[0], sub[1], axis=nd - 2)
    return v, w


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None,
        algorithm=None):
    """Singular value decomposition: ``(u, s, vh)`` with ``x = u @ diag(s) @ vh``, or just
    the singular values ``s`` (descending) if not ``compute_uv``. ``subset_by_index=(start,
    end)`` keeps the singular triplets ``start:end`` (needs ``full_matrices=False``);
    ``algorithm`` (an ``SvdAlgorithm``) is accepted and unused."""
    del algorithm
    x = matrix_operand("svd", x)
    sub = _subset("svd", subset_by_index, min(_aval(x).shape[-2:]) if _aval(x).ndim >= 2 else 0)
    if sub is not None and full_matrices:
        raise ValueError("full_matrices and subset_by_index cannot both be set: pass "
                         "full_matrices=False")
    out = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    if sub is not None:
        out = _svd_subset(out, sub)
    if compute_uv:
        s, u, vh = out
        return u, s, vh
    return out[0]


def _svd_subset(out, sub):
    nd = _aval(out[0]).ndim
    res = [slice_in_dim(out[0], sub[0], sub[1], axis=nd - 1)]
    if len(out) == 3:
        res.append(slice_in_dim(out[1], sub[0], sub[1], axis=nd))
        res.append(slice_in_dim(out[2], sub[0], sub[1], axis=nd - 1))
    return res


def _square(name, x):
    shape = _aval(x).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"The input to {name} must be a square matrix (shape [..., n, n]), "
                         f"got shape {shape}")


# --- matrix helpers shared with the derivative rules and functrax.numpy.linalg ---


def full_like_matrix(x, value, shape=None):
    aval = _aval(x)
    return full(aval.shape if shape is None else shape, value, aval.dtype)


def transpose_last(x):
    """Swap the last two axes."""
    nd = _aval(x).ndim
    return transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def adjoint(x):
    """Conjugate transpose of the last two axes."""
    x = transpose_last(x)
    return conj(x) if _aval(x).dtype.kind == "c" else x


def conj_if_complex(x):
    return conj(x) if _aval(x).dtype.kind == "c" else x


def batched_matmul(x, y):
    """Batched matrix product over equal leading batch dimensions."""
    nd = _aval(x).ndim
    batch = tuple(range(nd - 2))
    return dot_general(x, y, (((nd - 1,), (nd - 2,)), (batch, batch)))


def const_matrix(x, mat, shape=None):
    """The constant ``mat`` (``[m, n]``) broadcast to ``shape`` (default: ``x``'s)."""
    shape = _aval(x).shape if shape is None else shape
    nd = len(shape)
    return broadcast_in_dim(np.asarray(mat), shape, (nd - 2, nd - 1))


def _tri(x, k, lower):
    """The lower (``lower``) or upper triangle of ``x`` from diagonal ``k`` on; zeros
    elsewhere."""
    m, n = _aval(x).shape[-2:]
    mask = np.tri(m, n, k, dtype=bool) if lower else ~np.tri(m, n, k - 1, dtype=bool)
    return select(const_matrix(x, mask), x, full_like_matrix(x, 0))


def tril(x, k=0):
    return _tri(x, k, True)


def triu(x, k=0):
    return _tri(x, k, False)


def eye_like(x, shape=None):
    """Identity matrices of ``x``'s dtype, broadcast to ``shape`` (default: ``x``'s)."""
    shape = _aval(x).shape if shape is None else shape
    return const_matrix(x, np.eye(shape[-2], shape[-1], dtype=_aval(x).dtype), shape)


def diagonal(x):
    """The main diagonal of the last two (square) axes."""
    nd = _aval(x).ndim
    return reduce_sum(select(const_matrix(x, np.eye(*_aval(x).shape[-2:],
                                                             dtype=bool)),
                                     x, full_like_matrix(x, 0)), (nd - 1,))


def as_rows(v, n_rows):
    """``v[..., None, :]`` broadcast to ``[..., n_rows, k]``."""
    shape = _aval(v).shape
    nd = len(shape)
    return broadcast_in_dim(v, shape[:-1] + (n_rows, shape[-1]),
                                tuple(range(nd - 1)) + (nd,))


def as_cols(v, n_cols):
    """``v[..., :, None]`` broadcast to ``[..., k, n_cols]``."""
    shape = _aval(v).shape
    return broadcast_in_dim(v, shape + (n_cols,), tuple(range(len(shape))))


def permutation_matrix(perm, dtype):
    """``P`` with ``P @ x == x[..., perm, :]`` (one-hot rows; ``perm`` int ``[..., m]``)."""
    shape = _aval(perm).shape
    m = shape[-1]
    full = shape + (m,)
    nd = len(full)
    rows = broadcast_in_dim(perm, full, tuple(range(nd - 1)))
    return convert_element_type(
        eq(rows, broadcasted_iota(_aval(perm).dtype, full, nd - 1)), dtype)

__all__ = [
    "cholesky_p", "triangular_solve_p", "lu_p", "qr_p", "eigh_p", "svd_p", "geqp3_p", "geqp3",
    "EighImplementation", "SvdAlgorithm", "real_dtype",
    "check_matrix", "matrix_operand", "symmetrize", "cholesky", "triangular_solve", "lu",
    "lu_pivots_to_permutation", "qr", "eigh", "svd", "full_like_matrix", "transpose_last",
    "adjoint", "conj_if_complex", "batched_matmul", "const_matrix", "tril", "triu", "eye_like",
    "diagonal", "as_rows", "as_cols", "permutation_matrix",
]
