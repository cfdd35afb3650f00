"""Windowed reductions (``reduce_window`` and its sum/max/min monoids), the two window
primitives of max pooling's derivatives (``select_and_gather_add``, ``select_and_scatter_add``)
and the general reduction ``reduce`` with a Python computation.

As in JAX:

- ``lax.reduce_window(operand, init_value, computation, ...)`` binds ``reduce_window_sum`` /
  ``reduce_window_max`` / ``reduce_window_min`` when ``computation`` is ``lax.add`` /
  ``lax.max`` / ``lax.min`` and ``init_value`` is that monoid's (concrete) identity; any other
  computation is traced to a scalar jaxpr and bound as the variadic ``reduce_window``
  (operands and init values are matching pytrees). Padding and base-dilation holes hold the
  init value.
- ``select_and_gather_add(tangents, operand)`` picks, per window, the tangent at the
  operand's first maximum (``select_prim=ge``) or minimum (``le``): the JVP of max/min
  pooling. ``select_and_scatter_add(source, operand)`` adds each source element into the
  operand position its window selects: the transpose of the former (max pooling's VJP).
- ``lax.reduce(operands, init_values, computation, dimensions)`` binds ``reduce_sum`` /
  ``reduce_prod`` / ``reduce_max`` / ``reduce_min`` / ``reduce_and`` / ``reduce_or`` /
  ``reduce_xor`` for the common monoids with their identity, else ``reduce`` holding the
  traced computation. ``reduce`` is of family WINDOW (a reduction whose window is whole
  dimensions, with a sub-jaxpr; the fusion planner keeps it alone).
"""
from __future__ import annotations

import builtins
import functools

from functrax import core
from functrax.core.tracing import trace_to_jaxpr
from functrax.primitives import elementwise as _ew
from functrax.primitives import reductions as _red
from functrax.primitives.define import (
    ANY, NUMBER, Family, ShapedArray, check_axes, check_dtype, dtypes, new_primitive, np,
)
from functrax.primitives.elementwise import convert_element_type, ge_p, le_p
from functrax.tree_util import tree_flatten, tree_unflatten

# --- shapes ---


def _check_shapelike(fun_name, arg_name, obj, non_zero_shape=False):
    """``obj`` is a sequence of integers (>= 1 with ``non_zero_shape``, else >= 0)."""
    if not isinstance(obj, (tuple, list, np.ndarray)):
        raise TypeError(f"{fun_name} {arg_name} must be of type tuple/list/ndarray, got "
                        f"{type(obj)}.")
    if not len(obj):
        return
    arr = np.array(obj)
    if arr.ndim != 1:
        raise TypeError(f"{fun_name} {arg_name} must be 1-dimensional, got {arr.ndim}.")
    if arr.dtype.kind not in "iu" and not all(isinstance(d, (int, np.integer)) for d in obj):
        raise TypeError(f"{fun_name} {arg_name} must have every element be an integer type, "
                        f"got {tuple(map(type, obj))}.")
    lower, bound = (1, "strictly positive") if non_zero_shape else (0, "nonnegative")
    if not all(d >= lower for d in arr):
        raise TypeError(f"{fun_name} {arg_name} must have every element be {bound}, got "
                        f"{obj}.")


def _dilate_shape(shape, dilation):
    """The size of each dimension with ``dilation - 1`` holes between its elements."""
    if not all(d > 0 for d in dilation):
        raise TypeError(f"All dilations must be positive, got {tuple(dilation)}.")
    dilation = (1,) * (len(shape) - len(dilation)) + tuple(dilation)
    return tuple(builtins.max(0, 1 + k * (d - 1)) for d, k in zip(shape, dilation))


def _pairs(name, padding, n):
    """``padding`` as a tuple of ``n`` (low, high) int pairs (a clear error otherwise)."""
    try:
        pads = tuple((int(lo), int(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: padding must be 'VALID', 'SAME', 'SAME_LOWER' or a sequence "
                        f"of (low, high) integer pairs, got {padding!r}") from None
    if len(pads) != n:
        raise TypeError(f"{name} got inconsistent padding and window_dimensions: got padding "
                        f"{pads} and window_dimensions of length {n} (one (low, high) pair "
                        "per dimension).")
    return pads


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None):
    """The output shape of a windowed reduction.

    Args:
      operand_shape: the operand's shape.
      window_dimensions, window_strides: the window's size and step per dimension.
      padding: (low, high) per dimension, applied after base dilation.
      base_dilation, window_dilation: optional dilations (None: 1 everywhere).

    Returns:
      a tuple: ``(padded - dilated_window) // stride + 1`` per dimension (at least 0).

    >>> reduce_window_shape_tuple((6, 5), (2, 2), (2, 1), ((0, 0), (1, 0)))
    (3, 5)
    """
    if base_dilation is not None:
        operand_shape = _dilate_shape(operand_shape, base_dilation)
    if window_dilation is not None:
        window_dimensions = _dilate_shape(window_dimensions, window_dilation)
    padded = tuple(d + lo + hi for d, (lo, hi) in zip(operand_shape, padding))
    return tuple(builtins.max(0, (d - w) // s + 1)
                 for d, w, s in zip(padded, window_dimensions, window_strides))


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """Convert a padding string (``'VALID'``, ``'SAME'``, ``'SAME_LOWER'``) to (low, high)
    pairs; ``SAME`` puts the extra element of an odd total at the end, ``SAME_LOWER`` at the
    start.

    Raises:
      RuntimeError: for an unknown padding string.

    >>> padtype_to_pads((5,), (2,), (2,), "SAME")
    [(0, 1)]
    """
    if not isinstance(padding, str):
        raise TypeError(f"Unknown padding type: {padding}.")
    kind = padding.upper()
    if kind not in ("VALID", "SAME", "SAME_LOWER"):
        raise RuntimeError(f"Unrecognized padding type: expected 'VALID' or 'SAME', got "
                           f"{padding}.")
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    out = [-(-int(d) // int(s)) for d, s in zip(in_shape, window_strides)]
    sizes = [builtins.max(0, (o - 1) * int(s) + int(w) - int(d))
             for o, s, w, d in zip(out, window_strides, window_shape, in_shape)]
    if kind == "SAME":
        return [(p // 2, p - p // 2) for p in sizes]
    return [(p - p // 2, p // 2) for p in sizes]


def _common_shape_rule(operand, window_dimensions, window_strides, padding, base_dilation,
                       window_dilation):
    _check_shapelike("reduce_window", "window_dimensions", window_dimensions,
                     non_zero_shape=True)
    _check_shapelike("reduce_window", "window_strides", window_strides, non_zero_shape=True)
    _check_shapelike("reduce_window", "base_dilation", base_dilation)
    _check_shapelike("reduce_window", "window_dilation", window_dilation)
    if operand.ndim != len(window_dimensions):
        raise TypeError(f"reduce_window got the wrong number of window_dimensions for operand: "
                        f"got operand shape {operand.shape} with window_dimensions "
                        f"{window_dimensions}.")
    for name, v in (("window_strides", window_strides), ("base_dilation", base_dilation),
                    ("window_dilation", window_dilation)):
        if len(v) != len(window_dimensions):
            raise TypeError(f"reduce_window got inconsistent {name} and window_dimensions: got "
                            f"{name} {v} and window_dimensions {window_dimensions}.")
    if len(padding) != len(window_dimensions):
        raise TypeError(f"reduce_window got inconsistent padding and window_dimensions: got "
                        f"padding {padding} and window_dimensions {window_dimensions}.")
    return reduce_window_shape_tuple(operand.shape, window_dimensions, window_strides, padding,
                                     base_dilation, window_dilation)


# --- the monoid windowed reductions ---


def _monoid_window(name, accepted):
    p = new_primitive(name, family=Family.WINDOW)

    def abstract_eval(x, *, window_dimensions, window_strides, padding, base_dilation,
                      window_dilation):
        if accepted is NUMBER and not (dtypes.is_inexact(x.dtype) or x.dtype.kind in "iu"):
            raise TypeError(f"operand to {name} must have a number dtype, got "
                            f"{np.dtype(x.dtype).name}")
        check_dtype(name, x.dtype, accepted)
        shape = _common_shape_rule(x, window_dimensions, window_strides, padding,
                                   base_dilation, window_dilation)
        return ShapedArray(shape, x.dtype, x.weak_type)

    p.def_abstract_eval(abstract_eval)
    return p


reduce_window_sum_p = _monoid_window("reduce_window_sum", NUMBER)
reduce_window_max_p = _monoid_window("reduce_window_max", ANY)
reduce_window_min_p = _monoid_window("reduce_window_min", ANY)


def _window_params(n, window_strides, padding, base_dilation, window_dilation):
    ones = (1,) * n
    return dict(window_strides=ones if window_strides is None else _ints(window_strides),
                padding=tuple((int(lo), int(hi)) for lo, hi in padding),
                base_dilation=ones if base_dilation is None else _ints(base_dilation),
                window_dilation=ones if window_dilation is None else _ints(window_dilation))


def _ints(xs):
    return tuple(int(x) for x in xs)


def _monoid_op(prim):
    def op(operand, window_dimensions, window_strides, padding, base_dilation=None,
           window_dilation=None):
        wd = _ints(window_dimensions)
        return prim.bind(operand, window_dimensions=wd, **_window_params(
            len(wd), window_strides, padding, base_dilation, window_dilation))
    op.__name__ = prim.name
    op.__doc__ = (f"``{prim.name}`` of ``operand`` over windows (binds the primitive; "
                  "``padding`` is explicit (low, high) pairs).")
    return op


reduce_window_sum = _monoid_op(reduce_window_sum_p)
reduce_window_max = _monoid_op(reduce_window_max_p)
reduce_window_min = _monoid_op(reduce_window_min_p)

# --- the general (variadic) windowed reduction ---

reduce_window_p = new_primitive("reduce_window", multiple_results=True, family=Family.WINDOW)


@reduce_window_p.def_abstract_eval
def _reduce_window_abstract(*avals, jaxpr, consts, window_dimensions, window_strides, padding,
                            base_dilation, window_dilation):
    operands, inits = avals[:len(avals) // 2], avals[len(avals) // 2:]
    if any(o.dtype != i.dtype for o, i in zip(operands, inits)):
        raise TypeError(f"reduce_window got inconsistent dtypes for operands and init_values: "
                        f"got operand dtypes {[o.dtype for o in operands]} and init_value "
                        f"dtypes {[i.dtype for i in inits]}.")
    if any(i.shape != () for i in inits):
        raise TypeError(f"reduce_window expected init_values to be scalars but init_values "
                        f"have shapes {[i.shape for i in inits]}.")
    if len({o.shape for o in operands}) > 1:
        raise TypeError(f"reduce_window operands must all have the same shape, got "
                        f"{[o.shape for o in operands]}.")
    shape = _common_shape_rule(operands[0], window_dimensions, window_strides, padding,
                               base_dilation, window_dilation)
    return [ShapedArray(shape, o.dtype) for o in operands]


def _concrete(x):
    """The value of ``x`` if it is known now (not an abstract tracer), else None."""
    if isinstance(x, core.Tracer):
        return x.to_concrete_value()
    return x._value if type(x) is core.Array else np.asarray(x)


def _max_identity(dtype):
    dtype = np.dtype(dtype)
    if dtypes.is_inexact(dtype):
        return np.array(-np.inf, dtype)
    return np.array(False if dtype == np.bool_ else np.iinfo(dtype).min, dtype)


def _min_identity(dtype):
    dtype = np.dtype(dtype)
    if dtypes.is_inexact(dtype):
        return np.array(np.inf, dtype)
    return np.array(True if dtype == np.bool_ else np.iinfo(dtype).max, dtype)


def _is_identity(val, identity) -> bool:
    return bool(np.equal(np.asarray(val), identity))


def _monoid_window_reducer(computation, flat_inits):
    """The monoid reduce_window_* for ``computation`` with its concrete identity, or None."""
    if len(flat_inits) != 1:
        return None
    x, = flat_inits
    val = _concrete(x)
    if val is None or np.shape(val) != ():
        return None
    dtype = core.get_aval(x).dtype
    if computation is _ew.add:
        return reduce_window_sum if _is_identity(val, 0) else None
    if computation is _ew.max:
        return reduce_window_max if _is_identity(val, _max_identity(dtype)) else None
    if computation is _ew.min:
        return reduce_window_min if _is_identity(val, _min_identity(dtype)) else None
    return None


def _trace_reduction(name, computation, flat_avals, tree):
    """``(ClosedJaxpr, out_tree)`` of ``computation(x, y)`` on scalars of ``flat_avals``
    arranged as ``tree`` (memoized, as JAX does, per computation and avals)."""
    key = (name, computation, tuple(flat_avals), tree)
    try:
        hash(key)
    except TypeError:  # an unhashable callable object: traced every time
        return _trace_reduction_uncached(*key)
    return _trace_reduction_cached(*key)


def _trace_reduction_uncached(name, computation, flat_avals, tree):
    box = {}

    def flat_fun(*args):
        n = len(args) // 2
        x, y = tree_unflatten(tree, args[:n]), tree_unflatten(tree, args[n:])
        outs, box["tree"] = tree_flatten(computation(x, y))
        return outs

    closed = trace_to_jaxpr(flat_fun, list(flat_avals) * 2)
    if any(isinstance(c, core.Tracer) for c in closed.consts):
        raise NotImplementedError(
            f"Reduction computations can't close over Tracers: the computation of {name} "
            "reads a traced value of an enclosing transformation. Pass that value as an "
            "operand (with its own init value) instead of closing over it.")
    outs = closed.jaxpr.out_avals
    if len(outs) == len(flat_avals) and any(
            o.shape != () or o.dtype != a.dtype for o, a in zip(outs, flat_avals)):
        raise TypeError(f"{name}: computation must return scalars of the operand dtypes "
                        f"{[a.dtype.name for a in flat_avals]}, got "
                        f"{[o.str_short() for o in outs]}")
    return closed, box["tree"]


_trace_reduction_cached = functools.lru_cache(maxsize=512)(_trace_reduction_uncached)


def _flatten_matching(name, operands, init_values):
    flat_ops, op_tree = tree_flatten(operands)
    flat_inits, init_tree = tree_flatten(init_values)
    if op_tree != init_tree:
        raise ValueError(f"Operands must have the same tree structure as init_values: "
                         f"{op_tree} vs. {init_tree}")
    if len(flat_ops) != len(flat_inits):
        raise ValueError(f"Must have same total number of operands as init_values:  "
                         f"{len(flat_ops)} vs. {len(flat_inits)}")
    if not flat_ops:
        raise ValueError(f"{name} must have at least one operand.")
    return flat_ops, flat_inits, op_tree


def _init_aval(x):
    return core.get_aval(x).strip_weak_type()


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
    """Reduction of ``operand`` over (padded, dilated) windows with ``computation``.

    Args:
      operand: an array, or a pytree of arrays of one shape (a variadic reduction).
      init_value: scalar(s) of the operands' dtypes, in the same pytree structure: the
        reduction's identity, also the value of padding and of base-dilation holes.
      computation: ``f(x, y) -> z`` on scalars (pytrees like ``operand``). ``lax.add`` /
        ``lax.max`` / ``lax.min`` with their identity bind ``reduce_window_sum`` / ``_max`` /
        ``_min``; anything else is traced and bound as ``reduce_window``.
      window_dimensions: the window's size per dimension (all >= 1).
      window_strides: its step per dimension (default 1).
      padding: ``'VALID'``, ``'SAME'``, ``'SAME_LOWER'`` or (low, high) pairs.
      base_dilation, window_dilation: dilations of the operand and of the window.

    Returns:
      the reduced array(s), of shape :func:`reduce_window_shape_tuple`.

    Raises:
      ValueError: operand and init_value trees differ, or the computation's output tree does.
      TypeError: bad window parameters, dtypes, or non-scalar init values.

    >>> import functrax.numpy as fnp
    >>> from functrax import lax
    >>> lax.reduce_window(fnp.arange(6.0), 0.0, lax.add, (2,), (2,), "VALID")
    Array([1., 5., 9.], dtype=float32)
    """
    flat_ops, flat_inits, op_tree = _flatten_matching("reduce_window", operand, init_value)
    wd = _ints(window_dimensions)
    if isinstance(padding, str):
        dilated = wd if window_dilation is None else _dilate_shape(wd, window_dilation)
        strides = (1,) * len(wd) if window_strides is None else window_strides
        padding = padtype_to_pads(core.get_aval(flat_ops[0]).shape, dilated, strides, padding)
    padding = _pairs("reduce_window", padding, len(wd))
    params = _window_params(len(wd), window_strides, padding, base_dilation, window_dilation)
    monoid = _monoid_window_reducer(computation, flat_inits)
    if monoid is not None:
        return monoid(flat_ops[0], wd, **params)
    avals = [_init_aval(x) for x in flat_inits]
    if any(a.shape != () for a in avals):  # before tracing: the computation takes scalars
        raise TypeError(f"reduce_window expected init_values to be scalars but init_values "
                        f"have shapes {[a.shape for a in avals]}.")
    closed, out_tree = _trace_reduction("reduce_window", computation, avals, op_tree)
    if out_tree != op_tree:
        raise ValueError(f"reduce_window output must have the same tree structure as the "
                         f"operands {op_tree} vs. {out_tree}")
    outs = reduce_window_p.bind(*flat_ops, *flat_inits, jaxpr=closed.jaxpr,
                                consts=tuple(closed.consts), window_dimensions=wd, **params)
    return tree_unflatten(op_tree, outs)


# --- max pooling's derivatives ---


def _select_prim_check(name, select_prim):
    if select_prim is not ge_p and select_prim is not le_p:
        raise TypeError(f"{name}: select_prim must be lax.ge_p or lax.le_p, got "
                        f"{select_prim!r}")


select_and_gather_add_p = new_primitive("select_and_gather_add", family=Family.WINDOW)


@select_and_gather_add_p.def_abstract_eval
def _select_and_gather_add_abstract(tangents, operand, *, select_prim, window_dimensions,
                                    window_strides, padding, base_dilation, window_dilation):
    _select_prim_check("select_and_gather_add", select_prim)
    if tangents.shape != operand.shape:
        raise TypeError(f"select_and_gather_add tangents and operand shapes must match, got "
                        f"{tangents.shape} and {operand.shape}.")
    shape = _common_shape_rule(operand, window_dimensions, window_strides, padding,
                               base_dilation, window_dilation)
    return ShapedArray(shape, tangents.dtype, tangents.weak_type)


select_and_scatter_add_p = new_primitive("select_and_scatter_add", family=Family.WINDOW)


@select_and_scatter_add_p.def_abstract_eval
def _select_and_scatter_add_abstract(source, operand, *, select_prim, window_dimensions,
                                     window_strides, padding):
    _select_prim_check("select_and_scatter_add", select_prim)
    ones = (1,) * len(window_dimensions)
    want = _common_shape_rule(operand, window_dimensions, window_strides, padding, ones, ones)
    if source.shape != want:
        raise TypeError(f"select_and_scatter_add: source must have the shape of the windowed "
                        f"reduction of the operand {operand.shape}, {want}; got "
                        f"{source.shape}.")
    return ShapedArray(operand.shape, source.dtype, source.weak_type)


def select_and_gather_add(tangents, operand, select_prim, window_dimensions, window_strides,
                          padding, base_dilation, window_dilation):
    """The element of ``tangents`` at the first max (``ge_p``) / min (``le_p``) of each window
    of ``operand`` (the JVP of ``reduce_window_max`` / ``_min``)."""
    wd = _ints(window_dimensions)
    return select_and_gather_add_p.bind(tangents, operand, select_prim=select_prim,
                                        window_dimensions=wd, **_window_params(
                                            len(wd), window_strides, padding, base_dilation,
                                            window_dilation))


def select_and_scatter_add(source, operand, select_prim, window_dimensions, window_strides,
                           padding):
    """Zeros of ``operand``'s shape with each element of ``source`` added at the position its
    window of ``operand`` selects (the transpose of :func:`select_and_gather_add`)."""
    return select_and_scatter_add_p.bind(
        source, operand, select_prim=select_prim, window_dimensions=_ints(window_dimensions),
        window_strides=_ints(window_strides),
        padding=tuple((int(lo), int(hi)) for lo, hi in padding))


# --- the general reduction ---

reduce_p = new_primitive("reduce", multiple_results=True, family=Family.WINDOW)


@reduce_p.def_abstract_eval
def _reduce_abstract(*avals, computation, jaxpr, dimensions):
    operands, inits = avals[:len(avals) // 2], avals[len(avals) // 2:]
    if any(i.shape != () for i in inits):
        raise ValueError(f"reduce found non-scalar initial value: {[i.shape for i in inits]}")
    if [o.dtype for o in operands] != [i.dtype for i in inits]:
        raise TypeError(f"reduce operand dtypes should match corresponding initial value "
                        f"dtypes, got operands={list(operands)} and "
                        f"initial_values={list(inits)}")
    if len({o.shape for o in operands}) > 1:
        raise TypeError(f"reduce operands must all have the same shape, got "
                        f"{[o.shape for o in operands]}")
    dims = check_axes("reduce", dimensions, operands[0].ndim, "dimensions")
    shape = tuple(d for i, d in enumerate(operands[0].shape) if i not in dims)
    return [ShapedArray(shape, o.dtype, o.weak_type) for o in operands]


def _is_intlike(dtype) -> bool:
    return np.dtype(dtype) == np.bool_ or np.dtype(dtype).kind in "iu"


def _monoid_reducer(computation, flat_inits):
    """The reduce_* primitive wrapper for ``computation`` with its identity, or None."""
    if len(flat_inits) != 1:
        return None
    x, = flat_inits
    val = _concrete(x)
    if val is None or np.shape(val) != ():
        return None
    dtype = core.get_aval(x).dtype
    table = [(_ew.add, 0, _red.reduce_sum), (_ew.mul, 1, _red.reduce_prod),
             (_ew.max, _max_identity(dtype), _red.reduce_max),
             (_ew.min, _min_identity(dtype), _red.reduce_min)]
    if _is_intlike(dtype):  # bitwise monoids: or / xor with 0, and with all bits set
        zero = np.zeros((), dtype)
        table += [(_ew.bitwise_or, zero, _red.reduce_or), (_ew.bitwise_xor, zero,
                                                           _red.reduce_xor),
                  (_ew.bitwise_and, ~zero, _red.reduce_and)]
    for op, identity, reducer in table:
        if computation is op:
            return reducer if _is_identity(val, identity) else None
    return None


def reduce(operands, init_values, computation, dimensions, out_sharding=None):
    """Reduce ``operands`` over ``dimensions`` with ``computation`` (XLA's Reduce).

    ``init_values`` and ``computation`` must form a monoid (an identity and an associative
    operation), else the result is undefined. ``lax.add`` / ``lax.mul`` / ``lax.max`` /
    ``lax.min`` (and the bitwise ops on integers) with their identity bind ``reduce_sum`` /
    ``reduce_prod`` / ... as JAX does; other computations are traced and bound as ``reduce``.

    Args:
      operands: an array or a pytree of arrays of one shape.
      init_values: scalars in the same structure, of the operands' dtypes.
      computation: ``f(x, y) -> z`` on scalar pytrees like ``operands``.
      dimensions: the dimensions to reduce.
      out_sharding: accepted for JAX's signature; must be None.

    Returns:
      the reduced array(s), in the structure of ``operands``.

    >>> import functrax.numpy as fnp
    >>> from functrax import lax
    >>> lax.reduce(fnp.arange(6.0).reshape(2, 3), 0.0, lax.add, (1,))
    Array([ 3., 12.], dtype=float32)
    """
    if out_sharding is not None:
        raise NotImplementedError("lax.reduce: out_sharding is not supported by functrax "
                                  "(pass out_sharding=None)")
    flat_ops, flat_inits, op_tree = _flatten_matching("reduce", operands, init_values)
    dims = _ints(dimensions)
    monoid = _monoid_reducer(computation, flat_inits)
    if monoid is not None:
        out = monoid(flat_ops[0], dims)
        weak = core.get_aval(flat_ops[0]).weak_type and core.get_aval(flat_inits[0]).weak_type
        if core.get_aval(out).weak_type and not weak:
            out = convert_element_type(out, core.get_aval(out).dtype, weak_type=False)
        return tree_unflatten(op_tree, [out])
    avals = [_init_aval(x) for x in flat_inits]
    if any(a.shape != () for a in avals):  # before tracing: the computation takes scalars
        raise ValueError(f"reduce found non-scalar initial value: {[a.shape for a in avals]}")
    closed, out_tree = _trace_reduction("reduce", computation, avals, op_tree)
    if out_tree != op_tree:
        raise ValueError(f"reduce output must have the same tree structure as the operands "
                         f"{op_tree} vs. {out_tree}")
    outs = reduce_p.bind(*flat_ops, *flat_inits, computation=computation, jaxpr=closed,
                         dimensions=dims)
    return tree_unflatten(op_tree, outs)


__all__ = [
    "reduce_window_sum_p", "reduce_window_max_p", "reduce_window_min_p", "reduce_window_p",
    "select_and_gather_add_p", "select_and_scatter_add_p", "reduce_p", "reduce_window",
    "reduce_window_sum", "reduce_window_max", "reduce_window_min", "reduce_window_shape_tuple",
    "padtype_to_pads", "select_and_gather_add", "select_and_scatter_add", "reduce",
]
