"""Hand-written Triton kernels (one per file).

Each module holds one ``@triton.jit`` kernel, its launcher (numpy arrays in, numpy arrays
out, run through :mod:`functrax.lowering.triton.runtime`), a numpy reference, its
block-size configs and a ``compile_sm90`` helper (PTX + cubin for ``GPUTarget("cuda", 90,
32)`` through :mod:`functrax.lowering.triton.compile`).

>>> from kernels import softmax                       # doctest: +SKIP
>>> y = softmax.softmax(np.ones((3, 5), np.float32))  # doctest: +SKIP
"""
# Set TRITON_INTERPRET=1 when no CUDA device is visible, before the kernel modules import
# triton (``@triton.jit`` reads the variable when it decorates). ``import functrax`` (which
# runs first) registered the real probe.
from functrax.lowering.triton.gpu_hooks import ensure_triton_env as _ensure_triton_env

_ensure_triton_env()
