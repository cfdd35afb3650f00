"""Reductions of ``functrax.numpy``: axis/keepdims/where/dtype/initial handled once here.

Dtype rules follow JAX: ``sum``/``prod`` promote booleans and narrow integers to the default
integer type, ``mean``/``var``/``std`` of integers and booleans give the default float type,
float16/bfloat16 sums accumulate in float32, and results are never weakly typed.

>>> import functrax.numpy as fnp
>>> fnp.sum(fnp.array([[1, 2], [3, 4]]), axis=0)
Array([4, 6], dtype=int32)
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from functrax import core, dtypes, lax
from functrax.numpy.promotion import (
    asarray_operand, broadcast_to_shape, check_arraylike, promote_dtypes_inexact,
    promote_dtypes_numeric, shape_of,
)
from functrax.numpy.ufuncs import to_bool, isnan, logical_not, true_divide
from functrax.numpy.selection import where as _where

__all__ = [
    "sum", "prod", "max", "min", "amax", "amin", "all", "any", "mean", "var", "std",
    "argmax", "argmin", "nanargmax", "nanargmin", "nansum", "nanprod", "nanmax", "nanmin",
    "nanmean", "nanvar", "nanstd", "cumsum", "cumprod", "nancumsum", "nancumprod",
    "cumulative_sum", "cumulative_prod", "ptp", "average", "count_nonzero",
]

_SCALARS = (bool, int, float, complex)


# --- shared helpers ---


def _operand(name, a):
    check_arraylike(name, a)
    return asarray_operand(a)


def _no_out(name, out):
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to functrax.numpy.{name} is not "
                                  "supported (arrays are immutable); use the return value.")


def canonicalize_axis(name, axis, ndim):
    """A static axis in ``[-ndim, ndim)`` as a non-negative int (strict: 0-d has no axes)."""
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"{name}: axis must be an integer, a tuple of integers or None, got "
                        f"{axis!r} of type {type(axis).__name__}") from None
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def reduction_axes(name, axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    out = tuple(canonicalize_axis(name, a, ndim) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: duplicate value in 'axis': {axis}")
    return out


def _user_dtype(name, dtype):
    try:
        dt = dtypes.canonicalize_dtype(dtype)
    except TypeError:
        raise TypeError(f"{name}: dtype={dtype!r} is not a valid dtype") from None
    if not dtypes.is_supported(dt):
        raise TypeError(f"{name}: dtype={dtype!r} is not supported by functrax")
    return dt


def _promote_integer_dtype(dt):
    """bool -> default int; narrower signed/unsigned ints -> default int/uint (as JAX)."""
    dt = np.dtype(dt)
    if dt == np.bool_:
        return dtypes.default_int_dtype()
    if dt.kind == "u" and dt.itemsize < dtypes.default_int_dtype().itemsize:
        return dtypes.canonicalize_dtype(np.uint64)
    if dt.kind == "i" and dt.itemsize < dtypes.default_int_dtype().itemsize:
        return dtypes.default_int_dtype()
    return dt


def _upcast_f16(dt):
    dt = np.dtype(dt)
    if dt == np.float16 or (dtypes.bfloat16 is not None and dt == np.dtype(dtypes.bfloat16)):
        return np.dtype(np.float32)
    return dt


def _to_inexact(dt):
    return np.dtype(dt) if dtypes.is_inexact(dt) else dtypes.default_float_dtype()


def _init_val(dt, val):
    """The identity ``val`` as a numpy scalar of ``dt`` (infinities clip to integer limits)."""
    dt = np.dtype(dt)
    if dt == np.bool_:
        return np.bool_(val > 0)
    if dt.kind in "iu" and not np.isfinite(val):
        info = np.iinfo(dt)
        return dt.type(info.min if val < 0 else info.max)
    return np.asarray(val, dt)[()]


def _check_where(name, where, shape):
    """``where`` as a boolean mask broadcast to ``shape`` (numpy's rule: it must broadcast)."""
    check_arraylike(name, where)
    if type(where) is bool:
        m = core.Array(np.asarray(where))
    else:
        m = to_bool(asarray_operand(where))
    try:
        return broadcast_to_shape(m, shape)
    except ValueError:
        raise ValueError(f"{name}: where= mask of shape {shape_of(where)} cannot be broadcast to "
                         f"the input's shape {tuple(shape)}") from None


def _scalar_initial(name, initial, dt):
    """``initial`` as a scalar of the computation dtype (it must be a scalar)."""
    if type(initial) in _SCALARS or isinstance(initial, (np.ndarray, np.generic)):
        if np.ndim(initial) != 0:
            raise ValueError(f"{name}: initial value must be a scalar. Got array of shape "
                             f"{np.shape(initial)}")
        return _init_val(dt, np.asarray(initial)[()])
    check_arraylike(name, initial)
    if core.get_aval(initial).shape != ():
        raise ValueError(f"{name}: initial value must be a scalar. Got array of shape "
                         f"{core.get_aval(initial).shape}")
    return lax.convert_element_type(initial, dt)


def _expand(x, axes):
    return lax.expand_dims(x, axes) if axes else x


def _count(shape, axes, where, keepdims, dt):
    """Number of elements reduced over (an array when a where= mask is given)."""
    if where is None:
        return np.asarray(math.prod(shape[i] for i in axes), dt)[()]
    return sum(where, axis=axes, dtype=dt, keepdims=keepdims)


# --- the generic reduction ---


def _reduce(name, a, axis, dtype, keepdims, initial, where, *, reducer, bool_reducer=None,
            combine, identity, has_identity=True, promote_integers=False, upcast_f16=False,
            preproc=None):
    a = _operand(name, a)
    if initial is None and not has_identity and where is not None:
        raise ValueError(f"reduction operation {name} does not have an identity, so to use a "
                         "where mask one has to specify 'initial'")
    if preproc is not None:
        a = preproc(a)
    aval = core.get_aval(a)
    axes = reduction_axes(name, axis, aval.ndim)
    if initial is None and not has_identity and builtins.any(aval.shape[d] == 0 for d in axes):
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity "
                         f"(input shape {aval.shape}, axis={axis}); pass initial= or where=")
    result_dtype = aval.dtype if dtype is None else _user_dtype(name, dtype)
    if dtype is None and promote_integers:
        result_dtype = _promote_integer_dtype(result_dtype)
    comp = _upcast_f16(result_dtype) if upcast_f16 else result_dtype
    a = lax.convert_element_type(a, comp)
    if comp == np.bool_ and bool_reducer is not None:
        reducer, combine = bool_reducer
    if where is not None:
        mask = _check_where(name, where, aval.shape)
        a = _where(mask, a, core.Array(np.asarray(_init_val(comp, identity))))
    r = reducer(a, axes)
    if initial is not None:
        r = combine(_scalar_initial(name, initial, comp), r)
    if keepdims:
        r = _expand(r, axes)
    return lax.convert_element_type(r, result_dtype)


def _fast_axes(aval, axis):
    """Axes for a plain float reduction with an int/None axis, else None (general path)."""
    dt = aval.dtype
    if aval.weak_type or not ((dt.kind == "f" and dt.itemsize >= 4) or dt.kind == "c"):
        return None
    nd = len(aval.shape)
    if axis is None:
        return tuple(range(nd))
    if type(axis) is int and -nd <= axis < nd:
        return (axis % nd,)
    return None


def _cast_to_numeric(a):
    return promote_dtypes_numeric(a)[0]


def _cast_to_bool(a):
    if core.get_aval(a).dtype.kind == "c":
        a = lax.real(a)
    return to_bool(a)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
        promote_integers=True):
    """Sum of array elements over ``axis`` (None: all axes), as ``numpy.sum``.

    Booleans and integers narrower than the default int are summed in the default int
    (``promote_integers``); ``where=`` masks elements; ``initial`` is added to the result.

    >>> import functrax.numpy as fnp
    >>> fnp.sum(fnp.array([True, True, False]))
    Array(2, dtype=int32)
    """
    if (dtype is None and out is None and not keepdims and initial is None and where is None
            and (type(a) is core.Array or isinstance(a, core.Tracer))):
        axes = _fast_axes(a.aval, axis)  # the common case, without the general machinery
        if axes is not None:
            return lax.reduce_sum(a, axes)
    _no_out("sum", out)
    return _reduce("sum", a, axis, dtype, keepdims, initial, where, reducer=lax.reduce_sum,
                   bool_reducer=(lax.reduce_or, lax.bitwise_or), combine=lax.add, identity=0,
                   promote_integers=promote_integers, upcast_f16=True,
                   preproc=_cast_to_numeric)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
         promote_integers=True):
    """Product of array elements over ``axis``, as ``numpy.prod`` (dtype rules as ``sum``).

    >>> import functrax.numpy as fnp
    >>> fnp.prod(fnp.array([1.0, 2.0, 3.0]))
    Array(6., dtype=float32)
    """
    _no_out("prod", out)
    return _reduce("prod", a, axis, dtype, keepdims, initial, where, reducer=lax.reduce_prod,
                   bool_reducer=(lax.reduce_and, lax.bitwise_and), combine=lax.mul, identity=1,
                   promote_integers=promote_integers, upcast_f16=True,
                   preproc=_cast_to_numeric)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Maximum over ``axis`` (NaN propagates); an empty reduction needs ``initial``.

    >>> import functrax.numpy as fnp
    >>> fnp.max(fnp.array([[1, 5], [7, 2]]), axis=1)
    Array([5, 7], dtype=int32)
    """
    _no_out("max", out)
    return _reduce("max", a, axis, None, keepdims, initial, where, reducer=lax.reduce_max,
                   combine=lax.max, identity=-np.inf, has_identity=False)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Minimum over ``axis`` (NaN propagates); an empty reduction needs ``initial``."""
    _no_out("min", out)
    return _reduce("min", a, axis, None, keepdims, initial, where, reducer=lax.reduce_min,
                   combine=lax.min, identity=np.inf, has_identity=False)


amax, amin = max, min


def all(a, axis=None, out=None, keepdims=False, *, where=None):
    """Whether all elements along ``axis`` are true (nonzero)."""
    _no_out("all", out)
    return _reduce("all", a, axis, None, keepdims, None, where, reducer=lax.reduce_and,
                   combine=lax.bitwise_and, identity=True, preproc=_cast_to_bool)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
    """Whether any element along ``axis`` is true (nonzero)."""
    _no_out("any", out)
    return _reduce("any", a, axis, None, keepdims, None, where, reducer=lax.reduce_or,
                   combine=lax.bitwise_or, identity=False, preproc=_cast_to_bool)


# --- statistics ---


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Arithmetic mean over ``axis``; integers and booleans average in the default float.

    >>> import functrax.numpy as fnp
    >>> fnp.mean(fnp.array([1, 2, 3, 4]))
    Array(2.5, dtype=float32)
    """
    _no_out("mean", out)
    a = _operand("mean", a)
    aval = core.get_aval(a)
    axes = reduction_axes("mean", axis, aval.ndim)
    result_dtype = _to_inexact(aval.dtype) if dtype is None else _user_dtype("mean", dtype)
    comp = _upcast_f16(result_dtype)
    if where is not None:
        where = _check_where("mean", where, aval.shape)
    total = sum(a, axes, dtype=comp, keepdims=keepdims, where=where)
    n = _count(aval.shape, axes, where, keepdims, comp)
    return lax.convert_element_type(lax.div(total, n), result_dtype)


def _var_promote_types(name, a_dtype, dtype):
    if dtype is not None:
        dtype = _user_dtype(name, dtype)
        if dtype.kind != "c" and np.dtype(a_dtype).kind == "c":
            raise ValueError(f"{name}: a real dtype={dtype.name} is not supported for the "
                             "variance of complex values; pass a complex dtype or dtype=None")
        comp = dtype
    elif not dtypes.is_inexact(a_dtype):
        dtype = comp = dtypes.default_float_dtype()
    else:
        comp = np.dtype(a_dtype)
        dtype = np.dtype(np.real(np.zeros((), comp)).dtype) if comp.kind == "c" else comp
    return _upcast_f16(comp), dtype


def _sq_abs(x):
    if core.get_aval(x).dtype.kind == "c":
        return lax.real(lax.mul(x, lax.conj(x)))
    return lax.mul(x, x)


def _ddof(name, ddof, correction):
    if correction is None:
        return ddof
    if not (isinstance(ddof, int) and ddof == 0):
        raise ValueError(f"{name}: ddof and correction can't be provided simultaneously.")
    return correction


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        correction=None):
    """Variance over ``axis`` with ``ddof`` (or ``correction``) degrees of freedom removed.

    Integers give the default float; complex inputs give a real variance.

    >>> import functrax.numpy as fnp
    >>> fnp.var(fnp.array([1.0, 2.0, 3.0, 4.0]))
    Array(1.25, dtype=float32)
    """
    _no_out("var", out)
    return _var("var", a, axis, dtype, _ddof("var", ddof, correction), keepdims, where)


def _var(name, a, axis, dtype, correction, keepdims, where):
    a = _operand(name, a)
    aval = core.get_aval(a)
    axes = reduction_axes(name, axis, aval.ndim)
    comp, dtype = _var_promote_types(name, aval.dtype, dtype)
    a = lax.convert_element_type(a, comp)
    if where is not None:
        where = _check_where(name, where, aval.shape)
    centered = lax.sub(a, broadcast_to_shape(mean(a, axes, comp, keepdims=True, where=where),
                                             aval.shape))
    sq = _sq_abs(centered)
    rdt = core.get_aval(sq).dtype
    total = sum(sq, axes, dtype=rdt, keepdims=keepdims, where=where)
    return lax.convert_element_type(lax.div(total, _dof(aval.shape, axes, where, keepdims, rdt,
                                                        correction)), dtype)


def _dof(shape, axes, where, keepdims, dt, correction):
    """``count - correction`` clipped at 0 (as numpy; the division then gives inf/nan)."""
    n = _count(shape, axes, where, keepdims, dt)
    if where is None and type(correction) in (int, float):
        return np.asarray(builtins.max(float(n) - correction, 0), dt)[()]
    if type(correction) not in (int, float):
        correction = lax.convert_element_type(correction, dt)
    return lax.max(lax.sub(n, correction), np.asarray(0, dt)[()])


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        correction=None):
    """Standard deviation: ``sqrt(var(...))``."""
    _no_out("std", out)
    return lax.sqrt(_var("std", a, axis, dtype, _ddof("std", ddof, correction), keepdims,
                         where))


# --- index reductions ---


def _argreduce(name, lax_fn):
    def fn(a, axis=None, out=None, keepdims=None):
        _no_out(name, out)
        a = _operand(name, a)
        aval = core.get_aval(a)
        if axis is None:
            dims = tuple(range(aval.ndim))
            a = lax.reshape(a, (aval.size,))
            ax = 0
        else:
            ax = canonicalize_axis(name, axis, aval.ndim)
            dims = (ax,)
        if core.get_aval(a).shape[ax] == 0:
            raise ValueError(f"attempt to get {name} of an empty sequence (input shape "
                             f"{aval.shape}, axis={axis})")
        r = lax_fn(a, ax, dtypes.default_int_dtype())
        return _expand(r, dims) if keepdims else r
    fn.__name__ = name
    fn.__doc__ = (f"Index of the {name[3:]}imum along ``axis`` (None: of the flattened array); "
                  "the first NaN wins, as in numpy and JAX.")
    return fn


argmax = _argreduce("argmax", lax.argmax)
argmin = _argreduce("argmin", lax.argmin)


def _nanargreduce(name, base, fill):
    def fn(a, axis=None, out=None, keepdims=None):
        _no_out(name, out)
        a = _operand(name, a)
        if axis is not None:
            canonicalize_axis(name, axis, core.get_aval(a).ndim)
        if not dtypes.is_inexact(core.get_aval(a).dtype):
            return base(a, axis=axis, keepdims=keepdims)
        nan_mask = isnan(a)
        res = base(_where(nan_mask, fill, a), axis=axis, keepdims=keepdims)
        return _where(all(nan_mask, axis=axis, keepdims=keepdims), -1, res)
    fn.__name__ = name
    fn.__doc__ = (f"``{name[3:]}`` ignoring NaNs; an all-NaN slice gives -1 (as JAX; numpy "
                  "raises).")
    return fn


nanargmax = _nanargreduce("nanargmax", argmax, -np.inf)
nanargmin = _nanargreduce("nanargmin", argmin, np.inf)


# --- NaN-ignoring reductions ---


def _nan_reduction(name, a, reduction, init_val, nan_if_all_nan, axis, keepdims, where, **kw):
    a = _operand(name, a)
    reduction_axes(name, axis, core.get_aval(a).ndim)
    if not dtypes.is_inexact(core.get_aval(a).dtype):
        return reduction(a, axis=axis, keepdims=keepdims, where=where, **kw)
    nan_mask = isnan(a)
    out = reduction(_where(nan_mask, init_val, a), axis=axis, keepdims=keepdims, where=where,
                    **kw)
    if nan_if_all_nan:
        return _where(all(nan_mask, axis=axis, keepdims=keepdims), np.nan, out)
    return out


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``sum`` treating NaNs as zero."""
    _no_out("nansum", out)
    return _nan_reduction("nansum", a, sum, 0, False, axis, keepdims, where, dtype=dtype,
                          initial=initial)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``prod`` treating NaNs as one."""
    _no_out("nanprod", out)
    return _nan_reduction("nanprod", a, prod, 1, False, axis, keepdims, where, dtype=dtype,
                          initial=initial)


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """``max`` ignoring NaNs; an all-NaN slice gives NaN (unless ``initial`` is given)."""
    _no_out("nanmax", out)
    return _nan_reduction("nanmax", a, max, -np.inf, initial is None, axis, keepdims, where,
                          initial=initial)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """``min`` ignoring NaNs; an all-NaN slice gives NaN (unless ``initial`` is given)."""
    _no_out("nanmin", out)
    return _nan_reduction("nanmin", a, min, np.inf, initial is None, axis, keepdims, where,
                          initial=initial)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    """``mean`` ignoring NaNs (an all-NaN slice gives NaN)."""
    _no_out("nanmean", out)
    a = _operand("nanmean", a)
    aval = core.get_aval(a)
    reduction_axes("nanmean", axis, aval.ndim)
    if not dtypes.is_inexact(aval.dtype):
        return mean(a, axis, dtype, keepdims=keepdims, where=where)
    dtype = aval.dtype if dtype is None else _user_dtype("nanmean", dtype)
    keep = logical_not(isnan(a))
    n = sum(keep, axis=axis, dtype=dtypes.default_int_dtype(), keepdims=keepdims, where=where)
    total = nansum(a, axis, dtype=dtype, keepdims=keepdims, where=where)
    return lax.div(total, lax.convert_element_type(n, dtype))


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
    """``var`` ignoring NaNs (NaN where fewer than ``ddof + 1`` values remain)."""
    _no_out("nanvar", out)
    return _nanvar("nanvar", a, axis, dtype, ddof, keepdims, where)


def _nanvar(name, a, axis, dtype, ddof, keepdims, where):
    a = _operand(name, a)
    aval = core.get_aval(a)
    reduction_axes(name, axis, aval.ndim)
    comp, dtype = _var_promote_types(name, aval.dtype, dtype)
    a = lax.convert_element_type(a, comp)
    nan_mask = isnan(a)
    a_mean = broadcast_to_shape(nanmean(a, axis, comp, keepdims=True, where=where), aval.shape)
    sq = _sq_abs(_where(nan_mask, 0, lax.sub(a, a_mean)))
    rdt = core.get_aval(sq).dtype
    n = sum(logical_not(nan_mask), axis=axis, keepdims=keepdims, where=where)
    n = lax.sub(n, lax.convert_element_type(ddof, core.get_aval(n).dtype)) if not isinstance(
        ddof, int) else lax.sub(n, np.asarray(ddof, core.get_aval(n).dtype)[()])
    bad = lax.le(n, np.asarray(0, core.get_aval(n).dtype)[()])
    total = _where(bad, np.nan, sum(sq, axis, dtype=rdt, keepdims=keepdims, where=where))
    divisor = lax.convert_element_type(_where(bad, 1, n), rdt)
    return lax.convert_element_type(lax.div(total, divisor), dtype)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
    """``std`` ignoring NaNs: ``sqrt(nanvar(...))``."""
    _no_out("nanstd", out)
    return lax.sqrt(_nanvar("nanstd", a, axis, dtype, ddof, keepdims, where))


# --- cumulative reductions ---


def _cumulative(name, lax_fn, a, axis, dtype, out, fill_nan=False, fill_value=0,
                promote_integers=False):
    _no_out(name, out)
    a = _operand(name, a)
    if axis is None or core.get_aval(a).ndim == 0:
        a = lax.reshape(a, (core.get_aval(a).size,))
    axis = canonicalize_axis(name, 0 if axis is None else axis, core.get_aval(a).ndim)
    if fill_nan and dtypes.is_inexact(core.get_aval(a).dtype):
        a = _where(isnan(a), fill_value, a)
    a_dtype = core.get_aval(a).dtype
    user = None if dtype is None else _user_dtype(name, dtype)
    result_type = a_dtype if user is None else user
    if (user is None and promote_integers) or result_type == np.bool_:
        result_type = _promote_integer_dtype(result_type)
    if a_dtype != np.bool_ and user == np.bool_:
        a = to_bool(a)
    r = lax_fn(lax.convert_element_type(a, result_type), axis)
    return lax.convert_element_type(r, np.bool_) if user == np.bool_ else r


def cumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum along ``axis`` (None: of the flattened array).

    Booleans accumulate in the default int; other dtypes keep their dtype (as JAX).

    >>> import functrax.numpy as fnp
    >>> fnp.cumsum(fnp.array([[1, 2], [3, 4]]), axis=1)
    Array([[1, 3],
           [3, 7]], dtype=int32)
    """
    return _cumulative("cumsum", lax.cumsum, a, axis, dtype, out)


def cumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product along ``axis`` (None: of the flattened array)."""
    return _cumulative("cumprod", lax.cumprod, a, axis, dtype, out)


def nancumsum(a, axis=None, dtype=None, out=None):
    """``cumsum`` treating NaNs as zero."""
    return _cumulative("nancumsum", lax.cumsum, a, axis, dtype, out, fill_nan=True,
                       fill_value=0)


def nancumprod(a, axis=None, dtype=None, out=None):
    """``cumprod`` treating NaNs as one."""
    return _cumulative("nancumprod", lax.cumprod, a, axis, dtype, out, fill_nan=True,
                       fill_value=1)


def _cumulative_api(name, lax_fn, x, axis, dtype, include_initial, initial, promote):
    x = _operand(name, x)
    nd = core.get_aval(x).ndim
    if nd == 0:
        raise ValueError(f"{name}: the input must be non-scalar, however a scalar value or "
                         "scalar array was given.")
    if axis is None:
        if nd > 1:
            raise ValueError(f"{name}: the input array has rank {nd}, however axis was not set "
                             "to an explicit value. The axis argument is only optional for "
                             "one-dimensional arrays.")
        axis = 0
    axis = canonicalize_axis(name, axis, nd)
    out = _cumulative(name, lax_fn, x, axis, dtype, None, promote_integers=promote)
    if include_initial:
        shape = list(core.get_aval(out).shape)
        shape[axis] = 1
        out = lax.concatenate([lax.full(shape, initial, core.get_aval(out).dtype), out], axis)
    return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """Array-API cumulative sum (narrow integers promote); ``include_initial`` prepends 0."""
    return _cumulative_api("cumulative_sum", lax.cumsum, x, axis, dtype, include_initial, 0,
                           True)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """Array-API cumulative product; ``include_initial`` prepends 1."""
    return _cumulative_api("cumulative_prod", lax.cumprod, x, axis, dtype, include_initial, 1,
                           False)


# --- other reductions ---


def ptp(a, axis=None, out=None, keepdims=False):
    """Peak to peak: ``max(a, axis) - min(a, axis)``.

    >>> import functrax.numpy as fnp
    >>> fnp.ptp(fnp.array([[4, 9], [2, 3]]), axis=1)
    Array([5, 1], dtype=int32)
    """
    _no_out("ptp", out)
    a = _operand("ptp", a)
    reduction_axes("ptp", axis, core.get_aval(a).ndim)
    if core.get_aval(a).dtype == np.bool_:
        raise TypeError("ptp: boolean inputs are not supported (max - min of booleans is a "
                        "boolean subtract); cast first, e.g. a.astype(int)")
    return lax.sub(max(a, axis=axis, keepdims=keepdims), min(a, axis=axis, keepdims=keepdims))


def count_nonzero(a, axis=None, keepdims=False):
    """Number of nonzero elements along ``axis`` (default int dtype)."""
    a = _operand("count_nonzero", a)
    reduction_axes("count_nonzero", axis, core.get_aval(a).ndim)
    zero = np.zeros((), core.get_aval(a).dtype)[()]
    return sum(lax.ne(a, zero), axis=axis, dtype=dtypes.default_int_dtype(), keepdims=keepdims)


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """Weighted average over ``axis``; with ``returned=True`` also the sum of the weights.

    1-D ``weights`` of the length of a single ``axis`` weigh along that axis.

    >>> import functrax.numpy as fnp
    >>> fnp.average(fnp.array([1.0, 2.0, 4.0]), weights=fnp.array([1.0, 1.0, 2.0]))
    Array(2.75, dtype=float32)
    """
    if weights is None:
        a, = promote_dtypes_inexact(_operand("average", a))
        aval = core.get_aval(a)
        axes = reduction_axes("average", axis, aval.ndim)
        avg = mean(a, axis=axis, keepdims=keepdims)
        wsum = lax.full(core.get_aval(avg).shape, math.prod(aval.shape[d] for d in axes),
                        core.get_aval(avg).dtype)
        return (avg, wsum) if returned else avg
    check_arraylike("average", a, weights)
    a, weights = promote_dtypes_inexact(asarray_operand(a), asarray_operand(weights))
    a, weights = asarray_operand(a), asarray_operand(weights)
    a_shape, w_shape = core.get_aval(a).shape, core.get_aval(weights).shape
    reduction_axes("average", axis, len(a_shape))
    if a_shape != w_shape:
        weights = _weights_along_axis(a_shape, w_shape, weights, axis)
    wsum = sum(weights, axis=axis, keepdims=keepdims)
    avg = true_divide(sum(lax.mul(a, weights), axis=axis, keepdims=keepdims), wsum)
    if returned:
        return avg, broadcast_to_shape(wsum, core.get_aval(avg).shape)
    return avg


def _weights_along_axis(a_shape, w_shape, weights, axis):
    if len(w_shape) != 1:
        raise ValueError(f"average: 1D weights expected when shapes of a and weights differ "
                         f"(a.shape={a_shape}, weights.shape={w_shape}).")
    if axis is None:
        raise ValueError(f"average: axis must be specified when shapes of a and weights differ "
                         f"(a.shape={a_shape}, weights.shape={w_shape}).")
    if isinstance(axis, (tuple, list)):
        raise ValueError("average: single axis expected when shapes of a and weights differ.")
    ax = canonicalize_axis("average", axis, len(a_shape))
    if w_shape[0] != a_shape[ax]:
        raise ValueError(f"average: length of weights ({w_shape[0]}) not compatible with "
                         f"axis {axis} of a.shape={a_shape}.")
    return lax.broadcast_in_dim(weights, a_shape, (ax,))
