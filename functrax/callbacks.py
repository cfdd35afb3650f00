"""``functrax.pure_callback`` and ``functrax.experimental.io_callback``: call Python on the
host from a (jitted, transformed) program and use its results, as JAX's.

``pure_callback`` promises a pure function: with no effect it may be dropped when its
results are unused (or called more than once, e.g. per example under vmap, as
``vmap_method`` says). ``io_callback`` is effectful (``IO``; ``OrderedIO`` with
``ordered=True``): never dropped, merged or duplicated, ordered ones in program order.
"""
from __future__ import annotations

import numpy as np

from functrax import dtypes
from functrax.core import ShapedArray
from functrax.primitives.callbacks import (
    VMAP_METHODS, FlatCallback, io_callback_p, pure_callback_p,
)
from functrax.tree_util import tree_flatten, tree_map, tree_unflatten

__all__ = ["pure_callback", "io_callback"]


def _result_avals(fun_name, result_shape_dtypes):
    """The flat result avals and their tree; 64-bit types need ``enable_x64`` (JAX's error)."""
    def aval(x):
        if not (hasattr(x, "shape") and hasattr(x, "dtype")):
            raise TypeError(f"{fun_name}: result_shape_dtypes must be a pytree of objects with "
                            f"shape and dtype attributes (functrax.ShapeDtypeStruct, arrays), "
                            f"got a leaf {x!r} of type {type(x).__name__}")
        dt = np.dtype(x.dtype)
        if dtypes.canonicalize_dtype(dt) != dt:
            raise ValueError("result_shape_dtypes cannot specify 64-bit types when "
                             "`jax_enable_x64` is disabled")
        return ShapedArray(tuple(x.shape), dt)
    avals = tree_map(aval, result_shape_dtypes)
    return tree_flatten(avals, is_leaf=lambda v: isinstance(v, ShapedArray))


def _check_callable(fun_name, callback):
    if not callable(callback):
        raise TypeError(f"{fun_name}: the callback must be callable, got {callback!r} of type "
                        f"{type(callback).__name__}")


def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None,
                  **kwargs):
    """Call the pure Python function ``callback(*args, **kwargs)`` on the host, also from
    jitted and transformed code; its results have the shapes and dtypes of
    ``result_shape_dtypes``.

    ``callback`` gets concrete ``Array`` s and returns arrays (numpy or functrax) matching
    ``result_shape_dtypes``. Being pure, it may be dropped when its results are unused.
    Under ``vmap``, ``vmap_method`` decides: ``"sequential"`` (a loop, one call per example),
    ``"sequential_unrolled"`` (the same, unrolled), ``"expand_dims"`` (one call; unbatched
    arguments get a leading axis of size 1), ``"broadcast_all"`` (one call; every argument
    batched to the full size), ``"legacy_vectorized"`` (one call with the batched arguments
    as they are); None raises under vmap. Not differentiable: wrap it in ``custom_jvp`` /
    ``custom_vjp``.

    Args:
      callback: the host function.
      result_shape_dtypes: a pytree of ``ShapeDtypeStruct`` s (or arrays) describing the
        results.
      *args, **kwargs: pytrees of arrays passed to ``callback``.
      sharding: accepted (JAX: the device the callback runs for; one host here).
      vmap_method: how vmap batches it (see above).

    Returns:
      the results, a pytree like ``result_shape_dtypes``.

    Raises:
      ValueError: for an unknown ``vmap_method``, 64-bit result types without x64.
      RuntimeError: when the callback's results differ from ``result_shape_dtypes``.

    >>> import functrax, numpy as np
    >>> f = lambda x: functrax.pure_callback(np.sin, functrax.ShapeDtypeStruct((), np.float32), x)
    >>> functrax.jit(f)(np.float32(0.0))
    Array(0., dtype=float32)
    """
    if "vectorized" in kwargs:
        raise ValueError("The 'vectorized' argument of pure_callback was removed (as in JAX "
                         "v0.6.0). Use 'vmap_method' instead.")
    allowed = [*VMAP_METHODS, None]
    if vmap_method not in allowed:
        raise ValueError(f"vmap_method must be on of the allowed methods {allowed}, but got: "
                         f"{vmap_method}")
    _check_callable("pure_callback", callback)
    flat_args, in_tree = tree_flatten((args, kwargs))
    flat_avals, out_tree = _result_avals("pure_callback", result_shape_dtypes)
    outs = pure_callback_p.bind(*flat_args, callback=FlatCallback(callback, in_tree),
                                result_avals=tuple(flat_avals), sharding=sharding,
                                vmap_method=vmap_method)
    return tree_unflatten(out_tree, outs)


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered=False, **kwargs):
    """Call the impure Python function ``callback(*args, **kwargs)`` on the host (IO,
    state), also from jitted and transformed code. Never dropped or duplicated by the
    compiler; with ``ordered=True`` the calls happen in program order. Under ``vmap`` it is
    called once per example (an ordered one cannot be batched); it is not differentiable.

    Args:
      callback: the host function.
      result_shape_dtypes: a pytree of ``ShapeDtypeStruct`` s describing its results (``()``
        or None for none).
      *args, **kwargs: pytrees of arrays passed to ``callback``.
      sharding: accepted (JAX: the device the callback runs for; one host here).
      ordered: keep the calls in program order.

    Returns:
      the results, a pytree like ``result_shape_dtypes``.

    >>> import functrax, numpy as np
    >>> log = []
    >>> f = functrax.jit(lambda x: functrax.experimental.io_callback(log.append, None, x))
    >>> f(np.float32(1.0)); f(np.float32(2.0)); [float(v) for v in log]
    [1.0, 2.0]
    """
    _check_callable("io_callback", callback)
    flat_args, in_tree = tree_flatten((args, kwargs))
    flat_avals, out_tree = _result_avals("io_callback", result_shape_dtypes)
    outs = io_callback_p.bind(*flat_args, callback=FlatCallback(callback, in_tree),
                              result_avals=tuple(flat_avals), sharding=sharding,
                              ordered=bool(ordered))
    return tree_unflatten(out_tree, outs)
