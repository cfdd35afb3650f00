"""A fake GPU for tests of the GPU paths on a machine without one: numpy-backed buffers
standing in for ``gpu_buffer.GpuBuffer`` whose kernels run in Triton's interpreter.

``install(monkeypatch, n_devices)`` registers the fake as the GPU of the Triton backend
(``gpu_hooks.register_gpu``, as the CUDA runtime registers itself: ``n_devices`` devices,
:class:`FakeGpuBuffer`, a launcher into the interpreter) until the test ends, and returns
the list the fake launcher appends ``(kernel name, device id)`` to; ``register(monkeypatch,
support)`` registers any ``GpuSupport`` (``gpu_hooks.NO_GPU``: none) until the test ends.
``FakeGpuBuffer.reads`` records the shape of every copy back to the host.
"""
from __future__ import annotations

import threading

import numpy as np


class FakeGpuBuffer:
    """A numpy-backed stand-in for ``gpu_buffer.GpuBuffer`` counting host reads."""

    reads: list = []

    def __init__(self, shape, dtype, device_id=0, array=None):
        self.shape, self.dtype, self.device_id = tuple(shape), np.dtype(dtype), device_id
        self.array = np.zeros(self.shape, self.dtype) if array is None else array

    @classmethod
    def from_numpy(cls, a, device_id=0):
        a = np.array(a)
        return cls(a.shape, a.dtype, device_id, a)

    size = property(lambda self: self.array.size)
    nbytes = property(lambda self: self.array.nbytes)

    def data_ptr(self):
        return self.array.ctypes.data

    def to_numpy(self):
        FakeGpuBuffer.reads.append(self.shape)
        return self.array.copy()

    def reshape(self, *shape):
        a = self.array.reshape(*shape)
        return FakeGpuBuffer(a.shape, a.dtype, self.device_id, a)

    def block_until_ready(self):
        return self

    def __array__(self, dtype=None, copy=None):
        return self.to_numpy()

    __cuda_array_interface__ = property(lambda self: {"shape": self.shape})


def register(monkeypatch, support):
    """``gpu_hooks.register_gpu(support)`` until the test ends."""
    from functrax.lowering.triton import gpu_hooks
    # the registration is one attribute of gpu_hooks: monkeypatch restores it at teardown
    monkeypatch.setattr(gpu_hooks, "_GPU", gpu_hooks.registered())
    gpu_hooks.register_gpu(support)


def install(monkeypatch, n_devices: int = 1) -> list:
    """Make the runtime see ``n_devices`` fake GPUs (until the test ends); returns the
    launch log."""
    from functrax.lowering.triton import gpu_hooks, runtime
    launches = []
    lock = threading.Lock()  # Triton's interpreter patches triton.language: one at a time

    def launch(kernel, inputs, outputs):
        bufs = list(inputs) + list(outputs)
        assert all(type(b) is FakeGpuBuffer for b in bufs), (
            kernel.source.name, [type(b).__name__ for b in bufs])
        assert len({b.device_id for b in bufs}) <= 1, "a kernel mixing devices"
        launches.append((kernel.source.name, bufs[0].device_id if bufs else 0))
        with lock:
            runtime.launch_interpreter(kernel, [b.array for b in inputs],
                                       [b.array for b in outputs])

    register(monkeypatch, gpu_hooks.GpuSupport(device_count=lambda: n_devices,
                                               buffer=FakeGpuBuffer, launch=launch,
                                               interpreted=True))
    FakeGpuBuffer.reads = []
    return launches
