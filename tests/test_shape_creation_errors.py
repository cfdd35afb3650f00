"""Error messages, dtypes / weak types and traced-argument paths of shape_ops and creation."""
import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax.errors import ConcretizationTypeError
from functrax.numpy import creation, shape_ops

F32, I32 = np.dtype(np.float32), np.dtype(np.int32)


def _jaxpr_eval(f, *args):
    closed = functrax.make_jaxpr(f)(*args)
    functrax.check_jaxpr(closed)
    return closed, functrax.eval_jaxpr(closed.jaxpr, closed.consts, *args)


# --- exports ---


@pytest.mark.parametrize("mod", [shape_ops, creation])
def test_every_public_name_is_exported(mod):
    public = {n for n, v in vars(mod).items() if callable(v) and not n.startswith("_")
              and getattr(v, "__module__", None) == mod.__name__}
    assert public <= set(mod.__all__)
    for name in mod.__all__:
        assert getattr(fnp, name) is getattr(mod, name), name
        assert getattr(mod, name).__doc__, f"{name} has no docstring"


# --- dtypes and weak types ---


@pytest.mark.parametrize("make, dtype, weak", [
    (lambda: fnp.zeros(3), F32, False),
    (lambda: fnp.ones((2, 2), int), I32, False),
    (lambda: fnp.empty(2), F32, False),
    (lambda: fnp.arange(3), I32, False),
    (lambda: fnp.arange(3.0), F32, False),
    (lambda: fnp.arange(0, 1, 0.25), F32, False),
    (lambda: fnp.arange(np.int8(4)), np.dtype(np.int8), False),
    (lambda: fnp.full(3, 2), I32, True),
    (lambda: fnp.full(3, 2.0), F32, True),
    (lambda: fnp.full(3, True), np.dtype(bool), False),
    (lambda: fnp.full(3, 2, dtype=float), F32, False),
    (lambda: fnp.full(3, np.float32(2)), F32, False),
    (lambda: fnp.array(1.0), F32, True),
    (lambda: fnp.array(1), I32, True),
    (lambda: fnp.array(True), np.dtype(bool), False),
    (lambda: fnp.array([1.0]), F32, False),
    (lambda: fnp.array([1, 2]), I32, False),
    (lambda: fnp.array([True, 1]), I32, False),
    (lambda: fnp.array([np.int8(1), 2]), np.dtype(np.int8), False),
    (lambda: fnp.array(np.arange(3.0)), F32, False),
    (lambda: fnp.array([]), F32, False),
    (lambda: fnp.asarray(np.uint64(3)), np.dtype(np.uint32), False),
    (lambda: fnp.zeros_like(fnp.array(1.0)), F32, True),
    (lambda: fnp.ones_like(fnp.array(1.0), dtype=int), I32, False),
    (lambda: fnp.full_like(fnp.arange(2), 1.7), I32, False),
    (lambda: fnp.zeros_like(2.0), F32, True),
    (lambda: fnp.linspace(0, 1, 3), F32, False),
    (lambda: fnp.eye(2), F32, False),
    (lambda: fnp.tri(2), F32, False),
    (lambda: fnp.identity(2, dtype=bool), np.dtype(bool), False),
    (lambda: fnp.tril(fnp.full((2, 2), 3)), I32, True),
])
def test_dtype_and_weak_type(make, dtype, weak):
    out = make()
    assert out.dtype == dtype
    assert out.weak_type is weak


def test_array_values():
    np.testing.assert_array_equal(fnp.array([[1, fnp.array(2)], [3.5, 4]]),
                                  np.array([[1, 2], [3.5, 4]], np.float32))
    np.testing.assert_array_equal(fnp.array([1.7, -2.7], dtype=np.int32), [1, -2])
    np.testing.assert_array_equal(fnp.array([fnp.arange(2), [5, 6]]), [[0, 1], [5, 6]])
    assert fnp.array(3.0, ndmin=2).shape == (1, 1)
    assert fnp.full(2, fnp.array(3, dtype=np.int8)).dtype == np.int8


# --- error messages ---


@pytest.mark.parametrize("fn, exc, match", [
    (lambda: fnp.split(fnp.arange(5), 2), ValueError,
     "array split does not result in an equal division"),
    (lambda: fnp.split(fnp.arange(4), 0), ValueError, "number sections must be larger than 0"),
    (lambda: fnp.split(fnp.arange(4), 2.5), TypeError, "indices_or_sections"),
    (lambda: fnp.split(fnp.array(1.0), 1), ValueError, "0-d"),
    (lambda: fnp.split(fnp.arange(4), 2, axis=1), ValueError, "out of bounds"),
    (lambda: fnp.vsplit(fnp.arange(4), 2), ValueError, "vsplit only works on arrays of 2"),
    (lambda: fnp.tile(fnp.arange(3), -1), ValueError, "reps must be non-negative"),
    (lambda: fnp.tile(fnp.arange(3), 1.5), TypeError, "reps"),
    (lambda: fnp.repeat(fnp.arange(3), -1), ValueError, "negative"),
    (lambda: fnp.repeat(fnp.arange(3), [1, 2]), ValueError, "do not match axis 0 of size 3"),
    (lambda: fnp.repeat(fnp.arange(3), 1.5), TypeError, "repeats must be integers"),
    (lambda: fnp.repeat(fnp.array(1.0), 2, axis=0), ValueError, "0-d"),
    (lambda: fnp.repeat(fnp.arange(3), 2, total_repeat_length=-1), ValueError,
     "total_repeat_length"),
    (lambda: fnp.array([[1, 2], [3]]), ValueError, "ragged"),
    (lambda: fnp.array("abc"), TypeError, "cannot convert"),
    (lambda: fnp.array(["a", "b"]), TypeError, "cannot convert"),
    (lambda: fnp.array([1, None]), TypeError, "cannot convert"),
    (lambda: fnp.array({"a": 1}), TypeError, "cannot convert"),
    (lambda: fnp.array(np.array(["x"])), TypeError, "number and bool dtypes"),
    (lambda: fnp.array(2 ** 40), OverflowError, ""),
    (lambda: fnp.array([fnp.arange(2), fnp.arange(3)]), ValueError, "ragged"),
    (lambda: fnp.zeros((2, -1)), ValueError, "negative dimensions"),
    (lambda: fnp.zeros((2, 1.5)), TypeError, "shape must be"),
    (lambda: fnp.full(3, [1, 2, 3]), TypeError, "asarray"),
    (lambda: fnp.full((2, 2), fnp.arange(3)), ValueError, "broadcast"),
    (lambda: fnp.zeros_like([1, 2]), TypeError, "zeros_like"),
    (lambda: fnp.arange(0, 3, 0), ZeroDivisionError, "step"),
    (lambda: fnp.arange(fnp.arange(3)), ValueError, "must be a scalar"),
    (lambda: fnp.linspace(0, 1, -1), ValueError, "must be non-negative"),
    (lambda: fnp.linspace(0, 1, 3, axis=2), ValueError, "out of bounds"),
    (lambda: fnp.eye(-1), ValueError, "negative dimensions"),
    (lambda: fnp.tril(fnp.arange(3)), ValueError, "at least 2-D"),
    (lambda: fnp.pad(fnp.arange(3), -1), ValueError, "negative values"),
    (lambda: fnp.pad(fnp.arange(3), ((1, 2), (3, 4))), ValueError, "unsupported shape"),
    (lambda: fnp.pad(fnp.arange(3), 1.5), TypeError, "integral"),
    (lambda: fnp.pad(fnp.arange(3), 1, mode="bogus"), ValueError, "bogus"),
    (lambda: fnp.pad(fnp.arange(3), -1, mode="mean"), ValueError, "pad: pad_width.*negative"),
    (lambda: fnp.pad(fnp.arange(3), 1, mode="maximum", stat_length=0), ValueError,
     "pad: stat_length of 0 yields no value"),
    (lambda: fnp.pad(fnp.zeros((2, 3)), 1, mode="mean", stat_length=((1, 1), (0, 2))),
     ValueError, "pad: stat_length of 0"),
    (lambda: fnp.pad(fnp.zeros((0, 2)), 1, mode="mean"), ValueError, "pad: .*empty axis"),
    (lambda: fnp.pad(fnp.zeros((2, 0)), 1, mode="linear_ramp"), ValueError, "empty axis"),
    (lambda: fnp.pad(fnp.arange(3), 1, mode="median", stat_length=-2), ValueError,
     "pad: stat_length can't contain negative"),
    (lambda: fnp.pad(fnp.arange(3), 1, mode="minimum", stat_length=1.5), TypeError,
     "pad: `stat_length` must hold integers"),
    (lambda: fnp.pad(fnp.zeros((2, 2)), 1, mode="mean", stat_length=(1, 2, 3)), ValueError,
     "pad: stat_length with nd=2 has unsupported shape"),
    (lambda: fnp.pad(fnp.zeros(2), 1, mode="linear_ramp", end_values=((1, 2), (3, 4))),
     ValueError, "pad: end_values with nd=1 has unsupported shape"),
    (lambda: fnp.pad(fnp.zeros(2), 1, mode="linear_ramp", end_values="a"), TypeError,
     "end_values"),
    (lambda: fnp.pad(fnp.zeros(2), 1, mode="mean", end_values=1), ValueError,
     "unsupported keyword arguments for mode 'mean'"),
    (lambda: fnp.pad(fnp.zeros(2), 1, mode="ramp"), ValueError,
     "pad: unimplemented padding mode 'ramp'"),
    (lambda: fnp.pad(fnp.arange(3), 1, mode="edge", constant_values=1), ValueError,
     "unsupported keyword arguments"),
    (lambda: fnp.pad(fnp.zeros((0, 2)), 1, mode="wrap"), ValueError, "empty axis"),
    (lambda: fnp.pad(fnp.zeros(2), 1, constant_values=fnp.zeros(3)), ValueError,
     "constant_values"),
    (lambda: fnp.pad(fnp.zeros(2), 1, mode="reflect", reflect_type="bad"), ValueError,
     "reflect_type"),
    (lambda: fnp.rot90(fnp.zeros((2, 2)), axes=(0, 0)), ValueError, "axes must be different"),
    (lambda: fnp.rot90(fnp.zeros((2, 2)), axes=(0,)), ValueError, "len\\(axes\\) must be 2"),
    (lambda: fnp.rot90(fnp.zeros(2)), ValueError, "at least 2 dimensions"),
    (lambda: fnp.fliplr(fnp.zeros(2)), ValueError, ">= 2-d"),
    (lambda: fnp.flipud(fnp.array(1.0)), ValueError, ">= 1-d"),
    (lambda: fnp.roll(fnp.zeros((2, 2)), (1, 2, 3), axis=(0, 1)), ValueError, "same length"),
    (lambda: fnp.concatenate([fnp.zeros((2, 3)), fnp.zeros((2, 2))]), ValueError,
     "must match exactly"),
    (lambda: fnp.concatenate([fnp.zeros(()), fnp.zeros(())]), ValueError, "zero-dimensional"),
    (lambda: fnp.concatenate([fnp.zeros(2), fnp.zeros((1, 2))]), ValueError,
     "same number of dimensions"),
    (lambda: fnp.concatenate([]), ValueError, "need at least one array"),
    (lambda: fnp.hstack([]), ValueError, "need at least one array"),
    (lambda: fnp.stack([fnp.zeros(2), fnp.zeros(3)]), ValueError, "same shape"),
    (lambda: fnp.meshgrid(fnp.zeros((2, 2))), ValueError, "must be 1-D"),
    (lambda: fnp.meshgrid(fnp.zeros(2), indexing="yx"), ValueError, "indexing"),
    (lambda: fnp.reshape(fnp.zeros(6), (4, 2)), TypeError, "cannot reshape"),
    (lambda: fnp.reshape(fnp.zeros(6), (-1, -1)), ValueError, "one unknown dimension"),
    (lambda: fnp.squeeze(fnp.zeros((2, 1)), 0), ValueError, "size not equal to one"),
    (lambda: fnp.transpose(fnp.zeros((2, 1)), (0, 0)), ValueError, "permutation"),
    (lambda: fnp.broadcast_to(fnp.zeros(3), (2, 2)), ValueError, "incompatible shapes"),
    (lambda: fnp.expand_dims(fnp.zeros(3), 3), ValueError, "out of bounds"),
])
def test_error_messages(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn()


@pytest.mark.parametrize("fn, exc", [
    (lambda x: fnp.zeros(x), TypeError),  # TracerIntegerConversionError
    (lambda x: fnp.arange(x), ConcretizationTypeError),
    (lambda x: fnp.linspace(0, 1, x), ConcretizationTypeError),
    (lambda x: fnp.tile(fnp.zeros(2), x), ConcretizationTypeError),
    (lambda x: fnp.repeat(fnp.zeros(2), x), ConcretizationTypeError),
    (lambda x: fnp.split(fnp.zeros(4), x), ConcretizationTypeError),
    (lambda x: fnp.pad(fnp.zeros(2), x), ConcretizationTypeError),
    (lambda x: fnp.pad(fnp.zeros(2), 1, mode="mean", stat_length=x),
     ConcretizationTypeError),
    (lambda x: fnp.pad(fnp.zeros(2), 1, mode="linear_ramp", end_values=x),
     ConcretizationTypeError),
])
def test_traced_static_arguments_raise(fn, exc):
    with pytest.raises(exc):
        functrax.make_jaxpr(fn)(2)


# --- traced data paths ---


@pytest.mark.parametrize("shift", [-7, -1, 0, 2, 11])
def test_roll_traced_shift_multi_axis(shift):
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    s = np.array([shift, shift + 1], np.int32)
    _, (out,) = _jaxpr_eval(lambda a, t: fnp.roll(a, t, axis=(0, 1)), fnp.asarray(x),
                            fnp.asarray(s))
    np.testing.assert_array_equal(out, np.roll(x, (shift, shift + 1), axis=(0, 1)))
    _, (out,) = _jaxpr_eval(lambda a, t: fnp.roll(a, t), fnp.asarray(x), np.int32(shift))
    np.testing.assert_array_equal(out, np.roll(x, shift))


@pytest.mark.parametrize("reps, total", [([1, 0, 2], 3), ([1, 0, 2], 5), ([2, 2, 2], 4),
                                         ([0, 3, 1], 6), (2, 4)])
def test_repeat_traced_repeats_with_total_length(reps, total):
    a = np.array([[1.5, 2.5], [3.5, 4.5], [5.5, 6.5]], np.float32)
    r = np.asarray(reps, np.int32)
    closed, (out,) = _jaxpr_eval(
        lambda x, k: fnp.repeat(x, k, axis=0, total_repeat_length=total), fnp.asarray(a),
        fnp.asarray(r))
    # JAX semantics: sum(repeats) > total drops the rest; a shortfall repeats the final value
    full = np.repeat(a, np.broadcast_to(r, (3,)), axis=0)
    want = full[np.minimum(np.arange(total), len(full) - 1)]
    np.testing.assert_array_equal(out, want)
    eager = fnp.repeat(fnp.asarray(a), r, axis=0, total_repeat_length=total)
    np.testing.assert_array_equal(eager, want)


def test_repeat_traced_total_drops_trailing_zero_repeats_like_jax():
    # repeats [1, 0, 2] with total 3: JAX gives a[0], a[2], a[2]
    a = fnp.array([0.1, 0.2, 0.3])
    _, (out,) = _jaxpr_eval(lambda k: fnp.repeat(a, k, total_repeat_length=3),
                            fnp.array([1, 0, 2]))
    np.testing.assert_allclose(out, [0.1, 0.3, 0.3])


def test_pad_traced_constant_values():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    _, (out,) = _jaxpr_eval(lambda a, c: fnp.pad(a, ((1, 0), (0, 2)), constant_values=c),
                            fnp.asarray(x), np.float32(-4.0))
    np.testing.assert_array_equal(out, np.pad(x, ((1, 0), (0, 2)), constant_values=-4.0))
    cv = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    _, (out,) = _jaxpr_eval(lambda a, c: fnp.pad(a, 1, constant_values=c), fnp.asarray(x),
                            fnp.asarray(cv))
    np.testing.assert_array_equal(out, np.pad(x, 1, constant_values=cv))


def test_array_and_full_of_tracers():
    closed, (out,) = _jaxpr_eval(lambda x, y: fnp.array([[x, 1.0], [2, y]]), np.float32(3),
                                 np.float32(4))
    np.testing.assert_array_equal(out, [[3, 1], [2, 4]])
    with pytest.raises(ValueError, match="ragged"):
        functrax.make_jaxpr(lambda x: fnp.array([[x, x], [x]]))(1.0)
    _, (out,) = _jaxpr_eval(lambda v: fnp.full((2, 2), v), np.int32(5))
    np.testing.assert_array_equal(out, np.full((2, 2), 5))
    _, (out,) = _jaxpr_eval(lambda k: fnp.eye(3, k=k), np.int32(-1))
    np.testing.assert_array_equal(out, np.eye(3, k=-1))
    _, (out,) = _jaxpr_eval(lambda k: fnp.triu(fnp.ones((3, 3)), k=k), np.int32(1))
    np.testing.assert_array_equal(out, np.triu(np.ones((3, 3)), k=1))


def test_shape_queries_on_tracers_and_sequences():
    def f(x):
        assert fnp.ndim(x) == 2 and fnp.shape(x) == (2, 3) and fnp.size(x) == 6
        assert fnp.size(x, 1) == 3 and fnp.size(x, (0, 1)) == 6
        return x
    functrax.make_jaxpr(f)(fnp.zeros((2, 3)))
    assert fnp.shape([[1, 2, 3]]) == (1, 3) and fnp.ndim(1.0) == 0 and fnp.size([1, 2]) == 2


def test_split_returns_views_covering_the_axis_and_stacks_accept_arrays():
    parts = fnp.array_split(fnp.arange(10), 4)
    assert [p.shape for p in parts] == [(3,), (3,), (2,), (2,)]
    np.testing.assert_array_equal(fnp.concatenate(parts), np.arange(10))
    x = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(fnp.stack(fnp.asarray(x), axis=1), np.stack(x, axis=1))
    np.testing.assert_array_equal(fnp.vstack(fnp.asarray(x)), np.vstack(x))
    np.testing.assert_array_equal(fnp.hstack(fnp.asarray(x)), np.hstack(x))
