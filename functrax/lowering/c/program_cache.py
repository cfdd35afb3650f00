"""Compiled C programs on disk, keyed by the traced program: a new process skips the work.

The library cache (``cache``) spares a new process the C compiler, but not the passes, the
fusion planner and the code generator (about 15 ms for an MLP training step). This cache
records what running a compiled program needs, keyed by the program as traced, so that a
new process tracing the same function on the same types loads it directly:

- the key: sha256 of the traced ``ClosedJaxpr``'s :func:`~functrax.core.fingerprint.fingerprint`
  (None: not cached), the trace-context flags, the toolchain (compiler, flags, CPU), the BLAS
  numpy ships, numpy's version and the functrax code (the size and modification time of
  every file of the package, read once per process);
- the entry: ``programs/<key>.json`` (each step's kernel, the library file holding it, the
  functions it calls through their addresses, its scratch sizes, which values it reads and
  writes; the program's inputs and outputs and their types) and ``programs/<key>.npz`` (the
  constants, as raw bytes read back with ``allow_pickle=False``), both written to temporary
  files and renamed into place, the JSON last: an entry without its JSON does not exist.

Only programs whose every group is a C kernel are recorded (a numpy fallback needs the
jaxpr). A loaded program checks its input and output types against the traced program's,
and any missing or unreadable part (a library file deleted, a truncated record) makes the
lookup a miss: the program compiles as if the entry were not there and replaces it.
``as_text()`` and ``cost_analysis()`` of a loaded program optimize and plan the jaxpr again
on demand (the same text: code generation is deterministic). ``config.c_dump_dir`` and
``config.c_program_cache = False`` bypass the cache.

>>> import functrax, functrax.numpy as fnp                     # doctest: +SKIP
>>> f = functrax.jit(lambda x: fnp.tanh(x) @ x, backend="c")   # doctest: +SKIP
>>> f(fnp.ones((64, 64)))   # a second process: loaded, no passes, no compiler  # doctest: +SKIP
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import threading
import zipfile

import numpy as np

from functrax import dtypes
from functrax.config import config
from functrax.core import Literal, ShapedArray, Var
from functrax.core.fingerprint import fingerprint
from functrax.lowering.c import backend as _backend
from functrax.lowering.c.blas import blas_functions
from functrax.lowering.c.cache import LibraryCache, default_cache
from functrax.lowering.c.codegen import KernelSource
from functrax.lowering.c.toolchain import toolchain
from functrax.lowering.fusion.types import FusionGroup, GroupKind

__all__ = ["program_key", "load", "save", "compile_traced", "code_version", "warm_up", "STATS"]

FORMAT = 1
STATS = {"hits": 0, "misses": 0, "stores": 0, "uncacheable": 0}

_CODE: list = []
_CODE_LOCK = threading.Lock()


def code_version() -> str:
    """A hash of the functrax code on disk (every file's path, size and modification time),
    computed once per process."""
    with _CODE_LOCK:
        if not _CODE:
            root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
                __file__))))
            h = hashlib.sha256(f"{sys.version}\n{np.__version__}".encode())
            stack = [root]
            while stack:
                d = stack.pop()
                with os.scandir(d) as it:
                    entries = sorted(it, key=lambda e: e.name)
                for e in entries:
                    if e.is_dir(follow_symlinks=False):
                        if e.name != "__pycache__":
                            stack.append(e.path)
                    elif e.name.endswith((".py", ".c", ".h")):
                        st = e.stat()
                        h.update(f"{e.path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
            _CODE.append(h.hexdigest())
        return _CODE[0]


def warm_up():
    """Compute what every key needs, so that the first lookup costs only the program's
    fingerprint: the code's hash now (about 1.5 ms of ``stat`` calls: on a thread, each
    call would wait for the importing thread to release the interpreter), the toolchain's
    record (or the compiler's probe, once per machine) and numpy's BLAS on a daemon thread
    while the process goes on importing and tracing."""
    code_version()

    def run():
        try:
            toolchain()
            blas_functions()
        except Exception:  # noqa: BLE001 (the first lookup computes them again, and reports)
            pass
    threading.Thread(target=run, name="functrax-c-cache-warm-up", daemon=True).start()


def _enabled() -> bool:
    return bool(config.c_program_cache) and not config.c_dump_dir


def program_key(closed) -> str | None:
    """The cache key of the traced ``closed`` (None: not cacheable, or no compiler)."""
    if not _enabled():
        return None
    tc = toolchain()
    if not tc.available:
        return None
    fp = fingerprint(closed)
    if fp is None:
        STATS["uncacheable"] += 1
        return None
    b = blas_functions()
    parts = (str(FORMAT), code_version(), tc.key(), repr(config.trace_context()),
             f"blas {bool(b.sgemm)} {bool(b.dgemm)} {b.ilp64}", fp)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _directory(cache: LibraryCache) -> str:
    return os.path.join(cache.directory, "programs")


def _aval_record(aval) -> list:
    return [list(aval.shape), str(aval.dtype), bool(aval.weak_type)]


def _dtype(name: str) -> np.dtype:
    if name == "bfloat16" and dtypes.bfloat16 is not None:
        return np.dtype(dtypes.bfloat16)
    return np.dtype(name)


# --- writing ---


class _Consts:
    """The arrays of an entry, numbered, with their shape and dtype."""

    def __init__(self):
        self.arrays, self.meta = {}, []

    def add(self, a) -> int:
        a = np.asarray(a)
        if not isinstance(a.dtype, np.dtype) or a.dtype.hasobject:
            raise TypeError(a.dtype)
        i = len(self.meta)
        self.meta.append([list(a.shape), str(a.dtype)])
        self.arrays[f"c{i}"] = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
        return i


def _record(program) -> tuple:
    """``(record, consts)`` of a ``CProgram`` whose every step is a C kernel."""
    consts, index = _Consts(), {}
    cv = []
    for v, c in zip(program._constvars, program._consts):
        index[v] = len(index)
        cv.append([index[v], consts.add(c), _aval_record(v.aval)])
    iv = []
    for v in program._invars:
        index[v] = len(index)
        iv.append([index[v], _aval_record(v.aval)])
    steps = []
    for s in program.steps:
        k = s.kernel
        outs = []
        for v in s._outs:
            index[v] = len(index)
            outs.append([index[v], _aval_record(v.aval)])
        steps.append(dict(
            kernel=k.name, lib=_backend.library_of(k.name),
            callees=[[c.name, _backend.library_of(c.name)] for c in k.callees],
            scratch=list(k.scratch), work=int(k.work), single_thread=bool(s.single_thread),
            ins=[index[v] for v in s._ins], outs=outs,
            consts=[consts.add(c) for c in s._consts_keep]))
    outvars = []
    for v in program._outvars:
        if type(v) is Literal:
            outvars.append(["l", consts.add(np.asarray(v.val, v.aval.dtype)),
                            _aval_record(v.aval)])
        else:
            outvars.append(["v", index[v]])
    record = dict(format=FORMAT, constvars=cv, invars=iv, steps=steps, outvars=outvars,
                  out_avals=[_aval_record(a) for a in program.out_avals],
                  consts=consts.meta)
    return record, consts.arrays


def _write_atomic(path: str, write):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp_")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def save(key: str, program, cache: LibraryCache | None = None) -> bool:
    """Record ``program`` (a ``CProgram``) under ``key``; False when it is not recordable
    (a numpy fallback, the whole program on numpy) or the directory is not writable."""
    if program.on_numpy or program.fallbacks or not program.steps:
        return False
    cache = cache or default_cache()
    try:
        record, arrays = _record(program)
    except (KeyError, TypeError, AttributeError):
        return False
    libs = {st["lib"] for st in record["steps"]} | {
        lib for st in record["steps"] for _, lib in st["callees"]}
    if not all(os.path.exists(os.path.join(cache.directory, lib)) for lib in libs):
        return False  # kernels this process loaded from another cache directory
    directory = _directory(cache)
    try:
        os.makedirs(directory, exist_ok=True)
        if arrays:
            _write_atomic(os.path.join(directory, f"{key}.npz"),
                          lambda f: np.savez(f, **arrays))
        text = json.dumps(record, separators=(",", ":")).encode()
        _write_atomic(os.path.join(directory, f"{key}.json"), lambda f: f.write(text))
    except OSError:
        return False
    STATS["stores"] += 1
    return True


# --- reading ---


class CachedProgram(_backend.CProgram):
    """A ``CProgram`` loaded from the program cache: it runs as the compiled one;
    ``jaxpr``, ``plan``, ``kernels`` and ``source`` are computed again when first read."""

    def __init__(self, steps, consts, constvars, invars, outvars, out_avals, donated,
                 optimized):
        self.steps = tuple(steps)
        self.fallbacks = ()
        self.out_avals = out_avals
        self.donated = tuple(sorted(set(donated)))
        self._numpy = None
        self._consts = consts
        self._constvars, self._invars, self._outvars = constvars, invars, outvars
        self._optimized = optimized
        self._described = None

    def _description(self):
        if self._described is None:
            closed, plan, steps = _backend._prepare(self._optimized(), None)
            kernels = tuple(s.kernel for s in steps if s.kernel is not None)
            self._described = (closed, plan, kernels, _backend.program_source(kernels))
        return self._described

    jaxpr = property(lambda self: self._description()[0])
    plan = property(lambda self: self._description()[1])
    kernels = property(lambda self: self._description()[2])
    source = property(lambda self: self._description()[3])

    def __repr__(self):
        return f"CProgram({len(self.steps)} steps, from the program cache)"


def _read(key: str, cache: LibraryCache):
    directory = _directory(cache)
    try:
        with open(os.path.join(directory, f"{key}.json"), "rb") as f:
            record = json.loads(f.read())
    except (OSError, ValueError):
        return None, None
    arrays = {}
    if record.get("consts"):
        try:
            with np.load(os.path.join(directory, f"{key}.npz"), allow_pickle=False) as z:
                for i, (shape, dt) in enumerate(record["consts"]):
                    arrays[i] = z[f"c{i}"].view(_dtype(dt)).reshape(shape)
        except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile):
            return None, None
    return record, arrays


def _avals_match(records, avals) -> bool:
    return len(records) == len(avals) and all(
        r == _aval_record(a) for r, a in zip(records, avals))


def _aval(r) -> ShapedArray:
    return ShapedArray(tuple(r[0]), _dtype(r[1]), r[2])


def _kernel(name, ins, outs, work=0, scratch=(), callees=()) -> KernelSource:
    """The calling interface of a loaded kernel (its text is not needed to run it)."""
    return KernelSource(name, "", GroupKind.OPAQUE, tuple(v.aval for v in ins),
                        tuple(v.aval for v in outs), work, (), tuple(scratch), tuple(callees))


def load(key: str, closed, optimized, donated=(), cache: LibraryCache | None = None):
    """The program recorded under ``key`` (for the traced ``closed``; ``optimized()`` gives
    its optimized jaxpr when inspected), or None (a miss)."""
    cache = cache or default_cache()
    record, arrays = _read(key, cache)
    if record is None:
        return None
    try:
        if (record["format"] != FORMAT
                or not _avals_match([r[1] for r in record["invars"]], closed.in_avals)
                or not _avals_match(record["out_avals"], closed.out_avals)):
            return None
        libraries = {}
        for st in record["steps"]:
            for name, lib in [[st["kernel"], st["lib"]], *st["callees"]]:
                loaded = cache.load_file(lib)
                if loaded is None:
                    return None
                libraries[name] = loaded
        vars_ = {}
        constvars, consts = [], []
        for i, c, r in record["constvars"]:
            vars_[i] = Var(_aval(r))
            constvars.append(vars_[i])
            consts.append(arrays[c])
        invars = []
        for i, r in record["invars"]:
            vars_[i] = Var(_aval(r))
            invars.append(vars_[i])
        steps = []
        for st in record["steps"]:
            ins = [vars_[i] for i in st["ins"]]
            outs = []
            for i, r in st["outs"]:
                vars_[i] = Var(_aval(r))
                outs.append(vars_[i])
            callees = [_kernel(name, (), ()) for name, _ in st["callees"]]
            kernel = _kernel(st["kernel"], ins, outs, st["work"], st["scratch"], callees)
            step = _backend.Step(FusionGroup(GroupKind.OPAQUE, (), tuple(ins), tuple(outs)),
                                 kernel=kernel, consts=tuple(arrays[c] for c in st["consts"]))
            step.single_thread = st["single_thread"]
            steps.append(step)
        outvars = []
        for o in record["outvars"]:
            outvars.append(vars_[o[1]] if o[0] == "v" else Literal(arrays[o[1]], _aval(o[2])))
        _backend.bind_loaded(steps, libraries)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, OSError):
        return None
    return CachedProgram(steps, consts, tuple(constvars), tuple(invars), tuple(outvars),
                         list(closed.out_avals), donated, optimized)


def compile_traced(closed, optimized, donated=()):
    """The ``"c"`` backend's compiler of a traced program: the recorded program when the
    cache has it, else ``compile_c(optimized(), donated)`` (recorded for the next process)."""
    key = program_key(closed)
    if key is not None:
        program = load(key, closed, optimized, donated)
        if program is not None:
            STATS["hits"] += 1
            return program
        STATS["misses"] += 1
    program = _backend.compile_c(optimized(), donated)
    if key is not None:
        save(key, program)
    return program
