"""``cond`` and ``switch``: run exactly one of several branches, staged as the ``cond``
primitive.

The primitive takes ``index`` (an int32 scalar, clamped into range when run) followed by the
operands of the branches, and holds the branches in its ``branches`` param: a tuple of
ClosedJaxprs without consts, the false branch first (as JAX). Values the branches close over
are hoisted into explicit leading operands shared by all branches (each branch takes every
branch's closed-over values and ignores the others'), so every transformation sees them.

The primitive is defined in ``functrax/primitives/control_flow.py``; its transformation rules
(jvp, partial evaluation, transposition, vmap) are in ``cond_rules.py``.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from functrax import core, dtypes
from functrax import primitives as P
from functrax.config import config
from functrax.core import ClosedJaxpr, Jaxpr, Var, typematch
from functrax.primitives.control_flow import cond_p
from functrax.core.tracing import fun_name, fun_source, make_debug_info
from functrax.transforms.call_util import cached_trace, trace_subjaxpr
from functrax.tree_util import (
    keystr, tree_flatten, tree_flatten_with_path, tree_map, tree_unflatten,
)

__all__ = ["cond", "switch", "cond_p"]


# JAX accepts one pytree operand passed by keyword (``operand=``), an older calling convention
_no_operand = object()


# --- the primitive ---


# --- tracing the branches ---


def join_closed(closed_jaxprs):
    """Give every jaxpr the constvars of all of them as leading invars.

    Args:
      closed_jaxprs: ClosedJaxprs with equal invars (their consts may differ).

    Returns:
      (tuple of ClosedJaxprs without consts, the joined consts): jaxpr ``i`` takes
      ``*consts, *invars`` and ignores the consts of the others. Consts are shared by
      identity.
    """
    consts, ids = [], {}
    for c in closed_jaxprs:
        for x in c.consts:
            if id(x) not in ids:
                ids[id(x)] = len(consts)
                consts.append(x)
    const_avals = [core.get_aval(x) for x in consts]
    out = []
    for c in closed_jaxprs:
        j = c.jaxpr
        own = {ids[id(x)]: v for x, v in zip(c.consts, j.constvars)}
        lead = [own[i] if i in own else Var(a) for i, a in enumerate(const_avals)]
        out.append(ClosedJaxpr(Jaxpr([], lead + j.invars, j.outvars, j.eqns, j.debug_info),
                               []))
    return tuple(out), consts


def _trace_branches(funs, operands, api_name, bind_order=None):
    """Trace each function on ``operands`` in order; returns (:class:`_Branches`, flat
    operands). ``bind_order``: the positions in ``funs`` of the cond's branches (default:
    the same order). Eager calls are memoized per functions, operand structure and avals
    (``call_util.cached_trace``, as JAX caches its traces)."""
    flat_ops, in_tree = tree_flatten(tuple(operands))
    avals = tuple(core.get_aval(x) for x in flat_ops)

    def make():
        closed, out_trees = [], []
        for f in funs:
            info = make_debug_info(f, operands, {}, api_name)
            c, cs, _, _, out_tree = trace_subjaxpr(f, tuple(operands), info)
            j = c.jaxpr
            n = len(cs)
            closed.append(ClosedJaxpr(Jaxpr(j.invars[:n], j.invars[n:], j.outvars, j.eqns,
                                            j.debug_info), cs))
            out_trees.append(out_tree)
        jaxprs, consts = join_closed(closed)
        bound = jaxprs if bind_order is None else tuple(jaxprs[i] for i in bind_order)
        return _Branches(jaxprs, consts, out_trees, *_forwarded(bound))

    key = (api_name, bind_order, in_tree, avals)
    traced = cached_trace(tuple(funs), key, make, lambda r: r.consts)
    return traced, flat_ops


class _Branches(NamedTuple):
    """Traced branches: jaxprs taking the joined consts first and out_trees (in the order
    traced), the consts, and the branches to bind (in bind order) without the outputs every
    branch forwards from one input (``in_fwd``: that input's position per original output,
    or None)."""
    jaxprs: tuple
    consts: list
    out_trees: list
    pruned: tuple
    in_fwd: list


def _fun_info(f) -> str:
    src = fun_source(f)
    return f"{fun_name(f)} defined at {src}" if src else fun_name(f)


def _check_branch_outputs(name1, name2, f1, f2, tree1, avals1, tree2, avals2):
    """JAX's check that two branches return the same pytree of the same types (up to
    weak type), with JAX's texts followed by which output differs and how."""
    where = f"{name1} is {_fun_info(f1)}\n{name2} is {_fun_info(f2)}\n"
    if tree1 != tree2:
        raise TypeError(
            f"{name1} and {name2} output must have same type structure, got {tree1} and "
            f"{tree2}.\n\n{where}\nRevise {name1} and/or {name2} so that they have the same "
            f"pytree structure.")
    if all(map(typematch, avals1, avals2)):
        return
    diff = tree_map(_show_diff, tree_unflatten(tree1, avals1), tree_unflatten(tree2, avals2))
    paths = [p for p, _ in tree_flatten_with_path(tree_unflatten(tree1, range(len(avals1))))[0]]
    lines = [f"the output of {name1}{' at path ' + keystr(p) if p else ''} has type "
             f"{a1.str_short()} but the corresponding output of {name2} has type "
             f"{a2.str_short()}" for p, a1, a2 in zip(paths, avals1, avals2)
             if not typematch(a1, a2)]
    details = "\n".join("  * " + ln for ln in lines) if len(lines) > 1 else \
        lines[0][0].upper() + lines[0][1:]
    raise TypeError(
        f"{name1} and {name2} output must have identical types, got\n{diff}.\n\n"
        f"{details}.\n\n{where}\nRevise {name1} and/or {name2} so that all output types "
        f"match.")


def _show_diff(a1, a2) -> str:
    return repr(a1) if typematch(a1, a2) else f"DIFFERENT {a1!r} vs. {a2!r}"


def _prune_forwarded(traced, consts, ops):
    """Drop outputs that every branch forwards from the same input (as JAX): they are
    that input. Returns (jaxprs, one input value or None per original output)."""
    pruned, in_fwd = traced.pruned, traced.in_fwd
    if all(f is None for f in in_fwd):
        return pruned, in_fwd
    inputs = list(consts) + list(ops)
    return pruned, [None if f is None else _as_array(inputs[f]) for f in in_fwd]


def _forwarded(jaxprs):
    """(the branches without their commonly forwarded outputs, for each original output the
    position of the input it forwards or None)."""
    fwds = []
    for br in jaxprs:
        pos = {v: k for k, v in enumerate(br.jaxpr.invars)}
        fwds.append([pos.get(v) if type(v) is Var else None for v in br.jaxpr.outvars])
    in_fwd = [f[0] if len(set(f)) == 1 else None for f in zip(*fwds)]
    pruned = tuple(jaxprs)
    if any(f is not None for f in in_fwd):
        keep = [f is None for f in in_fwd]
        pruned = tuple(ClosedJaxpr(Jaxpr(b.jaxpr.constvars, b.jaxpr.invars,
                                         [v for v, k in zip(b.jaxpr.outvars, keep) if k],
                                         b.jaxpr.eqns, b.jaxpr.debug_info), b.consts)
                       for b in jaxprs)
    return pruned, in_fwd


def _as_array(x):
    if isinstance(x, (core.Tracer, core.Array)):
        return x
    aval = core.get_aval(x)  # a copy: the caller's numpy array may change later
    return core.Array(np.array(x, aval.dtype), weak_type=aval.weak_type)


def _bind_cond(index, traced, ops):
    consts, out_tree = traced.consts, traced.out_trees[0]
    jaxprs, fwd = _prune_forwarded(traced, consts, ops)
    outs = iter(cond_p.bind(index, *consts, *ops, branches=tuple(jaxprs)))
    return tree_unflatten(out_tree, [next(outs) if f is None else f for f in fwd])


# --- the public functions ---


def _dtype_of(x):
    aval = getattr(x, "aval", None)
    if type(aval) is core.ShapedArray:
        return aval.dtype
    return core.get_aval(x).dtype


def _is_concrete(x) -> bool:
    return not isinstance(x, core.Tracer)


def cond(pred, true_fun, false_fun, *operands, operand=_no_operand):
    """Conditionally apply ``true_fun`` or ``false_fun`` (``jax.lax.cond``).

    Has the semantics of::

        def cond(pred, true_fun, false_fun, *operands):
            return true_fun(*operands) if pred else false_fun(*operands)

    but both branches are traced and staged into one ``cond`` primitive, so ``pred`` may be
    a traced value. Under ``vmap`` with a batched ``pred`` both branches run and the results
    are selected.

    Args:
      pred: a boolean (or number: nonzero means true) scalar.
      true_fun: function applied to ``*operands`` when ``pred`` is true.
      false_fun: function applied to ``*operands`` when ``pred`` is false; it must return
        the same pytree of the same shapes and dtypes as ``true_fun``.
      operands: the branches' arguments (pytrees of arrays).

    Returns:
      The value of the branch selected by ``pred``.

    >>> import functrax.numpy as fnp
    >>> cond(fnp.float32(2.0) > 0, lambda x: x * 2, lambda x: -x, fnp.arange(3.0))
    Array([0., 2., 4.], dtype=float32)
    """
    if not (callable(true_fun) and callable(false_fun)):
        # the former calling convention cond(pred, true_operand, true_fun, false_operand,
        # false_fun), which JAX still accepts
        if callable(false_fun) and len(operands) == 2 and callable(operands[1]):
            x_true, f_true, x_false, f_false = true_fun, false_fun, *operands
            return cond(pred, lambda x, _: f_true(x), lambda _, x: f_false(x), x_true, x_false)
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    if operand is not _no_operand:
        if operands:
            raise TypeError("if 'operand' keyword is passed then no positional operands can "
                            f"be passed, got operand={operand} and positional operands "
                            f"{operands}")
        operands = (operand,)
    pred = _check_pred(pred)
    if config.disable_jit and _is_concrete(pred):
        return true_fun(*operands) if pred else false_fun(*operands)

    # traced true_fun first; bound false branch first (the cond's branch order)
    traced, ops = _trace_branches((true_fun, false_fun), operands, "cond", bind_order=(1, 0))
    true_jaxpr, false_jaxpr = traced.jaxprs
    _check_branch_outputs("true_fun", "false_fun", true_fun, false_fun,
                          traced.out_trees[0], true_jaxpr.out_avals,
                          traced.out_trees[1], false_jaxpr.out_avals)
    index = P.convert_element_type(pred, np.int32)
    return _bind_cond(index, traced, ops)


def _check_pred(pred):
    """JAX's checks of a cond predicate; numbers become ``pred != 0``."""
    if pred is None:
        raise TypeError("cond predicate is None")
    if isinstance(pred, Sequence) or np.ndim(pred) != 0:
        raise TypeError(f"Pred must be a scalar, got {pred} of " + (
            f"type {type(pred)}" if isinstance(pred, Sequence) else f"shape {np.shape(pred)}."))
    try:
        dtype = _dtype_of(pred)
    except TypeError as err:
        raise TypeError(f"Pred type must be either boolean or number, got {pred}.") from err
    if dtype.kind != "b":
        if dtype.kind not in "iuf" and dtype != dtypes.bfloat16:
            raise TypeError(f"Pred type must be either boolean or number, got {dtype}.")
        is_array = isinstance(pred, (core.Tracer, core.Array))
        pred = pred != 0 if is_array else np.asarray(pred) != 0
    return pred


def switch(index, branches, *operands, operand=_no_operand):
    """Apply exactly one of ``branches``, the one given by ``index`` (``jax.lax.switch``).

    If ``index`` is out of bounds it is clamped into range. Has the semantics of::

        def switch(index, branches, *operands):
            index = clamp(0, index, len(branches) - 1)
            return branches[index](*operands)

    Args:
      index: an integer scalar (may be traced).
      branches: a sequence of functions of ``*operands``, all returning the same pytree of
        the same shapes and dtypes.
      operands: the branches' arguments (pytrees of arrays).

    Returns:
      The value of the selected branch.

    >>> import functrax.numpy as fnp
    >>> switch(5, [lambda x: x + 1, lambda x: x * 10], fnp.float32(2.0))
    Array(20., dtype=float32)
    """
    msg = "lax.switch: branches argument should be a sequence of callables."
    try:
        branches = tuple(branches)
    except TypeError:
        raise TypeError(msg) from None
    if not all(callable(b) for b in branches):
        raise TypeError(msg)
    if operand is not _no_operand:
        if operands:
            raise TypeError("if 'operand' keyword is passed then no positional operands can "
                            f"be passed, got operand={operand} and positional operands "
                            f"{operands}")
        operands = (operand,)
    if len(np.shape(index)) != 0:
        raise TypeError(f"Branch index must be scalar, got {index} of shape "
                        f"{np.shape(index)}.")
    try:
        index_dtype = _dtype_of(index)
    except TypeError as err:
        raise TypeError(f"Index type must be an integer, got {index}.") from err
    if index_dtype.kind not in "iu":
        raise TypeError(f"Index type must be an integer, got {index} as {index_dtype}")
    if not branches:
        raise ValueError("Empty branch sequence")
    if len(branches) == 1:
        return branches[0](*operands)

    index = P.convert_element_type(index, np.int32)
    index = P.clamp(np.int32(0), index, np.int32(len(branches) - 1))
    if config.disable_jit and _is_concrete(index):
        return branches[int(index)](*operands)

    traced, ops = _trace_branches(branches, operands, "switch")
    jaxprs, out_trees = traced.jaxprs, traced.out_trees
    for i in range(1, len(branches)):
        _check_branch_outputs("branch 0", f"branch {i}", branches[0], branches[i],
                              out_trees[0], jaxprs[0].out_avals,
                              out_trees[i], jaxprs[i].out_avals)
    return _bind_cond(index, traced, ops)


