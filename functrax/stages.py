"""``functrax.stages``: the ahead-of-time stages of ``jit`` and ``pmap`` (JAX's
``jax.stages``): ``f.trace(*args)`` -> :class:`Traced`, ``.lower()`` -> :class:`Lowered`,
``.compile()`` -> :class:`Compiled`.

functrax has no MLIR: ``Lowered.as_text(dialect)`` prints the optimized jaxpr for every
dialect (``"stablehlo"``, ``"hlo"``), ``Compiled.as_text()`` the backend's program (the
Triton backend: its kernels and fallbacks). :data:`CompilerOptions` (a dict of option
values) is accepted where JAX takes it and not used.

>>> import functrax
>>> lowered = functrax.jit(lambda x: x * 2.0).lower(1.0)
>>> isinstance(lowered, Lowered), isinstance(lowered.compile(), Compiled)
(True, True)
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from functrax.transforms.jit import Compiled, Lowered, Traced  # noqa: F401

#: options of a compilation (``option name -> value``); functrax's backends take none
CompilerOptions = dict


class ArgInfo:
    """The type of one argument of a lowered function: ``shape``, ``dtype``, whether it is
    ``donated``.

    >>> import numpy as np
    >>> from functrax.core import ShapedArray
    >>> ArgInfo(ShapedArray((2,), np.float32), donated=False).shape
    (2,)
    """

    def __init__(self, _aval, donated: bool):
        self._aval = _aval
        self.donated = donated

    shape = property(lambda self: self._aval.shape)
    dtype = property(lambda self: self._aval.dtype)
    sharding = None

    def __repr__(self):
        return f"ArgInfo({self._aval.str_short()}, donated={self.donated})"


@runtime_checkable
class Wrapped(Protocol):
    """A function wrapped by ``jit``/``pmap``: callable, with ``trace`` and ``lower``."""

    def __call__(self, *args, **kwargs) -> Any: ...

    def trace(self, *args, **kwargs) -> Traced: ...

    def lower(self, *args, **kwargs) -> Lowered: ...


__all__ = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]
