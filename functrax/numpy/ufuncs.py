"""Elementwise functions of ``functrax.numpy``: promote, broadcast, then bind a primitive."""
from __future__ import annotations

import operator

import numpy as np

from functrax import core, dtypes, lax
from functrax.numpy._util import (
    check_arraylike, promote_args, promote_args_inexact, promote_args_numeric, promote_shapes,
    promote_dtypes,
)


def _one_to_one(lax_fn, promote, name):
    def fn(x, /):
        x, = promote(name, x)
        return lax_fn(x)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}``, as ``numpy.{name}``."
    return fn


def _two_to_one(lax_fn, promote, name):
    def fn(x1, x2, /):
        x1, x2 = promote(name, x1, x2)
        return lax_fn(x1, x2)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}`` with broadcasting and JAX type promotion."
    return fn


_I, _P, _N = promote_args_inexact, promote_args, promote_args_numeric

# --- unary ---
sin, cos, tan = (_one_to_one(f, _I, n) for f, n in ((lax.sin, "sin"), (lax.cos, "cos"),
                                                     (lax.tan, "tan")))
arcsin, arccos, arctan = (_one_to_one(f, _I, n) for f, n in (
    (lax.asin, "arcsin"), (lax.acos, "arccos"), (lax.atan, "arctan")))
sinh, cosh, tanh = (_one_to_one(f, _I, n) for f, n in ((lax.sinh, "sinh"), (lax.cosh, "cosh"),
                                                        (lax.tanh, "tanh")))
arcsinh, arccosh, arctanh = (_one_to_one(f, _I, n) for f, n in (
    (lax.asinh, "arcsinh"), (lax.acosh, "arccosh"), (lax.atanh, "arctanh")))
exp, exp2, expm1 = (_one_to_one(f, _I, n) for f, n in ((lax.exp, "exp"), (lax.exp2, "exp2"),
                                                        (lax.expm1, "expm1")))
log, log1p, sqrt, cbrt = (_one_to_one(f, _I, n) for f, n in (
    (lax.log, "log"), (lax.log1p, "log1p"), (lax.sqrt, "sqrt"), (lax.cbrt, "cbrt")))
negative = _one_to_one(lax.neg, _N, "negative")
sign = _one_to_one(lax.sign, _N, "sign")
square = _one_to_one(lax.square, _N, "square")
asin, acos, atan = arcsin, arccos, arctan
asinh, acosh, atanh = arcsinh, arccosh, arctanh


def _float_or_identity(lax_fn, name):
    def fn(x, /):
        x, = promote_args_numeric(name, x)
        if core.get_aval(x).dtype.kind in "iub":
            return x
        return lax_fn(x)
    fn.__name__ = name
    return fn


floor = _float_or_identity(lax.floor, "floor")
ceil = _float_or_identity(lax.ceil, "ceil")
rint = _float_or_identity(lambda x: lax.round(x, 1), "rint")


def trunc(x, /):
    x, = promote_args_numeric("trunc", x)
    if core.get_aval(x).dtype.kind in "iub":
        return x
    return where(lax.lt(x, 0), lax.ceil(x), lax.floor(x))


def fix(x, out=None):
    return trunc(x)


def absolute(x, /):
    x, = promote_args_numeric("absolute", x)
    return x if core.get_aval(x).dtype.kind in "ub" else lax.abs(x)


abs = absolute


def fabs(x, /):
    x, = promote_args_inexact("fabs", x)
    return lax.abs(x)


def positive(x, /):
    x, = promote_args_numeric("positive", x)
    return x


def log2(x, /):
    x, = promote_args_inexact("log2", x)
    return lax.div(lax.log(x), lax.log(lax.full((), 2, core.get_aval(x).dtype)))


def log10(x, /):
    x, = promote_args_inexact("log10", x)
    return lax.div(lax.log(x), lax.log(lax.full((), 10, core.get_aval(x).dtype)))


def reciprocal(x, /):
    x, = promote_args_inexact("reciprocal", x)
    return lax.div(lax.full((), 1, core.get_aval(x).dtype), x)


def isfinite(x, /):
    x, = promote_args("isfinite", x)
    dt = core.get_aval(x).dtype
    if dt.kind in "iub":
        return lax.full(np.shape(x) if not hasattr(x, "shape") else x.shape, True)
    return lax.is_finite(x)


def isnan(x, /):
    x, = promote_args("isnan", x)
    return lax.ne(x, x)


def isinf(x, /):
    x, = promote_args("isinf", x)
    dt = core.get_aval(x).dtype
    if dt.kind in "iub":
        return lax.full(x.shape if hasattr(x, "shape") else (), False)
    return lax.eq(lax.abs(x), lax.full((), np.inf, dt))


def signbit(x, /):
    x, = promote_args("signbit", x)
    dt = core.get_aval(x).dtype
    if dt.kind in "ub":
        return lax.full(x.shape if hasattr(x, "shape") else (), False)
    if dt.kind == "i":
        return lax.lt(x, 0)
    return lax.lt(copysign(1, x), 0)


def deg2rad(x, /):
    x, = promote_args_inexact("deg2rad", x)
    return lax.mul(x, np.pi / 180)


def rad2deg(x, /):
    x, = promote_args_inexact("rad2deg", x)
    return lax.mul(x, 180 / np.pi)


radians, degrees = deg2rad, rad2deg


def logical_not(x, /):
    x, = promote_args("logical_not", x)
    return lax.bitwise_not(_to_bool(x))


def bitwise_not(x, /):
    x, = promote_args("bitwise_not", x)
    return lax.bitwise_not(x)


invert = bitwise_not


def real(x, /):
    x, = promote_args("real", x)
    return lax.real(x) if core.get_aval(x).dtype.kind == "c" else x


def imag(x, /):
    x, = promote_args("imag", x)
    if core.get_aval(x).dtype.kind == "c":
        return lax.imag(x)
    return lax.full_like(x, 0)


def conjugate(x, /):
    x, = promote_args("conjugate", x)
    return lax.conj(x) if core.get_aval(x).dtype.kind == "c" else x


conj = conjugate


# --- binary ---
add = _two_to_one(lax.add, _P, "add")
subtract = _two_to_one(lax.sub, _N, "subtract")
multiply = _two_to_one(lax.mul, _P, "multiply")
maximum = _two_to_one(lax.max, _P, "maximum")
minimum = _two_to_one(lax.min, _P, "minimum")
arctan2 = _two_to_one(lax.atan2, _I, "arctan2")
atan2 = arctan2
nextafter = _two_to_one(lax.nextafter, _I, "nextafter")
equal = _two_to_one(lax.eq, _P, "equal")
not_equal = _two_to_one(lax.ne, _P, "not_equal")
less = _two_to_one(lax.lt, _P, "less")
less_equal = _two_to_one(lax.le, _P, "less_equal")
greater = _two_to_one(lax.gt, _P, "greater")
greater_equal = _two_to_one(lax.ge, _P, "greater_equal")
bitwise_and = _two_to_one(lax.bitwise_and, _P, "bitwise_and")
bitwise_or = _two_to_one(lax.bitwise_or, _P, "bitwise_or")
bitwise_xor = _two_to_one(lax.bitwise_xor, _P, "bitwise_xor")
left_shift = _two_to_one(lax.shift_left, _P, "left_shift")
right_shift = _two_to_one(lax.shift_right_arithmetic, _P, "right_shift")


def _to_bool(x):
    return x if core.get_aval(x).dtype == np.bool_ else lax.ne(x, lax.full((), 0, x.dtype))


def _logical(lax_fn, name):
    def fn(x1, x2, /):
        x1, x2 = promote_args(name, x1, x2)
        return lax_fn(_to_bool(_as_array(x1)), _to_bool(_as_array(x2)))
    fn.__name__ = name
    return fn


def _as_array(x):
    return x if isinstance(x, (core.Array, core.Tracer)) else core.Array(np.asarray(x))


logical_and = _logical(lax.bitwise_and, "logical_and")
logical_or = _logical(lax.bitwise_or, "logical_or")
logical_xor = _logical(lax.bitwise_xor, "logical_xor")


def true_divide(x1, x2, /):
    x1, x2 = promote_args_inexact("true_divide", x1, x2)
    return lax.div(x1, x2)


divide = true_divide


def floor_divide(x1, x2, /):
    x1, x2 = promote_args_numeric("floor_divide", x1, x2)
    dt = core.get_aval(x1).dtype
    if dt.kind == "u":
        return lax.div(x1, x2)
    if dt.kind == "i":  # round toward -inf: correct truncation when signs differ
        q = lax.div(x1, x2)
        r = lax.rem(x1, x2)
        fix_ = logical_and(not_equal(r, 0), not_equal(lax.lt(r, 0), lax.lt(x2, 0)))
        return where(fix_, lax.sub(q, 1), q)
    return lax.floor(lax.div(x1, x2)) if dt.kind == "f" else lax.div(x1, x2)


def remainder(x1, x2, /):
    x1, x2 = promote_args_numeric("remainder", x1, x2)
    r = lax.rem(x1, x2)
    if core.get_aval(r).dtype.kind == "u":
        return r
    fix_ = logical_and(not_equal(r, 0), not_equal(lax.lt(r, 0), lax.lt(x2, 0)))
    return where(fix_, lax.add(r, x2), r)


mod = remainder


def fmod(x1, x2, /):
    x1, x2 = promote_args_numeric("fmod", x1, x2)
    return lax.rem(x1, x2)


def divmod(x1, x2, /):
    return floor_divide(x1, x2), remainder(x1, x2)


def power(x1, x2, /):
    """``x1 ** x2``; a static Python int exponent becomes ``integer_pow``."""
    check_arraylike("power", x1, x2)
    if type(x2) is int or (isinstance(x2, np.integer) and np.ndim(x2) == 0):
        x1, = promote_args_numeric("power", x1)
        return lax.integer_pow(x1, int(x2))
    x1, x2 = promote_args_numeric("power", x1, x2)
    if core.get_aval(x1).dtype.kind in "iu":
        return _integer_power(x1, x2)
    return lax.pow(x1, x2)


def _integer_power(x, y):
    # exponentiation by squaring over the bits of y (negative exponents give 0, as XLA)
    x, y = _broadcast_all("power", x, y)
    dt = core.get_aval(x).dtype
    acc = lax.full(core.get_aval(x).shape, 1, dt)
    base, e = x, y
    for _ in range(dt.itemsize * 8 - 1):
        bit = lax.ne(lax.bitwise_and(e, lax.full((), 1, dt)), lax.full((), 0, dt))
        acc = lax.select(bit, lax.mul(acc, base), acc)
        base = lax.mul(base, base)
        e = lax.shift_right_logical(e, lax.full((), 1, dt))
    return lax.select(lax.lt(y, lax.full((), 0, dt)), lax.full_like(acc, 0), acc)


def float_power(x1, x2, /):
    x1, x2 = promote_args_inexact("float_power", x1, x2)
    return lax.pow(x1, x2)


def copysign(x1, x2, /):
    x1, x2 = promote_args_inexact("copysign", x1, x2)
    return where(signbit(x2), lax.neg(lax.abs(x1)), lax.abs(x1))


def hypot(x1, x2, /):
    x1, x2 = promote_args_inexact("hypot", x1, x2)
    return lax.sqrt(lax.add(lax.mul(x1, x1), lax.mul(x2, x2)))


def logaddexp(x1, x2, /):
    x1, x2 = promote_args_inexact("logaddexp", x1, x2)
    amax = lax.max(x1, x2)
    delta = lax.sub(x1, x2)
    safe = where(isnan(delta), amax, lax.add(amax, lax.log1p(lax.exp(lax.neg(lax.abs(delta))))))
    return safe


def logaddexp2(x1, x2, /):
    x1, x2 = promote_args_inexact("logaddexp2", x1, x2)
    ln2 = np.log(2)
    return lax.div(logaddexp(lax.mul(x1, ln2), lax.mul(x2, ln2)), ln2)


# --- selection ---


def where(condition, x=None, y=None, /):
    """``x`` where ``condition`` else ``y`` (the one-argument form needs a concrete mask)."""
    if x is None and y is None:
        from functrax.numpy.indexing import nonzero
        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("functrax.numpy.where: give either only `condition`, or both `x` and "
                         "`y`")
    check_arraylike("where", condition, x, y)
    x, y = promote_dtypes(x, y)
    condition = _to_bool(_as_array(condition)) if type(condition) is not bool else condition
    condition, x, y = _broadcast_all("where", condition, x, y)
    return lax.select(condition, x, y)


def _broadcast_all(name, *args):
    from functrax.numpy._util import broadcast_shapes_named, broadcast_to_shape, shape_of
    shape = broadcast_shapes_named(name, *[shape_of(a) for a in args])
    out = []
    for a in args:
        if type(a) in (bool, int, float, complex):
            a = core.Array(np.asarray(a, dtypes.python_scalar_dtype(a)),
                           weak_type=type(a) is not bool)
        out.append(broadcast_to_shape(a, shape))
    return out


def clip(arr, min=None, max=None, /):
    """Clamp ``arr`` into ``[min, max]`` (either bound may be None)."""
    check_arraylike("clip", arr)
    if min is not None:
        arr = maximum(min, arr)
    if max is not None:
        arr = minimum(max, arr)
    return arr


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    x, = promote_args("nan_to_num", x)
    dt = core.get_aval(x).dtype
    if dt.kind not in "fc":
        return x
    info = dtypes.finfo(dt)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    x = where(isnan(x), nan, x)
    x = where(lax.eq(x, np.inf), posinf, x)
    return where(lax.eq(x, -np.inf), neginf, x)


def round(a, decimals=0):
    """Round half to even, to ``decimals`` places (as numpy and JAX)."""
    a, = promote_args_numeric("round", a)
    dt = core.get_aval(a).dtype
    if dt.kind in "iub":
        return a
    if decimals == 0:
        return lax.round(a, 1)
    factor = np.asarray(10.0 ** operator.index(decimals), dt)[()]
    return lax.div(lax.round(lax.mul(a, factor), 1), factor)


around = round
