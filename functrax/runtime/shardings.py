"""Shardings (as ``jax.sharding``): ``PartitionSpec`` (``P``), ``NamedSharding`` (an array
split over a :class:`~functrax.runtime.mesh.Mesh` by a spec), ``SingleDeviceSharding``, and
the block arithmetic shared by ``device_put`` and ``shard_map``.

A spec has at most one entry per array dimension: ``None`` (not split), a mesh axis name,
or a tuple of names (split over their product, the first name major). Dimension ``d`` of
size ``n`` split over axes of total size ``k`` has blocks of ``n // k``; a mesh axis that no
entry names holds copies (replicas).

>>> P("data", None)
P('data', None)
"""
from __future__ import annotations

import math

import numpy as np

from functrax.primitives.shard_map import entry_names
from functrax.runtime.mesh import Mesh

__all__ = ["PartitionSpec", "P", "Sharding", "NamedSharding", "SingleDeviceSharding",
           "make_single_device_sharding", "spec_dims", "block_index", "replica_id"]


class PartitionSpec(tuple):
    """How an array's dimensions map to mesh axes: one entry per dimension (``None``, an
    axis name, or a tuple of names); missing trailing entries mean ``None``.

    >>> PartitionSpec(("data", "model"), None)
    P(('data', 'model'), None)
    """

    def __new__(cls, *partitions):
        entries = []
        for p in partitions:
            if isinstance(p, list):
                p = tuple(p)
            if isinstance(p, tuple):
                if not all(isinstance(n, str) for n in p):
                    raise TypeError(f"PartitionSpec: a tuple entry must hold mesh axis names "
                                    f"(strings), got {p!r}")
                p = p[0] if len(p) == 1 else (p or None)
            elif p is not None and not isinstance(p, str):
                raise TypeError(f"PartitionSpec entries must be None, a mesh axis name or a "
                                f"tuple of names, got {p!r} of type {type(p).__name__}")
            entries.append(p)
        return super().__new__(cls, entries)

    def __repr__(self):
        return f"P({repr(tuple(self))[1:-1]})"

    __str__ = __repr__

    def __reduce__(self):
        return (PartitionSpec, tuple(self))

    def _names(self) -> list:
        """Every mesh axis name the spec mentions, in order."""
        return [n for e in self if e is not None for n in (e if isinstance(e, tuple) else (e,))]


P = PartitionSpec


def spec_dims(fn: str, what: str, spec, shape, mesh: Mesh) -> tuple:
    """``spec`` checked against an array of ``shape`` on ``mesh``: a tuple with one tuple of
    mesh axis names per dimension.

    Raises:
      TypeError: a spec that is not a PartitionSpec (or None).
      ValueError: naming ``fn`` and ``what`` (the argument) for a spec longer than the rank,
        an axis that is not in the mesh or is used twice, or an axis size that does not
        divide its dimension.
    """
    if spec is None:
        spec = PartitionSpec()
    if not isinstance(spec, PartitionSpec):
        raise TypeError(f"{fn}: the spec of {what} must be a PartitionSpec (functrax.P(...)) "
                        f"or None, got {spec!r} of type {type(spec).__name__}")
    shape = tuple(shape)
    if len(spec) > len(shape):
        raise ValueError(f"{fn}: {what} of shape {shape} (rank {len(shape)}) has the spec "
                         f"{spec} of {len(spec)} entries: a PartitionSpec may have at most "
                         "one entry per dimension")
    seen = set()
    for name in spec._names():
        if name not in mesh.shape:
            raise ValueError(f"{fn}: the spec {spec} of {what} names the mesh axis {name!r}, "
                             f"which is not an axis of the mesh {mesh} (its axes are "
                             f"{mesh.axis_names})")
        if name in seen:
            raise ValueError(f"{fn}: the spec {spec} of {what} uses the mesh axis {name!r} "
                             "more than once")
        seen.add(name)
    dims = tuple(entry_names(e) for e in spec) + ((),) * (len(shape) - len(spec))
    for d, names in enumerate(dims):
        k = math.prod(mesh.shape[n] for n in names)
        if shape[d] % k:
            sizes = ", ".join(f"{n!r} of size {mesh.shape[n]}" for n in names)
            raise ValueError(f"{fn}: {what} of shape {shape} has dimension {d} of size "
                             f"{shape[d]}, which the mesh axis {sizes} (spec {spec}) does not "
                             f"divide evenly ({shape[d]} % {k} != 0). Pad the array, or split "
                             "that dimension over mesh axes whose sizes divide it")
    return dims


def block_shape(shape, dims, mesh_shape) -> tuple:
    """The per-device block shape of a global ``shape`` split by ``dims``."""
    return tuple(s // math.prod(mesh_shape[n] for n in names) for s, names in zip(shape, dims))


def global_shape(block, dims, mesh_shape) -> tuple:
    """The global shape of a per-device ``block`` shape concatenated by ``dims``."""
    return tuple(s * math.prod(mesh_shape[n] for n in names) for s, names in zip(block, dims))


def block_index(coords: dict, dims, shape, mesh_shape) -> tuple:
    """The slices of the block held at mesh coordinates ``coords`` (name -> position)."""
    out = []
    for s, names in zip(shape, dims):
        pos = 0
        for n in names:
            pos = pos * mesh_shape[n] + coords[n]
        size = s // math.prod(mesh_shape[n] for n in names)
        out.append(slice(pos * size, (pos + 1) * size) if names else slice(None))
    return tuple(out)


def replica_id(coords: dict, dims, mesh: Mesh) -> int:
    """Row-major position of ``coords`` over the mesh axes that no dimension names (0 for
    the first copy of a block)."""
    used = {n for names in dims for n in names}
    rid = 0
    for n in mesh.axis_names:
        if n not in used:
            rid = rid * mesh.shape[n] + coords[n]
    return rid


def mesh_coords(mesh: Mesh):
    """``(device, coords)`` for each device of ``mesh`` in row-major order."""
    for idx in np.ndindex(*mesh.axis_sizes):
        yield mesh.devices[idx], dict(zip(mesh.axis_names, idx))


# --- shardings ---


class Sharding:
    """How an array is laid out over devices (the base class, as ``jax.sharding.Sharding``)."""

    memory_kind = None

    @property
    def device_set(self) -> set:
        raise NotImplementedError

    @property
    def addressable_devices(self) -> set:
        from functrax.runtime.devices import process_index
        return {d for d in self.device_set if d.process_index == process_index()}

    @property
    def num_devices(self) -> int:
        return len(self.device_set)

    is_fully_addressable = property(lambda self: self.addressable_devices == self.device_set)

    def devices_indices_map(self, global_shape) -> dict:
        """Device -> the slices of a ``global_shape`` array it holds."""
        raise NotImplementedError

    def addressable_devices_indices_map(self, global_shape) -> dict:
        mine = self.addressable_devices
        return {d: i for d, i in self.devices_indices_map(global_shape).items() if d in mine}

    def shard_shape(self, global_shape) -> tuple:
        """The shape of each device's block of a ``global_shape`` array."""
        idx = next(iter(self.devices_indices_map(global_shape).values()))
        return tuple(len(range(*s.indices(n))) for s, n in zip(idx, global_shape))

    def is_equivalent_to(self, other, ndim: int) -> bool:
        return self == other


class NamedSharding(Sharding):
    """An array split over ``mesh`` by ``spec`` (as ``jax.sharding.NamedSharding``).

    >>> import functrax
    >>> m = functrax.make_mesh((1,), ("x",), devices=functrax.devices()[:1])
    >>> NamedSharding(m, P("x")).shard_shape((4, 2))
    (4, 2)
    """

    def __init__(self, mesh: Mesh, spec=None, *, memory_kind=None):
        if not isinstance(mesh, Mesh):
            raise TypeError(f"NamedSharding: mesh must be a Mesh (functrax.make_mesh), got "
                            f"{mesh!r} of type {type(mesh).__name__}")
        spec = PartitionSpec() if spec is None else spec
        if not isinstance(spec, PartitionSpec):
            raise TypeError(f"NamedSharding: spec must be a PartitionSpec (functrax.P), got "
                            f"{spec!r} of type {type(spec).__name__}")
        for name in spec._names():
            if name not in mesh.shape:
                raise ValueError(f"NamedSharding: the spec {spec} names the axis {name!r}, "
                                 f"which is not an axis of the mesh {mesh} (its axes are "
                                 f"{mesh.axis_names})")
        self.mesh, self.spec, self.memory_kind = mesh, spec, memory_kind

    @property
    def device_set(self) -> set:
        return set(self.mesh.devices.flat)

    @property
    def is_fully_replicated(self) -> bool:
        return all(self.mesh.shape[n] == 1 for n in self.spec._names())

    def devices_indices_map(self, global_shape) -> dict:
        shape = tuple(global_shape)
        dims = spec_dims("NamedSharding.devices_indices_map", f"an array of shape {shape}",
                         self.spec, shape, self.mesh)
        return {d: block_index(c, dims, shape, self.mesh.shape)
                for d, c in mesh_coords(self.mesh)}

    def __eq__(self, other):
        return (isinstance(other, NamedSharding) and self.mesh == other.mesh
                and _trim(self.spec) == _trim(other.spec))

    def __hash__(self):
        return hash((self.mesh, _trim(self.spec)))

    def __repr__(self):
        return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r})"


def _trim(spec) -> tuple:
    """The spec without its trailing Nones (``P('x')`` equals ``P('x', None)``)."""
    s = tuple(spec)
    while s and s[-1] is None:
        s = s[:-1]
    return s


class SingleDeviceSharding(Sharding):
    """An array held whole by one device (as ``jax.sharding.SingleDeviceSharding``)."""

    def __init__(self, device, *, memory_kind=None):
        self._device, self.memory_kind = device, memory_kind

    device = property(lambda self: self._device)

    @property
    def device_set(self) -> set:
        return {self._device}

    is_fully_replicated = True

    def devices_indices_map(self, global_shape) -> dict:
        return {self._device: (slice(None),) * len(tuple(global_shape))}

    def __eq__(self, other):
        return isinstance(other, SingleDeviceSharding) and self._device == other._device

    def __hash__(self):
        return hash(("single", self._device))

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r})"


def make_single_device_sharding(device) -> SingleDeviceSharding:
    """The sharding of an array held whole by ``device``.

    >>> import functrax
    >>> make_single_device_sharding(functrax.devices()[0]).device_set
    {CpuDevice(id=0)}
    """
    return SingleDeviceSharding(device)
