"""What the Triton backend needs of a GPU: a table the runtime fills in (the lowering stays
below the runtime and imports none of it).

The table is one :class:`GpuSupport`, installed with :func:`register_gpu`:

- ``device_count()``: the GPUs visible (the probe);
- ``buffer``: the device-buffer class: ``buffer(shape, dtype, device_id)``,
  ``buffer.from_numpy(array, device_id)``, attributes ``device_id`` / ``shape`` / ``dtype``
  / ``size``, ``to_numpy()``;
- ``launch(kernel, inputs, outputs)``: runs a ``runtime.TritonKernel`` on device buffers;
- ``device_name(device_id)`` and ``time_launch(run, device_id)``: what autotuning needs
  (the tuning record's device, and seconds per ``run()`` on the device's stream);
- ``interpreted``: the "GPU" runs its kernels in Triton's interpreter (the fake GPU of the
  tests), so the GPU path is taken also under ``TRITON_INTERPRET=1``.

The default is :data:`NO_GPU` (count 0, no buffer class): the lowering then runs alone on
the CPU through Triton's interpreter. Importing functrax registers the CUDA runtime
(``functrax/runtime/gpu_registration.py``) before anything imports triton, so that
:func:`ensure_triton_env` asks the real probe. The registration is the one module attribute
``_GPU`` (tests register a fake GPU and restore that attribute afterwards,
``tests/fake_gpu.py``).
"""
from __future__ import annotations

import dataclasses
import os
from typing import Callable

__all__ = ["GpuSupport", "NO_GPU", "register_gpu", "registered", "device_count",
           "interpreter_enabled", "ensure_triton_env", "gpu_active", "buffer_class",
           "is_buffer", "device_name", "time_launch"]

_TRUE = ("1", "true", "yes", "on")


def _no_devices() -> int:
    return 0


@dataclasses.dataclass(frozen=True, eq=False)
class GpuSupport:
    """One registration of the table (see the module doc); compared and hashed by identity."""

    device_count: Callable[[], int] = _no_devices
    buffer: type | None = None
    launch: Callable | None = None
    device_name: Callable[[int], str] | None = None
    time_launch: Callable | None = None
    interpreted: bool = False


NO_GPU = GpuSupport()
_GPU: GpuSupport = NO_GPU


def register_gpu(support: GpuSupport) -> GpuSupport:
    """Install ``support`` as the GPU of the Triton backend; returns the previous one."""
    global _GPU
    if not isinstance(support, GpuSupport):
        raise TypeError(f"register_gpu: expected a GpuSupport, got {type(support).__name__}")
    previous, _GPU = _GPU, support
    return previous


def registered() -> GpuSupport:
    """The current registration (:data:`NO_GPU` when none was made)."""
    return _GPU


def device_count() -> int:
    """The number of GPUs the registered probe sees (0 without a GPU)."""
    return _GPU.device_count()


def interpreter_enabled() -> bool:
    """Whether ``TRITON_INTERPRET`` asks for Triton's CPU interpreter."""
    return os.environ.get("TRITON_INTERPRET", "0").strip().lower() in _TRUE


def ensure_triton_env():
    """Default ``TRITON_INTERPRET`` to ``1`` when it is unset and no GPU is visible.

    Call before importing triton: ``@triton.jit`` reads the variable when it decorates.
    """
    if "TRITON_INTERPRET" not in os.environ and device_count() == 0:
        os.environ["TRITON_INTERPRET"] = "1"


def gpu_active() -> bool:
    """True when kernels run on the registered GPU: a device is visible and the interpreter
    is off (or the GPU is an ``interpreted`` one)."""
    return (_GPU.interpreted or not interpreter_enabled()) and device_count() > 0


def buffer_class() -> type:
    """The registered device-buffer class.

    Raises:
      NotImplementedError: when no GPU is registered.
    """
    cls = _GPU.buffer
    if cls is None:
        raise NotImplementedError("no GPU buffer class is registered (no GPU runtime): set "
                                  "TRITON_INTERPRET=1 to run Triton kernels on the CPU")
    return cls


def is_buffer(x) -> bool:
    """Whether ``x`` is a buffer of the registered GPU."""
    return _GPU.buffer is not None and type(x) is _GPU.buffer


def _required(name: str):
    fn = getattr(_GPU, name)
    if fn is None:
        raise NotImplementedError(f"the registered GPU provides no {name}()")
    return fn


def device_name(device_id: int) -> str:
    """The name of GPU ``device_id`` (``"NVIDIA H200"``)."""
    return _required("device_name")(device_id)


def time_launch(run, device_id: int) -> float:
    """Seconds per call of ``run()`` (kernel launches on GPU ``device_id``)."""
    return _required("time_launch")(run, device_id)
