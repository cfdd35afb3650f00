"""``functrax.lax``: thin wrappers that bind primitives (no implicit broadcasting beyond scalars,
no dtype promotion beyond weak Python scalars).

>>> import functrax.lax as lax
>>> lax.add(1.0, 2.0)
Array(3., dtype=float32, weak_type=True)
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from functrax import core, dtypes
from functrax import primitives as P
from functrax.lowering.numpy import rules as _numpy_backend  # noqa: F401  (eager rules)
from functrax.primitives.gather_scatter import *  # noqa: F401,F403

Array = core.Array


def _operand(x, like=None):
    """Python scalars take the dtype of ``like`` (as weak-typed constants), else their own."""
    if type(x) in (bool, int, float, complex):
        if like is not None and type(like) not in (bool, int, float, complex):
            dt = core.get_aval(like).dtype
            return Array._make(np.asarray(x, dt), core.scalar_aval(dt, type(x) is not bool))
        return x
    return x


def _unary(prim):
    def op(x):
        return prim.bind(_operand(x))
    op.__name__ = prim.name
    op.__doc__ = f"Elementwise ``{prim.name}`` (binds the ``{prim.name}`` primitive)."
    return op


def _binary(prim):
    def op(x, y):
        return prim.bind(_operand(x, y), _operand(y, x))
    op.__name__ = prim.name
    op.__doc__ = f"Elementwise ``{prim.name}`` of operands of equal dtype and shape (or rank-0)."
    return op


neg, sign, abs, floor, ceil = map(_unary, (P.neg_p, P.sign_p, P.abs_p, P.floor_p, P.ceil_p))
exp, exp2, log, log1p, expm1 = map(_unary, (P.exp_p, P.exp2_p, P.log_p, P.log1p_p, P.expm1_p))
tanh, logistic, sqrt, rsqrt, cbrt = map(_unary, (P.tanh_p, P.logistic_p, P.sqrt_p, P.rsqrt_p,
                                                  P.cbrt_p))
sin, cos, tan, asin, acos, atan = map(_unary, (P.sin_p, P.cos_p, P.tan_p, P.asin_p, P.acos_p,
                                                P.atan_p))
sinh, cosh, asinh, acosh, atanh = map(_unary, (P.sinh_p, P.cosh_p, P.asinh_p, P.acosh_p,
                                                P.atanh_p))
erf, erfc, erf_inv, lgamma, digamma = map(_unary, (P.erf_p, P.erfc_p, P.erf_inv_p, P.lgamma_p,
                                                    P.digamma_p))
square, is_finite, bitwise_not = map(_unary, (P.square_p, P.is_finite_p, P.not_p))
real, imag, conj = map(_unary, (P.real_p, P.imag_p, P.conj_p))

add, sub, mul, div, rem, pow = map(_binary, (P.add_p, P.sub_p, P.mul_p, P.div_p, P.rem_p,
                                              P.pow_p))
max, min, atan2, nextafter = map(_binary, (P.max_p, P.min_p, P.atan2_p, P.nextafter_p))
eq, ne, lt, le, gt, ge = map(_binary, (P.eq_p, P.ne_p, P.lt_p, P.le_p, P.gt_p, P.ge_p))
bitwise_and, bitwise_or, bitwise_xor = map(_binary, (P.and_p, P.or_p, P.xor_p))
shift_left, shift_right_arithmetic, shift_right_logical = map(_binary, (
    P.shift_left_p, P.shift_right_arithmetic_p, P.shift_right_logical_p))


def round(x, rounding_method=0):
    """Round to integral values: method 0 away from zero, 1 to nearest even."""
    return P.round_p.bind(x, rounding_method=int(rounding_method))


def integer_pow(x, y: int):
    """``x ** y`` for a static Python int ``y`` (computed by repeated multiplication)."""
    return P.integer_pow_p.bind(x, y=operator.index(y))


def convert_element_type(operand, new_dtype, weak_type: bool = False):
    """Cast ``operand`` to ``new_dtype`` (canonicalized: float64 means float32 unless x64)."""
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    aval = core.get_aval(operand)
    if aval.dtype == new_dtype and aval.weak_type == weak_type and isinstance(
            operand, (core.Tracer, Array)):
        return operand
    return P.convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=bool(weak_type))


def select_n(which, *cases):
    """Select elementwise from ``cases`` by the (bool or int) ``which``."""
    return P.select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
    """``on_true`` where ``pred`` else ``on_false`` (``select_n(pred, on_false, on_true)``)."""
    return P.select_n_p.bind(pred, on_false, on_true)


def clamp(min, x, max):
    return P.clamp_p.bind(_operand(min, x), x, _operand(max, x))


def stop_gradient(x):
    """``x`` with a zero derivative (maps over pytrees; non-float leaves pass unchanged).

    >>> import functrax
    >>> functrax.grad(lambda x: x * stop_gradient(x))(3.0)
    Array(3., dtype=float32, weak_type=True)
    """
    from functrax.tree_util import tree_map

    def stop(v):
        if dtypes.is_inexact(core.get_aval(v).dtype):
            return P.stop_gradient_p.bind(v)
        return v
    return tree_map(stop, x)


# --- reductions ---


def _axes(axes):
    return tuple(int(a) for a in axes)


def reduce_sum(operand, axes):
    return P.reduce_sum_p.bind(operand, axes=_axes(axes))


def reduce_prod(operand, axes):
    return P.reduce_prod_p.bind(operand, axes=_axes(axes))


def reduce_max(operand, axes):
    return P.reduce_max_p.bind(operand, axes=_axes(axes))


def reduce_min(operand, axes):
    return P.reduce_min_p.bind(operand, axes=_axes(axes))


def reduce_and(operand, axes):
    return P.reduce_and_p.bind(operand, axes=_axes(axes))


def reduce_or(operand, axes):
    return P.reduce_or_p.bind(operand, axes=_axes(axes))


def reduce_xor(operand, axes):
    return P.reduce_xor_p.bind(operand, axes=_axes(axes))


def argmax(operand, axis: int, index_dtype=np.int32):
    return P.argmax_p.bind(operand, axes=(int(axis),),
                           index_dtype=dtypes.canonicalize_dtype(index_dtype))


def argmin(operand, axis: int, index_dtype=np.int32):
    return P.argmin_p.bind(operand, axes=(int(axis),),
                           index_dtype=dtypes.canonicalize_dtype(index_dtype))


def _cum(prim):
    def op(operand, axis: int = 0, reverse: bool = False):
        nd = core.get_aval(operand).ndim
        return prim.bind(operand, axis=int(axis) % builtins.max(nd, 1), reverse=bool(reverse))
    op.__name__ = prim.name
    return op


cumsum, cumprod, cummax, cummin, cumlogsumexp = builtins.map(_cum, (
    P.cumsum_p, P.cumprod_p, P.cummax_p, P.cummin_p, P.cumlogsumexp_p))


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sort one array, or a sequence of arrays by the first ``num_keys`` of them."""
    single = not isinstance(operand, (tuple, list))
    ops = [operand] if single else list(operand)
    nd = core.get_aval(ops[0]).ndim
    out = P.sort_p.bind(*ops, dimension=int(dimension) % builtins.max(nd, 1),
                        is_stable=bool(is_stable), num_keys=int(num_keys))
    return out[0] if single else tuple(out)


# --- shape ---


def broadcast_in_dim(operand, shape, broadcast_dimensions):
    shape = tuple(int(d) for d in shape)
    aval = core.get_aval(operand)
    if aval.shape == shape and tuple(broadcast_dimensions) == tuple(range(len(shape))) and \
            isinstance(operand, (core.Tracer, Array)):
        return operand
    return P.broadcast_in_dim_p.bind(operand, shape=shape,
                                     broadcast_dimensions=tuple(broadcast_dimensions))


def broadcast(operand, sizes):
    """Add leading dimensions of the given ``sizes``."""
    nd = core.get_aval(operand).ndim
    shape = tuple(sizes) + core.get_aval(operand).shape
    return broadcast_in_dim(operand, shape, tuple(range(len(sizes), len(sizes) + nd)))


def reshape(operand, new_sizes, dimensions=None):
    new_sizes = tuple(int(d) for d in new_sizes)
    aval = core.get_aval(operand)
    if aval.shape == new_sizes and dimensions is None and isinstance(
            operand, (core.Tracer, Array)):
        return operand
    return P.reshape_p.bind(operand, new_sizes=new_sizes,
                            dimensions=None if dimensions is None else tuple(dimensions))


def transpose(operand, permutation):
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))) and isinstance(
            operand, (core.Tracer, Array)):
        return operand
    return P.transpose_p.bind(operand, permutation=permutation)


def squeeze(array, dimensions):
    nd = core.get_aval(array).ndim
    dims = tuple(sorted(int(d) % builtins.max(nd, 1) for d in dimensions))
    return P.squeeze_p.bind(array, dimensions=dims) if dims else array


def expand_dims(array, dimensions):
    nd = core.get_aval(array).ndim + len(dimensions)
    dims = tuple(sorted(int(d) % nd for d in dimensions))
    return P.expand_dims_p.bind(array, dimensions=dims) if dims else array


def rev(operand, dimensions):
    return P.rev_p.bind(operand, dimensions=tuple(int(d) for d in dimensions))


def concatenate(operands, dimension: int):
    if len(operands) == 1:
        return operands[0]
    return P.concatenate_p.bind(*operands, dimension=int(dimension))


def pad(operand, padding_value, padding_config):
    cfg = tuple((int(lo), int(hi), int(it)) for lo, hi, it in padding_config)
    return P.pad_p.bind(operand, _operand(padding_value, operand), padding_config=cfg)


def slice(operand, start_indices, limit_indices, strides=None):
    return P.slice_p.bind(operand, start_indices=tuple(int(i) for i in start_indices),
                          limit_indices=tuple(int(i) for i in limit_indices),
                          strides=None if strides is None else tuple(int(s) for s in strides))


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
    shape = core.get_aval(operand).shape
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start_index, limit_index, stride
    return slice(operand, starts, limits, strides)


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
    out = slice_in_dim(operand, index, index + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def iota(dtype, size: int):
    return P.iota_p.bind(dtype=dtypes.canonicalize_dtype(dtype), shape=(int(size),), dimension=0)


def broadcasted_iota(dtype, shape, dimension: int):
    return P.iota_p.bind(dtype=dtypes.canonicalize_dtype(dtype),
                         shape=tuple(int(s) for s in shape), dimension=int(dimension))


def full(shape, fill_value, dtype=None):
    """An array of ``shape`` filled with ``fill_value`` (a broadcast of a scalar)."""
    shape = tuple(int(s) for s in shape)
    if not isinstance(fill_value, core.Tracer):
        aval = core.get_aval(fill_value)
        dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else aval.dtype
        fill_value = Array(np.asarray(fill_value, dt), weak_type=dtype is None and aval.weak_type)
        if not shape:
            return fill_value
    elif dtype is not None:
        fill_value = convert_element_type(fill_value, dtype)
    if core.get_aval(fill_value).shape != ():
        raise TypeError(f"full: fill_value must be a scalar, got shape "
                        f"{core.get_aval(fill_value).shape}")
    return broadcast_in_dim(fill_value, shape, ())


def full_like(x, fill_value, dtype=None, shape=None):
    aval = core.get_aval(x)
    return full(aval.shape if shape is None else shape, fill_value, dtype or aval.dtype)


def zeros_like_array(x):
    return full_like(x, 0)


# --- indexing ---


def _index(i):
    if isinstance(i, (core.Tracer, Array)):
        if i.dtype.kind not in "iu":
            raise TypeError(f"index arguments must be integers, got {i.dtype.name}")
        return i
    return np.asarray(operator.index(i), dtypes.canonicalize_dtype(np.int32))[()]


def dynamic_slice(operand, start_indices, slice_sizes):
    """A slice of ``slice_sizes`` starting at (possibly traced) ``start_indices``, clamped."""
    return P.dynamic_slice_p.bind(operand, *[_index(i) for i in start_indices],
                                  slice_sizes=tuple(int(s) for s in slice_sizes))


def dynamic_update_slice(operand, update, start_indices):
    return P.dynamic_update_slice_p.bind(operand, update, *[_index(i) for i in start_indices])


def dynamic_slice_in_dim(operand, start_index, slice_size: int, axis: int = 0):
    shape = core.get_aval(operand).shape
    starts = [0] * len(shape)
    starts[axis] = start_index
    sizes = list(shape)
    sizes[axis] = slice_size
    return dynamic_slice(operand, starts, sizes)


def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True):
    out = dynamic_slice_in_dim(operand, index, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def dynamic_update_slice_in_dim(operand, update, start_index, axis: int):
    starts = [0] * core.get_aval(operand).ndim
    starts[axis] = start_index
    return dynamic_update_slice(operand, update, starts)


# --- contraction ---


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """Contract ``lhs`` and ``rhs``: ``dimension_numbers = ((lc, rc), (lb, rb))``."""
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(int(i) for i in lc), tuple(int(i) for i in rc)),
          (tuple(int(i) for i in lb), tuple(int(i) for i in rb)))
    pet = None if preferred_element_type is None else dtypes.canonicalize_dtype(
        preferred_element_type)
    return P.dot_general_p.bind(lhs, rhs, dimension_numbers=dn, precision=precision,
                                preferred_element_type=pet)


def dot(lhs, rhs, precision=None, preferred_element_type=None):
    """Vector/matrix products of rank <= 2 operands."""
    ln, rn = core.get_aval(lhs).ndim, core.get_aval(rhs).ndim
    if not (1 <= ln <= 2 and 1 <= rn <= 2):
        raise TypeError(f"lax.dot takes rank 1 or 2 operands, got shapes "
                        f"{core.get_aval(lhs).shape} and {core.get_aval(rhs).shape}")
    return dot_general(lhs, rhs, (((ln - 1,), (0,)), ((), ())), precision,
                       preferred_element_type)


# --- gather / scatter ---


def _gather_fill_value(dtype):
    """JAX's default gather fill: NaN (inexact), min (signed), max (unsigned), True (bool)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return True
    if dtype.kind == "i":
        return int(np.iinfo(dtype).min)
    if dtype.kind == "u":
        return int(np.iinfo(dtype).max)
    return float("nan")


def gather(operand, start_indices, dimension_numbers, slice_sizes, *, unique_indices=False,
           indices_are_sorted=False, mode=None, fill_value=None):
    """Gather slices of ``operand`` at ``start_indices`` (XLA's gather, as ``jax.lax.gather``).

    Args:
      operand: the array to gather from.
      start_indices: integer array; its last dimension holds one start-index vector.
      dimension_numbers: a :class:`GatherDimensionNumbers`.
      slice_sizes: the size of the slice taken at each start, one per operand dimension.
      mode: ``None``/``"promise_in_bounds"`` (clamped here), ``"clip"`` or ``"fill"``.
      fill_value: the value of out-of-bounds slices in ``"fill"`` mode (default: NaN for
        inexact types, the minimum for signed, the maximum for unsigned, True for bool).

    >>> x = Array(np.arange(5.0))
    >>> gather(x, Array(np.array([[3], [1]], np.int32)),
    ...        GatherDimensionNumbers((), (0,), (0,)), (1,))
    Array([3., 1.], dtype=float32)
    """
    parsed = P.GatherScatterMode.from_any(
        P.GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else mode)
    if parsed == P.GatherScatterMode.FILL_OR_DROP:
        if fill_value is None:
            fill_value = _gather_fill_value(core.get_aval(operand).dtype)
    else:
        fill_value = None
    return P.gather_p.bind(operand, start_indices, dimension_numbers=dimension_numbers,
                         slice_sizes=tuple(int(s) for s in slice_sizes),
                         indices_are_sorted=bool(indices_are_sorted),
                         unique_indices=bool(unique_indices), mode=parsed, fill_value=fill_value)


def _scatter_op(prim, doc):
    def op(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
           unique_indices=False, mode=None):
        return prim.bind(operand, scatter_indices, updates,
                         dimension_numbers=dimension_numbers,
                         indices_are_sorted=bool(indices_are_sorted),
                         unique_indices=bool(unique_indices),
                         mode=P.GatherScatterMode.from_any(mode), update_jaxpr=None,
                         update_consts=())
    op.__name__ = prim.name.replace("-", "_")
    op.__doc__ = (f"{doc} (as ``jax.lax.{op.__name__}``).\n\n"
                  "``updates`` must have the operand's dtype. ``mode=None`` drops updates "
                  "whose window is out of bounds (FILL_OR_DROP); ``\"clip\"`` clamps them.")
    return op


scatter = _scatter_op(P.scatter_p, "Write ``updates`` into ``operand`` at ``scatter_indices``")
scatter_add = _scatter_op(P.scatter_add_p, "Add ``updates`` into ``operand`` at the indices")
scatter_mul = _scatter_op(P.scatter_mul_p, "Multiply ``operand`` by ``updates`` at the indices")
scatter_min = _scatter_op(P.scatter_min_p, "Minimum of ``operand`` and ``updates`` at the indices")
scatter_max = _scatter_op(P.scatter_max_p, "Maximum of ``operand`` and ``updates`` at the indices")


# --- collectives over named axes (vmap(..., axis_name=...); pmap later) ---

import math as _math  # noqa: E402

from functrax.primitives.collectives import axis_names as _axis_names  # noqa: E402
from functrax.primitives.collectives import axis_size as _axis_size  # noqa: E402
from functrax.primitives.collectives import check_perm as _check_perm  # noqa: E402
from functrax.tree_util import tree_flatten as _tree_flatten  # noqa: E402
from functrax.tree_util import tree_map as _tree_map  # noqa: E402
from functrax.tree_util import tree_unflatten as _tree_unflatten  # noqa: E402


def _no_groups(fn: str, axis_index_groups):
    if axis_index_groups is not None:
        raise NotImplementedError(f"{fn}: axis_index_groups is not supported (only None); "
                                  "split the axis with nested vmaps and name the inner one")


def _is_positional(a) -> bool:
    return isinstance(a, (int, np.integer)) and not isinstance(a, bool)


def _split_axes(axis_name):
    """(named axes, positional int axes) of a collective's ``axis_name``."""
    names = _axis_names(axis_name)
    return (tuple(a for a in names if not _is_positional(a)),
            [int(a) for a in names if _is_positional(a)])


def _coll_axis(fn: str, what: str, axis, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{fn}: {what} {axis} is out of bounds: it must be in "
                         f"[{-ndim}, {ndim}) here")
    return axis % ndim


def _leaf_operand(x):
    """Python scalars become rank-0 Arrays (weak-typed) so every operand has an array type."""
    return full((), x) if type(x) in (bool, int, float, complex) else x


def _reduce_positional(fn, reduce_fn, leaf, pos):
    if not pos:
        return leaf
    nd = core.get_aval(leaf).ndim
    axes = sorted({_coll_axis(fn, "positional axis", a, nd) for a in pos})
    return reduce_fn(leaf, axes)


def psum(x, axis_name, *, axis_index_groups=None):
    """Sum ``x`` over the named axis ``axis_name``: every lane gets the same total.

    Args:
      x: an array or a pytree of arrays (booleans are summed as int32).
      axis_name: a name bound by ``vmap(..., axis_name=...)``, or a tuple of names (ints in
        the tuple are positional axes of ``x``, reduced too).
      axis_index_groups: only None is supported.

    Returns:
      A pytree like ``x``; a value that is the same in every lane is multiplied by the size.

    Raises:
      NameError: for an unbound axis name.

    >>> import functrax, functrax.numpy as fnp
    >>> functrax.vmap(lambda v: psum(v, "i"), axis_name="i")(fnp.arange(4.0))
    Array([6., 6., 6., 6.], dtype=float32)
    """
    _no_groups("psum", axis_index_groups)
    named, pos = _split_axes(axis_name)
    size = _axis_size(named)
    leaves, tree = _tree_flatten(x)
    leaves = [convert_element_type(v, np.int32) if core.get_aval(v).dtype == np.bool_ else v
              for v in leaves]
    leaves = [_reduce_positional("psum", reduce_sum, v, pos) for v in leaves]
    if not named or not leaves:
        return _tree_unflatten(tree, leaves)
    if not any(isinstance(v, core.Tracer) for v in leaves):  # the same value in every lane
        out = [size * v if type(v) in (int, float, complex) else mul(v, _operand(size, v))
               for v in leaves]
    else:
        out = P.psum_p.bind(*[_leaf_operand(v) for v in leaves], axes=named,
                            axis_index_groups=None)
    return _tree_unflatten(tree, out)


def pmean(x, axis_name, *, axis_index_groups=None):
    """Mean of ``x`` over the named axis ``axis_name`` (``psum(x) / size``, as JAX).

    >>> import functrax, functrax.numpy as fnp
    >>> functrax.vmap(lambda v: v - pmean(v, "i"), axis_name="i")(fnp.arange(4.0))
    Array([-1.5, -0.5,  0.5,  1.5], dtype=float32)
    """
    _no_groups("pmean", axis_index_groups)
    named, pos = _split_axes(axis_name)
    leaves, tree = _tree_flatten(x)
    sums = _tree_flatten(psum(x, axis_name))[0]
    size = _axis_size(named)
    out = []
    for v, s in zip(leaves, sums):
        nd = core.get_aval(v).ndim
        shape = core.get_aval(v).shape
        n = size * _math.prod(shape[_coll_axis("pmean", "positional axis", a, nd)]
                              for a in set(pos))
        if type(s) in (int, float, complex):
            out.append(s / n)
        elif dtypes.is_inexact(core.get_aval(s).dtype):
            out.append(div(s, _operand(n, s)))  # JAX's ``v / n``: ``div v 4.0``
        else:  # integer sums: true division promotes to the default float type
            out.append(s / full((), float(n)))
    return _tree_unflatten(tree, out)


def _pminmax(prim, reduce_fn, fn):
    def op(x, axis_name, *, axis_index_groups=None):
        _no_groups(fn, axis_index_groups)
        named, pos = _split_axes(axis_name)
        _axis_size(named)
        leaves, tree = _tree_flatten(x)
        leaves = [_reduce_positional(fn, reduce_fn, v, pos) for v in leaves]
        if named and leaves:
            leaves = prim.bind(*[_leaf_operand(v) for v in leaves], axes=named,
                               axis_index_groups=None)
        return _tree_unflatten(tree, leaves)
    op.__name__ = fn
    op.__doc__ = (f"Elementwise {fn[1:]}imum of ``x`` (an array or pytree) over the named axis "
                  f"``axis_name`` (a name or a tuple of names); every lane gets the result.")
    return op


pmax = _pminmax(P.pmax_p, reduce_max, "pmax")
pmin = _pminmax(P.pmin_p, reduce_min, "pmin")


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False):
    """Gather the values of every lane of ``axis_name``; every lane gets all of them.

    Args:
      x: an array or pytree of arrays.
      axis_name: a name (or tuple of names) bound by ``vmap``.
      axis: where the new axis (of the axis size) goes in the result; with ``tiled=True``
        the lanes' values are concatenated along the existing axis ``axis`` instead.

    >>> import functrax, functrax.numpy as fnp
    >>> functrax.vmap(lambda v: all_gather(v, "i"), axis_name="i")(fnp.arange(2.0))
    Array([[0., 1.],
           [0., 1.]], dtype=float32)
    """
    _no_groups("all_gather", axis_index_groups)
    names = _axis_names(axis_name)
    size = _axis_size(names)

    def bind(leaf):
        leaf = _leaf_operand(leaf)
        nd = core.get_aval(leaf).ndim
        if tiled and nd == 0:
            raise ValueError("all_gather: tiled=True needs an operand of rank >= 1 (it "
                             "concatenates along an existing axis); got a scalar")
        dim = _coll_axis("all_gather", "axis", axis, nd if tiled else nd + 1)
        return P.all_gather_p.bind(leaf, all_gather_dimension=dim, axis_name=names,
                                   axis_index_groups=None, axis_size=size, tiled=bool(tiled))
    return _tree_map(bind, x)


def axis_index(axis_name):
    """The int32 index of the current lane along ``axis_name`` (a tuple of names: the
    row-major index over them).

    >>> import functrax, functrax.numpy as fnp
    >>> functrax.vmap(lambda v: v + axis_index("i"), axis_name="i")(fnp.zeros(3, "int32"))
    Array([0, 1, 2], dtype=int32)
    """
    if not isinstance(axis_name, (tuple, list)):
        core.axis_frame(axis_name)
        return P.axis_index_p.bind(axis_name=axis_name)
    index, inner = full((), 0, np.int32), 1
    for name in reversed(tuple(axis_name)):
        index = add(index, mul(axis_index(name), _operand(inner, index)))
        inner *= _axis_size(name)
    return index


def ppermute(x, axis_name, perm):
    """Send each lane's ``x`` along ``perm``, a sequence of (source, destination) lane pairs;
    a lane that is no destination gets zeros.

    >>> import functrax, functrax.numpy as fnp
    >>> functrax.vmap(lambda v: ppermute(v, "i", [(0, 1), (1, 2)]), axis_name="i")(
    ...     fnp.array([1.0, 2.0, 3.0]))
    Array([0., 1., 2.], dtype=float32)
    """
    names = _axis_names(axis_name)
    size = _axis_size(names)
    try:
        perm = tuple((operator.index(s), operator.index(d)) for s, d in perm)
    except (TypeError, ValueError):
        raise TypeError(f"ppermute: perm must be a sequence of (source, destination) pairs of "
                        f"ints, got {perm!r}") from None
    _check_perm(perm, size, names)
    return _tree_map(lambda v: P.ppermute_p.bind(_leaf_operand(v), axis_name=names, perm=perm),
                     x)


def pshuffle(x, axis_name, perm):
    """Lane ``i`` gets the ``x`` of lane ``perm[i]`` (``perm`` a permutation of the lanes)."""
    perm = [operator.index(p) for p in perm]
    if set(perm) != set(range(len(perm))):
        raise ValueError(f"`perm` does not represent a permutation: {perm}")
    return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
    """Split ``x`` along ``split_axis`` into one chunk per lane, send chunk ``j`` to lane
    ``j``, and stack (``tiled``: concatenate) the received chunks along ``concat_axis``.

    Untiled, ``x.shape[split_axis]`` must equal the axis size: that axis is removed and a
    new axis (over the source lanes) is inserted at ``concat_axis``.
    """
    _no_groups("all_to_all", axis_index_groups)
    if isinstance(axis_name, list):
        axis_name = tuple(axis_name)
    size = _axis_size(axis_name)

    def bind(leaf):
        leaf = _leaf_operand(leaf)
        shape = core.get_aval(leaf).shape
        s = _coll_axis("all_to_all", "split_axis", split_axis, len(shape))
        c = _coll_axis("all_to_all", "concat_axis", concat_axis, len(shape))
        if tiled:
            if shape[s] % size:
                raise ValueError(f"The size of all_to_all's split_axis ({shape[s]}) has to be "
                                 f"divisible by the size of the named axis {axis_name} "
                                 f"({size})")
        else:
            if shape[s] != size:
                raise ValueError("all_to_all requires the size of the mapped axis axis_name "
                                 "to equal x.shape[split_axis], but they are "
                                 f"{size} and {shape[s]} respectively.")
            if s < c:
                c += 1  # concat_axis is a position after split_axis is removed
                leaf = expand_dims(leaf, (c,))
            elif c < s:
                leaf = expand_dims(leaf, (c,))
                s += 1
        out = P.all_to_all_p.bind(leaf, split_axis=s, concat_axis=c, axis_name=axis_name,
                                  axis_index_groups=None, tiled=bool(tiled))
        return out if tiled or s == c else squeeze(out, (s,))
    return _tree_map(bind, x)


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
    """``psum`` whose result is scattered: lane ``i`` keeps block ``i`` of the sum along
    ``scatter_dimension`` (untiled: that dimension must equal the axis size and is removed).

    >>> import functrax, functrax.numpy as fnp
    >>> functrax.vmap(lambda v: psum_scatter(v, "i"), axis_name="i")(fnp.eye(2))
    Array([1., 1.], dtype=float32)
    """
    _no_groups("psum_scatter", axis_index_groups)
    names = _axis_names(axis_name)
    size = _axis_size(names)

    def bind(leaf):
        leaf = _leaf_operand(leaf)
        nd = core.get_aval(leaf).ndim
        dim = _coll_axis("psum_scatter", "scatter_dimension", scatter_dimension, nd)
        return P.reduce_scatter_p.bind(leaf, scatter_dimension=dim, axis_name=names,
                                       axis_index_groups=None, axis_size=size,
                                       tiled=bool(tiled))
    return _tree_map(bind, x)
from functrax.lax import linalg  # noqa: E402,F401
