"""Helpers shared by the benchmark scripts (imports no numpy: BLAS threads are fixed first).

>>> pin_blas_threads(["--blas-threads", "0"])  # keep the library default
'0'
"""
from __future__ import annotations

import os
import time


def pin_blas_threads(argv) -> str:
    """Set the BLAS thread count from ``--blas-threads T`` (default 1; 0 keeps the library's
    default) in the environment. Call before numpy is imported; returns the value."""
    value = "1"
    for i, a in enumerate(argv):
        if a == "--blas-threads" and i + 1 < len(argv):
            value = argv[i + 1]
        elif a.startswith("--blas-threads="):
            value = a.split("=", 1)[1]
    if value != "0":
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = value
    return value


def best_ms_per_call(calls, number, repeat):
    """Best-of-``repeat`` milliseconds per call of each callable, the repeats interleaved
    (so a burst of load on the machine hits every candidate alike)."""
    best = [float("inf")] * len(calls)
    for _ in range(repeat):
        for i, fn in enumerate(calls):
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            best[i] = min(best[i], (time.perf_counter() - t0) / number * 1e3)
    return best
