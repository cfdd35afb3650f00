"""Learning-rate schedules (as optax): functions ``count -> value``.

A schedule works on a Python int or on an int32 (traced) step count, so it can be passed as
``learning_rate=`` to an optimizer, whose state then holds the count.

>>> s = linear_schedule(1.0, 0.0, transition_steps=10)
>>> float(s(5))
0.5
"""
from __future__ import annotations

from functrax import numpy as fnp

__all__ = [
    "constant_schedule", "cosine_decay_schedule", "exponential_decay", "join_schedules",
    "linear_schedule", "piecewise_constant_schedule", "polynomial_schedule",
    "warmup_cosine_decay_schedule", "warmup_exponential_decay_schedule",
]


def constant_schedule(value):
    """``count -> value``."""
    return lambda count: value


def polynomial_schedule(init_value, end_value, power, transition_steps, transition_begin=0):
    """From ``init_value`` to ``end_value`` over ``transition_steps`` steps (after
    ``transition_begin``): ``(init - end) * (1 - t / transition_steps)**power + end``.

    A non-positive ``transition_steps`` gives the constant ``init_value``.
    """
    if transition_steps <= 0:
        return constant_schedule(init_value)
    transition_begin = max(transition_begin, 0)

    def schedule(count):
        count = fnp.clip(count - transition_begin, 0, transition_steps)
        frac = 1 - count / transition_steps
        return (init_value - end_value) * (frac ** power) + end_value
    return schedule


def linear_schedule(init_value, end_value, transition_steps, transition_begin=0):
    """Linear interpolation from ``init_value`` to ``end_value`` over ``transition_steps``."""
    return polynomial_schedule(init_value, end_value, 1, transition_steps, transition_begin)


def exponential_decay(init_value, transition_steps, decay_rate, transition_begin=0,
                      staircase=False, end_value=None):
    """``init_value * decay_rate ** ((count - transition_begin) / transition_steps)``.

    Args:
      init_value: the value up to ``transition_begin``.
      transition_steps: steps per factor of ``decay_rate`` (non-positive: constant).
      decay_rate: the decay factor (0: constant).
      transition_begin: steps before the decay starts.
      staircase: decay in whole steps (floor of the exponent).
      end_value: a bound the value does not pass (a floor when decaying, a ceiling when
        ``decay_rate > 1``).
    """
    if transition_steps <= 0 or decay_rate == 0:
        return constant_schedule(init_value)
    transition_begin = max(transition_begin, 0)
    clip_fn = None
    if end_value is not None:
        clip_fn = fnp.maximum if decay_rate < 1.0 else fnp.minimum

    def schedule(count):
        decreased_count = count - transition_begin
        p = decreased_count / transition_steps
        if staircase:
            p = fnp.floor(p)
        value = fnp.where(fnp.less_equal(decreased_count, 0), init_value,
                          init_value * fnp.power(decay_rate, p))
        if clip_fn is not None:
            value = clip_fn(value, end_value)
        return value
    return schedule


def cosine_decay_schedule(init_value, decay_steps, alpha=0.0, exponent=1.0):
    """``init_value * ((1 - alpha) * (0.5 * (1 + cos(pi * t / decay_steps)))**exponent +
    alpha)`` with ``t = min(count, decay_steps)``."""
    if not decay_steps > 0:
        raise ValueError(f"The cosine_decay_schedule requires positive decay_steps, got "
                         f"decay_steps={decay_steps}.")

    def schedule(count):
        count = fnp.minimum(count, decay_steps)
        cosine_decay = 0.5 * (1 + fnp.cos(fnp.pi * count / decay_steps))
        decayed = (1 - alpha) * cosine_decay ** exponent + alpha
        return init_value * decayed
    return schedule


def join_schedules(schedules, boundaries):
    """``schedules[i](count - boundaries[i-1])`` on ``[boundaries[i-1], boundaries[i])``.

    >>> s = join_schedules([constant_schedule(1.0), constant_schedule(2.0)], [3])
    >>> float(s(2)), float(s(3))
    (1.0, 2.0)
    """
    schedules, boundaries = list(schedules), list(boundaries)
    if len(schedules) != len(boundaries) + 1:
        raise ValueError(f"join_schedules: {len(schedules)} schedules need "
                         f"{len(schedules) - 1} boundaries, got {len(boundaries)}.")

    def schedule(step):
        output = schedules[0](step)
        for boundary, fn in zip(boundaries, schedules[1:]):
            output = fnp.where(fnp.less(step, boundary), output, fn(step - boundary))
        return output
    return schedule


def warmup_cosine_decay_schedule(init_value, peak_value, warmup_steps, decay_steps,
                                 end_value=0.0, exponent=1.0):
    """Linear warmup from ``init_value`` to ``peak_value`` over ``warmup_steps``, then cosine
    decay to ``end_value`` at ``decay_steps`` (counted from 0, warmup included)."""
    alpha = 0.0 if peak_value == 0.0 else end_value / peak_value
    return join_schedules([
        linear_schedule(init_value, peak_value, warmup_steps),
        cosine_decay_schedule(peak_value, decay_steps - warmup_steps, alpha, exponent),
    ], [warmup_steps])


def warmup_exponential_decay_schedule(init_value, peak_value, warmup_steps, transition_steps,
                                      decay_rate, transition_begin=0, staircase=False,
                                      end_value=None):
    """Linear warmup to ``peak_value`` over ``warmup_steps``, then exponential decay."""
    return join_schedules([
        linear_schedule(init_value, peak_value, warmup_steps),
        exponential_decay(peak_value, transition_steps, decay_rate, transition_begin,
                          staircase, end_value),
    ], [warmup_steps])


def piecewise_constant_schedule(init_value, boundaries_and_scales=None):
    """``init_value`` times every ``scale`` whose boundary the count has reached.

    Args:
      init_value: the initial value.
      boundaries_and_scales: ``{boundary_step: scale}`` (non-negative scales).
    """
    if boundaries_and_scales is not None:
        if not all(s >= 0.0 for s in boundaries_and_scales.values()):
            raise ValueError("`piecewise_constant_schedule` expects non-negative scale "
                             "factors")

    def schedule(count):
        v = init_value
        if boundaries_and_scales is not None:
            for threshold, s in sorted(boundaries_and_scales.items()):
                indicator = fnp.maximum(0.0, fnp.sign(threshold - count))
                v = v * indicator + (1 - indicator) * s * v
        return v
    return schedule
