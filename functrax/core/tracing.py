"""Staging: the trace that records primitives into a jaxpr, ``make_jaxpr`` and ``eval_shape``.

Tracing is "omnistaging": every primitive bound while the staging trace is current is
recorded, whether or not it touches an input. Closed-over arrays become constvars, scalar
constants become typed literals.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from functrax import core, dtypes
from functrax.config import config
from functrax.core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, ShapedArray, Tracer, Var
from functrax.tree_util import tree_flatten, tree_flatten_with_path, keystr, tree_unflatten


class DebugInfo:
    """Where a traced function came from, for error messages."""

    __slots__ = ("func_name", "source", "arg_names", "traced_for")

    def __init__(self, func_name, source, arg_names, traced_for):
        self.func_name, self.source = func_name, source
        self.arg_names, self.traced_for = tuple(arg_names), traced_for

    def func_src(self) -> str:
        return f"{self.func_name} at {self.source}" if self.source else self.func_name


def fun_name(f) -> str:
    while isinstance(f, functools.partial):
        f = f.func
    return getattr(f, "__name__", type(f).__name__)


def fun_source(f) -> str:
    while isinstance(f, functools.partial):
        f = f.func
    code = getattr(inspect.unwrap(f), "__code__", None) if callable(f) else None
    return f"{code.co_filename}:{code.co_firstlineno}" if code else ""


def arg_names(f, args, kwargs, static_argnums=()) -> list:
    """One name per flattened dynamic argument leaf, e.g. ``x`` or ``params['w']``."""
    try:
        sig = inspect.signature(f)
        bound = sig.bind(*args, **kwargs)
        named = list(bound.arguments.items())
    except (TypeError, ValueError):
        named = [(f"args[{i}]", a) for i, a in enumerate(args)] + list(kwargs.items())
    names = []
    pos = 0
    for name, val in named:
        if pos in static_argnums:
            pos += 1
            continue
        pos += 1
        leaves, _ = tree_flatten_with_path(val)
        names.extend(name + keystr(p) for p, _ in leaves)
    return names


def make_debug_info(f, args, kwargs, traced_for, static_argnums=()) -> DebugInfo:
    return DebugInfo(fun_name(f), fun_source(f),
                     arg_names(f, args, kwargs, static_argnums), traced_for)


# --- the staging trace ---


class DynamicJaxprTracer(Tracer):
    __slots__ = ("aval", "jaxpr_var")

    def __init__(self, trace, aval, var):
        self._trace = trace
        self.aval = aval
        self.jaxpr_var = var


class DynamicJaxprTrace(core.Trace):
    """Records every primitive bound on it as an equation."""

    kind = "staging"

    def __init__(self, parent=None, debug_info: DebugInfo | None = None):
        super().__init__(parent)
        self.debug_info = debug_info
        self.invars: list = []
        self.eqns: list = []
        self.constvars: list = []
        self.consts: list = []
        self._const_ids: dict = {}

    def new_arg(self, aval: ShapedArray) -> DynamicJaxprTracer:
        var = Var(aval)
        self.invars.append(var)
        return DynamicJaxprTracer(self, aval, var)

    def atom(self, x):
        if isinstance(x, Tracer):
            if x._trace is self:
                return x.jaxpr_var
            self.check_foreign(x)
            return self._constvar(x, x.aval)
        aval = core.get_aval(x)
        if aval.shape == () and aval.dtype.kind in "biufc":
            return Literal(np.asarray(core.to_numpy_value(x, aval))[()], aval)
        return self._constvar(x, aval)

    def _constvar(self, x, aval):
        var = self._const_ids.get(id(x))
        if var is None:
            if isinstance(x, np.ndarray) or type(x) in (bool, int, float, complex):
                x = core.Array(np.asarray(x, aval.dtype), weak_type=aval.weak_type)
            var = self._const_ids[id(x)] = Var(aval)
            self.constvars.append(var)
            self.consts.append(x)
        return var

    def process_primitive(self, prim, args, params):
        if config.read("eager_constant_folding") and not any(
                isinstance(x, Tracer) for x in args):  # ensure_compile_time_eval
            with core.set_current_trace(core.EVAL_TRACE):
                return prim.bind(*args, **params)
        invars = [self.atom(x) for x in args]
        out = core.abstract_eval(prim, [v.aval for v in invars], params)
        outs = out if prim.multiple_results else [out]
        tracers = [DynamicJaxprTracer(self, a, Var(a)) for a in outs]
        self.eqns.append(JaxprEqn(invars, [t.jaxpr_var for t in tracers], prim, params))
        return tracers if prim.multiple_results else tracers[0]

    def to_jaxpr(self, outs) -> ClosedJaxpr:
        outvars = [self.atom(x) for x in outs]
        jaxpr = Jaxpr(self.constvars, self.invars, outvars, self.eqns, self.debug_info)
        closed = ClosedJaxpr(jaxpr, self.consts)
        core.check_if_enabled(closed, self.describe())  # functrax.enable_checks
        return closed

    def describe(self):
        what = f" for {self.debug_info.traced_for}" if self.debug_info else ""
        return f"DynamicJaxprTrace{what}"

    def describe_origin(self, tracer) -> str:
        info = self.debug_info
        if info is None:
            return ""
        msg = f"The error occurred while tracing the function {info.func_src()} for " \
              f"{info.traced_for}. "
        deps = self._progenitor_args(tracer)
        if deps:
            args = ", ".join(deps)
            plural = "s" if len(deps) > 1 else ""
            msg += (f"This concrete value was not available in Python because it depends on "
                    f"the value of the argument{plural} {args}.")
        else:
            msg += "This value was computed by traced operations that do not depend on any " \
                   "argument; compute it with numpy instead to keep it concrete."
        return msg

    def _progenitor_args(self, tracer) -> list:
        needed = {tracer.jaxpr_var}
        for eqn in reversed(self.eqns):
            if any(v in needed for v in eqn.outvars):
                needed.update(v for v in eqn.invars if type(v) is Var)
        names = self.debug_info.arg_names
        return [names[i] if i < len(names) else f"args[{i}]"
                for i, v in enumerate(self.invars) if v in needed]


def trace_to_jaxpr(flat_fun, in_avals, debug_info=None):
    """Stage ``flat_fun`` (a function of flat tracers returning a flat list) to a ClosedJaxpr."""
    trace = DynamicJaxprTrace(core.current_trace(), debug_info)
    with core.new_trace(trace):
        in_tracers = [trace.new_arg(a) for a in in_avals]
        outs = flat_fun(*in_tracers)
        closed = trace.to_jaxpr(outs)
    del in_tracers, outs
    core.ensure_no_leaks(trace)
    return closed


def _leaf_aval(x, info_name: str) -> ShapedArray:
    if hasattr(x, "shape") and hasattr(x, "dtype") and not core.is_arraylike(x):
        return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype),
                           getattr(x, "weak_type", False))
    try:
        return core.get_aval(x)
    except TypeError:
        raise TypeError(f"Argument '{info_name}' of type {type(x).__name__} is not a valid "
                        f"functrax type: pass arrays, numpy arrays or Python scalars, or mark "
                        f"it static with static_argnums.") from None


def _split_static(args, static_argnums):
    n = len(args)
    static = {i % n if n else i for i in static_argnums}
    dyn = [a for i, a in enumerate(args) if i not in static]
    return static, dyn


def trace_fun(f, args, kwargs, traced_for, static_argnums=()):
    """Trace ``f(*args, **kwargs)``; returns (ClosedJaxpr, out_tree)."""
    static, dyn = _split_static(args, static_argnums)
    info = make_debug_info(f, args, kwargs, traced_for, tuple(static))
    leaves, in_tree = tree_flatten((dyn, kwargs))
    names = list(info.arg_names) + [f"args[{i}]" for i in range(len(leaves))]
    in_avals = [_leaf_aval(x, names[i]) for i, x in enumerate(leaves)]
    out_tree_box = []

    def flat_fun(*tracers):
        dyn_t, kw_t = tree_unflatten(in_tree, list(tracers))
        it = iter(dyn_t)
        full = [args[i] if i in static else next(it) for i in range(len(args))]
        out = f(*full, **kw_t)
        out_leaves, out_tree = tree_flatten(out)
        out_tree_box.append(out_tree)
        return out_leaves

    closed = trace_to_jaxpr(flat_fun, in_avals, info)
    return closed, out_tree_box[0]


def make_jaxpr(fun, static_argnums=(), return_shape=False):
    """Trace ``fun`` and return its jaxpr.

    Args:
      fun: the function to trace.
      static_argnums: positions of arguments that are Python values, not traced.
      return_shape: also return the output's ShapeDtypeStruct pytree.

    Returns:
      A function that, given example arguments, returns a ClosedJaxpr whose ``str`` prints
      the program in JAX's format.

    >>> import functrax.numpy as fnp
    >>> print(make_jaxpr(lambda x: fnp.sin(x) * 2.0)(1.0))
    { lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b 2.0:f32[] in (c,) }
    """
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)

    @functools.wraps(fun)
    def make_jaxpr_f(*args, **kwargs):
        closed, out_tree = trace_fun(fun, args, kwargs, "make_jaxpr", tuple(static_argnums))
        if return_shape:
            shapes = [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in closed.out_avals]
            return closed, tree_unflatten(out_tree, shapes)
        return closed

    return make_jaxpr_f


class ShapeDtypeStruct:
    """A shape and dtype standing in for an array (as ``jax.ShapeDtypeStruct``)."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype, weak_type=False):
        self.shape = tuple(shape)
        self.dtype = dtype if dtypes.is_extended(dtype) else np.dtype(dtype)
        self.weak_type = weak_type

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape)))

    @classmethod
    def like(cls, x) -> ShapeDtypeStruct:
        """The ``ShapeDtypeStruct`` of an array (or of anything with ``shape``/``dtype``).

        >>> ShapeDtypeStruct.like(np.zeros((2, 3), np.int32))
        ShapeDtypeStruct(shape=(2, 3), dtype=int32)
        """
        if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, np.generic):
            return cls(x.shape, x.dtype, bool(getattr(x, "weak_type", False)))
        aval = core.get_aval(x)
        return cls(aval.shape, aval.dtype, aval.weak_type)

    def update(self, **kwargs) -> ShapeDtypeStruct:
        """A copy with ``shape`` / ``dtype`` / ``weak_type`` replaced."""
        d = dict(shape=self.shape, dtype=self.dtype, weak_type=self.weak_type)
        unknown = set(kwargs) - set(d) - {"sharding"}
        if unknown:
            raise TypeError(f"ShapeDtypeStruct.update got unexpected keyword arguments "
                            f"{sorted(unknown)}")
        kwargs.pop("sharding", None)
        d.update(kwargs)
        return ShapeDtypeStruct(**d)

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"


def eval_shape(fun, *args, **kwargs):
    """Output shapes/dtypes of ``fun(*args)`` without running it (ShapeDtypeStruct pytree).

    >>> import functrax.numpy as fnp
    >>> eval_shape(lambda x: x.sum(), ShapeDtypeStruct((3,), np.float32))
    ShapeDtypeStruct(shape=(), dtype=float32)
    """
    closed, out_tree = trace_fun(fun, args, kwargs, "eval_shape")
    shapes = [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in closed.out_avals]
    return tree_unflatten(out_tree, shapes)
