"""Experimental APIs, as ``jax.experimental``: :func:`io_callback` (an effectful host
callback), the ``enable_x64`` / ``disable_x64`` context managers, and ``multihost_utils``
(``process_allgather``).

>>> import functrax
>>> with functrax.experimental.enable_x64():
...     functrax.config.enable_x64
True
"""
from functrax.callbacks import io_callback  # noqa: F401
from functrax.config import enable_x64 as _enable_x64
from functrax.experimental import multihost_utils  # noqa: F401

__all__ = ["io_callback", "enable_x64", "disable_x64", "multihost_utils"]


def enable_x64(new_val: bool = True):
    """Context manager turning 64-bit types on (off with ``new_val=False``) for its block."""
    return _enable_x64(bool(new_val))


def disable_x64():
    """Context manager turning 64-bit types off for its block."""
    return _enable_x64(False)
