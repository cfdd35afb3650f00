"""``jit(..., in_shardings=, out_shardings=)`` and ``lax.with_sharding_constraint`` on 8
virtual CPU devices: placed inputs and laid-out outputs (values, ``.sharding``, per-device
blocks), a shard_map fed and read back through jit, prefixes and None, every error, the
constraint under jit / grad / vmap and its printed jaxpr, and the AOT stages."""
from __future__ import annotations

import re

import numpy as np
import pytest

import functrax
from functrax import P, grad, jit, lax, make_jaxpr, shard_map, vmap
from functrax.sharding import MeshShardedArray, NamedSharding, SingleDeviceSharding, set_mesh
from functrax.transforms.jit_shardings import JitShardings
from tests.virtual_devices import cpu_devices

N = 8
F32 = np.float32


@pytest.fixture(autouse=True, scope="module")
def eight_devices():
    with cpu_devices(N):
        yield


@pytest.fixture()
def mesh():
    return functrax.make_mesh((2, 4), ("data", "model"))


def _x(*shape):
    return np.arange(np.prod(shape), dtype=F32).reshape(shape)


def _blocks_ok(a, sharding, value):
    """``a`` is laid out by ``sharding``: each device's block is its slice of ``value``."""
    assert isinstance(a, MeshShardedArray) and a.sharding == sharding
    idx = sharding.devices_indices_map(value.shape)
    shards = a.addressable_shards
    assert len(shards) == N
    for sh in shards:
        assert sh.index == idx[sh.device]
        np.testing.assert_array_equal(np.asarray(sh.data), value[sh.index])


# --- in/out shardings: round trips ---


def test_in_out_shardings_round_trip(mesh):
    s = NamedSharding(mesh, P("data", "model"))
    rows = NamedSharding(mesh, P("data"))
    f = jit(lambda x, y: (x * 2, x + y), in_shardings=(s, None), out_shardings=(s, rows))
    x = _x(4, 8)
    a, b = f(x, x + 1)
    _blocks_ok(a, s, 2 * x)
    _blocks_ok(b, rows, 2 * x + 1)
    assert a.addressable_shards[0].data.shape == (2, 2)
    assert b.addressable_shards[0].data.shape == (2, 8)
    # a committed argument with the in_sharding goes in as it is; the same outputs again
    a2, _ = f(functrax.device_put(x, s), x + 1)
    _blocks_ok(a2, s, 2 * x)


def test_one_sharding_covers_every_argument_and_output(mesh):
    s = NamedSharding(mesh, P("data"))
    f = jit(lambda d: {"u": d["a"] * 2, "v": d["b"].sum(0)}, in_shardings=s,
            out_shardings={"u": s, "v": NamedSharding(mesh, P())})
    x = _x(4, 3)
    out = f({"a": x, "b": x})
    _blocks_ok(out["u"], s, 2 * x)
    _blocks_ok(out["v"], NamedSharding(mesh, P()), x.sum(0))
    assert out["v"].is_fully_replicated


def test_prefix_and_none_entries(mesh):
    s = NamedSharding(mesh, P("model"))
    # a tuple entry covering a pytree argument; None leaves it unconstrained
    f = jit(lambda p, y: (p[0] + p[1], y * 2), in_shardings=(s, None),
            out_shardings=(None, s))
    x = _x(8, 2)
    a, b = f((x, x), x)
    assert type(a) is functrax.Array and np.allclose(a, 2 * x)
    _blocks_ok(b, s, 2 * x)
    # a list is a tuple (as JAX); out_shardings alone
    g = jit(lambda x: x + 1, in_shardings=[s])
    assert type(g(x)) is functrax.Array
    h = jit(lambda x: [x, x], out_shardings=[s, None])
    o = h(x)
    _blocks_ok(o[0], s, x)
    assert type(o[1]) is functrax.Array


def test_static_arguments_take_no_in_sharding(mesh):
    s = NamedSharding(mesh, P("data"))
    f = jit(lambda x, k, y: x * k + y, static_argnums=1, in_shardings=(s, s),
            out_shardings=s)
    x = _x(4, 2)
    _blocks_ok(f(x, 3.0, x), s, 4 * x)


def test_partition_specs_over_the_mesh_in_scope(mesh):
    f = jit(lambda x: x * 2, in_shardings=P("data"), out_shardings=P("data", "model"))
    x = _x(4, 8)
    with set_mesh(mesh):
        out = f(x)
    _blocks_ok(out, NamedSharding(mesh, P("data", "model")), 2 * x)
    with pytest.raises(ValueError, match=r"PartitionSpec, which needs a mesh in scope"):
        jit(lambda x: x, in_shardings=P("data"))(x)


def test_single_device_sharding(mesh):
    dev = functrax.devices()[3]
    f = jit(lambda x: x + 1, out_shardings=SingleDeviceSharding(dev))
    out = f(_x(3))
    assert isinstance(out, MeshShardedArray) and out.device == dev
    np.testing.assert_array_equal(np.asarray(out), _x(3) + 1)


def test_shard_map_fed_and_read_back_through_jit(mesh):
    xs = NamedSharding(mesh, P("data", None))
    ws = NamedSharding(mesh, P(None, "model"))
    os = NamedSharding(mesh, P("data", "model"))

    def body(xb, wb):  # per device: (2, 6) @ (6, 2)
        return xb @ wb, lax.psum(xb.sum(), ("data", "model"))

    sm = shard_map(body, mesh=mesh, in_specs=(P("data", None), P(None, "model")),
                   out_specs=(P("data", "model"), P()))
    f = jit(sm, in_shardings=(xs, ws), out_shardings=(os, NamedSharding(mesh, P())))
    x, w = _x(4, 6) / 10, _x(6, 8) / 10
    y, total = f(x, w)
    _blocks_ok(y, os, np.asarray(x @ w))
    np.testing.assert_allclose(np.asarray(y), x @ w, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(total), 4 * x.sum(), rtol=1e-5)
    # committed inputs laid out as in_shardings, and the outputs fed back in
    y2, _ = f(functrax.device_put(x, xs), functrax.device_put(w, ws))
    _blocks_ok(y2, os, np.asarray(x @ w))
    g = jit(lambda y: y * 2, in_shardings=os, out_shardings=os)
    _blocks_ok(g(y2), os, 2 * np.asarray(y2))
    # a shard_map called outside jit returns its outputs laid out already: they go into a
    # jit with that in_sharding as they are, and an output so laid out is not copied
    eager = sm(x, w)[0]
    assert isinstance(eager, MeshShardedArray) and eager.sharding == os
    _blocks_ok(g(eager), os, 2 * np.asarray(eager))
    assert JitShardings.place_outputs([eager], [os])[0] is eager


def test_under_grad_and_vmap(mesh):
    s = NamedSharding(mesh, P("data"))
    rep = NamedSharding(mesh, P())
    f = jit(lambda x: (x ** 2).sum(0), in_shardings=s, out_shardings=rep)
    x = _x(4, 3)
    np.testing.assert_allclose(np.asarray(grad(lambda x: f(x).sum())(x)), 2 * x)
    xs = np.stack([x, x + 1])
    np.testing.assert_allclose(np.asarray(vmap(f)(xs)), (xs ** 2).sum(1))
    # the traced call constrains its outputs: an outer jit returning one lays it out so
    outer = jit(lambda x: f(x))
    _blocks_ok(outer(x), rep, (x ** 2).sum(0))
    assert "sharding_constraint" in str(make_jaxpr(outer)(x))
    plus = jit(lambda x: f(x) + 1)
    assert type(plus(x)) is functrax.Array
    np.testing.assert_allclose(np.asarray(plus(x)), (x ** 2).sum(0) + 1)


def test_lower_compile_reports_shardings(mesh):
    s = NamedSharding(mesh, P("data"))
    f = jit(lambda x, y: (x + y, y), in_shardings=(s, None), out_shardings=(s, None))
    x = _x(4, 2)
    c = f.lower(x, x).compile()
    ins, kw = c.input_shardings
    assert ins[0] == s and isinstance(ins[1], SingleDeviceSharding) and kw == {}
    outs = c.output_shardings
    assert outs[0] == s and isinstance(outs[1], SingleDeviceSharding)
    a, _ = c(x, x)
    _blocks_ok(a, s, 2 * x)
    with pytest.raises(ValueError, match="does not match the sharding"):
        c(functrax.device_put(x, NamedSharding(mesh, P("model"))), x)
    plain = jit(lambda x: x).lower(x).compile()
    assert isinstance(plain.output_shardings, SingleDeviceSharding)


# --- errors ---


def test_committed_argument_with_another_sharding_raises(mesh):
    f = jit(lambda x: x, in_shardings=NamedSharding(mesh, P("data")))
    x = functrax.device_put(_x(4, 4), NamedSharding(mesh, P("model")))
    msg = (r"Sharding passed to jit does not match the sharding on the respective arg\. "
           r"Got jit sharding: NamedSharding\(.*spec=P\('data',\)\) and arg sharding: "
           r"NamedSharding\(.*spec=P\('model',\)\) for arg 'x' .*float32\[4,4\]")
    with pytest.raises(ValueError, match=msg):
        f(x)


def test_structure_not_a_prefix_raises(mesh):
    s = NamedSharding(mesh, P("data"))
    with pytest.raises(ValueError, match=re.escape(
            "jit of <lambda>: in_shardings must be a tree prefix of the positional arguments "
            "tuple (2 non-static arguments: x, y), but in_shardings is a tuple of 1 entry")):
        jit(lambda x, y: x, in_shardings=(s,))(_x(4), _x(4))
    with pytest.raises(ValueError, match=r"in_shardings\[1\]\['b'\] \(argument 'p'\) is a "
                                         r"tuple of 2 entries where the value there is a leaf"):
        jit(lambda x, p: x, in_shardings=(s, {"a": None, "b": (s, s)}))(
            _x(4), {"a": _x(4), "b": _x(4)})
    with pytest.raises(ValueError, match=r"in_shardings\[1\] \(argument 'p'\) is a dict with "
                                         r"keys \['a'\] where the value there is a dict"):
        jit(lambda x, p: x, in_shardings=(s, {"a": s}))(_x(4), {"a": _x(4), "b": _x(4)})
    with pytest.raises(ValueError, match=r"out_shardings must be a tree prefix of the "
                                         r"function's output, but out_shardings is a tuple of "
                                         r"3 entries"):
        jit(lambda x: (x, x), out_shardings=(s, s, s))(_x(4))


def test_indivisible_dimension_raises(mesh):
    s = NamedSharding(mesh, P(None, ("data", "model")))
    with pytest.raises(ValueError, match=re.escape(
            "jit of <lambda>: argument 'x' of shape (2, 6) has dimension 1 of size 6, which "
            "the mesh axis 'data' of size 2, 'model' of size 4 (spec P(None, ('data', "
            "'model'))) does not divide evenly (6 % 8 != 0)")):
        jit(lambda x: x, in_shardings=s)(_x(2, 6))
    with pytest.raises(ValueError, match=re.escape(
            "argument 'p['w']' of shape (3,) has dimension 0 of size 3, which the mesh axis "
            "'model' of size 4")):
        jit(lambda p: p, in_shardings=NamedSharding(mesh, P("model")))({"w": _x(3)})
    with pytest.raises(ValueError, match=re.escape(
            "jit of <lambda>: the output[1] of shape (5,) has dimension 0 of size 5, which "
            "the mesh axis 'data' of size 2")):
        jit(lambda x: (x, x[:5]), out_shardings=NamedSharding(mesh, P("data")))(_x(8))
    with pytest.raises(ValueError, match=r"argument 'x' of shape \(8,\) \(rank 1\) has "
                                         r"the spec P\('data', 'model'\) of 2 entries"):
        jit(lambda x: x, in_shardings=NamedSharding(mesh, P("data", "model")))(_x(8))


def test_non_sharding_leaves_raise_at_jit_time(mesh):
    with pytest.raises(TypeError, match=r"jit of <lambda>: in_shardings\[1\] is 'data' of "
                                        r"type str; every leaf of in_shardings must be a "
                                        r"Sharding"):
        jit(lambda x, y: x, in_shardings=(None, "data"))
    with pytest.raises(TypeError, match=r"out_shardings is 3 of type int"):
        jit(lambda x: x, out_shardings=3)
    with pytest.raises(TypeError, match=r"out_shardings\['a'\] is <object"):
        jit(lambda x: x, out_shardings={"a": object()})


def test_kwargs_with_in_shardings_raise(mesh):
    f = jit(lambda x, y=1.0: x * y, in_shardings=NamedSharding(mesh, P()))
    with pytest.raises(ValueError, match=r"jit does not support kwargs when in_shardings is "
                                         r"specified .*\['y'\]"):
        f(_x(2), y=_x(2))
    # static keyword arguments are fine
    g = jit(lambda x, k=1.0: x * k, static_argnames="k", in_shardings=NamedSharding(mesh, P()))
    np.testing.assert_array_equal(np.asarray(g(_x(2), k=3.0)), 3 * _x(2))


# --- with_sharding_constraint ---


def test_constraint_eager_places_the_value(mesh):
    s = NamedSharding(mesh, P("data", "model"))
    x = _x(4, 8)
    out = lax.with_sharding_constraint(x, s)
    _blocks_ok(out, s, x)
    assert lax.with_sharding_constraint(out, s) is out  # already laid out so
    tree = lax.with_sharding_constraint({"a": x, "b": x[0]}, {"a": s, "b": None})
    _blocks_ok(tree["a"], s, x)
    assert not isinstance(tree["b"], MeshShardedArray)


def test_constraint_under_jit_lays_out_the_output(mesh):
    s = NamedSharding(mesh, P("data", "model"))
    f = jit(lambda x: lax.with_sharding_constraint(x * 2, s))
    x = _x(4, 8)
    out = f(x)
    _blocks_ok(out, s, 2 * x)
    out = f(x)  # the second call too (no fast path around the layout)
    _blocks_ok(out, s, 2 * x)
    # an out_sharding given wins over the constraint
    g = jit(lambda x: lax.with_sharding_constraint(x * 2, s),
            out_shardings=NamedSharding(mesh, P()))
    _blocks_ok(g(x), NamedSharding(mesh, P()), 2 * x)
    # a value constrained in the middle changes nothing
    h = jit(lambda x: lax.with_sharding_constraint(x * 2, s) + 1)
    assert type(h(x)) is functrax.Array and np.allclose(h(x), 2 * x + 1)


def test_constraint_printed_jaxpr(mesh):
    s = NamedSharding(mesh, P("data"))
    text = str(make_jaxpr(lambda x: lax.with_sharding_constraint(x * 2, s))(_x(4, 2)))
    assert ("c:f32[4,2] = sharding_constraint[\n      layout=None\n      sharding=NamedSharding("
            "mesh=Mesh('data': 2, 'model': 4, axis_types=(Explicit, Explicit)), "
            "spec=P('data',))\n      unconstrained_dims=set()\n    ] b") in text


def test_constraint_under_grad_and_vmap(mesh):
    s = NamedSharding(mesh, P("data"))
    x = _x(4, 2)
    f = lambda x: (lax.with_sharding_constraint(x * 3, s) ** 2).sum()  # noqa: E731
    np.testing.assert_allclose(np.asarray(grad(f)(x)), 18 * x)
    np.testing.assert_allclose(np.asarray(jit(grad(f))(x)), 18 * x)
    jtext = str(make_jaxpr(grad(f))(x))
    assert jtext.count("sharding_constraint") == 2  # forward, and the cotangent's
    v = vmap(lambda r: lax.with_sharding_constraint(r * 2, NamedSharding(mesh, P("model"))),
             in_axes=1)
    xs = _x(8, 3)
    np.testing.assert_array_equal(np.asarray(v(xs)), 2 * xs.T)
    # the batch dimension (1, where in_axes put it) is not split
    assert "spec=P('model', None)" in str(make_jaxpr(v)(xs))
    np.testing.assert_array_equal(np.asarray(jit(v)(xs)), 2 * xs.T)


def test_constraint_errors(mesh):
    with pytest.raises(ValueError, match=re.escape(
            "with_sharding_constraint: x of shape (3, 2) has dimension 0 of size 3, which "
            "the mesh axis 'data' of size 2")):
        lax.with_sharding_constraint(_x(3, 2), NamedSharding(mesh, P("data")))
    with pytest.raises(ValueError, match=r"x\[1\] of shape \(6,\) has dimension 0 of size 6, "
                                         r"which the mesh axis 'model' of size 4"):
        jit(lambda a, b: lax.with_sharding_constraint(
            (a, b), NamedSharding(mesh, P("model"))))(_x(8), _x(6))
    with pytest.raises(TypeError, match=r"with_sharding_constraint: shardings is 'data' of type "
                                        r"str"):
        lax.with_sharding_constraint(_x(2), "data")
    with pytest.raises(ValueError, match=r"with_sharding_constraint: shardings must be a tree "
                                         r"prefix of the value x"):
        lax.with_sharding_constraint((_x(2),), (None, None))
    with pytest.raises(ValueError, match=r"needs a mesh in scope"):
        lax.with_sharding_constraint(_x(2), P())
    with set_mesh(mesh):
        out = lax.with_sharding_constraint(_x(4), P("data"))
    _blocks_ok(out, NamedSharding(mesh, P("data")), _x(4))


def test_constraint_on_typed_keys_and_nested_jits(mesh):
    s = NamedSharding(mesh, P("data"))
    keys = functrax.random.split(functrax.random.key(0), 4)
    f = jit(lambda k: functrax.random.uniform(lax.with_sharding_constraint(k, s)[0]))
    assert np.asarray(f(keys)) == np.asarray(functrax.random.uniform(keys[0]))
    # an inner jit's out_sharding lays out the outer jit's output it becomes
    g = jit(lambda x: jit(lambda y: y + 1, out_shardings=s)(x))
    _blocks_ok(g(_x(4)), s, _x(4) + 1)
    # donation with shardings
    h = jit(lambda x: x * 2, in_shardings=s, out_shardings=s, donate_argnums=0)
    _blocks_ok(h(_x(4, 2)), s, 2 * _x(4, 2))
