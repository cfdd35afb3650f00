"""C blocks (``functrax/lowering/c/blocks.py``): matrix products through BLAS with their fused
epilogue, and scan / while / cond run as C loops, against the numpy backend.

Each program is checked for the result (numpy backend as the reference) and for where it
ran: the groups under test must be C functions, not numpy fallbacks. The carry cases are
the ones a pointer-passing loop can get wrong: carries swapped, a carry forwarded to another
one (its buffer would be overwritten two iterations later), a carry that is also a scanned
output, reverse scans, length 0 and nested loops.
"""
from __future__ import annotations

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import jit, lax
from functrax.lowering.c import backend as cb
from functrax.lowering.c.blas import blas_functions
from functrax.lowering.c.matmul import gemm_layout
from functrax.lowering.c.rules import UnsupportedError
from functrax.lowering.c.toolchain import toolchain
from functrax.test_util import enable_x64

HAVE_CC = toolchain().available
needs_cc = pytest.mark.skipif(not HAVE_CC, reason="no working C compiler on this machine")


def _run_both(f, *args, rtol=2e-5, atol=1e-6, fallbacks_ok=()):
    """f on the C and numpy backends; returns the C program (checking it has no fallback
    except the allowed primitives)."""
    want = jit(f, backend="numpy")(*args)
    got = jit(f, backend="c")(*args)
    for g, w in zip(functrax.tree_util.tree_leaves(got), functrax.tree_util.tree_leaves(want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    prog = jit(f, backend="c").lower(*args).compile()._entry.exe
    if HAVE_CC:
        for fb in prog.fallbacks:
            assert set(fb.primitives) <= set(fallbacks_ok), (fb, prog.as_text())
    return prog


def _rng(seed=0):
    return np.random.default_rng(seed)


# --- matrix products ---

MATMUL_CASES = {
    "mm": ((32, 16), (16, 8), (((1,), (0,)), ((), ()))),
    "mm_ta": ((16, 32), (16, 8), (((0,), (0,)), ((), ()))),
    "mm_tb": ((32, 16), (8, 16), (((1,), (1,)), ((), ()))),
    "mm_tab": ((16, 32), (8, 16), (((0,), (1,)), ((), ()))),
    "matvec": ((32, 16), (16,), (((1,), (0,)), ((), ()))),
    "vecmat": ((16,), (16, 8), (((0,), (0,)), ((), ()))),
    "dot": ((16,), (16,), (((0,), (0,)), ((), ()))),
    "outer": ((7,), (5,), (((), ()), ((), ()))),
    "batched": ((4, 6, 5), (4, 5, 3), (((2,), (1,)), ((0,), (0,)))),
    "batched_t": ((4, 5, 6), (4, 3, 5), (((1,), (2,)), ((0,), (0,)))),
    "two_contracting": ((10, 3, 4), (10, 3, 6), (((0, 1), (0, 1)), ((), ()))),
    "k_zero": ((3, 0), (0, 4), (((1,), (0,)), ((), ()))),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", sorted(MATMUL_CASES))
def test_dot_general_layouts_through_blas(case, dtype):
    ls, rs, dn = MATMUL_CASES[case]
    rng = _rng()
    with enable_x64(dtype == np.float64):
        x, y = rng.normal(size=ls).astype(dtype), rng.normal(size=rs).astype(dtype)
        f = lambda x, y: fnp.tanh(lax.dot_general(x, y, dn)) * 2.0 + 1.0  # noqa: E731
        prog = _run_both(f, x, y, rtol=1e-5 if dtype == np.float32 else 1e-12)
    if HAVE_CC:
        assert "ft_gemm_f" in prog.source


def test_transposed_operand_is_read_in_place_and_epilogue_fused():
    rng = _rng(1)
    x, w, b = (rng.normal(size=s).astype(np.float32) for s in ((8, 16), (4, 16), (4,)))
    prog = _run_both(lambda x, w, b: functrax.nn.relu(x @ w.T + b), x, w, b)
    if HAVE_CC:
        assert "ft_gemm_f32(0, 1, 8, 4, 16" in prog.source  # w^T as BLAS's transpose flag
        assert len(prog.steps) == 1 and not prog.fallbacks


def test_gemm_layout_rejects_what_is_not_a_matrix_product():
    with pytest.raises(UnsupportedError, match="do not lead"):
        gemm_layout((5, 4, 3), (3, 4, 2), (((1,), (1,)), ((2,), (0,))))
    with pytest.raises(UnsupportedError, match="contiguous"):
        gemm_layout((4, 5, 6), (5, 7), (((1,), (0,)), ((), ())))


def test_integer_matmul_runs_on_numpy_with_a_reason():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    prog = _run_both(lambda a: a @ a.T, x, fallbacks_ok=("dot_general", "transpose"))
    if HAVE_CC:
        assert any("BLAS products take float32 or float64" in fb.reason for fb in prog.fallbacks)


@needs_cc
def test_products_without_blas_use_the_prelude_loop():
    """The plain C loop that serves when numpy ships no CBLAS gives the same products."""
    rng = _rng(2)
    x, y = rng.normal(size=(9, 7)).astype(np.float32), rng.normal(size=(5, 7)).astype(np.float32)
    f = jit(lambda x, y: x @ y.T + 1.0, backend="c")
    want = f(x, y)
    prog = f.lower(x, y).compile()._entry.exe
    lib = cb._LOADED[prog.kernels[0].name]
    b = blas_functions()
    try:
        lib.ft_set_blas(None, None, 0)
        got = f(x, y)
    finally:
        lib.ft_set_blas(b.sgemm or None, b.dgemm or None, int(b.ilp64))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(got), x @ y.T + 1.0, rtol=1e-5, atol=1e-5)


def test_without_numpys_blas_products_run_on_numpy(monkeypatch):
    """A numpy built against a BLAS the C backend cannot find: its products stay on numpy
    (the prelude's loop would be far slower than BLAS), saying why."""
    from functrax.lowering.c import blas
    monkeypatch.setattr(blas, "_FOUND", [blas.BlasFunctions(0, 0, False, "none")])
    x, y = _rng(11).normal(size=(6, 5)).astype(np.float32), _rng(12).normal(
        size=(5, 3)).astype(np.float32)
    prog = _run_both(lambda x, y: fnp.tanh(x @ y * 1.5), x, y,
                     fallbacks_ok=("dot_general", "mul", "tanh"))
    if HAVE_CC:
        assert any("no CBLAS found" in fb.reason for fb in prog.fallbacks)


# --- scan ---


def _rnn_loss(params, xs, target):
    u, w, bias, v = params

    def cell(h, x):
        h = fnp.tanh(x @ u + h @ w + bias)
        return h, h @ v
    _, ys = lax.scan(cell, fnp.zeros((xs.shape[1], w.shape[0]), fnp.float32), xs)
    return fnp.mean((ys - target) ** 2)


def test_rnn_value_and_grad_runs_as_c_loops():
    rng = _rng(3)
    t, h, b, d = 12, 16, 4, 3
    params = (rng.normal(size=(d, h)).astype(np.float32), rng.normal(size=(h, h)).astype(
        np.float32) / 4, np.zeros(h, np.float32), rng.normal(size=(h,)).astype(np.float32))
    xs, target = rng.normal(size=(t, b, d)).astype(np.float32), rng.normal(
        size=(t, b)).astype(np.float32)
    prog = _run_both(functrax.value_and_grad(_rnn_loss), params, xs, target, rtol=1e-4)
    if HAVE_CC:
        assert prog.source.count("for (int64_t it") == 2  # the forward and backward scans


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_carries_swapped_forwarded_and_scanned(reverse):
    """(a, b, prev) -> (b, a + b * x, a): a swap, a forwarded carry (prev = the old a) and a
    carry that is also a scanned output; plus an unused scanned output."""
    def f(xs, a0, b0):
        def step(c, x):
            a, b, prev = c
            nb = a + b * x
            return (b, nb, a), (nb, prev, x * 2.0)
        (a, b, p), (ys, ps, _) = lax.scan(step, (a0, b0, a0 * 0.0), xs, reverse=reverse)
        return a, b, p, ys, ps
    rng = _rng(4)
    xs = rng.uniform(0.5, 1.0, size=(9, 3)).astype(np.float32)
    a0, b0 = rng.normal(size=3).astype(np.float32), rng.normal(size=3).astype(np.float32)
    _run_both(f, xs, a0, b0)


def test_scan_of_length_zero_and_with_constants_and_literals():
    def f(xs, c):
        def step(carry, x):
            return carry * c + x + 1.0, fnp.sin(carry)
        return lax.scan(step, fnp.ones(4, fnp.float32), xs)
    c = np.float32(0.5) * np.ones(4, np.float32)
    _run_both(f, np.zeros((0, 4), np.float32), c)
    _run_both(f, np.arange(20, dtype=np.float32).reshape(5, 4), c)


def test_nested_scans():
    def f(xss, w):
        def outer(c, xs):
            def inner(d, x):
                d = fnp.tanh(d @ w + x)
                return d, fnp.sum(d)
            d, s = lax.scan(inner, c, xs)
            return d * 0.5, s
        return lax.scan(outer, fnp.zeros(5, fnp.float32), xss)
    rng = _rng(5)
    _run_both(f, rng.normal(size=(3, 4, 5)).astype(np.float32),
              rng.normal(size=(5, 5)).astype(np.float32) / 3)


# --- while and cond ---


def test_while_loop_runs_in_c():
    def f(x, n):
        def body(c):
            i, v, s = c
            return i + 1, fnp.cos(v) * 1.5, s + fnp.sum(v)
        return lax.while_loop(lambda c: c[0] < n, body, (0, x, fnp.float32(0.0)))
    x = np.linspace(-1, 1, 6).astype(np.float32)
    prog = _run_both(f, x, np.int32(7))
    _run_both(f, x, np.int32(0))  # the condition false at once: the initial carry
    if HAVE_CC:
        assert "for (int64_t it" in prog.source and "break;" in prog.source


def test_fori_loop_with_a_swap_of_carries():
    def f(a, b):
        return lax.fori_loop(0, 5, lambda i, c: (c[1], c[0] * 2.0 + c[1]), (a, b))
    _run_both(f, np.float32([1.0, 2.0]), np.float32([3.0, -1.0]))


@pytest.mark.parametrize("index", [-3, 0, 1, 2, 9])
def test_switch_clamps_its_index_and_runs_each_branch_in_c(index):
    branches = [lambda x, y: (x + y, fnp.sum(x)), lambda x, y: (x * y, fnp.max(y)),
                lambda x, y: (y, x[0])]
    f = lambda i, x, y: lax.switch(i, branches, x, y)  # noqa: E731
    rng = _rng(6)
    x, y = rng.normal(size=5).astype(np.float32), rng.normal(size=5).astype(np.float32)
    prog = _run_both(f, np.int32(index), x, y)
    if HAVE_CC:
        assert "switch (" in prog.source


def test_cond_inside_scan_under_grad():
    def loss(w, xs):
        def step(h, x):
            h = lax.cond(fnp.sum(x) > 0, lambda h: fnp.tanh(h * w), lambda h: h * 0.5, h)
            return h, fnp.sum(h)
        _, ys = lax.scan(step, fnp.ones(3, fnp.float32), xs)
        return fnp.sum(ys ** 2)
    rng = _rng(7)
    prog = _run_both(functrax.grad(loss), rng.normal(size=3).astype(np.float32),
                     rng.normal(size=(6, 3)).astype(np.float32), rtol=1e-4)
    if HAVE_CC:
        assert "switch (" in prog.source


def test_unsupported_body_falls_back_with_a_reason():
    def f(xs):
        return lax.scan(lambda c, x: (c + fnp.sort(x)[0], fnp.sort(x)), 0.0, xs)
    prog = _run_both(f, _rng(8).normal(size=(4, 6)).astype(np.float32),
                     fallbacks_ok=("scan",))
    if HAVE_CC:
        assert any("sort" in fb.reason for fb in prog.fallbacks)


@needs_cc
def test_blocks_reuse_scratch_and_dropped_outputs_and_keep_held_results():
    """A scan + BLAS program: the second call reuses the first one's scratch set and (once
    dropped) its output buffers; results still held by the caller are never overwritten."""
    rng = _rng(9)
    w = rng.normal(size=(16, 16)).astype(np.float32) / 4
    xs = rng.normal(size=(20, 4, 16)).astype(np.float32)

    def f(w, xs):
        def body(h, x):
            p = h @ w  # read by two groups: the product needs scratch
            return fnp.tanh(p + x), p.sum(-1)
        return lax.scan(body, fnp.zeros((4, 16)), xs)

    g = jit(f, backend="c")
    want = jit(f, backend="numpy")(w, xs)
    held = g(w, xs)
    prog = g.lower(w, xs).compile()._entry.exe
    scan_step = next(s for s in prog.steps if s.kernel is not None and s.kernel.scratch)
    scratch_ptrs = [a.ctypes.data for a in scan_step._scratch[0][0]]
    again = g(w, xs * 2.0)  # different values: `held` must keep the first call's
    assert [a.ctypes.data for a in scan_step._scratch[0][0]] == scratch_ptrs
    for h, wv in zip(functrax.tree_util.tree_leaves(held), functrax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(h), np.asarray(wv), rtol=1e-5, atol=1e-6)
    ys_ptr = np.asarray(again[1]).ctypes.data
    del again
    third = g(w, xs * 2.0)
    assert np.asarray(third[1]).ctypes.data == ys_ptr  # dropped: its buffer came back


@needs_cc
@pytest.mark.parametrize("twice", [False, True])
def test_a_product_read_only_by_its_elementwise_epilogue_is_computed_in_place(twice):
    """``w - lr * (x.T @ g)``: the product is written straight into the output and the
    epilogue reads it there (no scratch for it); read by a second group (``twice``) it
    keeps its own buffer. Both match the numpy backend."""
    if not blas_functions().sgemm:
        pytest.skip("no CBLAS: products run on numpy")
    rng = _rng(11)
    w = rng.normal(size=(48, 32)).astype(np.float32)
    x = rng.normal(size=(16, 48)).astype(np.float32)
    g = rng.normal(size=(16, 32)).astype(np.float32)

    def f(w, x, g):
        d = x.T @ g
        new = w - 0.1 * d
        return (new, d.sum()) if twice else new
    fc = jit(f, backend="c")
    for got, want in zip(functrax.tree_util.tree_leaves(fc(w, x, g)),
                         functrax.tree_util.tree_leaves(jit(f, backend="numpy")(w, x, g))):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
    (step,) = fc.lower(w, x, g).compile()._entry.exe.steps
    src = "\n".join(k.text for k in cb._with_deps([step.kernel]))
    assert ("(const float *)out0;" in src) != twice
    assert bool(step.kernel.scratch) == twice


# --- random loop programs (hypothesis) ---

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_STEP_OPS = (
    lambda a, b, w, x: fnp.tanh(a @ w + x),
    lambda a, b, w, x: a * 0.5 + b,
    lambda a, b, w, x: b,                      # a carry passed on unchanged (forwarding)
    lambda a, b, w, x: fnp.maximum(a, x) - fnp.sum(b) * 0.1,
    lambda a, b, w, x: lax.cond(fnp.sum(x) > 0, lambda: a @ w, lambda: b * 2.0),
    lambda a, b, w, x: (w @ a.T).T * 0.3,
)


@st.composite
def _loop_program(draw):
    """A scan (forward or reverse) or fori_loop with 1-3 carries of shape (r, n); each new
    carry is a random op of two old ones (permutations, forwarding, products, a cond), the
    scanned outputs a random choice of them; maybe nested in an outer scan."""
    k = draw(st.integers(1, 3))
    r, n, t = draw(st.integers(1, 4)), draw(st.integers(1, 6)), draw(st.integers(0, 5))
    rules = draw(st.lists(st.tuples(st.integers(0, len(_STEP_OPS) - 1), st.integers(0, 2),
                                    st.integers(0, 2)), min_size=k, max_size=k))
    outs = draw(st.lists(st.integers(0, 2), min_size=0, max_size=3))
    kind = draw(st.sampled_from(["scan", "reverse", "fori", "nested"]))

    def step(carry, x, w):
        new = tuple(_STEP_OPS[o](carry[i % k], carry[j % k], w, x) for o, i, j in rules)
        return new, tuple(carry[i % k] + 0.0 for i in outs) + (new[0],)

    def f(c0, xs, w):
        init = tuple(c0 * (i + 1.0) for i in range(k))
        if kind == "fori":
            x0 = xs[0] if xs.shape[0] else c0 * 0.25
            return lax.fori_loop(0, t, lambda i, c: step(c, x0, w)[0], init)
        if kind == "nested":
            def outer(c, xs2):
                return lax.scan(lambda cc, x: step(cc, x, w), c, xs2)
            return lax.scan(outer, init, xs.reshape((1,) + xs.shape))
        return lax.scan(lambda c, x: step(c, x, w), init, xs, reverse=kind == "reverse")

    return f, (r, n, t)


@needs_cc
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(_loop_program(), st.integers(0, 2 ** 16))
def test_random_loop_programs_numpy_vs_c(prog, seed):
    f, (r, n, t) = prog
    rng = np.random.default_rng(seed)
    c0 = rng.normal(size=(r, n)).astype(np.float32)
    xs = rng.normal(size=(t, r, n)).astype(np.float32)
    w = (rng.normal(size=(n, n)) / np.sqrt(n)).astype(np.float32)
    _run_both(f, c0, xs, w, rtol=1e-4, atol=1e-5)


# --- sums over leading axes (bias gradients): rows streamed ---


@pytest.mark.parametrize("shape, axes, dtype", [
    ((128, 40), (0,), np.float32), ((3, 5, 7), (0, 1), np.float32), ((0, 6), (0,), np.float32),
    ((300, 513), (0,), np.float32), ((9, 4), (0,), np.float64), ((5, 2, 3), (0,), np.float32)])
def test_sums_over_leading_axes_stream_rows(shape, axes, dtype):
    with enable_x64(dtype == np.float64):
        x = _rng(10).normal(size=shape).astype(dtype)
        f = lambda x: fnp.sum(x, axis=axes).reshape(-1)[None]  # noqa: E731
        # numpy sums float32 pairwise in float32, the kernel in double: cancellation differs
        tol = dict(rtol=1e-5, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-12, atol=0)
        prog = _run_both(f, x, **tol)
        if HAVE_CC:  # the kernel sums in double: within rounding of the exact sums
            want = x.astype(np.float64).sum(axes).reshape(-1)
            np.testing.assert_allclose(np.asarray(jit(f, backend="c")(x))[0], want, rtol=1e-6,
                                       atol=1e-6)
    if HAVE_CC:
        assert "columns streamed by rows" in prog.source
