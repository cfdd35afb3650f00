"""Forward and reverse mode: closed forms, nesting, API errors, printed jaxprs, and the
rules for indexing, sorting, cumulative and special functions."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import config, dtypes, grad, jacfwd, jacrev, jvp, lax, make_jaxpr, vjp
from functrax import primitives as P
from functrax.test_util import check_grads, check_jvp, check_vjp, enable_x64
from functrax.transforms.jvp import defjvp, jvp_rules


@pytest.fixture
def x64():
    with enable_x64():
        yield


def f64(x):
    return fnp.asarray(np.asarray(x, np.float64))


# --- printed jaxprs ---

JAX_GRAD_JAXPR = """\
{ lambda ; a:f32[3] b:f32[3]. let
    c:f32[3] = sin a
    d:f32[3] = cos a
    e:f32[3] = mul c b
    f:f32[3] = add e 2.0:f32[]
    g:f32[3] = integer_pow[y=2] f
    h:f32[3] = mul 2.0:f32[] f
    _:f32[] = reduce_sum[axes=(0,)] g
    i:f32[3] = broadcast_in_dim 1.0:f32[]
    j:f32[3] = mul i h
    k:f32[3] = mul j b
    l:f32[3] = mul k d
  in (l,) }"""


def test_grad_jaxpr_matches_jax():
    f = grad(lambda x, y: fnp.sum((fnp.sin(x) * y + 2.0) ** 2))
    assert str(make_jaxpr(f)(fnp.ones(3), fnp.arange(3.))) == JAX_GRAD_JAXPR


def test_symbolic_zero_gradient_does_no_work():
    f = grad(lambda x, y: fnp.sum(fnp.sin(x)), argnums=(0, 1))
    gx, gy = f(fnp.ones(3), fnp.ones((2, 2)))
    np.testing.assert_allclose(np.asarray(gx), np.cos(np.ones(3)), rtol=1e-6)
    assert gy.shape == (2, 2) and gy.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(gy), np.zeros((2, 2)))
    closed = make_jaxpr(f)(fnp.ones(3), fnp.ones((2, 2)))
    b = closed.jaxpr.invars[1]
    assert all(b not in eqn.invars for eqn in closed.jaxpr.eqns)
    # the zero gradient is a single broadcast of a literal 0.0
    out_b = closed.jaxpr.outvars[1]
    (eqn,) = [e for e in closed.jaxpr.eqns if out_b in e.outvars]
    assert eqn.primitive is P.broadcast_in_dim_p
    assert str(closed).splitlines()[-2].strip() == "g:f32[2,2] = broadcast_in_dim 0.0:f32[]"


# --- closed forms ---


def _rosenbrock(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _rosenbrock_hessian(x):
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        h[i + 1, i + 1] += 200
        h[i, i + 1] = h[i + 1, i] = -400 * x[i]
    return h


def test_hessian_of_rosenbrock(x64):
    x = np.array([0.3, -1.2, 0.8, 1.5])
    got = functrax.hessian(_rosenbrock)(f64(x))
    assert got.shape == (4, 4) and got.dtype == np.float64
    np.testing.assert_allclose(np.asarray(got), _rosenbrock_hessian(x), rtol=1e-12)


def _vec_fn(params, s):
    a, b = params["a"], params["b"]
    return {"prod": a * b[0], "mix": (fnp.sin(a) * s, fnp.sum(a) * b)}


def _vec_fn_jacobians(a, b, s):
    """Closed forms: d out / d params['a'], d out / d params['b'], d out / d s."""
    n, m = len(a), len(b)
    d_prod_a, d_prod_b = np.eye(n) * b[0], np.zeros((n, m))
    d_prod_b[:, 0] = a
    d_sin_a = np.diag(np.cos(a) * s)
    d_sum_a, d_sum_b = np.outer(b, np.ones(n)), np.eye(m) * np.sum(a)
    return ({"prod": d_prod_a, "mix": (d_sin_a, d_sum_a)},
            {"prod": d_prod_b, "mix": (np.zeros((n, m)), d_sum_b)},
            {"prod": np.zeros(n), "mix": (np.sin(a), np.zeros(m))})


@pytest.mark.parametrize("jac", [jacfwd, jacrev], ids=["jacfwd", "jacrev"])
def test_jacobian_pytrees_and_argnums(jac, x64):
    a, b, s = np.array([0.5, -1.0, 2.0]), np.array([1.5, -0.5]), 0.7
    params = {"a": f64(a), "b": f64(b)}
    want_a, want_b, want_s = _vec_fn_jacobians(a, b, s)
    # argnums=0: the input structure nests inside the output structure
    got = jac(_vec_fn)(params, f64(s))
    assert set(got) == {"prod", "mix"} and set(got["prod"]) == {"a", "b"}
    for key, want in (("a", want_a), ("b", want_b)):
        np.testing.assert_allclose(np.asarray(got["prod"][key]), want["prod"], rtol=1e-12)
        for i in range(2):
            np.testing.assert_allclose(np.asarray(got["mix"][i][key]), want["mix"][i],
                                       rtol=1e-12, atol=1e-15)
    # argnums tuple: a tuple (params jacobian, s jacobian) at each output leaf
    got = jac(_vec_fn, argnums=(0, 1))(params, f64(s))
    g_params, g_s = got["mix"][0]
    np.testing.assert_allclose(np.asarray(g_params["a"]), want_a["mix"][0], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(g_s), want_s["mix"][0], rtol=1e-12)
    assert got["prod"][1].shape == (3,)


def test_third_derivative_of_tanh(x64):
    xs = np.array([-1.3, 0.0, 0.4, 2.0])
    d3 = grad(grad(grad(fnp.tanh)))
    t = np.tanh(xs)
    want = (1 - t ** 2) * (6 * t ** 2 - 2)
    got = [float(d3(f64(x))) for x in xs]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_perturbation_confusion_nested_grad():
    def f(x):
        inner = grad(lambda y: x + y)(1.0)
        return x * inner
    assert float(grad(f)(2.0)) == 1.0


def test_perturbation_confusion_nested_jvp():
    def f(x):
        _, inner = jvp(lambda y: x + y, (1.0,), (1.0,))
        return x * inner
    _, t = jvp(f, (2.0,), (1.0,))
    assert float(t) == 1.0


def test_value_and_grad_with_aux():
    def f(x):
        return fnp.sum(x ** 2), {"norm": fnp.sqrt(fnp.sum(x ** 2)), "n": 3}
    (val, aux), g = functrax.value_and_grad(f, has_aux=True)(fnp.array([1.0, 2.0, 2.0]))
    assert float(val) == 9.0 and float(aux["norm"]) == 3.0 and aux["n"] == 3
    np.testing.assert_allclose(np.asarray(g), [2.0, 4.0, 4.0])
    g2, aux2 = grad(f, has_aux=True)(fnp.array([1.0, 2.0, 2.0]))
    np.testing.assert_allclose(np.asarray(g2), [2.0, 4.0, 4.0])
    assert float(aux2["norm"]) == 3.0


def test_allow_int_gives_float0_zero():
    f = lambda x, n: fnp.sum(x) * n  # noqa: E731
    gx, gn = grad(f, argnums=(0, 1), allow_int=True)(fnp.ones(3), fnp.int32(4))
    np.testing.assert_allclose(np.asarray(gx), [4.0, 4.0, 4.0])
    assert gn.dtype == dtypes.float0 and gn.shape == ()
    gv = grad(lambda v: fnp.sum(v * 2.0), allow_int=True)(fnp.arange(3))
    assert gv.dtype == dtypes.float0 and gv.shape == (3,)


def test_int_input_without_allow_int_is_an_error():
    msg = re.escape("grad requires real- or complex-valued inputs (input dtype that is a "
                    "sub-dtype of np.inexact), but got int32.")
    with pytest.raises(TypeError, match=msg + ".*allow_int to True"):
        grad(lambda v: fnp.sum(v * 2.0))(fnp.arange(3))


def test_grad_of_non_scalar_output_error():
    with pytest.raises(TypeError, match=re.escape(
            "Gradient only defined for scalar-output functions. Output had shape: (3,).")):
        grad(lambda x: x * 2.0)(fnp.ones(3))


def test_jvp_tangent_shape_and_dtype_errors():
    with pytest.raises(ValueError, match=r"different primal and tangent shapes.*\(3,\).*\(4,\)"):
        jvp(fnp.sin, (fnp.ones(3),), (fnp.ones(4),))
    with pytest.raises(TypeError, match=r"primal dtype float32.*tangent dtype int32"):
        jvp(fnp.sin, (fnp.ones(3),), (fnp.ones(3, dtype="int32"),))
    with pytest.raises(TypeError, match="same tree structure"):
        jvp(lambda a, b: a * b, (fnp.ones(3), fnp.ones(3)), (fnp.ones(3),))


def test_vjp_wrong_cotangent_structure():
    _, f_vjp = vjp(lambda x: (x, 2.0 * x), fnp.ones(3))
    with pytest.raises(ValueError, match="unexpected tree structure"):  # as JAX
        f_vjp(fnp.ones(3))
    with pytest.raises(ValueError, match="unexpected JAX type"):
        f_vjp((fnp.ones(3), fnp.ones(2)))
    cts = f_vjp((fnp.ones(3), fnp.ones(3)))
    np.testing.assert_allclose(np.asarray(cts[0]), [3.0, 3.0, 3.0])


def test_linearize_matches_jvp_and_is_linear():
    f = lambda x: fnp.sin(x) * fnp.exp(x)  # noqa: E731
    x, t = fnp.array([0.1, 0.5, -1.0]), fnp.array([1.0, -2.0, 0.5])
    y, f_jvp = functrax.linearize(f, x)
    y2, t2 = jvp(f, (x,), (t,))
    np.testing.assert_allclose(np.asarray(y), np.asarray(y2))
    np.testing.assert_allclose(np.asarray(f_jvp(t)), np.asarray(t2), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(f_jvp(t * 3.0)), 3 * np.asarray(t2), rtol=1e-6)


def test_linear_transpose():
    def f(x):
        return 2.0 * x[::-1], fnp.sum(x)
    f_t = functrax.linear_transpose(f, fnp.ones(3))
    (ct,) = f_t((fnp.array([1.0, 2.0, 3.0]), fnp.float32(10.0)))
    np.testing.assert_allclose(np.asarray(ct), [16.0, 14.0, 12.0])


# --- gradient checking itself ---


def test_check_grads_detects_a_wrong_rule():
    old = jvp_rules[P.sin_p]
    try:
        defjvp(P.sin_p, lambda g, x: lax.mul(g, lax.cos(lax.mul(x, np.float64(1.001)))))
        with pytest.raises(AssertionError):
            check_grads(fnp.sin, (np.array([0.3, 1.1]),), order=1, modes=("fwd",))
        with pytest.raises(AssertionError):
            check_grads(fnp.sin, (np.array([0.3, 1.1]),), order=1, modes=("rev",))
    finally:
        jvp_rules[P.sin_p] = old
    check_grads(fnp.sin, (np.array([0.3, 1.1]),), order=2)


def test_check_grads_accepts_float32_with_jax_tolerances_and_still_fails_wrong_rules():
    rng = np.random.RandomState(0)
    # small and well scaled: second-order finite differences in float32 are noisy (a larger
    # product failed JAX's float32 tolerances with another BLAS's summation order)
    W, x = (0.5 * rng.randn(3, 3)).astype(np.float32), (0.5 * rng.randn(2, 3)).astype(np.float32)
    check_grads(lambda W, x: fnp.sum(fnp.tanh(x @ W)), (W, x), order=2)
    check_grads(fnp.log, (np.float32(3.0),), order=2)
    wrong = functrax.custom_jvp(fnp.sin)
    wrong.defjvp(lambda p, t: (fnp.sin(p[0]), fnp.cos(p[0]) * t[0] * 1.02))
    for mode in ("fwd", "rev"):
        with pytest.raises(AssertionError):
            check_grads(wrong, (np.float32(0.7),), order=1, modes=(mode,))

def test_check_grads_restores_x64_flag_and_checks_in_float64():
    before = config.enable_x64
    seen = []

    def f(x):
        seen.append(x.dtype)
        return fnp.sum(fnp.exp(x))
    check_grads(f, (np.array([0.3, 1.1]),), order=1)
    assert config.enable_x64 == before
    assert np.dtype(np.float64) in seen


def test_check_jvp_and_check_vjp_directly(x64):
    import functools
    f = lambda x, y: fnp.sin(x) * y  # noqa: E731
    args = (np.array([0.2, 1.0]), np.array([2.0, -1.0]))
    check_jvp(f, functools.partial(jvp, f), args)
    check_vjp(f, functools.partial(vjp, f), args)


def test_check_grads_holds_integer_args_fixed():
    check_grads(lambda x, i: x[i] * 2.0, (np.array([1.0, 2.0, 3.0]), np.array([2, 0])), 2)


# --- rules: special functions ---


def trigamma(x):
    return lax.polygamma(fnp.ones_like(x), x)


def test_trigamma_values(x64):
    xs = f64([1.0, 0.5, 1.5, -0.5, 10.0])
    want = [math.pi ** 2 / 6, math.pi ** 2 / 2, math.pi ** 2 / 2 - 4, math.pi ** 2 / 2 + 4,
            math.pi ** 2 / 6 - sum(1 / k ** 2 for k in range(1, 10))]
    np.testing.assert_allclose(np.asarray(trigamma(xs)), want, rtol=1e-12)


def test_digamma_and_lgamma_derivatives(x64):
    x = f64([0.7, 3.2, -1.4])
    np.testing.assert_allclose(np.asarray(jvp(lax.digamma, (x,), (fnp.ones_like(x),))[1]),
                               np.asarray(trigamma(x)), rtol=1e-13)
    check_grads(lax.lgamma, (np.array([0.7, 3.2, -1.4]),), order=3)
    check_grads(lax.digamma, (np.array([0.7, 3.2, 25.0]),), order=2)


# --- rules: cumulative reductions ---


@pytest.mark.parametrize("name", ["cumprod", "cummax", "cummin", "cumlogsumexp", "cumsum"])
@pytest.mark.parametrize("axis,reverse", [(0, False), (1, True)])
def test_cumulative_gradients(name, axis, reverse):
    x = np.random.RandomState(0).randn(3, 5)
    check_grads(lambda v: getattr(lax, name)(v, axis, reverse), (x,), order=2)


def test_cumprod_gradient_with_zeros():
    x = np.array([2.0, 0.0, 3.0, 0.0, 5.0])
    g = grad(lambda v: fnp.sum(lax.cumprod(v)))(fnp.asarray(x, dtype="float32"))
    # d/dx_j sum_i prod_{k<=i} x_k = sum_{i>=j} prod_{k<=i, k!=j} x_k
    want = [sum(np.prod(np.delete(x[:i + 1], j)) for i in range(j, 5)) for j in range(5)]
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-6)


def test_cummax_gradient_goes_to_the_running_max():
    x = fnp.array([1.0, 3.0, 2.0, 5.0, 4.0])
    g = grad(lambda v: fnp.sum(lax.cummax(v) * fnp.array([1.0, 10.0, 100.0, 1e3, 1e4])))(x)
    np.testing.assert_allclose(np.asarray(g), [1.0, 110.0, 0.0, 11000.0, 0.0])


def test_cumlogsumexp_extreme_values_are_stable(x64):
    x = f64([-1000.0, 0.0, 1000.0])
    _, t = jvp(lambda v: lax.cumlogsumexp(v), (x,), (fnp.ones_like(x),))
    np.testing.assert_allclose(np.asarray(t), [1.0, 1.0, 1.0])


# --- rules: sort ---


def test_sort_gradient_permutes_back():
    x = fnp.array([3.0, 1.0, 2.0])
    g = grad(lambda v: fnp.sum(lax.sort(v) * fnp.array([1.0, 10.0, 100.0])))(x)
    np.testing.assert_allclose(np.asarray(g), [100.0, 1.0, 10.0])


def test_sort_multi_operand_gradients():
    keys = np.array([[3, 1, 2, 0], [0, 2, 1, 3]], np.int32)
    vals = np.random.RandomState(1).randn(2, 4)

    def f(v):
        k, s = lax.sort((fnp.asarray(keys), v), dimension=1, num_keys=1)
        return s
    check_grads(f, (vals,), order=2)
    check_grads(lambda v: lax.sort(v, 0), (np.random.RandomState(2).randn(4, 3),), order=2)


def test_sort_of_empty_array():
    _, t = jvp(lambda v: lax.sort(v), (fnp.zeros((2, 0)),), (fnp.zeros((2, 0)),))
    assert t.shape == (2, 0)


# --- rules: gather / scatter ---

RNG = np.random.RandomState(3)
X = RNG.randn(5, 4)
IDX = np.array([3, 0, 3, 1])


@pytest.mark.parametrize("name,fn,args", [
    ("gather", lambda v: v[IDX], (X,)),
    ("gather_2d", lambda v: v[IDX, np.array([1, 2, 0, 3])], (X,)),
    ("gather_clip", lambda v: fnp.take(v, np.array([3, 7, -9]), axis=0, mode="clip"), (X,)),
    ("take_along_axis", lambda v: fnp.take_along_axis(v, np.argsort(X, 1), 1), (X,)),
    ("scatter_add", lambda v, u: v.at[IDX].add(u), (X, RNG.randn(4, 4))),
    ("scatter_add_drop", lambda v, u: v.at[np.array([3, 9, -1])].add(u), (X, RNG.randn(3, 4))),
    ("scatter_duplicates", lambda v, u: v.at[IDX].set(u), (X, RNG.randn(4, 4))),
    ("scatter_unique", lambda v, u: v.at[np.array([3, 0, 1])].set(u, unique_indices=True),
     (X, RNG.randn(3, 4))),
    ("scatter_mul_unique", lambda v, u: v.at[np.array([3, 0])].multiply(
        u, unique_indices=True), (X, RNG.randn(2, 4))),
    ("scatter_mul_operand", lambda v: v.at[IDX].multiply(np.arange(16.0).reshape(4, 4)), (X,)),
    ("scatter_max", lambda v, u: v.at[IDX].max(u), (X, RNG.randn(4, 4))),
    ("scatter_min", lambda v, u: v.at[IDX].min(u), (X, RNG.randn(4, 4))),
    ("dynamic_update_slice", lambda v, u: lax.dynamic_update_slice(
        v, u, (np.int32(1), np.int32(2))), (X, RNG.randn(2, 2))),
], ids=lambda v: v if isinstance(v, str) else "")
def test_indexing_gradients(name, fn, args):
    check_grads(fn, args, order=2)


def test_scatter_with_duplicates_gives_the_gradient_to_the_winner():
    def f(u):
        return fnp.sum(fnp.zeros(3).at[np.array([1, 1])].set(u) * fnp.array([1.0, 2.0, 3.0]))
    out = fnp.zeros(3).at[np.array([1, 1])].set(fnp.array([5.0, 6.0]))
    g = np.asarray(grad(f)(fnp.array([5.0, 6.0])))
    winner = [5.0, 6.0].index(float(out[1]))
    assert g[winner] == 2.0 and g[1 - winner] == 0.0


def test_scatter_max_averages_tied_winners():
    g = grad(lambda u: fnp.sum(fnp.ones(2).at[np.array([0, 0])].max(u)))(fnp.array([5.0, 5.0]))
    np.testing.assert_allclose(np.asarray(g), [0.5, 0.5])
    g = grad(lambda x: fnp.sum(x.at[np.array([0])].max(fnp.array([2.0]))))(fnp.array([2.0, 1.0]))
    np.testing.assert_allclose(np.asarray(g), [0.5, 1.0])


def test_scatter_mul_updates_needs_unique_indices():
    with pytest.raises(NotImplementedError, match="unique_indices=True"):
        grad(lambda u: fnp.sum(fnp.ones(3).at[np.array([0, 0])].multiply(u)))(fnp.ones(2))


def test_gather_transpose_is_scatter_add():
    closed = make_jaxpr(grad(lambda v: fnp.sum(v[np.array([2, 0, 2])])))(fnp.ones(4))
    assert "scatter-add" in str(closed)
    g = grad(lambda v: fnp.sum(v[np.array([2, 0, 2])]))(fnp.ones(4))
    np.testing.assert_allclose(np.asarray(g), [1.0, 0.0, 2.0, 0.0])


# --- rules: structural and elementwise corner cases ---


def test_pad_value_gradient_when_operand_is_constant():
    g = grad(lambda v: fnp.sum(lax.pad(fnp.ones((2, 2)), v, ((1, 2, 1), (0, -1, 0)))))(1.5)
    # output (6, 1): 2 of its 6 entries come from the operand
    assert float(g) == 4.0


def test_scalar_beside_array_tangents_have_the_output_shape():
    x = fnp.array([0.5, 2.0, -1.0])
    for f in (lambda s: lax.max(s, x), lambda s: lax.clamp(s, x, 3.0),
              lambda s: lax.rem(x, s), lambda s: lax.pow(s, x), lambda s: lax.add(s, x)):
        _, t = jvp(f, (0.7,), (1.0,))
        assert t.shape == (3,)
    xn = np.array([0.5, 2.0, -1.0])
    check_grads(lambda s: lax.min(lax.max(s, fnp.asarray(xn)), 1.5), (np.float64(0.7),), 2)


def test_max_tie_splits_the_gradient():
    gx, gy = grad(lambda a, b: lax.max(a, b), argnums=(0, 1))(2.0, 2.0)
    assert float(gx) == 0.5 and float(gy) == 0.5


def test_dot_general_preferred_element_type_gradient():
    a = fnp.asarray(np.arange(6.0).reshape(2, 3), dtype="float16")
    b = fnp.asarray(np.ones((3, 2)), dtype="float16")
    f = lambda a, b: fnp.sum(lax.dot_general(  # noqa: E731
        a, b, (((1,), (0,)), ((), ())), preferred_element_type=np.float32))
    ga, gb = grad(f, argnums=(0, 1))(a, b)
    assert ga.dtype == np.float16 and gb.dtype == np.float16
    np.testing.assert_allclose(np.asarray(ga, np.float32), np.full((2, 3), 2.0))
    np.testing.assert_allclose(np.asarray(gb, np.float32), [[3.0, 3.0], [5.0, 5.0], [7.0, 7.0]])


def test_complex_rules(x64):
    z = np.array([1.0 + 2.0j, -0.5 + 0.3j])
    for f in (lax.real, lax.imag, lax.conj, lax.abs, lambda v: v * lax.conj(v), lax.exp):
        check_grads(f, (z,), order=2)
    # |z|' in direction t is Re(conj(z) t) / |z|
    _, t = jvp(lax.abs, (fnp.asarray(z),), (fnp.asarray(np.ones(2, np.complex128)),))
    np.testing.assert_allclose(np.asarray(t), np.real(np.conj(z)) / np.abs(z))


def test_non_differentiable_primitives_have_zero_tangents():
    x = fnp.array([0.3, 1.7, -2.2])
    for f in (fnp.floor, fnp.sign, fnp.round, lambda v: lax.nextafter(v, fnp.zeros(3))):
        _, t = jvp(f, (x,), (fnp.ones(3),))
        np.testing.assert_array_equal(np.asarray(t), np.zeros(3))
    _, t = jvp(lambda v: fnp.argmax(v), (x,), (fnp.ones(3),))
    assert t.dtype == dtypes.float0


def test_power_with_an_integer_exponent_keeps_it_integer():
    # as in JAX: a float base with a traced integer exponent binds pow(f32, i32) unpromoted,
    # and d/dx x ** 0 is exactly 0, also at x == 0 (x ** -1 there would give 0 * inf = nan)
    f = lambda x, n: x ** n  # noqa: E731
    assert str(make_jaxpr(f)(2.0, 3)) == (
        "{ lambda ; a:f32[] b:i32[]. let c:f32[] = pow a b in (c,) }")
    assert float(grad(functrax.jit(f))(0.0, 0)) == 0.0
    assert float(grad(f)(0.0, 0)) == 0.0
    assert float(grad(functrax.jit(f))(2.0, 3)) == 12.0
    x = fnp.array([2.0, 0.0, 0.5, -2.0])
    n = fnp.array([3, 0, -1, 2])
    np.testing.assert_allclose(np.asarray(functrax.vmap(grad(f))(x, n)), [12.0, 0.0, -4.0, -4.0])
    np.testing.assert_allclose(np.asarray(functrax.jit(f)(x, n)), [8.0, 1.0, 2.0, 4.0])
    np.testing.assert_allclose(np.asarray(jacfwd(f)(x, n)), np.diag([12.0, 0.0, -4.0, -4.0]))
    # a Python float base is a weak float32; the result is strong (the exponent is)
    y = fnp.power(2.0, fnp.arange(3))
    assert y.dtype == np.float32 and not y.weak_type
    np.testing.assert_array_equal(np.asarray(y), [1.0, 2.0, 4.0])
    # bases of other inexact dtypes keep their dtype
    assert fnp.power(fnp.ones(2, fnp.bfloat16), fnp.arange(2)).dtype == fnp.bfloat16
    assert fnp.power(fnp.ones(2, fnp.complex64), fnp.arange(2)).dtype == np.complex64
    with pytest.raises(TypeError, match="pow does not accept dtype int32"):
        lax.pow(fnp.arange(2), fnp.arange(2))
