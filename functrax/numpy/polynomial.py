"""Polynomials of ``functrax.numpy`` (coefficients highest power first, as numpy's and JAX's).

poly, polyadd, polysub, polymul, polydiv, polyder, polyint, polyval, polyfit, vander and
roots. As JAX: results are inexact except for polyadd/polysub/vander (which keep integer
dtypes), leading zeros are kept unless asked (``trim_leading_zeros=True``), and everything
is differentiable and traceable (``roots`` needs a concrete ``p`` unless
``strip_zeros=False``).

>>> import functrax.numpy as fnp
>>> fnp.polyval(fnp.array([1.0, 0.0, -2.0]), 3.0)
Array(7., dtype=float32)
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from functrax import core, dtypes, lax
from functrax.numpy import reductions, selection, shape_ops, ufuncs
from functrax.numpy.creation import asarray, zeros
from functrax.numpy.indexing import concrete_or_error
from functrax.numpy.promotion import (
    check_arraylike, promote_dtypes, promote_dtypes_inexact,
)

__all__ = ["poly", "polyadd", "polysub", "polymul", "polydiv", "polyder", "polyint",
           "polyval", "polyfit", "vander", "roots"]


def _aval(x):
    return core.get_aval(x)


def _static_int(x, fun_name, argname):
    v = concrete_or_error(x, f"The error arose for the '{argname}' argument of "
                             f"functrax.numpy.{fun_name}(), which must be static. ")
    try:
        return operator.index(v.item() if isinstance(v, np.ndarray) else v)
    except TypeError:
        raise TypeError(f"{fun_name}: {argname} must be an integer, got {x!r}") from None


def _coeffs(fun_name, *ps, inexact=True):
    """The coefficient arrays, promoted together, each checked to be 1-D."""
    check_arraylike(fun_name, *ps)
    ps = (promote_dtypes_inexact if inexact else promote_dtypes)(
        *[asarray(p) for p in ps])
    for i, p in enumerate(ps):
        if _aval(p).ndim != 1:
            raise ValueError(f"{fun_name}: polynomial coefficients must be 1-D arrays, got "
                             f"shape {_aval(p).shape} for argument {i}. Pass the "
                             "coefficients highest power first, e.g. fnp.array([1., 0., -2.]).")
    return ps


# --- evaluation and arithmetic ---


def polyval(p, x, *, unroll=16):
    """Evaluate the polynomial with coefficients ``p`` at ``x`` (Horner's rule, a scan).

    Args:
      p: coefficients, highest power first, shape ``(n,)`` (or ``(n, ...)``: each trailing
        position is its own polynomial, broadcast against ``x``).
      x: points.
      unroll: the scan's unroll factor.

    Returns:
      ``p[0] * x**(n-1) + ... + p[n-1]``, inexact (integer inputs give floats, as JAX).

    >>> import functrax.numpy as fnp
    >>> fnp.polyval(fnp.array([3, 0, 1]), fnp.array([1, 2]))
    Array([ 4., 13.], dtype=float32)
    """
    from functrax.control_flow.scan import scan
    check_arraylike("polyval", p, x)
    p, x = promote_dtypes_inexact(asarray(p), asarray(x))
    if _aval(p).ndim == 0:
        raise ValueError("polyval: p must be at least 1-D (the coefficients), got a scalar")
    shape = np.broadcast_shapes(_aval(p).shape[1:], _aval(x).shape)
    y = lax.full(shape, 0, _aval(x).dtype)
    y, _ = scan(lambda y, c: (ufuncs.add(ufuncs.multiply(y, x), c), None), y, p,
                unroll=unroll)
    return y


def polyadd(a1, a2):
    """The sum of two polynomials (the shorter one aligned to the end); keeps int dtypes.

    >>> import functrax.numpy as fnp
    >>> fnp.polyadd(fnp.array([1, 2]), fnp.array([1, 1, 1]))
    Array([1, 2, 3], dtype=int32)
    """
    a1, a2 = _coeffs("polyadd", a1, a2, inexact=False)
    n1, n2 = _aval(a1).shape[0], _aval(a2).shape[0]
    if n1 < n2:
        a1, a2, n1, n2 = a2, a1, n2, n1
    if n2 == 0:
        return a1
    return ufuncs.add(a1, lax.pad(a2, np.zeros((), _aval(a2).dtype)[()], [(n1 - n2, 0, 0)]))


def polysub(a1, a2):
    """The difference ``a1 - a2`` of two polynomials; keeps int dtypes.

    >>> import functrax.numpy as fnp
    >>> fnp.polysub(fnp.array([2, 3]), fnp.array([1, 1, 1]))
    Array([-1,  1,  2], dtype=int32)
    """
    a1, a2 = _coeffs("polysub", a1, a2, inexact=False)
    return polyadd(a1, ufuncs.negative(a2))


def polymul(a1, a2, *, trim_leading_zeros=False):
    """The product of two polynomials (their coefficients' full convolution).

    ``trim_leading_zeros=True`` strips leading zeros first (as numpy does; needs concrete
    inputs).

    >>> import functrax.numpy as fnp
    >>> fnp.polymul(fnp.array([1, 1]), fnp.array([1, -1]))
    Array([ 1.,  0., -1.], dtype=float32)
    """
    from functrax.numpy.array_edit import trim_zeros
    from functrax.numpy.convolution import convolve
    a1, a2 = _coeffs("polymul", a1, a2)
    if trim_leading_zeros and (_aval(a1).shape[0] > 1 or _aval(a2).shape[0] > 1):
        a1, a2 = trim_zeros(a1, trim="f"), trim_zeros(a2, trim="f")
    if _aval(a1).shape[0] == 0:
        a1 = lax.full((1,), 0, _aval(a2).dtype)
    if _aval(a2).shape[0] == 0:
        a2 = lax.full((1,), 0, _aval(a1).dtype)
    return convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros=False):
    """``(quotient, remainder)`` of the polynomial division ``u / v`` (long division).

    The remainder keeps the length of ``u`` (its leading entries are ~0) unless
    ``trim_leading_zeros=True`` (concrete inputs: trims entries below ``sqrt(eps)``).

    >>> import functrax.numpy as fnp
    >>> q, r = fnp.polydiv(fnp.array([1., -3., 2.]), fnp.array([1., -1.]))
    >>> q
    Array([ 1., -2.], dtype=float32)
    """
    u, v = _coeffs("polydiv", u, v)
    m, n = _aval(u).shape[0] - 1, _aval(v).shape[0] - 1
    if n < 0:
        raise ValueError("polydiv: the divisor v must have at least one coefficient")
    scale = ufuncs.true_divide(1.0, v[0])
    q = zeros(max(m - n + 1, 1), dtype=_aval(u).dtype)
    for k in range(m - n + 1):
        d = ufuncs.multiply(scale, u[k])
        q = q.at[k].set(d)
        u = u.at[k:k + n + 1].add(ufuncs.negative(ufuncs.multiply(d, v)))
    if trim_leading_zeros:
        u = _trim_small(u, float(np.sqrt(dtypes.finfo(_aval(u).dtype).eps)))
    return q, u


def _trim_small(u, tol):
    """``u`` without its leading entries of magnitude below ``tol`` (concrete ``u``)."""
    vals = np.abs(np.asarray(concrete_or_error(u, "The error arose in functrax.numpy.polydiv("
                                                  ") with trim_leading_zeros=True. ")))
    big = np.nonzero(vals >= tol)[0]
    start = int(big[0]) if big.size else vals.shape[0]
    return u[start:]


# --- calculus ---


def polyder(p, m=1):
    """The ``m``-th derivative of the polynomial ``p`` (inexact, as JAX).

    >>> import functrax.numpy as fnp
    >>> fnp.polyder(fnp.array([1., 1., 1., 1.]))
    Array([3., 2., 1.], dtype=float32)
    """
    m = _static_int(m, "polyder", "m")
    p, = _coeffs("polyder", p)
    if m < 0:
        raise ValueError("polyder: order of derivative must be positive, got m={m}")
    n = _aval(p).shape[0]
    if m == 0:
        return p
    if m >= n:
        return lax.full((0,), 0, _aval(p).dtype)
    k = np.arange(n - 1, m - 1, -1)  # the powers that survive
    coeff = np.prod([k - i for i in range(m)], axis=0).astype(np.float64)
    return ufuncs.multiply(p[:n - m], np.asarray(coeff, _aval(p).dtype))


def polyint(p, m=1, k=None):
    """The ``m``-th antiderivative of ``p``, with integration constants ``k`` (a scalar or
    ``m`` values, lowest-order integration first; default 0).

    >>> import functrax.numpy as fnp
    >>> fnp.polyint(fnp.array([3., 2., 1.]))
    Array([1., 1., 1., 0.], dtype=float32)
    """
    m = _static_int(m, "polyint", "m")
    k = 0 if k is None else k
    check_arraylike("polyint", p, k)
    p, k = promote_dtypes_inexact(asarray(p), asarray(k))
    if m < 0:
        raise ValueError("polyint: order of integral must be positive (see polyder), got "
                         f"m={m}")
    k = shape_ops.atleast_1d(k)
    if _aval(k).shape == (1,):
        k = lax.broadcast_in_dim(lax.reshape(k, ()), (m,), ())
    if _aval(k).shape != (m,):
        raise ValueError("polyint: k must be a scalar or a rank-1 array of length 1 or m, "
                         f"got shape {_aval(k).shape} with m={m}")
    if m == 0:
        return p
    n = _aval(p).shape[0]
    grid = np.arange(n + m)[None, :] - np.arange(m)[:, None]
    coeff = np.maximum(1, grid).prod(0)[::-1].astype(np.float64)
    return ufuncs.true_divide(shape_ops.concatenate([p, k]), np.asarray(coeff, _aval(p).dtype))


# --- construction and fitting ---


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of ``x``: columns ``x**(N-1), ..., x, 1`` (reversed with
    ``increasing=True``); keeps the dtype of ``x``.

    >>> import functrax.numpy as fnp
    >>> fnp.vander(fnp.array([1, 2, 3]), 3)
    Array([[1, 1, 1],
           [4, 2, 1],
           [9, 3, 1]], dtype=int32)
    """
    check_arraylike("vander", x)
    x = asarray(x)
    if _aval(x).ndim != 1:
        raise ValueError(f"vander: x must be a one-dimensional array, got shape "
                         f"{_aval(x).shape}")
    N = _aval(x).shape[0] if N is None else _static_int(N, "vander", "N")
    if N < 0:
        raise ValueError(f"vander: N must be nonnegative, got {N}")
    dt = _aval(x).dtype
    powers = np.arange(N) if increasing else np.arange(N - 1, -1, -1)
    if dt == np.bool_:
        dt = np.dtype(np.bool_)
    return ufuncs.power(lax.expand_dims(x, (1,)), np.asarray(powers, dt)[None, :])


def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given roots.

    A square matrix gives its characteristic polynomial (JAX goes through its eigenvalues,
    so its result is complex; here Faddeev-LeVerrier's recurrence gives the same
    coefficients, returned as complex to keep JAX's dtype).

    >>> import functrax.numpy as fnp
    >>> fnp.poly(fnp.array([1., 2.]))
    Array([ 1., -3.,  2.], dtype=float32)
    """
    check_arraylike("poly", seq_of_zeros)
    z, = promote_dtypes_inexact(asarray(seq_of_zeros))
    z = shape_ops.atleast_1d(z)
    sh = _aval(z).shape
    if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
        return _charpoly(z)
    if len(sh) != 1:
        raise ValueError(f"poly: input must be 1d or non-empty square 2d array, got shape {sh}")
    dt = _aval(z).dtype
    if sh[0] == 0:
        return lax.full((), 1, dt)  # numpy's (and JAX's) scalar 1
    a = lax.full((1,), 1, dt)
    for k in range(sh[0]):
        zero = lax.full((1,), 0, dt)
        a = ufuncs.subtract(shape_ops.concatenate([a, zero]),
                            ufuncs.multiply(z[k], shape_ops.concatenate([zero, a])))
    return a


def _charpoly(A):
    """Faddeev-LeVerrier: ``det(x I - A)``'s coefficients, complex (JAX's dtype)."""
    n = _aval(A).shape[0]
    dt = _aval(A).dtype
    eye = lax.convert_element_type(
        lax.eq(lax.broadcasted_iota(np.int32, (n, n), 0), lax.broadcasted_iota(np.int32, (n, n),
                                                                              1)), dt)
    coeffs = [lax.full((), 1, dt)]
    M = lax.full((n, n), 0, dt)
    for k in range(1, n + 1):
        M = ufuncs.add(_matmul(A, M), ufuncs.multiply(coeffs[-1], eye))
        AM = _matmul(A, M)
        coeffs.append(ufuncs.true_divide(ufuncs.negative(_trace(AM)), float(k)))
    out = shape_ops.stack(coeffs)
    return lax.convert_element_type(out, _complex(dt))


def _matmul(a, b):
    from functrax.numpy.linalg_ops import matmul
    return matmul(a, b)


def _trace(m):
    n = _aval(m).shape[0]
    mask = lax.eq(lax.broadcasted_iota(np.int32, (n, n), 0),
                  lax.broadcasted_iota(np.int32, (n, n), 1))
    return reductions.sum(selection.where(mask, m, 0))


def _complex(dt):
    return np.dtype(np.complex128 if np.dtype(dt) in (np.float64, np.complex128)
                    else np.complex64)


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """Least-squares polynomial fit of degree ``deg`` to the points ``(x, y)``.

    Args:
      x: sample points, shape ``(M,)``.
      y: values, shape ``(M,)`` or ``(M, K)`` (K fits at once).
      deg: the degree (static).
      rcond: relative cutoff for small singular values (default ``M * eps``).
      full: also return ``(residuals, rank, singular_values, rcond)``.
      w: weights applied to the residuals, shape ``(M,)``.
      cov: also return the coefficients' covariance (``"unscaled"``: not scaled by the
        residual variance).

    Returns:
      The coefficients (highest power first), plus what ``full`` / ``cov`` ask for.

    >>> import functrax.numpy as fnp
    >>> fnp.polyfit(fnp.array([0., 1., 2.]), fnp.array([1., 3., 5.]), 1).round(4)
    Array([2., 1.], dtype=float32)
    """
    from functrax.numpy import linalg
    if w is None:
        check_arraylike("polyfit", x, y)
    else:
        check_arraylike("polyfit", x, y, w)
    deg = _static_int(deg, "polyfit", "deg")
    x, y = promote_dtypes_inexact(asarray(x), asarray(y))
    order = deg + 1
    _check_fit_shapes(x, y, deg)
    if rcond is None:
        rcond = _aval(x).shape[0] * float(dtypes.finfo(_aval(x).dtype).eps)
    rcond = float(concrete_or_error(rcond, "The error arose for polyfit's rcond argument. "))
    lhs, rhs = vander(x, order), y
    if w is not None:
        w, = promote_dtypes_inexact(asarray(w))
        if _aval(w).ndim != 1 or _aval(w).shape[0] != _aval(y).shape[0]:
            raise TypeError(f"polyfit: expected a 1-d array of weights with the length of y "
                            f"({_aval(y).shape[0]}), got shape {_aval(w).shape}")
        lhs = ufuncs.multiply(lhs, w[:, None])
        rhs = ufuncs.multiply(rhs, w[:, None] if _aval(rhs).ndim == 2 else w)
    scale = ufuncs.sqrt(reductions.sum(ufuncs.multiply(lhs, lhs), axis=0))
    lhs = ufuncs.true_divide(lhs, scale[None, :])
    c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
    c = ufuncs.true_divide(c, scale[:, None] if _aval(c).ndim == 2 else scale)
    if full:
        return c, resids, rank, s, asarray(rcond)
    if cov:
        return c, _fit_cov(linalg, lhs, scale, resids, x, y, order, cov)
    return c


def _check_fit_shapes(x, y, deg):
    if deg < 0:
        raise ValueError(f"polyfit: expected deg >= 0, got {deg}")
    if _aval(x).ndim != 1:
        raise TypeError(f"polyfit: expected 1D vector for x, got shape {_aval(x).shape}")
    if _aval(x).size == 0:
        raise TypeError("polyfit: expected non-empty vector for x")
    if _aval(y).ndim not in (1, 2):
        raise TypeError(f"polyfit: expected 1D or 2D array for y, got shape {_aval(y).shape}")
    if _aval(x).shape[0] != _aval(y).shape[0]:
        raise TypeError(f"polyfit: expected x and y to have same length, got shapes "
                        f"{_aval(x).shape} and {_aval(y).shape}")


def _fit_cov(linalg, lhs, scale, resids, x, y, order, cov):
    vbase = linalg.inv(_matmul(lhs.T, lhs))
    vbase = ufuncs.true_divide(vbase, ufuncs.multiply(scale[:, None], scale[None, :]))
    if cov == "unscaled":
        fac = asarray(1.0, dtype=_aval(vbase).dtype)
    else:
        if _aval(x).shape[0] <= order:
            raise ValueError("polyfit: the number of data points must exceed order to scale "
                             "the covariance matrix")
        fac = ufuncs.true_divide(resids, _aval(x).shape[0] - order)
        fac = fac[0] if _aval(y).ndim == 1 else fac
    if _aval(y).ndim == 1:
        return ufuncs.multiply(vbase, fac)
    return ufuncs.multiply(vbase[:, :, None], fac)


# --- roots ---


def roots(p, *, strip_zeros=True):
    """The roots of the polynomial with coefficients ``p`` (complex).

    Found by the Aberth-Ehrlich simultaneous iteration (JAX computes the companion
    matrix's eigenvalues; the roots are the same, their order is unspecified in both), and
    differentiated implicitly: ``dr = -dp(r) / p'(r)``.

    Args:
      p: 1-D coefficients, highest power first.
      strip_zeros: strip leading zeros first (needs a concrete ``p``, as JAX). With
        ``False`` it traces: the roots that leading zeros remove come out as NaN (at the
        end), as JAX's.

    Raises:
      ConcretizationTypeError: ``p`` is traced and ``strip_zeros=True``.

    >>> import functrax.numpy as fnp
    >>> fnp.sort_complex(fnp.roots(fnp.array([1., -3., 2.]))).round(4)
    Array([1.+0.j, 2.+0.j], dtype=complex64)
    """
    check_arraylike("roots", p)
    p = shape_ops.atleast_1d(promote_dtypes_inexact(asarray(p))[0])
    if _aval(p).ndim != 1:
        raise ValueError(f"roots: input must be a rank-1 array, got shape {_aval(p).shape}")
    cdt = _complex(_aval(p).dtype)
    if _aval(p).shape[0] < 2:
        return lax.full((0,), 0, cdt)
    if strip_zeros:
        v = concrete_or_error(p, "The error occurred in the functrax.numpy.roots() function. "
                                 "To use it under jit, pass strip_zeros=False, but be aware "
                                 "that leading zeros will result in some returned roots being "
                                 "set to NaN. ")
        nz = np.nonzero(np.asarray(v) != 0)[0]
        p = p[int(nz[0]) if nz.size else _aval(p).shape[0]:]
        if _aval(p).shape[0] < 2:
            return lax.full((0,), 0, cdt)
    return _roots_fn()(lax.convert_element_type(p, cdt))


@functools.lru_cache(maxsize=None)
def _roots_fn():
    from functrax.transforms.custom_derivatives import custom_jvp
    f = custom_jvp(_aberth)
    f.defjvp(_roots_jvp)
    return f


def _roots_jvp(primals, tangents):
    (p,), (dp,) = primals, tangents
    r = _roots_fn()(p)
    dpdx = polyval(polyder(p), r)
    return r, ufuncs.negative(ufuncs.true_divide(polyval(dp, r), dpdx))


def _horner(p, z):
    """``(p(z), p'(z))`` for complex coefficients ``p`` (static length) at points ``z``."""
    n = _aval(p).shape[0]
    val = lax.full(_aval(z).shape, 0, _aval(z).dtype)
    der = val
    for i in range(n):
        der = lax.add(lax.mul(der, z), val)
        val = lax.add(lax.mul(val, z), lax.broadcast_in_dim(p[i], _aval(z).shape, ()))
    return val, der


def _aberth(p):
    """The ``n - 1`` roots of complex ``p`` (leading zeros allowed: those slots are NaN)."""
    from functrax.control_flow.loops import while_loop
    n = _aval(p).shape[0]
    d = n - 1
    cdt = _aval(p).dtype
    rdt = np.dtype(np.float64 if cdt == np.complex128 else np.float32)
    absp = lax.abs(p)
    nz = lax.ne(absp, lax.full((n,), 0, rdt))
    lead = reductions.argmax(nz)                       # the number of leading zeros
    deg = lax.sub(lax.full((), d, lead.dtype), lead)   # the true degree
    active = lax.lt(lax.iota(lead.dtype, d), lax.broadcast_in_dim(deg, (d,), ()))
    p0 = p[lead]
    p = ufuncs.true_divide(p, selection.where(lax.eq(absp[lead], 0), 1, p0))
    z0 = _initial_guess(lax.abs(p), lead, deg, d, rdt, cdt)
    eps = float(np.finfo(rdt).eps)

    def cond(state):
        it, _, step = state
        return ufuncs.logical_and(lax.lt(it, 50 + 10 * d), lax.gt(step, 0))

    def body(state):
        it, z, _ = state
        w = _aberth_step(p, z, active, d, cdt)
        z_new = lax.sub(z, w)
        moved = lax.convert_element_type(reductions.any(
            ufuncs.greater(lax.abs(w), eps * 4 * ufuncs.maximum(lax.abs(z_new), 1))), np.int32)
        return lax.add(it, lax.full((), 1, np.int32)), z_new, moved

    _, z, _ = while_loop(cond, body, (lax.full((), 0, np.int32), z0, lax.full((), 1, np.int32)))
    return selection.where(active, z, lax.full((d,), complex(np.nan, np.nan), cdt))


def _initial_guess(absp, lead, deg, d, rdt, cdt):
    """Points on a circle of radius ``max_i |a_i|**(1/i)`` (a bound on the root sizes),
    angles shifted off the real axis so that conjugate pairs separate."""
    n = d + 1
    pos = lax.iota(np.int32, n)
    i = lax.sub(pos, lax.broadcast_in_dim(lax.convert_element_type(lead, np.int32), (n,), ()))
    ok = ufuncs.logical_and(lax.gt(i, lax.full((n,), 0, np.int32)),
                            lax.gt(absp, lax.full((n,), 0, rdt)))
    ex = ufuncs.true_divide(1.0, lax.convert_element_type(lax.max(i, lax.full((n,), 1, np.int32)),
                                                          rdt))
    logs = selection.where(ok, ufuncs.multiply(ex, ufuncs.log(
        selection.where(ok, absp, lax.full((n,), 1, rdt)))), -np.inf)
    radius = ufuncs.exp(reductions.max(logs))
    radius = selection.where(ufuncs.isfinite(radius), radius, 1)
    degf = lax.convert_element_type(lax.max(deg, lax.full((), 1, deg.dtype)), rdt)
    k = lax.iota(rdt, d)
    theta = ufuncs.add(ufuncs.true_divide(ufuncs.multiply(k, 2 * np.pi), degf), 0.4)
    re = ufuncs.multiply(radius, ufuncs.cos(theta))
    im = ufuncs.multiply(radius, ufuncs.sin(theta))
    return lax.convert_element_type(ufuncs.add(re, ufuncs.multiply(lax.convert_element_type(
        im, cdt), lax.full((d,), 1j, cdt))), cdt)


def _aberth_step(p, z, active, d, cdt):
    """The Aberth correction ``w = r / (1 - r * sum_j 1/(z - z_j))``, ``r = p(z)/p'(z)``."""
    val, der = _horner(p, z)
    zero = lax.full((d,), 0, cdt)
    ratio = selection.where(lax.eq(der, zero), zero, ufuncs.true_divide(
        val, selection.where(lax.eq(der, zero), lax.full((d,), 1, cdt), der)))
    diff = lax.sub(lax.broadcast_in_dim(z, (d, d), (0,)), lax.broadcast_in_dim(z, (d, d), (1,)))
    pair = ufuncs.logical_and(
        lax.ne(lax.broadcasted_iota(np.int32, (d, d), 0), lax.broadcasted_iota(np.int32, (d, d),
                                                                              1)),
        lax.broadcast_in_dim(active, (d, d), (1,)))
    ok = ufuncs.logical_and(pair, lax.ne(diff, lax.full((d, d), 0, cdt)))
    one = lax.full((d, d), 1, cdt)
    inv = selection.where(ok, ufuncs.true_divide(one, selection.where(ok, diff, one)),
                          lax.full((d, d), 0, cdt))
    s = reductions.sum(inv, axis=1)
    denom = lax.sub(lax.full((d,), 1, cdt), lax.mul(ratio, s))
    w = ufuncs.true_divide(ratio, selection.where(lax.eq(denom, zero), lax.full((d,), 1, cdt),
                                                  denom))
    return selection.where(active, w, zero)
