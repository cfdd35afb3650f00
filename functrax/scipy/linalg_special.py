"""Special matrices of ``functrax.scipy.linalg``, as ``jax.scipy.linalg``'s.

Matrices built from arrays (``toeplitz``, ``hankel``, ``circulant``, ``companion``,
``fiedler``, ``fiedler_companion``, ``leslie``, ``convolution_matrix``) batch over leading
axes and are differentiable (gathers and selects of their inputs); ``block_diag`` takes
arrays of at most 2 dimensions. Matrices of a static order ``n`` (``hilbert``,
``invhilbert``, ``pascal``, ``invpascal``, ``hadamard``, ``helmert``, ``dft``) are constants
computed once in float64 / exact integers and cast: JAX's floating-point binomials are
approximations of the same values.

>>> import functrax.numpy as fnp
>>> toeplitz(fnp.array([1.0, 2.0, 3.0]))
Array([[1., 2., 3.],
       [2., 1., 2.],
       [3., 2., 1.]], dtype=float32)
"""
from __future__ import annotations

import math

import numpy as np

import functrax.numpy as fnp
from functrax import core, dtypes, lax
from functrax.numpy.promotion import (
    asarray_operand, broadcast_shapes_named, broadcast_to_shape, promote_dtypes,
    promote_dtypes_inexact,
)

__all__ = ["block_diag", "circulant", "companion", "convolution_matrix", "dft", "fiedler",
           "fiedler_companion", "hadamard", "hankel", "helmert", "hilbert", "invhilbert",
           "invpascal", "leslie", "pascal", "toeplitz"]


def _shape(x):
    return core.get_aval(x).shape


def _dtype(x):
    return core.get_aval(x).dtype


def _vector(x):
    """``x`` as an array of rank >= 1 (a scalar becomes ``[x]``)."""
    x = asarray_operand(x)
    return lax.expand_dims(x, (0,)) if not _shape(x) else x


def _gather_last(x, idx):
    """``x[..., idx]`` for a static integer index matrix ``idx`` (one gather)."""
    return fnp.take(x, np.asarray(idx, np.int32), axis=-1)


def _order(name, n, argname="n"):
    try:
        n = int(n)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: {argname} must be a static integer, got {n!r}") from None
    if n < 0:
        raise ValueError(f"{name}: {argname} must be non-negative, got {n}")
    return n


def _const(value, dtype):
    return fnp.asarray(np.asarray(value).astype(dtype))


# --- built from arrays ---


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column ``c`` and first row ``r`` (``r[..., 0]`` is
    ignored; by default ``r = conj(c)``, a Hermitian matrix). Leading axes of ``c`` and ``r``
    broadcast.

    Args:
      c: ``[..., m]``, the first column.
      r: ``[..., n]``, the first row.

    Returns:
      ``[..., m, n]``.
    """
    c = _vector(c)
    r = fnp.conj(c) if r is None else _vector(r)
    c, r = promote_dtypes(c, r)
    m, n = _shape(c)[-1], _shape(r)[-1]
    batch = broadcast_shapes_named("toeplitz", _shape(c)[:-1], _shape(r)[:-1])
    c = broadcast_to_shape(c, batch + (m,))
    r = broadcast_to_shape(r, batch + (n,))
    # vals = [c[::-1], r[1:]]; entry (i, j) is vals[m - 1 - i + j]
    vals = fnp.concatenate([fnp.flip(c, axis=-1), r[..., 1:]], axis=-1)
    idx = (m - 1) - np.arange(m)[:, None] + np.arange(n)[None, :]
    return _gather_last(vals, idx)


def hankel(c, r=None):
    """The Hankel matrix with first column ``c`` and last row ``r`` (``r[..., 0]`` is
    ignored; zeros by default): entry ``(i, j)`` is ``c[i + j]`` or ``r[i + j - m + 1]``."""
    c = _vector(c)
    r = fnp.zeros_like(c) if r is None else _vector(r)
    c, r = promote_dtypes(c, r)
    m, n = _shape(c)[-1], _shape(r)[-1]
    batch = broadcast_shapes_named("hankel", _shape(c)[:-1], _shape(r)[:-1])
    vals = fnp.concatenate([broadcast_to_shape(c, batch + (m,)),
                            broadcast_to_shape(r, batch + (n,))[..., 1:]], axis=-1)
    return _gather_last(vals, np.arange(m)[:, None] + np.arange(n)[None, :])


def circulant(c):
    """The circulant matrix whose first column is ``c`` ``[..., n]``: entry ``(i, j)`` is
    ``c[(i - j) mod n]``."""
    c = _vector(c)
    n = _shape(c)[-1]
    return _gather_last(c, (np.arange(n)[:, None] - np.arange(n)[None, :]) % max(n, 1))


def _leading_ones_subdiagonal(x, rows):
    """Ones on the first subdiagonal of ``[..., rows, rows]`` (``x``'s dtype)."""
    return lax.broadcast_in_dim(np.eye(rows, k=-1, dtype=_dtype(x)),
                                _shape(x)[:-1] + (rows, rows),
                                (len(_shape(x)) - 1, len(_shape(x))))


def companion(a):
    """The companion matrix ``[..., n - 1, n - 1]`` of the polynomial coefficients ``a``
    ``[..., n]`` (highest degree first, ``n >= 2``): first row ``-a[1:] / a[0]``, ones on the
    first subdiagonal. Its eigenvalues are the polynomial's roots.

    >>> import functrax.numpy as fnp
    >>> companion(fnp.array([1.0, -10.0, 31.0, -30.0]))
    Array([[ 10., -31.,  30.],
           [  1.,   0.,   0.],
           [  0.,   1.,   0.]], dtype=float32)
    """
    a = asarray_operand(a)
    a, = promote_dtypes_inexact(a)
    if not _shape(a) or _shape(a)[-1] < 2:
        raise ValueError(f"companion: the length of a must be at least 2 along the last axis, "
                         f"got shape {_shape(a)}")
    n = _shape(a)[-1] - 1
    first = -a[..., 1:] / a[..., :1]
    row0 = np.zeros((n, n), bool)
    row0[0] = True
    rows = lax.broadcast_in_dim(first, _shape(a)[:-1] + (n, n),
                                tuple(range(len(_shape(a)) - 1)) + (len(_shape(a)),))
    return fnp.where(row0, rows, _leading_ones_subdiagonal(first, n))


def fiedler(a):
    """The symmetric Fiedler matrix ``|a[i] - a[j]|`` ``[..., n, n]`` of ``a`` ``[..., n]``."""
    a = _vector(a)
    return fnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
    """The pentadiagonal Fiedler companion matrix ``[..., n - 1, n - 1]`` of the polynomial
    coefficients ``a`` ``[..., n]`` (highest degree first): its eigenvalues are the roots.
    An ``n = 1`` polynomial gives a ``0 x 0`` matrix."""
    a = asarray_operand(a)
    a, = promote_dtypes_inexact(a)
    if not _shape(a) or _shape(a)[-1] == 0:
        raise ValueError(f"fiedler_companion: the last axis of a must have a nonzero length, "
                         f"got shape {_shape(a)}")
    n = _shape(a)[-1] - 1
    batch = _shape(a)[:-1]
    if n == 0:
        return fnp.zeros(batch + (0, 0), _dtype(a))
    c = a[..., 1:] / a[..., :1]
    idx, sign = _fiedler_layout(n)
    vals = fnp.concatenate([fnp.zeros(batch + (1,), _dtype(a)),
                            fnp.ones(batch + (1,), _dtype(a)), c], axis=-1)
    return _gather_last(vals, idx) * fnp.asarray(sign.astype(_dtype(a)))


def _fiedler_layout(n):
    """Index matrix into ``[0, 1, c_1, ..., c_n]`` and the signs of the Fiedler companion:
    row 0 is ``(-c_1, -c_2, 1)``; an odd row ``i`` has a 1 at ``max(i - 2, 0)``; an even row ``i``
    has ``-c_{i+1}`` at ``i - 1``, ``-c_{i+2}`` at ``i + 1`` and a 1 at ``i + 2``."""
    idx = np.zeros((n, n), np.int32)
    sign = np.ones((n, n))

    def put(i, j, k, neg):
        if 0 <= j < n:
            idx[i, j], sign[i, j] = k, (-1.0 if neg else 1.0)
    put(0, 0, 2, True)
    put(0, 1, 3, True)
    put(0, 2, 1, False)
    for i in range(1, n):
        if i % 2:
            put(i, max(i - 2, 0), 1, False)
        else:
            put(i, i - 1, i + 2, True)
            put(i, i + 1, i + 3, True)
            put(i, i + 2, 1, False)
    return idx, sign


def leslie(f, s):
    """The Leslie matrix ``[..., n, n]``: fecundities ``f`` ``[..., n]`` in the first row,
    survival rates ``s`` ``[..., n - 1]`` on the first subdiagonal."""
    f, s = asarray_operand(f), asarray_operand(s)
    if not _shape(f) or _shape(f)[-1] < 1 or not _shape(s) or \
            _shape(s)[-1] != _shape(f)[-1] - 1:
        raise ValueError(f"leslie: f must have shape [..., n] (n >= 1) and s [..., n - 1], got "
                         f"{_shape(f)} and {_shape(s)}")
    f, s = promote_dtypes(f, s)
    n = _shape(f)[-1]
    batch = broadcast_shapes_named("leslie", _shape(f)[:-1], _shape(s)[:-1])
    f = broadcast_to_shape(f, batch + (n,))
    s = broadcast_to_shape(s, batch + (n - 1,))
    vals = fnp.concatenate([fnp.zeros(batch + (1,), _dtype(f)), f, s], axis=-1)
    idx = np.zeros((n, n), np.int32)
    idx[0] = 1 + np.arange(n)
    idx[np.arange(1, n), np.arange(n - 1)] = 1 + n + np.arange(n - 1)
    return _gather_last(vals, idx)


def convolution_matrix(a, n, mode="full"):
    """The Toeplitz matrix ``A`` ``[..., k, n]`` with ``A @ v == convolve(a, v, mode)`` for
    ``a`` ``[..., m]``: ``k`` is ``m + n - 1`` ('full'), ``max(m, n)`` ('same') or
    ``max(m, n) - min(m, n) + 1`` ('valid')."""
    n = _order("convolution_matrix", n)
    if n == 0:
        raise ValueError("convolution_matrix: n must be a positive integer, got 0")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"convolution_matrix: mode must be 'full', 'same' or 'valid', got "
                         f"{mode!r}")
    a = _vector(a)
    m = _shape(a)[-1]
    if m == 0:
        raise ValueError("convolution_matrix: a must have a nonzero length along its last axis")
    full_rows = m + n - 1
    if mode == "full":
        start, k = 0, full_rows
    elif mode == "same":
        k = max(m, n)
        start = (full_rows - k) // 2
    else:
        k = max(m, n) - min(m, n) + 1
        start = min(m, n) - 1
    rows = start + np.arange(k)[:, None]
    diff = rows - np.arange(n)[None, :]  # a[i - j] where 0 <= i - j < m
    inside = (diff >= 0) & (diff < m)
    vals = fnp.concatenate([fnp.zeros(_shape(a)[:-1] + (1,), _dtype(a)), a], axis=-1)
    return _gather_last(vals, np.where(inside, diff + 1, 0))


def block_diag(*arrs):
    """The block-diagonal matrix of arrays of at most 2 dimensions (scalars and vectors are
    1-row blocks); no argument gives a ``1 x 0`` matrix."""
    if not arrs:
        arrs = (fnp.zeros((1, 0)),)
    arrs = [asarray_operand(a) for a in arrs]
    bad = [i for i, a in enumerate(arrs) if len(_shape(a)) > 2]
    if bad:
        raise ValueError("Arguments to functrax.scipy.linalg.block_diag must have at most 2 "
                         f"dimensions, got shape {_shape(arrs[bad[0]])} at argument {bad[0]}.")
    arrs = promote_dtypes(*[fnp.atleast_2d(a) for a in arrs])
    cols = sum(_shape(a)[1] for a in arrs)
    rows, left = [], 0
    for a in arrs:
        r, c = _shape(a)
        rows.append(fnp.pad(a, ((0, 0), (left, cols - left - c))))
        left += c
    return fnp.concatenate(rows, axis=0)


# --- constant matrices of order n ---


def hilbert(n):
    """The Hilbert matrix ``1 / (i + j + 1)`` of order ``n``."""
    n = _order("hilbert", n)
    i = np.arange(n, dtype=np.float64)
    return _const(1.0 / (i[:, None] + i[None, :] + 1.0), dtypes.default_float_dtype())


def _binom_table(n):
    """Exact binomial coefficients ``C(i, j)`` for ``0 <= i, j < 2 n`` (Python ints)."""
    return [[math.comb(i, j) for j in range(2 * n + 1)] for i in range(2 * n + 1)]


def invhilbert(n):
    """The inverse of the Hilbert matrix of order ``n`` (its integer entries in floating
    point: they overflow float32 beyond ``n = 11`` or so)."""
    n = _order("invhilbert", n)
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            v = ((-1) ** (i + j) * (i + j + 1) * math.comb(n + i, n - j - 1)
                 * math.comb(n + j, n - i - 1) * math.comb(i + j, i) ** 2)
            out[i, j] = float(v)
    return _const(out, dtypes.default_float_dtype())


def _pascal_kind(name, kind):
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"{name}: kind must be 'symmetric', 'lower' or 'upper', got {kind!r}")
    return kind


def pascal(n, kind=None):
    """The Pascal matrix of order ``n``: binomial coefficients ``C(i + j, i)`` ('symmetric',
    the default), ``C(i, j)`` ('lower') or its transpose ('upper')."""
    n, kind = _order("pascal", n), _pascal_kind("pascal", kind)
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    comb = np.vectorize(math.comb, otypes=[float])
    if kind == "symmetric":
        out = comb(i + j, i) if n else np.zeros((0, 0))
    else:
        out = comb(i, j) if n else np.zeros((0, 0))
        out = out.T if kind == "upper" else out
    return _const(out, dtypes.default_float_dtype())


def invpascal(n, kind=None):
    """The inverse of the Pascal matrix of order ``n``: ``(-1)^(i-j) C(i, j)`` ('lower'),
    its transpose ('upper'), ``upper^-1 lower^-1`` ('symmetric', the default)."""
    n, kind = _order("invpascal", n), _pascal_kind("invpascal", kind)
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    comb = np.vectorize(math.comb, otypes=[object])
    low = (comb(i, j) * np.where((i - j) % 2 == 0, 1, -1)).astype(object) if n else \
        np.zeros((0, 0), object)
    if kind == "lower":
        out = low
    elif kind == "upper":
        out = low.T
    else:
        out = low.T.dot(low) if n else low
    return _const(np.asarray(out, float), dtypes.default_float_dtype())


def hadamard(n, dtype=int):
    """The Hadamard matrix of order ``n`` (a power of 2) by Sylvester's construction."""
    n = _order("hadamard", n)
    if n < 1 or n & (n - 1):
        raise ValueError(f"hadamard: n must be a positive power of 2, got {n}")
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return _const(h, dtypes.canonicalize_dtype(np.dtype(dtype)))


def helmert(n, full=False):
    """The Helmert matrix of order ``n``: rows ``k = 1 .. n - 1`` are
    ``(1, ..., 1, -k, 0, ..., 0) / sqrt(k (k + 1))``, the first row ``1 / sqrt(n)`` if
    ``full``; shape ``(n, n)`` or ``(n - 1, n)``."""
    n = _order("helmert", n)
    h = np.tril(np.ones((n, n)), -1) - np.diag(np.arange(n))
    d = np.arange(n) * np.arange(1, n + 1)
    h[0] = 1
    d[0] = n
    out = h / np.sqrt(d)[:, None]
    return _const(out if full else out[1:], dtypes.default_float_dtype())


def dft(n, scale=None, *, dtype=None):
    """The ``n x n`` discrete Fourier transform matrix ``exp(-2 pi i j k / n)``, divided by
    ``sqrt(n)`` (``scale='sqrtn'``) or ``n`` (``scale='n'``).

    Args:
      n: the order.
      scale: None, 'sqrtn' or 'n'.
      dtype: a complex dtype (default: the default complex dtype).
    """
    n = _order("dft", n)
    if scale not in (None, "sqrtn", "n"):
        raise ValueError(f"dft: scale must be None, 'sqrtn' or 'n', got {scale!r}")
    dt = dtypes.default_complex_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    if np.dtype(dt).kind != "c":
        raise ValueError(f"dft: dtype must be a complex dtype, got {np.dtype(dt).name}")
    k = np.arange(n)
    m = np.exp(-2j * np.pi * (np.outer(k, k) % max(n, 1)) / max(n, 1))
    if scale == "sqrtn":
        m = m / math.sqrt(n)
    elif scale == "n":
        m = m / n
    return _const(m, dt)
