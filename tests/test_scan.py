"""lax.scan and lax.map against Python-loop references, under every transformation.

References: ``loop_scan`` runs the body eagerly in a Python loop over the slices of ``xs``
(no scan primitive involved) and stacks the ys; vmap references loop over the batch;
derivatives are checked against finite differences (``check_grads``, float64) and against
the derivatives of the unrolled loop. Every jaxpr traced here passes ``check_jaxpr``.
"""
from __future__ import annotations

import doctest
import sys

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import check_jaxpr, grad, jit, jvp, lax, make_jaxpr, vjp, vmap
from functrax.control_flow.scan import scan_p
from functrax.test_util import check_grads, enable_x64
from functrax.tree_util import tree_flatten, tree_map, tree_unflatten
from tests.vectors import vector_path

VECTORS = vector_path("jax_jaxprs.md")
RNG = np.random.default_rng(0)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def assert_tree_close(a, b, rtol=1e-5, atol=1e-6):
    la, ta = tree_flatten(a)
    lb, tb = tree_flatten(b)
    assert ta == tb, f"structures differ: {ta} vs {tb}"
    for x, y in zip(la, lb):
        if np.asarray(x).dtype == functrax.dtypes.float0:
            assert np.asarray(y).dtype == functrax.dtypes.float0
            continue
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


def loop_scan(f, init, xs=None, length=None, reverse=False):
    """The reference: a Python loop over the slices, ys stacked (no scan primitive)."""
    leaves, tree = tree_flatten(xs)
    n = length if length is not None else leaves[0].shape[0]
    carry, ys = init, [None] * n
    for i in (reversed(range(n)) if reverse else range(n)):
        carry, ys[i] = f(carry, tree_unflatten(tree, [x[i] for x in leaves]))
    if n == 0:
        return carry, None
    return carry, tree_map(lambda *y: fnp.stack(y), *ys)


def traced(f, *args):
    """``make_jaxpr(f)(*args)``, type-checked; also checks that evaluating it agrees."""
    closed = make_jaxpr(f)(*args)
    check_jaxpr(closed)
    out = functrax.eval_jaxpr(closed.jaxpr, closed.consts, *tree_flatten(args)[0])
    assert_tree_close(out, tree_flatten(f(*args))[0])
    return closed


def scan_eqns(jaxpr):
    """Every scan equation of ``jaxpr`` and its sub-jaxprs."""
    out = []
    for eqn in jaxpr.eqns:
        if eqn.primitive is scan_p:
            out.append(eqn)
            out.extend(scan_eqns(eqn.params["jaxpr"].jaxpr))
    return out


# --- bodies ---


def cumsum_body(c, x):
    return c + x, c * x


def tree_body(c, x):
    """Pytree carry (dict with a tuple) and pytree x/y."""
    a, (b, n) = c["a"], c["b"]
    a = a * 0.9 + fnp.sin(x["u"]) * b
    b = b + x["v"].sum()
    return {"a": a, "b": (b, n + 1)}, (a.sum(), {"prod": a * x["u"]})


def tree_args():
    init = {"a": rand(3), "b": (np.float32(0.5), np.int32(0))}
    xs = {"u": rand(5, 3), "v": rand(5, 2)}
    return init, xs


# --- forward semantics ---


@pytest.mark.parametrize("reverse", [False, True])
def test_pytrees_match_python_loop(reverse):
    init, xs = tree_args()
    want = loop_scan(tree_body, init, xs, reverse=reverse)
    got = lax.scan(tree_body, init, xs, reverse=reverse)
    assert_tree_close(got, want)
    assert got[0]["b"][1].dtype == np.int32
    traced(lambda i, x: lax.scan(tree_body, i, x, reverse=reverse), init, xs)


def test_cumsum_values_and_dtypes():
    c, ys = lax.scan(cumsum_body, 0.0, fnp.arange(5.0))
    np.testing.assert_allclose(np.asarray(c), 10.0)
    np.testing.assert_allclose(np.asarray(ys), [0, 0, 2, 9, 24])
    assert c.dtype == np.float32 and not c.weak_type


def test_length_without_xs():
    def body(c, x):
        assert x is None
        return c * 2.0, c
    got = lax.scan(body, fnp.ones(2), None, length=4)
    want = loop_scan(body, fnp.ones(2), None, length=4)
    assert_tree_close(got, want)
    assert got[1].shape == (4, 2)


def test_length_zero():
    c, ys = lax.scan(cumsum_body, fnp.float32(3.0), fnp.zeros((0,)))
    assert float(c) == 3.0 and ys.shape == (0,)


def test_none_ys_and_empty_carry():
    c, ys = lax.scan(lambda c, x: (c + x, None), 0.0, fnp.arange(4.0))
    assert ys is None and float(c) == 6.0
    c, ys = lax.scan(lambda c, x: ((), x * 2), (), fnp.arange(3.0))
    assert c == () and np.allclose(np.asarray(ys), [0, 2, 4])


@pytest.mark.parametrize("unroll", [0, 1, 2, 3, True, False])
def test_unroll_gives_the_same_result(unroll):
    xs = rand(7, 2)
    got = lax.scan(cumsum_body, fnp.zeros(2), xs, unroll=unroll)
    assert_tree_close(got, loop_scan(cumsum_body, fnp.zeros(2), xs))
    (eqn,) = scan_eqns(traced(lambda x: lax.scan(cumsum_body, fnp.zeros(2), x,
                                                 unroll=unroll), xs).jaxpr)
    want = (7 if unroll else 1) if isinstance(unroll, bool) else unroll
    assert eqn.params["unroll"] == want


def test_weak_typed_init_is_promoted_to_the_carry_output_type():
    # a Python int init with a float body: JAX converts the init and traces again
    c, ys = lax.scan(lambda c, x: (c + x, c), 0, fnp.arange(3.0))
    assert c.dtype == np.float32 and ys.dtype == np.float32
    np.testing.assert_allclose(np.asarray(ys), [0, 0, 1])
    closed = traced(lambda xs: lax.scan(lambda c, x: (c + x, c), 0, xs), fnp.arange(3.0))
    assert "convert_element_type[new_dtype=float32 weak_type=False] 0" in str(closed)


def test_closures_over_arrays_and_outer_tracers():
    w = rand(3)

    def f(s, xs):
        return lax.scan(lambda c, x: (c * w + x * s, c.sum()), fnp.ones(3), xs)

    xs = rand(4, 3)
    want = loop_scan(lambda c, x: (c * w + x * 2.0, c.sum()), fnp.ones(3), xs)
    assert_tree_close(f(2.0, xs), want)
    assert_tree_close(jit(f)(2.0, xs), want)
    (eqn,) = scan_eqns(traced(f, 2.0, xs).jaxpr)
    assert eqn.params["num_consts"] == 2  # the closed-over array and the outer tracer s
    # d/ds through the closed-over outer tracer
    g = grad(lambda s: f(s, xs)[0].sum())(2.0)
    g_ref = grad(lambda s: loop_scan(lambda c, x: (c * w + x * s, c.sum()), fnp.ones(3),
                                     xs)[0].sum())(2.0)
    assert_tree_close(g, g_ref)


def test_nested_scan():
    def f(xs):
        def outer(c, row):
            inner_c, ys = lax.scan(lambda a, v: (a * 0.5 + v, a), c, row)
            return inner_c, ys.sum()
        return lax.scan(outer, 0.0, xs)

    def ref(xs):
        return loop_scan(lambda c, row: (lambda r: (r[0], r[1].sum()))(
            loop_scan(lambda a, v: (a * 0.5 + v, a), c, row)), 0.0, xs)

    xs = rand(3, 4)
    assert_tree_close(f(xs), ref(xs))
    assert len(scan_eqns(traced(f, xs).jaxpr)) == 2
    assert_tree_close(grad(lambda x: f(x)[1].sum())(xs), grad(lambda x: ref(x)[1].sum())(xs))


# --- printing ---


def _jax_text(title):
    if not VECTORS.exists():
        pytest.skip("shared/vectors not available")
    out = VECTORS.read_text().split("## output", 1)[1]
    block = out.split(f"=== {title}\n", 1)[1].split("\n    ===", 1)[0]
    return "\n".join(line[4:] for line in block.splitlines() if line.strip())


def test_printed_jaxpr_matches_jax():
    def h(c, xs):
        return lax.scan(lambda c, x: (c + x, c * x), c, xs)
    closed = traced(h, 0.0, fnp.arange(5.0))
    assert str(closed) == _jax_text("scan")


def test_printed_params_of_a_scan_with_consts():
    w = fnp.arange(3.0)
    closed = make_jaxpr(lambda xs: lax.scan(lambda c, x: (c + w * x, None), fnp.zeros(3),
                                            xs, reverse=True))(fnp.ones((2, 3)))
    text = str(closed)
    for part in ("num_consts=1", "num_carry=1", "length=2", "reverse=True", "unroll=1"):
        assert part in text


# --- errors (JAX's texts) ---


def test_carry_type_mismatch_error():
    with pytest.raises(TypeError) as e:
        lax.scan(lambda c, x: ((c[0] + x, c[1]), x), (fnp.float32(0.0), 1.0), fnp.ones((2, 3)))
    msg = str(e.value)
    assert msg.startswith("scan body function carry input and carry output must have equal "
                          "types (e.g. shapes and dtypes of arrays), but they differ:\n\n")
    assert ("The input carry component c[0] has type float32[] but the corresponding output "
            "carry component has type float32[3], so the shapes do not match.") in msg
    assert msg.endswith("Revise the function so that all output types (e.g. shapes and "
                        "dtypes) match the corresponding input types.")


def test_carry_dtype_mismatch_error_names_the_dtypes():
    with pytest.raises(TypeError, match="The input carry carry has type int32\\[\\] but the "
                       "corresponding output carry component has type float32\\[\\], so the "
                       "dtypes do not match"):
        lax.scan(lambda carry, x: (carry + x, x), fnp.zeros((), np.int32), fnp.arange(3.0))


def test_several_carry_mismatches_are_listed():
    with pytest.raises(TypeError) as e:
        lax.scan(lambda c, x: ((c[0] + x, c[1] + x), x), (fnp.float32(0), fnp.float32(0)),
                 fnp.ones((2, 3)))
    assert "  * the input carry component c[0] has type float32[]" in str(e.value)
    assert "  * the input carry component c[1] has type float32[]" in str(e.value)


def test_carry_structure_mismatch_error():
    with pytest.raises(TypeError) as e:
        lax.scan(lambda carry, x: ({"m": carry["m"] + x, "n": x}, x), {"m": 0.0},
                 fnp.arange(3.0))
    assert str(e.value) == (
        "scan body function carry input and carry output must have the same pytree "
        "structure, but they differ:\n\nThe input carry carry is a <class 'dict'> with 1 "
        "child but the corresponding component of the carry output is a <class 'dict'> "
        "with 2 children, so the numbers of children do not match, with the symmetric "
        "difference of key sets: {'n'}.\n\nRevise the function so that the carry output "
        "has the same pytree structure as the carry input.")


def test_body_output_must_be_a_pair():
    with pytest.raises(TypeError, match="scan body output must be a pair, got"):
        lax.scan(lambda c, x: c + x, 0.0, fnp.arange(3.0))


def test_leading_axis_errors():
    with pytest.raises(ValueError, match=r"^scan got values with different leading axis "
                       r"sizes: 3, 4\.$"):
        lax.scan(lambda c, x: (c, x), 0.0, (fnp.ones(3), fnp.ones(4)))
    with pytest.raises(ValueError, match=r"scan got `length` argument of 5 which disagrees "
                       r"with leading axis sizes \[3\]\."):
        lax.scan(lambda c, x: (c, x), 0.0, fnp.ones(3), length=5)
    with pytest.raises(ValueError, match="scan got no values to scan over and `length` not "
                       "provided."):
        lax.scan(lambda c, x: (c, x), 0.0)
    with pytest.raises(ValueError, match="scan got value with no leading axis to scan over"):
        lax.scan(lambda c, x: (c, x), 0.0, 1.0)
    with pytest.raises(ValueError, match="`unroll` must be a `bool` or a non-negative `int`."):
        lax.scan(lambda c, x: (c, x), 0.0, fnp.ones(3), unroll=-1)


def test_traced_length_error():
    with pytest.raises(functrax.ConcretizationTypeError, match="The `length` argument to "
                       "`scan` expects a concrete `int` value"):
        jit(lambda n: lax.scan(lambda c, x: (c, c), 0.0, None, length=n))(3)


def test_check_jaxpr_catches_a_malformed_scan():
    closed = make_jaxpr(lambda c, xs: lax.scan(cumsum_body, c, xs))(fnp.float32(0),
                                                                   fnp.ones(4))
    (eqn,) = closed.jaxpr.eqns
    bad = functrax.ClosedJaxpr(functrax.Jaxpr(
        closed.jaxpr.constvars, closed.jaxpr.invars, closed.jaxpr.outvars,
        [eqn.replace(params=dict(eqn.params, length=3))]), closed.consts)
    with pytest.raises(functrax.JaxprTypeError, match="xs operand 0 has type f32\\[4\\]"):
        check_jaxpr(bad)
    with pytest.raises(TypeError, match="carry input 0 has type f32\\[3\\]"):
        scan_p.bind(fnp.ones(3), fnp.ones(4), **eqn.params)


# --- jvp and grad ---


def test_jvp_matches_unrolled_loop():
    init, xs = tree_args()
    t_init = tree_map(lambda a: rand(*np.shape(a)) if a.dtype.kind == "f" else
                      np.zeros(np.shape(a), functrax.dtypes.float0), init)
    t_xs = tree_map(lambda a: rand(*a.shape), xs)
    got = jvp(lambda i, x: lax.scan(tree_body, i, x), (init, xs), (t_init, t_xs))
    want = jvp(lambda i, x: loop_scan(tree_body, i, x), (init, xs), (t_init, t_xs))
    assert_tree_close(got, want, rtol=1e-5, atol=1e-5)


def test_jvp_carry_tangent_made_nonzero_by_a_const():
    # the init has a zero tangent, the tangent of w makes the carry's nonzero (fixed point)
    def f(w, xs):
        return lax.scan(lambda c, x: (c * 0.5 + w * x, c), 1.0, xs)
    xs = rand(4)
    got = jvp(f, (2.0, xs), (1.0, np.zeros(4, np.float32)))
    want = jvp(lambda w, x: loop_scan(lambda c, v: (c * 0.5 + w * v, c), 1.0, x), (2.0, xs),
               (1.0, np.zeros(4, np.float32)))
    assert_tree_close(got, want)
    closed = traced(lambda w, t: jvp(f, (w, xs), (t, np.zeros(4, np.float32))), 2.0, 1.0)
    (eqn,) = scan_eqns(closed.jaxpr)
    assert eqn.params["num_carry"] == 2  # the primal and the tangent carry


def test_check_grads_float64():
    def f(w, init, xs):
        def body(c, x):
            h = fnp.tanh(w @ c + x)
            return h, fnp.sin(h) * x
        return lax.scan(body, init, xs, reverse=True)
    with enable_x64():
        args = (rand(3, 3, dtype=np.float64) * 0.5, rand(3, dtype=np.float64),
                rand(4, 3, dtype=np.float64))
        check_grads(f, args, order=2, modes=("fwd", "rev"))


def test_check_grads_pytree_body():
    def f(a, u, v):
        init = {"a": a, "b": (1.0, 0)}
        return lax.scan(tree_body, init, {"u": u, "v": v})
    with enable_x64():
        check_grads(f, (rand(3, dtype=np.float64), rand(5, 3, dtype=np.float64),
                        rand(5, 2, dtype=np.float64)), order=1)


def test_grad_with_an_integer_counter_in_the_carry():
    def f(xs):
        (i, c), ys = lax.scan(lambda c, x: ((c[0] + 1, c[1] * x + c[0]), c[1]),
                              (0, 1.0), xs)
        return c + ys.sum() + i
    xs = rand(5)
    ref = lambda x: (lambda r: r[0][1] + r[1].sum() + r[0][0])(  # noqa: E731
        loop_scan(lambda c, v: ((c[0] + 1, c[1] * v + c[0]), c[1]), (0, 1.0), x))
    assert_tree_close(grad(f)(xs), grad(ref)(xs))
    traced(grad(f), xs)


def _rnn_params(hidden, n_in, seed):
    rng = np.random.default_rng(seed)
    return {"W": (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(np.float32),
            "U": (rng.standard_normal((n_in, hidden)) * 0.5).astype(np.float32),
            "b": np.zeros(hidden, np.float32), "v": rng.standard_normal(hidden).astype(
                np.float32)}


def _rnn_cell(p):
    def cell(h, x):
        h = fnp.tanh(h @ p["W"] + x @ p["U"] + p["b"])
        return h, h @ p["v"]
    return cell


def test_grad_of_100_step_rnn_equals_unrolled_loop():
    params = _rnn_params(8, 3, seed=1)
    xs = np.random.default_rng(2).standard_normal((100, 2, 3)).astype(np.float32)

    def loss(p, h0, run):
        h, ys = run(_rnn_cell(p), h0, xs)
        return (ys ** 2).mean() + h.sum()

    h0 = np.zeros((2, 8), np.float32)
    g_scan = grad(loss, argnums=(0, 1))(params, h0, lax.scan)
    g_loop = grad(loss, argnums=(0, 1))(params, h0, loop_scan)
    assert_tree_close(g_scan, g_loop, rtol=1e-5, atol=1e-5)
    g_jit = jit(grad(lambda p, h: loss(p, h, lax.scan), argnums=(0, 1)))(params, h0)
    assert_tree_close(g_jit, g_loop, rtol=1e-5, atol=1e-5)


def _residual_count(f, *args):
    """Stacked residuals the forward scan of ``grad(f)`` stores (its ys beyond the primal
    ys, which are none here)."""
    closed = make_jaxpr(grad(f))(*args)
    check_jaxpr(closed)
    fwd = [e for e in closed.jaxpr.eqns if e.primitive is scan_p and not e.params["reverse"]]
    assert len(fwd) == 1
    return len(fwd[0].outvars) - fwd[0].params["num_carry"]


def test_checkpoint_in_body_reduces_stored_residuals():
    def body(c, x):
        return fnp.sin(fnp.sin(fnp.sin(c * x))), None

    def f(c, xs, b):
        return lax.scan(b, c, xs)[0]

    xs = rand(6, 3)
    plain = _residual_count(lambda c: f(c, xs, body).sum(), fnp.ones(3))
    remat = _residual_count(lambda c: f(c, xs, functrax.checkpoint(body)).sum(), fnp.ones(3))
    assert plain == 3  # the three cosines (x itself is read from xs, not stored again)
    assert remat == 1  # only the carry entering each step
    g_plain = grad(lambda c: f(c, xs, body).sum())(fnp.ones(3))
    g_remat = grad(lambda c: f(c, xs, functrax.checkpoint(body)).sum())(fnp.ones(3))
    assert_tree_close(g_plain, g_remat)
    assert_tree_close(g_plain, grad(lambda c: loop_scan(body, c, xs)[0].sum())(fnp.ones(3)))


def test_loop_invariant_residuals_are_not_stacked():
    w, xs = rand(4, 4), rand(5, 4)

    def f(w, xs, run=lax.scan):
        return run(lambda c, x: (fnp.tanh(c @ w.T + x), None), fnp.ones(4), xs)[0].sum()

    closed = make_jaxpr(grad(f))(w, xs)
    check_jaxpr(closed)
    fwd = [e for e in closed.jaxpr.eqns if e.primitive is scan_p and not e.params["reverse"]]
    stacked = [v.aval.shape for v in fwd[0].outvars[fwd[0].params["num_carry"]:]]
    assert (5, 4, 4) not in stacked  # w.T depends only on consts: computed once
    assert_tree_close(grad(f)(w, xs), grad(lambda w, x: f(w, x, loop_scan))(w, xs))


def test_vjp_cotangents_of_consts_carry_and_xs():
    w = rand(3)

    def f(w, c, xs):
        return lax.scan(lambda c, x: (c * w + x, fnp.sin(c) * x), c, xs)

    def ref(w, c, xs):
        return loop_scan(lambda c, x: (c * w + x, fnp.sin(c) * x), c, xs)

    args = (w, rand(3), rand(4, 3))
    out, pull = vjp(f, *args)
    out_r, pull_r = vjp(ref, *args)
    cts = (rand(3), rand(4, 3))
    assert_tree_close(out, out_r)
    assert_tree_close(pull(cts), pull_r(cts), rtol=1e-5, atol=1e-5)
    # a zero cotangent for the ys
    cts0 = (rand(3), np.zeros((4, 3), np.float32))
    assert_tree_close(pull(cts0), pull_r(cts0), rtol=1e-5, atol=1e-5)


def test_linearize_and_linear_transpose():
    xs = rand(4, 2)
    f = lambda c: lax.scan(lambda c, x: (c * 0.5 + x * c, c), c, xs)  # noqa: E731
    r = lambda c: loop_scan(lambda c, x: (c * 0.5 + x * c, c), c, xs)  # noqa: E731
    c0, t = rand(2), rand(2)
    _, lin = functrax.linearize(f, c0)
    _, lin_r = functrax.linearize(r, c0)
    assert_tree_close(lin(t), lin_r(t))
    g = lambda x: lax.scan(lambda c, v: (c + v * 2.0, c - v), fnp.zeros(2), x)  # noqa: E731
    t_fn = functrax.linear_transpose(g, xs)
    cts = (rand(2), rand(4, 2))
    want = vjp(g, xs)[1](cts)
    assert_tree_close(t_fn(cts), want)


# --- vmap ---


def _vmap_ref(f, in_axes, *args):
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [f(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, in_axes)])
            for i in range(size)]
    return tree_map(lambda *o: np.stack([np.asarray(v) for v in o]), *outs)


def _vf(w, c, xs):
    return lax.scan(lambda c, x: (fnp.tanh(c * w + x), (c * x).sum()), c, xs)


@pytest.mark.parametrize("in_axes", [(None, 0, None), (None, None, 0), (None, 0, 1),
                                     (0, None, None), (1, 0, 2), (0, 0, 0)],
                         ids=["init", "xs", "init+xs(axis1)", "consts", "all-nonzero-axes",
                              "all"])
def test_vmap_matches_loop_over_examples(in_axes):
    shapes = {0: [(3, 2), (3, 2), (3, 4, 2)], 1: [(2, 3), (2, 3), (4, 3, 2)],
              2: [(2, 3), (2, 3), (4, 2, 3)]}
    base = [(2,), (2,), (4, 2)]
    args = [rand(*(shapes[ax][i] if ax is not None else base[i])) for i, ax in
            enumerate(in_axes)]
    got = vmap(_vf, in_axes=in_axes)(*args)
    assert_tree_close(got, _vmap_ref(_vf, in_axes, *args))
    closed = traced(vmap(_vf, in_axes=in_axes), *args)
    assert len(scan_eqns(closed.jaxpr)) == 1


def test_vmap_carry_becomes_batched_by_xs():
    # unbatched init, batched xs: the carry is batched after one step (fixed point)
    xs = rand(3, 5)
    f = lambda x: lax.scan(lambda c, v: (c + v, c), 0.0, x)  # noqa: E731
    assert_tree_close(vmap(f)(xs), _vmap_ref(f, (0,), xs))


def test_vmap_of_jit_of_scan_and_out_axes():
    xs = rand(2, 6, 3)
    f = jit(lambda x: lax.scan(cumsum_body, fnp.zeros(3), x))
    got = vmap(f, out_axes=1)(xs)
    want = _vmap_ref(f, (0,), xs)
    assert_tree_close(got, tree_map(lambda a: np.moveaxis(a, 0, 1), want))


def test_vmap_with_a_collective_in_the_body():
    xs = rand(4, 3)
    f = lambda x: lax.scan(lambda c, v: (c + lax.psum(v, "i"), c), 0.0, x)  # noqa: E731
    got = vmap(f, axis_name="i", in_axes=1)(xs)
    ref = loop_scan(lambda c, v: (c + v.sum(), c), 0.0, xs)
    assert_tree_close(got, tree_map(lambda a: np.stack([np.asarray(a)] * 3), ref))


# --- jit and compositions ---


def test_jit_matches_eager_and_caches_the_body():
    init, xs = tree_args()
    f = jit(lambda i, x: lax.scan(tree_body, i, x))
    assert_tree_close(f(init, xs), loop_scan(tree_body, init, xs))
    assert_tree_close(f(init, xs), lax.scan(tree_body, init, xs))


def _rnn_loss(p, xs, run=lax.scan):
    h, ys = run(_rnn_cell(p), fnp.zeros((2, 4)), xs)
    return (ys ** 2).sum() + (h ** 2).sum()


def _rnn_setup():
    return _rnn_params(4, 3, seed=3), rand(6, 2, 3)


@pytest.mark.parametrize("stack", ["grad", "grad(jit)", "jit(grad)", "vmap(grad)",
                                   "grad(vmap)", "jit(vmap(grad))"])
def test_compositions(stack):
    p, xs = _rnn_setup()
    loss_ref = lambda p, x: _rnn_loss(p, x, loop_scan)  # noqa: E731
    if stack == "grad":
        got, want = grad(_rnn_loss)(p, xs), grad(loss_ref)(p, xs)
    elif stack == "grad(jit)":
        got, want = grad(jit(_rnn_loss))(p, xs), grad(loss_ref)(p, xs)
    elif stack == "jit(grad)":
        got, want = jit(grad(_rnn_loss))(p, xs), grad(loss_ref)(p, xs)
    elif stack in ("vmap(grad)", "jit(vmap(grad))"):
        xb = rand(3, 6, 2, 3)
        f = vmap(grad(_rnn_loss), in_axes=(None, 0))
        f = jit(f) if stack.startswith("jit") else f
        got = f(p, xb)
        want = _vmap_ref(lambda x: grad(loss_ref)(p, x), (0,), xb)
    else:
        xb = rand(3, 6, 2, 3)
        got = grad(lambda p: vmap(_rnn_loss, in_axes=(None, 0))(p, xb).sum())(p)
        want = grad(lambda p: sum(loss_ref(p, xb[i]) for i in range(3)))(p)
    assert_tree_close(got, want, rtol=1e-4, atol=1e-5)
    fns = {"grad": grad(_rnn_loss), "jit(grad)": jit(grad(_rnn_loss))}
    if stack in fns:
        traced(fns[stack], p, xs)


def test_hessian_through_scan():
    xs = rand(3)
    f = lambda w: lax.scan(lambda c, x: (fnp.sin(c * w + x), c), 0.5, xs)[0]  # noqa: E731
    r = lambda w: loop_scan(lambda c, x: (fnp.sin(c * w + x), c), 0.5, xs)[0]  # noqa: E731
    assert_tree_close(grad(grad(f))(0.7), grad(grad(r))(0.7), rtol=1e-4, atol=1e-5)
    traced(grad(grad(f)), 0.7)


def test_every_transformed_jaxpr_type_checks():
    p, xs = _rnn_setup()
    for f, args in [(grad(_rnn_loss), (p, xs)),
                    (vmap(grad(_rnn_loss), in_axes=(None, 0)), (p, rand(2, 6, 2, 3))),
                    (lambda p, x: jvp(lambda q: _rnn_loss(q, x), (p,), (p,)), (p, xs)),
                    (lambda x: vjp(lambda c: _vf(0.5, c, x), fnp.ones(2))[1](
                        (fnp.ones(2), fnp.ones(4))), (rand(4, 2),))]:
        traced(f, *args)


# --- map ---


def test_map_matches_loop():
    xs = {"a": rand(5, 2), "b": rand(5)}
    f = lambda x: x["a"] * x["b"] + 1.0  # noqa: E731
    want = np.stack([np.asarray(f({"a": xs["a"][i], "b": xs["b"][i]})) for i in range(5)])
    assert_tree_close(lax.map(f, xs), want)
    closed = traced(lambda x: lax.map(f, x), xs)
    assert len(scan_eqns(closed.jaxpr)) == 1


@pytest.mark.parametrize("batch_size", [1, 2, 3, 5, 8])
def test_map_with_batch_size(batch_size):
    xs = rand(5, 3)
    f = lambda x: (fnp.sin(x).sum(), x * 2)  # noqa: E731
    want = (np.sin(xs).sum(1), xs * 2)
    got = lax.map(f, xs, batch_size=batch_size)
    assert_tree_close(got, want)
    assert_tree_close(jit(lambda x: lax.map(f, x, batch_size=batch_size))(xs), want)
    traced(lambda x: lax.map(f, x, batch_size=batch_size), xs)
    g = grad(lambda x: lax.map(f, x, batch_size=batch_size)[0].sum())(xs)
    assert_tree_close(g, np.cos(xs))


def test_map_bad_batch_size():
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        lax.map(lambda x: x, fnp.ones(3), batch_size=0)


def test_docstring_examples():
    result = doctest.testmod(sys.modules["functrax.control_flow.scan"])
    assert result.attempted >= 2 and result.failed == 0


def test_unroll_zero_is_full_unroll_and_a_traced_unroll_is_rejected():
    xs = rand(4, 2)
    assert_tree_close(lax.scan(cumsum_body, fnp.zeros(2), xs, unroll=0),
                      loop_scan(cumsum_body, fnp.zeros(2), xs))
    with pytest.raises(functrax.ConcretizationTypeError, match="The `unroll` argument to `scan` "
                       "expects a concrete `int` or `bool` value."):
        jit(lambda u: lax.scan(cumsum_body, fnp.zeros(2), xs, unroll=u))(2)
