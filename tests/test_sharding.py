"""Meshes, PartitionSpecs and shardings on 8 virtual CPU devices: Mesh / make_mesh /
set_mesh, NamedSharding's blocks, device_put of a global array (shards, indices, replica
ids, gathering), make_array_from_*, reshard, and their errors."""
from __future__ import annotations

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import P
from functrax.sharding import (
    AxisType, Mesh, NamedSharding, PartitionSpec, Sharding, SingleDeviceSharding, get_mesh,
    make_single_device_sharding, set_mesh,
)
from tests.virtual_devices import cpu_devices

N = 8


@pytest.fixture(autouse=True, scope="module")
def eight_devices():
    with cpu_devices(N):
        yield


@pytest.fixture()
def mesh2():
    return functrax.make_mesh((2, 4), ("data", "model"))


# --- Mesh ---


def test_mesh_properties(mesh2):
    assert mesh2.axis_names == ("data", "model")
    assert list(mesh2.shape.items()) == [("data", 2), ("model", 4)]
    assert mesh2.size == 8 and mesh2.devices.shape == (2, 4)
    assert [d.id for d in mesh2.devices[1]] == [4, 5, 6, 7]
    assert mesh2.axis_types == (AxisType.Explicit, AxisType.Explicit)
    assert repr(mesh2) == "Mesh('data': 2, 'model': 4, axis_types=(Explicit, Explicit))"
    m = Mesh(np.array(functrax.devices()).reshape(4, 2), ("a", "b"))
    assert m.shape["a"] == 4 and m.axis_types == (AxisType.Auto, AxisType.Auto)
    assert m == Mesh(np.array(functrax.devices()).reshape(4, 2), ("a", "b"))
    assert hash(m) == hash(Mesh(np.array(functrax.devices()).reshape(4, 2), ("a", "b")))
    assert m != Mesh(np.array(functrax.devices()).reshape(4, 2), ("b", "a"))
    devs = functrax.devices()
    assert functrax.make_mesh((8,), ("x",), devices=devs[::-1]).devices[0].id == 7


def test_mesh_errors():
    devs = functrax.devices()
    with pytest.raises(ValueError, match=r"needs 6 devices .*8 devices are available"):
        functrax.make_mesh((2, 3), ("a", "b"))
    with pytest.raises(ValueError, match=r"needs 8 devices.*4 devices were given"):
        functrax.make_mesh((2, 4), ("a", "b"), devices=devs[:4])
    with pytest.raises(ValueError, match="one name per axis"):
        functrax.make_mesh((8,), ("a", "b"))
    with pytest.raises(ValueError, match="unique"):
        Mesh(np.array(devs).reshape(2, 4), ("a", "a"))
    with pytest.raises(ValueError, match="more than once"):
        Mesh(np.array([devs[0], devs[0]]), ("a",))


def test_set_mesh_global_and_context(mesh2):
    assert get_mesh().empty
    m1 = functrax.make_mesh((8,), ("x",))
    with set_mesh(m1):
        assert get_mesh() == m1
        with mesh2:  # a Mesh is a context manager too
            assert get_mesh() == mesh2
        assert get_mesh() == m1
    assert get_mesh().empty
    functrax.set_mesh(mesh2)  # the global setter
    try:
        assert get_mesh() == mesh2
        out = functrax.reshard(np.arange(8.0), P("data"))
        assert out.sharding == NamedSharding(mesh2, P("data"))
    finally:
        functrax.set_mesh(None)
    assert get_mesh().empty


# --- PartitionSpec and NamedSharding ---


def test_partition_spec():
    assert repr(P("a", None)) == "P('a', None)"
    assert repr(P(("a", "b"))) == "P(('a', 'b'),)"
    assert P(["a", "b"], None) == P(("a", "b"), None)
    assert P(("a",)) == P("a")
    assert PartitionSpec is P and isinstance(P("a"), tuple)
    assert len(functrax.tree_util.tree_leaves([P("a"), P()])) == 2
    with pytest.raises(TypeError, match="PartitionSpec entries"):
        P(1)


def test_named_sharding_blocks(mesh2):
    s = NamedSharding(mesh2, P("model", "data"))
    assert isinstance(s, Sharding)
    assert s.shard_shape((8, 6)) == (2, 3)
    idx = s.devices_indices_map((8, 6))
    d12 = mesh2.devices[1, 2]  # data=1, model=2
    assert idx[d12] == (slice(4, 6), slice(3, 6))
    assert s.device_set == set(functrax.devices())
    assert not s.is_fully_replicated and NamedSharding(mesh2, P()).is_fully_replicated
    assert s == NamedSharding(mesh2, P("model", "data", None))
    assert hash(s) == hash(NamedSharding(mesh2, P("model", "data", None)))
    combo = NamedSharding(mesh2, P(("data", "model")))
    assert combo.devices_indices_map((16,))[mesh2.devices[1, 1]] == (slice(10, 12),)
    with pytest.raises(ValueError, match="not an axis of the mesh"):
        NamedSharding(mesh2, P("x"))


# --- device_put of global arrays ---


def test_device_put_shards(mesh2):
    x = np.arange(48.0, dtype=np.float32).reshape(8, 6)
    a = functrax.device_put(x, NamedSharding(mesh2, P("data")))
    assert a.shape == (8, 6) and a.dtype == np.float32
    assert a.sharding == NamedSharding(mesh2, P("data"))
    np.testing.assert_array_equal(np.asarray(a), x)
    shards = a.addressable_shards
    assert len(shards) == 8
    for sh in shards:
        assert isinstance(sh, functrax.Shard)
        np.testing.assert_array_equal(np.asarray(sh.data), x[sh.index])
    by_dev = {sh.device.id: sh for sh in shards}
    assert by_dev[5].index == (slice(4, 8), slice(None))
    # replicas along the unmentioned 'model' axis: 0..3 within each data row
    assert [by_dev[i].replica_id for i in range(8)] == [0, 1, 2, 3, 0, 1, 2, 3]
    b = functrax.device_put(x, NamedSharding(mesh2, P("model", "data")))
    by_dev = {sh.device.id: sh for sh in b.addressable_shards}
    assert by_dev[6].index == (slice(4, 6), slice(3, 6))  # data=1, model=2
    np.testing.assert_array_equal(np.asarray(by_dev[6].data), x[4:6, 3:6])
    assert all(sh.replica_id == 0 for sh in b.addressable_shards)
    # arrays behave as ordinary arrays
    np.testing.assert_allclose(np.asarray(fnp.sum(b * 2.0)), 2 * x.sum())
    np.testing.assert_allclose(np.asarray(functrax.jit(lambda v: v + 1)(b)), x + 1)


def test_device_put_pytree_and_single_device(mesh2):
    tree = {"a": np.ones((4, 4), np.float32), "b": np.zeros(8, np.int32)}
    out = functrax.device_put(tree, NamedSharding(mesh2, P("data")))
    assert out["b"].sharding.spec == P("data") and out["b"].dtype == np.int32
    d3 = functrax.devices()[3]
    one = functrax.device_put(np.ones(3), SingleDeviceSharding(d3))
    assert one.device == d3
    assert make_single_device_sharding(d3) == SingleDeviceSharding(d3)
    assert make_single_device_sharding(d3).devices_indices_map((2, 3)) == {
        d3: (slice(None), slice(None))}


def test_device_put_errors(mesh2):
    with pytest.raises(ValueError) as e:
        functrax.device_put(np.zeros((6, 4)), NamedSharding(mesh2, P("model")))
    msg = str(e.value)
    for part in ("device_put", "(6, 4)", "dimension 0", "'model'", "size 4"):
        assert part in msg, (part, msg)
    with pytest.raises(ValueError, match="rank 1"):
        functrax.device_put(np.zeros(8), NamedSharding(mesh2, P("data", "model")))


# --- make_array_from_* ---


def test_make_array_from_callback(mesh2):
    x = np.arange(64.0, dtype=np.float32).reshape(8, 8)
    s = NamedSharding(mesh2, P("data", "model"))
    seen = []

    def cb(index):
        seen.append(index)
        return x[index]

    a = functrax.make_array_from_callback((8, 8), s, cb)
    assert len(seen) == 8 and (slice(4, 8), slice(6, 8)) in seen
    np.testing.assert_array_equal(np.asarray(a), x)
    assert a.sharding == s
    with pytest.raises(ValueError, match=r"has shape \(8, 8\).*block of shape \(4, 2\)"):
        functrax.make_array_from_callback((8, 8), s, lambda i: x)


def test_make_array_from_single_device_arrays(mesh2):
    x = np.arange(16.0, dtype=np.float32).reshape(8, 2)
    s = NamedSharding(mesh2, P("data"))
    pieces = [x[4 * (k // 4):4 * (k // 4) + 4] for k in range(8)]
    a = functrax.make_array_from_single_device_arrays((8, 2), s, pieces)
    np.testing.assert_array_equal(np.asarray(a), x)
    # from another array's shards
    b = functrax.make_array_from_single_device_arrays(
        (8, 2), s, [sh.data for sh in a.addressable_shards])
    np.testing.assert_array_equal(np.asarray(b), x)
    with pytest.raises(ValueError, match="got 2 arrays for the 8 devices"):
        functrax.make_array_from_single_device_arrays((8, 2), s, pieces[:2])


def test_make_array_from_process_local_data(mesh2):
    x = np.arange(8.0, dtype=np.float32)
    a = functrax.make_array_from_process_local_data(NamedSharding(mesh2, P("model")), x)
    np.testing.assert_array_equal(np.asarray(a), x)
    assert {sh.device.id: sh.index for sh in a.addressable_shards}[2] == (slice(4, 6),)
    with pytest.raises(ValueError, match="global_shape"):
        functrax.make_array_from_process_local_data(NamedSharding(mesh2, P()), x, (16,))


def test_reshard_and_shard_map_outputs(mesh2):
    x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    a = functrax.device_put(x, NamedSharding(mesh2, P("data")))
    b = functrax.reshard(a, NamedSharding(mesh2, P(None, "model")))
    assert b.sharding.spec == P(None, "model")
    np.testing.assert_array_equal(np.asarray(b), x)
    f = functrax.shard_map(lambda v: v * 2.0, mesh=mesh2, in_specs=P("data", "model"),
                           out_specs=P("data", "model"))
    out = f(b)
    assert out.sharding == NamedSharding(mesh2, P("data", "model"))
    np.testing.assert_array_equal(np.asarray(out.addressable_shards[5].data),
                                  2 * x[2:4, 1:2])


def test_device_put_inside_jit_keeps_the_value(mesh2):
    s = NamedSharding(mesh2, P("data"))
    f = functrax.jit(lambda v: functrax.device_put(v * 2.0, s) + 1.0)
    np.testing.assert_allclose(np.asarray(f(np.ones(4, np.float32))), np.full(4, 3.0))
    with pytest.raises(ValueError, match="dimension 0 of size 3"):
        functrax.jit(lambda v: functrax.device_put(v, s))(np.ones(3, np.float32))


def test_doctests():
    import doctest
    import importlib
    for name in ("functrax.runtime.mesh", "functrax.runtime.shardings",
                 "functrax.runtime.mesh_array", "functrax.sharding",
                 "functrax.experimental.shard_map", "functrax.transforms.shard_map_api"):
        mod = importlib.import_module(name)
        result = doctest.testmod(mod, extraglobs={"np": np, "functrax": functrax})
        assert result.failed == 0, name
        assert result.attempted > 0, name
