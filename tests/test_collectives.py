"""Collectives over named axes under vmap: values vs numpy references computed over the batch,
derivatives (rules of the collectives inside vmap, and vmap rules under autodiff), errors,
and the jaxprs of vmapped collective programs."""
from __future__ import annotations

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import core, grad, jvp, lax, make_jaxpr, vjp, vmap
from functrax.errors import JaxprTypeError
from functrax.test_util import check_grads
from tests.collective_refs import (
    ref_all_gather, ref_all_to_all, ref_axis_index, ref_ppermute, ref_psum, ref_psum_scatter,
)

RNG = np.random.default_rng(0)


def _rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _close(a, b, tol=1e-5):
    a = np.asarray(a)
    b = np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _vm(f, name="i", **kw):
    return vmap(f, axis_name=name, **kw)


# --- acceptance checks ---


def test_pmean_centers_each_lane():
    out = _vm(lambda x: x - lax.pmean(x, "i"))(fnp.arange(4.0))
    _close(out, [-1.5, -0.5, 0.5, 1.5])


def test_grad_of_pmean_and_psum_inside_vmap():
    x = _rand(4, 3)
    out = _vm(grad(lambda v: lax.pmean(fnp.sum(v ** 2), "i")))(x)
    _close(out, 2 * x)
    out = _vm(grad(lambda v: lax.psum(fnp.sum(v ** 2), "i")))(x)
    _close(out, 8 * x)


# --- values under a single vmap ---


@pytest.mark.parametrize("shape", [(4,), (4, 3), (3, 2, 2)])
def test_psum_pmean_pmax_pmin(shape):
    x = _rand(*shape)
    _close(_vm(lambda v: lax.psum(v, "i"))(x), ref_psum(x))
    _close(_vm(lambda v: lax.pmean(v, "i"))(x), ref_psum(x) / shape[0])
    _close(_vm(lambda v: lax.pmax(v, "i"))(x), np.broadcast_to(x.max(0), x.shape))
    _close(_vm(lambda v: lax.pmin(v, "i"))(x), np.broadcast_to(x.min(0), x.shape))


def test_psum_batch_axis_not_leading():
    x = _rand(2, 5, 3)
    out = vmap(lambda v: lax.psum(v, "i"), in_axes=1, axis_name="i")(x)
    _close(out, np.broadcast_to(x.sum(1), (5, 2, 3)))


def test_psum_pytree_multiple_operands_and_unbatched():
    a, b, c = _rand(4, 3), _rand(2), _rand(4)

    def f(a, b, c):
        return lax.psum({"a": a, "b": b, "c": (c, 2.0)}, "i")

    out = vmap(f, in_axes=(0, None, 0), axis_name="i")(a, b, c)
    _close(out["a"], ref_psum(a))
    _close(out["b"], np.broadcast_to(4 * b, (4, 2)))  # the same in every lane: x * size
    _close(out["c"][0], ref_psum(c))
    _close(out["c"][1], np.full(4, 8.0))


def test_psum_dtypes():
    xi = np.arange(12, dtype=np.int32).reshape(4, 3)
    out = _vm(lambda v: lax.psum(v, "i"))(xi)
    assert out.dtype == np.int32
    _close(out, ref_psum(xi))
    xb = np.array([True, False, True, True])
    out = _vm(lambda v: lax.psum(v, "i"))(xb)
    assert out.dtype == np.int32
    _close(out, np.full(4, 3))
    out = _vm(lambda v: lax.pmean(v, "i"))(xi)
    assert out.dtype == np.float32
    _close(out, ref_psum(xi) / 4.0)
    _close(_vm(lambda v: lax.pmax(v, "i"))(xb), np.ones(4, bool))


def test_psum_of_constants_and_positional_axes():
    # a Python scalar is the same in every lane: psum(1) is the axis size
    assert _vm(lambda v: v * 0 + lax.psum(1, "i"))(np.zeros(5, np.int32)).tolist() == [5] * 5
    x = _rand(4, 3)
    out = _vm(lambda v: lax.psum(v, ("i", 0)))(x)  # named + positional axes
    _close(out, np.full(4, x.sum()), tol=1e-4)
    out = _vm(lambda v: lax.pmean(v, ("i", 0)))(x)
    _close(out, np.full(4, x.mean()), tol=1e-5)
    out = _vm(lambda v: lax.pmax(v, ("i", 0)))(x)
    _close(out, np.full(4, x.max()))


@pytest.mark.parametrize("axis,tiled", [(0, False), (1, False), (-1, False), (2, False),
                                        (0, True), (1, True), (-1, True)])
def test_all_gather(axis, tiled):
    x = _rand(3, 2, 4)
    out = _vm(lambda v: lax.all_gather(v, "i", axis=axis, tiled=tiled))(x)
    _close(out, ref_all_gather(x, axis, tiled))


def test_all_gather_unbatched_operand_and_pytree():
    b = _rand(2)
    out = vmap(lambda a, b: lax.all_gather((a, b), "i"), in_axes=(0, None),
               axis_name="i")(_rand(3), b)
    _close(out[1], np.broadcast_to(np.stack([b] * 3), (3, 3, 2)))


def test_axis_index():
    out = _vm(lambda v: v + lax.axis_index("i"))(np.zeros(5, np.int32))
    assert out.dtype == np.int32
    assert out.tolist() == list(range(5))


@pytest.mark.parametrize("perm", [
    [(0, 1), (1, 2), (2, 3), (3, 0)],  # cyclic shift
    [(0, 1), (1, 2)],                  # lanes 0 and 3 receive nothing: zeros
    [(3, 0), (2, 1), (1, 2), (0, 3)],  # reversal
    [(i, i) for i in range(4)],        # identity
])
def test_ppermute(perm):
    x = _rand(4, 3)
    _close(_vm(lambda v: lax.ppermute(v, "i", perm))(x), ref_ppermute(x, perm))
    y = _rand(3, 4)  # batch along axis 1
    out = vmap(lambda v: lax.ppermute(v, "i", perm), in_axes=1, axis_name="i")(y)
    _close(out, ref_ppermute(y.T, perm))


def test_ppermute_unbatched_operand_and_pshuffle():
    b = _rand(3)
    out = vmap(lambda a, b: lax.ppermute(b, "i", [(0, 1), (2, 3)]), in_axes=(0, None),
               axis_name="i")(_rand(4), b)
    _close(out, ref_ppermute(np.stack([b] * 4), [(0, 1), (2, 3)]))
    x = _rand(4, 2)
    out = _vm(lambda v: lax.pshuffle(v, "i", [2, 0, 3, 1]))(x)
    _close(out, x[[2, 0, 3, 1]])


@pytest.mark.parametrize("split,concat,tiled", [
    (0, 0, True), (0, 1, True), (1, 0, True), (1, 1, True), (2, 0, True),
    (0, 0, False), (0, 1, False), (1, 0, False), (2, 1, False), (0, 2, False)])
def test_all_to_all(split, concat, tiled):
    n = 3
    shape = [2, 2, 2]
    shape[split] = n * (2 if tiled else 1)
    x = _rand(n, *shape)
    f = lambda v: lax.all_to_all(v, "i", split, concat, tiled=tiled)  # noqa: E731
    _close(_vm(f)(x), ref_all_to_all(x, split, concat, tiled))
    xt = np.moveaxis(x, 0, 2)  # batch axis inside
    _close(vmap(f, in_axes=2, axis_name="i")(xt), ref_all_to_all(x, split, concat, tiled))


@pytest.mark.parametrize("dim,tiled", [(0, False), (1, False), (0, True), (1, True)])
def test_psum_scatter(dim, tiled):
    n = 4
    shape = [3, 3]
    shape[dim] = n * (2 if tiled else 1)
    x = _rand(n, *shape)
    f = lambda v: lax.psum_scatter(v, "i", scatter_dimension=dim, tiled=tiled)  # noqa: E731
    _close(_vm(f)(x), ref_psum_scatter(x, dim, tiled))
    _close(vmap(f, in_axes=1, axis_name="i")(np.moveaxis(x, 0, 1)),
           ref_psum_scatter(x, dim, tiled))


# --- nested vmaps with two axis names ---

NI, NJ = 2, 3


def _nested(f, X, oi=0, ij=0):
    """vmap over "i" (outer) and "j" (inner) of ``f`` on X[i, j]; the batch axes are placed at
    ``oi`` (outer) and ``ij`` (inner, within each outer slice)."""
    arr = np.moveaxis(np.moveaxis(X, 1, 1 + ij), 0, oi)
    inner = vmap(f, in_axes=ij, axis_name="j")
    return vmap(inner, in_axes=oi, axis_name="i")(arr)


def _ref_over(ref, X, names):
    """Apply a single-axis reference over the lanes of ``names`` of X[i, j, ...]."""
    if names == "i":
        return np.stack([ref(X[:, j]) for j in range(X.shape[1])], 1)
    if names == "j":
        return np.stack([ref(X[i]) for i in range(X.shape[0])], 0)
    if names == ("i", "j"):
        flat = ref(X.reshape((-1,) + X.shape[2:]))
        return flat.reshape(X.shape[:2] + flat.shape[1:])
    swapped = _ref_over(ref, np.swapaxes(X, 0, 1), ("i", "j"))  # ("j", "i")
    return np.swapaxes(swapped, 0, 1)


NAMES = ["i", "j", ("i", "j"), ("j", "i")]
LAYOUTS = [(0, 0), (2, 1), (3, 2)]


@pytest.mark.parametrize("names", NAMES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_nested_psum_pmax(names, layout):
    X = _rand(NI, NJ, 2, 2)
    _close(_nested(lambda v: lax.psum(v, names), X, *layout), _ref_over(ref_psum, X, names))
    ref_max = lambda Y: np.broadcast_to(Y.max(0), Y.shape)  # noqa: E731
    _close(_nested(lambda v: lax.pmax(v, names), X, *layout), _ref_over(ref_max, X, names))
    _close(_nested(lambda v: lax.pmean(v, names), X, *layout),
           _ref_over(lambda Y: ref_psum(Y) / len(Y), X, names))


@pytest.mark.parametrize("names", NAMES)
@pytest.mark.parametrize("axis,tiled", [(0, False), (2, False), (1, True)])
@pytest.mark.parametrize("layout", LAYOUTS[:2])
def test_nested_all_gather(names, axis, tiled, layout):
    X = _rand(NI, NJ, 2, 2)
    out = _nested(lambda v: lax.all_gather(v, names, axis=axis, tiled=tiled), X, *layout)
    _close(out, _ref_over(lambda Y: ref_all_gather(Y, axis, tiled), X, names))


@pytest.mark.parametrize("names", NAMES)
@pytest.mark.parametrize("dim,tiled", [(0, True), (1, True), (0, False), (1, False)])
@pytest.mark.parametrize("layout", LAYOUTS[:2])
def test_nested_psum_scatter(names, dim, tiled, layout):
    n = NI * NJ if isinstance(names, tuple) else {"i": NI, "j": NJ}[names]
    shape = [2, 2]
    shape[dim] = n * (2 if tiled else 1)
    X = _rand(NI, NJ, *shape)
    out = _nested(lambda v: lax.psum_scatter(v, names, scatter_dimension=dim, tiled=tiled),
                  X, *layout)
    _close(out, _ref_over(lambda Y: ref_psum_scatter(Y, dim, tiled), X, names), tol=1e-4)


@pytest.mark.parametrize("names", NAMES)
def test_nested_axis_index(names):
    X = np.zeros((NI, NJ), np.int32)
    out = _nested(lambda v: v + lax.axis_index(names), X)
    _close(out, _ref_over(ref_axis_index, X, names))


@pytest.mark.parametrize("name", ["i", "j"])
@pytest.mark.parametrize("layout", LAYOUTS[:2])
def test_nested_ppermute_and_all_to_all(name, layout):
    n = {"i": NI, "j": NJ}[name]
    perm = [(k, (k + 1) % n) for k in range(n)]
    X = _rand(NI, NJ, 2, 2)
    _close(_nested(lambda v: lax.ppermute(v, name, perm), X, *layout),
           _ref_over(lambda Y: ref_ppermute(Y, perm), X, name))
    Y = _rand(NI, NJ, 2, n * 2)
    _close(_nested(lambda v: lax.all_to_all(v, name, 1, 0, tiled=True), Y, *layout),
           _ref_over(lambda Z: ref_all_to_all(Z, 1, 0, True), Y, name))


def test_nested_operand_unbatched_along_inner_axis():
    x = _rand(NI, 2)
    inner = vmap(lambda v: lax.psum(v, ("i", "j")), in_axes=None, axis_name="j", axis_size=NJ)
    out = vmap(inner, axis_name="i")(x)
    _close(out, np.broadcast_to(NJ * x.sum(0), (NI, NJ, 2)))
    inner = vmap(lambda v: lax.all_gather(v, "i"), in_axes=None, axis_name="j", axis_size=NJ)
    _close(vmap(inner, axis_name="i")(x), np.broadcast_to(x, (NI, NJ, NI, 2)))


# --- derivatives ---

COLLECTIVES = {
    "psum": lambda v: lax.psum(v, "i"),
    "pmean": lambda v: lax.pmean(v, "i"),
    "pmax": lambda v: lax.pmax(v, "i"),
    "pmin": lambda v: lax.pmin(v, "i"),
    "all_gather": lambda v: lax.all_gather(v, "i", axis=1),
    "all_gather_tiled": lambda v: lax.all_gather(v, "i", axis=1, tiled=True),
    "ppermute": lambda v: lax.ppermute(v, "i", [(0, 2), (2, 1), (1, 3)]),
    "all_to_all": lambda v: lax.all_to_all(v, "i", 0, 1, tiled=True),
    "all_to_all_untiled": lambda v: lax.all_to_all(v, "i", 0, 1),
    "psum_scatter": lambda v: lax.psum_scatter(v, "i", scatter_dimension=0),
    "psum_scatter_tiled": lambda v: lax.psum_scatter(v, "i", scatter_dimension=1, tiled=True),
    "centered": lambda v: fnp.sin(v) * (v - lax.pmean(v, "i")),
}


def _lane_input(dtype=np.float32):
    return RNG.permutation(np.linspace(-2.0, 2.0, 4 * 4 * 4)).reshape(4, 4, 4).astype(dtype)


@pytest.mark.parametrize("name", sorted(COLLECTIVES))
def test_grad_inside_vmap_matches_grad_of_vmapped_sum(name):
    """Each lane seeds its own cotangent: vmap(grad(g)) == grad(sum of vmap(g))."""
    coll = COLLECTIVES[name]
    x = _lane_input()

    def g(v, w):
        return fnp.sum(w * fnp.sin(coll(v)))

    ws = RNG.standard_normal((4,) + _lane_out_shape(coll)).astype(np.float32)
    lhs = vmap(grad(g), axis_name="i")(x, ws)
    rhs = grad(lambda x: fnp.sum(vmap(g, axis_name="i")(x, ws)))(x)
    _close(lhs, rhs, tol=1e-4)


def _lane_out_shape(coll):
    return tuple(vmap(coll, axis_name="i")(_lane_input()).shape[1:])


@pytest.mark.parametrize("name", sorted(COLLECTIVES))
def test_jvp_inside_vmap_matches_jvp_of_vmap(name):
    coll = COLLECTIVES[name]
    x, t = _lane_input(), _rand(4, 4, 4)
    lhs = vmap(lambda v, tv: jvp(coll, (v,), (tv,))[1], axis_name="i")(x, t)
    rhs = jvp(vmap(coll, axis_name="i"), (x,), (t,))[1]
    _close(lhs, rhs, tol=1e-4)


@pytest.mark.parametrize("name", sorted(COLLECTIVES))
def test_check_grads_of_vmapped_collective(name):
    coll = COLLECTIVES[name]
    x = _lane_input(np.float64)
    check_grads(vmap(coll, axis_name="i"), (x,), order=2, modes=["fwd", "rev"])


@pytest.mark.parametrize("name", ["psum", "pmean", "all_gather", "ppermute", "all_to_all",
                                  "psum_scatter_tiled", "centered", "pmax"])
def test_check_grads_of_vmap_of_grad(name):
    coll = COLLECTIVES[name]
    ws = _rand(4, *_lane_out_shape(coll)).astype(np.float64)

    def g(v, w):
        return fnp.sum(w * fnp.sin(coll(v)))

    f = lambda x: vmap(grad(g), axis_name="i")(x, ws)  # noqa: E731
    check_grads(f, (_lane_input(np.float64),), order=1, modes=["fwd", "rev"])


def test_vjp_inside_vmap_of_all_gather_is_psum_scatter():
    x = _rand(4, 3)
    ct = _rand(4, 4, 3)  # lane j's cotangent for its gathered (4, 3) value

    def lane(v, c):
        return vjp(lambda v: lax.all_gather(v, "i"), v)[1](c)[0]

    out = vmap(lane, axis_name="i")(x, ct)
    _close(out, ct.sum(0), tol=1e-5)  # lane i gets sum_j ct_j[i]


def test_pmax_gradient_splits_ties():
    x = np.array([[1.0], [3.0], [3.0], [2.0]], np.float32)
    out = _vm(grad(lambda v: fnp.sum(lax.pmax(v, "i"))))(x)
    # each lane's cotangent 1 is shared by the two lanes holding the maximum
    _close(out, [[0.0], [2.0], [2.0], [0.0]])


def test_nested_grad_through_two_names():
    X = _rand(NI, NJ, 3)

    def g(v):
        return fnp.sum(fnp.sin(v) * lax.psum(v, ("i", "j")))

    lhs = vmap(vmap(grad(g), axis_name="j"), axis_name="i")(X)
    rhs = grad(lambda X: fnp.sum(vmap(vmap(g, axis_name="j"), axis_name="i")(X)))(X)
    _close(lhs, rhs, tol=1e-4)


# --- errors ---


def test_unbound_axis_name_raises_name_error():
    with pytest.raises(NameError, match="unbound axis name: k"):
        lax.psum(fnp.ones(3), "k")
    with pytest.raises(NameError, match="unbound axis name: k.*'i'"):
        _vm(lambda v: lax.psum(v, "k"))(fnp.ones(3))
    with pytest.raises(NameError, match="unbound axis name: j"):
        _vm(lambda v: lax.psum(v, ("i", "j")))(fnp.ones(3))
    for f in (lambda v: lax.pmax(v, "k"), lambda v: lax.all_gather(v, "k"),
              lambda v: lax.axis_index("k"), lambda v: lax.ppermute(v, "k", [(0, 1)]),
              lambda v: lax.all_to_all(v, "k", 0, 0), lambda v: lax.psum_scatter(v, "k"),
              lambda v: lax.pmean(v, "k")):
        with pytest.raises(NameError, match="unbound axis name: k"):
            _vm(f)(fnp.ones((3, 3)))


def test_bad_arguments():
    x = fnp.ones((4, 3))
    with pytest.raises(ValueError, match="all_to_all requires the size"):
        _vm(lambda v: lax.all_to_all(v, "i", 0, 0))(x)
    with pytest.raises(ValueError, match="divisible by the size of the named axis"):
        _vm(lambda v: lax.all_to_all(v, "i", 0, 0, tiled=True))(x)
    with pytest.raises(ValueError, match="must match shard count 4"):
        _vm(lambda v: lax.psum_scatter(v, "i"))(x)
    with pytest.raises(ValueError, match="divisible by shard_count 4"):
        _vm(lambda v: lax.psum_scatter(v, "i", tiled=True))(x)
    with pytest.raises(ValueError, match="sources and destinations must be unique"):
        _vm(lambda v: lax.ppermute(v, "i", [(0, 1), (2, 1)]))(x)
    with pytest.raises(ValueError, match="out of range for the named axis"):
        _vm(lambda v: lax.ppermute(v, "i", [(0, 4)]))(x)
    with pytest.raises(ValueError, match="does not represent a permutation"):
        _vm(lambda v: lax.pshuffle(v, "i", [0, 0, 1, 2]))(x)
    with pytest.raises(ValueError, match="all_gather: axis 3 is out of bounds"):
        _vm(lambda v: lax.all_gather(v, "i", axis=3))(x)
    with pytest.raises(NotImplementedError, match="axis_index_groups"):
        _vm(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1], [2, 3]]))(x)


def test_multiple_names_not_supported_for_ppermute():
    with pytest.raises(NotImplementedError, match="several axis names"):
        _nested(lambda v: lax.ppermute(v, ("i", "j"), [(0, 1), (1, 0)]), _rand(NI, NJ, 2))


# --- jaxprs ---

PROGRAMS = {
    "pmean": lambda v: v - lax.pmean(v, "i"),
    "pmax": lambda v: lax.pmax(v, "i") * v,
    "all_gather": lambda v: lax.all_gather(v, "i", axis=1, tiled=True),
    "axis_index": lambda v: v * lax.axis_index("i"),
    "ppermute": lambda v: lax.ppermute(v, "i", [(0, 1), (1, 2)]),
    "all_to_all": lambda v: lax.all_to_all(v, "i", 0, 1),
    "psum_scatter": lambda v: lax.psum_scatter(v, "i", tiled=True),
    "grad": grad(lambda v: fnp.sum(fnp.sin(v) * lax.psum(v, "i"))),
    "nested": lambda v: vmap(lambda w: lax.psum(w, ("i", "j")) + lax.all_gather(w, "i")[0],
                             axis_name="j")(v),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_jaxpr_of_vmapped_collective_program_type_checks(name):
    x = _rand(4, 4, 4) if name != "all_to_all" else _rand(4, 4, 3)
    f = vmap(PROGRAMS[name], axis_name="i")
    closed = make_jaxpr(f)(x)
    functrax.check_jaxpr(closed)
    _close(core.eval_jaxpr(closed.jaxpr, closed.consts, x)[0], f(x), tol=1e-5)


def test_printing_of_vmapped_collective():
    text = str(make_jaxpr(_vm(lambda v: v - lax.pmean(v, "i")))(np.arange(4.0, dtype="f4")))
    assert "reduce_sum[axes=(0,)] a" in text
    assert "div b 4.0:f32[]" in text
    assert "psum" not in text


def test_staged_collectives_print_and_type_check_in_their_axis_env():
    x = _rand(3, 4)
    with core.extend_axis_env("i", 4):
        closed = make_jaxpr(lambda v: (lax.psum(v, "i"), lax.all_gather(v, "i"),
                                       lax.ppermute(v, "i", [(0, 1)]),
                                       lax.psum_scatter(v, "i", scatter_dimension=1),
                                       lax.axis_index("i")))(x)
        functrax.check_jaxpr(closed)
    text = closed.pretty_print(width=400)
    assert "psum[axes=('i',) axis_index_groups=None] a" in text
    assert ("all_gather[all_gather_dimension=0 axis_index_groups=None axis_name=('i',) "
            "axis_size=4 tiled=False] a") in text
    assert "ppermute[axis_name=('i',) perm=((0, 1),)] a" in text
    assert "reduce_scatter[axis_index_groups=None axis_name=('i',) axis_size=4" in text
    assert "axis_index[axis_name=i]" in text
    assert [a.shape for a in closed.out_avals] == [(3, 4), (4, 3, 4), (3, 4), (3,), ()]
    with pytest.raises(JaxprTypeError, match="unbound axis name: i"):
        functrax.check_jaxpr(closed)  # outside the axis env


@pytest.mark.parametrize("wrap", ["checkpoint", "custom_jvp"])
def test_collective_inside_call_primitive_on_unbatched_operands(wrap):
    c = fnp.ones(3)
    if wrap == "checkpoint":
        f = functrax.checkpoint(lambda c: lax.psum(c, "i"))
    else:
        f = functrax.custom_jvp(lambda c: lax.psum(c, "i"))
        f.defjvp(lambda p, t: (f(*p), t[0]))
    out = _vm(lambda v: v + f(c)[0])(fnp.arange(4.0))
    _close(out, np.arange(4.0) + 4.0)
