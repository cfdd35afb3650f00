"""Device meshes (``functrax.sharding.Mesh``, as ``jax.sharding.Mesh``): an n-d array of
devices whose axes have names, the mesh in scope (``set_mesh`` / ``get_mesh``) and
``make_mesh``.

A mesh is what ``NamedSharding`` and ``shard_map`` split arrays over: a ``PartitionSpec``
entry names mesh axes, and dimension ``d`` of an array is cut into one block per position
along them (row-major when an entry names several axes).

>>> import functrax
>>> mesh = Mesh(np.array(functrax.devices()[:1]), ("x",))
>>> dict(mesh.shape), mesh.size
({'x': 1}, 1)
"""
from __future__ import annotations

import collections
import enum
import math
import threading

import numpy as np

from functrax.core.device import Device

__all__ = ["AxisType", "Mesh", "make_mesh", "set_mesh", "get_mesh", "use_mesh"]


class AxisType(enum.Enum):
    """How a mesh axis is partitioned (as ``jax.sharding.AxisType``). functrax runs every
    program as numpy code, so the type is recorded but does not change results."""

    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self):
        return self.name


class Mesh:
    """An n-d array of devices with one name per axis (as ``jax.sharding.Mesh``).

    Args:
      devices: an array-like of :class:`Device` (its shape is the mesh's shape).
      axis_names: one name (a string) per axis of ``devices``.
      axis_types: an :class:`AxisType` per axis (default ``AxisType.Auto``).

    Raises:
      ValueError: when the number of names differs from the rank of ``devices``, a name
        repeats, or a device appears twice.

    ``mesh.shape`` is an ordered mapping name -> size; ``with mesh:`` makes it the mesh in
    scope (as :func:`set_mesh`).

    >>> import functrax
    >>> Mesh(np.array(functrax.devices()[:1]).reshape(1, 1), ("a", "b")).axis_names
    ('a', 'b')
    """

    def __init__(self, devices, axis_names, axis_types=None):
        if isinstance(axis_names, str):
            axis_names = (axis_names,)
        axis_names = tuple(axis_names)
        devs = _object_array(devices)
        if devs.size and devs.ndim != len(axis_names):
            raise ValueError(f"Mesh: devices of shape {devs.shape} (rank {devs.ndim}) need one "
                             f"axis name per dimension, got axis_names={axis_names}")
        if len(set(axis_names)) != len(axis_names):
            raise ValueError(f"Mesh: axis names must be unique, got {axis_names}")
        bad = [d for d in devs.flat if not isinstance(d, Device)]
        if bad:
            raise TypeError(f"Mesh: devices must be Device objects (functrax.devices()), got "
                            f"{bad[0]!r} of type {type(bad[0]).__name__}")
        if len(set(devs.flat)) != devs.size:
            raise ValueError("Mesh: a device appears more than once in devices")
        self.devices = devs
        self.axis_names = axis_names
        if axis_types is None:
            axis_types = (AxisType.Auto,) * len(axis_names)
        elif isinstance(axis_types, AxisType):
            axis_types = (axis_types,) * len(axis_names)
        self.axis_types = tuple(axis_types)
        if len(self.axis_types) != len(axis_names):
            raise ValueError(f"Mesh: {len(self.axis_types)} axis_types for "
                             f"{len(axis_names)} axes {axis_names}")
        self._prev: list = []

    # --- shape ---

    @property
    def shape(self) -> collections.OrderedDict:
        """Axis name -> size, in axis order."""
        return collections.OrderedDict(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self) -> tuple:
        return tuple(self.devices.shape) if self.axis_names else ()

    shape_tuple = property(lambda self: tuple(zip(self.axis_names, self.axis_sizes)))
    size = property(lambda self: int(self.devices.size) if self.axis_names else 0)
    empty = property(lambda self: not self.axis_names)
    device_ids = property(lambda self: np.vectorize(lambda d: d.id, otypes=[int])(self.devices))

    @property
    def local_devices(self) -> list:
        """The devices of this process (all of them in a single-process run)."""
        from functrax.runtime.devices import process_index
        me = process_index()
        return [d for d in self.devices.flat if d.process_index == me]

    local_mesh = property(lambda self: self)
    is_multi_process = property(
        lambda self: len({d.process_index for d in self.devices.flat}) > 1)

    def axis_size(self, name) -> int:
        """The size of the mesh axis ``name`` (a tuple of names: the product)."""
        names = name if isinstance(name, tuple) else (name,)
        return math.prod(self.shape[n] for n in names)

    # --- identity ---

    def _key(self):
        return (self.axis_names, self.devices.shape, tuple(d.id for d in self.devices.flat),
                self.axis_types)

    def __eq__(self, other):
        return isinstance(other, Mesh) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        if self.empty:
            return "Mesh(axis_sizes=(), axis_names=())"
        axes = ", ".join(f"{n!r}: {s}" for n, s in self.shape.items())
        types = ", ".join(repr(t) for t in self.axis_types)
        return f"Mesh({axes}, axis_types=({types}{',' if len(self.axis_types) == 1 else ''}))"

    # --- the mesh in scope ---

    def __enter__(self):
        self._prev.append(_install(self))
        return self

    def __exit__(self, *exc):
        _install(self._prev.pop())
        return False


def _object_array(devices) -> np.ndarray:
    """An array (or nested sequence) of devices as a numpy object array of its shape."""
    if isinstance(devices, np.ndarray):
        out = np.empty(devices.shape, dtype=object)
        out[...] = devices
        return out
    out = np.empty(np.shape(devices), dtype=object)
    for idx in np.ndindex(out.shape):
        v = devices
        for i in idx:
            v = v[i]
        out[idx] = v
    return out


_EMPTY = None
_lock = threading.Lock()
_current: Mesh | None = None


def _empty_mesh() -> Mesh:
    global _EMPTY
    if _EMPTY is None:
        _EMPTY = Mesh(np.empty((0,), dtype=object), ())
    return _EMPTY


def _install(mesh):
    """Make ``mesh`` (or None) the mesh in scope; returns the previous one."""
    global _current
    with _lock:
        prev, _current = _current, mesh
    return prev


class _MeshSetter:
    """What :func:`set_mesh` returns: the mesh is set already; ``with`` restores the
    previous one at the end of the block."""

    def __init__(self, mesh, prev):
        self.mesh, self.prev = mesh, prev

    def __enter__(self):
        return self.mesh

    def __exit__(self, *exc):
        _install(self.prev)
        return False


def set_mesh(mesh):
    """Set the mesh in scope (as ``jax.set_mesh``): a global setter, and a context manager
    that restores the previous mesh at the end of its block.

    Args:
      mesh: a :class:`Mesh`, or None to clear it.

    Returns:
      A context manager (entering it yields ``mesh``).

    >>> import functrax
    >>> m = Mesh(np.array(functrax.devices()[:1]), ("x",))
    >>> with set_mesh(m):
    ...     get_mesh() == m
    True
    """
    if mesh is not None and not isinstance(mesh, Mesh):
        raise TypeError(f"set_mesh: expected a Mesh (functrax.make_mesh) or None, got "
                        f"{mesh!r} of type {type(mesh).__name__}")
    return _MeshSetter(mesh, _install(mesh))


use_mesh = set_mesh


def get_mesh() -> Mesh:
    """The mesh in scope (:func:`set_mesh`, ``with mesh:``); an empty mesh (``.empty``)
    when none is set.

    >>> get_mesh().empty
    True
    """
    m = _current
    return _empty_mesh() if m is None else m


def make_mesh(axis_shapes, axis_names, *, devices=None, axis_types=None) -> Mesh:
    """A mesh of ``axis_shapes`` over ``devices`` (default: ``functrax.devices()``), in
    device order (as ``jax.make_mesh``).

    Args:
      axis_shapes: the size of each mesh axis.
      axis_names: a name per axis.
      devices: the devices (their number must equal the product of ``axis_shapes``).
      axis_types: an :class:`AxisType` per axis (default ``AxisType.Explicit``, as JAX).

    Raises:
      ValueError: when the product of ``axis_shapes`` differs from the number of devices,
        or the numbers of sizes and names differ.

    >>> make_mesh((1,), ("x",), devices=functrax.devices()[:1]).shape["x"]
    1
    """
    from functrax.runtime.devices import devices as all_devices
    shape = tuple(int(s) for s in axis_shapes)
    names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    if len(shape) != len(names):
        raise ValueError(f"make_mesh: {len(shape)} axis sizes {shape} but {len(names)} axis "
                         f"names {names}; give one name per axis")
    given = devices is not None
    devs = list(devices) if given else all_devices()
    if math.prod(shape) != len(devs):
        where = "were given" if given else "are available (functrax.devices())"
        raise ValueError(
            f"make_mesh: the mesh shape {dict(zip(names, shape))} needs "
            f"{math.prod(shape)} devices (the product of axis_shapes {shape}), but "
            f"{len(devs)} devices {where}. Choose axis sizes whose product is {len(devs)} "
            "(or set the number of virtual CPU devices: functrax.config num_cpu_devices / "
            "FUNCTRAX_NUM_CPU_DEVICES)")
    arr = np.empty(len(devs), dtype=object)
    arr[:] = devs
    if axis_types is None:
        axis_types = (AxisType.Explicit,) * len(names)
    return Mesh(arr.reshape(shape), names, axis_types)
