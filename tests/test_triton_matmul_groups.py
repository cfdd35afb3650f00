"""MATMUL fusion groups on the Triton backend (``functrax/lowering/triton/matmul_groups.py``)
and the hand-written kernel patterns (``patterns.py``).

Every MATMUL group becomes one generated ``tl.dot`` kernel: transposed operands through
strides, batch dims as a grid axis, a fused elementwise epilogue with several outputs and the
side reductions (bias gradients) of an operand. Results must agree with ``jit(f)`` (numpy
backend) and with plain numpy; the MLP train step runs with no fallback.
"""
from __future__ import annotations

from tests import triton_harness as th  # first: sets TRITON_INTERPRET=1 for triton

import dataclasses

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax, nn
from functrax.lowering.fusion.types import GroupKind
from functrax.lowering.triton import backend as tbackend
from functrax.lowering.triton import compile as tcompile
from functrax.lowering.triton import matmul_groups, patterns
from functrax.lowering.triton.codegen import (
    GPU_CONFIG, INTERPRETER_CONFIG, KernelConfig,
)

fresh_cache = th.fresh_cache  # autouse: a kernel cache of each test's own
normal = th.normal_from(np.random.default_rng(1))

HAND = KernelConfig(hand_written=("dense", "softmax", "layernorm"))
GEN = KernelConfig(hand_written=())  # generated kernels only
# the GPU's tile sizes (64 x 64 x 32) in the interpreter: several tiles and K steps
GPU_TILES = dataclasses.replace(GPU_CONFIG, hand_written=())


def program(fn, *args, config=GEN):
    return th.triton_program(fn, *args, kernel_config=config)


def leaves(x):
    return [np.asarray(v) for v in functrax.tree_util.tree_leaves(x)]


def run_both(fn, *args, rtol=2e-5, atol=2e-6, config=GEN):
    """Run the Triton program and ``jit(f)`` (numpy), check they agree; returns the program
    and its outputs."""
    prog = program(fn, *args, config=config)
    got = prog.run(*[np.asarray(a) for a in functrax.tree_util.tree_leaves(args)])
    want = leaves(functrax.jit(fn)(*args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return prog, got


def one_matmul_kernel(prog):
    assert prog.fallbacks == () and len(prog.kernels) == 1
    assert [g.kind for g in prog.plan.groups] == [GroupKind.MATMUL]
    return prog.kernels[0]


# --- epilogues ---


def test_dense_relu_is_one_generated_kernel():
    x, w, b = normal(5, 7), normal(7, 6), normal(6)
    fn = lambda x, w, b: nn.relu(x @ w + b)  # noqa: E731
    prog, (got,) = run_both(fn, x, w, b)
    kernel = one_matmul_kernel(prog)
    assert kernel.source.name.startswith("matmul_dot") and "tl.dot(" in kernel.source.text
    np.testing.assert_allclose(got, np.maximum(x @ w + b, 0), rtol=2e-5, atol=2e-6)
    assert (got == 0).any() and (got > 0).any()  # the relu did something


def test_dense_relu_runs_the_hand_written_kernel_by_default():
    x, w, b = normal(5, 7), normal(7, 6), normal(6)
    fn = lambda x, w, b: nn.relu(x @ w + b)  # noqa: E731
    prog, (got,) = run_both(fn, x, w, b, config=INTERPRETER_CONFIG)
    kernel = one_matmul_kernel(prog)
    assert kernel.source.name == "matmul_kernel"
    assert kernel.source.constexprs["EPILOGUE"] == "bias_relu"
    assert "triton kernel matmul_kernel" in prog.as_text()
    # a transposed operand is read through strides by the generated kernel instead
    prog, _ = run_both(lambda x, w, b: nn.relu(x @ w.T + b), x, normal(6, 7), b, config=HAND)
    assert one_matmul_kernel(prog).source.name != "matmul_kernel"
    # and jit(f, backend="triton") uses the default config
    c = functrax.jit(fn, backend="triton").lower(x, w, b).compile()
    assert "triton kernel matmul_kernel" in c.as_text()
    np.testing.assert_allclose(c(x, w, b), got, rtol=1e-6)
    with pytest.raises(ValueError, match="hand_written must be a tuple of pattern names"):
        program(fn, x, w, b, config=KernelConfig(hand_written=("gelu",)))


@pytest.mark.parametrize("fn, ref", [
    (lambda x, w, b: x @ w, lambda x, w, b: x @ w),
    (lambda x, w, b: b + x @ w, lambda x, w, b: x @ w + b),
    (lambda x, w, b: fnp.tanh(x @ w) * 2.0, lambda x, w, b: np.tanh(x @ w) * 2),
    (lambda x, w, b: nn.relu(x @ w) + 1.0, lambda x, w, b: np.maximum(x @ w, 0) + 1),
    (lambda x, w, b: fnp.where(x @ w > 0, b, -b), lambda x, w, b: np.where(x @ w > 0, b, -b)),
    (lambda x, w, b: (x @ w).T * 0.5, lambda x, w, b: (x @ w).T * 0.5),
], ids=["plain", "bias", "tanh_scale", "relu_then_add", "select", "transposed_out"])
def test_epilogues(fn, ref):
    x, w, b = normal(4, 9), normal(9, 3), normal(3)
    prog, (got,) = run_both(fn, x, w, b)
    one_matmul_kernel(prog)
    np.testing.assert_allclose(got, ref(x, w, b), rtol=2e-5, atol=2e-6)


def test_several_outputs():
    x, w = normal(3, 4), normal(4, 5)
    prog, (a, r, m) = run_both(lambda x, w: (x @ w, nn.relu(x @ w), x @ w > 0), x, w)
    one_matmul_kernel(prog)
    np.testing.assert_allclose(r, np.maximum(x @ w, 0), rtol=2e-5, atol=2e-6)
    np.testing.assert_array_equal(m, (x @ w) > 0)


# --- operand layouts ---


@pytest.mark.parametrize("fn, shapes, ref", [
    (lambda x, w: nn.relu(x @ w.T), ((5, 4), (6, 4)), lambda x, w: np.maximum(x @ w.T, 0)),
    (lambda x, w: lax.dot_general(w, x, (((1,), (1,)), ((), ()))), ((5, 4), (6, 4)),
     lambda x, w: w @ x.T),
    (lambda x, w: lax.dot_general(x, w, (((0,), (1,)), ((), ()))), ((4, 5), (6, 4)),
     lambda x, w: x.T @ w.T),
    (lambda x, w: x.T @ w, ((4, 5), (4, 6)), lambda x, w: x.T @ w),
    (lambda x, w: x @ w, ((3, 4), (4,)), lambda x, w: x @ w),
    (lambda x, w: x @ w, ((4,), (4, 3)), lambda x, w: x @ w),
    (lambda x, w: fnp.tensordot(x, w, 2), ((2, 3, 4), (3, 4, 5)),
     lambda x, w: np.tensordot(x, w, 2)),
], ids=["x@w.T", "contract_11", "contract_01", "x.T@w", "matvec", "vecmat", "tensordot2"])
def test_operand_layouts(fn, shapes, ref):
    args = tuple(normal(*s) for s in shapes)
    prog, (got,) = run_both(fn, *args)
    kernel = one_matmul_kernel(prog)
    assert "tl.trans(" not in kernel.source.text  # strides, not copies
    np.testing.assert_allclose(got, ref(*args), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("fn, shapes, ref, batch", [
    (lambda x, w: fnp.matmul(x, w), ((2, 3, 4), (2, 4, 5)), np.matmul, 2),
    (lambda x, w: nn.relu(fnp.matmul(x, w)) * 2.0, ((3, 2, 5, 4), (3, 2, 4, 6)),
     lambda x, w: np.maximum(x @ w, 0) * 2, 6),
    (lambda x, w: lax.dot_general(x, w, (((2,), (1,)), ((1,), (0,)))), ((3, 2, 4), (2, 4, 5)),
     lambda x, w: np.einsum("mbk,bkn->bmn", x, w), 2),
], ids=["matmul", "two_batch_dims_relu", "batch_dim_in_the_middle"])
def test_batched_dot_general_uses_a_batch_grid_axis(fn, shapes, ref, batch):
    args = tuple(normal(*s) for s in shapes)
    prog, (got,) = run_both(fn, *args)
    kernel = one_matmul_kernel(prog)
    assert kernel.source.grid[2] == batch
    np.testing.assert_allclose(got, ref(*args), rtol=2e-5, atol=2e-6)


OUTER = (((), ()), ((), ()))  # no contracting, no batch dims: K == 1


def check_matmul_group_against(fn, shapes, ref):
    """``fn`` on normal inputs of ``shapes``: MATMUL groups, no fallback, matches ``ref``."""
    args = tuple(normal(*s) for s in shapes)
    prog, (got,) = run_both(fn, *args)
    assert prog.fallbacks == ()
    assert any(g.kind is GroupKind.MATMUL for g in prog.plan.groups)
    np.testing.assert_allclose(got, ref(*args), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("fn, shapes, ref", [
    (lambda x, y: lax.dot_general(x, y, OUTER), ((5,), (7,)), np.outer),
    (lambda x, y: lax.dot_general(x, y, OUTER) * 2.0, ((3,), (4,)),
     lambda x, y: np.outer(x, y) * 2),
    (lambda x, y: fnp.tensordot(x, y, 0), ((2, 3), (4,)), lambda x, y: np.tensordot(x, y, 0)),
    (lambda x, y: x @ y, ((6, 1), (1, 5)), lambda x, y: x @ y),  # K == 1 as a dim
    (lambda x, y: fnp.einsum("bi,bj->bij", x, y), ((3, 4), (3, 5)),
     lambda x, y: np.einsum("bi,bj->bij", x, y)),
], ids=["outer", "outer_scaled", "tensordot0", "k1", "batched_outer"])
def test_outer_products_sum_k_once(fn, shapes, ref):
    """A broadcast along the contraction is masked to ``k < K`` (not summed BLOCK_K times)."""
    check_matmul_group_against(fn, shapes, ref)


def test_integer_outer_product_across_tiles():
    r = np.random.default_rng(5)
    x, y = r.integers(-9, 9, 70).astype(np.int32), r.integers(-9, 9, 90).astype(np.int32)
    prog, (got,) = run_both(lambda x, y: lax.dot_general(x, y, OUTER), x, y, rtol=0, atol=0,
                            config=GPU_TILES)
    kernel = one_matmul_kernel(prog)
    assert kernel.source.grid[:2] == (2, 2) and "tl.dot(" not in kernel.source.text
    np.testing.assert_array_equal(got, np.outer(x, y))


@pytest.mark.parametrize("fn, shapes, ref", [
    (lambda x, y: fnp.dot(x, y), ((7,), (7,)), np.dot),
    (lambda x, y: fnp.vdot(x, y), ((2, 3), (2, 3)), np.vdot),
    (lambda x, y: fnp.einsum("i,i->", x, y), ((5,), (5,)), lambda x, y: np.einsum("i,i->", x, y)),
    (lambda x, y: fnp.einsum("i,i->i", x, y), ((5,), (5,)), lambda x, y: x * y),
    (lambda x, y: fnp.einsum("ij,ij->ij", x, y), ((3, 4), (3, 4)), lambda x, y: x * y),
    (lambda x, y: fnp.einsum(",ij->ij", x, y), ((), (3, 4)), lambda x, y: x * y),
    (lambda x, y: lax.dot_general(x, y, (((), ()), ((0,), (0,)))), ((6,), (6,)),
     lambda x, y: x * y),
], ids=["dot_vectors", "vdot", "einsum_i_i", "einsum_i_i_to_i", "einsum_ij_ij_to_ij",
        "einsum_scalar", "batch_only"])
def test_operands_without_free_or_contracting_dims(fn, shapes, ref):
    """Vectors and batch-only operands run as a 1 x 1 or 1 x N tile of a generated kernel."""
    check_matmul_group_against(fn, shapes, ref)


def test_dot_of_vectors_across_k_steps():
    x, y = normal(300), normal(300)  # several K steps of 32
    prog, (got,) = run_both(lambda x, y: fnp.dot(x, y), x, y, rtol=1e-4, atol=1e-5,
                            config=GPU_TILES)
    one_matmul_kernel(prog)
    np.testing.assert_allclose(got, np.dot(x, y), rtol=1e-4, atol=1e-5)


def test_several_tiles_and_k_steps():
    x, w, b = normal(70, 40), normal(40, 90), normal(90)
    fn = lambda x, w, b: nn.relu(x @ w + b)  # noqa: E731
    prog, (got,) = run_both(fn, x, w, b, rtol=1e-4, atol=1e-5, config=GPU_TILES)
    kernel = one_matmul_kernel(prog)
    assert kernel.source.grid == (2, 2, 1) and kernel.source.constexprs["BLOCK_K"] == 32
    np.testing.assert_allclose(got, np.maximum(x @ w + b, 0), rtol=1e-4, atol=1e-5)


# --- dtypes and precision ---


def test_float16_matches_numpy():
    h = np.float16
    x, w, b = normal(4, 6, dtype=h), normal(6, 5, dtype=h), normal(5, dtype=h)
    prog, (got,) = run_both(lambda x, w, b: nn.relu(x @ w + b), x, w, b, rtol=2e-2, atol=2e-2)
    one_matmul_kernel(prog)
    assert got.dtype == np.float16


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8, np.bool_])
def test_integer_and_bool_matmul_are_exact(dtype):
    r = np.random.default_rng(3)
    x = r.integers(-50, 50, (5, 7)).astype(dtype)
    w = r.integers(-50, 50, (7, 3)).astype(dtype)
    prog, (got,) = run_both(lambda x, w: x @ w, x, w, rtol=0, atol=0)
    kernel = one_matmul_kernel(prog)
    assert "tl.dot(" not in kernel.source.text  # an exact multiply-and-sum
    want = np.asarray(functrax.jit(lambda x, w: x @ w)(x, w))
    np.testing.assert_array_equal(got, want)


def test_dot_precision_follows_the_config_and_the_equation():
    x, w = normal(3, 4), normal(4, 5)
    text = program(lambda x, w: x @ w, x, w).kernels[0].source.text
    assert 'input_precision="ieee"' in text  # the interpreter's config: exact float32
    text = program(lambda x, w: x @ w, x, w, config=GPU_TILES).kernels[0].source.text
    assert 'input_precision="tf32"' in text  # JAX's default precision on a GPU
    highest = lambda x, w: fnp.matmul(x, w, precision="highest")  # noqa: E731
    text = program(highest, x, w, config=GPU_TILES).kernels[0].source.text
    assert 'input_precision="ieee"' in text
    h = np.float16  # float16 tl.dot takes no input_precision
    text = program(lambda x, w: x @ w, x.astype(h), w.astype(h)).kernels[0].source.text
    assert "input_precision" not in text
    with pytest.raises(ValueError, match="dot_precision must be one of"):
        program(lambda x, w: x @ w, x, w, config=KernelConfig(dot_precision="fast"))


def test_complex_matmul_falls_back_with_reason():
    x = (normal(3, 4) + 1j * normal(3, 4)).astype(np.complex64)
    prog, _ = run_both(lambda x, w: x @ w, x, x.T.copy())
    (fb,) = prog.fallbacks
    assert fb.kind is GroupKind.MATMUL and "complex64" in fb.reason
    assert "fallback: numpy (" in prog.as_text()


# --- side reductions: the bias gradient beside the weight gradient ---


def test_bias_gradient_is_fused_into_the_weight_gradient_kernel():
    x, g = normal(6, 4), normal(6, 5)
    fn = lambda x, g: (x.T @ g, fnp.sum(g, axis=0))  # noqa: E731
    prog, (dw, db) = run_both(fn, x, g)
    kernel = one_matmul_kernel(prog)
    assert [e.primitive.name for e in prog.plan.groups[0].eqns].count("reduce_sum") == 1
    assert "side0" in kernel.source.text  # accumulated in the K loop of the dot
    np.testing.assert_allclose(dw, x.T @ g, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(db, g.sum(0), rtol=2e-5, atol=2e-6)


def test_side_reductions_across_several_tiles():
    x, g, b = normal(40, 70), normal(40, 90), normal(90)  # a max of the rhs operand
    fn = lambda x, g, b: (x.T @ g, fnp.max(g, axis=0) * 2.0 + b)  # noqa: E731
    prog, (dw, db) = run_both(fn, x, g, b, rtol=1e-4, atol=1e-5, config=GPU_TILES)
    kernel = one_matmul_kernel(prog)
    assert kernel.source.grid[:2] == (2, 2) and "tl.trans(" in kernel.source.text
    np.testing.assert_allclose(db, g.max(0) * 2 + b, rtol=1e-6)


# --- the MLP train step ---


def test_mlp_train_step_runs_as_kernels_without_fallbacks():
    from tests.test_fusion import SIZES, _mlp_step, mlp_kernel_counts
    plan, closed, per_layer, n_loss = mlp_kernel_counts(SIZES, 8)
    prog = tbackend.compile_triton(closed)  # the default config (as jit)
    assert prog.fallbacks == () and len(prog.kernels) == len(plan.groups)
    assert all(f == 1 and bw <= 2 for f, bw in per_layer), per_layer
    n_matmul = sum(g.kind is GroupKind.MATMUL for g in prog.plan.groups)
    # 3 forward + 2 backward per layer, less the first layer's input gradient
    assert n_matmul == 3 * len(per_layer) - 1 and len(prog.kernels) == n_matmul + n_loss
    print(f"\nMLP train step {SIZES}: {len(prog.kernels)} kernels ({n_matmul} matmul), "
          f"per layer (forward, backward) {per_layer}, loss {n_loss}, 0 fallbacks")
    r = np.random.default_rng(0)
    params = [{"b": r.normal(size=n).astype(np.float32),
               "w": (r.normal(size=(m, n)) * 0.3).astype(np.float32)}
              for m, n in zip(SIZES[:-1], SIZES[1:])]
    x, labels = r.normal(size=(8, SIZES[0])).astype(np.float32), np.arange(8, dtype=np.int32)
    got = prog.run(*[np.asarray(a) for a in functrax.tree_util.tree_leaves(
        (params, x, labels % SIZES[-1]))])
    want = leaves(functrax.jit(_mlp_step)(params, x, labels % SIZES[-1]))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


# --- hand-written kernel patterns (patterns.py) ---


_ln, _ln_plain = th.layernorm_pow_affine, th.layernorm_rsqrt


def _manual_softmax(x):
    e = fnp.exp(x - fnp.max(x, axis=-1, keepdims=True))
    return e / fnp.sum(e, axis=-1, keepdims=True)


@pytest.mark.parametrize("fn, shapes, kernel_name", [
    (lambda x: nn.softmax(x, axis=-1), [(3, 6)], "softmax_kernel"),
    (_manual_softmax, [(2, 3, 5)], "softmax_kernel"),
    (_ln, [(4, 7), (7,), (7,)], "layernorm_kernel"),
    (_ln_plain, [(3, 9)], "layernorm_kernel"),
], ids=["nn.softmax", "manual_softmax_3d", "layernorm_affine", "layernorm_plain"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_patterns_run_the_hand_written_kernel(fn, shapes, kernel_name, dtype):
    args = [normal(*s, dtype=dtype) for s in shapes]
    tol = 1e-5 if dtype == np.float32 else 1e-2
    prog, _ = run_both(fn, *args, config=HAND, rtol=tol, atol=tol)
    assert prog.fallbacks == () and [k.source.name for k in prog.kernels] == [kernel_name]
    assert f"triton kernel {kernel_name}" in prog.as_text()
    default = program(fn, *args, config=INTERPRETER_CONFIG)  # the default: generated
    assert default.kernels[0].source.name.startswith("fused_")


@pytest.mark.parametrize("fn", [
    lambda x: nn.softmax(x, axis=0),            # not the last axis
    lambda x: nn.softmax(x, axis=-1) * 2.0,     # an extra epilogue
    lambda x: nn.log_softmax(x, axis=-1),       # another function
    lambda x: fnp.exp(x) / fnp.sum(fnp.exp(x), axis=-1, keepdims=True),  # no max shift
    lambda x: nn.standardize(x, axis=-1),       # one-pass variance
], ids=["axis0", "times2", "log_softmax", "unshifted", "standardize"])
def test_near_misses_fall_through_to_codegen(fn):
    x = normal(4, 6)
    prog, _ = run_both(fn, x, config=HAND, rtol=1e-5, atol=1e-5)
    assert prog.fallbacks == ()
    assert all(k.source.name.startswith("fused_") for k in prog.kernels)


def test_layernorm_pattern_keeps_eps():
    x, w, b = normal(3, 8) * 0.01, normal(8), normal(8)  # variance ~ eps: eps matters
    prog, (got,) = run_both(_ln, x, w, b, config=HAND, rtol=1e-5, atol=1e-5)
    assert prog.kernels[0].source.constexprs["EPS"] == pytest.approx(1e-3)
    match = patterns.match_template(prog.plan.groups[0], "layernorm")
    assert match is not None and match[1]["eps"] == pytest.approx(1e-3)


# --- compiling the generated matmul kernels for sm_90 ---


def test_generated_matmul_kernels_compile_for_sm90():
    h = np.float16
    cases = [
        (lambda x, w, b: nn.relu(x @ w + b), (normal(64, 32), normal(32, 48), normal(48))),
        (lambda x, w, b: nn.relu(x @ w + b),
         (normal(64, 32, dtype=h), normal(32, 48, dtype=h), normal(48, dtype=h))),
        (lambda x, g: (x.T @ g, fnp.sum(g, axis=0)), (normal(16, 32), normal(16, 24))),
        (lambda x, w: fnp.matmul(x, w), (normal(2, 16, 32), normal(2, 32, 16))),
        (lambda x, w: x @ w, (np.ones((16, 16), np.int32), np.ones((16, 16), np.int32))),
    ]
    kernels = [program(fn, *args, config=GPU_TILES).kernels[0] for fn, args in cases]
    calls = [(k.fn, k.source.signature, k.source.constexprs, k.source.num_warps)
             for k in kernels]
    compiled = tcompile.compile_many(calls)
    for k, c in zip(kernels, compiled):
        assert c.name == k.source.name and ".target sm_90" in c.ptx
        assert c.cubin[:4] == b"\x7fELF"
    assert "mma" in compiled[1].ptx  # the float16 dot uses the tensor cores


def test_match_matmul_reports_why():
    x, w, b = normal(5, 4), normal(6, 4), normal(6)
    prog = program(lambda x, w, b: nn.relu(x @ w.T + b), x, w, b)
    match = matmul_groups.match_matmul(prog.plan.groups[0])
    assert isinstance(match, matmul_groups.MatmulMatch) and match.epilogue == "bias_relu"
    assert match.b[1]  # transposed: only the generated kernel runs it (strides)
    prog = program(lambda x, w: fnp.tanh(x @ w), x, w.T)
    assert "epilogue tanh" in matmul_groups.match_matmul(prog.plan.groups[0])
