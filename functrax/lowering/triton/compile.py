"""Ahead-of-time compilation of generated kernels to PTX and a cubin for sm_90 (H100/H200).

Needs no GPU: ``triton.compile`` runs Triton's front end, MLIR passes, LLVM and ``ptxas`` on
the CPU. Results are memoized per (kernel text, signature, constexprs, options) in-process
(``stats`` counts real compiles); Triton also keeps its own on-disk cache.

A process whose triton was imported with ``TRITON_INTERPRET=1`` cannot compile kernels that
call Triton's library functions (``tl.sum``, ``tl.max``, ...): those were created as
interpreter functions. Such a process compiles in one child Python process per batch
(``compile_many``; one per core for big batches), with the interpreter off; otherwise
compilation runs in-process.
This file runs as that child's script, so it imports nothing from functrax at top level.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import importlib.util
import inspect
import os
import pickle
import subprocess
import sys
import threading

__all__ = ["CompiledKernel", "compile_for_sm90", "compile_many", "compile_source", "stats"]

stats = {"compiles": 0, "hits": 0, "subprocesses": 0}
_MEMO: dict = {}
_LOCK = threading.Lock()
TARGET = ("cuda", 90, 32)


@dataclasses.dataclass(frozen=True)
class CompiledKernel:
    """A kernel compiled for one GPU target.

    Attributes:
      name: the kernel's symbol in the cubin.
      ptx: the PTX text.
      cubin: the cubin bytes (load with cuModuleLoadData / cuda-core).
      num_warps: the launch's block is ``32 * num_warps`` threads.
      shared: dynamic shared memory bytes the launch must provide.
      target: ``"cuda:90"``.
    """

    name: str
    ptx: str
    cubin: bytes
    num_warps: int
    shared: int
    target: str


@dataclasses.dataclass(frozen=True)
class _Job:
    path: str        # the kernel's module file
    fn_name: str
    signature: tuple
    constexprs: tuple
    num_warps: int
    aligned: bool
    text: str        # the kernel function's source (the memo key)

    @property
    def key(self) -> str:
        return hashlib.sha256(repr((self.text, self.signature, self.constexprs,
                                    self.num_warps, self.aligned)).encode()).hexdigest()


def _make_job(src_fn, signature, constexprs, num_warps, aligned) -> _Job:
    raw = getattr(src_fn, "fn", src_fn)  # a JITFunction / InterpretedFunction wraps .fn
    return _Job(inspect.getsourcefile(raw), raw.__name__, tuple(signature.items()),
                tuple(sorted(constexprs.items())), int(num_warps), bool(aligned),
                inspect.getsource(raw))


def _compile_job(job: _Job, fn=None) -> CompiledKernel:
    """Compile in this process (``fn``: the JITFunction, else imported from ``job.path``)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction

    if fn is None:
        spec = importlib.util.spec_from_file_location(f"_functrax_aot_{job.fn_name}", job.path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        fn = getattr(module, job.fn_name)
    if not isinstance(fn, JITFunction):
        fn = JITFunction(getattr(fn, "fn", fn))
    signature = dict(job.signature)
    names = list(signature)
    attrs = {(names.index(p),): [["tt.divisibility", 16]]
             for p, t in signature.items() if job.aligned and t.startswith("*")}
    src = ASTSource(fn, signature, dict(job.constexprs), attrs)
    out = triton.compile(src, target=GPUTarget(*TARGET),
                         options={"num_warps": job.num_warps, "enable_fp_fusion": True})
    md = out.metadata
    return CompiledKernel(md.name, out.asm["ptx"], bytes(out.asm["cubin"]), md.num_warps,
                          md.shared, f"{TARGET[0]}:{TARGET[1]}")


def _can_compile_here() -> bool:
    import triton.language as tl
    from triton.runtime.jit import JITFunction
    return isinstance(tl.sum, JITFunction)


def _compile_in_children(jobs: list) -> list:
    """Compile ``jobs`` in child processes, up to one per CPU core (8 jobs or more each)."""
    n = max(1, min(os.cpu_count() or 1, len(jobs) // 8))
    if n == 1:
        return _compile_in_child(jobs)
    chunks = [jobs[i::n] for i in range(n)]
    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        parts = list(pool.map(_compile_in_child, chunks))
    out = [None] * len(jobs)
    for i, part in enumerate(parts):
        out[i::n] = part
    return out


def _compile_in_child(jobs: list) -> list:
    # kernel files may import functrax: the child finds it where this process did
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, TRITON_INTERPRET="0", PYTHONPATH=path)
    payload = pickle.dumps([dataclasses.asdict(j) for j in jobs])
    proc = subprocess.run([sys.executable, os.path.abspath(__file__)], input=payload,
                          capture_output=True, env=env, check=False)
    with _LOCK:
        stats["subprocesses"] += 1
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace")[-4000:]
        raise RuntimeError(f"the Triton compiler process failed (exit {proc.returncode}):\n"
                           f"{tail}")
    return [o if isinstance(o, str) else CompiledKernel(**o) for o in pickle.loads(proc.stdout)]


def compile_many(calls) -> list:
    """Compile several kernels: ``calls`` holds ``(src_fn, signature, constexprs, num_warps)``
    tuples; returns their :class:`CompiledKernel` s (one child process for all misses).

    Raises:
      RuntimeError: naming the kernel when Triton rejects it.
    """
    jobs = [(_make_job(fn, sig, cx, nw, True), fn) for fn, sig, cx, nw in calls]
    results: dict = {}
    todo: dict = {}
    with _LOCK:
        for job, fn in jobs:
            hit = _MEMO.get(job.key)
            if hit is not None:
                stats["hits"] += 1
                results[job.key] = hit
            else:
                todo.setdefault(job.key, (job, fn))
    if todo:
        pending = list(todo.values())
        if _can_compile_here():
            outs = [_run(lambda j=j, f=f: _compile_job(j, f)) for j, f in pending]
        else:
            outs = _compile_in_children([j for j, _ in pending])
        with _LOCK:
            for (job, _), out in zip(pending, outs):
                if isinstance(out, str):
                    raise RuntimeError(f"compiling Triton kernel '{job.fn_name}' for sm_90 "
                                       f"failed:\n{out}")
                _MEMO[job.key] = results[job.key] = out
                stats["compiles"] += 1
    return [results[job.key] for job, _ in jobs]


def _run(thunk):
    """The thunk's result, or its error as text (so one bad kernel names itself)."""
    try:
        return thunk()
    except Exception as e:  # noqa: BLE001 - reported per kernel by compile_many
        return f"{type(e).__name__}: {e}"


def compile_for_sm90(src_fn, signature: dict, constexprs: dict, *, num_warps: int = 4,
                     aligned: bool = True) -> CompiledKernel:
    """Compile a ``@triton.jit`` kernel for ``GPUTarget("cuda", 90, 32)``.

    Args:
      src_fn: the kernel (a JITFunction, the interpreter's wrapper, or its Python function),
        defined in a file.
      signature: parameter name -> type (``"*fp32"``, ``"i32"``, ``"constexpr"``), in
        parameter order.
      constexprs: values of the ``tl.constexpr`` parameters.
      num_warps: warps per program.
      aligned: promise 16-byte aligned pointer arguments (cudaMalloc'd buffers are), which
        lets Triton vectorize loads and stores.

    Returns:
      a :class:`CompiledKernel` with the PTX and the cubin.
    """
    if not aligned:
        job = _make_job(src_fn, signature, constexprs, num_warps, False)
        if not _can_compile_here():
            out = _compile_in_child([job])[0]
        else:
            out = _run(lambda: _compile_job(job, src_fn))
        if isinstance(out, str):
            raise RuntimeError(f"compiling Triton kernel '{job.fn_name}' for sm_90 failed:\n"
                               f"{out}")
        return out
    return compile_many([(src_fn, signature, constexprs, num_warps)])[0]


def compile_source(source, fn) -> CompiledKernel:
    """Compile a generated kernel (``codegen.KernelSource`` + its imported function)."""
    return compile_for_sm90(fn, source.signature, source.constexprs,
                            num_warps=source.num_warps)


def _child_main():
    jobs = [_Job(**d) for d in pickle.loads(sys.stdin.buffer.read())]
    outs = [_run(lambda j=j: dataclasses.asdict(_compile_job(j))) for j in jobs]
    sys.stdout.buffer.write(pickle.dumps(outs))


if __name__ == "__main__":
    _child_main()
