"""Gradient transformations and optimizers (as optax): pure functions over pytrees.

A :class:`GradientTransformation` is a pair ``(init, update)``: ``init(params) -> state``
and ``update(updates, state, params=None) -> (updates, state)``. States are NamedTuples of
arrays (pytrees), so a whole training step can be jitted. Optimizers are chains of small
transformations, exactly as optax composes them (e.g. ``adam = chain(scale_by_adam(...),
scale_by_learning_rate(lr))``), and follow optax's formulas.

>>> import functrax.numpy as fnp
>>> from functrax import optim
>>> opt = optim.sgd(0.1)
>>> params = {"w": fnp.array([1.0, 2.0])}
>>> state = opt.init(params)
>>> updates, state = opt.update({"w": fnp.array([1.0, 1.0])}, state)
>>> optim.apply_updates(params, updates)
{'w': Array([0.9, 1.9], dtype=float32)}
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

from functrax import core, dtypes, lax
from functrax import numpy as fnp
from functrax.tree_util import tree_leaves, tree_map

__all__ = [
    "AddDecayedWeightsState", "ClipByGlobalNormState", "ClipState", "EmptyState",
    "GradientTransformation", "MaskedNode", "MaskedState", "ScaleByAdamState",
    "ScaleByRStdDevState", "ScaleByRmsState", "ScaleByRssState", "ScaleByScheduleState",
    "ScaleState", "TraceState", "adagrad", "adam", "adamw", "add_decayed_weights",
    "apply_updates", "chain", "clip", "clip_by_global_norm", "global_norm", "identity",
    "masked", "nadam", "rmsprop", "safe_int32_increment", "scale", "scale_by_adam",
    "scale_by_learning_rate", "scale_by_rms", "scale_by_rss", "scale_by_schedule",
    "scale_by_stddev", "set_to_zero", "sgd", "stateless", "trace",
]

NO_PARAMS_MSG = ("You are using a transformation that requires the current value of "
                 "parameters, but you are not passing `params` when calling `update`.")


class GradientTransformation(NamedTuple):
    """``init(params) -> state`` and ``update(updates, state, params=None) -> (updates,
    state)``."""
    init: Callable
    update: Callable


class EmptyState(NamedTuple):
    """The state of a stateless transformation."""


ScaleState = AddDecayedWeightsState = ClipState = ClipByGlobalNormState = EmptyState


class ScaleByScheduleState(NamedTuple):
    count: Any  # int32 scalar: the number of updates so far


class TraceState(NamedTuple):
    trace: Any


class ScaleByAdamState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


class ScaleByRmsState(NamedTuple):
    nu: Any


class ScaleByRStdDevState(NamedTuple):
    mu: Any
    nu: Any


class ScaleByRssState(NamedTuple):
    sum_of_squares: Any


class MaskedState(NamedTuple):
    inner_state: Any


class MaskedNode(NamedTuple):
    """Stands in for a masked-out subtree (a pytree without leaves)."""


# --- helpers ---


def _zero_count():
    return fnp.zeros([], fnp.int32)


def safe_int32_increment(count):
    """``count + 1``, saturating at the int32 maximum."""
    top = np.iinfo(np.int32).max
    return fnp.where(fnp.less(count, top), count + fnp.array(1, fnp.int32),
                     fnp.array(top, fnp.int32))


def _abs_sq(x):
    if dtypes.issubdtype(core.get_aval(x).dtype, np.complexfloating):
        return fnp.real(fnp.conj(x) * x)
    return fnp.square(x)


def _zeros_like(tree, dtype=None):
    return tree_map(lambda x: fnp.zeros_like(x, dtype=dtype), tree)


def _full_like(tree, value):
    return tree_map(lambda x: fnp.full_like(x, value), tree)


def _cast(tree, dtype):
    if dtype is None:
        return tree
    return tree_map(lambda x: fnp.asarray(x).astype(dtype), tree)


def _update_moment(updates, moments, decay, order):
    """``(1 - decay) * g**order + decay * m`` per leaf."""
    return tree_map(lambda g, t: (1 - decay) * (g ** order) + decay * t, updates, moments)


def _update_moment_sq(updates, moments, decay):
    """``(1 - decay) * |g|**2 + decay * m`` per leaf."""
    return tree_map(lambda g, t: (1 - decay) * _abs_sq(g) + decay * t, updates, moments)


def _bias_correction(moment, decay, count):
    """``m / (1 - decay**count)`` per leaf."""
    correction = 1 - decay ** count
    return tree_map(lambda t: t / fnp.asarray(correction).astype(core.get_aval(t).dtype),
                    moment)


def _as_dtype(x, dtype):
    return lax.convert_element_type(fnp.asarray(x), dtype)


# --- basic transformations ---


def identity():
    """The identity transformation (stateless)."""
    return GradientTransformation(lambda params: EmptyState(),
                                  lambda updates, state, params=None: (updates, state))


def set_to_zero():
    """Replaces every update by zeros (freezes parameters)."""
    return GradientTransformation(
        lambda params: EmptyState(),
        lambda updates, state, params=None: (tree_map(fnp.zeros_like, updates), state))


def stateless(f):
    """A stateless transformation from ``f(updates, params) -> updates``."""
    def update(updates, state, params=None):
        return f(updates, params), state
    return GradientTransformation(lambda params: EmptyState(), update)


def scale(step_size):
    """Multiplies updates by ``step_size``."""
    def update(updates, state, params=None):
        return tree_map(lambda g: step_size * g, updates), state
    return GradientTransformation(lambda params: EmptyState(), update)


def scale_by_schedule(step_size_fn):
    """Multiplies updates by ``step_size_fn(count)``; the state counts the updates."""
    if not callable(step_size_fn):
        raise TypeError(f"scale_by_schedule: step_size_fn must be callable (count -> step "
                        f"size), got {type(step_size_fn).__name__}.")

    def update(updates, state, params=None):
        step_size = step_size_fn(state.count)
        updates = tree_map(lambda g: _as_dtype(step_size, core.get_aval(g).dtype) * g, updates)
        return updates, ScaleByScheduleState(count=safe_int32_increment(state.count))
    return GradientTransformation(lambda params: ScaleByScheduleState(count=_zero_count()),
                                  update)


def scale_by_learning_rate(learning_rate, *, flip_sign=True):
    """Scales by ``-learning_rate`` (a number or a schedule ``count -> rate``)."""
    m = -1 if flip_sign else 1
    if callable(learning_rate):
        return scale_by_schedule(lambda count: m * learning_rate(count))
    return scale(m * learning_rate)


def trace(decay, nesterov=False, accumulator_dtype=None):
    """Momentum: ``t = g + decay * t``; updates are ``t`` (or ``g + decay * t`` with
    Nesterov)."""
    def init(params):
        return TraceState(trace=_zeros_like(params, dtype=accumulator_dtype))

    def update(updates, state, params=None):
        f = lambda g, t: g + decay * t  # noqa: E731
        new_trace = tree_map(f, updates, state.trace)
        updates = tree_map(f, updates, new_trace) if nesterov else new_trace
        return updates, TraceState(trace=_cast(new_trace, accumulator_dtype))
    return GradientTransformation(init, update)


def scale_by_adam(b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None, *,
                  nesterov=False):
    """Adam's rescaling: ``mu_hat / (sqrt(nu_hat + eps_root) + eps)`` with bias-corrected
    first and second moments (Nesterov momentum with ``nesterov=True``, as NAdam)."""
    def init(params):
        return ScaleByAdamState(count=_zero_count(), mu=_zeros_like(params, dtype=mu_dtype),
                                nu=_zeros_like(params))

    def update(updates, state, params=None):
        mu = _update_moment(updates, state.mu, b1, 1)
        nu = _update_moment_sq(updates, state.nu, b2)
        count_inc = safe_int32_increment(state.count)
        if nesterov:
            mu_hat = tree_map(lambda m, g: b1 * m + (1 - b1) * g,
                              _bias_correction(mu, b1, safe_int32_increment(count_inc)),
                              _bias_correction(updates, b1, count_inc))
        else:
            mu_hat = _bias_correction(mu, b1, count_inc)
        nu_hat = _bias_correction(nu, b2, count_inc)
        updates = tree_map(lambda m, v: m / (fnp.sqrt(v + eps_root) + eps), mu_hat, nu_hat)
        return updates, ScaleByAdamState(count=count_inc, mu=_cast(mu, mu_dtype), nu=nu)
    return GradientTransformation(init, update)


def scale_by_rms(decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt=True):
    """RMSProp's rescaling ``g / sqrt(nu + eps)``, ``nu`` an EMA of ``g**2``."""
    def init(params):
        return ScaleByRmsState(nu=_full_like(params, initial_scale))

    def update(updates, state, params=None):
        nu = _update_moment_sq(updates, state.nu, decay)
        if eps_in_sqrt:
            updates = tree_map(lambda g, n: g * lax.rsqrt(n + eps), updates, nu)
        else:
            updates = tree_map(lambda g, n: g / (fnp.sqrt(n) + eps), updates, nu)
        return updates, ScaleByRmsState(nu=nu)
    return GradientTransformation(init, update)


def scale_by_stddev(decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt=True):
    """Centered RMSProp's rescaling ``g / sqrt(nu - mu**2 + eps)``."""
    def init(params):
        return ScaleByRStdDevState(mu=_zeros_like(params), nu=_full_like(params, initial_scale))

    def update(updates, state, params=None):
        mu = _update_moment(updates, state.mu, decay, 1)
        nu = _update_moment_sq(updates, state.nu, decay)
        if eps_in_sqrt:
            scaling = tree_map(lambda m, n: lax.rsqrt(n - _abs_sq(m) + eps), mu, nu)
        else:
            scaling = tree_map(lambda m, n: 1 / (fnp.sqrt(n - _abs_sq(m)) + eps), mu, nu)
        updates = tree_map(lambda s, g: s * g, scaling, updates)
        return updates, ScaleByRStdDevState(mu=mu, nu=nu)
    return GradientTransformation(init, update)


def scale_by_rss(initial_accumulator_value=0.1, eps=1e-7):
    """Adagrad's rescaling ``g / sqrt(sum of g**2 + eps)`` (0 where the sum is 0)."""
    def init(params):
        return ScaleByRssState(sum_of_squares=_full_like(params, initial_accumulator_value))

    def update(updates, state, params=None):
        sos = tree_map(lambda g, t: _abs_sq(g) + t, updates, state.sum_of_squares)
        inv = tree_map(lambda t: fnp.where(fnp.greater(t, 0), lax.rsqrt(t + eps), 0.0), sos)
        updates = tree_map(lambda s, g: s * g, inv, updates)
        return updates, ScaleByRssState(sum_of_squares=sos)
    return GradientTransformation(init, update)


def add_decayed_weights(weight_decay=0.0, mask=None):
    """Adds ``weight_decay * params`` to the updates (only where ``mask`` is True)."""
    def update(updates, state, params=None):
        if params is None:
            raise ValueError(NO_PARAMS_MSG)
        return tree_map(lambda g, p: g + weight_decay * p, updates, params), state
    tx = GradientTransformation(lambda params: EmptyState(), update)
    return tx if mask is None else masked(tx, mask)


def masked(inner, mask):
    """Applies ``inner`` only to the leaves where ``mask`` is True; others pass unchanged.

    Args:
      inner: the transformation to mask.
      mask: a pytree of Python bools with the structure of (or a prefix of) the params, or
        a function ``params -> mask``.
    """
    def mask_tree(tree, m):
        def pick(b, sub):
            if not isinstance(b, (bool, np.bool_)):
                raise TypeError(f"masked: mask leaves must be Python bools, got "
                                f"{type(b).__name__}. The mask is static: it decides which "
                                "leaves the inner transformation sees.")
            return sub if b else MaskedNode()
        return tree_map(pick, m, tree)

    def init(params):
        m = mask(params) if callable(mask) else mask
        return MaskedState(inner_state=inner.init(mask_tree(params, m)))

    def update(updates, state, params=None):
        m = mask(updates) if callable(mask) else mask
        masked_params = None if params is None else mask_tree(params, m)
        new, inner_state = inner.update(mask_tree(updates, m), state.inner_state,
                                        masked_params)
        merged = tree_map(lambda b, n, o: n if b else o, m, new, updates)
        return merged, MaskedState(inner_state=inner_state)
    return GradientTransformation(init, update)


def clip(max_delta):
    """Clips every update element to ``[-max_delta, max_delta]``."""
    def update(updates, state, params=None):
        return tree_map(lambda g: fnp.clip(g, -max_delta, max_delta), updates), state
    return GradientTransformation(lambda params: EmptyState(), update)


def global_norm(updates):
    """The L2 norm of all the leaves of ``updates`` together."""
    leaves = tree_leaves(updates)
    if not leaves:
        return fnp.zeros([], fnp.float32)
    return fnp.sqrt(sum(fnp.sum(_abs_sq(x)) for x in leaves))


def clip_by_global_norm(max_norm):
    """Rescales the updates to global norm ``max_norm`` when their norm exceeds it.

    >>> import functrax.numpy as fnp
    >>> tx = clip_by_global_norm(1.0)
    >>> tx.update({"a": fnp.array([3.0, 4.0])}, tx.init(None))[0]["a"]
    Array([0.6, 0.8], dtype=float32)
    """
    def update(updates, state, params=None):
        g_norm = global_norm(updates)
        trigger = fnp.less(g_norm, max_norm)

        def clip_fn(t):
            return fnp.where(trigger, t, (t / g_norm.astype(core.get_aval(t).dtype)) * max_norm)
        return tree_map(clip_fn, updates), state
    return GradientTransformation(lambda params: EmptyState(), update)


def chain(*transforms):
    """Applies ``transforms`` in sequence; the state is the tuple of their states.

    >>> tx = chain(clip_by_global_norm(1.0), scale(-0.1))
    """
    for i, t in enumerate(transforms):
        if not isinstance(t, GradientTransformation):
            raise TypeError(f"chain: argument {i} is a {type(t).__name__}, not a "
                            "GradientTransformation (an (init, update) pair).")
    init_fns = tuple(t.init for t in transforms)
    update_fns = tuple(t.update for t in transforms)

    def init(params):
        return tuple(fn(params) for fn in init_fns)

    def update(updates, state, params=None):
        if not isinstance(state, tuple) or len(state) != len(update_fns):
            n = len(state) if isinstance(state, tuple) else type(state).__name__
            raise ValueError(f"chain: expected a tuple of {len(update_fns)} states (one per "
                             f"chained transformation), got {n}. Pass the state that this "
                             "chain's init returned.")
        new_state = []
        for s, fn in zip(state, update_fns):
            updates, s = fn(updates, s, params)
            new_state.append(s)
        return updates, tuple(new_state)
    return GradientTransformation(init, update)


def apply_updates(params, updates):
    """``params + updates`` per leaf, keeping each parameter's dtype."""
    def add(p, u):
        p = fnp.asarray(p)
        return fnp.asarray(p + u).astype(core.get_aval(p).dtype)
    return tree_map(add, params, updates)


# --- optimizers ---


def sgd(learning_rate, momentum=None, nesterov=False, accumulator_dtype=None):
    """Stochastic gradient descent, with optional (Nesterov) momentum.

    ``t = g + momentum * t``; ``params -= learning_rate * t`` (``g + momentum * t`` with
    Nesterov). ``learning_rate`` may be a schedule.
    """
    return chain(trace(decay=momentum, nesterov=nesterov, accumulator_dtype=accumulator_dtype)
                 if momentum is not None else identity(),
                 scale_by_learning_rate(learning_rate))


def adam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None, *,
         nesterov=False):
    """Adam: ``params -= lr * mu_hat / (sqrt(nu_hat + eps_root) + eps)``.

    ``mu``, ``nu`` are EMAs (decays ``b1``, ``b2``) of ``g`` and ``g**2``;
    ``mu_hat = mu / (1 - b1**t)``, ``nu_hat = nu / (1 - b2**t)`` at step ``t = 1, 2, ...``.

    >>> import functrax.numpy as fnp
    >>> opt = adam(0.1)
    >>> upd, _ = opt.update(fnp.array([2.0]), opt.init(fnp.array([0.0])))
    >>> fnp.round(upd, 4)
    Array([-0.1], dtype=float32)
    """
    return chain(scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root, mu_dtype=mu_dtype,
                               nesterov=nesterov),
                 scale_by_learning_rate(learning_rate))


def nadam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None):
    """Adam with Nesterov momentum (``adam(..., nesterov=True)``)."""
    return adam(learning_rate, b1, b2, eps, eps_root, mu_dtype, nesterov=True)


def adamw(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None,
          weight_decay=1e-4, mask=None, *, nesterov=False):
    """Adam with decoupled weight decay:
    ``params -= lr * (adam_direction + weight_decay * params)``.

    ``mask`` (a pytree of bools or a function of the params) limits the decay to some
    leaves.
    """
    return chain(scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root, mu_dtype=mu_dtype,
                               nesterov=nesterov),
                 add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def rmsprop(learning_rate, decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt=True,
            centered=False, momentum=None, nesterov=False):
    """RMSProp: ``params -= lr * g / sqrt(nu + eps)`` (``nu - mu**2`` when centered),
    optionally followed by momentum on the scaled updates."""
    scaler = (scale_by_stddev if centered else scale_by_rms)(
        decay=decay, eps=eps, initial_scale=initial_scale, eps_in_sqrt=eps_in_sqrt)
    return chain(scaler, scale_by_learning_rate(learning_rate),
                 trace(decay=momentum, nesterov=nesterov) if momentum is not None
                 else identity())


def adagrad(learning_rate, initial_accumulator_value=0.1, eps=1e-7):
    """Adagrad: ``params -= lr * g / sqrt(sum of g**2 + eps)`` (the sum starts at
    ``initial_accumulator_value``)."""
    return chain(scale_by_rss(initial_accumulator_value=initial_accumulator_value, eps=eps),
                 scale_by_learning_rate(learning_rate))
