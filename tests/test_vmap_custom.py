"""vmap of custom_jvp, custom_vjp (custom_vjp_call / custom_lin) and checkpoint (remat2).

Both orders must honour the custom rules, as in JAX: ``vmap(grad(f))`` and
``grad(lambda x: vmap(f)(x).sum())``. References are Python loops over the examples of the
unbatched function and closed-form derivatives computed with numpy.
"""
from __future__ import annotations

import numpy as np
import pytest

import functrax as fx
import functrax.numpy as fnp
from functrax import lax


def _loop(fn, *args, in_axes=None):
    """stack([fn(*example)]) for the examples along ``in_axes`` (default 0 for all)."""
    in_axes = in_axes or (0,) * len(args)
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [fn(*[a if ax is None else fnp.asarray(np.take(np.asarray(a), b, ax))
                 for a, ax in zip(args, in_axes)]) for b in range(size)]
    return np.stack([np.asarray(o) for o in outs])


def _jaxpr_prims(closed):
    return [e.primitive.name for e in closed.eqns]


# --- custom_jvp ---


@fx.custom_jvp
def log1pexp(x):
    return fnp.log1p(fnp.exp(x))


@log1pexp.defjvp
def _log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t * (1 - 1 / (1 + fnp.exp(x)))


XS = np.array([-3.0, 0.5, 2.0, 100.0], np.float32)
SIGMOID = 1 / (1 + np.exp(-XS.astype(np.float64)))  # the true derivative of log1pexp


def test_naive_derivative_is_nan_at_100():
    naive = fx.vmap(fx.grad(lambda x: fnp.log1p(fnp.exp(x))))(fnp.asarray(XS))
    assert np.isnan(np.asarray(naive)[-1])


def test_custom_jvp_values_under_vmap():
    got = fx.vmap(log1pexp)(fnp.asarray(XS))
    np.testing.assert_allclose(np.asarray(got), _loop(log1pexp, XS), rtol=1e-6)


@pytest.mark.parametrize("order", ["vmap_of_grad", "grad_of_vmap", "jacfwd", "jacrev"])
def test_custom_jvp_rule_used_in_both_orders(order):
    xs = fnp.asarray(XS)
    if order == "vmap_of_grad":
        got = fx.vmap(fx.grad(log1pexp))(xs)
    elif order == "grad_of_vmap":
        got = fx.grad(lambda x: fx.vmap(log1pexp)(x).sum())(xs)
    elif order == "jacfwd":
        got = np.diagonal(np.asarray(fx.jacfwd(fx.vmap(log1pexp))(xs)))
    else:
        got = np.diagonal(np.asarray(fx.jacrev(fx.vmap(log1pexp))(xs)))
    np.testing.assert_allclose(np.asarray(got), SIGMOID, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(got), _loop(fx.grad(log1pexp), XS), rtol=1e-6)


def test_vmapped_custom_jvp_stays_a_custom_jvp_call():
    closed = fx.make_jaxpr(fx.vmap(log1pexp))(fnp.asarray(XS))
    fx.check_jaxpr(closed)
    assert _jaxpr_prims(closed) == ["custom_jvp_call"]
    assert closed.eqns[0].params["call_jaxpr"].in_avals[0].shape == (4,)
    # differentiating the staged program later still uses the rule
    g = fx.grad(lambda x: fx.eval_jaxpr(closed.jaxpr, closed.consts, x)[0].sum())(
        fnp.asarray(XS))
    np.testing.assert_allclose(np.asarray(g), SIGMOID, rtol=1e-6)


def test_nested_vmap_of_custom_jvp():
    xs = np.stack([XS, -XS])
    sig = 1 / (1 + np.exp(-xs.astype(np.float64)))
    got = fx.vmap(fx.vmap(fx.grad(log1pexp)))(fnp.asarray(xs))
    np.testing.assert_allclose(np.asarray(got), sig, rtol=1e-6, atol=1e-30)
    got = fx.grad(lambda x: fx.vmap(fx.vmap(log1pexp), in_axes=1)(x).sum())(fnp.asarray(xs))
    np.testing.assert_allclose(np.asarray(got), sig, rtol=1e-6, atol=1e-30)


@fx.custom_jvp
def scaled_mul(x, y):
    return x * y


@scaled_mul.defjvp
def _scaled_mul_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    # deliberately not the true derivative, so that the test sees the rule is used
    return scaled_mul(x, y), 10.0 * tx * y + 100.0 * x * ty


@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 0), (1, 0), (None, -1)])
def test_custom_jvp_two_args_batch_axes(in_axes):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 3)).astype(np.float32)
    y = rng.standard_normal((3, 3)).astype(np.float32)
    f = fx.vmap(scaled_mul, in_axes=in_axes)
    got = f(fnp.asarray(x), fnp.asarray(y))
    np.testing.assert_allclose(np.asarray(got), _loop(scaled_mul, x, y, in_axes=in_axes),
                               rtol=1e-6)
    got = fx.grad(lambda a, b: f(a, b).sum(), argnums=(0, 1))(fnp.asarray(x), fnp.asarray(y))
    # per example: d/dx = 10 y, d/dy = 100 x (the rule)
    _check_grads_vs_loop(got, fx.grad(lambda a, b: scaled_mul(a, b).sum(), argnums=(0, 1)),
                         (x, y), in_axes)


def _check_grads_vs_loop(got, per_example_grad, args, in_axes):
    """Gradients of the summed vmap against a loop: stacked along the argument's axis,
    summed over the examples for a shared (unbatched) argument."""
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    per = [per_example_grad(*[fnp.asarray(a if ax is None else np.take(a, b, ax))
                              for a, ax in zip(args, in_axes)]) for b in range(size)]
    for k, (g, ax) in enumerate(zip(got, in_axes)):
        parts = [np.asarray(p[k]) for p in per]
        want = np.sum(parts, 0) if ax is None else np.stack(parts, ax)
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5)


@fx.custom_jvp
def first(x, y):
    return 2.0 * x


@first.defjvp
def _first_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return first(x, y), 2.0 * tx + 3.0 * ty  # the tangent depends on y, the output does not


def test_custom_jvp_tangent_batched_where_output_is_not():
    x = fnp.asarray(np.float32(1.5))
    ys = fnp.asarray(np.array([1.0, 2.0, 3.0], np.float32))
    out = fx.vmap(first, in_axes=(None, 0))(x, ys)
    np.testing.assert_allclose(np.asarray(out), [3.0, 3.0, 3.0])
    g = fx.grad(lambda y: fx.vmap(first, in_axes=(None, 0))(x, y).sum())(ys)
    np.testing.assert_allclose(np.asarray(g), [3.0, 3.0, 3.0])
    gx = fx.grad(lambda a: fx.vmap(first, in_axes=(None, 0))(a, ys).sum())(x)
    np.testing.assert_allclose(np.asarray(gx), 6.0)


def test_staged_vmap_then_grad_with_such_a_rule_is_a_clear_error():
    # staged, the output was declared unbatched; the rule's batched tangent cannot fit it
    x = fnp.asarray(np.float32(1.5))
    ys = fnp.asarray(np.array([1.0, 2.0, 3.0], np.float32))
    closed = fx.make_jaxpr(fx.vmap(first, in_axes=(None, 0)))(x, ys)
    fx.check_jaxpr(closed)
    with pytest.raises(ValueError, match="custom JVP rule of first returns an output batched"):
        fx.grad(lambda y: fx.eval_jaxpr(closed.jaxpr, closed.consts, x, y)[0].sum())(ys)


def test_custom_jvp_with_collective_inside():
    @fx.custom_jvp
    def centered(x):
        return x - lax.pmean(x, "i")
    centered.defjvp(lambda p, t: (centered(p[0]), t[0]))
    xs = np.array([1.0, 2.0, 6.0], np.float32)
    got = fx.vmap(centered, axis_name="i")(fnp.asarray(xs))
    np.testing.assert_allclose(np.asarray(got), xs - xs.mean(), rtol=1e-6)


# --- custom_vjp ---


@fx.custom_vjp
def clip_gradient(lo, hi, x):
    return x  # the identity, with its gradient clipped to [lo, hi]


def _clip_fwd(lo, hi, x):
    return x, (lo, hi)


def _clip_bwd(res, g):
    lo, hi = res
    return None, None, fnp.clip(g, lo, hi)


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


def _f_clip(lo, hi, x):
    return 3.0 * fnp.sin(clip_gradient(lo, hi, x))


XC = np.array([0.1, 1.0, 2.0, 3.0], np.float32)


@pytest.mark.parametrize("order", ["vmap_of_grad", "grad_of_vmap", "jacrev"])
def test_custom_vjp_clipping_in_both_orders(order):
    lo, hi = fnp.asarray(np.float32(-0.75)), fnp.asarray(np.float32(0.75))
    xs = fnp.asarray(XC)
    f = fx.vmap(_f_clip, in_axes=(None, None, 0))
    if order == "vmap_of_grad":
        got = fx.vmap(fx.grad(_f_clip, argnums=2), in_axes=(None, None, 0))(lo, hi, xs)
    elif order == "grad_of_vmap":
        got = fx.grad(lambda x: f(lo, hi, x).sum())(xs)
    else:
        got = np.diagonal(np.asarray(fx.jacrev(lambda x: f(lo, hi, x))(xs)))
    want = 3.0 * np.clip(np.cos(XC.astype(np.float64)), -0.25, 0.25)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(f(lo, hi, xs)), 3.0 * np.sin(XC), rtol=1e-6)


def test_custom_vjp_batched_residuals():
    # the bounds vary per example: the residuals are batched
    los = np.array([-0.1, -0.5, -1.0, -2.0], np.float32)
    hi = fnp.asarray(np.float32(0.2))
    xs = fnp.asarray(XC)
    want = 3.0 * np.clip(np.cos(XC.astype(np.float64)), los / 3.0, 0.2 / 3.0)
    got = fx.grad(lambda lo, x: fx.vmap(_f_clip, in_axes=(0, None, 0))(lo, hi, x).sum(),
                  argnums=1)(fnp.asarray(los), xs)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    got = fx.vmap(fx.grad(_f_clip, argnums=2), in_axes=(0, None, 0))(fnp.asarray(los), hi, xs)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


@fx.custom_vjp
def mul2(w, x):
    return w * x


mul2.defvjp(lambda w, x: (w * x, (w, x)), lambda r, g: (2.0 * g * r[1], 2.0 * g * r[0]))


@pytest.mark.parametrize("in_axes", [(None, 0), (0, None), (0, 0), (None, 1)])
def test_custom_vjp_shared_input_cotangent_is_summed(in_axes):
    rng = np.random.default_rng(1)
    # per example both are vectors of 2; a shared one is just that vector
    w = rng.standard_normal((2,) if in_axes[0] is None else (2, 2)).astype(np.float32)
    x = rng.standard_normal((2,) if in_axes[1] is None else (2, 2)).astype(np.float32)
    f = fx.vmap(mul2, in_axes=in_axes)
    got = fx.grad(lambda a, b: f(a, b).sum(), argnums=(0, 1))(fnp.asarray(w), fnp.asarray(x))
    # the rule says d/dw = 2 x, d/dx = 2 w per example; a shared argument sums them
    _check_grads_vs_loop(got, fx.grad(lambda a, b: mul2(a, b).sum(), argnums=(0, 1)),
                         (w, x), in_axes)
    if in_axes[0] is None:  # in closed form
        np.testing.assert_allclose(np.asarray(got[0]), 2.0 * x.sum(in_axes[1]), rtol=1e-5)


def test_vmapped_custom_vjp_stays_a_custom_vjp_call():
    closed = fx.make_jaxpr(fx.vmap(mul2, in_axes=(None, 0)))(fnp.asarray(2.0),
                                                             fnp.asarray(XC))
    fx.check_jaxpr(closed)
    assert _jaxpr_prims(closed) == ["custom_vjp_call"]
    g = fx.grad(lambda w: fx.eval_jaxpr(closed.jaxpr, closed.consts, w,
                                        fnp.asarray(XC))[0].sum())(fnp.asarray(2.0))
    np.testing.assert_allclose(np.asarray(g), 2.0 * XC.sum(), rtol=1e-6)


def test_custom_lin_under_vmap_transposes_with_the_custom_bwd():
    # vmap of a linearized custom_vjp function binds custom_lin with a batched tangent;
    # transposing that program must run the custom bwd per example
    from functrax.transforms.transpose import backward_pass
    w = fnp.asarray(np.float32(1.5))
    _, f_lin = fx.linearize(lambda x: mul2(w, x), fnp.asarray(np.float32(0.3)))
    ts = fnp.asarray(np.array([1.0, 2.0, 3.0], np.float32))
    closed = fx.make_jaxpr(fx.vmap(f_lin))(ts)
    fx.check_jaxpr(closed)
    assert "custom_lin" in _jaxpr_prims(closed)
    cts = np.array([1.0, -1.0, 0.5], np.float32)
    (ct,) = backward_pass(closed.jaxpr, closed.consts, [fnp.asarray(cts)])
    np.testing.assert_allclose(np.asarray(ct), 2.0 * 1.5 * cts)  # bwd: 2 * g * w


def test_custom_vjp_fwd_error_for_jvp_still_raised_under_vmap():
    with pytest.raises(TypeError, match="forward-mode"):
        fx.vmap(fx.jacfwd(lambda x: mul2(2.0, x)))(fnp.asarray(XC))


# --- checkpoint (remat2) ---


def _g(x, y):
    return fnp.sin(fnp.sin(x) * y) + x * y


@pytest.mark.parametrize("policy", [None, fx.checkpoint_policies.everything_saveable])
@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 0)])
def test_checkpoint_under_vmap(policy, in_axes):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(3).astype(np.float32)
    y = rng.standard_normal(3).astype(np.float32)
    if in_axes[0] is None:
        x = x[:1].reshape(())
    if in_axes[1] is None:
        y = y[:1].reshape(())
    g_ck = fx.checkpoint(_g, policy=policy)
    f = fx.vmap(g_ck, in_axes=in_axes)
    np.testing.assert_allclose(np.asarray(f(fnp.asarray(x), fnp.asarray(y))),
                               np.asarray(fx.vmap(_g, in_axes=in_axes)(fnp.asarray(x),
                                                                       fnp.asarray(y))),
                               rtol=1e-6)
    closed = fx.make_jaxpr(f)(fnp.asarray(x), fnp.asarray(y))
    fx.check_jaxpr(closed)
    assert "remat2" in _jaxpr_prims(closed)
    args = (fnp.asarray(x), fnp.asarray(y))
    grads_ck = fx.grad(lambda a, b: f(a, b).sum(), argnums=(0, 1))(*args)
    grads = fx.grad(lambda a, b: fx.vmap(_g, in_axes=in_axes)(a, b).sum(), argnums=(0, 1))(*args)
    for a, b in zip(grads_ck, grads):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5)
    per = fx.vmap(fx.grad(g_ck, argnums=(0, 1)), in_axes=in_axes)(*args)
    per_ref = fx.vmap(fx.grad(_g, argnums=(0, 1)), in_axes=in_axes)(*args)
    for a, b in zip(per, per_ref):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5)
