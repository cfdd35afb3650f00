"""Primitives of the PRNG (``functrax.random``): the threefry2x32 block cipher and bit-level
reinterpretation of arrays (``bitcast_convert_type``).

``threefry2x32(k1, k2, x1, x2) -> (y1, y2)``: the Random123 Threefry-2x32 cipher with 20
rounds, applied elementwise to the counter words ``(x1, x2)`` under the key ``(k1, k2)``.
Every operand is uint32; as for other n-ary elementwise primitives, operands have equal
shapes except that rank-0 operands may stand beside arrays (the key words usually are).

``bitcast_convert_type(x, new_dtype)``: the bits of ``x`` read as ``new_dtype``. Equal widths
keep the shape; a wider input gains a trailing axis of ``in_bits // out_bits``; a narrower
input loses its trailing axis, which must have ``out_bits // in_bits`` elements (as XLA).
"""
from __future__ import annotations

from functrax.primitives.define import Family, ShapedArray, dtypes, new_primitive, np


threefry2x32_p = new_primitive("threefry2x32", multiple_results=True, family=Family.PRNG)


@threefry2x32_p.def_abstract_eval
def _threefry2x32_abstract(k1, k2, x1, x2):
    avals = (k1, k2, x1, x2)
    if any(a.dtype != np.uint32 for a in avals):
        got = ", ".join(a.dtype.name for a in avals)
        raise TypeError(f"threefry2x32: every operand must have dtype uint32, got {got}")
    shapes = {a.shape for a in avals if a.shape != ()}
    if len(shapes) > 1:
        got = ", ".join(str(a.shape) for a in avals)
        raise TypeError(f"threefry2x32: operands must have equal shapes (rank-0 operands may "
                        f"stand beside arrays), got shapes {got}")
    shape = shapes.pop() if shapes else ()
    return [ShapedArray(shape, np.uint32), ShapedArray(shape, np.uint32)]


bitcast_convert_type_p = new_primitive("bitcast_convert_type", family=Family.ELEMENTWISE)


def bitcast_shape(name: str, shape: tuple, old_dtype, new_dtype) -> tuple:
    """The result shape of bitcasting ``shape`` from ``old_dtype`` to ``new_dtype``.

    Raises:
      TypeError: for bool/complex dtypes of different types, or a trailing axis of the
        wrong size when the new dtype is wider.
    """
    old, new = np.dtype(old_dtype), np.dtype(new_dtype)
    if old != new and (old.kind in "bc" or new.kind in "bc"):
        raise TypeError(f"{name} does not support bool or complex values unless the operand "
                        f"and destination types match, got operand dtype={old.name} and "
                        f"new_dtype={new.name}")
    if old.itemsize == new.itemsize:
        return tuple(shape)
    if old.itemsize > new.itemsize:
        return tuple(shape) + (old.itemsize // new.itemsize,)
    ratio = new.itemsize // old.itemsize
    if not shape or shape[-1] != ratio:
        raise TypeError(f"{name}: casting {old.name} to the wider {new.name} needs an operand "
                        f"whose last axis has {ratio} elements, got shape {tuple(shape)}")
    return tuple(shape[:-1])


@bitcast_convert_type_p.def_abstract_eval
def _bitcast_abstract(x, *, new_dtype):
    if not dtypes.is_supported(new_dtype):
        raise TypeError(f"bitcast_convert_type: unsupported new_dtype {new_dtype!r}")
    shape = bitcast_shape("bitcast_convert_type", x.shape, x.dtype, new_dtype)
    return ShapedArray(shape, new_dtype)


# --- wrappers that bind the primitives (re-exported by functrax.lax) ---


def bitcast_convert_type(operand, new_dtype):
    """The bits of ``operand`` reinterpreted as ``new_dtype`` (``lax.bitcast_convert_type``).

    Equal widths keep the shape; a wider operand dtype adds a trailing axis of size
    ``in_bits // out_bits``; a narrower one consumes a trailing axis of ``out_bits // in_bits``.

    >>> import numpy as np
    >>> bitcast_convert_type(np.float32(1.0), np.uint32)
    Array(1065353216, dtype=uint32)
    """
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    return bitcast_convert_type_p.bind(operand, new_dtype=new_dtype)


__all__ = [
    "threefry2x32_p", "bitcast_convert_type_p", "bitcast_convert_type", "bitcast_shape",
]
