"""Numerical calculus on samples: gradient, trapezoid, interp, unwrap (as ``jax.numpy``'s).

All are compositions of slicing and arithmetic, so they trace and are differentiable.

>>> import functrax.numpy as fnp
>>> fnp.trapezoid(fnp.array([1., 2., 3.]))
Array(4., dtype=float32)
"""
from __future__ import annotations

import numpy as np

from functrax import core, dtypes, lax
from functrax.numpy import reductions, selection, shape_ops, sorting, ufuncs
from functrax.numpy.creation import asarray
from functrax.numpy.promotion import (
    canonicalize_axes, canonicalize_axis, check_arraylike, promote_dtypes_inexact,
)

__all__ = ["gradient", "trapezoid", "interp", "unwrap"]


def _aval(x):
    return core.get_aval(x)


def _sl(x, start, stop, axis):
    """``x[start:stop]`` along ``axis`` (negative bounds count from the end)."""
    return lax.slice_in_dim(x, start, stop, axis=axis)


# --- gradient ---


def _gradient_along(a, h, axis):
    """Central differences inside, one-sided at the edges (numpy's edge_order=1)."""
    n = _aval(a).shape[axis]
    upper = ufuncs.subtract(_sl(a, 1, 2, axis), _sl(a, 0, 1, axis))
    lower = ufuncs.subtract(_sl(a, n - 1, n, axis), _sl(a, n - 2, n - 1, axis))
    if np.ndim(h) == 0:
        inner = ufuncs.true_divide(ufuncs.subtract(_sl(a, 2, n, axis), _sl(a, 0, n - 2, axis)),
                                   ufuncs.multiply(h, 2.0))
        upper, lower = ufuncs.true_divide(upper, h), ufuncs.true_divide(lower, h)
    elif np.ndim(h) == 1:
        if _aval(h).shape[0] != n:
            raise ValueError("gradient: spacing arrays must have the same length as the "
                             f"dimension along which the gradient is calculated ({n}), got "
                             f"{_aval(h).shape[0]}.")
        shape = [1] * _aval(a).ndim
        shape[axis] = n
        h = shape_ops.reshape(h, tuple(shape))
        upper = ufuncs.true_divide(upper, ufuncs.subtract(_sl(h, 1, 2, axis), _sl(h, 0, 1, axis)))
        lower = ufuncs.true_divide(lower, ufuncs.subtract(_sl(h, n - 1, n, axis),
                                                          _sl(h, n - 2, n - 1, axis)))
        dx1 = ufuncs.subtract(_sl(h, 1, n - 1, axis), _sl(h, 0, n - 2, axis))
        dx2 = ufuncs.subtract(_sl(h, 2, n, axis), _sl(h, 1, n - 1, axis))
        s = ufuncs.add(dx1, dx2)
        ca = ufuncs.negative(ufuncs.true_divide(dx2, ufuncs.multiply(dx1, s)))
        cb = ufuncs.true_divide(ufuncs.subtract(dx2, dx1), ufuncs.multiply(dx1, dx2))
        cc = ufuncs.true_divide(dx1, ufuncs.multiply(dx2, s))
        inner = ufuncs.add(ufuncs.add(ufuncs.multiply(ca, _sl(a, 0, n - 2, axis)),
                                      ufuncs.multiply(cb, _sl(a, 1, n - 1, axis))),
                           ufuncs.multiply(cc, _sl(a, 2, n, axis)))
    else:
        raise ValueError("gradient: spacing arrays must be 1D arrays or scalars, got shape "
                         f"{np.shape(h)}.")
    return shape_ops.concatenate([upper, inner, lower], axis=axis)


def gradient(f, *varargs, axis=None, edge_order=None):
    """The gradient of sampled values ``f``: second-order central differences inside,
    first-order one-sided differences at the boundaries (numpy's ``edge_order=1``).

    Args:
      f: the samples (at least 2 along each differentiated axis).
      *varargs: the spacing: none (1), one scalar or 1-D coordinate array for every axis,
        or one per axis.
      axis: the axis or axes (default: all).
      edge_order: not supported (JAX's NotImplementedError).

    Returns:
      One array per axis (a list), or a single array for a single axis.

    >>> import functrax.numpy as fnp
    >>> fnp.gradient(fnp.array([1., 2., 4., 7.]))
    Array([1. , 1.5, 2.5, 3. ], dtype=float32)
    """
    if edge_order is not None:
        raise NotImplementedError("The 'edge_order' argument to functrax.numpy.gradient is "
                                  "not supported.")
    check_arraylike("gradient", f, *varargs)
    a, *spacing = promote_dtypes_inexact(*[asarray(v) for v in (f, *varargs)])
    nd = _aval(a).ndim
    axes = canonicalize_axes(axis, nd, "gradient")
    if any(_aval(a).shape[i] < 2 for i in axes):
        raise ValueError("gradient: shape of array too small to calculate a numerical "
                         "gradient, at least (edge_order + 1) elements are required; got "
                         f"shape {_aval(a).shape}.")
    if not spacing:
        dx = [1.0] * len(axes)
    elif len(spacing) == 1:
        dx = spacing * len(axes)
    elif len(spacing) == len(axes):
        dx = spacing
    else:
        raise TypeError(f"gradient: invalid number of spacing arguments {len(spacing)} for "
                        f"axis={axis}")
    grads = [_gradient_along(a, h, ax) for ax, h in zip(axes, dx)]
    return grads[0] if len(axes) == 1 else grads


# --- trapezoid ---


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """The integral of the samples ``y`` along ``axis`` by the trapezoidal rule.

    Args:
      y: the samples.
      x: the sample points (1-D along ``axis``, or ``y``'s shape); else spacing ``dx``.
      dx: the spacing when ``x`` is None.
      axis: the axis to integrate along.

    >>> import functrax.numpy as fnp
    >>> fnp.trapezoid(fnp.array([1., 2., 3.]), x=fnp.array([0., 1., 3.]))
    Array(6.5, dtype=float32)
    """
    if x is None:
        check_arraylike("trapezoid", y, dx)
        y, dx = promote_dtypes_inexact(asarray(y), asarray(dx))
    else:
        check_arraylike("trapezoid", y, x)
        y, x = promote_dtypes_inexact(asarray(y), asarray(x))
        if _aval(x).ndim == 1:
            dx = sorting.diff(x)
        else:
            dx = shape_ops.moveaxis(sorting.diff(x, axis=axis), axis, -1)
    axis = canonicalize_axis(axis, _aval(y).ndim, "trapezoid")
    y = shape_ops.moveaxis(y, axis, -1)
    n = _aval(y).shape[-1]
    last = _aval(y).ndim - 1
    mid = ufuncs.add(_sl(y, 1, n, last), _sl(y, 0, max(n - 1, 0), last))
    return ufuncs.multiply(0.5, reductions.sum(ufuncs.multiply(dx, mid), axis=-1))


# --- interp ---


def _extrapolate_flag(v, name):
    if isinstance(v, str):
        if v != "extrapolate":
            raise ValueError(f"interp: the only valid string value of `{name}` is "
                             f"'extrapolate', but got: {v!r}")
        return True
    return False


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of the points ``(xp, fp)`` at ``x``.

    Args:
      x: where to evaluate.
      xp: increasing sample points (1-D; not checked).
      fp: the values at ``xp`` (same shape).
      left, right: the value below ``xp[0]`` / above ``xp[-1]`` (default: ``fp[0]`` /
        ``fp[-1]``), or ``"extrapolate"`` (JAX's extension: continue the end segments).
      period: treat ``xp`` as periodic with this period (``left``/``right`` ignored).

    >>> import functrax.numpy as fnp
    >>> fnp.interp(fnp.array([0.5, 1.5, 5.0]), fnp.array([0., 1., 2.]), fnp.array([0., 10., 0.]))
    Array([5., 5., 0.], dtype=float32)
    """
    check_arraylike("interp", x, xp, fp)
    if np.shape(xp) != np.shape(fp) or np.ndim(xp) != 1:
        raise ValueError(f"interp: xp and fp must be one-dimensional arrays of equal size, "
                         f"got shapes {np.shape(xp)} and {np.shape(fp)}")
    x, xp = promote_dtypes_inexact(asarray(x), asarray(xp))
    fp, = promote_dtypes_inexact(asarray(fp))
    ext_left, ext_right = _extrapolate_flag(left, "left"), _extrapolate_flag(right, "right")
    if dtypes.issubdtype(_aval(x).dtype, np.complexfloating):
        raise ValueError("interp: complex x values not supported.")
    if period is not None:
        x, xp, fp = _periodic(x, xp, fp, period)
    n = _aval(xp).shape[0]
    i = selection.clip(sorting.searchsorted(xp, x, side="right"), 1, n - 1)
    df = ufuncs.subtract(fp[i], fp[i - 1])
    dx = ufuncs.subtract(xp[i], xp[i - 1])
    delta = ufuncs.subtract(x, xp[i - 1])
    eps = float(np.spacing(np.finfo(_aval(xp).dtype).eps))
    dx0 = ufuncs.less_equal(ufuncs.abs(dx), eps)  # no NaN gradients for repeated xp
    f = selection.where(dx0, fp[i - 1], ufuncs.add(fp[i - 1], ufuncs.multiply(
        ufuncs.true_divide(delta, selection.where(dx0, 1, dx)), df)))
    if period is None:
        if not ext_left:
            f = selection.where(ufuncs.less(x, xp[0]), fp[0] if left is None else left, f)
        if not ext_right:
            f = selection.where(ufuncs.greater(x, xp[-1]), fp[-1] if right is None else right,
                                f)
    return f


def _periodic(x, xp, fp, period):
    if np.ndim(period) != 0:
        raise ValueError(f"interp: period must be a scalar; got {period}")
    period = ufuncs.abs(period)
    x, xp = ufuncs.remainder(x, period), ufuncs.remainder(xp, period)
    order = sorting.argsort(xp)
    xp, fp = xp[order], fp[order]
    xp = shape_ops.concatenate([ufuncs.subtract(xp[-1:], period), xp,
                                ufuncs.add(xp[:1], period)])
    fp = shape_ops.concatenate([fp[-1:], fp, fp[:1]])
    return x, xp, fp


# --- unwrap ---


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
    """``p`` with jumps larger than ``discont`` (default ``period / 2``) along ``axis``
    replaced by their complement modulo ``period`` (phase unwrapping).

    >>> import functrax.numpy as fnp
    >>> fnp.unwrap(fnp.array([0., 3., 6.5]))
    Array([0.      , 3.      , 0.216815], dtype=float32)
    """
    check_arraylike("unwrap", p)
    p = asarray(p)
    if dtypes.issubdtype(_aval(p).dtype, np.complexfloating):
        raise ValueError("unwrap: complex inputs are not supported.")
    p, = promote_dtypes_inexact(p)
    axis = canonicalize_axis(axis, _aval(p).ndim, "unwrap")
    n = _aval(p).shape[axis]
    if n == 0:
        return p
    if discont is None:
        discont = period / 2
    interval = period / 2
    dd = sorting.diff(p, axis=axis)
    ddmod = ufuncs.subtract(ufuncs.remainder(ufuncs.add(dd, interval), period), interval)
    ddmod = selection.where(ufuncs.logical_and(ufuncs.equal(ddmod, -interval),
                                               ufuncs.greater(dd, 0)), interval, ddmod)
    correct = selection.where(ufuncs.less(ufuncs.abs(dd), discont), 0,
                              ufuncs.subtract(ddmod, dd))
    rest = ufuncs.add(_sl(p, 1, n, axis), reductions.cumsum(correct, axis=axis))
    return shape_ops.concatenate([_sl(p, 0, 1, axis), rest], axis=axis)
