"""The composition matrix (STYLE.md §7): small programs run under stacks of transformations.

Every program ``f(x, *rest)`` (``x`` may be a pytree) is run under jit, grad, vmap, jvp and
their compositions. References are independent of the transformation under test:

- jit: the eager program;
- grad / jvp: central differences of the eager program in float64;
- grad∘grad: central differences (float64) of the eager gradient of ``s -> F(s * x)``;
- vmap: a Python loop over the batch, stacked;
- a stack containing jit: the same stack with jit removed (itself checked above).

Every jaxpr a stack traces passes ``check_jaxpr``. ``F`` is the sum of ``f``'s outputs.
"""
from __future__ import annotations

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import check_jaxpr, grad, jit, jvp, lax, make_jaxpr, vmap
from functrax.test_util import enable_x64
from functrax.tree_util import tree_flatten, tree_map, tree_unflatten

BATCH = 2
EPS = 1e-6


# --- the programs ---

_W = fnp.asarray(np.linspace(-1.0, 1.0, 4, dtype=np.float32))


def closure(x):
    """Closes over an array (a constvar) and a Python float."""
    scale = 0.5
    return fnp.tanh(x * _W) * scale + _W


def mlp(params, x):
    """Dict parameters, a matmul, a bias."""
    h = fnp.tanh(x @ params["w"] + params["b"])
    return fnp.sum(h ** 2)


def tree_out(x):
    """A pytree of outputs."""
    return {"s": fnp.sin(x), "pair": (x * x, fnp.sum(fnp.cos(x)))}


def fan_out(x):
    """One value used many times."""
    y = fnp.sin(x)
    return y * y + y * fnp.exp(y) - y / (2.0 + y) + fnp.sum(y) * y


def _inner(a, b):
    return a * fnp.cos(b) + b


def _middle(a):
    return _inner(a, a * 2.0) - _inner(fnp.sin(a), a)


def nested_calls(x):
    """Python helper functions calling each other."""
    return _middle(_middle(x)) * x


_jitted_inner = jit(lambda a, b: a * fnp.sin(b) + b ** 2)


def jitted_inner(x, y):
    """A jitted function called twice, with a traced and a closed-over operand."""
    return _jitted_inner(x, y) + _jitted_inner(fnp.cos(x), x) * jit(lambda z: z * y)(x)


def pow_where_select(x):
    """integer_pow, where, select."""
    a = fnp.where(x > 0, x ** 3, 0.5 * x ** 2)
    b = lax.select(x < 0.5, fnp.exp(x), lax.integer_pow(x, 4))
    return a + b * x


def reductions(x):
    """sum, mean, max, prod, logsumexp-style reductions."""
    m = fnp.max(x)
    return (fnp.sum(x ** 2) + fnp.mean(fnp.sin(x)) + m * fnp.prod(x)
            + fnp.log(fnp.sum(fnp.exp(x - m))) + m)


def indexing(x):
    """Gather, and scatter through .at[]."""
    y = x.at[1].set(x[0] * 2.0)
    y = y.at[::2].add(x[1:3] ** 2)
    y = y.at[3].multiply(x[2])
    return y * x[::-1] + x[2] * x[np.array([2, 0, 3, 1])]


@functrax.custom_jvp
def _softplus(x):
    return fnp.log1p(fnp.exp(x))


@_softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _softplus(x), t * (1.0 / (1.0 + fnp.exp(-x)))


def custom_jvp_inside(x):
    """A custom_jvp function inside."""
    return _softplus(x * 2.0) * x + _softplus(fnp.sum(x))


def checkpoint_inside(x, y):
    """A checkpointed (rematerialized) block inside."""
    block = functrax.checkpoint(lambda a, b: fnp.sin(a) * fnp.cos(b) + a * b)
    return block(block(x, y), x) * y


def matmul_chain(x, m):
    """matmul with a second (non-differentiated) argument and broadcasting."""
    return fnp.sum(fnp.tanh(m @ x) ** 2, axis=0) + (x[:, None] * m.T).sum(axis=0)


def _rand(rng, shape):
    return rng.uniform(-1.0, 1.0, shape).astype(np.float32)


def _distinct(rng, shape):
    """Values without ties (max's derivative is then unambiguous)."""
    n = int(np.prod(shape))
    vals = np.linspace(-0.9, 0.9, n) + rng.uniform(-0.02, 0.02, n)
    return rng.permutation(vals).reshape(shape).astype(np.float32)


# name, function, argument builder (rng -> tuple of numpy arrays / pytrees)
PROGRAMS = [
    ("closure", closure, lambda r: (_rand(r, (4,)),)),
    ("mlp", mlp, lambda r: ({"w": _rand(r, (3, 2)), "b": _rand(r, (2,))}, _rand(r, (4, 3)))),
    ("tree_out", tree_out, lambda r: (_rand(r, (3,)),)),
    ("fan_out", fan_out, lambda r: (_rand(r, (3,)),)),
    ("nested_calls", nested_calls, lambda r: (_rand(r, (3,)),)),
    ("jitted_inner", jitted_inner, lambda r: (_rand(r, (3,)), _rand(r, (3,)))),
    ("pow_where_select", pow_where_select, lambda r: (_distinct(r, (5,)) * 1.5,)),
    ("reductions", reductions, lambda r: (_distinct(r, (4,)),)),
    ("indexing", indexing, lambda r: (_rand(r, (4,)),)),
    ("custom_jvp", custom_jvp_inside, lambda r: (_rand(r, (3,)),)),
    ("checkpoint", checkpoint_inside, lambda r: (_rand(r, (3,)), _rand(r, (3,)))),
    ("matmul_chain", matmul_chain, lambda r: (_rand(r, (3,)), _rand(r, (2, 3)))),
]
IDS = [p[0] for p in PROGRAMS]


# --- helpers ---


def total(f):
    """``F``: the sum of every output of ``f`` (a scalar to differentiate)."""
    def F(*args):
        leaves, _ = tree_flatten(f(*args))
        return sum(fnp.sum(leaf) for leaf in leaves)
    return F


def to_arrays(tree, dtype=None):
    return tree_map(lambda a: fnp.asarray(np.asarray(a, dtype or np.asarray(a).dtype)), tree)


def args_for(builder, seed=0):
    return builder(np.random.default_rng(seed))


def batched_args_for(builder):
    """BATCH independent draws of the arguments, stacked on a leading axis."""
    draws = [builder(np.random.default_rng(seed)) for seed in range(BATCH)]
    return tree_map(lambda *xs: np.stack(xs), *draws)


def unbatch(tree, i):
    return tree_map(lambda a: a[i], tree)


def assert_trees_close(got, want, rtol=2e-4, atol=2e-5):
    g_leaves, g_tree = tree_flatten(got)
    w_leaves, w_tree = tree_flatten(want)
    assert g_tree == w_tree, f"{g_tree} != {w_tree}"
    for g, w in zip(g_leaves, w_leaves):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, f"{g.shape} != {w.shape}"
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64),
                                   rtol=rtol, atol=atol)


def check_traced(stack, *args):
    """The jaxpr of ``stack`` (and every sub-jaxpr in it) type-checks."""
    closed = make_jaxpr(stack)(*args)
    check_jaxpr(closed)
    return closed


def numerical_grad(F, args):
    """d F / d args[0] by central differences in float64, shaped like args[0]."""
    with enable_x64():
        args64 = [to_arrays(a, np.float64) for a in args]
        leaves, tree = tree_flatten(args64[0])
        grads = []
        for k, leaf in enumerate(leaves):
            base = np.asarray(leaf)
            g = np.zeros(base.shape)
            for idx in np.ndindex(base.shape):
                vals = []
                for sign in (1, -1):
                    shifted = base.copy()
                    shifted[idx] += sign * EPS
                    new = list(leaves)
                    new[k] = fnp.asarray(shifted)
                    vals.append(float(F(tree_unflatten(tree, new), *args64[1:])))
                g[idx] = (vals[0] - vals[1]) / (2 * EPS)
            grads.append(g)
        return tree_unflatten(tree, grads)


def numerical_jvp(f, args, tangents):
    with enable_x64():
        args64 = [to_arrays(a, np.float64) for a in args]
        plus = [tree_map(lambda a, t: a + EPS * t, a, t)
                for a, t in zip(args64, to_arrays(tangents, np.float64))]
        minus = [tree_map(lambda a, t: a - EPS * t, a, t)
                 for a, t in zip(args64, to_arrays(tangents, np.float64))]
        hi, lo = f(*plus), f(*minus)
        return tree_map(lambda h, lo_: (np.asarray(h) - np.asarray(lo_)) / (2 * EPS), hi, lo)


def scaled(F, args):
    """``s -> F(s * args[0], *args[1:])``: a scalar program of any program."""
    return lambda s: F(tree_map(lambda a: s * a, args[0]), *args[1:])


def loop_stack(fn, batched):
    outs = [fn(*unbatch(batched, i)) for i in range(BATCH)]
    return tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *outs)


# --- the matrix ---


@pytest.mark.parametrize("name, f, builder", PROGRAMS, ids=IDS)
def test_jit_and_jit_of_jit(name, f, builder):
    args = to_arrays(args_for(builder))
    want = f(*args)
    for stack in [jit(f), jit(jit(f))]:
        assert_trees_close(stack(*args), want, rtol=1e-5, atol=1e-6)
        check_traced(stack, *args)


@pytest.mark.parametrize("name, f, builder", PROGRAMS, ids=IDS)
def test_grad_and_jit_compositions(name, f, builder):
    args = to_arrays(args_for(builder))
    F = total(f)
    g = grad(F)(*args)
    assert_trees_close(g, numerical_grad(F, args), rtol=2e-3, atol=2e-4)
    check_traced(grad(F), *args)
    for stack in [jit(grad(F)), grad(jit(F)), jit(grad(jit(F)))]:
        assert_trees_close(stack(*args), g)
        check_traced(stack, *args)


@pytest.mark.parametrize("name, f, builder", PROGRAMS, ids=IDS)
def test_jvp(name, f, builder):
    args = to_arrays(args_for(builder))
    tangents = to_arrays(args_for(builder, seed=7))
    primal, tangent = jvp(f, tuple(args), tuple(tangents))
    assert_trees_close(primal, f(*args), rtol=1e-6, atol=1e-6)
    assert_trees_close(tangent, numerical_jvp(f, args, tangents), rtol=2e-3, atol=2e-4)
    jitted = jit(lambda *a: jvp(f, a[:len(args)], a[len(args):]))
    assert_trees_close(jitted(*args, *tangents), (primal, tangent))
    check_traced(lambda *a: jvp(jit(f), a[:len(args)], a[len(args):]), *args, *tangents)


@pytest.mark.parametrize("name, f, builder", PROGRAMS, ids=IDS)
def test_vmap(name, f, builder):
    batched = to_arrays(batched_args_for(builder))
    want = loop_stack(f, batched)
    for stack in [vmap(f), vmap(jit(f)), jit(vmap(f))]:
        assert_trees_close(stack(*batched), want, rtol=1e-5, atol=1e-6)
        check_traced(stack, *batched)


@pytest.mark.parametrize("name, f, builder", PROGRAMS, ids=IDS)
def test_vmap_of_grad_and_grad_of_vmap(name, f, builder):
    batched = to_arrays(batched_args_for(builder))
    F = total(f)
    want = loop_stack(grad(F), batched)
    stacks = {
        "vmap∘grad": vmap(grad(F)),
        "grad∘vmap": grad(lambda *a: fnp.sum(vmap(F)(*a))),
        "jit∘vmap∘grad": jit(vmap(grad(F))),
        "vmap∘jit∘grad": vmap(jit(grad(F))),
    }
    for label, stack in stacks.items():
        assert_trees_close(stack(*batched), want, rtol=1e-4, atol=1e-5), label
        check_traced(stack, *batched)


@pytest.mark.parametrize("name, f, builder", PROGRAMS, ids=IDS)
def test_grad_of_grad(name, f, builder):
    args = to_arrays(args_for(builder))
    h = scaled(total(f), args)
    hess = grad(grad(h))(1.0)
    with enable_x64():
        args64 = [to_arrays(a, np.float64) for a in args]
        dh = grad(scaled(total(f), args64))
        want = (float(dh(1.0 + EPS)) - float(dh(1.0 - EPS))) / (2 * EPS)
    np.testing.assert_allclose(float(hess), want, rtol=2e-3, atol=2e-4)
    check_traced(grad(grad(h)), 1.0)
    for stack in [jit(grad(grad(h))), grad(jit(grad(h))), grad(grad(jit(h)))]:
        np.testing.assert_allclose(float(stack(1.0)), float(hess), rtol=1e-4, atol=1e-5)
        check_traced(stack, 1.0)


def test_matrix_covers_the_promised_features():
    names = {p[0] for p in PROGRAMS}
    assert len(PROGRAMS) >= 12
    assert {"closure", "mlp", "tree_out", "fan_out", "nested_calls", "jitted_inner",
            "pow_where_select", "reductions", "indexing", "custom_jvp",
            "checkpoint"} <= names
    prims = set()
    for _, f, builder in PROGRAMS:
        closed = make_jaxpr(f)(*to_arrays(args_for(builder)))
        prims |= {e.primitive.name for e in closed.eqns}
    assert {"integer_pow", "select_n", "reduce_sum", "reduce_max", "scatter-add",
            "custom_jvp_call", "remat2", "jit", "dot_general", "gather"} <= prims
