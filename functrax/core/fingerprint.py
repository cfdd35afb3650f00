"""A stable fingerprint of a jaxpr: equal for the same program traced in another process.

:func:`fingerprint` hashes what a compiled program depends on: every equation's primitive,
its operands (variables numbered by first appearance, literals by value and type), its
outputs' types and its params (sub-jaxprs recursively), the constants' bytes and the types
of the inputs. Names, debug info and object identities are left out, so tracing the same
function on the same types in a new process gives the same fingerprint; any difference a
program's result could depend on gives another.

The params only a transform reads (``transform_only_params``: the Python rules of
``custom_jvp``/``custom_vjp``) are left out: compiling the equation never calls them.
Any other param with no stable value (a Python callable, an object of an unknown class) or a
primitive without a family (a user's primitive, whose rules may change between processes)
makes the jaxpr unfingerprintable: :func:`fingerprint` returns None and a persistent cache
keyed by it (the C backend's program cache) is not used for that program.

>>> import functrax, functrax.numpy as fnp
>>> f = lambda x: fnp.sin(x) * 2.0
>>> a = fingerprint(functrax.make_jaxpr(f)(1.0))
>>> a == fingerprint(functrax.make_jaxpr(f)(1.0)), len(a)
(True, 64)
>>> a == fingerprint(functrax.make_jaxpr(lambda x: fnp.sin(x) * 3.0)(1.0))
False
"""
from __future__ import annotations

import dataclasses
import enum
import hashlib

import numpy as np

from functrax import dtypes
from functrax.core.array import Array
from functrax.core.jaxpr import ClosedJaxpr, Jaxpr, Literal

__all__ = ["fingerprint", "transform_only_params"]

# primitive -> names of its params that only a transform reads (a custom derivative's rules:
# Python functions): evaluating or compiling the equation never calls them, so a fingerprint
# leaves them out (registered where the primitive is defined)
transform_only_params: dict = {}


class _Unstable(Exception):
    """A value with no text that is the same in every process."""


_SCALARS = (bool, int, float, complex, str, type(None))


def _array(x) -> str:
    a = np.ascontiguousarray(x)
    if a.dtype.hasobject:
        raise _Unstable(a.dtype)
    return f"A{a.dtype.str}{a.shape}{hashlib.sha256(a.view(np.uint8).data).hexdigest()}"


_DTYPE_TEXT: dict = {}  # dtype -> its name (numpy's str(dtype) is slow)


def _aval(aval) -> str:
    shape = getattr(aval, "shape", None)
    if shape is None:
        return type(aval).__name__
    dt = aval.dtype
    name = _DTYPE_TEXT.get(dt)
    if name is None:
        name = _DTYPE_TEXT[dt] = str(dt)
    return f"{name}{shape}{'w' if aval.weak_type else ''}"


def _value(v, out: list):
    """Append the stable text of a param value to ``out``."""
    t = type(v)
    if t in _SCALARS:
        out.append(f"{t.__name__}:{v!r}")
    elif t is tuple or t is list:
        out.append(f"({len(v)}")
        for x in v:
            _value(x, out)
        out.append(")")
    elif isinstance(v, (ClosedJaxpr, Jaxpr)):
        _jaxpr(v, out)
    elif isinstance(v, np.dtype):
        out.append(f"D{v.str}{v.name}")
    elif isinstance(v, (np.ndarray, np.generic)):
        out.append(_array(v))
    elif t is Array:
        out.append(_array(v._value))
    elif isinstance(v, enum.Enum):
        out.append(f"E{t.__module__}.{t.__qualname__}.{v.name}")
    elif isinstance(v, tuple):  # a NamedTuple
        out.append(f"N{t.__module__}.{t.__qualname__}")
        _value(tuple(v), out)
    elif t is dict:
        out.append(f"{{{len(v)}")
        for k in sorted(v, key=repr):
            _value(k, out)
            _value(v[k], out)
        out.append("}")
    elif t is frozenset or t is set:
        parts = []
        for x in v:
            one: list = []
            _value(x, one)
            parts.append("".join(one))
        out.append("S" + "|".join(sorted(parts)))
    elif t is slice:
        _value((v.start, v.stop, v.step), out)
    elif dataclasses.is_dataclass(v) and not isinstance(v, type):
        out.append(f"C{t.__module__}.{t.__qualname__}")
        _value(tuple(getattr(v, f.name) for f in dataclasses.fields(v)), out)
    elif isinstance(v, type) and issubclass(v, np.generic):  # a scalar type (np.float32)
        out.append(f"T{np.dtype(v).str}")
    elif hasattr(v, "dtype") and hasattr(v, "shape") and not callable(v):
        out.append(f"X{_aval(v)}")  # an abstract value (ShapedArray) or a ShapeDtypeStruct
    else:
        # an extended dtype (PRNG key types): its text names its implementation
        if isinstance(v, dtypes.ExtendedDType):
            out.append(f"K{v}")
        else:
            raise _Unstable(t)


def _jaxpr(j, out: list):
    if isinstance(j, ClosedJaxpr):
        out.append(f"[consts {len(j.consts)}")
        for c in j.consts:
            if type(c) is Array:
                c = c._value
            if not isinstance(c, (np.ndarray, np.generic, *_SCALARS)):
                raise _Unstable(type(c))  # a tracer, a key array, ...
            out.append(_array(c))
        out.append("]")
        j = j.jaxpr
    names: dict = {}

    def var(v) -> str:
        if type(v) is Literal:
            val = v.val._value if type(v.val) is Array else v.val
            if isinstance(val, (np.ndarray, np.generic)):
                return f"L{_array(val)}:{_aval(v.aval)}"
            if type(val) not in _SCALARS:
                raise _Unstable(type(val))
            return f"L{val!r}:{_aval(v.aval)}"
        n = names.get(v)
        if n is None:
            n = names[v] = f"v{len(names)}:{_aval(v.aval)}"
        return n

    out.append("{" + " ".join(var(v) for v in j.constvars) + ";"
               + " ".join(var(v) for v in j.invars) + ".")
    for e in j.eqns:
        p = e.primitive
        if p.family is None:
            raise _Unstable(p.name)
        out.append(f"{p.name}:{p.family.name}(" + " ".join(var(v) for v in e.invars) + ")")
        skip = transform_only_params.get(p, ())
        for k in sorted(e.params):
            if k in skip:
                continue
            out.append(k)
            _value(e.params[k], out)
        out.append("->" + " ".join(var(v) for v in e.outvars))
    out.append("in " + " ".join(var(v) for v in j.outvars) + "}")


def fingerprint(closed: ClosedJaxpr | Jaxpr) -> str | None:
    """sha256 (hex) of the program ``closed`` computes, or None when a param, constant or
    primitive has no value that is the same in every process (see the module doc)."""
    out: list = []
    try:
        _jaxpr(closed, out)
    except _Unstable:
        return None
    return hashlib.sha256("\n".join(out).encode()).hexdigest()
