"""CONV fusion groups and their Triton implicit-GEMM kernel
(``functrax/lowering/fusion/conv.py``, ``functrax/lowering/triton/conv_groups.py``).

- the plan: ``conv_general_dilated`` plus the elementwise epilogue on its output (bias,
  activation, scaling, conversion, several outputs) is one CONV group; operand producers,
  reductions of the output and a second convolution stay in other groups;
- hypothesis properties over random shapes, strides, paddings (negative ones included),
  lhs / rhs dilations, feature and batch groups and layouts (1-D to 3-D): the kernel in
  Triton's interpreter against the numpy backend, in float32 with an epilogue, and over the
  dtypes (float16, bfloat16, float64, int32, bool, int8 and bfloat16 with
  ``preferred_element_type``) with the interpreter's and the GPU's tile sizes;
- ``relu(conv(x, w) + b)`` under ``jit(..., backend="triton")`` is exactly one kernel;
- the value and gradient of a small CNN on the Triton backend match the numpy backend, every
  convolution of the gradient (lhs-dilated input gradients, weight gradients with swapped
  dimension numbers and batch groups) running as a kernel, with no fallback;
- every generated conv kernel compiles for sm_90.
"""
from __future__ import annotations

from tests import triton_harness as th  # first: sets TRITON_INTERPRET=1 for triton

import dataclasses
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import functrax
import functrax.numpy as fnp
from functrax import lax, nn
from functrax.lowering.fusion.planner import plan_fusion
from functrax.lowering.fusion.types import GroupKind
from functrax.lowering.triton import compile as tcompile
from functrax.lowering.triton import conv_groups
from functrax.lowering.triton.codegen import GPU_CONFIG, INTERPRETER_CONFIG, KernelConfig
from functrax.lowering.triton.rules import UnsupportedError
from functrax.test_util import enable_x64
from tests.test_convolution import _operands, conv_cases

fresh_cache = th.fresh_cache  # autouse: a kernel cache of each test's own
normal = th.normal_from(np.random.default_rng(11))

# the GPU's tile caps (64 x 64 x 32) in the interpreter: several tiles and K steps
GPU_TILES = dataclasses.replace(GPU_CONFIG, hand_written=())
SMALL_TILES = dataclasses.replace(GPU_CONFIG, hand_written=(), max_tile=256)
NHWC = ("NHWC", "HWIO", "NHWC")
_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)


def conv2d(x, w, strides=(1, 1), padding="SAME", **kw):
    return lax.conv_general_dilated(x, w, strides, padding, dimension_numbers=NHWC, **kw)


def kinds(plan):
    return [g.kind for g in plan.groups]


def run_both(fn, *args, config=INTERPRETER_CONFIG, rtol=1e-5, atol=1e-5):
    """The Triton program of ``fn`` (no fallback), its outputs checked against ``jit(fn)``
    (the numpy backend)."""
    prog = th.triton_program(fn, *args, kernel_config=config)
    assert prog.fallbacks == (), prog.fallbacks
    leaves = functrax.tree_util.tree_leaves
    got = prog.run(*[np.asarray(a) for a in leaves(args)])
    want = [np.asarray(w) for w in leaves(functrax.jit(fn)(*args))]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                   atol=atol)
    return prog, got


# --- the plan ---


def test_bias_activation_scale_and_conversion_are_one_conv_group():
    x, w, b = normal(2, 6, 6, 3), normal(3, 3, 3, 4), normal(4)
    fn = lambda x, w, b: (nn.gelu(conv2d(x, w) + b) * 0.5).astype(np.float16)  # noqa: E731
    (g,) = plan_fusion(th.lowered(fn, x, w, b)).groups
    assert g.kind is GroupKind.CONV and g.shape == (2, 6, 6, 4)
    assert g.eqns[0].primitive.name == "conv_general_dilated" and len(g.outputs) == 1


def test_operand_producers_reductions_and_other_convs_stay_outside():
    x, w = normal(2, 6, 6, 3), normal(3, 3, 3, 4)
    fn = lambda x, w: fnp.sum(conv2d(fnp.tanh(x), w * 2.0) ** 2)  # noqa: E731
    plan = plan_fusion(th.lowered(fn, x, w))
    assert kinds(plan) == [GroupKind.ELEMENTWISE, GroupKind.ELEMENTWISE, GroupKind.CONV,
                           GroupKind.REDUCTION]
    w2 = normal(3, 3, 4, 5)
    plan = plan_fusion(th.lowered(lambda x, w, w2: conv2d(nn.relu(conv2d(x, w)), w2), x, w,
                                  w2))
    assert kinds(plan) == [GroupKind.CONV, GroupKind.CONV]
    # a view of an operand is materialized: the kernel reads operands by its own strides
    plan = plan_fusion(th.lowered(lambda x, w: conv2d(x, w[::-1]), x, w))
    assert kinds(plan) == [GroupKind.ELEMENTWISE, GroupKind.CONV]


# --- random convolutions against the numpy backend ---


@settings(max_examples=40, **_SETTINGS)
@given(data=st.data())
def test_property_kernel_matches_numpy_backend(data):
    lhs_shape, rhs_shape, kw = data.draw(conv_cases())
    x, w = _operands(data, lhs_shape, rhs_shape)
    config = data.draw(st.sampled_from([INTERPRETER_CONFIG, SMALL_TILES]), label="config")
    fn = lambda x, w: nn.relu(lax.conv_general_dilated(x, w, **kw) * 2.0 - 0.5)  # noqa: E731
    prog, _ = run_both(fn, x, w, config=config)
    assert kinds(prog.plan) == [GroupKind.CONV] and len(prog.kernels) == 1


_DTYPES = {  # name -> (operand dtype, preferred_element_type, tolerance)
    "float16": (np.float16, None, 1e-2), "bfloat16": (th.BF16, None, 2e-2),
    "float64": (np.float64, None, 1e-12), "int32": (np.int32, None, 0),
    "bool": (np.bool_, None, 0), "int8_to_float32": (np.int8, np.float32, 0),
    "bfloat16_to_float32": (th.BF16, np.float32, 1e-5),
}


def _cast(x, dtype):
    if dtype == np.bool_:
        return x > 0.5
    return (x * 3).astype(dtype) if np.dtype(dtype).kind in "iu" else x.astype(dtype)


@settings(max_examples=25, **_SETTINGS)
@given(data=st.data())
def test_property_dtypes_match_numpy_backend(data):
    lhs_shape, rhs_shape, kw = data.draw(conv_cases(max_spatial=2))
    name = data.draw(st.sampled_from(sorted(_DTYPES)), label="dtype")
    dtype, preferred, tol = _DTYPES[name]
    x, w = (_cast(a, dtype) for a in _operands(data, lhs_shape, rhs_shape, np.float64))
    config = data.draw(st.sampled_from([INTERPRETER_CONFIG, SMALL_TILES]), label="config")
    fn = lambda x, w: lax.conv_general_dilated(  # noqa: E731
        x, w, preferred_element_type=preferred, **kw)
    with enable_x64(dtype == np.float64):
        run_both(fn, x, w, config=config, rtol=tol, atol=tol)


# --- layouts, groups and dilations, one by one ---


@pytest.mark.parametrize("xs, ws, kw", [
    ((2, 3, 11), (4, 3, 3), dict(window_strides=(2,), padding=((-1, 2),), rhs_dilation=(2,))),
    ((1, 7, 2), (3, 2, 5), dict(window_strides=(1,), padding="SAME",
                                dimension_numbers=("NWC", "WIO", "NWC"))),
    ((2, 4, 5, 6), (6, 2, 3, 2), dict(window_strides=(1, 2), padding=((2, 1), (0, 3)),
                                      lhs_dilation=(2, 3), feature_group_count=2)),
    ((2, 5, 6, 4), (3, 3, 1, 4), dict(window_strides=(1, 1), padding="SAME",
                                      dimension_numbers=NHWC, feature_group_count=4)),
    ((4, 3, 5, 4), (6, 3, 2, 3), dict(window_strides=(1, 1), padding="VALID",
                                      batch_group_count=2)),
    ((3, 2, 5, 4), (4, 2, 3, 2), dict(window_strides=(2, 1), padding="VALID",
                                      dimension_numbers=("HNWC", "IHOW", "WCNH"))),
    ((1, 4, 3, 5, 2), (2, 2, 3, 2, 3), dict(window_strides=(1, 2, 1), padding="SAME",
                                            rhs_dilation=(1, 1, 2),
                                            dimension_numbers=("NDHWC", "DHWIO", "NDHWC"))),
], ids=["1d_cropped_dilated", "1d_nwc", "2d_lhs_dilated_groups", "2d_depthwise_nhwc",
        "2d_batch_groups", "2d_odd_layouts", "3d_ndhwc"])
def test_layouts_groups_and_dilations(xs, ws, kw):
    x, w = normal(*xs), normal(*ws)
    prog, _ = run_both(lambda x, w: lax.conv_general_dilated(x, w, **kw), x, w)
    (kernel,) = prog.kernels
    groups = kw.get("feature_group_count", 1) * kw.get("batch_group_count", 1)
    assert kernel.source.grid[2] == groups and "tl.dot(" in kernel.source.text


def test_several_tiles_and_k_steps():
    x, w, b = normal(2, 12, 12, 16), normal(3, 3, 16, 70), normal(70)
    prog, _ = run_both(lambda x, w, b: nn.relu(conv2d(x, w) + b), x, w, b, config=GPU_TILES,
                       rtol=1e-4, atol=1e-4)
    src = prog.kernels[0].source
    assert src.grid == (5, 2, 1) and src.constexprs == {"BLOCK_M": 64, "BLOCK_N": 64,
                                                        "BLOCK_K": 32}


# --- the fused epilogue: one kernel ---


def test_conv_bias_relu_is_exactly_one_kernel():
    x, w, b = normal(2, 7, 7, 3), normal(3, 3, 3, 8), normal(8)
    fn = lambda x, w, b: nn.relu(conv2d(x, w) + b)  # noqa: E731
    c = th.compiled(fn, x, w, b)
    prog = th.program_of(c)
    assert prog.fallbacks == () and len(prog.kernels) == 1
    (group,) = prog.plan.groups
    assert group.kind is GroupKind.CONV
    assert [e.primitive.name for e in group.eqns] == ["conv_general_dilated",
                                                      "broadcast_in_dim", "add", "max"]
    src = prog.kernels[0].source
    assert src.name == "igemm_conv_add_max" and "tl.dot(" in src.text
    assert "triton kernel igemm_conv_add_max" in c.as_text()
    got = np.asarray(c(x, w, b))
    want = np.asarray(functrax.jit(fn)(x, w, b))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert (got == 0).any() and (got > 0).any()  # the relu did something


def _grouped(x, w):
    return conv2d(x, w, feature_group_count=2)


@pytest.mark.parametrize("fn, w_shape", [
    (lambda x, w, b: conv2d(x, w) * 0.25 + 1.0, (3, 3, 4, 6)),
    (lambda x, w, b: fnp.tanh(conv2d(x, w) + b).astype(np.float16), (3, 3, 4, 6)),
    (lambda x, w, b: (conv2d(x, w), nn.relu(conv2d(x, w) + b), conv2d(x, w) > 0),
     (3, 3, 4, 6)),
    (lambda x, w, b: fnp.transpose(nn.relu(conv2d(x, w)), (0, 3, 1, 2)) * 2.0, (3, 3, 4, 6)),
    (lambda x, w, b: nn.silu(_grouped(x, w) + b), (3, 3, 2, 6)),
    (lambda x, w, b: fnp.transpose(_grouped(x, w) * b, (3, 0, 1, 2)), (3, 3, 2, 6)),
    (lambda x, w, b: conv2d(x, w) + x[:, :, :, :1] * b, (3, 3, 4, 6)),  # inputs at the tile
], ids=["scale_shift", "tanh_to_f16", "several_outputs", "transposed_out", "grouped_silu",
        "grouped_transposed_out", "residual"])
def test_epilogues_are_fused(fn, w_shape):
    x, w, b = normal(2, 5, 5, 4), normal(*w_shape), normal(6)
    prog, _ = run_both(fn, x, w, b, rtol=2e-3, atol=2e-3)
    assert kinds(prog.plan) == [GroupKind.CONV] and len(prog.kernels) == 1


# --- the gradient of a small CNN ---


def cnn_loss(params, x):
    w1, b1, w2, b2, w3 = params
    y = nn.relu(conv2d(x, w1) + b1)
    y = nn.gelu(conv2d(y, w2, (2, 2), "VALID", feature_group_count=2) + b2)
    z = conv2d(y, w3, (1, 1), ((1, 0), (0, 1)), rhs_dilation=(2, 1))
    return fnp.mean(z ** 2)


def cnn_args(rng=None):
    rng = rng or np.random.default_rng(0)
    shapes = [(3, 3, 3, 4), (4,), (3, 3, 2, 6), (6,), (2, 2, 6, 5)]
    params = [(rng.normal(size=s) * 0.3).astype(np.float32) for s in shapes]
    return params, rng.normal(size=(2, 9, 9, 3)).astype(np.float32)


def test_cnn_value_and_grad_match_numpy_backend_with_conv_kernels_only():
    params, x = cnn_args()
    step = functrax.value_and_grad(cnn_loss)
    c = functrax.jit(step, backend="triton").lower(params, x).compile()
    prog = th.program_of(c)
    assert prog.fallbacks == ()
    convs = [g for g in prog.plan.groups if "conv_general_dilated" in
             [e.primitive.name for e in g.eqns]]
    assert len(convs) == 8 and all(g.kind is GroupKind.CONV for g in convs)
    params_of = [g.eqns[0].params for g in convs]
    assert any(p["lhs_dilation"] != (1, 1) for p in params_of)  # an input gradient
    assert any(p["batch_group_count"] > 1 for p in params_of)  # a grouped weight gradient
    got = functrax.tree_util.tree_leaves(c(params, x))
    want = functrax.tree_util.tree_leaves(functrax.jit(step)(params, x))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-6)


# --- compiling for sm_90 ---


def _kernels_for_compile():
    params, x = cnn_args()
    progs = [th.triton_program(functrax.value_and_grad(cnn_loss), params, x,
                               kernel_config=GPU_TILES)]
    xs, ws = normal(2, 3, 7), normal(4, 3, 3)
    for dtype in (np.float16, th.BF16, np.int32, np.bool_):
        a, b = _cast(xs, dtype), _cast(ws, dtype)
        progs.append(th.triton_program(lambda a, b: lax.conv(a, b, (1,), "SAME"), a, b,
                                       kernel_config=GPU_TILES))
    a, b = _cast(xs, np.int8), _cast(ws, np.int8)
    progs.append(th.triton_program(
        lambda a, b: lax.conv(a, b, (1,), "SAME", preferred_element_type=np.float32), a, b,
        kernel_config=GPU_TILES))
    with enable_x64():
        a, b = xs.astype(np.float64), ws.astype(np.float64)
        progs.append(th.triton_program(lambda a, b: lax.conv(a, b, (2,), "VALID"), a, b,
                                       kernel_config=GPU_TILES))
    return [k for p in progs for k, g in zip(p.kernels, p.plan.groups)
            if g.kind is GroupKind.CONV]


def test_generated_conv_kernels_compile_for_sm90():
    kernels = _kernels_for_compile()
    assert len(kernels) == 8 + 6
    calls = [(k.fn, k.source.signature, k.source.constexprs, k.source.num_warps)
             for k in kernels]
    compiled = tcompile.compile_many(calls)
    for k, c in zip(kernels, compiled):
        assert c.name == k.source.name and ".target sm_90" in c.ptx
        assert c.cubin[:4] == b"\x7fELF"
    assert all("mma" in c.ptx for c in compiled[:8])  # float32 dots: tf32 tensor cores
    assert "mma" in compiled[8].ptx  # float16


# --- the generated source ---


def test_source_is_deterministic_and_reads_layouts_by_strides():
    x, w = normal(2, 6, 6, 3), normal(3, 3, 3, 4)
    fn = lambda x, w: conv2d(x, w, (2, 2), ((1, 0), (0, 1)), lhs_dilation=(1, 2))  # noqa
    a = th.triton_program(fn, x, w).kernels[0].source
    functrax.clear_caches()
    b = th.triton_program(fn, x, w).kernels[0].source
    assert a.text == b.text and a.key == b.key
    assert "tl.trans(" not in a.text and "% 2 == 0" in a.text  # lhs dilation: holes masked
    # a VALID convolution without lhs dilation needs the row and K masks only
    valid = th.triton_program(lambda x, w: conv2d(x, w, padding="VALID"), x, w)
    assert re.search(r"v\d+ = row_mask & ka_mask\n", valid.kernels[0].source.text)


def test_too_many_groups_is_a_listed_fallback():
    x, w = np.ones((1, 65536, 1), np.float32), np.ones((65536, 1, 1), np.float32)
    closed = th.lowered(lambda x, w: lax.conv_general_dilated(
        x, w, (1,), "VALID", feature_group_count=65536), x, w)
    (group,) = plan_fusion(closed).groups
    with pytest.raises(UnsupportedError, match="65536 groups"):
        conv_groups.generate_conv(group)
    prog = th.triton_program(lambda x, w: lax.conv_general_dilated(
        x, w, (1,), "VALID", feature_group_count=65536), x, w)
    (fb,) = prog.fallbacks
    assert fb.kind is GroupKind.CONV and "65536 groups" in fb.reason


def test_bfloat16_matmul_kernel_is_right():
    """bfloat16 tiles go through tl.dot as exact tf32 products (Triton's interpreter
    multiplied the raw bits of bfloat16 tiles)."""
    x, w = normal(5, 7).astype(th.BF16), normal(7, 6).astype(th.BF16)
    prog, _ = run_both(lambda x, w: x @ w, x, w, config=KernelConfig(hand_written=()),
                       rtol=2e-2, atol=2e-2)
    assert 'input_precision="tf32"' in prog.kernels[0].source.text
