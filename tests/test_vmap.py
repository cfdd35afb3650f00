"""vmap: the API and its errors (worded as JAX words them), composition with the autodiff
transforms against Python-loop references, vmap-based jacfwd/jacrev/hessian against closed
forms, ``chunk_size``, and the jaxprs of vmapped functions."""
from __future__ import annotations

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import (
    check_jaxpr,
    grad,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    lax,
    make_jaxpr,
    value_and_grad,
    vjp,
    vmap,
)
from functrax.tree_util import tree_flatten, tree_map

RNG = np.random.RandomState(0)


def rand(*shape):
    return fnp.asarray(np.asarray(RNG.randn(*shape), np.float32))


def np_(x):
    return np.asarray(x)


def loop_ref(f, in_axes, args, out_axis=0):
    """The Python-loop reference for ``vmap(f, in_axes)(*args)``: slice, call, stack."""
    size = next(np_(a).shape[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = []
    for i in range(size):
        sliced = [a if ax is None else fnp.asarray(np.take(np_(a), i, axis=ax))
                  for a, ax in zip(args, in_axes)]
        outs.append(f(*sliced))
    leaves = [tree_flatten(o)[0] for o in outs]
    tree = tree_flatten(outs[0])[1]
    stacked = [np.stack([np_(lv[k]) for lv in leaves], axis=out_axis)
               for k in range(len(leaves[0]))]
    return tree.unflatten(stacked)


def assert_trees_close(got, want, rtol=1e-5, atol=1e-6):
    g, gt = tree_flatten(got)
    w, wt = tree_flatten(want)
    assert gt == wt, (gt, wt)
    for a, b in zip(g, w):
        assert np_(a).shape == np_(b).shape, (np_(a).shape, np_(b).shape)
        np.testing.assert_allclose(np_(a), np_(b), rtol=rtol, atol=atol)


def assert_trees_equal(got, want):
    g, gt = tree_flatten(got)
    w, wt = tree_flatten(want)
    assert gt == wt, (gt, wt)
    for a, b in zip(g, w):
        assert np_(a).dtype == np_(b).dtype
        np.testing.assert_array_equal(np_(a), np_(b))


def check_traced(f, *args):
    """Trace ``f``, type-check its jaxpr, and check that evaluating it agrees with eager."""
    closed = make_jaxpr(f)(*args)
    check_jaxpr(closed)
    outs = functrax.eval_jaxpr(closed.jaxpr, closed.consts, *tree_flatten(args)[0])
    assert_trees_close(outs, tree_flatten(f(*args))[0])
    return closed


# --- a tiny MLP used by the composition tests ---


def mlp_params(sizes=(3, 5, 2)):
    return [(rand(m, n) / np.sqrt(m), rand(n) * 0.1) for m, n in zip(sizes[:-1], sizes[1:])]


def mlp_loss(params, x, y):
    for w, b in params[:-1]:
        x = fnp.tanh(fnp.dot(x, w) + b)
    w, b = params[-1]
    return fnp.sum((fnp.dot(x, w) + b - y) ** 2)


# --- API: in_axes / out_axes / kwargs / axis_size ---


def test_in_axes_pytree_prefix_nested_tuple():
    # JAX's docstring example: per-leaf axes inside a tuple argument
    x, y, z = rand(6, 2, 3), rand(3, 6, 4), rand(4, 5, 6)

    def foo(tree):
        x, (y, z) = tree
        return fnp.dot(x, fnp.dot(y, z))
    got = vmap(foo, in_axes=((0, (1, 2)),))((x, (y, z)))
    want = np.stack([np_(x)[i] @ (np_(y)[:, i] @ np_(z)[..., i]) for i in range(6)])
    assert got.shape == (6, 2, 5)
    np.testing.assert_allclose(np_(got), want, rtol=1e-5, atol=1e-5)


def test_in_axes_dict_prefix_with_none_leaves():
    dct = {"a": fnp.asarray(0.5), "b": fnp.arange(5.0)}
    got = vmap(lambda d, x: d["a"] + d["b"] + x, in_axes=({"a": None, "b": 0}, None))(dct, 1.0)
    np.testing.assert_allclose(np_(got), 1.5 + np.arange(5.0))
    # a None leaf covers a whole subtree
    params = {"w": rand(3, 2), "s": (rand(2), rand(2))}
    xs = rand(4, 3)
    f = lambda p, x: fnp.dot(x, p["w"]) * p["s"][0] + p["s"][1]
    got = vmap(f, in_axes=({"w": None, "s": None}, 0))(params, xs)
    assert_trees_close(got, loop_ref(f, (None, 0), (params, xs)))
    got = vmap(f, in_axes=(None, 0))(params, xs)
    assert_trees_close(got, loop_ref(f, (None, 0), (params, xs)))


def test_in_axes_list_is_treated_as_tuple():
    a, b = rand(4, 3), rand(3)
    got = vmap(lambda a, b: a * b, in_axes=[0, None])(a, b)
    np.testing.assert_allclose(np_(got), np_(a) * np_(b), rtol=1e-6)


def test_kwargs_are_mapped_over_axis_0():
    a, b = rand(3, 4), rand(4, 3)
    # in_axes covers the positional argument only; the keyword argument maps its axis 0
    got = vmap(lambda a, b: a * b, in_axes=(1,))(a, b=b)
    np.testing.assert_allclose(np_(got), np_(a).T * np_(b), rtol=1e-6)
    got = vmap(lambda a, b: a - b)(a.T, b=b)
    np.testing.assert_allclose(np_(got), np_(a).T - np_(b), rtol=1e-6)


@pytest.mark.parametrize("in_axis", [-1, -2, 0, 1])
@pytest.mark.parametrize("out_axis", [-1, -2, 0, 1])
def test_negative_and_positive_in_out_axes(in_axis, out_axis):
    x, w = rand(3, 4), rand(3, 4)
    f = lambda r: fnp.outer(fnp.sin(r), r)
    got = vmap(f, in_axes=in_axis, out_axes=out_axis)(x)
    ax = in_axis % 2
    want = loop_ref(f, (ax,), (x,), out_axis=out_axis % 3)
    np.testing.assert_allclose(np_(got), want, rtol=1e-6)
    # two arguments mapped along different axes
    g = lambda a, b: a * b + fnp.sum(a)
    w_axis = (in_axis + 1) % 2  # w.T is (4, 3): its mapped axis has x's mapped size
    got = vmap(g, in_axes=(in_axis, w_axis), out_axes=out_axis)(x, w.T)
    want = loop_ref(g, (ax, w_axis), (x, w.T), out_axis=out_axis % 2)
    np.testing.assert_allclose(np_(got), want, rtol=1e-5)


def test_out_axes_none_for_unbatched_and_broadcast_for_out_axes_0():
    x = fnp.arange(2.0)
    got = vmap(lambda x, y: (x + y, y * 2.0), in_axes=(0, None), out_axes=(0, None))(x, 4.0)
    np.testing.assert_allclose(np_(got[0]), [4.0, 5.0])
    assert np_(got[1]).shape == () and float(got[1]) == 8.0
    got = vmap(lambda x, y: (x + y, y * 2.0), in_axes=(0, None), out_axes=0)(x, 4.0)
    np.testing.assert_allclose(np_(got[1]), [8.0, 8.0])
    # an output that does not depend on the input at all is broadcast too
    got = vmap(lambda x: fnp.ones(3), out_axes=1)(fnp.ones(4))
    np.testing.assert_array_equal(np_(got), np.ones((3, 4), np.float32))


def test_out_axes_pytree_prefix_for_dict_outputs():
    x = rand(5, 3)
    f = lambda r: {"s": fnp.sum(r), "t": (r * 2.0, fnp.outer(r, r))}
    got = vmap(f, out_axes={"s": 0, "t": (1, -1)})(x)
    assert got["s"].shape == (5,) and got["t"][0].shape == (3, 5)
    assert got["t"][1].shape == (3, 3, 5)
    np.testing.assert_allclose(np_(got["s"]), np_(x).sum(1), rtol=1e-6)
    np.testing.assert_allclose(np_(got["t"][0]), 2 * np_(x).T, rtol=1e-6)
    np.testing.assert_allclose(np_(got["t"][1]), np.einsum("bi,bj->ijb", np_(x), np_(x)),
                               rtol=1e-6)


def test_axis_size_when_nothing_is_mapped():
    got = vmap(lambda a: a * 2.0, in_axes=None, axis_size=3)(fnp.arange(2.0))
    np.testing.assert_array_equal(np_(got), np.broadcast_to([0.0, 2.0], (3, 2)))
    got = vmap(lambda: fnp.ones(2), axis_size=4)()
    assert got.shape == (4, 2)


# --- API errors (worded as JAX words them) ---


def test_error_inconsistent_sizes_names_each_argument_and_axis():
    with pytest.raises(ValueError) as e:
        vmap(lambda a, b: a + b.T, in_axes=(0, 1))(fnp.ones((3, 2)), fnp.ones((2, 4)))
    msg = str(e.value)
    assert msg.startswith("vmap got inconsistent sizes for array axes to be mapped:\n"), msg
    assert "  * one axis had size 3: axis 0 of argument a of type float32[3,2]" in msg
    assert "  * one axis had size 4: axis 1 of argument b of type float32[2,4]" in msg
    # pytree arguments are named by their path inside the argument
    with pytest.raises(ValueError, match=r"argument d\['y'\] of type float32\[4\]"):
        vmap(lambda d: d["x"] + d["y"])({"x": fnp.ones(3), "y": fnp.ones(4)})


JAX_INCONSISTENT = [
    ((lambda a, b: a + b), (fnp.ones(3), fnp.ones(4)), {},
     "vmap got inconsistent sizes for array axes to be mapped:\n"
     "  * one axis had size 3: axis 0 of argument a of type float32[3];\n"
     "  * one axis had size 4: axis 0 of argument b of type float32[4]"),
    ((lambda a, b, c: a + b + c), (fnp.ones(3), fnp.ones(3), fnp.ones(4)), {},
     "vmap got inconsistent sizes for array axes to be mapped:\n"
     "  * most axes (2 of them) had size 3, e.g. axis 0 of argument a of type float32[3];\n"
     "  * one axis had size 4: axis 0 of argument c of type float32[4]"),
    ((lambda a, c, b: a + b + c), (fnp.ones(3),), {"b": fnp.ones(4), "c": fnp.ones(3)},
     "vmap got inconsistent sizes for array axes to be mapped:\n"
     "  * most axes (2 of them) had size 3, e.g. axis 0 of argument a of type float32[3];\n"
     "  * one axis had size 4: axis 0 of kwargs['b'] of type float32[4]"),
]


@pytest.mark.parametrize("case", range(len(JAX_INCONSISTENT)))
def test_error_inconsistent_sizes_exact_jax_text(case):
    f, args, kwargs, want = JAX_INCONSISTENT[case]
    with pytest.raises(ValueError) as e:
        vmap(f)(*args, **kwargs)
    assert str(e.value) == want


def test_error_in_axes_length_does_not_match_args():
    with pytest.raises(ValueError) as e:
        vmap(lambda a, b: a + b, in_axes=(0,))(fnp.ones(3), fnp.ones(3))
    assert str(e.value) == (
        "vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
        "positional arguments passed to the function, but got len(in_axes)=1, len(args)=2")


def test_error_in_axes_not_a_tree_prefix():
    with pytest.raises(ValueError) as e:
        vmap(lambda d: d["a"], in_axes=({"a": 0, "c": None},))(
            {"a": fnp.ones((3, 2)), "b": fnp.ones(2)})
    assert str(e.value) == (
        "vmap in_axes specification must be a tree prefix of the corresponding value, got "
        "specification ({'a': 0, 'c': None},) for value tree PyTreeDef(({'a': *, 'b': *},)).")


@pytest.mark.parametrize("which,bad", [("in_axes", 1.0), ("in_axes", (0, "x")),
                                       ("out_axes", 1.5)])
def test_error_axes_spec_leaves_must_be_int_or_none(which, bad):
    with pytest.raises(TypeError) as e:
        vmap(lambda a, b: a, **{which: bad})
    assert str(e.value) == (f"vmap {which} must be an int, None, or (nested) container with "
                            f"those types as leaves, but got {bad}.")


@pytest.mark.parametrize("bad,want", [
    (True, "vmap in_axes must be an int, None, or (nested) container with those types as "
           "leaves, but got True."),
    ({"a": 0}, "vmap in_axes must be an int, None, or a tuple of entries corresponding to "
               "the positional arguments passed to the function, but got {'a': 0}."),
], ids=["bool_leaf", "top_level_dict"])
def test_error_in_axes_type_exact_jax_text(bad, want):
    with pytest.raises(TypeError) as e:
        vmap(lambda d: d, in_axes=bad)({"a": fnp.ones(2)})
    assert str(e.value) == want


@pytest.mark.parametrize("axis,rank", [(2, 3), (-3, 3)])
def test_error_in_axis_out_of_range(axis, rank):
    with pytest.raises(ValueError) as e:
        vmap(lambda a: a, in_axes=axis)(fnp.ones((3, 3)))
    assert str(e.value) == (
        f"vmap was requested to map its argument along axis {axis}, which implies that its "
        f"rank should be at least {rank}, but is only 2 (its shape is (3, 3))")


def test_error_out_axis_out_of_range():
    with pytest.raises(ValueError, match="out_axes"):
        vmap(lambda a: a, out_axes=2)(fnp.ones((3, 3)))
    with pytest.raises(ValueError, match="out_axes"):
        vmap(lambda a: a, out_axes=-3)(fnp.ones((3, 3)))


def test_error_out_axes_none_for_a_batched_output():
    with pytest.raises(ValueError, match="out_axes"):
        vmap(lambda a: (a, a * 2), out_axes=(0, None))(fnp.ones(3))
    with pytest.raises(ValueError, match=r"vmap has mapped output \(axis_name='i'\) but "
                                         r"out_axes is None"):
        vmap(lambda a: a, out_axes=None, axis_name="i")(fnp.ones(3))


def test_error_out_axes_none_exact_jax_text():
    with pytest.raises(ValueError) as e:
        vmap(lambda a: (a, a * 2), out_axes=(0, None))(fnp.ones(3))
    assert str(e.value) == ("at vmap out_axes[1], got axis spec None but output was batched "
                            "on axis 0")


def test_error_nothing_mapped_needs_axis_size():
    with pytest.raises(ValueError, match="vmap must have at least one non-None value in "
                                         "in_axes"):
        vmap(lambda a: a, in_axes=None)(fnp.ones(3))
    with pytest.raises(ValueError, match="vmap must have at least one non-None value in "
                                         "in_axes"):
        vmap(lambda a, b: a, in_axes=(None, None))(fnp.ones(3), fnp.ones(3))


def test_error_no_arguments_exact_jax_text():
    with pytest.raises(ValueError) as e:
        vmap(lambda: 1.0)()
    assert str(e.value) == ("vmap wrapped function must be passed at least one argument "
                            "containing an array, got empty *args=() and **kwargs={}")


def test_error_axis_size_disagrees_with_mapped_size():
    with pytest.raises(ValueError, match="inconsistent sizes"):
        vmap(lambda a: a, axis_size=4)(fnp.ones(3))


def test_error_non_array_mapped_argument():
    # mapped: an error naming the argument; unmapped: passed through untouched
    with pytest.raises(ValueError, match=r"argument b"):
        vmap(lambda a, b: a)(fnp.ones(3), "abc")
    with pytest.raises(ValueError):
        vmap(lambda a: a)(object())
    got = vmap(lambda a, s: a * len(s), in_axes=(0, None))(fnp.arange(3.0), "abcd")
    np.testing.assert_array_equal(np_(got), [0.0, 4.0, 8.0])


def test_error_scalar_mapped_argument():
    with pytest.raises(ValueError) as e:
        vmap(lambda a: a)(2.0)
    assert str(e.value) == ("vmap was requested to map its argument along axis 0, which "
                            "implies that its rank should be at least 1, but is only 0 (its "
                            "shape is ())")


# --- composition against Python loops ---


def test_per_example_gradients_vmap_of_grad():
    params, xs, ys = mlp_params(), rand(6, 3), rand(6, 2)
    got = vmap(grad(mlp_loss), in_axes=(None, 0, 0))(params, xs, ys)
    want = loop_ref(grad(mlp_loss), (None, 0, 0), (params, xs, ys))
    assert_trees_close(got, want)
    closed = check_traced(vmap(grad(mlp_loss), in_axes=(None, 0, 0)), params, xs, ys)
    # per-example, not summed: every gradient leaf has the batch axis in front
    assert all(v.aval.shape[0] == 6 for v in closed.jaxpr.outvars)


def test_vmap_of_value_and_grad_with_argnums_tuple():
    params, xs, ys = mlp_params(), rand(4, 3), rand(4, 2)
    f = value_and_grad(mlp_loss, argnums=(0, 1))
    got = vmap(f, in_axes=(None, 0, 0))(params, xs, ys)
    assert_trees_close(got, loop_ref(f, (None, 0, 0), (params, xs, ys)))


def test_grad_of_vmap_matches_sum_of_per_example_grads():
    params, xs, ys = mlp_params(), rand(6, 3), rand(6, 2)
    batch_loss = lambda p: fnp.sum(vmap(mlp_loss, in_axes=(None, 0, 0))(p, xs, ys))
    got = grad(batch_loss)(params)
    per_ex = loop_ref(grad(mlp_loss), (None, 0, 0), (params, xs, ys))
    assert_trees_close(got, tree_map(lambda g: np_(g).sum(0), per_ex))
    check_traced(grad(batch_loss), params)


def test_nested_vmap_with_different_in_axes():
    a, b = rand(4, 3), rand(3, 5)
    f = lambda u, v: fnp.sum(fnp.sin(u) * v)
    # outer maps b's axis 1, inner maps a's axis 0 (b's column fixed)
    got = vmap(vmap(f, in_axes=(0, None)), in_axes=(None, 1), out_axes=1)(a, b)
    want = np.array([[float(f(a[i], fnp.asarray(np_(b)[:, j]))) for j in range(5)]
                     for i in range(4)])
    assert got.shape == (4, 5)
    np.testing.assert_allclose(np_(got), want, rtol=1e-5, atol=1e-6)
    # mapping the same argument twice along different axes
    x = rand(2, 3, 4)
    got = vmap(vmap(lambda r: r * fnp.sum(r), in_axes=1), in_axes=2)(x)
    want = np.stack([np.stack([np_(x)[:, j, k] * np_(x)[:, j, k].sum() for j in range(3)])
                     for k in range(4)])
    np.testing.assert_allclose(np_(got), want, rtol=1e-5)
    check_traced(vmap(vmap(f, in_axes=(0, None)), in_axes=(None, 1)), a, b)


def test_vmap_of_jvp_and_of_vjp():
    xs, ts = rand(5, 3), rand(5, 3)
    f = lambda x: fnp.tanh(x) * fnp.sum(x ** 2)
    fj = lambda x, t: jvp(f, (x,), (t,))
    assert_trees_close(vmap(fj)(xs, ts), loop_ref(fj, (0, 0), (xs, ts)))
    fv = lambda x, c: vjp(f, x)[1](c)
    assert_trees_close(vmap(fv)(xs, ts), loop_ref(fv, (0, 0), (xs, ts)))
    # batch only the tangent / only the cotangent (the primal is shared)
    x = rand(3)
    fj1 = lambda t: jvp(f, (x,), (t,))[1]
    assert_trees_close(vmap(fj1)(ts), loop_ref(fj1, (0,), (ts,)))
    _, f_vjp = vjp(f, x)
    assert_trees_close(vmap(f_vjp)(ts), loop_ref(f_vjp, (0,), (ts,)))
    check_traced(vmap(fj), xs, ts)
    check_traced(vmap(fv), xs, ts)


def test_vmap_with_pytree_outputs_and_inputs():
    xs = {"u": rand(4, 3), "v": rand(4)}
    f = lambda d: {"a": d["u"] * d["v"], "b": [fnp.sum(d["u"]), d["v"] ** 2]}
    got = vmap(f)(xs)

    def ref_f(u, v):
        return f({"u": u, "v": v})
    want = loop_ref(ref_f, (0, 0), (xs["u"], xs["v"]))
    assert_trees_close(got, want)


def test_grad_of_vmap_of_grad_and_vmap_of_hessian():
    xs = rand(4, 3)
    f = lambda x: fnp.sum(fnp.sin(x) * x[0])
    # d/dx sum_b g(x_b) with g = |grad f|^2: compare to a loop of the same composition
    g = lambda x: fnp.sum(grad(f)(x) ** 2)
    got = grad(lambda xs: fnp.sum(vmap(g)(xs)))(xs)
    want = np.stack([np_(grad(g)(xs[i])) for i in range(4)])
    np.testing.assert_allclose(np_(got), want, rtol=1e-5, atol=1e-6)
    got = vmap(hessian(f))(xs)
    assert_trees_close(got, loop_ref(hessian(f), (0,), (xs,)))


# --- jacfwd / jacrev (vmap-based) against closed forms ---


def _jac_closed_form(a, x):
    # f(x) = A @ tanh(x): J = A * (1 - tanh(x)^2)[None, :]
    return np_(a) * (1 - np.tanh(np_(x)) ** 2)[None, :]


@pytest.mark.parametrize("jac", [jacfwd, jacrev], ids=["jacfwd", "jacrev"])
def test_jacobian_closed_form(jac):
    a, x = rand(4, 3), rand(3)
    got = jac(lambda x: fnp.dot(a, fnp.tanh(x)))(x)
    assert got.shape == (4, 3) and got.dtype == np.float32
    np.testing.assert_allclose(np_(got), _jac_closed_form(a, x), rtol=1e-5, atol=1e-6)
    # matrix input and output: out.shape + in.shape
    m = rand(2, 3)
    got = jac(lambda m: fnp.sin(m) * 2.0)(m)
    want = np.zeros((2, 3, 2, 3), np.float32)
    for i in range(2):
        for j in range(3):
            want[i, j, i, j] = 2 * np.cos(np_(m)[i, j])
    np.testing.assert_allclose(np_(got), want, rtol=1e-6, atol=1e-7)
    # scalar in, scalar out
    got = jac(lambda s: s ** 3)(2.0)
    assert np_(got).shape == () and float(got) == pytest.approx(12.0)


@pytest.mark.parametrize("jac", [jacfwd, jacrev], ids=["jacfwd", "jacrev"])
def test_jacobian_pytrees_argnums_and_aux(jac):
    a, b, s = rand(3), rand(2), rand()

    def f(p, s):
        out = {"prod": p["a"] * p["b"][0], "tot": fnp.sum(p["a"]) * s}
        return out, {"aux": fnp.sum(p["b"]) * 2.0}
    got, aux = jac(f, argnums=(0, 1), has_aux=True)({"a": a, "b": b}, s)
    na, nb, ns = np_(a), np_(b), float(s)
    assert set(got) == {"prod", "tot"}
    (gp, gs) = got["prod"]
    np.testing.assert_allclose(np_(gp["a"]), np.eye(3) * nb[0], rtol=1e-6)
    want_pb = np.zeros((3, 2))
    want_pb[:, 0] = na
    np.testing.assert_allclose(np_(gp["b"]), want_pb, rtol=1e-6)
    assert np_(gs).shape == (3,) and not np_(gs).any()
    (tp, ts) = got["tot"]
    np.testing.assert_allclose(np_(tp["a"]), np.full(3, ns), rtol=1e-6)
    np.testing.assert_allclose(np_(tp["b"]), np.zeros(2), atol=0)
    np.testing.assert_allclose(float(ts), na.sum(), rtol=1e-6)
    # aux is a plain (concrete) value, not a tracer
    assert isinstance(aux["aux"], functrax.Array)
    np.testing.assert_allclose(float(aux["aux"]), 2 * nb.sum(), rtol=1e-6)


@pytest.mark.parametrize("jac", [jacfwd, jacrev], ids=["jacfwd", "jacrev"])
def test_jacobian_is_one_batched_pass_not_a_loop(jac):
    # the vmap-based jacobian stages the same number of equations for any input size
    f = lambda x: fnp.sin(x) * fnp.sum(x)
    sizes = []
    for n in (2, 7):
        closed = make_jaxpr(jac(f))(fnp.ones(n))
        check_jaxpr(closed)
        sizes.append(len(closed.jaxpr.eqns))
        assert sum(e.primitive.name == "cos" for e in closed.jaxpr.eqns) == 1
    assert sizes[0] == sizes[1]


def test_jacobian_kwargs_and_dtypes():
    x = rand(3)
    got = jacfwd(lambda x, scale: x * scale)(x, scale=3.0)
    np.testing.assert_allclose(np_(got), 3 * np.eye(3), rtol=1e-6)
    got = jacrev(lambda x, scale: x * scale)(x, scale=3.0)
    np.testing.assert_allclose(np_(got), 3 * np.eye(3), rtol=1e-6)
    # the jacobian takes the output dtype (jacfwd) / input dtype (jacrev), as in JAX
    h = fnp.asarray(np.ones(2, np.float16))
    got = jacrev(lambda a, b: (a, b * 2), argnums=(0, 1))(x, h)
    assert got[0][1].dtype == np.float16 and got[1][1].dtype == np.float16
    assert got[1][0].dtype == np.float32


def test_jacobian_dtype_errors():
    with pytest.raises(TypeError, match="jacfwd requires real-valued inputs"):
        jacfwd(lambda x: x * 2)(fnp.arange(3))
    with pytest.raises(TypeError, match="jacrev requires real- or complex-valued inputs"):
        jacrev(lambda x: x * 2.0)(fnp.arange(3))
    with pytest.raises(TypeError, match="jacrev requires real-valued outputs"):
        jacrev(lambda x: fnp.argmax(x))(fnp.ones(3))
    with pytest.raises(TypeError, match="jacfwd with holomorphic=True requires inputs with "
                                        "complex dtype, but got float32."):
        jacfwd(lambda x: x, holomorphic=True)(fnp.ones(3))
    for jac in (jacfwd, jacrev):
        with pytest.raises(TypeError, match="has_aux=True, so it must return a pair"):
            jac(lambda x: x * 2.0, has_aux=True)(fnp.ones(3))


def test_jacobian_holomorphic():
    z = fnp.asarray(np.array([1 + 1j, 0.5 - 2j], np.complex64))
    want = np.diag(2 * np_(z))
    for jac in (jacfwd, jacrev):
        got = jac(lambda z: z * z, holomorphic=True)(z)
        np.testing.assert_allclose(np_(got), want, rtol=1e-6)


def test_hessian_closed_form_and_pytrees():
    a, x = rand(3, 3), rand(3)
    f = lambda x: 0.5 * fnp.dot(x, fnp.dot(a, x)) + fnp.sum(fnp.exp(x))
    want = 0.5 * (np_(a) + np_(a).T) + np.diag(np.exp(np_(x)))
    np.testing.assert_allclose(np_(hessian(f)(x)), want, rtol=1e-5, atol=1e-6)
    # JAX's docstring example: {'c': a ** b} nests the input structure twice
    g = lambda d: {"c": fnp.power(d["a"], d["b"])}
    av, bv = np.arange(2.0) + 1.0, np.arange(2.0) + 2.0
    got = hessian(g)({"a": fnp.asarray(av, np.float32), "b": fnp.asarray(bv, np.float32)})
    assert set(got["c"]) == {"a", "b"} and set(got["c"]["a"]) == {"a", "b"}
    want_ab = np.zeros((2, 2, 2))
    for i in range(2):  # d2/da db of a^b = a^(b-1) (1 + b log a)
        want_ab[i, i, i] = av[i] ** (bv[i] - 1) * (1 + bv[i] * np.log(av[i]))
    np.testing.assert_allclose(np_(got["c"]["a"]["b"]), want_ab, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np_(got["c"]["b"]["a"]), want_ab, rtol=1e-5, atol=1e-6)
    want_bb = np.zeros((2, 2, 2))
    for i in range(2):
        want_bb[i, i, i] = av[i] ** bv[i] * np.log(av[i]) ** 2
    np.testing.assert_allclose(np_(got["c"]["b"]["b"]), want_bb, rtol=1e-5, atol=1e-6)
    h, aux = hessian(lambda x: (fnp.sum(x ** 3), x * 2.0), has_aux=True)(x)
    np.testing.assert_allclose(np_(h), np.diag(6 * np_(x)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np_(aux), 2 * np_(x), rtol=1e-6)


def test_vmap_of_jacobians_matches_loop():
    xs = rand(4, 3)
    f = lambda x: fnp.sin(x) * fnp.sum(x ** 2)
    for jac in (jacfwd, jacrev):
        assert_trees_close(vmap(jac(f))(xs), loop_ref(jac(f), (0,), (xs,)))
    got = jacrev(lambda xs: vmap(f)(xs))(xs)
    want = np.zeros((4, 3, 4, 3), np.float32)
    for b in range(4):
        want[b, :, b, :] = np_(jacfwd(f)(xs[b]))
    np.testing.assert_allclose(np_(got), want, rtol=1e-5, atol=1e-6)


# --- chunk_size ---


@pytest.mark.parametrize("size,chunk", [(8, 2), (7, 3), (5, 4), (3, 8), (6, 1)])
def test_chunk_size_identical_results(size, chunk):
    x, w = rand(size, 3), rand(3, 2)
    f = lambda x, w: (fnp.tanh(x * 2.0) + fnp.sum(x), fnp.dot(x, w))
    got = vmap(f, in_axes=(0, None), chunk_size=chunk)(x, w)
    want = vmap(f, in_axes=(0, None))(x, w)
    assert_trees_equal(got[0], want[0])
    assert_trees_close(got[1], want[1], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("out_axes", [1, -1, (1, None), (0, 0)])
def test_chunk_size_out_axes_and_unmapped_outputs(out_axes):
    x, y = rand(3, 7), rand(2)
    f = lambda c, y: (c * fnp.sum(y), y * 2.0)
    got = vmap(f, in_axes=(1, None), out_axes=out_axes, chunk_size=3)(x, y)
    want = vmap(f, in_axes=(1, None), out_axes=out_axes)(x, y)
    assert_trees_equal(got, want)


def test_chunk_size_with_pytrees_and_kwargs():
    d = {"a": rand(7, 2), "b": rand(2, 7)}
    f = lambda d, z: {"s": d["a"] * d["b"] + z, "t": fnp.sum(z)}
    kw = rand(7, 2)
    got = vmap(f, in_axes=({"a": 0, "b": 1},), chunk_size=2)(d, z=kw)
    want = vmap(f, in_axes=({"a": 0, "b": 1},))(d, z=kw)
    assert_trees_equal(got, want)


def test_grad_of_chunked_vmap():
    params, xs, ys = mlp_params(), rand(7, 3), rand(7, 2)

    def batch_loss(p, chunk):
        return fnp.sum(vmap(mlp_loss, in_axes=(None, 0, 0), chunk_size=chunk)(p, xs, ys))
    got = grad(batch_loss)(params, 3)
    want = grad(batch_loss)(params, None)
    assert_trees_close(got, want, rtol=1e-5, atol=1e-6)
    # chunked per-example gradients
    got = vmap(grad(mlp_loss), in_axes=(None, 0, 0), chunk_size=3)(params, xs, ys)
    assert_trees_close(got, loop_ref(grad(mlp_loss), (None, 0, 0), (params, xs, ys)))


def test_chunked_vmap_inside_another_vmap():
    x = rand(3, 5, 4)
    inner = vmap(lambda r: r * fnp.sum(r), chunk_size=2)
    got = vmap(inner)(x)
    want = np_(x) * np_(x).sum(-1, keepdims=True)
    np.testing.assert_allclose(np_(got), want, rtol=1e-6)
    got = vmap(inner, in_axes=1, out_axes=2)(x)
    np.testing.assert_allclose(np_(got), np.moveaxis(want, 1, 2), rtol=1e-6)
    check_traced(vmap(inner), x)


def test_chunked_jaxpr_is_well_typed_and_slices_per_chunk():
    x = rand(7, 3)
    closed = check_traced(vmap(lambda r: fnp.sum(r ** 2), chunk_size=3), x)
    names = [e.primitive.name for e in closed.jaxpr.eqns]
    assert names.count("slice") == 3 and names.count("concatenate") == 1


@pytest.mark.parametrize("bad", [0, -1, 2.5, "2"])
def test_chunk_size_must_be_a_positive_int(bad):
    with pytest.raises(ValueError, match="chunk_size must be a positive int"):
        vmap(lambda a: a, chunk_size=bad)


# --- jaxprs of vmapped functions ---


def test_vmapped_jaxprs_pass_check_jaxpr():
    x, y, w = rand(4, 3), rand(3), rand(3, 2)
    cases = [
        (vmap(lambda a, b: a * b + fnp.sum(a), in_axes=(0, None)), (x, y)),
        (vmap(lambda a: fnp.reshape(a, (4, 1)).T, in_axes=1, out_axes=2), (x,)),
        (vmap(lambda a: fnp.concatenate([a, a[::-1]]) @ fnp.ones(6)), (x,)),
        (vmap(lambda a, w: fnp.dot(a, w), in_axes=(0, None), out_axes=1), (x, w)),
        (vmap(lambda a: fnp.cumsum(a) / fnp.max(a)), (x,)),
        (vmap(jacfwd(lambda a: fnp.sin(a) * a[0])), (x,)),
        (jacrev(lambda a: fnp.tanh(a) @ w), (y,)),
        (hessian(lambda a: fnp.sum(fnp.exp(a) * a)), (y,)),
    ]
    for f, args in cases:
        check_traced(f, *args)


def test_unbatched_scalar_is_not_broadcast():
    x = rand(4, 3)
    text = str(make_jaxpr(vmap(lambda a, b: a * b, in_axes=(0, None)))(x, fnp.float32(2.0)))
    assert "broadcast_in_dim" not in text, text
    assert text == "{ lambda ; a:f32[4,3] b:f32[]. let c:f32[4,3] = mul a b in (c,) }"
    # a Python scalar closed over or passed unmapped stays a scalar as well
    text = str(make_jaxpr(vmap(lambda a: a * 3.0 + 1.0))(x))
    assert "broadcast_in_dim" not in text, text


def test_unbatched_matrix_vector_dot_is_one_dot_general():
    text = str(make_jaxpr(vmap(lambda a, b: fnp.dot(a, b), in_axes=(0, None)))(
        fnp.ones((4, 3)), fnp.ones(3)))
    assert text == """\
{ lambda ; a:f32[4,3] b:f32[3]. let
    c:f32[4] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] a b
  in (c,) }"""
    assert text.count("dot_general") == 1


def test_both_batched_dot_uses_batch_dimensions():
    a, b = rand(4, 2, 3), rand(4, 3)
    closed = make_jaxpr(vmap(fnp.dot))(a, b)
    (eqn,) = closed.jaxpr.eqns
    assert eqn.primitive.name == "dot_general"
    assert eqn.params["dimension_numbers"] == (((2,), (1,)), ((0,), (0,)))
    np.testing.assert_allclose(np_(vmap(fnp.dot)(a, b)), np.einsum("bij,bj->bi", np_(a), np_(b)),
                               rtol=1e-5)


# --- collectives (axis_name) ---


def test_axis_name_collective():
    xs = fnp.arange(12.0).reshape(3, 4)
    got = vmap(lambda x: lax.psum(x, "i"), axis_name="i")(xs)
    np.testing.assert_allclose(np_(got), np.broadcast_to(np_(xs).sum(0), (3, 4)))
    got = vmap(lambda x: x - lax.pmean(x, "i"), axis_name="i")(fnp.arange(4.0))
    np.testing.assert_allclose(np_(got), [-1.5, -0.5, 0.5, 1.5])


def test_chunk_size_with_axis_name_is_refused():
    with pytest.raises(NotImplementedError, match="chunk_size"):
        vmap(lambda x: x, axis_name="i", chunk_size=2)(fnp.ones(4))
