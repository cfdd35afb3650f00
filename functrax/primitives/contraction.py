"""dot_general: contraction over paired dimensions with batch dimensions."""
from __future__ import annotations

from functrax.primitives.define import (
    Family, NUMBER, ShapedArray, check_axes, check_dtype, new_primitive, np,
)
from functrax import core
from functrax import dtypes
from functrax.config import config

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


# --- wrappers that bind the primitives (re-exported by functrax.lax) ---

def default_precision():
    """The precision recorded for ``precision=None`` (``default_matmul_precision``): None,
    a pair of a legacy name (``("float32", "float32")``) or a dot-algorithm preset name."""
    p = config.read("default_matmul_precision")
    if p is None or p.isupper():
        return p
    return (p, p)


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """Contract ``lhs`` and ``rhs``: ``dimension_numbers = ((lc, rc), (lb, rb))``."""
    if precision is None:
        precision = default_precision()
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(int(i) for i in lc), tuple(int(i) for i in rc)),
          (tuple(int(i) for i in lb), tuple(int(i) for i in rb)))
    pet = None if preferred_element_type is None else dtypes.canonicalize_dtype(
        preferred_element_type)
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dn, precision=precision,
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
    "dot_general_p", "dot_general_shape", "dot_general", "dot", "default_precision",
]
