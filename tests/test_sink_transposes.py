"""``passes/sink_transposes.py``: ``transpose(add(p, q))`` of single-use products becomes a
sum of swapped products (no transposed copy), and nothing changes where a value is read
elsewhere; results equal numpy's in every case."""
from __future__ import annotations

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import jit, lax
from functrax.passes.pipeline import optimize
from functrax.passes.sink_transposes import sink_transposes


def _prims(f, *args):
    return [e.primitive.name for e in optimize(functrax.make_jaxpr(f)(*args)).eqns]


def _args(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=s).astype(np.float32) for s in shapes]


@pytest.mark.parametrize("op", [fnp.add, fnp.subtract])
def test_transpose_of_a_sum_of_products_becomes_swapped_products(op):
    a, b, c, d = _args((3, 5), (5, 4), (3, 6), (6, 4))
    f = lambda a, b, c, d: op(a @ b, c @ d).T  # noqa: E731
    assert _prims(f, a, b, c, d) == ["dot_general", "dot_general", op.__name__[:3]]
    np.testing.assert_allclose(np.asarray(jit(f)(a, b, c, d)), op(a @ b, c @ d).T, rtol=1e-5)


def test_values_read_elsewhere_keep_the_transpose():
    a, b, c, d = _args((3, 5), (5, 4), (3, 6), (6, 4))

    def shared_sum(a, b, c, d):
        s = a @ b + c @ d
        return s.T, s

    def shared_product(a, b, c, d):
        p = a @ b
        return (p + c @ d).T, p

    for f in (shared_sum, shared_product):
        assert "transpose" in _prims(f, a, b, c, d)
        got = jit(f)(a, b, c, d)
        want = f(*[np.asarray(x) for x in (a, b, c, d)])
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5)


def test_scan_bodies_are_left_alone_and_unchanged_jaxprs_are_returned_as_is():
    """simplify does not enter bodies, so there the new transposes would not fold: the body
    keeps its one transpose."""
    w, xs = _args((4, 4), (3, 4, 4))

    def f(w, xs):
        return lax.scan(lambda c, x: (c, (x @ w + w @ x).T), 0.0, xs)[1]
    closed = functrax.make_jaxpr(f)(w, xs)
    body = [e for e in optimize(closed).eqns if e.primitive.name == "scan"][0].params["jaxpr"]
    assert [e.primitive.name for e in body.jaxpr.eqns].count("transpose") == 1
    want = np.stack([(x @ w + w @ x).T for x in xs])
    np.testing.assert_allclose(np.asarray(jit(f)(w, xs)), want, rtol=1e-5)
    plain = functrax.make_jaxpr(lambda x: fnp.sin(x).T)(w).jaxpr
    assert sink_transposes(plain) is plain


def test_hvp_of_an_mlp_has_no_transposed_weight_gradient():
    params = _args((8, 16), (16, 16), (16, 3), seed=1)
    x, = _args((5, 8), seed=2)

    def loss(p):
        h = fnp.tanh(x @ p[0])
        h = fnp.tanh(h @ p[1])
        return fnp.sum((h @ p[2]) ** 2)

    def hvp(p, v):
        return functrax.jvp(functrax.grad(loss), (p,), (v,))[1]
    names = _prims(hvp, params, params)
    big = [e for e in optimize(functrax.make_jaxpr(hvp)(params, params)).eqns
           if e.primitive.name == "transpose" and e.outvars[0].aval.shape == (16, 16)]
    assert not big, names
    got = jit(hvp)(params, params)
    want = jit(hvp, backend="numpy")(params, params)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5)
