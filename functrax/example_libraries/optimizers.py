"""``functrax.example_libraries.optimizers``: optimizers over pytrees, as JAX's
``jax.example_libraries.optimizers``.

An optimizer is an ``(init_fun, update_fun, get_params)`` triple (an :class:`Optimizer`):

- ``init_fun(params) -> opt_state``: the initial state of a pytree of parameters;
- ``update_fun(step, grads, opt_state) -> opt_state``: one update, where ``step`` is the
  0-based step index (schedules and Adam's bias correction read it) and ``grads`` has the
  parameters' tree structure;
- ``get_params(opt_state) -> params``.

The state is an :class:`OptimizerState`, a pytree (its leaves are the per-parameter state
arrays), so a step jits:

>>> import functrax, functrax.numpy as fnp
>>> from functrax.example_libraries import optimizers
>>> opt_init, opt_update, get_params = optimizers.adam(0.1)
>>> opt_state = opt_init({"w": fnp.zeros(2)})
>>> @functrax.jit
... def step(i, opt_state):
...     loss = lambda p: fnp.sum((p["w"] - 1.0) ** 2)
...     return opt_update(i, functrax.grad(loss)(get_params(opt_state)), opt_state)
>>> for i in range(3):
...     opt_state = step(i, opt_state)
>>> get_params(opt_state)["w"]
Array([0.29841173, 0.29841173], dtype=float32)

Each optimizer is written for one array with the :func:`optimizer` decorator, which maps it
over the leaves of the parameter pytree.
"""
from __future__ import annotations

import functools
from collections import namedtuple
from typing import Any, Callable, NamedTuple

import numpy as np

from functrax import numpy as fnp
from functrax import tree_util
from functrax.tree_util import register_pytree_node, tree_flatten, tree_map, tree_unflatten

__all__ = [
    "JoinPoint", "Optimizer", "OptimizerState", "adagrad", "adam", "adamax", "clip_grads",
    "constant", "exponential_decay", "inverse_time_decay", "l2_norm", "make_schedule",
    "momentum", "nesterov", "optimizer", "pack_optimizer_state", "piecewise_constant",
    "polynomial_decay", "rmsprop", "rmsprop_momentum", "sgd", "sm3",
    "unpack_optimizer_state",
]

# The state of a pytree of parameters: ``packed_state`` holds, per parameter leaf, the flat
# list of that leaf's state arrays; ``tree_def`` is the parameters' tree structure and
# ``subtree_defs`` the structure of each leaf's state. Only ``packed_state`` holds leaves.
OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
register_pytree_node(
    OptimizerState,
    lambda state: ((state.packed_state,), (state.tree_def, state.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))

Schedule = Callable[[int], Any]


class Optimizer(NamedTuple):
    """An ``(init_fn, update_fn, params_fn)`` triple (unpacks as
    ``opt_init, opt_update, get_params``)."""
    init_fn: Callable
    update_fn: Callable
    params_fn: Callable


def _unzip2(pairs):
    pairs = list(pairs)
    return tuple(a for a, _ in pairs), tuple(b for _, b in pairs)


def _tree_init(init, params):
    leaves, tree = tree_flatten(params)
    states_flat, subtrees = _unzip2(tree_flatten(init(x)) for x in leaves)
    return OptimizerState(states_flat, tree, subtrees)


def _leaf_states(opt_state, what):
    if not isinstance(opt_state, OptimizerState):
        raise TypeError(f"{what}: opt_state must be the OptimizerState that opt_init or "
                        f"opt_update returned, got {type(opt_state).__name__}.")
    states_flat, tree, subtrees = opt_state
    return [tree_unflatten(d, s) for d, s in zip(subtrees, states_flat)], tree, subtrees


def _tree_update(update, i, grads, opt_state):
    states, tree, subtrees = _leaf_states(opt_state, "optimizer update function")
    grad_flat, tree2 = tree_flatten(grads)
    if tree2 != tree:
        raise TypeError("optimizer update function was passed a gradient tree that did not "
                        "match the parameter tree structure with which it was initialized: "
                        f"parameter tree {tree} and grad tree {tree2}.")
    new_states = [update(i, g, s) for g, s in zip(grad_flat, states)]
    new_flat, subtrees2 = _unzip2(tree_flatten(s) for s in new_states)
    for subtree, subtree2 in zip(subtrees, subtrees2):
        if subtree2 != subtree:
            raise TypeError("optimizer update function produced an output structure that did "
                            f"not match its input structure: input {subtree} and output "
                            f"{subtree2}.")
    return OptimizerState(new_flat, tree, subtrees)


def _tree_get_params(get_params, opt_state):
    states, tree, _ = _leaf_states(opt_state, "get_params")
    return tree_unflatten(tree, [get_params(s) for s in states])


def optimizer(opt_maker):
    """Decorator turning an optimizer written for single arrays into one over pytrees.

    Args:
      opt_maker: a function returning an ``(init, update, get_params)`` triple where
        ``init(x0) -> state`` (any pytree of arrays), ``update(i, g, state) -> state`` (with
        the same structure) and ``get_params(state) -> x``, for one array ``x``.

    Returns:
      a function with ``opt_maker``'s arguments returning an :class:`Optimizer` whose
      functions take pytrees of parameters and an :class:`OptimizerState`.

    Raises:
      TypeError (from ``update_fun``): when the gradients' tree structure is not the
      parameters' one, or ``update`` changes the structure of a state.

    >>> import functrax.numpy as fnp
    >>> @optimizer
    ... def sign_sgd(step_size):
    ...     return (lambda x: x), (lambda i, g, x: x - step_size * fnp.sign(g)), (lambda x: x)
    >>> opt_init, opt_update, get_params = sign_sgd(0.5)
    >>> get_params(opt_update(0, [fnp.array(-3.0)], opt_init([fnp.array(1.0)])))
    [Array(1.5, dtype=float32, weak_type=True)]
    """
    @functools.wraps(opt_maker)
    def tree_opt_maker(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree):
            return _tree_init(init, x0_tree)

        @functools.wraps(update)
        def tree_update(i, grad_tree, opt_state):
            return _tree_update(update, i, grad_tree, opt_state)

        @functools.wraps(get_params)
        def tree_get_params(opt_state):
            return _tree_get_params(get_params, opt_state)

        return Optimizer(tree_init, tree_update, tree_get_params)
    return tree_opt_maker


# --- optimizers ---


def _first(state):
    return state[0]


@optimizer
def sgd(step_size):
    """Stochastic gradient descent: ``x <- x - step_size(i) * g``.

    Args:
      step_size: a positive scalar, or a schedule ``step -> step size``.

    Returns:
      an ``(init_fun, update_fun, get_params)`` :class:`Optimizer`.
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0

    def update(i, g, x):
        return x - step_size(i) * g

    def get_params(x):
        return x

    return Optimizer(init, update, get_params)


@optimizer
def momentum(step_size, mass):
    """SGD with momentum: ``v <- mass * v + g``; ``x <- x - step_size(i) * v``.

    Args:
      step_size: a positive scalar or a schedule.
      mass: the momentum coefficient.
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, fnp.zeros_like(x0)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity

    return init, update, _first


@optimizer
def nesterov(step_size, mass):
    """SGD with Nesterov momentum: ``v <- mass * v + g``;
    ``x <- x - step_size(i) * (mass * v + g)``."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, fnp.zeros_like(x0)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity

    return init, update, _first


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad (Duchi et al. 2011) with momentum: ``G <- G + g**2``;
    ``m <- (1 - momentum) * g / sqrt(G) + momentum * m`` (0 where ``G == 0``);
    ``x <- x - step_size(i) * m``."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, fnp.zeros_like(x0), fnp.zeros_like(x0)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + fnp.square(g)
        g_sq_inv_sqrt = fnp.where(g_sq > 0, 1. / fnp.sqrt(g_sq), 0.0)
        m = (1. - momentum) * (g * g_sq_inv_sqrt) + momentum * m
        return x - step_size(i) * m, g_sq, m

    return init, update, _first


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """RMSProp: ``a <- gamma * a + (1 - gamma) * g**2``;
    ``x <- x - step_size(i) * g / sqrt(a + eps)`` (``eps`` inside the square root)."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, fnp.zeros_like(x0)

    def update(i, g, state):
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + fnp.square(g) * (1. - gamma)
        return x - step_size(i) * g / fnp.sqrt(avg_sq_grad + eps), avg_sq_grad

    return init, update, _first


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """RMSProp with momentum: ``a`` as :func:`rmsprop`;
    ``mom <- momentum * mom + step_size(i) * g / sqrt(a + eps)``; ``x <- x - mom``."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, fnp.zeros_like(x0), fnp.zeros_like(x0)

    def update(i, g, state):
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + fnp.square(g) * (1. - gamma)
        mom = momentum * mom + step_size(i) * g / fnp.sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom

    return init, update, _first


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (Kingma & Ba 2015).

    ``m <- (1 - b1) * g + b1 * m``; ``v <- (1 - b2) * g**2 + b2 * v``; with the bias
    corrections ``mhat = m / (1 - b1**(i + 1))``, ``vhat = v / (1 - b2**(i + 1))`` (``i``
    the 0-based step), ``x <- x - step_size(i) * mhat / (sqrt(vhat) + eps)`` (``eps``
    outside the square root).

    Args:
      step_size: a positive scalar or a schedule.
      b1, b2: the decay rates of the first and second moment estimates.
      eps: added to ``sqrt(vhat)``.
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, fnp.zeros_like(x0), fnp.zeros_like(x0)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * fnp.square(g) + b2 * v
        mhat = m / (1 - fnp.asarray(b1, m.dtype) ** (i + 1))
        vhat = v / (1 - fnp.asarray(b2, m.dtype) ** (i + 1))
        return x - step_size(i) * mhat / (fnp.sqrt(vhat) + eps), m, v

    return init, update, _first


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """AdaMax (Adam with the infinity norm): ``m`` as :func:`adam`;
    ``u <- max(b2 * u, |g|)``; ``x <- x - step_size(i) / (1 - b1**(i + 1)) * m / (u + eps)``.
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, fnp.zeros_like(x0), fnp.zeros_like(x0)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = fnp.maximum(b2 * u, fnp.abs(g))
        x = x - (step_size(i) / (1 - fnp.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
        return x, m, u

    return init, update, _first


def _broadcast_along(ndim, v, axis):
    """The 1-D ``v`` as an ``ndim``-D array varying along ``axis`` only."""
    return v[tuple(slice(None) if d == axis else None for d in range(ndim))]


@optimizer
def sm3(step_size, momentum=0.9):
    """SM3 (Anil et al. 2019, memory-efficient adaptive optimization) with momentum.

    The state keeps one accumulator vector per axis of each parameter; the per-element
    accumulator is their minimum (broadcast) plus ``g**2``, and each vector becomes the
    maximum of it over the other axes. Scalars are handled as shape ``(1,)``.
    """
    step_size = make_schedule(step_size)

    def init(x0):
        x_shape = x0.shape
        x0 = fnp.atleast_1d(x0)
        vs = [fnp.zeros(n, dtype=x0.dtype) for n in x0.shape]
        return x0, fnp.zeros_like(x0), vs, x_shape

    def update(i, g, state):
        x, m, vs, x_shape = state
        vs = [_broadcast_along(g.ndim, v, axis) for axis, v in enumerate(vs)]
        accum = functools.reduce(fnp.minimum, vs) + fnp.square(g)
        accum_inv_sqrt = fnp.where(accum > 0, 1. / fnp.sqrt(accum), 0)
        m = (1. - momentum) * (g * accum_inv_sqrt) + momentum * m
        x = x - step_size(i) * m
        vs = [accum.max(tuple(d for d in range(x.ndim) if d != axis))
              for axis in range(x.ndim)]
        return x, m, vs, x_shape

    def get_params(state):
        x, _, _, x_shape = state
        return x.reshape(x_shape)

    return init, update, get_params


# --- learning-rate schedules ---


def constant(step_size) -> Schedule:
    """The schedule ``i -> step_size``.

    >>> constant(0.1)(100)
    0.1
    """
    def schedule(i):
        return step_size
    return schedule


def exponential_decay(step_size, decay_steps, decay_rate):
    """The schedule ``i -> step_size * decay_rate ** (i / decay_steps)``.

    >>> exponential_decay(1.0, 10, 0.5)(20)
    0.25
    """
    def schedule(i):
        return step_size * decay_rate ** (i / decay_steps)
    return schedule


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
    """The schedule ``i -> step_size / (1 + decay_rate * i / decay_steps)``, with
    ``floor(i / decay_steps)`` when ``staircase``.

    >>> inverse_time_decay(1.0, 10, 1.0)(10)
    0.5
    """
    if staircase:
        def schedule(i):
            return step_size / (1 + decay_rate * fnp.floor(i / decay_steps))
    else:
        def schedule(i):
            return step_size / (1 + decay_rate * i / decay_steps)
    return schedule


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
    """The schedule decaying from ``step_size`` to ``final_step_size`` over
    ``decay_steps`` steps as ``(1 - i / decay_steps) ** power``, then constant.

    >>> polynomial_decay(1.0, 10, 0.0)(5)
    Array(0.5, dtype=float32, weak_type=True)
    """
    def schedule(step_num):
        step_num = fnp.minimum(step_num, decay_steps)
        step_mult = (1 - step_num / decay_steps) ** power
        return step_mult * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries, values):
    """The schedule ``values[k]`` where ``k`` is the number of ``boundaries`` below ``i``
    (``values[0]`` up to and including ``boundaries[0]``, ...).

    Raises:
      ValueError: unless ``boundaries`` and ``values`` are sequences and ``values`` has one
        element more.

    >>> schedule = piecewise_constant([10, 20], [1.0, 0.5, 0.1])
    >>> schedule(10), schedule(11), schedule(25)
    (Array(1., dtype=float32), Array(0.5, dtype=float32), Array(0.1, dtype=float32))
    """
    boundaries = fnp.array(boundaries)
    values = fnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("boundaries and values must be sequences")
    if not boundaries.shape[0] == values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")

    def schedule(i):
        return values[fnp.sum(i > boundaries)]
    return schedule


def make_schedule(scalar_or_schedule) -> Schedule:
    """``scalar_or_schedule`` as a schedule: a callable is returned as is, a scalar becomes
    :func:`constant`.

    Raises:
      TypeError: for anything else (e.g. an array of step sizes).
    """
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if np.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(f"make_schedule: a step size must be a scalar or a callable schedule "
                    f"step -> step size, got {type(scalar_or_schedule)} of shape "
                    f"{np.shape(scalar_or_schedule)}.")


# --- utilities ---


def l2_norm(tree):
    """The l2 norm of a pytree of arrays (all leaves together); useful for weight decay.

    >>> import functrax.numpy as fnp
    >>> l2_norm({"a": fnp.array([3.0]), "b": fnp.array([4.0])})
    Array(5., dtype=float32)
    """
    leaves, _ = tree_flatten(tree)
    return fnp.sqrt(sum(fnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
    """``grad_tree`` scaled by ``max_norm / l2_norm(grad_tree)`` when its norm is at least
    ``max_norm`` (unchanged otherwise).

    >>> import functrax.numpy as fnp
    >>> clip_grads([fnp.array([3.0, 4.0])], 1.0)
    [Array([0.6, 0.8], dtype=float32)]
    """
    norm = l2_norm(grad_tree)

    def normalize(g):
        return fnp.where(norm < max_norm, g, g * (max_norm / norm))
    return tree_map(normalize, grad_tree)


# --- serialization ---


class JoinPoint:
    """Marks the boundary between the parameters' pytree and a leaf's state pytree in
    :func:`unpack_optimizer_state` (a pytree leaf holding ``subtree``)."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree

    def __repr__(self):
        return f"JoinPoint({self.subtree!r})"


def unpack_optimizer_state(opt_state):
    """An :class:`OptimizerState` as a plain pytree (e.g. to pickle it): the parameters'
    tree with a :class:`JoinPoint` holding each leaf's state in place of the leaf.

    >>> import functrax.numpy as fnp
    >>> opt_init, _, _ = momentum(0.1, 0.9)
    >>> state = opt_init({"w": fnp.ones(2)})
    >>> marked = unpack_optimizer_state(state)
    >>> marked["w"].subtree
    (Array([1., 1.], dtype=float32), Array([0., 0.], dtype=float32))
    >>> pack_optimizer_state(marked) == state
    True
    """
    states, tree_def, _ = _leaf_states(opt_state, "unpack_optimizer_state")
    return tree_util.tree_unflatten(tree_def, [JoinPoint(s) for s in states])


def pack_optimizer_state(marked_pytree):
    """The inverse of :func:`unpack_optimizer_state`: the :class:`OptimizerState` of a
    pytree whose leaves are :class:`JoinPoint` s.

    Raises:
      TypeError: when a leaf is not a JoinPoint.
    """
    sentinels, tree_def = tree_flatten(marked_pytree)
    for s in sentinels:
        if not isinstance(s, JoinPoint):
            raise TypeError("pack_optimizer_state: every leaf must be a JoinPoint (as "
                            f"unpack_optimizer_state returns), got {type(s).__name__}.")
    states_flat, subtree_defs = _unzip2(tree_flatten(s.subtree) for s in sentinels)
    return OptimizerState(states_flat, tree_def, subtree_defs)
