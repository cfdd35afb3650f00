"""Arrays split over a device mesh (``device_put(x, NamedSharding(mesh, spec))``), and the
ways of assembling one from per-device pieces: ``make_array_from_callback``,
``make_array_from_single_device_arrays``, ``make_array_from_process_local_data``.

A :class:`MeshShardedArray` is an :class:`~functrax.core.Array` of the global shape whose
data lives as one numpy block per mesh device (replicas share one buffer: arrays are
immutable); ``np.asarray`` and every functrax operation gather the blocks. Its
``addressable_shards`` list, per device, the block's ``index`` into the global array and its
``replica_id`` (the position among the devices holding the same block).

In a multi-process run (``functrax.distributed.initialize()``) a mesh may span processes:
each process then holds the blocks of its own devices only (the others are ``None``). Such
an array is not *fully addressable*: ``np.asarray`` (and ``float``, ``repr`` of its
values...) raises unless it is fully replicated; ``functrax.experimental.multihost_utils.
process_allgather`` gathers it (a collective), and ``jit`` reads its global value the same
way (every process runs the same program, so they all gather at the same point).
"""
from __future__ import annotations

import numpy as np

from functrax import core, dtypes
from functrax.core import Array, ShapedArray
from functrax.runtime.devices import Shard, device_put, process_count, process_index, put_rules
from functrax.runtime.pmap_runtime import allgather_processes, warn_process_gather
from functrax.primitives.shard_map import entry_names
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
        """The global value: from this process's blocks when they cover the array, else
        gathered from every process (a collective: under ``jit``, every process reads its
        arguments in the same order)."""
        g = self._gathered
        if g is None:
            if self._blocks is None:
                raise RuntimeError(f"Array has been deleted with shape="
                                   f"{self.aval.str_short()}.")
            g = self._local_value()
            if g is None:
                g = self._gather_processes()
            if g.dtype != self.aval.dtype and not dtypes.is_extended(self.aval.dtype):
                g = g.astype(self.aval.dtype)
            self._gathered = g
        return g

    def _local_value(self):
        """The global value from this process's blocks; None if they do not cover it."""
        g = np.empty(self.aval.shape, core.physical_aval(self.aval).dtype)
        need, have = set(), set()
        for _, idx, block, _ in self._raw_shards():
            key = tuple((s.start, s.stop) for s in idx)
            need.add(key)
            if block is not None and key not in have:
                g[idx] = block
                have.add(key)
        return g if have == need else None

    def _gather_processes(self):
        """The global value from every process's blocks (MPI all-gather)."""
        local = [(idx, b) for _, idx, b, _ in self._raw_shards() if b is not None]
        warn_process_gather(f"an input array {self.aval.str_short()} sharded as "
                            f"{self._sharding.spec}")
        every = allgather_processes(np.stack([b for _, b in local]))
        g = np.empty(self.aval.shape, every.dtype)
        devs = [dev for dev, _ in mesh_coords(self._named.mesh)]
        idxs = [idx for _, idx, _, _ in self._raw_shards()]
        for q in range(every.shape[0]):
            mine = [i for i, d in zip(idxs, devs) if d.process_index == q]
            if len(mine) != every.shape[1]:
                raise NotImplementedError(
                    f"gathering an array of shape {self.aval.shape} sharded {self._sharding} "
                    "over processes holding different numbers of its devices")
            for idx, block in zip(mine, every[q]):
                g[idx] = block
        return g

    def _scalar_value(self):
        if not self.is_fully_addressable and not self._sharding.is_fully_replicated:
            raise RuntimeError(_not_addressable_msg(self))
        return super()._scalar_value()

    def __repr__(self):
        if not self.is_fully_addressable and not self._sharding.is_fully_replicated:
            return (f"Array(shape={self.aval.shape}, dtype={self.aval.dtype.name}, "
                    f"sharding={self._sharding!r}, not fully addressable)")
        return super().__repr__()

    def __str__(self):
        if not self.is_fully_addressable and not self._sharding.is_fully_replicated:
            return repr(self)
        return super().__str__()

    size = property(lambda self: self.aval.size)
    nbytes = property(lambda self: self.aval.size * self.aval.dtype.itemsize)
    sharding = property(lambda self: self._sharding)
    is_fully_replicated = property(lambda self: self._sharding.is_fully_replicated)
    is_fully_addressable = property(lambda self: self._named.is_fully_addressable)

    def _raw_shards(self):
        """``(device, index, block, replica_id)`` per device, row-major over the mesh (the
        block is None for another process's device)."""
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
                for d, idx, b, rid in self._raw_shards() if b is not None]

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
        """The per-device numpy blocks (read-only use), row-major over the mesh (None for
        another process's device)."""
        return list(self._blocks)

    def device_blocks(self) -> list:
        """The per-device blocks as stored, row-major over the mesh, without a copy (numpy
        blocks; ``GpuBuffer`` s for a shard_map's output on GPUs)."""
        if self._blocks is None:
            raise RuntimeError("Array has been deleted.")
        return list(self._blocks)

    def delete(self):
        self._blocks = None
        self._gathered = None

    def is_deleted(self) -> bool:
        return self._blocks is None

    def __reduce__(self):
        return (Array, (self._value, None, self.aval.weak_type))


def _not_addressable_msg(x) -> str:
    n = sum(b is not None for b in x._blocks or ())
    return (f"Fetching the value of an array of shape {x.aval.shape} and dtype "
            f"{x.aval.dtype.name} with sharding {x._sharding!r} is not possible: it spans "
            f"the devices of several processes and this process (process_index "
            f"{process_index()}) holds {n} of its {x._named.mesh.size} blocks (it is not "
            "fully addressable). Use functrax.experimental.multihost_utils.process_allgather("
            "x) to gather the global value on every process (every process must call it), "
            "or x.addressable_shards to read this process's blocks.")


def _local(dev) -> bool:
    return dev.process_index == process_index()


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
    if isinstance(x, MeshShardedArray) and x.sharding == sharding:
        return x  # already laid out so: its blocks as they are
    v, aval = _host(x, fn)
    dims = spec_dims(fn, f"the array of shape {aval.shape}", sharding.spec, aval.shape, mesh)
    blocks = {}
    out = []
    for dev, coords in mesh_coords(mesh):
        if not _local(dev):  # another process's device (every process passes the value)
            out.append(None)
            continue
        idx = block_index(coords, dims, aval.shape, mesh.shape)
        key = tuple((s.start, s.stop) for s in idx)
        if key not in blocks:  # replicas share the block
            blocks[key] = np.array(v[idx + (Ellipsis,)])  # a copy (0-d stays 0-d)
        out.append(blocks[key])
    a = MeshShardedArray._make(out, sharding, aval.update(weak_type=aval.weak_type))
    if not a.is_fully_addressable and v.dtype == aval.dtype:
        a._gathered = np.array(v)  # the global value is known here: jit reads it locally
    return a


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
    devs = [dev for dev, _ in mesh_coords(sharding.mesh) if _local(dev)]
    for dev, p in zip(devs, pieces):
        v, aval = _host(p, fn)
        if v.shape != want:
            raise ValueError(f"{fn}: the data for {dev} has shape {v.shape}, but the sharding "
                             f"{sharding} gives each device a block of shape {want} of the "
                             f"global shape {shape}")
        vals.append(v)
    dt = dtypes.canonicalize_dtype(vals[0].dtype)
    it = iter(np.asarray(v, dt) for v in vals)
    blocks = [next(it) if _local(dev) else None for dev, _ in mesh_coords(sharding.mesh)]
    return MeshShardedArray._make(blocks, sharding, ShapedArray(shape, dt))


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
    pieces = [data_callback(idx_map[dev]) for dev, _ in mesh_coords(sharding.mesh)
              if _local(dev)]  # (this process's devices only, as JAX)
    return _assemble("make_array_from_callback", shape, sharding, pieces)


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None):
    """An array of the global ``shape`` from one block per device of ``sharding``, given
    in the order of the mesh's devices (``sharding.mesh.devices.flat``); in a multi-process
    run, one block per device of this process (as JAX).

    >>> import functrax
    >>> m = functrax.make_mesh((1,), ("x",), devices=functrax.devices()[:1])
    >>> make_array_from_single_device_arrays(
    ...     (2,), functrax.NamedSharding(m, functrax.P("x")), [np.ones(2)]).shape
    (2,)
    """
    fn = "make_array_from_single_device_arrays"
    _check_sharding(fn, sharding)
    arrays = list(arrays)
    n = 1 if isinstance(sharding, SingleDeviceSharding) else len(sharding.mesh.local_devices)
    if len(arrays) != n:
        raise ValueError(f"{fn}: got {len(arrays)} arrays for the {n} devices of {sharding}; "
                         "pass one block per device, in the order of mesh.devices.flat")
    return _assemble(fn, shape, sharding, arrays)


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
    """An array from this process's part of the data (as JAX).

    In a single-process run (or for a sharding of this process's devices) the local data
    is the whole array. Over a mesh spanning processes, each process passes its slice along
    the dimensions split over axes that span processes: the union of its devices' blocks
    (a contiguous range of blocks along each dimension, as ``make_mesh`` lays processes out
    along the leading mesh axes); the global shape is inferred from it.

    Args:
      sharding: a ``NamedSharding`` (or ``SingleDeviceSharding``).
      local_data: this process's data.
      global_shape: the global shape (checked against the inferred one when given).

    Raises:
      ValueError: when ``global_shape`` differs from the shape the local data implies, or
        the local data does not split into this process's blocks.

    >>> import functrax
    >>> m = functrax.make_mesh((1,), ("x",), devices=functrax.devices()[:1])
    >>> make_array_from_process_local_data(
    ...     functrax.NamedSharding(m, functrax.P("x")), np.ones(2)).shape
    (2,)
    """
    fn = "make_array_from_process_local_data"
    _check_sharding(fn, sharding)
    v, aval = _host(local_data, fn)
    if process_count() == 1 or sharding.is_fully_addressable:
        if global_shape is not None and tuple(global_shape) != v.shape:
            raise ValueError(f"{fn}: the devices of {sharding} are all this process's, so the "
                             f"local data is the global data, but its shape {v.shape} differs "
                             f"from global_shape {tuple(global_shape)}")
        return device_put(Array(v, aval.dtype), sharding)
    mesh = sharding.mesh
    spec = tuple(sharding.spec)
    if len(spec) > v.ndim:
        raise ValueError(f"{fn}: the spec {sharding.spec} has more entries than the local "
                         f"data of shape {v.shape} has dimensions")
    names = [entry_names(e) for e in spec] + [()] * (v.ndim - len(spec))
    local = [c for d, c in mesh_coords(mesh) if _local(d)]
    shape, firsts = [], []
    for d, ns in enumerate(names):
        total = int(np.prod([mesh.shape[n] for n in ns]))
        mine = sorted({_position(c, ns, mesh) for c in local})
        if mine != list(range(mine[0], mine[0] + len(mine))) or v.shape[d] % len(mine):
            raise ValueError(f"{fn}: the local data of shape {v.shape} does not split into "
                             f"this process's {len(mine)} block(s) along dimension {d} "
                             f"(positions {mine} of {total} over the mesh axes {ns})")
        shape.append(v.shape[d] // len(mine) * total)
        firsts.append(mine[0])
    shape = tuple(shape)
    if global_shape is not None and tuple(global_shape) != shape:
        raise ValueError(f"{fn}: the local data of shape {v.shape} on this process's devices "
                         f"of {sharding} makes an array of global shape {shape}, not "
                         f"global_shape {tuple(global_shape)}")
    blk = sharding.shard_shape(shape)
    blocks, cache = [], {}
    for dev, c in mesh_coords(mesh):
        if not _local(dev):
            blocks.append(None)
            continue
        key = tuple(_position(c, ns, mesh) - f for ns, f in zip(names, firsts))
        if key not in cache:
            cache[key] = np.array(v[tuple(slice(k * b, (k + 1) * b) for k, b in zip(key, blk))])
        blocks.append(cache[key])
    return MeshShardedArray._make(blocks, sharding, aval.update(shape=shape))


def _position(coords, names, mesh) -> int:
    """The block position (row-major over ``names``) of the device at ``coords``."""
    pos = 0
    for n in names:
        pos = pos * mesh.shape[n] + coords[n]
    return pos


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
