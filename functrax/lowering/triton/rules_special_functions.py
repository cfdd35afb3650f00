"""Triton templates for the special functions (erfc, lgamma, digamma, erf_inv, bessel_i0e,
bessel_i1e), ``nextafter``,
``conj`` of real values, and the row reductions that need a combine function or an index
(``reduce_prod``, bitwise ``reduce_and``/``or``/``xor``, ``argmax``/``argmin``).

Registered into ``rules.triton_rules`` / ``rules.reduce_rules`` on import (``rules`` imports
this module at its end). Special functions are computed in float64, as the numpy backend
computes them (``functrax/lowering/numpy/special_functions.py``), then rounded to the output's type.

``HELPERS`` holds module-level ``@triton.jit`` combine functions that ``tl.reduce`` calls; the
code generator adds to a kernel's module the helpers its body names.
"""
from __future__ import annotations

import numpy as np

from functrax import primitives as P
from functrax.lowering.numpy.special_functions import (
    ERFINV32_W_GE_5, ERFINV32_W_LT_5, weideman_coefficients,
)
from functrax.lowering.numpy.special_zeta_bessel import I0E_A, I0E_B, I1E_A, I1E_B
from functrax.lowering.triton.rules import (
    B, F, INF, NAN, SI, U, RuleContext, ReduceRule, UnsupportedError, deftemplate, Steps, tl_name,
    reduce_rules, tl_dtype, variant_of,
)
from functrax.lowering.triton.rules import _log1p  # the float64 log1p building block


__all__ = ["HELPERS", "argreduce_rule", "arg_reduce_rules"]

PI = 3.141592653589793
HALF_LOG_2PI = 0.9189385332046727


def _f64(s: Steps) -> str:
    return s.let("{0}.to(tl.float64)")


def _poly(s: Steps, w: str, coeffs) -> str:
    """Horner: coeffs[0] * w**(n-1) + ... + coeffs[-1]."""
    p = repr(coeffs[0])
    for c in coeffs[1:]:
        p = s.let(f"{c!r} + {p} * {w}")
    return p


_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)


def _lgamma():
    """Lanczos (g=7, n=9) for x >= 0.5; reflection log(pi / |sin(pi x)|) - lgamma(1 - x)."""
    s = Steps()
    x = _f64(s)
    refl = s.let(f"{x} < 0.5")
    z = s.let(f"tl.where({refl}, 1.0 - {x}, {x}) - 1.0")
    a = repr(_LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], start=1):
        a = s.let(f"{a} + {c!r} / ({z} + {float(i)!r})")
    t = s.let(f"{z} + 7.5")
    lg = s.let(f"{HALF_LOG_2PI!r} + ({z} + 0.5) * tl.log({t}) - {t} + tl.log({a})")
    lg = s.let(f"tl.where({z} == {INF}, {INF}, {lg})")
    r = s.let(f"{x} - 2.0 * tl.floor({x} * 0.5)")  # sin(pi x) with x reduced mod 2
    sin = s.let(f"tl.abs(tl.sin({PI!r} * {r}))")
    lg = s.let(f"tl.where({refl}, tl.log({PI!r} / {sin}) - {lg}, {lg})")
    lg = s.let(f"tl.where(({x} <= 0.0) & ({x} == tl.floor({x})), {INF}, {lg})")  # poles
    return s.result(f"{lg}.to({{R}})")


_DIGAMMA_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)


def _digamma():
    """As special_functions.digamma64: reflection below 0.5 (``pi / tan(pi r)`` with ``r``
    the argument reduced to [-1/2, 1/2]), recurrence up to 10, asymptotic series."""
    s = Steps()
    x = _f64(s)
    refl = s.let(f"{x} < 0.5")
    w = s.let(f"tl.where({refl}, 1.0 - {x}, {x})")
    acc = "0.0"
    for _ in range(10):
        small = s.let(f"{w} < 10.0")
        acc = s.let(f"tl.where({small}, {acc} - 1.0 / {w}, {acc})")
        w = s.let(f"tl.where({small}, {w} + 1.0, {w})")
    inv2 = s.let(f"1.0 / ({w} * {w})")
    tail = repr(_DIGAMMA_SERIES[-1])
    for c in reversed(_DIGAMMA_SERIES[:-1]):
        tail = s.let(f"{c!r} + {inv2} * {tail}")
    res = s.let(f"{acc} + tl.log({w}) - 0.5 / {w} - {inv2} * {tail}")
    r = s.let(f"{x} - tl.floor({x} + 0.5)")
    res = s.let(f"tl.where({refl}, {res} - {PI!r} / (tl.sin({PI!r} * {r}) / "
                f"tl.cos({PI!r} * {r})), {res})")
    res = s.let(f"tl.where(({x} <= 0.0) & ({x} == tl.floor({x})), {NAN}, {res})")
    res = s.let(f"tl.where({x} == {INF}, {INF}, {res})")
    return s.result(f"{res}.to({{R}})")


_WEIDEMAN_L, _WEIDEMAN_A = weideman_coefficients(40)
_INV_SQRT_PI = 0.5641895835477563


def _erfc():
    """erfc in float64 (as the numpy backend's ``math.erfc``): ``1 - erf(x)`` for
    ``|x| < 0.5``; beyond, ``exp(-x**2) erfcx(|x|)`` with ``erfcx`` from Weideman's formula
    on the imaginary axis (real there) and ``exp(-x**2)`` from ``x = m + f``, ``m`` a multiple
    of 1/128 (Cephes' ``expx2``), so the tail keeps its relative accuracy; ``2 - erfc(-x)``
    below -0.5."""
    s = Steps()
    x = _f64(s)
    ax = s.let(f"tl.abs({x})")
    d = s.let(f"{_WEIDEMAN_L!r} + {ax}")
    p = _poly(s, s.let(f"({_WEIDEMAN_L!r} - {ax}) / {d}"), _WEIDEMAN_A)
    ecx = s.let(f"2.0 * {p} / ({d} * {d}) + {_INV_SQRT_PI!r} / {d}")
    m = s.let(f"tl.floor(128.0 * {ax} + 0.5) * 0.0078125")
    f = s.let(f"{ax} - {m}")
    tail = s.let(f"tl.exp(-({m} * {m})) * tl.exp(-(2.0 * {m} * {f} + {f} * {f})) * {ecx}")
    tail = s.let(f"tl.where({ax} == {INF}, 0.0, {tail})")
    res = s.let(f"tl.where({x} >= 0.5, {tail}, tl.where({x} <= -0.5, 2.0 - {tail}, "
                f"1.0 - tl.erf({x})))")
    return s.result(f"{res}.to({{R}})")


def _chbevl(s: Steps, y: str, coeffs) -> str:
    """Clenshaw's sum of a Chebyshev series (as special_zeta_bessel._chbevl)."""
    b0, b1, b2 = "0.0", "0.0", "0.0"
    for c in coeffs:
        b2, b1 = b1, b0
        b0 = s.let(f"{y} * {b1} - {b2} + {c!r}")
    return s.let(f"0.5 * ({b0} - {b2})")


def _scaled_bessel(small, large, odd):
    """exp(-|x|) I_0(x) / I_1(x): Cephes' Chebyshev expansions on [0, 8] and (8, inf)."""
    s = Steps()
    x = _f64(s)
    z = s.let(f"tl.abs({x})")
    lo = _chbevl(s, s.let(f"0.5 * {z} - 2.0"), small)
    if odd:
        lo = s.let(f"{lo} * {z}")
    hi = _chbevl(s, s.let(f"32.0 / {z} - 2.0"), large)
    hi = s.let(f"{hi} / tl.sqrt({z})")
    out = s.let(f"tl.where({z} <= 8.0, {lo}, {hi})")
    out = s.let(f"tl.where({z} == {INF}, 0.0, {out})")
    if odd:
        out = s.let(f"tl.where({x} < 0.0, -{out}, {out})")
    return s.result(f"{out}.to({{R}})")


_ERFINV_SMALL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                 0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_LARGE = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                 0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _erf_inv():
    """float64: Giles' approximation and two Newton steps on erf(y) - x (as the numpy
    backend's ``erf_inv64``)."""
    s = Steps()
    x = _f64(s)
    w = s.let(f"-tl.log((1.0 - {x}) * (1.0 + {x}))")
    ps = _poly(s, s.let(f"{w} - 2.5"), _ERFINV_SMALL)
    pl = _poly(s, s.let(f"tl.sqrt({w}) - 3.0"), _ERFINV_LARGE)
    y = s.let(f"tl.where({w} < 5.0, {ps}, {pl}) * {x}")
    for _ in range(2):
        two_over_sqrt_pi = float(2 / np.sqrt(np.pi))
        y = s.let(f"{y} - (tl.erf({y}) - {x}) / ({two_over_sqrt_pi!r} * tl.exp(-{y} * {y}))")
    y = s.let(f"tl.where(tl.abs({x}) == 1.0, {x} * {INF}, {y})")
    y = s.let(f"tl.where(tl.abs({x}) > 1.0, {NAN}, {y})")
    return s.result(f"{y}.to({{R}})")


deftemplate(P.erfc_p, _erfc(), F)
deftemplate(P.lgamma_p, _lgamma(), F)
deftemplate(P.digamma_p, _digamma(), F)
def _fma32(s: Steps, a: str, b: str, c: str) -> str:
    """``a * b + c`` of float32 values rounded once (as the numpy backend's ``fma32``): the
    product is exact in float64, the float64 sum is rounded to odd (its TwoSum error names
    the neighbour towards the exact value), then rounded to float32. Contracting the float64
    steps (the GPU may) changes nothing: the product is exact."""
    ab = s.let(f"{a}.to(tl.float64) * {b}.to(tl.float64)")
    c = s.let(f"{c}.to(tl.float64)")
    sm = s.let(f"{ab} + {c}")
    bb = s.let(f"{sm} - {ab}")
    err = s.let(f"({ab} - ({sm} - {bb})) + ({c} - {bb})")
    bits = s.let(f"{sm}.to(tl.int64, bitcast=True)")
    fix = s.let(f"({err} != 0.0) & (({bits} & 1) == 0) & (tl.abs({sm}) < {INF})")
    odd = s.let(f"tl.where({fix}, tl.where(({err} > 0.0) == ({sm} > 0.0), {bits} + 1, "
                f"{bits} - 1), {bits})")
    return s.let(f"{odd}.to(tl.float64, bitcast=True).to(tl.float32)")


def _erf_inv32():
    """float32 (float16/bfloat16 through it): XLA's ErfInv32 bit for bit, as the numpy
    backend's ``erf_inv32``: float32 steps, ``log1p`` in float64 rounded once, each Horner
    step a fused multiply-add."""
    s = Steps()
    x = s.let("{0}.to(tl.float32)")
    t = s.let(f"({x} * -{x}).to(tl.float64)")
    w = s.let(f"(-{_log1p(s, t)}).to(tl.float32)")
    lt = s.let(f"{w} < 5.0")
    w = s.let(f"tl.where({lt}, {w} - 2.5, tl.sqrt_rn({w}) - 3.0)")
    coeffs = [f"tl.where({lt}, {float(np.float32(a))!r}, {float(np.float32(b))!r})"
              for a, b in zip(ERFINV32_W_LT_5, ERFINV32_W_GE_5)]
    p = s.let(f"({coeffs[0]}).to(tl.float32)")
    for c in coeffs[1:]:
        p = _fma32(s, p, w, s.let(f"({c}).to(tl.float32)"))
    return s.result(f"tl.where(tl.abs({x}) == 1.0, {x} * {INF}, {p} * {x}).to({{R}})")


variant_of[P.erf_inv_p] = lambda ctx: ("f64" if np.dtype(ctx.in_avals[0].dtype) == np.float64
                                       else "f32")
deftemplate(P.erf_inv_p, _erf_inv(), "f64")
deftemplate(P.erf_inv_p, _erf_inv32(), "f32")
deftemplate(P.bessel_i0e_p, _scaled_bessel(I0E_A, I0E_B, False), F)
deftemplate(P.bessel_i1e_p, _scaled_bessel(I1E_A, I1E_B, True), F)
deftemplate(P.conj_p, "{0}", F)


def _nextafter(ctx: RuleContext):
    """Step the bits of x (in its storage type) by one towards y."""
    dt = ctx.out_aval.dtype
    bits = np.dtype(dt).itemsize * 8
    it, ft = f"tl.int{bits}", tl_dtype(dt)
    s = Steps()
    xb = s.let(f"{{0}}.to({ft}).to({it}, bitcast=True)")
    step = s.let(f"tl.where(({{1}} > {{0}}) == ({{0}} > 0.0), 1, -1).to({it})")
    moved = s.let(f"({xb} + {step}).to({ft}, bitcast=True).to({{R}})")
    tiny = s.let(f"tl.where({{1}} > 0.0, 1, {-(2 ** (bits - 1)) + 1}).to({it})"
                 f".to({ft}, bitcast=True).to({{R}})")
    r = s.let(f"tl.where({{0}} == 0.0, {tiny}, {moved})")
    r = s.let(f"tl.where({{0}} == {{1}}, {{1}}, {r})")
    return s.result(f"tl.where(({{0}} != {{0}}) | ({{1}} != {{1}}), {{0}} + {{1}}, {r})")


deftemplate(P.nextafter_p, _nextafter, F)


# --- reductions with a combine function ---

HELPERS = {
    "_mul_combine": "@triton.jit\ndef _mul_combine(a, b):\n    return a * b\n",
    "_and_combine": "@triton.jit\ndef _and_combine(a, b):\n    return a & b\n",
    "_or_combine": "@triton.jit\ndef _or_combine(a, b):\n    return a | b\n",
    "_xor_combine": "@triton.jit\ndef _xor_combine(a, b):\n    return a ^ b\n",
}
_KEEP = "keep_dims=True"


def _combine(name: str) -> str:
    return f"tl.reduce({{0}}, 1, {name}, {_KEEP}).to({{R}})"


reduce_rules.update({
    (P.reduce_prod_p, F): ReduceRule("1.0", "{acc} * {0}", _combine("_mul_combine")),
    (P.reduce_prod_p, SI): ReduceRule("1", "{acc} * {0}", _combine("_mul_combine")),
    (P.reduce_prod_p, U): ReduceRule("1", "{acc} * {0}", _combine("_mul_combine")),
    (P.reduce_prod_p, B): ReduceRule("True", "{acc} & {0}",
                                     f"tl.min({{0}}.to(tl.int32), axis=1, {_KEEP}) != 0"),
    (P.reduce_and_p, SI): ReduceRule("-1", "{acc} & {0}", _combine("_and_combine")),
    (P.reduce_and_p, U): ReduceRule("{imax}", "{acc} & {0}", _combine("_and_combine")),
    (P.reduce_or_p, SI): ReduceRule("0", "{acc} | {0}", _combine("_or_combine")),
    (P.reduce_or_p, U): ReduceRule("0", "{acc} | {0}", _combine("_or_combine")),
    (P.reduce_xor_p, SI): ReduceRule("0", "{acc} ^ {0}", _combine("_xor_combine")),
    (P.reduce_xor_p, U): ReduceRule("0", "{acc} ^ {0}", _combine("_xor_combine")),
    (P.reduce_xor_p, B): ReduceRule(
        "False", "{acc} ^ {0}",
        f"tl.reduce({{0}}.to(tl.int32), 1, _xor_combine, {_KEEP}) != 0"),
})


def argreduce_rule(prim, dtype) -> ReduceRule:
    """argmax / argmin over a whole row in registers: the extremum, then the first column
    holding it (a NaN wins, as in JAX); ``{col}`` is the row's column index."""
    cls = F if tl_name(dtype) in ("float16", "bfloat16", "float32", "float64") else (
        B if tl_name(dtype) == "bool" else (U if tl_name(dtype).startswith("uint") else SI))
    is_max = prim is P.argmax_p
    red = "max" if is_max else "min"
    if cls == F:
        ident = f"-{INF}" if is_max else INF
    elif cls == B:
        ident = "False" if is_max else "True"
    else:
        info = np.iinfo(dtype)
        ident = str(int(info.min if is_max else info.max))
    s = Steps()
    x = s.let("{0}.to(tl.int32)") if cls == B else "{0}"
    ext = s.let(f"tl.{red}({x}, axis=1, {_KEEP})")
    hit = s.let(f"{x} == {ext}")
    if cls == F:
        nan = s.let("{0} != {0}")
        any_nan = s.let(f"tl.max({nan}.to(tl.int32), axis=1, {_KEEP}) > 0")
        hit = s.let(f"tl.where({any_nan}, {nan}, {hit})")
    first = s.result(f"tl.min(tl.where({hit}, {{col}}, 2147483647), axis=1, {_KEEP}).to({{R}})")
    return ReduceRule(ident, None, first)


# index reductions: primitive -> rule(prim, dtype) -> ReduceRule
arg_reduce_rules = {P.argmax_p: argreduce_rule, P.argmin_p: argreduce_rule}


def check_argreduce_fits(prim, fits: bool):
    if not fits:
        raise UnsupportedError(f"'{prim}' over rows longer than KernelConfig.max_block_r is not "
                               "lowered to Triton yet (rows are reduced in registers only)")
