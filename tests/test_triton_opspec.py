"""The op-spec table and the composition matrix on the Triton backend (Triton's interpreter),
against the numpy backend; every generated kernel also compiles for sm_90.

- every op-spec entry, once per (dtypes, kwargs) with its smallest shapes, runs as
  ``jit(fn, backend="triton")`` and matches ``jit(fn)`` (the numpy backend) with the spec's
  tolerances (float16/bfloat16 looser, see ``test_opspec._tolerances``);
- every composition program (``tests/test_composition.py``) under the stacks f, jvp, vmap,
  vmap∘jvp and (reverse-differentiable programs) grad, vmap∘grad, grad∘grad runs as
  ``jit(stack, backend="triton")`` and matches ``jit(stack)``;
- groups the backend does not generate fall back to numpy with a listed reason; for
  ELEMENTWISE, REDUCTION and CONV groups the only allowed reason is a dtype Triton lacks
  (complex), see ``ALLOWED_CODEGEN_FALLBACKS``;
- every distinct generated kernel of those programs compiles to PTX and a cubin for
  ``GPUTarget("cuda", 90, 32)`` (``compile.compile_many``: deduplicated, in child processes).

The programs each case compiles (``compile_triton`` of the jaxpr ``jit`` lowers, which is
what ``jit(..., backend="triton")`` runs) are memoized per case, so the summary tests below
reuse what the per-case tests built, and still work when run alone.
"""
from __future__ import annotations

from tests import triton_harness  # noqa: F401 - first: sets TRITON_INTERPRET=1 for triton

import collections
import time

import numpy as np
import pytest

import functrax.numpy as fnp
from functrax import grad, jit, jvp, vmap
from functrax.lowering.fusion.types import GroupKind
from functrax.lowering.triton import compile as tcompile
from functrax.lowering.triton.backend import compile_triton
from tests import test_composition as C
from tests.opspec import all_specs
from tests.test_opspec import assert_matches

FUSIBLE = (GroupKind.ELEMENTWISE, GroupKind.REDUCTION, GroupKind.CONV)
# codegen rejections of ELEMENTWISE/REDUCTION/CONV groups that are not bugs: Triton has no
# complex dtype (a complex value would have to be split into real and imaginary buffers)
ALLOWED_CODEGEN_FALLBACKS = ("does not support dtype complex64",
                             "does not support dtype complex128")


def _dtype_id(dts):
    return "-".join(np.dtype(d).name for d in (dts if isinstance(dts, tuple) else (dts,)))


def _spec_cases():
    """One case per (spec, dtypes, kwargs): its smallest argument shapes."""
    best = {}
    for s in all_specs():
        for shapes, dts, kw in s.cases():
            key = (s.name, _dtype_id(dts), repr(sorted(kw.items())))
            size = sum(int(np.prod(sh)) for sh in shapes)
            if key not in best or size < best[key][0]:
                best[key] = (size, s, shapes, dts, kw)
    return [pytest.param(s, shapes, dts, kw, id=f"{s.name}[{k[1]}|{k[2]}]")
            for k, (_, s, shapes, dts, kw) in best.items()]


SPEC_CASES = _spec_cases()

# --- the composition stacks ---

_REVERSE = {p[0] for p in C.PROGRAMS}


def _stacks(name, f, builder):
    """(label, stacked function, arguments) for one program."""
    args = C.to_arrays(C.args_for(builder))
    n = len(args)
    tangents = C.to_arrays(C.args_for(builder, seed=7))
    batched = C.to_arrays(C.batched_args_for(builder))
    batched_t = C.to_arrays(C.tree_map(lambda *xs: np.stack(xs), *[
        builder(np.random.default_rng(7 + i)) for i in range(C.BATCH)]))

    def f_jvp(*a):
        return jvp(f, a[:n], a[n:])

    out = [("f", f, args), ("jvp", f_jvp, (*args, *tangents)), ("vmap", vmap(f), batched),
           ("vmap_jvp", vmap(f_jvp), (*batched, *batched_t))]
    if name in _REVERSE:
        F = C.total(f)
        out += [("grad", grad(F), args), ("vmap_grad", vmap(grad(F)), batched),
                ("grad_grad", grad(grad(C.scaled(F, args))), (1.0,))]
    return out


STACK_LABELS = ("f", "jvp", "vmap", "vmap_jvp", "grad", "vmap_grad", "grad_grad")
COMPOSITION_CASES = [pytest.param(name, label, id=f"{name}-{label}")
                     for name, f, builder in C.ALL_PROGRAMS
                     for label in STACK_LABELS if name in _REVERSE or label in STACK_LABELS[:4]]
_PROGRAM_BY_NAME = {p[0]: p for p in C.ALL_PROGRAMS}


def _composition(name, label):
    _, f, builder = _PROGRAM_BY_NAME[name]
    return next((fn, args) for lb, fn, args in _stacks(name, f, builder) if lb == label)


# --- programs, memoized per case ---

_PROGRAMS: dict = {}


def _program(key, fn, args):
    """The TritonProgram that ``jit(fn, backend="triton")`` runs on ``args``."""
    prog = _PROGRAMS.get(key)
    if prog is None:
        prog = _PROGRAMS[key] = compile_triton(jit(fn).lower(*args).jaxpr)
    return prog


def _spec_fn(spec, kw):
    return lambda *xs: spec.fn(*xs, **kw)


def _spec_args(spec, shapes, dts):
    return [fnp.asarray(a) for a in spec.make_args(np.random.RandomState(0), shapes, dts)]


def _all_programs():
    """(label, program) of every case (building those the tests above did not)."""
    out = []
    for p in SPEC_CASES:
        spec, shapes, dts, kw = p.values
        out.append((spec.name, _program(("spec", p.id), _spec_fn(spec, kw),
                                        _spec_args(spec, shapes, dts))))
    for p in COMPOSITION_CASES:
        name, label = p.values
        fn, args = _composition(name, label)
        out.append((f"{name}-{label}", _program(("composition", p.id), fn, args)))
    return out


# --- the cases ---


@pytest.mark.parametrize("spec, shapes, dts, kw", SPEC_CASES)
def test_op_spec_on_triton_matches_numpy_backend(spec, shapes, dts, kw, request):
    args = _spec_args(spec, shapes, dts)
    fn = _spec_fn(spec, kw)
    want = jit(fn)(*args)
    want = [np.asarray(w) for w in want] if isinstance(want, (list, tuple)) else np.asarray(want)
    got = jit(fn, backend="triton")(*args)
    assert_matches(spec, got, want, spec.arg_dtypes(dts, len(shapes)))
    prog = _program(("spec", request.node.callspec.id), fn, args)
    for fb in prog.fallbacks:
        assert fb.reason, f"{spec.name}: fallback without a reason: {fb}"


@pytest.mark.parametrize("name, label", COMPOSITION_CASES)
def test_composition_on_triton_matches_numpy_backend(name, label, request):
    fn, args = _composition(name, label)
    want = jit(fn)(*args)
    got = jit(fn, backend="triton")(*args)
    C.assert_trees_close(got, want, rtol=1e-4, atol=1e-5)
    prog = _program(("composition", request.node.callspec.id), fn, args)
    for fb in prog.fallbacks:
        assert fb.reason, f"{name}-{label}: fallback without a reason: {fb}"


def test_elementwise_and_reduction_groups_generate_kernels():
    """A codegen rejection of an ELEMENTWISE/REDUCTION/CONV group is a bug, except for the
    allowlisted reasons (dtypes Triton lacks)."""
    rejected = sorted({(label, fb.reason) for label, prog in _all_programs()
                       for fb in prog.fallbacks if fb.kind in FUSIBLE
                       and not any(a in fb.reason for a in ALLOWED_CODEGEN_FALLBACKS)})
    assert not rejected, "\n".join(f"{label}: {reason}" for label, reason in rejected)


def test_fallbacks_are_listed_by_reason(capsys):
    """Every fallback names its reason; prints the counts (``pytest -s``)."""
    programs = _all_programs()
    reasons = collections.Counter(fb.reason.split(":")[0] if fb.kind not in FUSIBLE
                                  else fb.reason[:60] for _, p in programs
                                  for fb in p.fallbacks)
    assert all(reasons), reasons
    kernels = sum(len(p.kernels) for _, p in programs)
    with capsys.disabled():
        print(f"\n{len(SPEC_CASES)} op-spec cases, {len(COMPOSITION_CASES)} composition "
              f"cases: {kernels} kernels, {sum(reasons.values())} fallbacks")
        for reason, n in reasons.most_common():
            print(f"  {n:4d}  {reason}")


def _compile_calls(programs):
    """One compile call per distinct generated kernel (by text, signature, constexprs)."""
    calls = {}
    for _, prog in programs:
        for k in prog.kernels:
            src = getattr(k, "source", None)
            if src is None or not hasattr(src, "signature"):
                continue  # a hand-written kernel: compiled by tests/test_kernels.py
            key = (src.text, tuple(src.signature.items()), tuple(sorted(src.constexprs.items())),
                   src.num_warps)
            calls.setdefault(key, (k.fn, src.signature, src.constexprs, src.num_warps))
    return list(calls.values())


def test_every_generated_kernel_compiles_for_sm90(capsys):
    """Every distinct kernel of the cases above compiles to PTX + cubin for sm_90."""
    calls = _compile_calls(_all_programs())
    assert len(calls) > 500
    t0 = time.perf_counter()
    compiled = tcompile.compile_many(calls)
    assert len(compiled) == len(calls)
    for c in compiled:
        assert ".target sm_90" in c.ptx and len(c.cubin) > 0 and c.target == "cuda:90"
    with capsys.disabled():
        print(f"\ncompiled {len(calls)} distinct kernels for sm_90 in "
              f"{time.perf_counter() - t0:.1f} s")
