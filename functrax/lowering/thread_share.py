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

__all__ = ["share_cores", "thread_budget", "current_share"]

_tls = threading.local()


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
    cores = os.cpu_count() or 1
    return max(1, min(int(requested), cores // current_share()))
