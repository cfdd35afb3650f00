"""Op specs: elementwise functions of functrax.numpy (functrax/numpy/ufuncs.py).

Expected dtypes follow JAX (x64 off). Where numpy's result dtype differs from JAX's even
after canonicalization (numpy sends small integers and bools to float16/int8, keeps integer
reciprocal integral, ...), the spec gives ``out_dtype`` from the small rules below.
"""
import numpy as np

import functrax.numpy as fnp
from tests.opspec.spec import BOOL, F32, I8, I32, U8, OpSpec, nonzero, positive, uniform

I16, C64 = np.dtype(np.int16), np.dtype(np.complex64)

# --- shapes ---
U = (((2, 3),), ((),))
B = (((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 2)))
W = (((3,), (3,), (3,)), ((2, 3), (3,), ()), ((2, 1), (1, 3), (2, 3)), ((), (2,), ()))


# --- domains ---
def grid(lo=-2, hi=2):
    """Integral values (also for floats), so that ties and zeros occur."""
    def gen(rng, shape, dtype):
        dtype = np.dtype(dtype)
        if dtype == BOOL:
            return rng.random(shape) < 0.5
        lo_ = max(lo, 0) if dtype.kind == "u" else lo
        return rng.randint(lo_, hi + 1, size=shape).astype(dtype)
    return gen


_SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.5, 3e38, -1e-3])


def special(lo=-3.0, hi=3.0):
    """Floats with NaN, infinities, signed zeros and extremes mixed in (ints: uniform)."""
    base = uniform(lo, hi)

    def gen(rng, shape, dtype):
        x = np.asarray(base(rng, shape, dtype))
        if np.dtype(dtype).kind != "f" or x.size == 0:
            return x
        mask = rng.random(shape) < 0.4
        picks = _SPECIAL[rng.randint(0, len(_SPECIAL), size=shape)].astype(dtype)
        return np.where(mask, picks, x)
    return gen


def cplx(lo=-2.0, hi=2.0):
    def gen(rng, shape, dtype):
        return (rng.uniform(lo, hi, shape) + 1j * rng.uniform(lo, hi, shape)).astype(dtype)
    return gen


# --- JAX result dtypes where numpy's differ ---
def _join(*dts):
    """JAX's promotion for the dtypes used here (bool < u8/i8 < i16 < i32 < f32)."""
    dts = {np.dtype(d) for d in dts}
    if C64 in dts:
        return C64
    if F32 in dts:
        return F32
    dts.discard(BOOL)
    if not dts:
        return BOOL
    if dts == {U8, I8}:
        return I16
    if I32 in dts:
        return I32
    assert len(dts) == 1, dts
    return dts.pop()


def numeric(*dts):
    """As _join, with booleans promoted to the default integer type (int32)."""
    r = _join(*dts)
    return I32 if r == BOOL else r


def inexact(*dts):
    """Default float type (float32) unless an input is complex."""
    return C64 if C64 in {np.dtype(d) for d in dts} else F32


def real_inexact(*dts):
    return F32


def boolean(*dts):
    return BOOL


def same(*dts):
    return np.dtype(dts[0])


NUM_B = (F32, I32, (F32, I32), (I32, F32), (U8, I8))   # binary, numeric
INEX_U = (F32, I32, BOOL, U8)                          # unary, inexact result
INEX_B = (F32, I32, (F32, I32), (I32, U8))             # binary, inexact result


def in_float(ref):
    """The numpy reference computed on float32 copies of integer/bool inputs, as JAX computes
    (numpy would use float16 for bool/int8/uint8 and float64 for int32)."""
    def fn(*args, **kw):
        return ref(*[a.astype(np.float32) if a.dtype.kind in "biu" else a for a in args], **kw)
    return fn


def unary(name, fn=None, ref=None, dtypes=INEX_U, domain=uniform(), out=inexact, prims=(),
          cast=True, **kw):
    ref = ref or getattr(np, name)
    ref = in_float(ref) if cast and out in (inexact, real_inexact) else ref
    return OpSpec(name, fn or getattr(fnp, name), ref, shapes=U,
                  dtypes=dtypes, domain=domain, out_dtype=out, primitives=prims, **kw)


def binary(name, fn=None, ref=None, dtypes=INEX_B, domain=uniform(), out=inexact, prims=(),
           cast=True, **kw):
    ref = ref or getattr(np, name)
    ref = in_float(ref) if cast and out in (inexact, real_inexact) else ref
    return OpSpec(name, fn or getattr(fnp, name), ref, shapes=B,
                  dtypes=dtypes, domain=domain, out_dtype=out, broadcasting=True,
                  primitives=prims, **kw)


_TRANSCENDENTAL = [
    ("sin", uniform()), ("cos", uniform()), ("tan", uniform(-1.4, 1.4)),
    ("arcsin", uniform(-0.99, 0.99)), ("arccos", uniform(-0.99, 0.99)), ("arctan", uniform()),
    ("sinh", uniform()), ("cosh", uniform()), ("tanh", uniform()), ("arcsinh", uniform()),
    ("arccosh", uniform(1.0, 4.0)), ("arctanh", uniform(-0.99, 0.99)), ("exp", uniform()),
    ("exp2", uniform()), ("expm1", uniform()), ("log", positive()), ("log2", positive()),
    ("log10", positive()), ("log1p", uniform(-0.9, 3.0)), ("sqrt", positive()),
    ("cbrt", uniform()), ("deg2rad", uniform(-360, 360)), ("rad2deg", uniform()),
    ("degrees", uniform()), ("radians", uniform(-360, 360)), ("sinc", grid(-3, 3)),
]
_PRIM = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
         "arccosh": "acosh", "arctanh": "atanh", "log2": "log", "log10": "log",
         "deg2rad": "mul", "rad2deg": "mul", "degrees": "mul", "radians": "mul", "sinc": "sin"}

SPECS = [unary(n, domain=d, prims=(_PRIM.get(n, n),)) for n, d in _TRANSCENDENTAL] + [
    unary("asin", ref=np.arcsin, domain=uniform(-0.99, 0.99), dtypes=(F32,)),
    unary("acosh", ref=np.arccosh, domain=uniform(1.0, 4.0), dtypes=(F32,)),
    unary("reciprocal", ref=lambda x: np.reciprocal(x.astype(np.float32)), dtypes=(F32, I32),
          domain=nonzero(), prims=("integer_pow",)),
    # --- unary arithmetic ---
    unary("negative", dtypes=(F32, I32, U8), out=None, prims=("neg",)),
    unary("positive", dtypes=(F32, I32, U8), out=None),
    unary("sign", dtypes=(F32, I32, U8), domain=grid(), out=None, prims=("sign",)),
    unary("square", dtypes=(F32, I32, U8, BOOL), out=numeric, prims=("square",)),
    unary("absolute", dtypes=(F32, I32, U8, BOOL), out=None, prims=("abs",)),
    unary("abs", dtypes=(F32, I32), out=None, prims=("abs",)),
    unary("fabs", dtypes=(F32, I32, BOOL), out=real_inexact, prims=("abs",)),
    # --- rounding ---
    unary("floor", dtypes=(F32, I32, U8, BOOL), out=None, prims=("floor",)),
    unary("ceil", dtypes=(F32, I32, U8, BOOL), out=None, prims=("ceil",)),
    unary("trunc", dtypes=(F32, I32, U8, BOOL), out=None, prims=("floor", "ceil", "select_n")),
    unary("fix", dtypes=(F32, I32), out=None),
    unary("rint", dtypes=(F32, I32, BOOL), domain=grid(-6, 6), out=real_inexact,
          prims=("round", "convert_element_type")),
    unary("rint_halves", fn=fnp.rint, ref=np.rint, dtypes=(F32,), out=None,
          domain=lambda rng, s, d: (rng.randint(-6, 7, size=s) + 0.5).astype(d)),
    unary("round", dtypes=(F32,), out=None, domain=uniform(-30, 30),
          kwargs=({}, {"decimals": 1}, {"decimals": 2}, {"decimals": -1}), prims=("round",)),
    unary("round_int", fn=fnp.round, ref=np.round, dtypes=(I32, U8), out=None,
          kwargs=({}, {"decimals": 2})),
    unary("around", ref=np.round, dtypes=(F32,), out=None, kwargs=({"decimals": 1},)),
    unary("modf", dtypes=(F32, I32), out=real_inexact),
    # --- predicates ---
    unary("isfinite", dtypes=(F32, I32, BOOL), domain=special(), out=boolean,
          prims=("is_finite",)),
    unary("isinf", dtypes=(F32, I32, BOOL), domain=special(), out=boolean),
    unary("isnan", dtypes=(F32, I32, BOOL), domain=special(), out=boolean, prims=("ne",)),
    unary("isposinf", dtypes=(F32, I32), domain=special(), out=boolean, prims=("eq",)),
    unary("isneginf", dtypes=(F32, I32), domain=special(), out=boolean, prims=("eq",)),
    unary("signbit", dtypes=(F32, I32, U8, BOOL), domain=special(), out=boolean,
          prims=("atan2", "lt")),
    unary("nan_to_num", dtypes=(F32, I32), domain=special(), out=None),
    unary("nan_to_num_values", fn=lambda x: fnp.nan_to_num(x, nan=-1.0, posinf=9.0,
                                                            neginf=-9.0),
          ref=lambda x: np.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0), dtypes=(F32,),
          domain=special(), out=None),
    # --- logic and bits (unary) ---
    unary("logical_not", dtypes=(F32, I32, BOOL), domain=grid(), out=boolean, prims=("not",)),
    unary("bitwise_not", dtypes=(I32, U8, BOOL), domain=grid(-9, 9), out=None, prims=("not",)),
    unary("invert", dtypes=(I32, U8, BOOL), domain=grid(-9, 9), out=None),
    unary("bitwise_count", dtypes=(I32, U8), domain=grid(-9, 9), out=None,
          prims=("population_count", "abs")),
    # --- complex parts ---
    unary("real", dtypes=(F32, I32), out=None),
    unary("imag", dtypes=(F32, I32), out=None),
    unary("conj", dtypes=(F32, I32), out=None),
    unary("conjugate", dtypes=(F32, I32), out=None),
    unary("angle", dtypes=(F32, I32), out=real_inexact, prims=("atan2",),
          kwargs=({}, {"deg": True})),
    # --- complex inputs ---
    *[unary(f"{n}_complex", fn=getattr(fnp, n), ref=getattr(np, n), dtypes=(C64,),
            domain=cplx(), out=None, atol=1e-5, rtol=1e-4, prims=(p,))
      for n, p in [("abs", "abs"), ("real", "real"), ("imag", "imag"), ("conj", "conj"),
                   ("angle", "atan2"), ("sqrt", "sqrt"), ("exp", "exp"), ("isfinite", "is_finite"),
                   ("negative", "neg"), ("square", "square"), ("sign", "sign"),
                   ("rint", "round"), ("nan_to_num", "real"), ("sinc", "sin"),
                   ("arccosh", "acosh")]],
    unary("round_complex", fn=fnp.round, ref=np.round, dtypes=(C64,), domain=cplx(-5, 5),
          out=None, kwargs=({"decimals": 1},), prims=("round",)),
    binary("multiply_complex", fn=fnp.multiply, ref=np.multiply, dtypes=(C64, (C64, F32)),
           domain=(cplx(), lambda rng, s, d: cplx()(rng, s, d) if d == C64 else
                   uniform()(rng, s, d)), out=None, atol=1e-5, rtol=1e-4, prims=("mul",)),
    binary("less_complex", fn=fnp.less, ref=np.less, dtypes=(C64,), out=boolean,
           domain=lambda rng, s, d: (rng.randint(-1, 2, s) + 1j * rng.randint(-1, 2, s)).astype(d),
           prims=("lt", "real", "imag")),
    # --- binary arithmetic ---
    binary("add", dtypes=NUM_B + (BOOL, (BOOL, I32)), out=None, prims=("add", "or")),
    binary("subtract", dtypes=NUM_B + ((BOOL, I32),), out=None, prims=("sub",)),
    binary("multiply", dtypes=NUM_B + (BOOL, (BOOL, I32)), out=None, prims=("mul", "and")),
    binary("true_divide", domain=(uniform(), nonzero()), prims=("div",)),
    binary("divide", domain=(uniform(), nonzero())),
    binary("floor_divide", dtypes=NUM_B + ((BOOL, I32),), out=numeric,
           domain=(uniform(-10, 10), nonzero(-4, 4)), prims=("div", "rem", "sign", "round")),
    binary("remainder", dtypes=NUM_B, out=numeric, domain=(uniform(-10, 10), nonzero(-4, 4)),
           prims=("rem",)),
    binary("mod", dtypes=(F32, I32), out=numeric, domain=(uniform(-10, 10), nonzero(-4, 4))),
    binary("fmod", dtypes=NUM_B, out=numeric, domain=(uniform(-10, 10), nonzero(-4, 4))),
    binary("divmod", dtypes=NUM_B, out=numeric, domain=(uniform(-10, 10), nonzero(-4, 4))),
    binary("power", dtypes=(F32, (F32, I32)), domain=(positive(), uniform(-2, 2)), out=numeric,
           prims=("pow",)),
    binary("power_int", fn=fnp.power, ref=np.power, dtypes=(I32, U8, (I8, U8), (I32, BOOL)),
           domain=(grid(-3, 3), grid(0, 5)), out=numeric),
    binary("pow", ref=np.power, dtypes=(F32,), domain=(positive(), uniform(-2, 2)), out=None),
    unary("power_static", fn=lambda x, n: fnp.power(x, n), ref=lambda x, n: np.power(x, n),
          dtypes=(F32,), kwargs=({"n": 0}, {"n": 1}, {"n": 3}, {"n": -2}), domain=nonzero(),
          out=None, prims=("integer_pow",)),
    unary("power_static_int", fn=lambda x, n: x ** n, ref=lambda x, n: np.power(x, n),
          dtypes=(I32, U8, BOOL), kwargs=({"n": 0}, {"n": 2}, {"n": 5}), out=numeric),
    binary("float_power", domain=(positive(), uniform(-2, 2)), prims=("pow",)),
    binary("maximum", dtypes=NUM_B + (BOOL,), domain=special(), out=None, prims=("max",)),
    binary("minimum", dtypes=NUM_B + (BOOL,), domain=special(), out=None, prims=("min",)),
    binary("fmax", dtypes=(F32, (F32, I32), I32), domain=special(), out=None),
    binary("fmin", dtypes=(F32, (F32, I32), I32), domain=special(), out=None),
    binary("arctan2", domain=grid(-2, 2), prims=("atan2",)),
    binary("atan2", ref=np.arctan2),
    binary("hypot", domain=special()),
    binary("logaddexp", domain=special(-5, 5), prims=("log1p", "exp", "max")),
    binary("logaddexp2", domain=special(-5, 5), prims=("log1p", "exp2")),
    binary("copysign", domain=special(), prims=("atan2",)),
    binary("nextafter", dtypes=(F32,), domain=grid(-2, 2), prims=("nextafter",)),
    binary("heaviside", domain=(grid(-2, 2), uniform())),
    binary("ldexp", ref=lambda a, b: np.ldexp(a.astype(np.float32), b), cast=False,
           dtypes=((F32, I32), (I32, I32), (F32, U8)), domain=(uniform(), grid(-8, 8)),
           out=real_inexact, prims=("exp2", "clamp")),
    binary("ldexp_extreme", fn=fnp.ldexp, ref=np.ldexp, dtypes=((F32, I32),),
           domain=(special(), grid(-300, 300)), out=None),
    binary("gcd", dtypes=(I32, U8, (I32, U8), (I8, U8)), domain=grid(-12, 12), out=numeric,
           prims=("rem",)),
    binary("lcm", dtypes=(I32, U8, (I32, U8)), domain=grid(-12, 12), out=numeric),
    # --- comparisons and logic ---
    *[binary(n, dtypes=NUM_B + (BOOL,), domain=grid(), out=boolean, prims=(p,))
      for n, p in [("equal", "eq"), ("not_equal", "ne"), ("less", "lt"),
                   ("less_equal", "le"), ("greater", "gt"), ("greater_equal", "ge")]],
    *[binary(n, dtypes=(F32, I32, BOOL, (BOOL, I32)), domain=grid(-1, 1), out=boolean,
             prims=(p,))
      for n, p in [("logical_and", "and"), ("logical_or", "or"), ("logical_xor", "xor")]],
    *[binary(n, dtypes=(I32, U8, BOOL, (U8, I8), (I32, BOOL)), domain=grid(-9, 9), out=None,
             prims=(p,))
      for n, p in [("bitwise_and", "and"), ("bitwise_or", "or"), ("bitwise_xor", "xor")]],
    binary("left_shift", dtypes=(I32, U8, (I8, U8)), domain=(grid(-8, 8), grid(0, 3)),
           out=None, prims=("shift_left",)),
    binary("right_shift", dtypes=(I32, U8, (I8, U8)), domain=(grid(-64, 64), grid(0, 3)),
           out=None, prims=("shift_right_arithmetic", "shift_right_logical")),
    # --- selection, clipping, closeness ---
    OpSpec("where", fnp.where, np.where, shapes=W, broadcasting=True,
           dtypes=((BOOL, F32, F32), (BOOL, I32, F32), (I32, F32, I32), (BOOL, U8, I8)),
           domain=(grid(-1, 1), uniform(), uniform()),
           out_dtype=lambda c, x, y: _join(x, y), primitives=("select_n",)),
    OpSpec("clip", fnp.clip, np.clip, shapes=W, broadcasting=True,
           dtypes=(F32, I32, (I32, F32, F32), (F32, I32, I32)),
           domain=(uniform(-4, 4), uniform(-3, 0), uniform(0, 3)), out_dtype=_join,
           primitives=("max", "min")),
    unary("clip_kwargs", fn=lambda a, **kw: fnp.clip(a, **kw),
          ref=lambda a, **kw: np.clip(a, kw.get("min"), kw.get("max")), dtypes=(F32, I32),
          domain=uniform(-4, 4), out=None,
          kwargs=({"min": -1, "max": 2}, {"min": 0}, {"max": 1}, {"min": -1.5})),
    binary("isclose", fn=lambda a, b, **kw: fnp.isclose(a, a + b, **kw),
           ref=lambda a, b, **kw: np.isclose(a, a + b, **kw),
           dtypes=(F32, (F32, I32), I32), domain=(special(), special(-1e-4, 1e-4)),
           kwargs=({}, {"equal_nan": True}, {"rtol": 0.1, "atol": 1e-4}), out=boolean,
           prims=("le", "abs")),
    OpSpec("allclose", lambda a, b, s: fnp.allclose(a, a + b * s),
           lambda a, b, s: np.allclose(a, a + b * s), shapes=(((3,), (3,)), ((2, 3), (3,))),
           dtypes=(F32,), kwargs=({"s": 1e-8}, {"s": 1e-3}), out_dtype=boolean,
           primitives=("reduce_and",)),
    OpSpec("array_equal", fnp.array_equal, np.array_equal,
           shapes=(((2,), (2,)), ((2, 2), (2, 2)), ((2,), (3,)), ((2,), (1,))),
           dtypes=(I32, F32, (I32, F32)), domain=grid(0, 1), out_dtype=boolean),
    OpSpec("array_equal_nan", lambda a, b: fnp.array_equal(a, a, equal_nan=True),
           lambda a, b: np.array_equal(a, a, equal_nan=True), shapes=(((3,), (3,)),),
           dtypes=(F32,), domain=special(), out_dtype=boolean),
    OpSpec("array_equiv", fnp.array_equiv, np.array_equiv,
           shapes=(((2,), (2,)), ((2, 2), (2,)), ((2,), (3,)), ((2,), (1,))),
           dtypes=(I32, F32), domain=grid(0, 1), out_dtype=boolean),
]

# --- operators with Python scalars on either side (the promotion fast paths, traced too) ---
_SCALAR_OPS = [
    ("scalar_rdiv_float", lambda x: x / 2.0, lambda x: x / np.float32(2.0)),
    ("scalar_ldiv_float", lambda x: 2.0 / x, lambda x: np.float32(2.0) / x),
    ("scalar_mul_int", lambda x: x * 3, lambda x: x * np.asarray(3, x.dtype)),
    ("scalar_rsub_int", lambda x: 1 - x, lambda x: np.asarray(1, x.dtype) - x),
    ("scalar_add_float", lambda x: x + 0.5, lambda x: x + np.float32(0.5)),
    ("scalar_pow_float", lambda x: abs(x) ** 1.5, lambda x: np.abs(x) ** np.float32(1.5)),
    ("scalar_floordiv_int", lambda x: x // 2, lambda x: x // np.asarray(2, x.dtype)),
    ("scalar_compare", lambda x: x > 0.5, lambda x: x > 0.5),
]
SPECS += [
    OpSpec(name, fn, ref, shapes=(((3,),), ((2, 3),)), dtypes=(F32,) if "float" in name
           or "pow" in name else (F32, I32), domain=nonzero(),
           primitives=())
    for name, fn, ref in _SCALAR_OPS
]
