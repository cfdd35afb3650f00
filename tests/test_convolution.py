"""conv_general_dilated and the functions built on it.

- a hypothesis property test over random shapes, strides, paddings (strings and explicit,
  negative ones included), lhs/rhs dilations, feature and batch groups and layouts: eager
  against :func:`tests.opspec.convolution.conv_reference` (a direct implementation of XLA's
  semantics with an explicit loop over output positions), jit against eager, vmap (every
  combination of mapped operands, random axes) against a loop, and forward and reverse
  derivatives against finite differences in float64;
- JAX's semantics and messages: output shapes, SAME / SAME_LOWER splits, the shape helpers,
  the errors of the shape rule, printed params, the cost rule;
- the transformation rules stay convolutions (transposes and vmap are one
  ``conv_general_dilated`` each), half precision accumulates in float32, the Triton backend
  runs it as one implicit-GEMM kernel (tests/test_triton_conv.py tests that kernel);
- ``functrax.numpy.convolve/correlate`` and ``functrax.scipy.signal`` with complex inputs and
  their errors (the real cases are op-spec entries, tests/opspec/convolution.py).
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.signal
from hypothesis import HealthCheck, given, settings, strategies as st

import functrax
import functrax.numpy as fnp
import functrax.scipy.signal as fsignal
from functrax import lax
from functrax.lowering.cost import cost_analysis
from functrax.lowering.numpy import convolution as np_conv
from functrax.test_util import check_grads, enable_x64
from tests.opspec.convolution import conv_reference

# --- random convolutions ---

_LETTERS = "HWD"


def _padding_pair(draw, size):
    lo = draw(st.integers(-min(1, size - 1), 2))
    return lo, max(draw(st.integers(-1, 2)), -(size + lo))  # never a negative padded size


@st.composite
def conv_cases(draw, max_spatial=3):
    """(lhs shape, rhs shape, kwargs of lax.conv_general_dilated)."""
    nsp = draw(st.integers(1, max_spatial), label="spatial dims")
    kind = draw(st.sampled_from(["none", "feature", "batch"]), label="groups")
    g = 1 if kind == "none" else draw(st.integers(2, 3), label="group count")
    fgc, bgc = (g, 1) if kind == "feature" else (1, g) if kind == "batch" else (1, 1)
    n, cg, og = (draw(st.integers(1, 2)) for _ in range(3))
    c = cg * fgc
    letters = _LETTERS[:nsp]
    big = 2 if nsp == 3 else 3
    dim = {ch: dict(size=draw(st.integers(1, 2 * big)), kernel=draw(st.integers(1, big)),
                    stride=draw(st.integers(1, 3)), rhs_dil=draw(st.integers(1, 2)))
           for ch in letters}
    padding = draw(st.sampled_from(["VALID", "SAME", "SAME_LOWER", "explicit"]))
    for d in dim.values():
        d["lhs_dil"] = 1 if padding != "explicit" else draw(st.integers(1, 2))
        d["pad"] = _padding_pair(draw, (d["size"] - 1) * d["lhs_dil"] + 1)
    if draw(st.booleans(), label="default layout"):
        dn, specs = None, ("NC" + letters, "OI" + letters, "NC" + letters)
    else:
        specs = tuple("".join(draw(st.permutations(list(base + letters))))
                      for base in ("NC", "OI", "NC"))
        dn = specs
    order = [ch for ch in specs[1] if ch not in "OI"]  # params follow the rhs spec's order
    sizes_l = dict(N=n * bgc, C=c, **{ch: dim[ch]["size"] for ch in letters})
    sizes_r = dict(O=og * g, I=cg if kind == "feature" else c,
                   **{ch: dim[ch]["kernel"] for ch in letters})

    def param(key):
        return tuple(dim[ch][key] for ch in order)

    kw = dict(window_strides=param("stride"),
              padding=list(param("pad")) if padding == "explicit" else padding,
              lhs_dilation=param("lhs_dil"), rhs_dilation=param("rhs_dil"),
              dimension_numbers=dn, feature_group_count=fgc, batch_group_count=bgc)
    return (tuple(sizes_l[ch] for ch in specs[0]), tuple(sizes_r[ch] for ch in specs[1]), kw)


def _operands(data, lhs_shape, rhs_shape, dtype=np.float32):
    rng = np.random.RandomState(data.draw(st.integers(0, 2**16), label="seed"))
    return (rng.uniform(-2, 2, lhs_shape).astype(dtype),
            rng.uniform(-2, 2, rhs_shape).astype(dtype))


def _conv(kw):
    return lambda x, w: lax.conv_general_dilated(x, w, **kw)


_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(max_examples=60, **_SETTINGS)
@given(data=st.data())
def test_property_eager_and_jit_match_reference(data):
    lhs_shape, rhs_shape, kw = data.draw(conv_cases())
    x, w = _operands(data, lhs_shape, rhs_shape)
    want = conv_reference(x, w, **kw)
    got = lax.conv_general_dilated(x, w, **kw)
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(functrax.jit(_conv(kw))(x, w)), np.asarray(got))


@settings(max_examples=40, **_SETTINGS)
@given(data=st.data())
def test_property_vmap_matches_loop(data):
    lhs_shape, rhs_shape, kw = data.draw(conv_cases(max_spatial=2))
    size = data.draw(st.integers(1, 3), label="batch size")
    which = data.draw(st.sampled_from(["lhs", "rhs", "both"]))
    examples = [_operands(data, lhs_shape, rhs_shape) for _ in range(size)]
    axes = [data.draw(st.integers(0, len(lhs_shape))) if which != "rhs" else None,
            data.draw(st.integers(0, len(rhs_shape))) if which != "lhs" else None]
    batched = [np.stack([e[i] for e in examples], ax) if ax is not None else examples[0][i]
               for i, ax in enumerate(axes)]
    got = functrax.vmap(_conv(kw), in_axes=tuple(axes))(*batched)
    want = [lax.conv_general_dilated(ex[0] if axes[0] is not None else examples[0][0],
                                     ex[1] if axes[1] is not None else examples[0][1], **kw)
            for ex in examples]
    np.testing.assert_allclose(np.asarray(got), np.stack([np.asarray(o) for o in want]),
                               rtol=1e-5, atol=1e-5)
    jaxpr = functrax.make_jaxpr(functrax.vmap(_conv(kw), in_axes=tuple(axes)))(*batched)
    convs = [e for e in jaxpr.jaxpr.eqns if e.primitive is lax.conv_general_dilated_p]
    assert len(convs) == 1, "vmap of a convolution must stay one convolution"


@settings(max_examples=25, **_SETTINGS)
@given(data=st.data())
def test_property_grads_match_finite_differences(data):
    lhs_shape, rhs_shape, kw = data.draw(conv_cases(max_spatial=2))
    x, w = _operands(data, lhs_shape, rhs_shape, np.float64)
    check_grads(_conv(kw), (x, w), order=1, modes=("fwd", "rev"))


# --- JAX's semantics: shapes, paddings, helpers ---


def test_same_padding_puts_the_odd_element_high_and_same_lower_low():
    assert lax.padtype_to_pads((5,), (4,), (1,), "SAME") == [(1, 2)]
    assert lax.padtype_to_pads((5,), (4,), (1,), "SAME_LOWER") == [(2, 1)]
    assert lax.padtype_to_pads((7, 6), (3, 3), (2, 3), "SAME") == [(1, 1), (0, 0)]
    assert lax.padtype_to_pads((4,), (3,), (3,), "same") == [(1, 1)]
    assert lax.padtype_to_pads((4, 4), (3, 3), (1, 1), "VALID") == [(0, 0), (0, 0)]
    with pytest.raises(RuntimeError, match="Unrecognized padding type"):
        lax.padtype_to_pads((4,), (3,), (1,), "FULL")
    x, w = np.arange(5.0, dtype=np.float32)[None, None], np.ones((1, 1, 4), np.float32)
    assert np.asarray(lax.conv(x, w, (1,), "SAME")).tolist() == [[[3., 6., 10., 9., 7.]]]
    assert np.asarray(lax.conv_general_dilated(x, w, (1,), "SAME_LOWER")).tolist() == [
        [[1., 3., 6., 10., 9.]]]


def test_output_shape_formula():
    assert lax.conv_shape_tuple((2, 3, 9), (4, 3, 3), (2,), "VALID") == (2, 4, 4)
    assert lax.conv_shape_tuple((2, 3, 9, 9), (4, 3, 3, 3), (2, 3), ((1, 1), (0, 2)),
                                batch_group_count=2) == (1, 4, 5, 3)
    assert lax.conv_general_shape_tuple((1, 7, 8, 3), (3, 3, 3, 16), (2, 2), "SAME",
                                        ("NHWC", "HWIO", "NHWC")) == (1, 4, 4, 16)
    assert lax.conv_transpose_shape_tuple((1, 4, 4, 3), (3, 3, 3, 8), (2, 2), "SAME",
                                          ("NHWC", "HWIO", "NHWC")) == (1, 8, 8, 8)
    x = np.zeros((2, 3, 10, 7), np.float32)
    w = np.zeros((4, 3, 3, 2), np.float32)
    out = lax.conv_general_dilated(x, w, (3, 2), ((1, 2), (-1, 0)), lhs_dilation=(2, 1),
                                   rhs_dilation=(2, 3))
    # H: dilated input 19, padded 22, dilated kernel 5: (22 - 5) // 3 + 1 = 6;
    # W: padded 6, dilated kernel 4: (6 - 4) // 2 + 1 = 2
    assert out.shape == (2, 4, 6, 2)
    empty = lax.conv_general_dilated(np.zeros((1, 1, 2), np.float32),
                                     np.zeros((1, 1, 3), np.float32), (1,), "VALID")
    assert empty.shape == (1, 1, 0)
    assert lax.conv_transpose(np.ones((1, 4, 1), np.float32), np.ones((3, 1, 1), np.float32),
                              (2,), "SAME").shape == (1, 8, 1)


def test_dimension_numbers():
    dn = lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
    assert dn == lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    assert isinstance(dn, lax.ConvDimensionNumbers)
    assert lax.conv_dimension_numbers((1, 2, 3), (1, 2, 3), None) == ((0, 1, 2),) * 3
    assert lax.conv_dimension_numbers((1,) * 4, (1,) * 4, dn) == dn
    assert lax.conv_general_permutations(("NCHW", "HWOI", "NHWC")) == (
        (0, 1, 2, 3), (2, 3, 0, 1), (0, 3, 1, 2))
    # strides follow the order of the rhs spec's spatial letters
    assert lax.conv_general_permutations(("NHWC", "WHIO", "NHWC"))[0] == (0, 3, 2, 1)
    for bad, msg in [(("NHW", "HWIO", "NHWC"), "must have len equal to the ndim"),
                     (("NHWC", "HWIO"), "must be length 3"),
                     (("NHWN", "HWIO", "NHWC"), "must contain the characters 'N' and 'C'"),
                     (("NHWC", "HWIO", "NHDC"), "same set of spatial characters"),
                     ((1, 2, 3), "elements must be strings")]:
        with pytest.raises(TypeError, match=re.escape(msg)):
            lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), bad)
    with pytest.raises(TypeError, match="must be tuple/list or None"):
        lax.conv_dimension_numbers((1, 2, 3), (1, 2, 3), "NCH")
    with pytest.raises(TypeError, match="lhs and rhs ndim to be equal, got 3 and 4"):
        lax.conv_dimension_numbers((1, 2, 3), (1, 2, 3, 4), None)


def _f32(*shape):
    return np.ones(shape, np.float32)


@pytest.mark.parametrize("lhs,rhs,kw,exc,msg", [
    ((2, 6, 5), (4, 2, 3), dict(feature_group_count=4), ValueError,
     "conv_general_dilated feature_group_count must divide lhs feature dimension size, but "
     "4 does not divide 6."),
    ((2, 6, 5), (4, 2, 3), dict(feature_group_count=2), ValueError,
     "conv_general_dilated lhs feature dimension size divided by feature_group_count must "
     "equal the rhs input feature dimension size, but 6 // 2 != 2."),
    ((2, 6, 5), (3, 3, 3), dict(feature_group_count=2), ValueError,
     "conv_general_dilated rhs output feature dimension size must be a multiple of "
     "feature_group_count, but 3 is not a multiple of 2."),
    ((3, 2, 5), (4, 2, 3), dict(batch_group_count=2), ValueError,
     "conv_general_dilated batch_group_count must divide lhs batch dimension size, but 2 "
     "does not divide 3."),
    ((4, 2, 5), (3, 2, 3), dict(batch_group_count=2), ValueError,
     "conv_general_dilated rhs output feature dimension size must be a multiple of "
     "batch_group_count, but 3 is not a multiple of 2."),
    ((4, 4, 5), (4, 2, 3), dict(batch_group_count=2, feature_group_count=2), ValueError,
     "At most one of batch_group_count and feature_group_count may be > 1, got "
     "batch_group_count=2 and feature_group_count=2"),
    ((2, 2, 5), (4, 2, 3), dict(feature_group_count=0), ValueError,
     "feature_group_count must be a positive integer, got 0."),
    ((2, 2, 5), (4, 2, 3), dict(window_strides=(1, 1)), ValueError,
     "window and window_strides must have the same number of dimensions, but got 1 and 2"),
    ((2, 2, 5), (4, 2, 3), dict(padding=((0, 0), (0, 0))), TypeError,
     "Wrong number of explicit pads for convolution: expected 1, got 2."),
    ((2, 2, 5), (4, 2, 3), dict(padding=((-3, -3),)), ValueError,
     "Negative padding is larger than the size of the corresponding dimension"),
    ((2, 2, 5), (4, 2, 3), dict(window_strides=(0,)), ValueError,
     "window_strides must be positive integers, got (0,)"),
    ((2, 2, 5), (4, 2, 3), dict(rhs_dilation=(1, 1)), ValueError,
     "rhs_dilation must have one entry per spatial dimension (1), got (1, 1)"),
    ((2, 2, 5, 5), (4, 2, 3), {}, TypeError,
     "convolution requires lhs and rhs ndim to be equal, got 4 and 3."),
    ((2, 2, 5), (4, 2, 3), dict(padding="SAME", lhs_dilation=(2,)), ValueError,
     "String padding is not implemented for transposed convolution"),
    ((2, 2, 5), (4, 2, 3), dict(padding="FULL"), RuntimeError,
     "Unrecognized padding type: expected 'VALID' or 'SAME', got FULL."),
    ((2, 2, 5), (4, 2, 3), dict(padding=(1, 2)), ValueError,
     "padding argument to conv_general_dilated should be a string or a sequence of (low, "
     "high) pairs, got (1, 2)"),
])
def test_shape_rule_errors(lhs, rhs, kw, exc, msg):
    kw = dict(dict(window_strides=(1,) * (len(lhs) - 2), padding="VALID"), **kw)
    with pytest.raises(exc, match=re.escape(msg)):
        lax.conv_general_dilated(_f32(*lhs), _f32(*rhs), **kw)


def test_dtype_errors():
    x, w = _f32(1, 2, 5), _f32(3, 2, 2)
    with pytest.raises(TypeError, match=re.escape(
            "lax.conv_general_dilated requires arguments to have the same dtypes, got "
            "float32, float16")):
        lax.conv_general_dilated(x, w.astype(np.float16), (1,), "VALID")
    with pytest.raises(TypeError, match="must not be narrower than the original type"):
        lax.conv_general_dilated(x, w, (1,), "VALID", preferred_element_type=np.float16)
    with pytest.raises(TypeError, match=re.escape("(floating, floating)")):
        lax.conv_general_dilated(x, w, (1,), "VALID", preferred_element_type=np.int32)
    out = lax.conv_general_dilated(x.astype(np.int8), w.astype(np.int8), (1,), "VALID",
                                   preferred_element_type=np.float32)
    assert out.dtype == np.float32 and np.asarray(out).tolist() == [[[4.0] * 4] * 3]


def test_printed_params_are_jaxs():
    x, w = _f32(1, 2, 5), _f32(3, 2, 2)
    text = str(functrax.make_jaxpr(lambda a, b: lax.conv_general_dilated(a, b, (1,), "VALID"))(
        x, w))
    params = ("batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2), "
              "rhs_spec=(0, 1, 2), out_spec=(0, 1, 2)) feature_group_count=1 lhs_dilation=(1,) "
              "padding=((0, 0),) precision=None preferred_element_type=None "
              "rhs_dilation=(1,) window_strides=(1,)")
    assert " ".join(text.split()).find(f"conv_general_dilated[ {params} ] a b") > 0, text
    text = str(functrax.make_jaxpr(lambda a, b: lax.conv_general_dilated(
        a, b, (2,), "SAME", preferred_element_type=np.float32,
        dimension_numbers=("NWC", "WIO", "NWC")))(_f32(1, 5, 2), _f32(2, 2, 3)))
    assert "preferred_element_type=float32" in text and "padding=((0, 1),)" in text
    assert "ConvDimensionNumbers(lhs_spec=(0, 2, 1), rhs_spec=(2, 1, 0), out_spec=(0, 2, 1))" \
        in text


def test_cost_rule_counts_window_times_group_features():
    x, w = _f32(2, 6, 8, 8), _f32(4, 3, 3, 3)
    jaxpr = functrax.make_jaxpr(lambda a, b: lax.conv_general_dilated(
        a, b, (1, 1), "SAME", feature_group_count=2))(x, w)
    # output 2*4*8*8 elements, each 3*3 window positions times 3 features of its group
    assert cost_analysis(jaxpr)["flops"] == 2 * (2 * 4 * 8 * 8) * (3 * 3 * 3)


# --- the rules stay convolutions; precision ---


def _prims(jaxpr):
    return [e.primitive.name for e in jaxpr.jaxpr.eqns]


@pytest.mark.parametrize("kw", [dict(feature_group_count=2), dict(batch_group_count=2),
                                dict(lhs_dilation=(2, 1), rhs_dilation=(1, 2))])
def test_transposes_are_convolutions(kw):
    x, w = _f32(4, 4, 5, 6), _f32(4, 2 if "feature_group_count" in kw else 4, 2, 3)
    f = lambda a, b: fnp.sum(lax.conv_general_dilated(a, b, (2, 1), ((1, 0), (0, 1)), **kw))
    prims = _prims(functrax.make_jaxpr(functrax.grad(f, argnums=(0, 1)))(x, w))
    assert prims.count("conv_general_dilated") == 3  # forward, lhs and rhs cotangents
    heavy = set(prims) - {"conv_general_dilated", "reshape", "transpose", "rev",
                          "broadcast_in_dim", "reduce_sum"}
    assert not heavy, prims
    with enable_x64():
        rng = np.random.RandomState(0)
        check_grads(f, (rng.randn(*x.shape), rng.randn(*w.shape)), order=2,
                    modes=("fwd", "rev"))


def test_half_precision_accumulates_in_float32():
    rng = np.random.RandomState(0)
    x = rng.uniform(0.9, 1.1, (1, 64, 16)).astype(np.float16)
    w = rng.uniform(0.9, 1.1, (1, 64, 16)).astype(np.float16)
    want32 = conv_reference(x.astype(np.float32), w.astype(np.float32), (1,), "VALID")
    got = lax.conv_general_dilated(x, w, (1,), "VALID")
    assert got.dtype == np.float16
    np.testing.assert_array_equal(np.asarray(got), want32.astype(np.float16))
    xb, wb = x.astype("bfloat16"), w.astype("bfloat16")
    got = lax.conv_general_dilated(xb, wb, (1,), "VALID", preferred_element_type=np.float32)
    want = conv_reference(xb.astype(np.float32), wb.astype(np.float32), (1,), "VALID")
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_grad_with_preferred_element_type_has_operand_dtypes():
    x, w = np.ones((1, 2, 5), np.float16), np.ones((3, 2, 2), np.float16)
    f = lambda a, b: fnp.sum(lax.conv_general_dilated(a, b, (1,), "SAME",
                                                      preferred_element_type=np.float32))
    gx, gw = functrax.grad(f, argnums=(0, 1))(x, w)
    assert gx.dtype == np.float16 and gw.dtype == np.float16
    assert np.asarray(gx).tolist() == [[[3., 6., 6., 6., 6.]] * 2]
    assert np.asarray(gw).tolist() == [[[5., 4.]] * 2] * 3


def test_empty_cotangent_and_size_zero_vmap():
    x, w = _f32(0, 2, 5), _f32(3, 2, 2)
    gx, gw = functrax.grad(lambda a, b: fnp.sum(lax.conv(a, b, (1,), "VALID")),
                           argnums=(0, 1))(x, w)
    assert gx.shape == x.shape and gw.shape == w.shape and not np.asarray(gw).any()
    out = functrax.vmap(lambda a: lax.conv(a, w, (1,), "VALID"))(np.ones((0, 1, 2, 5),
                                                                         np.float32))
    assert out.shape == (0, 1, 3, 4)


def test_numpy_rule_reads_windows_as_one_strided_view():
    x = np.arange(2 * 3 * 8, dtype=np.float32).reshape(2, 3, 8)
    win = np_conv._windows(x, (3,), (2,), (2,))
    assert win.shape == (2, 3, 2, 3) and np.shares_memory(win, x)
    assert win[1, 2, 1].tolist() == x[1, 2, 2:7:2].tolist()


def test_triton_backend_runs_it_as_one_conv_kernel():
    from tests import triton_harness  # noqa: F401 - sets TRITON_INTERPRET=1 for triton
    from functrax.lowering.fusion.types import GroupKind
    from functrax.lowering.triton.backend import compile_triton
    x, w = _f32(1, 2, 6), _f32(3, 2, 3)
    f = lambda a, b: fnp.tanh(lax.conv(a, b, (1,), "SAME")) * 2.0
    prog = compile_triton(functrax.jit(f).lower(x, w).jaxpr)
    assert prog.fallbacks == () and [g.kind for g in prog.plan.groups] == [GroupKind.CONV]
    np.testing.assert_allclose(np.asarray(functrax.jit(f, backend="triton")(x, w)),
                               np.asarray(f(x, w)), rtol=1e-6)


# --- the convenience functions ---


def test_conv_transpose_with_consistent_padding_is_the_input_gradient():
    rng = np.random.RandomState(1)
    x = rng.randn(2, 7, 9, 3).astype(np.float32)        # NHWC
    w = rng.randn(3, 3, 3, 4).astype(np.float32)        # HWIO
    dn, pads, strides = ("NHWC", "HWIO", "NHWC"), ((1, 1), (2, 0)), (2, 2)
    y, vjp = functrax.vjp(lambda a: lax.conv_general_dilated(a, w, strides, pads,
                                                             dimension_numbers=dn), x)
    ct = rng.randn(*y.shape).astype(np.float32)
    got = lax.conv_transpose(ct, w, strides, pads, dimension_numbers=dn, transpose_kernel=True,
                             use_consistent_padding=True)
    np.testing.assert_allclose(np.asarray(got), np.asarray(vjp(ct)[0]), rtol=1e-4, atol=1e-4)


def test_patches_order_is_channel_major():
    x = np.arange(2 * 4, dtype=np.float32).reshape(1, 2, 4)     # N C W
    p = lax.conv_general_dilated_patches(x, (2,), (2,), "VALID")
    assert p.shape == (1, 4, 2)
    assert np.asarray(p)[0].tolist() == [[0., 2.], [1., 3.], [4., 6.], [5., 7.]]


def _complex(rng, *shape):
    return (rng.randn(*shape) + 1j * rng.randn(*shape)).astype(np.complex64)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("na,nv", [(6, 3), (3, 5), (4, 4)])
def test_numpy_convolve_correlate_complex(mode, na, nv):
    rng = np.random.RandomState(na * 10 + nv)
    a, v = _complex(rng, na), _complex(rng, nv)
    np.testing.assert_allclose(np.asarray(fnp.convolve(a, v, mode)), np.convolve(a, v, mode),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(fnp.correlate(a, v, mode)),
                               np.correlate(a, v, mode), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("s1,s2", [((5, 4), (2, 3)), ((2, 3), (4, 4)), ((3, 3), (3, 3))])
def test_scipy_signal_complex(mode, s1, s2):
    rng = np.random.RandomState(sum(s1) + sum(s2))
    a, b = _complex(rng, *s1), _complex(rng, *s2)
    for ours, theirs in [(fsignal.convolve, scipy.signal.convolve),
                         (fsignal.correlate, scipy.signal.correlate),
                         (fsignal.convolve2d, scipy.signal.convolve2d),
                         (fsignal.correlate2d, scipy.signal.correlate2d)]:
        np.testing.assert_allclose(np.asarray(ours(a, b, mode)), theirs(a, b, mode),
                                   rtol=1e-4, atol=1e-4, err_msg=ours.__name__)
    np.testing.assert_allclose(np.asarray(fsignal.correlate2d(a, b, mode, boundary="wrap")),
                               scipy.signal.correlate2d(a, b, mode, boundary="wrap"),
                               rtol=1e-4, atol=1e-4)


def test_numpy_and_scipy_errors():
    v = fnp.ones(3)
    with pytest.raises(ValueError, match=re.escape("convolve() only support 1-dimensional")):
        fnp.convolve(fnp.ones((2, 2)), v)
    with pytest.raises(ValueError, match="correlate: inputs cannot be empty"):
        fnp.correlate(fnp.ones(0), v)
    with pytest.raises(ValueError, match=re.escape("mode must be one of ['full', 'same'")):
        fnp.convolve(v, v, mode="circular")
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        fnp.convolve([1.0, 2.0], v)
    with pytest.raises(ValueError, match="same number of dimensions"):
        fsignal.convolve(fnp.ones((2, 2)), v)
    with pytest.raises(ValueError, match="at least as large as the other in every dimension"):
        fsignal.convolve(fnp.ones((2, 4)), fnp.ones((3, 3)), mode="valid")
    with pytest.raises(ValueError, match="zero-size arrays not supported"):
        fsignal.correlate(fnp.ones((0,)), v)
    with pytest.raises(ValueError, match="expected 'auto', 'fft', or 'direct'"):
        fsignal.convolve(v, v, method="winograd")
    with pytest.raises(NotImplementedError, match="boundary='fill' or 'wrap'"):
        fsignal.convolve2d(fnp.ones((2, 2)), fnp.ones((2, 2)), boundary="symm")
    with pytest.raises(NotImplementedError, match="fillvalue=0"):
        fsignal.correlate2d(fnp.ones((2, 2)), fnp.ones((2, 2)), fillvalue=1.0)
    with pytest.raises(ValueError, match=re.escape("convolve2d() only supports 2-dimensional")):
        fsignal.convolve2d(v, v)


def test_numpy_convolve_under_jit_and_grad():
    a, v = np.arange(5.0, dtype=np.float32), np.array([1.0, -1.0, 0.5], np.float32)
    f = functrax.jit(lambda a, v: fnp.convolve(a, v, mode="same"))
    np.testing.assert_allclose(np.asarray(f(a, v)), np.convolve(a, v, "same"), rtol=1e-6)
    g = functrax.grad(lambda a: fnp.sum(fnp.correlate(a, v, "full") ** 2))(a)
    c = np.correlate(a, v, "full")
    want = np.array([2 * np.sum(c * np.correlate(np.eye(5)[i], v, "full")) for i in range(5)])
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5)


def test_doctests():
    import doctest
    import sys
    for name in ("functrax.primitives.convolution", "functrax.numpy.convolution",
                 "functrax.scipy.signal"):
        result = doctest.testmod(sys.modules[name], optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0 and result.attempted > 0, name


def test_complex_grads():
    rng = np.random.RandomState(3)
    x = rng.randn(1, 2, 5) + 1j * rng.randn(1, 2, 5)
    w = rng.randn(2, 2, 2) + 1j * rng.randn(2, 2, 2)
    check_grads(lambda a, b: lax.conv_general_dilated(a, b, (2,), "SAME", rhs_dilation=(2,)),
                (x, w), order=2, modes=("fwd", "rev"))


# --- the numpy rule's two roads: im2col, and col2im for unit-stride convolutions ---


@settings(max_examples=60, **_SETTINGS)
@given(data=st.data())
def test_property_col2im_road_matches_reference(data):
    """Every unit-stride, ungrouped convolution through ``_shift_add`` (forced), against the
    loop reference: lhs dilation, negative padding, rhs dilation and any layout."""
    lhs_shape, rhs_shape, kw = data.draw(conv_cases())
    kw = {**kw, "window_strides": (1,) * (len(lhs_shape) - 2)}
    if kw["feature_group_count"] > 1 or kw["batch_group_count"] > 1:
        kw = {**kw, "feature_group_count": 1, "batch_group_count": 1}
        spec = kw["dimension_numbers"] or ("NC", "OI")
        lhs_c = lhs_shape[spec[0].index("C")]
        i_axis = spec[1].index("I")
        rhs_shape = tuple(lhs_c if i == i_axis else d for i, d in enumerate(rhs_shape))
    x, w = _operands(data, lhs_shape, rhs_shape)
    want = conv_reference(x, w, **kw)
    saved = np_conv._shift_add_wins
    np_conv._shift_add_wins = lambda x, w, out_sp, strides, groups: (
        0 not in x.shape and 0 not in w.shape and 0 not in out_sp)
    try:
        got = np.asarray(lax.conv_general_dilated(x, w, **kw))
    finally:
        np_conv._shift_add_wins = saved
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_col2im_road_is_taken_for_the_input_gradient():
    ct, w = _f32(4, 6, 6, 8), _f32(3, 3, 4, 8)  # NHWC cotangent, HWIO kernel with O < I
    xt, wt = np.transpose(ct, (0, 3, 1, 2)), np.transpose(w, (2, 3, 0, 1))
    assert np_conv._shift_add_wins(xt, wt, (6, 6), (1, 1), 1)
    assert not np_conv._shift_add_wins(xt, wt, (6, 6), (2, 1), 1)  # strided: im2col
    assert not np_conv._shift_add_wins(xt, wt, (2, 2), (1, 1), 1)  # few outputs: im2col


def test_im2col_matrix_follows_the_memory_order():
    x = _f32(2, 5, 5, 3)  # NHWC
    v = np.transpose(x, (0, 3, 1, 2))  # N C H W view
    win = np_conv._windows(v, (1, 1), (1, 1), (1, 1))
    vv = win.reshape((1, 2, 1, 3, 5, 5, 1, 1))
    a = np_conv._matrix(vv, (0, 2), np_conv._by_stride(vv, (1, 4, 5)),
                        np_conv._by_stride(vv, (3, 6, 7)))
    assert a.shape == (1, 50, 3) and np.shares_memory(a, x)  # a 1x1 kernel: no copy
    rng = np.random.RandomState(0)
    x, w = rng.randn(2, 5, 5, 3).astype(np.float32), rng.randn(3, 3, 3, 4).astype(np.float32)
    dn = ("NHWC", "HWIO", "NHWC")
    out = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn)
    want = conv_reference(x, w, window_strides=(1, 1), padding="SAME", dimension_numbers=dn)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-5)


def test_local_conv_and_patches_keep_a_dot_algorithm_preset():
    x = np.arange(4.0, dtype=np.float32).reshape(1, 1, 4)
    w = np.ones((1, 2, 3), np.float32)
    with functrax.default_matmul_precision("F32_F32_F32"):
        got = lax.conv_general_dilated_local(x, w, (1,), "VALID", (2,))
        jaxpr = functrax.make_jaxpr(
            lambda x: lax.conv_general_dilated_local(x, w, (1,), "VALID", (2,)))(x)
    np.testing.assert_array_equal(np.asarray(got), [[[1.0, 3.0, 5.0]]])
    precisions = [e.params["precision"] for e in jaxpr.jaxpr.eqns if "precision" in e.params]
    assert precisions == ["F32_F32_F32", "F32_F32_F32"]
    assert float(lax.dot(np.ones(3, np.float32), np.ones(3, np.float32),
                         precision="F32_F32_F32")) == 3.0
