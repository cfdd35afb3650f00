"""Control flow on the Triton backend: cond/switch, while and scan as host-driven loops whose
bodies run as compiled Triton programs.

An OPAQUE group holding a control-flow equation becomes a :class:`ControlFlowStep` instead
of a numpy fallback when its primitive has a rule in :data:`step_rules` (primitive ->
``rule(eqn, compile_body) -> runner``: the runner classes below). ``compile_body(closed)``
is ``compile_triton`` of the optimized sub-jaxpr with the outer program's kernel config and
cache, memoized per jaxpr object (:func:`body_program`), so each body / branch / predicate is one
``TritonProgram`` (its own fused kernels, nested control flow included). The runners:

- ``cond`` (``switch``): read the index scalar (one device-to-host read), clamp it as
  ``lax.switch`` does, run that branch's program;
- ``while`` (``while_loop``, ``fori_loop``): run the predicate program, read its scalar, run
  the body program; repeat;
- ``scan``: per iteration take row ``i`` of every ``xs`` (a numpy view on the interpreter;
  the ``row_take`` copy kernel on a GPU), run the body program on ``(consts, carry, x)``
  and write its ``ys`` into the stacked outputs at row ``i`` (numpy assignment; the
  ``row_put`` kernel on a GPU).

The table is keyed by the primitive objects (``functrax/primitives/control_flow.py``), so a
renamed primitive cannot silently miss its rule.

Where the buffers live is decided per run, as the kernels decide it: when kernels run on a
GPU (``runtime.gpu_active()``) the operands are ``GpuBuffer`` s, carries stay on the device
between iterations (the body programs run wrapped in ``gpu_program.GpuProgram``) and only
the predicate / index scalar is read back; otherwise everything is a numpy array run by
Triton's interpreter.

"""
from __future__ import annotations

import math
import weakref

import numpy as np

from functrax.core import ClosedJaxpr, Literal, ShapedArray
from functrax.primitives.control_flow import cond_p, scan_p, while_p

__all__ = ["step_rules", "ControlFlowStep", "body_program", "CondRunner", "WhileRunner",
           "ScanRunner", "control_flow_step"]


# --- compiling sub-jaxprs, memoized per jaxpr object ---

_programs: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def body_program(closed: ClosedJaxpr, kernel_config=None, cache=None):
    """The ``TritonProgram`` of a control-flow body (``compile_triton(optimize(closed))``),
    compiled once per (jaxpr object, kernel config, kernel cache)."""
    per = _programs.setdefault(closed, {})
    key = (kernel_config, None if cache is None else id(cache))
    prog = per.get(key)
    if prog is None:
        from functrax.lowering.triton.backend import compile_triton
        from functrax.passes.pipeline import optimize
        prog = per[key] = compile_triton(optimize(closed), kernel_config=kernel_config,
                                         cache=cache)
    return prog


# --- where buffers live: the host (interpreter) or a GPU ---


class _Host:
    """Buffers are numpy arrays; sub-programs are ``TritonProgram`` s."""

    @staticmethod
    def prepare(vals):
        return [np.asarray(x) for x in vals]

    @staticmethod
    def program(prog):
        return prog

    @staticmethod
    def scalar(x):
        return np.asarray(x)[()]

    @staticmethod
    def take(xs, i):
        return xs[i]

    @staticmethod
    def stacked(shape, dtype):
        return np.empty(shape, dtype)

    @staticmethod
    def put(ys, i, y):
        ys[i] = y


class _Device:
    """Buffers are ``GpuBuffer`` s on one device; sub-programs run as ``GpuProgram`` s."""

    def __init__(self, device_id: int):
        from functrax.lowering.triton import runtime
        self.device_id = device_id
        self._runtime = runtime

    def prepare(self, vals):
        return [self._runtime.to_device(x, self.device_id) for x in vals]

    def program(self, prog):
        wrapped = _gpu_programs.setdefault(prog, {})
        gp = wrapped.get(self.device_id)
        if gp is None:
            from functrax.lowering.triton.gpu_program import GpuProgram
            gp = wrapped[self.device_id] = GpuProgram(prog, self.device_id)
        return gp

    @staticmethod
    def scalar(x):  # the one device-to-host read of a loop iteration / a cond
        return (x.to_numpy() if hasattr(x, "to_numpy") else np.asarray(x))[()]

    def _index(self, i):
        return self._runtime.to_device(np.asarray(i, np.int32), self.device_id)

    def take(self, xs, i):
        from functrax.lowering.triton import gpu_hooks
        out = gpu_hooks.buffer_class()(xs.shape[1:], xs.dtype, self.device_id)
        if out.size:
            kernel = _row_kernel("row_take", xs.shape, xs.dtype)
            self._runtime.launch(kernel, [xs, self._index(i)], [out])
        return out

    def stacked(self, shape, dtype):
        from functrax.lowering.triton import gpu_hooks
        return gpu_hooks.buffer_class()(shape, dtype, self.device_id)

    def put(self, ys, i, y):
        if math.prod(ys.shape[1:]):
            kernel = _row_kernel("row_put", ys.shape, ys.dtype)
            self._runtime.launch(kernel, [y, self._index(i)], [ys])


_gpu_programs: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _placement(vals):
    """:class:`_Device` when kernels run on a GPU (on the device of the first GPU operand),
    else :class:`_Host`."""
    from functrax.lowering.triton import runtime
    if not runtime.gpu_active():
        return _Host
    dev = next((x.device_id for x in vals if hasattr(x, "device_id")), 0)
    return _Device(dev)


# --- the row copy kernels of scan on a GPU (a row index read from a 0-d int32 buffer) ---

_ROW_TEXT = '''import triton
import triton.language as tl


@triton.jit
def {name}(src, idx, dst, ROW: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.load(idx).to(tl.int64)
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < ROW
    {body}
'''
_ROW_BODY = {
    "row_take": "tl.store(dst + offs, tl.load(src + i * ROW + offs, mask=mask), mask=mask)",
    "row_put": "tl.store(dst + i * ROW + offs, tl.load(src + offs, mask=mask), mask=mask)",
}
_row_kernels: dict = {}


def _row_kernel(name: str, stacked_shape, dtype):
    """``row_take`` (``dst = src[i]``) or ``row_put`` (``dst[i] = src``, in place) for a
    stacked buffer of ``stacked_shape`` and ``dtype``, built once per kind/shape/dtype."""
    key = (name, tuple(stacked_shape), np.dtype(dtype).str)
    kernel = _row_kernels.get(key)
    if kernel is None:
        from functrax.lowering.fusion.types import GroupKind
        from functrax.lowering.triton import rules, runtime
        from functrax.lowering.triton.cache import default_cache
        from functrax.lowering.triton.codegen import KernelSource
        row = math.prod(stacked_shape[1:])
        block = min(1 << max(0, row - 1).bit_length(), 1024)
        stacked = ShapedArray(tuple(stacked_shape), np.dtype(dtype))
        one = ShapedArray(tuple(stacked_shape[1:]), np.dtype(dtype))
        index = ShapedArray((), np.dtype(np.int32))
        ins, outs = ((stacked, index), (one,)) if name == "row_take" else ((one, index),
                                                                           (stacked,))
        signature = {"src": rules.signature_type(ins[0].dtype), "idx": "*i32",
                     "dst": rules.signature_type(outs[0].dtype), "ROW": "constexpr",
                     "BLOCK": "constexpr"}
        source = KernelSource(name, _ROW_TEXT.format(name=name, body=_ROW_BODY[name]),
                              GroupKind.OPAQUE, ins, outs, {"ROW": row, "BLOCK": block},
                              (-(-row // block),), 4, signature)
        kernel = _row_kernels[key] = runtime.TritonKernel(source, default_cache().load(source))
    return kernel


# --- the runners: one per control-flow equation ---


def _clamp(index, n: int) -> int:
    return min(max(int(index), 0), n - 1)


class CondRunner:
    """``cond`` / ``switch``: the branch selected by the (clamped) index scalar.

    Attributes:
      programs: one ``TritonProgram`` per branch.
    """

    primitive = "cond"

    def __init__(self, eqn, compile_body):
        self.programs = tuple(compile_body(b) for b in eqn.params["branches"])

    def __call__(self, place, index, *ops):
        prog = self.programs[_clamp(place.scalar(index), len(self.programs))]
        return place.program(prog).run(*ops)

    def bodies(self):
        return [(f"branch {i}", p) for i, p in enumerate(self.programs)]


class WhileRunner:
    """``while``: the predicate program, one scalar read, the body program; repeated.

    Attributes:
      cond, body: the predicate's and the body's ``TritonProgram``.
    """

    primitive = "while"

    def __init__(self, eqn, compile_body):
        p = eqn.params
        self.cond = compile_body(p["cond_jaxpr"])
        self.body = compile_body(p["body_jaxpr"])
        self.nc, self.nb = p["cond_nconsts"], p["body_nconsts"]

    def __call__(self, place, *args):
        cconsts, bconsts = args[:self.nc], args[self.nc:self.nc + self.nb]
        carry = list(args[self.nc + self.nb:])
        cond, body = place.program(self.cond), place.program(self.body)
        while place.scalar(cond.run(*cconsts, *carry)[0]):
            carry = body.run(*bconsts, *carry)
        return carry

    def bodies(self):
        return [("cond", self.cond), ("body", self.body)]


class ScanRunner:
    """``scan``: the body program per iteration on ``(consts, carry, xs[i])``, its ``ys``
    written into the stacked outputs at row ``i`` (rows in reverse order for ``reverse``).

    Attributes:
      body: the body's ``TritonProgram``.
    """

    primitive = "scan"

    def __init__(self, eqn, compile_body):
        p = eqn.params
        self.body = compile_body(p["jaxpr"])
        self.length, self.reverse = p["length"], p["reverse"]
        self.nconsts, self.ncarry = p["num_consts"], p["num_carry"]
        self.y_avals = tuple(p["jaxpr"].out_avals[self.ncarry:])

    def __call__(self, place, *args):
        n1, n2 = self.nconsts, self.nconsts + self.ncarry
        consts, carry, xs = args[:n1], list(args[n1:n2]), args[n2:]
        ys = [place.stacked((self.length,) + a.shape, a.dtype) for a in self.y_avals]
        body = place.program(self.body)
        order = range(self.length - 1, -1, -1) if self.reverse else range(self.length)
        for i in order:
            outs = body.run(*consts, *carry, *[place.take(x, i) for x in xs])
            carry = outs[:self.ncarry]
            for y, o in zip(ys, outs[self.ncarry:]):
                place.put(y, i, o)
        return list(carry) + ys

    def bodies(self):
        return [("body", self.body)]


# primitive -> rule(eqn, compile_body) -> a runner (``runner(place, *operands)``)
step_rules: dict = {cond_p: CondRunner, while_p: WhileRunner, scan_p: ScanRunner}


# --- the step ---


def _literal(v):
    return np.asarray(v.val, dtype=v.aval.dtype)


class ControlFlowStep:
    """One control-flow equation of a plan, run by the host over compiled body programs.

    Attributes:
      group: the OPAQUE ``FusionGroup`` holding the equation.
      runner: the rule's runner (``programs`` / ``cond`` and ``body`` / ``body``).
      kernel, fallback: None (neither one kernel nor a numpy fallback).
      kernels: every Triton kernel of the body programs (nested ones included).
      fallbacks: every numpy fallback of the body programs (nested ones included).
    """

    kernel = None
    fallback = None

    def __init__(self, group, runner):
        (eqn,) = group.eqns
        self.group = group
        self.runner = runner
        self._ins = tuple(eqn.invars)
        self._outs = tuple(eqn.outvars)
        progs = [p for _, p in runner.bodies()]
        self.kernels = tuple(k for p in progs for k in p.kernels)
        self.fallbacks = tuple(f for p in progs for f in p.fallbacks)

    def run(self, env: dict):
        vals = [_literal(v) if type(v) is Literal else env[v] for v in self._ins]
        place = _placement(vals)
        for v, x in zip(self._outs, self.runner(place, *place.prepare(vals))):
            env[v] = x

    def describe(self) -> str:
        """One line for ``as_text``: the primitive and its body programs."""
        parts = ", ".join(f"{label}: {len(p.kernels)} kernel(s)" for label, p in
                          self.runner.bodies())
        return f"control flow {self.runner.primitive} on the host over Triton programs ({parts})"

    def body_text(self) -> list:
        """The text of every body program (``TritonProgram.as_text``), indented."""
        lines = []
        for label, prog in self.runner.bodies():
            lines.append(f"  {label}:")
            lines.extend("    " + line if line else line
                         for line in prog.as_text().splitlines())
        return lines


def control_flow_step(group, kernel_config=None, cache=None):
    """A :class:`ControlFlowStep` for an OPAQUE group whose equation has a rule in
    :data:`step_rules`, else None."""
    if len(group.eqns) != 1:
        return None
    rule = step_rules.get(group.eqns[0].primitive)
    if rule is None:
        return None
    runner = rule(group.eqns[0], lambda c: body_program(c, kernel_config, cache))
    return ControlFlowStep(group, runner)
