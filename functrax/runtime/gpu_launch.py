"""Launching Triton kernels on a CUDA GPU without torch: ``triton.compile`` + cuda-core.

A kernel (``runtime.TritonKernel``) is compiled once per compute capability with
``triton.compile(ASTSource(...), target=GPUTarget("cuda", cc, 32))`` (pointer arguments
are promised 16-byte aligned: every ``GpuBuffer`` is its own allocation), its cubin is
loaded with cuda-core (``ObjectCode.from_cubin`` + ``get_kernel``) and launched with
``launch(stream, LaunchConfig(grid, block=32 * num_warps, shmem_size=shared), kernel,
*args)`` on the device's stream.

The arguments are the kernel's non-constexpr parameters (the buffers, as device addresses),
then the hidden parameters Triton appends: the global scratch pointer (Triton >= 3.3) and
the profile scratch pointer (>= 3.5). Their number is read from the PTX entry's parameter
list, so every Triton version gets exactly what its kernel declares; a scratch pointer is
null when the kernel's ``metadata`` asks for 0 bytes, else it points at a buffer of
``grid size * num_ctas * size`` bytes (as Triton's own launcher allocates).

``gpu_registration`` registers :func:`launch_gpu` (and :func:`time_launch`,
:func:`device_name`, for autotuning) into the Triton backend's table
(``lowering/triton/gpu_hooks.py``); this module imports nothing of the lowering (a kernel
is anything with a ``source`` and an ``fn``).
"""
from __future__ import annotations

import dataclasses
import re
import threading
import time

import numpy as np

from functrax.runtime import cuda, gpu_buffer

__all__ = ["LoadedKernel", "compile_for_device", "launch_gpu", "time_launch", "device_name",
           "ptx_param_count", "stats"]

stats = {"compiles": 0, "launches": 0}
_MEMO: dict = {}
_LOCK = threading.Lock()
_SHARED_DEFAULT_LIMIT = 48 * 1024


@dataclasses.dataclass
class LoadedKernel:
    """A kernel compiled for one device and loaded there.

    Attributes:
      name: the symbol in the cubin.
      kernel: the cuda-core ``Kernel``.
      num_warps, num_ctas, shared: launch parameters from Triton's metadata.
      n_params: the kernel's user (non-constexpr) parameters.
      n_hidden: the hidden trailing parameters (scratch pointers) of the PTX entry.
      scratch: ``(size, align)`` per hidden pointer (global scratch, profile scratch).
      ptx, cubin: the compiled code.
    """

    name: str
    kernel: object
    num_warps: int
    num_ctas: int
    shared: int
    n_params: int
    n_hidden: int
    scratch: tuple
    ptx: str
    cubin: bytes


def ptx_param_count(ptx: str, name: str) -> int:
    """The number of ``.param`` declarations of ``.entry name`` in ``ptx``.

    >>> ptx_param_count(".entry k(\\n .param .u64 k_param_0,\\n .param .u64 k_param_1\\n)", "k")
    2
    """
    m = re.search(r"\.entry\s+" + re.escape(name) + r"\s*\((.*?)\)", ptx, re.S)
    if m is None:
        raise RuntimeError(f"kernel '{name}' has no .entry in its PTX")
    return len(re.findall(r"\.param\s", m.group(1)))


def _jit_function(fn):
    from triton.runtime.jit import JITFunction
    return fn if isinstance(fn, JITFunction) else JITFunction(getattr(fn, "fn", fn))


def _compile(kernel, cc: int):
    """Triton's compiled kernel of ``kernel`` (a ``runtime.TritonKernel``) for sm_``cc``."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    src = kernel.source
    signature = dict(src.signature)
    names = list(signature)
    attrs = {(names.index(p),): [["tt.divisibility", 16]]
             for p, t in signature.items() if t.startswith("*")}
    ast = ASTSource(_jit_function(kernel.fn), signature, dict(src.constexprs), attrs)
    return triton.compile(ast, target=GPUTarget("cuda", cc, 32),
                          options={"num_warps": src.num_warps, "enable_fp_fusion": True})


def _allow_shared(ctx, handle, shared: int):
    """Let the kernel use more than 48 KiB of dynamic shared memory (as Triton's loader)."""
    drv = cuda.cuda_driver()
    attr = drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    if isinstance(handle, getattr(drv, "CUkernel", ())):
        _, dev = drv.cuDeviceGet(ctx.device_id)
        cuda.check(drv.cuKernelSetAttribute(attr, shared, handle, dev), "cuKernelSetAttribute")
    else:
        cuda.check(drv.cuFuncSetAttribute(handle, attr, shared), "cuFuncSetAttribute")


def _load(compiled, ctx, n_params: int) -> LoadedKernel:
    core = cuda.cuda_core()
    md = compiled.metadata
    cubin = bytes(compiled.asm["cubin"])
    ptx = compiled.asm["ptx"]
    name = md.name
    if hasattr(core.ObjectCode, "from_cubin"):
        code = core.ObjectCode.from_cubin(cubin)
    else:  # cuda-core 0.1
        code = core.ObjectCode(cubin, "cubin")
    kernel = code.get_kernel(name)
    shared = int(getattr(md, "shared", 0))
    if shared > _SHARED_DEFAULT_LIMIT:
        handle = getattr(kernel, "handle", None) or getattr(kernel, "_handle")
        _allow_shared(ctx, handle, shared)
    n_hidden = ptx_param_count(ptx, name) - n_params
    if n_hidden < 0:
        raise RuntimeError(f"kernel '{name}' declares fewer PTX parameters than its "
                           f"{n_params} buffers")
    scratch = ((int(getattr(md, "global_scratch_size", 0) or 0),
                int(getattr(md, "global_scratch_align", 1) or 1)),
               (int(getattr(md, "profile_scratch_size", 0) or 0),
                int(getattr(md, "profile_scratch_align", 1) or 1)))[:n_hidden]
    scratch += ((0, 1),) * (n_hidden - len(scratch))
    return LoadedKernel(name, kernel, int(md.num_warps), int(getattr(md, "num_ctas", 1) or 1),
                        shared, n_params, n_hidden, scratch, ptx, cubin)


def compile_for_device(kernel, device_id: int = 0) -> LoadedKernel:
    """Compile ``kernel`` for device ``device_id``'s compute capability and load it there
    (memoized per kernel text, constexprs, warps and device)."""
    ctx = gpu_buffer.context(device_id)
    src = kernel.source
    key = (src.key, tuple(sorted(src.constexprs.items())), src.num_warps, ctx.device_id)
    loaded = _MEMO.get(key)
    if loaded is None:
        with _LOCK:
            loaded = _MEMO.get(key)
            if loaded is None:
                n_params = sum(1 for t in src.signature.values() if t != "constexpr")
                loaded = _MEMO[key] = _load(_compile(kernel, ctx.compute_capability), ctx,
                                            n_params)
                stats["compiles"] += 1
    return loaded


_SCRATCH: dict = {}  # (device, which) -> GpuBuffer reused across launches (stream-ordered)


def _scratch_ptr(device_id: int, which: int, nbytes: int, align: int) -> int:
    if nbytes <= 0:
        return 0
    buf = _SCRATCH.get((device_id, which))
    need = nbytes + align
    if buf is None or buf.nbytes < need:
        buf = _SCRATCH[(device_id, which)] = gpu_buffer.GpuBuffer((need,), np.uint8, device_id)
    ptr = buf.data_ptr()
    return (ptr + align - 1) // align * align


def _grid3(grid) -> tuple:
    g = tuple(int(d) for d in grid) + (1, 1, 1)
    return g[:3]


def launch_gpu(kernel, inputs, outputs):
    """Run ``kernel`` (a ``runtime.TritonKernel``) on ``GpuBuffer`` s ``inputs`` / ``outputs``
    on the stream of their device (asynchronously; reading an output back synchronizes)."""
    buffers = list(inputs) + list(outputs)
    bad = [b for b in buffers if not gpu_buffer.is_gpu_buffer(b)]
    if bad:
        raise TypeError(f"launch_gpu: kernel '{kernel.source.name}' takes GpuBuffer arguments, "
                        f"got {type(bad[0]).__name__}")
    device_id = buffers[0].device_id if buffers else 0
    if any(b.device_id != device_id for b in buffers):
        raise ValueError(f"launch_gpu: kernel '{kernel.source.name}' got buffers on several "
                         f"devices ({sorted({b.device_id for b in buffers})})")
    loaded = compile_for_device(kernel, device_id)
    if loaded.num_ctas != 1:
        raise NotImplementedError(f"kernel '{loaded.name}' wants num_ctas={loaded.num_ctas} "
                                  "(thread block clusters), which this launcher does not set up")
    if len(buffers) != loaded.n_params:
        raise TypeError(f"kernel '{loaded.name}' takes {loaded.n_params} buffers, got "
                        f"{len(buffers)}")
    grid = _grid3(kernel.source.grid)
    n_programs = grid[0] * grid[1] * grid[2]
    args = [np.uint64(b.data_ptr()) for b in buffers]
    for which, (size, align) in enumerate(loaded.scratch):
        args.append(np.uint64(_scratch_ptr(device_id, which, n_programs * loaded.num_ctas
                                           * size, align)))
    core = cuda.cuda_core()
    ctx = gpu_buffer.context(device_id)
    config = core.LaunchConfig(grid=grid, block=(32 * loaded.num_warps, 1, 1),
                               shmem_size=loaded.shared)
    core.launch(ctx.stream, config, loaded.kernel, *args)
    stats["launches"] += 1


def time_launch(run, device_id: int = 0, reps: int = 10, warmup: int = 2) -> float:
    """Seconds per call of ``run()`` (launches on device ``device_id``'s stream), measured
    by synchronizing the stream around ``reps`` calls after ``warmup`` calls."""
    ctx = gpu_buffer.context(device_id)
    for _ in range(warmup):
        run()
    ctx.sync()
    t0 = time.perf_counter()
    for _ in range(reps):
        run()
    ctx.sync()
    return (time.perf_counter() - t0) / reps


def device_name(device_id: int = 0) -> str:
    """The name of CUDA device ``device_id`` as cuda-core reports it (``"NVIDIA H200"``)."""
    return gpu_buffer.context(device_id).name
