"""``while_loop`` and ``fori_loop``: the ``while`` primitive and its public wrappers.

``while_loop(cond_fun, body_fun, init_val)`` traces ``cond_fun`` and ``body_fun`` on the
carry's abstract values and binds ``while`` with params ``cond_jaxpr``, ``cond_nconsts``,
``body_jaxpr`` and ``body_nconsts``: values the functions close over (arrays, tracers of
enclosing transforms) are hoisted as leading operands, ``cond_nconsts`` of them for the
condition, then ``body_nconsts`` for the body, then the carry::

    while[cond_jaxpr=... body_jaxpr=...] *cond_consts *body_consts *carry

``fori_loop`` with concrete bounds lowers to ``scan`` (so reverse mode works); with traced
bounds to ``while`` over the carry ``(i, upper, x)``. ``while_loop(..., max_steps=N)``
(beyond JAX) is a bounded loop: a ``scan`` of ``N`` masked steps, reverse-differentiable.

The rules of ``while`` in every table (numpy backend, jvp, partial evaluation, transpose,
vmap) live in ``loops_rules.py``.
"""
from __future__ import annotations

import inspect
import operator
import weakref
from typing import NamedTuple

from functrax import core, dtypes
from functrax import primitives as P
from functrax.config import config
from functrax.core import ClosedJaxpr
from functrax.errors import ConcretizationTypeError
from functrax.primitives.control_flow import while_p
from functrax.core.tracing import make_debug_info
from functrax.transforms.call_util import cached_trace, trace_subjaxpr
from functrax.tree_util import (
    keystr, tree_flatten, tree_flatten_with_path, tree_map, tree_unflatten, treedef_is_leaf,
)

__all__ = ["while_loop", "fori_loop", "while_p"]



# --- abstract evaluation ---


# --- tracing the user's functions ---


class _Loop(NamedTuple):
    """A traced loop: flat initial carry, its tree, and the closure-converted jaxprs."""
    init_vals: list
    tree: object
    cond: ClosedJaxpr
    cond_consts: list
    body: ClosedJaxpr
    body_consts: list

    def bind(self, init_vals=None):
        init = self.init_vals if init_vals is None else init_vals
        return while_p.bind(*self.cond_consts, *self.body_consts, *init,
                            cond_nconsts=len(self.cond_consts), cond_jaxpr=self.cond,
                            body_nconsts=len(self.body_consts), body_jaxpr=self.body)


def _trace_fun(fun, init_val, traced_for):
    """(closure-converted jaxpr, consts, out_tree) of ``fun(init_val)``. Eager calls are
    memoized per ``fun``, carry structure and avals (``call_util.cached_trace``, as JAX
    caches its traces)."""
    leaves, in_tree = tree_flatten((init_val,))
    avals = tuple(core.get_aval(x) for x in leaves)

    def make():
        info = make_debug_info(fun, (init_val,), {}, traced_for)
        closed, consts, _, _, out_tree = trace_subjaxpr(fun, (init_val,), info)
        return closed, consts, out_tree

    return cached_trace((fun,), (traced_for, in_tree, avals), make, lambda r: r[1])


def _check_cond(cond, cond_tree):
    if not treedef_is_leaf(cond_tree) or len(cond.out_avals) != 1:
        raise TypeError(f"cond_fun must return a boolean scalar, but got pytree {cond_tree}.")
    pred = cond.out_avals[0]
    if pred.shape != () or pred.dtype.kind != "b":
        raise TypeError(f"cond_fun must return a boolean scalar, but got output type(s) "
                        f"{cond.out_avals}.")


def _trace_both(cond_fun, body_fun, init_val):
    cond, cond_consts, cond_tree = _trace_fun(cond_fun, init_val, "while_cond")
    body, body_consts, body_tree = _trace_fun(body_fun, init_val, "while_body")
    _check_cond(cond, cond_tree)
    return cond, cond_consts, body, body_consts, body_tree


def _promote_weak_typed_inputs(vals, in_avals, out_avals):
    """Weakly-typed initial values (Python scalars) whose type differs from the body's output
    take the promoted type (as JAX), so ``while_loop(c, lambda x: x + 0.5, 0)`` works."""
    if len(vals) != len(out_avals):
        return vals, False
    changed = False
    vals = list(vals)
    for i, (a, o) in enumerate(zip(in_avals, out_avals)):
        if a.weak_type and not core.typematch(a, o):
            dt, _ = dtypes.result_dtype_and_weak((a.dtype, True), (o.dtype, o.weak_type))
            vals[i] = P.convert_element_type(vals[i], dt)
            changed = True
    return vals, changed


def _trace_loop(cond_fun, body_fun, init_val) -> _Loop:
    """Trace both functions, promote weak initial values, check the carry types."""
    init_vals, tree = tree_flatten(init_val)
    traced = _trace_both(cond_fun, body_fun, init_val)
    in_avals = [core.get_aval(x) for x in init_vals]
    new_vals, changed = _promote_weak_typed_inputs(init_vals, in_avals, traced[2].out_avals)
    # in a shard_map body: a carry the body makes varying is varying from the start
    for _ in range(len(init_vals) + 1):
        new_vals, varied = P.vary_like(new_vals, traced[2].out_avals)
        if not (changed or varied):
            break
        init_val = tree_unflatten(tree, new_vals)
        init_vals = new_vals
        traced = _trace_both(cond_fun, body_fun, init_val)
        changed = False
    cond, cond_consts, body, body_consts, body_tree = traced
    _check_carry(body_fun, init_val, tree, body_tree, body.out_avals)
    return _Loop(init_vals, tree, cond, cond_consts, body, body_consts)


def _carry_name(fun):
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        return None
    return params[0] if params else None


def _check_carry(body_fun, init_val, in_tree, out_tree, out_avals):
    """JAX's texts for a body whose output carry differs from its input carry."""
    if in_tree != out_tree:
        raise TypeError(f"body_fun output and input must have same type structure, got "
                        f"{out_tree} and {in_tree}.")
    leaves = tree_flatten_with_path(init_val)[0]
    in_avals = [core.get_aval(x) for _, x in leaves]
    if all(map(core.typematch, in_avals, out_avals)):
        return
    diff = tree_unflatten(in_tree, [
        repr(o) if core.typematch(i, o) else f"DIFFERENT {o!r} vs. {i!r}"
        for i, o in zip(in_avals, out_avals)])
    name = _carry_name(body_fun)
    lines = []
    for (path, _), i, o in zip(leaves, in_avals, out_avals):
        if core.typematch(i, o):
            continue
        where = (f"the input carry component {name}{keystr(path)}" if name
                 else f"the input carry at path {keystr(path) or '()'}")
        lines.append(f"  * {where} has type {i.str_short()} but the corresponding output "
                     f"carry component has type {o.str_short()}")
    raise TypeError(
        f"body_fun output and input must have identical types, got\n{diff}.\n"
        + ";\n".join(lines) + ".\nRevise body_fun so that all output types (shapes and "
        "dtypes) match the corresponding input types (e.g. cast with .astype).")


# --- public API ---


def while_loop(cond_fun, body_fun, init_val, *, max_steps=None):
    """Call ``body_fun`` repeatedly while ``cond_fun`` is true (``lax.while_loop``).

    Semantics (the carry keeps one fixed type: pytree structure, shapes and dtypes)::

        def while_loop(cond_fun, body_fun, init_val):
            val = init_val
            while cond_fun(val):
                val = body_fun(val)
            return val

    Args:
      cond_fun: ``carry -> bool[]`` (a boolean scalar).
      body_fun: ``carry -> carry``.
      init_val: the initial carry (a pytree of arrays / scalars).
      max_steps: (beyond JAX) None for an unbounded loop, which supports forward-mode
        differentiation and vmap but not reverse mode (as JAX). An int ``N`` makes a
        bounded loop, lowered to a ``scan`` of ``N`` steps carrying ``(done, val)``: a step
        after ``cond_fun`` turned false keeps ``val`` (``select``), so the result equals the
        unbounded loop whenever that finishes within ``N`` iterations, and reverse mode
        works (the scan stores one carry per step; wrap ``body_fun`` in ``checkpoint`` to
        recompute its intermediates instead of storing them). A loop still running after
        ``N`` iterations stops there and returns the value after ``N`` calls of
        ``body_fun``. Every step evaluates ``body_fun``, also after the loop finished; if
        ``body_fun`` produces inf/NaN on a finished value, its gradient may be NaN (guard
        the body, e.g. with ``jnp.where`` on its inputs).

    Returns:
      The final carry, with the structure and types of ``init_val``.

    Raises:
      TypeError: if ``cond_fun`` does not return a boolean scalar, or ``body_fun``'s output
        carry differs from its input carry in structure or types.

    >>> import functrax.numpy as fnp
    >>> while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, fnp.float32(1)))
    (Array(3, dtype=int32, weak_type=True), Array(8., dtype=float32))
    """
    if not (callable(body_fun) and callable(cond_fun)):
        raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable.")
    if max_steps is not None:
        return _bounded_while_loop(cond_fun, body_fun, init_val, max_steps)
    if config.disable_jit:
        try:
            return _python_while_loop(cond_fun, body_fun, init_val)
        except ConcretizationTypeError:
            pass  # a transform's tracer decides the condition: stage the primitive instead
    loop = _trace_loop(cond_fun, body_fun, init_val)
    return tree_unflatten(loop.tree, loop.bind())


def _python_while_loop(cond_fun, body_fun, init_val):
    val = tree_map(core.as_array, init_val)
    while cond_fun(val):
        val = tree_map(core.as_array, body_fun(val))
    return val


def _bounded_while_loop(cond_fun, body_fun, init_val, max_steps):
    """``max_steps`` masked steps of a scan carrying ``(done, val)``."""
    try:
        n = operator.index(max_steps)
    except TypeError:
        raise TypeError(f"while_loop: max_steps must be None or a non-negative Python int, "
                        f"got {max_steps!r} of type {type(max_steps).__name__}.") from None
    if n < 0:
        raise ValueError(f"while_loop: max_steps must be non-negative, got {n}.")
    from functrax.control_flow.scan import scan
    loop = _trace_loop(cond_fun, body_fun, init_val)

    def step(carry, _):
        done, vals = carry
        pred, = core.eval_jaxpr(loop.cond.jaxpr, (), *loop.cond_consts, *vals)
        go = P.bitwise_and(P.bitwise_not(done), pred)
        new = core.eval_jaxpr(loop.body.jaxpr, (), *loop.body_consts, *vals)
        return (P.bitwise_not(go), [P.select(go, a, b) for a, b in zip(new, vals)]), None

    (_, vals), _ = scan(step, (False, list(loop.init_vals)), None, length=n)
    return tree_unflatten(loop.tree, vals)


# --- fori_loop ---


def _fori_cond_fun(loop_carry):
    i, upper, _ = loop_carry
    return P.lt(i, upper)


# fori_loop's wrappers of a body_fun, made once per body_fun (as JAX) so that the traces of
# the wrappers are cached too; a wrapper holds its body_fun weakly (never keeps it alive)
_fori_wrappers: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _fori_wrapper(body_fun, make, kind):
    try:
        per_fun = _fori_wrappers.get(body_fun)
        if per_fun is None:
            per_fun = _fori_wrappers[body_fun] = {}
    except TypeError:  # cannot be weakly referenced or hashed: a fresh wrapper
        return make(lambda: body_fun)
    wrapper = per_fun.get(kind)
    if wrapper is None:
        wrapper = per_fun[kind] = make(weakref.ref(body_fun))
    return wrapper


def _fori_body_fun(body_fun):
    def make(body_ref):
        def while_body_fun(loop_carry):
            i, upper, x = loop_carry
            return P.add(i, 1), upper, body_ref()(i, x)
        return while_body_fun
    return _fori_wrapper(body_fun, make, "while")


def _fori_scan_body_fun(body_fun):
    def make(body_ref):
        def scanned_fun(loop_carry, _):
            i, x = loop_carry
            return (i + 1, body_ref()(i, x)), None
        return scanned_fun
    return _fori_wrapper(body_fun, make, "scan")


def _bound_aval(x, name):
    try:
        return core.get_aval(x)
    except TypeError:
        raise TypeError(f"fori_loop: {name} must be an integer scalar (Python int or integer "
                        f"array), got {x!r} of type {type(x).__name__}.") from None


def _bounds_dtype(lower, upper):
    la, ua = _bound_aval(lower, "lower"), _bound_aval(upper, "upper")
    if la.dtype == ua.dtype:
        return la.dtype
    # as JAX: a weak (Python scalar) signed bound takes the other bound's type
    if la.dtype.kind == "i" and ua.dtype.kind == "i":
        if la.weak_type and not ua.weak_type:
            return ua.dtype
        if ua.weak_type and not la.weak_type:
            return la.dtype
    raise TypeError(f"lower and upper arguments to fori_loop must have equal types, got "
                    f"{la.dtype.name} and {ua.dtype.name}")


def _concrete_value(x):
    if isinstance(x, core.Tracer):
        return x.to_concrete_value()
    return x


def _static_bounds(lower, upper):
    lo, hi = _concrete_value(lower), _concrete_value(upper)
    if lo is None or hi is None:
        return None
    try:
        return int(lo), int(hi)
    except TypeError:
        return None


def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
    """Loop ``i`` from ``lower`` to ``upper`` (``lax.fori_loop``).

    Semantics::

        def fori_loop(lower, upper, body_fun, init_val):
            val = init_val
            for i in range(lower, upper):
                val = body_fun(i, val)
            return val

    With concrete bounds (Python ints, concrete arrays) this is a ``scan`` of
    ``max(upper - lower, 0)`` steps, so reverse-mode differentiation works; with traced
    bounds it is a ``while`` over the carry ``(i, upper, val)`` (forward mode and vmap only).

    Args:
      lower: the first index (inclusive), an integer scalar.
      upper: the end index (exclusive), an integer scalar of the same dtype (a Python int
        adopts the other bound's dtype).
      body_fun: ``(i, val) -> val``.
      init_val: the initial value (a pytree).
      unroll: passed to ``scan`` for concrete bounds; must be None/False/1 otherwise.

    Returns:
      The final value, of the type of ``init_val``.

    >>> fori_loop(0, 4, lambda i, x: x + i, 0.0)
    Array(6., dtype=float32, weak_type=True)
    """
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable.")
    dtype = _bounds_dtype(lower, upper)
    bounds = _static_bounds(lower, upper)
    if bounds is not None:
        if unroll is None:
            unroll = False
        length = max(bounds[1] - bounds[0], 0)
        if config.disable_jit and length == 0:
            return init_val
        from functrax.control_flow.scan import scan
        (_, result), _ = scan(_fori_scan_body_fun(body_fun), (bounds[0], init_val), None,
                              length=length, unroll=unroll)
        return result
    if unroll is not None and unroll is not False and unroll != 1:
        raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are "
                         "statically known.")
    if core.get_aval(lower).dtype != dtype:
        lower = P.convert_element_type(lower, dtype)
    if core.get_aval(upper).dtype != dtype:
        upper = P.convert_element_type(upper, dtype)
    _, _, result = while_loop(_fori_cond_fun, _fori_body_fun(body_fun), (lower, upper, init_val))
    return result


