"""Operators and methods shared by ``Array`` and every tracer, installed once on both classes."""
from __future__ import annotations

import numpy as np

from functrax import core
from functrax.numpy import creation, reductions, selection, shape_ops, ufuncs


def _defer(binary):
    """Return NotImplemented for operands we do not know, so Python tries the other side."""
    def op(self, other):
        if not _known(other):
            return NotImplemented
        return binary(self, other)
    return op


def _known(x):
    return isinstance(x, (core.Array, core.Tracer, np.ndarray, np.generic)) or type(x) in (
        bool, int, float, complex)


def _swap(f):
    return lambda self, other: f(other, self)


def _reshape_method(self, *args, order="C"):
    shape = args[0] if len(args) == 1 and not isinstance(args[0], int) else args
    return shape_ops.reshape(self, shape, order)


def _transpose_method(self, *args):
    axes = None if not args else (args[0] if len(args) == 1 and not isinstance(args[0], int)
                                  else args)
    return shape_ops.transpose(self, axes)


def _astype(self, dtype, copy=False):
    from functrax import lax
    return lax.convert_element_type(self, dtype)


_OPERATORS = {
    "__add__": ufuncs.add, "__sub__": ufuncs.subtract, "__mul__": ufuncs.multiply,
    "__truediv__": ufuncs.true_divide, "__floordiv__": ufuncs.floor_divide,
    "__mod__": ufuncs.remainder, "__pow__": ufuncs.power, "__divmod__": ufuncs.divmod,
    "__and__": ufuncs.bitwise_and, "__or__": ufuncs.bitwise_or, "__xor__": ufuncs.bitwise_xor,
    "__lshift__": ufuncs.left_shift, "__rshift__": ufuncs.right_shift,
    "__eq__": ufuncs.equal, "__ne__": ufuncs.not_equal, "__lt__": ufuncs.less,
    "__le__": ufuncs.less_equal, "__gt__": ufuncs.greater, "__ge__": ufuncs.greater_equal,
}

_METHODS = {
    "__neg__": ufuncs.negative, "__pos__": ufuncs.positive, "__abs__": ufuncs.absolute,
    "__invert__": ufuncs.bitwise_not,
    "sum": reductions.sum, "prod": reductions.prod, "max": reductions.max,
    "min": reductions.min, "mean": reductions.mean, "var": reductions.var,
    "std": reductions.std, "all": reductions.all, "any": reductions.any,
    "argmax": reductions.argmax, "argmin": reductions.argmin, "cumsum": reductions.cumsum,
    "cumprod": reductions.cumprod, "reshape": _reshape_method, "transpose": _transpose_method,
    "ravel": shape_ops.ravel, "flatten": shape_ops.ravel, "squeeze": shape_ops.squeeze,
    "swapaxes": shape_ops.swapaxes, "astype": _astype, "clip": selection.clip,
    "copy": creation.copy,
    "round": ufuncs.round, "conj": ufuncs.conjugate, "conjugate": ufuncs.conjugate,
    "real": property(ufuncs.real), "imag": property(ufuncs.imag),
    "T": property(lambda self: shape_ops.transpose(self)),
    "mT": property(lambda self: shape_ops.swapaxes(self, -1, -2)),
}


def _sort_method(self, axis=-1, *, stable=True, descending=False):
    from functrax.numpy import sorting
    return sorting.sort(self, axis, stable=stable, descending=descending)


def _argsort_method(self, axis=-1, *, stable=True, descending=False):
    from functrax.numpy import sorting
    return sorting.argsort(self, axis, stable=stable, descending=descending)


def _searchsorted_method(self, v, side="left", sorter=None):
    from functrax.numpy import sorting
    return sorting.searchsorted(self, v, side=side, sorter=sorter)


def _ptp_method(self, axis=None, out=None, keepdims=False):
    return reductions.ptp(self, axis, out, keepdims)


_METHODS.update({"sort": _sort_method, "argsort": _argsort_method,
                 "searchsorted": _searchsorted_method, "ptp": _ptp_method,
                 "nonzero": lambda self, size=None, fill_value=None: _nonzero(self, size,
                                                                            fill_value)})


def _nonzero(self, size, fill_value):
    from functrax.numpy import indexing
    return indexing.nonzero(self, size=size, fill_value=fill_value)


def install(cls):
    for name, fn in _OPERATORS.items():
        setattr(cls, name, _defer(fn))
        if name not in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
            setattr(cls, "__r" + name[2:], _defer(_swap(fn)))
    for name, fn in _METHODS.items():
        setattr(cls, name, fn)


def install_extra(name, fn):
    """Add a method (e.g. ``at``, ``__getitem__``, ``__matmul__``) to Array and tracers."""
    for cls in (core.Array, core.Tracer):
        setattr(cls, name, fn)


install(core.Array)
install(core.Tracer)
