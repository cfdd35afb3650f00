"""``pmap``: run a function as one replica per device (SPMD), with collectives over the named
axis (JAX's legacy ``pmap`` semantics).

The function is traced once per argument signature (cached, as ``jit``) to a per-device
jaxpr with ``axis_name`` bound, optimized and compiled by the jit executor pipeline, and run
by the pmap runtime (``pmap_runtime.py``): one thread per device, the collectives talking
through the runtime. Outputs are :class:`~functrax.runtime.devices.ShardedArray` (one buffer per
device) that a following pmap consumes without gathering.

``pmap`` is also the call primitive ``xla_pmap`` (params as JAX's: ``call_jaxpr``,
``axis_name``, ``axis_size``, ``in_axes``, ``out_axes`` per flat operand/result, ...) with a
numpy rule and jvp / partial-eval / transpose / vmap rules, so ``grad(pmap(f))``,
``vmap(pmap(f))``, ``jit(pmap(f))`` and nested pmaps compose, as ``pmap(grad(f))`` does.

In a multi-process run (``functrax.distributed.initialize()``) a top-level pmap's axis is
global, as in JAX: each process passes its local shard (mapped size ``axis_size``, at most
its local device count), the per-device program is traced with the global size
(``global_axis_size`` = ``axis_size`` times the number of processes: ``psum(1, name)``,
``all_gather`` and ``axis_index`` see every device of every process), and the outputs hold
this process's replicas only.
"""
from __future__ import annotations

import functools
import inspect
import threading
import weakref

import numpy as np

from functrax import core
from functrax import primitives as P
from functrax.core import Array, Jaxpr
from functrax.runtime.devices import ShardedArray
from functrax.lowering.backends import default_backend_name, get_backend
from functrax.lowering.c.tiered import TieredProgram
from functrax.lowering.numpy.executor import compile_jaxpr
from functrax.lowering.numpy.rules import numpy_rules
from functrax.passes.inline import inline_closed
from functrax.passes.pipeline import optimize
from functrax.primitives import collectives as C
from functrax.primitives.calls import mapped_aval, unmapped_aval, xla_pmap_p
from functrax.core.tracing import DebugInfo, fun_name, fun_source, trace_to_jaxpr
from functrax.runtime import pmap_gpu
from functrax.runtime import pmap_runtime as rt
from functrax.transforms.ad import jvp_jaxpr
from functrax.transforms.batching import jaxpr_axis_names, batch_jaxpr, moveaxis, vmap_rules
from functrax.transforms.call_util import closure_convert
from functrax.transforms.jit import DeletedBuffer, check_hashable
from functrax.transforms.jvp import Zero, instantiate, jvp_rules
from functrax.transforms.partial_eval import partial_eval_closed, partial_eval_rules
from functrax.transforms.transpose import backward_pass, is_undefined, transpose_rules
from functrax.transforms.vmap import inconsistent_sizes_msg
from functrax.tree_util import (
    broadcast_prefix, keystr, tree_flatten, tree_flatten_with_path, tree_unflatten,
)

__all__ = ["pmap", "xla_pmap_p", "PmapFunction"]



# --- avals with and without the mapped axis ---


def _with(params, **changes):
    """``params`` with ``changes``; ``donated_invars`` resized (all False) to the new in_axes."""
    p = dict(params, **changes)
    if len(p["donated_invars"]) != len(p["in_axes"]):
        p["donated_invars"] = (False,) * len(p["in_axes"])
    return p


# --- replicas and execution ---

_REPLICAS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_tracing = threading.local()  # .depth: pmaps being traced in this thread (inner ones are local)


def inner_replicas(jaxpr: Jaxpr) -> int:
    """Devices each replica needs for the pmaps nested in ``jaxpr`` (1 if none)."""
    r = _REPLICAS.get(jaxpr)
    if r is None:
        r = 1
        for eqn in jaxpr.eqns:
            if eqn.primitive is xla_pmap_p:
                sub = eqn.params["call_jaxpr"].jaxpr
                r = max(r, eqn.params["axis_size"] * inner_replicas(sub))
            else:
                for sub in core.sub_jaxprs(eqn.params):
                    r = max(r, inner_replicas(sub))
        _REPLICAS[jaxpr] = r
    return r


_compiled: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _executable(closed, axis_name, axis_size, donated=(), backend=None):
    """The per-device program of ``closed``, compiled once per jaxpr object and backend
    (the numpy executor; the C backend's program with ``backend="c"``)."""
    per = _compiled.get(closed)
    if per is None:
        per = _compiled[closed] = {}
    name = default_backend_name() if backend is None else backend
    key = (donated, name if name in CPU_PROGRAM_BACKENDS else None)
    exe = per.get(key)
    if exe is None:
        with core.extend_axis_env(axis_name, axis_size):
            opt = optimize(closed)
            if key[1] is None:
                exe = compile_jaxpr(opt, donated=donated)
            elif key[1] == "auto":  # the C program built in the background, in this axis env
                def build():
                    with core.extend_axis_env(axis_name, axis_size):
                        return get_backend("c").compile_host(opt)
                exe = TieredProgram(opt, donated, compile_fn=build)
            else:
                exe = get_backend(key[1]).compile_host(opt)
            per[key] = exe
    return exe


# backends that compile a CPU replica's program themselves (the others: the numpy executor)
CPU_PROGRAM_BACKENDS = ("c", "auto")


def _pmap_numpy(*args, call_jaxpr, axis_name, axis_size, in_axes, out_axes, devices,
                global_axis_size, backend=None, **_):
    gpus = pmap_gpu.placement(devices, backend)
    if gpus is not None:  # on GPUs (transformed pmaps: grad, vmap...): results to the host
        outs, _ = pmap_gpu.run(call_jaxpr, axis_name, args, in_axes, axis_size, gpus,
                               gpus_given=devices is not None,
                               inner=inner_replicas(call_jaxpr.jaxpr),
                               global_size=global_axis_size)
        return [outs[0][k].to_numpy() if ax is None else
                np.stack([o[k].to_numpy() for o in outs], axis=ax)
                for k, ax in enumerate(out_axes)]
    groups, axis = rt.plan(axis_size, inner_replicas(call_jaxpr.jaxpr), devices,
                           global_axis_size)
    exe = _executable(call_jaxpr, axis_name, global_axis_size, backend=backend)
    vals = [np.asarray(a) for a in args]
    outs = rt.run_replicas(
        lambda i: exe.run(*[rt.take_shard(v, ax, i) for v, ax in zip(vals, in_axes)]),
        axis_name, groups, axis)
    return [outs[0][k] if ax is None else np.stack([o[k] for o in outs], axis=ax)
            for k, ax in enumerate(out_axes)]


numpy_rules[xla_pmap_p] = _pmap_numpy


# --- jvp ---


def _pmap_jvp(primals, tangents, **params):
    call, in_axes = params["call_jaxpr"], params["in_axes"]
    nonzero = [type(t) is not Zero for t in tangents]
    with core.extend_axis_env(params["axis_name"], params["global_axis_size"]):
        jclosed, consts = closure_convert(jvp_jaxpr(call, nonzero))
    nz_t = [t for t in tangents if type(t) is not Zero]
    new_in = ((None,) * len(consts) + tuple(in_axes)
              + tuple(ax for ax, nz in zip(in_axes, nonzero) if nz))
    outs = xla_pmap_p.bind(*consts, *primals, *nz_t, **_with(
        params, call_jaxpr=jclosed, in_axes=new_in, out_axes=tuple(params["out_axes"]) * 2,
        name=f"jvp({params['name']})"))
    n = len(call.out_avals)
    return outs[:n], outs[n:]


jvp_rules[xla_pmap_p] = _pmap_jvp


# --- partial evaluation: a known pmap (residuals stacked along axis 0) and an unknown one ---


def _pmap_partial_eval(trace, args, params):
    call, in_axes, out_axes = params["call_jaxpr"], params["in_axes"], params["out_axes"]
    unknowns = [trace.is_unknown(x) for x in args]
    known_args = [x for x, u in zip(args, unknowns) if not u]
    unknown_args = [x for x, u in zip(args, unknowns) if u]
    with core.set_current_trace(trace.parent):
        with core.extend_axis_env(params["axis_name"], params["global_axis_size"]):
            k_closed, u_closed, out_unk, num_res = partial_eval_closed(call, unknowns)
            k_closed, k_consts = closure_convert(k_closed)
        k_in = (None,) * len(k_consts) + tuple(ax for ax, u in zip(in_axes, unknowns) if not u)
        k_out = tuple(ax for ax, u in zip(out_axes, out_unk) if not u) + (0,) * num_res
        known = xla_pmap_p.bind(*k_consts, *known_args, **_with(
            params, call_jaxpr=k_closed, in_axes=k_in, out_axes=k_out)) \
            if k_closed.jaxpr.outvars else []
    k_outs, res = known[:len(known) - num_res], known[len(known) - num_res:]
    u_in = (0,) * num_res + tuple(ax for ax, u in zip(in_axes, unknowns) if u)
    u_out = tuple(ax for ax, u in zip(out_axes, out_unk) if u)
    u_outs = trace.stage(xla_pmap_p, list(res) + unknown_args, _with(
        params, call_jaxpr=u_closed, in_axes=u_in, out_axes=u_out)) if any(out_unk) else []
    k_it, u_it = iter(k_outs), iter(u_outs)
    return [next(u_it) if u else next(k_it) for u in out_unk]


partial_eval_rules[xla_pmap_p] = _pmap_partial_eval


# --- transpose: a pmap of the per-device backward pass ---


def _pmap_transpose(cts, *args, **params):
    call, in_axes, out_axes = params["call_jaxpr"], params["in_axes"], params["out_axes"]
    if any(ax is None for ax in out_axes):
        raise NotImplementedError("autodiff of pmap functions with out_axes=None is not "
                                  "supported. Consider using shard_map instead.")
    lin = [is_undefined(a) for a in args]
    nz = [type(c) is not Zero for c in cts]
    if not any(nz):
        return [Zero(a.aval) if u else None for a, u in zip(args, lin)]
    j = call.jaxpr
    lin_jaxpr = Jaxpr([v for v, u in zip(j.invars, lin) if not u],
                      [v for v, u in zip(j.invars, lin) if u], j.outvars, j.eqns)
    res = [a for a, u in zip(args, lin) if not u]
    res_axes = tuple(ax for ax, u in zip(in_axes, lin) if not u)
    lin_axes = [ax for ax, u in zip(in_axes, lin) if u]
    out_avals = call.out_avals
    res_avals = [unmapped_aval(core.get_aval(a), ax) for a, ax in zip(res, res_axes)]
    ct_avals = [a for a, z in zip(out_avals, nz) if z]

    # across processes, an unmapped input's cotangent is summed over the global axis inside
    spans = params["global_axis_size"] != params["axis_size"]

    def bwd(*flat):
        it = iter(flat[len(res):])
        cts_dev = [next(it) if z else Zero(a) for z, a in zip(nz, out_avals)]
        outs = [instantiate(c) for c in backward_pass(lin_jaxpr, list(flat[:len(res)]), cts_dev)]
        return [P.psum(o, params["axis_name"]) if spans and ax is None else o
                for o, ax in zip(outs, lin_axes)]

    with core.extend_axis_env(params["axis_name"], params["global_axis_size"]):
        t_closed, t_consts = closure_convert(trace_to_jaxpr(bwd, res_avals + ct_avals))
    t_in = ((None,) * len(t_consts) + res_axes
            + tuple(ax for ax, z in zip(out_axes, nz) if z))
    outs = xla_pmap_p.bind(*t_consts, *res, *[c for c in cts if type(c) is not Zero], **_with(
        params, call_jaxpr=t_closed, in_axes=t_in,
        out_axes=tuple((None if spans else 0) if ax is None else ax for ax in lin_axes),
        name=f"transpose({params['name']})"))
    # an unmapped (broadcast) input gets the sum of the devices' cotangents
    outs = iter([P.reduce_sum(o, (0,)) if ax is None and not spans else o
                 for o, ax in zip(outs, lin_axes)])
    return [next(outs) if u else None for u in lin]


transpose_rules[xla_pmap_p] = _pmap_transpose


# --- vmap: the batch axis goes first, before the pmapped axis ---


def _pmap_vmap(axis, vals, dims, **params):
    in_axes, out_axes = params["in_axes"], params["out_axes"]
    new_vals, new_in, dev_dims = [], [], []
    for v, d, ax in zip(vals, dims, in_axes):
        if d is None:
            new_vals.append(v)
            new_in.append(ax)
            dev_dims.append(None)
        else:
            new_vals.append(moveaxis(v, d, 0))
            new_in.append(None if ax is None else ax + 1)
            dev_dims.append(0)

    def place(i, v, d):
        return v if d is None else moveaxis(v, d, 0)

    with core.extend_axis_env(params["axis_name"], params["global_axis_size"]):
        batched, out_dims = batch_jaxpr(params["call_jaxpr"], axis, dev_dims, place)
    batched, consts = closure_convert(batched)
    new_out = tuple(ax if d is None else (None if ax is None else ax + 1)
                    for ax, d in zip(out_axes, out_dims))
    outs = xla_pmap_p.bind(*consts, *new_vals, **_with(
        params, call_jaxpr=batched, in_axes=(None,) * len(consts) + tuple(new_in),
        out_axes=new_out))
    return outs, [None if d is None else 0 for d in out_dims]


vmap_rules[xla_pmap_p] = _pmap_vmap


# --- replication: which per-device outputs may differ between devices ---

_REPLICATING = (C.psum_p, C.pmax_p, C.pmin_p, C.all_gather_p)


def varying_outputs(closed, in_axes, axis_name) -> list:
    """For each output of the per-device program: may it differ between the devices of
    ``axis_name``? (Mapped inputs and ``axis_index`` vary; psum/pmax/pmin/all_gather over
    the axis make a value the same everywhere; anything else varies if an input does.)"""
    j = inline_closed(closed).jaxpr
    varying = {v for v, ax in zip(j.invars, in_axes) if ax is not None}
    for eqn in j.eqns:
        prim = eqn.primitive
        names = C.axis_names(eqn.params.get("axes", eqn.params.get("axis_name")))
        if prim in _REPLICATING and axis_name in names:
            continue
        vary = any(type(v) is not core.Literal and v in varying for v in eqn.invars)
        if not vary and axis_name is not None:
            vary = (prim is C.axis_index_p and axis_name in names) or any(
                axis_name in jaxpr_axis_names(s) for s in core.sub_jaxprs(eqn.params))
        if vary:
            varying.update(eqn.outvars)
    return [type(v) is not core.Literal and v in varying for v in j.outvars]


# --- the user-facing transformation ---


def _check_axes_spec(spec, what):
    leaves, _ = tree_flatten(spec, is_leaf=lambda x: x is None)
    for leaf in leaves:
        if leaf is not None and (not isinstance(leaf, int) or isinstance(leaf, bool)):
            raise TypeError(f"pmap {what} must be an int, None, or (nested) container with "
                            f"those types as leaves, but got {spec}.")


class _Entry:
    """One traced signature: per-device jaxpr, output structure and axes, executables."""

    __slots__ = ("closed", "call_jaxpr", "consts", "out_tree", "out_axes", "out_avals",
                 "inner", "consts_are_tracers")

    def __init__(self, closed, out_tree, out_axes):
        self.closed = closed
        self.call_jaxpr, self.consts = closure_convert(closed)
        self.out_tree = out_tree
        self.out_axes = out_axes
        self.out_avals = closed.out_avals
        self.inner = inner_replicas(closed.jaxpr)
        self.consts_are_tracers = any(isinstance(c, core.Tracer) for c in closed.consts)


class PmapFunction:
    """A pmapped function (see :func:`pmap`)."""

    def __init__(self, fun, axis_name, in_axes, out_axes, static_broadcasted_argnums, devices,
                 backend, axis_size, donate_argnums):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.axis_name = axis_name
        self.in_axes = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        self.out_axes = out_axes
        nums = static_broadcasted_argnums
        self.static_argnums = (nums,) if isinstance(nums, int) else tuple(nums)
        self.donate_argnums = (donate_argnums,) if isinstance(donate_argnums, int) else \
            tuple(donate_argnums)
        self.devices = None if devices is None else tuple(devices)
        self.backend = backend
        self.axis_size = axis_size
        self._name = fun_name(fun)
        self._cache: dict = {}
        try:
            self._params = [p.name for p in inspect.signature(fun).parameters.values()
                            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            self._params = []

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __repr__(self):
        return f"<functrax.pmap of {self._name}>"

    def _cache_size(self) -> int:
        return len(self._cache)

    # --- flattening the arguments ---

    def _flatten(self, args, kwargs):
        n = len(args)
        static_pos = {i % n for i in self.static_argnums if -n <= i < n} if n else set()
        statics = []
        for i in sorted(static_pos):
            check_hashable(args[i], f"static argument {i}")
            statics.append((i, args[i]))
        dyn_idx = [i for i in range(n) if i not in static_pos]
        dyn = tuple(args[i] for i in dyn_idx)
        if isinstance(self.in_axes, tuple):
            if len(self.in_axes) != n:
                raise ValueError("pmap in_axes must be an int, None, or a tuple of entries "
                                 "corresponding to the positional arguments passed to the "
                                 f"function, but got len(in_axes)={len(self.in_axes)}, "
                                 f"len(args)={n}")
            spec = tuple(self.in_axes[i] for i in dyn_idx)
        else:
            spec = (self.in_axes,) * len(dyn)
        tree = (dyn, kwargs)
        flat, in_tree = tree_flatten(tree)
        try:
            axes = broadcast_prefix((spec, {k: 0 for k in kwargs}), tree,
                                    is_leaf=lambda x: x is None)
        except ValueError:
            raise ValueError(f"pmap in_axes specification must be a tree prefix of the "
                             f"corresponding value, got specification {self.in_axes} for value "
                             f"tree {tree_flatten(dyn)[1]}.") from None
        names = _Lazy(lambda: self._leaf_names(dyn_idx, dyn, kwargs))  # for messages only
        axes = [_normalize_in_axis(ax, x, names, k) for k, (ax, x) in enumerate(zip(axes, flat))]
        return flat, in_tree, axes, names, tuple(statics), static_pos

    def _leaf_names(self, dyn_idx, dyn, kwargs):
        names = []
        for i, a in zip(dyn_idx, dyn):
            base = f"argument {self._params[i]}" if i < len(self._params) else \
                f"argument args[{i}]"
            names.extend(base + keystr(p) for p, _ in tree_flatten_with_path(a)[0])
        for k in sorted(kwargs):
            names.extend(f"kwargs[{k!r}]" + keystr(p)
                         for p, _ in tree_flatten_with_path(kwargs[k])[0])
        return names

    def _size(self, flat, axes, names):
        sizes = {core.get_aval(x).shape[ax] for x, ax in zip(flat, axes) if ax is not None}
        if self.axis_size is not None:
            sizes.add(int(self.axis_size))
        if not sizes:
            raise ValueError("pmap requires at least one argument with a mapped axis (in_axes "
                             "not None) or axis_size=... to know how many devices to run on")
        if len(sizes) > 1:
            msg = inconsistent_sizes_msg(flat, axes, names(), self.axis_size)
            raise ValueError(msg.replace("vmap got", "pmap got", 1))
        return sizes.pop()

    # --- tracing ---

    def _trace(self, args, kwargs, flat, in_tree, axes, names, global_size, static_pos):
        avals = [unmapped_aval(core.get_aval(x), ax) for x, ax in zip(flat, axes)]
        info = DebugInfo(self._name, fun_source(self.fun), names(), "pmap")
        box = []

        def flat_fun(*tracers):
            dyn, kw = tree_unflatten(in_tree, list(tracers))
            it = iter(dyn)
            full = [args[i] if i in static_pos else next(it) for i in range(len(args))]
            out = self.fun(*full, **kw)
            leaves, out_tree = tree_flatten(out)
            box.append(out_tree)
            return leaves

        _tracing.depth = getattr(_tracing, "depth", 0) + 1
        try:
            with core.extend_axis_env(self.axis_name, global_size):
                closed = trace_to_jaxpr(flat_fun, avals, info)
        finally:
            _tracing.depth -= 1
        out_tree = box[0]
        out_axes = self._flat_out_axes(closed, out_tree, axes)
        return _Entry(closed, out_tree, out_axes)

    def _flat_out_axes(self, closed, out_tree, in_axes):
        struct = tree_unflatten(out_tree, [0] * out_tree.num_leaves)
        try:
            flat = broadcast_prefix(self.out_axes, struct, is_leaf=lambda x: x is None)
            spec_paths, spec_tree = tree_flatten_with_path(self.out_axes,
                                                           is_leaf=lambda x: x is None)
            which = broadcast_prefix(tree_unflatten(spec_tree, list(range(len(spec_paths)))),
                                     struct, is_leaf=lambda x: x is None)
        except ValueError:
            raise ValueError(f"pmap out_axes specification must be a tree prefix of the "
                             f"corresponding value, got specification {self.out_axes} for value "
                             f"tree {out_tree}.") from None
        out = []
        varying = None
        for k, (ax, aval) in enumerate(zip(flat, closed.out_avals)):
            if ax is None:
                if varying is None:
                    varying = varying_outputs(closed, in_axes, self.axis_name)
                if varying[k]:
                    path = keystr(spec_paths[which[k]][0])
                    raise ValueError(
                        f"pmap has mapped output but out_axes is None (at out_axes{path}): "
                        f"output {k} may differ between the devices of axis "
                        f"{self.axis_name!r}. Reduce it over the axis first (lax.psum, "
                        "lax.pmean, lax.all_gather) or return it mapped (out_axes=0).")
                out.append(None)
                continue
            nd = aval.ndim + 1
            if not -nd <= ax < nd:
                raise ValueError(f"pmap out_axes={ax} is out of range for output {k} of rank "
                                 f"{nd} (with the mapped axis)")
            out.append(ax % nd)
        return tuple(out)

    # --- calling ---

    def _key(self, args, kwargs):
        """(cache key, flat args, axes, size, in_tree, global size, names, static_pos)."""
        if not args and not kwargs and self.axis_size is None:
            raise ValueError("pmap wrapped function must be passed at least one argument "
                             "containing an array, got empty *args=() and **kwargs={}")
        flat, in_tree, axes, names, statics, static_pos = self._flatten(args, kwargs)
        size = self._size(flat, axes, names)
        gsize = rt.global_axis_size(size, self.devices, getattr(_tracing, "depth", 0) > 0)
        avals = tuple(unmapped_aval(core.get_aval(x), ax) for x, ax in zip(flat, axes))
        env = tuple((f.name, f.size) for f in core.axis_env())
        key = (in_tree, tuple(axes), avals, statics, size, gsize, env)
        return key, flat, axes, size, in_tree, gsize, names, static_pos

    def _get_entry(self, args, kwargs):
        key, flat, axes, size, in_tree, gsize, names, static_pos = self._key(args, kwargs)
        entry = self._cache.get(key)
        if entry is None:
            entry = self._trace(args, kwargs, flat, in_tree, axes, names, gsize, static_pos)
            if not entry.consts_are_tracers:
                self._cache[key] = entry
        return entry, key, flat, axes, size, in_tree, gsize

    # --- ahead-of-time stages (as jit's) ---

    def trace(self, *args, **kwargs):
        """Trace without running: a ``Traced`` (``.jaxpr`` per device, ``.out_info``,
        ``.lower()``)."""
        from functrax.transforms.pmap_stages import PmapTraced
        entry, key, _, _, size, _, _ = self._get_entry(args, kwargs)
        return PmapTraced(self, entry, key, size)

    def lower(self, *args, **kwargs):
        """Trace and optimize: a ``Lowered`` (``.as_text()``, ``.compile()``)."""
        return self.trace(*args, **kwargs).lower()

    def __call__(self, *args, **kwargs):
        entry, key, flat, axes, size, in_tree, gsize = self._get_entry(args, kwargs)
        if type(core.current_trace()) is core.EvalTrace and not entry.consts_are_tracers:
            outs = self._run(entry, flat, axes, size, in_tree, gsize)
        else:
            n_c = len(entry.consts)
            donated = self._donated(in_tree, len(flat))
            outs = xla_pmap_p.bind(
                *entry.consts, *flat, call_jaxpr=entry.call_jaxpr, axis_name=self.axis_name,
                axis_size=size, global_axis_size=gsize, devices=self.devices,
                backend=self.backend, name=self._name, in_axes=(None,) * n_c + tuple(axes),
                out_axes=entry.out_axes,
                donated_invars=(False,) * n_c + tuple(i in donated for i in range(len(flat))),
                is_explicit_global_axis_size=False)
        return tree_unflatten(entry.out_tree, outs)

    def _donated(self, in_tree, n_leaves):
        """Flat indices of the leaves of the donated (dynamic, positional) arguments."""
        if not self.donate_argnums:
            return set()
        dyn, _ = tree_unflatten(in_tree, list(range(n_leaves)))
        n = len(dyn) + len(self.static_argnums)
        dyn_idx = [i for i in range(n) if i not in {s % n for s in self.static_argnums}]
        out = set()
        for pos, i in enumerate(dyn_idx):
            if i in self.donate_argnums and pos < len(dyn):
                out.update(tree_flatten(dyn[pos])[0])
        return out

    def _run(self, entry, flat, axes, size, in_tree, gsize):
        donated = tuple(sorted(self._donated(in_tree, len(flat))))
        gpus = pmap_gpu.placement(self.devices, self.backend, flat)
        if gpus is not None:
            return self._run_gpu(entry, flat, axes, size, gsize, gpus, donated)
        groups, axis = rt.plan(size, entry.inner, self.devices, gsize)
        per_dev = [[] for _ in range(size)]
        for x, ax in zip(flat, axes):
            if type(x) is ShardedArray and ax is not None and x._axis == ax and \
                    x._shards is not None and len(x._shards) == size:
                for i, s in enumerate(x._shards):  # no gather: each device gets its shard
                    per_dev[i].append(s)
                continue
            v = rt.host_value(x)
            for i in range(size):
                per_dev[i].append(rt.take_shard(v, ax, i))
        for i in donated:
            _delete(flat[i])
        exe = _executable(entry.closed, self.axis_name, gsize, donated, self.backend)

        def body(i):
            vals, per_dev[i] = per_dev[i], None
            return exe.run_consuming(vals) if donated else exe.run(*vals)

        outs = rt.run_replicas(body, self.axis_name, groups, axis)
        devs = [g[0] for g in groups]
        results = []
        for k, (ax, aval) in enumerate(zip(entry.out_axes, entry.out_avals)):
            if ax is None:
                results.append(Array._make(outs[0][k], aval))
            else:
                results.append(ShardedArray._make([o[k] for o in outs], ax, devs,
                                                  mapped_aval(aval, size, ax)))
        return results


    def _run_gpu(self, entry, flat, axes, size, gsize, gpus, donated):
        """On GPUs (``pmap_gpu``): GPU-sharded outputs, GPU-resident inputs kept there."""
        outs, devs = pmap_gpu.run(entry.closed, self.axis_name, flat, axes, size, gpus,
                                  gpus_given=self.devices is not None, inner=entry.inner,
                                  global_size=gsize, donated=donated,
                                  before=lambda: [_delete(flat[i]) for i in donated])
        return pmap_gpu.wrap_outputs(outs, devs, entry.out_axes, entry.out_avals, size,
                                     mapped_aval)


class _Lazy:
    """A value computed on first call (leaf names: needed only for messages and tracing)."""

    __slots__ = ("_fn", "_val")

    def __init__(self, fn):
        self._fn, self._val = fn, None

    def __call__(self):
        if self._val is None:
            self._val = self._fn()
        return self._val


def _normalize_in_axis(ax, x, names, k):
    if ax is None:
        return None
    if not core.is_arraylike(x):
        raise ValueError(f"pmap was asked to map {names()[k]} of type {type(x).__name__} along an "
                         "axis, but only arrays can be mapped; use in_axes=None for it or "
                         "mark it static (static_broadcasted_argnums)")
    shape = core.get_aval(x).shape
    if not -len(shape) <= ax < len(shape):
        raise ValueError(f"pmap was requested to map its argument along axis {ax}, which "
                         f"implies that its rank should be at least {max(ax + 1, -ax)}, but is "
                         f"only {len(shape)} (its shape is {shape})")
    return ax % len(shape)


def _delete(x):
    if isinstance(x, ShardedArray):
        x.delete()
    elif type(x) is Array:
        x._value = DeletedBuffer(x.aval)


def pmap(fun=None, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, backend=None, axis_size=None, donate_argnums=()):
    """Run ``fun`` as one replica per device along a mapped axis (SPMD), like JAX's pmap.

    Each device gets one slice of the mapped arguments; collectives (``lax.psum``,
    ``lax.pmean``, ``lax.all_gather``, ``lax.ppermute``, ...) over ``axis_name``
    communicate between the replicas. The function is traced and compiled once per argument
    signature; the replicas run concurrently, one thread per (virtual CPU) device.

    Args:
      fun: the per-device function (pytrees allowed).
      axis_name: the name collectives refer to.
      in_axes: as ``vmap``: an int, None (broadcast to every device) or a tuple with one
        pytree prefix per positional argument. Keyword arguments are mapped over axis 0.
      out_axes: where the mapped axis goes in each output; None: the output must be the same
        on every device (e.g. a ``psum``) and is returned once.
      static_broadcasted_argnums: positional arguments that are hashable Python values,
        passed to every replica as they are (each new value traces again).
      devices: the devices to run on (default: the first ones of ``local_devices()``, or of
        ``devices("gpu")`` when the inputs are GPU-resident or ``backend="gpu"``). In
        a multi-process run (``functrax.distributed.initialize()``) the axis spans every
        process: each passes its local shard, collectives and ``axis_index`` are global.
      backend: None, "cpu", or "gpu" / "cuda": run on the CUDA GPUs (see ``pmap_gpu``:
        the per-device program is compiled by the Triton backend, collectives go through
        NCCL when nccl4py is installed). GPU ``devices`` or GPU-resident inputs (``GpuArray``,
        a GPU pmap's output) also select the GPUs; otherwise pmap runs on the CPU devices.
      axis_size: the mapped size, needed only when no argument is mapped.
      donate_argnums: arguments whose buffers the call may reuse; they are deleted.

    Returns:
      Outputs with the mapped axis (``ShardedArray``: one buffer per device).

    Raises:
      ValueError: more replicas than devices ("compiling computation that requires N
        logical devices, but only M XLA devices are available (num_replicas=N)"),
        inconsistent mapped sizes, or a mapped output whose out_axes is None.
      NameError: a collective over an axis name that no pmap/vmap binds.
      CollectiveTimeoutError: a collective that some replica never reaches (after
        ``config.collective_timeout_s`` seconds).

    >>> import functrax, functrax.numpy as fnp
    >>> n = functrax.local_device_count()
    >>> from functrax import lax
    >>> f = pmap(lambda x: x - lax.pmean(x, "i"), axis_name="i")
    >>> f(fnp.arange(float(n))).shape == (n,)
    True
    """
    if fun is None:
        return functools.partial(pmap, axis_name=axis_name, in_axes=in_axes,
                                 out_axes=out_axes,
                                 static_broadcasted_argnums=static_broadcasted_argnums,
                                 devices=devices, backend=backend, axis_size=axis_size,
                                 donate_argnums=donate_argnums)
    if not callable(fun):
        raise TypeError(f"pmap: expected a function as its first argument, got {fun!r} of type "
                        f"{type(fun).__name__}")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if isinstance(in_axes, dict):
        raise TypeError("pmap in_axes must be an int, None, or a tuple of entries corresponding "
                        f"to the positional arguments passed to the function, but got {in_axes}.")
    _check_axes_spec(in_axes, "in_axes")
    _check_axes_spec(out_axes, "out_axes")
    if backend not in (None, "cpu", "numpy") + CPU_PROGRAM_BACKENDS + pmap_gpu.GPU_BACKENDS:
        raise ValueError(f"pmap: unknown backend {backend!r}; functrax runs pmap on CPU "
                         "devices (backend='cpu' or None; 'c' compiles each replica's "
                         "program to C) or CUDA GPUs (backend='gpu')")
    if backend in pmap_gpu.GPU_BACKENDS:
        from functrax.runtime.gpu_devices import gpu_count, unknown_backend_error
        if not gpu_count():
            raise unknown_backend_error(backend)
    if devices is not None:
        from functrax.runtime.devices import Device
        devices = list(devices)
        bad = [d for d in devices if not isinstance(d, Device)]
        if bad:
            raise TypeError(f"pmap: devices must be Device objects (functrax.devices()), got "
                            f"{bad[0]!r}")
        pmap_gpu.placement(devices, backend)  # one platform
    return PmapFunction(fun, axis_name, in_axes, out_axes, static_broadcasted_argnums, devices,
                        backend, axis_size, donate_argnums)

# check_jaxpr binds the mapped axis while checking the sub-jaxpr (its collectives name it)
core.axis_binding_rules[xla_pmap_p] = lambda params: (params["axis_name"],
                                                      params["global_axis_size"])
