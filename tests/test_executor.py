"""The jit executor (functrax/lowering/numpy/executor.py) and the dot_general fast paths: results
equal the eager numpy backend exactly, and buffer reuse never overwrites a buffer that an
input, a const, an output or a live view still refers to."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax
from functrax import primitives as P
from functrax.core import eval_jaxpr
from functrax.lowering.numpy import executor as X
from functrax.lowering.numpy import rules as NB
from functrax.lowering.numpy.executor import compile_jaxpr
from functrax.passes.inline import inline_closed
from tests.opspec import all_specs


def _compile(f, *args, donated=()):
    closed = inline_closed(functrax.make_jaxpr(f)(*args))
    return closed, compile_jaxpr(closed, donated=donated)


def _run(f, *args):
    """(executor outputs, eager outputs) of ``f`` on numpy ``args``."""
    closed, exe = _compile(f, *args)
    got = exe(*[np.asarray(a) for a in args])
    want = [np.asarray(o) for o in eval_jaxpr(closed.jaxpr, closed.consts,
                                              *[fnp.asarray(a) for a in args])]
    return got, want, exe


def _assert_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert type(g) is np.ndarray, type(g)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        np.testing.assert_array_equal(g, w)


# --- every op-spec case runs through the executor as the eager backend runs it ---

def _spec_cases():
    seen, cases = set(), []
    for s in all_specs():
        for shapes, dts, kw in s.cases():
            key = (s.name, str(dts))
            if key not in seen:
                seen.add(key)
                cases.append(pytest.param(s, shapes, dts, kw, id=f"{s.name}-{dts}"))
    return cases


@pytest.mark.parametrize("spec, shapes, dts, kw", _spec_cases())
def test_op_spec_through_the_executor_matches_eager(spec, shapes, dts, kw):
    args = spec.make_args(np.random.RandomState(0), shapes, dts)
    got, want, _ = _run(lambda *xs: spec.fn(*xs, **kw), *args)
    _assert_same(got, want)


# --- the direct ufuncs are exactly the numpy rules ---

_SAMPLES = {
    "f": np.array([-2.5, -1.0, -0.0, 0.0, 0.3, 0.9, 2.0, np.inf, -np.inf, np.nan], np.float32),
    "i": np.array([-7, -3, -1, 0, 1, 2, 3, 5, 9, 30], np.int32),
    "b": np.array([True, False, True, True, False, False, True, False, True, False]),
}


@pytest.mark.parametrize("prim", list(NB.numpy_ufuncs), ids=lambda p: p.name)
def test_direct_ufunc_is_exactly_the_rule(prim):
    ufunc = NB.numpy_ufuncs[prim]
    rule = NB.numpy_rules[prim]
    tried = 0
    for kind, x in _SAMPLES.items():
        args = [x, x[::-1].copy()][:ufunc.nin]
        try:
            with np.errstate(all="ignore"):
                want = rule(*args)
        except (TypeError, ValueError) as e:  # the ufunc refuses the same inputs
            with pytest.raises(type(e)), np.errstate(all="ignore"):
                ufunc(*args)
            continue
        tried += 1
        with np.errstate(all="ignore"):
            got = ufunc(*args)
        assert got.dtype == np.asarray(want).dtype, kind
        np.testing.assert_array_equal(got, want, err_msg=f"{prim.name} on {kind}")
    assert tried, f"{prim.name}: no sample dtype accepted"


@pytest.mark.parametrize("prim, dtype, ufunc", [
    (P.add_p, np.float32, np.add), (P.add_p, np.bool_, np.logical_or),
    (P.mul_p, np.int32, np.multiply), (P.mul_p, np.bool_, np.logical_and),
    (P.div_p, np.float32, np.true_divide), (P.div_p, np.int32, None),
    (P.rem_p, np.float64, np.fmod), (P.rem_p, np.int32, None),
])
def test_dtype_dependent_ufunc_choice(prim, dtype, ufunc):
    x = np.arange(1, 4).astype(dtype)
    closed = functrax.make_jaxpr(lambda a, b: prim.bind(a, b))(x, x)
    assert X._ufunc_for(closed.jaxpr.eqns[0]) is ufunc


def test_tiny_program_calls_ufuncs_directly():
    x = np.arange(8, dtype=np.float32)
    got, want, exe = _run(lambda x: x * 2 + 1, x)
    _assert_same(got, want)
    calls = [ln for ln in exe.source.splitlines()[1:-1] if not ln.strip().startswith("del ")]
    assert len(calls) == 2 and "out=" in calls[1], exe.source
    assert "_fix" not in exe.source, exe.source


def test_rank0_results_are_arrays_of_the_right_dtype():
    got, want, _ = _run(lambda x, y: (x * y + 1, fnp.sum(x) > 0, lax.dot(y, y)),
                        np.float32(2.0), np.ones(3, np.float32))
    _assert_same(got, want)


# --- select_n: the branch-free blend is exact ---

_BLEND_DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64,
                 np.float16, np.float32, np.float64, np.complex64]


def _special(dtype, n, rng):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.rand(n) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.randint(info.min, info.max, size=n, dtype=np.int64).astype(dtype) \
            if dtype.itemsize < 8 else rng.randint(-2**62, 2**62, size=n).astype(dtype)
    vals = rng.randn(n).astype(dtype)
    specials = np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0], dtype)
    vals[:len(specials)] = specials
    if dtype.kind == "c":
        vals = vals + 1j * vals[::-1]
    return vals


@pytest.mark.parametrize("dtype", _BLEND_DTYPES, ids=lambda d: np.dtype(d).name)
def test_select_blend_is_bitwise_exact(dtype):
    rng = np.random.RandomState(0)
    n = 64
    pred = rng.rand(n) < 0.5
    a, b = _special(dtype, n, rng), _special(dtype, n, rng)
    want = np.where(pred, b, a)
    for got in (X.select2(pred, a, b), X.select2(pred.reshape(8, 8), a.reshape(8, 8),
                                                b.reshape(8, 8)).ravel()):
        assert got.dtype == want.dtype
        assert got.tobytes() == want.tobytes()
    zero = np.zeros_like(a)
    assert X.select2_zero_false(pred, b).tobytes() == np.where(pred, b, zero).tobytes()
    assert X.select2_zero_true(pred, a).tobytes() == np.where(pred, zero, a).tobytes()


@pytest.mark.parametrize("fill, blended", [(0.0, "select2_zero_false"), (-0.0, "select2"),
                                           (1.5, "select2")])
def test_select_with_a_broadcast_constant(fill, blended):
    x = np.array([[-1.0, 2.0, np.nan], [3.0, -0.0, -np.inf]], np.float32)
    got, want, exe = _run(lambda x: lax.select(x > 0, x, lax.full_like(x, fill)), x)
    _assert_same(got, want)
    assert np.signbit(got[0]).tolist() == np.signbit(want[0]).tolist()
    assert any(getattr(f, "__name__", None) == blended for f in _globals(exe))


def test_where_with_zero_in_the_true_branch():
    x = np.array([[-1.0, 2.0], [3.0, -4.0]], np.float32)
    got, want, exe = _run(lambda x: fnp.where(x > 0, 0.0, x * 3), x)
    _assert_same(got, want)
    assert any(getattr(f, "__name__", None) == "select2_zero_true" for f in _globals(exe))


def _globals(exe):
    return exe.run.__globals__.values()


def test_relu_gradient_uses_the_blend():
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    got, want, _ = _run(functrax.grad(lambda x: fnp.sum(fnp.maximum(x, 0.0) * x)), x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)


# --- numpy broadcasting instead of broadcast_in_dim ---

@pytest.mark.parametrize("f, shapes", [
    (lambda a, b: fnp.broadcast_to(a, (4, 3)) + fnp.broadcast_to(b, (4, 3)), [(), ()]),
    (lambda a, b: fnp.broadcast_to(a, (4, 3)) * b, [(3,), (4, 3)]),
    (lambda a, b: lax.broadcast_in_dim(a, (4, 3), (0,)) - b, [(4,), (4, 3)]),
    (lambda a, b: fnp.broadcast_to(a, (4, 3)) / fnp.broadcast_to(b, (4, 3)), [(3,), (4, 1)]),
    (lambda a, b: fnp.maximum(fnp.broadcast_to(a, (2, 4, 3)), fnp.broadcast_to(b, (2, 4, 3))),
     [(1, 3), (4, 1)]),
    (lambda a, b: (fnp.broadcast_to(a, (4, 3)) + 1.0, fnp.broadcast_to(a, (4, 3))),
     [(3,), ()]),
], ids=["scalars", "bias", "leading-dim", "row-and-column", "two-size-1", "also-output"])
def test_broadcast_operands_of_ufuncs(f, shapes):
    rng = np.random.RandomState(0)
    args = [np.array(rng.rand(*s) + 0.5, np.float32) for s in shapes]
    got, want, _ = _run(f, *args)
    _assert_same(got, want)


def test_bias_add_reads_the_bias_directly():
    closed = functrax.make_jaxpr(lambda x, b: x @ x.T + b)(np.ones((3, 3), np.float32),
                                                           np.ones(3, np.float32))
    assert P.broadcast_in_dim_p not in [op.eqn.primitive for op in X._plan(closed.jaxpr)]


# --- dot_general fast paths ---

def _einsum_ref(lhs, rhs, dims):
    (lc, rc), (lb, rb) = dims
    letters = iter("abcdefghijkl")
    ls = [None] * lhs.ndim
    rs = [None] * rhs.ndim
    for i, j in zip(lb, rb):
        ls[i] = rs[j] = next(letters)
    for i, j in zip(lc, rc):
        ls[i] = rs[j] = next(letters)
    for i in range(lhs.ndim):
        ls[i] = ls[i] or next(letters)
    for j in range(rhs.ndim):
        rs[j] = rs[j] or next(letters)
    out = ([ls[i] for i in lb] + [ls[i] for i in range(lhs.ndim) if i not in lb + lc]
           + [rs[j] for j in range(rhs.ndim) if j not in rb + rc])
    return np.einsum(f"{''.join(ls)},{''.join(rs)}->{''.join(out)}",
                     lhs.astype(np.float64), rhs.astype(np.float64))


_FAST = [  # (lhs shape, rhs shape, dimension numbers)
    ((3, 4), (4, 5), (((1,), (0,)), ((), ()))),
    ((4, 3), (4, 5), (((0,), (0,)), ((), ()))),
    ((3, 4), (5, 4), (((1,), (1,)), ((), ()))),
    ((4, 3), (5, 4), (((0,), (1,)), ((), ()))),
    ((4,), (4, 5), (((0,), (0,)), ((), ()))),
    ((4,), (5, 4), (((0,), (1,)), ((), ()))),
    ((3, 4), (4,), (((1,), (0,)), ((), ()))),
    ((4, 3), (4,), (((0,), (0,)), ((), ()))),
    ((4,), (4,), (((0,), (0,)), ((), ()))),
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    ((2, 4, 3), (2, 5, 4), (((1,), (2,)), ((0,), (0,)))),
    ((2, 6, 3, 4), (2, 6, 4, 5), (((3,), (2,)), ((0, 1), (0, 1)))),
]
_GENERAL = [
    ((2, 3, 4), (3, 4, 5), (((1, 2), (0, 1)), ((), ()))),
    ((3, 2, 4), (2, 4, 5), (((2,), (1,)), ((1,), (0,)))),
    ((2, 3), (4,), (((), ()), ((), ()))),
    ((2, 3, 4), (4, 5), (((2,), (0,)), ((), ()))),
]


@pytest.mark.parametrize("ls, rs, dims", _FAST + _GENERAL, ids=str)
@pytest.mark.parametrize("dtype, pref", [(np.float32, None), (np.float64, None),
                                         (np.int32, None), (np.float16, np.float32),
                                         (np.bool_, None)], ids=str)
def test_dot_general_matches_einsum(ls, rs, dims, dtype, pref):
    rng = np.random.RandomState(0)
    lhs = (rng.randn(*ls) * 3).astype(dtype)
    rhs = (rng.randn(*rs) * 3).astype(dtype)
    out = NB._dot_general(lhs, rhs, dimension_numbers=dims, preferred_element_type=pref)
    want = _einsum_ref(lhs, rhs, dims)
    assert type(out) is np.ndarray
    assert out.dtype == np.dtype(pref or dtype)
    if dtype == np.bool_:
        np.testing.assert_array_equal(out, want != 0)
    else:
        np.testing.assert_allclose(out.astype(np.float64), want, rtol=2e-3 if pref else 1e-5,
                                   atol=1e-4)


@pytest.mark.parametrize("ls, rs, dims", _FAST, ids=str)
def test_dot_general_fast_paths_take_no_general_path(ls, rs, dims, monkeypatch):
    def general(*_):
        raise AssertionError("fell back to the transpose/reshape path")
    monkeypatch.setattr(NB, "_dot_transposed", general)
    lhs = np.ones(ls, np.float32)
    rhs = np.ones(rs, np.float32)
    NB._dot_general(lhs, rhs, dimension_numbers=dims)


def test_dot_transpose_fusion_gives_a_contiguous_result():
    rng = np.random.RandomState(0)
    a = rng.randn(6, 3).astype(np.float32)
    b = rng.randn(6, 4).astype(np.float32)
    got, want, exe = _run(lambda a, b: lax.dot_general(a, b, (((0,), (0,)), ((), ()))).T * 2,
                          a, b)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)
    assert got[0].flags.c_contiguous
    closed = functrax.make_jaxpr(
        lambda a, b: lax.dot_general(a, b, (((0,), (0,)), ((), ()))).T)(a, b)
    assert [op.eqn.primitive for op in X._plan(closed.jaxpr)] == [P.dot_general_p]


def test_dot_used_twice_is_not_fused():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)

    def f(a):
        d = lax.dot(a, a.T + 1.0)
        return d.T, d * 2.0

    got, want, _ = _run(f, a)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)


# --- buffer reuse: correctness of every aliasing case ---

def _ptr(a):
    return a.__array_interface__["data"][0]


def test_chains_of_elementwise_ops_reuse_buffers():
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    got, want, exe = _run(lambda x: fnp.exp(fnp.sin(x * 2.0) + 1.0) * 3.0, x)
    _assert_same(got, want)
    assert exe.n_in_place == 4


def test_inputs_are_never_overwritten():
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    keep = x.copy()
    got, want, exe = _run(lambda x: (-x, x * x + x, fnp.exp(x) - x, x * 2.0), x)
    _assert_same(got, want)
    np.testing.assert_array_equal(x, keep)


def test_input_used_twice_in_one_op():
    x = np.arange(1, 7, dtype=np.float32)
    keep = x.copy()
    got, want, exe = _run(lambda x: ((x * 2) * (x * 2) + x, x * x), x)
    _assert_same(got, want)
    np.testing.assert_array_equal(x, keep)


def test_a_dead_buffer_with_a_live_view_is_not_overwritten():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)

    def f(x):
        t = x * 2.0
        views = (t.reshape(4, 3), t.T, lax.slice(t, (1, 0), (3, 4)), t[None], t.ravel())
        u = t + 1.0  # last use of t itself, but its views are read below
        v = fnp.exp(u)
        return (v + views[0].reshape(3, 4) + views[1].T + views[3][0]
                + views[4].reshape(3, 4), views[2] * 1.0)

    got, want, exe = _run(f, x)
    _assert_same(got, want)
    t = x * 2.0
    np.testing.assert_array_equal(got[1], t[1:] * 1.0)


def test_a_broadcast_view_is_never_a_target():
    x = np.arange(4, dtype=np.float32)
    got, want, exe = _run(lambda x: fnp.broadcast_to(x * 2.0, (3, 4)) + 1.0, x)
    _assert_same(got, want)


def test_outputs_are_never_overwritten():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)

    def f(x):
        t = x * 2.0
        return t, t.reshape(3, 2), t + 1.0, t

    got, want, exe = _run(f, x)
    _assert_same(got, want)
    assert got[0] is got[3]


def test_outputs_do_not_alias_each_other_through_reuse():
    x = np.arange(6, dtype=np.float32)

    def f(x):
        a = x * 2.0
        b = a + 1.0  # may reuse a's buffer: a is dead
        c = b * 3.0  # b is an output: no reuse
        return b, c

    got, want, exe = _run(f, x)
    _assert_same(got, want)
    assert not np.shares_memory(got[0], got[1])


def test_consts_are_never_overwritten():
    c = np.linspace(0, 1, 6).astype(np.float32)
    c_arr = fnp.asarray(c)
    f = functrax.jit(lambda x: fnp.sin(c_arr * 1.0) + x)
    keep = c.copy()
    r1 = np.asarray(f(fnp.ones(6)))
    r2 = np.asarray(f(fnp.ones(6)))
    np.testing.assert_array_equal(np.asarray(c_arr), keep)
    np.testing.assert_array_equal(r1, r2)
    closed, exe = _compile(lambda x: c_arr + x, np.ones(6, np.float32))
    assert closed.consts and exe.n_in_place == 0


def test_jit_inputs_survive_repeated_calls():
    x = fnp.asarray(np.linspace(-1, 1, 8, dtype=np.float32))
    f = functrax.jit(lambda x: fnp.tanh(x * 3.0 + 1.0) - x)
    r1 = np.asarray(f(x))
    r2 = np.asarray(f(x))
    np.testing.assert_array_equal(r1, r2)
    np.testing.assert_array_equal(np.asarray(x), np.linspace(-1, 1, 8, dtype=np.float32))


def test_dtype_or_shape_mismatch_blocks_reuse():
    x = np.arange(6, dtype=np.float32)

    def f(x):
        t = x * 2.0
        return (t > 3.0), (t.reshape(2, 3) + fnp.ones((2, 3)))[None] * 1.0

    got, want, exe = _run(f, x)
    _assert_same(got, want)


# --- donation ---

def _donating(f, *args, donated=(0,)):
    closed, exe = _compile(f, *args, donated=donated)
    return exe


def test_donated_buffer_is_reused_when_nothing_else_refers_to_it():
    exe = _donating(lambda x: fnp.exp(x) * 2.0, np.ones((4, 4), np.float32))
    assert exe.n_in_place_donating == exe.n_in_place + 1
    x = np.linspace(0, 1, 16, dtype=np.float32).reshape(4, 4).copy()  # owns its memory
    want = np.exp(x) * np.float32(2.0)
    ptr = _ptr(x)
    args = [x]
    del x
    (out,) = exe.run_consuming(args)
    assert args == []
    np.testing.assert_array_equal(out, want)
    assert _ptr(out) == ptr


@pytest.mark.parametrize("holder", ["reference", "view", "array", "passed_twice"])
def test_donated_buffer_referenced_elsewhere_is_not_touched(holder):
    exe = _donating(lambda x, y: fnp.exp(x) * 2.0 + y, np.ones(5, np.float32),
                    np.ones(5, np.float32))
    assert exe.n_in_place_donating > exe.n_in_place
    x = np.linspace(0, 1, 5, dtype=np.float32)
    keep = x.copy()
    y = np.ones(5, np.float32)
    other = {"reference": x, "view": x[1:], "array": functrax.Array(x),
             "passed_twice": None}[holder]
    args = [x, x if holder == "passed_twice" else y]
    if holder == "passed_twice":
        y = keep  # a reused x would change y under the program's feet
    del x
    (out,) = exe.run_consuming(args)
    np.testing.assert_array_equal(out, np.exp(keep) * np.float32(2.0) + y)
    if other is not None:
        np.testing.assert_array_equal(np.asarray(other), keep[-np.asarray(other).size:])


def test_donated_input_that_is_also_an_output_is_not_overwritten():
    exe = _donating(lambda x: (x, x + 1.0), np.ones(3, np.float32))
    args = [np.arange(3, dtype=np.float32)]
    a, b = exe.run_consuming(args)
    np.testing.assert_array_equal(a, [0, 1, 2])
    np.testing.assert_array_equal(b, [1, 2, 3])


def test_plain_call_never_writes_a_donated_input():
    exe = _donating(lambda x: x * 2.0, np.ones(3, np.float32))
    x = np.arange(3, dtype=np.float32)
    (out,) = exe(x)
    np.testing.assert_array_equal(x, [0, 1, 2])
    np.testing.assert_array_equal(out, [0, 2, 4])


def test_sole_owner_check():
    assert X._sole_owner([np.zeros(3)], 0)
    a = np.zeros(3)
    assert not X._sole_owner([a], 0)
    assert not X._sole_owner([np.zeros(4)[1:]], 0)
    ro = np.zeros(3)
    ro.flags.writeable = False
    assert not X._sole_owner([ro], 0)
    assert not X._sole_owner([3.0], 0)


# --- an end-to-end program: an MLP training step, jitted vs eager ---

def test_mlp_train_step_matches_eager():
    rng = np.random.RandomState(0)
    sizes = [7, 16, 16, 3]
    params = [{"w": fnp.asarray(rng.randn(a, b).astype(np.float32) / np.sqrt(a)),
               "b": fnp.asarray(rng.randn(b).astype(np.float32) * 0.1)}
              for a, b in zip(sizes[:-1], sizes[1:])]
    x = fnp.asarray(rng.randn(5, 7).astype(np.float32))
    y = fnp.asarray(np.eye(3, dtype=np.float32)[rng.randint(0, 3, 5)])

    def loss(params, x, y):
        h = x
        for layer in params[:-1]:
            h = fnp.maximum(h @ layer["w"] + layer["b"], 0.0)
        logits = h @ params[-1]["w"] + params[-1]["b"]
        logits = logits - lax.stop_gradient(fnp.max(logits, axis=1, keepdims=True))
        logp = logits - fnp.log(fnp.sum(fnp.exp(logits), axis=1, keepdims=True))
        return -fnp.mean(fnp.sum(logp * y, axis=1))

    def step(params, x, y):
        value, grads = functrax.value_and_grad(loss)(params, x, y)
        new = functrax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)
        return new, value

    want = step(params, x, y)
    got = functrax.jit(step)(params, x, y)
    for g, w in zip(functrax.tree_util.tree_leaves(got), functrax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


def test_generated_source_is_kept():
    _, exe = _compile(lambda x: fnp.sin(x) + 1.0, np.ones(3, np.float32))
    assert exe.source.startswith("def run(") and "return [" in exe.source


@pytest.mark.parametrize("n_out", [0, 1, 3])
def test_programs_with_literal_and_input_outputs(n_out):
    x = np.ones(2, np.float32)
    outs = [lambda x: x, lambda x: 1.0, lambda x: x + 1.0][:n_out]
    got, want, _ = _run(lambda x: tuple(o(x) for o in outs), x)
    _assert_same(got, want)


def test_multiple_results_primitive():
    x = np.array([[3.0, 1.0, 2.0], [0.0, -1.0, 5.0]], np.float32)
    got, want, _ = _run(lambda x: lax.sort((x, x * 2.0), num_keys=1), x)
    _assert_same(got, want)



def test_floating_point_warnings_are_attributed_to_the_backend():
    """The backend ignores numpy's RuntimeWarnings raised from ``functrax.lowering.*``
    (inf/nan are values, as in JAX); the generated code counts as the executor module."""
    _, exe = _compile(lambda x: (1.0 / x, fnp.log(x)), np.zeros(2, np.float32))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=RuntimeWarning,
                                module=r"functrax\.lowering\.")
        inv, log = exe(np.zeros(2, np.float32))
        np.divide(np.ones(1), np.zeros(1))  # from here: recorded
    assert np.isinf(inv).all() and np.isneginf(log).all()
    assert len(caught) == 1, [str(w.message) for w in caught]


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_outer_product_dot_general_equals_matmul(dtype):
    """A contraction of size 1 (per-example gradients of a dense layer: vmap of its grad) runs
    as a broadcast product: the same numbers as a matmul, batched or not, either layout."""
    rng = np.random.default_rng(0)
    a = (rng.normal(size=(5, 7, 1)) * 10).astype(dtype)
    b = (rng.normal(size=(5, 1, 3)) * 10).astype(dtype)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(dtype)
    got = functrax.jit(lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))))(a, b)
    np.testing.assert_array_equal(np.asarray(got), want)
    # contraction axis first on the lhs (a transposed view), no batch
    got = lax.dot_general(a[0].T, b[0], (((0,), (0,)), ((), ())))
    np.testing.assert_array_equal(np.asarray(got), want[0])
    x = rng.normal(size=(4, 6)).astype(np.float32)
    w = rng.normal(size=(6, 3)).astype(np.float32)
    per = functrax.vmap(functrax.grad(lambda w, x: (x @ w).sum()), in_axes=(None, 0))(w, x)
    np.testing.assert_allclose(np.asarray(per), np.stack([np.outer(r, np.ones(3)) for r in x]),
                               rtol=1e-6)
