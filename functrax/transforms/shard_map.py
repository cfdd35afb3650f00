"""``shard_map``: run a function once per device of a mesh on each device's block of the
inputs, with collectives over the mesh axes (JAX's ``jax.shard_map``).

The function is traced once per argument signature to a per-device jaxpr, with every
(manual) mesh axis bound as a named axis, and bound as the call primitive ``shard_map``
(``functrax/primitives/shard_map.py``). Its numpy rule runs one replica per mesh device on
the pmap runtime (``pmap_runtime.run_replicas``), one nested level per mesh axis, so a mesh
``(data=2, model=4)`` behaves like nested named axes: a collective over ``"model"`` meets the
devices that share the ``"data"`` coordinate, one over ``("data", "model")`` meets all.

Rules, so that it composes with the other transformations:

- jvp: a shard_map of the JVP jaxpr (tangents laid out as their primals);
- partial evaluation: a known shard_map whose residuals are returned split over every
  mesh axis along dimension 0 (scalars promoted to shape (1,)), and an unknown one;
- transpose (as JAX's ``check_rep=False`` rule): a replicated output's cotangent is divided
  by the number of devices holding it, each device runs the backward pass of its program
  (``psum`` transposes to ``psum``), and an input's cotangent is summed (``psum``) over the
  mesh axes its in_spec does not name; so the gradient of a shard_map equals the gradient
  of the same computation on the global arrays;
- vmap: the batch dimension goes first, unsplit (``None`` prepended to the specs);
- jit: the jit executor runs the numpy rule.
"""
from __future__ import annotations

import math
import weakref
from contextlib import ExitStack, contextmanager

import numpy as np

from functrax import core, dtypes
from functrax import primitives as P
from functrax.core.tracing import trace_to_jaxpr
from functrax.lowering.cost import cost_analysis, cost_rules
from functrax.lowering.numpy.executor import compile_jaxpr
from functrax.lowering.numpy.rules import numpy_rules
from functrax.passes.pipeline import optimize
from functrax.primitives.shard_map import entry_names, global_aval, shard_map_p
from functrax.runtime import pmap_runtime as rt
from functrax.runtime.devices import process_index
from functrax.runtime.mesh import Mesh
from functrax.runtime.shardings import PartitionSpec, block_index
from functrax.transforms.ad import jvp_jaxpr
from functrax.transforms.batching import batch_jaxpr, moveaxis, vmap_rules
from functrax.transforms.call_util import closure_convert
from functrax.transforms.jvp import Zero, instantiate, jvp_rules
from functrax.transforms.partial_eval import partial_eval_closed, partial_eval_rules
from functrax.transforms.transpose import backward_pass, is_undefined, transpose_rules

__all__ = ["shard_map_p", "mesh_axis_env", "spec_axes"]

_REPLICATED = PartitionSpec()


def spec_axes(spec) -> frozenset:
    """The mesh axes a spec names."""
    return frozenset(n for e in spec for n in entry_names(e))


def spec_dims(spec, ndim: int) -> tuple:
    """One tuple of mesh axis names per dimension."""
    entries = tuple(spec) + (None,) * (ndim - len(spec))
    return tuple(entry_names(e) for e in entries)


@contextmanager
def mesh_axis_env(mesh: Mesh, axes):
    """Bind each mesh axis of ``axes`` as a named axis (for tracing / evaluating the body)."""
    with ExitStack() as stack:
        for a in axes:
            stack.enter_context(core.extend_axis_env(a, mesh.shape[a]))
        yield


@contextmanager
def _env(params):
    """The mesh axes bound, and typed by variance when the shard_map checks it (its body's
    transformations then follow JAX's check_vma rules: psum transposes to pvary, pvary to
    psum)."""
    typed = frozenset(params["manual_axes"]) if params["check_vma"] else frozenset()
    with mesh_axis_env(params["mesh"], params["manual_axes"]), core.vma_axes(typed):
        yield


def _with(params, **changes):
    return dict(params, **changes)


# --- running the per-device program ---

_compiled: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _executable(closed, mesh, axes):
    """The per-device program of ``closed`` compiled by the numpy executor (once per jaxpr
    object and axis sizes)."""
    per = _compiled.get(closed)
    if per is None:
        per = _compiled[closed] = {}
    key = tuple((a, mesh.shape[a]) for a in axes)
    exe = per.get(key)
    if exe is None:
        with mesh_axis_env(mesh, axes):
            exe = per[key] = compile_jaxpr(optimize(closed))
    return exe


def _manual_devices(mesh: Mesh, axes) -> np.ndarray:
    """The devices of the manual ``axes`` (in that order), the first device along the others
    (an auto axis holds copies: one of them computes)."""
    idx = tuple(slice(None) if n in axes else 0 for n in mesh.axis_names)
    sub = mesh.devices[idx]
    kept = [n for n in mesh.axis_names if n in axes]
    return np.transpose(sub, [kept.index(a) for a in axes]) if kept else sub


def run_on_mesh(mesh: Mesh, axes, body) -> list:
    """``body(coords)`` (``coords``: mesh axis -> position) once per device of the ``axes``
    of ``mesh``, concurrently; the results in row-major order over ``axes``.

    Each axis is one nested level of :func:`pmap_runtime.run_replicas`, so a collective
    over some of the axes meets the devices that share the positions on the others.
    """
    devs = _manual_devices(mesh, axes)
    me = process_index()
    if any(d.process_index != me for d in np.asarray(devs).reshape(-1)):
        raise NotImplementedError(
            "shard_map over a mesh whose devices belong to several processes is not "
            "supported yet (each process would run its own devices' blocks); use a mesh of "
            "this process's devices (functrax.local_devices()) or pmap")
    sizes = [mesh.shape[a] for a in axes]

    def level(k, prefix):
        if k == len(axes):
            return [body(dict(zip(axes, prefix)))]
        groups = [list(np.asarray(devs[prefix + (i,)]).reshape(-1)) for i in range(sizes[k])]
        res = rt.run_replicas(lambda i: level(k + 1, prefix + (i,)), axes[k], groups)
        return [r for sub in res for r in sub]

    return level(0, ())


def _coords_list(mesh, axes) -> list:
    return [dict(zip(axes, idx)) for idx in np.ndindex(*[mesh.shape[a] for a in axes])]


def run_blocks(args, *, jaxpr, mesh, in_specs, out_specs, manual_axes):
    """Run the per-device program on the blocks of ``args`` (numpy arrays); returns, per
    output, ``(global shape, [(coords, block), ...])``."""
    axes = tuple(manual_axes)
    exe = _executable(jaxpr, mesh, axes)
    vals = [np.asarray(a) for a in args]
    dims = [spec_dims(s, v.ndim) for s, v in zip(in_specs, vals)]
    shape = mesh.shape

    def body(coords):
        blocks = [v[block_index(coords, d, v.shape, shape) + (Ellipsis,)]
                  for v, d in zip(vals, dims)]
        return exe.run(*blocks)

    outs = run_on_mesh(mesh, axes, body) if axes else [body({})]
    return outs, _coords_list(mesh, axes)


def assemble(outs, coords, out_specs, out_avals, mesh):
    """The global numpy value of each output from its per-device blocks (the first copy of
    a replicated block)."""
    result = []
    for k, (spec, aval) in enumerate(zip(out_specs, out_avals)):
        g = np.empty(aval.shape, core.physical_aval(aval).dtype)
        dims = spec_dims(spec, len(aval.shape))
        used = {n for names in dims for n in names}
        for o, c in zip(outs, coords):
            if all(i == 0 for a, i in c.items() if a not in used):
                g[block_index(c, dims, aval.shape, mesh.shape)] = o[k]
        result.append(g)
    return result


def _shard_map_numpy(*args, jaxpr, mesh, in_specs, out_specs, check_vma, manual_axes):
    outs, coords = run_blocks(args, jaxpr=jaxpr, mesh=mesh, in_specs=in_specs,
                              out_specs=out_specs, manual_axes=manual_axes)
    avals = [global_aval(a, s, mesh.shape) for a, s in zip(jaxpr.out_avals, out_specs)]
    return assemble(outs, coords, out_specs, avals, mesh)


numpy_rules[shard_map_p] = _shard_map_numpy


def _shard_map_cost(eqn):  # every device runs the body
    c = cost_analysis(eqn.params["jaxpr"])
    n = math.prod(eqn.params["mesh"].shape[a] for a in eqn.params["manual_axes"])
    return n * c["flops"], n * c["transcendentals"]


cost_rules[shard_map_p] = _shard_map_cost
# check_jaxpr binds every manual mesh axis while checking the body
core.axis_binding_rules[shard_map_p] = lambda params: [
    (a, params["mesh"].shape[a]) for a in params["manual_axes"]]


# --- jvp ---


def _shard_map_jvp(primals, tangents, **params):
    closed, in_specs = params["jaxpr"], params["in_specs"]
    nonzero = [type(t) is not Zero for t in tangents]
    with _env(params):
        jclosed, consts = closure_convert(jvp_jaxpr(closed, nonzero))
    nz_t = [t for t in tangents if type(t) is not Zero]
    new_in = ((_REPLICATED,) * len(consts) + tuple(in_specs)
              + tuple(s for s, nz in zip(in_specs, nonzero) if nz))
    outs = shard_map_p.bind(*consts, *primals, *nz_t, **_with(
        params, jaxpr=jclosed, in_specs=new_in, out_specs=tuple(params["out_specs"]) * 2))
    n = len(closed.out_avals)
    return outs[:n], outs[n:]


jvp_rules[shard_map_p] = _shard_map_jvp


# --- partial evaluation ---


def _promote_scalar_residuals(k_closed, u_closed, num_res):
    """Residuals of rank 0 as shape (1,) (they are split over the mesh along dim 0)."""
    n_out = len(k_closed.out_avals)
    res_avals = k_closed.out_avals[n_out - num_res:]
    scalar = [a.ndim == 0 for a in res_avals]
    if not any(scalar):
        return k_closed, u_closed

    def k_fun(*args):
        outs = core.eval_jaxpr(k_closed.jaxpr, k_closed.consts, *args)
        res = [P.reshape(r, (1,)) if s else r for r, s in zip(outs[n_out - num_res:], scalar)]
        return list(outs[:n_out - num_res]) + res

    def u_fun(*args):
        res = [P.reshape(r, ()) if s else r for r, s in zip(args[:num_res], scalar)]
        return core.eval_jaxpr(u_closed.jaxpr, u_closed.consts, *res, *args[num_res:])

    u_avals = ([a.update(shape=(1,)) if s else a
                for a, s in zip(u_closed.in_avals[:num_res], scalar)]
               + list(u_closed.in_avals[num_res:]))
    return trace_to_jaxpr(k_fun, k_closed.in_avals), trace_to_jaxpr(u_fun, u_avals)


def _res_spec(params):
    axes = tuple(params["manual_axes"])
    return PartitionSpec(axes) if axes else _REPLICATED


def _shard_map_partial_eval(trace, args, params):
    closed, in_specs, out_specs = params["jaxpr"], params["in_specs"], params["out_specs"]
    unknowns = [trace.is_unknown(x) for x in args]
    known_args = [x for x, u in zip(args, unknowns) if not u]
    unknown_args = [x for x, u in zip(args, unknowns) if u]
    res_spec = _res_spec(params)
    with core.set_current_trace(trace.parent):
        with _env(params):
            k_closed, u_closed, out_unk, num_res = partial_eval_closed(closed, unknowns)
            k_closed, u_closed = _promote_scalar_residuals(k_closed, u_closed, num_res)
            k_closed, k_consts = closure_convert(k_closed)
        k_in = (_REPLICATED,) * len(k_consts) + tuple(
            s for s, u in zip(in_specs, unknowns) if not u)
        k_out = tuple(s for s, u in zip(out_specs, out_unk) if not u) + (res_spec,) * num_res
        known = shard_map_p.bind(*k_consts, *known_args, **_with(
            params, jaxpr=k_closed, in_specs=k_in, out_specs=k_out)) \
            if k_closed.jaxpr.outvars else []
    k_outs, res = known[:len(known) - num_res], known[len(known) - num_res:]
    u_in = (res_spec,) * num_res + tuple(s for s, u in zip(in_specs, unknowns) if u)
    u_out = tuple(s for s, u in zip(out_specs, out_unk) if u)
    u_outs = trace.stage(shard_map_p, list(res) + unknown_args, _with(
        params, jaxpr=u_closed, in_specs=u_in, out_specs=u_out)) if any(out_unk) else []
    k_it, u_it = iter(k_outs), iter(u_outs)
    return [next(u_it) if u else next(k_it) for u in out_unk]


partial_eval_rules[shard_map_p] = _shard_map_partial_eval


# --- transpose ---


def _unmentioned(params, spec) -> tuple:
    """The manual mesh axes a spec does not name (the value is replicated over them)."""
    named = spec_axes(spec)
    return tuple(a for a in params["manual_axes"] if a not in named)


def _split_replicated_ct(ct, spec, params):
    """A replicated output's cotangent shared among its copies (each device seeds
    ``ct / copies``, the backward pass of a psum sums them back)."""
    n = math.prod(params["mesh"].shape[a] for a in _unmentioned(params, spec))
    if n == 1 or type(ct) is Zero or not dtypes.is_inexact(core.get_aval(ct).dtype):
        return ct
    return P.div(ct, P.as_operand(n, ct))


def _ct_sum_axes(params, spec, ct) -> tuple:
    axes = _unmentioned(params, spec)
    if params["check_vma"]:
        varying = core.vma_of(ct)
        axes = tuple(a for a in axes if a in varying)
    return axes


def _shard_map_transpose(cts, *args, **params):
    closed, in_specs, out_specs = params["jaxpr"], params["in_specs"], params["out_specs"]
    lin = [is_undefined(a) for a in args]
    nz = [type(c) is not Zero for c in cts]
    if not any(nz):
        return [Zero(a.aval) if u else None for a, u in zip(args, lin)]
    if not params["check_vma"]:  # JAX's check_vma=False rule; typed bodies need no split
        cts = [_split_replicated_ct(c, s, params) for c, s in zip(cts, out_specs)]
    j = closed.jaxpr
    lin_jaxpr = core.Jaxpr([v for v, u in zip(j.invars, lin) if not u],
                           [v for v, u in zip(j.invars, lin) if u], j.outvars, j.eqns)
    res = [a for a, u in zip(args, lin) if not u]
    res_specs = tuple(s for s, u in zip(in_specs, lin) if not u)
    lin_specs = [s for s, u in zip(in_specs, lin) if u]
    res_avals = [v.aval for v, u in zip(j.invars, lin) if not u]
    ct_avals = [a for a, z in zip(closed.out_avals, nz) if z]

    def bwd(*flat):
        it = iter(flat[len(res):])
        cts_dev = [next(it) if z else Zero(a) for z, a in zip(nz, closed.out_avals)]
        outs = [instantiate(c) for c in backward_pass(lin_jaxpr, list(flat[:len(res)]),
                                                      cts_dev)]
        # an input replicated over some axes gets the sum of its copies' cotangents (in a
        # typed body: those its cotangent still varies over; pvary's transposes summed
        # the others already)
        return [P.psum(o, axes) if (axes := _ct_sum_axes(params, s, o)) else o
                for o, s in zip(outs, lin_specs)]

    with _env(params):
        t_closed, t_consts = closure_convert(trace_to_jaxpr(bwd, res_avals + ct_avals))
    t_in = ((_REPLICATED,) * len(t_consts) + res_specs
            + tuple(s for s, z in zip(out_specs, nz) if z))
    outs = iter(shard_map_p.bind(*t_consts, *res, *[c for c in cts if type(c) is not Zero],
                                 **_with(params, jaxpr=t_closed, in_specs=t_in,
                                         out_specs=tuple(lin_specs))))
    return [next(outs) if u else None for u in lin]


transpose_rules[shard_map_p] = _shard_map_transpose


# --- vmap: the batch dimension goes first, not split ---


def _batched_spec(spec):
    return PartitionSpec(None, *spec)


def _shard_map_vmap(axis, vals, dims, **params):
    new_vals, new_in, dev_dims = [], [], []
    for v, d, s in zip(vals, dims, params["in_specs"]):
        if d is None:
            new_vals.append(v)
            new_in.append(s)
            dev_dims.append(None)
        else:
            new_vals.append(moveaxis(v, d, 0))
            new_in.append(_batched_spec(s))
            dev_dims.append(0)

    def place(i, v, d):
        return v if d is None else moveaxis(v, d, 0)

    with _env(params):
        batched, out_dims = batch_jaxpr(params["jaxpr"], axis, dev_dims, place)
    batched, consts = closure_convert(batched)
    new_out = tuple(s if d is None else _batched_spec(s)
                    for s, d in zip(params["out_specs"], out_dims))
    outs = shard_map_p.bind(*consts, *new_vals, **_with(
        params, jaxpr=batched, in_specs=(_REPLICATED,) * len(consts) + tuple(new_in),
        out_specs=new_out))
    return outs, [None if d is None else 0 for d in out_dims]


vmap_rules[shard_map_p] = _shard_map_vmap
