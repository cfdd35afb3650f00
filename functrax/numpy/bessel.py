"""``functrax.numpy.i0``: the modified Bessel function of the first kind, order 0 (as JAX's).

Computed as ``exp(|x|) * i0e(x)`` on the ``bessel_i0e`` primitive; its custom JVP is
``I1(x) = exp(|x|) i1e(x)``, exactly 0 at ``x = 0`` (as JAX's; the chain rule through ``abs``
would give its one-sided slope 1 there).
"""
from __future__ import annotations

import numpy as np

from functrax import dtypes, lax
from functrax.numpy.promotion import promote_args_inexact
from functrax.transforms.custom_derivatives import custom_jvp

__all__ = ["i0"]


def i0(x):
    """The modified Bessel function of the first kind of order zero, ``I0(x)``.

    Args:
      x: a real array (integers are promoted to the default float dtype).

    Returns:
      ``I0(x)``, of ``x``'s inexact dtype.

    Raises:
      ValueError: for complex input (as JAX).

    >>> import functrax.numpy as fnp
    >>> fnp.i0(fnp.array([0.0, 1.0]))
    Array([1.      , 1.266066], dtype=float32)
    """
    (x,) = promote_args_inexact("i0", x)
    if dtypes.issubdtype(x.dtype, np.complexfloating):
        raise ValueError(f"Unsupported input type to functrax.numpy.i0: {x.dtype}; pass a real "
                         "array (for complex input use functrax.scipy.special on its parts)")
    return _i0(x)


def _i0_impl(x):
    return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i0e(x))


@custom_jvp
def _i0(x):
    return _i0_impl(x)


@_i0.defjvp
def _i0_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = _i0(x)
    return y, lax.mul(t, lax.mul(lax.exp(lax.abs(x)), lax.bessel_i1e(x)))  # I0' = I1
