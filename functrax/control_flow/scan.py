"""``scan`` and ``map``: loops with a carried state, as JAX's ``lax.scan`` / ``lax.map``.

``scan(f, init, xs)`` traces ``f(carry, x) -> (carry, y)`` once into a jaxpr and binds the
``scan`` primitive, whose operands are ``consts`` (values the body closes over, hoisted as
leading operands), the initial carry and the stacked ``xs``; its results are the final carry
and the stacked ``ys``. Its params print as JAX prints them: ``jaxpr`` (a ClosedJaxpr of
``(consts, carry, x) -> (carry, y)``), ``length``, ``num_carry``, ``num_consts``, ``reverse``,
``unroll``.

This module holds the public functions, the primitive with its abstract evaluation and its
numpy-backend rule (a Python loop running the compiled body). The jvp, partial-evaluation,
transpose and vmap rules are in ``scan_rules.py``.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from functrax import core, dtypes
from functrax import primitives as P
from functrax.core import ShapedArray, typematch
from functrax.errors import ConcretizationTypeError
from functrax.primitives.control_flow import scan_p
from functrax.core.tracing import DebugInfo, arg_names, fun_name, fun_source, trace_to_jaxpr
from functrax.transforms.call_util import cached_trace, closure_convert
from functrax.tree_util import (
    keystr, tree_flatten, tree_flatten_with_path, tree_map, tree_unflatten, treedef_children,
)

__all__ = ["scan", "map"]



# --- the public functions ---


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """Loop ``f`` over the leading axis of ``xs`` while carrying a state.

    Semantically (as ``jax.lax.scan``)::

      def scan(f, init, xs, length=None):
        carry, ys = init, []
        for x in xs:                      # (in reverse order when reverse=True)
          carry, y = f(carry, x)
          ys.append(y)
        return carry, np.stack(ys)

    ``f`` is traced once; the loop is one ``scan`` primitive, differentiable (forward and
    reverse mode: the backward pass is a reversed scan), batchable and jittable.

    Args:
      f: ``f(carry, x) -> (carry, y)``; the output carry must have the pytree structure and
        the types of ``init`` (a weakly typed ``init``, e.g. a Python scalar, is promoted to
        the output's type).
      init: the initial carry (a pytree of arrays).
      xs: a pytree of arrays scanned along their leading axis (all of the same length), or
        None to loop ``length`` times with ``x = None``.
      length: the number of iterations; required when ``xs`` is None, else must agree with
        the leading axis sizes.
      reverse: scan from the end (``ys`` are still stored at their own index).
      unroll: a non-negative int (``0`` unrolls the entire loop, as JAX), or a bool
        (True: unroll fully, False: keep rolled); a performance hint only.

    Returns:
      ``(final_carry, ys)``, ``ys`` stacking the per-iteration ``y`` along a new leading axis.

    Raises:
      ValueError: for xs of different leading sizes, a length that disagrees with xs, no xs
        and no length, or a bad ``unroll``.
      TypeError: when the carry output differs from the input in structure or type.

    >>> import functrax.numpy as fnp
    >>> scan(lambda c, x: (c + x, c * x), 0.0, fnp.arange(4.0))
    (Array(6., dtype=float32), Array([0., 0., 2., 9.], dtype=float32))
    """
    if not callable(f):
        raise TypeError("scan: f argument should be a callable.")
    xs_flat, xs_tree = tree_flatten(xs)
    length = _scan_length(xs_flat, length)
    unroll = _check_unroll(unroll, length)
    x_avals = [_slice_aval(core.get_aval(x)) for x in xs_flat]
    init_flat, init_tree = tree_flatten(init)
    debug = functools.partial(_debug_info, f, init, xs)  # made on a cache miss only
    closed, consts, out_tree = _trace_body_cached(f, init_flat, init_tree, x_avals, xs_tree,
                                                  debug)
    # a weakly typed init (a Python scalar) takes the type of the body's carry output
    init_flat, changed = _promote_weak_typed_inputs(init_flat, closed.out_avals)
    # in a shard_map body: a carry the body makes varying is varying from the start
    for _ in range(len(init_flat) + 1):
        init_flat, varied = P.vary_like(init_flat, closed.out_avals[:len(init_flat)])
        if not (changed or varied):
            break
        init = tree_unflatten(init_tree, init_flat)
        closed, consts, out_tree = _trace_body_cached(f, init_flat, init_tree, x_avals,
                                                      xs_tree, debug)
        changed = False
    carry_tree, y_tree = treedef_children(out_tree)
    _check_carry_type(f, init, init_tree, carry_tree, closed.out_avals[:carry_tree.num_leaves])
    outs = scan_p.bind(*consts, *init_flat, *xs_flat, jaxpr=closed, length=length,
                       reverse=bool(reverse), unroll=unroll, num_consts=len(consts),
                       num_carry=len(init_flat))
    n = len(init_flat)
    return tree_unflatten(carry_tree, outs[:n]), tree_unflatten(y_tree, outs[n:])


def map(f, xs, *, batch_size=None):  # noqa: A001 - the name JAX gives it
    """Map ``f`` over the leading axis of ``xs`` with a loop (``scan`` without a carry).

    Args:
      f: a function of one slice of ``xs`` (a pytree).
      xs: a pytree of arrays with equal leading sizes.
      batch_size: if given, ``f`` is vmapped over chunks of ``batch_size`` slices and the
        loop runs over the chunks (the remainder is one more vmapped call).

    Returns:
      The per-slice results stacked along a new leading axis.

    >>> import functrax.numpy as fnp
    >>> map(lambda x: x * 2, fnp.arange(3.0))
    Array([0., 2., 4.], dtype=float32)
    """
    if batch_size is None:
        _, ys = scan(lambda _, x: ((), f(x)), (), xs)
        return ys
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"map: batch_size must be a positive int or None, got {batch_size!r}")
    from functrax.transforms.vmap import vmap
    scan_xs, rem_xs = _batch_and_remainder(xs, batch_size)
    _, ys = scan(lambda _, x: ((), vmap(f)(x)), (), scan_xs)
    ys = tree_map(lambda y: P.reshape(y, (y.shape[0] * y.shape[1],) + y.shape[2:]), ys)
    if rem_xs is None:
        return ys
    rem_ys = vmap(f)(rem_xs)
    return tree_map(lambda a, b: P.concatenate([a, b], 0), ys, rem_ys)


def _batch_and_remainder(xs, batch_size):
    """(xs reshaped to [num_batches, batch_size, ...], the remaining rows or None)."""
    leaves, tree = tree_flatten(xs)
    length = _scan_length(leaves, None)
    num_batches, rem = divmod(length, batch_size)
    full = num_batches * batch_size
    batched = [P.reshape(P.slice_in_dim(x, 0, full, axis=0) if rem else x,
                         (num_batches, batch_size) + tuple(x.shape[1:])) for x in leaves]
    remainder = [P.slice_in_dim(x, full, length, axis=0) for x in leaves] if rem else None
    return (tree_unflatten(tree, batched),
            None if remainder is None else tree_unflatten(tree, remainder))


# --- argument checking and tracing ---


def _scan_length(xs_flat, length) -> int:
    no_axis = [x for x in xs_flat if not getattr(x, "shape", ())]
    if no_axis:
        raise ValueError("scan got value with no leading axis to scan over: "
                         f"{', '.join(str(x) for x in no_axis)}.")
    lengths = [int(x.shape[0]) for x in xs_flat]
    if length is not None:
        try:
            length = int(length)
        except ConcretizationTypeError:
            raise ConcretizationTypeError(
                length, "The `length` argument to `scan` expects a concrete `int` value. For "
                "scan-like iteration with a dynamic length, use `while_loop` or "
                "`fori_loop`. ") from None
        if not all(length == n for n in lengths):
            raise ValueError(f"scan got `length` argument of {length} which disagrees with "
                             f"leading axis sizes {lengths}.")
        return length
    if len(set(lengths)) > 1:
        raise ValueError("scan got values with different leading axis sizes: "
                         f"{', '.join(str(n) for n in lengths)}.")
    if not lengths:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    return lengths[0]


def _check_unroll(unroll, length) -> int:
    if isinstance(unroll, core.Tracer):
        raise ConcretizationTypeError(
            unroll, "The `unroll` argument to `scan` expects a concrete `int` or `bool` value.")
    if isinstance(unroll, (bool, np.bool_)):
        return max(length, 1) if unroll else 1
    if not isinstance(unroll, (int, np.integer)) or unroll < 0:
        raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
    return int(unroll)


def _slice_aval(aval: ShapedArray) -> ShapedArray:
    return aval.update(shape=aval.shape[1:])


def _debug_info(f, init, xs) -> DebugInfo:
    return DebugInfo(fun_name(f), fun_source(f), arg_names(f, (init, xs), {}), "scan")


def _trace_body(f, init_flat, init_tree, x_avals, xs_tree, debug):
    """Trace ``f(carry, x)`` with the carry typed as ``init`` and ``x`` as one slice of xs.

    Returns (ClosedJaxpr of (carry leaves, x leaves) -> (carry leaves, y leaves), out_tree).
    """
    n = len(init_flat)
    box = []

    def flat_fun(*leaves):
        carry = tree_unflatten(init_tree, leaves[:n])
        x = tree_unflatten(xs_tree, leaves[n:])
        out_flat, out_tree = tree_flatten(f(carry, x))
        box.append(out_tree)
        return out_flat

    carry_avals = [core.get_aval(x) for x in init_flat]
    closed = trace_to_jaxpr(flat_fun, carry_avals + list(x_avals), debug)
    out_tree = box[0]
    if len(treedef_children(out_tree)) != 2:
        raise TypeError("scan body output must be a pair, got "
                        f"{tree_unflatten(out_tree, closed.out_avals)}.")
    return closed, out_tree


def _trace_body_cached(f, init_flat, init_tree, x_avals, xs_tree, debug):
    """:func:`_trace_body`, closure-converted: (ClosedJaxpr of (consts, carry leaves, x
    leaves), consts, out_tree). Eager calls are memoized per ``f``, the carry and xs
    structures and avals (``call_util.cached_trace``, as JAX caches its traces); ``debug``
    is a DebugInfo or a function making one (called on a miss only)."""
    carry_avals = tuple(core.get_aval(x) for x in init_flat)

    def make():
        info = debug() if callable(debug) else debug
        closed, out_tree = _trace_body(f, init_flat, init_tree, x_avals, xs_tree, info)
        closed, consts = closure_convert(closed)
        return closed, consts, out_tree

    key = ("scan", init_tree, carry_avals, xs_tree, tuple(x_avals))
    if core.VMA.axes:  # avals compare without their vma: the variance is part of the key
        key += (tuple(a.vma for a in carry_avals + tuple(x_avals)),)
    return cached_trace((f,), key, make, lambda r: r[1])


def _promote_weak_typed_inputs(in_vals, out_avals):
    """Convert each weakly typed init whose type differs from the carry output's."""
    in_vals = list(in_vals)
    changed = False
    for i, (x, out) in enumerate(zip(in_vals, out_avals)):
        aval = core.get_aval(x)
        if aval.weak_type and not typematch(aval, out):
            new_dtype = dtypes.result_type(x, out.dtype)
            in_vals[i] = P.convert_element_type(x, new_dtype)
            changed = True
    return in_vals, changed


def _carry_component(f):
    try:
        params = list(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        params = []
    if params:
        name = params[0]
        return lambda p: (f"the input carry component {name}{keystr(p)}" if p
                          else f"the input carry {name}")
    return lambda p: f"the input carry at path {keystr(p)}" if p else "the input carry"


def _check_carry_type(f, init, init_tree, out_tree, out_avals):
    """JAX's check that the carry output matches the input in structure and types."""
    component = _carry_component(f)
    if init_tree != out_tree:
        try:
            out_carry = tree_unflatten(out_tree, out_avals)
        except Exception:  # noqa: BLE001 - only used to describe the difference
            out_carry = None
        if out_carry is None:
            differences = (f"the input tree structure is:\n{init_tree}\n\n"
                           f"the output tree structure is:\n{out_tree}\n")
        else:
            diffs = [f"{component(path)} is a {t1} but the corresponding component of the "
                     f"carry output is a {t2}, so {why}"
                     for path, t1, t2, why in _equality_errors((), init, out_carry)]
            differences = _join_differences(diffs)
        raise TypeError(
            "scan body function carry input and carry output must have the same pytree "
            f"structure, but they differ:\n\n{differences}\nRevise the function so that the "
            "carry output has the same pytree structure as the carry input.")
    pairs, _ = tree_flatten_with_path(init)
    in_avals = [core.get_aval(x) for _, x in pairs]
    diffs = [f"{component(path)} has type {a.str_short(short_dtypes=False)} but the "
             f"corresponding output carry component has type "
             f"{b.str_short(short_dtypes=False)}{_aval_mismatch_extra(a, b)}"
             for (path, _), a, b in zip(pairs, in_avals, out_avals) if not typematch(a, b)]
    if diffs:
        raise TypeError(
            "scan body function carry input and carry output must have equal types (e.g. "
            f"shapes and dtypes of arrays), but they differ:\n\n{_join_differences(diffs)}\n"
            "Revise the function so that all output types (e.g. shapes and dtypes) match the "
            "corresponding input types.")


def _join_differences(diffs) -> str:
    if len(diffs) == 1:
        return f"{diffs[0][:1].upper()}{diffs[0][1:]}.\n"
    return "".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"


def _aval_mismatch_extra(a, b) -> str:
    dtype_mismatch = a.dtype != b.dtype
    shape_mismatch = a.shape != b.shape
    return (", so " * (dtype_mismatch or shape_mismatch)
            + "the dtypes do not match" * dtype_mismatch
            + " and also " * (dtype_mismatch and shape_mismatch)
            + "the shapes do not match" * shape_mismatch)


def _children(x):
    """(keys, children) of a pytree node one level down."""
    pairs, _ = tree_flatten_with_path(x, is_leaf=lambda y: y is not x)
    return [p[0] for p, _ in pairs], [c for _, c in pairs]


def _is_leaf(x) -> bool:
    leaves, _ = tree_flatten(x)
    return len(leaves) == 1 and leaves[0] is x


def _equality_errors(path, t1, t2):
    """(path, what t1 is, what t2 is, explanation) for each structural difference."""
    if _is_leaf(t1) and _is_leaf(t2):
        return
    if type(t1) is not type(t2):
        yield path, str(type(t1)), str(type(t2)), "their Python types differ"
        return
    if isinstance(t1, (list, tuple)) and len(t1) != len(t2):
        yield (path, f"{type(t1).__name__} of length {len(t1)}",
               f"{type(t2).__name__} of length {len(t2)}", "the lengths do not match")
        return
    k1, c1 = _children(t1)
    k2, c2 = _children(t2)
    if len(c1) != len(c2):
        diff = " ".join(repr(getattr(k, "key", k)) for k in set(k1).symmetric_difference(k2))
        yield (path, f"{type(t1)} with {len(c1)} child{'ren' if len(c1) > 1 else ''}",
               f"{type(t2)} with {len(c2)} child{'ren' if len(c2) > 1 else ''}",
               "the numbers of children do not match"
               + (diff and f", with the symmetric difference of key sets: {{{diff}}}"))
        return
    if k1 != k2:
        yield (path, f"{type(t1)} with keys {k1}", f"{type(t2)} with keys {k2}",
               "the pytree node metadata does not match")
        return
    for k, a, b in zip(k1, c1, c2):
        yield from _equality_errors((*path, k), a, b)
