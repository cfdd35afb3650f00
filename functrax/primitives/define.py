"""Helpers shared by the primitive definitions: validation with clear errors."""
from __future__ import annotations

import numpy as np

from functrax import dtypes
from functrax.core import Family, Primitive, ShapedArray

__all__ = ["Family", "Primitive", "ShapedArray", "np", "dtypes", "check_axes", "check_dtype",
           "FLOATING", "INEXACT", "INTEGRAL", "ANY", "BOOL_OR_INT", "NUMBER", "primitive_registry"]

primitive_registry: dict = {}

FLOATING = ("floating",)
INEXACT = ("floating", "complexfloating")
INTEGRAL = ("integer",)
BOOL_OR_INT = ("bool", "integer")
NUMBER = ("integer", "floating", "complexfloating")
ANY = ("bool", "integer", "floating", "complexfloating")

_KIND_TEST = {
    "bool": lambda d: d.kind == "b",
    "integer": lambda d: d.kind in "iu",
    "floating": lambda d: dtypes.is_float(d),
    "complexfloating": lambda d: d.kind == "c",
}


def new_primitive(name: str, multiple_results: bool = False, *, family: Family) -> Primitive:
    """A new primitive of ``family``, entered in ``primitive_registry``."""
    if name in primitive_registry:
        raise ValueError(f"primitive {name!r} is defined twice")
    if not isinstance(family, Family):
        raise TypeError(f"new_primitive({name!r}): family must be a Family, got {family!r}")
    p = Primitive(name, multiple_results, family)
    primitive_registry[name] = p
    return p


def check_dtype(prim: str, dtype, accepted) -> None:
    dtype = dtype if dtypes.is_extended(dtype) else np.dtype(dtype)
    if not any(_KIND_TEST[k](dtype) for k in accepted):
        kinds = ", ".join(accepted)
        raise TypeError(f"{prim} does not accept dtype {dtype.name}. Accepted dtypes are "
                        f"subtypes of {kinds}.")


def check_axes(prim: str, axes, ndim: int, name: str = "axes") -> tuple:
    axes = tuple(int(a) for a in axes)
    for a in axes:
        if not 0 <= a < ndim:
            raise ValueError(f"{prim}: {name} {axes} out of range for an operand of rank {ndim}")
    if len(set(axes)) != len(axes):
        raise ValueError(f"{prim}: {name} {axes} contain duplicates")
    return axes


def shape_str(avals) -> str:
    return ", ".join(str(a.shape) for a in avals)
