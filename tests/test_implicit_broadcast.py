"""Size-1 broadcasting of lax operands (JAX's rule: equal ranks, each dimension equal or 1):
the shape rule and its errors, and the same programs eagerly, under jit on every backend,
under jvp/grad (numerical checks in float64), vmap and linear_transpose, with the
``explicit_broadcasts`` pass that gives backends equal shapes."""
from __future__ import annotations

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax
from functrax import primitives as P
from functrax.passes.explicit_broadcast import explicit_broadcasts
from functrax.test_util import check_grads


def _f(x, y, z):
    a = lax.mul(x, y)                    # (3, 4) * (1, 4)
    b = lax.add(a, z)                    # (3, 4) + (3, 1)
    c = lax.max(b, lax.sub(z, y))        # (3, 1) - (1, 4) -> (3, 4)
    d = lax.div(c, lax.add(lax.mul(y, y), 1.0))
    e = lax.atan2(d, z) + lax.pow(lax.abs(y) + 1.0, z) + lax.rem(x, lax.abs(y) + 2.0)
    return fnp.sum(e + lax.min(y, z))


def _args(dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.normal(size=s).astype(dtype) for s in ((3, 4), (1, 4), (3, 1)))


def _reference(x, y, z):
    """The same program on numpy arrays (numpy broadcasts the size-1 axes)."""
    x, y, z = (np.asarray(a, np.float64) for a in (x, y, z))
    c = np.maximum(x * y + z, z - y) / (y * y + 1.0)
    e = np.arctan2(c, z) + (np.abs(y) + 1.0) ** z + np.fmod(x, np.abs(y) + 2.0)
    return (e + np.minimum(y, z)).sum()


@pytest.mark.parametrize("shapes,want", [
    (((2, 1), (1, 3)), (2, 3)), (((1,), (5,)), (5,)), (((), (2, 1)), (2, 1)),
    (((0, 1), (1, 3)), (0, 3)), (((1, 1), (1, 1)), (1, 1)),
])
def test_shape_rule(shapes, want):
    assert P.broadcast_shapes(*shapes) == want
    args = [np.zeros(s, np.float32) for s in shapes]
    assert functrax.eval_shape(lax.add, *args).shape == want


@pytest.mark.parametrize("shapes,msg", [
    (((2,), (3,)), r"add got incompatible shapes for broadcasting: \(2,\), \(3,\)"),
    (((2, 3), (3,)), r"add got arrays of different rank: \(2, 3\), \(3,\)"),
    (((0, 3), (2, 3)), "incompatible shapes"),
])
def test_shape_rule_errors_name_the_op_and_shapes(shapes, msg):
    with pytest.raises(TypeError, match=msg):
        lax.add(*[np.zeros(s, np.float32) for s in shapes])


def test_jaxpr_keeps_the_size_1_operand_as_jax_prints_it():
    x, y, _ = _args()
    text = str(functrax.make_jaxpr(lambda x, y: lax.mul(x, y))(x, y))
    assert text == ("{ lambda ; a:f32[3,4] b:f32[1,4]. let c:f32[3,4] = mul a b in (c,) }")


@pytest.mark.parametrize("backend", ["numpy", "triton", "c"])
def test_jit_on_every_backend_matches_numpy(backend):
    args = _args()
    want = _reference(*args)
    np.testing.assert_allclose(float(_f(*args)), want, rtol=1e-5)
    np.testing.assert_allclose(float(functrax.jit(_f, backend=backend)(*args)), want, rtol=1e-5)


def test_lowering_sees_equal_shapes():
    args = _args()
    closed = explicit_broadcasts(functrax.make_jaxpr(_f)(*args))
    for eqn in closed.jaxpr.eqns:
        if eqn.primitive.family in functrax.core.ELEMENTWISE_FAMILIES:
            shape = eqn.outvars[0].aval.shape
            assert all(v.aval.shape in ((), shape) for v in eqn.invars), eqn
    again = explicit_broadcasts(closed)
    assert again is closed  # nothing left to do: the pass returns its argument


def test_explicit_broadcasts_reaches_sub_jaxprs():
    x, y, _ = _args()

    def f(x, y):
        return lax.cond(True, lambda a, b: lax.mul(a, b), lambda a, b: lax.sub(a, b), x, y)
    closed = explicit_broadcasts(functrax.make_jaxpr(f)(x, y))
    branches = closed.jaxpr.eqns[-1].params["branches"]
    for br in branches:
        assert br.jaxpr.eqns[0].primitive is P.broadcast_in_dim_p
    np.testing.assert_allclose(np.asarray(functrax.jit(f)(x, y)), x * y)


def test_grads_match_finite_differences_float64():
    with functrax.enable_x64(True):
        args = _args(np.float64)
        check_grads(_f, args, order=2, modes=("fwd", "rev"))
        check_grads(functrax.jit(_f), args, order=1, modes=("fwd", "rev"))
        g = functrax.grad(_f, argnums=(0, 1, 2))(*args)
        assert [a.shape for a in g] == [(3, 4), (1, 4), (3, 1)]


def test_cotangent_of_a_size_1_operand_is_summed_to_its_shape():
    x, y, _ = _args()
    g = functrax.grad(lambda y: fnp.sum(lax.mul(x, y)), argnums=0)(y)
    np.testing.assert_allclose(np.asarray(g), x.sum(0, keepdims=True), rtol=1e-6)
    t = functrax.linear_transpose(lambda y: lax.add(y, x), y)(np.ones((3, 4), np.float32))[0]
    np.testing.assert_array_equal(np.asarray(t), np.full((1, 4), 3.0, np.float32))


def test_jvp_tangent_has_the_output_shape():
    x, y, _ = _args()
    _, t = functrax.jvp(lambda y: lax.add(x, y), (y,), (np.ones_like(y),))
    assert t.shape == (3, 4)
    _, t = functrax.jvp(lambda y: lax.rem(x, y), (y + 5,), (np.ones_like(y),))
    assert t.shape == (3, 4)


@pytest.mark.parametrize("in_axes", [(0, None, None), (None, 0, None), (None, None, 0),
                                     (0, 0, 0), (1, 0, None)])
def test_vmap_matches_a_loop(in_axes):
    base = _args()
    batched = [np.stack([a * (1 + k) for k in range(3)], axis=ax) if ax is not None else a
               for a, ax in zip(base, in_axes)]
    got = np.asarray(functrax.vmap(_f, in_axes=in_axes)(*batched))
    want = [_reference(*[np.take(a, k, axis=ax) if ax is not None else a
                         for a, ax in zip(batched, in_axes)]) for k in range(3)]
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_vmap_of_grad_and_jit_of_vmap():
    x, y, z = _args()
    ys = np.stack([y, 2 * y])
    per = functrax.jit(functrax.vmap(functrax.grad(_f, argnums=1), in_axes=(None, 0, None)))
    got = np.asarray(per(x, ys, z))
    want = np.stack([np.asarray(functrax.grad(_f, argnums=1)(x, yy, z)) for yy in ys])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# --- functrax.numpy leaves size-1 dimensions to lax, as jax.numpy does ---


def test_numpy_binary_ops_stage_jaxs_form():
    x, b, m = fnp.ones((3, 4)), fnp.ones(4), fnp.ones((3, 1))
    assert str(functrax.make_jaxpr(lambda x, b: x + b)(x, b)) == "\n".join([
        "{ lambda ; a:f32[3,4] b:f32[4]. let",
        "    c:f32[1,4] = broadcast_in_dim[broadcast_dimensions=(1,)] b",
        "    d:f32[3,4] = add a c",
        "  in (d,) }"])
    assert str(functrax.make_jaxpr(lambda x, m: x * m)(x, m)) == (
        "{ lambda ; a:f32[3,4] b:f32[3,1]. let c:f32[3,4] = mul a b in (c,) }")
    # where and the other non-ufunc functions still broadcast every operand to one shape
    text = str(functrax.make_jaxpr(lambda x, m: fnp.where(x > 0, x, m))(x, m))
    assert "select_n" in text and "f32[3,1]" in text


def test_numpy_shape_errors_still_name_the_function():
    with pytest.raises(ValueError, match=r"add: incompatible shapes for broadcasting: "
                                         r"shapes=\[\(2, 2\), \(3, 1\)\]"):
        fnp.add(fnp.ones((2, 2)), fnp.ones((3, 1)))


def test_bias_add_compiles_to_the_same_program_as_before():
    """The compiled program sees one broadcast of the bias, and its gradient is one
    reduce_sum: the size-1 steps of the traced program simplify away."""
    from functrax.passes.pipeline import optimize
    w, b = fnp.ones((3, 4)), fnp.ones(4)
    c = optimize(functrax.make_jaxpr(functrax.grad(lambda x, b: (x * b).sum(), argnums=1))(w, b))
    assert [e.primitive.name for e in c.jaxpr.eqns] == ["reduce_sum"]
    c = optimize(functrax.make_jaxpr(lambda x, b: x + b)(w, b))
    assert [e.primitive.name for e in c.jaxpr.eqns] == ["broadcast_in_dim", "add"]
    assert c.jaxpr.eqns[0].invars[0].aval.shape == (4,)


def test_expand_dims_stages_as_jax_and_lowers_as_expand_dims():
    x = fnp.ones((3, 4))
    text = str(functrax.make_jaxpr(lambda x: x.sum(1, keepdims=True))(x))
    assert "c:f32[3,1] = broadcast_in_dim[broadcast_dimensions=(0,)] b" in text
    lowered = explicit_broadcasts(functrax.make_jaxpr(
        lambda x, s: (x.sum(1, keepdims=True), lax.expand_dims(s, (0, 1)),
                      lax.broadcast_in_dim(s, (3,), ()), lax.broadcast_in_dim(
                          x[:1], (3, 4), (0, 1))))(x, 2.0))
    names = [e.primitive.name for e in lowered.jaxpr.eqns]
    assert names.count("expand_dims") == 2  # only the size-1 insertions
    assert names.count("broadcast_in_dim") == 2
    outs = functrax.jit(lambda x, s: (x.sum(1, keepdims=True), lax.expand_dims(s, (0, 1)),
                                      lax.broadcast_in_dim(s, (3,), ())))(x, 2.0)
    assert [o.shape for o in outs] == [(3, 1), (1, 1), (3,)]
    np.testing.assert_array_equal(np.asarray(outs[2]), [2.0, 2.0, 2.0])
