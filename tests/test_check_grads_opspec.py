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
    **dict.fromkeys(("linalg_eigvals", "linalg_eig_residual"), (
        "eig's JVP computes eigenvectors, whose derivatives are not implemented (JAX's "
        "NotImplementedError): eigenvalues are differentiable once, tested as "
        "scipy_linalg_lax_eigvals in tests/test_scipy_linalg.py")),
    "lax_top_k_ties_axis0": ("top_k of values with ties by design: a perturbation changes "
                             "which element is selected"),
    **dict.fromkeys(("lax_reduce_precision_f16", "lax_reduce_precision_bf16"),
                    "rounding: piecewise constant, while its JVP passes the (rounded) tangent "
                    "through, as JAX's"),
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
    "sort_complex_ties": ("complex values with tied real parts by design (the order is "
                          "lexicographic): a perturbation reorders them"),
    **dict.fromkeys(("special_betainc", "lax_betainc"), (
        "the derivatives in a and b raise ValueError (as JAX); special_betainc_x checks x")),
    **dict.fromkeys(("special_gammainc", "special_gammaincc", "lax_igamma", "lax_igammac"), (
        "the second derivative in a needs one of lax.igamma_grad_a, which has none (as "
        "JAX); special_gammainc_x / special_gammaincc_x check x to order 2, "
        "tests/test_scipy_special.py the first a-derivative")),
    **dict.fromkeys(("lax_igamma_grad_a", "lax_random_gamma_grad"), (
        "no derivative rule (as JAX): a derivative itself, not differentiated again")),
    "lax_polygamma": ("the derivative in m raises ValueError (as JAX); special_polygamma "
                      "holds the integer order fixed"),
    "special_hyp1f1": ("the a/b derivative series are while_loops: reverse mode over them "
                       "raises (as JAX); special_hyp1f1_x checks x"),
    "special_hyp2f1": ("the a/b/c derivatives are forward mode through the series' "
                       "while_loop: reverse mode raises (as JAX); special_hyp2f1_x checks x"),
}

_SCHUR = ("the Schur decomposition has no derivative (JAX's NotImplementedError, tested in "
          "tests/test_scipy_linalg.py)")
_HOUSEHOLDER = ("a Householder reduction (LAPACK's packed form) has no derivative in JAX: "
                "NotImplementedError, tested in tests/test_scipy_linalg.py")
_WHILE = ("QDWH iterates in a while_loop: reverse mode is undefined (as JAX); forward mode "
          "is tested in tests/test_scipy_linalg.py")
NOT_DIFFERENTIABLE.update({
    "scipy_linalg_schur": _SCHUR,
    "scipy_linalg_schur_complex": _SCHUR,
    "scipy_linalg_rsf2csf": _SCHUR + " (its input is a Schur form)",
    "scipy_linalg_sqrtm": _SCHUR + " (sqrtm is computed from it, as JAX)",
    "scipy_linalg_funm": _SCHUR + " (funm is computed from it, as JAX)",
    "scipy_linalg_solve_sylvester": _SCHUR + " (Bartels-Stewart uses it, as JAX)",
    "scipy_linalg_solve_sylvester_eigen": ("eigenvector derivatives are not implemented "
                                           "(JAX's NotImplementedError)"),
    "scipy_linalg_hessenberg": _HOUSEHOLDER,
    "scipy_linalg_lax_hessenberg": _HOUSEHOLDER,
    "scipy_linalg_lax_tridiagonal": _HOUSEHOLDER,
    "scipy_linalg_lax_householder_product": _HOUSEHOLDER,
    "scipy_linalg_lax_ormqr": _HOUSEHOLDER + " (ormqr applies householder_product)",
    "scipy_linalg_lax_eig": ("eigenvector derivatives are not implemented (JAX's "
                             "NotImplementedError)"),
    "scipy_linalg_lax_eigvals": ("eig's JVP computes eigenvectors, so eigenvalues are "
                                 "differentiable once (as JAX); first order is tested in "
                                 "tests/test_scipy_linalg.py"),
    "scipy_linalg_polar_qdwh": _WHILE,
    "scipy_linalg_lax_qdwh": _WHILE,
})

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
