"""JAX's dtype rules for the differentiation API: which inputs and outputs ``grad``,
``jacfwd`` and ``jacrev`` accept, with and without ``holomorphic=True`` / ``allow_int=True``.

- Reverse mode (``grad``, ``value_and_grad``, ``jacrev``): inputs must be inexact (real or
  complex); integer and boolean inputs need ``allow_int=True`` (their gradient is a float0
  zero). Outputs must be real floating point, unless ``holomorphic=True``, when inputs and
  outputs must both be complex.
- Forward mode (``jacfwd``): inputs must be real floating point (complex ones need
  ``holomorphic=True``); with ``holomorphic=True`` outputs must be complex too.

A holomorphic function's derivative is the complex number ``f'(z)``: reverse mode pulls back
the cotangent ``1 + 0j`` (no conjugation, as JAX's transposition rules do not conjugate),
forward mode pushes the tangent ``1 + 0j`` forward.

>>> import numpy as np
>>> check_input_revderiv("grad", False, False, np.float32(1.0))
"""
from __future__ import annotations

import numpy as np

from functrax import core, dtypes


def _dtype(x):
    return core.get_aval(x).dtype


def check_input_revderiv(name: str, holomorphic: bool, allow_int: bool, x) -> None:
    """The check of one input leaf of ``grad`` / ``jacrev`` (``name``).

    Raises:
      TypeError: JAX's message for a non-complex input with ``holomorphic=True``, an integer
        or boolean input without ``allow_int``, or a non-numerical one.
    """
    dt = _dtype(x)
    if holomorphic and not dtypes.issubdtype(dt, np.complexfloating):
        raise TypeError(f"{name} with holomorphic=True requires inputs with complex dtype, "
                        f"but got {dt.name}.")
    if (dtypes.issubdtype(dt, dtypes.extended) or dtypes.issubdtype(dt, np.integer)
            or dtypes.issubdtype(dt, np.bool_)):  # keys as integers (float0 tangents), as JAX
        if not allow_int:
            raise TypeError(f"{name} requires real- or complex-valued inputs (input dtype that "
                            f"is a sub-dtype of np.inexact), but got {dt.name}. If you want "
                            "to use Boolean- or integer-valued inputs, use vjp or set "
                            "allow_int to True.")
    elif not dtypes.is_inexact(dt):
        raise TypeError(f"{name} requires numerical-valued inputs (input dtype that is a "
                        f"sub-dtype of np.bool_ or np.number), but got {dt.name}.")


def check_output_revderiv(name: str, holomorphic: bool, x) -> None:
    """The check of one output leaf of ``grad`` / ``jacrev``.

    Raises:
      TypeError: JAX's message for a complex output without ``holomorphic=True`` (pointing
        to it), a real one with it, or an integer output.
    """
    dt = _dtype(x)
    is_complex = dtypes.issubdtype(dt, np.complexfloating)
    if holomorphic:
        if not is_complex:
            raise TypeError(f"{name} with holomorphic=True requires outputs with complex "
                            f"dtype, but got {dt.name}.")
        return
    if is_complex:
        raise TypeError(f"{name} requires real-valued outputs (output dtype that is a sub-dtype "
                        f"of np.floating), but got {dt.name}. For holomorphic "
                        "differentiation, pass holomorphic=True. For differentiation of "
                        "non-holomorphic functions involving complex outputs, use "
                        "functrax.vjp directly.")
    if not dtypes.is_float(dt):
        raise TypeError(f"{name} requires real-valued outputs (output dtype that is a sub-dtype "
                        f"of np.floating), but got {dt.name}. For differentiation of functions "
                        "with integer outputs, use functrax.vjp directly.")


def check_input_jacfwd(holomorphic: bool, x) -> None:
    """The check of one input leaf of ``jacfwd``."""
    dt = _dtype(x)
    if holomorphic:
        if not dtypes.issubdtype(dt, np.complexfloating):
            raise TypeError("jacfwd with holomorphic=True requires inputs with complex "
                            f"dtype, but got {dt.name}.")
        return
    if not dtypes.is_float(dt):
        raise TypeError("jacfwd requires real-valued inputs (input dtype that is a sub-dtype of "
                        f"np.floating), but got {dt.name}. For holomorphic differentiation, "
                        "pass holomorphic=True. For differentiation of non-holomorphic "
                        "functions involving complex inputs or integer inputs, use "
                        "functrax.jvp directly.")


def check_output_jacfwd(holomorphic: bool, x) -> None:
    """The check of one output leaf of ``jacfwd`` (only ``holomorphic=True`` constrains it)."""
    dt = _dtype(x)
    if holomorphic and not dtypes.issubdtype(dt, np.complexfloating):
        raise TypeError("jacfwd with holomorphic=True requires outputs with complex dtype, "
                        f"but got {dt.name}.")


def check_scalar(x) -> None:
    """``grad``'s output must be a scalar (JAX's message, with its hint)."""
    aval = core.get_aval(x)
    if aval.shape == ():
        return
    extract = ""
    if aval.size == 1:
        idx = " or output[0]" if aval.ndim == 1 else ""
        extract = f"extract the scalar with output.reshape(()){idx}, "
    raise TypeError(f"Gradient only defined for scalar-output functions. Output had shape: "
                    f"{aval.shape}. To get the gradient, {extract}reduce the output to a "
                    "scalar with output.sum(), or use functrax.jacobian to differentiate a "
                    "function with a non-scalar output.")


def one_cotangent(out):
    """The cotangent ``1`` of ``out``'s dtype (``1 + 0j`` for a holomorphic output)."""
    aval = core.get_aval(out)
    return core.Array(np.ones((), aval.dtype))
