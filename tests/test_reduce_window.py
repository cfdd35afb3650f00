"""Windowed reductions, max pooling's derivatives and the general ``lax.reduce``.

- random window configurations (hypothesis: rank, shapes, window, strides, string or
  explicit padding -- negative too --, base and window dilation, dtypes, monoid or general
  computation) against the loop references of ``tests/opspec/windows.py``, eagerly, under
  ``jit`` and ``vmap``, and on the Triton backend (interpreter);
- ties and NaN in max pooling: the first maximum of a window is selected, forward and
  reverse, as JAX's ``ge`` selection;
- derivatives: transposes against the explicit Jacobian (``jacfwd``), second order
  (``check_grads(order=2)``) of average and max pooling, JVPs of the general computations;
  JAX's errors where JAX has none (general reverse mode, window-dilated max pooling VJP,
  batched init values);
- errors with JAX's texts; printed jaxprs; the cost model; Triton kernels without fallback
  (compiled for sm_90), the general computation as a listed fallback.
"""
from __future__ import annotations

from tests import triton_harness as th  # first: sets TRITON_INTERPRET=1 for triton

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import functrax
import functrax.numpy as fnp
from functrax import grad, jacfwd, jit, jvp, lax, vjp, vmap
from functrax.lowering.cost import cost_analysis
from functrax.lowering.triton import compile as tcompile
from functrax.test_util import check_grads, enable_x64
from tests.opspec.windows import (
    _identity, ref_gather, ref_monoid, ref_reduce_window, ref_scatter,
)

KINDS = {"sum": (lax.add, 0), "max": (lax.max, None), "min": (lax.min, None)}


def pool(kind, x, **kw):
    op, init = KINDS[kind]
    init = _identity(kind, x.dtype) if init is None else init
    return lax.reduce_window(x, init, op, **kw)


def kw(window_dimensions, window_strides=None, padding="VALID", base_dilation=None,
       window_dilation=None):
    return dict(window_dimensions=tuple(window_dimensions), window_strides=window_strides,
                padding=padding, base_dilation=base_dilation, window_dilation=window_dilation)


def rand(shape, dtype=np.float32, seed=0, lo=-3, hi=3):
    rng = np.random.RandomState(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.rand(*shape) < 0.5
    if dtype.kind in "iu":
        return rng.randint(lo, hi + 1, size=shape).astype(dtype)
    return rng.uniform(lo, hi, size=shape).astype(dtype)


# --- random window configurations ---


@st.composite
def configs(draw, max_rank=3, dilate=True, allow_empty=True):
    n = draw(st.integers(1, max_rank), label="rank")
    shape = tuple(draw(st.integers(0 if allow_empty else 1, 5)) for _ in range(n))
    window = tuple(draw(st.integers(1, 3)) for _ in range(n))
    strides = tuple(draw(st.integers(1, 3)) for _ in range(n))
    if draw(st.booleans(), label="string padding"):
        padding = draw(st.sampled_from(["VALID", "SAME", "SAME_LOWER"]))
    else:
        padding = tuple((draw(st.integers(-1, 2)), draw(st.integers(-1, 2))) for _ in range(n))
    bd = tuple(draw(st.integers(1, 2)) for _ in range(n)) if dilate else None
    wd = tuple(draw(st.integers(1, 2)) for _ in range(n)) if dilate else None
    return shape, kw(window, strides, padding, bd, wd)


def _check(got, want, dtype):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape,
                                                                 got.dtype, want.dtype)
    if np.dtype(dtype).kind in "biu":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)


@settings(max_examples=80, deadline=None)
@given(cfg=configs(), kind=st.sampled_from(["sum", "max", "min"]),
       dtype=st.sampled_from([np.float32, np.int32, np.bool_]), seed=st.integers(0, 99))
def test_monoids_match_loop_reference(cfg, kind, dtype, seed):
    shape, k = cfg
    if kind == "sum" and dtype == np.bool_:
        dtype = np.int32
    x = rand(shape, dtype, seed)
    want = ref_monoid(kind)(x, **k)
    _check(pool(kind, fnp.asarray(x), **k), want, dtype)
    _check(jit(lambda a: pool(kind, a, **k))(x), want, dtype)


def _prod(a, b):
    return lax.mul(a, b)


@settings(max_examples=40, deadline=None)
@given(cfg=configs(), dtype=st.sampled_from([np.float32, np.int32]), seed=st.integers(0, 99))
def test_general_computation_matches_loop_reference(cfg, dtype, seed):
    shape, k = cfg
    x = rand(shape, dtype, seed, -2, 2)
    one = np.ones((), dtype)
    (want,) = ref_reduce_window([x], [one[()]], lambda a, b: (np.multiply(a[0], b[0]),), **k)
    got = lax.reduce_window(fnp.asarray(x), one, _prod, **k)
    _check(got, want, dtype)


@settings(max_examples=30, deadline=None)
@given(cfg=configs(max_rank=2), kind=st.sampled_from(["sum", "max", "min"]),
       bdim=st.integers(0, 2), seed=st.integers(0, 99))
def test_vmap_matches_a_loop(cfg, kind, bdim, seed):
    shape, k = cfg
    bdim = min(bdim, len(shape))
    xs = rand((3,) + shape, np.float32, seed)
    moved = np.moveaxis(xs, 0, bdim)
    got = vmap(lambda a: pool(kind, a, **k), in_axes=bdim)(moved)
    want = np.stack([np.asarray(pool(kind, fnp.asarray(x), **k)) for x in xs])
    _check(got, want, np.float32)


# --- ties and NaN: the first extreme of a window is selected ---


def test_max_pool_ties_select_the_first_maximum():
    x = np.array([[1.0, 3.0, 3.0, 0.0], [3.0, 2.0, 3.0, 3.0]], np.float32)
    k = kw((2, 2), (1, 2))
    ct = np.array([[10.0, 20.0]], np.float32)
    g = vjp(lambda a: pool("max", a, **k), fnp.asarray(x))[1](fnp.asarray(ct))[0]
    want = np.zeros_like(x)
    want[0, 1] = 10.0  # window 0: 3 at (0,1) is the first of three
    want[0, 2] = 20.0  # window 1: 3 at (0,2) before (1,2), (1,3)
    np.testing.assert_array_equal(np.asarray(g), want)
    t = np.arange(8, dtype=np.float32).reshape(2, 4)
    jt = jvp(lambda a: pool("max", a, **k), (fnp.asarray(x),), (fnp.asarray(t),))[1]
    np.testing.assert_array_equal(np.asarray(jt), [[t[0, 1], t[0, 2]]])
    np.testing.assert_array_equal(np.asarray(g), ref_scatter(x, ct, "ge", **k))


@pytest.mark.parametrize("select, kind", [("ge", "max"), ("le", "min")])
@settings(max_examples=25, deadline=None)
@given(cfg=configs(max_rank=2), seed=st.integers(0, 99))
def test_selection_with_ties_matches_reference(select, kind, cfg, seed):
    shape, k = cfg
    x = rand(shape, np.float32, seed, 0, 2).round()  # many ties
    t = rand(shape, np.float32, seed + 1)
    got = jvp(lambda a: pool(kind, a, **k), (fnp.asarray(x),), (fnp.asarray(t),))[1]
    _check(got, ref_gather(x, t, select, **k), np.float32)
    if all(d == 1 for d in k["window_dilation"]):  # (else: JAX's NotImplementedError)
        out = np.asarray(pool(kind, fnp.asarray(x), **k))
        ct = rand(out.shape, np.float32, seed + 2)
        g = vjp(lambda a: pool(kind, a, **k), fnp.asarray(x))[1](fnp.asarray(ct))[0]
        _check(g, ref_scatter(x, ct, select, **k), np.float32)


def test_nan_is_selected_and_propagated():
    x = np.array([1.0, np.nan, 5.0, 2.0, np.nan, np.nan], np.float32)
    k = kw((3,), (3,))
    np.testing.assert_array_equal(np.isnan(np.asarray(pool("max", fnp.asarray(x), **k))),
                                  [True, True])
    t = np.arange(6, dtype=np.float32)
    jt = jvp(lambda a: pool("max", a, **k), (fnp.asarray(x),), (fnp.asarray(t),))[1]
    np.testing.assert_array_equal(np.asarray(jt), [1.0, 4.0])  # the first NaN


# --- derivatives ---


def _jacobian(f, x):
    """The explicit Jacobian of ``f`` at ``x``, shape out + in (forward mode)."""
    return np.asarray(jacfwd(f)(fnp.asarray(x)))


@settings(max_examples=40, deadline=None)
@given(cfg=configs(max_rank=2, allow_empty=False), seed=st.integers(0, 99))
def test_sum_pool_transpose_is_the_jacobian_transposed(cfg, seed):
    shape, k = cfg
    x = rand(shape, np.float32, seed)
    f = lambda a: pool("sum", a, **k)  # noqa: E731
    out = np.asarray(f(fnp.asarray(x)))
    if not out.size:
        return
    ct = rand(out.shape, np.float32, seed + 1)
    got = vjp(f, fnp.asarray(x))[1](fnp.asarray(ct))[0]
    jac = _jacobian(f, x).reshape(out.size, x.size)
    np.testing.assert_allclose(np.asarray(got).ravel(), jac.T @ ct.ravel(), rtol=1e-5,
                               atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(cfg=configs(max_rank=2, allow_empty=False), kind=st.sampled_from(["max", "min"]),
       seed=st.integers(0, 99))
def test_max_pool_vjp_is_the_jacobian_transposed(cfg, kind, seed):
    shape, k = cfg
    k = {**k, "window_dilation": None}  # the VJP with window dilation is JAX's error
    x = rand(shape, np.float32, seed)
    f = lambda a: pool(kind, a, **k)  # noqa: E731
    out = np.asarray(f(fnp.asarray(x)))
    if not out.size:
        return
    ct = rand(out.shape, np.float32, seed + 1)
    got = vjp(f, fnp.asarray(x))[1](fnp.asarray(ct))[0]
    jac = _jacobian(f, x).reshape(out.size, x.size)
    np.testing.assert_allclose(np.asarray(got).ravel(), jac.T @ ct.ravel(), rtol=1e-5,
                               atol=1e-5)


SECOND_ORDER = [kw((2, 2), (1, 1), "SAME"), kw((3, 2), (2, 1), ((1, 0), (0, 1)), (2, 1)),
                kw((2, 3), (1, 2), "VALID", (1, 2), (2, 1)), kw((1, 3), (1, 3), "SAME_LOWER")]


@pytest.mark.parametrize("k", SECOND_ORDER, ids=range(len(SECOND_ORDER)))
@pytest.mark.parametrize("kind", ["sum", "max"])
def test_second_order_in_both_modes(kind, k):
    if kind == "max" and k["window_dilation"] is not None:
        k = {**k, "window_dilation": None}
    with enable_x64():
        x = rand((4, 6), np.float64, 3)
        f = lambda a: fnp.sin(pool(kind, a, **k))  # noqa: E731
        check_grads(f, (x,), order=2, modes=("fwd", "rev"))
        h = jacfwd(grad(lambda a: (f(a) ** 2).sum()))(fnp.asarray(x))
        assert np.asarray(h).shape == (4, 6, 4, 6)


def test_average_pool_gradient_spreads_evenly():
    x = fnp.ones((4, 4))
    g = grad(lambda a: (pool("sum", a, **kw((2, 2), (2, 2))) / 4.0).sum())(x)
    np.testing.assert_allclose(np.asarray(g), np.full((4, 4), 0.25))


def test_max_pool_vjp_with_window_dilation_raises_jax_error():
    k = kw((2, 2), (1, 1), "VALID", None, (2, 1))
    with pytest.raises(NotImplementedError, match="VJP not implemented for select_and_gather "
                       r"\(MaxPool\) with window dilation, got window_dilation=\(2, 1\)"):
        grad(lambda a: pool("max", a, **k).sum())(fnp.ones((4, 4)))


def _logsumexp_pool(x):
    return lax.reduce_window(x, np.array(-np.inf, x.dtype), fnp.logaddexp, (3,), (1,), "SAME")


def test_general_computation_forward_mode_and_reverse_mode_error():
    with enable_x64():
        x = rand((7,), np.float64, 1)
        check_grads(_logsumexp_pool, (x,), order=2, modes=("fwd",))
        check_grads(lambda a: lax.reduce_window(a, np.ones((), a.dtype), lax.mul, (2,), (1,),
                                                "SAME"), (x,), order=1, modes=("fwd",))
    with pytest.raises(NotImplementedError, match="Transpose rule \\(for reverse-mode "
                       "differentiation\\) for 'reduce_window' not implemented"):
        grad(lambda a: _logsumexp_pool(a).sum())(fnp.ones(5))


def test_general_computation_nonzero_init_tangent_is_jax_error():
    x = fnp.ones(4)
    with pytest.raises(TypeError, match="reduce_window jvp does not support non-zero "
                       "init_value_tangent"):
        jvp(lambda i: lax.reduce_window(x, i, lax.mul, (2,), (1,)), (1.0,), (1.0,))


def test_variadic_argmax_pooling_forward_mode():
    x = rand((3, 6), np.float32, 4)
    idx = lax.broadcasted_iota(np.int32, (3, 6), 1)

    def f(a):
        def comp(u, v):
            pick = u[0] >= v[0]
            return lax.select(pick, u[0], v[0]), lax.select(pick, u[1], v[1])
        return lax.reduce_window((a, idx), (np.float32(-np.inf), np.int32(0)), comp,
                                 (1, 3), (1, 3))
    (vals, where), (tv, tw) = jvp(f, (fnp.asarray(x),), (fnp.ones((3, 6)) * 2,))
    np.testing.assert_array_equal(np.asarray(where), x.reshape(3, 2, 3).argmax(-1)
                                  + np.array([0, 3]))
    np.testing.assert_array_equal(np.asarray(tv), np.full((3, 2), 2.0))
    assert tw.dtype == functrax.dtypes.float0


def test_batched_init_values_raise_jax_error():
    x = fnp.ones((4,))
    with pytest.raises(NotImplementedError, match="reduce_window batching is not implemented "
                       "for initial values"):
        vmap(lambda i: lax.reduce_window(x, i, lax.mul, (2,), (1,)))(fnp.ones(3))
    with pytest.raises(NotImplementedError, match="reduce batching is not implemented"):
        vmap(lambda i: lax.reduce(x, i, lambda a, b: a * b, (0,)))(fnp.ones(3))


# --- lax.reduce ---


@pytest.mark.parametrize("op, init, prim", [
    (lax.add, 0.0, "reduce_sum"), (lax.mul, 1.0, "reduce_prod"),
    (lax.max, -np.inf, "reduce_max"), (lax.min, np.inf, "reduce_min"),
    (lax.add, 1.0, "reduce"), (lambda a, b: a + b, 0.0, "reduce")])
def test_reduce_monoids_bind_the_reduction_primitives(op, init, prim):
    closed = functrax.make_jaxpr(lambda a: lax.reduce(a, init, op, (0,)))(fnp.ones((3, 2)))
    assert [e.primitive.name for e in closed.eqns] == [prim]


@pytest.mark.parametrize("op, init, prim", [
    (lax.bitwise_or, 0, "reduce_or"), (lax.bitwise_and, -1, "reduce_and"),
    (lax.bitwise_xor, 0, "reduce_xor"), (lax.bitwise_and, 0, "reduce")])
def test_reduce_bitwise_monoids_on_integers(op, init, prim):
    x = np.array([[5, 3], [6, 1]], np.int32)
    closed = functrax.make_jaxpr(lambda a: lax.reduce(a, init, op, (0,)))(x)
    assert [e.primitive.name for e in closed.eqns] == [prim]
    got = lax.reduce(fnp.asarray(x), np.int32(init), op, (0,))
    want = {lax.bitwise_or: np.bitwise_or, lax.bitwise_and: np.bitwise_and,
            lax.bitwise_xor: np.bitwise_xor}[op].reduce(np.concatenate(
                [np.full((1, 2), init, np.int32), x]), axis=0)
    np.testing.assert_array_equal(np.asarray(got), want)


def test_reduce_weak_type_follows_operands_and_init():
    strong, weak = fnp.ones(3, np.float32), lax.full((3,), 1.0)
    assert weak.weak_type and not strong.weak_type
    assert not lax.reduce(strong, 0.0, lax.add, (0,)).weak_type
    assert lax.reduce(weak, 0.0, lax.add, (0,)).weak_type
    assert not lax.reduce(weak, np.float32(0), lax.add, (0,)).weak_type


def test_general_reduce_gradients_to_second_order():
    with enable_x64():
        x = rand((3, 4), np.float64, 5, 0.5, 2.0)

        def f(a):
            return lax.reduce((a, fnp.sin(a)), (1.0, 0.0),
                              lambda u, v: (u[0] * v[0], u[1] + v[1]), (1,))
        check_grads(f, (x,), order=2, modes=("fwd", "rev"))


def test_reduce_with_a_non_elementwise_computation_runs_per_element():
    x = rand((3, 5), np.float32, 6)

    def comp(a, b):
        return lax.cond(a > b, lambda: a, lambda: b)
    got = lax.reduce(fnp.asarray(x), np.float32(-np.inf), comp, (1,))
    np.testing.assert_array_equal(np.asarray(got), x.max(1))
    got = lax.reduce_window(fnp.asarray(x), np.float32(-np.inf), comp, (2, 2), (1, 1))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(pool("max", fnp.asarray(x),
                                                                   **kw((2, 2)))))


# --- errors, printing, shapes, cost ---

X = fnp.ones((4, 5))


@pytest.mark.parametrize("call, err, msg", [
    (lambda: lax.reduce_window(X, 0.0, lax.add, (2, 2), (1,)), TypeError,
     r"reduce_window got inconsistent window_strides and window_dimensions: got "
     r"window_strides \(1,\) and window_dimensions \(2, 2\)\."),
    (lambda: lax.reduce_window(X, 0.0, lax.add, (2, 0), (1, 1)), TypeError,
     r"reduce_window window_dimensions must have every element be strictly positive, got "
     r"\(2, 0\)\."),
    (lambda: lax.reduce_window(X, 0.0, lax.add, (2, 2), (1, 1), "VALID", (0, 1)), TypeError,
     r"All dilations must be positive, got \(0, 1\)\."),
    (lambda: lax.reduce_window(X, 0.0, lax.add, (2, 2), (1, 1), "FULL"), RuntimeError,
     "Unrecognized padding type: expected 'VALID' or 'SAME', got FULL."),
    (lambda: lax.reduce_window(X, (0.0, 0.0), lax.add, (2, 2)), ValueError,
     "Operands must have the same tree structure as init_values"),
    (lambda: lax.reduce_window(X, 1, lax.mul, (2, 2)), TypeError,
     "reduce_window got inconsistent dtypes for operands and init_values"),
    (lambda: lax.reduce_window(X, fnp.ones(2), lax.mul, (2, 2)), TypeError,
     r"reduce_window expected init_values to be scalars but init_values have shapes "
     r"\[\(2,\)\]\."),
    (lambda: lax.reduce_window(fnp.ones(3, bool), False, lax.add, (2,)), TypeError,
     "operand to reduce_window_sum must have a number dtype, got bool"),
    (lambda: lax.reduce_window(X, 0.0, lambda a, b: (a, b), (2, 2)), ValueError,
     "reduce_window output must have the same tree structure as the operands"),
    (lambda: lax.reduce_window(X, 0.0, lax.add, (2,)), TypeError,
     "reduce_window got inconsistent padding and window_dimensions"),
    (lambda: lax.reduce_window(X, 0.0, lax.add, (2, 2), None, ((1, 1), (0,))), TypeError,
     r"padding must be 'VALID', 'SAME', 'SAME_LOWER' or a sequence of \(low, high\)"),
    (lambda: lax.reduce_window([], [], lax.add, ()), ValueError,
     "reduce_window must have at least one operand."),
    (lambda: lax.reduce(X, fnp.ones(2), lax.mul, (0,)), ValueError,
     r"reduce found non-scalar initial value: \[\(2,\)\]"),
    (lambda: lax.reduce(X, 1, lambda a, b: a * b, (0,)), TypeError,
     "reduce operand dtypes should match corresponding initial value dtypes"),
    (lambda: lax.reduce(X, 1.0, lambda a, b: a * b, (2,)), ValueError,
     r"reduce: dimensions \(2,\) out of range for an operand of rank 2"),
    (lambda: jit(lambda y: lax.reduce(X, 1.0, lambda a, b: a * b * y, (0,)))(2.0),
     NotImplementedError, "Reduction computations can't close over Tracers"),
])
def test_errors(call, err, msg):
    with pytest.raises(err, match=msg):
        call()


def test_wrong_rank_of_window_dimensions_is_jax_error():
    with pytest.raises(TypeError, match=r"reduce_window got the wrong number of "
                       r"window_dimensions for operand: got operand shape \(4, 5\) with "
                       r"window_dimensions \(2,\)\."):
        lax.reduce_window(X, 0.0, lax.add, (2,), (1,), ((0, 0),))


def test_shape_tuple_and_padtype_to_pads():
    assert lax.reduce_window_shape_tuple((6, 5), (2, 2), (2, 1), ((0, 0), (1, 0))) == (3, 5)
    assert lax.reduce_window_shape_tuple((4,), (3,), (1,), ((0, 0),), (2,), (2,)) == (3,)
    assert lax.padtype_to_pads((5, 6), (2, 3), (2, 2), "SAME") == [(0, 1), (0, 1)]
    assert lax.padtype_to_pads((5, 6), (2, 3), (2, 2), "same_lower") == [(1, 0), (1, 0)]
    assert lax.padtype_to_pads((5,), (3,), (1,), "VALID") == [(0, 0)]


def test_printed_jaxprs_match_jax():
    text = str(functrax.make_jaxpr(lambda a: pool("sum", a, **kw((2, 2), (2, 1), "SAME")))(X))
    assert text == """{ lambda ; a:f32[4,5]. let
    b:f32[2,5] = reduce_window_sum[
      base_dilation=(1, 1)
      padding=((0, 0), (0, 1))
      window_dilation=(1, 1)
      window_dimensions=(2, 2)
      window_strides=(2, 1)
    ] a
  in (b,) }"""
    text = str(functrax.make_jaxpr(lambda a: lax.reduce_window(a, 1.0, lax.mul, (2,)))(
        fnp.ones(3)))
    assert text == """{ lambda ; a:f32[3]. let
    b:f32[2] = reduce_window[
      base_dilation=(1,)
      consts=()
      jaxpr={ lambda ; c:f32[] d:f32[]. let e:f32[] = mul c d in (e,) }
      padding=((0, 0),)
      window_dilation=(1,)
      window_dimensions=(2,)
      window_strides=(1,)
    ] a 1.0:f32[]
  in (b,) }"""
    text = str(functrax.make_jaxpr(grad(lambda a: pool("max", a, **kw((2, 2), (2, 2))).sum()))(
        X))
    assert "select_and_scatter_add[\n      padding=((0, 0), (0, 0))\n      select_prim=ge" \
        in text
    text = str(functrax.make_jaxpr(lambda a, t: jvp(lambda b: pool("min", b, **kw((2,))),
                                                    (a,), (t,)))(fnp.ones(3), fnp.ones(3)))
    assert "select_and_gather_add[" in text and "select_prim=le" in text


def test_traced_jaxprs_typecheck():
    def f(a):
        y = pool("max", a, **kw((2, 2), (1, 1), "SAME", (2, 1)))
        return (y ** 2).sum() + lax.reduce(a, 1.0, lambda u, v: u * v, (0,)).sum()
    for g in (f, grad(f), jacfwd(grad(f))):
        functrax.check_jaxpr(functrax.make_jaxpr(g)(X))
    functrax.check_jaxpr(functrax.make_jaxpr(vmap(grad(f)))(fnp.ones((2, 4, 5))))


def test_cost_is_window_size_per_output():
    c = cost_analysis(functrax.make_jaxpr(lambda a: pool("sum", a, **kw((2, 3))))(X))
    assert c["flops"] == 3 * 3 * 6
    c = cost_analysis(functrax.make_jaxpr(
        lambda a: lax.reduce_window(a, 1.0, lax.mul, (2, 2), (2, 2)))(X))
    assert c["flops"] == 2 * 2 * 4
    c = cost_analysis(functrax.make_jaxpr(grad(lambda a: pool("max", a, **kw((2, 2), (2, 2))
                                                              ).sum()))(X))
    assert c["flops"] >= 2 * 2 * 4  # the forward max and the scatter: per window element


def test_empty_operand_and_windows_larger_than_the_operand():
    got = pool("sum", fnp.ones((0, 3)), **kw((1, 2), (1, 1), ((1, 1), (0, 0))))
    np.testing.assert_array_equal(np.asarray(got), np.zeros((2, 2)))
    assert pool("max", X, **kw((9, 2))).shape == (0, 4)
    np.testing.assert_array_equal(np.asarray(grad(lambda a: pool("sum", a, **kw((9, 2))).sum())(
        X)), np.zeros((4, 5)))


# --- the Triton backend ---

_TRITON_PROGRAMS = []


def _on_triton(f, *args):
    args = [np.asarray(a) for a in args]
    prog = th.triton_program(f, *args)
    _TRITON_PROGRAMS.append(prog)
    got = prog.run(*args)
    want = jit(f)(*args)
    want = list(want) if isinstance(want, (list, tuple)) else [want]
    return [np.asarray(w) for w in want], got, prog


@settings(max_examples=25, deadline=None)
@given(cfg=configs(max_rank=3), kind=st.sampled_from(["sum", "max", "min"]),
       dtype=st.sampled_from([np.float32, np.int32, np.int8, np.bool_]), seed=st.integers(0, 9))
def test_triton_monoids_match_numpy_backend(cfg, kind, dtype, seed):
    shape, k = cfg
    if kind == "sum" and dtype == np.bool_:
        dtype = np.int8
    x = rand(shape, dtype, seed)
    (want,), (got,), prog = _on_triton(lambda a: pool(kind, a, **k), x)
    assert not prog.fallbacks, prog.fallbacks
    _check(got, want, dtype)


@settings(max_examples=20, deadline=None)
@given(cfg=configs(max_rank=2, allow_empty=False), kind=st.sampled_from(["max", "min"]),
       seed=st.integers(0, 9))
def test_triton_max_pool_derivatives_match_numpy_backend(cfg, kind, seed):
    shape, k = cfg
    x = rand(shape, np.float32, seed, 0, 3).round()  # ties
    t = rand(shape, np.float32, seed + 1)
    (want,), (got,), prog = _on_triton(
        lambda a, b: jvp(lambda c: pool(kind, c, **k), (a,), (b,))[1], x, t)
    assert not prog.fallbacks, prog.fallbacks
    _check(got, want, np.float32)
    k = {**k, "window_dilation": None}
    out = np.asarray(pool(kind, fnp.asarray(x), **k))
    ct = rand(out.shape, np.float32, seed + 2)
    (want,), (got,), prog = _on_triton(
        lambda a, c: vjp(lambda b: pool(kind, b, **k), a)[1](c)[0], x, ct)
    assert not prog.fallbacks, prog.fallbacks
    _check(got, want, np.float32)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("kind", ["sum", "max"])
def test_triton_narrow_floats(kind, dtype):
    x = rand((5, 6), np.float32, 7).astype(dtype)
    (want,), (got,), prog = _on_triton(lambda a: pool(kind, a, **kw((2, 3), (1, 2), "SAME")), x)
    assert not prog.fallbacks and got.dtype == want.dtype
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2,
                               atol=1e-2)


def test_triton_nan_propagation_and_selection():
    x = np.array([[1.0, np.nan, 5.0, 2.0], [np.nan, 0.0, np.nan, -1.0]], np.float32)
    t = np.arange(8, dtype=np.float32).reshape(2, 4)
    f = lambda a, b: jvp(lambda c: pool("max", c, **kw((2, 2), (1, 1))), (a,), (b,))  # noqa
    want, got, prog = _on_triton(f, x, t)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def test_triton_general_computation_is_a_listed_fallback():
    x = rand((4, 5), np.float32, 8)
    (want,), (got,), prog = _on_triton(lambda a: lax.reduce_window(
        a, np.float32(1), lax.mul, (2, 2)), x)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert [f.primitives for f in prog.fallbacks] == [("reduce_window",)]
    assert "windowed reduction" in prog.fallbacks[0].reason


def test_triton_kernels_compile_for_sm90():
    if not _TRITON_PROGRAMS:
        test_triton_narrow_floats("sum", np.float16)
        test_triton_nan_propagation_and_selection()
    calls = {}
    for prog in _TRITON_PROGRAMS:
        for k in prog.kernels:
            src = k.source
            if src.name in ("reduce_window_sum", "reduce_window_max", "reduce_window_min",
                            "select_and_gather_add", "select_and_scatter_add"):
                key = (src.text, tuple(src.signature.items()))
                calls.setdefault(key, (k.fn, src.signature, src.constexprs, src.num_warps))
    calls = list(calls.values())[:24]
    compiled = tcompile.compile_many(calls)
    assert len(compiled) == len(calls) >= 2
    for c in compiled:
        assert ".target sm_90" in c.ptx and c.cubin[:4] == b"\x7fELF"


def test_doctests():
    import doctest
    import sys
    result = doctest.testmod(sys.modules["functrax.primitives.windows"])
    assert result.attempted >= 4 and not result.failed


def test_jax_lax_window_names_are_provided():
    """This area's names of JAX's API (tests/api_coverage.py: jax.lax) are all present."""
    from tests import api_coverage as cov
    names = {"reduce", "reduce_window", "reduce_window_shape_tuple", "padtype_to_pads"}
    assert names <= set(cov.load()["jax.lax"])
    present, _, _ = cov.coverage("jax.lax", sorted(names))
    assert set(present) == names


# --- the numpy rules' two roads: small windows element by element, large ones at once ---


class _small_window_limit:
    """Within the block, the numpy rules treat windows of at most ``n`` elements as small."""

    def __init__(self, n):
        from functrax.lowering.numpy import windows as np_windows
        self.module, self.n = np_windows, n

    def __enter__(self):
        self.saved, self.module._SMALL_WINDOW = self.module._SMALL_WINDOW, self.n

    def __exit__(self, *exc):
        self.module._SMALL_WINDOW = self.saved


@settings(max_examples=40, deadline=None)
@given(cfg=configs(max_rank=2), kind=st.sampled_from(["max", "min"]), seed=st.integers(0, 99),
       limit=st.sampled_from([0, 64]))
def test_both_numpy_roads_match_the_references(cfg, kind, seed, limit):
    shape, k = cfg
    select = "ge" if kind == "max" else "le"
    x = rand(shape, np.float32, seed, 0, 2).round()  # many ties
    t = rand(shape, np.float32, seed + 1)
    with _small_window_limit(limit):
        _check(pool(kind, fnp.asarray(x), **k), ref_monoid(kind)(x, **k), np.float32)
        _check(pool("sum", fnp.asarray(t), **k), ref_monoid("sum")(t, **k), np.float32)
        got = jvp(lambda a: pool(kind, a, **k), (fnp.asarray(x),), (fnp.asarray(t),))[1]
        _check(got, ref_gather(x, t, select, **k), np.float32)
        if all(d == 1 for d in k["window_dilation"]):
            out = np.asarray(pool(kind, fnp.asarray(x), **k))
            ct = rand(out.shape, np.float32, seed + 2)
            g = vjp(lambda a: pool(kind, a, **k), fnp.asarray(x))[1](fnp.asarray(ct))[0]
            _check(g, ref_scatter(x, ct, select, **k), np.float32)


def test_large_windows_take_the_argmax_road():
    x = rand((2, 7, 7, 3), np.float32, 0, 0, 3).round()  # 36-element windows, with ties
    k = kw((1, 6, 6, 1), (1, 1, 1, 1))
    out = np.asarray(pool("max", fnp.asarray(x), **k))
    _check(out, ref_monoid("max")(x, **k), np.float32)
    ct = rand(out.shape, np.float32, 1)
    g = vjp(lambda a: pool("max", a, **k), fnp.asarray(x))[1](fnp.asarray(ct))[0]
    _check(g, ref_scatter(x, ct, "ge", **k), np.float32)


@pytest.mark.parametrize("strides", [(2, 2), (1, 1)], ids=["tiled", "overlapping"])
def test_max_pool_vjp_keeps_infinite_cotangents_where_they_belong(strides):
    x = np.array([[1.0, 5.0, 2.0, 0.0], [3.0, 2.0, 7.0, 1.0]], np.float32)
    k = kw((2, 2), strides)
    out = np.asarray(pool("max", fnp.asarray(x), **k))
    ct = np.full(out.shape, np.inf, np.float32)
    g = np.asarray(vjp(lambda a: pool("max", a, **k), fnp.asarray(x))[1](fnp.asarray(ct))[0])
    np.testing.assert_array_equal(g, ref_scatter(x, ct, "ge", **k))
    assert not np.isnan(g).any()  # no 0 * inf at the elements that were not selected


def test_small_window_selection_on_integers_bools_and_bfloat16():
    k = kw((2, 2), (2, 2))
    for dtype in (np.int32, ml_dtypes.bfloat16):
        x = rand((4, 6), dtype, 3, -2, 2)
        t = rand((4, 6), np.float32, 4).astype(dtype) if dtype != np.int32 else None
        _check(pool("max", fnp.asarray(x), **k), ref_monoid("max")(x, **k), dtype)
        if t is not None:
            got = jvp(lambda a: pool("max", a, **k), (fnp.asarray(x),), (fnp.asarray(t),))[1]
            want = ref_gather(x.astype(np.float32), t.astype(np.float32), "ge", **k)
            np.testing.assert_array_equal(np.asarray(got).astype(np.float32), want)
    b = rand((4, 6), np.bool_, 5)
    _check(pool("max", fnp.asarray(b), **k), ref_monoid("max")(b, **k), np.bool_)
