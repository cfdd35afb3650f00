"""functrax.Array: repr, immutability, numpy interop, operators, methods, protocols."""
from __future__ import annotations

import pickle

import ml_dtypes
import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import dtypes, lax

Array = functrax.Array


# --- repr / str ---


@pytest.mark.parametrize("make,text", [
    (lambda: fnp.array([1.0, 2.0]), "Array([1., 2.], dtype=float32)"),
    (lambda: fnp.array([1, 2, 3]), "Array([1, 2, 3], dtype=int32)"),
    (lambda: fnp.array([True, False]), "Array([ True, False], dtype=bool)"),
    (lambda: fnp.array(True), "Array(True, dtype=bool)"),
    (lambda: fnp.asarray(np.float32(2.5)), "Array(2.5, dtype=float32)"),
    (lambda: fnp.asarray(np.int8(-3)), "Array(-3, dtype=int8)"),
    (lambda: fnp.array(1), "Array(1, dtype=int32, weak_type=True)"),
    (lambda: fnp.asarray(2.0), "Array(2., dtype=float32, weak_type=True)"),
    (lambda: lax.add(1.0, 2.0), "Array(3., dtype=float32, weak_type=True)"),
    (lambda: fnp.zeros((0,)), "Array([], dtype=float32)"),
    (lambda: fnp.zeros((2, 0)), "Array([], shape=(2, 0), dtype=float32)"),
    (lambda: fnp.ones((2, 2), dtype=np.int8), "Array([[1, 1],\n       [1, 1]], dtype=int8)"),
], ids=["f32", "i32", "bool", "bool_scalar", "f32_scalar", "i8_scalar", "weak_int",
        "weak_float", "lax_weak", "empty", "empty_2d", "matrix"])
def test_repr(make, text):
    assert repr(make()) == text


def test_str_and_format():
    assert str(fnp.array([1.0, 2.0])) == str(np.array([1.0, 2.0], np.float32))
    assert f"{fnp.asarray(np.float32(1.5)):.2f}" == "1.50"
    assert str(fnp.asarray(np.int32(7))) == "7"


def test_bfloat16_array():
    assert dtypes.bfloat16 is not None and np.dtype(dtypes.bfloat16) == ml_dtypes.bfloat16
    x = fnp.array([1.0, 2.5], dtype=dtypes.bfloat16)
    assert x.dtype == np.dtype(dtypes.bfloat16)
    assert repr(x) == "Array([1, 2.5], dtype=bfloat16)"
    y = x * 2
    assert y.dtype == x.dtype
    np.testing.assert_array_equal(np.asarray(y).astype(np.float32), [2.0, 5.0])
    assert (x + fnp.ones(2)).dtype == np.float32  # bf16 with f32 promotes to f32


# --- immutability and numpy interop ---


def test_item_assignment_is_refused_with_at_hint():
    x = fnp.zeros(3)
    with pytest.raises(TypeError, match=r"\.at\[") as e:
        x[0] = 1
    assert "immutable" in str(e.value)
    assert np.asarray(x).tolist() == [0.0, 0.0, 0.0]


def test_np_asarray_is_read_only_view():
    x = fnp.array([1.0, 2.0])
    a = np.asarray(x)
    assert a.dtype == np.float32 and a.tolist() == [1.0, 2.0]
    assert not a.flags.writeable
    with pytest.raises(ValueError):
        a[0] = 5.0
    assert np.asarray(x)[0] == 1.0


def test_np_array_copy_is_independent():
    x = fnp.array([1.0, 2.0])
    b = np.array(x)
    assert b.flags.writeable
    b[0] = 9.0
    assert np.asarray(x).tolist() == [1.0, 2.0]
    c = np.asarray(x, dtype=np.float64)
    assert c.dtype == np.float64 and c.tolist() == [1.0, 2.0]


def test_array_priority_numpy_on_the_left():
    x = fnp.array([1.0, 2.0])
    for out in (np.float32(2) * x, np.ones(2, np.float32) + x, np.ones(2) * x,
                np.int32(1) - x):
        assert isinstance(out, Array), type(out)
        assert out.dtype == np.float32
    assert np.asarray(np.float32(2) * x).tolist() == [2.0, 4.0]
    assert np.asarray(np.ones(2, np.float32) - x).tolist() == [0.0, -1.0]


# --- operators ---


def test_operators_with_python_scalars_on_both_sides():
    x = fnp.array([1.0, 2.0, 4.0])
    xn = np.array([1.0, 2.0, 4.0], np.float32)
    cases = [
        (x + 1, xn + 1), (1 + x, 1 + xn), (x - 1, xn - 1), (1 - x, 1 - xn),
        (x * 2, xn * 2), (2 * x, 2 * xn), (x / 2, xn / 2), (2 / x, 2 / xn),
        (x // 3, xn // 3), (7 // x, 7 // xn), (x % 3, xn % 3), (7 % x, 7 % xn),
        (x ** 2, xn ** 2), (2 ** x, 2 ** xn), (-x, -xn), (abs(-x), xn), (+x, xn),
    ]
    for got, want in cases:
        assert isinstance(got, Array)
        assert got.dtype == np.float32  # weak Python scalars keep the array's dtype
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_int_operators_keep_dtype():
    i = fnp.array([1, 2, 3], dtype=np.int8)
    assert (i + 1).dtype == np.int8 and (2 * i).dtype == np.int8
    assert (i << 1).dtype == np.int8
    assert np.asarray(i & 2).tolist() == [0, 2, 2]
    assert np.asarray(~i).tolist() == [-2, -3, -4]
    assert np.asarray(1 | i).tolist() == [1, 3, 3]


def test_comparisons_return_bool_arrays():
    x = fnp.array([1.0, 2.0, 3.0])
    for got, want in [(x < 2, [True, False, False]), (2 <= x, [False, True, True]),
                      (x == 2, [False, True, False]), (x != 2, [True, False, True]),
                      (x > 1.5, [False, True, True]), (x >= 3, [False, False, True])]:
        assert isinstance(got, Array) and got.dtype == np.bool_
        assert np.asarray(got).tolist() == want


def test_unknown_operand_returns_not_implemented():
    x = fnp.array([1.0])
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(TypeError):
        object() * x


# --- attributes and methods ---


def test_attributes():
    x = fnp.zeros((2, 3), dtype=np.int32)
    assert x.shape == (2, 3) and x.dtype == np.int32
    assert x.ndim == 2 and x.size == 6 and x.nbytes == 24
    assert x.T.shape == (3, 2)
    assert not x.weak_type
    y = fnp.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(y.T), np.arange(6.0).reshape(2, 3).T)


def test_methods_match_numpy():
    xn = np.arange(6.0, dtype=np.float32).reshape(2, 3) - 2
    x = fnp.asarray(xn)
    np.testing.assert_allclose(np.asarray(x.sum()), xn.sum())
    np.testing.assert_allclose(np.asarray(x.sum(axis=0)), xn.sum(axis=0))
    np.testing.assert_allclose(np.asarray(x.mean(axis=1)), xn.mean(axis=1))
    np.testing.assert_allclose(np.asarray(x.max()), xn.max())
    np.testing.assert_allclose(np.asarray(x.max(axis=1)), xn.max(axis=1))
    np.testing.assert_array_equal(np.asarray(x.reshape(3, 2)), xn.reshape(3, 2))
    np.testing.assert_array_equal(np.asarray(x.reshape((6,))), xn.reshape(6))
    np.testing.assert_array_equal(np.asarray(x.reshape(-1, 2)), xn.reshape(-1, 2))
    np.testing.assert_array_equal(np.asarray(x.transpose()), xn.transpose())
    np.testing.assert_array_equal(np.asarray(x.transpose(1, 0)), xn.transpose(1, 0))
    c = x.astype(np.int32)
    assert c.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(c), xn.astype(np.int32))


def test_iteration_len_and_scalars():
    x = fnp.array([[1, 2], [3, 4], [5, 6]])
    assert len(x) == 3
    rows = list(x)
    assert len(rows) == 3 and all(isinstance(r, Array) for r in rows)
    assert [np.asarray(r).tolist() for r in rows] == [[1, 2], [3, 4], [5, 6]]
    assert rows[0].dtype == np.int32
    s = fnp.asarray(np.float32(2.5))
    with pytest.raises(TypeError):
        len(s)
    with pytest.raises(TypeError):
        iter(s)
    assert float(s) == 2.5 and int(s) == 2 and complex(s) == 2.5
    assert s.item() == 2.5 and x.tolist() == [[1, 2], [3, 4], [5, 6]]
    assert [10, 20, 30][fnp.asarray(np.int32(1))] == 20
    with pytest.raises(TypeError):
        [10, 20][s]


def test_bool_of_arrays():
    assert bool(fnp.array([1.0])) is True
    assert bool(fnp.array([[0]])) is False
    assert bool(fnp.asarray(np.float32(3)))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(fnp.array([1.0, 2.0]))


def test_hash_raises():
    with pytest.raises(TypeError, match="unhashable"):
        hash(fnp.array([1.0]))
    with pytest.raises(TypeError):
        {fnp.array(1.0): 1}


@pytest.mark.parametrize("x", [
    fnp.array([1.0, 2.0]), fnp.array([[1, 2]], dtype=np.int8), fnp.array(True),
    lax.add(1.0, 2.0), fnp.zeros((2, 0)),
], ids=["f32", "i8", "bool", "weak", "empty"])
def test_pickle_round_trip(x):
    y = pickle.loads(pickle.dumps(x))
    assert isinstance(y, Array)
    assert y.dtype == x.dtype and y.shape == x.shape and y.weak_type == x.weak_type
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x))
    assert repr(y) == repr(x)


def test_block_until_ready_returns_self():
    x = fnp.ones(2)
    assert x.block_until_ready() is x


def test_signbit_sees_the_sign_of_nan_and_zero():
    x = np.array([-1.0, -0.0, 0.0, 2.0, np.nan, -np.nan, np.inf, -np.inf], np.float32)
    for dt in (np.float32, np.float16):
        np.testing.assert_array_equal(fnp.signbit(x.astype(dt)), np.signbit(x.astype(dt)))
    np.testing.assert_array_equal(functrax.jit(fnp.signbit)(x), np.signbit(x))
    np.testing.assert_array_equal(functrax.vmap(fnp.signbit)(x), np.signbit(x))


def test_unpacked_elements_are_arrays_numpy_accepts():
    a, b = fnp.arange(2.0)
    assert np.asarray(a).shape == () and float(np.asarray(b)) == 1.0
    assert repr(a) == "Array(0., dtype=float32)"
    rows = list(fnp.ones((2, 3)))
    assert [np.asarray(r).shape for r in rows] == [(3,), (3,)]
    odd = functrax.core.Array._make(np.float32(2.5), functrax.core.get_aval(np.float32(2.5)))
    assert np.asarray(odd).shape == () and float(np.asarray(odd)) == 2.5


def test_tracers_are_instances_of_array_as_in_jax():
    seen = []

    def f(x):
        seen.append(isinstance(x, Array))
        return x * 2
    functrax.jit(f)(1.0)
    functrax.grad(f)(1.0)
    functrax.vmap(f)(fnp.ones(2))
    assert seen == [True, True, True]
    assert isinstance(fnp.ones(2), Array) and not isinstance(np.ones(2), Array)
    # a traced exponent is not taken for a concrete one
    assert float(functrax.jit(lambda x, n: fnp.power(x, n))(2.0, fnp.array(3))) == 8.0
