"""dtype conversion and type predicates: astype, iscomplex, isreal, iscomplexobj,
isrealobj, isscalar, iterable (as ``jax.numpy``'s).

>>> import functrax.numpy as fnp
>>> fnp.isreal(fnp.array([1 + 0j, 2j]))
Array([ True, False], dtype=bool)
"""
from __future__ import annotations

import warnings

import numpy as np

from functrax import core, dtypes, lax
from functrax.core import Array, Tracer
from functrax.numpy import ufuncs
from functrax.numpy.creation import asarray
from functrax.numpy.promotion import check_arraylike

__all__ = ["astype", "iscomplex", "isreal", "iscomplexobj", "isrealobj", "isscalar",
           "iterable"]

iterable = np.iterable


def astype(x, dtype, /, *, copy=False, device=None):
    """``x`` converted to ``dtype`` (``lax.convert_element_type``; ``None`` means the
    default float dtype). Complex to real conversions keep the real part with a
    DeprecationWarning (JAX's), complex to bool tests ``x != 0``.

    >>> import functrax.numpy as fnp
    >>> fnp.astype(fnp.array([0.0, 0.5, 1.0]), int)
    Array([0, 0, 1], dtype=int32)
    """
    check_arraylike("astype", x)
    if device is not None and getattr(device, "platform", "cpu") != "cpu":
        raise ValueError(f"astype: functrax arrays live on the host, got device={device}")
    x = asarray(x)
    dt = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    if np.dtype(core.get_aval(x).dtype).kind == "c":
        if dt == np.bool_:
            return ufuncs.not_equal(x, 0)
        if dt.kind in "iuf" or dt.name == "bfloat16":
            warnings.warn("Casting from complex to real dtypes will soon raise a ValueError. "
                          "Please first use functrax.numpy.real or functrax.numpy.imag to "
                          "take the real/imaginary component of your input.",
                          DeprecationWarning, stacklevel=2)
    return lax.convert_element_type(x, dt)


def _imag(fun_name, x):
    check_arraylike(fun_name, x)
    return ufuncs.imag(asarray(x))


def iscomplex(x):
    """Elementwise: whether the imaginary part is nonzero.

    >>> import functrax.numpy as fnp
    >>> fnp.iscomplex(fnp.array([1 + 0j, 2j]))
    Array([False,  True], dtype=bool)
    """
    return ufuncs.not_equal(_imag("iscomplex", x), 0)


def isreal(x):
    """Elementwise: whether the imaginary part is zero (True for real dtypes)."""
    return ufuncs.equal(_imag("isreal", x), 0)


def _dtype_of(x):
    if isinstance(x, (Array, Tracer)):
        return core.get_aval(x).dtype
    dt = getattr(x, "dtype", None)
    return np.dtype(dt) if dt is not None else np.asarray(x).dtype


def iscomplexobj(x):
    """Whether ``x`` has a complex dtype (a Python bool; values are not inspected).

    >>> import functrax.numpy as fnp
    >>> fnp.iscomplexobj(fnp.array([1.0])), fnp.iscomplexobj(1j)
    (False, True)
    """
    if x is None:
        return False
    return bool(np.issubdtype(_dtype_of(x), np.complexfloating))


def isrealobj(x):
    """``not iscomplexobj(x)``."""
    return not iscomplexobj(x)


def isscalar(element):
    """Whether ``element`` is a scalar: a Python/numpy scalar or a 0-d array (Arrays and
    tracers included, as JAX's).

    >>> import functrax.numpy as fnp
    >>> fnp.isscalar(fnp.array(1.0)), fnp.isscalar(fnp.array([1.0])), fnp.isscalar(2)
    (True, False, True)
    """
    if np.isscalar(element):
        return True
    if isinstance(element, (np.ndarray, Array, Tracer)):
        return np.ndim(element) == 0 if isinstance(element, np.ndarray) else \
            core.get_aval(element).ndim == 0
    if hasattr(element, "__jax_array__"):
        return asarray(element).ndim == 0
    return False

