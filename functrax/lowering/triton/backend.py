"""The Triton backend of ``jit``: an optimized jaxpr as a sequence of fused kernels.

:func:`compile_triton` plans the fusion of an optimized, first-order ``ClosedJaxpr``
(:func:`functrax.lowering.fusion.plan_fusion`) and prepares one step per group:

- ELEMENTWISE and REDUCTION groups the code generator supports become one Triton kernel each
  (generated, cached by content and imported through ``cache.KernelCache``; launched through
  Triton's interpreter on the CPU, see ``runtime``);
- MATMUL groups of the shape ``kernels/matmul.py`` handles (see :func:`match_matmul`: a 2-D
  x 2-D ``dot_general`` without batch dims, its operands possibly transposed, and an epilogue
  of at most a bias add and a relu) launch that hand-written ``tl.dot`` kernel;
- other MATMUL groups, OPAQUE groups, and any group the code generator rejects
  (``UnsupportedError``), run the numpy rules of their equations (``executor.compile_jaxpr``
  on a jaxpr of just that group). Every such fallback is recorded with its reason in
  :attr:`TritonProgram.fallbacks` and printed by :meth:`TritonProgram.as_text`.

The result has the calling convention of the numpy executor: ``program.run(*arrays)``
returns a list of numpy arrays, one per jaxpr output.

>>> import functrax, functrax.numpy as fnp                      # doctest: +SKIP
>>> f = functrax.jit(lambda x: fnp.exp(x) * 2.0, backend="triton")  # doctest: +SKIP
>>> print(f.lower(fnp.ones(4)).compile().as_text())             # doctest: +SKIP
"""
from __future__ import annotations

import dataclasses

import numpy as np

from functrax import core
from functrax.core import ClosedJaxpr, Jaxpr, Literal
from functrax.lowering.executor import compile_jaxpr
from functrax.lowering.fusion import FusionConfig, classify, plan_fusion
from functrax.lowering.fusion_types import FusionGroup, FusionPlan, GroupKind
from functrax.lowering.triton.codegen import KernelConfig
from functrax.lowering.triton.rules import UnsupportedError

__all__ = ["compile_triton", "TritonProgram", "Step", "Fallback", "MatmulMatch", "match_matmul",
           "STATS"]

# process-wide counters: programs compiled, kernels built (generated + loaded), fallbacks
STATS = {"programs": 0, "kernels": 0, "fallbacks": 0}


@dataclasses.dataclass(frozen=True)
class Fallback:
    """A group run by the numpy rules instead of a Triton kernel.

    Attributes:
      index: the group's position in the plan.
      kind: the group kind.
      primitives: the names of the group's equations.
      reason: why it is not a Triton kernel.
    """

    index: int
    kind: GroupKind
    primitives: tuple
    reason: str


class Step:
    """One group of the plan, ready to run: a Triton kernel or a numpy fallback.

    Attributes:
      group: the :class:`~functrax.lowering.fusion_types.FusionGroup`.
      kernel: the ``runtime.TritonKernel`` (None for a fallback).
      fallback: the :class:`Fallback` record (None for a kernel).

    ``fn`` runs the step on the group's inputs (all of them, literals included, for a kernel
    step; the non-literal ones for a fallback); it defaults to the kernel itself.
    """

    __slots__ = ("group", "kernel", "fallback", "_fn", "_ins", "_outs")

    def __init__(self, group, kernel=None, fallback=None, fn=None):
        self.group = group
        self.kernel = kernel
        self.fallback = fallback
        self._fn = fn if fn is not None else kernel
        self._ins = tuple(group.inputs) if kernel is not None else tuple(
            v for v in group.inputs if type(v) is not Literal)
        self._outs = tuple(group.outputs)

    def run(self, env: dict):
        vals = [_literal(v) if type(v) is Literal else env[v] for v in self._ins]
        for v, x in zip(self._outs, self._fn(*vals)):
            env[v] = x


def _literal(v):
    return np.asarray(v.val, dtype=v.aval.dtype)


class TritonProgram:
    """A compiled program: ``run(*numpy_arrays) -> list of numpy arrays``.

    Attributes:
      jaxpr: the optimized ``ClosedJaxpr`` it runs.
      plan: its :class:`~functrax.lowering.fusion_types.FusionPlan`.
      steps: one :class:`Step` per group, in execution order.
      kernels: the Triton kernels (``runtime.TritonKernel``), in execution order.
      fallbacks: a :class:`Fallback` per group run by numpy rules.
      out_avals, donated: as on the numpy executor (donation reuses no buffer here).
    """

    def __init__(self, closed: ClosedJaxpr, plan: FusionPlan, steps: list, donated=()):
        self.jaxpr = closed
        self.plan = plan
        self.steps = tuple(steps)
        self.kernels = tuple(s.kernel for s in steps if s.kernel is not None)
        self.fallbacks = tuple(s.fallback for s in steps if s.fallback is not None)
        self.out_avals = [v.aval for v in closed.jaxpr.outvars]
        self.donated = tuple(sorted(set(donated)))
        j = closed.jaxpr
        self._consts = [_np(c) for c in closed.consts]
        self._constvars = tuple(j.constvars)
        self._invars = tuple(j.invars)
        self._outvars = tuple(j.outvars)

    def __call__(self, *args):
        return self.run(*args)

    def run(self, *args) -> list:
        """Run on numpy arrays (one per jaxpr input); returns the outputs as numpy arrays."""
        if len(args) != len(self._invars):
            raise TypeError(f"Triton program takes {len(self._invars)} inputs, got "
                            f"{len(args)}")
        env = dict(zip(self._constvars, self._consts))
        env.update((v, np.asarray(x)) for v, x in zip(self._invars, args))
        for step in self.steps:
            step.run(env)
        return [_literal(v) if type(v) is Literal else env[v] for v in self._outvars]

    def run_consuming(self, args: list):
        """Run on ``args`` (a list, emptied); donated buffers are not reused by this backend."""
        vals = tuple(args)
        args.clear()
        return self.run(*vals)

    def as_text(self) -> str:
        """The groups (their equations), each kernel's Triton source, and every fallback."""
        from functrax.jaxpr_printer import PPContext, pp_eqn
        ctx = PPContext()
        j = self.jaxpr.jaxpr
        for v in [*j.constvars, *j.invars, *(v for e in j.eqns for v in e.outvars)]:
            ctx.name(v)
        lines = [f"# triton backend: {len(self.kernels)} kernel(s), "
                 f"{len(self.fallbacks)} numpy fallback(s)", str(self.jaxpr)]
        for i, step in enumerate(self.steps):
            g = step.group
            red = f" reduce {g.reduce_axes}" if g.kind is GroupKind.REDUCTION else ""
            if step.kernel is not None:
                how = f"triton kernel {step.kernel.source.name} grid={step.kernel.source.grid}"
            else:
                how = f"fallback: numpy ({step.fallback.reason})"
            lines.append(f"\nkernel {i}: {g.kind.value}{list(g.shape)}{red} -> {how}")
            lines.extend(f"  {pp_eqn(e, ctx).format(100)}" for e in g.eqns)
            if step.kernel is not None:
                lines.append(step.kernel.source.text.rstrip("\n"))
        return "\n".join(lines)

    def __repr__(self):
        return (f"TritonProgram({len(self.kernels)} kernels, {len(self.fallbacks)} "
                "fallbacks)")


def _np(c):
    return c._value if type(c) is core.Array else np.asarray(c)


def _fallback_reason(group: FusionGroup) -> str:
    reasons = [classify(e)[1] for e in group.eqns]
    reasons = [r for r in reasons if r]
    return reasons[0] if reasons else f"{group.kind.value} group"


def _numpy_fn(group: FusionGroup):
    """The numpy executor of a jaxpr holding just ``group``'s equations."""
    invars = [v for v in group.inputs if type(v) is not Literal]
    sub = Jaxpr((), invars, list(group.outputs), list(group.eqns))
    return compile_jaxpr(ClosedJaxpr(sub, [])).run


# --- MATMUL groups: kernels/matmul.py ---

_MATMUL_DTYPES = (np.dtype(np.float16), np.dtype(np.float32))


@dataclasses.dataclass(frozen=True)
class MatmulMatch:
    """How a MATMUL group maps onto ``kernels/matmul.py``'s ``epilogue(a @ b)``.

    Attributes:
      a, b: ``(position in group.inputs, transpose)``: ``a (M, K)`` is that input, transposed
        before the launch when ``transpose`` is true (likewise ``b (K, N)``).
      bias: the position of the 1-D bias in ``group.inputs`` (None without one).
      epilogue: one of ``kernels.matmul.EPILOGUES``.
    """

    a: tuple
    b: tuple
    bias: int | None
    epilogue: str


def _is_zero(v) -> bool:
    return (v is not None and type(v) is Literal and np.ndim(v.val) == 0 and v.val == 0
            and not np.signbit(v.val))


def _input_index(group, v):
    if type(v) is Literal:
        return None
    return next((i for i, u in enumerate(group.inputs) if u is v), None)


def _dot_operand(group, v, absorbed):
    """``(input position, transposed)`` of a dot operand, or None when it is computed."""
    i = _input_index(group, v)
    if i is not None:
        return i, False
    e = next((e for e in group.eqns if v in e.outvars), None)
    if e is None or e.primitive.name != "transpose" or tuple(e.params["permutation"]) != (1, 0):
        return None
    i = _input_index(group, e.invars[0])
    if i is None:
        return None
    absorbed.add(id(e))
    return i, True


def _check_dot(dot) -> str | None:
    """Why ``dot`` is no plain 2-D x 2-D product of the kernel (None when it is)."""
    (lc, rc), (lb, rb) = dot.params["dimension_numbers"]
    lhs, rhs = dot.invars[:2]
    if lb or rb:
        return "batched dot_general not supported by kernels/matmul.py"
    if len(lhs.aval.shape) != 2 or len(rhs.aval.shape) != 2:
        return (f"dot_general of rank-{len(lhs.aval.shape)} x rank-{len(rhs.aval.shape)} "
                "operands not supported by kernels/matmul.py (2-D x 2-D only)")
    if len(lc) != 1 or len(rc) != 1:
        return "dot_general with several contracting dims not supported by kernels/matmul.py"
    dtype, out_dtype = lhs.aval.dtype, dot.outvars[0].aval.dtype
    if dtype not in _MATMUL_DTYPES or rhs.aval.dtype != dtype or out_dtype != dtype:
        return (f"dot_general of {lhs.aval.dtype.name} x {rhs.aval.dtype.name} -> "
                f"{out_dtype.name} not supported by kernels/matmul.py (float16/float32 "
                "operands and output of one dtype only)")
    return None


def _other(ins, cur):
    """The operand of a binary equation beside ``cur`` (None unless exactly one is ``cur``)."""
    if len(ins) != 2 or (ins[0] is cur) == (ins[1] is cur):
        return None
    return ins[1] if ins[0] is cur else ins[0]


def _match_epilogue(group, dot, rest):
    """``(epilogue, bias position)`` of the equations after ``dot``; None for an epilogue the
    kernel lacks, a reason string for a group with more outputs than the final value."""
    out = dot.outvars[0]
    m, n = out.aval.shape
    cur, bias, relu, views = out, None, False, {}
    for e in rest:
        name, ins = e.primitive.name, e.invars
        if (name == "broadcast_in_dim" and tuple(e.params["broadcast_dimensions"]) == (1,)
                and tuple(e.params["shape"]) == (m, n) and _input_index(group, ins[0]) is not None
                and ins[0].aval.shape == (n,)):
            views[e.outvars[0]] = _input_index(group, ins[0])
        elif (name == "add" and bias is None and not relu and _other(ins, cur) is not None
                and type(_other(ins, cur)) is not Literal and _other(ins, cur) in views):
            bias, cur = views[_other(ins, cur)], e.outvars[0]
        elif name == "max" and not relu and _is_zero(_other(ins, cur)):
            relu, cur = True, e.outvars[0]
        else:
            return None
    if len(group.outputs) != 1 or group.outputs[0] is not cur:
        return (f"matmul group with {len(group.outputs)} outputs (an intermediate value is "
                "used outside the group) not supported by kernels/matmul.py")
    if not set(views.values()) <= ({bias} - {None}):
        return None  # a broadcast the epilogue does not add
    epilogue = {(False, False): "none", (False, True): "relu", (True, False): "bias",
                (True, True): "bias_relu"}[(bias is not None, relu)]
    return epilogue, bias


def match_matmul(group: FusionGroup):
    """A :class:`MatmulMatch` when ``kernels/matmul.py`` computes the MATMUL ``group``, else
    the reason (a string) it falls back to numpy.

    Supported: one 2-D x 2-D float16/float32 ``dot_general`` without batch dims (any
    contracting dims; an operand transposed by the dimension numbers or by an absorbed
    ``transpose`` of a group input is transposed in numpy before the launch) followed by at
    most ``add`` of a row-broadcast 1-D group input (the bias) and then ``max`` with 0 (relu),
    the group's only output being the last of these values.
    """
    dots = [e for e in group.eqns if e.primitive.name == "dot_general"]
    if len(dots) != 1:
        return f"matmul group with {len(dots)} dot_general equations"
    dot = dots[0]
    reason = _check_dot(dot)
    if reason:
        return reason
    (lc, rc), _ = dot.params["dimension_numbers"]
    absorbed = set()
    a = _dot_operand(group, dot.invars[0], absorbed)
    b = _dot_operand(group, dot.invars[1], absorbed)
    if a is None or b is None:
        return "a dot_general operand computed inside the matmul group"
    a = (a[0], a[1] != (lc[0] == 0))  # a (M, K): contract its dim 1
    b = (b[0], b[1] != (rc[0] == 1))  # b (K, N): contract its dim 0
    rest = [e for e in group.eqns if e is not dot and id(e) not in absorbed]
    sides = [e.primitive.name for e in rest if e.primitive.name.startswith("reduce_")]
    if sides:
        return (f"matmul group with side reductions {' '.join(sides)} not supported by "
                "kernels/matmul.py")
    got = _match_epilogue(group, dot, rest)
    if isinstance(got, str):
        return got
    if got is None:
        prims = " ".join(e.primitive.name for e in rest)
        return f"matmul group with epilogue {prims} not supported by kernels/matmul.py"
    return MatmulMatch(a, b, got[1], got[0])


def _matmul_kernel(group: FusionGroup, match: MatmulMatch):
    """``(kernel, fn)``: the ``kernels/matmul.py`` kernel of ``group`` and the step function
    taking the group's inputs (transposing operands as ``match`` says)."""
    from functrax.lowering.triton.runtime import ensure_triton_env
    ensure_triton_env()
    from kernels import matmul as kmatmul

    def arrange(vals, which):
        i, t = which
        x = np.asarray(vals[i])
        return np.ascontiguousarray(x.T if t else x)

    def shape_of(which):
        i, t = which
        s = group.inputs[i].aval.shape
        return s[::-1] if t else s

    dtype = group.outputs[0].aval.dtype
    a0, b0 = np.empty(shape_of(match.a), dtype), np.empty(shape_of(match.b), dtype)
    bias0 = None if match.bias is None else np.empty(group.inputs[match.bias].aval.shape, dtype)
    kernel, dummy = kmatmul.build(a0, b0, bias0, match.epilogue)

    def fn(*vals):
        bias = dummy if match.bias is None else np.asarray(vals[match.bias])
        return kernel(arrange(vals, match.a), arrange(vals, match.b), bias)

    return kernel, fn


def _step(index: int, group: FusionGroup, kernel_config, cache) -> Step:
    reason = None
    if group.kind in (GroupKind.ELEMENTWISE, GroupKind.REDUCTION):
        from functrax.lowering.triton.runtime import build_kernel
        try:
            kernel = build_kernel(group, kernel_config, cache=cache)
        except UnsupportedError as e:
            reason = f"Triton codegen: {e}"
        else:
            STATS["kernels"] += 1
            return Step(group, kernel=kernel)
    elif group.kind is GroupKind.MATMUL:
        match = match_matmul(group)
        if isinstance(match, MatmulMatch):
            kernel, fn = _matmul_kernel(group, match)
            STATS["kernels"] += 1
            return Step(group, kernel=kernel, fn=fn)
        reason = match
    else:
        reason = _fallback_reason(group)
    STATS["fallbacks"] += 1
    fallback = Fallback(index, group.kind, tuple(e.primitive.name for e in group.eqns), reason)
    return Step(group, fallback=fallback, fn=_numpy_fn(group))


def compile_triton(closed: ClosedJaxpr, donated=(), *, fusion_config: FusionConfig | None = None,
                   kernel_config: KernelConfig | None = None, cache=None) -> TritonProgram:
    """Compile an optimized, first-order ``ClosedJaxpr`` for the Triton backend.

    Args:
      closed: normally ``functrax.passes.pipeline.optimize(...)``'s result.
      donated: flat input positions (accepted for the executor's convention; unused).
      fusion_config: a ``FusionConfig`` for the planner (defaults when None).
      kernel_config: a ``codegen.KernelConfig`` (default: the interpreter's).
      cache: a ``cache.KernelCache`` (default: the process-wide one).

    Returns:
      a :class:`TritonProgram`; ``program.run(*arrays)`` gives the outputs as numpy arrays.

    >>> from functrax.passes.pipeline import optimize                 # doctest: +SKIP
    >>> prog = compile_triton(optimize(functrax.make_jaxpr(f)(x)))    # doctest: +SKIP
    >>> prog.fallbacks                                                # doctest: +SKIP
    """
    if not isinstance(closed, ClosedJaxpr):
        raise TypeError(f"compile_triton: expected a ClosedJaxpr (e.g. functrax.jit(f)"
                        f".lower(*args).jaxpr), got {type(closed).__name__}")
    plan = plan_fusion(closed, fusion_config)
    steps = [_step(i, g, kernel_config, cache) for i, g in enumerate(plan.groups)]
    STATS["programs"] += 1
    return TritonProgram(closed, plan, steps, donated)
