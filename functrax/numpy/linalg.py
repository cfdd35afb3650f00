"""``functrax.numpy.linalg``: decompositions, solves, norms and the array-API aliases.

Decompositions (cholesky, eigh, svd, qr) bind the ``functrax.lax.linalg`` primitives;
solve, inv, det and slogdet go through LU with partial pivoting; pinv, matrix_rank, lstsq
and the 2/-2/nuclear matrix norms through the SVD (see ``linalg_decompositions.py``).

>>> import functrax.numpy as fnp
>>> fnp.linalg.norm(fnp.array([3.0, 4.0]))
Array(5., dtype=float32)
"""
from __future__ import annotations

import operator

import numpy as np

from functrax import core, lax
from functrax.numpy import linalg_ops, reductions, ufuncs
from functrax.numpy.promotion import (
    asarray_operand, canonicalize_axes, canonicalize_axis, check_arraylike,
    promote_dtypes_inexact,
)
from functrax.numpy.linalg_ops import matrix_transpose, tensordot as _tensordot  # noqa: F401
from functrax.numpy.linalg_ops import vecdot  # noqa: F401
from functrax.numpy.linalg_general import (  # noqa: F401
    cond, eig, eigvals, tensorinv, tensorsolve,
)
from functrax.numpy.linalg_decompositions import (  # noqa: F401
    EighResult, QRResult, SlogdetResult, SVDResult, cholesky, det, eigh, eigvalsh, inv, lstsq,
    matrix_rank, pinv, qr, slogdet, solve, svd, svdvals,
)

__all__ = ["norm", "vector_norm", "matrix_norm", "matmul", "outer", "trace", "diagonal",
           "vecdot", "tensordot", "cross", "matrix_transpose", "multi_dot", "matrix_power",
           "cholesky", "det", "eigh", "eigvalsh", "inv", "lstsq", "matrix_rank", "pinv", "qr",
           "slogdet", "solve", "svd", "svdvals", "EighResult", "QRResult", "SlogdetResult",
           "SVDResult", "cond", "eig", "eigvals", "tensorinv", "tensorsolve"]


def _inexact(fun_name, x):
    check_arraylike(fun_name, x)
    x, = promote_dtypes_inexact(asarray_operand(x))
    return asarray_operand(x)


def _abs2_sum(x, axis, keepdims):
    return ufuncs.sqrt(reductions.sum(ufuncs.real(ufuncs.multiply(x, ufuncs.conjugate(x))),
                                      axis=axis, keepdims=keepdims))


def _vector_norm(x, ord, axis, keepdims):
    if isinstance(ord, str):
        hint = {"inf": " Use numpy.inf instead.", "-inf": " Use -numpy.inf instead."}.get(ord, "")
        raise ValueError(f"Invalid order '{ord}' for vector norm.{hint}")
    if ord is None or ord == 2:
        return _abs2_sum(x, axis, keepdims)
    if ord == np.inf:
        return reductions.max(ufuncs.abs(x), axis=axis, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return reductions.min(ufuncs.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        dt = core.get_aval(ufuncs.real(x)).dtype
        return reductions.sum(ufuncs.not_equal(x, 0), axis=axis, keepdims=keepdims, dtype=dt)
    if ord == 1:
        return reductions.sum(ufuncs.abs(x), axis=axis, keepdims=keepdims)
    try:
        p = float(ord)
    except (TypeError, ValueError):
        raise ValueError(f"Invalid order {ord!r} for vector norm: use None, 0, a number, "
                         "numpy.inf or -numpy.inf") from None
    abs_x = ufuncs.abs(x)
    dt = core.get_aval(abs_x).dtype
    total = reductions.sum(lax.pow(abs_x, np.asarray(p, dt)[()]), axis=axis, keepdims=keepdims)
    return lax.pow(total, np.asarray(1.0 / p, dt)[()])


def _matrix_norm(x, ord, axis, keepdims):
    row, col = axis
    if ord is None or ord in ("f", "fro"):
        return _abs2_sum(x, axis, keepdims)
    if isinstance(ord, str) and ord != "nuc":
        raise ValueError(f"Invalid order '{ord}' for matrix norm.")
    if ord in (1, -1):  # max/min over columns of the column sums
        if not keepdims and col > row:
            col -= 1
        sums = reductions.sum(ufuncs.abs(x), axis=row, keepdims=keepdims)
        return (reductions.max(sums, axis=col, keepdims=keepdims, initial=0) if ord == 1 else
                reductions.min(sums, axis=col, keepdims=keepdims))
    if ord in (np.inf, -np.inf):  # max/min over rows of the row sums
        if not keepdims and row > col:
            row -= 1
        sums = reductions.sum(ufuncs.abs(x), axis=col, keepdims=keepdims)
        return (reductions.max(sums, axis=row, keepdims=keepdims, initial=0) if ord > 0 else
                reductions.min(sums, axis=row, keepdims=keepdims))
    if ord in ("nuc", 2, -2):
        return _svd_norm(x, ord, row, col, keepdims)
    raise ValueError(f"Invalid order '{ord}' for matrix norm.")


def _svd_norm(x, ord, row, col, keepdims):
    """The 2 (largest singular value), -2 (smallest) or nuclear (sum) matrix norm."""
    nd = core.get_aval(x).ndim
    rest = [d for d in range(nd) if d not in (row, col)]
    s = svdvals(lax.transpose(x, tuple(rest) + (row, col)))
    if ord == 2:
        out = reductions.max(s, axis=-1)
    elif ord == -2:
        out = reductions.min(s, axis=-1)
    else:
        out = reductions.sum(s, axis=-1)
    if keepdims:
        out = lax.expand_dims(out, tuple(sorted((row, col))))
    return out


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector or matrix norm, as ``numpy.linalg.norm``.

    With ``axis=None`` and ``ord=None`` the 2-norm of the flattened array; otherwise one axis
    gives a vector norm (ord None/2, 1, inf, -inf, 0 or any p) and two axes a matrix norm
    (ord None/'fro', 1, -1, inf, -inf, and through the SVD 2, -2 and 'nuc').

    >>> import functrax.numpy as fnp
    >>> fnp.linalg.norm(fnp.ones((2, 2)), ord=1)
    Array(2., dtype=float32)
    """
    x = _inexact("norm", x)
    nd = core.get_aval(x).ndim
    if axis is None:
        if ord is None:
            return _abs2_sum(x, None, keepdims)
        axis = tuple(range(nd))
    elif isinstance(axis, (tuple, list)):
        axis = canonicalize_axes(tuple(axis), nd, "norm")
    else:
        axis = (canonicalize_axis(_index(axis, "axis"), nd, "norm"),)
    if len(axis) == 1:
        return _vector_norm(x, 2 if ord is None else ord, axis, keepdims)
    if len(axis) == 2:
        return _matrix_norm(x, ord, axis, keepdims)
    raise ValueError(f"Invalid axis values ({axis}) for norm of an array of shape "
                     f"{core.get_aval(x).shape}: give one axis (vector norm) or two (matrix "
                     "norm), or ord=None for the flattened 2-norm")


def _index(v, name):
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"norm: '{name}' must be an int or a tuple of ints, got {v!r}") from None


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """Vector norm over ``axis`` (None: all elements, flattened), as the array API's.

    >>> import functrax.numpy as fnp
    >>> fnp.linalg.vector_norm(fnp.array([[3.0], [4.0]]))
    Array(5., dtype=float32)
    """
    x = _inexact("vector_norm", x)
    nd = core.get_aval(x).ndim
    axes = canonicalize_axes(axis, nd, "vector_norm")
    return _vector_norm(x, ord, axes, keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """Matrix norm over the last two axes (ord 'fro', 'nuc', 1, -1, 2, -2, inf, -inf)."""
    x = _inexact("matrix_norm", x)
    if core.get_aval(x).ndim < 2:
        raise ValueError(f"matrix_norm requires an array of at least two dimensions, got shape "
                         f"{core.get_aval(x).shape}")
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
    """``functrax.numpy.matmul`` (array-API spelling)."""
    return linalg_ops.matmul(x1, x2, precision=precision,
                             preferred_element_type=preferred_element_type)


def outer(x1, x2, /):
    """Outer product of two 1-d arrays."""
    check_arraylike("outer", x1, x2)
    s1, s2 = core.get_aval(x1).shape, core.get_aval(x2).shape
    if len(s1) != 1 or len(s2) != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are x1.ndim="
                         f"{len(s1)} and x2.ndim={len(s2)} (use functrax.numpy.outer to "
                         "flatten)")
    return linalg_ops.outer(x1, x2)


def trace(x, /, *, offset=0, dtype=None):
    """Sum of the ``offset`` diagonal of the last two axes."""
    return linalg_ops.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def diagonal(x, /, *, offset=0):
    """The ``offset`` diagonal of the last two axes."""
    return linalg_ops.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None):
    """``functrax.numpy.tensordot`` (array-API spelling)."""
    return _tensordot(x1, x2, axes, precision=precision,
                      preferred_element_type=preferred_element_type)


def cross(x1, x2, /, *, axis=-1):
    """Cross product of 3-vectors along ``axis`` (other axes broadcast)."""
    check_arraylike("cross", x1, x2)
    s1, s2 = core.get_aval(x1).shape, core.get_aval(x2).shape
    if not s1 or not s2 or s1[axis] != 3 or s2[axis] != 3:
        raise ValueError(f"Both input arrays must be (arrays of) 3-dimensional vectors, but they "
                         f"have shapes {s1} and {s2} with axis={axis}")
    return linalg_ops.cross(x1, x2, axis=axis)


def multi_dot(arrays, *, precision=None):
    """``dot`` of a sequence of arrays (the first and last may be 1-d), left to right."""
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError(f"multi_dot: expecting at least 2 arrays, got {len(arrays)}")
    out = arrays[0]
    for a in arrays[1:]:
        out = linalg_ops.dot(out, a, precision=precision)
    return out


def matrix_power(a, n):
    """``a`` (square in its last two axes) to the static integer power ``n`` (negative
    powers invert ``a`` first)."""
    check_arraylike("matrix_power", a)
    a = asarray_operand(a)
    shape = core.get_aval(a).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise TypeError(f"matrix_power: a must be a (stack of) square matrices, got shape {shape}")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"matrix_power: exponent n must be an integer, got {n!r}") from None
    if n == 0:
        eye = lax.convert_element_type(ufuncs.equal(
            lax.broadcasted_iota(np.int32, shape, len(shape) - 2),
            lax.broadcasted_iota(np.int32, shape, len(shape) - 1)), core.get_aval(a).dtype)
        return eye
    if n < 0:
        a, n = inv(a), -n
    result, base = None, a
    while n:
        if n & 1:
            result = base if result is None else linalg_ops.matmul(result, base)
        n >>= 1
        if n:
            base = linalg_ops.matmul(base, base)
    return result
