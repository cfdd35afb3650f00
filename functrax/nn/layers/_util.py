"""Shared argument checks of the layers (private)."""
from __future__ import annotations

import operator

import numpy as np

from functrax import core, random

_PAD_STRINGS = ("SAME", "SAME_LOWER", "VALID")


def shape_of(x) -> tuple:
    return tuple(core.get_aval(x).shape)


def dtype_of(x):
    return core.get_aval(x).dtype


def check_key(layer: str, key):
    """The PRNG key that initialises ``layer``'s parameters, or a clear error."""
    if key is None:
        raise ValueError(f"{layer}: initialising the parameters needs a PRNG key; pass "
                         f"key=functrax.random.key(0) (or another key) to {layer}(...).")
    return key


def split(key, n: int) -> list:
    keys = random.split(key, n)
    return [keys[i] for i in range(n)]


def as_int(layer: str, name: str, value, minimum: int = 1) -> int:
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{layer}: {name} must be an int, got {value!r}.") from None
    if v < minimum:
        raise ValueError(f"{layer}: {name} must be >= {minimum}, got {v}.")
    return v


def as_tuple(layer: str, name: str, value, n: int, minimum: int = 1) -> tuple:
    """An int or a sequence of ``n`` ints as a tuple of ``n`` ints."""
    if isinstance(value, (int, np.integer)):
        value = (value,) * n
    value = tuple(value)
    if len(value) != n:
        raise ValueError(f"{layer}: {name} must be an int or {n} ints (one per spatial "
                         f"dimension), got {value!r}.")
    return tuple(as_int(layer, name, v, minimum) for v in value)


def as_padding(layer: str, padding, n: int):
    """``"SAME"``/``"SAME_LOWER"``/``"VALID"``, an int, ``n`` ints or ``n`` (lo, hi) pairs,
    as a string or a tuple of ``n`` int pairs."""
    if isinstance(padding, str):
        if padding.upper() not in _PAD_STRINGS:
            raise ValueError(f"{layer}: padding must be one of {_PAD_STRINGS}, an int, {n} "
                             f"ints or {n} (low, high) pairs, got {padding!r}.")
        return padding.upper()
    if isinstance(padding, (int, np.integer)):
        padding = (padding,) * n
    try:
        padding = tuple(padding)
        if len(padding) != n:
            raise ValueError
        pairs = tuple((p, p) if isinstance(p, (int, np.integer)) else tuple(p)
                      for p in padding)
        if any(len(p) != 2 for p in pairs):
            raise ValueError
        return tuple((operator.index(lo), operator.index(hi)) for lo, hi in pairs)
    except (TypeError, ValueError):
        raise ValueError(f"{layer}: padding must be one of {_PAD_STRINGS}, an int, {n} ints "
                         f"or {n} (low, high) pairs, got {padding!r}.") from None


def check_spatial_dims(layer: str, n) -> int:
    n = as_int(layer, "num_spatial_dims", n)
    if n not in (1, 2, 3):
        raise ValueError(f"{layer}: num_spatial_dims must be 1, 2 or 3, got {n}.")
    return n


def check_channel_first(layer: str, x, n: int, channels: int | None):
    """``x`` must be one example ``(C, *spatial)`` with ``n`` spatial dims (and ``channels``
    channels when given)."""
    shape = shape_of(x)
    want = f"(C={channels}, " if channels is not None else "(C, "
    want += ", ".join(f"d{i}" for i in range(n)) + ")"
    if len(shape) != n + 1:
        hint = (" Layers act on one example: for a batch, use functrax.vmap(layer)(x)."
                if len(shape) == n + 2 else "")
        raise ValueError(f"{layer}: expected an input of rank {n + 1}, shape {want} (channels "
                         f"first, {n} spatial dims), got shape {shape}.{hint}")
    if channels is not None and shape[0] != channels:
        raise ValueError(f"{layer}: expected {channels} input channels, shape {want}, got "
                         f"shape {shape} ({shape[0]} channels). Inputs are channel-first; "
                         "for a batch, use functrax.vmap(layer)(x).")


def is_arraylike(x) -> bool:
    return core.is_arraylike(x)


def fixed_dims(base, n: int, module: str):
    """``base`` with ``num_spatial_dims`` fixed to ``n`` (``Conv2d(in, out, k, ...)``,
    ``MaxPool2d(k, ...)``), a class of ``module``."""
    def __init__(self, *args, **kwargs):
        base.__init__(self, n, *args, **kwargs)
    name = f"{base.__name__}{n}d"
    doc = (f"A {n}-d :class:`{base.__name__}` (``{base.__name__}({n}, ...)``): the same "
           "arguments without ``num_spatial_dims``.")
    return type(name, (base,), {"__init__": __init__, "__doc__": doc,
                                "__module__": module, "__qualname__": name})
