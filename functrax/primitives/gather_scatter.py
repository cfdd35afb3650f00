"""Gather and scatter primitives, with XLA's (and ``jax.lax``'s) semantics.

As in JAX, ``index_vector_dim`` is always the last dimension of ``indices``: an
``indices`` array of shape ``batch + (k,)`` holds one length-``k`` start-index vector per
batch position.

The abstract evaluation rules follow JAX's ``_gather_shape_rule`` / ``_scatter_shape_rule``
(themselves XLA's ``ShapeInference::InferGatherShape`` / ``InferScatterShape``). Errors about
dimension numbers and shapes are ``TypeError``; a non-integer ``indices`` dtype is a
``ValueError`` (as in JAX).
"""
from __future__ import annotations

import collections
import enum

from functrax.primitives.define import Family, ShapedArray, new_primitive
from functrax import core, dtypes
import numpy as np



def _dims(x) -> tuple:
    return tuple(int(d) for d in x)


class GatherDimensionNumbers(collections.namedtuple(
        "GatherDimensionNumbers",
        ["offset_dims", "collapsed_slice_dims", "start_index_map", "operand_batching_dims",
         "start_indices_batching_dims"])):
    """How a gather maps ``indices`` and slices of ``operand`` to the output (as JAX).

    offset_dims: the output dimensions holding the (non-collapsed) slice dimensions, sorted.
    collapsed_slice_dims: operand dimensions of slice size 1 dropped from the output, sorted.
    start_index_map: for each entry of an index vector, the operand dimension it starts.
    operand_batching_dims: operand dimensions (sorted) that are batch dimensions, paired with
      start_indices_batching_dims: the dimensions of ``indices`` of the same batch.
    """

    __slots__ = ()

    def __new__(cls, offset_dims, collapsed_slice_dims, start_index_map,
                operand_batching_dims=(), start_indices_batching_dims=()):
        return super().__new__(cls, _dims(offset_dims), _dims(collapsed_slice_dims),
                               _dims(start_index_map), _dims(operand_batching_dims),
                               _dims(start_indices_batching_dims))


class ScatterDimensionNumbers(collections.namedtuple(
        "ScatterDimensionNumbers",
        ["update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
         "operand_batching_dims", "scatter_indices_batching_dims"])):
    """How a scatter maps ``indices`` and windows of ``updates`` into ``operand`` (as JAX).

    update_window_dims: the dimensions of ``updates`` that are window dimensions, sorted.
    inserted_window_dims: operand dimensions (sorted) with an implicit window size of 1.
    scatter_dims_to_operand_dims: for each entry of an index vector, its operand dimension.
    operand_batching_dims: operand dimensions (sorted) that are batch dimensions, paired with
      scatter_indices_batching_dims: the dimensions of ``indices`` of the same batch.
    """

    __slots__ = ()

    def __new__(cls, update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims,
                operand_batching_dims=(), scatter_indices_batching_dims=()):
        return super().__new__(cls, _dims(update_window_dims), _dims(inserted_window_dims),
                               _dims(scatter_dims_to_operand_dims),
                               _dims(operand_batching_dims),
                               _dims(scatter_indices_batching_dims))


class GatherScatterMode(enum.Enum):
    """What gather and scatter do with out-of-bounds indices.

    CLIP: start indices are clamped so that the whole slice/window is in bounds.
    FILL_OR_DROP: a gathered slice that is not wholly in bounds is filled with
      ``fill_value``; a scattered window that is not wholly in bounds is dropped.
    PROMISE_IN_BOUNDS: the caller promises indices are in bounds (here: clamped, as CLIP).
    """

    CLIP = 0
    FILL_OR_DROP = 1
    PROMISE_IN_BOUNDS = 2

    @staticmethod
    def from_any(s) -> GatherScatterMode:
        if isinstance(s, GatherScatterMode):
            return s
        if s == "clip":
            return GatherScatterMode.CLIP
        if s is None or s == "fill" or s == "drop":
            return GatherScatterMode.FILL_OR_DROP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        raise ValueError(f'Unknown gather mode "{s}"')


# --- validation helpers (JAX's wording) ---


def _is_sorted(dims, op, name):
    for i in range(1, len(dims)):
        if dims[i] < dims[i - 1]:
            raise TypeError(f"{name} in {op} op must be sorted; got {dims}")


def _dims_in_range(dims, rank, op, name):
    for d in dims:
        if d < 0 or d >= rank:
            raise TypeError(f"Invalid {name} set in {op} op; valid range is [0, {rank}); "
                            f"got: {d}.")


def _no_duplicate_dims(dims, op, name):
    if len(set(dims)) != len(dims):
        raise TypeError(f"{name} in {op} op must not repeat; got: {dims}.")


def _disjoint_dims(dims1, dims2, op, name1, name2):
    if not set(dims1).isdisjoint(dims2):
        raise TypeError(f"{name1} and {name2} in {op} op must be disjoint; got: {dims1} and "
                        f"{dims2}.")


def _check_indices(op, operand, indices):
    if indices.dtype.kind not in "iu":
        raise ValueError(f"{op}: indices must have an integer type, got "
                         f"{indices.dtype.name} (indices shape {indices.shape}, operand "
                         f"{operand.str_short()})")
    if indices.ndim < 1:
        raise TypeError(f"{op}: indices must have rank >= 1 (the last dimension is the index "
                        f"vector dimension); got a scalar of shape {indices.shape}")


def _check_mode(op, mode):
    try:
        GatherScatterMode.from_any(mode)
    except ValueError:
        raise ValueError(f"{op}: unknown mode {mode!r}; expected a GatherScatterMode, None, "
                         "'clip', 'fill', 'drop' or 'promise_in_bounds'") from None


def _check_batching(op, operand, indices, operand_batching_dims, indices_batching_dims,
                    indices_name):
    ivd = indices.ndim - 1
    _no_duplicate_dims(operand_batching_dims, op, "operand_batching_dims")
    _is_sorted(operand_batching_dims, op, "operand_batching_dims")
    _dims_in_range(operand_batching_dims, operand.ndim, op, "operand_batching_dims")
    _no_duplicate_dims(indices_batching_dims, op, indices_name)
    _dims_in_range(indices_batching_dims, indices.ndim, op, indices_name)
    if ivd in indices_batching_dims:
        raise TypeError(f"{op.capitalize()} op cannot have the index vector dimension as a "
                        f"batching dimension; got {indices_name}={indices_batching_dims} for "
                        f"indices of shape {indices.shape}.")
    if len(operand_batching_dims) != len(indices_batching_dims):
        raise TypeError(f"{op.capitalize()} op requires equal numbers of operand_batching_dims "
                        f"and {indices_name}, got {operand_batching_dims} and "
                        f"{indices_batching_dims}.")
    ob = tuple(operand.shape[i] for i in operand_batching_dims)
    ib = tuple(indices.shape[i] for i in indices_batching_dims)
    if ob != ib:
        raise TypeError(f"{op.capitalize()} op requires operand batching dimensions and "
                        f"indices batching dimensions to have the same shape, got {ob} "
                        f"(operand shape {operand.shape}) and {ib} (indices shape "
                        f"{indices.shape}).")


# --- gather ---

gather_p = new_primitive("gather", family=Family.INDEXING)


@gather_p.def_abstract_eval
def _gather_abstract(operand, indices, *, dimension_numbers, slice_sizes,
                     indices_are_sorted=False, unique_indices=False, mode=None,
                     fill_value=None):
    op = "gather"
    if not isinstance(dimension_numbers, GatherDimensionNumbers):
        raise TypeError(f"gather: dimension_numbers must be a GatherDimensionNumbers, got "
                        f"{dimension_numbers!r}")
    _check_mode(op, mode)
    _check_indices(op, operand, indices)
    dn = dimension_numbers
    offset_dims, collapsed = dn.offset_dims, dn.collapsed_slice_dims
    start_index_map = dn.start_index_map
    obd, ibd = dn.operand_batching_dims, dn.start_indices_batching_dims
    slice_sizes = tuple(slice_sizes)
    ivd = indices.ndim - 1

    _is_sorted(offset_dims, op, "offset_dims")
    _no_duplicate_dims(offset_dims, op, "offset_dims")
    out_rank = len(offset_dims) + indices.ndim - 1
    for i, d in enumerate(offset_dims):
        if d < 0 or d >= out_rank:
            raise TypeError(f"Offset dimension {i} in gather op is out of bounds; got {d}, "
                            f"but should have been in [0, {out_rank}) (indices shape "
                            f"{indices.shape}, {len(offset_dims)} offset dims)")
    if len(start_index_map) != indices.shape[ivd]:
        raise TypeError(f"Gather op has {len(start_index_map)} elements in start_index_map "
                        f"and the bound of dimension index_vector_dim={ivd} of indices (shape "
                        f"{indices.shape}) is {indices.shape[ivd]}. These two numbers must be "
                        "equal.")
    for i, d in enumerate(start_index_map):
        if d < 0 or d >= operand.ndim:
            raise TypeError(f"Invalid start_index_map; domain is [0, {operand.ndim}), got: "
                            f"{i}->{d}.")
    _no_duplicate_dims(start_index_map, op, "start_index_map")
    _is_sorted(collapsed, op, "collapsed_slice_dims")
    _dims_in_range(collapsed, operand.ndim, op, "collapsed_slice_dims")
    _no_duplicate_dims(collapsed, op, "collapsed_slice_dims")
    _check_batching(op, operand, indices, obd, ibd, "start_indices_batching_dims")
    _disjoint_dims(collapsed, obd, op, "collapsed_slice_dims", "operand_batching_dims")
    _disjoint_dims(start_index_map, obd, op, "start_index_map", "operand_batching_dims")

    if len(slice_sizes) != operand.ndim:
        raise TypeError(f"Gather op must have one slice size for every input dimension; got: "
                        f"len(slice_sizes)={len(slice_sizes)}, operand shape {operand.shape}")
    if len(slice_sizes) != len(offset_dims) + len(collapsed) + len(obd):
        raise TypeError("All components of the offset index in a gather op must either be a "
                        "offset dimension or explicitly collapsed/batching; got "
                        f"len(slice_sizes)={len(slice_sizes)}, offset_dims={offset_dims}, "
                        f"collapsed_slice_dims={collapsed}, operand_batching_dims={obd}.")
    for i, (s, n) in enumerate(zip(slice_sizes, operand.shape)):
        if not 0 <= s <= n:
            raise TypeError(f"Slice size at index {i} in gather op is out of range, must be "
                            f"within [0, {n} + 1), got {s} (slice_sizes {slice_sizes}, "
                            f"operand shape {operand.shape}).")
    for i, d in enumerate(collapsed):
        if slice_sizes[d] != 1:
            raise TypeError(f"Gather op can only collapse slice dims with bound 1, but bound "
                            f"is {slice_sizes[d]} for index {d} at position {i}.")
    for i, d in enumerate(obd):
        if slice_sizes[d] > 1:
            raise TypeError(f"Gather op can only have operand batching dims with bound 0/1, "
                            f"but bound is {slice_sizes[d]} for index {d} at position {i}.")

    batch_sizes = iter(indices.shape[:ivd])
    window_sizes = iter(s for i, s in enumerate(slice_sizes)
                        if i not in collapsed and i not in obd)
    shape = tuple(next(window_sizes) if i in offset_dims else next(batch_sizes)
                  for i in range(out_rank))
    return ShapedArray(shape, operand.dtype, operand.weak_type)


# --- scatter ---


def _scatter_abstract_eval(name):
    def abstract_eval(operand, indices, updates, *, dimension_numbers,
                      indices_are_sorted=False, unique_indices=False, mode=None,
                      update_jaxpr=None, update_consts=()):
        op = name
        if not isinstance(dimension_numbers, ScatterDimensionNumbers):
            raise TypeError(f"{op}: dimension_numbers must be a ScatterDimensionNumbers, got "
                            f"{dimension_numbers!r}")
        _check_mode(op, mode)
        _check_indices(op, operand, indices)
        if operand.dtype != updates.dtype:
            raise TypeError(f"{op} requires arguments to have the same dtypes, got "
                            f"{operand.dtype.name} (operand) and {updates.dtype.name} "
                            "(updates).")
        dn = dimension_numbers
        uwd, iwd = dn.update_window_dims, dn.inserted_window_dims
        sdod = dn.scatter_dims_to_operand_dims
        obd, ibd = dn.operand_batching_dims, dn.scatter_indices_batching_dims
        ivd = indices.ndim - 1

        expected_rank = indices.ndim - 1 + len(uwd)
        if updates.ndim != expected_rank:
            raise TypeError(f"{op}: updates tensor must be of rank {expected_rank} (indices "
                            f"shape {indices.shape} has {indices.ndim - 1} batch dims, plus "
                            f"{len(uwd)} update_window_dims); got updates shape "
                            f"{updates.shape}.")
        _is_sorted(uwd, op, "update_window_dims")
        _no_duplicate_dims(uwd, op, "update_window_dims")
        _dims_in_range(uwd, updates.ndim, op, "update_window_dims")
        _is_sorted(iwd, op, "inserted_window_dims")
        _no_duplicate_dims(iwd, op, "inserted_window_dims")
        _dims_in_range(iwd, operand.ndim, op, "inserted_window_dims")
        _check_batching(op, operand, indices, obd, ibd, "scatter_indices_batching_dims")
        _disjoint_dims(iwd, obd, op, "inserted_window_dims", "operand_batching_dims")
        _disjoint_dims(sdod, obd, op, "scatter_dims_to_operand_dims", "operand_batching_dims")

        window_size = len(uwd) + len(iwd) + len(obd)
        if operand.ndim != window_size:
            raise TypeError(f"{op.capitalize()} op has window of size {window_size} "
                            f"(update_window_dims={uwd}, inserted_window_dims={iwd}, "
                            f"operand_batching_dims={obd}); doesn't match operand of rank "
                            f"{operand.ndim} (shape {operand.shape}).")
        if len(sdod) != indices.shape[ivd]:
            raise TypeError(f"{op.capitalize()} op has {len(sdod)} elements in "
                            f"scatter_dims_to_operand_dims and the bound of dimension "
                            f"index_vector_dim={ivd} of indices (shape {indices.shape}) is "
                            f"{indices.shape[ivd]}. These two numbers must be equal.")
        for i, d in enumerate(sdod):
            if d < 0 or d >= operand.ndim:
                raise TypeError(f"Invalid scatter_dims_to_operand_dims mapping; domain is "
                                f"[0, {operand.ndim}), got: {i}->{d}.")
        _no_duplicate_dims(sdod, op, "scatter_dims_to_operand_dims")

        max_sizes = [n for i, n in enumerate(operand.shape) if i not in iwd and i not in obd]
        for i, d in enumerate(uwd):
            if max_sizes[i] < updates.shape[d]:
                raise TypeError(f"Bounds of the window dimensions of updates must not exceed "
                                f"the bounds of the corresponding dimensions of operand. For "
                                f"dimension {d}, updates bound is {updates.shape[d]}, operand "
                                f"bound is {max_sizes[i]} (updates shape {updates.shape}, "
                                f"operand shape {operand.shape}).")
        scatter_dims = [d for d in range(updates.ndim) if d not in uwd]
        for i, d in zip(range(ivd), scatter_dims):
            if updates.shape[d] != indices.shape[i]:
                raise TypeError(f"Bounds of the scatter dimensions of updates must be the same "
                                f"as the bounds of the corresponding dimensions of scatter "
                                f"indices. For scatter dimension {d}, updates bound is "
                                f"{updates.shape[d]}, indices bound is {indices.shape[i]} "
                                f"(updates shape {updates.shape}, indices shape "
                                f"{indices.shape}).")
        return ShapedArray(operand.shape, operand.dtype, operand.weak_type)

    return abstract_eval


def _scatter_primitive(name):
    p = new_primitive(name, family=Family.SCATTER)
    p.def_abstract_eval(_scatter_abstract_eval(name))
    return p


scatter_p = _scatter_primitive("scatter")
scatter_add_p = _scatter_primitive("scatter-add")
scatter_mul_p = _scatter_primitive("scatter-mul")
scatter_min_p = _scatter_primitive("scatter-min")
scatter_max_p = _scatter_primitive("scatter-max")


# --- wrappers that bind the primitives (re-exported by functrax.lax) ---

def default_fill_value(dtype):
    """JAX's default gather fill: NaN (inexact), min (signed), max (unsigned), True (bool)."""
    dtype = dtype.physical_dtype if dtypes.is_extended(dtype) else np.dtype(dtype)  # keys
    if dtype.kind == "b":
        return True
    if dtype.kind == "i":
        return int(np.iinfo(dtype).min)
    if dtype.kind == "u":
        return int(np.iinfo(dtype).max)
    if dtype.kind == "c" or dtypes.is_float(dtype):
        return float("nan")
    raise TypeError(f"gather: no default fill value for dtype {dtype}")


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
    parsed = GatherScatterMode.from_any(
        GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else mode)
    if parsed == GatherScatterMode.FILL_OR_DROP:
        if fill_value is None:
            fill_value = default_fill_value(core.get_aval(operand).dtype)
    else:
        fill_value = None
    return gather_p.bind(operand, start_indices, dimension_numbers=dimension_numbers,
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
                         mode=GatherScatterMode.from_any(mode), update_jaxpr=None,
                         update_consts=())
    op.__name__ = prim.name.replace("-", "_")
    op.__doc__ = (f"{doc} (as ``jax.lax.{op.__name__}``).\n\n"
                  "``updates`` must have the operand's dtype. ``mode=None`` drops updates "
                  "whose window is out of bounds (FILL_OR_DROP); ``\"clip\"`` clamps them.")
    return op


scatter = _scatter_op(scatter_p, "Write ``updates`` into ``operand`` at ``scatter_indices``")
scatter_add = _scatter_op(scatter_add_p, "Add ``updates`` into ``operand`` at the indices")
scatter_mul = _scatter_op(scatter_mul_p, "Multiply ``operand`` by ``updates`` at the indices")
scatter_min = _scatter_op(scatter_min_p, "Minimum of ``operand`` and ``updates`` at the indices")
scatter_max = _scatter_op(scatter_max_p, "Maximum of ``operand`` and ``updates`` at the indices")

__all__ = [
    "default_fill_value",
    "GatherDimensionNumbers", "ScatterDimensionNumbers", "GatherScatterMode", "gather_p",
    "scatter_p", "scatter_add_p", "scatter_mul_p", "scatter_min_p", "scatter_max_p", "gather",
    "scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max",
]
