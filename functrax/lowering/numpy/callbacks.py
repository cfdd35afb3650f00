"""numpy rules of the host callbacks: call the user's Python function on the host.

The callback gets fresh ``Array`` s (copies: the executor may reuse a buffer after its last
use, and a callback may keep what it is given) and runs with no transformation current, so
it may call ``functrax.numpy`` eagerly. ``pure_callback`` / ``io_callback`` results are
checked against the declared shapes and dtypes (JAX's ``RuntimeError`` texts) and returned
as numpy arrays; ``debug.print`` formats with the numpy print options captured when it was
traced.
"""
from __future__ import annotations

import sys

import numpy as np

from functrax import core, dtypes
from functrax.core import Array
from functrax.lowering.numpy.rules import numpy_rules
from functrax.primitives.callbacks import (
    debug_callback_p, debug_print_p, io_callback_p, pure_callback_p,
)
from functrax.tree_util import tree_unflatten


def host_arrays(vals) -> list:
    """The callback's arguments: a private ``Array`` copy of each numpy value."""
    return [Array(np.array(v, copy=True)) for v in vals]


def _on_host(fn, *args):
    """Run ``fn`` eagerly (the callback sees concrete arrays, whatever is being traced)."""
    with core.set_current_trace(core.EVAL_TRACE):
        return fn(*args)


def _debug_callback(*vals, callback, effect, partitioned):
    _on_host(callback, *host_arrays(vals))
    return []


def _merge_static(dyn, static_args, n):
    it = iter(dyn)
    static = dict(static_args)
    return [static[i] if i in static else next(it) for i in range(n)]


def format_print(fmt, in_tree, static_args, np_printoptions, vals) -> str:
    """The text ``debug.print`` writes (without the newline)."""
    flat = _merge_static(host_arrays(vals), static_args, in_tree.num_leaves)
    args, kwargs = tree_unflatten(in_tree, flat)
    with np.printoptions(**dict(np_printoptions)):
        return _on_host(lambda: fmt.format(*args, **kwargs))


def _debug_print(*vals, fmt, has_placeholders, in_tree, logging_record, np_printoptions,
                 ordered, partitioned, static_args):
    text = format_print(fmt, in_tree, static_args, np_printoptions, vals)
    if logging_record is not None:
        logging_record(text)
    else:
        sys.stdout.write(text + "\n")
    return []


def checked_results(outs, result_avals) -> list:
    """The callback's results as numpy arrays of the declared types (JAX's errors)."""
    outs = list(outs)
    if len(outs) != len(result_avals):
        raise RuntimeError("Mismatched number of outputs from callback. "
                           f"Expected: {len(result_avals)}, Actual: {len(outs)}")
    res = []
    for i, (o, aval) in enumerate(zip(outs, result_avals)):
        a = np.asarray(o)
        a = a.astype(dtypes.canonicalize_dtype(a.dtype), copy=False)
        if a.shape != aval.shape:
            raise RuntimeError(f"Incorrect output shape for return value #{i}: "
                               f"Expected: {aval.shape}, Actual: {a.shape}")
        if a.dtype != aval.dtype:
            raise RuntimeError(f"Incorrect output dtype for return value #{i}: "
                               f"Expected: {aval.dtype}, Actual: {a.dtype}")
        res.append(np.array(a, copy=True))
    return res


def _pure_callback(*vals, callback, result_avals, sharding, vmap_method):
    return checked_results(_on_host(callback, *host_arrays(vals)), result_avals)


def _io_callback(*vals, callback, result_avals, sharding, ordered):
    return checked_results(_on_host(callback, *host_arrays(vals)), result_avals)


numpy_rules.update({
    debug_callback_p: _debug_callback,
    debug_print_p: _debug_print,
    pure_callback_p: _pure_callback,
    io_callback_p: _io_callback,
})
