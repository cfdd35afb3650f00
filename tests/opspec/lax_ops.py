"""Op specs: ``functrax.lax`` functions called directly, one or more per primitive.

References are numpy (or the ``math`` / ``statistics`` modules, vectorized, for the special
functions); they are written independently of the numpy backend. Gather/scatter have their
own tests (tests/test_gather_scatter.py).
"""
import math
import statistics

import ml_dtypes
import numpy as np

import functrax
from functrax import lax
from functrax import primitives as P
from tests.opspec.spec import BOOL, F32, I8, I32, U8, OpSpec, distinct, nonzero, positive, uniform

C64 = np.dtype(np.complex64)
F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)

UN = (((3,),), ((2, 3),))
BIN = (((3,), (3,)), ((2, 3), (2, 3)), ((2, 3), ()), ((), (4,)))


# --- input domains ---


def cycle(values):
    """Every value of ``values`` (tiled to fill the shape, in a random order)."""
    vals = np.asarray(values, np.float64)

    def gen(rng, shape, dtype):
        n = int(np.prod(shape, dtype=np.int64))
        out = np.resize(vals, n)
        rng.shuffle(out)
        return out.reshape(shape).astype(dtype)
    return gen


def complex_uniform(lo=-2.0, hi=2.0):
    def gen(rng, shape, dtype):
        return (rng.uniform(lo, hi, shape) + 1j * rng.uniform(lo, hi, shape)).astype(dtype)
    return gen


def away_from_ints(lo=-3.9, hi=4.0):
    """Non-integers at least 0.1 from the nearest integer (avoids gamma-function poles)."""
    def gen(rng, shape, dtype):
        x = rng.uniform(lo, hi, shape)
        return (np.floor(x) + 0.1 + 0.8 * (x - np.floor(x))).astype(dtype)
    return gen


def with_nan(base):
    def gen(rng, shape, dtype):
        x = base(rng, shape, dtype)
        if x.size:
            x.flat[rng.randint(x.size)] = np.nan
        return x
    return gen


# --- reference helpers ---


def in_f64(fn):
    """Evaluate ``fn`` in float64 and cast back to the first argument's dtype."""
    def ref(*args, **kw):
        out = fn(*[np.asarray(a, np.float64) for a in args], **kw)
        return np.asarray(out).astype(args[0].dtype)
    return ref


_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])
_lgamma = np.vectorize(math.lgamma, otypes=[np.float64])
_NORMAL = statistics.NormalDist()


@np.vectorize
def _erf_inv(y):
    return _NORMAL.inv_cdf((y + 1.0) / 2.0) / math.sqrt(2.0)


@np.vectorize
def _digamma(x):
    h = 1e-5 * max(1.0, abs(x))  # central difference of lgamma
    return (math.lgamma(x + h) - math.lgamma(x - h)) / (2 * h)


def _trunc_div(x, y):
    q = np.abs(x) // np.abs(y)
    return (np.sign(x) * np.sign(y) * q).astype(x.dtype)


def _int_rem(x, y):
    return (x - y * _trunc_div(x, y)).astype(x.dtype)


def _shift(kind):
    """XLA shifts: the amount is read as unsigned; amounts >= the bit width saturate."""
    def ref(x, y):
        x, y = np.broadcast_arrays(x, y)
        bits = x.dtype.itemsize * 8
        out = np.empty_like(x)
        for i, (a, s) in enumerate(zip(x.flat, y.flat)):
            a, s = int(a), int(s)
            if kind == "left":
                v = 0 if not 0 <= s < bits else a << s
            elif kind == "arith":
                v = (-1 if a < 0 else 0) if not 0 <= s < bits else a >> s
            else:
                v = 0 if not 0 <= s < bits else (a % (1 << bits)) >> s
            v %= 1 << bits  # wrap to the width, then reinterpret as signed
            out.flat[i] = v - (1 << bits) if v >= 1 << (bits - 1) else v
        return out
    return ref


def _round_away(x):
    x64 = x.astype(np.float64)
    return (np.sign(x64) * np.floor(np.abs(x64) + 0.5)).astype(x.dtype)


def _cum(ufunc):
    def ref(x, axis=0, reverse=False):
        if reverse:
            x = np.flip(x, axis)
        out = ufunc.accumulate(x, axis=axis, dtype=x.dtype)
        return np.flip(out, axis) if reverse else out
    return ref


def _pad_ref(x, value, config):
    value = np.asarray(value, x.dtype)
    for axis, (lo, hi, interior) in enumerate(config):
        n = x.shape[axis]
        if n and interior:
            shape = list(x.shape)
            shape[axis] = n + (n - 1) * interior
            y = np.full(shape, value, x.dtype)
            idx = [slice(None)] * x.ndim
            idx[axis] = slice(None, None, interior + 1)
            y[tuple(idx)] = x
            x = y
        for amount, at_end in ((lo, False), (hi, True)):
            if amount >= 0:
                shape = list(x.shape)
                shape[axis] = amount
                fill = np.full(shape, value, x.dtype)
                x = np.concatenate([x, fill] if at_end else [fill, x], axis=axis)
            else:
                keep = range(0, x.shape[axis] + amount) if at_end else range(-amount,
                                                                            x.shape[axis])
                x = np.take(x, list(keep), axis=axis)
    return x


def _clamped(starts, shape, sizes):
    return [min(max(int(s), 0), d - n) for s, d, n in zip(starts, shape, sizes)]


def _dynamic_slice_ref(x, starts, sizes):
    st = _clamped(starts, x.shape, sizes)
    return x[tuple(slice(s, s + n) for s, n in zip(st, sizes))]


def _dynamic_update_slice_ref(x, u, starts):
    st = _clamped(starts, x.shape, u.shape)
    out = x.copy()
    out[tuple(slice(s, s + n) for s, n in zip(st, u.shape))] = u
    return out


def _sort_ref(*ops, dimension=-1, num_keys=1):
    moved = [np.moveaxis(o, dimension, -1) for o in ops]
    keys = moved[:num_keys]
    order = np.empty(moved[0].shape, np.int64)
    for idx in np.ndindex(*moved[0].shape[:-1]):
        rows = [tuple(k[idx][j] for k in keys) for j in range(moved[0].shape[-1])]
        order[idx] = sorted(range(len(rows)), key=lambda j: _nan_last(rows[j]))  # stable
    outs = [np.moveaxis(np.take_along_axis(m, order, axis=-1), -1, dimension) for m in moved]
    return outs[0] if len(ops) == 1 else tuple(outs)


def _nan_last(row):
    return tuple((bool(np.isnan(v)), 0.0 if np.isnan(v) else v) if isinstance(
        v, np.floating) else (False, v) for v in row)


def _einsum_ref(spec, out_dtype=None):
    def ref(a, b):
        dt = out_dtype or a.dtype
        return np.einsum(spec, a.astype(np.float64 if dt.kind == "f" else np.int64),
                         b.astype(np.float64 if dt.kind == "f" else np.int64)).astype(dt)
    return ref


def _top_k_ref(x, k):
    idx = np.argsort(-x.astype(np.float64), axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, idx, -1), idx.astype(np.int32)


def _clz_ref(x):
    bits = x.dtype.itemsize * 8
    mask = (1 << bits) - 1
    return np.array([bits - (int(v) & mask).bit_length() for v in x.ravel()],
                    x.dtype).reshape(x.shape)


def _mulhi_ref(x, y):
    x, y = np.broadcast_arrays(x, y)
    bits = x.dtype.itemsize * 8
    out = [(int(a) * int(b)) >> bits for a, b in zip(x.ravel(), y.ravel())]
    return np.array(out, np.int64).astype(x.dtype).reshape(x.shape)


def _spec(name, fn, ref, **kw):
    return OpSpec("lax_" + name, fn, ref, **kw)


def _unary(name, ref, dts=(F32,), domain=uniform(), shapes=UN, prim=None, fn=None, **kw):
    return _spec(name, fn or getattr(lax, name), ref, shapes=shapes, dtypes=dts,
                 domain=domain, primitives=(prim or name,), **kw)


def _binary(name, ref, dts=(F32,), domain=uniform(), shapes=BIN, prim=None, **kw):
    return _spec(name, getattr(lax, name), ref, shapes=shapes, dtypes=dts, domain=domain,
                 primitives=(prim or name,), **kw)


# --- elementwise ---

UNARY = [
    _unary("neg", np.negative, dts=(F32, I32, C64)),
    _unary("sign", np.sign, dts=(F32, I32), domain=cycle([-2.0, -0.5, 0.0, 1.0, 3.0])),
    _unary("abs", np.abs, dts=(F32, I32)),
    _spec("abs_complex", lax.abs, lambda x: np.abs(x), shapes=UN, dtypes=(C64,),
          domain=complex_uniform(), primitives=("abs",)),
    _unary("floor", np.floor),
    _unary("ceil", np.ceil),
    _unary("is_finite", np.isfinite, shapes=(((8,),), ((2, 4),)),
           domain=cycle([0.0, np.inf, -np.inf, np.nan, 1.5, -3e38, 3e38, -0.0])),
    _unary("exp", np.exp),
    _spec("exp_complex", lax.exp, np.exp, shapes=UN, dtypes=(C64,), domain=complex_uniform(),
          primitives=("exp",)),
    _unary("exp2", np.exp2),
    _unary("log", np.log, domain=positive()),
    _spec("log_complex", lax.log, np.log, shapes=UN, dtypes=(C64,), domain=complex_uniform(),
          primitives=("log",)),
    _unary("log1p", np.log1p, domain=uniform(-0.9, 3.0)),
    _unary("expm1", np.expm1),
    _unary("tanh", np.tanh),
    _unary("logistic", in_f64(lambda x: 1.0 / (1.0 + np.exp(-x))), domain=uniform(-8.0, 8.0)),
    _unary("sqrt", np.sqrt, domain=positive(0.0, 9.0)),
    _spec("sqrt_complex", lax.sqrt, np.sqrt, shapes=UN, dtypes=(C64,),
          domain=complex_uniform(), primitives=("sqrt",)),
    _unary("rsqrt", in_f64(lambda x: 1.0 / np.sqrt(x)), domain=positive(0.1, 9.0)),
    _unary("cbrt", np.cbrt, domain=uniform(-27.0, 27.0)),
    _unary("sin", np.sin),
    _unary("cos", np.cos),
    _unary("tan", np.tan, domain=uniform(-1.2, 1.2)),
    _unary("asin", np.arcsin, domain=uniform(-0.99, 0.99)),
    _unary("acos", np.arccos, domain=uniform(-0.99, 0.99)),
    _unary("atan", np.arctan),
    _unary("sinh", np.sinh),
    _unary("cosh", np.cosh),
    _unary("asinh", np.arcsinh),
    _unary("acosh", np.arccosh, domain=uniform(1.0, 5.0)),
    _unary("atanh", np.arctanh, domain=uniform(-0.99, 0.99)),
    _unary("square", np.square, dts=(F32, I32)),
    _unary("bitwise_not", np.invert, dts=(I32, BOOL, U8), prim="not",
           domain=uniform(-100, 100)),
    _unary("population_count", lambda x: np.bitwise_count(x.view(f"u{x.itemsize}")).astype(
        x.dtype), dts=(I32, I8, U8), domain=uniform(-128, 127)),
    _unary("clz", lambda x: _clz_ref(x), dts=(I32, I8, U8),
           domain=cycle([0, 1, 2, 3, 64, 100, 127, -1, -128, -100])),
    _spec("reduce_precision_f16", lambda x: lax.reduce_precision(x, 5, 10),
          lambda x: x.astype(np.float16).astype(x.dtype), shapes=UN,
          domain=cycle([1.0009765625, 1.00048828125, 3.14159, -2.7e4, 7e-5, 0.1, -0.0, 7e4]),
          atol=0, rtol=0, primitives=("reduce_precision",)),
    _spec("reduce_precision_bf16", lambda x: lax.reduce_precision(x, 8, 7),
          lambda x: x.astype(BF16).astype(x.dtype), shapes=UN, domain=uniform(-1e3, 1e3),
          atol=0, rtol=0, primitives=("reduce_precision",)),
    _unary("reciprocal", lambda x: (1.0 / x.astype(np.float64)).astype(x.dtype),
           domain=nonzero(), prim="integer_pow"),
    _unary("erf", in_f64(_erf), domain=uniform(-3.0, 3.0)),
    _unary("erfc", in_f64(_erfc), domain=uniform(-2.0, 4.0), atol=1e-6),
    _unary("erf_inv", in_f64(_erf_inv), domain=uniform(-0.99, 0.99), atol=1e-5, rtol=1e-4),
    _unary("lgamma", in_f64(_lgamma), domain=positive(0.1, 8.0), atol=1e-5),
    _spec("lgamma_negative", lax.lgamma, in_f64(_lgamma), shapes=UN, domain=away_from_ints(),
          atol=1e-5, rtol=1e-4, primitives=("lgamma",)),
    _unary("digamma", in_f64(_digamma), domain=positive(0.1, 8.0), atol=1e-5, rtol=1e-4),
    _spec("digamma_negative", lax.digamma, in_f64(_digamma), shapes=UN,
          domain=away_from_ints(), atol=1e-4, rtol=1e-4, primitives=("digamma",)),
    _unary("real", np.real, dts=(C64,), domain=complex_uniform()),
    _unary("imag", np.imag, dts=(C64,), domain=complex_uniform()),
    _unary("conj", np.conj, dts=(C64,), domain=complex_uniform()),
    _spec("conj_real", lax.conj, np.conj, shapes=UN, primitives=("conj",)),
    _spec("copy", lambda x: P.copy_p.bind(x), np.copy, shapes=UN, dtypes=(F32, I32, BOOL),
          primitives=("copy",)),
    _spec("stop_gradient", lax.stop_gradient, lambda x: x, shapes=UN, dtypes=(F32, I32),
          primitives=("stop_gradient",)),
    _spec("jit_call", lambda x: _jitted_sin_sum(x), lambda x: np.sin(x) + np.sum(x),
          shapes=UN, dtypes=(F32,), primitives=("jit",)),
    _spec("cond_elementwise_pred", lambda x: lax.cond(
        lax.reduce_sum(x, tuple(range(x.ndim))) > 0, lambda x: lax.sin(x) * 2.0, lax.cos, x),
        lambda x: np.sin(x) * 2.0 if x.sum() > 0 else np.cos(x),
        shapes=UN, dtypes=(F32,), primitives=("cond",)),
    _spec("scan_running_sum", lambda x: lax.scan(
        lambda c, r: (c + lax.sin(r), c * r), lax.full(x.shape[1:], 0.5, x.dtype), x)[1],
        lambda x: np.concatenate([np.full((1,) + x.shape[1:], 0.5, x.dtype),
                                  0.5 + np.cumsum(np.sin(x), 0)[:-1]]) * x,
        shapes=UN, dtypes=(F32,), primitives=("scan",)),
    _spec("while_three_steps", lambda x: lax.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 0.5 + lax.sin(c[1])), (0, x))[1],
        lambda x: _three_steps(x), shapes=UN, dtypes=(F32,), primitives=("while",)),
]

ROUND_VALUES = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -0.49999997, 0.7, -1.2, 3.0, 0.0]

ROUNDING = [
    _spec("round_away_from_zero", lambda x: lax.round(x, 0), _round_away,
          shapes=(((12,),), ((3, 4),)), domain=cycle(ROUND_VALUES), primitives=("round",)),
    _spec("round_to_nearest_even", lambda x: lax.round(x, 1), np.rint,
          shapes=(((12,),), ((3, 4),)), domain=cycle(ROUND_VALUES), primitives=("round",)),
    _spec("round_random", lambda x: lax.round(x), _round_away, shapes=UN,
          domain=uniform(-5.0, 5.0), primitives=("round",)),
]

_CMP = cycle([-1.0, 0.0, 1.0, 2.0])
SHIFTS = cycle([0, 1, 5, 31, 32, 33, -1])
SHIFT_X = cycle([-100, -1, 7, 123456, -(2 ** 31), 2 ** 31 - 1, 3])

BINARY = [
    _binary("add", np.add, dts=(F32, I32, C64)),
    _binary("sub", np.subtract, dts=(F32, I32)),
    _binary("mul", np.multiply, dts=(F32, I32)),
    _binary("div", np.true_divide, domain=nonzero()),
    _spec("div_int", lax.div, _trunc_div, shapes=BIN, dtypes=(I32,),
          domain=(uniform(-9, 9), nonzero(-4, 4)), primitives=("div",)),
    _binary("rem", np.fmod, domain=(uniform(-9.0, 9.0), nonzero(-4.0, 4.0))),
    _spec("rem_int", lax.rem, _int_rem, shapes=BIN, dtypes=(I32,),
          domain=(uniform(-9, 9), nonzero(-4, 4)), primitives=("rem",)),
    _binary("pow", np.power, domain=(positive(), uniform())),
    _binary("max", np.maximum, dts=(F32, I32, BOOL)),
    _binary("min", np.minimum, dts=(F32, I32, BOOL)),
    _binary("atan2", np.arctan2),
    _binary("complex", lambda x, y: (x + 1j * y.astype(np.float64)).astype(np.complex64)),
    _spec("top_k", lambda x: lax.top_k(x, 2), lambda x: _top_k_ref(x, 2),
          shapes=(((5,),), ((3, 4),)), dtypes=(F32, I32), domain=distinct(),
          primitives=("top_k",)),
    _spec("top_k_ties_axis0", lambda x: lax.top_k(x, 2, axis=0),
          lambda x: tuple(np.moveaxis(r, -1, 0) for r in _top_k_ref(np.moveaxis(x, 0, -1), 2)),
          shapes=(((4, 3),),), dtypes=(F32,), domain=cycle([1.0, 2.0, 2.0, 0.5]),
          primitives=("top_k",)),
    _spec("tile", lambda x: lax.tile(x, (2, 3)), lambda x: np.tile(x, (2, 3)),
          shapes=(((3,),), ((2, 3),)), dtypes=(F32, I32), primitives=("broadcast_in_dim",)),
    _spec("collapse", lambda x: lax.collapse(x, 1), lambda x: x.reshape(x.shape[0], -1),
          shapes=(((2, 3, 4),),), primitives=("reshape",)),
    _spec("split", lambda x: tuple(lax.split(x, (1, 3), axis=1)),
          lambda x: (x[:, :1], x[:, 1:]), shapes=(((2, 4),),), primitives=("slice",)),
    _spec("batch_matmul", lax.batch_matmul, lambda a, b: np.matmul(a, b),
          shapes=(((2, 3, 4), (2, 4, 5)),), primitives=("dot_general",)),
    _spec("associative_scan_add", lambda x: lax.associative_scan(lax.add, x, axis=-1),
          lambda x: np.cumsum(x, -1), shapes=(((7,),), ((2, 8),)), primitives=("pad",)),
    _spec("associative_scan_mul_reverse",
          lambda x: lax.associative_scan(lax.mul, x, reverse=True),
          lambda x: np.flip(np.cumprod(np.flip(x, 0), 0), 0), shapes=(((5, 2),),),
          domain=uniform(0.5, 1.5), primitives=("pad",)),
    _spec("optimization_barrier", lambda x: lax.optimization_barrier(x) * 2.0,
          lambda x: x * 2.0, shapes=UN, primitives=("optimization_barrier",)),
    _spec("mulhi", lax.mulhi, lambda x, y: _mulhi_ref(x, y), shapes=BIN, dtypes=(I32, U8),
          domain=cycle([0, 1, -1, 7, 2 ** 31 - 1, -(2 ** 31), 12345, 255, 200]),
          primitives=("mul", "shift_right_logical")),
    _binary("nextafter", np.nextafter, domain=(uniform(), cycle([-np.inf, 0.0, 1.0, np.inf]))),
    _binary("bitwise_and", np.bitwise_and, dts=(I32, BOOL), prim="and",
            domain=uniform(-100, 100)),
    _binary("bitwise_or", np.bitwise_or, dts=(I32, BOOL), prim="or", domain=uniform(-100, 100)),
    _binary("bitwise_xor", np.bitwise_xor, dts=(I32, BOOL), prim="xor",
            domain=uniform(-100, 100)),
    _binary("shift_left", _shift("left"), dts=(I32,), shapes=(((7,), (7,)), ((7,), ())),
            domain=(SHIFT_X, SHIFTS)),
    _binary("shift_right_arithmetic", _shift("arith"), dts=(I32,),
            shapes=(((7,), (7,)), ((7,), ())), domain=(SHIFT_X, SHIFTS)),
    _binary("shift_right_logical", _shift("logical"), dts=(I32,),
            shapes=(((7,), (7,)), ((7,), ())), domain=(SHIFT_X, SHIFTS)),
    _spec("shift_right_logical_u8", lax.shift_right_logical, lambda x, y: np.where(
        y >= 8, 0, x >> np.minimum(y, 7)).astype(np.uint8), shapes=(((6,), (6,)),),
        dtypes=(U8,), domain=(uniform(0, 255), cycle([0, 1, 7, 8, 9, 3])),
        primitives=("shift_right_logical",)),
] + [
    _binary(name, ref, dts=(F32, I32, BOOL), domain=_CMP)
    for name, ref in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                      ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)]
]

PARAMETRIC = [
    _spec("integer_pow_2", lambda x: lax.integer_pow(x, 2), lambda x: x * x, shapes=UN,
          dtypes=(F32, I32), primitives=("integer_pow",)),
    _spec("integer_pow_3", lambda x: lax.integer_pow(x, 3), lambda x: x * x * x, shapes=UN,
          dtypes=(F32, I32, C64), primitives=("integer_pow",)),
    _spec("integer_pow_0", lambda x: lax.integer_pow(x, 0), np.ones_like, shapes=UN,
          dtypes=(F32, I32), primitives=("integer_pow",)),
    _spec("integer_pow_neg", lambda x: lax.integer_pow(x, -3), in_f64(lambda x: x ** -3.0),
          shapes=UN, domain=nonzero(), rtol=1e-5, primitives=("integer_pow",)),
    _spec("integer_pow_7", lambda x: lax.integer_pow(x, 7), lambda x: x ** 7, shapes=UN,
          dtypes=(I32,), domain=uniform(-5, 5), primitives=("integer_pow",)),
    _spec("select_n_bool", lax.select_n, lambda w, a, b: np.where(w, b, a),
          shapes=(((3,), (3,), (3,)), ((), (2, 3), (2, 3))), dtypes=((BOOL, F32, F32),
                                                                      (BOOL, I32, I32)),
          primitives=("select_n",)),
    _spec("select_n_int", lax.select_n, lambda w, *cs: np.choose(w, cs),
          shapes=(((2, 3),) * 4, ((), (4,), (4,), (4,))), dtypes=((I32, F32, F32, F32),),
          domain=(uniform(0, 2), uniform(), uniform(), uniform()), primitives=("select_n",)),
    _spec("select", lax.select, lambda p, t, f: np.where(p, t, f),
          shapes=(((3,), (3,), (3,)),), dtypes=((BOOL, F32, F32),), primitives=("select_n",)),
    _spec("clamp", lax.clamp, lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi),
          shapes=(((3,), (3,), (3,)), ((), (2, 3), ())), dtypes=(F32, I32),
          domain=(uniform(-2, 0), uniform(-3, 3), uniform(0, 2)), primitives=("clamp",)),
    _spec("clamp_python_bounds", lambda x: lax.clamp(-1.0, x, 1.5),
          lambda x: np.clip(x, -1.0, 1.5), shapes=UN, primitives=("clamp",)),
]


def _convert(name, to, ref, dts, domain=uniform(), weak_type=False, **kw):
    return _spec("convert_" + name, lambda x: lax.convert_element_type(x, to, weak_type),
                 ref, shapes=UN, dtypes=dts, domain=domain, primitives=("convert_element_type",),
                 **kw)


CONVERT = [
    _convert("f32_i32", np.int32, lambda x: x.astype(np.int32), (F32,),
             domain=uniform(-100.0, 100.0)),
    _convert("f32_bool", np.bool_, lambda x: x != 0, (F32,), domain=cycle([0.0, -0.0, 0.5, -2.0])),
    _convert("i32_f32", np.float32, lambda x: x.astype(np.float32), (I32,)),
    _convert("i32_u8_wraps", np.uint8, lambda x: (x % 256).astype(np.uint8), (I32,),
             domain=uniform(-300, 300)),
    _convert("i32_i8_wraps", np.int8, lambda x: ((x + 128) % 256 - 128).astype(np.int8),
             (I32,), domain=uniform(-300, 300)),
    _convert("bool_f32", np.float32, lambda x: np.where(x, 1.0, 0.0).astype(np.float32),
             (BOOL,)),
    _convert("bool_i32", np.int32, lambda x: np.where(x, 1, 0).astype(np.int32), (BOOL,)),
    _convert("f32_f16", np.float16, lambda x: x.astype(np.float16), (F32,)),
    _convert("f16_f32", np.float32, lambda x: x.astype(np.float32), (F16,)),
    _convert("f64_canonical", np.float64, lambda x: x.astype(np.float32), (I32,)),
    _convert("c64_f32", np.float32, lambda x: np.real(x), (C64,), domain=complex_uniform()),
    _convert("f32_c64", np.complex64, lambda x: x.astype(np.complex64), (F32,)),
    _convert("f32_weak", np.float32, lambda x: x, (F32,), weak_type=True),
    _convert("f32_bf16", BF16, lambda x: x.astype(BF16), (F32,)),
    _convert("bf16_f32", np.float32, lambda x: x.astype(np.float32), (BF16,)),
]

# --- reductions ---

RED_SHAPES = (((2, 3),), ((2, 3, 2),))
RED_AXES = ({"axes": ()}, {"axes": (0,)}, {"axes": (1,)}, {"axes": (0, 1)})


def _reduce(name, ref, dts, domain=uniform()):
    return _spec(name, getattr(lax, name), ref, shapes=RED_SHAPES, dtypes=dts, domain=domain,
                 kwargs=RED_AXES, primitives=(name,))


def _sum_ref(x, axes):
    return np.sum(x, axis=axes, dtype=x.dtype)


def _prod_ref(x, axes):
    return np.prod(x, axis=axes, dtype=x.dtype)


REDUCTIONS = [
    _reduce("reduce_sum", _sum_ref, (F32, I32)),
    _reduce("reduce_prod", _prod_ref, (F32, I32)),
    _reduce("reduce_max", lambda x, axes: np.max(x, axis=axes), (F32, I32, BOOL)),
    _reduce("reduce_min", lambda x, axes: np.min(x, axis=axes), (F32, I32, BOOL)),
    _reduce("reduce_and", lambda x, axes: np.bitwise_and.reduce(x, axis=axes), (BOOL, I32),
            uniform(-100, 100)),
    _reduce("reduce_or", lambda x, axes: np.bitwise_or.reduce(x, axis=axes), (BOOL, I32),
            uniform(-100, 100)),
    _reduce("reduce_xor", lambda x, axes: np.bitwise_xor.reduce(x, axis=axes), (BOOL, I32),
            uniform(-100, 100)),
    _spec("reduce_max_empty", lambda x: lax.reduce_max(x, (0,)),
          lambda x: np.full(x.shape[1:], -np.inf, x.dtype), shapes=(((0, 3),),),
          primitives=("reduce_max",)),
    _spec("reduce_min_empty_int", lambda x: lax.reduce_min(x, (0,)),
          lambda x: np.full(x.shape[1:], np.iinfo(np.int32).max, x.dtype), shapes=(((0, 3),),),
          dtypes=(I32,), primitives=("reduce_min",)),
    _spec("reduce_sum_empty", lambda x: lax.reduce_sum(x, (1,)),
          lambda x: np.zeros(x.shape[:1], x.dtype), shapes=(((2, 0),),),
          primitives=("reduce_sum",)),
    _spec("argmax", lax.argmax, lambda x, axis: np.argmax(x, axis).astype(np.int32),
          shapes=(((2, 3),), ((3, 4, 2),)), dtypes=(F32, I32), domain=distinct(-50, 50),
          kwargs=({"axis": 0}, {"axis": 1}), primitives=("argmax",)),
    _spec("argmin", lax.argmin, lambda x, axis: np.argmin(x, axis).astype(np.int32),
          shapes=(((2, 3),), ((3, 4, 2),)), dtypes=(F32, I32), domain=distinct(-50, 50),
          kwargs=({"axis": 0}, {"axis": 1}), primitives=("argmin",)),
    _spec("argmax_nan", lambda x: lax.argmax(x, 0), lambda x: np.argmax(
        np.where(np.isnan(x), np.inf, x), 0).astype(np.int32), shapes=(((6,),),),
        domain=with_nan(distinct()), primitives=("argmax",)),
    _spec("argmin_index_dtype", lambda x: lax.argmin(x, 1, np.uint8),
          lambda x: np.argmin(x, 1).astype(np.uint8), shapes=(((2, 5),),),
          domain=distinct(), primitives=("argmin",)),
]

CUM_KW = tuple({"axis": a, "reverse": r} for a in (0, 1) for r in (False, True))
CUMULATIVE = [
    _spec(name, getattr(lax, name), ref, shapes=(((3, 4),), ((2, 3, 2),)), dtypes=dts,
          domain=dom, kwargs=CUM_KW, primitives=(name,), rtol=1e-5)
    for name, ref, dts, dom in [
        ("cumsum", _cum(np.add), (F32, I32), uniform()),
        ("cumprod", _cum(np.multiply), (F32, I32), uniform(-2, 2)),
        ("cummax", _cum(np.maximum), (F32, I32), uniform(-9, 9)),
        ("cummin", _cum(np.minimum), (F32, I32), uniform(-9, 9)),
        ("cumlogsumexp", in_f64(_cum(np.logaddexp)), (F32,), uniform()),
    ]
]

SORT = [
    _spec("sort", lax.sort, _sort_ref, shapes=(((5,),), ((3, 4),)), dtypes=(F32, I32),
          domain=uniform(-9, 9), kwargs=({}, {"dimension": 0}), primitives=("sort",)),
    _spec("sort_nan", lax.sort, _sort_ref, shapes=(((6,),),), domain=with_nan(uniform()),
          primitives=("sort",)),
    _spec("sort_two_operands", lambda k, v: lax.sort((k, v), num_keys=1),
          lambda k, v: _sort_ref(k, v, num_keys=1), shapes=(((8,), (8,)), ((3, 5), (3, 5))),
          dtypes=((I32, F32),), domain=(uniform(-2, 2), distinct()), primitives=("sort",)),
    _spec("sort_three_operands_two_keys", lambda a, b, c: lax.sort((a, b, c), 0, num_keys=2),
          lambda a, b, c: _sort_ref(a, b, c, dimension=0, num_keys=2),
          shapes=(((8,),) * 3, ((6, 2),) * 3), dtypes=((I32, F32, I32),),
          domain=(uniform(0, 2), cycle([0.0, 1.0]), distinct(0, 100)), primitives=("sort",)),
]

# --- shape ---

SHAPE = [
    _spec("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (2, 3), (1,)),
          lambda x: np.broadcast_to(x, (2, 3)), shapes=(((3,),),), dtypes=(F32, I32),
          primitives=("broadcast_in_dim",)),
    _spec("broadcast_in_dim_size1", lambda x: lax.broadcast_in_dim(x, (3, 2, 4), (0, 2)),
          lambda x: np.broadcast_to(x[:, None, :], (3, 2, 4)), shapes=(((3, 1),),),
          primitives=("broadcast_in_dim",)),
    _spec("broadcast_in_dim_scalar", lambda x: lax.broadcast_in_dim(x, (2, 2), ()),
          lambda x: np.full((2, 2), x), shapes=(((),),), primitives=("broadcast_in_dim",)),
    _spec("broadcast", lambda x: lax.broadcast(x, (2,)), lambda x: np.stack([x, x]),
          shapes=UN, primitives=("broadcast_in_dim",)),
    _spec("reshape", lambda x: lax.reshape(x, (3, 2)), lambda x: x.reshape(3, 2),
          shapes=(((2, 3),), ((6,),)), dtypes=(F32, I32, BOOL), primitives=("reshape",)),
    _spec("reshape_dimensions", lambda x: lax.reshape(x, (6,), dimensions=(1, 0)),
          lambda x: x.T.reshape(6), shapes=(((2, 3),),), primitives=("reshape",)),
    _spec("reshape_to_scalar", lambda x: lax.reshape(x, ()), lambda x: x.reshape(()),
          shapes=(((1, 1),),), primitives=("reshape",)),
    _spec("transpose", lambda x: lax.transpose(x, (2, 0, 1)), lambda x: np.transpose(
        x, (2, 0, 1)), shapes=(((2, 3, 4),),), dtypes=(F32, I32), primitives=("transpose",)),
    _spec("squeeze", lambda x: lax.squeeze(x, (0, 2)), lambda x: np.squeeze(x, (0, 2)),
          shapes=(((1, 3, 1),),), primitives=("squeeze",)),
    _spec("squeeze_negative", lambda x: lax.squeeze(x, (-1,)), lambda x: x[..., 0],
          shapes=(((2, 1),),), primitives=("squeeze",)),
    _spec("expand_dims", lambda x: lax.expand_dims(x, (0, 2)), lambda x: x[None, :, None],
          shapes=(((3,),),), primitives=("expand_dims",)),
    _spec("expand_dims_negative", lambda x: lax.expand_dims(x, (-1,)), lambda x: x[..., None],
          shapes=UN, primitives=("expand_dims",)),
    _spec("rev", lax.rev, lambda x, dimensions: np.flip(x, dimensions) if dimensions else x,
          shapes=(((2, 3),),), dtypes=(F32, I32),
          kwargs=({"dimensions": (0,)}, {"dimensions": (1,)}, {"dimensions": (0, 1)},
                  {"dimensions": ()}), primitives=("rev",)),
    _spec("concatenate", lambda a, b, c: lax.concatenate([a, b, c], 0),
          lambda a, b, c: np.concatenate([a, b, c], 0), shapes=(((2, 3), (1, 3), (4, 3)),),
          dtypes=(F32, I32), primitives=("concatenate",)),
    _spec("concatenate_dim1", lambda a, b: lax.concatenate([a, b], 1),
          lambda a, b: np.concatenate([a, b], 1), shapes=(((2, 3), (2, 0)), ((2, 1), (2, 4))),
          primitives=("concatenate",)),
    _spec("pad", lambda x, config: lax.pad(x, 0.0, config), lambda x, config: _pad_ref(
        x, 0.0, config), shapes=(((3, 4),),), kwargs=(
            {"config": ((1, 2, 0), (0, 0, 0))}, {"config": ((-1, 1, 1), (2, -2, 2))},
            {"config": ((-2, -1, 1), (0, 0, 3))}, {"config": ((0, 0, 0), (-4, 1, 0))}),
          primitives=("pad",)),
    _spec("pad_traced_value", lambda x, v: lax.pad(x, v, ((1, 1, 1),)),
          lambda x, v: _pad_ref(x, v, ((1, 1, 1),)), shapes=(((3,), ()),), dtypes=(F32, I32),
          primitives=("pad",)),
    _spec("slice", lax.slice, lambda x, start_indices, limit_indices, strides=None: x[tuple(
        slice(s, e, st) for s, e, st in zip(start_indices, limit_indices,
                                           strides or (1,) * x.ndim))],
          shapes=(((5, 6),),), kwargs=(
              {"start_indices": (1, 0), "limit_indices": (5, 6)},
              {"start_indices": (1, 0), "limit_indices": (5, 6), "strides": (2, 4)},
              {"start_indices": (0, 2), "limit_indices": (5, 5), "strides": (3, 1)},
              {"start_indices": (2, 2), "limit_indices": (2, 6)}), primitives=("slice",)),
    _spec("iota", lambda: lax.iota(np.int32, 5), lambda: np.arange(5, dtype=np.int32),
          shapes=((),), primitives=("iota",)),
    _spec("iota_float", lambda: lax.iota(np.float32, 4), lambda: np.arange(4.0,
                                                                            dtype=np.float32),
          shapes=((),), primitives=("iota",)),
    _spec("broadcasted_iota", lambda: lax.broadcasted_iota(np.int32, (2, 3), 1),
          lambda: np.broadcast_to(np.arange(3, dtype=np.int32), (2, 3)), shapes=((),),
          primitives=("iota",)),
]

# --- indexing ---

STARTS = tuple({"starts": s} for s in ((1, 2), (-2, 1), (4, 5), (0, 100), (-7, -7)))

INDEXING = [
    _spec("dynamic_slice", lambda x, starts: lax.dynamic_slice(x, starts, (2, 3)),
          lambda x, starts: _dynamic_slice_ref(x, starts, (2, 3)), shapes=(((5, 6),),),
          dtypes=(F32, I32), kwargs=STARTS, primitives=("dynamic_slice",)),
    _spec("dynamic_slice_traced_starts", lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 3)),
          lambda x, i, j: _dynamic_slice_ref(x, (i, j), (2, 3)),
          shapes=(((5, 6), (), ()), ((4, 3), (), ())), dtypes=((F32, I32, I32),),
          domain=(uniform(), uniform(-3, 8), uniform(-3, 8)), primitives=("dynamic_slice",)),
    _spec("dynamic_index_in_dim", lambda x: lax.dynamic_index_in_dim(x, 7, 1, False),
          lambda x: x[:, -1], shapes=(((2, 3),),), primitives=("dynamic_slice", "squeeze")),
    _spec("dynamic_update_slice", lambda x, u, starts: lax.dynamic_update_slice(x, u, starts),
          lambda x, u, starts: _dynamic_update_slice_ref(x, u, starts),
          shapes=(((5, 6), (2, 3)),), dtypes=(F32, I32), kwargs=STARTS,
          primitives=("dynamic_update_slice",)),
    _spec("dynamic_update_slice_traced_starts",
          lambda x, u, i, j: lax.dynamic_update_slice(x, u, (i, j)),
          lambda x, u, i, j: _dynamic_update_slice_ref(x, u, (i, j)),
          shapes=(((5, 6), (2, 3), (), ()), ((3, 3), (3, 1), (), ())),
          dtypes=((F32, F32, I32, I32),),
          domain=(uniform(), uniform(), uniform(-3, 8), uniform(-3, 8)),
          primitives=("dynamic_update_slice",)),
]

# --- contraction ---


def _dot(name, dn, einsum, shapes, dts=(F32, I32), pet=None, out=None, **kw):
    return _spec("dot_general_" + name,
                 lambda a, b: lax.dot_general(a, b, dn, preferred_element_type=pet),
                 _einsum_ref(einsum, out), shapes=shapes, dtypes=dts,
                 primitives=("dot_general",), **kw)


CONTRACTION = [
    _dot("matmul", (((1,), (0,)), ((), ())), "ij,jk->ik", (((2, 3), (3, 4)),)),
    _dot("vector", (((0,), (0,)), ((), ())), "i,i->", (((3,), (3,)),)),
    _dot("outer", (((), ()), ((), ())), "i,j->ij", (((3,), (2,)),)),
    _dot("batch", (((2,), (1,)), ((0,), (0,))), "bij,bjk->bik", (((2, 3, 4), (2, 4, 5)),)),
    _dot("batch_inner_dims", (((2,), (0,)), ((1,), (2,))), "ibj,jkb->bik",
         (((3, 2, 4), (4, 5, 2)),)),
    _dot("two_contracting", (((0, 2), (1, 0)), ((), ())), "iaj,jib->ab",
         (((2, 3, 4), (4, 2, 5)),)),
    _dot("int8_to_int32", (((1,), (0,)), ((), ())), "ij,jk->ik", (((2, 3), (3, 4)),),
         dts=(I8,), pet=np.int32, out=I32, domain=uniform(-100, 100)),
    _dot("f16_to_f32", (((1,), (0,)), ((), ())), "ij,jk->ik", (((2, 3), (3, 4)),),
         dts=(F16,), pet=np.float32, out=F32),
    _spec("dot", lax.dot, lambda a, b: np.dot(a, b), shapes=(((2, 3), (3,)), ((3,), (3, 2))),
          primitives=("dot_general",)),
]

_jitted_sin_sum = functrax.jit(lambda x: lax.add(lax.sin(x), lax.reduce_sum(x, (0,)))
                               if x.ndim == 1 else lax.add(lax.sin(x), lax.reduce_sum(
                                   x, tuple(range(x.ndim)))))


def _three_steps(x):
    for _ in range(3):
        x = x * np.float32(0.5) + np.sin(x)
    return x


SPECS = (UNARY + ROUNDING + BINARY + PARAMETRIC + CONVERT + REDUCTIONS + CUMULATIVE + SORT
         + SHAPE + INDEXING + CONTRACTION)
