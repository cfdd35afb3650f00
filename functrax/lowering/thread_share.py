"""How many threads a kernel launched from the current thread may use.

A pmap over virtual CPU devices runs its replicas in threads of one process; if every
replica's kernels also opened an OpenMP team of all cores, ``devices x cores`` threads would
compete for the cores (oversubscription: under load, a step slows down many times). The pmap
runtime calls :func:`share_cores` around each replica's work with the number of replicas
running at once; backends that start threads (the C backend's OpenMP loops) ask
:func:`thread_budget` how many they may use here.

>>> import os
>>> with share_cores(2):
...     thread_budget(64) == max(1, (os.cpu_count() or 1) // 2)
True
"""
from __future__ import annotations

import contextlib
import os
import threading

__all__ = ["share_cores", "thread_budget", "current_share", "share_blas",
           "register_blas_threads", "CORES"]

_tls = threading.local()
CORES = os.cpu_count() or 1  # read once: os.cpu_count() takes microseconds per call
# (get, set) of the BLAS library's process-wide thread count (registered by the C backend's
# ``blas`` module; get returns None when no BLAS was found)
_BLAS: list = []
_BLAS_LOCK = threading.Lock()
_BLAS_STATE = {"depth": 0, "saved": None}


def register_blas_threads(get, set_):
    """Give :func:`share_blas` the BLAS library's thread-count getter and setter."""
    _BLAS[:] = [(get, set_)]


@contextlib.contextmanager
def share_blas(parts: int):
    """Within this block the cores are shared by ``parts`` threads that all call BLAS: its
    process-wide thread count drops to ``cores // parts`` (at least 1) and is restored when
    the last such block ends. BLAS threads are one pool for the whole process, so a pmap of
    4 replicas on 2 cores would otherwise run 4 x 2 BLAS threads, spinning while they wait."""
    if parts <= 1 or not _BLAS:
        yield
        return
    get, set_ = _BLAS[0]
    with _BLAS_LOCK:
        if _BLAS_STATE["depth"] == 0:
            _BLAS_STATE["saved"] = get()
        _BLAS_STATE["depth"] += 1
        if _BLAS_STATE["saved"] is not None:
            set_(max(1, min(_BLAS_STATE["saved"], CORES // parts)))
    try:
        yield
    finally:
        with _BLAS_LOCK:
            _BLAS_STATE["depth"] -= 1
            if _BLAS_STATE["depth"] == 0 and _BLAS_STATE["saved"] is not None:
                set_(_BLAS_STATE["saved"])


def current_share() -> int:
    """Into how many parts the cores are shared by the work running now (1: not shared)."""
    return getattr(_tls, "share", 1)


@contextlib.contextmanager
def share_cores(parts: int):
    """Within this block (in this thread), the cores are shared with ``parts - 1`` other
    threads doing the same (nested blocks multiply)."""
    prev = current_share()
    _tls.share = prev * max(1, int(parts))
    try:
        yield
    finally:
        _tls.share = prev


def thread_budget(requested: int) -> int:
    """``requested`` threads, at most this thread's share of the cores (at least 1)."""
    return max(1, min(int(requested), CORES // current_share()))
