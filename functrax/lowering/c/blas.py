"""The BLAS the C backend's matrix products call: the one numpy ships (no new dependency).

numpy's wheels bundle OpenBLAS (``numpy.libs/libscipy_openblas64_*.so`` on Linux,
``numpy/.dylibs`` on macOS) with ILP64 CBLAS entry points (``scipy_cblas_sgemm64_``).
:func:`blas_functions` finds them once per process: the addresses of ``sgemm`` and
``dgemm`` and whether their integers are 64-bit. Every loaded C library receives them
through its ``ft_set_blas`` (prelude); a library that gets none (no BLAS found, e.g. a numpy
built against Accelerate or MKL under other names) computes products with the prelude's
own loop (correct, slower), and ``blas_functions().name`` says which is used.

>>> blas_functions().name in ("none",) or blas_functions().sgemm != 0
True
"""
from __future__ import annotations

import ctypes
import dataclasses
import glob
import os

import numpy as np

from functrax.lowering.thread_share import register_blas_threads

__all__ = ["BlasFunctions", "blas_functions", "configure_library", "get_threads",
           "set_threads"]

# (sgemm symbol, dgemm symbol, 64-bit integers), tried in order in each candidate library
_SYMBOLS = (("scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_", True),
            ("cblas_sgemm64_", "cblas_dgemm64_", True),
            ("scipy_cblas_sgemm", "scipy_cblas_dgemm", False),
            ("cblas_sgemm", "cblas_dgemm", False))


@dataclasses.dataclass(frozen=True)
class BlasFunctions:
    """Entry points of a CBLAS: ``sgemm``/``dgemm`` addresses (0: none), ``ilp64`` (64-bit
    integer arguments), ``name`` (the library file, or ``"none"``)."""

    sgemm: int
    dgemm: int
    ilp64: bool
    name: str
    handle: object = None


def _candidates() -> list:
    root = os.path.dirname(np.__file__)
    pats = [os.path.join(root, "..", "numpy.libs", "*blas*"),
            os.path.join(root, ".dylibs", "*blas*"),
            os.path.join(root, "..", "numpy.libs", "*.so*")]
    out = []
    for p in pats:
        for f in sorted(glob.glob(p)):
            if f not in out and (".so" in f or f.endswith(".dylib")):
                out.append(f)
    return out


_FOUND: list = []


def blas_functions() -> BlasFunctions:
    """numpy's CBLAS ``sgemm``/``dgemm`` (found once per process)."""
    if _FOUND:
        return _FOUND[0]
    found = BlasFunctions(0, 0, False, "none")
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for s, d, ilp64 in _SYMBOLS:
            try:
                fs, fd = getattr(lib, s), getattr(lib, d)
            except AttributeError:
                continue
            found = BlasFunctions(ctypes.cast(fs, ctypes.c_void_p).value,
                                  ctypes.cast(fd, ctypes.c_void_p).value, ilp64,
                                  os.path.basename(path), lib)
            break
        if found.sgemm:
            break
    _FOUND.append(found)
    return found


def configure_library(lib) -> None:
    """Give a loaded C library (one with the prelude's ``ft_set_blas``) the BLAS entry
    points."""
    b = blas_functions()
    fn = lib.ft_set_blas
    fn.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)
    fn.restype = None
    fn(b.sgemm or None, b.dgemm or None, int(b.ilp64))


_THREADS = (("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
            ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
            ("openblas_get_num_threads", "openblas_set_num_threads"))


def _thread_functions():
    lib = blas_functions().handle
    for g, s in _THREADS if lib is not None else ():
        try:
            get, set_ = getattr(lib, g), getattr(lib, s)
        except AttributeError:
            continue
        get.restype, get.argtypes = ctypes.c_int, ()
        set_.restype, set_.argtypes = None, (ctypes.c_int,)
        return get, set_
    return None


def get_threads():
    """The BLAS library's process-wide thread count (None when unknown)."""
    f = _thread_functions()
    return None if f is None else int(f[0]())


def set_threads(n: int) -> None:
    """Set the BLAS library's process-wide thread count (no-op when unknown)."""
    f = _thread_functions()
    if f is not None:
        f[1](int(n))


register_blas_threads(get_threads, set_threads)
