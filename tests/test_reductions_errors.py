"""Reductions and sorting: error messages, result dtypes / weak types, and edge cases that the
op-spec table does not reach (empty inputs, all-NaN slices, tracing-only behaviour)."""
import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax
from functrax.numpy import reductions as R
from functrax.numpy import sorting as S

X = fnp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
EMPTY = fnp.zeros((0, 3))


def _arr(values, dtype):
    return fnp.asarray(np.asarray(values, dtype))


# --- exports ---


@pytest.mark.parametrize("mod", [R, S])
def test_all_names_are_exported_and_public(mod):
    assert mod.__all__, mod.__name__
    for name in mod.__all__:
        assert getattr(fnp, name) is getattr(mod, name), name
        assert getattr(mod, name).__doc__, f"{name} has no docstring"
    assert not {"np", "lax", "core", "builtins"} & set(mod.__all__)


def test_expected_functions_exist():
    for name in ("argsort", "lexsort", "searchsorted", "unique", "quantile", "percentile",
                 "median", "nanmedian", "average", "count_nonzero", "diff", "ediff1d",
                 "bincount", "ptp", "nancumsum", "nancumprod", "partition", "argpartition",
                 "nanargmax", "cumulative_sum"):
        assert callable(getattr(fnp, name)), name


# --- axis errors ---


BAD_AXIS_CALLS = [
    ("sum", lambda: fnp.sum(X, axis=3)), ("mean", lambda: fnp.mean(X, axis=3)),
    ("var", lambda: fnp.var(X, axis=3)), ("max", lambda: fnp.max(X, axis=3)),
    ("all", lambda: fnp.all(X, axis=(0, 3))), ("argmax", lambda: fnp.argmax(X, axis=3)),
    ("cumsum", lambda: fnp.cumsum(X, axis=3)), ("sort", lambda: fnp.sort(X, axis=3)),
    ("argsort", lambda: fnp.argsort(X, axis=3)), ("median", lambda: fnp.median(X, axis=3)),
    ("quantile", lambda: fnp.quantile(X, 0.5, axis=3)), ("diff", lambda: fnp.diff(X, axis=3)),
    ("unique", lambda: fnp.unique(X, axis=3)), ("count_nonzero",
                                                lambda: fnp.count_nonzero(X, axis=3)),
    ("nanmax", lambda: fnp.nanmax(X, axis=-3)), ("std", lambda: fnp.std(X, axis=3)),
    ("nanstd", lambda: fnp.nanstd(X, axis=3)), ("ptp", lambda: fnp.ptp(X, axis=3)),
    ("average", lambda: fnp.average(X, axis=3)),
    ("nanargmin", lambda: fnp.nanargmin(X, axis=3)),
]


@pytest.mark.parametrize("name,call", BAD_AXIS_CALLS, ids=[n for n, _ in BAD_AXIS_CALLS])
def test_bad_axis_message(name, call):
    ax = "-3" if name == "nanmax" else "3"
    with pytest.raises(ValueError, match=f"{name}: axis {ax} is out of bounds for array of "
                                         "dimension 2"):
        call()


def test_axis_of_scalar_is_out_of_bounds():
    with pytest.raises(ValueError, match="axis 0 is out of bounds for array of dimension 0"):
        fnp.sum(fnp.asarray(np.float32(1)), axis=0)
    with pytest.raises(ValueError, match="axis -1 is out of bounds for array of dimension 0"):
        fnp.sort(fnp.asarray(np.float32(1)))


def test_duplicate_and_non_integer_axis():
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        fnp.sum(X, axis=(0, -2))
    with pytest.raises(TypeError, match="axis must be an integer"):
        fnp.mean(X, axis=1.5)


# --- empty reductions ---


@pytest.mark.parametrize("fn", [fnp.max, fnp.min, fnp.amax, fnp.ptp])
def test_empty_reduction_without_identity(fn):
    with pytest.raises(ValueError, match="zero-size array to reduction operation (max|min) "
                                         "which has no identity"):
        fn(EMPTY, axis=0)


def test_empty_reductions_with_identity_or_initial():
    np.testing.assert_array_equal(fnp.max(EMPTY, axis=0, initial=-1.0), [-1, -1, -1])
    np.testing.assert_array_equal(fnp.min(EMPTY, axis=0, initial=7), [7, 7, 7])
    np.testing.assert_array_equal(fnp.sum(EMPTY, axis=0), np.zeros(3))
    np.testing.assert_array_equal(fnp.prod(EMPTY, axis=0), np.ones(3))
    np.testing.assert_array_equal(fnp.all(EMPTY), True)
    np.testing.assert_array_equal(fnp.any(EMPTY), False)
    np.testing.assert_array_equal(fnp.max(EMPTY, axis=1), np.zeros(0))  # nothing reduced empty
    assert np.isnan(np.asarray(fnp.mean(EMPTY)))
    assert np.isnan(np.asarray(fnp.median(fnp.zeros((0,)))))


@pytest.mark.parametrize("fn", [fnp.argmax, fnp.argmin])
def test_argmax_of_empty(fn):
    with pytest.raises(ValueError, match=f"attempt to get {fn.__name__} of an empty sequence"):
        fn(fnp.zeros((0,)))
    with pytest.raises(ValueError, match="empty sequence"):
        fn(EMPTY, axis=0)
    np.testing.assert_array_equal(fn(EMPTY, axis=1), np.zeros(0))


# --- where / initial / out / dtype errors ---


def test_where_needs_initial_for_max():
    with pytest.raises(ValueError, match="reduction operation max does not have an identity, "
                                         "so to use a where mask one has to specify 'initial'"):
        fnp.max(X, where=X > 2)
    np.testing.assert_array_equal(fnp.max(X, where=np.asarray(X) > 2, initial=0, axis=1),
                                  np.max(np.asarray(X), where=np.asarray(X) > 2, initial=0,
                                         axis=1))


def test_bad_where_and_initial():
    with pytest.raises(ValueError, match=r"sum: where= mask of shape \(3, 2\) cannot be "
                                         r"broadcast to the input's shape \(2, 3\)"):
        fnp.sum(X, where=np.ones((3, 2), bool))
    with pytest.raises(ValueError, match="initial value must be a scalar"):
        fnp.sum(X, initial=np.ones(2))


@pytest.mark.parametrize("fn", [fnp.sum, fnp.mean, fnp.max, fnp.argmax, fnp.cumsum, fnp.var])
def test_out_is_not_supported(fn):
    with pytest.raises(NotImplementedError, match="'out' argument"):
        fn(X, out=X)


def test_bad_dtype_and_ddof_correction():
    with pytest.raises(TypeError, match="sum: dtype="):
        fnp.sum(X, dtype="not-a-dtype")
    with pytest.raises(ValueError, match="ddof and correction can't be provided"):
        fnp.var(X, ddof=1, correction=1)


def test_ptp_of_bool_is_an_error():
    with pytest.raises(TypeError, match="ptp: boolean"):
        fnp.ptp(fnp.asarray(np.array([True, False])))


# --- result dtypes (JAX rules) and weak types ---


DTYPE_CASES = [
    (lambda x: fnp.sum(x), np.bool_, np.int32), (lambda x: fnp.sum(x), np.int8, np.int32),
    (lambda x: fnp.sum(x), np.uint8, np.uint32), (lambda x: fnp.sum(x), np.float16,
                                                  np.float16),
    (lambda x: fnp.sum(x, promote_integers=False), np.int8, np.int8),
    (lambda x: fnp.sum(x, dtype=np.float64), np.int32, np.float32),
    (lambda x: fnp.prod(x), np.int16, np.int32), (lambda x: fnp.prod(x), np.bool_, np.int32),
    (lambda x: fnp.max(x), np.int8, np.int8), (lambda x: fnp.max(x), np.bool_, np.bool_),
    (lambda x: fnp.all(x), np.float32, np.bool_),
    (lambda x: fnp.mean(x), np.int32, np.float32), (lambda x: fnp.mean(x), np.bool_,
                                                    np.float32),
    (lambda x: fnp.mean(x), np.float16, np.float16),
    (lambda x: fnp.mean(x, dtype=np.int32), np.int32, np.int32),
    (lambda x: fnp.var(x), np.int8, np.float32), (lambda x: fnp.std(x), np.int32, np.float32),
    (lambda x: fnp.var(x), np.complex64, np.float32),
    (lambda x: fnp.argmax(x), np.float32, np.int32),
    (lambda x: fnp.cumsum(x), np.int8, np.int8),      # JAX: only booleans promote
    (lambda x: fnp.cumsum(x), np.bool_, np.int32),
    (lambda x: fnp.cumsum(x, dtype=np.bool_), np.int32, np.bool_),
    (lambda x: fnp.cumulative_sum(x), np.int8, np.int32),
    (lambda x: fnp.count_nonzero(x), np.float32, np.int32),
    (lambda x: fnp.quantile(x, 0.5), np.int32, np.float32),
    (lambda x: fnp.median(x), np.bool_, np.float32),
    (lambda x: fnp.sort(x), np.uint8, np.uint8), (lambda x: fnp.argsort(x), np.int8, np.int32),
    (lambda x: fnp.searchsorted(x, 1), np.int8, np.int32),
    (lambda x: fnp.average(x), np.int32, np.float32),
    (lambda x: fnp.diff(x), np.bool_, np.bool_), (lambda x: fnp.ptp(x), np.uint8, np.uint8),
]


@pytest.mark.parametrize("fn,in_dt,out_dt", DTYPE_CASES)
def test_result_dtype(fn, in_dt, out_dt):
    x = fnp.asarray(np.array([1, 0, 1, 1], in_dt))
    out = fn(x)
    assert out.dtype == np.dtype(out_dt)
    assert not out.weak_type


@pytest.mark.parametrize("fn", [fnp.sum, fnp.prod, fnp.max, fnp.mean, fnp.var, fnp.std,
                                fnp.argmax, fnp.cumsum, fnp.median, fnp.nansum, fnp.ptp])
def test_reductions_of_weak_inputs_are_strong(fn):
    weak = lax.broadcast(lax.add(1.0, 2.0), (3,))
    assert weak.weak_type
    assert not fn(weak).weak_type
    assert not fn(2.0).weak_type


def test_float16_sum_accumulates_in_float32():
    # a float16 running sum would get stuck at 2048
    out = fnp.sum(fnp.asarray(np.ones(5000, np.float16)))
    assert out.dtype == np.float16 and float(out) == 5000.0


def test_methods_follow_numpy_positional_order():
    a = np.asarray(X)
    np.testing.assert_array_equal(X.max(0, None, True), a.max(0, None, True))
    np.testing.assert_array_equal(X.sum(1, np.int32), a.sum(1, np.int32))
    np.testing.assert_array_equal(X.argmax(1), a.argmax(1))


# --- NaN semantics ---


def test_argmax_returns_first_nan():
    x = np.array([[1.0, np.nan, 5.0, np.nan], [2.0, 0.0, np.nan, 9.0]], np.float32)
    for fn, ref in ((fnp.argmax, np.argmax), (fnp.argmin, np.argmin)):
        np.testing.assert_array_equal(fn(fnp.asarray(x), axis=1), ref(x, axis=1))
        np.testing.assert_array_equal(fn(fnp.asarray(x)), ref(x))


def test_all_nan_slices():
    x = fnp.asarray(np.array([[np.nan, np.nan], [1.0, np.nan]], np.float32))
    np.testing.assert_array_equal(fnp.nanargmax(x, axis=1), [-1, 0])   # JAX: -1, numpy raises
    np.testing.assert_array_equal(fnp.nanmax(x, axis=1), [np.nan, 1.0])
    np.testing.assert_array_equal(fnp.nanmin(x, axis=1, initial=0.5), [0.5, 0.5])
    np.testing.assert_array_equal(fnp.nansum(x, axis=1), [0.0, 1.0])
    np.testing.assert_array_equal(fnp.nanmean(x, axis=1), [np.nan, 1.0])
    np.testing.assert_array_equal(fnp.nanmedian(x, axis=1), [np.nan, 1.0])
    np.testing.assert_array_equal(fnp.nanvar(x, axis=1), [np.nan, 0.0])


def test_sort_puts_nans_last_and_descending_first():
    x = np.array([3.0, np.nan, -1.0, np.inf, -np.inf], np.float32)
    np.testing.assert_array_equal(fnp.sort(fnp.asarray(x)), np.sort(x))
    np.testing.assert_array_equal(fnp.sort(fnp.asarray(x), descending=True), np.sort(x)[::-1])
    np.testing.assert_array_equal(fnp.argsort(fnp.asarray(x)), np.argsort(x, kind="stable"))


def test_sort_complex_is_lexicographic():
    x = np.array([1 + 2j, 1 + 1j, 0 + 5j, 1 - 1j], np.complex64)
    np.testing.assert_array_equal(fnp.sort(fnp.asarray(x)), np.sort(x))
    np.testing.assert_array_equal(fnp.argsort(fnp.asarray(x)), np.argsort(x, kind="stable"))


# --- sorting / searching errors ---


def test_sort_and_partition_errors():
    with pytest.raises(ValueError, match="'order' argument"):
        fnp.sort(X, order="x")
    with pytest.raises(ValueError, match="partition: kth 3 is out of bounds for axis -1 of "
                                         "size 3"):
        fnp.partition(X, 3)
    with pytest.raises(TypeError, match="need sequence of keys with len > 0"):
        fnp.lexsort(())
    with pytest.raises(ValueError, match="all keys need to be the same shape"):
        fnp.lexsort((fnp.zeros(3), fnp.zeros(4)))


def test_lexsort_of_2d_array_and_scalars():
    keys = np.array([[1, 0, 1, 0], [0, 0, 1, 1]], np.int32)
    np.testing.assert_array_equal(fnp.lexsort(fnp.asarray(keys)), np.lexsort(keys))
    assert int(fnp.lexsort((fnp.asarray(np.int32(3)),))) == 0


def test_searchsorted_errors():
    a = fnp.asarray(np.array([1.0, 2.0, 3.0], np.float32))
    with pytest.raises(ValueError, match="'middle' is an invalid value for keyword 'side'"):
        fnp.searchsorted(a, 2.0, side="middle")
    with pytest.raises(ValueError, match="'bogus' is an invalid value for keyword 'method'"):
        fnp.searchsorted(a, 2.0, method="bogus")
    with pytest.raises(ValueError, match=r"a should be 1-dimensional, got shape \(2, 3\)"):
        fnp.searchsorted(X, 2.0)
    out = fnp.searchsorted(fnp.zeros((0,)), fnp.ones((2, 2)))
    assert out.shape == (2, 2) and out.dtype == np.int32


@pytest.mark.parametrize("method", ["scan", "scan_unrolled", "sort", "compare_all"])
def test_searchsorted_methods_and_traced_sorted_array(method):
    a = np.array([0.0, 1.0, 1.0, 4.0, np.nan], np.float32)
    v = np.array([[1.0, np.nan], [-2.0, 9.0]], np.float32)
    for side in ("left", "right"):
        fn = lambda a_, v_: fnp.searchsorted(a_, v_, side=side, method=method)  # noqa: E731
        closed = functrax.make_jaxpr(fn)(fnp.asarray(a), fnp.asarray(v))
        out, = functrax.eval_jaxpr(closed.jaxpr, closed.consts, fnp.asarray(a), fnp.asarray(v))
        np.testing.assert_array_equal(out, np.searchsorted(a, v, side=side))


# --- unique ---


@pytest.mark.parametrize("flags", [{}, {"return_index": True}, {"return_inverse": True},
                                   {"return_counts": True},
                                   {"return_index": True, "return_inverse": True,
                                    "return_counts": True}])
def test_unique_eager_matches_numpy(flags):
    x = np.array([[3, 1, 3], [2, 1, 7]], np.int32)
    got = fnp.unique(fnp.asarray(x), **flags)
    want = np.unique(x, **flags)
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        assert g.shape == w.shape


def test_unique_rows_and_empty():
    x = np.array([[1, 2], [0, 5], [1, 2], [0, 4]], np.int32)
    for g, w in zip(fnp.unique(fnp.asarray(x), axis=0, return_counts=True),
                    np.unique(x, axis=0, return_counts=True)):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(fnp.unique(fnp.asarray(x.T), axis=1), np.unique(x.T, axis=1))
    assert fnp.unique(fnp.zeros((0,))).shape == (0,)
    np.testing.assert_array_equal(fnp.unique(fnp.zeros((0,)), size=2, fill_value=5), [5, 5])


def test_unique_needs_size_under_tracing():
    x = fnp.asarray(np.array([1, 1, 2], np.int32))
    with pytest.raises(functrax.ConcretizationTypeError, match="pass a static size= argument"):
        functrax.make_jaxpr(fnp.unique)(x)
    closed = functrax.make_jaxpr(lambda a: fnp.unique(a, size=4, fill_value=0))(x)
    functrax.check_jaxpr(closed)
    with pytest.raises(ValueError, match="size must be non-negative"):
        fnp.unique(x, size=-1)


# --- order statistics ---


def test_quantile_errors():
    with pytest.raises(ValueError, match="method can only be 'linear', 'lower', 'higher', "
                                         "'midpoint', or 'nearest'"):
        fnp.quantile(X, 0.5, method="cubic")
    with pytest.raises(ValueError, match=r"Quantiles must be in the range \[0, 1\]"):
        fnp.quantile(X, 1.5)
    with pytest.raises(ValueError, match=r"Percentiles must be in the range \[0, 100\]"):
        fnp.percentile(X, fnp.asarray(np.array([10.0, 101.0], np.float32)))
    with pytest.raises(ValueError, match=r"q must have rank <= 1, got shape \(1, 2\)"):
        fnp.quantile(X, np.ones((1, 2), np.float32) / 2)
    with pytest.raises(ValueError, match="does not support complex input"):
        fnp.median(fnp.asarray(np.ones(3, np.complex64)))
    with pytest.raises(ValueError, match="does not support overwrite_input=True or out"):
        fnp.median(X, overwrite_input=True)


def test_quantile_with_traced_q():
    x = np.random.RandomState(0).rand(3, 5).astype(np.float32)
    q = np.array([0.1, 0.6], np.float32)
    closed = functrax.make_jaxpr(lambda a, q_: fnp.quantile(a, q_, axis=1))(
        fnp.asarray(x), fnp.asarray(q))
    functrax.check_jaxpr(closed)
    out, = functrax.eval_jaxpr(closed.jaxpr, closed.consts, fnp.asarray(x), fnp.asarray(q))
    np.testing.assert_allclose(out, np.quantile(x, q, axis=1), rtol=1e-5)


# --- differences and counting ---


def test_diff_errors():
    with pytest.raises(ValueError, match="order must be non-negative but got -1"):
        fnp.diff(X, n=-1)
    with pytest.raises(ValueError, match="diff requires input that is at least one "
                                         "dimensional"):
        fnp.diff(fnp.asarray(np.float32(1)))
    assert fnp.diff(X, n=0) is X


def test_diff_keeps_weak_scalar_prepend_out_of_promotion():
    x = fnp.asarray(np.array([1, 5, 9], np.uint8))
    out = fnp.diff(x, prepend=0)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, [1, 4, 4])


def test_bincount():
    x = fnp.asarray(np.array([0, 1, 1, 5], np.int32))
    np.testing.assert_array_equal(fnp.bincount(x), np.bincount(np.asarray(x)))
    np.testing.assert_array_equal(fnp.bincount(x, minlength=8),
                                  np.bincount(np.asarray(x), minlength=8))
    # as JAX: negatives land in bin 0, values >= length are dropped
    np.testing.assert_array_equal(fnp.bincount(fnp.asarray(np.array([-2, 0, 3], np.int32)),
                                               length=3), [2, 0, 0])
    assert fnp.bincount(fnp.asarray(np.array([True, True]))).tolist() == [0, 2]
    with pytest.raises(TypeError, match="bincount: x argument must have an integer type; got "
                                        "float32"):
        fnp.bincount(X)
    with pytest.raises(ValueError, match=r"only 1-dimensional input supported, got shape"):
        fnp.bincount(fnp.zeros((2, 2), np.int32))
    with pytest.raises(ValueError, match="shape of weights"):
        fnp.bincount(x, fnp.ones(3))
    with pytest.raises(functrax.ConcretizationTypeError, match="pass a static `length`"):
        functrax.make_jaxpr(fnp.bincount)(x)


def test_average_errors_and_returned():
    with pytest.raises(ValueError, match="1D weights expected"):
        fnp.average(X, weights=fnp.ones((3, 2)))
    with pytest.raises(ValueError, match="axis must be specified"):
        fnp.average(X, weights=fnp.ones(3))
    with pytest.raises(ValueError, match="length of weights"):
        fnp.average(X, axis=0, weights=fnp.ones(3))
    avg, wsum = fnp.average(X, axis=1, returned=True)
    want_avg, want_wsum = np.average(np.asarray(X), axis=1, returned=True)
    np.testing.assert_allclose(avg, want_avg)
    np.testing.assert_array_equal(wsum, want_wsum)


def test_cumulative_api_errors():
    with pytest.raises(ValueError, match="the input must be non-scalar"):
        fnp.cumulative_sum(fnp.asarray(np.float32(1)))
    with pytest.raises(ValueError, match="axis was not set to an explicit value"):
        fnp.cumulative_sum(X)
