"""Shared glue of the hand-written kernels: wrap a kernel as a runtime ``TritonKernel``
(so it launches through :func:`functrax.lowering.triton.runtime.launch`) and compile it for
sm_90 through :mod:`functrax.lowering.triton.compile`.

The runtime passes the buffers positionally (inputs, then outputs) and everything else as
``tl.constexpr`` keyword arguments, so every scalar parameter of these kernels (shapes,
eps, the epilogue choice) is a ``tl.constexpr``.
"""
from __future__ import annotations

import inspect

import numpy as np

from functrax.core import ShapedArray
from functrax.lowering.fusion.types import GroupKind
from functrax.lowering.triton import compile as tcompile
from functrax.lowering.triton import rules, runtime
from functrax.lowering.triton.codegen import KernelSource

__all__ = ["make_kernel", "compile_kernel", "next_pow2", "check_float"]


def next_pow2(n: int) -> int:
    """The smallest power of two >= ``n`` (1 for ``n <= 1``)."""
    return 1 << max(0, int(n) - 1).bit_length()


def check_float(fn_name: str, arg: str, x: np.ndarray, ndim: int):
    """Raise a clear error unless ``x`` is a float16/float32 array of rank ``ndim``."""
    if x.dtype not in (np.float16, np.float32):
        raise TypeError(f"{fn_name}: {arg} must be float16 or float32, got {x.dtype}; "
                        f"convert it with {arg}.astype(np.float32)")
    if x.ndim != ndim:
        raise ValueError(f"{fn_name}: {arg} must have rank {ndim}, got shape {x.shape}")


def make_kernel(fn, kind: GroupKind, inputs, out_avals, constexprs: dict, grid,
                num_warps: int) -> runtime.TritonKernel:
    """A :class:`runtime.TritonKernel` for the hand-written ``fn``.

    Args:
      fn: the ``@triton.jit`` kernel; its parameters are the input buffers, the output
        buffers, then the ``constexprs`` (all ``tl.constexpr``).
      kind: the iteration space, for the record.
      inputs: the input arrays (their shapes/dtypes become the input avals).
      out_avals: ``(shape, dtype)`` of each output.
      constexprs: values of the ``tl.constexpr`` parameters.
      grid: the launch grid.
      num_warps: warps per program (GPU).
    """
    raw = getattr(fn, "fn", fn)
    params = list(inspect.signature(raw).parameters)
    in_avals = tuple(ShapedArray(x.shape, x.dtype) for x in inputs)
    outs = tuple(ShapedArray(s, d) for s, d in out_avals)
    buffers = params[:len(in_avals) + len(outs)]
    signature = {p: rules.signature_type(a.dtype) for p, a in zip(buffers, in_avals + outs)}
    signature.update({c: "constexpr" for c in params[len(buffers):]})
    if set(params[len(buffers):]) != set(constexprs):
        raise TypeError(f"{raw.__name__}: constexprs {sorted(constexprs)} do not match the "
                        f"kernel's parameters {params[len(buffers):]}")
    text = inspect.getsource(inspect.getmodule(raw))
    source = KernelSource(raw.__name__, text, kind, in_avals, outs, dict(constexprs),
                          tuple(grid), int(num_warps), signature)
    return runtime.TritonKernel(source, fn)


def compile_kernel(kernel: runtime.TritonKernel) -> tcompile.CompiledKernel:
    """PTX + cubin of ``kernel`` for ``GPUTarget("cuda", 90, 32)`` (memoized)."""
    return tcompile.compile_source(kernel.source, kernel.fn)
