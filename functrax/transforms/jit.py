"""``jit``: stage a function to a jaxpr once per argument signature, optimize it, compile it
for the numpy backend, and cache the result.

``jit`` is also a call primitive (``jit[name=f jaxpr={...}]``) with a rule in every table
(see ``jit_rules.py``), so it composes with every transformation in either order.
"""
from __future__ import annotations

import functools
import inspect
import logging
import time
import warnings
import weakref

import numpy as np

from functrax import core, dtypes
from functrax.config import config
from functrax.primitives.calls import jit_p
from functrax.primitives.sharding_constraint import sharding_constraint_p
from functrax.core import Array, ClosedJaxpr, ShapedArray
from functrax.runtime.gpu_devices import GpuArray, wrap_buffer
from functrax.lowering import backends
from functrax.passes.pipeline import optimize
from functrax.transforms.cache_misses import explain_cache_miss
from functrax.transforms.call_util import clear_trace_cache
from functrax.transforms.jit_shardings import UNSPECIFIED, JitShardings
from functrax.core.tracing import ShapeDtypeStruct, fun_name, fun_source, trace_to_jaxpr, DebugInfo
from functrax.tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten

logger = logging.getLogger("functrax")
_LEAF = tree_flatten(0)[1]

config.define("jit_recompile_warn_threshold", 8,
              "Warn (once per function) when a jitted function compiles more than this often.")
config.define("disable_jit", False, "Run jitted functions eagerly (for debugging).")


class RecompileWarning(UserWarning):
    """A jitted function keeps recompiling; the message says what changed."""


class DeletedBuffer:
    """Stands for the buffer of a donated (consumed) Array."""

    def __init__(self, aval):
        self.aval = aval

    def _raise(self, *_, **__):
        raise RuntimeError(f"Array has been deleted with shape={self.aval.str_short()}: it was "
                           "donated to a jitted function (donate_argnums) and its buffer may "
                           "have been reused. Use the function's outputs instead.")

    __array__ = __getattr__ = __len__ = __iter__ = __bool__ = __int__ = __float__ = _raise
    __complex__ = __index__ = __str__ = __repr__ = __format__ = _raise


def _whole_program_array_rule(closed):
    """``(primitive, params)`` when the program is one equation of a primitive with an eager
    array rule (``core.eager_array_rules``) applied to the program's inputs in order, giving
    its outputs: e.g. ``jit(shard_map(f))``, whose mesh-sharded inputs then go to their
    devices as blocks and whose outputs stay sharded (never gathered on one host)."""
    j = closed.jaxpr
    if closed.consts or j.constvars or len(j.eqns) != 1:
        return None
    eqn = j.eqns[0]
    if eqn.primitive not in core.eager_array_rules:
        return None
    if list(eqn.invars) != list(j.invars) or list(eqn.outvars) != list(j.outvars):
        return None
    return eqn.primitive, eqn.params


class _Entry:
    """One cache entry: the traced jaxpr and, once compiled, its executable."""

    __slots__ = ("closed", "out_tree", "consts_are_tracers", "exe", "out_avals", "key",
                 "trace_time", "optimized", "backend", "call_jaxpr", "gpu_exe", "constrained",
                 "array_rule")

    def __init__(self, closed, out_tree, key, trace_time, backend=None):
        self.closed = closed
        self.backend = backend
        self.out_tree = out_tree
        self.key = key
        self.trace_time = trace_time
        self.consts_are_tracers = any(isinstance(c, core.Tracer) for c in closed.consts)
        self.exe = None
        self.gpu_exe = None  # a Triton executable of a non-triton entry (GPU-resident inputs)
        self.optimized = None
        self.out_avals = closed.out_avals
        # what jit_p binds (consts as leading operands); one object per entry, so rules that
        # cache per jaxpr (the numpy rule's executable, ...) hit their caches
        self.call_jaxpr = _closure_free(closed)
        # an output made by with_sharding_constraint comes back laid out so (jit_shardings)
        outs = {id(v) for v in closed.jaxpr.outvars}
        self.constrained = any(e.primitive is sharding_constraint_p and id(e.outvars[0]) in outs
                               for e in closed.jaxpr.eqns)
        self.array_rule = _whole_program_array_rule(closed)

    def executable(self, donated=(), backend=None):
        """The compiled program; ``backend="triton"`` on an entry of another backend (called
        with GPU-resident inputs) compiles and keeps a second, Triton one."""
        if backend == "triton" and self.backend != "triton":
            if self.gpu_exe is None:
                self.gpu_exe = self._compile("triton", donated)
            return self.gpu_exe
        if self.exe is None:
            self.exe = self._compile(self.backend, donated)
        return self.exe

    def _compile(self, backend, donated):
        return backends.compile_traced(backend, self.closed, self.optimize, donated)

    def optimize(self):
        """The optimized jaxpr (computed once; a backend that finds the program in its disk
        cache never asks)."""
        if self.optimized is None:
            self.optimized = optimize(self.closed)
        return self.optimized


def _leaf_aval(x):
    if type(x) is Array:
        return x.aval
    if isinstance(x, core.Tracer):
        return x.aval
    if isinstance(x, ShapeDtypeStruct) or (hasattr(x, "shape") and hasattr(x, "dtype")
                                           and not isinstance(x, (np.ndarray, np.generic))):
        return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype),
                           getattr(x, "weak_type", False))
    return core.get_aval(x)


def _not_array_error(fun_name, x, path):
    return TypeError(
        f"Error interpreting argument to {fun_name} as an abstract array. The problematic "
        f"value is of type {type(x)} and was passed to the function at path {path}.\n"
        "This typically means that a jit-wrapped function was called with a non-array "
        "argument, and this argument was not marked as static using the static_argnums "
        "or static_argnames parameters of functrax.jit.")


def check_hashable(v, what):
    try:
        hash(v)
    except TypeError as e:
        raise ValueError(f"Non-hashable static arguments are not supported. An error occurred "
                         f"while trying to hash an object of type {type(v)}, {v!r} ({what}). "
                         f"The error was:\nTypeError: {e}") from None


class _SharedTraces:
    """The traces (and fast-path executables) of one function under one set of jit options,
    shared by every ``jit`` wrapper of it, as JAX's cache is."""

    __slots__ = ("cache", "fast", "compiles", "last_key", "warned", "__weakref__")

    def __init__(self):
        self.cache, self.fast = {}, {}
        self.compiles, self.last_key, self.warned = 0, None, False


# function -> {jit options -> _SharedTraces}; an entry lives as long as its function
_SHARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _weakrefable(fun) -> bool:
    try:
        weakref.ref(fun)
        return True
    except TypeError:
        return False


def _shared_traces(fun, options) -> _SharedTraces:
    try:
        per_fun = _SHARED.get(fun)
        if per_fun is None:
            per_fun = _SHARED[fun] = {}
        shared = per_fun.get(options)
        if shared is None:
            shared = per_fun[options] = _SharedTraces()
        return shared
    except TypeError:  # not weakly referenceable, or unhashable: this wrapper's own
        return _SharedTraces()


def clear_caches():
    """Clear every trace and compilation cache: jit's traces (and their executables) and the
    memoized traces of control-flow bodies, as ``jax.clear_caches``. The kernel cache on
    disk is kept (it is keyed by the kernels' source)."""
    for per_fun in list(_SHARED.values()):
        for shared in per_fun.values():
            shared.cache.clear()
            shared.fast.clear()
    clear_trace_cache()


class JitFunction:
    """A jit-compiled function (see :func:`jit`)."""

    def __init__(self, fun, static_argnums=(), static_argnames=(), donate_argnums=(),
                 donate_argnames=(), backend=None, device=None, in_shardings=UNSPECIFIED,
                 out_shardings=UNSPECIFIED):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self._name = fun_name(fun)
        self._pos_names, self._varargs_name = _positional_names(fun)
        self.static_argnums, self.static_argnames = _infer_statics(
            fun, static_argnums, static_argnames)
        self.donate_argnums, _ = _infer_statics(fun, donate_argnums, donate_argnames)
        self.backend = backend
        self.device = device
        self._options = (self.static_argnums, self.static_argnames, self.donate_argnums,
                         backend, device)
        self._ctx = None
        self._sync_context()
        self._shardings = None  # in_shardings / out_shardings (jit_shardings.py), if given
        self._propagated = None  # the layout of constrained outputs, when none is given
        if in_shardings is not UNSPECIFIED or out_shardings is not UNSPECIFIED:
            self._shardings = JitShardings(self._name, in_shardings, out_shardings)
        self._fast_ok = not (self.static_argnums or self.static_argnames or self.donate_argnums
                             or self._shardings)
        self.warn_recompiles = True  # False for the library's own jitted helpers

    def _sync_context(self):
        """Select the shared traces of the current trace context (config flags such as
        enable_x64 or triton_dump_dir: a change of one traces and compiles anew)."""
        ctx = config.trace_context()
        if ctx is not self._ctx:
            self._ctx = ctx
            self._shared = _shared_traces(self.fun, self._options + (ctx,))
            self._cache = self._shared.cache
            self._fast = self._shared.fast  # avals -> (executable, out avals, out tree)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    # --- signature and cache ---

    def _split(self, args, kwargs):
        statics, dyn = [], []
        n = len(args)
        static_pos = {i % n for i in self.static_argnums if -n <= i < n} if n else set()
        for i, a in enumerate(args):
            if i in static_pos:
                check_hashable(a, f"static argument {i}")
                statics.append((i, a))
            else:
                dyn.append(a)
        dyn_kw = {}
        for k in sorted(kwargs):
            if k in self.static_argnames:
                check_hashable(kwargs[k], f"static argument {k!r}")
                statics.append((k, kwargs[k]))
            else:
                dyn_kw[k] = kwargs[k]
        return tuple(statics), dyn, dyn_kw, static_pos

    def _signature(self, args, kwargs):
        statics, dyn, dyn_kw, static_pos = self._split(args, kwargs)
        leaves, in_tree = tree_flatten((dyn, dyn_kw))
        try:
            avals = tuple(map(_leaf_aval, leaves))
        except TypeError:
            names = self._leaf_names(len(args), static_pos, dyn, dyn_kw)
            bad = next(i for i, x in enumerate(leaves) if not _is_arraylike(x))
            raise _not_array_error(self._name, leaves[bad], names[bad]) from None
        if core.VMA.axes:  # in a typed shard_map body: avals compare without their vma
            statics = statics + ((None, tuple(a.vma for a in avals)),)  # not an argument
        return (in_tree, avals, statics), leaves, static_pos

    def _leaf_names(self, nargs, static_pos, dyn, dyn_kw):
        """One name per flat dynamic leaf, in leaf order: ``x``, ``params['w']``, ..."""
        bases = [self._arg_name(i) for i in range(nargs) if i not in static_pos]
        bases += sorted(dyn_kw)
        names = []
        for base, val in zip(bases, list(dyn) + [dyn_kw[k] for k in sorted(dyn_kw)]):
            names += [base + keystr(p) for p, _ in tree_flatten_with_path(val)[0]]
        return names

    def _arg_name(self, i):
        if i < len(self._pos_names):
            return self._pos_names[i]
        if self._varargs_name:
            return f"{self._varargs_name}[{i - len(self._pos_names)}]"
        return f"args[{i}]"

    def _entry(self, args, kwargs):
        self._sync_context()
        key, leaves, static_pos = self._signature(args, kwargs)
        entry = self._cache.get(key)
        if entry is None:
            entry = self._trace(key, args, kwargs, static_pos)
        return entry, leaves

    def _trace(self, key, args, kwargs, static_pos):
        in_tree, avals, statics = key
        t0 = time.perf_counter()
        _, dyn, dyn_kw, _ = self._split(args, kwargs)
        info = DebugInfo(self._name, fun_source(self.fun),
                         self._leaf_names(len(args), static_pos, dyn, dyn_kw), "jit")
        out_tree_box = []
        static_kw = {k: v for k, v in statics if isinstance(k, str)}

        def flat_fun(*tracers):
            dyn, dyn_kw = tree_unflatten(in_tree, list(tracers))
            it = iter(dyn)
            full = [args[i] if i in static_pos else next(it) for i in range(len(args))]
            out = self.fun(*full, **dyn_kw, **static_kw)
            out_leaves, out_tree = tree_flatten(out)
            out_tree_box.append(out_tree)
            return out_leaves

        closed = trace_to_jaxpr(flat_fun, list(avals), info)
        if config.enable_checks:
            core.check_jaxpr(closed)
        entry = _Entry(closed, out_tree_box[0], key, time.perf_counter() - t0,
                       self.backend or _nested_backend(closed) or _default_device_backend())
        if not entry.consts_are_tracers:  # closures over outer tracers are traced per call
            self._cache[key] = entry
            self._account(key, entry, info)
        return entry

    def _account(self, key, entry, info):
        shared = self._shared
        shared.compiles += 1
        reason = (_explain(shared.last_key, key, info, self._pos_names)
                  if shared.last_key else "first call")
        shared.last_key = key
        if config.log_compiles:
            logger.warning("Compiling %s for jit (reason: %s); tracing took %.4f s",
                           self._name, reason, entry.trace_time)
        if config.explain_cache_misses:
            logger.warning("%s", self._explain_miss(key, info))
        if (shared.compiles > config.jit_recompile_warn_threshold and not shared.warned
                and self.warn_recompiles):
            shared.warned = True
            warnings.warn(
                f"functrax.jit: '{self._name}' has been compiled {shared.compiles} times; the "
                f"last recompilation was caused by: {reason}. Each new shape, dtype or static "
                "argument value compiles again: pad to fixed shapes, or pass changing Python "
                "values as arrays instead of static arguments.", RecompileWarning, stacklevel=4)

    def _explain_miss(self, key, info):
        """The ``explain_cache_misses`` report of the miss that traced ``key``."""
        seen = [k for k in self._cache if k != key]
        per_fun = _SHARED.get(self.fun) if _weakrefable(self.fun) else None
        others = any(sh is not self._shared and sh.cache for sh in (per_fun or {}).values())
        return explain_cache_miss(self._name, fun_source(self.fun), id(self.fun), key, seen,
                                  others, info.arg_names, self._pos_names)

    def _cache_size(self):
        return len(self._cache)

    def clear_cache(self):
        self._cache.clear()
        self._fast.clear()

    # --- calling ---

    def __call__(self, *args, **kwargs):
        if self._ctx is not config.trace_context():
            self._sync_context()
        if not kwargs and self._fast_ok:
            # fast path: positional Arrays only, a signature seen before, no transformation
            try:
                key = tuple([a.aval for a in args])
            except AttributeError:
                key = None
            hit = self._fast.get(key) if key is not None else None
            if hit is not None and type(core.current_trace()) is core.EvalTrace and \
                    not config.disable_jit and all(type(a) is Array for a in args) and \
                    not core.special_checks_enabled():
                exe, out_avals, out_tree = hit
                outs = [Array._make(v, a) for v, a in zip(
                    exe.run(*[a._value for a in args]), out_avals)]
                return outs[0] if out_tree is None else tree_unflatten(out_tree, outs)
        if config.disable_jit:
            return self.fun(*args, **kwargs)
        entry, leaves = self._entry(args, kwargs)
        if type(core.current_trace()) is core.EvalTrace and not entry.consts_are_tracers:
            outs = self._call_entry(entry, leaves)
            if core.special_checks_enabled():
                _check_outputs(self._name, entry, leaves, outs)
            if self._fast_ok and not kwargs and all(type(a) is Array for a in args) and \
                    not getattr(entry.exe, "device_outputs", False) and not entry.constrained \
                    and entry.array_rule is None:
                single = entry.out_tree.num_leaves == 1 and entry.out_tree == _LEAF
                self._fast[tuple(a.aval for a in args)] = (
                    entry.exe, entry.out_avals, None if single else entry.out_tree)
        else:
            backend = {"backend": entry.backend} if entry.backend else {}  # none: JAX's params
            outs = jit_p.bind(*entry.closed.consts, *leaves, jaxpr=entry.call_jaxpr,
                              name=self._name, **backend)
            if self._shardings is not None:
                outs = self._shardings.constrain_traced(outs, self._resolve_shardings(entry)[1])
        return tree_unflatten(entry.out_tree, outs)

    # --- shardings ---

    def _sharding_rules(self, entry):
        """The in/out shardings given, or (when none was) the layout of outputs made by
        ``with_sharding_constraint``; None when neither applies."""
        if self._shardings is not None or not entry.constrained:
            return self._shardings
        if self._propagated is None:
            self._propagated = JitShardings(self._name, UNSPECIFIED, UNSPECIFIED)
        return self._propagated

    def _resolve_shardings(self, entry):
        """(per argument leaf, per output leaf) shardings or None, checked."""
        in_tree, _, statics = entry.key
        n_dyn = len(tree_unflatten(in_tree, [0] * in_tree.num_leaves)[0])
        static_pos = {k for k, _ in statics if isinstance(k, int)}
        names = [self._arg_name(i) for i in range(n_dyn + len(static_pos))
                 if i not in static_pos]
        return self._sharding_rules(entry).resolve(entry, names)

    def _call_entry(self, entry, leaves):
        """Run ``entry`` eagerly: arguments checked / placed by in_shardings, outputs laid
        out by out_shardings."""
        rules = self._sharding_rules(entry)
        if rules is None:
            return self._run(entry, leaves)
        ins, outs = self._resolve_shardings(entry)
        info = entry.closed.jaxpr.debug_info
        names = list(info.arg_names) if info is not None else []
        names += [f"args[{i}]" for i in range(len(names), len(leaves))]
        leaves = rules.place_inputs(leaves, ins, names)
        return rules.place_outputs(self._run(entry, leaves), outs)

    def _run(self, entry, leaves):
        if entry.array_rule is not None and not self.donate_argnums:
            prim, params = entry.array_rule
            outs = core.eager_array_rules[prim](*leaves, **params)
            if outs is not NotImplemented:
                return list(outs)
        on_gpu = any(type(x) is GpuArray for x in leaves)
        if on_gpu or entry.backend == "triton":
            return self._run_triton(entry, leaves)
        if not self.donate_argnums:
            vals = [x._value if isinstance(x, Array) else _to_np(x) for x in leaves]
            outs = entry.executable().run(*vals)
        else:
            donated = self._donated_leaves(entry, len(leaves))
            exe = entry.executable(tuple(sorted(donated)))
            vals = [x._value if isinstance(x, Array) else _to_np(x) for x in leaves]
            self._consume_donated(leaves, donated)  # before the call: the program owns them
            outs = exe.run_consuming(vals)
        return [Array._make(v, a) for v, a in zip(outs, entry.out_avals)]

    def _run_triton(self, entry, leaves):
        """Run on the Triton backend (selected by ``backend="triton"`` or by GPU-resident
        inputs): device buffers go in and come out as GPU-resident arrays on a GPU."""
        donated = self._donated_leaves(entry, len(leaves)) if self.donate_argnums else ()
        exe = entry.executable(tuple(sorted(donated)), "triton")
        on_device = getattr(exe, "device_outputs", False)
        vals = [x._gpu if on_device and type(x) is GpuArray else
                x._value if isinstance(x, Array) else _to_np(x) for x in leaves]
        self._consume_donated(leaves, donated)
        outs = exe.run(*vals)
        if not on_device:
            return [Array._make(v, a) for v, a in zip(outs, entry.out_avals)]
        return [wrap_buffer(v, a) for v, a in zip(outs, entry.out_avals)]

    def _donated_leaves(self, entry, n_leaves):
        """Flat indices of the leaves of the donated arguments."""
        dyn, _ = tree_unflatten(entry.key[0], list(range(n_leaves)))
        donated = set()
        for i in self.donate_argnums:
            if i < len(dyn):
                donated.update(tree_flatten(dyn[i])[0])
        return donated

    @staticmethod
    def _consume_donated(leaves, donated):
        for i in donated:
            x = leaves[i]
            if type(x) is Array:
                x._value = DeletedBuffer(x.aval)

    # --- ahead-of-time inspection ---

    def trace(self, *args, **kwargs):
        """Trace without compiling; returns a :class:`Traced` (``.jaxpr``, ``.out_info``)."""
        entry, _ = self._entry(args, kwargs)
        return Traced(self, entry)

    def lower(self, *args, **kwargs):
        """Trace and optimize; returns a :class:`Lowered` (``.as_text()``, ``.compile()``)."""
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args, **kwargs):
        return self.trace(*args, **kwargs).out_info

    def __repr__(self):
        return f"<functrax.jit of {self._name}>"


def _default_device_backend():
    """``"triton"`` when ``functrax.default_device`` is a GPU (jit runs there), else None."""
    device = config.read("default_device")
    platform = device if isinstance(device, str) else getattr(device, "platform", None)
    return "triton" if platform in ("gpu", "cuda") else None


_DEOPT = ("Because jax_config.debug_nans.value and/or config.jax_debug_infs is set, the "
          "de-optimized function (i.e., the function as if the `jit` decorator were removed) "
          "was called in an attempt to get a more precise error message. However, the "
          "de-optimized function did not produce invalid values during its execution. This "
          "behavior can result from `jit` optimizations causing the invalid value to be "
          "produced. It may also arise from having nan/inf constants as outputs, like "
          "`functrax.jit(lambda ...: functrax.numpy.nan)(...)`.")


def _check_outputs(name, entry, leaves, outs):
    """``debug_nans`` / ``debug_infs`` after a jitted call: on an invalid output, run the
    traced program again op by op (its calls inlined), so the first primitive producing a
    NaN / inf raises naming itself; if none does, say so (as JAX)."""
    try:
        core.check_special(f"jit({name})", [o._value for o in outs])
    except FloatingPointError as e:
        from functrax.passes.inline import inline_closed
        closed = inline_closed(entry.closed)
        core.eval_jaxpr(closed.jaxpr, closed.consts, *leaves)  # raises at the primitive
        raise FloatingPointError(f"{e}. {_DEOPT}") from None


def _to_np(x):
    if isinstance(x, (np.ndarray, np.generic)) or type(x) in (bool, int, float, complex):
        return np.asarray(x, core.get_aval(x).dtype)
    raise TypeError(f"cannot run a compiled function on {type(x).__name__} (a "
                    "ShapeDtypeStruct has no data: use .lower() / .compile() only)")


def _nested_backend(closed):
    """The backend named by the jits called directly in ``closed`` (when they agree): a jit
    without a backend runs a nested ``jit(f, backend=...)`` on that backend, the whole
    program fused together, as JAX propagates an inner jit's backend outwards."""
    named = {e.params.get("backend") for e in closed.jaxpr.eqns if e.primitive is jit_p}
    named.discard(None)
    return named.pop() if len(named) == 1 else None


def _closure_free(c):
    """A closed jaxpr with its consts turned into leading inputs (bound explicitly)."""
    if not c.consts:
        return c
    j = c.jaxpr
    return ClosedJaxpr(core.Jaxpr([], j.constvars + j.invars, j.outvars, j.eqns, j.debug_info),
                       [])


def _positional_names(fun):
    """(names of the positional parameters, name of ``*args`` or None)."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return [], None
    pos = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    var = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), None)
    return pos, var


def _is_arraylike(x):
    try:
        _leaf_aval(x)
        return True
    except TypeError:
        return False


def _infer_statics(fun, nums, names):
    nums = (nums,) if isinstance(nums, int) else tuple(nums)
    names = (names,) if isinstance(names, str) else tuple(names)
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return nums, names
    pos = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if nums and not names:
        names = tuple(pos[i] for i in nums if -len(pos) <= i < len(pos))
    elif names and not nums:
        nums = tuple(pos.index(n) for n in names if n in pos)
    return nums, names


def _explain(old, new, info, pos_names=()) -> str:
    """What changed between two cache keys, for the recompile warning and log."""
    (t0, a0, s0), (t1, a1, s1) = old, new
    if t0 != t1:
        return f"the argument structure changed: {t0} -> {t1}"
    names = list(info.arg_names) + [f"args[{i}]" for i in range(len(a1))]
    diffs = [f"argument '{names[i]}': {x.str_short()} -> {y.str_short()}"
             + (" (weak type)" if x.weak_type != y.weak_type else "")
             for i, (x, y) in enumerate(zip(a0, a1)) if x != y]
    d0, d1 = dict(s0), dict(s1)
    for k in d1:
        if k not in d0 or d0[k] != d1[k]:
            label = pos_names[k] if isinstance(k, int) and k < len(pos_names) else k
            diffs.append(f"static argument {label!r}: {d0.get(k)!r} -> {d1[k]!r}")
    return "; ".join(diffs) or "unknown"


class Traced:
    """The result of ``jit(f).trace(*args)``."""

    def __init__(self, jitted, entry):
        self._jitted = jitted
        self._entry = entry
        self.jaxpr = entry.closed
        self.out_info = tree_unflatten(entry.out_tree, [
            ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in entry.out_avals])

    def lower(self):
        return Lowered(self._jitted, self._entry)


class Lowered:
    """The optimized program (``.as_text()``); ``.compile()`` makes it executable."""

    def __init__(self, jitted, entry):
        self._jitted = jitted
        self._entry = entry
        self.jaxpr = entry.optimize()  # kept: compile() reuses it

    def as_text(self, dialect=None, *, debug_info=False):
        """The program's text. functrax has no MLIR/HLO: for every dialect (``None``,
        ``"stablehlo"``, ``"hlo"``) this is the optimized jaxpr, printed as JAX prints
        jaxprs; ``debug_info`` is accepted for JAX compatibility.

        Raises:
          ValueError: for an unknown dialect (JAX's message).
        """
        del debug_info
        if dialect not in (None, "stablehlo", "hlo", "mhlo"):
            raise ValueError(f"Unknown dialect {dialect!r}")
        return str(self.jaxpr)

    def compiler_ir(self, dialect=None):
        """The optimized jaxpr (functrax's compiler IR, for every dialect)."""
        self.as_text(dialect)
        return self.jaxpr

    def cost_analysis(self):
        """Estimated ``flops``, ``transcendentals`` and ``bytes accessed`` (a dict)."""
        from functrax.lowering.cost import cost_analysis
        return cost_analysis(self.jaxpr)

    def compile(self):
        self._entry.executable()
        return Compiled(self._jitted, self._entry)


class Compiled:
    """A compiled program: callable with the non-static arguments, ``.cost_analysis()``."""

    def __init__(self, jitted, entry):
        self._jitted = jitted
        self._entry = entry

    def as_text(self):
        exe = self._entry.exe
        if hasattr(exe, "as_text"):  # the triton backend: groups, kernels and fallbacks
            return exe.as_text()
        return str(self._entry.optimize())

    def cost_analysis(self):
        """Estimated ``flops``, ``transcendentals`` and ``bytes accessed`` (a dict); on the
        triton backend also one dict per kernel under ``'kernels'`` (bytes: what each kernel
        reads and writes)."""
        exe = self._entry.exe
        if hasattr(exe, "cost_analysis"):  # the triton backend: per fused kernel
            return exe.cost_analysis()
        from functrax.lowering.cost import cost_analysis
        return cost_analysis(self._entry.optimize())

    def __call__(self, *args, **kwargs):
        """Run on the dynamic arguments only (static ones were fixed by ``trace``/``lower``)."""
        leaves, in_tree = tree_flatten((list(args), dict(kwargs)))
        for x in leaves:
            if isinstance(x, core.Tracer):
                raise TypeError("Cannot apply functrax transformations to a function lowered "
                                "and compiled for a particular signature. Detected argument of "
                                f"Tracer type {type(x)}. Transform the jit-wrapped function "
                                "instead of its compiled form.")
        ref_tree, ref_avals, _ = self._entry.key
        if in_tree != ref_tree:
            raise TypeError(f"Function compiled with input pytree does not match the input "
                            f"pytree it was called with: compiled for {ref_tree}, called with "
                            f"{in_tree}. Pass the same (non-static) arguments as to lower().")
        self._check_avals(ref_avals, leaves)
        return tree_unflatten(self._entry.out_tree, self._jitted._call_entry(self._entry, leaves))

    @property
    def input_shardings(self):
        """The sharding of each argument, as ``(args, kwargs)`` (JAX's): the in_shardings
        given, else the device that runs the program."""
        args, kwargs = tree_unflatten(self._entry.key[0],
                                      JitShardings.reported(self._shardings_()[0]))
        return tuple(args), kwargs

    @property
    def output_shardings(self):
        """The sharding of each output (a pytree like the output): the out_shardings given
        (or a ``with_sharding_constraint`` producing it), else the device that runs it."""
        return tree_unflatten(self._entry.out_tree,
                              JitShardings.reported(self._shardings_()[1]))

    def _shardings_(self):
        j, e = self._jitted, self._entry
        if j._sharding_rules(e) is None:
            return [None] * len(e.key[1]), [None] * len(e.out_avals)
        return j._resolve_shardings(e)

    def _check_avals(self, ref_avals, leaves):
        j = self._jitted
        info = self._entry.closed.jaxpr.debug_info
        names = list(info.arg_names) if info is not None else []
        names += [f"args[{i}]" for i in range(len(names), len(leaves))]
        errors = []
        for i, (ref, x) in enumerate(zip(ref_avals, leaves)):
            aval = _leaf_aval(x) if _is_arraylike(x) else None
            if aval is None:
                raise _not_array_error(j._name, x, names[i])
            if (aval.shape, aval.dtype) != (ref.shape, ref.dtype):
                errors.append(f"Argument '{names[i]}' compiled with {_long(ref)} and called "
                              f"with {_long(aval)}")
        if errors:
            head = "The" if len(errors) < 5 else f"The first 5 of {len(errors)}"
            raise TypeError("Argument types differ from the types for which this computation "
                            f"was compiled. {head} mismatches are:\n" + "\n".join(errors[:5]))


def _long(aval):
    return f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]"


def jit(fun=None, *, in_shardings=UNSPECIFIED, out_shardings=UNSPECIFIED, static_argnums=(),
        static_argnames=(), donate_argnums=(), donate_argnames=(), backend=None, device=None):
    """Compile ``fun``: trace it once per argument signature, optimize, cache, execute fast.

    Args:
      fun: the function (or use ``@jit`` / ``@partial(jit, static_argnums=...)``).
      in_shardings / out_shardings: how the (non-static, positional) arguments / the
        outputs are laid out over devices: a pytree prefix of the arguments tuple / of the
        output whose leaves are Shardings (``NamedSharding(mesh, P(...))``), PartitionSpecs
        (over the mesh in scope) or None (unconstrained); one Sharding covers everything.
        An uncommitted argument is placed (``device_put``); a committed one
        (a ``MeshShardedArray``) must already have its sharding (else ValueError: it is
        never resharded silently). Outputs come back as ``MeshShardedArray`` with their
        out_sharding. The program itself runs on the global arrays.
      static_argnums / static_argnames: arguments that are hashable Python values; each
        new value compiles again. Given one, the other is inferred from the signature.
      donate_argnums / donate_argnames: arguments whose buffers the call may reuse; they
        cannot be used afterwards.
      backend, device: where to run: the numpy backend on the CPU by default;
        ``backend="triton"`` runs fused Triton kernels (on a CUDA GPU when one is present,
        outputs staying there; else in Triton's CPU interpreter). GPU-resident inputs
        (``functrax.device_put(x, functrax.devices("gpu")[0])``) select the Triton backend
        too.

    >>> import functrax.numpy as fnp
    >>> f = jit(lambda x: fnp.sin(x) * 2)
    >>> f(fnp.zeros(2))
    Array([0., 0.], dtype=float32)
    """
    if fun is None:
        return functools.partial(jit, in_shardings=in_shardings, out_shardings=out_shardings,
                                 static_argnums=static_argnums,
                                 static_argnames=static_argnames, donate_argnums=donate_argnums,
                                 donate_argnames=donate_argnames, backend=backend, device=device)
    if backend in ("gpu", "cuda") or (backend is None and getattr(device, "platform", "") == "gpu"):
        from functrax.runtime.gpu_devices import gpu_count, unknown_backend_error
        if not gpu_count():
            raise unknown_backend_error(backend or "gpu")
        backend = "triton"  # a CUDA GPU runs the Triton backend
    backends.get_backend(backend)  # raises for an unknown name, listing the available ones
    if not callable(fun):
        raise TypeError(f"jit: expected a function as its first argument, got {fun!r} of type "
                        f"{type(fun).__name__}")
    return JitFunction(fun, static_argnums, static_argnames, donate_argnums, donate_argnames,
                       backend, device, in_shardings, out_shardings)


def library_jit(fun, **options) -> JitFunction:
    """``jit(fun, **options)`` for a helper of the library itself (a sampler staged as JAX
    stages it, ``jit(_uniform)``): compiled once per shape like any jit, but a user who
    samples many shapes gets no :class:`RecompileWarning` about code they did not write."""
    f = jit(fun, **options)
    f.warn_recompiles = False
    return f


# --- the primitive ---




class disable_jit:
    """Context manager running jitted functions eagerly (for debugging with prints).

    >>> with disable_jit():
    ...     pass
    """

    def __init__(self, disable: bool = True):
        self.disable = disable

    def __enter__(self):
        self._prev = config.disable_jit
        config.update("disable_jit", self.disable)

    def __exit__(self, *exc):
        config.update("disable_jit", self._prev)


def block_until_ready(x):
    """Wait until every array in pytree ``x`` is computed (immediate on the numpy backend)."""
    for leaf in tree_flatten(x)[0]:
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x
