"""``functrax.lax``: the primitive-level operations, as ``jax.lax``.

Thin wrappers that bind primitives (no implicit broadcasting beyond scalars, no dtype
promotion beyond weak Python scalars). They are defined beside their primitives in
``functrax/primitives/`` (so that transformation rules can use them from below this layer);
structured control flow comes from ``functrax/control_flow/``. This module only gathers
them.

>>> import functrax.lax as lax
>>> lax.add(1.0, 2.0)
Array(3., dtype=float32, weak_type=True)
"""
# ruff: noqa: F401

from functrax.primitives.elementwise import (
    abs, acos, acosh, add, asin, asinh, atan, atan2, atanh, bitwise_and, bitwise_not,
    bitwise_or, bitwise_xor, cbrt, ceil, clamp, conj, convert_element_type, cos, cosh, digamma,
    div, eq, erf, erf_inv, erfc, exp, exp2, expm1, floor, ge, gt, imag, integer_pow, is_finite,
    le, lgamma, log, log1p, logistic, lt, max, min, mul, ne, neg, nextafter, population_count,
    population_count_p, pow, real, rem, round, rsqrt, select, select_n, shift_left,
    shift_right_arithmetic, shift_right_logical, sign, sin, sinh, sqrt, square, stop_gradient,
    sub, tan, tanh,
)
from functrax.primitives.compositions import (
    batch_matmul, broadcast_like, broadcast_shapes, broadcast_to_rank, collapse, dtype,
    dynamic_update_index_in_dim, empty, index_take, scatter_apply, scatter_sub,
    shape_as_value, sort_key_val, split, stack, stage, tile, unstack,
)
from functrax.primitives.elementwise_extra import (
    RoundingMethod, clz, complex, mulhi, reciprocal, reduce_precision,
)
from functrax.primitives.barrier import optimization_barrier
from functrax.lax.sharding_constraint import with_sharding_constraint
from functrax.primitives.rng_bit_generator import RandomAlgorithm, rng_bit_generator
from functrax.primitives.reductions import (
    argmax, argmin, cumlogsumexp, cummax, cummin, cumprod, cumsum, reduce_and, reduce_max,
    reduce_min, reduce_or, reduce_prod, reduce_sum, reduce_xor, sort, top_k,
)
from functrax.primitives.shape import (
    broadcast, broadcast_in_dim, broadcasted_iota, concatenate, expand_dims, full, full_like,
    index_in_dim, iota, pad, reshape, rev, slice, slice_in_dim, squeeze, transpose,
    zeros_like_array,
)
from functrax.primitives.indexing import (
    dynamic_index_in_dim, dynamic_slice, dynamic_slice_in_dim, dynamic_update_slice,
    dynamic_update_slice_in_dim,
)
from functrax.primitives.contraction import (
    DotDimensionNumbers, Precision, PrecisionLike, dot, dot_general,
)
from functrax.primitives.convolution import (
    ConvDimensionNumbers, ConvGeneralDilatedDimensionNumbers, conv, conv_dimension_numbers,
    conv_general_dilated, conv_general_dilated_local, conv_general_dilated_p,
    conv_general_dilated_patches,
    conv_general_permutations, conv_general_shape_tuple, conv_shape_tuple, conv_transpose,
    conv_transpose_shape_tuple, conv_with_general_padding,
)
from functrax.primitives.gather_scatter import (
    GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers, gather, gather_p,
    scatter, scatter_add, scatter_add_p, scatter_max, scatter_max_p, scatter_min,
    scatter_min_p, scatter_mul, scatter_mul_p, scatter_p,
)
from functrax.primitives.windows import (
    padtype_to_pads, reduce, reduce_p, reduce_window, reduce_window_max_p, reduce_window_min_p,
    reduce_window_p, reduce_window_shape_tuple, reduce_window_sum_p, select_and_gather_add_p,
    select_and_scatter_add_p,
)
from functrax.primitives.collectives import (
    all_gather, all_to_all, axis_index, axis_size, pmax, pmean, pmin, ppermute, pshuffle,
    pswapaxes, psum, psum_scatter, pvary,
)
from functrax.primitives.prng import bitcast_convert_type
from functrax.primitives.special import (
    bessel_i0e, bessel_i1e, betainc, igamma, igamma_grad_a, igammac, polygamma,
    random_gamma_grad, zeta,
)
from functrax.primitives.fft import FftType, fft, fft_p
from functrax.control_flow.cond import cond, cond_p, switch
from functrax.control_flow.loops import fori_loop, while_loop, while_p
from functrax.control_flow.scan import map, scan
from functrax.control_flow.linear_solve import custom_linear_solve, custom_root
from functrax.control_flow.associative_scan import associative_scan, platform_dependent
from functrax.lax import linalg


def _export_primitives():
    """The primitive objects, public as JAX's are: ``lax.exp_p`` is the primitive found in a
    jaxpr (the linear-algebra ones are in ``lax.linalg``), so custom interpreters work."""
    from functrax import primitives
    from functrax.core import Primitive
    in_linalg = {n for n in dir(linalg) if n.endswith("_p")}
    return {n: v for n, v in vars(primitives).items()
            if n.endswith("_p") and isinstance(v, Primitive) and n not in in_linalg}


globals().update(_export_primitives())
