"""The Triton backend of ``jit``: an optimized jaxpr as a sequence of fused kernels.

:func:`compile_triton` plans the fusion of an optimized, first-order ``ClosedJaxpr``
(:func:`functrax.lowering.fusion.planner.plan_fusion`) and prepares one step per group:

- ELEMENTWISE and REDUCTION groups the code generator supports become one Triton kernel each
  (generated, cached by content and imported through ``cache.KernelCache``; launched through
  Triton's interpreter on the CPU, see ``runtime``);
- MATMUL groups become one generated ``tl.dot`` kernel each (``matmul_groups``: transposes
  as strides, batch dims as a grid axis, the fused elementwise epilogue and side reductions);
- CONV groups become one generated implicit-GEMM kernel each (``conv_groups``: windows,
  padding, dilations and layouts as index arithmetic, groups as a grid axis, the fused
  elementwise epilogue);
- a group matching a hand-written kernel of ``kernels/`` named in
  ``KernelConfig.hand_written`` (by default a dense layer ``relu?(x @ w + b?)`` and
  attention, rewritten to one ``fused_attention`` equation before planning; also softmax
  and layernorm on the GPU config) runs that kernel instead (``patterns.PATTERNS``);
- a one-equation OPAQUE group whose primitive has a builder in :data:`OPAQUE_STEPS` gets
  it: a control-flow equation (cond/switch, while/fori_loop, scan) is a ``ControlFlowStep``
  (the host drives it, each body / branch running as its own compiled Triton program);
  scans, sort, threefry2x32 and same-width bitcasts (``scan_sort``), scatters
  (``gather_scatter``), windowed reductions and max pooling's derivatives (``windows``) and
  ``fused_attention`` (``kernels/attention.py``) are kernels; a host callback
  (``debug.print``, ``pure_callback``, ...) is a ``HostCallbackStep``: the user's Python runs
  on the host between kernels (``host_callbacks``);
- other OPAQUE groups, and any group the code generators reject
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
from functrax.lowering.numpy.executor import compile_jaxpr
from functrax.lowering.fusion.planner import FusionConfig, classify, plan_fusion
from functrax.lowering.fusion.types import FusionGroup, FusionPlan, GroupKind
from functrax import primitives as P
from functrax.passes.explicit_broadcast import explicit_broadcasts
from functrax.passes.physicalize import physicalize
from functrax.lowering.triton import runtime
from functrax.lowering.triton.codegen import KernelConfig
from functrax.lowering.triton.control_flow import control_flow_step, step_rules
from functrax.lowering.triton.conv_groups import build_conv
from functrax.lowering.triton.gather_scatter import SCATTER_KINDS, build_scatter
from functrax.lowering.triton.host_callbacks import HOST_CALLBACKS, host_callback_step
from functrax.lowering.triton.matmul_groups import MatmulMatch, build_matmul, match_matmul  # noqa: F401
from functrax.lowering.triton.patterns import build_pattern, rewrite_patterns
from functrax.lowering.triton.rules import UnsupportedError
from functrax.lowering.triton.scan_sort import OPAQUE_KERNELS, build_opaque
from functrax.lowering.triton.windows import WINDOW_KERNELS, build_window

__all__ = ["compile_triton", "TritonProgram", "Step", "Fallback", "MatmulMatch", "match_matmul",
           "OPAQUE_STEPS", "STATS"]

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
      group: the :class:`~functrax.lowering.fusion.types.FusionGroup`.
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
      plan: its :class:`~functrax.lowering.fusion.types.FusionPlan`.
      steps: one :class:`Step` per group, in execution order.
      kernels: the Triton kernels (``runtime.TritonKernel``), in execution order.
      fallbacks: a :class:`Fallback` per group run by numpy rules.
      out_avals, donated: as on the numpy executor (donation reuses no buffer here).
    """

    def __init__(self, closed: ClosedJaxpr, plan: FusionPlan, steps: list, donated=()):
        self.jaxpr = closed
        self.plan = plan
        self.steps = tuple(steps)
        # (a control-flow step contributes the kernels / fallbacks of its body programs)
        self.kernels = tuple(k for s in steps for k in getattr(s, "kernels", (s.kernel,))
                             if k is not None)
        self.fallbacks = tuple(f for s in steps for f in getattr(s, "fallbacks", (s.fallback,))
                               if f is not None)
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
        """The jaxpr, then per group a header (kind, kernel name, grid, block sizes, inputs and
        outputs with avals, cost), its equations and its Triton source; then every fallback
        with its reason (see ``inspection.program_text``)."""
        from functrax.lowering.triton.inspection import program_text
        return program_text(self)

    def cost_analysis(self) -> dict:
        """Flops, transcendentals and bytes in total and per kernel under ``'kernels'`` (see
        ``inspection.program_cost``)."""
        from functrax.lowering.triton.inspection import program_cost
        return program_cost(self)

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


def _kernel_step(group, built) -> Step:
    STATS["kernels"] += 1
    return Step(group, kernel=built[0], fn=built[1])


def _fused_step(group: FusionGroup, kernel_config, cache):
    """The kernel step of an ELEMENTWISE, REDUCTION, MATMUL or CONV group: a hand-written
    kernel of ``kernels/`` when a pattern matches, else a generated one."""
    hand = build_pattern(group, kernel_config)  # patterns.PATTERNS
    if hand is not None:
        return _kernel_step(group, hand[1:])
    if group.kind is GroupKind.MATMUL:
        return _kernel_step(group, (build_matmul(group, kernel_config, cache=cache), None))
    if group.kind is GroupKind.CONV:
        return _kernel_step(group, (build_conv(group, kernel_config, cache=cache), None))
    return _kernel_step(group, (runtime.build_kernel(group, kernel_config, cache=cache), None))


def _pattern_step(group, kernel_config, cache):  # fused_attention: kernels/attention.py
    hand = build_pattern(group, kernel_config)
    return None if hand is None else _kernel_step(group, hand[1:])


def _built_step(build):
    """A step builder from ``build(group, config, cache) -> (kernel, fn) or None``."""
    def step(group, kernel_config, cache):
        built = build(group, kernel_config, cache)
        return None if built is None else _kernel_step(group, built)
    return step


# The steps of one-equation OPAQUE groups: primitive -> builder(group, kernel_config, cache)
# returning a Step (None: a numpy fallback; UnsupportedError: a fallback saying why).
OPAQUE_STEPS = {
    **dict.fromkeys(step_rules, control_flow_step),  # host-driven loops over Triton programs
    **dict.fromkeys(OPAQUE_KERNELS, _built_step(build_opaque)),  # scans, sort, threefry, ...
    **dict.fromkeys(SCATTER_KINDS, _built_step(build_scatter)),
    **dict.fromkeys(WINDOW_KERNELS, _built_step(build_window)),  # pooling (windows.py)
    P.attention_p: _pattern_step,
    **dict.fromkeys(HOST_CALLBACKS, host_callback_step),  # Python on the host, between kernels
}


def _opaque_step(group: FusionGroup, kernel_config, cache):
    builder = OPAQUE_STEPS.get(group.eqns[0].primitive) if len(group.eqns) == 1 else None
    return None if builder is None else builder(group, kernel_config, cache)


def _step(index: int, group: FusionGroup, kernel_config, cache) -> Step:
    build = _opaque_step if group.kind is GroupKind.OPAQUE else _fused_step
    reason = None
    try:
        step = build(group, kernel_config, cache)
    except UnsupportedError as e:
        step = None
        reason = (f"{_fallback_reason(group)}; no Triton kernel: {e}"
                  if group.kind is GroupKind.OPAQUE else f"Triton codegen: {e}")
    if step is not None:
        return step
    reason = reason or _fallback_reason(group)
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
    closed = physicalize(closed)  # typed PRNG keys -> their uint32 data (no-op if optimized)
    closed = explicit_broadcasts(closed)  # size-1 broadcasts -> broadcast_in_dim (likewise)
    closed = rewrite_patterns(closed, kernel_config)  # attention: one fused_attention eqn
    plan = plan_fusion(closed, fusion_config)
    steps = [_step(i, g, kernel_config, cache) for i, g in enumerate(plan.groups)]
    STATS["programs"] += 1
    program = TritonProgram(closed, plan, steps, donated)
    from functrax.lowering.triton.inspection import maybe_dump
    maybe_dump(program)  # into functrax.config.triton_dump_dir when it is set
    return program
