"""Type promotion against JAX's own tables, weak types, x64, and integer-division semantics.

The reference tables (``shared/vectors/jax_promotion.json``) were produced by JAX itself; the
shared folder sits beside the clone (locally and in CI).
"""
from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import functrax
import functrax.numpy as fnp
from functrax import dtypes, lax
from tests.vectors import vector_path

VECTORS = vector_path("jax_promotion.json")
TABLE = json.loads(VECTORS.read_text()) if VECTORS.exists() else None
needs_table = pytest.mark.skipif(TABLE is None, reason=f"JAX promotion vectors not found at "
                                 f"{VECTORS} (the shared/ folder must sit beside the clone)")


def _dt(name: str) -> np.dtype:
    if name == "bfloat16":
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _pairs(key):
    if TABLE is None:
        return []
    return [(a, b, r) for a, row in TABLE[key].items() for b, r in row.items()]


@pytest.fixture
def x64():
    prev = functrax.config.enable_x64
    functrax.config.update("enable_x64", True)
    try:
        yield
    finally:
        functrax.config.update("enable_x64", prev)


# --- the tables ---


@needs_table
@pytest.mark.parametrize("a,b,want", _pairs("promote_types"))
def test_promote_types_matches_jax(a, b, want):
    got = dtypes.promote_types(_dt(a), _dt(b))
    assert np.dtype(got) == _dt(want), f"promote_types({a}, {b}) = {got}, JAX gives {want}"


_SCALAR_OF = {"+ int": 1, "+ float": 1.0, "+ complex": 1j, "+ bool": True}


@needs_table
@pytest.mark.parametrize("dt,op,want", _pairs("weak_scalar_results_x64_off"))
def test_weak_python_scalar_results_match_jax(dt, op, want):
    assert op in _SCALAR_OF, f"unknown entry {op!r} in the vectors: extend _SCALAR_OF"
    got = fnp.add(fnp.zeros(2, _dt(dt)), _SCALAR_OF[op]).dtype
    assert got == _dt(want), f"zeros(2, {dt}) {op} -> {got}, JAX gives {want}"


_DEFAULTS = {
    "jnp.array(1)": lambda: fnp.array(1),
    "jnp.array(1.0)": lambda: fnp.array(1.0),
    "jnp.arange(3)": lambda: fnp.arange(3),
    "jnp.ones(3)": lambda: fnp.ones(3),
    "jnp.array(True)": lambda: fnp.array(True),
    "jnp.mean(int32 array)": lambda: fnp.mean(fnp.arange(4, dtype="int32")),
    "int32 / int32": lambda: fnp.arange(3, dtype="int32") / fnp.arange(1, 4, dtype="int32"),
    "int32 // int32": lambda: fnp.arange(3, dtype="int32") // fnp.arange(1, 4, dtype="int32"),
}


@needs_table
@pytest.mark.parametrize("expr,want", list(TABLE["defaults_x64_off"].items()) if TABLE else [])
def test_defaults_match_jax(expr, want):
    assert expr in _DEFAULTS, f"no functrax analogue for {expr!r}: add one to _DEFAULTS"
    assert _DEFAULTS[expr]().dtype == np.dtype(want), expr


# --- weak types ---


def test_weak_type_flags():
    assert (fnp.zeros(2, "int8") + 1).weak_type is False
    assert (fnp.zeros(2, "int8") + 1).dtype == np.int8
    assert lax.add(1.0, 2.0).weak_type is True
    assert fnp.add(fnp.zeros(3, "int8"), 1).dtype == np.int8
    m = fnp.multiply(fnp.zeros(3, "int32"), 1.0)
    assert m.dtype == np.float32 and m.weak_type is True  # i32 with f* joins to f*


@pytest.mark.parametrize("fn,args,dtype", [
    (fnp.add, (1, 2), np.int32), (fnp.add, (1, 2.0), np.float32),
    (fnp.multiply, (2.0, 3.0), np.float32), (fnp.subtract, (1, 2), np.int32),
    (fnp.true_divide, (1, 2), np.float32), (fnp.floor_divide, (7, 2), np.int32),
    (fnp.remainder, (-7, 2), np.int32), (fnp.power, (2, 3), np.int32),
    (fnp.maximum, (1.0, 2), np.float32), (fnp.sin, (1.0,), np.float32),
    (fnp.sqrt, (2,), np.float32), (fnp.negative, (3,), np.int32),
    (fnp.square, (3.0,), np.float32), (fnp.floor, (2,), np.int32),
    (fnp.positive, (2.5,), np.float32), (fnp.exp, (0,), np.float32),
])
def test_python_scalar_only_calls_are_weak(fn, args, dtype):
    out = fn(*args)
    assert isinstance(out, functrax.Array)
    assert out.dtype == dtype and out.weak_type is True, (fn.__name__, out)
    with np.errstate(all="ignore"):
        want = getattr(np, fn.__name__)(*args)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)


def test_weak_result_stays_weak_with_another_scalar():
    assert (fnp.sin(1.0) + 1.0).weak_type is True
    assert (fnp.sin(1.0) + fnp.zeros((), "float32")).weak_type is False
    assert fnp.where(True, 1.0, 2.0).weak_type is True


@pytest.mark.parametrize("fn", [fnp.equal, fnp.less, fnp.logical_and, fnp.isclose])
def test_predicates_are_strong_bool(fn):
    out = fn(1.0, 2.0)
    assert out.dtype == np.bool_ and out.weak_type is False


def test_jaxpr_keeps_the_scalar_literal_typed():
    text = str(functrax.make_jaxpr(lambda x: x + 1)(fnp.zeros((), "int8")))
    assert "add a 1:i8[]" in text, text
    text = str(functrax.make_jaxpr(lambda x: x * 2.0)(fnp.zeros(3, "float32")))
    assert "mul a 2.0:f32[]" in text, text
    text = str(functrax.make_jaxpr(lambda x: x ** 2)(fnp.zeros(3, "float32")))
    assert "integer_pow[y=2] a" in text, text


# --- lattice properties ---

_DTYPES = [np.dtype(t) for t in (np.bool_, np.uint8, np.uint16, np.uint32, np.int8, np.int16,
                                 np.int32, np.float16, np.float32, np.complex64,
                                 ml_dtypes.bfloat16)]
_WEAKABLE = {np.dtype(np.int32), np.dtype(np.float32), np.dtype(np.complex64)}


def _value(dt, weak):
    """A strong dtype, or a weakly typed scalar of a default dtype."""
    return functrax.Array(np.zeros((), dt), weak_type=True) if weak else dt


def _rt(*vals):
    return dtypes.result_type(*vals, return_weak_type_flag=True)


_operand = st.tuples(st.sampled_from(_DTYPES), st.booleans()).map(
    lambda p: _value(p[0], p[1] and p[0] in _WEAKABLE))


@settings(max_examples=150, deadline=None)
@given(vals=st.lists(_operand, min_size=2, max_size=5), data=st.data())
def test_result_type_is_commutative(vals, data):
    perm = data.draw(st.permutations(vals))
    assert _rt(*vals) == _rt(*perm)


@settings(max_examples=150, deadline=None)
@given(a=_operand, b=_operand, c=_operand)
def test_result_type_is_associative(a, b, c):
    # canonical (x64 off) dtypes only: joins of those stay consistent after canonicalizing
    ab, bc = _value(*_rt(a, b)), _value(*_rt(b, c))
    assert _rt(ab, c) == _rt(a, bc) == _rt(a, b, c)


@settings(max_examples=100, deadline=None)
@given(a=_operand, b=_operand)
def test_promote_types_is_an_upper_bound(a, b):
    # the join is an upper bound: joining it (as a strong dtype) with an operand gives it back
    d, _ = _rt(a, b)
    for v in (a, b):
        if isinstance(v, np.dtype):
            assert _rt(v, d) == (d, False)


# --- x64 ---


def _x64_probe():
    return (fnp.zeros(2, "float64").dtype, fnp.arange(3).dtype, fnp.array(1.0).dtype,
            fnp.add(fnp.arange(3), 1.5).dtype, fnp.sin(1).dtype,
            (fnp.arange(3) / 2).dtype)


def test_enable_x64(x64):
    assert fnp.zeros(2, "float64").dtype == np.float64
    assert fnp.arange(3).dtype == np.int64
    assert fnp.array(1.0).dtype == np.float64
    assert fnp.add(fnp.zeros(2, "int64"), 1).dtype == np.int64
    assert fnp.add(fnp.zeros(2, "float32"), 1.0).dtype == np.float32
    assert (fnp.arange(3) / 2).dtype == np.float64
    assert fnp.floor_divide(fnp.arange(3), 2).dtype == np.int64
    assert dtypes.result_type(np.uint32, np.int32) == np.int64


def test_x64_flag_is_respected_by_caches():
    off = (np.float32, np.int32, np.float32, np.float32, np.float32, np.float32)
    assert _x64_probe() == off  # warm every cache with x64 off
    prev = functrax.config.enable_x64
    functrax.config.update("enable_x64", True)
    try:
        assert _x64_probe() == (np.float64, np.int64, np.float64, np.float64, np.float64,
                                np.float64)
    finally:
        functrax.config.update("enable_x64", prev)
    assert _x64_probe() == off


# --- integer division and remainder semantics ---


@pytest.mark.parametrize("dt", ["int8", "int32", "uint8"])
def test_integer_division_by_zero_does_not_raise(dt):
    x = fnp.array([-5, 0, 7], dtype=dt) if dt != "uint8" else fnp.array([5, 0, 7], dtype=dt)
    zero = fnp.zeros(3, dtype=dt)
    for fn in (fnp.floor_divide, fnp.remainder, fnp.fmod, fnp.gcd, fnp.lcm):
        out = fn(x, zero)
        assert out.dtype == np.dtype(dt) and out.shape == (3,)
    q, r = fnp.divmod(x, zero)
    assert q.dtype == r.dtype == np.dtype(dt)
    # as numpy: the remainder of a division by zero is zero
    np.testing.assert_array_equal(np.asarray(fnp.remainder(x, zero)), np.zeros(3, dt))
    closed = functrax.make_jaxpr(fnp.floor_divide)(x, zero)
    functrax.eval_jaxpr(closed.jaxpr, closed.consts, x, zero)


@pytest.mark.parametrize("dt", ["int8", "int16", "int32"])
def test_signed_floor_division_matches_numpy(dt):
    a = np.arange(-7, 8, dtype=dt)[:, None]
    b = np.array([-3, -2, -1, 1, 2, 3], dtype=dt)[None, :]
    np.testing.assert_array_equal(np.asarray(fnp.floor_divide(a, b)), np.floor_divide(a, b))
    np.testing.assert_array_equal(np.asarray(fnp.remainder(a, b)), np.remainder(a, b))
    np.testing.assert_array_equal(np.asarray(fnp.fmod(a, b)), np.fmod(a, b))
    np.testing.assert_array_equal(np.asarray(fnp.asarray(a) // b), a // b)
    np.testing.assert_array_equal(np.asarray(fnp.asarray(a) % b), a % b)


def test_float_floor_division_matches_numpy():
    a = np.array([1.0, -1.0, 7.5, -7.5, 0.3, 1e-8], np.float32)[:, None]
    b = np.array([0.1, -0.1, 2.0, -2.0, 3.0], np.float32)[None, :]
    np.testing.assert_array_equal(np.asarray(fnp.floor_divide(a, b)), np.floor_divide(a, b))
    np.testing.assert_allclose(np.asarray(fnp.remainder(a, b)), np.remainder(a, b), atol=1e-6)


# --- errors name the function ---


@pytest.mark.parametrize("call,match", [
    (lambda: fnp.add([1, 2], 1), "add requires ndarray or scalar arguments"),
    (lambda: fnp.add(fnp.zeros(2), fnp.zeros(3)), "add: incompatible shapes"),
    (lambda: fnp.floor_divide(fnp.ones(2, "complex64"), 1), "floor_divide does not support"),
    (lambda: fnp.ldexp(fnp.ones(2), 1.5), "ldexp"),
    (lambda: fnp.gcd(fnp.ones(2), 1), "gcd: arguments must be integers"),
    (lambda: fnp.clip(fnp.ones(2, "complex64"), 0, 1), "complex"),
    (lambda: fnp.where(True, 1.0), "both or neither"),
    (lambda: fnp.round(fnp.ones(2), 1.5), "decimals must be a static Python int"),
])
def test_errors_name_the_function(call, match):
    with pytest.raises((TypeError, ValueError), match=match):
        call()


@pytest.mark.parametrize("kind, expected", [
    ("floating", True), ("inexact", True), ("number", True), ("generic", True),
    ("integer", False), ("complexfloating", False)])
def test_issubdtype_bfloat16_every_spelling(kind, expected):
    # jnp.bfloat16 (a scalar class), ml_dtypes' class, its dtype and its name are one type
    for a in (fnp.bfloat16, ml_dtypes.bfloat16, np.dtype(ml_dtypes.bfloat16), "bfloat16"):
        assert fnp.issubdtype(a, getattr(np, kind)) is expected, (a, kind)
    assert fnp.issubdtype(fnp.bfloat16, ml_dtypes.bfloat16)
    assert not fnp.issubdtype(np.float16, fnp.bfloat16)
