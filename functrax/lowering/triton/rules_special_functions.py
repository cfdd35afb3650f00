"""Triton templates for the special functions (lgamma, digamma, erf_inv), ``nextafter``,
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
from functrax.lowering.triton.rules import (
    B, F, INF, NAN, SI, U, RuleContext, ReduceRule, UnsupportedError, deftemplate, Steps, tl_name,
    reduce_rules, tl_dtype,
)

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


def _digamma():
    """As special.digamma: reflection below 0.5, recurrence up to 6, asymptotic series."""
    s = Steps()
    x = _f64(s)
    refl = s.let(f"{x} < 0.5")
    w = s.let(f"tl.where({refl}, 1.0 - {x}, {x})")
    acc = "0.0"
    for _ in range(6):
        small = s.let(f"{w} < 6.0")
        acc = s.let(f"tl.where({small}, {acc} - 1.0 / {w}, {acc})")
        w = s.let(f"tl.where({small}, {w} + 1.0, {w})")
    inv = s.let(f"1.0 / {w}")
    inv2 = s.let(f"{inv} * {inv}")
    series = s.let(f"tl.log({w}) - 0.5 * {inv} - {inv2} * ({1 / 12!r} - {inv2} * ({1 / 120!r} - "
                   f"{inv2} * ({1 / 252!r} - {inv2} * ({1 / 240!r} - {inv2} / 132.0))))")
    res = s.let(f"{acc} + {series}")
    res = s.let(f"tl.where({refl}, {res} - {PI!r} / (tl.sin({PI!r} * {x}) / "
                f"tl.cos({PI!r} * {x})), {res})")
    res = s.let(f"tl.where(({x} <= 0.0) & ({x} == tl.floor({x})), {NAN}, {res})")
    return s.result(f"{res}.to({{R}})")


_ERFINV_SMALL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                 0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_LARGE = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                 0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _erf_inv():
    """Giles' approximation and two Newton steps on erf(y) - x (as special.erf_inv)."""
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


deftemplate(P.lgamma_p, _lgamma(), F)
deftemplate(P.digamma_p, _digamma(), F)
deftemplate(P.erf_inv_p, _erf_inv(), F)
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
