"""Running generated kernels: on the CPU through Triton's interpreter, on a GPU through the
registered one.

Holds :class:`TritonKernel` (a generated kernel, callable on arrays), :func:`launch`,
:func:`build_kernel`, :class:`NumpyTensor` (numpy buffers as the interpreter wants them) and
:func:`to_device`. What a GPU provides (its probe, buffer class, launcher) comes from the
table of :mod:`~functrax.lowering.triton.gpu_hooks`, which the runtime fills in when functrax
is imported; this module imports nothing of the runtime.

Modes, in order:

1. A GPU is registered and visible and the interpreter is off (:func:`gpu_active`):
   ``TritonKernel`` calls take and return device buffers (host arguments are uploaded) and
   the registered launcher runs the kernel; for CUDA that is ``gpu_launch.launch_gpu``,
   which compiles the kernel for the device's compute capability with ``triton.compile``
   and launches the cubin through cuda-core on the device's stream (no torch).
2. ``TRITON_INTERPRET=1``: the kernel runs in Triton's interpreter on numpy buffers, passed
   zero-copy through :class:`NumpyTensor` (the interpreter expects torch-like tensors).
   :func:`ensure_triton_env` sets ``TRITON_INTERPRET=1`` when the variable is unset and no
   CUDA device is visible; ``import functrax`` runs it once the CUDA probe is registered
   (``functrax/runtime/gpu_registration.py``), before anything imports triton.
3. Otherwise running raises ``NotImplementedError`` naming what is missing.
"""
from __future__ import annotations

import dataclasses
import os
import weakref

import numpy as np

from functrax.lowering.triton import gpu_hooks
from functrax.lowering.triton.cache import default_cache
from functrax.lowering.triton.codegen import KernelConfig, KernelSource, generate
from functrax.lowering.triton.gpu_hooks import ensure_triton_env, interpreter_enabled

__all__ = ["TritonKernel", "NumpyTensor", "build_kernel", "launch", "launch_interpreter",
           "to_device", "ensure_triton_env", "interpreter_enabled", "cuda_device_count",
           "register_gpu_launcher", "gpu_active"]


def cuda_device_count() -> int:
    """The GPUs visible to the registered probe (``gpu_hooks.device_count``; for CUDA, the
    devices libcuda reports; 0 when there is none)."""
    return gpu_hooks.device_count()



# --- a zero-copy torch-like view of a numpy array, for the interpreter ---


class _Storage:
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def data_ptr(self) -> int:
        return self.array.ctypes.data

    def cpu(self):
        return self  # host memory already: the interpreter works on the buffer itself

    def copy_(self, other):
        return self  # the "device" and "host" copies are one buffer


class NumpyTensor:
    """What Triton's interpreter needs of a tensor, over a C-contiguous numpy array."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray | None):
        if array is not None and not array.flags.c_contiguous:
            raise ValueError("NumpyTensor: the array must be C-contiguous")
        self.array = array

    dtype = property(lambda self: self.array.dtype)  # str() -> "float32": Triton's fp32

    def data_ptr(self) -> int:
        return self.array.ctypes.data

    def untyped_storage(self) -> _Storage:
        return _Storage(self.array)

    def cpu(self):
        return self

    def new_empty(self, *shape, **kwargs):
        return NumpyTensor(None)

    def set_(self, storage, offset=0, size=None, stride=None):
        if offset:
            raise ValueError("NumpyTensor.set_: storage offsets are not supported")
        self.array = storage.array
        return self

    def copy_(self, other):
        if other.array is not self.array:
            np.copyto(self.array, other.array)
        return self

    def storage_offset(self) -> int:
        return 0

    def size(self):
        return self.array.shape

    def stride(self):
        return tuple(s // self.array.itemsize for s in self.array.strides)


# --- launching ---

_INTERPRETED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def register_gpu_launcher(launcher):
    """Install the GPU launcher: ``launcher(kernel, inputs, outputs)`` runs ``kernel`` (a
    :class:`TritonKernel`) on device buffers, writing ``outputs``. Returns the previous one.

    (The launcher of the registered GPU, ``gpu_hooks.register_gpu``: the CUDA runtime
    registers ``gpu_launch.launch_gpu``, which launches through cuda-core.)
    """
    previous = gpu_hooks.registered()
    gpu_hooks.register_gpu(dataclasses.replace(previous, launch=launcher))
    return previous.launch


def gpu_active() -> bool:
    """True when kernels run on a GPU: one is visible and the interpreter is off."""
    return gpu_hooks.gpu_active()


_SCALARS: dict = {}  # (GPU, device, dtype, bytes) -> device buffer of a 0-d host value


def to_device(x, device_id: int):
    """``x`` as a buffer of the registered GPU on ``device_id`` (uploading host values; 0-d
    ones cached)."""
    buffer = gpu_hooks.buffer_class()
    if type(x) is buffer:
        return x
    host = np.asarray(x)
    if not host.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
        host = np.ascontiguousarray(host)
    if host.ndim:
        return buffer.from_numpy(host, device_id)
    key = (gpu_hooks.registered(), device_id, host.dtype.str, host.tobytes())
    buf = _SCALARS.get(key)
    if buf is None:
        if len(_SCALARS) > 4096:
            _SCALARS.clear()
        buf = _SCALARS[key] = buffer.from_numpy(host, device_id)
    return buf


_to_device = to_device  # (the former name, still used by some callers)


def _language_objects():
    import triton.language as tl
    return (tl, tl.core, tl.math, tl.standard, tl.core.tensor, tl.core.tensor_descriptor_base)


def _snapshot():
    return [(obj, dict(vars(obj))) for obj in _language_objects()]


def _restore(snapshot):
    """Undo the interpreter's patches of ``triton.language``.

    Triton 3.9's interpreter patches the language modules for a launch and restores them,
    but patches made when a kernel calls a library ``@jit`` function (``tl.sum``, ``tl.max``)
    are never undone; a later ``triton.compile`` in the same process then fails inside the
    interpreter's builder. Restoring the attributes saved before the launch fixes that.
    """
    for obj, saved in snapshot:  # names the interpreter added (its helpers) stay
        current = vars(obj)
        for name, value in saved.items():
            if current.get(name) is not value:
                setattr(obj, name, value)


def _interpreted(fn):
    raw = getattr(fn, "fn", fn)
    run = _INTERPRETED.get(raw)
    if run is None:
        from triton.runtime.interpreter import InterpretedFunction
        run = _INTERPRETED[raw] = InterpretedFunction(raw)
    return run


def launch_interpreter(kernel, inputs, outputs):
    """Run ``kernel`` in Triton's interpreter on numpy arrays ``inputs``, writing ``outputs``."""
    run = _interpreted(kernel.fn)
    args = [NumpyTensor(a) for a in list(inputs) + list(outputs)]
    snapshot = _snapshot()
    try:
        with np.errstate(all="ignore"):  # inf/nan are values, as in JAX
            run[kernel.source.grid](*args, **kernel.source.constexprs)
    finally:
        _restore(snapshot)


def launch(kernel, inputs, outputs):
    """Run ``kernel`` on ``inputs``, writing ``outputs`` (see the module doc for modes).

    Raises:
      NotImplementedError: when neither the interpreter nor a GPU launcher can run it.
    """
    name = kernel.source.name
    if gpu_active():
        launcher = gpu_hooks.registered().launch
        if launcher is None:
            raise NotImplementedError(
                f"cannot run Triton kernel '{name}' on the GPU: no GPU launcher is registered "
                "(gpu_hooks.register_gpu). Set TRITON_INTERPRET=1 to run it in Triton's CPU "
                "interpreter instead.")
        return launcher(kernel, inputs, outputs)
    if interpreter_enabled():
        return launch_interpreter(kernel, inputs, outputs)
    raise NotImplementedError(
        f"cannot run Triton kernel '{name}': no CUDA GPU is visible (libcuda.so.1 is missing "
        "or reports no device) and Triton's interpreter is off "
        f"(TRITON_INTERPRET={os.environ.get('TRITON_INTERPRET', '')!r}). Set "
        "TRITON_INTERPRET=1 to run on the CPU, or use the numpy backend.")


class TritonKernel:
    """A generated kernel, callable on numpy arrays.

    Attributes:
      source: the :class:`~functrax.lowering.triton.codegen.KernelSource`.
      fn: the imported ``@triton.jit`` object (its ``.fn`` is the Python function).
    """

    def __init__(self, source: KernelSource, fn):
        self.source = source
        self.fn = fn

    def __call__(self, *args) -> list:
        """Run on ``args`` (one array per group input); returns new output arrays."""
        src = self.source
        if len(args) != len(src.in_avals):
            raise TypeError(f"Triton kernel '{src.name}' takes {len(src.in_avals)} inputs "
                            f"({', '.join(a.str_short() for a in src.in_avals)}), got "
                            f"{len(args)}")
        if gpu_active():
            return self._call_gpu(args)
        inputs = []
        for i, (x, aval) in enumerate(zip(args, src.in_avals)):
            x = np.asarray(x)
            if x.shape != aval.shape or x.dtype != aval.dtype:
                raise TypeError(f"Triton kernel '{src.name}': input {i} must be "
                                f"{aval.str_short()}, got {x.dtype.name}{list(x.shape)}; "
                                "convert it (x.astype / reshape) before the call")
            inputs.append(np.ascontiguousarray(x))
        outputs = [np.empty(a.shape, a.dtype) for a in src.out_avals]
        if any(o.size for o in outputs):
            launch(self, inputs, outputs)
        return outputs

    def _call_gpu(self, args) -> list:
        """Run on the GPU: host arguments are uploaded; returns new device buffers as outputs,
        on the device of the first GPU argument (device 0 when there is none)."""
        buffer = gpu_hooks.buffer_class()
        src = self.source
        dev = next((x.device_id for x in args if type(x) is buffer), 0)
        inputs = []
        for i, (x, aval) in enumerate(zip(args, src.in_avals)):
            x = to_device(x, dev)
            if x.shape != aval.shape or x.dtype != aval.dtype:
                raise TypeError(f"Triton kernel '{src.name}': input {i} must be "
                                f"{aval.str_short()}, got {x.dtype.name}{list(x.shape)}")
            inputs.append(x)
        outputs = [buffer(a.shape, a.dtype, dev) for a in src.out_avals]
        if any(o.size for o in outputs):
            launch(self, inputs, outputs)
        return outputs

    def __repr__(self):
        return f"TritonKernel({self.source.name}, grid={self.source.grid})"


def build_kernel(group, config: KernelConfig | None = None, cache=None) -> TritonKernel:
    """Generate, cache and import the kernel of a fusion group.

    On a GPU (:func:`gpu_active`) with ``config`` None or ``codegen.GPU_CONFIG``, the result
    is an ``autotune.AutotunedKernel``, which picks its block sizes at its first call.

    >>> kernel = build_kernel(group)        # doctest: +SKIP
    >>> (out,) = kernel(x, y)               # doctest: +SKIP
    """
    from functrax.lowering.triton.codegen import GPU_CANDIDATES, GPU_CONFIG
    if (config is None or config == GPU_CONFIG) and group.kind in GPU_CANDIDATES and \
            gpu_active():
        from functrax.lowering.triton.autotune import AutotunedKernel
        return AutotunedKernel(group, cache=cache)
    source = generate(group, config)
    return TritonKernel(source, (cache or default_cache()).load(source))
