"""The single CUDA probe of functrax, and the loaders of the optional CUDA Python packages.

- :func:`device_count` / :func:`device_name`: the CUDA devices the driver sees, asked
  through ``libcuda`` with ctypes (no CUDA Python package needed; 0 devices when libcuda
  is missing or fails). ``gpu_registration`` registers :func:`device_count` as the probe of
  the Triton backend (``lowering/triton/gpu_hooks.py``).
- :func:`cuda_core` / :func:`cuda_driver`: the ``cuda-core`` module and the driver bindings,
  imported lazily (``pip install 'functrax[gpu]'``); a missing install raises an
  ``ImportError`` naming the extra. Both spellings of cuda-core's API are accepted:
  ``cuda.core`` (>= 0.4) and ``cuda.core.experimental`` (older releases).
- :func:`check`: raise on a driver-call error.

>>> device_count() >= 0
True
"""
from __future__ import annotations

import ctypes

__all__ = ["device_count", "device_name", "cuda_core", "cuda_driver", "check",
           "MISSING_CUDA_CORE"]

MISSING_CUDA_CORE = ("functrax's GPU support needs the cuda-core package, which is not "
                     "installed: pip install 'functrax[gpu]' (or pip install cuda-core)")

_DEVICE_COUNT: int | None = None
_MODULES: dict = {}


def device_count() -> int:
    """CUDA devices visible to the driver (0 when libcuda is missing or fails; cached)."""
    global _DEVICE_COUNT
    if _DEVICE_COUNT is None:
        _DEVICE_COUNT = 0
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            count = ctypes.c_int(0)
            if lib.cuInit(0) == 0 and lib.cuDeviceGetCount(ctypes.byref(count)) == 0:
                _DEVICE_COUNT = int(count.value)
        except OSError:
            pass
    return _DEVICE_COUNT


def device_name(i: int) -> str:
    """The driver's name of CUDA device ``i`` (``"gpu"`` when it cannot say)."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        dev = ctypes.c_int(0)
        name = ctypes.create_string_buffer(256)
        if lib.cuDeviceGet(ctypes.byref(dev), i) == 0 and \
                lib.cuDeviceGetName(name, 256, dev) == 0:
            return name.value.decode(errors="replace")
    except OSError:
        pass
    return "gpu"


def cuda_core():
    """The cuda-core module (``cuda.core``, or ``cuda.core.experimental`` in old releases).

    Raises:
      ImportError: naming the ``functrax[gpu]`` extra when cuda-core is not installed.
    """
    mod = _MODULES.get("core")
    if mod is not None:
        return mod
    errors = []
    for name in ("cuda.core", "cuda.core.experimental"):
        try:
            mod = __import__(name, fromlist=["Device"])
            if not hasattr(mod, "Device"):
                continue
        except ImportError as e:
            errors.append(f"{name}: {e}")
            continue
        _MODULES["core"] = mod
        return mod
    raise ImportError(MISSING_CUDA_CORE + (f" ({'; '.join(errors)})" if errors else ""))


def cuda_driver():
    """The CUDA driver bindings (``cuda.bindings.driver``, or the older ``cuda.cuda``)."""
    mod = _MODULES.get("driver")
    if mod is None:
        cuda_core()  # the same install provides the bindings; name the extra when missing
        try:
            from cuda.bindings import driver as mod
        except ImportError:
            from cuda import cuda as mod  # cuda-python < 12.6
        _MODULES["driver"] = mod
    return mod


def check(result, what: str):
    """Raise JaxRuntimeError on a driver error; ``result`` is the tuple a ``cuda.bindings``
    call returns. Returns the call's results after the error code."""
    drv = cuda_driver()
    err = result[0] if isinstance(result, tuple) else result
    if err != drv.CUresult.CUDA_SUCCESS:
        name = drv.cuGetErrorName(err)
        label = name[1].decode() if len(name) > 1 and isinstance(name[1], bytes) else str(err)
        from functrax.errors import JaxRuntimeError
        raise JaxRuntimeError(f"CUDA driver call {what} failed: {label}")
    return result[1:] if isinstance(result, tuple) else ()
