"""CUDA GPU devices and GPU-resident arrays.

``functrax.devices("gpu")`` (or ``"cuda"``) lists one :class:`GpuDevice` per GPU of the
registered GPU runtime (``gpu_hooks``: for CUDA, the devices ``libcuda`` reports, through
:mod:`functrax.runtime.cuda`; no cuda-core needed to list them) and raises JAX's
``RuntimeError`` when there is none. ``functrax.device_put(x, gpu)`` copies ``x`` into GPU
memory (a buffer of the registered class: :class:`~functrax.runtime.gpu_buffer.GpuBuffer`) and
returns a :class:`GpuArray`: an ``Array`` whose ``.device`` is that GPU. ``np.asarray`` of it
copies back to the host; so do eager ``functrax.numpy`` operations on it (they run on the
numpy backend), while ``jit`` runs GPU-resident inputs on the Triton backend and keeps its
outputs on the GPU.

``functrax.devices()`` (no backend) stays the list of CPU devices, which ``pmap`` runs on;
``default_backend()`` is ``"gpu"`` when a CUDA GPU is visible.

>>> import functrax
>>> functrax.default_backend() in ("cpu", "gpu")
True
"""
from __future__ import annotations

import numpy as np

from functrax import core
from functrax.core import Array, ShapedArray
from functrax.core.device import Device
from functrax.lowering.triton import gpu_hooks
from functrax.runtime import cuda

__all__ = ["GpuDevice", "GpuArray", "gpu_devices", "gpu_count", "default_backend",
           "GPU_PLATFORMS", "unknown_backend_error", "put_leaf", "wrap_buffer"]

GPU_PLATFORMS = ("gpu", "cuda")


def gpu_count() -> int:
    """The number of GPUs the registered probe sees (for CUDA, the driver's; 0 without a
    driver or a GPU)."""
    return gpu_hooks.device_count()


class GpuDevice(Device):
    """A CUDA GPU (``platform`` ``"gpu"``, ``device_kind`` its name, as JAX's).

    >>> GpuDevice(0)
    CudaDevice(id=0)
    """

    __slots__ = ()

    def __init__(self, id: int, process_index: int = 0, device_kind: str = "gpu"):
        super().__init__(id, process_index, "gpu")
        self.device_kind = device_kind

    def __eq__(self, other):
        return type(other) is GpuDevice and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"CudaDevice(id={self.id})"

    __str__ = __repr__


_GPU_DEVICES: tuple | None = None  # (the GPU registration they were listed for, devices)


def unknown_backend_error(backend) -> RuntimeError:
    """JAX's error for a platform that is not present."""
    present = "cpu, gpu" if gpu_count() else "cpu"
    return RuntimeError(f"Unknown backend: '{backend}' requested, but no platforms that are "
                        f"instances of {backend} are present. Platforms present are: {present}")


def gpu_devices() -> list:
    """The CUDA GPUs (``[CudaDevice(id=0), ...]``).

    Raises:
      RuntimeError: JAX's "Unknown backend: 'gpu' requested, ..." when there is none.
    """
    global _GPU_DEVICES
    n = gpu_count()
    if n == 0:
        raise unknown_backend_error("gpu")
    gpu = gpu_hooks.registered()
    if _GPU_DEVICES is None or _GPU_DEVICES[0] is not gpu or len(_GPU_DEVICES[1]) != n:
        _GPU_DEVICES = (gpu, [GpuDevice(i, 0, cuda.device_name(i)) for i in range(n)])
    return list(_GPU_DEVICES[1])


def default_backend() -> str:
    """``"gpu"`` when a CUDA GPU is visible, else ``"cpu"``.

    >>> default_backend() in ("cpu", "gpu")
    True
    """
    return "gpu" if gpu_count() > 0 else "cpu"


class GpuArray(Array):
    """An ``Array`` whose buffer lives in GPU memory (made by ``device_put`` or by a jitted
    function run on the GPU).

    Reading it on the host (``np.asarray``, printing, eager ``functrax.numpy`` operations)
    copies the buffer back once and keeps that copy.
    """

    __slots__ = ("_gpu", "_host", "_device")

    @staticmethod
    def _wrap(buf, aval: ShapedArray, device: GpuDevice) -> GpuArray:
        a = object.__new__(GpuArray)
        a.aval = aval
        a._gpu = buf
        a._host = None
        a._device = device
        return a

    @property
    def _value(self):
        host = self._host
        if host is None:
            host = self._host = self._gpu.to_numpy()
        return host

    size = property(lambda self: self.aval.size)
    nbytes = property(lambda self: self.aval.size * self.aval.dtype.itemsize)

    @property
    def device(self):
        """The GPU holding the buffer."""
        return self._device

    def devices(self) -> set:
        return {self._device}

    @property
    def gpu_buffer(self):
        """The :class:`~functrax.runtime.gpu_buffer.GpuBuffer` (``data_ptr()``, CAI)."""
        return self._gpu

    @property
    def __cuda_array_interface__(self):
        return self._gpu.__cuda_array_interface__

    def block_until_ready(self):
        self._gpu.block_until_ready()
        return self

    def __reduce__(self):
        return (Array, (self._value, None, self.aval.weak_type))


def wrap_buffer(buf, aval: ShapedArray) -> GpuArray:
    """A :class:`GpuArray` over ``buf`` (a ``GpuBuffer`` of ``aval``'s shape and dtype)."""
    return GpuArray._wrap(buf, aval, gpu_devices()[buf.device_id])


def put_leaf(x, device):
    """``x`` (an array-like or tracer) placed on ``device`` (a CPU or GPU ``Device``)."""
    if isinstance(x, core.Tracer):
        return x  # placement is a runtime property; traced values stay what they are
    if type(device) is GpuDevice:
        if type(x) is GpuArray and x._device == device:
            return x
        aval = core.get_aval(x)
        host = np.asarray(x._value if core.is_concrete_array(x) else core.to_numpy_value(x, aval))
        buf = gpu_hooks.buffer_class().from_numpy(host, device.id)
        return GpuArray._wrap(buf, aval, device)
    if type(x) is GpuArray:
        return Array._make(x._value, x.aval)
    if core.is_concrete_array(x):
        return x
    aval = core.get_aval(x)
    return Array._make(np.array(x, aval.dtype, copy=True), aval)  # no alias of a numpy input
