"""Helpers for multi-process programs, as ``jax.experimental.multihost_utils``:
:func:`process_allgather`.

>>> import numpy as np
>>> process_allgather(np.arange(3.0)).shape   # one process: stacked along a new axis
(1, 3)
"""
from __future__ import annotations

import numpy as np

from functrax import tree_util
from functrax.core import Array
from functrax.runtime.mesh_array import MeshShardedArray
from functrax.runtime.pmap_runtime import allgather_processes

__all__ = ["process_allgather"]


def _gather(x, tiled: bool) -> np.ndarray:
    if isinstance(x, MeshShardedArray) and not x.is_fully_addressable:
        return np.array(x._value)  # the global value, gathered from every process
    v = np.asarray(x)
    every = allgather_processes(v)
    if tiled and v.ndim:
        return np.concatenate(list(every), axis=0)
    return every


def process_allgather(in_tree, tiled: bool = False):
    """Gather data from every process (a collective: every process must call it, with
    arrays of the same shapes), as JAX's ``process_allgather``.

    Args:
      in_tree: a pytree of arrays.
      tiled: for process-local values (numpy arrays, fully addressable arrays): concatenate
        them along axis 0 (True) instead of stacking them along a new leading axis (False,
        the default). Scalars are always stacked.

    Returns:
      A pytree of numpy arrays: the global value of an array that spans several processes
      (not fully addressable), else every process's value stacked (or concatenated).

    >>> import numpy as np
    >>> process_allgather({"a": np.ones(2)}, tiled=True)["a"].shape
    (2,)
    """
    return tree_util.tree_map(lambda x: _gather(x, tiled), in_tree,
                              is_leaf=lambda x: isinstance(x, Array))
