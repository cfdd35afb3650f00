"""``jit(f, backend="triton")`` under transformations and inside other jits.

The ``jit`` equation carries ``backend`` as a param (absent for the default backend, so
those jaxprs print as before); every rule of ``jit_p`` (jvp, partial evaluation, transpose,
vmap) binds the transformed jit with the same backend, and the numpy rule runs a
``backend="triton"`` jit through ``compile_triton``. An outer jit without a backend takes the
backend of the jits it calls (the whole program runs fused on it). Results are compared
with the same functions on the numpy backend; traced jaxprs type-check.
"""
from __future__ import annotations

from tests import triton_harness as th  # first: sets TRITON_INTERPRET=1 for triton

import numpy as np

import functrax.numpy as fnp
from functrax import check_jaxpr, grad, jit, jvp, lax, make_jaxpr, vmap
from functrax.lowering.triton.backend import STATS

normal = th.normal_from(np.random.default_rng(0))
X = fnp.asarray(normal(3, 5))
T = fnp.asarray(normal(3, 5))


def f(x):
    """A fused elementwise chain and a row reduction."""
    return fnp.sum(fnp.tanh(x) * x + fnp.exp(-x * x), axis=-1)


def close(got, want, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)


def jit_eqns(jaxpr):
    """The jit equations of ``jaxpr`` (and of the jits inside them)."""
    out = []
    for e in jaxpr.eqns:
        if e.primitive.name == "jit":
            out.append(e)
            out += jit_eqns(e.params["jaxpr"].jaxpr)
    return out


class Programs:
    """Counts Triton programs compiled inside the block."""

    def __enter__(self):
        self.start = STATS["programs"]
        return self

    def __exit__(self, *exc):
        self.count = STATS["programs"] - self.start


def fresh(fn):
    """A new ``jit(fn, backend="triton")`` (its caches empty)."""
    return jit(lambda x: fn(x), backend="triton")


def test_vmap_of_triton_jit():
    jt = fresh(f)
    with Programs() as p:
        got = vmap(jt)(X)
    close(got, vmap(f)(X))
    assert p.count == 1
    closed = make_jaxpr(vmap(jt))(X)
    check_jaxpr(closed)
    assert [e.params.get("backend") for e in jit_eqns(closed.jaxpr)] == ["triton"]
    with Programs() as p:
        close(vmap(jt)(X), got)  # the batched jaxpr and its program are cached
    assert p.count == 0


def test_grad_of_triton_jit():
    jt = fresh(f)
    g = grad(lambda x: fnp.sum(jt(x) ** 2))
    with Programs() as p:
        got = g(X)
    close(got, grad(lambda x: fnp.sum(f(x) ** 2))(X), rtol=1e-4, atol=1e-5)
    assert p.count >= 2  # the known (forward) part and the transposed (backward) part
    closed = make_jaxpr(g)(X)
    check_jaxpr(closed)
    eqns = jit_eqns(closed.jaxpr)
    assert len(eqns) >= 2 and all(e.params.get("backend") == "triton" for e in eqns)
    assert any(e.params["name"].startswith("transpose(") for e in eqns)


def test_jvp_of_triton_jit():
    jt = fresh(f)
    with Programs() as p:
        primal, tangent = jvp(jt, (X,), (T,))
    want_p, want_t = jvp(f, (X,), (T,))
    close(primal, want_p)
    close(tangent, want_t, rtol=1e-4, atol=1e-5)
    assert p.count == 1
    closed = make_jaxpr(lambda x, t: jvp(jt, (x,), (t,)))(X, T)
    check_jaxpr(closed)
    assert [e.params.get("backend") for e in jit_eqns(closed.jaxpr)] == ["triton"]


def test_vmap_of_grad_of_triton_jit():
    jt = fresh(f)
    g = vmap(grad(lambda x: fnp.sum(jt(x))))
    close(g(X), vmap(grad(lambda x: fnp.sum(f(x))))(X), rtol=1e-4, atol=1e-5)
    check_jaxpr(make_jaxpr(g)(X))


def test_jit_of_triton_jit_runs_on_triton():
    jt = fresh(f)
    outer = jit(lambda x: jt(x) * 2.0 + 1.0)
    with Programs() as p:
        got = outer(X)
    close(got, f(X) * 2.0 + 1.0)
    assert p.count == 1  # one fused program for the whole outer jit, not a numpy one
    lowered = outer.lower(X)
    assert "jit" not in {e.primitive.name for e in lowered.jaxpr.eqns}  # inlined
    closed = make_jaxpr(outer)(X)
    check_jaxpr(closed)
    assert [e.params.get("backend") for e in jit_eqns(closed.jaxpr)] == ["triton", "triton"]
    with Programs() as p:
        close(jit(jit(outer))(X), got)  # the backend propagates through every level
    assert p.count == 1


def test_triton_jit_in_a_scan_body():
    jt = fresh(lambda c: fnp.tanh(c) * 0.9 + 0.1)

    def loop(x):
        return lax.scan(lambda c, _: (jt(c), fnp.sum(c)), x, None, length=3)

    # correct results; (the scan's numpy rule inlines call-likes of its body, so the body
    # runs on numpy: control flow is a numpy fallback of the Triton backend anyway)
    got = jit(loop)(X)
    want = lax.scan(lambda c, _: (fnp.tanh(c) * 0.9 + 0.1, fnp.sum(c)), X, None, length=3)
    for g, w in zip(got, want):
        close(g, w)
    check_jaxpr(make_jaxpr(loop)(X))


def test_default_backend_params_and_printing_unchanged():
    closed = make_jaxpr(jit(f))(X)
    (eqn,) = jit_eqns(closed.jaxpr)
    assert set(eqn.params) == {"jaxpr", "name"}
    assert "backend" not in str(closed)
    closed = make_jaxpr(grad(lambda x: fnp.sum(jit(f)(x))))(X)
    assert all("backend" not in e.params for e in jit_eqns(closed.jaxpr))
    text = str(make_jaxpr(fresh(f))(X))
    assert "backend=triton" in text


def test_numpy_backend_jit_keeps_numpy():
    jn = jit(lambda x: f(x), backend="numpy")
    with Programs() as p:
        close(vmap(jn)(X), vmap(f)(X))
        close(jit(jn)(X), f(X))
    assert p.count == 0
