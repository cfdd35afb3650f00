"""The C backend (``functrax/lowering/c``) against the numpy backend.

- the op-spec table: one case per (spec, dtypes) with its smallest shapes (per kwargs too for
  the reduction and shape families, whose axes and layouts are what the code generator
  indexes), every case whose plan has an ELEMENTWISE or REDUCTION group, compiled together
  (``backend.compile_many``: a few translation units for all of them) and compared with the
  numpy executor on the same jaxpr, with the op-spec tolerances;
- a codegen rejection of an ELEMENTWISE/REDUCTION group is a bug unless its reason is
  allowlisted (``ALLOWED_CODEGEN_FALLBACKS``: dtypes C lacks, special functions without a
  C rule yet); every fallback has a reason;
- hypothesis: random elementwise/reduction programs, numpy vs C;
- without a compiler (``CC`` pointing nowhere, no compiler on ``PATH``, in a subprocess) the
  programs run on the numpy backend with one warning;
- the disk cache: a second process loads the library without compiling.

Without a working C compiler the comparisons still run (the numpy fallback) and the checks
that kernels were generated are skipped.
"""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import functrax
import functrax.numpy as fnp
from functrax import jit, nn
from functrax.lowering.c import backend as cb
from functrax.lowering.c.blocks import BLOCK_PRIMITIVES
from functrax.lowering.c.toolchain import toolchain
from functrax.lowering.fusion.types import GroupKind
from functrax.lowering.numpy.executor import compile_jaxpr
from tests.opspec import all_specs
from tests.test_opspec import _tolerances

FUSIBLE = (GroupKind.ELEMENTWISE, GroupKind.REDUCTION)


def _runs_in_c(group) -> bool:
    """A group the C backend renders: a kernel, or a block (BLAS product, control flow)."""
    return group.kind in FUSIBLE or group.kind is GroupKind.MATMUL or (
        group.kind is GroupKind.OPAQUE and group.eqns[0].primitive in BLOCK_PRIMITIVES)
HAVE_CC = toolchain().available
needs_cc = pytest.mark.skipif(not HAVE_CC, reason="no working C compiler on this machine")

# codegen rejections of ELEMENTWISE/REDUCTION groups that are not bugs (yet): C has no
# complex dtype here; the iterative / series special functions have no C rule yet
ALLOWED_CODEGEN_FALLBACKS = (
    "does not support dtype complex64", "does not support dtype complex128",
    *(f"no rule for primitive '{p}'" for p in (
        "lgamma", "digamma", "erf_inv", "bessel_i0e", "bessel_i1e", "reduce_precision",
        "conj", "imag", "complex")),
)
PER_KWARGS = ("reductions", "shape_ops")  # families tried once per kwargs, not just dtypes


def _dtype_id(dts):
    return "-".join(np.dtype(d).name for d in (dts if isinstance(dts, tuple) else (dts,)))


def _family_specs():
    from importlib import import_module
    from tests.opspec.spec import ALL_FAMILIES
    names = {s.name for s in all_specs()}
    for fam in ALL_FAMILIES:
        for s in import_module(f"tests.opspec.{fam}").SPECS:
            if s.name in names:
                yield fam, s


def _cases():
    best = {}
    for fam, s in _family_specs():
        for shapes, dts, kw in s.cases():
            kw_id = repr(sorted(kw.items()))
            key = (s.name, _dtype_id(dts), kw_id if fam in PER_KWARGS else "")
            size = sum(int(np.prod(sh)) for sh in shapes)
            if key not in best or size < best[key][0]:
                best[key] = (size, s, shapes, dts, kw)
    return {f"{k[0]}[{k[1]}|{k[2]}]": v[1:] for k, v in best.items()}


CASES = _cases()
_BUILT: dict = {}


def _args(spec, shapes, dts):
    return spec.make_args(np.random.RandomState(0), shapes, dts)


def _lowered(case_id):
    spec, shapes, dts, kw = CASES[case_id]
    args = _args(spec, shapes, dts)
    closed = jit(lambda *xs: spec.fn(*xs, **kw)).lower(*[fnp.asarray(a) for a in args]).jaxpr
    return closed, args


def _programs() -> dict:
    """case id -> (CProgram, numpy executable, args) of every case with a fusible group."""
    if not _BUILT:
        todo = {}
        for cid in CASES:
            closed, args = _lowered(cid)
            if any(_runs_in_c(g) for g in cb.plan_fusion(closed).groups):
                todo[cid] = (closed, args)
        progs = cb.compile_many([c for c, _ in todo.values()])
        for (cid, (closed, args)), prog in zip(todo.items(), progs):
            _BUILT[cid] = (prog, compile_jaxpr(closed), args)
        _BUILT.setdefault(None, None)  # built (even when no case has a fusible group)
    return _BUILT


def _assert_close(spec, got, want, case_id):
    assert len(got) == len(want), case_id
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (case_id, g.shape, w.shape, g.dtype,
                                                          w.dtype)
        if g.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=case_id)
        else:
            atol, rtol = _tolerances(spec, g.dtype)
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), atol=atol,
                                       rtol=rtol, equal_nan=True, err_msg=case_id)


# --- the op-spec table ---


@pytest.mark.parametrize("case_id", list(CASES))
def test_op_spec_on_c_matches_numpy_backend(case_id):
    built = _programs().get(case_id)
    if built is None:
        pytest.skip("no group the C backend renders: nothing runs in C")
    prog, ref, args = built
    with np.errstate(all="ignore"):
        want = ref.run(*args)
        got = prog.run(*args)
    _assert_close(CASES[case_id][0], got, want, case_id)
    assert all(fb.reason for fb in prog.fallbacks), prog.fallbacks


@needs_cc
def test_elementwise_and_reduction_groups_become_c_kernels(capsys):
    """No silent fallback: an ELEMENTWISE/REDUCTION group runs in C unless its reason is
    allowlisted; prints the counts (``pytest -s``)."""
    built = {k: v for k, v in _programs().items() if k is not None}
    rejected = sorted({(cid, fb.reason) for cid, (prog, _, _) in built.items()
                       for fb in prog.fallbacks if fb.kind in FUSIBLE
                       and not any(a in fb.reason for a in ALLOWED_CODEGEN_FALLBACKS)})
    assert not rejected, "\n".join(f"{c}: {r}" for c, r in rejected)
    assert not any(p.on_numpy for p, _, _ in built.values())
    kernels = sum(len(p.kernels) for p, _, _ in built.values())
    reasons = collections.Counter(fb.reason[:70] for p, _, _ in built.values()
                                  for fb in p.fallbacks)
    assert kernels > 1000
    with capsys.disabled():
        print(f"\n{len(CASES)} op-spec cases, {len(built)} with C groups: {kernels} C "
              f"kernels, {sum(reasons.values())} numpy fallbacks")
        for reason, n in reasons.most_common(12):
            print(f"  {n:4d}  {reason}")


# --- the jit integration ---


def test_jit_backend_c_runs_fused_kernels():
    x = fnp.asarray(np.random.RandomState(1).randn(8, 33).astype(np.float32))
    b = fnp.asarray(np.random.RandomState(2).randn(33).astype(np.float32))

    def f(x, b):
        return nn.softmax(nn.gelu(x) * 2.0 + b, axis=-1), fnp.argmax(x, axis=0)

    want = jit(f)(x, b)
    got = jit(f, backend="c")(x, b)
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(want[1]))
    compiled = jit(f, backend="c").lower(x, b).compile()
    text = compiled.as_text()
    assert "# fusion plan" in text
    if HAVE_CC:
        assert "void fx_" in text and "#pragma omp simd" in text
    assert compiled.cost_analysis()["flops"] > 0
    assert "c" in functrax.lowering.backends.available_backends()


def test_scalars_empty_arrays_and_fallback_groups():
    def f(x, s, e):
        return fnp.sort(x * s) + 1.0, fnp.exp(e) * s, (x @ x.T).sum(), s * 3.0

    x = fnp.asarray(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    s = fnp.asarray(np.float32(0.5))
    e = fnp.zeros((0, 3), np.float32)
    want = jit(f)(x, s, e)
    got = jit(f, backend="c")(x, s, e)
    for g, w in zip(got, want):
        assert np.asarray(g).shape == np.asarray(w).shape
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
    prog = jit(f, backend="c").lower(x, s, e).compile()._entry.exe
    reasons = " ".join(fb.reason for fb in prog.fallbacks)
    if HAVE_CC:
        assert "sort" in reasons and "matmul" not in reasons  # x @ x.T: BLAS in a C block
    else:  # the whole program runs on numpy, and says why
        assert "no working C compiler" in reasons


def test_integer_semantics_match_numpy():
    rng = np.random.RandomState(0)
    a = rng.randint(-2 ** 31, 2 ** 31 - 1, size=64, dtype=np.int64).astype(np.int32)
    b = rng.randint(-40, 40, size=64).astype(np.int32)
    a[:4] = [-2 ** 31, -2 ** 31, 7, -7]
    b[:4] = [-1, 0, 0, 3]
    u = a.view(np.uint32)

    def f(a, b, u):
        return (a // b, a % b, a * b + a, a << b, a >> b, functrax.lax.shift_right_logical(a, b),
                u // u.dtype.type(3), fnp.abs(a), -a, a.astype(fnp.int8),
                (a.astype(fnp.float32) * 1e5).astype(fnp.int32))

    want = jit(f)(a, b, u)
    got = jit(f, backend="c")(a, b, u)
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w), err_msg=str(i))


def test_float_specials_and_narrow_types():
    import ml_dtypes
    vals = np.array([0.0, -0.0, 1.5, -2.5, np.inf, -np.inf, np.nan, 1e-40, 65520.0, 3e38],
                    np.float32)

    def f(x):
        return (fnp.maximum(x, 0.0), fnp.minimum(x, 1.0), x.astype(fnp.int32),
                x.astype(fnp.uint8), x.astype(fnp.float16), x.astype(ml_dtypes.bfloat16),
                fnp.round(x), fnp.max(x), fnp.argmax(x), fnp.argmin(x), fnp.sign(x))

    want = jit(f)(vals)
    got = jit(f, backend="c")(vals)
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype, i
        np.testing.assert_array_equal(g.astype(np.float64), w.astype(np.float64), err_msg=str(i))


# --- random programs ---

_UNARY = (fnp.exp, fnp.tanh, fnp.sin, lambda x: x * x, fnp.abs, lambda x: -x,
          lambda x: fnp.log1p(fnp.abs(x)), nn.relu, nn.sigmoid, lambda x: fnp.sqrt(fnp.abs(x)))
_BINARY = (fnp.add, fnp.subtract, fnp.multiply, fnp.maximum, fnp.minimum,
           lambda x, y: fnp.where(x > y, x, y * 0.5))
_REDUCE = (fnp.sum, fnp.max, fnp.min, fnp.mean)


@st.composite
def _program(draw):
    """A random program over x[m, n], y[n]: elementwise steps (broadcast y, transposes), then
    maybe a reduction over a random axis (keepdims, its result used again)."""
    m, n = draw(st.integers(1, 9)), draw(st.integers(1, 40))
    ops = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 9), st.integers(0, 9)),
                        min_size=1, max_size=6))
    red = draw(st.one_of(st.none(), st.tuples(st.integers(0, 3), st.integers(0, 1),
                                              st.booleans())))

    def f(x, y):
        vals = [x, y, x * 0.5]
        for kind, i, j in ops:
            a, b = vals[i % len(vals)], vals[j % len(vals)]
            if kind == 0:
                vals.append(_UNARY[i % len(_UNARY)](a))
            elif kind == 1:
                vals.append(_BINARY[j % len(_BINARY)](a, b))
            else:
                vals.append(a.T.T if a.ndim == 2 else a[None, :] + x)
        out = vals[-1] if vals[-1].ndim == 2 else vals[-1] + x
        if red is not None:
            r = _REDUCE[red[0]](out, axis=red[1], keepdims=True)
            return (out - r) if red[2] else r
        return out

    return f, m, n


@needs_cc
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(_program(), st.integers(0, 2 ** 16))
def test_random_programs_numpy_vs_c(prog, seed):
    f, m, n = prog
    rng = np.random.RandomState(seed)
    x = fnp.asarray(rng.randn(m, n).astype(np.float32))
    y = fnp.asarray(rng.randn(n).astype(np.float32))
    with np.errstate(all="ignore"):
        want = np.asarray(jit(f)(x, y))
        got = np.asarray(jit(f, backend="c")(x, y))
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, equal_nan=True)
    exe = jit(f, backend="c").lower(x, y).compile()._entry.exe
    assert not [fb for fb in exe.fallbacks if fb.kind in FUSIBLE], exe.fallbacks


# --- no compiler, and the disk cache (subprocesses) ---

_CHILD = textwrap.dedent("""
    import json, warnings
    import numpy as np
    import functrax, functrax.numpy as fnp
    from functrax.lowering.c import backend as cb, cache, program_cache
    x = fnp.asarray(np.linspace(-2, 2, 50, dtype=np.float32))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        a = functrax.jit(lambda x: fnp.tanh(x) * 2.0 + 1.0, backend="c")(x)
        b = functrax.jit(lambda x: fnp.exp(x).sum(), backend="c")(x)
    ok = bool(np.allclose(np.asarray(a), np.tanh(np.asarray(x)) * 2 + 1, rtol=1e-6,
                          atol=1e-6)
              and np.allclose(np.asarray(b), np.exp(np.asarray(x)).sum(), rtol=1e-5))
    n_warn = sum(issubclass(x.category, cb.CCompileWarning) for x in w)
    print(json.dumps({"ok": ok, "warnings": n_warn, "stats": cache.default_cache().stats,
                      "numpy_programs": cb.STATS["numpy_programs"],
                      "programs": cb.STATS["programs"], "program_cache": program_cache.STATS}))
""")


def _child(env_updates):
    env = dict(os.environ)
    env.update(env_updates)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(functrax.__file__)),
                                         env.get("PYTHONPATH", "")])
    res = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_without_a_compiler_programs_run_on_numpy_with_one_warning(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    out = _child({"CC": str(tmp_path / "no-such-cc"), "PATH": str(empty),
                  "FUNCTRAX_CACHE_DIR": str(tmp_path / "cache")})
    assert out["ok"]
    assert out["warnings"] == 1
    assert out["numpy_programs"] == 2
    assert out["stats"]["compiles"] == 0


@needs_cc
def test_second_process_loads_from_the_disk_cache(tmp_path):
    env = {"FUNCTRAX_CACHE_DIR": str(tmp_path / "cache")}
    first = _child(env)
    second = _child(env)
    assert first["ok"] and second["ok"] and first["warnings"] == second["warnings"] == 0
    assert first["stats"]["compiles"] == 2 and first["stats"]["disk_hits"] == 0
    assert second["stats"]["compiles"] == 0 and second["stats"]["disk_hits"] == 2
    # the second process loads both programs: no passes, no code generation
    assert first["program_cache"]["misses"] == 2 and first["program_cache"]["stores"] == 2
    assert second["program_cache"]["hits"] == 2 and second["programs"] == 0
    # no temporary left behind: the two libraries, the compiler probe's record and the two
    # programs' records (constants only where a program has some)
    assert sorted(n.split("-")[0].split("_")[0] for n in os.listdir(tmp_path / "cache" / "c")
                  ) == ["p", "p", "programs", "toolchain"]
    assert sorted(n.rsplit(".", 1)[1] for n in os.listdir(tmp_path / "cache" / "c" / "programs")
                  if not n.endswith(".npz")) == ["json", "json"]


def test_compile_errors_warn_once_or_raise(monkeypatch, tmp_path):
    from functrax.lowering.c import codegen
    from functrax.lowering.c.cache import LibraryCache
    if not HAVE_CC:
        pytest.skip("no working C compiler")
    real = codegen.generate

    def broken(group):
        k = real(group)
        return codegen.KernelSource(k.name + "_broken", k.text.replace(
            k.name, k.name + "_broken").replace("{\n", "{\n  this is not C;\n", 1), k.kind,
            k.in_avals, k.out_avals, k.work)

    monkeypatch.setattr(codegen, "generate", broken)
    closed = jit(lambda x: fnp.cos(x) + 3.0).lower(fnp.ones(5)).jaxpr
    cache = LibraryCache(str(tmp_path))
    with pytest.warns(cb.CCompileWarning, match="_broken"):
        prog = cb.compile_c(closed, cache=cache)
    assert prog.on_numpy and "compile error" in prog.fallbacks[0].reason
    np.testing.assert_allclose(prog.run(np.ones(5, np.float32))[0], np.cos(1.0) + 3, rtol=1e-6)
    functrax.config.update("c_compile_errors", "raise")
    try:
        with pytest.raises(cb.CompileError):
            cb.compile_c(closed, cache=cache)
    finally:
        functrax.config.update("c_compile_errors", "warn")


# --- the rule table covers the fusible primitives ---

# fusible primitives without a C rule (their groups run on numpy, with this reason listed)
EXEMPT_C = {
    "bessel_i0e": "series / Chebyshev special function: no C rule yet (numpy fallback)",
    "bessel_i1e": "series / Chebyshev special function: no C rule yet (numpy fallback)",
    "digamma": "special function: no C rule yet (numpy fallback)",
    "lgamma": "special function: glibc's lgamma writes the global signgam (not thread-safe "
              "under OpenMP); no C rule yet",
    "erf_inv": "special function: no C rule yet (numpy fallback)",
    "reduce_precision": "bit-level rounding: no C rule yet (numpy fallback)",
    "complex": "complex dtypes are not supported by the C backend",
    "conj": "complex result: complex dtypes are not supported by the C backend",
    "imag": "complex operand: complex dtypes are not supported by the C backend",
}


def test_every_fusible_primitive_has_a_c_rule_or_an_exemption():
    from functrax.lowering.c.rules import c_rules, reduce_rules
    from functrax.lowering.fusion.tables import fusion_category
    from functrax.primitives import primitive_registry
    have = {k[0] if isinstance(k, tuple) else k for k in c_rules}
    reducers = {k[0] for k in reduce_rules}
    missing = sorted(n for n, p in primitive_registry.items() if n not in EXEMPT_C and (
        (fusion_category(p)[0] == "elementwise" and p not in have)
        or (fusion_category(p)[0] == "reduction" and p not in reducers)))
    assert not missing, f"add a C rule (functrax/lowering/c/rules.py) or an EXEMPT_C reason: " \
                        f"{missing}"
    stale = sorted(n for n in EXEMPT_C if n not in primitive_registry or
                   primitive_registry[n] in have)
    assert not stale, stale


# --- the vectorizable float32 transcendental kernels of the prelude ---


def _ulps(a, b):
    """Distance in float32 ulps (NaN equal to NaN, NaN beside a number: huge)."""
    ai, bi = (np.asarray(v, np.float32).view(np.int32).astype(np.int64) for v in (a, b))
    ai = np.where(ai < 0, -(ai & 0x7FFFFFFF), ai)
    bi = np.where(bi < 0, -(bi & 0x7FFFFFFF), bi)
    d = np.abs(ai - bi)
    na, nb = np.isnan(a), np.isnan(b)
    return np.where(na & nb, 0, np.where(na ^ nb, 2 ** 40, d))


_TRANSCENDENTAL_REFS = {
    "exp": np.exp, "log": np.log, "tanh": np.tanh, "log1p": np.log1p, "expm1": np.expm1,
    "logistic": lambda x: 1 / (1 + np.exp(-x)),
}


@needs_cc
@pytest.mark.parametrize("name", sorted(_TRANSCENDENTAL_REFS))
def test_float32_transcendentals_round_correctly(name):
    """ft_log_d & co. (double-precision polynomials, no libm call) give the correctly rounded
    float32 result, exp's and tanh's float32-lane ones within 1 ulp: compared with float64 numpy
    rounded once, over the whole float32 range, the tails, signed zeros, infinities and NaN;
    float16 and float64 operands too."""
    rng = np.random.default_rng(5)
    n = 200_000
    x = np.concatenate([
        rng.normal(size=n) * 30, rng.normal(size=n) * 2, rng.uniform(-1e-3, 1e-3, n),
        np.exp(rng.uniform(-100, 88, n)), -np.exp(rng.uniform(-100, 3, n)),
        [np.inf, -np.inf, np.nan, 0.0, -0.0, -1.0, 1e-30, -1e-30, 88.72, 88.73, -103.97,
         -104.0, 1e-45, -1e-45, 3e38, -3e38, 0.35, -0.35, 1e-4, -1e-4]]).astype(np.float32)
    fn = getattr(functrax.lax, name)
    with np.errstate(all="ignore"):
        want = _TRANSCENDENTAL_REFS[name](x.astype(np.float64)).astype(np.float32)
    got = np.asarray(functrax.jit(fn, backend="c")(x))
    # correctly rounded, but exp and tanh: float32 lanes (ft_expf, ft_tanhf) within 1 ulp
    assert _ulps(got, want).max() == (1 if name in ("exp", "tanh") else 0)
    h = x[::97].astype(np.float16)
    with np.errstate(all="ignore"):
        want16 = _TRANSCENDENTAL_REFS[name](h.astype(np.float64)).astype(np.float32)
    got16 = np.asarray(functrax.jit(fn, backend="c")(h)).astype(np.float16)
    assert _ulps(got16.astype(np.float32), want16.astype(np.float16).astype(np.float32)
                 ).max() <= (2 ** 13 if name in ("exp", "tanh") else 0)  # 1 float16 ulp
    with functrax.enable_x64(True):
        d = x[::101].astype(np.float64)
        got64 = np.asarray(functrax.jit(fn, backend="c")(d))
        np.testing.assert_allclose(got64, np.asarray(functrax.jit(fn)(d)), rtol=1e-15,
                                   atol=0, equal_nan=True)


# --- output buffers reused across calls ---


@needs_cc
def test_steady_state_calls_reuse_dropped_output_buffers():
    f = functrax.jit(lambda x: fnp.exp(x) * 2.0 + 1.0, backend="c")
    x = np.linspace(-1, 1, 4096, dtype=np.float32)
    first = np.asarray(f(x))
    ptr = first.ctypes.data
    del first
    again = np.asarray(f(x))
    assert again.ctypes.data == ptr  # nothing held it: the same buffer
    held = f(x)  # `again` is still held: a new buffer, and `again` keeps its values
    assert np.asarray(held).ctypes.data != again.ctypes.data
    np.testing.assert_allclose(again, np.exp(x) * 2 + 1, rtol=1e-6)
    view = np.asarray(held)[::2]  # a view keeps its base alive, and so its buffer
    del held
    other = np.asarray(f(x + 1))
    assert not np.shares_memory(view, other)
    np.testing.assert_allclose(view, (np.exp(x) * 2 + 1)[::2], rtol=1e-6)


@needs_cc
def test_reused_buffers_are_safe_across_threads():
    import concurrent.futures
    f = functrax.jit(lambda x: fnp.tanh(x) + x, backend="c")
    xs = [np.full(8192, i, np.float32) for i in range(16)]
    f(xs[0])
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda x: np.asarray(f(x)), xs * 4))
    for x, out in zip(xs * 4, outs):
        np.testing.assert_allclose(out, np.tanh(x) + x, rtol=1e-6)


@needs_cc
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_softmax_computes_exp_once_per_element(dtype):
    """The reduction loop writes exp(x - max) into the output buffer; the output loop reads
    it back (one exp per element, not two) and divides in place."""
    x = np.random.default_rng(2).normal(size=(8, 300)).astype(dtype)
    f = functrax.jit(lambda x: functrax.nn.softmax(x, axis=-1), backend="c")
    prog = f.lower(x).compile()
    body = prog.as_text().split("/* reduction", 1)[1]
    assert body.count("ft_expf(") == 1
    want = np.asarray(functrax.jit(lambda x: functrax.nn.softmax(x, axis=-1))(x))
    np.testing.assert_allclose(np.asarray(f(x)).astype(np.float32), want.astype(np.float32),
                               rtol=1e-6 if dtype == np.float32 else 1e-3, atol=1e-7)
    g = functrax.jit(lambda x: functrax.nn.log_softmax(x, axis=-1), backend="c")
    np.testing.assert_allclose(
        np.asarray(g(x)).astype(np.float32),
        np.asarray(functrax.jit(lambda x: functrax.nn.log_softmax(x, axis=-1))(x)).astype(
            np.float32), rtol=1e-5 if dtype == np.float32 else 1e-2, atol=1e-6)


@needs_cc
def test_compiler_probe_is_remembered_across_processes(tmp_path):
    """A new process that finds the same compiler reads the probe's record instead of
    compiling the probe programs again; the record names the compiler it describes."""
    env = dict(os.environ, FUNCTRAX_CACHE_DIR=str(tmp_path))
    first = textwrap.dedent("""
        from functrax.lowering.c import toolchain as t
        print(repr(t.toolchain().flags))
    """)
    second = textwrap.dedent("""
        from functrax.lowering.c import toolchain as t
        def boom(*a, **k):
            raise AssertionError("probed again")
        t._works = boom
        print(repr(t.toolchain().flags))
    """)
    run = lambda code: subprocess.run([sys.executable, "-c", code], env=env, text=True,
                                      capture_output=True, check=True).stdout.strip()
    flags = run(first)
    records = list((tmp_path / "c").glob("toolchain-*.json"))
    assert len(records) == 1
    assert json.loads(records[0].read_text())["cc"] == toolchain().cc
    assert run(second) == flags


@needs_cc
@pytest.mark.parametrize("rejects", [["-fopenmp"], ["-march=native"],
                                     ["-fopenmp", "-march=native"], []])
def test_compiler_probe_keeps_only_the_flags_the_compiler_accepts(tmp_path, monkeypatch,
                                                                   rejects):
    """The probe tries every feature at once (one compile), then each on its own: a compiler
    that rejects ``-fopenmp`` or ``-march=native`` still compiles working programs without
    them."""
    from functrax.lowering.c import toolchain as t
    cc = tmp_path / "fakecc"
    real = toolchain().cc
    checks = "".join(f'    {flag}) exit 1;;\n' for flag in rejects)
    cc.write_text("#!/bin/sh\nfor a in \"$@\"; do\n  case \"$a\" in\n" + checks
                  + "  esac\ndone\nexec " + real + ' "$@"\n')
    cc.chmod(0o755)
    monkeypatch.setenv("FUNCTRAX_CACHE_DIR", str(tmp_path / "cache"))
    tc = t._probe_compiler(str(cc))
    assert tc is not None and tc.cc == str(cc)
    for flag in ("-fopenmp", "-march=native"):
        assert (flag in tc.flags) == (flag not in rejects), (flag, tc.flags)
    assert tc.openmp == ("-fopenmp" not in rejects)
    t.compile_shared(tc.cc, tc.flags, "int f(int x) { return x + 1; }\n",
                     str(tmp_path / "ok.so"))


@needs_cc
def test_pmap_replicas_share_the_cores_between_their_kernels():
    """A replica's C kernels open at most cores / replicas OpenMP threads (no devices x cores
    oversubscription); outside pmap they use all cores."""
    from functrax.lowering.c.backend import _num_threads
    from functrax.lowering.thread_share import current_share
    from functrax.runtime.pmap_runtime import run_replicas
    cores = os.cpu_count() or 1
    prev = functrax.config.read("num_cpu_devices")
    functrax.config.update("num_cpu_devices", 4)
    try:
        devs = functrax.devices()[:4]
        got = run_replicas(lambda i: (current_share(), _num_threads()), "i",
                           [[d] for d in devs])
        assert got == [(4, max(1, cores // 4))] * 4
        f = functrax.pmap(lambda x: functrax.lax.psum(fnp.tanh(x) * 2.0, "i"), axis_name="i",
                          backend="c")  # each replica's program compiled to C
        x = np.random.default_rng(0).normal(size=(4, 70000)).astype(np.float32)
        np.testing.assert_allclose(np.asarray(f(x)),
                                   np.broadcast_to((np.tanh(x) * 2).sum(0), x.shape),
                                   rtol=1e-5, atol=1e-5)
        g = functrax.pmap(functrax.grad(lambda w, x: fnp.tanh(x @ w).sum()), in_axes=(None, 0),
                          backend="c")
        w, xs = np.ones((5, 3), np.float32), np.ones((4, 2, 5), np.float32)
        np.testing.assert_allclose(np.asarray(g(w, xs)),
                                   np.asarray(functrax.pmap(functrax.grad(
                                       lambda w, x: fnp.tanh(x @ w).sum()),
                                       in_axes=(None, 0))(w, xs)), rtol=1e-6)
    finally:
        functrax.config.update("num_cpu_devices", prev)
    assert current_share() == 1 and _num_threads() == cores
