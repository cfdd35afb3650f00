"""Derivatives of every differentiable op-spec entry, checked against finite differences.

For each spec of ``tests.opspec.all_specs()`` with at least one floating (or complex) input,
``check_grads(order=2, modes=("fwd", "rev"))`` runs in float64 (complex128) on one case of
the spec (its first shapes/dtypes/kwargs), with inputs drawn from the spec's domain.
Integer and boolean inputs (indices, masks) are held fixed.

A spec whose derivatives cannot be checked this way is listed in ``NOT_DIFFERENTIABLE``
with the reason; every other spec, including ones added later, is checked, so a new spec
whose derivative is wrong (or missing) fails here.
"""
from __future__ import annotations

import numpy as np
import pytest

import functrax.numpy as fnp
from functrax import dtypes
from functrax.test_util import check_grads, default_gradient_tolerance, enable_x64
from functrax.tree_util import tree_leaves
from tests.opspec import all_specs

_STEP = "piecewise constant (zero derivative) with jumps at sampled points"
_NAN = "NaN/inf inputs or outputs by design: derivatives undefined"
_LOW = "half-precision dtype: finite differences are meaningless at 1e-4 steps"
_TIES = ("max pooling of values with ties (0, 1, 2 by design): a perturbation changes which "
         "element a window selects")
_GENERAL_WINDOW = ("reduce_window with a general computation: reverse mode is undefined (JAX's "
                   "NotImplementedError for its transpose); forward mode is checked in "
                   "tests/test_reduce_window.py")
_ZERO = ("derivative defined as zero (as JAX's defjvp_zero) although the function is not "
         "locally constant")

# spec name -> why check_grads does not apply. Keep reasons specific.
NOT_DIFFERENTIABLE = {
    "rint_halves": _STEP,
    "lax_sign": _STEP + " (the domain cycles through 0)",
    "lax_round_away_from_zero": _STEP + " (the domain cycles through halves)",
    "lax_round_to_nearest_even": _STEP + " (the domain cycles through halves)",
    "sign_complex": _ZERO + ": sign(z) = z/|z| for complex z",
    "nextafter": _ZERO + ": nextafter(x, y) is x up to one ulp",
    "lax_nextafter": _ZERO + ": nextafter(x, y) is x up to one ulp",
    "lax_stop_gradient": "the identity with a zero derivative by definition",
    "lax_sort_nan": _NAN,
    "lax_reduce_max_empty": _NAN + " (max over an empty axis is -inf)",
    "lax_sort_three_operands_two_keys": ("a float sort key with ties (values 0.0/1.0): a "
                                         "perturbation reorders the operands"),
    "at_multiply": ("duplicate indices: scatter_mul gradients w.r.t. the updates need "
                    "unique_indices=True (NotImplementedError, as JAX)"),
    "lax_while_three_steps": ("while_loop: reverse mode is undefined (JAX's error text, "
                              "tested in tests/test_loops.py); forward mode is tested there"),
    "while_loop_data_dependent": ("unbounded while_loop: reverse mode is undefined (JAX's "
                                  "error text, tested in tests/test_composition.py); forward "
                                  "mode, also under vmap and jit, is tested there"),
    "lax_convert_f32_f16": _LOW,
    "lax_convert_f16_f32": _LOW,
    "lax_convert_f32_bf16": _LOW,
    "lax_convert_bf16_f32": _LOW,
    "lax_dot_general_f16_to_f32": _LOW,
    "conv_bf16_preferred_f32": _LOW,
    "conv_f16": _LOW,
    "reduce_window_sum_narrow": _LOW,
    "reduce_window_max_narrow": _LOW,
    "max_pool_jvp_ties": _TIES,
    "max_pool_vjp_ties": _TIES,
    "reduce_window_prod": _GENERAL_WINDOW,
    "reduce_window_argmax": _GENERAL_WINDOW,
    "reduce_window_logsumexp": _GENERAL_WINDOW,
    "random_multinomial_counts_sum_to_n": ("random counts: piecewise constant in p (zero "
                                           "derivative), jumping where a draw changes"),
    "random_multinomial_one_hot": ("random counts: piecewise constant in p (zero "
                                   "derivative), jumping where a draw changes"),
}

# float32 / complex64 inputs are checked in float64 / complex128; other dtypes as they are
_WIDEN = {np.dtype(np.float32): np.dtype(np.float64),
          np.dtype(np.complex64): np.dtype(np.complex128)}


def _inexact(dt) -> bool:
    return dtypes.is_inexact(dt)


def _wide(dt):
    return _WIDEN.get(np.dtype(dt), np.dtype(dt))


def _first_case(spec):
    shapes, dts, kw = next(iter(spec.cases()))
    return shapes, spec.arg_dtypes(dts, len(shapes)), kw


def _differentiable_specs():
    out = []
    for spec in all_specs():
        shapes, dts, _ = _first_case(spec)
        if any(_inexact(d) for d in dts):
            out.append(spec)
    return out


SPECS = _differentiable_specs()
CHECKED = [s for s in SPECS if s.name not in NOT_DIFFERENTIABLE]


def _args(spec):
    """(float args, a function of them) for the spec's first case, in float64."""
    shapes, dts, kw = _first_case(spec)
    rng = np.random.RandomState(0)
    with enable_x64():
        wide = tuple(_wide(d) for d in dts)
        args = spec.make_args(rng, shapes, wide)
    which = [i for i, d in enumerate(dts) if _inexact(d)]
    fixed = {i: a for i, a in enumerate(args) if i not in which}

    def f(*float_args):
        full, it = [], iter(float_args)
        for i in range(len(args)):
            full.append(next(it) if i in which else fnp.asarray(fixed[i]))
        return spec.fn(*full, **kw)
    return tuple(args[i] for i in which), f


def _tolerance(f, float_args):
    """Default (per-dtype) tolerances, unless an output is narrower than float64: then
    that dtype's gradient tolerance, also for the float64 inner products of the VJP check."""
    with enable_x64():
        outs = tree_leaves(f(*[fnp.asarray(a) for a in float_args]))
    full = {np.dtype(np.float64), np.dtype(np.complex128)}
    narrow = [np.dtype(o.dtype) for o in outs
              if dtypes.is_inexact(o.dtype) and np.dtype(o.dtype) not in full]
    if not narrow:
        return None
    return max(default_gradient_tolerance.get(d, 1e-1) for d in narrow)


@pytest.mark.parametrize("spec", CHECKED, ids=[s.name for s in CHECKED])
def test_check_grads(spec):
    float_args, f = _args(spec)
    with np.errstate(all="ignore"):
        tol = _tolerance(f, float_args)
        check_grads(f, float_args, order=2, modes=("fwd", "rev"), atol=tol, rtol=tol)


def test_not_differentiable_names_are_current():
    names = {s.name for s in all_specs()}
    stale = sorted(set(NOT_DIFFERENTIABLE) - names)
    assert not stale, f"NOT_DIFFERENTIABLE lists specs that no longer exist: {stale}"
    no_float = sorted(n for n in NOT_DIFFERENTIABLE
                      if n not in {s.name for s in SPECS})
    assert not no_float, (f"NOT_DIFFERENTIABLE lists specs without floating inputs (they are "
                          f"not checked anyway): {no_float}")
