"""lax.cond / lax.switch: semantics against Python if/else, JAX's printed jaxpr and error
texts, and the cond primitive under every transformation (jvp, grad, vmap, jit and their
compositions), with check_jaxpr on every traced program."""
from __future__ import annotations

import doctest
import re
import sys

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import check_jaxpr, grad, jit, lax, make_jaxpr, vmap
from functrax.control_flow.cond import cond_p
from functrax.lowering.cost import cost_analysis
from functrax.test_util import check_grads, enable_x64
from tests.vectors import vector_path

VECTORS = vector_path("jax_jaxprs.md")


def assert_close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def assert_tree_close(a, b, **kw):
    la, ta = functrax.tree_util.tree_flatten(a)
    lb, tb = functrax.tree_util.tree_flatten(b)
    assert ta == tb, f"{ta} != {tb}"
    for x, y in zip(la, lb):
        assert_close(x, y, **kw)


def traced(fun, *args, **kw):
    """make_jaxpr + check_jaxpr; returns the ClosedJaxpr."""
    closed = make_jaxpr(fun, **kw)(*args)
    check_jaxpr(closed)
    return closed


def prims(closed):
    """Names of the primitives of a jaxpr, recursing into sub-jaxprs."""
    out = []
    for eqn in closed.jaxpr.eqns:
        out.append(eqn.primitive.name)
        for v in eqn.params.values():
            subs = v if isinstance(v, tuple) else (v,)
            for s in subs:
                if isinstance(s, functrax.ClosedJaxpr):
                    out += prims(s)
    return out


def count_conds(closed):
    return sum(e.primitive is cond_p for e in closed.jaxpr.eqns)


def py_cond(p, t, f, *ops):
    return t(*ops) if p else f(*ops)


def py_switch(i, branches, *ops):
    return branches[min(max(int(i), 0), len(branches) - 1)](*ops)


RNG = np.random.default_rng(0)
X = RNG.normal(size=(3,)).astype(np.float32)


# --- printing: the same text as JAX ---


def _jax_text(title):
    if not VECTORS.exists():
        pytest.skip(f"{VECTORS} is absent")
    out = VECTORS.read_text().split("## output", 1)[1]
    lines, on = [], False
    for line in out.splitlines():
        line = line[4:] if line.startswith("    ") else line
        if line.startswith("=== "):
            if on:
                break
            on = line[4:].strip() == title
        elif on and line.strip():
            lines.append(line)
    assert lines, f"section '=== {title}' not in {VECTORS}"
    text = "\n".join(lines)
    return re.sub(r" out_sharding=None", "", re.sub(r"\[out_sharding=None\]", "", text))


def test_printed_cond_matches_jax():
    def g(x):
        return lax.cond(x.sum() > 0, lambda x: x * 2, lambda x: -x, x)
    closed = traced(g, fnp.ones(3))
    assert str(closed) == _jax_text("cond")


def test_switch_prints_clamped_index_and_branches_in_order():
    text = str(traced(lambda i, x: lax.switch(i, [fnp.sin, fnp.cos, fnp.tanh], x), 1, 1.0))
    assert "clamp 0:i32[] " in text and " 2:i32[]" in text
    assert text.index("sin") < text.index("cos") < text.index("tanh")


def test_closed_over_values_become_leading_operands():
    y = fnp.arange(3.0)
    z = fnp.ones(3)
    closed = traced(lambda p, x: lax.cond(p, lambda x: x * y, lambda x: x + z, x), True, X)
    eqn = [e for e in closed.jaxpr.eqns if e.primitive is cond_p][0]
    assert len(eqn.invars) == 4  # index, y, z, x
    false_b, true_b = eqn.params["branches"]
    assert [a.shape for a in false_b.in_avals] == [(3,), (3,), (3,)]
    assert not false_b.consts and not true_b.consts
    assert_close(lax.cond(True, lambda x: x * y, lambda x: x + z, X), X * np.arange(3.0))


# --- semantics against Python ---


BRANCHES = [(lambda x: x * 2.0, lambda x: -x),
            (lambda x: fnp.sin(x), lambda x: fnp.cos(x) * x)]


@pytest.mark.parametrize("pred", [True, False, np.bool_(True), fnp.asarray(False), 3, 0, 0.0,
                                  -2.5, np.int8(1)])
@pytest.mark.parametrize("k", range(len(BRANCHES)))
def test_cond_matches_python(pred, k):
    t, f = BRANCHES[k]
    want = py_cond(bool(pred), t, f, X)
    assert_close(lax.cond(pred, t, f, X), want)
    assert_close(jit(lambda p, x: lax.cond(p, t, f, x))(pred, X), want)
    traced(lambda p, x: lax.cond(p, t, f, x), pred, X)


def test_cond_traced_pred_runs_only_the_selected_branch_semantics():
    f = jit(lambda x: lax.cond(x[0] > 0, lambda x: fnp.log(x), lambda x: x, x))
    x = np.array([-1.0, 2.0], np.float32)
    assert_close(f(x), x)  # the log branch (NaN here) is not taken
    assert_close(f(-x), np.log(-x))


def test_pytree_operands_and_outputs():
    ops = ({"a": X, "b": (np.float32(2.0), X[:2])}, [X * 3])

    def t(d, lst):
        return {"s": d["a"] * d["b"][0], "t": (lst[0] + 1.0, d["b"][1])}

    def f(d, lst):
        return {"s": d["a"] - lst[0], "t": (lst[0] * 0.0, -d["b"][1])}

    for p in (True, False):
        want = py_cond(p, t, f, *ops)
        assert_tree_close(lax.cond(p, t, f, *ops), want)
        assert_tree_close(jit(lambda p, *ops: lax.cond(p, t, f, *ops))(p, *ops), want)
    traced(lambda p, *ops: lax.cond(p, t, f, *ops), True, *ops)


def test_no_operands_and_closure_over_numpy_and_arrays():
    a = np.arange(3.0, dtype=np.float32)
    b = fnp.full((3,), 2.0)
    for p in (True, False):
        assert_close(lax.cond(p, lambda: a * 2, lambda: b + a), py_cond(p, lambda: a * 2,
                                                                    lambda: np.asarray(b) + a))


def test_closure_over_outer_tracers():
    def f(x, y):
        return lax.cond(fnp.sum(x) > 0, lambda: fnp.sin(x) * y, lambda: y - x)

    def ref(x, y):
        return np.sin(x) * y if x.sum() > 0 else y - x

    y = np.float32(1.5)
    for x in (X, -np.abs(X)):
        assert_close(f(x, y), ref(x, y))
        assert_close(jit(f)(x, y), ref(x, y))
        traced(f, x, y)
    # the closed-over tracers are differentiated and batched like operands
    x = np.abs(X) + 0.1
    assert_close(grad(lambda x: fnp.sum(f(x, y)))(x), np.cos(x) * y)
    assert_close(grad(lambda x: fnp.sum(f(-x, y)))(x), np.ones(3))
    xs = np.stack([x, -x])
    assert_close(vmap(f, in_axes=(0, None))(xs, y), np.stack([ref(r, y) for r in xs]))


def test_legacy_and_keyword_operand_forms():
    assert_close(lax.cond(True, 2.0, lambda x: x + 1, 5.0, lambda x: x * 10), 3.0)
    assert_close(lax.cond(False, 2.0, lambda x: x + 1, 5.0, lambda x: x * 10), 50.0)
    assert_close(lax.cond(True, lambda x: x + 1, lambda x: x, operand=1.0), 2.0)
    assert_close(lax.switch(1, [lambda x: x, lambda x: -x], operand=1.0), -1.0)
    with pytest.raises(TypeError, match="if 'operand' keyword is passed then no positional"):
        lax.cond(True, lambda x: x, lambda x: x, 1.0, operand=2.0)


@pytest.mark.parametrize("index", [-3, -1, 0, 1, 2, 3, 100])
def test_switch_matches_python_and_clamps(index):
    branches = [lambda x, y: x + y, lambda x, y: x * y, lambda x, y: fnp.sin(x) - y]
    y = np.float32(0.5)
    want = py_switch(index, [lambda x, y: x + y, lambda x, y: x * y,
                             lambda x, y: np.sin(x) - y], X, y)
    assert_close(lax.switch(index, branches, X, y), want)
    assert_close(jit(lambda i, x, y: lax.switch(i, branches, x, y))(index, X, y), want)
    assert_close(lax.switch(np.int8(index) if -128 <= index < 128 else index, branches, X, y),
                 want)
    traced(lambda i, x, y: lax.switch(i, branches, x, y), index, X, y)


def test_primitive_clamps_an_out_of_range_index():
    # lax.switch clamps before binding; the primitive clamps too (eager, jit and vmap)
    branches = tuple(make_jaxpr(f)(X) for f in (lambda x: x + 1.0, fnp.sin, lambda x: x * x))

    def run(i, x):
        return cond_p.bind(i, x, branches=branches)[0]
    for i, want in [(-4, X + 1), (1, np.sin(X)), (9, X * X)]:
        i = np.int32(i)
        assert_close(run(i, X), want, rtol=1e-6)
        assert_close(jit(run)(i, X), want, rtol=1e-6)
    ids = np.array([-4, 1, 9], np.int32)
    assert_close(vmap(run, in_axes=(0, None))(ids, X),
                 np.stack([X + 1, np.sin(X), X * X]), rtol=1e-6)


def test_switch_one_branch_is_called_directly():
    assert_close(lax.switch(7, [lambda x: x * 3], 2.0), 6.0)


def test_eager_cond_binds_the_primitive_once_per_call():
    # eagerly JAX also binds cond; the result must match Python either way
    with functrax.disable_jit():
        assert_close(lax.cond(True, lambda x: x + 1, lambda x: x - 1, 1.0), 2.0)
        assert_close(lax.switch(9, [lambda x: x + 1, lambda x: x - 1], 1.0), 0.0)


def test_weak_types_may_differ_and_the_false_branch_type_wins():
    # JAX: branch outputs must agree up to weak type; the cond has branch 0's (false) type
    strong = lax.cond(True, lambda: 1.0, lambda: fnp.float32(2.0))
    weak = lax.cond(True, lambda: fnp.float32(1.0), lambda: 2.0)
    assert_close(strong, 1.0)
    assert_close(weak, 1.0)
    assert not strong.weak_type
    assert weak.weak_type
    assert strong.dtype == weak.dtype == np.float32


def test_forwarded_outputs_are_not_cond_outputs():
    def f(x, y):
        return lax.cond(x > 0, lambda x, y: (x, y * 2), lambda x, y: (x, y), x, y)
    closed = traced(f, 1.0, 2.0)
    eqn = [e for e in closed.jaxpr.eqns if e.primitive is cond_p][0]
    assert len(eqn.outvars) == 1
    assert closed.jaxpr.outvars[0] is closed.jaxpr.invars[0]
    assert_tree_close(f(1.0, 2.0), (1.0, 4.0))
    assert_tree_close(f(-1.0, 2.0), (-1.0, 2.0))


def test_x64_operands():
    with enable_x64():
        x = np.array([1.0, 2.0], np.float64)
        out = lax.cond(True, lambda x: x * 2, lambda x: x, x)
        assert out.dtype == np.float64
        assert_close(out, x * 2)


def test_integer_and_bool_outputs():
    def f(p, x, n):
        return lax.cond(p, lambda x, n: (x * 2, n + 1, x > 0), lambda x, n: (-x, n * 3, x < 0),
                        x, n)
    for p in (True, False):
        out = f(p, X, np.int32(4))
        want = py_cond(p, lambda x, n: (x * 2, n + 1, x > 0), lambda x, n: (-x, n * 3, x < 0),
                       X, np.int32(4))
        assert_tree_close(out, want)
        assert out[1].dtype == np.int32 and out[2].dtype == np.bool_
    traced(f, True, X, np.int32(4))


# --- nested ---


def _nested(x, i):
    def inner_t(x):
        return lax.switch(i, [lambda x: x * x, lambda x: fnp.sin(x), lambda x: x + 1.0], x)
    return lax.cond(fnp.sum(x) > 0, inner_t, lambda x: lax.cond(x[0] > 0, fnp.exp, fnp.cos, x),
                    x)


def _nested_ref(x, i):
    if x.sum() > 0:
        return [x * x, np.sin(x), x + 1.0][min(max(i, 0), 2)]
    return np.exp(x) if x[0] > 0 else np.cos(x)


@pytest.mark.parametrize("i", [0, 1, 2])
def test_nested_conds(i):
    for x in (np.abs(X), -np.abs(X), np.array([1.0, -3.0, 0.5], np.float32)):
        assert_close(_nested(x, i), _nested_ref(x, i), rtol=1e-5)
        assert_close(jit(_nested)(x, i), _nested_ref(x, i), rtol=1e-5)
    closed = traced(_nested, X, i)
    assert prims(closed).count("cond") == 3


def test_nested_conds_grad_and_vmap():
    with enable_x64():
        for x in (np.abs(X).astype(np.float64), np.array([1.0, -3.0, 0.5])):
            for i in (0, 1, 2):
                check_grads(lambda x: _nested(x, i), (x,), order=2)
    xs = np.stack([np.abs(X), -np.abs(X), np.array([1.0, -3.0, 0.5], np.float32)])
    ids = np.array([0, 2, 1], np.int32)
    assert_close(vmap(_nested)(xs, ids), np.stack([_nested_ref(x, i) for x, i in zip(xs, ids)]),
                 rtol=1e-5)
    traced(vmap(_nested), xs, ids)
    traced(grad(lambda x, i: fnp.sum(_nested(x, i))), X, 1)


# --- jvp and grad ---


def _f1(x, y):
    return lax.cond(fnp.sum(x) > 0, lambda x, y: fnp.sin(x) * y, lambda x, y: x * x - y, x, y)


def _f2(x):
    # the branches have residuals of different counts and types, and one branch's outputs
    # do not depend on x at all
    def t(x):
        return fnp.sum(fnp.exp(x) * fnp.cos(x)), x[:2] * 3.0

    def f(x):
        return fnp.full((), 2.0, x.dtype), fnp.zeros(2, x.dtype) + fnp.tanh(x[0])
    return lax.cond(x[0] > 0, t, f, x)


def _f3(i, x, y):
    return lax.switch(i, [lambda x, y: x * y, lambda x, y: fnp.sin(x * y), lambda x, y: y - x],
                      x, y)


def test_jvp_matches_finite_differences():
    with enable_x64():
        for x in (np.array([0.3, 1.2, -0.1]), np.array([-0.3, 1.2, -0.1])):
            check_grads(_f1, (x, np.float64(1.7)), order=2, modes=("fwd",))
            check_grads(_f2, (x,), order=2, modes=("fwd",))


def test_jvp_values():
    x, t = np.abs(X) + 0.1, np.ones(3, np.float32)
    out, t_out = functrax.jvp(lambda x: _f1(x, 2.0), (x,), (t,))
    assert_close(out, np.sin(x) * 2.0)
    assert_close(t_out, np.cos(x) * 2.0)
    out, t_out = functrax.jvp(lambda x: _f1(x, 2.0), (-x,), (t,))
    assert_close(t_out, -2 * x)
    closed = traced(lambda x, t: functrax.jvp(lambda x: _f1(x, 2.0), (x,), (t,)), x, t)
    assert count_conds(closed) == 1


@pytest.mark.parametrize("x", [np.array([0.3, 1.2, -0.1]), np.array([-0.3, 1.2, -0.1])],
                         ids=["true", "false"])
def test_grad_check_grads_float64(x):
    with enable_x64():
        check_grads(_f1, (x, np.float64(1.7)), order=2, modes=("rev",))
        check_grads(_f2, (x,), order=2, modes=("fwd", "rev"))
        for i in (-1, 0, 1, 2, 5):
            check_grads(lambda x, y: _f3(i, x, y), (x, np.float64(0.7)), order=2)


def test_grad_values_and_integer_operands():
    def f(x, n):
        return lax.cond(n > 2, lambda x, n: x * n, lambda x, n: x ** 2 + n, x, n)
    assert_close(grad(f)(3.0, 4), 4.0)
    assert_close(grad(f)(3.0, 1), 6.0)
    g = grad(lambda x, i: _f3(i, x, 2.0))
    assert_close(g(0.5, 0), 2.0)
    assert_close(g(0.5, 1), np.cos(1.0) * 2.0, rtol=1e-6)
    assert_close(g(0.5, 2), -1.0)


def test_grad_traced_program_has_a_known_and_an_unknown_cond():
    closed = traced(grad(lambda x: fnp.sum(_f1(x, 2.0))), X)
    assert count_conds(closed) == 2
    closed = traced(grad(lambda x: fnp.sum(_f2(x)[1]) + _f2(x)[0]), X)
    assert count_conds(closed) == 4


def test_linearize_and_linear_transpose():
    x = np.abs(X) + 0.1
    out, f_lin = functrax.linearize(lambda x: _f1(x, 2.0), x)
    assert_close(out, np.sin(x) * 2)
    assert_close(f_lin(np.ones(3, np.float32)), np.cos(x) * 2)

    def lin(v):
        return lax.cond(True, lambda v: v * 3.0, lambda v: -v, v)
    (ct,) = functrax.linear_transpose(lin, X)(np.ones(3, np.float32))
    assert_close(ct, np.full(3, 3.0))


def test_vjp_with_pytrees():
    def f(d):
        return lax.cond(d["p"] > 0, lambda d: {"o": d["a"] * d["b"]},
                        lambda d: {"o": d["a"] - d["b"]}, d)
    d = {"a": X, "b": X * 2, "p": np.float32(1.0)}
    out, pull = functrax.vjp(f, d)
    (g,) = pull({"o": np.ones(3, np.float32)})
    assert_close(g["a"], X * 2)
    assert_close(g["b"], X)
    assert_close(g["p"], 0.0)


def test_grad_through_unselected_nan_branch_is_finite():
    def f(x):
        return lax.cond(x > 0, fnp.sqrt, lambda x: -x, x)
    assert_close(grad(f)(-4.0), -1.0)
    assert_close(grad(f)(4.0), 0.25)
    xs = np.array([-4.0, 4.0], np.float32)
    # batched predicate: both branches run; the NaN derivative of sqrt(-4) must not leak
    assert_close(grad(lambda xs: fnp.sum(vmap(f)(xs)))(xs), [-1.0, 0.25])


# --- vmap ---


def _loop(f, *args, in_axes=0):
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    n = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
    outs = []
    for b in range(n):
        row = [a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(args, axes)]
        outs.append(f(*row))
    return functrax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]),
                                       *outs)


def _g(p, x, y):
    return lax.cond(p, lambda x, y: (x * y, fnp.sum(x)), lambda x, y: (x - y, y * 0.0), x, y)


@pytest.mark.parametrize("in_axes", [(0, 0, 0), (0, 0, None), (0, None, None), (None, 0, 0),
                                     (None, 0, None), (None, None, 0), (0, 1, None),
                                     (None, 1, 0)])
def test_vmap_batched_and_unbatched_pred_and_operands(in_axes):
    B = 4
    ps = np.array([True, False, False, True])
    xs = RNG.normal(size=(B, 3)).astype(np.float32)
    ys = RNG.normal(size=(B,)).astype(np.float32)
    args = [ps if in_axes[0] == 0 else True,
            (xs if in_axes[1] == 0 else xs.T) if in_axes[1] is not None else xs[0],
            ys if in_axes[2] == 0 else ys[0]]
    want = _loop(_g, *args, in_axes=in_axes)
    got = vmap(_g, in_axes=in_axes)(*args)
    assert_tree_close(got, want, rtol=1e-5)
    closed = traced(vmap(_g, in_axes=in_axes), *args)
    assert count_conds(closed) == (0 if in_axes[0] == 0 else 1)
    assert_tree_close(jit(vmap(_g, in_axes=in_axes))(*args), want, rtol=1e-5)


def test_vmap_branches_with_different_output_batch_dims():
    # unbatched predicate: one branch's output is batched, the other's is not; another
    # output is batched along different axes in the two branches
    def f(p, x):
        return lax.cond(p, lambda x: (x * 2, x.T), lambda x: (fnp.ones((2, 3)), x.T * 0 + 1),
                        x)
    xs = RNG.normal(size=(2, 3, 5)).astype(np.float32)
    for p in (True, False):
        want = _loop(lambda x: f(p, x), xs, in_axes=2)
        got = vmap(lambda x: f(p, x), in_axes=2)(xs)
        assert_tree_close(got, want)
        traced(vmap(lambda x: f(p, x), in_axes=2), xs)


@pytest.mark.parametrize("batched", ["index", "ops", "both"])
def test_vmap_switch_with_out_of_range_indices(batched):
    ids = np.array([-2, 0, 1, 2, 7], np.int32)
    xs = RNG.normal(size=(5, 3)).astype(np.float32)
    branches = [lambda x: x + 1, lambda x: fnp.sin(x), lambda x: x * x]
    np_branches = [lambda x: x + 1, np.sin, lambda x: x * x]
    f = lambda i, x: lax.switch(i, branches, x)  # noqa: E731
    if batched == "index":
        want = np.stack([py_switch(i, np_branches, xs[0]) for i in ids])
        got = vmap(f, in_axes=(0, None))(ids, xs[0])
    elif batched == "ops":
        want = np.stack([py_switch(7, np_branches, x) for x in xs])
        got = vmap(f, in_axes=(None, 0))(7, xs)
    else:
        want = np.stack([py_switch(i, np_branches, x) for i, x in zip(ids, xs)])
        got = vmap(f)(ids, xs)
    assert_close(got, want, rtol=1e-6)


def test_nested_vmap_of_cond():
    xs = RNG.normal(size=(2, 3, 4)).astype(np.float32)

    def f(x):
        return lax.cond(x > 0, lambda x: x * 2, lambda x: fnp.exp(x), x)
    want = np.where(xs > 0, xs * 2, np.exp(xs))
    assert_close(vmap(vmap(vmap(f)))(xs), want, rtol=1e-6)
    # inner vmap over unbatched predicates, outer over batched ones
    g = vmap(lambda p, x: vmap(lambda x: lax.cond(p, fnp.sin, fnp.cos, x))(x))
    ps = np.array([True, False])
    assert_close(g(ps, xs[:, :, 0]), np.where(ps[:, None], np.sin(xs[:, :, 0]),
                                              np.cos(xs[:, :, 0])), rtol=1e-6)


# --- compositions with jit and grad ---


def _h(x):
    return lax.cond(fnp.sum(x) > 0, lambda x: fnp.sin(x) * x, lambda x: fnp.exp(-x), x)


def _h_grad_ref(x):
    if x.sum() > 0:
        return np.cos(x) * x + np.sin(x)
    return -np.exp(-x)


@pytest.mark.parametrize("x", [np.abs(X) + 0.1, -np.abs(X) - 0.1], ids=["true", "false"])
def test_compositions(x):
    def loss(x):
        return fnp.sum(_h(x))
    want = _h_grad_ref(x)
    assert_close(jit(_h)(x), np.sin(x) * x if x.sum() > 0 else np.exp(-x), rtol=1e-6)
    assert_close(grad(jit(loss))(x), want, rtol=1e-5)
    assert_close(jit(grad(loss))(x), want, rtol=1e-5)
    assert_close(grad(loss)(x), want, rtol=1e-5)
    for fn in (grad(jit(loss)), jit(grad(loss))):
        traced(fn, x)
    xs = np.stack([x, -x, x * 2])
    want_v = np.stack([_h_grad_ref(r) for r in xs])
    assert_close(vmap(grad(loss))(xs), want_v, rtol=1e-5)
    assert_close(jit(vmap(grad(loss)))(xs), want_v, rtol=1e-5)
    traced(vmap(grad(loss)), xs)
    # grad of a vmapped cond (batched predicates): sum over rows of each row's gradient
    assert_close(grad(lambda xs: fnp.sum(vmap(_h)(xs)))(xs), want_v, rtol=1e-5)
    traced(grad(lambda xs: fnp.sum(vmap(_h)(xs))), xs)
    # per-element predicates: grad of vmap over scalars
    g = grad(lambda xs: fnp.sum(vmap(lambda s: lax.cond(s > 0, fnp.sin, fnp.exp, s))(xs)))
    assert_close(g(x), np.where(x > 0, np.cos(x), np.exp(x)), rtol=1e-6)


def test_hessian_and_jacobians():
    x = np.abs(X).astype(np.float32) + 0.1

    def f(x):
        return lax.cond(x[0] > 0, lambda x: fnp.sum(x ** 3), lambda x: fnp.sum(x), x)
    assert_close(functrax.hessian(f)(x), np.diag(6 * x), rtol=1e-5)
    assert_close(functrax.jacfwd(_h)(x), np.diag(_h_grad_ref(x)), rtol=1e-5)
    assert_close(functrax.jacrev(_h)(x), np.diag(_h_grad_ref(x)), rtol=1e-5)
    traced(functrax.hessian(f), x)


def test_jit_cache_runs_branches_by_value():
    calls = []

    @jit
    def f(x):
        calls.append(1)
        return lax.cond(x > 0, lambda x: x + 1, lambda x: x - 1, x)
    assert_close(f(1.0), 2.0)
    assert_close(f(-1.0), -2.0)
    assert len(calls) == 1


def test_cost_analysis_counts_the_most_expensive_branch():
    closed = make_jaxpr(lambda x: lax.cond(True, lambda x: fnp.sin(x) + 1.0, lambda x: x,
                                           x))(fnp.ones(8))
    cost = cost_analysis(closed)
    assert cost["transcendentals"] == 8.0
    assert cost["flops"] >= 8.0


# --- errors ---


def test_branch_output_type_mismatch_message():
    with pytest.raises(TypeError) as e:
        lax.cond(True, lambda x: (x, x), lambda x: (x, x.astype(np.int32)), X)
    msg = str(e.value)
    assert msg.startswith("true_fun and false_fun output must have identical types, got\n"
                          "('ShapedArray(float32[3])', 'DIFFERENT ShapedArray(float32[3]) vs. "
                          "ShapedArray(int32[3])').")
    assert ("The output of true_fun at path [1] has type f32[3] but the corresponding "
            "output of false_fun has type i32[3]") in msg
    assert "true_fun is <lambda> defined at" in msg and "Revise true_fun and/or false_fun" in msg


def test_branch_output_shape_mismatch_message():
    with pytest.raises(TypeError, match=re.escape(
            "DIFFERENT ShapedArray(float32[3]) vs. ShapedArray(float32[2])")):
        lax.cond(True, lambda x: x, lambda x: x[:2], X)


def test_branch_output_structure_mismatch_message():
    with pytest.raises(TypeError, match=re.escape(
            "true_fun and false_fun output must have same type structure, got PyTreeDef(*) "
            "and PyTreeDef((*, *)).")):
        lax.cond(True, lambda x: x, lambda x: (x, x), X)


def test_switch_output_mismatch_names_the_branches():
    with pytest.raises(TypeError, match=re.escape(
            "branch 0 and branch 2 output must have identical types")):
        lax.switch(0, [lambda x: x, lambda x: x, lambda x: x.astype(np.int32)], X)


@pytest.mark.parametrize("pred,msg", [
    (np.array([True, False]), "Pred must be a scalar, got [ True False] of shape (2,)."),
    ((1.0, 1.0), "Pred must be a scalar, got (1.0, 1.0) of type <class 'tuple'>"),
    ("foo", "Pred must be a scalar, got foo of type <class 'str'>"),
    (None, "cond predicate is None"),
    (np.complex64(1), "Pred type must be either boolean or number, got complex64."),
])
def test_bad_predicates(pred, msg):
    with pytest.raises(TypeError, match=re.escape(msg)):
        lax.cond(pred, lambda: 1.0, lambda: 2.0)


def test_bad_function_predicate_and_branches():
    with pytest.raises(TypeError, match=re.escape(
            "Pred type must be either boolean or number, got <function")):
        lax.cond(lambda x: True, lambda x: 2.0, lambda x: 3.0, 1.0)
    with pytest.raises(TypeError, match="true_fun and false_fun arguments should be callable"):
        lax.cond(True, 1.0, lambda x: x, 2.0)


def test_traced_non_scalar_predicate():
    with pytest.raises(TypeError, match=re.escape("Pred must be a scalar, got")):
        jit(lambda x: lax.cond(x > 0, lambda: 1.0, lambda: 2.0))(X)


def test_switch_errors():
    with pytest.raises(ValueError, match="Empty branch sequence"):
        lax.switch(0, [], 1.0)
    with pytest.raises(TypeError, match=re.escape("Index type must be an integer, got 1.0 as "
                                                  "float32")):
        lax.switch(1.0, [lambda x: x, lambda x: x], 1.0)
    with pytest.raises(TypeError, match=re.escape("Branch index must be scalar, got [0 1] of "
                                                  "shape (2,).")):
        lax.switch(np.array([0, 1]), [lambda x: x, lambda x: x], 1.0)
    with pytest.raises(TypeError, match="branches argument should be a sequence of callables"):
        lax.switch(0, [lambda x: x, 3], 1.0)


def test_check_jaxpr_rejects_ill_typed_cond():
    closed = make_jaxpr(lambda p, x: lax.cond(p, lambda x: x, lambda x: -x, x))(True, X)
    eqn = [e for e in closed.jaxpr.eqns if e.primitive is cond_p][0]
    bad_index = eqn.replace(invars=[closed.jaxpr.invars[1]] + eqn.invars[1:])
    bad = functrax.ClosedJaxpr(functrax.Jaxpr(
        closed.jaxpr.constvars, closed.jaxpr.invars, closed.jaxpr.outvars,
        [e if e is not eqn else bad_index for e in closed.jaxpr.eqns]), closed.consts)
    with pytest.raises(functrax.JaxprTypeError, match="the branch index must be an int32 "
                                                      "scalar, got f32\\[3\\]"):
        check_jaxpr(bad)


def test_docstring_examples():
    result = doctest.testmod(sys.modules["functrax.control_flow.cond"])
    assert result.attempted >= 2 and result.failed == 0
