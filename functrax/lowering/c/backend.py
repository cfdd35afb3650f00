"""The C backend of ``jit``: an optimized jaxpr as fused C kernels in one shared library.

:func:`compile_c` plans the fusion of an optimized, first-order ``ClosedJaxpr``
(:func:`functrax.lowering.fusion.planner.plan_fusion`, the plan every backend renders) and
prepares one step per group:

- ELEMENTWISE and REDUCTION groups the code generator supports become one C function each
  (``codegen.generate``); all functions of a program are one translation unit, compiled once
  by the system compiler (``toolchain``) into a shared library cached on disk (``cache``)
  and called through ``ctypes`` with buffers allocated by numpy;
- every other group (MATMUL: numpy's matmul, i.e. BLAS; OPAQUE: sort, gather, control flow,
  ...), and any group the code generator rejects (``UnsupportedError``), runs the numpy
  rules of its equations (the numpy executor on a jaxpr of just that group). Every such
  fallback is recorded with its reason in :attr:`CProgram.fallbacks` and printed by
  :meth:`CProgram.as_text`.

Without a working compiler, or when the compiler rejects the program, the whole program
runs on the numpy backend: a warning names the kernel and the compiler's message once
(``config.c_compile_errors = "raise"`` makes a compile error an error instead).

The result has the calling convention of the numpy executor: ``program.run(*arrays)``
returns a list of numpy arrays, one per jaxpr output.

>>> import functrax, functrax.numpy as fnp                       # doctest: +SKIP
>>> f = functrax.jit(lambda x: fnp.exp(x) * 2.0, backend="c")    # doctest: +SKIP
>>> print(f.lower(fnp.ones(4)).compile().as_text())              # doctest: +SKIP
"""
from __future__ import annotations

import concurrent.futures
import ctypes
import dataclasses
import os
import re
import sys
import threading
import warnings

import numpy as np

from functrax import core
from functrax.config import config
from functrax.core import ClosedJaxpr, Family, Jaxpr, Literal
from functrax.lowering.c import codegen
from functrax.lowering.c.blas import configure_library
from functrax.lowering.c.blocks import BLOCK_PRIMITIVES, generate_block, program_group
from functrax.lowering.c.cache import LibraryCache, default_cache
from functrax.lowering.c.prelude import PRELUDE
from functrax.lowering.c.rules import UnsupportedError
from functrax.lowering.c.toolchain import CompileError, toolchain
from functrax.lowering.thread_share import CORES, thread_budget
from functrax.passes.explicit_broadcast import explicit_broadcasts
from functrax.lowering.fusion.planner import FusionConfig, classify, plan_fusion
from functrax.lowering.fusion.types import FusionGroup, FusionPlan, GroupKind
from functrax.lowering.numpy.executor import compile_jaxpr

__all__ = ["compile_c", "compile_many", "CProgram", "Step", "Fallback", "STATS",
           "CCompileWarning", "CompileError", "program_source", "library_of", "bind_loaded"]

# process-wide counters: programs compiled, C kernels built, group fallbacks, programs run
# entirely on numpy (no compiler or a compile error)
STATS = {"programs": 0, "kernels": 0, "fallbacks": 0, "numpy_programs": 0}


class CCompileWarning(RuntimeWarning):
    """The C backend runs a program on the numpy backend (no compiler, or a compile error)."""


@dataclasses.dataclass(frozen=True)
class Fallback:
    """A group run by the numpy rules instead of a C kernel.

    Attributes:
      index: the group's position in the plan (-1: the whole program).
      kind: the group kind (None for the whole program).
      primitives: the names of the group's equations.
      reason: why it is not a C kernel.
    """

    index: int
    kind: GroupKind | None
    primitives: tuple
    reason: str


def _literal(v):
    return np.asarray(v.val, dtype=v.aval.dtype)


def _num_threads() -> int:
    """OpenMP threads of a kernel: ``config.c_num_threads`` (default all cores), at most this
    thread's share of the cores (a pmap replica's: cores / replicas)."""
    n = config.read("c_num_threads")
    return thread_budget(n) if n else thread_budget(CORES)


class Step:
    """One group of the plan, ready to run: a C kernel or a numpy fallback.

    Attributes:
      group: the :class:`~functrax.lowering.fusion.types.FusionGroup`.
      kernel: the ``codegen.KernelSource`` (None for a fallback).
      fallback: the :class:`Fallback` record (None for a kernel).
    """

    __slots__ = ("group", "kernel", "fallback", "fn", "_ins", "_outs", "_dtypes", "_argt",
                 "_pool", "_lock", "_consts", "_consts_keep", "_scratch", "single_thread")

    def __init__(self, group, kernel=None, fallback=None, fn=None, consts=()):
        self.group, self.kernel, self.fallback, self.fn = group, kernel, fallback, fn
        self._ins = tuple(v for v in group.inputs if type(v) is not Literal)
        self._outs = tuple(group.outputs)
        self._dtypes = tuple(v.aval.dtype for v in self._ins)
        nscratch = len(kernel.scratch) if kernel is not None else 0
        ncallees = len(kernel.callees) if kernel is not None else 0
        self._argt = ctypes.c_void_p * (len(self._ins) + len(self._outs) + nscratch
                                        + len(consts) + ncallees)
        self._pool = [None] * len(self._outs)  # (buffer, address) of the last outputs
        self._lock = threading.Lock()
        self._consts = tuple(c.ctypes.data for c in consts)
        self._consts_keep = consts
        self._scratch = []  # free sets of scratch buffers (one per concurrent call)
        self.single_thread = False  # set by a program whose BLAS threads own the cores

    def _output_buffer(self, j):
        """``(buffer, address)`` of output ``j``: the buffer of the previous call when nothing
        but this step holds it any more (no caller's array, view or later step: its reference
        count says so), else a new one. Steady-state calls then touch no fresh pages."""
        with self._lock:
            entry, self._pool[j] = self._pool[j], None
        if entry is not None:
            buf, ptr = entry
            del entry  # the pool's tuple: now `buf` and the call's argument hold it
            if sys.getrefcount(buf) == 2:
                return buf, ptr
        v = self._outs[j]
        buf = np.empty(v.aval.shape, v.aval.dtype)
        return buf, buf.ctypes.data

    def _take_scratch(self) -> tuple:
        """``(buffers, addresses)`` of one call's scratch: a free set of an earlier call,
        else new buffers."""
        if not self.kernel.scratch:
            return (), ()
        with self._lock:
            if self._scratch:
                return self._scratch.pop()
        bufs = [np.empty(n, np.uint8) for n in self.kernel.scratch]
        return bufs, tuple(b.ctypes.data for b in bufs)

    def bind(self, cfunc, callees=()):
        """Attach the loaded C function of this kernel step (and the addresses of the
        functions it calls through its last arguments)."""
        cfunc.argtypes = (ctypes.POINTER(ctypes.c_void_p), ctypes.c_int)
        cfunc.restype = None
        self.fn = cfunc
        if callees:
            self._consts = tuple(c.ctypes.data for c in self._consts_keep) + tuple(callees)

    def run(self, env: dict):
        if self.kernel is None:
            vals = [env[v] for v in self._ins]
            for v, x in zip(self._outs, self.fn(*vals)):
                env[v] = x
            return
        ins = []
        for v, dt in zip(self._ins, self._dtypes):
            x = env[v]
            if type(x) is not np.ndarray or x.dtype != dt or not x.flags.c_contiguous:
                x = np.ascontiguousarray(x, dtype=dt)
            ins.append(x)
        outs = [self._output_buffer(j) for j in range(len(self._outs))]
        if self.kernel.work:
            scratch = self._take_scratch()
            ptrs = self._argt(*[a.ctypes.data for a in ins], *[p for _, p in outs],
                              *scratch[1], *self._consts)
            self.fn(ptrs, 1 if self.single_thread else _num_threads())
            if scratch[0]:
                with self._lock:
                    self._scratch.append(scratch)
        for j, (v, (x, p)) in enumerate(zip(self._outs, outs)):
            env[v] = x
            self._pool[j] = (x, p)  # one store: concurrent calls (pmap replicas) race here


class CProgram:
    """A compiled program: ``run(*numpy_arrays) -> list of numpy arrays``.

    Attributes:
      jaxpr: the optimized ``ClosedJaxpr`` it runs.
      plan: its :class:`~functrax.lowering.fusion.types.FusionPlan`.
      steps: one :class:`Step` per group, in execution order.
      kernels: the C kernels (``codegen.KernelSource``), in execution order.
      fallbacks: a :class:`Fallback` per group run by numpy rules (one with index -1 when
        the whole program runs on the numpy backend).
      source: the translation unit (prelude and every kernel).
      out_avals, donated: as on the numpy executor.
    """

    def __init__(self, closed: ClosedJaxpr, plan: FusionPlan, steps: list, donated=(),
                 numpy_exe=None, program_fallback: Fallback | None = None):
        self.jaxpr, self.plan, self.steps = closed, plan, tuple(steps)
        self.kernels = tuple(s.kernel for s in steps if s.kernel is not None)
        self.fallbacks = tuple(s.fallback for s in steps if s.fallback is not None)
        if program_fallback is not None:
            self.fallbacks = (program_fallback,) + self.fallbacks
        self.source = program_source(self.kernels)
        self.out_avals = [v.aval for v in closed.jaxpr.outvars]
        self.donated = tuple(sorted(set(donated)))
        self._numpy = numpy_exe
        j = closed.jaxpr
        self._consts = [c._value if type(c) is core.Array else np.asarray(c)
                        for c in closed.consts]
        self._constvars, self._invars, self._outvars = (tuple(j.constvars), tuple(j.invars),
                                                        tuple(j.outvars))

    @property
    def on_numpy(self) -> bool:
        """Whether the whole program runs on the numpy backend (no compiler, compile error)."""
        return self._numpy is not None

    def __call__(self, *args):
        return self.run(*args)

    def run(self, *args) -> list:
        """Run on numpy arrays (one per jaxpr input); returns the outputs as numpy arrays."""
        if self._numpy is not None:
            return self._numpy.run(*args)
        if len(args) != len(self._invars):
            raise TypeError(f"C program takes {len(self._invars)} inputs, got {len(args)}")
        env = dict(zip(self._constvars, self._consts))
        env.update((v, np.asarray(x)) for v, x in zip(self._invars, args))
        for step in self.steps:
            step.run(env)
        return [_literal(v) if type(v) is Literal else env[v] for v in self._outvars]

    def run_consuming(self, args: list):
        """Run on ``args`` (a list, emptied); donated buffers are not reused by C kernels."""
        if self._numpy is not None:
            return self._numpy.run_consuming(args)
        vals = tuple(args)
        args.clear()
        return self.run(*vals)

    def as_text(self) -> str:
        """The jaxpr, the fusion plan, the C source of every kernel, then every fallback with
        its reason."""
        lines = ["# jaxpr", str(self.jaxpr), "", "# fusion plan", self.plan.describe(), ""]
        if self.kernels:
            lines += ["# C source", self.source]
        if self.fallbacks:
            lines.append("# numpy fallbacks")
            for fb in self.fallbacks:
                where = "program" if fb.index < 0 else f"kernel {fb.index} ({fb.kind.value})"
                lines.append(f"{where}: {' '.join(fb.primitives)}: {fb.reason}")
        return "\n".join(lines)

    def cost_analysis(self) -> dict:
        """Flops, transcendentals and bytes of the program (the static cost model)."""
        from functrax.lowering.cost import cost_analysis
        return cost_analysis(self.jaxpr)

    def __repr__(self):
        where = ", on numpy" if self.on_numpy else ""
        return f"CProgram({len(self.kernels)} kernels, {len(self.fallbacks)} fallbacks{where})"


# --- building steps ---


def _fallback_reason(group: FusionGroup) -> str:
    reasons = [r for r in (classify(e)[1] for e in group.eqns) if r]
    if reasons:
        return reasons[0]
    return f"{group.kind.value} group"


def _numpy_fn(group: FusionGroup):
    """The numpy executor of a jaxpr holding just ``group``'s equations."""
    invars = [v for v in group.inputs if type(v) is not Literal]
    sub = Jaxpr((), invars, list(group.outputs), list(group.eqns))
    return compile_jaxpr(ClosedJaxpr(sub, [])).run


def _step(index: int, group: FusionGroup) -> Step:
    reason = None
    if group.kind in (GroupKind.ELEMENTWISE, GroupKind.REDUCTION):
        try:
            return Step(group, kernel=codegen.generate(group))
        except UnsupportedError as e:
            reason = f"C codegen: {e}"
    elif group.kind is GroupKind.MATMUL or (group.kind is GroupKind.OPAQUE and
                                            group.eqns[0].primitive in BLOCK_PRIMITIVES):
        try:
            kernel, consts = generate_block(group)
            return Step(group, kernel=kernel, consts=consts)
        except UnsupportedError as e:
            reason = f"C block: {e}"
    STATS["fallbacks"] += 1
    fallback = Fallback(index, group.kind, tuple(e.primitive.name for e in group.eqns),
                        reason or _fallback_reason(group))
    return Step(group, fallback=fallback, fn=_numpy_fn(group))


# kernel name -> loaded C function's library (names include a hash of the body: one name is
# one function, whichever library holds it)
_LOADED: dict = {}
_LOADED_LOCK = threading.Lock()
_WARNED: set = set()


def _warn_once(key, message: str):
    if key in _WARNED:
        return
    _WARNED.add(key)
    warnings.warn(message, CCompileWarning, stacklevel=4)


def _failed_kernel(message: str, kernels) -> str:
    """The kernel holding the first line the compiler's message names."""
    m = re.search(r"\.c:(\d+):", message)
    if not m or not kernels:
        return kernels[0].name if kernels else "?"
    line, start = int(m.group(1)), PRELUDE.count("\n") + 1
    for k in kernels:
        end = start + k.text.count("\n") + 1
        if line <= end:
            return k.name
        start = end
    return kernels[-1].name


def _load_libraries(sources: list, cache: LibraryCache):
    """Compile (or load from disk) each translation unit; register its kernels."""
    tc = toolchain()
    libs = [None] * len(sources)

    def build(i):
        try:
            libs[i] = cache.load(sources[i][0], tc)
        except CompileError as e:
            e.unit_names = sources[i][1]  # which kernels the message's line numbers are in
            raise

    if len(sources) == 1:
        build(0)
    else:
        with concurrent.futures.ThreadPoolExecutor(max(1, min(len(sources), CORES))) as pool:
            list(pool.map(build, range(len(sources))))
    for lib in dict.fromkeys(libs):
        configure_library(lib)
    with _LOADED_LOCK:
        for (_, names), lib in zip(sources, libs):
            for n in names:
                _LOADED.setdefault(n, lib)


def program_source(kernels) -> str:
    """The translation unit of a program's ``kernels``: the prelude, then every kernel and
    the kernels it calls (callees first)."""
    return PRELUDE + "\n" + "\n".join(k.text for k in _with_deps(_roots(kernels)))


def _with_deps(kernels, out=None) -> list:
    """``kernels`` and the kernels they call (at any depth), callees first, one per name."""
    out = {} if out is None else out
    for k in kernels:
        if k.name not in out:
            _with_deps(k.deps, out)
            out[k.name] = k
    return list(out.values())


# a program's kernels above this much C text compile as several translation units at once
# (one per core): the compiler's time grows with the text, its ~40 ms start-up does not
SPLIT_TEXT = 6000


def _units(kernels) -> list:
    """Translation units of ``kernels`` (each with the kernels it calls), one per core at
    most, balanced by text size; a small program is one unit."""
    roots = list({k.name: _with_deps([k]) for k in kernels}.values())
    size = sum(len(k.text) for unit in roots for k in unit)
    n = min(len(roots), CORES, max(1, size // SPLIT_TEXT))
    parts = [({}, [0]) for _ in range(n)]
    for unit in sorted(roots, key=lambda u: -sum(len(k.text) for k in u)):
        names, weight = min(parts, key=lambda p: p[1][0])
        for k in unit:
            if k.name not in names:
                names[k.name] = k
                weight[0] += len(k.text)
    return [(PRELUDE + "\n" + "\n".join(k.text for k in names.values()), list(names))
            for names, _ in parts if names]


def _roots(kernels) -> list:
    """``kernels`` and the kernels they call through addresses (callees first): each is the
    root of a translation unit of its own (with its ``deps``)."""
    out = {}
    for k in kernels:
        for c in k.callees:
            out.setdefault(c.name, c)
        out.setdefault(k.name, k)
    return list(out.values())


def _address(name: str) -> int:
    return ctypes.cast(getattr(_LOADED[name], name), ctypes.c_void_p).value


def library_of(name: str) -> str:
    """The file name (``p_<key>.so``) of the loaded library holding kernel ``name``."""
    return os.path.basename(_LOADED[name]._name)


def bind_loaded(steps: list, libraries: dict):
    """Bind ``steps`` (kernel steps) to their functions in ``libraries`` (kernel name ->
    loaded library; each configured here and registered as the kernel's library)."""
    for lib in set(libraries.values()):
        configure_library(lib)
    with _LOADED_LOCK:
        for n, lib in libraries.items():
            _LOADED.setdefault(n, lib)
    for s in steps:
        s.bind(getattr(_LOADED[s.kernel.name], s.kernel.name),
               [_address(c.name) for c in s.kernel.callees])


def _link(steps: list, cache: LibraryCache):
    kernels = _roots([s.kernel for s in steps if s.kernel is not None])
    if any(k.name not in _LOADED for k in kernels):
        _load_libraries(_units(kernels), cache)
    for s in steps:
        if s.kernel is not None:
            s.bind(getattr(_LOADED[s.kernel.name], s.kernel.name),
                   [_address(c.name) for c in s.kernel.callees])


def _on_numpy(closed, plan, donated, reason: str) -> CProgram:
    STATS["numpy_programs"] += 1
    fb = Fallback(-1, None, (), reason)
    return CProgram(closed, plan, [], donated, numpy_exe=compile_jaxpr(closed, donated),
                    program_fallback=fb)


def _dump(program: CProgram):
    directory = config.c_dump_dir
    if directory and program.kernels:
        os.makedirs(directory, exist_ok=True)
        name = program.kernels[0].name
        with open(os.path.join(directory, f"{name}.c"), "w", encoding="utf-8") as f:
            f.write(program.source)


_BLAS_FAMILIES = frozenset({Family.CONTRACTION, Family.CONVOLUTION, Family.LINALG})


def _uses_blas(jaxpr: Jaxpr) -> bool:
    """Whether a program calls BLAS (products, convolutions, decompositions; in loops too).
    Its kernels then run on one thread: BLAS's threads keep spinning on the other cores for a
    while after each call, and OpenMP threads competing with them for the cores made a
    2-core MLP step 15x slower. BLAS parallelizes the products, which dominate such programs."""
    for e in jaxpr.eqns:
        if e.primitive.family in _BLAS_FAMILIES:
            return True
        if any(_uses_blas(sub) for sub in core.sub_jaxprs(e.params)):
            return True
    return False


def _prepare(closed: ClosedJaxpr, fusion_config):
    if not isinstance(closed, ClosedJaxpr):
        raise TypeError(f"compile_c: expected a ClosedJaxpr (e.g. functrax.jit(f)"
                        f".lower(*args).jaxpr), got {type(closed).__name__}")
    closed = explicit_broadcasts(closed)  # no-op (its argument) if optimized
    plan = plan_fusion(closed, fusion_config)
    return closed, plan, _as_one_step(closed, plan, [_step(i, g) for i, g in
                                                     enumerate(plan.groups)])


def _as_one_step(closed, plan, steps: list) -> list:
    """A program whose every group is C: one block function (one call per run, no Python
    between the groups), its kernels those of ``steps``; ``steps`` when a group runs on
    numpy or the block is refused (intermediates too large to hold)."""
    if len(steps) < 2 or any(s.kernel is None for s in steps):
        return steps
    group = program_group(closed.jaxpr)
    try:
        kernel, consts = generate_block(group, [(s.group, s.kernel, s._consts_keep)
                                                for s in steps])
    except UnsupportedError:
        return steps
    return [Step(group, kernel=kernel, consts=consts)]


def compile_c(closed: ClosedJaxpr, donated=(), *, fusion_config: FusionConfig | None = None,
              cache: LibraryCache | None = None) -> CProgram:
    """Compile an optimized, first-order ``ClosedJaxpr`` for the C backend.

    Args:
      closed: normally ``functrax.passes.pipeline.optimize(...)``'s result.
      donated: flat input positions (used when the program runs on numpy; C kernels do not
        reuse donated buffers yet).
      fusion_config: a ``FusionConfig`` for the planner (defaults when None).
      cache: a ``cache.LibraryCache`` (default: the process-wide one).

    Returns:
      a :class:`CProgram`; ``program.run(*arrays)`` gives the outputs as numpy arrays.

    Raises:
      CompileError: when the compiler rejects the program and ``config.c_compile_errors``
        is ``"raise"``.

    >>> from functrax.passes.pipeline import optimize                 # doctest: +SKIP
    >>> prog = compile_c(optimize(functrax.make_jaxpr(f)(x)))         # doctest: +SKIP
    >>> prog.fallbacks                                                # doctest: +SKIP
    """
    closed, plan, steps = _prepare(closed, fusion_config)
    STATS["programs"] += 1
    kernels = [s.kernel for s in steps if s.kernel is not None]
    if kernels:
        tc = toolchain()
        if not tc.available:
            _warn_once("no-compiler", f"functrax C backend: {tc.reason}; programs run on the "
                       "numpy backend (set CC to a working C compiler)")
            return _on_numpy(closed, plan, donated, tc.reason)
        try:
            _link(steps, cache or default_cache())
        except CompileError as e:
            if config.c_compile_errors == "raise":
                raise
            by_name = {k.name: k for k in _with_deps(_roots(kernels))}
            unit = [by_name[n] for n in getattr(e, "unit_names", by_name) if n in by_name]
            name = _failed_kernel(str(e), unit)
            _warn_once(("compile", name), f"functrax C backend: compiling kernel {name} failed; "
                       f"the program runs on the numpy backend. {e}")
            return _on_numpy(closed, plan, donated, f"compile error in {name}: {e}")
        STATS["kernels"] += len(kernels)
    if _uses_blas(closed.jaxpr):
        for s in steps:
            s.single_thread = True
    program = CProgram(closed, plan, steps, donated)
    _dump(program)
    return program


def compile_many(closeds, *, cache: LibraryCache | None = None, per_library: int = 150,
                 fusion_config: FusionConfig | None = None) -> list:
    """Compile many programs with few compiler runs: their kernels (deduplicated) are split
    into translation units of ``per_library`` kernels, compiled in parallel, and each
    program then links against them (what a test suite or an ahead-of-time warm-up does).

    Returns:
      one :class:`CProgram` per ``ClosedJaxpr``.
    """
    cache = cache or default_cache()
    prepared = [_prepare(c, fusion_config) for c in closeds]
    tc = toolchain()
    if tc.available:
        todo = {}  # root kernel name -> the kernels its translation unit needs
        for _, _, steps in prepared:
            for s in steps:
                for k in _roots([s.kernel] if s.kernel is not None else []):
                    if k.name not in _LOADED:
                        todo.setdefault(k.name, _with_deps([k]))
        sources, part = [], {}
        for unit in list(todo.values()) + [None]:
            if unit is None or (part and len(part) + len(unit) > per_library):
                if part:
                    ks = list(part.values())
                    sources.append((PRELUDE + "\n" + "\n".join(k.text for k in ks),
                                    [k.name for k in ks]))
                part = {}
            for k in unit or ():
                part.setdefault(k.name, k)
        try:
            if sources:
                _load_libraries(sources, cache)
        except CompileError:
            pass  # each program below compiles alone and reports its own error
    return [compile_c(c, fusion_config=fusion_config, cache=cache) for c in closeds]
