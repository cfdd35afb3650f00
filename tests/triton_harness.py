"""The harness shared by the Triton backend tests (``tests/test_triton_*.py``).

Import it FIRST in a Triton test module (``from tests import triton_harness``, before any
import that could import triton): it sets ``TRITON_INTERPRET=1`` before importing triton, so
kernels run in Triton's CPU interpreter (triton and ml_dtypes are required dependencies:
no skips). It holds the per-test kernel cache fixture (``fresh_cache``: a module uses it by
binding the name, ``fresh_cache = triton_harness.fresh_cache``), random inputs, the
compile/lower shortcuts and a few small programs.
"""
from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"  # noqa: E402 - before anything imports triton

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import triton  # noqa: E402, F401 - a required dependency, imported under TRITON_INTERPRET=1

import functrax  # noqa: E402
import functrax.numpy as fnp  # noqa: E402
from functrax import nn  # noqa: E402
from functrax.lowering.triton import cache as tcache  # noqa: E402
from functrax.lowering.triton.backend import compile_triton  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)


def normal_from(rng):
    """``normal(*shape, dtype=float32)``: standard normal arrays drawn from ``rng``.

    Each module keeps its own generator (and seed), so its inputs do not depend on which
    other modules ran first.
    """
    def normal(*shape, dtype=np.float32):
        return rng.normal(size=shape).astype(dtype)
    return normal


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    """A kernel cache of this test's own (directory and imported modules), and no jit traces
    of earlier tests (whose executables hold kernels of their caches).

    Autouse in every module that binds it: ``fresh_cache = triton_harness.fresh_cache``.
    """
    cache = tcache.KernelCache(str(tmp_path / "kernels"))
    monkeypatch.setattr(tcache, "_DEFAULT", cache)
    functrax.clear_caches()
    return cache


def lowered(fn, *args):
    """The ClosedJaxpr ``jit(fn)`` lowers for ``args``."""
    return functrax.jit(fn).lower(*args).jaxpr


def triton_program(fn, *args, kernel_config=None):
    """The TritonProgram of ``fn`` on ``args`` (what ``jit(fn, backend="triton")`` runs)."""
    return compile_triton(lowered(fn, *args), kernel_config=kernel_config)


def compiled(fn, *args):
    """``jit(fn, backend="triton").lower(*args).compile()``."""
    return functrax.jit(fn, backend="triton").lower(*args).compile()


def program_of(c):
    """The executable (TritonProgram or numpy Executable) behind a compiled jit."""
    return c._entry.exe


def bits_equal(got, want):
    """Equal as stored bits (-0.0 vs 0.0 and NaN payloads count)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    view = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
    np.testing.assert_array_equal(got.view(view), want.view(view))


# --- small programs used by several modules ---


def ew_chain(x, y):
    return fnp.tanh(x * y + 1.0) - fnp.exp(-x) * 0.5


def softmax_rows(x):
    return nn.softmax(x, axis=-1)


def dense_relu(x, w, b):
    return nn.relu(x @ w + b)


# --- layernorm spellings that the layernorm kernel pattern matches ---


def layernorm_pow_affine(x, w, b):
    """``(x - mu) / sqrt(var + eps) * w + b`` with the variance as ``mean((x - mu) ** 2)``."""
    mu = fnp.mean(x, axis=-1, keepdims=True)
    var = fnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / fnp.sqrt(var + 1e-3) * w + b


def layernorm_rsqrt(x):
    """``xc * rsqrt(mean(xc * xc) + eps)`` with ``xc = x - mean(x)``."""
    mu = fnp.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    return xc * functrax.lax.rsqrt(fnp.mean(xc * xc, axis=-1, keepdims=True) + 1e-5)
