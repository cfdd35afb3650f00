"""Helpers shared by the ``functrax.scipy.linalg`` modules: operands and shape checks."""
from __future__ import annotations

from functrax import core
from functrax.numpy.promotion import asarray_operand, promote_dtypes_inexact


def shape(x):
    return core.get_aval(x).shape


def dtype(x):
    return core.get_aval(x).dtype


def inexact(*xs):
    """The operands as arrays promoted to one inexact dtype (one array, or a list)."""
    out = [asarray_operand(x) for x in promote_dtypes_inexact(*[asarray_operand(x)
                                                                for x in xs])]
    return out if len(out) > 1 else out[0]


def check_square(name, a, argname="a"):
    s = shape(a)
    if len(s) < 2 or s[-1] != s[-2]:
        raise ValueError(f"{name}: {argname} must be a (batch of) square matrices of shape "
                         f"[..., n, n], got shape {s}")


def check_matrix(name, a, argname="a"):
    if len(shape(a)) < 2:
        raise ValueError(f"{name}: {argname} must have at least 2 dimensions (shape "
                         f"[..., m, n]), got shape {shape(a)}")
