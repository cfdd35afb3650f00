"""Selection and comparison of whole arrays: where, clip, nan_to_num, isclose, allclose,
array_equal, array_equiv (as ``jax.numpy`` has them).

>>> import functrax.numpy as fnp
>>> fnp.where(fnp.arange(3) > 0, 1.0, -1.0)
Array([-1.,  1.,  1.], dtype=float32)
"""
from __future__ import annotations

import numpy as np

from functrax import core, dtypes, lax
from functrax.numpy.promotion import asarray_operand, check_arraylike
from functrax.core import Array, Tracer
from functrax.numpy.ufuncs import (
    asarray_weak, const_like, dtype_kind, dtype_of, equal, inexact_operands, isinf, isnan,
    isneginf, isposinf, logical_and, logical_not, logical_or, make_complex, maximum, minimum,
    where_promoted,
)




def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """``x`` where ``condition`` is true, else ``y``, with broadcasting and promotion.

    With only ``condition``, returns ``nonzero(condition)`` (which needs a static ``size``
    under a transformation).

    >>> import functrax.numpy as fnp
    >>> fnp.where(fnp.array([True, False]), 1.0, fnp.array([5.0, 6.0]))
    Array([1., 6.], dtype=float32)
    """
    if x is None and y is None:
        from functrax.numpy import nonzero  # late: defined in another functrax.numpy module
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError("functrax.numpy.where: either both or neither of the x and y "
                         f"arguments should be provided, got {x} and {y}.")
    if size is not None or fill_value is not None:
        raise ValueError("functrax.numpy.where: size and fill_value apply only to the "
                         "one-argument form where(condition)")
    check_arraylike("where", condition, x, y)
    return where_promoted(condition, x, y)


def clip(arr=None, /, min=None, max=None, *, a=None, a_min=None, a_max=None):
    """Clamp ``arr`` into ``[min, max]`` (either bound may be None).

    >>> import functrax.numpy as fnp
    >>> fnp.clip(fnp.array([-2, 0, 5]), 0, 3)
    Array([0, 0, 3], dtype=int32)
    """
    arr = a if arr is None else arr
    min = a_min if min is None else min
    max = a_max if max is None else max
    if arr is None:
        raise TypeError("functrax.numpy.clip: the array argument is missing")
    check_arraylike("clip", arr, *[b for b in (min, max) if b is not None])
    for v in (arr, min, max):
        if v is not None and dtype_of(v).kind == "c":
            raise ValueError("functrax.numpy.clip received a complex value; complex values "
                             "have no ordering. Clip the real or imaginary part "
                             "(functrax.numpy.real/imag) instead.")
    if min is not None:
        arr = maximum(min, arr)
    if max is not None:
        arr = minimum(max, arr)
    return asarray_weak(arr)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """Replace NaN by ``nan`` and infinities by ``posinf``/``neginf`` (default: the extremes)."""
    del copy
    check_arraylike("nan_to_num", x)
    k = dtype_kind(x)
    if k not in "fc":
        return asarray_weak(x)
    if k == "c":
        kw = dict(nan=nan, posinf=posinf, neginf=neginf)
        return make_complex(nan_to_num(lax.real(x), **kw), nan_to_num(lax.imag(x), **kw), x)
    info = dtypes.finfo(dtype_of(x))
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = where_promoted(isnan(x), const_like(x, nan), x)
    out = where_promoted(isposinf(out), const_like(x, posinf), out)
    return where_promoted(isneginf(out), const_like(x, neginf), out)


def _scalar_as(v, dtype):
    if isinstance(v, (Array, Tracer)):
        return lax.convert_element_type(v, dtype)
    return np.asarray(v, dtype)[()]


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|a - b| <= atol + rtol * |b|``, with infinities and NaNs handled.

    >>> import functrax.numpy as fnp
    >>> fnp.isclose(fnp.array([1.0, 1.1]), 1.0)
    Array([ True, False], dtype=bool)
    """
    a, b = inexact_operands("isclose", a, b)
    dt = dtype_of(a)
    if dt.kind == "c":
        dt = np.dtype(np.finfo(dt).dtype)  # the real component type
    rtol, atol = _scalar_as(rtol, dt), _scalar_as(atol, dt)
    out = lax.le(lax.abs(lax.sub(a, b)), lax.add(atol, lax.mul(rtol, lax.abs(b))))
    a_inf, b_inf = isinf(a), isinf(b)
    out = logical_and(out, logical_not(logical_or(a_inf, b_inf)))
    out = logical_or(out, logical_and(logical_and(a_inf, b_inf), lax.eq(a, b)))
    a_nan, b_nan = isnan(a), isnan(b)
    out = logical_and(out, logical_not(logical_or(a_nan, b_nan)))
    if equal_nan:
        out = logical_or(out, logical_and(a_nan, b_nan))
    return out


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether all elements are close (:func:`isclose`); a boolean scalar Array."""
    from functrax.numpy.reductions import all as all_
    return all_(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan=False):
    """Whether two arrays have the same shape and elements; a boolean scalar Array."""
    from functrax.numpy.reductions import all as all_
    try:
        a1, a2 = asarray_operand(a1), asarray_operand(a2)
    except (TypeError, ValueError):
        return Array(np.asarray(False))
    if core.get_aval(a1).shape != core.get_aval(a2).shape:
        return Array(np.asarray(False))
    eq = equal(a1, a2)
    if equal_nan:
        eq = logical_or(eq, logical_and(isnan(a1), isnan(a2)))
    return all_(eq)


def array_equiv(a1, a2):
    """Whether two arrays are equal after broadcasting; a boolean scalar Array."""
    from functrax.numpy.reductions import all as all_
    try:
        a1, a2 = asarray_operand(a1), asarray_operand(a2)
    except (TypeError, ValueError):
        return Array(np.asarray(False))
    try:
        eq = equal(a1, a2)
    except ValueError:  # shapes do not broadcast
        return Array(np.asarray(False))
    return all_(eq)


__all__ = ["where", "clip", "nan_to_num", "isclose", "allclose", "array_equal", "array_equiv"]
