"""``functrax.distributed``: many processes over MPI, as ``jax.distributed``.

``initialize()`` under ``mpiexec -n P`` makes every process own its local devices of one
global device list (see :mod:`functrax.runtime.distributed`, which implements it).
``import functrax`` does not import mpi4py; :func:`initialize` does.

>>> import functrax
>>> functrax.distributed.is_initialized()
False
"""
from functrax.runtime.distributed import (  # noqa: F401
    initialize, is_initialized, launched_by_mpiexec, shutdown,
)

__all__ = ["initialize", "shutdown", "is_initialized", "launched_by_mpiexec"]
