"""The default CPU backend (``"auto"``): the numpy executor at once, the C program when ready.

``jit(f)`` on the CPU compiles its program twice: the numpy executor (milliseconds) serves
the first calls while the C backend's program (:func:`functrax.lowering.c.backend.compile_c`:
code generation and the system C compiler, or a load from the disk cache) is built on one
background thread; the first call after it is ready switches to it for good. Without a
working compiler, or when the compiler rejects the program, the numpy executor stays (a
compile error warns once, as on the C backend; ``config.c_compile_errors = "raise"`` makes
the next call raise it).

``config.cpu_backend`` chooses: ``"auto"`` (this), ``"c"`` (the C program from the first
call: the call waits for the compiler) or ``"numpy"``. The two executors agree to the
tolerances of the C backend's numerics (transcendentals within 2 ulp, reductions summed in
another order), not bit for bit: a run that must repeat bit for bit across processes sets
``"c"`` or ``"numpy"``.

A tiny program (no loop, fewer than ``C_MIN_EQNS`` equations and ``C_MIN_ELEMENTS``
elements computed) stays on the numpy executor, which runs it faster than a C call (about
0.7 against 7 microseconds for ``x * 2 + 1`` on 8 floats); nothing is compiled for it.

Programs compile one after another on one daemon thread, so a notebook defining many jitted
functions never runs many compilers at once, and exiting never waits for a compile.

>>> import functrax, functrax.numpy as fnp
>>> f = functrax.jit(lambda x: fnp.tanh(x) * 2.0)
>>> exe = f.lower(fnp.ones(4)).compile()._entry.exe   # on the CPU: a TieredProgram
>>> exe.wait() is not None                           # block until the C program is ready
True
"""
from __future__ import annotations

import math
import queue
import threading
import time
import weakref

from functrax.core import Family
from functrax.lowering.c import program_cache
from functrax.lowering.c.backend import compile_c
from functrax.lowering.c.toolchain import toolchain
from functrax.lowering.numpy.executor import compile_jaxpr

__all__ = ["TieredProgram", "compile_tiered", "compile_tiered_traced"]

_QUEUE: "queue.SimpleQueue" = queue.SimpleQueue()
_WORKER: list = []
_WORKER_LOCK = threading.Lock()


def _worker():
    while True:
        ref = _QUEUE.get()
        program = ref()
        if program is not None:
            program._build()
            del program


def _submit(program):
    with _WORKER_LOCK:
        if not _WORKER:
            t = threading.Thread(target=_worker, name="functrax-c-compiler", daemon=True)
            t.start()
            _WORKER.append(t)
    _QUEUE.put(weakref.ref(program))


class TieredProgram:
    """A program run by the numpy executor until its C program is ready.

    Attributes:
      numpy: the numpy executor (``compile_jaxpr``).
      first_call_s / ready_s: seconds from creation to the first call / to the C program
        being ready (None until then).
    """

    def __init__(self, closed, donated=(), compile_fn=None, on_built=None):
        self._jaxpr = closed
        self.donated = tuple(sorted(set(donated)))
        self.numpy = compile_jaxpr(closed, donated)
        self.out_avals = self.numpy.out_avals
        self._compile_fn = compile_fn or (lambda: compile_c(closed, self.donated))
        self._on_built = on_built
        self._exe = None  # the executor every call uses once decided
        self._c = None
        self._error = None
        self._done = threading.Event()
        self._started = False
        self._lock = threading.Lock()
        self._t0 = time.perf_counter()
        self.first_call_s = self.ready_s = None
        self._skip = compile_fn is None and not worth_compiling(closed.jaxpr)

    @classmethod
    def ready(cls, program):
        """A TieredProgram on ``program`` (a ``CProgram`` loaded from the program cache)
        from the first call: no numpy executor, nothing to compile."""
        self = cls.__new__(cls)
        self._jaxpr, self.donated, self.numpy = None, program.donated, None
        self.out_avals = program.out_avals
        self._compile_fn = self._on_built = None
        self._exe = self._c = program
        self._error, self._done, self._started = None, threading.Event(), True
        self._done.set()
        self._lock = threading.Lock()
        self._t0 = time.perf_counter()
        self.first_call_s, self.ready_s, self._skip = None, 0.0, False
        return self

    @property
    def jaxpr(self):
        """The optimized jaxpr it runs."""
        return self._jaxpr if self._jaxpr is not None else self._c.jaxpr

    def _start(self):
        with self._lock:
            if self._started:
                return
            self._started = True
        if self._skip:  # tiny: the numpy executor is faster than any C call
            self._done.set()
            return
        _submit(self)

    def _build(self):
        try:
            tc = toolchain()  # no compiler: numpy, silently (the normal case on such machines)
            self._c = self._compile_fn() if tc.available else None
            if self._c is not None and self._on_built is not None:
                self._on_built(self._c)
        except BaseException as e:  # noqa: BLE001 (kept, raised by the next call)
            self._error = e
        self.ready_s = time.perf_counter() - self._t0
        self._done.set()

    def wait(self, timeout: float | None = None):
        """Block until the C program is built (starting it if needed); returns it (a
        ``CProgram``, possibly running on numpy; the numpy executor when no compiler works)
        or None on timeout. Raises the compile error when ``config.c_compile_errors`` is
        ``"raise"``."""
        self._start()
        if not self._done.wait(timeout):
            return None
        if self._error is not None:
            raise self._error
        return self.numpy if self._c is None else self._c

    def _executor(self):
        exe = self._exe
        if exe is not None:
            return exe
        if self.first_call_s is None:
            self.first_call_s = time.perf_counter() - self._t0
            self._start()
        if not self._done.is_set():
            return self.numpy
        if self._error is not None:
            err, self._error = self._error, None
            self._exe = self.numpy
            raise err
        self._exe = self.numpy if self._c is None or self._c.on_numpy else self._c
        return self._exe

    @property
    def on_c(self) -> bool:
        """Whether calls now run the C program."""
        return self._exe is not None and self._exe is self._c

    def run(self, *args) -> list:
        return self._executor().run(*args)

    __call__ = run

    def run_consuming(self, args: list):
        return self._executor().run_consuming(args)

    # inspection: the C program's (waits for it)
    def as_text(self) -> str:
        exe = self.wait()
        if exe is self.numpy:
            why = ("a tiny program: the numpy executor beats a C call" if self._skip
                   else "no working C compiler")
            return f"# jaxpr\n{self.jaxpr}\n\n# numpy executor ({why})"
        return exe.as_text()

    def cost_analysis(self) -> dict:
        from functrax.lowering.cost import cost_analysis
        return cost_analysis(self.jaxpr)

    @property
    def fallbacks(self) -> tuple:
        """The C program's numpy fallbacks (waits for it; () without a compiler)."""
        exe = self.wait()
        return () if exe is self.numpy else exe.fallbacks

    def __repr__(self):
        state = "on C" if self.on_c else ("compiling" if self._started and not
                                          self._done.is_set() else "on numpy")
        return f"TieredProgram({state})"


# a program runs in C when it has a loop, this many equations, or this many elements
# computed: below, the numpy executor's ~0.5 us per equation beats a C call's ~7 us
C_MIN_EQNS = 12
C_MIN_ELEMENTS = 1 << 14


def worth_compiling(jaxpr) -> bool:
    """Whether the C program can beat the numpy executor on ``jaxpr`` (see above)."""
    if len(jaxpr.eqns) >= C_MIN_EQNS:
        return True
    total = 0
    for e in jaxpr.eqns:
        if e.primitive.family in (Family.CONTROL_FLOW, Family.CONTRACTION,
                                  Family.CONVOLUTION):
            return True
        total += sum(math.prod(v.aval.shape) for v in e.outvars if hasattr(v.aval, "shape"))
    return total >= C_MIN_ELEMENTS


def compile_tiered(closed, donated=()):
    """The ``"auto"`` backend's compiler: a :class:`TieredProgram`."""
    return TieredProgram(closed, donated)


def compile_tiered_traced(closed, optimized, donated=()):
    """The ``"auto"`` backend's compiler of a traced program: the C program at once when
    the program cache has it, else a :class:`TieredProgram` whose C program, once built,
    is recorded for the next process."""
    if not worth_compiling(closed.jaxpr):
        return TieredProgram(optimized(), donated)
    key = program_cache.program_key(closed)
    if key is not None:
        program = program_cache.load(key, closed, optimized, donated)
        if program is not None:
            program_cache.STATS["hits"] += 1
            return TieredProgram.ready(program)
        program_cache.STATS["misses"] += 1
    on_built = None if key is None else (lambda p: program_cache.save(key, p))
    return TieredProgram(optimized(), donated, on_built=on_built)
