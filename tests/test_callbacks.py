"""functrax.pure_callback and functrax.experimental.io_callback: results, checks of what the
callback returns, vmap_method, differentiation errors, and what the compiler may (pure:
drop unused ones) or may not (io: drop, merge, reorder ordered ones) do with them."""
from __future__ import annotations

import re

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax
from functrax.experimental import io_callback
from functrax.passes.pipeline import optimize

SDS = functrax.ShapeDtypeStruct
F32 = np.float32


def test_pure_callback_eager_jit_and_pytrees():
    def host(a, b, *, scale):
        a, b = np.asarray(a), np.asarray(b)
        return {"sum": (a + b) * scale, "neg": (-a).astype(np.int32)}
    spec = {"sum": SDS((3,), F32), "neg": SDS((3,), np.int32)}
    f = lambda x, y: functrax.pure_callback(host, spec, x, y, scale=2.0)  # noqa: E731
    x, y = fnp.arange(3.0), fnp.ones(3)
    for g in (f, functrax.jit(f)):
        out = g(x, y)
        np.testing.assert_array_equal(np.asarray(out["sum"]), [2.0, 4.0, 6.0])
        assert out["neg"].dtype == np.int32 and out["neg"].tolist() == [0, -1, -2]


def test_pure_callback_gets_arrays_and_may_use_functrax():
    seen = []

    def host(v):
        seen.append(type(v))
        return fnp.sin(v) * 2  # functrax inside the callback runs eagerly
    out = functrax.jit(lambda x: functrax.pure_callback(host, SDS((2,), F32), x))(fnp.ones(2))
    np.testing.assert_allclose(np.asarray(out), 2 * np.sin(np.ones(2, F32)), rtol=1e-6)
    assert seen == [functrax.Array]


def test_pure_callback_result_checks():
    f = functrax.jit(lambda x, cb, sds: functrax.pure_callback(cb, sds, x),
                     static_argnums=(1, 2))
    x = fnp.ones(3)
    with pytest.raises(RuntimeError, match=re.escape(
            "Incorrect output shape for return value #0: Expected: (3,), Actual: (2,)")):
        f(x, lambda v: np.ones(2, F32), SDS((3,), F32))
    with pytest.raises(RuntimeError, match=re.escape(
            "Incorrect output dtype for return value #0: Expected: float32, Actual: int32")):
        f(x, lambda v: np.ones(3, np.int32), SDS((3,), F32))
    with pytest.raises(RuntimeError, match="Mismatched number of outputs from callback. "
                                           "Expected: 2, Actual: 1"):
        f(x, lambda v: [np.ones(3, F32)], (SDS((3,), F32), SDS((3,), F32)))
    # float64 results are canonicalized to float32 (x64 off), as JAX does
    out = f(x, lambda v: np.ones(3), SDS((3,), F32))
    assert out.dtype == np.float32


def test_pure_callback_argument_errors():
    with pytest.raises(ValueError, match="cannot specify 64-bit types when "
                                         "`jax_enable_x64` is disabled"):
        functrax.pure_callback(np.sin, SDS((), np.float64), 1.0)
    with pytest.raises(ValueError, match=r"vmap_method must be on of the allowed methods "
                                         r"\['sequential', .*None\], but got: parallel"):
        functrax.pure_callback(np.sin, SDS((), F32), 1.0, vmap_method="parallel")
    with pytest.raises(ValueError, match="'vectorized' argument of pure_callback was removed"):
        functrax.pure_callback(np.sin, SDS((), F32), 1.0, vectorized=True)
    with pytest.raises(TypeError, match="the callback must be callable"):
        functrax.pure_callback(3, SDS((), F32), 1.0)
    with functrax.enable_x64(True):
        out = functrax.pure_callback(lambda v: np.asarray(v) * 2, SDS((), np.float64),
                                     np.float64(1.5))
        assert out.dtype == np.float64 and float(out) == 3.0


def _recorder(method):
    calls = []

    def host(x, y):
        calls.append((np.shape(x), np.shape(y)))
        return np.asarray(x) + np.asarray(y)

    def f(x, y):
        shape = np.broadcast_shapes(np.shape(x), np.shape(y))
        return functrax.pure_callback(host, SDS(shape, F32), x, y, vmap_method=method)
    return f, calls


@pytest.mark.parametrize("method,want_calls", [
    ("sequential", [((), ())] * 4),
    ("sequential_unrolled", [((), ())] * 4),
    ("expand_dims", [((4,), (1,))]),      # JAX's docstring example
    ("broadcast_all", [((4,), (4,))]),
    ("legacy_vectorized", [((4,), ())]),
])
def test_vmap_methods_follow_jax(method, want_calls):
    f, calls = _recorder(method)
    x = fnp.arange(4.0)
    out = functrax.vmap(f, in_axes=(0, None))(x, 1.0)
    np.testing.assert_array_equal(np.asarray(out), [1.0, 2.0, 3.0, 4.0])
    assert calls == want_calls
    calls.clear()
    functrax.jit(functrax.vmap(f, in_axes=(0, None)))(x, 1.0)
    assert calls == want_calls


def test_vmap_without_method_raises_jax_error():
    f = lambda x: functrax.pure_callback(np.sin, SDS((), F32), x)  # noqa: E731
    with pytest.raises(NotImplementedError, match=re.escape(
            "vmap is only supported for the pure_callback primitive when vmap_method is one "
            "of 'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
            "'legacy_vectorized'. Got vmap_method=None.")):
        functrax.vmap(f)(fnp.ones(2))
    assert float(f(0.0)) == 0.0  # without vmap no method is needed


def test_sequential_vmap_is_a_scan_in_the_jaxpr():
    f = lambda x: functrax.pure_callback(np.sin, SDS((), F32), x,  # noqa: E731
                                         vmap_method="sequential")
    jaxpr = functrax.make_jaxpr(functrax.vmap(f))(fnp.ones(5))
    assert [e.primitive.name for e in jaxpr.eqns] == ["scan"]
    assert jaxpr.eqns[0].params["length"] == 5


def test_pure_callback_is_not_differentiable_but_custom_jvp_is():
    f = lambda x: functrax.pure_callback(np.sin, SDS((), F32), x)  # noqa: E731
    with pytest.raises(ValueError, match=re.escape(
            "Pure callbacks do not support JVP. Please use `functrax.custom_jvp` to use "
            "callbacks while taking gradients.")):
        functrax.grad(f)(1.0)
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
        functrax.jvp(f, (1.0,), (1.0,))

    @functrax.custom_jvp
    def g(x):
        return functrax.pure_callback(lambda v: np.sin(np.asarray(v)), SDS((), F32), x)
    g.defjvp(lambda p, t: (g(p[0]), functrax.pure_callback(
        lambda v: np.cos(np.asarray(v)), SDS((), F32), p[0]) * t[0]))
    np.testing.assert_allclose(float(functrax.grad(g)(1.0)), np.cos(1.0), rtol=1e-6)
    np.testing.assert_allclose(float(functrax.jit(functrax.grad(g))(1.0)), np.cos(1.0),
                               rtol=1e-6)


def test_unused_pure_callback_is_dropped_but_io_callback_is_not():
    calls = []

    def host(v):
        calls.append(float(v))
        return np.asarray(v)

    def f(x):
        functrax.pure_callback(host, SDS((), F32), x)  # result unused: may be dropped
        io_callback(host, SDS((), F32), x + 1)          # effectful: kept
        return x
    functrax.jit(f)(1.0)
    assert calls == [2.0]
    opt = optimize(functrax.make_jaxpr(f)(1.0))
    assert [e.primitive.name for e in opt.eqns] == ["add", "io_callback"]


def test_pure_callback_with_constant_operands_runs_at_run_time():
    calls = []
    f = functrax.jit(lambda: functrax.pure_callback(
        lambda v: calls.append(1) or np.asarray(v) * 2, SDS((), F32), 3.0))
    assert float(f()) == 6.0 and float(f()) == 6.0
    assert calls == [1, 1]  # not folded into a constant at compile time


def test_io_callback_order_and_no_merging():
    log = []

    def host_a(v):
        log.append(("a", float(v)))

    def f(x):
        for i in range(3):  # identical calls are not merged by CSE
            io_callback(host_a, None, x, ordered=True)
        io_callback(lambda v: log.append(("b", float(v))), None, x * 2, ordered=True)
        return x
    functrax.jit(f)(1.0)
    assert log == [("a", 1.0)] * 3 + [("b", 2.0)]
    jaxpr = functrax.make_jaxpr(f)(1.0)
    assert {str(e) for e in jaxpr.effects} == {"OrderedIO"}


def test_io_callback_in_loops_and_under_vmap():
    log = []
    step = lambda c, x: (c + io_callback(  # noqa: E731
        lambda v: log.append(float(v)) or np.asarray(v, F32), SDS((), F32), x), c)
    functrax.jit(lambda xs: lax.scan(step, 0.0, xs))(fnp.arange(3.0))
    assert log == [0.0, 1.0, 2.0]
    log.clear()
    out = functrax.vmap(lambda x: io_callback(
        lambda v: log.append(float(v)) or np.asarray(v, F32) * 2, SDS((), F32), x))(
        fnp.arange(3.0))
    assert log == [0.0, 1.0, 2.0] and out.tolist() == [0.0, 2.0, 4.0]
    with pytest.raises(ValueError, match=re.escape("Cannot `vmap` ordered IO callback.")):
        functrax.vmap(lambda x: io_callback(np.sin, SDS((), F32), x, ordered=True))(
            fnp.ones(2))


def test_io_callback_is_not_differentiable():
    f = lambda x: io_callback(lambda v: np.asarray(v), SDS((), F32), x)  # noqa: E731
    with pytest.raises(ValueError, match=re.escape("IO callbacks do not support JVP.")):
        functrax.grad(f)(1.0)


def test_callback_jaxprs_print_their_params():
    f = lambda x: functrax.pure_callback(np.sin, SDS((3,), F32), x,  # noqa: E731
                                         vmap_method="sequential")
    text = str(functrax.make_jaxpr(f)(fnp.ones(3)))
    assert re.search(r"b:f32\[3\] = pure_callback\[\s*callback=_FlatCallback\(callback_func="
                     r"<ufunc 'sin'>, in_tree=PyTreeDef\(\(\(\*,\), \{\}\)\)\)\s*"
                     r"result_avals=\(ShapedArray\(float32\[3\]\),\)\s*sharding=None\s*"
                     r"vmap_method=sequential\s*\] a", text), text
    g = lambda x: io_callback(np.sin, SDS((3,), F32), x, ordered=True)  # noqa: E731
    text = str(functrax.make_jaxpr(g)(fnp.ones(3)))
    assert "io_callback[" in text and "ordered=True" in text


def test_io_callback_in_a_vmapped_cond_with_batched_predicate_raises():
    def f(p, x):
        return lax.cond(p, lambda v: io_callback(lambda a: np.asarray(a), SDS((), F32), v),
                        lambda v: v, x)
    with pytest.raises(NotImplementedError, match="IO effect not supported in vmap-of-cond."):
        functrax.vmap(f)(fnp.array([True, False]), fnp.ones(2))
    out = functrax.vmap(f, in_axes=(None, 0))(True, fnp.ones(2))  # an unbatched predicate
    assert out.tolist() == [1.0, 1.0]
