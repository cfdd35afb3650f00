"""GPU memory without torch: buffers allocated and copied through ``cuda-core``.

Holds :class:`GpuBuffer` (a C-contiguous array in GPU memory; the device-buffer class that
``gpu_registration`` registers into the Triton backend) and :class:`GpuContext` (one per
device: the cuda-core ``Device``, one explicit stream on which every copy and launch of
that device is ordered, its compute capability and name). ``cuda-core`` (the optional
``functrax[gpu]`` extra) is loaded through :mod:`functrax.runtime.cuda`, the first time a
buffer or context is made. Copies between host and device use the driver's
``cuMemcpy*Async`` on the stream (through ``cuda.bindings``, which cuda-core depends on);
copies back to the host synchronize it.

>>> buf = GpuBuffer.from_numpy(np.arange(4, dtype=np.float32))   # doctest: +SKIP
>>> np.asarray(buf)                                              # doctest: +SKIP
array([0., 1., 2., 3.], dtype=float32)
"""
from __future__ import annotations

import math
import threading

import numpy as np

from functrax.runtime import cuda
# (re-exported: the loaders live in functrax.runtime.cuda)
from functrax.runtime.cuda import MISSING_CUDA_CORE, cuda_core, cuda_driver  # noqa: F401

__all__ = ["GpuBuffer", "GpuContext", "context", "make_current", "cuda_core", "cuda_driver",
           "is_gpu_buffer", "MISSING_CUDA_CORE"]

_LOCK = threading.Lock()


class GpuContext:
    """One device: its cuda-core ``Device``, explicit stream, compute capability and name.

    Attributes:
      device_id: the CUDA ordinal.
      device: the cuda-core ``Device``.
      stream: the stream every copy and launch of this device is ordered on.
      compute_capability: ``major * 10 + minor`` (90 on H100/H200).
      name: the device name (``"NVIDIA H200"``).
    """

    def __init__(self, device_id: int):
        core = cuda.cuda_core()
        self.device_id = int(device_id)
        try:
            self.device = core.Device(self.device_id)
            self.device.set_current()
        except Exception as e:  # noqa: BLE001 - no driver / no device: say so plainly
            raise RuntimeError(f"cannot open CUDA device {device_id}: {type(e).__name__}: {e}. "
                               "Is a CUDA GPU visible (nvidia-smi)?") from e
        cc = self.device.compute_capability
        self.compute_capability = int(cc[0]) * 10 + int(cc[1])
        self.name = str(self.device.name)
        self.stream = self.device.create_stream()
        self._local = threading.local()
        self._local.current = True

    def activate(self):
        """Make this device current in the calling thread (once per thread)."""
        if not getattr(self._local, "current", False):
            self.device.set_current()
            self._local.current = True

    @property
    def stream_handle(self):
        """The stream as the driver bindings want it (a ``CUstream``)."""
        return cuda.cuda_driver().CUstream(int(self.stream.handle))

    def sync(self):
        """Wait for everything queued on this device's stream."""
        self.stream.sync()

    def allocate(self, nbytes: int):
        self.activate()
        return self.device.allocate(max(int(nbytes), 1), stream=self.stream)

    def __repr__(self):
        return f"GpuContext(id={self.device_id}, {self.name}, sm_{self.compute_capability})"


_CONTEXTS: dict = {}


def context(device_id: int = 0) -> GpuContext:
    """The (process-wide) :class:`GpuContext` of CUDA device ``device_id``."""
    ctx = _CONTEXTS.get(device_id)
    if ctx is None:
        with _LOCK:
            ctx = _CONTEXTS.get(device_id)
            if ctx is None:
                ctx = _CONTEXTS[device_id] = GpuContext(device_id)
    ctx.activate()
    return ctx


def make_current(device_id: int) -> GpuContext:
    """Make CUDA device ``device_id`` current in the calling thread, whatever was current.

    ``GpuContext.activate`` remembers per context and thread that it made its device
    current, and does not notice when another device became current since: a (pooled,
    reused) thread that works on several GPUs calls this to switch, which also marks every
    other context as not current in this thread.
    """
    ctx = context(device_id)
    for other in list(_CONTEXTS.values()):
        if other is not ctx:
            other._local.current = False
    ctx.device.set_current()
    ctx._local.current = True
    return ctx


def _c_contiguous(array) -> np.ndarray:
    """``array`` as a C-contiguous numpy array, keeping 0-d arrays 0-d."""
    host = np.asarray(array)
    return host if host.flags.c_contiguous else np.ascontiguousarray(host)


def _buffer_ptr(buf) -> int:
    handle = getattr(buf, "handle", None)
    if handle is None:
        handle = buf.ptr
    return int(handle)


class GpuBuffer:
    """A C-contiguous array in GPU memory: ``shape``, numpy ``dtype``, ``data_ptr()`` and
    ``__cuda_array_interface__`` (so cupy/numba can view it without a copy).

    ``np.asarray(buffer)`` copies it back to the host (synchronizing the device's stream).

    Args:
      shape, dtype: the array's shape and (numpy) dtype.
      device_id: the CUDA ordinal to allocate on.

    >>> buf = GpuBuffer((2, 3), np.float32)   # doctest: +SKIP
    >>> buf.shape, buf.dtype                  # doctest: +SKIP
    ((2, 3), dtype('float32'))
    """

    __slots__ = ("shape", "dtype", "device_id", "_ctx", "_buf", "_ptr", "_base", "__weakref__")

    def __init__(self, shape, dtype, device_id: int = 0):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        if any(d < 0 for d in self.shape):
            raise ValueError(f"GpuBuffer: negative dimension in shape {self.shape}")
        self.device_id = int(device_id)
        self._ctx = context(self.device_id)
        self._buf = self._ctx.allocate(self.nbytes)
        self._ptr = _buffer_ptr(self._buf)
        self._base = None

    @classmethod
    def from_numpy(cls, array, device_id: int = 0) -> GpuBuffer:
        """A new buffer holding a copy of ``array`` (any numpy-convertible value)."""
        host = _c_contiguous(array)
        buf = cls(host.shape, host.dtype, device_id)
        buf.copy_from_host(host)
        return buf

    size = property(lambda self: math.prod(self.shape))
    ndim = property(lambda self: len(self.shape))
    nbytes = property(lambda self: math.prod(self.shape) * self.dtype.itemsize)

    def data_ptr(self) -> int:
        """The device address of the first element."""
        return self._ptr

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self._ptr, False),
                "strides": None, "version": 3, "stream": int(self._ctx.stream.handle) or 1}

    def copy_from_host(self, array: np.ndarray):
        """Copy a host array of this buffer's shape and dtype in (ordered on the stream)."""
        host = _c_contiguous(array)
        if host.shape != self.shape or host.dtype != self.dtype:
            raise ValueError(f"GpuBuffer.copy_from_host: the buffer is {self._describe()}, got "
                             f"an array of {host.dtype.name}{list(host.shape)}")
        if self.nbytes:
            self._ctx.activate()
            drv = cuda.cuda_driver()
            cuda.check(drv.cuMemcpyHtoDAsync(self._ptr, host.ctypes.data, self.nbytes,
                                           self._ctx.stream_handle), "cuMemcpyHtoDAsync")
            # pageable source memory: the copy is staged before the call returns, but keep
            # the source alive until then anyway
            del host

    def to_numpy(self) -> np.ndarray:
        """A new host array with this buffer's contents (waits for the stream)."""
        out = np.empty(self.shape, self.dtype)
        if self.nbytes:
            self._ctx.activate()
            drv = cuda.cuda_driver()
            cuda.check(drv.cuMemcpyDtoHAsync(out.ctypes.data, self._ptr, self.nbytes,
                                           self._ctx.stream_handle), "cuMemcpyDtoHAsync")
            self._ctx.sync()
        return out

    def reshape(self, *shape) -> GpuBuffer:
        """A view of the same memory with another shape of equal size (no copy)."""
        shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape
        if -1 in shape:
            known = math.prod(d for d in shape if d != -1)
            shape = tuple(self.size // max(known, 1) if d == -1 else d for d in shape)
        shape = tuple(int(d) for d in shape)
        if math.prod(shape) != self.size:
            raise ValueError(f"GpuBuffer.reshape: cannot reshape {self._describe()} "
                             f"({self.size} elements) into shape {shape}")
        view = object.__new__(GpuBuffer)
        view.shape, view.dtype, view.device_id = shape, self.dtype, self.device_id
        view._ctx, view._buf, view._ptr = self._ctx, self._buf, self._ptr
        view._base = self._base or self  # keeps the allocation alive
        return view

    def copy(self) -> GpuBuffer:
        """A device-to-device copy (ordered on the stream)."""
        out = GpuBuffer(self.shape, self.dtype, self.device_id)
        if self.nbytes:
            drv = cuda.cuda_driver()
            cuda.check(drv.cuMemcpyDtoDAsync(out._ptr, self._ptr, self.nbytes,
                                           self._ctx.stream_handle), "cuMemcpyDtoDAsync")
        return out

    def __array__(self, dtype=None, copy=None):
        host = self.to_numpy()
        return host if dtype is None else host.astype(dtype, copy=False)

    def block_until_ready(self):
        self._ctx.sync()
        return self

    def _describe(self) -> str:
        return f"{self.dtype.name}{list(self.shape)}"

    def __repr__(self):
        return f"GpuBuffer({self._describe()}, device={self.device_id})"


def is_gpu_buffer(x) -> bool:
    return type(x) is GpuBuffer
