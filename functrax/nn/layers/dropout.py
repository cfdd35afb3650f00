"""``Dropout``: zero each element with probability ``p`` in training, scaling the others by
``1 / (1 - p)``; the identity in inference mode.

>>> import functrax, functrax.numpy as fnp
>>> Dropout(0.5, inference=True)(fnp.ones(3))
Array([1., 1., 1.], dtype=float32)
"""
from __future__ import annotations

from functrax import numpy as fnp
from functrax import random
from functrax.nn.layers import _util as u
from functrax.nn.module import Module

__all__ = ["Dropout"]


class Dropout(Module):
    """Dropout (inverted: kept elements are scaled by ``1 / (1 - p)``).

    Args:
      p: the probability of zeroing an element, in ``[0, 1]``.
      inference: when True the layer is the identity (see also
        :func:`functrax.nn.inference_mode`).

    Call as ``dropout(x, key=key)`` in training, ``dropout(x, inference=True)`` (which
    overrides the field) to evaluate.

    Returns:
      an array of ``x``'s shape and dtype.

    Raises:
      ValueError: for ``p`` outside ``[0, 1]``, or no ``key`` in training mode with ``p > 0``.

    >>> import functrax, functrax.numpy as fnp
    >>> y = Dropout(0.5)(fnp.ones(1000), key=functrax.random.key(0))
    >>> sorted(set(map(float, y)))
    [0.0, 2.0]
    """
    p: float
    inference: bool

    def __init__(self, p=0.5, inference=False):
        p = float(p)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must lie in [0, 1], got {p}.")
        self.p, self.inference = p, bool(inference)

    def __call__(self, x, *, key=None, inference=None):
        """``x`` with dropout applied (training) or ``x`` itself (inference or ``p == 0``)."""
        inference = self.inference if inference is None else inference
        if inference or self.p == 0.0:
            return x
        if key is None:
            raise ValueError(
                f"Dropout(p={self.p}): training mode needs a PRNG key: call dropout(x, "
                "key=key) (split a key per call, e.g. with functrax.random.split), or turn "
                "dropout off with dropout(x, inference=True) / functrax.nn.inference_mode("
                "model).")
        x = fnp.asarray(x)
        if self.p == 1.0:
            return fnp.zeros_like(x)
        keep = random.bernoulli(key, 1.0 - self.p, u.shape_of(x))
        return fnp.where(keep, x / fnp.array(1.0 - self.p, x.dtype), fnp.zeros_like(x))
