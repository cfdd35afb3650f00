"""The backend registry: how an optimized ``ClosedJaxpr`` becomes an executable.

Each backend registers itself when its package is imported (``functrax/lowering/numpy``
registers ``"numpy"``, the default; ``functrax/lowering/triton`` registers ``"triton"``,
``functrax/lowering/c`` registers ``"c"``).
``jit(f, backend=name)`` looks the name up here and never branches on it; a new backend
registers itself and nothing else changes.

A backend gives two compilers, both ``(closed, donated=()) -> executable`` with
``executable.run(*arrays) -> list``:

- ``compile``: a top-level program (``jit``); its outputs may stay on a device;
- ``compile_host``: a program run from inside another one on host arrays (the body of a
  control-flow primitive, a nested ``jit`` that keeps its own backend).

A backend may also give ``compile_traced(closed, optimized, donated=())``: a top-level
program from the jaxpr as traced, ``optimized()`` giving it optimized when needed (the C
backend looks the traced program up in its disk cache first and skips the passes on a hit).
:func:`compile_traced` calls it, or ``compile(optimized(), donated)`` for a backend without.

>>> sorted(available_backends())
['c', 'numpy', 'triton']
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Callable

from functrax.config import config
from functrax.core import ClosedJaxpr, Jaxpr, sub_jaxprs
from functrax.passes.pipeline import optimize

__all__ = ["Backend", "DEFAULT_BACKEND", "register_backend", "get_backend", "compile_traced",
           "available_backends", "nested_backend", "host_executable"]

DEFAULT_BACKEND = "numpy"


@dataclass(frozen=True)
class Backend:
    """A registered backend: its name and its compilers (see the module doc)."""
    name: str
    compile: Callable
    compile_host: Callable
    compile_traced: Callable | None = None


_BACKENDS: dict = {}
_ALIASES: dict = {}  # another name of a backend (a platform: "cpu" is the numpy backend)


def register_backend(name: str, compile: Callable, compile_host: Callable | None = None, *,
                     aliases=(), compile_traced: Callable | None = None):
    """Register (or replace) the backend ``name`` (also reachable as each of ``aliases``);
    ``compile_host`` defaults to ``compile``."""
    _BACKENDS[name] = Backend(name, compile, compile_host or compile, compile_traced)
    _ALIASES.update(dict.fromkeys(aliases, name))


def compile_traced(name: str | None, closed: ClosedJaxpr, optimized: Callable, donated=()):
    """The executable of the traced ``closed`` on backend ``name``: its ``compile_traced``
    when it has one, else ``compile(optimized(), donated)`` (see the module doc)."""
    backend = get_backend(name)
    if backend.compile_traced is not None:
        return backend.compile_traced(closed, optimized, donated)
    return backend.compile(optimized(), donated=donated)


def available_backends() -> list:
    """The names of the registered backends."""
    return list(_BACKENDS)


def default_backend_name() -> str:
    """The backend of ``jit`` on the CPU when none is named: ``config.cpu_backend``
    (``"auto"``, ``"c"`` or ``"numpy"``), where registered, else ``"numpy"``."""
    name = config.cpu_backend
    return name if name in _BACKENDS else DEFAULT_BACKEND


def get_backend(name: str | None = None) -> Backend:
    """The backend registered as ``name`` or one of its aliases (None: the default,
    :func:`default_backend_name`).

    Raises:
      RuntimeError: for a name no backend registered, listing the available ones.
    """
    name = default_backend_name() if name is None else name
    backend = _BACKENDS.get(_ALIASES.get(name, name))
    if backend is None:
        names = sorted(set(_BACKENDS) | set(_ALIASES))
        raise RuntimeError(f"Unknown backend {name!r} for jit. Available backends: {names} "
                           f"(None: the default, {DEFAULT_BACKEND}).")
    return backend


def _named_backends(jaxpr, out: set) -> set:
    j = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
    for e in j.eqns:
        name = e.params.get("backend")
        if isinstance(name, str):
            out.add(name)
        for sub in sub_jaxprs(e.params):
            _named_backends(sub, out)
    return out


def nested_backend(jaxpr: Jaxpr | ClosedJaxpr) -> str | None:
    """The non-default backend that a ``jit(..., backend=name)`` called anywhere inside
    ``jaxpr`` (nested control flow and jits included) names, or None.

    A body calling ``jit(g, backend="triton")`` runs on that backend as a whole, so the nested
    jit keeps its backend after ``optimize`` inlines it.
    """
    names = {_ALIASES.get(n, n) for n in _named_backends(jaxpr, set())} - {DEFAULT_BACKEND}
    return min(names) if names else None


_HOST_EXECUTABLES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def host_executable(closed: ClosedJaxpr, backend: str | None = None):
    """``get_backend(backend).compile_host(optimize(closed))``, memoized per jaxpr object and
    backend (the rules of call-like and control-flow primitives run their sub-jaxprs with
    it)."""
    per = _HOST_EXECUTABLES.setdefault(closed, {})
    exe = per.get(backend)
    if exe is None:
        exe = per[backend] = get_backend(backend).compile_host(optimize(closed))
    return exe
