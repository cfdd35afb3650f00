"""When ``bitcast_convert_type`` fuses: a same-width reinterpretation is elementwise (one
value per index, the bits of the operand's value at that index); a width change adds or
consumes a trailing axis and runs alone. Booleans stay alone too (their bits are not a
number's bits on every backend).

``fusion_tables._CONDITIONAL`` holds :func:`bitcast_unfusible`.
"""
from __future__ import annotations

import numpy as np

__all__ = ["bitcast_unfusible", "BITCAST_REASON"]

BITCAST_REASON = "bitcast_convert_type: reinterprets bytes"


def bitcast_unfusible(eqn):
    """None for a same-width, non-bool ``bitcast_convert_type`` (elementwise); otherwise the
    reason it is opaque."""
    src, dst = np.dtype(eqn.invars[0].aval.dtype), np.dtype(eqn.outvars[0].aval.dtype)
    if src.itemsize != dst.itemsize:
        return (f"{BITCAST_REASON} of another width ({src.name} -> {dst.name}: the shape "
                "changes)")
    if np.bool_ in (src.type, dst.type):
        return f"{BITCAST_REASON} to or from bool ({src.name} -> {dst.name})"
    return None
