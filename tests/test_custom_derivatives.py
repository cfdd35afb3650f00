"""custom_jvp, custom_vjp and checkpoint: honoured by jvp/grad, printed like JAX, clear errors."""
import numpy as np
import pytest

import functrax as fx
import functrax.numpy as fnp


@fx.custom_jvp
def log1pexp(x):
    return fnp.log1p(fnp.exp(x))


@log1pexp.defjvp
def _log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t * (1 - 1 / (1 + fnp.exp(x)))


def test_custom_jvp_is_used_by_grad_and_jvp():
    # the naive derivative overflows to nan at x=100; the custom rule gives 1
    naive = fx.grad(lambda x: fnp.log1p(fnp.exp(x)))(100.0)
    assert np.isnan(naive)
    assert float(fx.grad(log1pexp)(100.0)) == pytest.approx(1.0)
    y, t = fx.jvp(log1pexp, (1.0,), (2.0,))
    assert float(y) == pytest.approx(np.log1p(np.e), rel=1e-6)
    assert float(t) == pytest.approx(2 / (1 + np.exp(-1.0)), rel=1e-6)


def test_custom_jvp_printed_like_jax():
    @fx.custom_jvp
    def cf(x):
        return fnp.log1p(fnp.exp(x))
    cf.defjvp(lambda p, t: (cf(p[0]), t[0]))
    want = """{ lambda ; a:f32[]. let
    b:f32[] = custom_jvp_call[
      name=cf
      call_jaxpr={ lambda ; c:f32[]. let
          d:f32[] = exp c
          e:f32[] = log1p d
        in (e,) }
      jvp=<lambda>
      symbolic_zeros=False
    ] a
  in (b,) }"""
    closed = fx.make_jaxpr(cf)(1.0)
    assert str(closed) == want
    fx.check_jaxpr(closed)


def test_custom_jvp_defjvps_and_nondiff_argnums():
    @fx.custom_jvp
    def f(x, y):
        return x * y
    f.defjvps(lambda t, ans, x, y: 10.0 * t, lambda t, ans, x, y: 100.0 * t)
    assert float(fx.grad(f, argnums=0)(2.0, 3.0)) == 10.0
    assert float(fx.grad(f, argnums=1)(2.0, 3.0)) == 100.0

    from functools import partial

    @partial(fx.custom_jvp, nondiff_argnums=(0,))
    def scale(k, x):
        return k * x

    @scale.defjvp
    def _(k, primals, tangents):
        return scale(k, primals[0]), 7.0 * tangents[0]
    assert float(fx.grad(lambda x: scale(3.0, x))(1.0)) == 7.0


def test_custom_jvp_errors():
    @fx.custom_jvp
    def f(x):
        return x
    with pytest.raises(AttributeError, match="No JVP defined"):
        f(1.0)
    f.defjvp(lambda p, t: (p[0], (t[0], t[0])))
    with pytest.raises(TypeError, match="structure"):
        fx.jvp(f, (1.0,), (1.0,))


@fx.custom_vjp
def clip_gradient(x):
    return x


clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (fnp.clip(g, -1.0, 1.0),))


def test_custom_vjp_clips_gradients():
    assert float(fx.grad(lambda x: 5 * clip_gradient(x))(2.0)) == 1.0
    g = fx.grad(lambda x: fnp.sum(clip_gradient(x) * fnp.array([0.5, 3.0, -4.0])))(fnp.ones(3))
    np.testing.assert_allclose(np.asarray(g), [0.5, 1.0, -1.0])
    # the primal value is the function's
    np.testing.assert_allclose(np.asarray(clip_gradient(fnp.arange(3.0))), [0, 1, 2])


def test_custom_vjp_residuals_and_pytrees():
    @fx.custom_vjp
    def f(d):
        return fnp.sin(d["a"]) * d["b"]

    def fwd(d):
        return f(d), (fnp.cos(d["a"]), d["b"], fnp.sin(d["a"]))

    def bwd(res, g):
        cos_a, b, sin_a = res
        return ({"a": g * cos_a * b, "b": g * sin_a},)
    f.defvjp(fwd, bwd)
    d = {"a": fnp.array(0.3), "b": fnp.array(2.0)}
    g = fx.grad(f)(d)
    assert float(g["a"]) == pytest.approx(np.cos(0.3) * 2, rel=1e-6)
    assert float(g["b"]) == pytest.approx(np.sin(0.3), rel=1e-6)


def test_custom_vjp_errors():
    @fx.custom_vjp
    def f(x, y):
        return x * y
    f.defvjp(lambda x, y: (x * y, (x, y)), lambda res, g: (g,))
    with pytest.raises(TypeError, match="tuple of length equal to the number"):
        fx.grad(f)(1.0, 2.0)
    with pytest.raises(TypeError, match="forward-mode"):
        fx.jvp(clip_gradient, (1.0,), (1.0,))


def test_checkpoint_printed_like_jax_and_same_gradient():
    f = lambda x: fnp.sin(fnp.sin(x))  # noqa: E731
    want = """{ lambda ; a:f32[]. let
    b:f32[] = remat2[
      differentiated=False
      jaxpr={ lambda ; c:f32[]. let d:f32[] = sin c; e:f32[] = sin d in (e,) }
      policy=None
      prevent_cse=True
    ] a
  in (b,) }"""
    assert str(fx.make_jaxpr(fx.checkpoint(f))(1.0)) == want
    assert float(fx.grad(fx.checkpoint(f))(1.0)) == pytest.approx(float(fx.grad(f)(1.0)))
    assert float(fx.grad(fx.grad(fx.checkpoint(f)))(1.0)) == pytest.approx(
        float(fx.grad(fx.grad(f))(1.0)), rel=1e-5)


def _stored_residuals(closed):
    """Values passed from the forward remat2 to the backward one (the stored residuals)."""
    eqns = [e for e in closed.eqns if e.primitive.name == "remat2"]
    fwd, bwd = eqns[0], eqns[-1]
    produced = set(fwd.outvars)
    return [v for v in bwd.invars if v in produced]


@pytest.mark.parametrize("policy, n_saved", [
    (None, 2),  # only the inputs
    (fx.checkpoint_policies.dots_saveable, 4),  # inputs + the two dot outputs
])
def test_checkpoint_policy_changes_what_is_stored(policy, n_saved):
    g = lambda W, x: fnp.sum(fnp.tanh(fnp.tanh(x @ W) @ W))  # noqa: E731
    W, x = fnp.ones((3, 3)) * 0.1, fnp.ones((2, 3))
    closed = fx.make_jaxpr(fx.grad(fx.checkpoint(g, policy=policy)))(W, x)
    fx.check_jaxpr(closed)
    assert len(_stored_residuals(closed)) == n_saved
    np.testing.assert_allclose(np.asarray(fx.grad(fx.checkpoint(g, policy=policy))(W, x)),
                               np.asarray(fx.grad(g)(W, x)), rtol=1e-6)


def test_checkpoint_without_policy_stores_fewer_values_than_plain_grad():
    from functrax.transforms.ad import linearize_flat
    g = lambda x: fnp.sum(fnp.sin(fnp.cos(fnp.exp(x))))  # noqa: E731
    x = fnp.arange(3.0)
    _, lin_plain = linearize_flat(lambda x: [g(x)], [x])
    _, lin_remat = linearize_flat(lambda x: [fx.checkpoint(g)(x)], [x])
    # the residuals a pullback holds are its linear jaxpr's consts
    assert len(lin_remat.closed.consts) < len(lin_plain.closed.consts)
    one = [fnp.array(1.0)]
    np.testing.assert_allclose(np.asarray(lin_plain.transpose(one)[0]),
                               np.asarray(lin_remat.transpose(one)[0]), rtol=1e-6)


_INNER = {
    "jit": lambda x: fx.jit(lambda y: fnp.sin(y) * y)(x),
    "cond": lambda x: fx.lax.cond(x > 0, lambda y: fnp.sin(y) * y, lambda y: y * y, x),
    "scan": lambda x: fx.lax.scan(lambda c, _: (fnp.sin(c) * c, None), x, None, length=3)[0],
    "fori": lambda x: fx.lax.fori_loop(0, 3, lambda i, c: fnp.sin(c) * c, x),
}


@pytest.mark.parametrize("policy", [None, fx.checkpoint_policies.everything_saveable])
@pytest.mark.parametrize("name", sorted(_INNER))
def test_checkpoint_around_higher_order_primitives(name, policy):
    f = _INNER[name]
    g = fx.checkpoint(f, policy=policy)
    x = 0.7
    y, pull = fx.vjp(g, x)
    assert float(y) == pytest.approx(float(f(x)))
    assert float(pull(fnp.array(1.0))[0]) == pytest.approx(float(fx.grad(f)(x)), rel=1e-6)
    y_lin, lin = fx.linearize(g, x)
    assert float(lin(2.0)) == pytest.approx(2.0 * float(fx.grad(f)(x)), rel=1e-6)
    assert float(fx.grad(fx.grad(g))(x)) == pytest.approx(float(fx.grad(fx.grad(f))(x)),
                                                        rel=1e-5)
    assert float(fx.jit(fx.grad(g))(x)) == pytest.approx(float(fx.grad(f)(x)), rel=1e-6)


def test_custom_rules_are_honoured_under_jit():
    # custom_jvp inside jit, differentiated from outside and inside
    g_out = fx.grad(fx.jit(log1pexp))(100.0)
    g_in = fx.jit(fx.grad(log1pexp))(100.0)
    assert float(g_out) == pytest.approx(1.0) and float(g_in) == pytest.approx(1.0)
    y, t = fx.jvp(fx.jit(log1pexp), (1.0,), (2.0,))
    assert float(t) == pytest.approx(2 / (1 + np.exp(-1.0)), rel=1e-6)
    # custom_vjp inside jit: the clipped gradient, both orders
    f = lambda x: 5 * clip_gradient(x)  # noqa: E731
    assert float(fx.grad(fx.jit(f))(2.0)) == 1.0
    assert float(fx.jit(fx.grad(f))(2.0)) == 1.0
    # and under vmap of jit of grad
    gs = fx.vmap(fx.jit(fx.grad(f)))(fnp.array([0.1, 2.0, -3.0]))
    np.testing.assert_allclose(np.asarray(gs), [1.0, 1.0, 1.0])
    closed = fx.make_jaxpr(fx.grad(fx.jit(f)))(2.0)
    fx.check_jaxpr(closed)


def _branchy_custom_jvp(calls):
    @fx.custom_jvp
    def f(x):
        calls.append("f")
        return fnp.sin(x) if x > 0 else x  # a Python branch: needs a concrete x

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        calls.append("rule")
        return (fnp.sin(x), fnp.cos(x) * t) if x > 0 else (x, t)
    return f


def test_custom_jvp_outside_jit_sees_concrete_values_and_runs_only_what_jax_runs():
    calls = []
    f = _branchy_custom_jvp(calls)
    assert float(f(1.0)) == pytest.approx(np.sin(1.0)) and calls == ["f"]
    calls.clear()
    assert float(fx.grad(f)(1.0)) == pytest.approx(np.cos(1.0)) and calls == ["rule"]
    calls.clear()
    y, t = fx.jvp(f, (-1.0,), (3.0,))
    assert (float(y), float(t)) == (-1.0, 3.0) and calls == ["rule"]
    assert float(fx.grad(fx.grad(f))(1.0)) == pytest.approx(-np.sin(1.0))
    # under jit the function is traced (its branch then needs lax.cond, as in JAX)
    with pytest.raises(fx.errors.TracerBoolConversionError):
        fx.jit(f)(1.0)


def test_custom_functions_called_directly_return_what_the_function_returns():
    g = fx.custom_jvp(lambda x: 2.0)
    g.defjvp(lambda p, t: (2.0, 0.0))
    assert type(g(1.0)) is float
    h = fx.custom_vjp(lambda x: 3.0)
    h.defvjp(lambda x: (3.0, None), lambda _, ct: (ct,))
    assert type(h(1.0)) is float


def test_custom_vjp_under_grad_runs_fwd_not_the_function():
    calls = []

    @fx.custom_vjp
    def f(x):
        calls.append("f")
        return x if x > 0 else -x

    def fwd(x):
        calls.append("fwd")
        return (x if x > 0 else -x), x

    f.defvjp(fwd, lambda x, g: (g * fnp.sign(x) * 10.0,))
    assert float(fx.grad(f)(-2.0)) == -10.0 and calls == ["fwd"]


def test_grad_of_checkpointed_scan_closing_over_the_differentiated_value():
    def f(x):
        body = fx.checkpoint(lambda c, _: (c * x, None))
        return fx.lax.scan(body, 1.0, None, length=3)[0]  # x ** 3
    assert float(fx.grad(f)(2.0)) == pytest.approx(12.0)
    assert float(fx.jit(fx.grad(f))(2.0)) == pytest.approx(12.0)
    assert float(fx.grad(fx.checkpoint(f))(2.0)) == pytest.approx(12.0)


def test_a_custom_jvp_function_applied_to_tangents_is_transposable():
    # the tangent of f calls another custom_jvp function: reverse mode inlines it (as JAX)
    g = fx.custom_jvp(lambda x: 2 * x)
    g.defjvp(lambda p, t: (g(p[0]), 2 * t[0]))
    f = fx.custom_jvp(fnp.sin)
    f.defjvp(lambda p, t: (fnp.sin(p[0]), fnp.cos(p[0]) * g(t[0]) / 2))
    assert float(fx.grad(f)(1.0)) == pytest.approx(np.cos(1.0))
    assert float(fx.jit(fx.grad(f))(1.0)) == pytest.approx(np.cos(1.0))
    assert float(fx.grad(fx.grad(f))(1.0)) == pytest.approx(-np.sin(1.0), rel=1e-6)
