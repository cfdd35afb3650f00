"""IR passes: CSE, constant folding, algebraic simplification, forwarding, and the pipeline.

Each pass is checked on a small jaxpr (which equations it removes or rewrites), for results
unchanged (``eval_jaxpr`` before vs after, compared with numpy) and for types unchanged
(``check_jaxpr``; output avals equal, weak types included). A hypothesis test runs the whole
pipeline on random small programs.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import functrax
import functrax.numpy as fnp
from functrax import lax
from functrax import primitives as P
from functrax.core import ClosedJaxpr
from functrax.errors import JaxprTypeError
from functrax.passes import pipeline
from functrax.passes.const_fold import MAX_ELEMENTS, const_fold, prune_consts
from functrax.passes.cse import cse, no_cse
from functrax.passes.dce import dce
from functrax.passes.forward import forward, forward_inputs, forward_outputs
from functrax.passes.simplify import lossless, simplify
from functrax.passes.simplify import rules as simplify_rules

F32 = np.float32


# --- helpers ---


def names(j):
    j = j.jaxpr if isinstance(j, ClosedJaxpr) else j
    return [e.primitive.name for e in j.eqns]


def on_jaxpr(fn):
    return lambda c: ClosedJaxpr(fn(c.jaxpr), c.consts)


def run(closed, *args):
    return [np.asarray(o) for o in functrax.eval_jaxpr(closed.jaxpr, closed.consts, *args)]


def check_same(before, after, *args):
    """``after`` is well typed, has the same output avals and computes the same values."""
    functrax.check_jaxpr(after)
    assert after.out_avals == before.out_avals
    want, got = run(before, *args), run(after, *args)
    for w, g, a in zip(want, got, before.out_avals):
        assert g.shape == w.shape == a.shape and g.dtype == w.dtype == a.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6, equal_nan=True)


def apply(pass_fn, f, *args):
    """Trace ``f``, apply ``pass_fn`` (ClosedJaxpr -> ClosedJaxpr), check, return both."""
    before = functrax.make_jaxpr(f)(*args)
    after = pass_fn(before)
    check_same(before, after, *args)
    return before, after


def bind(prim, *args, **params):
    return prim.bind(*args, **params)


X = np.linspace(-2, 2, 6, dtype=F32).reshape(2, 3)


# --- CSE ---


def test_cse_merges_duplicates_and_keeps_first():
    f = lambda x: fnp.sin(x) * fnp.sin(x) + fnp.sum(x, axis=0) + fnp.sum(x, axis=0)
    before, after = apply(on_jaxpr(cse), f, X)
    assert names(before).count("sin") == 2 and names(after).count("sin") == 1
    assert names(before).count("reduce_sum") == 2 and names(after).count("reduce_sum") == 1
    mul = [e for e in after.eqns if e.primitive is P.mul_p][0]
    assert mul.invars[0] is mul.invars[1]


def test_cse_chains_merges():
    # the second cos reads the second sin: it merges only once the sins have merged
    f = lambda x: fnp.cos(fnp.sin(x)) - fnp.cos(fnp.sin(x))
    before, after = apply(on_jaxpr(cse), f, X)
    assert names(after) == ["sin", "cos", "sub"]


def test_cse_distinguishes_params_literals_and_types():
    def f(x):
        return (fnp.sum(x, axis=0), fnp.sum(x, axis=1),   # different params
                lax.add(x, 0.0), lax.add(x, -0.0),           # literals differing in sign
                lax.mul(x, fnp.float32(2.0)), lax.mul(x, 2.0),  # strong vs weak literal
                lax.integer_pow(x, 2), lax.integer_pow(x, 3))
    before, after = apply(on_jaxpr(cse), f, X)
    assert after.jaxpr is before.jaxpr  # nothing merged: cse returns its input


def test_cse_same_literal_value_merges():
    f = lambda x: lax.add(x, 2.0) * lax.add(x, 2.0)
    _, after = apply(on_jaxpr(cse), f, X)
    assert names(after) == ["add", "mul"]


def test_cse_never_merges_copy_or_remat():
    assert P.copy_p in no_cse
    f = lambda x: bind(P.copy_p, x) + bind(P.copy_p, x)
    _, after = apply(on_jaxpr(cse), f, X)
    assert names(after).count("copy") == 2
    g = functrax.checkpoint(fnp.sin)
    before, after = apply(on_jaxpr(cse), lambda x: g(x) * g(x), X)
    assert names(after).count("remat2") == 2
    # ... and does not look inside remat2's jaxpr
    inner = [e for e in after.eqns if e.primitive.name == "remat2"][0].params["jaxpr"]
    assert names(inner) == ["sin"]


def test_cse_compares_jaxpr_params_by_identity():
    f1 = functrax.jit(lambda x: x * 3.0)
    f2 = functrax.jit(lambda x: x * 3.0)  # same program, different jaxpr object
    before, after = apply(on_jaxpr(cse), lambda x: (f1(x), f1(x), f2(x)), X)
    assert names(before) == ["jit"] * 3 and names(after) == ["jit"] * 2


def test_cse_multiple_results():
    srt = lambda a, b: bind(P.sort_p, a, b, dimension=1, is_stable=True, num_keys=1)
    f = lambda x: srt(x, -x)[1] - srt(x, -x)[1] + srt(x, -x)[0]
    _, after = apply(on_jaxpr(cse), f, X)
    assert names(after).count("sort") == 1


# --- constant folding ---


def test_const_fold_folds_consts_and_literals():
    c = np.arange(6, dtype=F32).reshape(2, 3)
    f = lambda x: x + fnp.sin(c) * 2.0 + fnp.cos(fnp.float32(0.5))
    before, after = apply(const_fold, f, X)
    assert "sin" in names(before) and names(after) == ["add", "add"]
    # the folded array is a new const; the original (now unread) const was dropped
    assert len(after.consts) == 1
    np.testing.assert_allclose(np.asarray(after.consts[0]), np.sin(c) * 2, rtol=1e-6)
    lit = after.eqns[1].invars[1]  # the rank-0 result became a literal
    assert isinstance(lit, functrax.core.Literal) and lit.aval.shape == ()
    np.testing.assert_allclose(lit.val, np.cos(F32(0.5)), rtol=1e-6)


def test_const_fold_rank0_output_becomes_literal_output():
    before, after = apply(const_fold, lambda x: (x, fnp.float32(3) * 2.0), X)
    assert names(after) == [] and isinstance(after.jaxpr.outvars[1], functrax.core.Literal)
    assert after.jaxpr.outvars[1].aval == before.out_avals[1]


def test_const_fold_size_cap():
    # a scalar broadcast to a big shape stays a broadcast ...
    _, after = apply(const_fold, lambda x: x + fnp.ones((100, 100)).sum(), np.float32(1))
    assert "broadcast_in_dim" in names(after) and not after.consts
    # ... a small one is folded, and so is a big reduction of a const (small output)
    _, after = apply(const_fold, lambda x: x + fnp.ones((3,)), np.ones(3, F32))
    assert names(after) == ["add"]
    big = np.ones((300, 300), F32)
    _, after = apply(const_fold, lambda x: x + big.sum() + fnp.sum(fnp.asarray(big)), F32(1))
    assert names(after) == ["add", "add"] and not after.consts
    assert MAX_ELEMENTS <= 1_000_000


def test_const_fold_keeps_copy_and_tracks_known_values():
    c = np.ones(3, F32)
    _, after = apply(const_fold, lambda x: x + bind(P.copy_p, fnp.asarray(c) * 2), np.ones(3, F32))
    assert names(after) == ["copy", "add"]
    # iota has no inputs: folded (small)
    _, after = apply(const_fold, lambda x: x + lax.iota(F32, 3), np.ones(3, F32))
    assert names(after) == ["add"]


def test_const_fold_dtypes_and_weak_types_preserved():
    f = lambda x: (x + fnp.int8(100) * fnp.int8(3),  # int8 wrap-around, as at run time
                   fnp.asarray(2.5).astype(fnp.int32), 2.0 * fnp.asarray(3))
    before, after = apply(const_fold, f, np.int8(1))
    assert names(after) == ["add"]
    assert [a.weak_type for a in after.out_avals] == [a.weak_type for a in before.out_avals]


def test_prune_consts():
    c = np.ones(3, F32)
    closed = functrax.make_jaxpr(lambda x: x + c)(np.ones(3, F32))
    assert prune_consts(closed) is closed
    j = closed.jaxpr
    dead = ClosedJaxpr(dce(functrax.Jaxpr(j.constvars, j.invars, j.invars, j.eqns)),
                       closed.consts)
    pruned = prune_consts(dead)
    assert pruned.consts == [] and pruned.jaxpr.constvars == []
    functrax.check_jaxpr(pruned)


# --- simplification ---


@pytest.mark.parametrize("f, gone", [
    (lambda x: x * 1.0, "mul"), (lambda x: 1.0 * x, "mul"), (lambda x: x + 0.0, "add"),
    (lambda x: 0.0 + x, "add"), (lambda x: x - 0.0, "sub"), (lambda x: x / 1.0, "div"),
    (lambda x: fnp.ones(x.shape) * x, "mul"), (lambda x: x + fnp.zeros(x.shape), "add"),
    (lambda x: lax.integer_pow(x, 1), "integer_pow"),
    (lambda x: fnp.where(True, x, 2.0), "select_n"),
    (lambda x: fnp.where(False, 2.0, x), "select_n"),
])
def test_simplify_identities(f, gone):
    before, after = apply(on_jaxpr(simplify), f, X)
    assert gone in names(before)
    after = on_jaxpr(dce)(after)
    assert gone not in names(after)
    assert after.jaxpr.outvars[0] is after.jaxpr.invars[0]


def test_simplify_int_and_bool_identities():
    for x in (np.arange(6, dtype=np.int32) - 3, np.array([True, False])):
        f = lambda x: lax.mul(lax.add(x, x.dtype.type(0)), x.dtype.type(1))
        _, after = apply(lambda c: on_jaxpr(dce)(on_jaxpr(simplify)(c)), f, x)
        assert names(after) == []
    _, after = apply(on_jaxpr(simplify), lambda x: lax.div(x, np.int32(1)),
                     np.arange(4, dtype=np.int32) - 2)
    assert on_jaxpr(dce)(after).eqns == []


def test_simplify_keeps_non_identities():
    f = lambda x: (x * 2.0, x + 1.0, 0.0 - x, 1.0 / x, x * fnp.float32(np.nan),
                   lax.integer_pow(x, 2))
    before, after = apply(on_jaxpr(simplify), f, X)
    assert after.jaxpr is before.jaxpr


def test_simplify_keeps_scalar_promotion_and_weak_types():
    # mul a:f32[] ones:f32[3] has an f32[3] result: a is not the result
    _, after = apply(on_jaxpr(simplify), lambda s: lax.mul(s, fnp.ones(3)), F32(2))
    assert "mul" in names(after) and after.out_avals[0].shape == (3,)
    # a weak-typed x times a strong 1 is strong: forwarding x would change the output aval
    before, after = apply(on_jaxpr(simplify), lambda x: bind(P.mul_p, x, fnp.float32(1)), 2.0)
    assert before.out_avals[0].weak_type is False and "mul" in names(after)


def test_simplify_double_negation_and_involutions():
    f = lambda x: (-(-x), -(-(-x)), ~~(x > 0))
    before, after = apply(lambda c: on_jaxpr(dce)(on_jaxpr(simplify)(c)), f, X)
    assert names(after) == ["neg", "gt"]
    assert after.jaxpr.outvars[0] is after.jaxpr.invars[0]


def test_simplify_transposes():
    x = np.arange(24, dtype=F32).reshape(2, 3, 4)
    t = lambda a, p: bind(P.transpose_p, a, permutation=p)
    f = lambda x: (t(t(x, (1, 2, 0)), (1, 2, 0)), t(t(x, (1, 2, 0)), (2, 0, 1)),
                   t(x, (0, 1, 2)), t(t(t(x, (1, 0, 2)), (0, 2, 1)), (2, 1, 0)))
    before, after = apply(lambda c: on_jaxpr(dce)(on_jaxpr(simplify)(c)), f, x)
    assert names(before).count("transpose") == 8
    assert names(after).count("transpose") == 2  # one composed transpose per non-identity
    outs = after.jaxpr.outvars
    assert outs[1] is after.jaxpr.invars[0] and outs[2] is after.jaxpr.invars[0]


def test_simplify_reshapes_squeeze_expand_dims():
    r = lambda a, s: bind(P.reshape_p, a, new_sizes=s, dimensions=None)
    # expand_dims_p itself (lax.expand_dims stages a broadcast_in_dim, as JAX's; the lowering
    # boundary turns it back into this primitive before simplify runs)
    ed = lambda a, d: bind(P.expand_dims_p, a, dimensions=d)
    f = lambda x: (r(r(x, (6,)), (3, 2)), r(r(x, (6,)), (2, 3)), r(x, (2, 3)),
                   lax.squeeze(ed(x, (0,)), (0,)),
                   ed(lax.squeeze(r(x, (1, 2, 3)), (0,)), (0,)),
                   r(ed(x, (1,)), (3, 2)))
    before, after = apply(lambda c: on_jaxpr(dce)(on_jaxpr(simplify)(c)), f, X)
    # one op per output that is not x itself, each reading x directly
    assert sorted(names(after)) == ["expand_dims", "reshape", "reshape"]
    assert all(e.invars[0] is after.jaxpr.invars[0] for e in after.eqns)
    assert after.jaxpr.outvars[1] is after.jaxpr.invars[0]


def test_simplify_converts():
    cvt = lambda a, dt, weak=False: bind(P.convert_element_type_p, a, new_dtype=np.dtype(dt),
                                         weak_type=weak)
    i8 = np.arange(-4, 4, dtype=np.int8)
    # same dtype and weak type: removed; int8 -> int32 -> float32: one convert
    before, after = apply(lambda c: on_jaxpr(dce)(on_jaxpr(simplify)(c)),
                          lambda x: (cvt(x, np.int8), cvt(cvt(x, np.int32), F32)), i8)
    assert names(after) == ["convert_element_type"]
    assert after.eqns[0].invars[0] is after.jaxpr.invars[0]
    # a lossless round trip disappears entirely
    _, after = apply(lambda c: on_jaxpr(dce)(on_jaxpr(simplify)(c)),
                     lambda x: cvt(cvt(x, np.float32), np.int8), i8)
    assert names(after) == []
    # lossy first conversions stay (values differ: truncation, rounding)
    xf = np.array([1.5, -2.7, 1e-5, 65519.0], F32)
    for mid in (np.int32, np.float16):
        _, after = apply(on_jaxpr(simplify), lambda x: cvt(cvt(x, mid), F32), xf)
        assert names(after).count("convert_element_type") == 2
    # a weak-type change is not a no-op
    _, after = apply(on_jaxpr(simplify), lambda x: cvt(x, F32, weak=True), xf)
    assert names(after) == ["convert_element_type"]


def test_lossless_table():
    assert lossless(np.int16, F32) and not lossless(np.int32, F32)
    assert lossless(F32, np.float64) and not lossless(np.float64, F32)
    assert lossless(np.float16, F32) and not lossless(F32, np.float16)
    assert lossless(np.bool_, np.int8) and not lossless(np.int8, np.bool_)
    assert lossless(np.uint8, np.int16) and not lossless(np.int8, np.uint8)
    assert lossless(F32, np.complex64) and not lossless(np.complex64, F32)
    # the claim, checked on extreme values
    for src, dst in [(np.int16, F32), (np.uint16, np.int32), (np.float16, F32)]:
        info = np.iinfo(src) if np.dtype(src).kind in "iu" else np.finfo(src)
        vals = np.array([info.min, info.max, 1, 0], src)
        if np.dtype(src).kind == "f":
            vals = np.append(vals, np.array([info.smallest_subnormal, info.tiny], src))
        assert np.array_equal(vals.astype(dst).astype(src), vals)


def test_simplify_broadcast_and_rev():
    bid = lambda a: bind(P.broadcast_in_dim_p, a, shape=a.shape, broadcast_dimensions=(0, 1))
    rev = lambda a, d: bind(P.rev_p, a, dimensions=d)
    f = lambda x: (bid(x), rev(x, ()), rev(rev(x, (1,)), (1,)), rev(x, (1,)))
    _, after = apply(lambda c: on_jaxpr(dce)(on_jaxpr(simplify)(c)), f, X)
    assert names(after) == ["rev"]


def test_simplify_composes_broadcasts():
    v = np.arange(3, dtype=F32)
    # (3,) -> (1, 3) -> (2, 4, 3): one broadcast of the source with dims (2,)
    f = lambda x: lax.broadcast_in_dim(lax.broadcast_in_dim(x, (1, 3), (1,)), (2, 4, 3), (1, 2))
    _, after = apply(lambda c: on_jaxpr(dce)(on_jaxpr(simplify)(c)), f, v)
    assert names(after) == ["broadcast_in_dim"]
    assert after.jaxpr.eqns[0].params["broadcast_dimensions"] == (2,)
    # a size-1 source axis broadcast again: (1,) -> (3, 1) -> (3, 5)
    g = lambda x: lax.broadcast_in_dim(lax.broadcast_in_dim(x, (3, 1), (1,)), (3, 5), (0, 1))
    _, after = apply(lambda c: on_jaxpr(dce)(on_jaxpr(simplify)(c)), g, np.ones(1, F32))
    assert names(after) == ["broadcast_in_dim"]


def test_simplify_reductions_over_size_1_axes_are_reshapes():
    x = X.reshape(2, 1, 3)
    f = lambda x: (lax.reduce_sum(x, (1,)), lax.reduce_max(x, (1,)), lax.reduce_sum(x, (0, 1)))
    _, after = apply(on_jaxpr(simplify), f, x)
    assert names(after) == ["reshape", "reshape", "reduce_sum"]
    ints = (X * 10).astype(np.int32).reshape(1, 2, 3)
    _, after = apply(on_jaxpr(simplify), lambda i: lax.reduce_prod(i, (0,)), ints)
    assert names(after) == ["reshape"]


def test_simplify_raises_on_an_ill_typed_rewrite(monkeypatch):
    """A rule proposing an equation that does not type-check (or that changes the outputs'
    types) is a bug in the rule: simplify raises, naming the rule's primitive and the types,
    instead of keeping the original equation silently."""
    # transpose: a permutation of the wrong length does not type-check at all
    bad_perm = lambda eqn, ctx: eqn.replace(params=dict(eqn.params, permutation=(0,)))
    monkeypatch.setitem(simplify_rules, P.transpose_p, bad_perm)
    j = functrax.make_jaxpr(lambda x: bind(P.transpose_p, x, permutation=(1, 0)))(X).jaxpr
    with pytest.raises(JaxprTypeError, match=r"(?s)the rule for 'transpose' rewrote .*"
                       r"f32\[2,3\]\) -> \(f32\[3,2\]\).* ill-typed"):
        simplify(j)
    # convert_element_type: well typed, but to int32 where the output is float16
    to_i32 = lambda eqn, ctx: eqn.replace(params=dict(eqn.params, new_dtype=np.dtype(np.int32)))
    monkeypatch.setitem(simplify_rules, P.convert_element_type_p, to_i32)
    j = functrax.make_jaxpr(lambda x: x.astype(np.float16))(X).jaxpr
    with pytest.raises(JaxprTypeError, match=r"the rule for 'convert_element_type' .* gives "
                       r"\(i32\[2,3\]\) instead of \(f16\[2,3\]\)"):
        simplify(j)
    # a weak-type change is a type change too
    weak = lambda eqn, ctx: eqn.replace(params=dict(eqn.params, weak_type=True))
    monkeypatch.setitem(simplify_rules, P.convert_element_type_p, weak)
    with pytest.raises(JaxprTypeError, match=r"gives \(f16\[2,3\]\{weak\}\) instead of "
                       r"\(f16\[2,3\]\)"):
        simplify(j)


def test_simplify_returns_input_when_nothing_to_do():
    j = functrax.make_jaxpr(lambda x: fnp.sin(x) * 2.0)(X).jaxpr
    assert simplify(j) is j and cse(j) is j and forward(j) is j


# --- forwarding ---


def test_forward_inputs_and_outputs():
    cvt = lambda a: bind(P.convert_element_type_p, a, new_dtype=np.dtype(F32), weak_type=False)
    f = lambda x, y: (fnp.sin(x), y, cvt(x), x, bind(P.copy_p, y), 2.0)
    closed = functrax.make_jaxpr(f)(X, X)
    j, fwd = forward_inputs(closed.jaxpr)
    assert fwd == [None, 1, 0, 0, None, None]  # copy is not forwarded
    check_same(closed, ClosedJaxpr(j, []), X, X)
    assert forward_outputs(j) == [None, None, None, 2, None, None]
    pruned, fwd2 = forward_inputs(closed.jaxpr, prune=True)
    assert fwd2 == fwd and len(pruned.outvars) == 3
    functrax.check_jaxpr(pruned)


def test_forward_keeps_weak_type_changes():
    cvt = lambda a: bind(P.convert_element_type_p, a, new_dtype=np.dtype(F32), weak_type=True)
    closed = functrax.make_jaxpr(cvt)(X)
    assert forward_inputs(closed.jaxpr)[1] == [None]


# --- the pipeline ---


def test_pipeline_order():
    order = [n for n, _ in pipeline.PASSES]
    assert order[:7] == ["inline", "sink_transposes", "simplify", "const_fold", "cse", "forward",
                         "dce"]


def test_pipeline_iterates_to_fixed_point():
    # x * (2 - 1): folding makes a literal 1 that simplification then removes; the two
    # sins only become equal after the multiplications by one are gone
    f = lambda x: fnp.sin(x * (fnp.float32(2) - 1)) + fnp.sin(x)
    before, after = apply(pipeline.optimize, f, X)
    assert names(after) == ["sin", "add"]


def test_pipeline_inlines_then_optimizes():
    g = functrax.jit(lambda x: fnp.sin(x) * 1.0)
    h = functrax.checkpoint(fnp.sin)
    before, after = apply(pipeline.optimize, lambda x: g(x) + h(x) + fnp.sin(x), X)
    assert names(after) == ["sin", "add", "add"]


def test_jit_lower_text():
    f = lambda x: (x * 1.0 + 0.0) + fnp.sin(x) * fnp.sin(x)
    text = functrax.jit(f).lower(np.ones(3, F32)).as_text()
    assert text.count("sin") == 1
    assert "1.0" not in text and "0.0" not in text
    np.testing.assert_allclose(np.asarray(functrax.jit(f)(X)),
                               X + np.sin(X) * np.sin(X), rtol=1e-6)


def test_jit_results_unchanged_by_passes():
    c = np.arange(6, dtype=F32).reshape(2, 3)

    def f(x, y):
        a = fnp.exp(c) - fnp.exp(c)  # folds to zeros
        return (x * 1.0 + a) @ y.T.T.T, -(-y), fnp.sum(x) + fnp.sum(x), y

    jf = functrax.jit(f)
    outs = jf(X, X)
    want = (X @ X.T, X, 2 * X.sum(), X)
    for o, w in zip(outs, want):
        np.testing.assert_allclose(np.asarray(o), w, rtol=1e-5)
    ref = functrax.make_jaxpr(f)(X, X)
    assert [o.aval for o in outs] == ref.out_avals
    assert outs[3] is not None


# --- random programs ---

UNARY = [fnp.sin, fnp.cos, fnp.tanh, lambda a: -a, fnp.abs, lambda a: a * a,
         lambda a: a + 1.0, lambda a: a + -0.0, lambda a: a - 1.0, lambda a: a * 0.5,
         lambda a: a * 2.0, lambda a: 2.0 * a, lambda a: a / 4.0]
BINARY = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, fnp.maximum]
IDENTITIES = [
    lambda a: a * 1.0, lambda a: 1.0 * a, lambda a: a + 0.0, lambda a: 0.0 + a,
    lambda a: a - 0.0, lambda a: a / 1.0, lambda a: -(-a), lambda a: a.T.T,
    lambda a: a.reshape(-1).reshape(a.shape), lambda a: a.astype(fnp.float32),
    lambda a: fnp.squeeze(fnp.expand_dims(a, 0), 0), lambda a: fnp.where(True, a, 0.0),
    lambda a: lax.integer_pow(a, 1), lambda a: a * fnp.ones(a.shape),
    lambda a: fnp.transpose(fnp.transpose(a, (1, 0)), (1, 0)),
]
CONST = np.linspace(-1, 1, 9, dtype=F32).reshape(3, 3)
SHAPE_OPS = [
    lambda a: a.T, lambda a: fnp.sum(a, axis=0, keepdims=True) + a,
    lambda a: fnp.max(a, axis=1, keepdims=True) - a, lambda a: a.reshape(9)[::-1].reshape(3, 3),
    lambda a: a + fnp.sin(CONST), lambda a: a * (fnp.float32(3) - 2) + fnp.sum(CONST),
]


@st.composite
def programs(draw):
    steps = draw(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 99), st.integers(0, 99),
                                    st.integers(0, 99)), min_size=1, max_size=12))
    n_out = draw(st.integers(1, 3))
    outs = draw(st.lists(st.integers(0, 99), min_size=n_out, max_size=n_out))
    return steps, outs, draw(st.booleans())


def build(program):
    steps, outs, observe_all = program

    def f(x, y):
        pool = [x, y]
        for kind, i, j, k in steps:
            a, b = pool[i % len(pool)], pool[j % len(pool)]
            if kind == 0:
                op, op2 = UNARY[k % len(UNARY)], UNARY[(k + 1) % len(UNARY)]
                pool += [op(a), op(a), op2(a)]  # a repeated and a similar subexpression
            elif kind == 1:
                pool.append(BINARY[k % len(BINARY)](a, b))
            elif kind == 2:
                pool.append(IDENTITIES[k % len(IDENTITIES)](a))
            else:
                pool.append(SHAPE_OPS[k % len(SHAPE_OPS)](a))
        chosen = tuple(pool[o % len(pool)] for o in outs)
        return chosen + tuple(pool[2:]) if observe_all else chosen
    return f


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_pipeline_preserves_random_programs(program):
    f = build(program)
    x = np.linspace(-1.5, 1.5, 9, dtype=F32).reshape(3, 3)
    y = np.cos(x) + 0.25
    before = functrax.make_jaxpr(f)(x, y)
    closed = before
    for name, fn in pipeline.PASSES:
        closed = fn(closed)
        functrax.check_jaxpr(closed)
        assert closed.out_avals == before.out_avals, name
    check_same(before, closed, x, y)
    optimized = pipeline.optimize(before)
    check_same(before, optimized, x, y)
    assert len(optimized.eqns) <= len(before.eqns)
    # nothing is left for a pass to do, and no multiplication by one survives
    for _, fn in pipeline.PASSES[1:4]:
        assert fn(optimized) is optimized
    for e in optimized.eqns:
        if e.primitive in (P.mul_p, P.div_p):
            assert not any(isinstance(v, functrax.core.Literal) and v.val == 1
                           for v in e.invars[1 if e.primitive is P.div_p else 0:])
    jit_out = functrax.jit(f)(x, y)
    for o, w in zip(jit_out, run(before, x, y)):
        np.testing.assert_allclose(np.asarray(o), w, rtol=1e-6, atol=1e-6)


# --- dce of control flow (scan, while, cond) ---


def _eqn(closed, name):
    """The first equation named ``name`` of ``closed``'s top level."""
    return next(e for e in closed.jaxpr.eqns if e.primitive.name == name)


def _without_dce():
    return [p for p in pipeline.PASSES if p[0] != "dce"]


def _dce_closed(c):
    return on_jaxpr(dce)(c)


def test_dce_rules_table():
    from functrax.control_flow.cond import cond_p
    from functrax.control_flow.loops import while_p
    from functrax.control_flow.scan import scan_p
    from functrax.passes.dce import dce_rules
    assert {scan_p, while_p, cond_p} <= set(dce_rules)


def test_dce_returns_jaxpr_itself_when_nothing_is_dead():
    c = functrax.make_jaxpr(lambda x: lax.scan(lambda h, x: (h + x, h * x), 0.0, x))(X[0])
    assert dce(c.jaxpr) is c.jaxpr


XS = np.linspace(-1, 1, 12, dtype=F32).reshape(4, 3)


def _scan_prog(xs):
    """Carries: h (used), n (dead counter), a (final value unused, but feeds the used y),
    b (final value unused, depends on h only); ys: h*2 (used) and cos(h) (unused)."""
    def body(c, x):
        h, n, a, b = c
        h = fnp.tanh(h * 0.5 + x)
        return (h, n + 1, a + x, b + h), (h * 2 + a, fnp.cos(h))
    (h, n, a, b), (ys, zs) = lax.scan(body, (fnp.zeros(3), 0, fnp.ones(3), fnp.zeros(3)), xs)
    return h, ys


def _scan_ref(xs):
    h, a = np.zeros(3, F32), np.ones(3, F32)
    ys = []
    for x in xs:
        h = np.tanh(h * 0.5 + x)
        ys.append(h * 2 + a)
        a = a + x
    return h, np.stack(ys)


def test_dce_scan_drops_unused_ys_and_dead_carries():
    before, after = apply(_dce_closed, _scan_prog, XS)
    b, a = _eqn(before, "scan"), _eqn(after, "scan")
    assert b.params["num_carry"] == 4 and len(b.outvars) == 6
    # h and a stay (a feeds a used y); n and b go; cos(h) goes
    assert a.params["num_carry"] == 2 and len(a.outvars) == 3
    assert "cos" in str(before) and "cos" not in str(after)
    for got, want in zip(run(after, XS), _scan_ref(XS)):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_dce_scan_carry_fixed_point():
    # c1's final value is unused but c2 (used) reads it; c3 reads c2 but nothing reads c3
    def f(xs):
        def body(c, x):
            c1, c2, c3 = c
            return (c1 * 0.5 + x, c2 + c1, c3 + c2 * c2), ()
        (c1, c2, c3), _ = lax.scan(body, (fnp.zeros(3), fnp.zeros(3), fnp.zeros(3)), xs)
        return c2
    before, after = apply(_dce_closed, f, XS)
    assert _eqn(after, "scan").params["num_carry"] == 2
    c1, c2 = np.zeros(3, F32), np.zeros(3, F32)
    for x in XS:
        c1, c2 = c1 * 0.5 + x, c2 + c1
    np.testing.assert_allclose(run(after, XS)[0], c2, rtol=1e-6)


def test_dce_scan_drops_unused_consts_and_xs():
    def f(w, v, xs, zs):
        def body(h, xz):
            x, z = xz
            return h * w + x, fnp.sin(z * v)
        return lax.scan(body, fnp.zeros(3), (xs, zs))[0]
    before, after = apply(_dce_closed, f, F32(0.5), F32(2.0), XS, XS + 1)
    a = _eqn(after, "scan")
    assert a.params["num_consts"] == 1 and len(a.invars) == 3 and "sin" not in str(after)


def test_dce_scan_whole_equation_and_nested():
    def f(xs):
        def body(h, x):
            _, inner = lax.scan(lambda c, y: (c + y, fnp.exp(y)), 0.0, x)  # unused
            return h + x, fnp.sum(inner)
        h, ys = lax.scan(body, fnp.zeros(3), xs)
        lax.scan(lambda c, x: (c + fnp.sum(x), ()), 0.0, xs)  # entirely dead
        return h
    before, after = apply(_dce_closed, f, XS)
    assert names(before).count("scan") == 2 and names(after).count("scan") == 1
    assert len(_eqn(after, "scan").outvars) == 1
    assert "exp" in str(before) and "exp" not in str(after)
    np.testing.assert_allclose(run(after, XS)[0], XS.sum(0), rtol=1e-6)


def test_dce_while_drops_carries_not_needed():
    # i: read by the cond (kept); s: the used output; t: feeds s (kept); u: dead
    def f(x):
        def body(c):
            i, s, t, u = c
            return i + 1, s + t, t * 0.5, u + fnp.exp(s)
        i, s, t, u = lax.while_loop(lambda c: c[0] < 5, body, (0, fnp.zeros(3), x, x))
        return s
    x = X[0]
    before, after = apply(_dce_closed, f, x)
    w = _eqn(after, "while")
    assert len(_eqn(before, "while").outvars) == 4 and len(w.outvars) == 3
    assert "exp" in str(before) and "exp" not in str(after)
    s, t = np.zeros(3, F32), x.copy()
    for _ in range(5):
        s, t = s + t, t * 0.5
    np.testing.assert_allclose(run(after, x)[0], s, rtol=1e-6)


def test_dce_while_keeps_carries_the_cond_reads():
    def f(x):
        i, s = lax.while_loop(lambda c: c[0] < 3.0, lambda c: (c[0] + 1.0, c[1] * 2), (0.0, x))
        return s
    before, after = apply(_dce_closed, f, X[0])
    assert len(_eqn(after, "while").outvars) == 2
    np.testing.assert_allclose(run(after, X[0])[0], X[0] * 8, rtol=1e-6)


def test_dce_cond_drops_unused_outputs_from_every_branch():
    def f(p, x, y):
        a, b = lax.cond(p, lambda x, y: (fnp.sin(x), fnp.exp(y)),
                        lambda x, y: (fnp.cos(x), fnp.log(y)), x, y)
        return a
    for p in (True, False):
        before, after = apply(_dce_closed, f, p, X, X + 3)
        c = _eqn(after, "cond")
        assert len(c.outvars) == 1 and len(c.invars) == 2  # the index and x
        assert all(len(b.out_avals) == 1 and len(b.in_avals) == 1 for b in c.params["branches"])
        assert "exp" not in str(after) and "log" not in str(after)
        np.testing.assert_allclose(run(after, p, X, X + 3)[0], np.sin(X) if p else np.cos(X),
                                   rtol=1e-6)


def test_grad_of_scan_shrinks():
    # the forward scan's dead carry (a counter), its unused ys and an unused
    # accumulator are computed by the unoptimized gradient program; optimize drops them
    def f(w, xs):
        def body(c, x):
            h, n, s = c
            h = fnp.tanh(h * w + x)
            return (h, n + 1, s + fnp.sin(h)), (h * 2, fnp.cos(h))
        (h, n, s), (ys, zs) = lax.scan(body, (fnp.zeros(3), 0, fnp.zeros(3)), xs)
        return fnp.sum(h) + fnp.sum(ys)

    w = F32(0.7)
    c = functrax.make_jaxpr(functrax.grad(f))(w, XS)
    full, opt = pipeline.optimize(c, _without_dce()), pipeline.optimize(c)
    check_same(c, opt, w, XS)
    fwd_full, fwd_opt = _eqn(full, "scan"), _eqn(opt, "scan")
    assert len(fwd_opt.outvars) < len(fwd_full.outvars)
    assert fwd_opt.params["num_carry"] < fwd_full.params["num_carry"]
    assert len(str(opt)) < len(str(full))
    # the gradient against central differences in float64 numpy
    def ref(w):
        h, tot = np.zeros(3), 0.0
        for x in XS.astype(np.float64):
            h = np.tanh(h * w + x)
            tot += np.sum(h * 2)
        return tot + np.sum(h)
    eps = 1e-5
    want = (ref(0.7 + eps) - ref(0.7 - eps)) / (2 * eps)
    np.testing.assert_allclose(float(functrax.jit(functrax.grad(f))(w, XS)), want, rtol=1e-4)


# --- hoisting scan accumulators ---


def _hoist_closed(c):
    from functrax.passes.hoist_accumulators import hoist_accumulators
    return on_jaxpr(hoist_accumulators)(c)


A3 = np.linspace(-1, 1, 5 * 2 * 3, dtype=F32).reshape(5, 2, 3)
B3 = np.cos(np.arange(5 * 2 * 4, dtype=F32)).reshape(5, 2, 4)


@pytest.mark.parametrize("reverse", [False, True])
def test_hoist_dot_and_reduce_accumulators(reverse):
    # acc1 += a_t^T b_t (xs operands), acc2 += sum(tanh(a_t)) (a body value, stored as ys),
    # acc3 += (tanh(a_t)^T b_t)^T; h is an ordinary carry and stays
    def f(a, b):
        def body(c, ab):
            h, acc1, acc2, acc3 = c
            x, y = ab
            t = fnp.tanh(x + h)
            return (h * 0.5 + 1.0, acc1 + x.T @ y, acc2 + fnp.sum(t, axis=0),
                    acc3 + (t.T @ y).T), fnp.sum(t)
        init = (fnp.zeros(3), fnp.ones((3, 4)), fnp.zeros(3), fnp.zeros((4, 3)))
        return lax.scan(body, init, (a, b), reverse=reverse)

    before, after = apply(_hoist_closed, f, A3, B3)
    s = _eqn(after, "scan")
    assert _eqn(before, "scan").params["num_carry"] == 4 and s.params["num_carry"] == 1
    assert names(after).count("dot_general") == 2 and "dot_general" not in str(
        s.params["jaxpr"])
    h, acc1, acc2, acc3, ys = np.zeros(3, F32), np.ones((3, 4), F32), np.zeros(3, F32), \
        np.zeros((4, 3), F32), np.zeros(5, F32)
    for i in (range(4, -1, -1) if reverse else range(5)):
        t = np.tanh(A3[i] + h)
        h, acc1, acc2, acc3 = h * 0.5 + 1, acc1 + A3[i].T @ B3[i], acc2 + t.sum(0), \
            acc3 + (t.T @ B3[i]).T
        ys[i] = t.sum()
    for got, want in zip(run(after, A3, B3), [h, acc1, acc2, acc3, ys]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_hoist_leaves_non_accumulators_alone():
    W = np.eye(3, dtype=F32)

    def f(a, w):
        def body(c, x):
            acc, acc2, acc3 = c
            # acc is read by a y; acc2 sums a product with a loop-invariant const;
            # acc3 multiplies instead of adding
            return (acc + x.T @ x, acc2 + (x.T @ x) @ w, acc3 * (x.T @ x)), fnp.sum(acc)
        z = fnp.zeros((3, 3))
        return lax.scan(body, (z, z, fnp.ones((3, 3))), a)

    before = functrax.make_jaxpr(f)(A3, W)
    assert _hoist_closed(before).jaxpr is before.jaxpr


def test_pipeline_hoists_rnn_weight_gradients():
    # grad of a scan RNN: the backward scan accumulates dW, dU and db step by step; after
    # optimize they are single products / sums over the stacked steps
    U = np.linspace(-0.5, 0.5, 3 * 4, dtype=F32).reshape(3, 4)
    W = np.linspace(-0.3, 0.3, 16, dtype=F32).reshape(4, 4)
    xs = np.sin(np.arange(5 * 2 * 3, dtype=F32)).reshape(5, 2, 3)

    def loss(U, W, b, xs):
        def cell(h, x):
            h = fnp.tanh(x @ U + h @ W + b)
            return h, fnp.sum(h * h)
        _, ys = lax.scan(cell, fnp.zeros((2, 4)), xs)
        return fnp.sum(ys)

    b = np.full(4, 0.1, F32)
    c = functrax.make_jaxpr(functrax.grad(loss, argnums=(0, 1, 2)))(U, W, b, xs)
    no_hoist = [p for p in pipeline.PASSES if p[0] != "hoist_accumulators"]
    plain, opt = pipeline.optimize(c, no_hoist), pipeline.optimize(c)
    check_same(c, opt, U, W, b, xs)
    bwd_plain = [e for e in plain.eqns if e.primitive.name == "scan"][-1]
    bwd_opt = [e for e in opt.eqns if e.primitive.name == "scan"][-1]
    assert bwd_opt.params["num_carry"] == bwd_plain.params["num_carry"] - 3
    # central differences in float64 for dW
    def ref(W):
        h, tot = np.zeros((2, 4)), 0.0
        for x in xs.astype(np.float64):
            h = np.tanh(x @ U + h @ W + b)
            tot += np.sum(h * h)
        return tot
    got = np.asarray(functrax.jit(functrax.grad(loss, argnums=1))(U, W, b, xs))
    eps = 1e-6
    for i, j in [(0, 0), (1, 2), (3, 1)]:
        d = np.zeros((4, 4))
        d[i, j] = eps
        want = (ref(W + d) - ref(W - d)) / (2 * eps)
        np.testing.assert_allclose(got[i, j], want, rtol=1e-3, atol=1e-5)


def test_simplify_folds_a_transpose_of_a_dot_into_the_dot():
    """JAX's transpose rule of dot_general stages ``transpose(dot_general(ct, x))`` for a weight
    gradient; simplify computes it in its layout directly (operands swapped), but only when
    the transpose is the dot's single reader."""
    w = np.arange(8, dtype=F32).reshape(4, 2) / 8
    x = np.linspace(-1, 1, 12, dtype=F32).reshape(3, 4)
    g = functrax.grad(lambda w, x: fnp.tanh(x @ w).sum())
    simplify_dce = lambda c: on_jaxpr(dce)(on_jaxpr(simplify)(c))  # noqa: E731
    before, after = apply(simplify_dce, g, w, x)
    assert "transpose" in names(before) and "transpose" not in names(after)
    assert names(after).count("dot_general") == names(before).count("dot_general")
    # batched: (b, m, k) x (b, k, n) -> (b, n, m) by the swapped dot
    a, c = np.ones((2, 3, 5), F32), np.linspace(0, 1, 40, dtype=F32).reshape(2, 5, 4)
    bmm = lambda a, c: lax.transpose(lax.dot_general(a, c, (((2,), (1,)), ((0,), (0,)))),
                                     (0, 2, 1))
    _, after = apply(simplify_dce, bmm, a, c)
    assert names(after) == ["dot_general"]
    # two readers of the product: kept as it is
    def both(a, c):
        p = lax.dot(a, c)
        return lax.transpose(p, (1, 0)), p * 2.0
    _, after = apply(simplify_dce, both, a[0], c[0])
    assert "transpose" in names(after)
    # a permutation that is not the swap of the free blocks: kept
    keep = lambda a, c: lax.transpose(lax.dot_general(a, c, (((2,), (1,)), ((0,), (0,)))),
                                      (1, 0, 2))
    _, after = apply(simplify_dce, keep, a, c)
    assert "transpose" in names(after)
