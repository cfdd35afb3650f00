"""Differentiation INSIDE a shard_map body follows JAX 0.10's ``check_vma`` rules: values are
typed by the manual mesh axes they vary over, ``psum`` of a varying value transposes to
``pvary`` (every device keeps the cotangent of the sum), an operand that is the same on every
device meets a varying one through ``pvary`` (whose transpose is ``psum``), loop carries that
the body makes varying are varying from the start; ``check_vma=False`` keeps the older rules
(``psum`` transposes to ``psum``). Checked against gradients of the global computation."""
from __future__ import annotations

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import P, grad, jit, lax, make_jaxpr, shard_map, value_and_grad
from tests.virtual_devices import cpu_devices

RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True, scope="module")
def eight_devices():
    with cpu_devices(8):
        yield


@pytest.fixture(scope="module")
def mesh(eight_devices):
    return functrax.make_mesh((2, 4), ("data", "model"))


def _rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def test_grad_of_psum_inside_the_body_is_one_per_device(mesh):
    x = _rand(2, 8)
    body = lambda b: grad(lambda v: lax.psum(v, "model").sum())(b)  # noqa: E731
    typed = shard_map(body, mesh=mesh, in_specs=P("data", "model"),
                      out_specs=P("data", "model"))
    _close(typed(x), np.ones_like(x))  # JAX 0.10: the cotangent of the sum, as it is
    untyped = shard_map(body, mesh=mesh, in_specs=P("data", "model"),
                        out_specs=P("data", "model"), check_vma=False)
    _close(untyped(x), 4 * np.ones_like(x))  # check_vma=False: psum transposes to psum
    text = str(make_jaxpr(typed)(x))
    assert "pvary[axes=('model',)" in text


def _mlp_global(params, x, y):
    h = fnp.tanh(x @ params["w1"] + params["b1"])
    return fnp.mean((h @ params["w2"] + params["b2"] - y) ** 2)


def _params():
    return {"w1": _rand(6, 8), "b1": _rand(8), "w2": _rand(8, 3), "b2": _rand(3)}


SPECS = {"w1": P(None, "model"), "b1": P("model"), "w2": P("model", None), "b2": P()}


def _mlp_local(params, x, y):
    """Megatron: columns of w1 and rows of w2 over "model", one psum; the batch over
    "data", the loss the mean over the global batch (pmean of local means)."""
    h = fnp.tanh(x @ params["w1"] + params["b1"])
    out = lax.psum(h @ params["w2"], "model") + params["b2"]
    return lax.pmean(fnp.mean((out - y) ** 2), "data")


def test_tensor_parallel_gradient_inside_the_body_equals_the_global_one(mesh):
    params, x, y = _params(), _rand(8, 6), _rand(8, 3)
    want_loss, want = value_and_grad(_mlp_global)(params, x, y)

    @jit
    def step(params, x, y):
        return shard_map(value_and_grad(_mlp_local), mesh=mesh,
                         in_specs=(SPECS, P("data"), P("data")),
                         out_specs=(P(), SPECS))(params, x, y)

    loss, grads = step(params, x, y)
    _close(loss, want_loss)
    for k in params:  # b2 (replicated) comes back summed over "data" already, as JAX's
        _close(grads[k], want[k])


def test_replicated_parameters_get_summed_gradients_and_pvary_keeps_them_local(mesh):
    w, x = _rand(5, 2), _rand(8, 5)
    local = lambda w, x: fnp.sum(fnp.sin(x @ w))  # noqa: E731

    def body(w, x):
        summed = grad(local)(w, x)  # w is the same everywhere: its gradient is summed
        own = grad(local)(lax.pvary(w, ("data", "model")), x)  # this device's own
        return summed, own[None, None]

    summed, own = shard_map(body, mesh=mesh, in_specs=(P(), P(("data", "model"))),
                            out_specs=(P(), P("data", "model")))(w, x)
    _close(summed, grad(local)(w, x))
    for d in range(8):
        _close(own[d // 4, d % 4], grad(local)(w, x[d:d + 1]))


def test_scan_carry_made_varying_by_its_body(mesh):
    xs, w = _rand(3, 4), _rand(4)

    def local(w, xs):  # the carry starts the same on every device, the body makes it vary
        def step(c, x):
            c = fnp.tanh(c * w + x * lax.axis_index("model"))
            return c, c.sum()
        c, ys = lax.scan(step, fnp.zeros(4), xs)
        return lax.psum(c.sum() + ys.sum(), "model")

    def reference(w, xs):
        total = 0.0
        for m in range(4):
            c = np.zeros(4, np.float32)
            for x in xs:
                c = fnp.tanh(c * w + x * m)
                total = total + c.sum()
            total = total + c.sum()
        return total

    f = shard_map(lambda w, xs: value_and_grad(local)(w, xs), mesh=mesh,
                  in_specs=(P(), P()), out_specs=(P(), P()))
    value, g = f(w, xs)
    want_value, want = value_and_grad(reference)(w, xs)
    _close(value, want_value, 1e-4)
    _close(g, want, 1e-4)
    # the same gradient taken outside the shard_map
    outside = grad(shard_map(local, mesh=mesh, in_specs=(P(), P()), out_specs=P()))(w, xs)
    _close(outside, want, 1e-4)


@pytest.mark.parametrize("check_vma", [True, False])
def test_gradient_outside_is_the_global_one_either_way(mesh, check_vma):
    params, x, y = _params(), _rand(8, 6), _rand(8, 3)
    loss = shard_map(_mlp_local, mesh=mesh, in_specs=(SPECS, P("data"), P("data")),
                     out_specs=P(), check_vma=check_vma)
    got = jit(grad(loss))(params, x, y)
    want = grad(_mlp_global)(params, x, y)
    for k in params:
        _close(got[k], want[k])


def test_pvary_outside_a_typed_body_is_the_identity():
    x = fnp.arange(3.0)
    assert lax.pvary(x, "i") is x


def test_jit_inside_the_body_traces_again_for_another_variance(mesh):
    x, w = _rand(2, 3), _rand(3)
    total = jit(lambda a: lax.psum(a, "data").sum())

    def body(x, w):  # the same shapes: x varies over "data", w is the same everywhere
        gx = grad(total)(x[0])  # d/dx of a sum over devices: 1
        gw = grad(total)(w)     # psum of an invariant value is 2 * w: 2
        return gx[None], gw

    gx, gw = shard_map(body, mesh=mesh, in_specs=(P("data"), P()),
                       out_specs=(P("data"), P()))(x, w)
    _close(gx, np.ones_like(x))
    _close(gw, 2 * np.ones_like(w))


def test_literals_stay_inline_and_get_no_pvary(mesh):
    f = shard_map(lambda x: fnp.sin(x) * 2.0 + 1, mesh=mesh, in_specs=P(("data", "model")),
                  out_specs=P(("data", "model")))
    text = str(make_jaxpr(f)(fnp.ones(8)))
    assert "pvary" not in text and "mul d 2.0:f32[]" in text, text
    _close(f(fnp.ones(8)), np.sin(np.ones(8)) * 2 + 1)
