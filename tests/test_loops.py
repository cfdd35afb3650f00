"""while_loop / fori_loop: eager against Python loops, the ``while`` primitive's jaxprs
(printed as JAX prints them, type-checked), jvp, linearize, reverse mode (fori_loop with
static bounds, ``max_steps``; JAX's error for an unbounded loop), vmap (lanes finishing at
different iterations, batched consts only, batch axes not at 0), jit and compositions, and
the error texts."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import functrax
import functrax.numpy as fnp
from functrax import check_jaxpr, grad, jit, jvp, lax, linearize, make_jaxpr, vmap
from functrax.control_flow.loops_rules import REVERSE_MODE_ERROR
from functrax.test_util import check_grads
from functrax.tree_util import tree_flatten
from tests.test_printer import JAX_TEXT

RNG = np.random.RandomState(0)


def f32(*xs):
    return np.asarray(xs if len(xs) != 1 else xs[0], np.float32)


def close(a, b, rtol=1e-5, atol=1e-6):
    if type(b) is list and type(a) is not list:
        b = np.asarray(b)
    fa, ta = tree_flatten(a)
    fb, tb = tree_flatten(b)
    assert ta == tb, (ta, tb)
    for x, y in zip(fa, fb):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


def py_while(cond, body, val):
    while cond(val):
        val = body(val)
    return val


def checked_jaxpr(fn, *args):
    """make_jaxpr + check_jaxpr + eval_jaxpr equals calling ``fn``."""
    closed = make_jaxpr(fn)(*args)
    check_jaxpr(closed)
    out = functrax.eval_jaxpr(closed.jaxpr, closed.consts, *tree_flatten(args)[0])
    close(out, tree_flatten(fn(*args))[0])
    return closed


def prims(closed):
    """Names of the primitives of ``closed`` and of its sub-jaxprs (recursively)."""
    from functrax.core import sub_jaxprs
    out = []

    def walk(j):
        for e in j.eqns:
            out.append(e.primitive.name)
            for sub in sub_jaxprs(e.params):
                walk(sub)
    walk(closed.jaxpr)
    return out


# a loop used by many tests: grow x until it passes 10, counting the steps
def grow_cond(c):
    return c[1] < 10.0


def grow_body(c):
    return c[0] + 1, c[1] * 1.5 + 0.1


def grow(x):
    return lax.while_loop(grow_cond, grow_body, (0, x))


def grow_ref(x):
    return py_while(lambda c: c[1] < 10.0, lambda c: (c[0] + 1, np.float32(c[1] * 1.5 + 0.1)),
                    (0, np.float32(x)))


# --- eager semantics ---


def test_while_pytree_carry_matches_python_loop():
    w0 = RNG.randn(3).astype(np.float32)

    def body(c):
        return {"n": c["n"] + 1, "w": (c["w"][0] * 0.5 + 1.0, c["w"][1] + c["n"])}

    init = {"n": 0, "w": (w0, np.float32(2.0))}
    out = lax.while_loop(lambda c: c["n"] < 5, body, init)
    ref = py_while(lambda c: c["n"] < 5, lambda c: {
        "n": c["n"] + 1, "w": (np.float32(0.5) * c["w"][0] + np.float32(1.0),
                               np.float32(c["w"][1] + c["n"]))}, init)
    close(out, ref)
    assert out["w"][0].dtype == np.float32 and out["n"].dtype == np.int32


def test_while_zero_iterations_returns_init():
    out = lax.while_loop(lambda x: x > 100.0, lambda x: x * 2.0, fnp.float32(3.0))
    assert float(out) == 3.0


def test_while_grow_matches_reference():
    for x in (0.5, 2.0, 9.0, 11.0):
        close(grow(np.float32(x)), grow_ref(x))


def test_while_weak_init_is_promoted_to_body_type():
    # a Python int carry that the body turns into a float is promoted (as JAX does)
    out = lax.while_loop(lambda x: x < 3, lambda x: x + 0.5, 0)
    assert float(out) == 3.0 and out.dtype == np.float32


def test_while_closes_over_arrays():
    a = np.arange(3, dtype=np.float32)
    b = fnp.asarray(np.full(3, 2.0, np.float32))

    def f(x):
        return lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * b + a), (0, x))

    x = f32(1.0, -1.0, 0.5)
    ref = x
    for _ in range(4):
        ref = ref * 2.0 + a
    close(f(x)[1], ref)
    closed = checked_jaxpr(f, x)
    eqn = closed.jaxpr.eqns[-1]
    assert eqn.primitive.name == "while"
    assert eqn.params["body_nconsts"] == 2 and eqn.params["cond_nconsts"] == 0


def test_while_closes_over_outer_tracers():
    # the closed-over ``s`` is a tracer of jit / jvp / vmap: hoisted as a const operand
    def f(s):
        return lax.while_loop(lambda c: c < 5.0 * s, lambda c: c + s, 0.0)

    assert float(jit(f)(2.0)) == 10.0
    y, t = jvp(f, (1.0,), (1.0,))
    assert float(y) == 5.0 and float(t) == 5.0
    close(vmap(f)(f32(1.0, 2.0, 0.5)), f32(5.0, 10.0, 2.5))
    closed = checked_jaxpr(f, 2.0)
    eqn = closed.jaxpr.eqns[0]
    assert eqn.params["cond_nconsts"] == 1 and eqn.params["body_nconsts"] == 1


def test_nested_while():
    def f(x):
        def body(c):
            i, v = c
            v = lax.while_loop(lambda u: u < 2.0 * (i + 1), lambda u: u + 0.75, v)
            return i + 1, v
        return lax.while_loop(lambda c: c[0] < 3, body, (0, x))[1]

    def ref(x):
        for i in range(3):
            while x < 2.0 * (i + 1):
                x = x + 0.75
        return x

    for x in (0.0, 1.0, 7.0):
        close(f(np.float32(x)), ref(x))
    xs = f32(0.0, 1.0, 7.0, 4.9)
    close(vmap(f)(xs), [ref(float(x)) for x in xs])
    checked_jaxpr(vmap(f), xs)
    _, t = jvp(f, (np.float32(1.0),), (np.float32(1.0),))
    assert float(t) == 1.0


def test_disable_jit_runs_a_python_loop_and_falls_back_under_vmap():
    calls = []

    def body(x):
        calls.append(type(x).__name__)
        return x * 2.0

    with functrax.disable_jit():
        out = lax.while_loop(lambda x: x < 10.0, body, fnp.float32(1.0))
        assert float(out) == 16.0 and calls == ["Array"] * 4
        out = vmap(lambda x: lax.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, x))(
            f32(1.0, 3.0))
    close(out, f32(16.0, 12.0))


# --- printing and jaxprs ---

FORI_JAX_TEXT = """\
{ lambda ; a:i32[] b:f32[]. let
    _:i32[] _:i32[] c:f32[] = while[
      body_jaxpr={ lambda ; d:i32[] e:i32[] f:f32[]. let
          g:i32[] = add d 1:i32[]
          h:f32[] = mul f 2.0:f32[]
        in (g, e, h) }
      body_nconsts=0
      cond_jaxpr={ lambda ; i:i32[] j:i32[] k:f32[]. let
          l:bool[] = lt i j
        in (l,) }
      cond_nconsts=0
    ] 0:i32[] a b
  in (c,) }"""


def test_fori_traced_bounds_prints_as_jax():
    # JAX's text: the "=== fori" entry of ../shared/vectors/jax_jaxprs.md (copied above for
    # checkouts without it)
    expected = JAX_TEXT.get("fori", FORI_JAX_TEXT)
    assert expected == FORI_JAX_TEXT
    closed = make_jaxpr(lambda n, x: lax.fori_loop(0, n, lambda i, v: v * 2., x))(3, 1.)
    check_jaxpr(closed)
    assert str(closed) == expected


def test_fori_static_bounds_is_a_scan():
    closed = checked_jaxpr(lambda x: lax.fori_loop(0, 3, lambda i, v: v * 2.0, x), 1.0)
    assert "scan" in prims(closed) and "while" not in prims(closed)


def test_fori_matches_python_loop():
    def body(i, x):
        return x * 0.5 + i

    def ref(lo, hi, x):
        for i in range(lo, hi):
            x = x * 0.5 + i
        return x

    for lo, hi in ((0, 5), (2, 7), (3, 3), (5, 2)):
        close(lax.fori_loop(lo, hi, body, np.float32(1.0)), ref(lo, hi, 1.0))
        traced = jit(lambda a, b, x: lax.fori_loop(a, b, body, x))
        close(traced(lo, hi, np.float32(1.0)), ref(lo, hi, 1.0))
        assert "while" in prims(make_jaxpr(traced)(lo, hi, np.float32(1.0)))


def test_fori_index_dtype_follows_the_typed_bound():
    closed = make_jaxpr(lambda n: lax.fori_loop(0, n, lambda i, v: v + i, fnp.int8(0)))(
        fnp.int8(3))
    check_jaxpr(closed)
    body = closed.jaxpr.eqns[-1].params["body_jaxpr"]
    assert body.in_avals[0].dtype == np.int8
    assert int(jit(lambda n: lax.fori_loop(0, n, lambda i, v: v + i, fnp.int8(0)))(
        fnp.int8(4))) == 6


# --- forward mode ---


def test_jvp_of_while_matches_analytic():
    def f(x):
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, fnp.sin(c[1])),
                              (0, x))[1]

    x, d = 1.0, 1.0
    for _ in range(3):
        d *= np.cos(x)
        x = np.sin(x)
    y, t = jvp(f, (np.float32(1.0),), (np.float32(1.0),))
    close(y, x)
    close(t, d)
    closed = checked_jaxpr(lambda x, t: jvp(f, (x,), (t,)), np.float32(1.0), np.float32(1.0))
    eqn = [e for e in closed.jaxpr.eqns if e.primitive.name == "while"][0]
    assert len(eqn.outvars) == 3  # counter, value, tangent of the value


def test_jvp_tangent_enters_through_a_closed_over_const():
    # the carry starts with a zero tangent; the body makes it nonzero (fixed point)
    def f(s):
        return lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * s), (0, 1.0))[1]

    y, t = jvp(f, (np.float32(1.5),), (np.float32(1.0),))
    close(y, 1.5 ** 4)
    close(t, 4 * 1.5 ** 3)
    checked_jaxpr(lambda s: jvp(f, (s,), (np.float32(1.0),)), np.float32(1.5))


def test_jvp_check_grads_fwd():
    def f(x, y):
        return lax.while_loop(lambda c: c[0] < 3,
                              lambda c: (c[0] + 1, fnp.sin(c[1]) * y + c[2], c[2] * 0.5),
                              (0, x, y))[1:]

    check_grads(f, (np.float64(0.7), np.float64(1.3)), order=2, modes="fwd")


def test_linearize_of_while_has_known_primal_outputs():
    def f(x):
        return grow(x)[1]

    y, f_lin = linearize(f, np.float32(0.5))
    close(y, grow_ref(0.5)[1])
    n = grow_ref(0.5)[0]
    close(f_lin(np.float32(1.0)), 1.5 ** n, rtol=1e-5)
    assert isinstance(y, functrax.Array)


def test_linearize_with_condition_on_a_closed_over_value():
    def f(s):
        return lax.while_loop(lambda c: c < 5.0 * s, lambda c: c + s, 0.0)

    y, f_lin = linearize(f, np.float32(2.0))
    assert float(y) == 10.0 and float(f_lin(np.float32(1.0))) == 5.0


def test_linearize_with_an_unknown_const_that_no_carry_depends_on():
    # ``s`` enters the body (its tangent is an operand) but only through a comparison
    def f(x, s):
        return lax.while_loop(lambda c: c[0] < 3,
                              lambda c: (c[0] + 1, lax.select(s > 0, c[1] * 2.0, c[1])),
                              (0, x))[1]

    y, f_lin = linearize(f, np.float32(1.0), np.float32(1.0))
    assert float(y) == 8.0
    assert float(f_lin(np.float32(1.0), np.float32(1.0))) == 8.0
    assert float(f_lin(np.float32(0.0), np.float32(1.0))) == 0.0


# --- reverse mode ---


def test_grad_of_while_raises_jax_error():
    with pytest.raises(ValueError, match=re.escape(REVERSE_MODE_ERROR)):
        grad(lambda x: grow(x)[1])(np.float32(0.5))
    with pytest.raises(ValueError, match=re.escape(REVERSE_MODE_ERROR)):
        fori = jit(lambda x, n: lax.fori_loop(0, n, lambda i, v: v * x, 1.0))
        grad(lambda x: fori(x, 3))(np.float32(2.0))
    assert REVERSE_MODE_ERROR == (
        "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop "
        "with dynamic start/stop values. Try using lax.scan, or using fori_loop with static "
        "start/stop.")


def test_grad_of_fori_static_bounds():
    def f(x, w):
        return lax.fori_loop(0, 4, lambda i, v: fnp.tanh(v * w + i * 0.1), x)

    check_grads(f, (np.float64(0.3), np.float64(0.9)), order=2)
    # bounds given as concrete arrays are static too
    g = grad(lambda x: lax.fori_loop(fnp.int32(1), fnp.int32(4), lambda i, v: v * v, x))
    close(g(np.float32(1.1)), 8 * 1.1 ** 7, rtol=1e-5)


def _unrolled(cond, body, x):
    """A Python loop over concrete values: differentiable by ``grad`` as a straight line."""
    val = x
    while bool(cond(val)):
        val = body(val)
    return val


def test_max_steps_equals_unbounded_loop_and_has_a_gradient():
    def bounded(x):
        return lax.while_loop(grow_cond, grow_body, (0, x), max_steps=20)

    for x in (0.5, 2.0, 11.0):
        close(bounded(np.float32(x)), grow(np.float32(x)))
    g = grad(lambda x: bounded(x)[1])(np.float32(0.5))
    g_ref = grad(lambda x: _unrolled(grow_cond, grow_body, (0, x))[1])(np.float32(0.5))
    close(g, g_ref)
    check_grads(lambda x: bounded(x)[1], (np.float64(0.5),), order=2, modes="rev")
    closed = checked_jaxpr(grad(lambda x: bounded(x)[1]), np.float32(0.5))
    assert "while" not in prims(closed) and "scan" in prims(closed)


def test_max_steps_stops_after_n_steps():
    out = lax.while_loop(lambda x: x < 1e6, lambda x: x * 2.0, fnp.float32(1.0), max_steps=5)
    assert float(out) == 32.0
    out = lax.while_loop(lambda x: x < 1e6, lambda x: x * 2.0, fnp.float32(1.0), max_steps=0)
    assert float(out) == 1.0


def test_max_steps_pytree_closure_and_checkpointed_body():
    w = fnp.asarray(f32(0.9, 1.1))

    def body(c):
        return {"x": fnp.sin(c["x"]) * w + 0.5, "k": c["k"] + 1}

    def cond(c):
        return c["k"] < 3

    def f(x, body=body):
        return fnp.sum(lax.while_loop(cond, body, {"x": x, "k": 0}, max_steps=6)["x"])

    x = f32(0.2, -0.4)
    g_ref = grad(lambda x: fnp.sum(_unrolled(cond, body, {"x": x, "k": 0})["x"]))(x)
    close(grad(f)(x), g_ref)
    close(grad(lambda x: f(x, functrax.checkpoint(body)))(x), g_ref)
    close(vmap(grad(f))(np.stack([x, x * 2])),
          np.stack([g_ref, grad(lambda x: fnp.sum(_unrolled(cond, body, {"x": x, "k": 0})[
              "x"]))(x * 2)]))


def test_max_steps_checkpointed_body_stores_fewer_residuals():
    def body(c):
        return c[0] + 1, fnp.sin(fnp.sin(fnp.sin(c[1]))) * 1.1

    def f(x, b):
        return fnp.sum(lax.while_loop(lambda c: c[0] < 5, b, (0, x), max_steps=8)[1])

    def stacked_residuals(b):
        closed = checked_jaxpr(grad(lambda x: f(x, b)), np.ones(3, np.float32))
        fwd = [e for e in closed.jaxpr.eqns if e.primitive.name == "scan"][0]
        return [v.aval.shape for v in fwd.outvars if v.aval.shape == (8, 3)]

    assert len(stacked_residuals(functrax.checkpoint(body))) < len(stacked_residuals(body))
    x = np.ones(3, np.float32)
    close(grad(lambda x: f(x, functrax.checkpoint(body)))(x), grad(lambda x: f(x, body))(x))


# --- vmap ---


def test_vmap_lanes_finish_at_different_iterations():
    xs = f32(0.5, 2.0, 9.0, 11.0, 0.01)
    out = vmap(grow)(xs)
    refs = [grow_ref(float(x)) for x in xs]
    close(out, (np.array([r[0] for r in refs]), f32(*[r[1] for r in refs])))
    assert len(set(int(n) for n in out[0])) > 2
    closed = checked_jaxpr(vmap(grow), xs)
    assert "reduce_or" in prims(closed) and "select_n" in prims(closed)


def test_vmap_batch_axis_not_at_zero_and_pytree_carry():
    x = RNG.rand(3, 4).astype(np.float32) * 4

    def f(x, lim):
        return lax.while_loop(lambda c: fnp.sum(c["v"]) < lim,
                              lambda c: {"v": c["v"] * 1.5 + 0.25, "n": c["n"] + 1},
                              {"v": x, "n": 0})

    lims = f32(10.0, 30.0, 5.0, 50.0)
    out = vmap(f, in_axes=(1, 0))(x, lims)
    for j in range(4):
        v, n = x[:, j], 0
        while v.sum() < lims[j]:
            v, n = np.float32(1.5) * v + np.float32(0.25), n + 1
        close(out["v"][j], v, rtol=1e-5)
        assert int(out["n"][j]) == n
    checked_jaxpr(vmap(f, in_axes=(1, 0)), x, lims)


def test_vmap_batched_consts_and_init_only_keep_an_unbatched_predicate():
    a = f32(1.0, 2.0, 3.0)

    def f(a, x0):
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * a), (0, x0))

    out = vmap(f, in_axes=(0, None))(a, fnp.ones(2))
    close(out[1], np.stack([np.full(2, v ** 3, np.float32) for v in a]))
    assert [int(n) for n in out[0]] == [3, 3, 3]
    closed = checked_jaxpr(vmap(f, in_axes=(0, None)), a, fnp.ones(2))
    assert "reduce_or" not in prims(closed)
    eqn = [e for e in closed.jaxpr.eqns if e.primitive.name == "while"][0]
    assert eqn.outvars[0].aval.shape == ()  # the counter stays unbatched
    # only the initial value batched
    out = vmap(lambda x0: f(np.float32(2.0), x0))(np.ones((3, 2), np.float32) * a[:, None])
    close(out[1], np.ones((3, 2)) * a[:, None] * 8)


def test_vmap_predicate_batched_through_a_cond_const():
    def f(lim):
        return lax.while_loop(lambda c: c[1] < lim, lambda c: (c[0] + 1, c[1] + 1.0), (0, 0.0))

    lims = f32(2.0, 5.0, 0.0)
    out = vmap(f)(lims)
    assert [int(n) for n in out[0]] == [2, 5, 0]
    close(out[1], f32(2.0, 5.0, 0.0))


@settings(max_examples=15, deadline=None)
@given(st.lists(st.floats(0.0, 20.0, width=32), min_size=1, max_size=5),
       st.floats(0.5, 3.0, width=32))
def test_vmap_random_lanes_against_python_loops(xs, step):
    def f(x, s):
        return lax.while_loop(lambda c: c[1] < 15.0, lambda c: (c[0] + 1, c[1] + s), (0, x))

    xs = np.asarray(xs, np.float32)
    out = vmap(f, in_axes=(0, None))(xs, np.float32(step))
    for x, n, v in zip(xs, *map(np.asarray, out)):
        rn, rv = py_while(lambda c: c[1] < 15.0, lambda c: (c[0] + 1, np.float32(c[1] + step)),
                          (0, x))
        assert n == rn and v == rv


def test_vmap_of_jvp_and_jvp_of_vmap():
    xs = f32(0.5, 2.0, 11.0)

    def f(x):
        return grow(x)[1]

    tangents = vmap(lambda x: jvp(f, (x,), (np.float32(1.0),))[1])(xs)
    ns = [grow_ref(float(x))[0] for x in xs]
    close(tangents, f32(*[1.5 ** n for n in ns]))
    _, t = jvp(vmap(f), (xs,), (np.ones(3, np.float32),))
    close(t, tangents)
    checked_jaxpr(lambda xs: jvp(vmap(f), (xs,), (fnp.ones(3),)), xs)


# --- jit and compositions ---


def test_jit_while_and_compositions():
    xs = f32(0.5, 2.0, 9.0, 11.0)
    ref = vmap(grow)(xs)
    close(jit(vmap(grow))(xs), ref)
    close(vmap(jit(grow))(xs), ref)
    close(jit(grow)(np.float32(0.5)), grow(np.float32(0.5)))
    close(jit(grow)(np.float32(2.0)), grow_ref(2.0))  # cached executable, new value
    y, t = jvp(jit(lambda x: grow(x)[1]), (np.float32(0.5),), (np.float32(1.0),))
    close(t, 1.5 ** grow_ref(0.5)[0])
    y2, t2 = jit(lambda x: jvp(lambda x: grow(x)[1], (x,), (np.float32(1.0),)))(np.float32(0.5))
    close((y2, t2), (y, t))
    checked_jaxpr(jit(vmap(grow)), xs)
    checked_jaxpr(vmap(jit(grow)), xs)
    checked_jaxpr(lambda x: jvp(jit(lambda x: grow(x)[1]), (x,), (np.float32(1.0),)),
                  np.float32(0.5))


def test_fori_traced_bounds_under_jit_and_vmap():
    def f(n, x):
        return lax.fori_loop(0, n, lambda i, v: v * 2.0 + i, x)

    def ref(n, x):
        for i in range(n):
            x = x * 2.0 + i
        return x

    close(jit(f)(3, np.float32(1.0)), ref(3, 1.0))
    ns = np.array([0, 1, 4, 2], np.int32)
    close(vmap(f)(ns, f32(1.0, 1.0, 1.0, 0.5)), [ref(int(n), x) for n, x in
                                                 zip(ns, (1.0, 1.0, 1.0, 0.5))])
    close(jit(vmap(f, in_axes=(0, None)))(ns, np.float32(1.0)),
          [ref(int(n), 1.0) for n in ns])
    _, t = jvp(lambda x: jit(f)(3, x), (np.float32(1.0),), (np.float32(1.0),))
    close(t, 8.0)


def test_grad_of_fori_static_bounds_under_jit_and_vmap():
    def f(x):
        return lax.fori_loop(0, 3, lambda i, v: fnp.sin(v) + v * 0.5, x)

    xs = f32(0.1, 0.7, -1.2)
    g = vmap(grad(f))(xs)
    close(jit(vmap(grad(f)))(xs), g)
    close(g, [grad(lambda x: _unrolled(lambda c: c[0] < 3,
                                       lambda c: (c[0] + 1, fnp.sin(c[1]) + c[1] * 0.5),
                                       (0, x))[1])(x) for x in xs])


# --- errors ---


def test_cond_must_return_a_boolean_scalar():
    with pytest.raises(TypeError, match=re.escape(
            "cond_fun must return a boolean scalar, but got output type(s) "
            "[ShapedArray(float32[])].")):
        lax.while_loop(lambda c: fnp.float32(1.0), lambda c: c, fnp.float32(0.0))
    with pytest.raises(TypeError, match=re.escape(
            "cond_fun must return a boolean scalar, but got output type(s) "
            "[ShapedArray(bool[3])].")):
        lax.while_loop(lambda c: c > 0, lambda c: c, fnp.zeros(3))
    with pytest.raises(TypeError, match=re.escape(
            "cond_fun must return a boolean scalar, but got pytree PyTreeDef((*, *)).")):
        lax.while_loop(lambda c: (True, True), lambda c: c, 0.0)


def test_body_carry_type_errors_name_the_path_and_types():
    with pytest.raises(TypeError, match=re.escape(
            "body_fun output and input must have same type structure, got PyTreeDef((*, *)) "
            "and PyTreeDef(*).")):
        lax.while_loop(lambda c: True, lambda c: (1.0, 1.0), 0.0)
    with pytest.raises(TypeError) as e:
        lax.while_loop(lambda c: True, lambda c: (c[0], True), (np.bool_(True), np.float32(0)))
    assert str(e.value).startswith(
        "body_fun output and input must have identical types, got\n"
        "('ShapedArray(bool[])', 'DIFFERENT ShapedArray(bool[]) vs. ShapedArray(float32[])').")
    assert "the input carry component c[1] has type f32[] but the corresponding output " \
           "carry component has type bool[]" in str(e.value)

    def body(val):
        return {"a": fnp.zeros(4), "b": val["b"]}

    with pytest.raises(TypeError, match=re.escape(
            "the input carry component val['a'] has type f32[3] but the corresponding output "
            "carry component has type f32[4]")):
        lax.while_loop(lambda c: True, body, {"a": fnp.zeros(3), "b": 1})


def test_argument_errors():
    with pytest.raises(TypeError, match="body_fun and cond_fun arguments should be callable"):
        lax.while_loop(1, lambda c: c, 0.0)
    with pytest.raises(TypeError, match="body_fun argument should be callable"):
        lax.fori_loop(0, 3, None, 0.0)
    with pytest.raises(ValueError, match=re.escape(
            "Can only use `unroll` in `fori_loop` if the loop bounds are statically known.")):
        jit(lambda n: lax.fori_loop(0, n, lambda i, x: x, 0.0, unroll=2))(3)
    with pytest.raises(TypeError, match=re.escape(
            "lower and upper arguments to fori_loop must have equal types, got int32 and "
            "int8")):
        lax.fori_loop(fnp.int32(0), fnp.int8(3), lambda i, x: x, 0.0)
    with pytest.raises(TypeError, match="max_steps must be None or a non-negative Python int"):
        lax.while_loop(lambda c: True, lambda c: c, 0.0, max_steps=2.5)
    with pytest.raises(ValueError, match="max_steps must be non-negative, got -1"):
        lax.while_loop(lambda c: True, lambda c: c, 0.0, max_steps=-1)


def test_while_primitive_type_check():
    closed = make_jaxpr(grow)(np.float32(1.0))
    eqn = closed.jaxpr.eqns[0]
    bad = dict(eqn.params, cond_nconsts=1)
    with pytest.raises(TypeError, match=re.escape(
            "while: body_jaxpr takes [i32[], f32[]] but is given [f32[]]")):
        eqn.primitive.abstract_eval(*[v.aval for v in eqn.invars], **bad)



def test_docstring_examples():
    import doctest
    import sys
    result = doctest.testmod(sys.modules["functrax.control_flow.loops"])
    assert result.failed == 0 and result.attempted >= 2
