"""Kernels of OPAQUE groups on the Triton backend (``functrax/lowering/triton/scan_sort.py``):
cumulative scans, sort, threefry2x32 and bitcast_convert_type, in Triton's interpreter against
the numpy backend; the PRNG samplers bit-exact under ``jit(backend="triton")``; every kernel
compiles for sm_90.
"""
from __future__ import annotations

from tests import triton_harness as th  # first: sets TRITON_INTERPRET=1 for triton

import json
import pathlib
import re

import numpy as np
import pytest

import functrax.numpy as fnp
from functrax import jit, lax, random
from functrax.lowering.fusion.types import GroupKind
from functrax.lowering.triton import compile as tcompile
from functrax.lowering.triton.codegen import KernelConfig
from functrax.lax import bitcast_convert_type
from functrax.test_util import enable_x64
from tests.triton_harness import BF16

_PROGRAMS = []  # every program built here: their kernels are compiled for sm_90 below


def _run(f, *args, kernel_config=None):
    """(numpy backend result, Triton result, Triton program) of ``f`` on ``args``."""
    args = [fnp.asarray(a) for a in args]
    want = jit(f)(*args)
    prog = th.triton_program(f, *args, kernel_config=kernel_config)
    _PROGRAMS.append(prog)
    got = prog.run(*[np.asarray(a) for a in args])
    if kernel_config is None:  # what jit(backend="triton") runs is the same program
        got2 = jit(f, backend="triton")(*args)
        got2 = list(got2) if isinstance(got2, (list, tuple)) else [got2]
        for a, b in zip(got, got2):
            th.bits_equal(np.asarray(a), np.asarray(b))
    want = list(want) if isinstance(want, (list, tuple)) else [want]
    return [np.asarray(w) for w in want], got, prog


def _no_fallback(prog):
    assert not prog.fallbacks, prog.fallbacks


def _ulps(got, want):
    """Distance in float32 units in the last place (through ordered bit patterns)."""
    def ordered(x):
        i = np.asarray(x, np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return np.abs(ordered(got) - ordered(want))


# --- cumulative scans ---

SCANS = {"cumsum": lax.cumsum, "cumprod": lax.cumprod, "cummax": lax.cummax,
         "cummin": lax.cummin, "cumlogsumexp": lax.cumlogsumexp}
# (dtype, shape, axis, reverse)
SCAN_LAYOUTS = [("float32", (3, 5), 1, False), ("float32", (2, 3, 4), 1, True),
                ("float32", (33,), 0, True), ("int32", (4, 6), 0, False),
                ("float16", (2, 9), 1, False),
                ("uint8", (2, 40), 1, False), ("int8", (3, 2, 3), 0, True)]
SCAN_CASES = [pytest.param(name, *lay, id=f"{name}-{lay[0]}-{lay[1]}-ax{lay[2]}"
                           f"{'-rev' if lay[3] else ''}")
              for name in SCANS for lay in SCAN_LAYOUTS
              if name != "cumlogsumexp" or lay[0].startswith("float")]


def _scan_input(name, dtype, shape, rng):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.rand(*shape) < 0.6
    if dt.kind in "iu":
        return rng.randint(0 if dt.kind == "u" else -9, 10, size=shape).astype(dt)
    x = rng.randn(*shape).astype(np.float32)
    if name == "cumprod":
        x = (1.0 + 0.1 * x).astype(np.float32)
    if x.ndim >= 2 and name in ("cummax", "cummin", "cumlogsumexp", "cumsum"):
        flat = x.reshape(-1, x.shape[-1])
        flat[0, min(2, flat.shape[1] - 1)] = np.nan  # one row holds a NaN, another an inf
        flat[-1, 0] = np.inf if name != "cummin" else -np.inf
    return x.astype(dt)


@pytest.mark.parametrize("name, dtype, shape, axis, reverse", SCAN_CASES)
def test_scan_matches_numpy_backend(name, dtype, shape, axis, reverse):
    x = _scan_input(name, dtype, shape, np.random.RandomState(len(shape) + axis))
    (want,), (got,), prog = _run(lambda a: SCANS[name](a, axis=axis, reverse=reverse), x)
    _no_fallback(prog)
    assert got.dtype == want.dtype and got.shape == want.shape
    if np.dtype(dtype).kind in "iub" or name in ("cummax", "cummin"):
        th.bits_equal(got, want)  # exact, NaN propagated as JAX does
    else:  # a parallel scan associates differently; numpy accumulates float16 in float16
        tol = 1e-2 if dtype == "float16" else 2e-6
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=tol, atol=tol)


@pytest.mark.parametrize("name, reverse", [("cumsum", False), ("cummax", True),
                                           ("cumlogsumexp", True), ("cumprod", False)])
def test_scan_long_rows_are_streamed_in_chunks(name, reverse):
    """Rows longer than max_block_r: chunks carry the running value across the loop."""
    cfg = KernelConfig(max_block_r=16, max_tile=64)
    rng = np.random.RandomState(3)
    x = rng.randn(3, 50).astype(np.float32)
    if name == "cumprod":
        x = (1.0 + 0.05 * x).astype(np.float32)
    x[1, 30] = np.nan
    (want,), (got,), prog = _run(lambda a: SCANS[name](a, axis=1, reverse=reverse), x,
                                 kernel_config=cfg)
    _no_fallback(prog)
    assert "for c0 in range(0, 50, BLOCK_N)" in prog.kernels[0].source.text
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


def test_scan_through_numpy_functions_and_int_wraparound():
    x = np.array([[100, 100, 100, -128], [1, 2, 3, 4]], np.int8)
    (want,), (got,), prog = _run(lambda a: fnp.cumsum(a, axis=1, dtype=fnp.int8), x)
    _no_fallback(prog)
    np.testing.assert_array_equal(got, want)  # wraps as int8 arithmetic does


def test_empty_scan():
    (want,), (got,), prog = _run(lambda a: lax.cumsum(a, axis=1), np.zeros((3, 0), np.float32))
    assert got.shape == want.shape == (3, 0)


# --- sort ---


def _sort_input(dtype, shape, rng):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.rand(*shape) < 0.5
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else -3
        return rng.randint(lo, 4, size=shape).astype(dt)  # many ties
    x = np.round(rng.randn(*shape) * 2).astype(np.float32)  # ties, -0.0 and 0.0
    flat = x.reshape(-1)
    flat[::5] = np.nan
    flat[1::7] = -0.0
    flat[2::11] = np.inf
    flat[3::13] = -np.inf
    return x.astype(dt)


SORT_LAYOUTS = [("float32", (9,), 0), ("float32", (3, 7), 0), ("float32", (2, 5, 3), 1),
                ("int32", (4, 17), 1), ("int8", (3, 6), 1), ("uint16", (5, 4), 0),
                ("bool", (2, 9), 1), ("float16", (2, 12), 1), (BF16.name, (3, 6), 1)]
SORT_CASES = [pytest.param(*lay, id=f"{lay[0]}-{lay[1]}-ax{lay[2]}") for lay in SORT_LAYOUTS]


@pytest.mark.parametrize("dtype, shape, axis", SORT_CASES)
def test_sort_matches_numpy_backend(dtype, shape, axis):
    x = _sort_input(dtype, shape, np.random.RandomState(sum(shape)))
    (want,), (got,), prog = _run(lambda a: fnp.sort(a, axis=axis), x)
    _no_fallback(prog)
    th.bits_equal(got, want)  # NaNs last, -0.0 and 0.0 in their original order (stable)
    if x.dtype.kind in "fV":  # and both are numpy's stable sort of the widened values
        order = np.argsort(x.astype(np.float64), axis=axis, kind="stable")
        th.bits_equal(got, np.take_along_axis(x, order, axis=axis))


@pytest.mark.parametrize("dtype, shape, axis", SORT_CASES)
def test_argsort_is_stable_with_ties(dtype, shape, axis):
    x = _sort_input(dtype, shape, np.random.RandomState(1 + sum(shape)))
    (want,), (got,), prog = _run(lambda a: fnp.argsort(a, axis=axis), x)
    _no_fallback(prog)
    # numpy's own stable argsort (NaNs last; -0.0 == 0.0)
    wide = x.astype(np.float64) if x.dtype.kind in "fV" or x.dtype == BF16 else x
    np.testing.assert_array_equal(got, np.argsort(wide, axis=axis, kind="stable"))
    np.testing.assert_array_equal(got, want)


def test_numpy_backend_sorts_bfloat16_like_float32():
    """bfloat16 keys (numpy cannot order ml_dtypes values) sort as their float32 values:
    NaNs last, -0.0 == 0.0 kept in order (stable), eager and under jit, also as a second key."""
    x = np.array([[1.5, np.nan, -2.0, 0.0, -0.0, np.inf, -np.inf, np.nan, -2.0, 3.0],
                  [np.nan, 0.25, -0.0, 0.0, 1e30, -1e-30, 7.0, 7.0, -np.nan, -1.0]], BF16)
    order = np.argsort(x.astype(np.float32), axis=1, kind="stable")
    for f in (lambda a: fnp.sort(a, axis=1), jit(lambda a: fnp.sort(a, axis=1))):
        th.bits_equal(np.asarray(f(fnp.asarray(x))),
                    np.take_along_axis(x, order, axis=1))
    np.testing.assert_array_equal(np.asarray(fnp.argsort(fnp.asarray(x), axis=1)), order)
    keys = np.array([[1, 0, 1, 0, 1, 0, 1, 0, 1, 0]] * 2, np.int32)
    got = np.asarray(fnp.lexsort((fnp.asarray(x), fnp.asarray(keys)), axis=1))
    np.testing.assert_array_equal(got, np.lexsort((x.astype(np.float32), keys), axis=1))


def test_descending_argsort_and_several_operands():
    x = np.array([[3, 1, 3, 2, 1, 3], [0, 0, 5, 5, 1, 0]], np.int32)
    (want,), (got,), prog = _run(lambda a: fnp.argsort(a, axis=1, descending=True), x)
    _no_fallback(prog)
    np.testing.assert_array_equal(got, want)
    v = np.arange(12, dtype=np.float32).reshape(2, 6)
    want, got, prog = _run(lambda a, b: lax.sort((a, b), dimension=1, num_keys=1), x, v)
    _no_fallback(prog)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_lexsort_several_keys():
    """num_keys > 1: one stable pass per key, least significant first."""
    rng = np.random.RandomState(5)
    a = rng.randint(0, 3, size=(4, 11)).astype(np.int32)
    b = np.round(rng.randn(4, 11)).astype(np.float32)
    b[0, 3] = np.nan
    c = rng.rand(4, 11) < 0.5
    (want,), (got,), prog = _run(lambda x, y, z: fnp.lexsort((x, y, z), axis=1), a, b, c)
    _no_fallback(prog)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, np.lexsort((a, b, c), axis=1))
    want, got, prog = _run(lambda x, y, z: lax.sort((x, y, z), dimension=0, num_keys=2),
                           a.T.copy(), c.T.copy(), b.T.copy())
    _no_fallback(prog)
    for g, w in zip(got, want):
        th.bits_equal(g, w)


def test_sort_fallbacks_name_their_reason():
    """Cases without a kernel stay numpy fallbacks, with the reason listed."""
    x = np.random.RandomState(0).randn(2, 40).astype(np.float32)
    (want,), (got,), prog = _run(lambda a: fnp.sort(a, axis=1), x,
                                 kernel_config=KernelConfig(max_block_r=16, max_tile=64))
    np.testing.assert_array_equal(got, want)
    assert "exceed max_block_r=16" in prog.fallbacks[0].reason
    with enable_x64():
        x64 = np.random.RandomState(0).randn(6)
        (want,), (got,), prog = _run(lambda a: fnp.sort(a), x64)
        np.testing.assert_array_equal(got, want)
        assert "64-bit key" in prog.fallbacks[0].reason


# --- bitcast_convert_type ---

BITCASTS = [("float32", "int32"), ("float32", "uint32"), ("int32", "float32"),
            ("uint32", "float32"), ("float16", "int16"), ("uint16", "float16"),
            ("int8", "uint8"), (BF16.name, "uint16"), ("int16", BF16.name)]


@pytest.mark.parametrize("src, dst", BITCASTS, ids=[f"{a}-{b}" for a, b in BITCASTS])
def test_bitcast_same_width(src, dst):
    rng = np.random.RandomState(0)
    width = np.dtype(src).itemsize
    raw = rng.randint(0, 2 ** (8 * width), size=(3, 5), dtype=np.uint64)
    view = {1: np.uint8, 2: np.uint16, 4: np.uint32}[width]
    x = raw.astype(view)
    if np.dtype(src).kind == "f":  # finite values (NaN payloads need not survive float math)
        x = (rng.randn(3, 5) * 100).astype(src).view(view)
        x.reshape(-1)[0] = np.array(-0.0, src).view(view)
    x = x.view(src)
    (want,), (got,), prog = _run(lambda a: bitcast_convert_type(a, dst), x)
    _no_fallback(prog)
    th.bits_equal(got, want)


def test_bitcast_changing_width_is_a_listed_fallback():
    x = np.arange(6, dtype=np.float32)
    (want,), (got,), prog = _run(lambda a: bitcast_convert_type(a, np.uint8), x)
    np.testing.assert_array_equal(got, want)
    assert prog.fallbacks and prog.fallbacks[0].reason.startswith("bitcast_convert_type")


# --- threefry2x32 and the samplers ---

DATA = pathlib.Path(__file__).resolve().parent / "data" / "jax_random.json"
VECTORS = json.loads(DATA.read_text())


@pytest.mark.parametrize("case", VECTORS["threefry2x32_20_known_answers"])
def test_threefry_known_answers(case):
    k = [np.asarray(v, np.uint32) for v in case["key"]]
    c = [np.asarray([v, v ^ 1], np.uint32) for v in case["counter"]]
    want, got, prog = _run(lambda k1, k2, x1, x2: random.threefry2x32(k1, k2, x1, x2),
                           k[0], k[1], c[0], c[1])
    _no_fallback(prog)
    assert [int(got[0][0]), int(got[1][0])] == case["out"]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_threefry_with_a_literal_key_and_one_result_read():
    x = np.arange(1000, dtype=np.uint32)
    want, got, prog = _run(lambda a: random.threefry2x32(np.uint32(7), np.uint32(3), a, a)[1],
                           x)
    _no_fallback(prog)
    np.testing.assert_array_equal(got[0], want[0])


_PRNG_KEY = re.compile(r"PRNGKey\((\d+)\)")
SAMPLER_CASES = [c for c in VECTORS["cases"] if _PRNG_KEY.search(c["call"])
                 and not c["call"].startswith("PRNGKey") and
                 _PRNG_KEY.search(c["call"]).group(1) in ("0", "42")]


def _sampler(call):
    """``call`` (JAX names, as the vectors write it) as a function of its key."""
    call = re.sub(r"\s+(u?int\d+|float\d+|bool)$", "", call.strip())
    *stmts, expr = [s.strip() for s in _PRNG_KEY.sub("key", call).split(";")]
    env = {name: getattr(random, name) for name in random.__all__}
    env["jnp"] = fnp
    src = "def f(key):\n" + "".join(f"    {s}\n" for s in stmts) + f"    return {expr}\n"
    exec(src, env)  # noqa: S102 - fixed strings from the reference vectors
    return env["f"], int(_PRNG_KEY.search(call).group(1))


@pytest.mark.parametrize("case", SAMPLER_CASES, ids=[c["name"] for c in SAMPLER_CASES])
def test_samplers_are_bit_exact_on_triton(case):
    f, seed = _sampler(case["call"])
    (want,), (got,), prog = _run(f, random.PRNGKey(seed))
    g = got.reshape(-1)
    if "bits_uint32" in case:
        th.bits_equal(got, want)  # float samplers too (log1p / expm1 / erf in float64 on both)
        jax = np.asarray(case["bits_uint32"], np.uint32).view(np.float32)
        assert _ulps(g, jax).max() <= 3
    else:
        th.bits_equal(got, want)  # integers, booleans and keys: bit for bit
        np.testing.assert_array_equal(g, np.asarray(case["values"]).astype(g.dtype))
    if re.match(r"(split|fold_in|bits|uniform|normal|randint|bernoulli|gumbel|exponential|"
                r"permutation)\(", case["call"]):
        _no_fallback(prog)


def test_normal_under_jit_triton_has_no_fallback():
    key = random.PRNGKey(3)
    (want,), (got,), prog = _run(lambda k: random.normal(k, (64, 33)), key)
    _no_fallback(prog)
    th.bits_equal(got, want)
    prims = {e.primitive.name for g in prog.plan.groups for e in g.eqns}
    assert {"threefry2x32", "bitcast_convert_type"} <= prims


@pytest.mark.parametrize("name", ["normal", "exponential", "laplace", "gumbel", "logistic",
                                  "truncated_normal"])
def test_float_samplers_bit_exact_on_many_draws(name):
    """2112 draws per sampler (the vectors above hold a few each): bit for bit."""
    fn = getattr(random, name)
    f = (lambda k: fn(k, -1.5, 0.5, (64, 33))) if name == "truncated_normal" else \
        (lambda k: fn(k, (64, 33)))
    (want,), (got,), prog = _run(f, random.PRNGKey(11))
    th.bits_equal(got, want)


def _float32_sweep(n, rng):
    """float32 values across the range: [-1, 1), tiny, near -1, large, random bit patterns
    (NaNs and infinities included)."""
    sign = rng.choice([-1.0, 1.0], n)
    parts = [rng.uniform(-1, 1, n), sign * 10.0 ** rng.uniform(-45, -1, n),
             -1 + 10.0 ** rng.uniform(-7.5, -0.3, n), 10.0 ** rng.uniform(0, 38.5, n),
             sign * rng.uniform(0, 100, n)]
    bits = rng.randint(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([p.astype(np.float32) for p in parts] + [bits,
                          np.array([0.0, -0.0, -1.0, np.inf, -np.inf, np.nan], np.float32)])


@pytest.mark.parametrize("name", ["log1p", "expm1", "erf"])
def test_float32_special_functions_bit_exact(name):
    """log1p / expm1 (the samplers' -log1p(-u), erf_inv's log1p(-x*x)) and erf (truncated
    normal) compute in float64 and round once on both backends: equal bits everywhere, and
    equal to the float64 value rounded (so correctly rounded but for rare near-ties)."""
    x = _float32_sweep(4000, np.random.RandomState(0))
    if name == "expm1":  # most of the range over/underflows: scale the large values down
        big = np.abs(x) > 100
        x[big] = (x[big] * np.float32(1e-36)).astype(np.float32)
    (want,), (got,), prog = _run(getattr(lax, name), x)
    _no_fallback(prog)
    th.bits_equal(got, want)
    ref = {"log1p": np.log1p, "expm1": np.expm1,
           "erf": np.frompyfunc(__import__("math").erf, 1, 1)}[name]
    with np.errstate(all="ignore"):
        exact = np.asarray(ref(x.astype(np.float64)), np.float64).astype(np.float32)
    th.bits_equal(np.where(np.isnan(exact), np.float32(np.nan), got),
                np.where(np.isnan(exact), np.float32(np.nan), exact))


# --- sm_90 ---


def test_every_kernel_compiles_for_sm90():
    """Every distinct scan / sort / threefry / bitcast kernel built above compiles to PTX and
    a cubin for sm_90 (run alone, it builds a few first)."""
    alone = not _PROGRAMS
    if alone:
        test_scan_long_rows_are_streamed_in_chunks("cumlogsumexp", True)
        test_descending_argsort_and_several_operands()
        test_lexsort_several_keys()
        test_normal_under_jit_triton_has_no_fallback()
    calls = {}
    for prog in _PROGRAMS:
        for k in prog.kernels:
            src = getattr(k, "source", None)
            if src is None or not hasattr(src, "signature") or (
                    src.kind is not GroupKind.OPAQUE and "bitcast" not in src.name):
                continue  # the fused kernels are compiled by tests/test_triton_opspec.py
            key = (src.text, tuple(src.signature.items()),
                   tuple(sorted(src.constexprs.items())), src.num_warps)
            calls.setdefault(key, (k.fn, src.signature, src.constexprs, src.num_warps))
    calls = list(calls.values())
    names = {c[0].fn.__name__ if hasattr(c[0], "fn") else c[0].__name__ for c in calls}
    assert len(calls) >= (5 if alone else 40)
    compiled = tcompile.compile_many(calls)
    assert len(compiled) == len(calls)
    for c in compiled:
        assert ".target sm_90" in c.ptx and c.cubin[:4] == b"\x7fELF"
    assert {"sort_row", "threefry2x32", "cumlogsumexp_row"} <= names
