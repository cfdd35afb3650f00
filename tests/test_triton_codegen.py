"""The Triton code generator and its CPU runtime (functrax/lowering/triton/).

Fusion groups are built by hand from traced jaxprs (one group holding every equation), run
through Triton's interpreter and compared with the numpy backend (``eval_jaxpr`` of the same
jaxpr). Generated kernels are also compiled to PTX/cubin for sm_90 (``test_compile_*``).
"""
from __future__ import annotations

import contextlib

import os

os.environ["TRITON_INTERPRET"] = "1"  # noqa: E402 - before anything imports triton

import re  # noqa: E402

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import triton  # noqa: E402, F401 - a required dependency, after TRITON_INTERPRET=1

import functrax  # noqa: E402
import functrax.numpy as fnp  # noqa: E402
from functrax import core, lax, nn  # noqa: E402
from functrax import primitives as P  # noqa: E402
from functrax.lowering.fusion import planner as fusion  # noqa: E402
from functrax.lowering.fusion.types import FusionGroup, GroupKind  # noqa: E402
from functrax.lowering.triton import cache as tcache  # noqa: E402
from functrax.lowering.triton import codegen, rules, runtime  # noqa: E402
from functrax.lowering.triton import compile as tcompile  # noqa: E402
from functrax.lowering.triton.codegen import KernelConfig, UnsupportedError  # noqa: E402
from functrax.passes.pipeline import optimize  # noqa: E402
from functrax.sharding import SingleDeviceSharding  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)

F32, F16, I32, U8, I8, BOOL = (np.dtype(t) for t in ("float32", "float16", "int32", "uint8",
                                                     "int8", "bool"))
EW, RED = GroupKind.ELEMENTWISE, GroupKind.REDUCTION
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, 1e-7, -1e-7, 1e-3, 0.5, -0.5,
                    1.0, -1.0, 2.5, -3.7, 10.0, -10.0, 30.0, -30.0, 100.0, -100.0, 1e10, -1e10,
                    3e38, -3e38, 0.9999, -0.9999, 1.0001], F32).reshape(4, 7)
INTS = np.array([0, 1, -1, 2, -2, 7, -7, 13, -13, 100, -100, 2 ** 31 - 1, -2 ** 31, 12345],
                I32).reshape(2, 7)
SHIFTS = np.array([0, 1, 3, 31, 30, 5, 2], I32)
RNG = np.random.default_rng(0)


def normal(*shape, dtype=F32):
    return RNG.normal(size=shape).astype(dtype)


# --- harness ---


@pytest.fixture(scope="module")
def kcache(tmp_path_factory):
    return tcache.KernelCache(str(tmp_path_factory.mktemp("triton_kernels")))


def _x64(args):
    """x64 on while tracing or evaluating a program of 64-bit arguments (kept as they are)."""
    wide = any(np.asarray(a).dtype.itemsize == 8 for a in args)
    return functrax.enable_x64(True) if wide else contextlib.nullcontext()


def trace(fn, *args, opt=True):
    with _x64(args):
        closed = functrax.make_jaxpr(fn)(*args)
    return optimize(closed) if opt else closed


def whole_group(closed, kind=EW, shape=None):
    """One group of every equation of ``closed`` (its reductions set the iteration space)."""
    j = closed.jaxpr
    outs = tuple(dict.fromkeys(v for v in j.outvars if type(v) is core.Var))
    shape, axes = shape or max((v.aval.shape for v in outs), key=np.prod), ()
    if kind is RED:
        red = next(e for e in j.eqns if e.primitive in codegen.REDUCTIONS)
        shape, axes = red.invars[0].aval.shape, tuple(red.params["axes"])
    return FusionGroup(kind, tuple(j.eqns), tuple(j.constvars) + tuple(j.invars), outs, shape,
                       axes)


def reference(closed, group, args):
    with _x64(args):
        vals = core.eval_jaxpr(closed.jaxpr, closed.consts, *[fnp.asarray(a) for a in args])
    by_var = dict(zip(closed.jaxpr.outvars, vals))
    return [np.asarray(by_var[v]) for v in group.outputs]


def assert_matches(got, want, rtol=1e-5, atol=1e-6):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        if g.dtype.kind == "f" or g.dtype == BF16:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                       atol=atol)
        else:
            np.testing.assert_array_equal(g, w)


def check(kcache, fn, *args, kind=EW, config=None, rtol=1e-5, atol=1e-6, opt=True):
    """Trace ``fn``, run its whole-program group in the interpreter, compare with numpy."""
    closed = trace(fn, *args, opt=opt)
    group = whole_group(closed, kind)
    return check_group(kcache, closed, group, args, config, rtol, atol)


def check_group(kcache, closed, group, args, config=None, rtol=1e-5, atol=1e-6):
    kernel = runtime.build_kernel(group, config, cache=kcache)
    got = kernel(*closed.consts, *args)
    assert_matches(got, reference(closed, group, args), rtol, atol)
    return kernel


def rule_keys(group):
    """The (primitive, variant) entries of ``triton_rules`` that lowering ``group`` uses."""
    keys = set()
    for e in group.eqns:
        if e.primitive in codegen.index_rules or e.primitive in codegen.REDUCTIONS:
            continue
        if e.primitive is P.iota_p:
            continue
        ctx = rules.RuleContext(e.primitive, tuple(v.aval for v in e.invars), e.outvars[0].aval,
                                e.params)
        v = rules.variant(e.primitive, ctx)
        keys.add((e.primitive, v) if (e.primitive, v) in rules.triton_rules else e.primitive)
    return keys


# --- a table of lax-level programs covering every entry of triton_rules ---

_UNARY_F = ["neg", "sign", "abs", "floor", "ceil", "is_finite", "exp", "exp2", "log", "log1p",
            "expm1", "tanh", "logistic", "sqrt", "rsqrt", "cbrt", "sin", "cos", "tan", "asin",
            "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc", "square"]
_TOL = {"tan": (2e-5, 1e-6), "erfc": (1e-5, 1e-6), "cbrt": (2e-6, 1e-6)}
POW_X = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 3.0],
                 F32)
POW_Y = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.0, 3.0, -3.0, 0.5, -2.5],
                 F32)
POW_GRID = tuple(np.ascontiguousarray(a) for a in np.broadcast_arrays(POW_X[:, None], POW_Y))
U8S = np.array([0, 1, 2, 7, 100, 200, 255], U8)
BOOLS_A = np.array([True, True, False, False])
BOOLS_B = np.array([True, False, True, False])
CVT = np.array([np.nan, np.inf, -np.inf, 0.0, -0.5, 0.7, -1.9, 2.5, 127.9, 128.2, -128.9,
                -129.5, 255.9, 300.0, 3e9, -3e9, 2147483520.0, -2147483648.0], F32)
with np.errstate(over="ignore"):
    SPECIAL_F16, CVT_F16 = SPECIAL.astype(F16), CVT.astype(F16)


def bcast(op):
    """``op`` on its operands broadcast against each other (broadcast_in_dim in the group)."""
    return lambda x, y: op(*fnp.broadcast_arrays(x, y))


def _lax_programs():
    progs = [(f"{n}_f32", getattr(lax, n), (SPECIAL,)) + _TOL.get(n, ())
             for n in _UNARY_F]
    progs += [
        ("round_away", lambda x: lax.round(x, 0), (SPECIAL,)),
        ("round_even", lambda x: lax.round(x * 2.0, 1), (SPECIAL,)),
        *[(f"integer_pow_{y}", lambda x, y=y: lax.integer_pow(x, y), (SPECIAL,), 2e-6)
          for y in (0, 2, 3, 5, -1, -2)],
        ("stop_gradient", lambda x: lax.stop_gradient(x) + x, (SPECIAL,)),
        ("copy", lambda x: P.copy_p.bind(x) * 2.0, (SPECIAL,)),
        ("name", lambda x: P.name_p.bind(x, name="h") * 2.0, (SPECIAL,)),
        ("sharding_constraint", lambda x: lax.with_sharding_constraint(
            x, SingleDeviceSharding(functrax.devices()[0])) * 2.0, (SPECIAL,)),
        *[(f"{n}_f32_binary", bcast(getattr(lax, n)), (SPECIAL[:, :1], SPECIAL[:1, :]))
          for n in ("add", "sub", "mul", "div", "rem", "max", "min", "eq", "ne", "lt", "le", "gt",
                    "ge")],
        ("atan2", lambda y, x: lax.atan2(y, x), POW_GRID),
        ("pow", lambda x, y: lax.pow(x, y), POW_GRID, 3e-6),
        ("pow_int_exponent", bcast(lax.pow),
         (POW_X[:, None], np.array([0, 1, 2, 3, -1, -2, 7, -7], I32)), 3e-6),
        ("select_bool", lambda c, x, y: lax.select_n(c, x, y), (SPECIAL > 0, SPECIAL, -SPECIAL)),
        ("select_int", lambda c, x, y, z: lax.select_n(c, x, y, z),
         (np.array([[0, 1, 2, 5, -1, 1, 0]], I32), SPECIAL[:1], -SPECIAL[:1], SPECIAL[1:2])),
        ("clamp_f32", lambda x: lax.clamp(np.float32(-2), x, np.float32(3)), (SPECIAL,)),
        ("clamp_i32", lambda x: lax.clamp(np.int32(-5), x, np.int32(50)), (INTS,)),
        ("clamp_u8", lambda x: lax.clamp(np.uint8(3), x, np.uint8(200)), (U8S,)),
        *[(f"{n}_i32", getattr(lax, n), (INTS,)) for n in ("neg", "sign", "abs", "square")],
        ("not_i32", lax.bitwise_not, (INTS,)),
        *[(f"{n}_i32", bcast(getattr(lax, n)), (INTS[:, :, None], INTS[:, None, :]))
          for n in ("add", "sub", "mul", "div", "rem", "max", "min", "bitwise_and",
                    "bitwise_or", "bitwise_xor", "eq", "ne", "lt", "le", "gt", "ge")],
        ("integer_pow_i32", lambda x: lax.integer_pow(x, 3), (INTS,)),
        ("shift_left_i32", bcast(lax.shift_left), (INTS[:, :, None], SHIFTS)),
        ("shift_right_arithmetic_i32", bcast(lax.shift_right_arithmetic),
         (INTS[:, :, None], SHIFTS)),
        ("shift_right_logical_i32", bcast(lax.shift_right_logical),
         (INTS[:, :, None], np.array([0, 1, 31, 32, 40, -1, 4], I32))),
        ("sign_u8", lax.sign, (U8S,)),
        ("neg_u8", lax.neg, (U8S,)),
        ("abs_u8", lax.abs, (U8S,)),
        ("not_u8", lax.bitwise_not, (U8S,)),
        ("population_count_i32", lax.population_count, (INTS,)),
        ("population_count_u8", lax.population_count, (U8S,)),
        ("population_count_i8", lax.population_count, (INTS.astype(I8),)),
        ("clz_i32", lax.clz, (INTS,)),
        ("clz_u8", lax.clz, (U8S,)),
        ("clz_i8", lax.clz, (INTS.astype(I8),)),
        *[(f"{n}_u8", bcast(getattr(lax, n)), (U8S[:, None], U8S[None, :]))
          for n in ("add", "sub", "div", "rem", "max", "min", "lt")],
        ("shift_right_logical_u8", bcast(lax.shift_right_logical),
         (U8S[:, None], np.array([0, 1, 7, 8, 9], U8))),
        ("shift_right_arithmetic_u8", bcast(lax.shift_right_arithmetic),
         (U8S[:, None], np.array([0, 1, 7, 8, 9], U8))),
        ("shift_left_u8", bcast(lax.shift_left), (U8S[:, None], np.array([0, 1, 7], U8))),
        *[(f"{n}_bool", getattr(lax, n), (BOOLS_A, BOOLS_B))
          for n in ("add", "mul", "max", "min", "bitwise_and", "bitwise_or", "bitwise_xor",
                    "eq", "ne", "lt", "le", "gt", "ge")],
        ("not_bool", lax.bitwise_not, (BOOLS_A,)),
        # special functions (computed in float64 in the kernel, as the numpy backend does)
        ("lgamma_f32", lax.lgamma, (SPECIAL,), 1e-5, 1e-5),
        ("digamma_f32", lax.digamma, (SPECIAL,), 1e-5, 1e-5),
        ("erf_inv_f32", lax.erf_inv, (SPECIAL,), 0.0, 0.0),  # XLA's ErfInv32, bit for bit
        ("erf_inv_f64", lax.erf_inv, (SPECIAL.astype(np.float64),), 1e-15, 1e-15),
        ("bessel_i0e_f32", lax.bessel_i0e, (SPECIAL,), 1e-6, 1e-6),
        ("bessel_i1e_f32", lax.bessel_i1e, (SPECIAL,), 1e-6, 1e-6),
        ("conj_f32", lambda x: lax.conj(x) * 2.0, (SPECIAL,)),
        ("nextafter_f32", bcast(lax.nextafter), (SPECIAL[:, :1], SPECIAL[:1, :]), 0.0, 0.0),
        # same-width bitcasts, compared bit for bit (with a float16 register widened to f32)
        ("bitcast_f32_u32", lambda x: P.bitcast_convert_type_p.bind(
            x, new_dtype=np.dtype(np.uint32)), (SPECIAL,)),
        ("bitcast_i32_f32_abs", lambda x: lax.abs(P.bitcast_convert_type_p.bind(
            x, new_dtype=F32)), (INTS,)),
        ("bitcast_f16_i16", lambda x: P.bitcast_convert_type_p.bind(
            x * 2.0, new_dtype=np.dtype(np.int16)), (SPECIAL.astype(F16),)),
    ]
    # reduce_precision bit for bit on random bit patterns (NaNs, infs, subnormals, carries)
    bits = np.random.default_rng(7).integers(0, 2 ** 32, (4, 64), dtype=np.uint64)
    rp_f32 = np.concatenate([SPECIAL.reshape(-1), bits.astype(np.uint32).view(F32).reshape(-1)])
    rp_16 = bits.astype(np.uint16).reshape(-1)
    progs += [(f"reduce_precision_{tag}_e{e}m{m}",
               lambda x, e=e, m=m: lax.reduce_precision(x, e, m), (xs,), 0.0, 0.0)
              for tag, xs in (("f32", rp_f32), ("f16", rp_16.view(F16)),
                              ("bf16", rp_16.view(BF16)))
              for e, m in ((5, 10), (8, 7), (4, 3), (2, 0), (11, 52))]
    cvt = [("f32", I32, CVT), ("f32", U8, CVT), ("f32", I8, CVT), ("f32", BOOL, CVT),
           ("f32", F16, SPECIAL), ("i32", F32, INTS), ("i32", F16, INTS), ("i32", U8, INTS),
           ("i32", BOOL, INTS), ("i32", I8, INTS), ("u8", I32, U8S), ("u8", F32, U8S),
           ("u8", BOOL, U8S), ("u8", I8, U8S), ("bool", F32, BOOLS_A), ("bool", I32, BOOLS_A),
           ("bool", U8, BOOLS_A), ("bool", BOOL, BOOLS_A), ("f32", F32, SPECIAL),
           ("i32", I32, INTS), ("u8", np.dtype(np.uint32), U8S), ("u8", U8, U8S),
           ("f32", BF16, SPECIAL)]
    progs += [(f"convert_{s}_{d.name}",
               lambda x, d=d: P.convert_element_type_p.bind(x, new_dtype=d, weak_type=False),
               (x,)) for s, d, x in cvt]
    progs += [
        ("convert_f16_f32_compute", lambda x: lax.convert_element_type(
            lax.mul(x, x) + x, F32), (SPECIAL_F16,), 1e-3, 1e-3),
        ("f16_gelu", lambda x: nn.gelu(x), (normal(3, 5, dtype=F16),), 2e-3, 2e-3),
        ("convert_f16_i32", lambda x: lax.convert_element_type(x, I32), (CVT_F16,)),
    ]
    progs += [
        ("bf16_compute", lambda x: lax.convert_element_type(
            fnp.exp(x) * x, F32), (normal(3, 5, dtype=BF16),), 1e-2, 1e-2),
        ("bf16_out", lambda x: fnp.tanh(x) + x, (normal(3, 5, dtype=BF16),), 1e-2, 1e-2),
        ("convert_bf16_f16", lambda x: lax.convert_element_type(x, F16),
         (normal(3, 5, dtype=BF16),)),
    ]
    return progs


LAX_PROGRAMS = _lax_programs()
# no-op conversions, which optimize() removes: traced as they are
UNOPTIMIZED = {"integer_pow_0", "convert_bool_bool", "convert_u8_uint8", "convert_f32_float32",
               "convert_i32_int32"}


def trace_prog(name, fn, args):
    return trace(fn, *args, opt=name not in UNOPTIMIZED)


def _saturating_int32(x):
    """float -> int32 as XLA converts: NaN -> 0, out-of-range values saturate."""
    x = np.asarray(x, np.float64)
    return [np.clip(np.trunc(np.nan_to_num(x, nan=0.0)), -2 ** 31, 2 ** 31 - 1).astype(I32)]


# float -> int32 against an independent reference too (XLA's saturation), not only against the
# numpy backend
REFERENCE_OVERRIDES = {"convert_f32_int32": _saturating_int32,
                       "convert_f16_i32": _saturating_int32}


@pytest.mark.parametrize("prog", LAX_PROGRAMS, ids=[p[0] for p in LAX_PROGRAMS])
def test_lax_program_matches_numpy_backend(prog, kcache):
    name, fn, args, *tol = prog
    rtol, atol = (tol + [1e-5, 1e-6][len(tol):])[:2]
    if name in REFERENCE_OVERRIDES:
        closed = trace(fn, *args)
        got = runtime.build_kernel(whole_group(closed), cache=kcache)(*closed.consts, *args)
        assert_matches(got, REFERENCE_OVERRIDES[name](*args))
        return
    check(kcache, fn, *args, rtol=rtol, atol=atol, opt=name not in UNOPTIMIZED)


def test_lax_programs_cover_every_rule():
    used = set()
    for name, fn, args, *_ in LAX_PROGRAMS:
        used |= rule_keys(whole_group(trace_prog(name, fn, args)))
    missing = [k for k in rules.triton_rules if k not in used]
    assert not missing, f"triton_rules entries no test program uses: {missing}"


# --- the op-spec table: every elementwise spec whose primitives have Triton rules ---


def _elementwise_specs():
    from tests.opspec import elementwise
    return [s for s in elementwise.SPECS if "complex" not in s.name]


SPECS = _elementwise_specs()

_IDENTITY = "an identity on the real inputs of these specs: no equation is left to lower"
_REDUCES = "ends in reduce_and (a reduction to a bool scalar), not one elementwise kernel"
# spec name -> why none of its cases is one elementwise Triton kernel. Every other spec of
# SPECS must lower at least one case (test_elementwise_spec_matches_numpy_backend).
NOT_ONE_KERNEL = {
    "positive": _IDENTITY, "real": _IDENTITY, "conj": _IDENTITY, "conjugate": _IDENTITY,
    "round_int": "round of an integer is the identity: no equation is left to lower",
    "imag": "zeros for real inputs: folded to a constant, no equation is left to lower",
    "allclose": _REDUCES, "array_equal": _REDUCES, "array_equal_nan": _REDUCES,
    "array_equiv": _REDUCES,
}
KERNEL_SPECS = [s for s in SPECS if s.name not in NOT_ONE_KERNEL]


def _lowerable(closed):
    j = closed.jaxpr
    if not j.eqns or any(type(v) is not core.Var for v in j.outvars):
        return False
    if len({v.aval.size for v in j.outvars}) > 1:
        return False
    try:
        for v in list(j.invars) + list(j.outvars):
            rules.dtype_class(v.aval.dtype)
        for e in j.eqns:
            if e.primitive in codegen.index_rules or e.primitive is P.iota_p:
                continue
            ctx = rules.RuleContext(e.primitive, tuple(v.aval for v in e.invars),
                                    e.outvars[0].aval, e.params)
            rules.lookup(e.primitive, ctx)
    except UnsupportedError:
        return False
    return True


def spec_cases(spec):
    """(closed, group, args) for every case of ``spec`` whose jaxpr the backend lowers."""
    rng = np.random.RandomState(0)
    for shapes, dts, kw in spec.cases():
        args = spec.make_args(rng, shapes, dts)
        closed = trace(lambda *a, kw=kw: spec.fn(*a, **kw), *args)
        if _lowerable(closed):
            yield closed, whole_group(closed), args


@pytest.mark.parametrize("spec", KERNEL_SPECS, ids=[s.name for s in KERNEL_SPECS])
def test_elementwise_spec_matches_numpy_backend(spec, kcache):
    ran = 0
    for closed, group, args in spec_cases(spec):
        kernel = runtime.build_kernel(group, cache=kcache)
        assert_matches(kernel(*closed.consts, *args), reference(closed, group, args),
                       rtol=max(spec.rtol, 1e-5), atol=max(spec.atol, 1e-6))
        ran += 1
    assert ran, (f"no case of {spec.name} is one elementwise Triton kernel (a primitive without "
                 "a Triton rule?): add the rule, or list the spec in NOT_ONE_KERNEL with why")


def test_not_one_kernel_names_are_current():
    names = {s.name for s in SPECS}
    stale = sorted(n for n in NOT_ONE_KERNEL if n not in names)
    assert not stale, f"NOT_ONE_KERNEL lists specs that no longer exist: {stale}"
    lowered = sorted(s.name for s in SPECS
                     if s.name in NOT_ONE_KERNEL and next(spec_cases(s), None) is not None)
    assert not lowered, f"NOT_ONE_KERNEL lists specs that now lower to one kernel: {lowered}"


def test_most_elementwise_specs_lower():
    lowered = [s.name for s in SPECS if next(spec_cases(s), None) is not None]
    assert len(lowered) >= 100, lowered


# --- layouts: broadcasts, transposes, reshapes, slices, literals, iota ---


def test_broadcast_inputs_read_with_zero_strides(kcache):
    k = check(kcache, lambda x, y, z: x * y + z, normal(5, 1), normal(1, 6), normal(6))
    body = k.source.text.split("mask = offs < 30\n")[1]
    # a column (5, 1) reads row offs // 6, rows (1, 6) and (6,) read column offs % 6 (once)
    assert body.startswith("    v0 = offs // 6\n    v1 = tl.load(in0 + v0, mask=mask)\n"
                           "    v2 = offs % 6\n    v3 = tl.load(in1 + v2, mask=mask)\n")
    assert "v5 = tl.load(in2 + v2, mask=mask)" in body


def test_rank0_inputs_and_literals(kcache):
    check(kcache, lambda s, x: (x > s) | (s > 0.5), np.float32(0.3), normal(4, 3))
    check(kcache, lambda s, t: lax.atan2(s, t) * 2.0, np.float32(-0.3), np.float32(0.0))


def test_transposes_and_reshapes(kcache):
    x = normal(2, 3, 4)
    check(kcache, lambda x: fnp.transpose(fnp.exp(x), (2, 0, 1)) + 1.0, x)
    check(kcache, lambda x, y: fnp.exp(x).reshape(4, 6) * y, x, normal(4, 6))
    k = check(kcache, lambda x, y: fnp.transpose(x, (1, 2, 0)).reshape(12, 2) - y, x,
              normal(12, 2))
    assert "in1 + offs" in k.source.text  # the contiguous operand needs no index arithmetic
    check(kcache, lambda x: (fnp.exp(x).reshape(24), fnp.sin(x).reshape(24)), x)
    check(kcache, lambda x, y: fnp.squeeze(fnp.expand_dims(x, 1) * 2.0, 1) + y, normal(3, 4),
          normal(3, 4))


def test_multiple_outputs_of_different_shapes(kcache):
    check(kcache, lambda x: (x.T + 1.0, fnp.where(x > 0, x, 0.0), x), normal(4, 8))


def test_outputs_smaller_than_the_iteration_are_written_once(kcache):
    v, x = normal(10), normal(6, 10)
    k = check(kcache, lambda v, x: (fnp.exp(v), fnp.exp(v)[None, :] + x, fnp.exp(v) * 2.0),
              v, x)
    assert k.source.text.count("v5 = offs // 10\n    v6 = mask & (v5 == 0)\n") == 1
    assert k.source.text.count("mask=v6)") == 2  # both (10,) outputs where offs // 10 == 0
    k = check(kcache, lambda v, x: (fnp.exp(v), fnp.exp(v)[None, :] + x), v, x, kind=EW,
              config=KernelConfig(max_block=16))
    # an output no full-size output reads: placed by the planner's layout (its axis runs
    # along the iteration's last dim), written once
    k = check(kcache, lambda v, x: (fnp.exp(v), x * 2.0), v, x)
    assert re.search(r"tl.store\(out0 .*mask=v\d+\)", k.source.text), k.source.text
    assert " == 0)" in k.source.text


def test_slices_rev_and_iota(kcache):
    x = normal(6, 9)
    check(kcache, lambda x: x[1:4, ::2] * 3.0, x)
    check(kcache, lambda x: fnp.flip(x, 1) + fnp.flip(x, (0, 1)), x)
    k = check(kcache, lambda x: x + lax.broadcasted_iota(F32, (6, 9), 1)
              - lax.broadcasted_iota(F32, (6, 9), 0), x, opt=False)
    assert "iota" in k.source.text.splitlines()[1]


def test_concatenate_selects_among_shifted_loads(kcache):
    x, y, z = normal(3, 4), normal(3, 2), normal(3, 5)
    k = check(kcache, lambda x, y, z: fnp.concatenate([x, y, z], axis=1) * 2.0, x, y, z)
    assert k.source.text.count("tl.where(") == 2  # three operands, two selects
    check(kcache, lambda x, y: fnp.concatenate([x[:, ::-1], y.T, x[1:]], 0) + 1.0,
          normal(3, 4), normal(4, 2))
    empty = np.zeros((0, 4), F32)
    check(kcache, lambda e, x: fnp.concatenate([e, x, e], 0) - 1.0, empty, x)
    ints, flags = np.arange(6, dtype=I32), np.array([True, False, True])
    check(kcache, lambda a, f: (fnp.concatenate([a, a[::2]]), fnp.concatenate([f, ~f])),
          ints, flags)
    # the operands are computed at the shifted indices (recomputed, never re-indexed wrong)
    check(kcache, lambda x, y: fnp.concatenate([fnp.exp(x), fnp.sin(y)], 0), x, normal(2, 4))
    # a column of a single operand (a constant index along the axis)
    check(kcache, lambda x, y: fnp.concatenate([x, y], 1)[:, 5], x, y)


@pytest.mark.parametrize("config", [(0, 0, 0), (2, 1, 0), (0, 3, 0), (-2, 1, 0), (1, -3, 0),
                                    (1, 2, 1), (0, 0, 2), (-1, -2, 1), (2, -4, 2), (-3, 5, 3)])
def test_pad_with_interior_and_negative_padding(config, kcache):
    x = normal(3, 7)
    check(kcache, lambda x: lax.pad(x, -5.0, ((1, 1, 0), config)) * 2.0, x)
    check(kcache, lambda x: lax.pad(x, -5.0, (config, (0, 0, 0))) + 1.0, normal(7, 2))


def test_pad_in_a_reduction_and_of_ints(kcache):
    x = normal(4, 5)
    check(kcache, lambda x: lax.pad(x, 1.0, ((0, 0, 0), (2, -1, 1))).sum(-1), x, kind=RED)
    ints = np.arange(6, dtype=I32)
    check(kcache, lambda a: lax.pad(a, np.int32(-1), ((1, 2, 2),)) * 3, ints)
    check(kcache, lambda x, v: lax.pad(x, v, ((2, 3, 1),)), normal(4), np.float32(7.5))
    check(kcache, lambda x: lax.pad(x, 2.0, ((1, 2, 1),)), np.zeros(0, F32))  # empty operand


def test_dynamic_update_slice_with_literal_starts(kcache):
    x, u = normal(5, 6), normal(2, 3)
    check(kcache, lambda x, u: lax.dynamic_update_slice(fnp.exp(x), u, (1, 2)) + 1.0, x, u)
    # starts out of range are clamped (as XLA does): the window is [3:5, 0:3]
    check(kcache, lambda x, u: lax.dynamic_update_slice(x, u * 2.0, (7, -4)), x, u)
    check(kcache, lambda x, r: lax.dynamic_update_slice(x, r, (3, 0)), x, normal(1, 6))
    check(kcache, lambda x: lax.dynamic_update_slice(x, x * 2.0, (0, 0)), x)
    ints = np.arange(8, dtype=I32)
    check(kcache, lambda a: lax.dynamic_update_slice(a, a[:3] * 5, (4,)), ints)


def test_scalar_group_and_many_programs(kcache):
    check(kcache, lambda x: fnp.tanh(x) * 2.0, np.float32(0.7))
    k = check(kcache, lambda x: fnp.exp(-x * x), normal(100), config=KernelConfig(max_block=16))
    assert k.source.grid == (7,) and k.source.constexprs == {"BLOCK": 16}
    k = check(kcache, lambda x: x + 1.0, normal(10000))
    assert k.source.grid == (3,) and k.source.constexprs == {"BLOCK": 4096}


def test_zero_size_group_launches_nothing(kcache, monkeypatch):
    monkeypatch.setattr(runtime, "launch", lambda *a: pytest.fail("launched"))
    closed = trace(lambda x: x * 2.0, np.zeros((0, 3), F32))
    (out,) = runtime.build_kernel(whole_group(closed), cache=kcache)(np.zeros((0, 3), F32))
    assert out.shape == (0, 3) and out.dtype == F32


def test_block_size_selection():
    assert codegen.choose_block(1, 4096) == 16
    assert codegen.choose_block(17, 4096) == 32
    assert codegen.choose_block(4096, 4096) == 4096
    assert codegen.choose_block(5000, 4096) == 4096
    assert codegen.choose_block(5000, 1024) == 1024


# --- reductions ---


def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = fnp.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def layernorm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    v = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / fnp.sqrt(v + 1e-5) * g + b


X = normal(6, 10)
XNAN = X.copy()
XNAN[2, 3] = np.nan
RED_PROGRAMS = [
    ("sum", lambda x: x.sum(-1), (X,)),
    ("max_nan", lambda x: x.max(-1), (XNAN,)),
    ("min_nan", lambda x: x.min(-1), (XNAN,)),
    ("sum_prologue_epilogue", lambda x: fnp.sqrt((x * x).sum(-1)) + 1.0, (X,)),
    ("softmax", softmax, (X,)),
    ("softmax_and_row_max", lambda x: (softmax(x), x.max(-1)), (X,)),
    ("layernorm", layernorm, (X, normal(10), normal(10))),
    ("logsumexp", lambda x: nn.logsumexp(x, -1), (X,)),
    ("mean_var", lambda x: (x.mean(-1), fnp.var(x, -1)), (X,)),
    ("int_sum_max_min", lambda x: (x.sum(-1), x.max(-1), x.min(-1)), (INTS.reshape(7, 2),)),
    ("int8_sum_wraps", lambda x: lax.reduce_sum(x, (1,)),
     (np.full((3, 40), 100, I8),)),
    ("uint8_max_min", lambda x: (x.max(-1), x.min(-1)), (U8S.reshape(1, 7),)),
    ("bool_any_all", lambda x: (fnp.any(x, -1), fnp.all(x, -1), lax.reduce_sum(x, (1,))),
     (np.array([[1, 0, 0], [0, 0, 0], [1, 1, 1]], bool),)),
    ("bool_max_min", lambda x: (lax.reduce_max(x, (1,)), lax.reduce_min(x, (1,))),
     (np.array([[1, 0, 0], [0, 0, 0], [1, 1, 1]], bool),)),
    ("f16_sum", lambda x: x.sum(-1), (normal(4, 50, dtype=F16),), 2e-3, 2e-3),
    ("trailing_axes", lambda x: x.sum((1, 2)), (normal(2, 3, 5),)),
    ("leading_axis", lambda x: fnp.exp(x).sum(0), (normal(5, 4),)),
    ("middle_axis", lambda x: x.max(1) * 2.0, (normal(3, 4, 5),)),
    ("full_reduce", lambda x: fnp.abs(x).sum(), (normal(6, 5),)),
    ("empty_rows", lambda x: (x.sum(-1), lax.reduce_max(x, (1,))), (np.zeros((3, 0), F32),)),
    ("broadcast_input", lambda x, y: (x * y).sum(-1), (normal(5, 8), normal(8))),
    ("row_input", lambda x, y: (x - y[:, None]).max(-1) + y, (normal(5, 8), normal(5))),
    ("prod", lambda x: (x.prod(-1), lax.reduce_prod(x * 0.5, (1,))), (X,), 2e-5, 1e-6),
    ("int_prod", lambda x: lax.reduce_prod(x, (1,)), (INTS.reshape(7, 2),)),
    ("argmax_argmin_nan", lambda x: (lax.argmax(x, 1), lax.argmin(x, 1)), (XNAN,)),
    ("argmax_argmin_int", lambda x: (lax.argmax(x, 0), lax.argmin(x, 0)),
     (INTS.reshape(7, 2),)),
    ("argmax_bool_ties", lambda x: (lax.argmax(x, 1), lax.argmin(x, 1)),
     (np.array([[1, 0, 1], [0, 0, 0], [0, 1, 1]], bool),)),
    ("int_bitwise", lambda x: (lax.reduce_and(x, (1,)), lax.reduce_or(x, (1,)),
                               lax.reduce_xor(x, (1,))), (INTS.reshape(7, 2),)),
    ("bool_xor", lambda x: lax.reduce_xor(x, (1,)),
     (np.array([[1, 0, 0], [0, 0, 0], [1, 1, 1], [1, 1, 0]], bool),)),
]


@pytest.mark.parametrize("prog", RED_PROGRAMS, ids=[p[0] for p in RED_PROGRAMS])
def test_reduction_matches_numpy_backend(prog, kcache):
    name, fn, args, *tol = prog
    rtol, atol = (tol + [2e-5, 1e-5][len(tol):])[:2]
    check(kcache, fn, *args, kind=RED, rtol=rtol, atol=atol)


LOOPED = KernelConfig(max_block_r=8, max_tile=32)


@pytest.mark.parametrize("prog", [p for p in RED_PROGRAMS if p[0] in (
    "sum", "max_nan", "softmax", "softmax_and_row_max", "layernorm", "int_sum_max_min",
    "bool_any_all", "leading_axis", "full_reduce", "empty_rows")], ids=lambda p: p[0])
def test_reduction_streams_long_rows(prog, kcache):
    """Rows longer than max_block_r loop over column chunks (one pass per reduction)."""
    name, fn, args, *tol = prog
    k = check(kcache, fn, *args, kind=RED, config=LOOPED, rtol=2e-5, atol=1e-5)
    if args[0].shape[-1] > 8 or name == "full_reduce":
        assert "for k in range(0, " in k.source.text


@pytest.mark.parametrize("config", [None, LOOPED], ids=["whole_rows", "streamed"])
def test_reduction_outputs_in_other_layouts(config, kcache):
    """Transposed full outputs, outputs along the row only, partial row outputs."""
    x, w = normal(6, 10), normal(10)
    fns = [lambda x: (x.sum(-1, keepdims=True) * x).T,
           lambda x, w: ((x * fnp.exp(w)).sum(-1), fnp.exp(w), x.max(-1).reshape(2, 3) * 2.0),
           lambda x: (fnp.transpose(x * 2.0) + 1.0, x.sum(-1))]
    for fn, args in zip(fns, [(x,), (x, w), (x,)]):
        check(kcache, fn, *args, kind=RED, config=config, rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("config", [None, LOOPED], ids=["whole_rows", "streamed"])
def test_concatenate_in_a_reduction(config, kcache):
    x, y = normal(5, 6), normal(5, 3)
    check(kcache, lambda x, y: fnp.concatenate([x, y], 1).sum(-1), x, y, kind=RED,
          config=config)
    check(kcache, lambda x, y: fnp.concatenate([x, x * 2.0], 0).max(0), x, y, kind=RED,
          config=config)


def test_reduction_tiles_many_rows(kcache):
    k = check(kcache, softmax, normal(300, 7), kind=RED, config=KernelConfig(max_tile=64))
    assert k.source.constexprs == {"BLOCK_M": 8, "BLOCK_R": 8} and k.source.grid == (38,)


# --- determinism, golden source, cache ---

GOLDEN = '''\
# Generated by functrax.lowering.triton.codegen; do not edit.
# elementwise[2, 3]: exp broadcast_in_dim mul
# in0: f32[2,3]
# in1: f32[3]
# out0: f32[2,3]
import triton
import triton.language as tl


@triton.jit
def fused_exp_mul(in0, in1, out0, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < 6
    v0 = tl.load(in0 + offs, mask=mask)
    v1 = tl.exp(v0)
    v2 = offs % 3
    v3 = tl.load(in1 + v2, mask=mask)
    v4 = v1 * v3
    tl.store(out0 + offs, v4, mask=mask)
'''


def test_golden_source():
    closed = trace(lambda x, y: fnp.exp(x) * y, normal(2, 3), normal(3))
    src = codegen.generate(whole_group(closed))
    assert src.text == GOLDEN
    assert src.signature == {"in0": "*fp32", "in1": "*fp32", "out0": "*fp32",
                             "BLOCK": "constexpr"}


@pytest.mark.parametrize("fn,args,kind", [
    (lambda x, y: fnp.tanh(x) * y + fnp.exp(x).T.T, (normal(4, 8), normal(8)), EW),
    (layernorm, (normal(6, 10), normal(10), normal(10)), RED),
], ids=["elementwise", "layernorm"])
def test_generation_is_deterministic(fn, args, kind):
    a = codegen.generate(whole_group(trace(fn, *args), kind))
    b = codegen.generate(whole_group(trace(fn, *args), kind))  # a separate trace
    assert a.text == b.text and a.key == b.key
    other = codegen.generate(whole_group(trace(fn, *[x[:2] for x in args[:1]] + list(args[1:]))
                                         , kind))
    assert other.key != a.key  # other shapes, other kernel


def test_cache_imports_each_text_once(tmp_path):
    cache = tcache.KernelCache(str(tmp_path))
    args = (normal(3, 4), normal(4))
    k1 = runtime.build_kernel(whole_group(trace(lambda x, y: x * y - 1.0, *args)), cache=cache)
    assert cache.stats == {"writes": 1, "imports": 1, "hits": 0}
    k2 = runtime.build_kernel(whole_group(trace(lambda x, y: x * y - 1.0, *args)), cache=cache)
    assert cache.stats == {"writes": 1, "imports": 1, "hits": 1}
    assert k2.fn is k1.fn and os.listdir(tmp_path) == [f"k_{k1.source.key}.py"]
    cache.clear()  # a new process: the file is found and imported, not rewritten
    runtime.build_kernel(whole_group(trace(lambda x, y: x * y - 1.0, *args)), cache=cache)
    assert cache.stats == {"writes": 1, "imports": 2, "hits": 1}


def test_default_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("FUNCTRAX_CACHE_DIR", str(tmp_path))
    assert tcache.default_cache_dir() == os.path.join(str(tmp_path), "triton")
    monkeypatch.delenv("FUNCTRAX_CACHE_DIR")
    assert tcache.default_cache_dir() == os.path.join(
        os.path.expanduser("~"), ".cache", "functrax", "triton")


# --- errors and the launch modes ---


def test_unsupported_groups_raise_clear_errors():
    x = normal(3, 4)
    closed = trace(lambda x: fnp.cumsum(x, 1), x)
    with pytest.raises(UnsupportedError, match="cumsum"):
        codegen.generate(whole_group(closed))
    with pytest.raises(UnsupportedError, match="complex64"):
        codegen.generate(whole_group(trace(lambda z: z * z, x.astype(np.complex64))))
    with pytest.raises(UnsupportedError, match="max_block_r"):
        codegen.generate(whole_group(trace(lambda x: lax.argmax(x, 1), normal(3, 40)), RED),
                         KernelConfig(max_block_r=16))
    g = whole_group(trace(lambda x: x @ x.T, x))
    with pytest.raises(UnsupportedError, match="matmul"):
        codegen.generate(FusionGroup(GroupKind.MATMUL, g.eqns, g.inputs, g.outputs, (3, 3)))
    with pytest.raises(UnsupportedError, match="reduces axes"):
        j = trace(lambda x: (x.sum(0), x.max()), x)
        codegen.generate(FusionGroup(RED, tuple(j.eqns), tuple(j.jaxpr.invars),
                                     tuple(j.jaxpr.outvars), (3, 4), (0, 1)))


def test_kernel_checks_its_arguments(kcache):
    k = runtime.build_kernel(whole_group(trace(lambda x: x + 1.0, normal(2, 3))), cache=kcache)
    with pytest.raises(TypeError, match=r"input 0 must be f32\[2,3\]"):
        k(np.zeros((3, 2), F32))
    with pytest.raises(TypeError, match="takes 1 inputs"):
        k()


def test_launch_without_interpreter_or_gpu(kcache, monkeypatch):
    from functrax.lowering.triton import gpu_hooks
    from tests import fake_gpu
    k = runtime.build_kernel(whole_group(trace(lambda x: x + 1.0, normal(2, 3))), cache=kcache)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    fake_gpu.register(monkeypatch, gpu_hooks.NO_GPU)
    with pytest.raises(NotImplementedError, match="no CUDA GPU is visible"):
        k(normal(2, 3))
    # With a GPU visible, kernels run on GPU buffers through the cuda-core launcher: that
    # path is tested over a fake GPU in tests/test_devices_gpu.py (test_fake_gpu_*).


def test_interpreter_leaves_triton_language_unpatched(kcache):
    """Triton 3.9's interpreter leaves library-call patches in triton.language behind; the
    runtime restores them (else in-process compilation breaks after an interpreted run)."""
    import triton.language as tl
    before = {name: vars(tl.core)[name] for name in ("add", "load", "where", "reduce")}
    check(kcache, softmax, normal(3, 5), kind=RED)
    assert all(vars(tl.core)[name] is obj for name, obj in before.items())


def test_numpy_tensor_adapter():
    a = np.arange(6, dtype=F32).reshape(2, 3)
    t = runtime.NumpyTensor(a)
    assert t.data_ptr() == a.ctypes.data and t.size() == (2, 3) and t.stride() == (3, 1)
    assert str(t.dtype) == "float32" and t.untyped_storage().data_ptr() == a.ctypes.data
    assert t.new_empty(0).set_(t.untyped_storage()).array is a
    with pytest.raises(ValueError, match="contiguous"):
        runtime.NumpyTensor(a.T)


# --- with the fusion planner ---


PLANNED = [
    ("layernorm_softmax", lambda x, g, b: (softmax(layernorm(x, g, b) * 2.0),
                                           fnp.tanh(layernorm(x, g, b)).sum(0)),
     (normal(6, 10), normal(10), normal(10))),
    ("mlp_gelu", lambda x, w: nn.gelu(x @ w).sum(axis=0) + fnp.exp(x).mean(),
     (normal(6, 10), normal(10, 4))),
    ("broadcast_output", lambda v, x: (fnp.exp(v), fnp.exp(v)[None, :] + x),
     (normal(10), normal(6, 10))),
    ("transposed_output", lambda x: (x.sum(-1, keepdims=True) * x).T, (normal(6, 10),)),
    ("reshaped_rows", lambda x: (x.reshape(2, 3, 10).sum(axis=(1, 2)), fnp.cos(x.T).sum(-1)),
     (normal(6, 10),)),
    ("sibling_reductions", lambda x: (fnp.tanh(x).sum(-1), fnp.tanh(x).max(0), x.max()),
     (normal(6, 10),)),
]


@pytest.mark.parametrize("prog", PLANNED, ids=[p[0] for p in PLANNED])
def test_planned_groups_run(prog, kcache):
    """Every elementwise / reduction group of plan_fusion runs as a kernel; the groups are
    chained, the others (matmul) evaluated with the numpy backend."""
    _, f, args = prog
    closed = functrax.jit(f).lower(*args).jaxpr
    env = dict(zip(closed.jaxpr.constvars, closed.consts))
    env.update(zip(closed.jaxpr.invars, args))
    ran = 0
    for g in fusion.plan_fusion(closed).groups:
        ins = [np.asarray(env[v]) for v in g.inputs]
        sub = core.Jaxpr([], list(g.inputs), list(g.outputs), list(g.eqns))
        want = [np.asarray(r) for r in core.eval_jaxpr(sub, [], *map(fnp.asarray, ins))]
        if g.kind in (EW, RED):
            for config in (None, LOOPED):
                got = runtime.build_kernel(g, config, cache=kcache)(*ins)
                assert_matches(got, want, rtol=2e-5, atol=1e-5)
            ran += 1
        env.update(zip(g.outputs, want))
    assert ran >= 1


# --- AOT compilation for sm_90 ---


def _combined_lax_programs():
    """The lax programs merged by argument signature: (fn, args, opt, rtol, atol) of one
    many-output kernel each."""
    by_sig: dict = {}
    for name, fn, args, *tol in LAX_PROGRAMS:
        if name not in REFERENCE_OVERRIDES:
            sig = tuple((np.shape(a), np.asarray(a).dtype) for a in args)
            by_sig.setdefault(sig, []).append((name, fn, args, tol + [1e-5, 1e-6][len(tol):]))
    for items in by_sig.values():
        def combined(*a, items=items):
            outs = [fn(*a) for _, fn, _, _ in items]
            return tuple(o for out in outs for o in (out if isinstance(out, tuple) else (out,)))
        yield (combined, items[0][2], not any(n in UNOPTIMIZED for n, *_ in items),
               max(t[0] for *_, t in items), max(t[1] for *_, t in items))


def _combined_lax_groups():
    for fn, args, opt, _, _ in _combined_lax_programs():
        yield whole_group(trace(fn, *args, opt=opt))


@pytest.mark.parametrize("i", range(len(list(_combined_lax_programs()))))
def test_combined_lax_kernel_matches_numpy_backend(i, kcache):
    """The merged kernels (many outputs sharing loads) also run correctly."""
    fn, args, opt, rtol, atol = list(_combined_lax_programs())[i]
    check(kcache, fn, *args, rtol=rtol, atol=atol, opt=opt)


LOOPED_COMPILED = ("max_nan", "softmax", "layernorm", "int_sum_max_min", "bool_any_all",
                   "leading_axis", "full_reduce")


def _compile_set(kcache):
    """A representative subset (compiling takes ~0.15 s a kernel on one core): the lax
    programs merged by signature (covering every entry of triton_rules), every reduction
    program (some also streamed), and the layout tests' kernels. The interpreter tests run
    all of these programs one by one and ~1000 op-spec cases."""
    groups = [(g, None) for g in _combined_lax_groups()]
    covered = set().union(*(rule_keys(g) for g, _ in groups))
    assert covered == set(rules.triton_rules)
    for name, fn, args, *_ in RED_PROGRAMS:
        groups.append((whole_group(trace(fn, *args), RED), None))
        if name in LOOPED_COMPILED:
            groups.append((whole_group(trace(fn, *args), RED), LOOPED))
    x = normal(2, 3, 4)
    for fn, args in [(lambda x: fnp.transpose(fnp.exp(x), (2, 0, 1)) + 1.0, (x,)),
                     (lambda x, y: fnp.transpose(x, (1, 2, 0)).reshape(12, 2) - y,
                      (x, normal(12, 2))),
                     (lambda x: x[1:4, ::2] * 3.0, (normal(6, 9),)),
                     (lambda x: fnp.flip(x, (0, 1)) * 2.0, (normal(6, 9),)),
                     (lambda s, x: (x > s) | (s > 0.5), (np.float32(0.3), normal(4, 3))),
                     (lambda x: x + lax.broadcasted_iota(F32, (6, 9), 1), (normal(6, 9),))]:
        groups.append((whole_group(trace(fn, *args, opt=False)), None))
    return [runtime.build_kernel(g, cfg, cache=kcache) for g, cfg in groups]


def test_compile_for_sm90(kcache):
    kernels = _compile_set(kcache)
    calls = [(k.fn, k.source.signature, k.source.constexprs, k.source.num_warps)
             for k in kernels]
    compiled = tcompile.compile_many(calls)
    assert len(compiled) == len(kernels) >= 40
    for k, c in zip(kernels, compiled):
        assert c.name == k.source.name and c.target == "cuda:90"
        assert ".target sm_90" in c.ptx and f".entry {c.name}(" in c.ptx
        assert c.cubin[:4] == b"\x7fELF"


def test_compile_is_memoized(kcache):
    k = runtime.build_kernel(whole_group(trace(lambda x: fnp.exp(x) * 3.0, normal(5, 5))),
                             cache=kcache)
    first = tcompile.compile_source(k.source, k.fn)
    before = dict(tcompile.stats)
    again = tcompile.compile_for_sm90(k.fn, k.source.signature, k.source.constexprs)
    assert again is first and tcompile.stats["compiles"] == before["compiles"]
    assert tcompile.stats["hits"] == before["hits"] + 1
