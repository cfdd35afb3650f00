"""Reductions of ``functrax.numpy``: axis/keepdims/where/dtype/initial handled once here."""
from __future__ import annotations

import builtins

import numpy as np

from functrax import core, dtypes, lax
from functrax.numpy._util import (
    asarray_operand, canonicalize_axes, canonicalize_axis, check_arraylike, promote_dtypes_inexact,
)
from functrax.numpy.ufuncs import _to_bool, isnan, multiply, subtract, true_divide, where
from functrax.numpy.ufuncs import where as _where


def _expand(x, axes, ndim):
    shape = list(core.get_aval(x).shape)
    for a in sorted(axes):
        shape.insert(a, 1)
    return lax.reshape(x, shape)


def _reduction(name, lax_fn, identity, *, upcast_bool=False, bool_op=None, inexact=False):
    """Build ``fn(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None)``."""
    def fn(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        check_arraylike(name, a)
        if out is not None:
            raise NotImplementedError(f"functrax.numpy.{name}: the 'out' argument is not "
                                      "supported (arrays are immutable); use the return value")
        a = asarray_operand(a)
        aval = core.get_aval(a)
        axes = canonicalize_axes(axis, aval.ndim, name)
        if dtype is not None:
            a = lax.convert_element_type(a, dtype)
        elif upcast_bool and aval.dtype.kind in "biu" and aval.dtype.itemsize < 4:
            a = lax.convert_element_type(a, dtypes.default_int_dtype() if aval.dtype.kind in "bi"
                                         else dtypes.canonicalize_dtype(np.uint32))
        elif bool_op is not None:
            a = _to_bool(a)
        if where is not None:
            if identity is None:
                if initial is None:
                    raise ValueError(f"reduction operation {name} does not have an identity, so "
                                     "to use a where mask one has to specify 'initial'")
            fill = initial if identity is None else identity(core.get_aval(a).dtype)
            a = _select(where, a, fill)
        if axes and builtins.any(aval.shape[i] == 0 for i in axes) and identity is None and initial is None:
            raise ValueError(f"zero-size array to reduction operation {name} which has no "
                             "identity")
        r = lax_fn(a, axes)
        if initial is not None:
            r = (lax.max if name in ("max", "amax") else lax.min if name in ("min", "amin")
                 else lax.add if name == "sum" else lax.mul)(r, lax.convert_element_type(
                     initial, core.get_aval(r).dtype))
        if keepdims:
            r = _expand(r, axes, aval.ndim)
        return r
    fn.__name__ = name
    fn.__doc__ = (f"``{name}`` over ``axis`` (None: all), as ``numpy.{name}``; supports "
                  "keepdims, where= and dtype=.")
    return fn


def _select(mask, a, fill):
    check_arraylike("where", mask)
    return _where(mask, a, lax.convert_element_type(fill, core.get_aval(a).dtype))


def _zero(dt):
    return np.zeros((), dt)[()]


def _one(dt):
    return np.ones((), dt)[()]


def _max_identity(dt):
    dt = np.dtype(dt)
    if dt.kind == "f" or dtypes.is_float(dt):
        return -np.inf
    return False if dt.kind == "b" else np.iinfo(dt).min


def _min_identity(dt):
    dt = np.dtype(dt)
    if dt.kind == "f" or dtypes.is_float(dt):
        return np.inf
    return True if dt.kind == "b" else np.iinfo(dt).max


sum = _reduction("sum", lax.reduce_sum, _zero, upcast_bool=True)
prod = _reduction("prod", lax.reduce_prod, _one, upcast_bool=True)
max = _reduction("max", lax.reduce_max, None)
min = _reduction("min", lax.reduce_min, None)
all = _reduction("all", lax.reduce_and, lambda dt: True, bool_op=True)
any = _reduction("any", lax.reduce_or, lambda dt: False, bool_op=True)
amax, amin = max, min


def _count(aval, axes, where):
    if where is None:
        return int(np.prod([aval.shape[i] for i in axes], dtype=np.int64))
    m = lax.broadcast_in_dim(asarray_operand(where), aval.shape, tuple(range(
        aval.ndim - np.ndim(where), aval.ndim))) if np.ndim(where) != aval.ndim else where
    return sum(m, axis=axes, dtype=dtypes.default_int_dtype())


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Arithmetic mean over ``axis``; integers and booleans average in the default float."""
    check_arraylike("mean", a)
    a = asarray_operand(a)
    aval = core.get_aval(a)
    axes = canonicalize_axes(axis, aval.ndim, "mean")
    if dtype is None:
        dtype = aval.dtype if dtypes.is_inexact(aval.dtype) else dtypes.default_float_dtype()
    total = sum(a, axis=axes, dtype=dtype, keepdims=keepdims, where=where)
    n = _count(aval, axes, where)
    if isinstance(n, int):
        return lax.div(total, np.asarray(n, dtypes.canonicalize_dtype(dtype))[()])
    if keepdims:
        n = _expand(n, axes, aval.ndim)
    return true_divide(total, n)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        correction=None):
    """Variance over ``axis`` with ``ddof`` (or ``correction``) degrees of freedom removed."""
    if correction is not None:
        ddof = correction
    a = asarray_operand(a)
    aval = core.get_aval(a)
    axes = canonicalize_axes(axis, aval.ndim, "var")
    a, = promote_dtypes_inexact(a)
    if dtype is not None:
        a = lax.convert_element_type(a, dtype)
    centered = subtract(a, mean(a, axes, keepdims=True, where=where))
    sq = multiply(centered, centered)
    total = sum(sq, axis=axes, keepdims=keepdims, where=where)
    n = _count(aval, axes, where)
    if isinstance(n, int):
        return lax.div(total, np.asarray(builtins.max(n - ddof, 0), core.get_aval(total).dtype)[()])
    if keepdims:
        n = _expand(n, axes, aval.ndim)
    return true_divide(total, subtract(n, ddof))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        correction=None):
    """Standard deviation: ``sqrt(var(...))``."""
    return lax.sqrt(var(a, axis, dtype, out, ddof, keepdims, where=where, correction=correction))


def _argreduce(name, lax_fn):
    def fn(a, axis=None, out=None, keepdims=False):
        check_arraylike(name, a)
        a = asarray_operand(a)
        aval = core.get_aval(a)
        if axis is None:
            a = lax.reshape(a, (aval.size,))
            ax = 0
        else:
            ax = canonicalize_axis(axis, aval.ndim, name)
        if core.get_aval(a).shape[ax] == 0:
            raise ValueError(f"attempt to get {name} of an empty sequence")
        r = lax_fn(a, ax, dtypes.default_int_dtype())
        if keepdims:
            r = _expand(r, (ax,) if axis is not None else tuple(range(aval.ndim)), aval.ndim)
        return r
    fn.__name__ = name
    fn.__doc__ = f"Indices of the {name[3:]}imum along ``axis`` (None: of the flattened array)."
    return fn


argmax = _argreduce("argmax", lax.argmax)
argmin = _argreduce("argmin", lax.argmin)


def _nan_reduction(name, base, fill_fn):
    def fn(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
        a = asarray_operand(a)
        if not dtypes.is_inexact(core.get_aval(a).dtype):
            return base(a, axis=axis, dtype=dtype, keepdims=keepdims, **kw)
        filled = where(isnan(a), fill_fn(core.get_aval(a).dtype), a)
        return base(filled, axis=axis, dtype=dtype, keepdims=keepdims, **kw)
    fn.__name__ = name
    return fn


nansum = _nan_reduction("nansum", sum, lambda dt: 0)
nanprod = _nan_reduction("nanprod", prod, lambda dt: 1)


def nanmax(a, axis=None, out=None, keepdims=False, **kw):
    a = asarray_operand(a)
    return max(where(isnan(a), -np.inf, a), axis=axis, keepdims=keepdims, **kw) if \
        dtypes.is_inexact(core.get_aval(a).dtype) else max(a, axis=axis, keepdims=keepdims, **kw)


def nanmin(a, axis=None, out=None, keepdims=False, **kw):
    a = asarray_operand(a)
    return min(where(isnan(a), np.inf, a), axis=axis, keepdims=keepdims, **kw) if \
        dtypes.is_inexact(core.get_aval(a).dtype) else min(a, axis=axis, keepdims=keepdims, **kw)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False):
    a = asarray_operand(a)
    if not dtypes.is_inexact(core.get_aval(a).dtype):
        return mean(a, axis, dtype, keepdims=keepdims)
    keep = lax.bitwise_not(isnan(a))
    return mean(a, axis, dtype, keepdims=keepdims, where=keep)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    a = asarray_operand(a)
    keep = lax.bitwise_not(isnan(a))
    return var(where(keep, a, 0), axis, dtype, ddof=ddof, keepdims=keepdims, where=keep)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    return lax.sqrt(nanvar(a, axis, dtype, ddof=ddof, keepdims=keepdims))


def _cumulative(name, lax_fn, upcast=True):
    def fn(a, axis=None, dtype=None, out=None):
        check_arraylike(name, a)
        a = asarray_operand(a)
        if axis is None:
            a = lax.reshape(a, (core.get_aval(a).size,))
            axis = 0
        aval = core.get_aval(a)
        axis = canonicalize_axis(axis, aval.ndim, name)
        if dtype is not None:
            a = lax.convert_element_type(a, dtype)
        elif upcast and aval.dtype.kind in "bi" and aval.dtype.itemsize < 4:
            a = lax.convert_element_type(a, dtypes.default_int_dtype())
        return lax_fn(a, axis)
    fn.__name__ = name
    fn.__doc__ = f"Cumulative {name[3:]} along ``axis`` (None: of the flattened array)."
    return fn


cumsum = _cumulative("cumsum", lax.cumsum)
cumprod = _cumulative("cumprod", lax.cumprod)
