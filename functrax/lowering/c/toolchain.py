"""The system C compiler, found and probed once per process.

:func:`toolchain` looks for a compiler (``$CC``, then ``cc``, ``gcc``, ``clang`` on ``PATH``),
compiles a tiny shared library with it to check that it works, and records what the disk
cache keys on: the compiler's identity (the first line of ``--version``), the flags, and the
CPU's features (whether ``-march=native`` is accepted, a hash of ``/proc/cpuinfo``'s flags).
OpenMP (``-fopenmp``) is used when the probe links with it. A successful probe is remembered
in the library cache directory (a JSON record named by a hash of the compiler binary's path,
size and modification time, the base flags and the CPU's features), so a new process that
finds the same compiler skips compiling the probe programs.

The flags never relax IEEE semantics: no ``-ffast-math`` (NaN, Inf and signed zeros are
values), ``-ffp-contract=off`` (no fused multiply-add where numpy rounds twice);
``-fno-math-errno`` only drops ``errno`` updates and ``-fno-trapping-math`` only assumes no
floating-point trap is observed (so both sides of a select may be evaluated and loops with
selects vectorize); neither changes a value.

>>> tc = toolchain()            # doctest: +SKIP
>>> tc.available, tc.openmp     # doctest: +SKIP
(True, True)
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading

__all__ = ["Toolchain", "toolchain", "reset_toolchain", "BASE_FLAGS", "CompileError",
           "compile_shared"]

BASE_FLAGS = ("-O3", "-fPIC", "-shared", "-std=c11", "-fno-math-errno", "-fno-trapping-math",
              "-ffp-contract=off", "-fno-strict-aliasing")
_PROBE = "int functrax_probe(int x) { return x + 1; }\n"
_OMP_PROBE = ("#include <omp.h>\nint functrax_probe(int n) {\n  int s = 0;\n"
              "#pragma omp parallel for reduction(+:s)\n  for (int i = 0; i < n; i++) s += i;\n"
              "  return s + omp_get_max_threads();\n}\n")
_CANDIDATES = ("cc", "gcc", "clang")


class CompileError(RuntimeError):
    """The C compiler rejected a generated program (the message holds its output)."""


@dataclasses.dataclass(frozen=True)
class Toolchain:
    """A working (or missing) C compiler.

    Attributes:
      cc: the compiler's path (None when no working compiler was found).
      identity: the first line of ``cc --version``.
      flags: the flags every program is compiled with.
      openmp: whether ``-fopenmp`` works (then it is in ``flags``).
      cpu_features: ``-march=native`` when accepted, and a hash of the CPU's feature flags.
      reason: why no compiler is available (empty when one is).
    """

    cc: str | None
    identity: str = ""
    flags: tuple = ()
    openmp: bool = False
    cpu_features: str = ""
    reason: str = ""

    @property
    def available(self) -> bool:
        return self.cc is not None

    def key(self) -> str:
        """What a compiled library depends on besides its source."""
        return "\n".join((self.identity, " ".join(self.flags), self.cpu_features))


def _cpu_flags_hash() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return hashlib.sha256(line.split(":", 1)[-1].strip().encode()).hexdigest()[:16]
    except OSError:
        pass
    import platform
    return hashlib.sha256(platform.machine().encode()).hexdigest()[:16]


def _candidates():
    env = os.environ.get("CC")
    if env:
        yield env.split()[0] if os.path.isabs(env.split()[0]) else shutil.which(env.split()[0])
    for name in _CANDIDATES:
        yield shutil.which(name)


def compile_shared(cc: str, flags, source: str, out_path: str, timeout: float = 300.0):
    """Compile ``source`` into the shared library ``out_path``.

    Raises:
      CompileError: with the compiler's output when it fails.
    """
    with tempfile.TemporaryDirectory(prefix="functrax-cc-") as tmp:
        src = os.path.join(tmp, "k.c")
        with open(src, "w", encoding="utf-8") as f:
            f.write(source)
        cmd = [cc, *flags, src, "-o", out_path, "-lm"]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise CompileError(f"{cc} failed to run: {e}") from None
        if res.returncode != 0:
            raise CompileError(f"{cc} exited with status {res.returncode}:\n"
                               f"{(res.stderr or res.stdout).strip()[:4000]}")


def _works(cc: str, flags, source: str) -> bool:
    with tempfile.TemporaryDirectory(prefix="functrax-probe-") as tmp:
        try:
            compile_shared(cc, flags, source, os.path.join(tmp, "probe.so"), timeout=60)
        except CompileError:
            return False
        return True


def _identity(cc: str) -> str:
    try:
        res = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return os.path.basename(cc)
    lines = (res.stdout or res.stderr).strip().splitlines()
    return lines[0] if lines else os.path.basename(cc)


def default_cache_dir() -> str:
    """``$FUNCTRAX_CACHE_DIR/c``, or ``~/.cache/functrax/c``: the compiled libraries and the
    compiler probe's record."""
    root = os.environ.get("FUNCTRAX_CACHE_DIR")
    if root:
        return os.path.join(root, "c")
    return os.path.join(os.path.expanduser("~"), ".cache", "functrax", "c")


def _probe_record(cc: str) -> str | None:
    """Where the probe of ``cc`` is remembered: a file named by a hash of the compiler
    binary (path, size, modification time), the base flags and the CPU's features; None
    when ``cc`` cannot be read."""
    try:
        st = os.stat(os.path.realpath(cc))
    except OSError:
        return None
    key = "\n".join((cc, os.path.realpath(cc), str(st.st_size), str(st.st_mtime_ns),
                     " ".join(BASE_FLAGS), _cpu_flags_hash()))
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    return os.path.join(default_cache_dir(), f"toolchain-{digest}.json")


def _load_probe(cc: str) -> Toolchain | None:
    """The remembered probe of ``cc`` (a new process skips compiling the probe programs)."""
    path = _probe_record(cc)
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        return Toolchain(d["cc"], d["identity"], tuple(d["flags"]), d["openmp"],
                         d["cpu_features"])
    except (OSError, TypeError, ValueError, KeyError):
        return None


def _save_probe(tc: Toolchain) -> None:
    path = _probe_record(tc.cc)
    if path is None:
        return
    d = dict(cc=tc.cc, identity=tc.identity, flags=list(tc.flags), openmp=tc.openmp,
             cpu_features=tc.cpu_features)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(d, f)
        os.replace(tmp, path)  # atomic: a reader sees the old record or the new one
    except OSError:
        pass  # a read-only cache: probe again next time


def _probe() -> Toolchain:
    tried = []
    for cc in _candidates():
        if not cc or cc in tried:
            continue
        tried.append(cc)
        known = _load_probe(cc)
        if known is not None:
            return known
        tc = _probe_compiler(cc)
        if tc is not None:
            _save_probe(tc)
            return tc
    where = ", ".join(tried) if tried else "none of $CC, cc, gcc, clang on PATH"
    return Toolchain(None, reason=f"no working C compiler (tried: {where})")


def _probe_compiler(cc: str) -> Toolchain | None:
    """Compile the probe programs with ``cc``: its flags, or None when it does not work.
    The common case (``-march=native`` and OpenMP both work) costs one compile; otherwise
    each feature is tried on its own."""
    best = [*BASE_FLAGS, "-march=native", "-fopenmp"]
    if _works(cc, best, _OMP_PROBE):
        return Toolchain(cc, _identity(cc), tuple(best), True, "native " + _cpu_flags_hash())
    if not _works(cc, BASE_FLAGS, _PROBE):
        return None
    flags = list(BASE_FLAGS)
    native = _works(cc, flags + ["-march=native"], _PROBE)
    if native:
        flags.append("-march=native")
    openmp = _works(cc, flags + ["-fopenmp"], _OMP_PROBE)
    flags.append("-fopenmp" if openmp else "-fopenmp-simd")
    if not openmp and not _works(cc, flags, _PROBE):
        flags.pop()
    features = ("native " if native else "") + _cpu_flags_hash()
    return Toolchain(cc, _identity(cc), tuple(flags), openmp, features)


_LOCK = threading.Lock()
_TOOLCHAIN: list = []


def toolchain() -> Toolchain:
    """The process's :class:`Toolchain` (probed on the first call, then cached)."""
    with _LOCK:
        if not _TOOLCHAIN:
            _TOOLCHAIN.append(_probe())
        return _TOOLCHAIN[0]


def reset_toolchain():
    """Forget the probed compiler (the next :func:`toolchain` call probes again)."""
    with _LOCK:
        _TOOLCHAIN.clear()
