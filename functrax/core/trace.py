"""Traces and tracers, in the style of JAX's "stackless" core.

One *current trace* per thread. ``Primitive.bind`` hands its arguments to the current trace;
an eager :class:`EvalTrace` sits at the bottom and runs the rule of ``eager_rules`` (filled
by the default backend, the numpy one). A transform makes a new trace whose ``parent`` is the
trace that was current, sets it current while the user function runs, and in its rules
binds on the parent. Tracers remember the trace object that made them, so nested transforms
of the same kind never confuse each other's values, and a tracer whose trace has ended is
detected. Named axes (``vmap(..., axis_name=)``, ``pmap``) live in a per-thread axis
environment read by the collectives.
"""
from __future__ import annotations

import gc
import threading
import types
from contextlib import contextmanager

import numpy as np

from functrax import dtypes
from functrax.config import config
from functrax.errors import (
    ConcretizationTypeError,
    MissingRuleError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)
from functrax.core.array import IMMUTABLE_MSG, Array
from functrax.core.avals import ShapedArray, get_aval, physical_aval
from functrax.dtypes import ExtendedDType
from functrax.core.jaxpr import sub_jaxprs

class Trace:
    """Base of all traces; ``parent`` is the trace that was current when this one started."""

    kind = "trace"

    def __init__(self, parent: Trace | None = None):
        self.parent = parent
        self.level = 0 if parent is None else parent.level + 1
        self.valid = True

    def process_primitive(self, prim, args, params):
        raise NotImplementedError

    def invalidate(self):
        self.valid = False

    def describe(self) -> str:
        return f"{type(self).__name__}(level={self.level})"

    def describe_origin(self, tracer) -> str:
        return ""

    def check_foreign(self, tracer):
        """Called for a tracer that this trace did not make; raises if it escaped."""
        if not tracer._trace.valid:
            raise UnexpectedTracerError(
                tracer, f"It was used by {self.describe()} after its transformation ended.")


class TraceState(threading.local):
    def __init__(self):
        self.trace = EVAL_TRACE
        self.axis_env = []  # AxisFrame stack of named axes bound by vmap / pmap


@contextmanager
def set_current_trace(trace):
    prev = _state.trace
    _state.trace = trace
    try:
        yield trace
    finally:
        _state.trace = prev


def current_trace() -> Trace:
    return _state.trace


class AxisFrame:
    """A named mapped axis in scope: its name and size."""

    __slots__ = ("name", "size")

    def __init__(self, name, size: int):
        self.name = name
        self.size = size

    def __repr__(self):
        return f"AxisFrame({self.name!r}, size={self.size})"


@contextmanager
def extend_axis_env(name, size: int):
    """Bind axis ``name`` of ``size`` for collectives while tracing/evaluating the body."""
    if name is None:
        yield
        return
    _state.axis_env.append(AxisFrame(name, size))
    try:
        yield
    finally:
        _state.axis_env.pop()


def axis_frame(name) -> AxisFrame:
    """The innermost frame binding ``name``.

    Raises:
      NameError: for an unbound axis name, listing the bound ones.
    """
    for frame in reversed(_state.axis_env):
        if frame.name == name:
            return frame
    bound = [f.name for f in _state.axis_env]
    raise NameError(f"unbound axis name: {name}. The following axis names (e.g. defined by "
                    f"pmap or vmap(..., axis_name=...)) are available to collective operations: "
                    f"{bound}")


@contextmanager
def new_trace(trace):
    """Make ``trace`` current for the duration, then invalidate it (its tracers escape)."""
    try:
        with set_current_trace(trace):
            yield trace
    finally:
        trace.invalidate()


class Tracer:
    """A stand-in for an array while a function is transformed. Subclasses set ``aval``."""

    __slots__ = ("_trace", "__weakref__")
    __array_priority__ = 1000

    def to_concrete_value(self):
        """The concrete numpy value behind this tracer, if the transform knows it."""
        return None

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)

    def __len__(self):
        if not self.aval.shape:
            raise TypeError("len() of unsized object")
        return self.aval.shape[0]

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.aval.shape[0]))

    def __bool__(self):
        v = self.to_concrete_value()
        if v is None:
            raise TracerBoolConversionError(self)
        return bool(v)

    def __index__(self):
        v = self.to_concrete_value()
        if v is None:
            raise TracerIntegerConversionError(self)
        return int(v)

    def _concrete(self, name):
        v = self.to_concrete_value()
        if v is None:
            raise ConcretizationTypeError(
                self, f"The problem arose with the `{name}` function. ")
        return v

    def __int__(self):
        return int(self._concrete("int"))

    def __float__(self):
        return float(self._concrete("float"))

    def __complex__(self):
        return complex(self._concrete("complex"))

    def __array__(self, dtype=None, copy=None):
        raise TracerArrayConversionError(self)

    def __setitem__(self, idx, value):
        raise TypeError(IMMUTABLE_MSG.format(type(self).__name__))

    def __hash__(self):
        raise TypeError(f"unhashable type: {type(self).__name__} (traced arrays are not "
                        "hashable; pass hashable values as static arguments instead)")

    def __repr__(self):
        return f"Traced<{self.aval.str_short(short_dtypes=False)}>with<{self._trace.describe()}>"


Array.register_virtual(Tracer)  # isinstance(tracer, Array), as in JAX


def as_array(x):
    """``x`` as an array: Arrays and tracers as they are, numpy values and Python scalars as
    an ``Array`` (Python numbers weakly typed, as ``functrax.numpy.asarray`` makes them)."""
    if isinstance(x, (Array, Tracer)):
        return x
    if type(x) in (bool, int, float, complex):
        aval = get_aval(x)
        return Array(np.asarray(x, aval.dtype), weak_type=aval.weak_type)
    return Array(np.asarray(x))


def is_arraylike(x) -> bool:
    return isinstance(x, (Array, Tracer, np.ndarray, np.generic)) or type(x) in (
        bool, int, float, complex)


# --- eager evaluation ---

# the rules run by the EvalTrace: primitive -> fn(*numpy arrays, **params); the default
# backend registers its table (functrax/lowering/numpy/rules.py) with register_eager_rules
_eager_rules: dict = {}


def register_eager_rules(table: dict) -> None:
    """Make ``table`` (primitive -> numpy function, filled as rules are defined) the rules
    of eager evaluation."""
    global _eager_rules
    _eager_rules = table


def eager_rule(prim):
    """The eager (default backend) rule of ``prim``, or None."""
    return _eager_rules.get(prim)


# how an equation over extended dtypes (typed PRNG keys) runs eagerly: the physicalize pass
# (functrax/passes/physicalize.py) registers fn(prim, vals, avals, params, out_avals) ->
# physical output buffers (a list), which rewrites the equation onto the keys' uint32 data
_extended_eval = []


def register_extended_eval(fn) -> None:
    """Make ``fn`` the eager evaluation of equations whose avals have extended dtypes."""
    _extended_eval[:] = [fn]


def _has_extended(avals, out) -> bool:
    for a in avals:
        if isinstance(a.dtype, ExtendedDType):
            return True
    for a in (out if type(out) is list else (out,)):
        if isinstance(a.dtype, ExtendedDType):
            return True
    return False


_AE_CACHE: dict = {}

# primitives whose params hold user objects (host callbacks: Python functions that may close
# over large arrays): never memoized, so the cache keeps none of them alive
no_abstract_eval_cache: set = set()


def abstract_eval_cached(prim, avals: tuple, params: dict):
    """``prim.abstract_eval`` memoized on (primitive, avals, params) for eager dispatch."""
    try:
        key = (prim, avals, tuple(params.items()))
        return _AE_CACHE[key]
    except KeyError:
        pass
    except TypeError:  # unhashable params
        return abstract_eval(prim, avals, params)
    out = abstract_eval(prim, avals, params)
    if prim in no_abstract_eval_cache or any(True for _ in sub_jaxprs(params)):
        return out  # call-like: new jaxprs each call would keep executables alive in the cache
    if len(_AE_CACHE) > 20000:
        _AE_CACHE.clear()
    _AE_CACHE[key] = out
    return out


# --- debug_nans / debug_infs: every eager primitive's outputs are checked ---

# [debug_nans, debug_infs], mirrored from the config (read on every eager primitive)
_SPECIAL = [False, False]


def _on_config_update(name, value):
    if name in ("debug_nans", "debug_infs"):
        _SPECIAL[name == "debug_infs"] = bool(value)


config._watchers.append(_on_config_update)


def special_checks_enabled() -> bool:
    """Whether ``debug_nans`` or ``debug_infs`` is on."""
    return _SPECIAL[0] or _SPECIAL[1]


def check_special(name: str, values) -> None:
    """Raise ``FloatingPointError`` (JAX's text) when an inexact array of ``values`` holds a
    NaN (``debug_nans``) or an inf (``debug_infs``); ``name`` is what produced it."""
    for v in values:
        a = v if type(v) is np.ndarray else np.asarray(v)
        if not dtypes.is_inexact(a.dtype):
            continue
        if _SPECIAL[0] and np.isnan(a).any():
            raise FloatingPointError(f"invalid value (nan) encountered in {name}")
        if _SPECIAL[1] and np.isinf(a).any():
            raise FloatingPointError(f"invalid value (inf) encountered in {name}")


# --- where eager results live: the host, or the default device (default_device) ---

# [None] (the host) or [fn(Array) -> Array placing it]: set by the public API while the
# default device is not the host
_PLACE = [None]


def set_eager_placement(place) -> None:
    """Place every eager result with ``place(array)`` (None: leave them on the host)."""
    _PLACE[0] = place


# --- check_tracer_leaks: at the end of a transformation, no tracer of it may be alive ---


def ensure_no_leaks(trace) -> None:
    """With ``check_tracer_leaks`` on: raise ``UnexpectedTracerError`` when a tracer of the
    (ended) ``trace`` is still referenced. Call it once the transformation dropped its own
    references (its locals) to its tracers."""
    if not config.read("check_tracer_leaks"):
        return
    gc.collect()
    leaked = [r for r in gc.get_referrers(trace) if isinstance(r, Tracer) and r._trace is trace]
    if leaked:
        msgs = []
        for t in leaked:
            msgs.append(f"{t}\n{_why_alive(t, leaked)}")
        raise UnexpectedTracerError(
            f"Leaked trace {trace.describe()}. Leaked tracer(s):\n\n" + "\n\n".join(msgs)
            + "\nA function transformed by functrax stored a traced value (in a global, a "
            "closure, an object attribute, a list, ...) that outlives the transformation. "
            "Return the value instead, or pass it in as an argument.")


def _why_alive(tracer, leaked) -> str:
    holders = []
    for r in gc.get_referrers(tracer):
        if r is leaked or isinstance(r, (Tracer, types.FrameType, types.GeneratorType)):
            continue
        if isinstance(r, dict) and "__name__" in r:
            holders.append(f"the globals of module {r['__name__']}")
        else:
            holders.append(f"a {type(r).__name__}")
    return "It is referenced by: " + (", ".join(holders) or "(nothing found)") + "."


def abstract_eval(prim, avals, params):
    if prim.abstract_eval is None:
        raise MissingRuleError("abstract evaluation", prim)
    out = prim.abstract_eval(*avals, **params)
    return _typed_vma(prim, avals, params, out) if VMA.axes else out


# --- varying manual axes (JAX's "vma") inside shard_map bodies with check_vma ---


class _VmaState(threading.local):
    axes: frozenset = frozenset()  # the manual mesh axes being typed (empty: off)


VMA = _VmaState()
_NO_VMA = frozenset()

# primitive -> rule(in_vmas, params) -> out vmas (one per output); the default: the union of
# the inputs' (collectives register theirs in transforms/collective_rules.py)
vma_rules: dict = {}
# primitive -> rule(args, params) -> args, run by bind before the operands are combined:
# e.g. psum makes its operand vary over the axes it sums (pvary), as JAX does
vma_prebind_rules: dict = {}
# pvary(x, axes) -> x typed as varying over axes (set by primitives/collectives.py)
pvary_hook: list = [None]


@contextmanager
def vma_axes(axes):
    """Type values by the manual mesh axes they vary over (a shard_map body with check_vma):
    avals get ``vma``, operands that vary over fewer axes than the others get ``pvary``."""
    prev = VMA.axes
    VMA.axes = prev | frozenset(axes)
    try:
        yield
    finally:
        VMA.axes = prev


def vma_of(x) -> frozenset:
    aval = getattr(x, "aval", None)
    return getattr(aval, "vma", _NO_VMA) if aval is not None else _NO_VMA


def _typed_vma(prim, avals, params, out):
    multiple = type(out) is list or type(out) is tuple
    outs = list(out) if multiple else [out]
    rule = vma_rules.get(prim)
    in_vmas = [getattr(a, "vma", _NO_VMA) for a in avals]
    if rule is not None:
        vmas = rule(in_vmas, params)
    elif any(True for _ in sub_jaxprs(params)):  # call-like: its sub-jaxprs' output types
        vmas = [getattr(a, "vma", _NO_VMA) for a in outs]
    else:
        u = frozenset().union(*in_vmas) if in_vmas else _NO_VMA
        vmas = [u] * len(outs)
    typed = [a if not isinstance(a, ShapedArray) or a.vma == v else a.update(vma=v)
             for a, v in zip(outs, vmas)]
    return typed if multiple else typed[0]


def insert_pvary(prim, args, params):
    """``args`` of ``prim`` with the operands that vary over fewer axes than the others made
    varying (``pvary``), so that every value's type says where it varies (called by bind
    while values are typed, see :func:`vma_axes`)."""
    pre = vma_prebind_rules.get(prim)
    if pre is not None:
        return pre(args, params)
    if len(args) < 2 or any(True for _ in sub_jaxprs(params)):
        return args
    vmas = [vma_of(x) for x in args]
    u = frozenset().union(*vmas)
    if all(v == u for v in vmas):
        return args
    # constants and literals stay as they are: they are the same on every device, have no
    # cotangent, and a literal kept inline is what the backends fuse
    return [x if v == u or not isinstance(x, Tracer) else pvary_hook[0](x, u - v)
            for x, v in zip(args, vmas)]


# primitive -> rule(*arrays, **params): eager evaluation on the arrays themselves rather than
# their numpy values (shard_map feeds a mesh-sharded array's blocks to its devices); it may
# return NotImplemented to take the numpy path
eager_array_rules: dict = {}


class EvalTrace(Trace):
    """The bottom trace: evaluates primitives eagerly with the default backend."""

    kind = "eval"

    def process_primitive(self, prim, args, params):
        array_rule = eager_array_rules.get(prim)
        if array_rule is not None and not any(isinstance(x, Tracer) for x in args):
            out = array_rule(*args, **params)
            if out is not NotImplemented:
                return out
        avals = []
        vals = []
        for x in args:
            if type(x) is Array:
                avals.append(x.aval)
                vals.append(x._value)
                continue
            if isinstance(x, Tracer):
                raise UnexpectedTracerError(
                    x, f"It was passed to primitive '{prim}' outside of any transformation.")
            a = get_aval(x)
            avals.append(a)
            # an Array subclass of a key dtype (sharded, on a GPU): its physical buffer
            vals.append(x._value if isinstance(a.dtype, ExtendedDType) else np.asarray(x, a.dtype))
        out_aval = abstract_eval_cached(prim, tuple(avals), params)
        if _has_extended(avals, out_aval):
            return self._process_extended(prim, vals, avals, params, out_aval)
        rule = _eager_rules.get(prim)
        if rule is None:
            raise MissingRuleError("eager evaluation (numpy backend)", prim)
        out = rule(*vals, **params)
        if _SPECIAL[0] or _SPECIAL[1]:
            check_special(prim.name, out if prim.multiple_results else [out])
        place = _PLACE[0]
        if prim.multiple_results:
            outs = [_wrap(o, a, prim) for o, a in zip(out, out_aval)]
            return outs if place is None else [place(o) for o in outs]
        return _wrap(out, out_aval, prim) if place is None else place(
            _wrap(out, out_aval, prim))

    def _process_extended(self, prim, vals, avals, params, out_aval):
        """An equation over extended dtypes: run on the physical buffers."""
        if not _extended_eval:
            raise MissingRuleError("eager evaluation of extended dtypes (physicalize pass)",
                                   prim)
        outs = _extended_eval[0](prim, vals, tuple(avals), params, out_aval)
        if prim.multiple_results:
            return [_wrap(o, a, prim) for o, a in zip(outs, out_aval)]
        return _wrap(outs[0], out_aval, prim)

    def describe(self):
        return "EvalTrace"


def _wrap(value, aval: ShapedArray, prim) -> Array:
    if type(value) is not np.ndarray:
        value = np.asarray(value)
    phys = physical_aval(aval) if isinstance(aval.dtype, ExtendedDType) else aval
    if value.dtype != phys.dtype:
        value = value.astype(phys.dtype)
    if value.shape != phys.shape:
        raise AssertionError(f"internal error: numpy rule of '{prim}' returned shape "
                             f"{value.shape}, abstract eval says {aval.str_short()}")
    return Array._make(value, aval)


EVAL_TRACE = EvalTrace()


_state = TraceState()
trace_state = _state  # read by Primitive.bind on every call (one attribute lookup)


def axis_env() -> list:
    """The named axes in scope on this thread (innermost last)."""
    return _state.axis_env
