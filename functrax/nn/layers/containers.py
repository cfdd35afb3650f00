"""``Sequential``, ``MLP`` and ``Lambda``.

>>> import functrax, functrax.numpy as fnp
>>> from functrax import nn
>>> model = Sequential([nn.Linear(2, 3, key=functrax.random.key(0)), Lambda(nn.relu)])
>>> model(fnp.ones(2)).shape
(3,)
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from functrax import numpy as fnp
from functrax.nn.functions import identity, relu
from functrax.nn.layers import _util as u
from functrax.nn.layers.linear import Linear
from functrax.nn.module import Module, field

__all__ = ["Lambda", "MLP", "Sequential"]


class Lambda(Module):
    """Wraps a function (a static field) as a layer; a ``key`` argument is ignored.

    Args:
      fn: the function ``x -> y`` (hashable: it is part of the treedef).

    >>> import functrax.numpy as fnp
    >>> Lambda(fnp.tanh)(fnp.zeros(2))
    Array([0., 0.], dtype=float32)
    """
    fn: Callable = field(static=True)

    def __call__(self, x, *, key=None):
        return self.fn(x)


@functools.lru_cache(maxsize=None)
def _type_takes_key(cls) -> bool:
    try:
        params = inspect.signature(cls.__call__).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "key" or p.kind is p.VAR_KEYWORD for p in params)


def _takes_key(layer) -> bool:
    if isinstance(layer, Module):
        return _type_takes_key(type(layer))
    return False


class Sequential(Module):
    """Calls ``layers`` in order; plain functions are wrapped in :class:`Lambda`.

    Args:
      layers: a sequence of layers (modules or functions ``x -> y``).

    Returns (when called as ``model(x, *, key=None)``):
      the last layer's output. ``key`` is split into one key per layer and passed to the
      layers that take a ``key`` (e.g. :class:`Dropout`); layers with state (BatchNorm) do
      not fit and must be called explicitly.

    Raises:
      TypeError: if a layer is not callable.

    >>> import functrax, functrax.numpy as fnp
    >>> from functrax import nn
    >>> k1, k2 = functrax.random.split(functrax.random.key(0))
    >>> net = Sequential([nn.Linear(4, 8, key=k1), nn.relu, nn.Dropout(0.1),
    ...                   nn.Linear(8, 2, key=k2)])
    >>> net(fnp.ones(4), key=functrax.random.key(1)).shape
    (2,)
    >>> len(net), type(net[1]).__name__
    (4, 'Lambda')
    """
    layers: tuple

    def __init__(self, layers):
        layers = tuple(layers)
        for i, layer in enumerate(layers):
            if not callable(layer):
                raise TypeError(f"Sequential: layer {i} is not callable: {layer!r}.")
        self.layers = tuple(f if isinstance(f, Module) else Lambda(f) for f in layers)

    def __call__(self, x, *, key=None):
        """The composition of the layers applied to ``x``."""
        n = len(self.layers)
        keys = [None] * n if key is None or n == 0 else u.split(key, n)
        for layer, k in zip(self.layers, keys):
            x = layer(x, key=k) if k is not None and _takes_key(layer) else layer(x)
        return x

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Sequential(self.layers[i])
        return self.layers[i]

    def __len__(self):
        return len(self.layers)

    def __iter__(self):
        return iter(self.layers)


class MLP(Module):
    """A multi-layer perceptron: ``depth`` hidden layers of ``width_size`` units, as
    ``equinox.nn.MLP``.

    Args:
      in_size, out_size: the input and output features.
      width_size: the hidden layers' features.
      depth: the number of hidden layers (0: a single :class:`Linear`).
      activation: applied after every hidden layer (default ``relu``).
      final_activation: applied to the output (default ``identity``).
      use_bias, use_final_bias: biases of the hidden and the last layers.
      key: the PRNG key initialising the layers (keyword, required).
      dtype: the parameters' dtype.

    Returns (when called on ``x`` of shape ``(..., in_size)``):
      an array of shape ``(..., out_size)``.

    Raises:
      ValueError: for a missing key or bad sizes.

    >>> import functrax, functrax.numpy as fnp
    >>> mlp = MLP(2, 1, width_size=8, depth=2, key=functrax.random.key(0))
    >>> [l.weight.shape for l in mlp.layers]
    [(2, 8), (8, 8), (8, 1)]
    """
    layers: tuple
    activation: Any
    final_activation: Any
    in_size: int
    out_size: int
    width_size: int
    depth: int

    def __init__(self, in_size, out_size, width_size, depth, activation=relu,
                 final_activation=identity, use_bias=True, use_final_bias=True, *,
                 key=None, dtype=fnp.float32):
        name = "MLP"
        self.in_size = u.as_int(name, "in_size", in_size)
        self.out_size = u.as_int(name, "out_size", out_size)
        self.width_size = u.as_int(name, "width_size", width_size)
        self.depth = u.as_int(name, "depth", depth, minimum=0)
        keys = u.split(u.check_key(name, key), self.depth + 1)
        sizes = [self.in_size] + [self.width_size] * self.depth + [self.out_size]
        self.layers = tuple(
            Linear(a, b, use_final_bias if i == self.depth else use_bias, key=k, dtype=dtype)
            for i, (a, b, k) in enumerate(zip(sizes[:-1], sizes[1:], keys)))
        self.activation, self.final_activation = activation, final_activation

    def __call__(self, x, *, key=None):
        """The MLP applied to ``x``."""
        for layer in self.layers[:-1]:
            x = self.activation(layer(x))
        return self.final_activation(self.layers[-1](x))
