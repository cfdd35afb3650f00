"""dot_general: contraction over paired dimensions with batch dimensions."""
from __future__ import annotations

import enum
from typing import Sequence, Tuple, Union

from functrax.primitives.define import (
    Family, NUMBER, ShapedArray, check_axes, check_dtype, new_primitive, np,
)
from functrax import core
from functrax import dtypes
from functrax.config import MATMUL_PRECISIONS, config

dot_general_p = new_primitive("dot_general", family=Family.CONTRACTION)


def dot_general_shape(lhs_shape, rhs_shape, dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    free_l = [d for i, d in enumerate(lhs_shape) if i not in lc and i not in lb]
    free_r = [d for i, d in enumerate(rhs_shape) if i not in rc and i not in rb]
    return tuple([lhs_shape[i] for i in lb] + free_l + free_r)


@dot_general_p.def_abstract_eval
def _dot_general_abstract(lhs, rhs, *, dimension_numbers, precision=None,
                          preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    check_axes("dot_general", tuple(lc) + tuple(lb), lhs.ndim, "lhs dimensions")
    check_axes("dot_general", tuple(rc) + tuple(rb), rhs.ndim, "rhs dimensions")
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError(f"dot_general: contracting {lc}/{rc} and batch {lb}/{rb} dimensions must "
                        "pair up")
    for kind, ld, rd in (("contracting", lc, rc), ("batch", lb, rb)):
        if tuple(lhs.shape[i] for i in ld) != tuple(rhs.shape[i] for i in rd):
            raise TypeError(
                f"dot_general requires {kind} dimensions to have the same shape, got "
                f"{tuple(lhs.shape[i] for i in ld)} and {tuple(rhs.shape[i] for i in rd)} "
                f"(lhs {lhs.str_short()}, rhs {rhs.str_short()}, "
                f"dimension_numbers={dimension_numbers})")
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"dot_general requires operands of the same dtype, got "
                        f"{lhs.dtype.name} and {rhs.dtype.name}")
    check_dtype("dot_general", lhs.dtype, NUMBER + ("bool",))
    out_dtype = np.dtype(preferred_element_type) if preferred_element_type else lhs.dtype
    shape = dot_general_shape(lhs.shape, rhs.shape, dimension_numbers)
    return ShapedArray(shape, out_dtype, lhs.weak_type and rhs.weak_type)


# --- precision (JAX's enum; recorded on dot_general / conv, the numpy backend is exact) ---


class Precision(enum.Enum):
    """Precision of a matrix product's operands (``lax.Precision``), also given by name:
    "default"/"fastest"/"bfloat16", "high"/"bfloat16_3x"/"tensorfloat32",
    "highest"/"float32".

    >>> Precision("highest")
    <Precision.HIGHEST: 2>
    """

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        name = _PRECISION_NAMES.get(value.lower() if isinstance(value, str) else value)
        return None if name is None else cls[name]

    def __str__(self):
        return self.name


_PRECISION_NAMES = {"default": "DEFAULT", "fastest": "DEFAULT", "bfloat16": "DEFAULT",
                    "high": "HIGH", "bfloat16_3x": "HIGH", "tensorfloat32": "HIGH",
                    "highest": "HIGHEST", "float32": "HIGHEST"}

PrecisionLike = Union[None, str, Precision, Tuple[str, str], Tuple[Precision, Precision]]
DotDimensionNumbers = Tuple[Tuple[Sequence[int], Sequence[int]],
                            Tuple[Sequence[int], Sequence[int]]]


def canonicalize_precision(precision):
    """None, or a pair of :class:`Precision` (one value applies to both operands).

    ``None`` means the ``default_matmul_precision`` flag (as JAX): None when it is unset, its
    pair of :class:`Precision`, or a dot-algorithm preset name (recorded as given).

    Raises:
      ValueError: for anything else (JAX's text).
    """
    if precision is None:
        default = config.read("default_matmul_precision")
        if default is None or default.isupper():
            return default
        return canonicalize_precision(default)
    if isinstance(precision, str) and precision.isupper() and precision in MATMUL_PRECISIONS:
        return precision  # a dot-algorithm preset name (e.g. "F32_F32_F32"), as JAX records it
    try:
        if isinstance(precision, (str, Precision)):
            p = Precision(precision)
            return (p, p)
        if isinstance(precision, (list, tuple)) and len(precision) == 2:
            return tuple(Precision(p) for p in precision)
    except ValueError:
        pass
    raise ValueError(f"Precision argument must be one of:\n- None,\n- a string in "
                     f"{list(_PRECISION_NAMES)},\n- a lax.Precision value,\n- a tuple of two "
                     f"lax.Precision values or strings; got {precision}.")


# --- wrappers that bind the primitives (re-exported by functrax.lax) ---

def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """Contract ``lhs`` and ``rhs``: ``dimension_numbers = ((lc, rc), (lb, rb))``."""
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(int(i) for i in lc), tuple(int(i) for i in rc)),
          (tuple(int(i) for i in lb), tuple(int(i) for i in rb)))
    pet = None if preferred_element_type is None else dtypes.canonicalize_dtype(
        preferred_element_type)
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dn,
                              precision=canonicalize_precision(precision),
                              preferred_element_type=pet)


def dot(lhs, rhs, precision=None, preferred_element_type=None):
    """Vector/matrix products of rank <= 2 operands."""
    ln, rn = core.get_aval(lhs).ndim, core.get_aval(rhs).ndim
    if not (1 <= ln <= 2 and 1 <= rn <= 2):
        raise TypeError(f"lax.dot takes rank 1 or 2 operands, got shapes "
                        f"{core.get_aval(lhs).shape} and {core.get_aval(rhs).shape}")
    return dot_general(lhs, rhs, (((ln - 1,), (0,)), ((), ())), precision,
                       preferred_element_type)

__all__ = [
    "Precision", "PrecisionLike", "DotDimensionNumbers", "canonicalize_precision",
    "dot_general_p", "dot_general_shape", "dot_general", "dot",
]
