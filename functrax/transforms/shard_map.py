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
- jit: the jit executor runs the numpy rule (global values in and out).

Eagerly (``eager_array_rules``), shard_map works on the arrays themselves: an operand that
is a ``MeshShardedArray`` laid out as its in_spec feeds its blocks to the devices as they
are (no gather, no re-split), and each output is a ``MeshShardedArray`` of
``NamedSharding(mesh, out_spec)`` holding the devices' blocks.

On a mesh of GPUs (``make_mesh(..., devices=functrax.devices("gpu"))``) each device runs
the body as a Triton program on its GPU, the collectives through NCCL (one sub-communicator
per axis group) or host-staged (``runtime/shard_map_gpu.py``); eager outputs keep their
blocks on the GPUs. Where it runs is decided once per call from the mesh's devices
(:func:`_target`).

On a mesh spanning the processes of a multi-process run (``functrax.distributed``), each
process runs the replicas of its own devices (``pmap_runtime.run_mesh_replicas``, one frame
per mesh axis) and the collectives whose groups span processes go through MPI
(``mpi_communicator.MeshMPICommunicator``). Eager outputs then hold this process's blocks
only; inside ``jit`` (global values everywhere) the output blocks are all-gathered over the
processes, so every process continues with the global outputs.
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
from functrax.primitives.shard_map import (
    eager_array_rules, entry_names, global_aval, shard_map_p,
)
from functrax.runtime import pmap_runtime as rt
from functrax.runtime import shard_map_gpu
from functrax.runtime.devices import process_count, process_index
from functrax.runtime.mesh import Mesh
from functrax.runtime.mesh_array import MeshShardedArray
from functrax.runtime.shardings import NamedSharding, PartitionSpec, block_index, mesh_coords
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


def run_on_mesh(mesh: Mesh, axes, body) -> tuple:
    """``body(coords)`` (``coords``: mesh axis -> position) once per device of the ``axes``
    of ``mesh`` that this process owns, concurrently: ``(results, coords)``, both in
    row-major order over ``axes``.

    On one process each axis is one nested level of :func:`pmap_runtime.run_replicas`, so a
    collective over some of the axes meets the devices that share the positions on the
    others. On a mesh spanning processes each process runs its own devices' replicas
    (:func:`pmap_runtime.run_mesh_replicas`), and the collectives whose groups span
    processes go through MPI.
    """
    devs = _manual_devices(mesh, axes)
    me = process_index()
    owners = np.vectorize(lambda d: d.process_index, otypes=[np.int64])(devs)
    if (owners == me).all():
        return _run_nested(devs, axes, mesh, body), _coords_list(mesh, axes)
    if set(axes) != set(mesh.axis_names):
        raise NotImplementedError(
            "shard_map over a mesh spanning processes with auto axes (axis_names "
            f"{tuple(axes)} of the mesh axes {mesh.axis_names}) is not supported; map every "
            "mesh axis")
    layout = rt.MeshLayout(owners)
    counts = np.bincount(owners.reshape(-1))
    if len(counts) != process_count() or (counts != counts[0]).any():
        raise NotImplementedError(
            f"shard_map over a mesh spanning processes needs the same number of its devices "
            f"in every process; the processes hold {counts.tolist()} of the mesh {mesh}")
    local = layout.local(me)
    coords = [dict(zip(axes, c)) for c in local]
    groups = [[devs[c]] for c in local]
    return rt.run_mesh_replicas(lambda i: body(coords[i]), tuple(axes), local, groups,
                                layout), coords


def _run_nested(devs, axes, mesh, body) -> list:
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


def _block_source(x, spec, mesh):
    """``coords -> x's block there``: a mesh-sharded ``x`` laid out as ``spec`` gives its
    blocks as they are (the device computing ``coords`` is the first along auto axes);
    anything else is sliced from its global value."""
    if isinstance(x, MeshShardedArray) and x.sharding == NamedSharding(mesh, spec):
        blocks, names, sizes = x.device_blocks(), mesh.axis_names, mesh.axis_sizes
        return lambda c: blocks[int(np.ravel_multi_index(tuple(c.get(n, 0) for n in names),
                                                         sizes))]
    v = rt.host_value(x)
    dims = spec_dims(spec, v.ndim)
    return lambda c: v[block_index(c, dims, v.shape, mesh.shape) + (Ellipsis,)]


# --- where the devices' programs run: decided once per call from the mesh's devices ---


class _CpuTarget:
    """The mesh's CPU devices: the numpy executor's program, numpy blocks."""

    @staticmethod
    def run(jaxpr, mesh, axes, sources) -> tuple:
        exe = _executable(jaxpr, mesh, axes)

        def body(coords):
            return exe.run(*[src(coords) for src in sources])

        return run_on_mesh(mesh, axes, body) if axes else ([body({})], [{}])

    array = staticmethod(MeshShardedArray._make)
    block = staticmethod(np.asarray)  # (block, dtype) -> the output block
    host = staticmethod(lambda b: b)


class _GpuTarget:
    """The mesh's GPUs (``shard_map_gpu``): Triton programs, blocks left on their GPUs."""

    @staticmethod
    def run(jaxpr, mesh, axes, sources) -> tuple:
        outs = shard_map_gpu.run(jaxpr, axes, [mesh.shape[a] for a in axes],
                                 _manual_devices(mesh, axes),
                                 lambda c: [src(c) for src in sources])
        return outs, _coords_list(mesh, axes)

    array = staticmethod(shard_map_gpu.GpuMeshShardedArray._make)
    block = staticmethod(lambda b, dt: b)
    host = staticmethod(lambda b: b.to_numpy())


def _target(mesh):
    """Where a shard_map over ``mesh`` runs (``shard_map_gpu.placement``: on its GPUs when
    its devices are GPUs, else on its CPU devices; a mesh mixing both raises)."""
    return _CpuTarget if shard_map_gpu.placement(mesh) is None else _GpuTarget


def run_blocks(args, *, jaxpr, mesh, in_specs, out_specs, manual_axes, target=_CpuTarget):
    """Run the per-device program on the blocks of ``args`` on this process's devices (of
    ``target``: :func:`_target`); returns ``(outputs per device, coords per device)``."""
    sources = [_block_source(x, s, mesh) for x, s in zip(args, in_specs)]
    return target.run(jaxpr, mesh, tuple(manual_axes), sources)


def _covered(spec, coords, mesh, ndim) -> bool:
    """Do the devices at ``coords`` hold every block of an output laid out by ``spec``?"""
    used = [n for names in spec_dims(spec, ndim) for n in names]
    have = {tuple(c[a] for a in used) for c in coords}
    return len(have) == math.prod(mesh.shape[a] for a in used)


def _gather_processes(outs, coords, mesh, axes, ks) -> tuple:
    """Every device's outputs ``ks`` (this process's: ``outs`` at ``coords``): ONE
    all-gather over the processes of the bytes of their stacked blocks."""
    stacks = [np.ascontiguousarray(np.stack([np.asarray(o[k]) for o in outs])) for k in ks]
    rt.warn_process_gather(f"{len(ks)} output(s) of a shard_map inside jit (its residuals or "
                           "results, used by the rest of the jitted program)")
    flat = np.concatenate([a.reshape(-1).view(np.uint8) for a in stacks])
    every = rt.allgather_processes(flat)  # (processes, bytes)
    owners = np.vectorize(lambda d: d.process_index, otypes=[np.int64])(
        _manual_devices(mesh, axes))
    layout = rt.MeshLayout(owners)
    all_outs, all_coords = [], []
    for q in range(every.shape[0]):
        start, parts = 0, []
        for a in stacks:
            parts.append(every[q, start:start + a.nbytes].view(a.dtype).reshape(a.shape))
            start += a.nbytes
        for j, c in enumerate(layout.local(q)):
            all_outs.append({k: part[j] for k, part in zip(ks, parts)})
            all_coords.append(dict(zip(axes, c)))
    return all_outs, all_coords


def assemble(outs, coords, out_specs, out_avals, mesh):
    """The global numpy value of each output from its per-device blocks (of each block, the
    first copy in ``coords`` order)."""
    return [assemble_one([o[k] for o in outs], coords, spec, aval, mesh)
            for k, (spec, aval) in enumerate(zip(out_specs, out_avals))]


def assemble_one(blocks, coords, spec, aval, mesh):
    g = np.empty(aval.shape, core.physical_aval(aval).dtype)
    dims = spec_dims(spec, len(aval.shape))
    done = set()
    for b, c in zip(blocks, coords):
        idx = block_index(c, dims, aval.shape, mesh.shape)
        key = tuple((i.start, i.stop) for i in idx)
        if key not in done:
            g[idx] = b
            done.add(key)
    return g


def _shard_map_numpy(*args, jaxpr, mesh, in_specs, out_specs, check_vma, manual_axes):
    """On global values (inside ``jit``): each process runs its devices' blocks; on a mesh
    spanning processes, the outputs whose blocks are not all on this process's devices are
    then gathered from every process, so every process holds the global outputs (as the
    rest of the program needs)."""
    target = _target(mesh)
    outs, coords = run_blocks(args, jaxpr=jaxpr, mesh=mesh, in_specs=in_specs,
                              out_specs=out_specs, manual_axes=manual_axes, target=target)
    outs = [[target.host(b) for b in o] for o in outs]  # global values: on the host
    avals = [global_aval(a, s, mesh.shape) for a, s in zip(jaxpr.out_avals, out_specs)]
    if len(coords) == math.prod(mesh.shape[a] for a in manual_axes):
        return assemble(outs, coords, out_specs, avals, mesh)
    ks = [k for k, (s, a) in enumerate(zip(out_specs, avals))
          if not _covered(s, coords, mesh, len(a.shape))]
    every, every_coords = (_gather_processes(outs, coords, mesh, tuple(manual_axes), ks)
                           if ks else ([], []))
    return [assemble_one([o[k] for o in every], every_coords, s, a, mesh) if k in ks
            else assemble_one([o[k] for o in outs], coords, s, a, mesh)
            for k, (s, a) in enumerate(zip(out_specs, avals))]


def _shard_map_eager(*args, jaxpr, mesh, in_specs, out_specs, check_vma, manual_axes):
    """Eagerly, on the arrays: a mesh-sharded operand laid out as its in_spec feeds its
    blocks to the devices, and each output is a MeshShardedArray of
    ``NamedSharding(mesh, out_spec)`` holding this process's devices' blocks."""
    avals = [core.get_aval(x) for x in args]
    if any(dtypes.is_extended(a.dtype) for a in avals + list(jaxpr.out_avals)):
        return NotImplemented
    out_avals = shard_map_p.abstract_eval(
        *avals, jaxpr=jaxpr, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
        check_vma=check_vma, manual_axes=manual_axes)
    target = _target(mesh)
    outs, coords = run_blocks(args, jaxpr=jaxpr, mesh=mesh, in_specs=in_specs,
                              out_specs=out_specs, manual_axes=manual_axes, target=target)
    axes = tuple(manual_axes)
    by_coords = {tuple(c[a] for a in axes): o for o, c in zip(outs, coords)}
    result = []
    for k, (spec, aval) in enumerate(zip(out_specs, out_avals)):
        dt = core.physical_aval(aval).dtype
        blocks = []
        for _, c in mesh_coords(mesh):
            o = by_coords.get(tuple(c[a] for a in axes))
            blocks.append(None if o is None else target.block(o[k], dt))
        result.append(target.array(blocks, NamedSharding(mesh, spec), aval))
    return result


eager_array_rules[shard_map_p] = _shard_map_eager
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
