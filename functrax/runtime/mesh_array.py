"""Arrays split over a device mesh (``device_put(x, NamedSharding(mesh, spec))``), and the
ways of assembling one from per-device pieces: ``make_array_from_callback``,
``make_array_from_single_device_arrays``, ``make_array_from_process_local_data``.

A :class:`MeshShardedArray` is an :class:`~functrax.core.Array` of the global shape whose
data lives as one numpy block per mesh device (replicas share one buffer: arrays are
immutable); ``np.asarray`` and every functrax operation gather the blocks. Its
``addressable_shards`` list, per device, the block's ``index`` into the global array and its
``replica_id`` (the position among the devices holding the same block).
"""
from __future__ import annotations

import numpy as np

from functrax import core, dtypes
from functrax.core import Array, ShapedArray
from functrax.runtime.devices import Shard, device_put, process_count, put_rules
from functrax.runtime.mesh import Mesh
from functrax.runtime.shardings import (
    NamedSharding, Sharding, SingleDeviceSharding, block_index, mesh_coords, replica_id,
    spec_dims,
)

__all__ = ["MeshShardedArray", "put_sharded", "make_array_from_callback",
           "make_array_from_single_device_arrays", "make_array_from_process_local_data",
           "reshard"]


class MeshShardedArray(Array):
    """An array of the global shape held as one block per device of a mesh.

    >>> import functrax
    >>> m = functrax.make_mesh((1,), ("x",), devices=functrax.devices()[:1])
    >>> x = functrax.device_put(np.arange(4.0), functrax.NamedSharding(m, functrax.P("x")))
    >>> [s.index for s in x.addressable_shards]
    [(slice(0, 4, None),)]
    """

    __slots__ = ("_blocks", "_sharding", "_named", "_dims", "_gathered")

    @classmethod
    def _make(cls, blocks, sharding, aval: ShapedArray):
        """Wrap per-device blocks (row-major over the mesh, of ``aval``'s dtype); a
        ``SingleDeviceSharding`` is a mesh of its one device."""
        a = object.__new__(cls)
        a.aval = aval
        a._blocks = list(blocks)
        a._sharding = sharding
        named = sharding if isinstance(sharding, NamedSharding) else NamedSharding(
            Mesh(np.array([sharding.device], dtype=object), ("_",)))
        a._named = named
        a._dims = spec_dims("MeshShardedArray", "the array", named.spec, aval.shape,
                            named.mesh)
        a._gathered = None
        return a

    @property
    def _value(self):
        g = self._gathered
        if g is None:
            if self._blocks is None:
                raise RuntimeError(f"Array has been deleted with shape="
                                   f"{self.aval.str_short()}.")
            g = np.empty(self.aval.shape, core.physical_aval(self.aval).dtype)
            for shard in self._raw_shards():
                if shard[3] == 0:
                    g[shard[1]] = shard[2]
            if g.dtype != self.aval.dtype and not dtypes.is_extended(self.aval.dtype):
                g = g.astype(self.aval.dtype)
            self._gathered = g
        return g

    size = property(lambda self: self.aval.size)
    nbytes = property(lambda self: self.aval.size * self.aval.dtype.itemsize)
    sharding = property(lambda self: self._sharding)
    is_fully_replicated = property(lambda self: self._sharding.is_fully_replicated)
    is_fully_addressable = property(lambda self: True)

    def _raw_shards(self):
        """``(device, index, block, replica_id)`` per device, row-major over the mesh."""
        mesh = self._named.mesh
        for (dev, coords), block in zip(mesh_coords(mesh), self._blocks):
            yield (dev, block_index(coords, self._dims, self.aval.shape, mesh.shape), block,
                   replica_id(coords, self._dims, mesh))

    @property
    def addressable_shards(self) -> list:
        """One :class:`~functrax.Shard` per device: its device, index, data and replica_id."""
        if self._blocks is None:
            raise RuntimeError("Array has been deleted.")
        return [Shard(d, idx, Array._make(b, self.aval.update(shape=b.shape)), rid)
                for d, idx, b, rid in self._raw_shards()]

    global_shards = addressable_shards

    @property
    def device(self):
        """The device holding the array, when one device holds it all."""
        devs = list(self._named.mesh.devices.flat)
        if len(devs) != 1:
            raise ValueError("device is not defined for an array sharded over several "
                             "devices; use .sharding or .devices()")
        return devs[0]

    def devices(self) -> set:
        return set(self._named.mesh.devices.flat)

    def shard_values(self) -> list:
        """The per-device numpy blocks (read-only use), row-major over the mesh."""
        return list(self._blocks)

    def delete(self):
        self._blocks = None
        self._gathered = None

    def is_deleted(self) -> bool:
        return self._blocks is None

    def __reduce__(self):
        return (Array, (self._value, None, self.aval.weak_type))


def _host(x, fn):
    if isinstance(x, core.Tracer):
        raise TypeError(f"{fn} takes concrete arrays, got a traced value {x!r}; call it "
                        "outside of transformed functions (inside jit, use shard_map)")
    if not core.is_arraylike(x):
        raise TypeError(f"{fn}: expected an array, got {x!r} of type {type(x).__name__}")
    aval = core.get_aval(x)
    v = x._value if core.is_concrete_array(x) else core.to_numpy_value(x, aval)
    return np.asarray(v), aval


def put_sharded(x, sharding: NamedSharding, fn: str = "device_put"):
    """``x`` split into the blocks of ``sharding`` (a :class:`MeshShardedArray`). A traced
    ``x`` (inside ``jit``) is checked against the sharding and returned as it is: inside a
    program every value is one numpy array."""
    mesh = sharding.mesh
    if isinstance(x, core.Tracer):
        shape = core.get_aval(x).shape
        spec_dims(fn, f"the array of shape {shape}", sharding.spec, shape, mesh)
        return x
    v, aval = _host(x, fn)
    dims = spec_dims(fn, f"the array of shape {aval.shape}", sharding.spec, aval.shape, mesh)
    blocks = {}
    out = []
    for _, coords in mesh_coords(mesh):
        idx = block_index(coords, dims, aval.shape, mesh.shape)
        key = tuple((s.start, s.stop) for s in idx)
        if key not in blocks:  # replicas share the block
            blocks[key] = np.array(v[idx + (Ellipsis,)])  # a copy (0-d stays 0-d)
        out.append(blocks[key])
    return MeshShardedArray._make(out, sharding, aval.update(weak_type=aval.weak_type))


put_rules[NamedSharding] = lambda x, s: put_sharded(x, s)
put_rules[SingleDeviceSharding] = lambda x, s: _put_single(x, s)


def _put_single(x, sharding: SingleDeviceSharding):
    v, aval = _host(x, "device_put")
    return MeshShardedArray._make([np.array(v)], sharding, aval)


def _check_sharding(fn, sharding):
    if not isinstance(sharding, Sharding):
        raise TypeError(f"{fn}: sharding must be a Sharding (functrax.NamedSharding(mesh, "
                        f"P(...))), got {sharding!r} of type {type(sharding).__name__}")


def _assemble(fn, shape, sharding, pieces):
    """A MeshShardedArray of ``shape`` from one block per device (row-major over the mesh),
    each checked to have the shard shape."""
    shape = tuple(int(s) for s in shape)
    if isinstance(sharding, SingleDeviceSharding):
        return _put_single(pieces[0], sharding)
    want = sharding.shard_shape(shape)
    vals = []
    for (dev, _), p in zip(mesh_coords(sharding.mesh), pieces):
        v, aval = _host(p, fn)
        if v.shape != want:
            raise ValueError(f"{fn}: the data for {dev} has shape {v.shape}, but the sharding "
                             f"{sharding} gives each device a block of shape {want} of the "
                             f"global shape {shape}")
        vals.append(v)
    dt = dtypes.canonicalize_dtype(vals[0].dtype)
    vals = [np.asarray(v, dt) for v in vals]
    return MeshShardedArray._make(vals, sharding, ShapedArray(shape, dt))


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
    """An array of the global ``shape`` whose block on each device is
    ``data_callback(index)`` (``index``: that device's tuple of slices), as JAX.

    Args:
      shape: the global shape.
      sharding: a ``NamedSharding`` (or ``SingleDeviceSharding``).
      data_callback: called once per device with its index; returns its block.
      dtype: accepted for JAX compatibility (the blocks' dtype is used).

    Raises:
      ValueError: when a block does not have the shard shape.

    >>> import functrax
    >>> m = functrax.make_mesh((1,), ("x",), devices=functrax.devices()[:1])
    >>> data = np.arange(4.0)
    >>> make_array_from_callback((4,), functrax.NamedSharding(m, functrax.P("x")),
    ...                          lambda i: data[i]).shape
    (4,)
    """
    _check_sharding("make_array_from_callback", sharding)
    idx_map = sharding.devices_indices_map(tuple(shape))
    if isinstance(sharding, SingleDeviceSharding):
        return _assemble("make_array_from_callback", shape, sharding,
                         [data_callback(next(iter(idx_map.values())))])
    pieces = [data_callback(idx_map[dev]) for dev, _ in mesh_coords(sharding.mesh)]
    return _assemble("make_array_from_callback", shape, sharding, pieces)


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None):
    """An array of the global ``shape`` from one block per device of ``sharding``, given
    in the order of the mesh's devices (``sharding.mesh.devices.flat``).

    >>> import functrax
    >>> m = functrax.make_mesh((1,), ("x",), devices=functrax.devices()[:1])
    >>> make_array_from_single_device_arrays(
    ...     (2,), functrax.NamedSharding(m, functrax.P("x")), [np.ones(2)]).shape
    (2,)
    """
    fn = "make_array_from_single_device_arrays"
    _check_sharding(fn, sharding)
    arrays = list(arrays)
    n = 1 if isinstance(sharding, SingleDeviceSharding) else sharding.mesh.size
    if len(arrays) != n:
        raise ValueError(f"{fn}: got {len(arrays)} arrays for the {n} devices of {sharding}; "
                         "pass one block per device, in the order of mesh.devices.flat")
    return _assemble(fn, shape, sharding, arrays)


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
    """An array from this process's part of the data (as JAX). In a single-process run the
    local data is the whole array.

    Raises:
      ValueError: when ``global_shape`` differs from the local data's shape in a
        single-process run.
      NotImplementedError: in a multi-process run.

    >>> import functrax
    >>> m = functrax.make_mesh((1,), ("x",), devices=functrax.devices()[:1])
    >>> make_array_from_process_local_data(
    ...     functrax.NamedSharding(m, functrax.P("x")), np.ones(2)).shape
    (2,)
    """
    fn = "make_array_from_process_local_data"
    _check_sharding(fn, sharding)
    v, aval = _host(local_data, fn)
    if process_count() > 1:
        raise NotImplementedError(f"{fn}: assembling a global array from the data of several "
                                  "processes is not supported yet (one process holds all "
                                  "devices here)")
    if global_shape is not None and tuple(global_shape) != v.shape:
        raise ValueError(f"{fn}: in a single-process run the local data is the global data, "
                         f"but its shape {v.shape} differs from global_shape "
                         f"{tuple(global_shape)}")
    return device_put(Array(v, aval.dtype), sharding)


def reshard(x, out_shardings):
    """``x`` (an array or pytree) laid out by ``out_shardings`` (a sharding, a
    PartitionSpec over the mesh in scope, or a pytree prefix of those): a ``device_put``.

    >>> import functrax
    >>> m = functrax.make_mesh((1,), ("x",), devices=functrax.devices()[:1])
    >>> reshard(np.ones(2), functrax.NamedSharding(m, functrax.P())).sharding.spec
    P()
    """
    from functrax.runtime.mesh import get_mesh
    from functrax.runtime.shardings import PartitionSpec
    from functrax.tree_util import broadcast_prefix, tree_flatten, tree_unflatten
    leaves, tree = tree_flatten(x)
    specs = broadcast_prefix(out_shardings, tree_unflatten(tree, [0] * len(leaves)),
                             is_leaf=lambda s: isinstance(s, (Sharding, PartitionSpec)))
    out = []
    for leaf, s in zip(leaves, specs):
        if isinstance(s, PartitionSpec):
            mesh = get_mesh()
            if mesh.empty:
                raise ValueError("reshard: a PartitionSpec needs a mesh in scope "
                                 "(functrax.set_mesh(mesh)); or pass a NamedSharding")
            s = NamedSharding(mesh, s)
        _check_sharding("reshard", s)
        out.append(put_rules[type(s)](leaf, s))
    return tree_unflatten(tree, out)
