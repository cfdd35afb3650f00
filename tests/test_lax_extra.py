"""The rest of jax.lax: enums, printed forms, errors, and the functions that the op-spec
table cannot drive (random bits, collectives over named axes, platform branches)."""
import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax


def test_precision_enum_and_its_canonical_pair_in_jaxprs():
    assert lax.Precision("highest") is lax.Precision.HIGHEST
    assert lax.Precision("tensorfloat32") is lax.Precision.HIGH
    assert lax.Precision("fastest") is lax.Precision.DEFAULT and str(lax.Precision.HIGH) == "HIGH"
    f = lambda a, b: lax.dot(a, b, precision="highest")  # noqa: E731
    text = str(functrax.make_jaxpr(f)(fnp.ones((2, 2)), fnp.ones((2, 2))))
    assert "precision=(<Precision.HIGHEST: 2>, <Precision.HIGHEST: 2>)" in text
    with pytest.raises(ValueError, match="Precision argument must be one of"):
        lax.dot(fnp.ones(2), fnp.ones(2), precision="fast-ish")
    x = fnp.ones((1, 1, 4))
    conv = lax.conv_general_dilated(x, fnp.ones((1, 1, 2)), (1,), "VALID",
                                    precision=lax.Precision.HIGH)
    assert conv.shape == (1, 1, 3)


def test_rounding_method_and_random_algorithm_enums():
    assert lax.RoundingMethod.TO_NEAREST_EVEN == 1
    assert float(lax.round(2.5, lax.RoundingMethod.TO_NEAREST_EVEN)) == 2.0
    assert float(lax.round(2.5, lax.RoundingMethod.AWAY_FROM_ZERO)) == 3.0
    assert str(lax.RandomAlgorithm.RNG_THREE_FRY) == "RNG_THREE_FRY"


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint32"])
def test_rng_bit_generator_is_deterministic_and_advances_its_key(dtype):
    key = fnp.zeros(4, "uint32")
    k1, b1 = lax.rng_bit_generator(key, (3, 5), dtype)
    k1b, b1b = functrax.jit(lambda k: lax.rng_bit_generator(k, (3, 5), dtype))(key)
    np.testing.assert_array_equal(np.asarray(b1), np.asarray(b1b))
    np.testing.assert_array_equal(np.asarray(k1), np.asarray(k1b))
    assert b1.shape == (3, 5) and b1.dtype == np.dtype(dtype) and k1.shape == (4,)
    _, b2 = lax.rng_bit_generator(k1, (3, 5), dtype)
    assert not np.array_equal(np.asarray(b1), np.asarray(b2))
    assert not np.array_equal(np.asarray(k1), np.asarray(key))
    # roughly uniform bits
    _, many = lax.rng_bit_generator(key, (4000,), "uint8")
    assert abs(float(np.asarray(many).mean()) - 127.5) < 5


def test_rng_bit_generator_errors():
    with pytest.raises(ValueError, match="uint32\\[4\\]"):
        lax.rng_bit_generator(fnp.zeros(2, "uint32"), (3,))
    with pytest.raises(TypeError, match="unsigned"):
        lax.rng_bit_generator(fnp.zeros(4, "uint32"), (3,), np.int32)


def test_axis_size_and_pswapaxes_under_vmap():
    out = functrax.vmap(lambda v: v * lax.axis_size("i"), axis_name="i")(fnp.ones(4))
    np.testing.assert_array_equal(np.asarray(out), [4.0] * 4)
    x = fnp.arange(9.0).reshape(3, 3)
    y = functrax.vmap(lambda v: lax.pswapaxes(v, "i", 0), axis_name="i")(x)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x).T)


def test_optimization_barrier_is_kept_through_optimization_and_differentiation():
    f = lambda x: lax.optimization_barrier(fnp.sin(x)) * 2.0  # noqa: E731
    assert "optimization_barrier" in functrax.jit(f).lower(1.0).as_text()
    assert float(functrax.grad(f)(1.0)) == pytest.approx(2 * np.cos(1.0))
    assert lax.optimization_barrier(((1.0,), fnp.ones(2)))[1].shape == (2,)


def test_platform_dependent_picks_the_default_devices_branch():
    want = 10.0 if functrax.default_backend() == "cpu" else 1.0
    assert float(lax.platform_dependent(1.0, cpu=lambda x: x * 10, default=lambda x: x)) == want
    with pytest.raises(NotImplementedError, match="no branch for platform"):
        lax.platform_dependent(1.0, tpu=lambda x: x)


def test_associative_scan_errors_and_pytrees():
    with pytest.raises(ValueError, match="same first dimension"):
        lax.associative_scan(lambda a, b: a, (fnp.ones(3), fnp.ones(4)))
    s, m = lax.associative_scan(lambda a, b: (a[0] + b[0], fnp.maximum(a[1], b[1])),
                                (fnp.ones(5), fnp.array([1.0, 3, 2, 5, 4])))
    np.testing.assert_array_equal(np.asarray(s), [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(np.asarray(m), [1, 3, 3, 5, 5])


def test_shape_helpers():
    assert lax.broadcast_shapes((2, 1), (3,)) == (2, 3)
    with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
        lax.broadcast_shapes((3,), (4,))
    assert lax.broadcast_to_rank(fnp.ones(3), 3).shape == (1, 1, 3)
    assert lax.broadcast_like(fnp.ones((1, 3)), fnp.zeros((4, 2, 3))).shape == (4, 2, 3)
    assert [a.shape for a in lax.unstack(fnp.zeros((2, 3)), axis=1)] == [(2,)] * 3
    assert lax.stack([fnp.ones(2), fnp.zeros(2)], axis=1).shape == (2, 2)
    with pytest.raises(ValueError, match="Sum of sizes"):
        lax.split(fnp.arange(5), (2, 2))
    np.testing.assert_array_equal(np.asarray(lax.empty((2,), np.float32)), [0.0, 0.0])
    upd = lax.dynamic_update_index_in_dim(fnp.zeros((3, 2)), fnp.ones(2), 1, 0)
    np.testing.assert_array_equal(np.asarray(upd), [[0, 0], [1, 1], [0, 0]])
    src = np.arange(24).reshape(2, 3, 4)
    got = lax.index_take(fnp.asarray(src), (fnp.array([0, 1]), fnp.array([2, 0])), (0, 1))
    np.testing.assert_array_equal(np.asarray(got), src[[0, 1], [2, 0]])
    k, v = lax.sort_key_val(fnp.array([3, 1, 2]), fnp.array([10, 20, 30]))
    assert k.tolist() == [1, 2, 3] and v.tolist() == [20, 30, 10]
    assert lax.shape_as_value((2, 3)).tolist() == [2, 3]
    assert lax.dtype(fnp.ones(2)) == np.float32 and float(lax.stage(3.0)) == 3.0


def test_scatter_sub_and_scatter_apply():
    dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    idx = fnp.array([[1], [3]])
    out = lax.scatter_sub(fnp.ones(5), idx, fnp.array([2.0, 5.0]), dn)
    np.testing.assert_array_equal(np.asarray(out), [1, -1, 1, -4, 1])
    out = lax.scatter_apply(fnp.arange(5.0), idx, lambda v: v * 10, dn)
    np.testing.assert_array_equal(np.asarray(out), [0, 10, 2, 30, 4])


def test_top_k_errors_and_printing():
    with pytest.raises(ValueError, match="k argument to top_k"):
        lax.top_k(fnp.ones(3), 4)
    with pytest.raises(TypeError, match=">= 1 dimension"):
        lax.top_k(fnp.ones(()), 1)
    assert str(functrax.make_jaxpr(lambda x: lax.top_k(x, 2))(fnp.ones(3))) == (
        "{ lambda ; a:f32[3]. let b:f32[2] c:i32[2] = top_k[k=2] a in (b, c) }")


def test_new_elementwise_primitives_print_and_reject_bad_input():
    assert "reduce_precision[exponent_bits=5 mantissa_bits=10]" in str(
        functrax.make_jaxpr(lambda x: lax.reduce_precision(x, 5, 10))(1.0))
    with pytest.raises(TypeError, match="clz does not accept dtype float32"):
        lax.clz(fnp.ones(2))
    with pytest.raises(TypeError, match="complex requires float32 or float64"):
        lax.complex(fnp.ones(2, "int32"), fnp.ones(2, "int32"))
    with pytest.raises(TypeError, match="mulhi requires two integer operands"):
        lax.mulhi(fnp.ones(2), fnp.ones(2))
    z = lax.complex(fnp.ones(2), fnp.arange(2.0))
    assert z.dtype == np.complex64 and z.tolist() == [1 + 0j, 1 + 1j]


def test_float_to_int64_saturates_as_xla():
    with functrax.enable_x64(True):
        x = fnp.array([1e30, -1e30, np.inf, -np.inf, np.nan, 3.5, -3.5], fnp.float64)
        i64, u64 = np.iinfo(np.int64), np.iinfo(np.uint64)
        want_i = np.array([i64.max, i64.min, i64.max, i64.min, 0, 3, -3], np.int64)
        want_u = np.array([u64.max, 0, u64.max, 0, 0, 3, 0], np.uint64)
        for f in (lambda v, d: lax.convert_element_type(v, d),
                  functrax.jit(lambda v, d: lax.convert_element_type(v, d), static_argnums=1)):
            np.testing.assert_array_equal(np.asarray(f(x, np.int64)), want_i)
            np.testing.assert_array_equal(np.asarray(f(x, np.uint64)), want_u)
