"""The core: abstract values, primitives, traces and tracers, the jaxpr IR, evaluation, checking.

Design (as modern JAX's "stackless" core): one *current trace* per thread. ``Primitive.bind``
hands its arguments to the current trace; an eager :class:`EvalTrace` sits at the bottom and
runs the default backend's rule. A transform makes a new trace whose ``parent`` is the trace
that was current, sets it current while the user function runs, and in its rules binds on the
parent. Tracers remember the trace object that made them, so nested transforms of the same
kind never confuse each other's values, and a tracer whose trace has ended is detected.
"""
from __future__ import annotations

import math
import threading
from contextlib import contextmanager

import numpy as np

from functrax import dtypes
from functrax.errors import (
    ConcretizationTypeError,
    JaxprTypeError,
    MissingRuleError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)

# --- abstract values ---


class ShapedArray:
    """The abstract value of an array: shape, dtype, and whether its type is weak.

    >>> ShapedArray((3,), np.float32)
    ShapedArray(float32[3])
    """

    __slots__ = ("shape", "dtype", "weak_type", "_hash")
    array_abstraction_level = 1

    def __init__(self, shape, dtype, weak_type=False):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)
        self._hash = hash((self.shape, self.dtype, self.weak_type))

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    def __eq__(self, other):
        return (type(other) is ShapedArray and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self):
        return self._hash

    def update(self, shape=None, dtype=None, weak_type=None) -> ShapedArray:
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type)

    def strip_weak_type(self) -> ShapedArray:
        return self.update(weak_type=False) if self.weak_type else self

    def str_short(self, short_dtypes=True) -> str:
        name = dtypes.short_name(self.dtype) if short_dtypes else self.dtype.name
        return f"{name}[{','.join(str(d) for d in self.shape)}]"

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_short(short_dtypes=False)}{weak})"

    __str__ = str_short


_SCALAR_AVALS: dict = {}


def _scalar_aval(dtype, weak):
    """Rank-0 avals are interned: scalars are the most common constants in eager code."""
    key = (dtype, weak, dtypes.x64_enabled())
    aval = _SCALAR_AVALS.get(key)
    if aval is None:
        aval = _SCALAR_AVALS[key] = ShapedArray((), dtypes.canonicalize_dtype(dtype), weak)
    return aval


def typematch(a: ShapedArray, b: ShapedArray) -> bool:
    """Equal up to weak type (JAX's notion of type compatibility)."""
    return a.shape == b.shape and a.dtype == b.dtype


def raise_to_shaped(aval):
    return aval


def get_aval(x) -> ShapedArray:
    """The abstract value of an Array, a tracer, a numpy value or a Python scalar.

    Raises:
      TypeError: for values that are not arrays (strings, lists, arbitrary objects).
    """
    aval = getattr(x, "aval", None)
    if type(aval) is ShapedArray:
        return aval
    if isinstance(x, np.generic):
        return _scalar_aval(x.dtype, False)
    if isinstance(x, np.ndarray):
        return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype), False)
    if type(x) in (bool, int, float, complex):
        return _scalar_aval(dtypes.python_scalar_dtype(x), type(x) is not bool)
    raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid functrax type: "
                    "pass arrays (functrax.numpy.asarray(...)), numpy arrays or Python scalars.")


def is_arraylike(x) -> bool:
    return isinstance(x, (Array, Tracer, np.ndarray, np.generic)) or type(x) in (
        bool, int, float, complex)


# --- primitives ---


class Primitive:
    """A named operation of the IR. Only its abstract evaluation lives on it.

    ``abstract_eval(*avals, **params)`` returns the output aval (a list of them when
    ``multiple_results``). Every other meaning lives in a rule table keyed by the primitive.

    >>> sin_p = Primitive("sin_demo")
    """

    __slots__ = ("name", "multiple_results", "abstract_eval", "__weakref__")

    def __init__(self, name: str, multiple_results: bool = False):
        self.name = name
        self.multiple_results = multiple_results
        self.abstract_eval = None

    def def_abstract_eval(self, rule):
        self.abstract_eval = rule
        return rule

    def bind(self, *args, **params):
        return _state.trace.process_primitive(self, args, params)

    def __repr__(self):
        return self.name


# rules run by the EvalTrace; filled by the default backend (lowering/numpy_backend.py)
eager_rules: dict = {}


# --- traces and tracers ---


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


# --- named axes (vmap / pmap axis_name), used by collectives ---


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
        raise TypeError(_IMMUTABLE_MSG.format(type(self).__name__))

    def __hash__(self):
        raise TypeError(f"unhashable type: {type(self).__name__} (traced arrays are not "
                        "hashable; pass hashable values as static arguments instead)")

    def __repr__(self):
        return f"Traced<{self.aval.str_short(short_dtypes=False)}>with<{self._trace.describe()}>"


_IMMUTABLE_MSG = ("'{}' object does not support item assignment. functrax arrays are immutable. "
                  "Instead of ``x[idx] = y``, use ``x = x.at[idx].set(y)`` or another .at[] "
                  "method (add, multiply, min, max).")


# --- concrete arrays and eager evaluation ---


class Array:
    """An eager, immutable array (a numpy buffer on CPU).

    >>> import functrax.numpy as fnp
    >>> fnp.array([1.0, 2.0])
    Array([1., 2.], dtype=float32)
    """

    __slots__ = ("_value", "aval", "__weakref__")
    __array_priority__ = 100

    def __init__(self, value, dtype=None, weak_type=False):
        value = np.asarray(value, dtype=dtype)
        value = np.asarray(value, dtypes.canonicalize_dtype(value.dtype))
        self._value = value
        self.aval = ShapedArray(value.shape, value.dtype, weak_type)

    @staticmethod
    def _make(value: np.ndarray, aval: ShapedArray) -> Array:
        a = object.__new__(Array)
        a._value = value
        a.aval = aval
        return a

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: len(self.aval.shape))
    size = property(lambda self: self._value.size)
    weak_type = property(lambda self: self.aval.weak_type)
    nbytes = property(lambda self: self._value.nbytes)

    def __array__(self, dtype=None, copy=None):
        v = self._value
        if copy:
            return np.array(v, dtype=dtype, copy=True)
        if dtype is not None and np.dtype(dtype) != v.dtype:
            return v.astype(dtype)
        view = v.view()
        view.flags.writeable = False
        return view

    def __bool__(self):
        if self._value.size != 1:
            raise ValueError("The truth value of an array with more than one element is "
                             "ambiguous. Use a.any() or a.all()")
        return bool(self._value)

    def __int__(self):
        return int(self._value)

    def __float__(self):
        return float(self._value)

    def __complex__(self):
        return complex(self._value)

    def __index__(self):
        if self._value.ndim or self._value.dtype.kind not in "iub":
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return int(self._value)

    def __len__(self):
        if not self._value.ndim:
            raise TypeError("len() of unsized object")
        return self._value.shape[0]

    def __iter__(self):
        if not self._value.ndim:
            raise TypeError("iteration over a 0-d array")
        row = self.aval.update(shape=self.aval.shape[1:])
        return (Array._make(v, row) for v in self._value)

    def __setitem__(self, idx, value):
        raise TypeError(_IMMUTABLE_MSG.format("Array"))

    def __hash__(self):
        raise TypeError("unhashable type: 'Array'")

    def __format__(self, spec):
        return format(self._value.item(), spec) if self._value.ndim == 0 else format(
            self._value, spec)

    def item(self, *args):
        return self._value.item(*args)

    def tolist(self):
        return self._value.tolist()

    def block_until_ready(self):
        return self

    @property
    def device(self):
        """The device holding the buffer (``CpuDevice(id=0)`` for a host array)."""
        from functrax.devices import Device
        return Device(0)

    def devices(self) -> set:
        """The set of devices holding the buffer."""
        return {self.device}

    def __reduce__(self):
        return (Array, (self._value, None, self.aval.weak_type))

    def __repr__(self):
        v = self._value
        weak = ", weak_type=True" if self.aval.weak_type else ""
        name = self.dtype.name
        if v.size == 0 and v.shape != (0,):
            body = f"[], shape={v.shape}"
        else:
            body = np.array2string(v, separator=", ", prefix="Array(", threshold=1000)
        return f"Array({body}, dtype={name}{weak})"

    def __str__(self):
        return str(self._value)


def to_numpy_value(x, aval: ShapedArray) -> np.ndarray:
    """A numpy array for an eager argument (Array, numpy value or Python scalar)."""
    if type(x) is Array:
        return x._value
    return np.asarray(x, aval.dtype)


_AE_CACHE: dict = {}


def abstract_eval_cached(prim: Primitive, avals: tuple, params: dict):
    """``prim.abstract_eval`` memoized on (primitive, avals, params) for eager dispatch."""
    try:
        key = (prim, avals, tuple(params.items()))
        return _AE_CACHE[key]
    except KeyError:
        pass
    except TypeError:  # unhashable params
        return abstract_eval(prim, avals, params)
    out = abstract_eval(prim, avals, params)
    if any(True for _ in _sub_jaxprs(params)):
        return out  # call-like: new jaxprs each call would keep executables alive in the cache
    if len(_AE_CACHE) > 20000:
        _AE_CACHE.clear()
    _AE_CACHE[key] = out
    return out


def abstract_eval(prim: Primitive, avals, params):
    if prim.abstract_eval is None:
        raise MissingRuleError("abstract evaluation", prim)
    return prim.abstract_eval(*avals, **params)


class EvalTrace(Trace):
    """The bottom trace: evaluates primitives eagerly with the default backend."""

    kind = "eval"

    def process_primitive(self, prim, args, params):
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
            vals.append(np.asarray(x, a.dtype))
        out_aval = abstract_eval_cached(prim, tuple(avals), params)
        rule = eager_rules.get(prim)
        if rule is None:
            raise MissingRuleError("eager evaluation (numpy backend)", prim)
        out = rule(*vals, **params)
        if prim.multiple_results:
            return [_wrap(o, a, prim) for o, a in zip(out, out_aval)]
        return _wrap(out, out_aval, prim)

    def describe(self):
        return "EvalTrace"


def _wrap(value, aval: ShapedArray, prim) -> Array:
    if type(value) is not np.ndarray:
        value = np.asarray(value)
    if value.dtype != aval.dtype:
        value = value.astype(aval.dtype)
    if value.shape != aval.shape:
        raise AssertionError(f"internal error: numpy rule of '{prim}' returned shape "
                             f"{value.shape}, abstract eval says {aval.str_short()}")
    return Array._make(value, aval)


EVAL_TRACE = EvalTrace()
_state = TraceState()


# --- the IR ---


class Var:
    """A variable of a jaxpr; named only when printed."""

    __slots__ = ("aval", "__weakref__")

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"Var(id={id(self):x}):{self.aval.str_short()}"


class Literal:
    """A scalar constant inlined in an equation (printed ``2.0:f32[]``)."""

    __slots__ = ("val", "aval")

    def __init__(self, val, aval: ShapedArray):
        self.val = val
        self.aval = aval

    def __repr__(self):
        return f"{self.val!s}:{self.aval.str_short()}"


class JaxprEqn:
    __slots__ = ("invars", "outvars", "primitive", "params")

    def __init__(self, invars, outvars, primitive, params):
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.primitive = primitive
        self.params = dict(params)

    def replace(self, **kw) -> JaxprEqn:
        d = dict(invars=self.invars, outvars=self.outvars, primitive=self.primitive,
                 params=self.params)
        d.update(kw)
        return JaxprEqn(**d)

    def __repr__(self):
        from functrax.jaxpr_printer import pp_eqn_str
        return pp_eqn_str(self)


class Jaxpr:
    """A typed, first-order program: ``{ lambda constvars ; invars . let eqns in outvars }``."""

    __slots__ = ("constvars", "invars", "outvars", "eqns", "debug_info", "__weakref__")

    def __init__(self, constvars, invars, outvars, eqns, debug_info=None):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.eqns = list(eqns)
        self.debug_info = debug_info

    in_avals = property(lambda self: [v.aval for v in self.invars])
    out_avals = property(lambda self: [v.aval for v in self.outvars])

    def pretty_print(self, width: int = 80) -> str:
        from functrax.jaxpr_printer import pp_jaxpr_str
        return pp_jaxpr_str(self, width)

    def __str__(self):
        return self.pretty_print()

    __repr__ = __str__


class ClosedJaxpr:
    """A jaxpr together with the values of its constvars.

    >>> import functrax, functrax.numpy as fnp
    >>> print(functrax.make_jaxpr(fnp.sin)(1.0))
    { lambda ; a:f32[]. let b:f32[] = sin a in (b,) }
    """

    __slots__ = ("jaxpr", "consts", "__weakref__")

    def __init__(self, jaxpr: Jaxpr, consts):
        self.jaxpr = jaxpr
        self.consts = list(consts)

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)
    literals = property(lambda self: [v for e in self.jaxpr.eqns for v in e.invars
                                      if isinstance(v, Literal)])

    def pretty_print(self, width: int = 80) -> str:
        return self.jaxpr.pretty_print(width)

    def __str__(self):
        return self.jaxpr.pretty_print()

    __repr__ = __str__


def eval_jaxpr(jaxpr: Jaxpr, consts, *args):
    """Evaluate ``jaxpr`` by binding each equation on the current trace.

    Under no transformation this runs eagerly; under a transformation it re-traces.
    """
    env = {}
    for v, x in zip(jaxpr.constvars, consts):
        env[v] = x
    if len(args) != len(jaxpr.invars):
        raise TypeError(f"eval_jaxpr: the jaxpr takes {len(jaxpr.invars)} arguments, "
                        f"got {len(args)}")
    for v, x in zip(jaxpr.invars, args):
        env[v] = x
    for eqn in jaxpr.eqns:
        invals = [v.val if type(v) is Literal else env[v] for v in eqn.invars]
        out = eqn.primitive.bind(*invals, **eqn.params)
        if eqn.primitive.multiple_results:
            for v, o in zip(eqn.outvars, out):
                env[v] = o
        else:
            env[eqn.outvars[0]] = out
    return [v.val if type(v) is Literal else env[v] for v in jaxpr.outvars]


def jaxpr_as_fun(closed: ClosedJaxpr):
    """A Python function that evaluates ``closed`` on its arguments."""
    return lambda *args: eval_jaxpr(closed.jaxpr, closed.consts, *args)


# --- type checking ---

# primitive -> fn(params) -> (axis_name, size) that the primitive binds for its sub-jaxprs
axis_binding_rules: dict = {}


def _sub_jaxprs(params):
    for v in params.values():
        if isinstance(v, (Jaxpr, ClosedJaxpr)):
            yield v.jaxpr if isinstance(v, ClosedJaxpr) else v
        elif isinstance(v, tuple):
            for x in v:
                if isinstance(x, (Jaxpr, ClosedJaxpr)):
                    yield x.jaxpr if isinstance(x, ClosedJaxpr) else x


def check_jaxpr(jaxpr) -> None:
    """Type-check a (closed) jaxpr.

    Every variable must be bound once before it is used, and every equation's output types
    must equal its primitive's abstract evaluation on its input types (up to weak type).

    Raises:
      JaxprTypeError: naming the offending equation (variables named as the jaxpr prints).
    """
    if isinstance(jaxpr, ClosedJaxpr):
        if len(jaxpr.consts) != len(jaxpr.jaxpr.constvars):
            raise JaxprTypeError(f"ClosedJaxpr has {len(jaxpr.consts)} consts for "
                                 f"{len(jaxpr.jaxpr.constvars)} constvars")
        jaxpr = jaxpr.jaxpr
    _JaxprChecker(jaxpr).run()


class _JaxprChecker:
    """One pass over a jaxpr; error texts are built only when a check fails."""

    def __init__(self, jaxpr: Jaxpr):
        self.jaxpr = jaxpr
        self.defined: set = set()
        self._ctx = None

    def run(self):
        for v in self.jaxpr.constvars + self.jaxpr.invars:
            self.bind(v, None)
        for eqn in self.jaxpr.eqns:
            self.check_eqn(eqn)
        for v in self.jaxpr.outvars:
            self.read(v, None)

    def fail(self, msg, eqn=None):
        from functrax.jaxpr_printer import pp_eqn
        if self._ctx is None:  # name every variable as the printed jaxpr does
            from functrax.jaxpr_printer import PPContext, pp_jaxpr_doc
            self._ctx = PPContext()
            self.text = pp_jaxpr_doc(self.jaxpr, self._ctx).format(80)
        where = "as an input or output of the jaxpr" if eqn is None else \
            f"in equation: {pp_eqn(eqn, self._ctx).format(80)}"
        raise JaxprTypeError(f"{msg(self._ctx)}\n{where}\nin jaxpr:\n{self.text}")

    def name(self, ctx, v):
        return f"{ctx.name(v)}:{v.aval.str_short()}"

    def bind(self, v, eqn):
        if v in self.defined:
            self.fail(lambda ctx: f"variable {self.name(ctx, v)} is bound twice", eqn)
        self.defined.add(v)

    def read(self, v, eqn):
        if type(v) is Literal:
            if np.shape(v.val) != v.aval.shape:
                self.fail(lambda ctx: f"literal {v} has a value that disagrees with its type",
                          eqn)
        elif v not in self.defined:
            self.fail(lambda ctx: f"variable {self.name(ctx, v)} is used before it is bound",
                      eqn)

    def check_eqn(self, eqn):
        for v in eqn.invars:
            self.read(v, eqn)
        binder = axis_binding_rules.get(eqn.primitive)
        name, size = binder(eqn.params) if binder else (None, 0)
        with extend_axis_env(name, size):  # e.g. pmap binds its axis inside its sub-jaxpr
            for sub in _sub_jaxprs(eqn.params):
                check_jaxpr(sub)
        try:
            out = abstract_eval(eqn.primitive, [v.aval for v in eqn.invars], eqn.params)
        except Exception as e:  # noqa: BLE001 - re-raised with the equation attached
            self.fail(lambda ctx, err=e: f"{type(err).__name__}: {err}", eqn)
        outs = out if eqn.primitive.multiple_results else [out]
        if len(outs) != len(eqn.outvars):
            self.fail(lambda ctx: f"'{eqn.primitive}' produces {len(outs)} results but the "
                      f"equation binds {len(eqn.outvars)}", eqn)
        for v, a in zip(eqn.outvars, outs):
            if not typematch(v.aval, a):
                self.fail(lambda ctx: f"'{eqn.primitive}' output {ctx.name(v)} has type "
                          f"{v.aval.str_short()} but its abstract evaluation gives "
                          f"{a.str_short()}", eqn)
            self.bind(v, eqn)
