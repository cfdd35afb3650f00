"""The device model: virtual CPU devices, sharded arrays, and placing arrays on devices.

functrax runs on the host CPU; for ``pmap`` it presents ``N`` *virtual* CPU devices, each a
thread of the pmap runtime (numpy releases the GIL, so they run concurrently). ``N`` is
read once, at the first use of the device list, from the config option
``num_cpu_devices`` if it was set (``functrax.config.update("num_cpu_devices", 4)``), else
from the environment variable ``FUNCTRAX_NUM_CPU_DEVICES``, else 1 (as JAX's
``jax_num_cpu_devices`` / ``--xla_force_host_platform_device_count``).

Every device belongs to a process (``process_index``). One process holds all of them for
now; a multi-process runtime (one process per host, MPI) gives each process its own
``local_devices()`` out of the global ``devices()`` and its own ``process_index()``.

``clear_backends()`` (``from functrax.runtime.devices import clear_backends``; the name
``functrax.runtime.devices`` is the function) forgets the device list so that the next use reads
the configuration again (tests use it to switch the device count; arrays placed before keep
their devices).

>>> import functrax
>>> functrax.devices()[0]
CpuDevice(id=0)
"""
from __future__ import annotations

import os
import threading
import warnings

import numpy as np

from functrax import core, dtypes
from functrax.config import config
from functrax.core import Array, ShapedArray
from functrax.core.device import Device
from functrax.tree_util import tree_flatten, tree_map, tree_unflatten

__all__ = ["Device", "ShardedArray", "Shard", "devices", "local_devices", "device_count",
           "local_device_count", "process_index", "process_count", "process_indices",
           "device_put_sharded",
           "device_put_replicated", "clear_backends", "device_put", "default_backend"]

ENV_NUM_CPU_DEVICES = "FUNCTRAX_NUM_CPU_DEVICES"

config.define("num_cpu_devices", None,
              "Number of virtual CPU devices (read once, at the first use of the device "
              "list; None: the FUNCTRAX_NUM_CPU_DEVICES environment variable, else 1).")





class _Backend:
    """The device list of every process, made at first use: ``counts[p]`` devices of
    process ``p`` (default ``n`` of each), with globally unique ids, process-major."""

    def __init__(self, n: int, process: int = 0, n_processes: int = 1, counts=None):
        self.process_index = process
        self.process_count = n_processes
        counts = [n] * n_processes if counts is None else [int(c) for c in counts]
        starts = [sum(counts[:p]) for p in range(n_processes)]
        self.devices = [Device(starts[p] + i, p) for p in range(n_processes)
                        for i in range(counts[p])]
        self.local = [d for d in self.devices if d.process_index == process]


_lock = threading.Lock()
_backend: _Backend | None = None
# (this process's index, every process's device count): set by functrax.distributed
_process_layout: tuple | None = None


def set_process_layout(layout) -> None:
    """Make the device list span processes (``(process_index, counts)``; None: this
    process only); used by ``functrax.distributed``. Forgets the current device list."""
    global _process_layout, _backend
    with _lock:
        _process_layout = layout
        _backend = None


def configured_count() -> int:
    """The number of virtual CPU devices this process is configured for (``num_cpu_devices``,
    else ``FUNCTRAX_NUM_CPU_DEVICES``, else 1)."""
    n = config.read("num_cpu_devices")
    source = "functrax.config num_cpu_devices"
    if n is None:
        n = os.environ.get(ENV_NUM_CPU_DEVICES)
        source = f"the environment variable {ENV_NUM_CPU_DEVICES}"
        if n is None:
            return 1
    try:
        count = int(n)
    except (TypeError, ValueError):
        count = 0
    if count < 1 or (isinstance(n, float) and n != count):
        raise ValueError(f"{source} must be a positive integer number of virtual CPU devices, "
                         f"got {n!r}")
    return count


def _get_backend() -> _Backend:
    global _backend
    b = _backend
    if b is None:
        with _lock:
            if _backend is None:
                if _process_layout is None:
                    _backend = _Backend(configured_count())
                else:
                    me, counts = _process_layout
                    _backend = _Backend(counts[me], me, len(counts), counts)
            b = _backend
    return b


def devices_in_use() -> list | None:
    """The device list of every process if it was made already (by a first use of the
    devices), else None."""
    b = _backend
    return None if b is None else list(b.devices)


def clear_backends() -> None:
    """Forget the device list: the next use reads ``num_cpu_devices`` again.

    >>> clear_backends()
    """
    global _backend
    with _lock:
        _backend = None


def _on_config_update(name, value):
    if name == "num_cpu_devices" and _backend is not None and value is not None and \
            value != len(_backend.local):
        warnings.warn("functrax.config num_cpu_devices was updated after the devices were "
                      f"initialized ({len(_backend.local)} of them); it takes effect after "
                      "clear_backends() (from functrax.runtime.devices import clear_backends) or "
                      "when set before the first use",
                      RuntimeWarning, stacklevel=3)


config._watchers.append(_on_config_update)


def devices(backend=None) -> list:
    """All devices of every process (``[CpuDevice(id=0), ...]``).

    >>> devices()[0].platform
    'cpu'

    ``devices("gpu")`` (or ``"cuda"``) lists the CUDA GPUs (``functrax.runtime.gpu_devices``).
    """
    if _check_backend(backend):
        from functrax.runtime.gpu_devices import gpu_devices
        return gpu_devices()
    return list(_get_backend().devices)


def local_devices(process_index: int | None = None, backend=None) -> list:
    """The devices of this process (or of ``process_index``)."""
    if _check_backend(backend):
        from functrax.runtime.gpu_devices import gpu_devices
        return [d for d in gpu_devices() if d.process_index == (process_index or 0)]
    b = _get_backend()
    if process_index is None:
        return list(b.local)
    return [d for d in b.devices if d.process_index == process_index]


def device_count(backend=None) -> int:
    """The number of devices of every process."""
    return len(devices(backend))


def local_device_count(backend=None) -> int:
    """The number of devices of this process (the most a ``pmap`` axis may have)."""
    return len(local_devices(backend=backend))


def process_index(backend=None) -> int:
    """The index of this process (0 in a single-process run)."""
    _check_backend(backend)
    return _get_backend().process_index


def process_count(backend=None) -> int:
    """The number of processes (1 in a single-process run)."""
    _check_backend(backend)
    return _get_backend().process_count


def process_indices(backend=None) -> list:
    """The indices of all processes, ``list(range(process_count()))`` (as JAX).

    >>> process_indices()
    [0]
    """
    return list(range(process_count(backend)))


def _check_backend(backend) -> bool:
    """True for a GPU backend name (``"gpu"``/``"cuda"``) with a GPU present, False for the
    CPU (``None``/``"cpu"``); JAX's error for any other platform or a missing GPU."""
    if backend is None or backend == "cpu":
        return False
    from functrax.runtime.gpu_devices import GPU_PLATFORMS, gpu_count, unknown_backend_error
    if backend in GPU_PLATFORMS and gpu_count() > 0:
        return True
    raise unknown_backend_error(backend)


def default_backend() -> str:
    """The platform of the default device: ``"gpu"`` with a CUDA GPU present, else ``"cpu"``.

    >>> default_backend() in ("cpu", "gpu")
    True
    """
    from functrax.runtime.gpu_devices import default_backend as _default
    return _default()


# sharding type -> put(leaf, sharding): ``device_put(x, sharding)``; filled by
# ``runtime/mesh_array.py`` (NamedSharding, SingleDeviceSharding)
put_rules: dict = {}


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """Place ``x`` (an array or a pytree of them) on ``device``.

    ``device`` may also be a sharding (``functrax.sharding.NamedSharding``: the result is
    split into per-device blocks over its mesh). On a GPU (``functrax.devices("gpu")[i]``)
    the result is a GPU-resident array (``.device`` is the GPU; ``np.asarray`` copies it
    back); on a CPU device it is a host ``Array``. ``device=None`` means the default device
    (``functrax.default_device``; else the first GPU when one is present, else
    ``CpuDevice(id=0)``). ``src``, ``donate`` and ``may_alias`` are accepted for JAX
    compatibility.

    >>> import functrax
    >>> device_put(np.float32(1.5), functrax.devices()[0]).device
    CpuDevice(id=0)
    """
    from functrax.runtime.gpu_devices import put_leaf
    put = put_rules.get(type(device))
    if put is not None:  # a Sharding (functrax.sharding): its module registered the rule
        return tree_map(lambda leaf: put(leaf, device), x)
    if device is None:
        device = config.read("default_device")  # functrax.default_device(...)
        if device is None or isinstance(device, str):
            device = devices(None if device == "cpu" else device or default_backend())[0]
    if not isinstance(device, Device):
        raise TypeError(f"device_put: device must be a Device (an entry of functrax.devices() or "
                        f"functrax.devices('gpu')) or None, got {device!r} of type "
                        f"{type(device).__name__}")
    leaves, tree = tree_flatten(x)
    for leaf in leaves:
        if not core.is_arraylike(leaf):
            raise TypeError(f"device_put: expected arrays (or a pytree of arrays), got a leaf "
                            f"{leaf!r} of type {type(leaf).__name__}")
    return tree_unflatten(tree, [put_leaf(leaf, device) for leaf in leaves])


# --- arrays on devices ---


class Shard:
    """One device's piece of an array (``functrax.Shard``, as ``jax.Shard``): its ``device``,
    its ``index`` into the global array, its ``replica_id`` (0: pmap's shards hold distinct
    data) and its ``data`` (an Array on the device)."""

    __slots__ = ("device", "index", "data", "replica_id")

    def __init__(self, device, index, data, replica_id: int = 0):
        self.device, self.index, self.data = device, index, data
        self.replica_id = replica_id

    def __repr__(self):
        return (f"Shard(device={self.device!r}, index={self.index}, "
                f"replica_id={self.replica_id}, data={self.data})")


class ShardedArray(Array):
    """An array split along one axis over devices: one buffer per device.

    The output of ``pmap`` (and of :func:`device_put_sharded` /
    :func:`device_put_replicated`). It is an :class:`Array` of the full (global) shape:
    ``np.asarray`` (and every functrax operation) gathers the shards into one array, while a
    following ``pmap`` mapping the same axis hands each device its own shard without
    gathering.

    >>> import functrax
    >>> x = device_put_replicated(np.float32(1.0), functrax.devices()[:1])
    >>> x.shape, len(x.addressable_shards)
    ((1,), 1)
    """

    __slots__ = ("_shards", "_axis", "_devices", "_gathered")

    def __init__(self, shards, axis: int, devices, aval: ShapedArray | None = None):
        shards = [np.asarray(s) for s in shards]
        if aval is None:
            s0 = shards[0]
            shape = s0.shape[:axis] + (len(shards),) + s0.shape[axis:]
            aval = ShapedArray(shape, dtypes.canonicalize_dtype(s0.dtype))
        self.aval = aval
        self._shards = shards
        self._axis = axis
        self._devices = tuple(devices)
        self._gathered = None

    @classmethod
    def _make(cls, shards, axis, devices, aval):
        """Wrap per-device buffers (already of ``aval``'s dtype) without checks."""
        a = object.__new__(cls)
        a.aval = aval
        a._shards = shards
        a._axis = axis
        a._devices = tuple(devices)
        a._gathered = None
        return a

    @property
    def _value(self):
        g = self._gathered
        if g is None:
            if self._shards is None:
                _raise_deleted(self.aval)
            g = np.stack(self._shards, axis=self._axis)
            if g.dtype != core.physical_aval(self.aval).dtype:  # keys: their uint32 data
                g = g.astype(self.aval.dtype)
            self._gathered = g
        return g

    size = property(lambda self: self.aval.size)
    nbytes = property(lambda self: self.aval.size * self.aval.dtype.itemsize)

    @property
    def sharded_axis(self) -> int:
        """The axis split over the devices (the pmap's ``out_axes``)."""
        return self._axis

    @property
    def addressable_shards(self) -> list:
        """One :class:`Shard` per device: its device, index into this array and data."""
        if self._shards is None:
            _raise_deleted(self.aval)
        out = []
        for i, (d, s) in enumerate(zip(self._devices, self._shards)):
            index = (slice(None),) * self._axis + (i,)
            out.append(Shard(d, index, Array._make(s, self.aval.update(shape=s.shape))))
        return out

    def devices(self) -> set:
        """The set of devices holding a shard."""
        return set(self._devices)

    @property
    def device_buffers(self) -> list:
        return [s.data for s in self.addressable_shards]

    def shard_values(self) -> list:
        """The per-device numpy buffers (read-only use), in device order."""
        if self._shards is None:
            _raise_deleted(self.aval)
        return list(self._shards)

    def delete(self):
        """Free the buffers; using the array afterwards raises."""
        self._shards = None
        self._gathered = None

    def is_deleted(self) -> bool:
        return self._shards is None

    def __reduce__(self):
        return (Array, (self._value, None, self.aval.weak_type))


def _raise_deleted(aval):
    raise RuntimeError(f"Array has been deleted with shape={aval.str_short()}: it was donated "
                       "to a pmapped function (donate_argnums) or deleted. Use the function's "
                       "outputs instead.")


def _check_devices(fn, devs):
    if not isinstance(devs, (list, tuple)) or not devs:
        raise ValueError(f"`devices` argument to `{fn}` must be a non-empty sequence.")
    bad = [d for d in devs if type(d) is not Device]
    if bad:
        raise TypeError(f"{fn}: devices must be Device objects (functrax.devices()), got "
                        f"{bad[0]!r} of type {type(bad[0]).__name__}")
    return list(devs)


def _host_value(x, fn):
    """(numpy value of ``x`` canonicalized as functrax does, its aval)."""
    if isinstance(x, core.Tracer):
        raise TypeError(f"{fn} takes concrete arrays, got a traced value {x!r}; call it "
                        "outside of transformed functions")
    aval = core.get_aval(x)
    return core.to_numpy_value(x, aval) if not core.is_concrete_array(x) else np.asarray(x), aval


def device_put_sharded(shards, devices):
    """Put ``shards[i]`` on ``devices[i]``; returns their stack along a new leading axis.

    ``shards`` is a sequence of arrays, or of pytrees of one structure (then the result is
    that pytree of stacked leaves). Every shard's leaf must have the same shape and dtype.

    >>> import functrax
    >>> x = device_put_sharded([np.zeros(2, np.float32)], functrax.devices()[:1])
    >>> x.shape
    (1, 2)
    """
    devs = _check_devices("device_put_sharded", devices)
    if not isinstance(shards, (list, tuple)):
        raise TypeError(f"device_put_sharded: shards must be a sequence (one entry per device), "
                        f"got {type(shards).__name__}")
    if len(shards) != len(devs):
        raise ValueError(f"len(shards) = {len(shards)} must equal len(devices) = {len(devs)}.")
    flat = [tree_flatten(s) for s in shards]
    tree = flat[0][1]
    for i, (_, t) in enumerate(flat):
        if t != tree:
            raise ValueError(f"device_put_sharded: all shards must have the same pytree "
                             f"structure; shard 0 is {tree} but shard {i} is {t}")
    outs = []
    for k in range(tree.num_leaves):
        vals = [_host_value(f[0][k], "device_put_sharded") for f in flat]
        a0 = vals[0][1]
        for i, (_, a) in enumerate(vals):
            if (a.shape, a.dtype) != (a0.shape, a0.dtype):
                raise ValueError(f"device_put_sharded: all shards must have the same shape and "
                                 f"dtype; shard 0 is {a0.str_short()} but shard {i} is "
                                 f"{a.str_short()}")
        aval = ShapedArray((len(devs),) + a0.shape, a0.dtype, a0.weak_type)
        outs.append(ShardedArray._make([v for v, _ in vals], 0, devs, aval))
    return tree_unflatten(tree, outs)


def device_put_replicated(x, devices):
    """Put a copy of ``x`` (an array or pytree) on each device, stacked along a new leading
    axis of size ``len(devices)`` (the buffers are shared: arrays are immutable).

    >>> import functrax
    >>> device_put_replicated(np.float32(2.0), functrax.devices()[:1])
    Array([2.], dtype=float32)
    """
    devs = _check_devices("device_put_replicated", devices)
    leaves, tree = tree_flatten(x)
    outs = []
    for leaf in leaves:
        v, a = _host_value(leaf, "device_put_replicated")
        aval = ShapedArray((len(devs),) + a.shape, a.dtype, a.weak_type)
        outs.append(ShardedArray._make([v] * len(devs), 0, devs, aval))
    return tree_unflatten(tree, outs)
