"""The composition matrix (STYLE.md §7): small programs run under stacks of transformations.

Every program ``f(x, *rest)`` (``x`` may be a pytree) is run under jit, grad, vmap, jvp and
their compositions. References are independent of the transformation under test:

- jit: the eager program;
- grad / jvp: central differences of the eager program in float64;
- grad∘grad: central differences (float64) of the eager gradient of ``s -> F(s * x)``;
- vmap: a Python loop over the batch, stacked;
- a stack containing jit: the same stack with jit removed (itself checked above).

Every jaxpr a stack traces passes ``check_jaxpr``. ``F`` is the sum of ``f``'s outputs.

Control flow: every primitive of ``functrax.control_flow`` appears in a program (cond with a
data-dependent predicate, switch, scan forward and reversed, fori_loop with static and
traced bounds, while_loop with and without ``max_steps``, map, checkpoint in a scan body).
Under vmap their predicates / indices / trip counts differ between the lanes (checked).
Programs built on an unbounded ``while`` (``FORWARD_ONLY``) are not reverse-differentiable
(as JAX): they run under jit, jvp, vmap and their compositions, and grad must raise JAX's
error.
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


# --- control-flow programs ---

_W3 = fnp.asarray(np.array([0.3, -0.7, 1.1], np.float32))


def cond_closure(x, y):
    """cond on a data-dependent predicate; branches close over ``y``, a traced value derived
    from it, an array constant and a Python float; a pytree of branch outputs."""
    scale = 0.5
    s = fnp.sum(y)

    def true_fun(a):
        return {"v": fnp.sin(a) * y + _W3 * s, "w": fnp.sum(a * a)}

    def false_fun(a):
        return {"v": fnp.cos(a) * s - y * scale, "w": fnp.max(a) * 2.0}

    out = lax.cond(fnp.sum(x * y) < -0.5, true_fun, false_fun, x)
    return out["v"] * x + out["w"]


_BRANCHES = (
    lambda a, b: fnp.sin(a) * b,
    lambda a, b: fnp.exp(a * 0.5) + b ** 2,
    lambda a, b: a * fnp.sum(b) - fnp.tanh(a),
)


def switch3(x, y):
    """switch over 3 branches; the index argmax(x) ranges over 0..3 (3 clamps to the last)."""
    return lax.switch(fnp.argmax(x), _BRANCHES, x, y) * x


def _rnn(params, xs, reverse):
    def step(carry, x):
        h = fnp.tanh(carry["h"] @ params["w"] + x * params["u"])
        c = carry["c"] + fnp.sum(h)
        return {"h": h, "c": c}, (h * c, {"s": fnp.sum(h * x)})
    # a weak-typed (Python float) initial carry entry, promoted to the body's float32
    return lax.scan(step, {"h": params["h0"], "c": 0.0}, xs, reverse=reverse)


def scan_rnn(params, xs):
    """An RNN-like scan: pytree carry (dict) and pytree ys, closing over the parameters."""
    return _rnn(params, xs, reverse=False)


def scan_rnn_reverse(params, xs):
    """The RNN scanned from the end (reverse=True)."""
    return _rnn(params, xs, reverse=True)


def fori_static(x, y):
    """fori_loop with static bounds (lowers to scan); the body uses the index."""
    def body(i, carry):
        a, b = carry
        return a * 0.8 + fnp.sin(b) * (i + 1), b + a * y / (i + 2.0)
    a, b = lax.fori_loop(1, 4, body, (x, y * 0.5))
    return a + b


@jit
def _fori_dynamic(x, n):
    return lax.fori_loop(0, n, lambda i, c: c * 0.9 + fnp.sin(c + i), x)


def fori_traced(x):
    """fori_loop with a data-dependent (traced, under jit) trip count: a ``while``."""
    n = fnp.sum(x > 0).astype(np.int32) + 1
    return _fori_dynamic(x, n) * x


def _grow(carry):
    k, v = carry
    return k + 1, v * 1.15 + 0.1


def _small(carry):
    return fnp.sum(carry[1] ** 2) < 4.0


def while_unbounded(x):
    """while_loop (unbounded) with a data-dependent trip count and an integer counter."""
    k, v = lax.while_loop(_small, _grow, (0, x))
    return v * k + fnp.sin(v)


def _grow_by(y):
    def body(carry):
        k, v = carry
        return k + 1.0, v * 1.15 + fnp.sin(v) * y * 0.1
    return body


def while_max_steps(x, y):
    """while_loop with max_steps (a masked scan: reverse-differentiable)."""
    k, v = lax.while_loop(_small, _grow_by(y), (0.0, x), max_steps=10)
    return v * k + fnp.cos(v)


def map_rows(x, v):
    """lax.map over the rows of x, plain and with batch_size (a batch and a remainder)."""
    def row_fn(row):
        return fnp.tanh(row @ v) * row + fnp.sum(v)
    return lax.map(row_fn, x) + lax.map(row_fn, x, batch_size=2) * 0.5


def checkpoint_in_scan(x, ys):
    """A checkpointed scan body."""
    @functrax.checkpoint
    def step(c, y):
        h = fnp.sin(c * y) + c * fnp.cos(y)
        return h, h * y
    return lax.scan(step, x, ys)


def cond_in_scan(x, ys):
    """A cond on the carry inside a scan body: per-step (and, under vmap, per-lane) branches."""
    def step(c, y):
        c = lax.cond(fnp.sum(c * y) > 0, lambda a: fnp.sin(a) + y, lambda a: a * y - 0.5, c)
        return c, fnp.sum(c)
    return lax.scan(step, x, ys)


def _rand(rng, shape):
    return rng.uniform(-1.0, 1.0, shape).astype(np.float32)


def _distinct(rng, shape):
    """Values without ties (max's derivative is then unambiguous)."""
    n = int(np.prod(shape))
    vals = np.linspace(-0.9, 0.9, n) + rng.uniform(-0.02, 0.02, n)
    return rng.permutation(vals).reshape(shape).astype(np.float32)


def _rnn_params(rng):
    return {"w": _rand(rng, (3, 3)), "u": _rand(rng, (3,)), "h0": _rand(rng, (3,))}


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
    ("cond_closure", cond_closure, lambda r: (_rand(r, (3,)), _rand(r, (3,)))),
    ("switch3", switch3, lambda r: (_distinct(r, (4,)), _rand(r, (4,)))),
    ("scan_rnn", scan_rnn, lambda r: (_rnn_params(r), _rand(r, (4, 3)))),
    ("scan_rnn_reverse", scan_rnn_reverse, lambda r: (_rnn_params(r), _rand(r, (4, 3)))),
    ("fori_static", fori_static, lambda r: (_rand(r, (3,)), _rand(r, (3,)))),
    ("while_max_steps", while_max_steps, lambda r: (_rand(r, (3,)), _rand(r, (3,)))),
    ("map_rows", map_rows, lambda r: (_rand(r, (3, 4)), _rand(r, (4,)))),
    ("checkpoint_in_scan", checkpoint_in_scan, lambda r: (_rand(r, (3,)), _rand(r, (4, 3)))),
    ("cond_in_scan", cond_in_scan, lambda r: (_rand(r, (3,)), _rand(r, (4, 3)))),
]
IDS = [p[0] for p in PROGRAMS]

# built on an unbounded ``while``: not reverse-differentiable (as JAX)
FORWARD_ONLY = [
    ("fori_traced", fori_traced, lambda r: (_rand(r, (3,)),)),
    ("while_unbounded", while_unbounded, lambda r: (_rand(r, (3,)),)),
]
ALL_PROGRAMS = PROGRAMS + FORWARD_ONLY
ALL_IDS = [p[0] for p in ALL_PROGRAMS]


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


@pytest.mark.parametrize("name, f, builder", ALL_PROGRAMS, ids=ALL_IDS)
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


@pytest.mark.parametrize("name, f, builder", ALL_PROGRAMS, ids=ALL_IDS)
def test_jvp(name, f, builder):
    args = to_arrays(args_for(builder))
    tangents = to_arrays(args_for(builder, seed=7))
    primal, tangent = jvp(f, tuple(args), tuple(tangents))
    assert_trees_close(primal, f(*args), rtol=1e-6, atol=1e-6)
    assert_trees_close(tangent, numerical_jvp(f, args, tangents), rtol=2e-3, atol=2e-4)
    jitted = jit(lambda *a: jvp(f, a[:len(args)], a[len(args):]))
    assert_trees_close(jitted(*args, *tangents), (primal, tangent))
    check_traced(lambda *a: jvp(jit(f), a[:len(args)], a[len(args):]), *args, *tangents)


@pytest.mark.parametrize("name, f, builder", ALL_PROGRAMS, ids=ALL_IDS)
def test_vmap(name, f, builder):
    batched = to_arrays(batched_args_for(builder))
    want = loop_stack(f, batched)
    for stack in [vmap(f), vmap(jit(f)), jit(vmap(f))]:
        assert_trees_close(stack(*batched), want, rtol=1e-5, atol=1e-6)
        check_traced(stack, *batched)


@pytest.mark.parametrize("name, f, builder", ALL_PROGRAMS, ids=ALL_IDS)
def test_vmap_of_jvp_and_jvp_of_vmap(name, f, builder):
    batched = to_arrays(batched_args_for(builder))
    tangents = to_arrays(tree_map(lambda *xs: np.stack(xs),
                                  *[builder(np.random.default_rng(7 + i)) for i in range(BATCH)]))
    n = len(batched)

    def f_jvp(*a):
        return jvp(f, a[:n], a[n:])
    want = loop_stack(f_jvp, (*batched, *tangents))
    stacks = {
        "vmap∘jvp": vmap(f_jvp),
        "jvp∘vmap": lambda *a: jvp(vmap(f), a[:n], a[n:]),
        "jit∘vmap∘jvp": jit(vmap(f_jvp)),
        "vmap∘jvp∘jit": vmap(lambda *a: jvp(jit(f), a[:n], a[n:])),
    }
    for label, stack in stacks.items():
        assert_trees_close(stack(*batched, *tangents), want, rtol=1e-4, atol=1e-5), label
        check_traced(stack, *batched, *tangents)


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


_REVERSE_MODE_ERROR = "Reverse-mode differentiation does not work for lax.while_loop"


@pytest.mark.parametrize("name, f, builder", FORWARD_ONLY, ids=[p[0] for p in FORWARD_ONLY])
def test_reverse_mode_through_while_raises(name, f, builder):
    args = to_arrays(args_for(builder))
    F = total(f)
    batched = to_arrays(batched_args_for(builder))
    stacks = [(grad(F), args), (jit(grad(F)), args), (grad(jit(F)), args),
              (lambda *a: functrax.vjp(F, *a)[1](1.0), args),
              (vmap(grad(F)), batched)]
    for stack, a in stacks:
        with pytest.raises(ValueError, match=_REVERSE_MODE_ERROR):
            stack(*a)


def _all_primitives(jaxpr, into):
    """Names of the primitives of ``jaxpr`` and of every sub-jaxpr in its parameters."""
    for eqn in jaxpr.eqns:
        into.add(eqn.primitive.name)
        for v in eqn.params.values():
            for sub in (v if isinstance(v, (tuple, list)) else (v,)):
                sub = getattr(sub, "jaxpr", sub)
                if isinstance(sub, functrax.Jaxpr):
                    _all_primitives(sub, into)
    return into


def _jaxpr_of(f, builder):
    return make_jaxpr(f)(*to_arrays(args_for(builder))).jaxpr


_CONTROL_FLOW = {  # program -> the control-flow primitives it must contain (anywhere)
    "cond_closure": {"cond"}, "switch3": {"cond"}, "scan_rnn": {"scan"},
    "scan_rnn_reverse": {"scan"}, "fori_static": {"scan"}, "fori_traced": {"while"},
    "while_unbounded": {"while"}, "while_max_steps": {"scan"}, "map_rows": {"scan"},
    "checkpoint_in_scan": {"scan", "remat2"}, "cond_in_scan": {"scan", "cond"},
}


@pytest.mark.parametrize("name", sorted(_CONTROL_FLOW))
def test_control_flow_programs_use_their_primitives(name):
    _, f, builder = next(p for p in ALL_PROGRAMS if p[0] == name)
    prims = _all_primitives(_jaxpr_of(f, builder), set())
    assert _CONTROL_FLOW[name] <= prims, prims
    if name in ("fori_static", "while_max_steps"):
        assert "while" not in prims, prims  # static bounds / max_steps: a scan, no while
    if name == "switch3":
        cond_eqn = next(e for e in _jaxpr_of(f, builder).eqns if e.primitive.name == "cond")
        assert len(cond_eqn.params["branches"]) == 3
    if name == "scan_rnn_reverse":
        scan_eqn = next(e for e in _jaxpr_of(f, builder).eqns if e.primitive.name == "scan")
        assert scan_eqn.params["reverse"] is True


def _lanes(builder, fn):
    """``fn`` of each lane's arguments (Python values)."""
    return [fn(*to_arrays(unbatch(batched_args_for(builder), i))) for i in range(BATCH)]


def _while_trips(cond_fun, body_fun, init):
    val, n = init, 0
    while cond_fun(val):
        val, n = body_fun(val), n + 1
    return n


def _scan_branches(c, ys):
    """The branches ``cond_in_scan`` takes, step by step."""
    taken = []
    for y in ys:
        taken.append(bool(fnp.sum(c * y) > 0))
        c = fnp.sin(c) + y if taken[-1] else c * y - 0.5
    return tuple(taken)


_LANE_DECISIONS = {  # under vmap the lanes must take different branches / trip counts
    "cond_closure": lambda x, y: bool(fnp.sum(x * y) < -0.5),
    "cond_in_scan": lambda x, ys: _scan_branches(x, ys),
    "switch3": lambda x, y: int(fnp.argmax(x)),
    "fori_traced": lambda x: int(fnp.sum(x > 0)),
    "while_unbounded": lambda x: _while_trips(_small, _grow, (0, x)),
    "while_max_steps": lambda x, y: _while_trips(_small, _grow_by(y), (0.0, x)),
}


@pytest.mark.parametrize("name", sorted(_LANE_DECISIONS))
def test_vmap_lanes_take_different_paths(name):
    _, f, builder = next(p for p in ALL_PROGRAMS if p[0] == name)
    decisions = _lanes(builder, _LANE_DECISIONS[name])
    assert len(set(decisions)) == BATCH, decisions
    if name == "while_max_steps":
        assert max(decisions) <= 10, decisions  # the loop finishes within max_steps


def test_matrix_covers_the_promised_features():
    names = {p[0] for p in ALL_PROGRAMS}
    assert len(PROGRAMS) >= 12
    assert {"closure", "mlp", "tree_out", "fan_out", "nested_calls", "jitted_inner",
            "pow_where_select", "reductions", "indexing", "custom_jvp",
            "checkpoint"} <= names
    assert set(_CONTROL_FLOW) <= names
    prims = set()
    for _, f, builder in ALL_PROGRAMS:
        _all_primitives(_jaxpr_of(f, builder), prims)
    assert {"integer_pow", "select_n", "reduce_sum", "reduce_max", "scatter-add",
            "custom_jvp_call", "remat2", "jit", "dot_general", "gather",
            "cond", "scan", "while"} <= prims
