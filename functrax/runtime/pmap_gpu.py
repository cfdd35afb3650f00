"""``pmap`` on CUDA GPUs: one replica per GPU, the program compiled by the Triton backend.

A pmap runs on GPUs when its ``devices`` are GPUs (``functrax.devices("gpu")``), when
``backend="gpu"`` (or ``"cuda"``), or when an input is GPU-resident (a ``GpuArray`` from
``device_put``, or the :class:`GpuShardedArray` output of an earlier GPU pmap). Otherwise it
runs on the (virtual) CPU devices, as before, also on a machine with a GPU.

On GPUs the per-device jaxpr is optimized, its collectives over non-leading dimensions are
rewritten into leading-dimension collectives plus transposes/reshapes
(:func:`leading_collectives`), and it is compiled once by the Triton backend
(``gpu_program.compile_for_placement``, as ``jit(backend="triton")`` does): a
:class:`ReplicaProgram`. Each replica runs in its own thread (``pmap_runtime.run_replicas``)
on its device's buffers and stream: kernels launch on device buffers, the collective steps
go through the communicator of the call (``nccl_communicator.make_communicator``: NCCL on
the device buffers, or host-staged), any other numpy fallback step runs on host copies.
Outputs are a :class:`GpuShardedArray` (one ``GpuBuffer`` per GPU) that a following GPU
pmap consumes shard by shard without a host round trip; ``np.asarray`` gathers them.

Not supported on GPUs (clear errors): pmaps nested inside a GPU pmap, and an axis spanning
MPI processes.
"""
from __future__ import annotations

import math
import weakref
from contextlib import ExitStack

import numpy as np

from functrax import core
from functrax import primitives as P
from functrax.core import Literal
from functrax.runtime.devices import Shard, ShardedArray
from functrax.lowering.numpy.rules import numpy_rules
from functrax.passes.pipeline import optimize
from functrax.primitives.collectives import axis_names
from functrax.core.tracing import trace_to_jaxpr
from functrax.lowering.triton import gpu_hooks
from functrax.runtime import gpu_buffer
from functrax.runtime import pmap_runtime as rt

__all__ = ["GpuShardedArray", "ReplicaProgram", "placement", "leading_collectives",
           "program_text", "GPU_BACKENDS"]

GPU_BACKENDS = ("gpu", "cuda")


# --- placement ---


def _is_gpu_device(d) -> bool:
    from functrax.runtime.gpu_devices import GpuDevice
    return type(d) is GpuDevice


def placement(devices, backend, flat=()) -> list | None:
    """The GPUs a pmap runs on (None: the CPU devices).

    Raises:
      ValueError: ``devices`` mixes CPU and GPU devices.
      RuntimeError: JAX's "Unknown backend" for ``backend="gpu"`` without a GPU.
    """
    if devices is not None:
        kinds = {_is_gpu_device(d) for d in devices}
        if kinds == {True, False}:
            raise ValueError(f"pmap: devices mixes CPU and GPU devices ({list(devices)}); "
                             "pass devices of one platform (functrax.devices('gpu') or "
                             "functrax.devices('cpu'))")
        return list(devices) if kinds == {True} else None
    if backend in GPU_BACKENDS:
        from functrax.runtime.gpu_devices import gpu_devices
        return gpu_devices()
    if backend is None and any(_gpu_resident(x) for x in flat):
        from functrax.runtime.gpu_devices import gpu_devices
        return gpu_devices()
    return None


def _gpu_resident(x) -> bool:
    from functrax.runtime.gpu_devices import GpuArray
    return type(x) in (GpuArray, GpuShardedArray)


class GpuShardedArray(ShardedArray):
    """A :class:`~functrax.runtime.devices.ShardedArray` whose shards are ``GpuBuffer`` s, one per
    GPU (the output of a pmap on GPUs). ``np.asarray`` copies the shards to the host and
    stacks them; ``addressable_shards`` are GPU-resident arrays."""

    __slots__ = ()

    @property
    def _value(self):
        g = self._gathered
        if g is None:
            if self._shards is None:
                ShardedArray._value.fget(self)  # raises the "deleted" error
            g = self._gathered = np.stack([s.to_numpy() for s in self._shards], self._axis)
        return g

    @property
    def addressable_shards(self) -> list:
        from functrax.runtime.gpu_devices import GpuArray
        if self._shards is None:
            return ShardedArray.addressable_shards.fget(self)
        return [Shard(d, (slice(None),) * self._axis + (i,),
                      GpuArray._wrap(s, self.aval.update(shape=tuple(s.shape)), d))
                for i, (d, s) in enumerate(zip(self._devices, self._shards))]

    def shard_values(self) -> list:
        """Host copies of the per-device buffers, in device order."""
        return [s.to_numpy() for s in ShardedArray.shard_values(self)]

    def gpu_buffers(self) -> list:
        """The per-device ``GpuBuffer`` s (no copy)."""
        return ShardedArray.shard_values(self)

    def block_until_ready(self):
        for s in self.gpu_buffers():
            s.block_until_ready()
        return self


# --- collectives over leading dimensions (what NCCL's calls take) ---


def _move(x, src, dst):
    order = [d for d in range(x.ndim) if d != src]
    order.insert(dst, src)
    return x if src == dst else P.transpose(x, tuple(order))


def _all_gather(x, *, all_gather_dimension, tiled, **p):
    d = all_gather_dimension
    y = _move(P.all_gather_p.bind(x, all_gather_dimension=0, tiled=False, **p), 0, d)
    if tiled:
        s = y.shape
        y = P.reshape(y, s[:d] + (s[d] * s[d + 1],) + s[d + 2:])
    return y


def _reduce_scatter(x, *, scatter_dimension, tiled, axis_size, **p):
    d, s = scatter_dimension, x.shape
    if tiled:
        x = P.reshape(x, s[:d] + (axis_size, s[d] // axis_size) + s[d + 1:])
    return P.reduce_scatter_p.bind(_move(x, d, 0), scatter_dimension=0, tiled=False,
                                   axis_size=axis_size, **p)


def _all_to_all(x, *, split_axis, concat_axis, axis_name, **p):
    n = math.prod(core.axis_frame(a).size for a in axis_names(axis_name))
    sa, ca, s = split_axis, concat_axis, x.shape
    z = _move(P.reshape(x, s[:sa] + (n, s[sa] // n) + s[sa + 1:]), sa, 0)
    w = _move(P.all_to_all_p.bind(z, split_axis=0, concat_axis=0, axis_name=axis_name, **p),
              0, ca)
    t = w.shape
    return P.reshape(w, t[:ca] + (t[ca] * t[ca + 1],) + t[ca + 2:])


_LEADING = {
    P.all_gather_p: (lambda p: p["all_gather_dimension"] != 0, _all_gather),
    P.reduce_scatter_p: (lambda p: p["scatter_dimension"] != 0, _reduce_scatter),
    P.all_to_all_p: (lambda p: (p["split_axis"], p["concat_axis"]) != (0, 0), _all_to_all),
}


def _needs_rewrite(eqn) -> bool:
    entry = _LEADING.get(eqn.primitive)
    return entry is not None and entry[0](eqn.params)


def leading_collectives(closed):
    """``closed`` with every all_gather / psum_scatter / all_to_all over a non-leading
    dimension rewritten as the same collective over the leading dimension plus transposes
    and reshapes (the values NCCL moves are then contiguous). Call it with the pmap's axis
    bound (``core.extend_axis_env``)."""
    j = closed.jaxpr
    if not any(_needs_rewrite(e) for e in j.eqns):
        return closed

    def read(env, v):
        return np.asarray(v.val, v.aval.dtype) if type(v) is Literal else env[v]

    def fn(*args):
        env = dict(zip(j.constvars, closed.consts))
        env.update(zip(j.invars, args))
        for eqn in j.eqns:
            ins = [read(env, v) for v in eqn.invars]
            if _needs_rewrite(eqn):
                outs = [_LEADING[eqn.primitive][1](*ins, **eqn.params)]
            else:
                outs = eqn.primitive.bind(*ins, **eqn.params)
                outs = outs if eqn.primitive.multiple_results else [outs]
            env.update(zip(eqn.outvars, outs))
        return [read(env, v) for v in j.outvars]

    return trace_to_jaxpr(fn, [v.aval for v in j.invars])


# --- the per-replica program ---

_DEVICE_COLLECTIVES = (P.psum_p, P.pmax_p, P.pmin_p, P.all_gather_p, P.reduce_scatter_p,
                       P.ppermute_p, P.all_to_all_p)
_PROGRAMS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _host(x):
    return x.to_numpy() if hasattr(x, "to_numpy") else x


class ReplicaProgram:
    """The compiled per-device program of a GPU pmap: ``run(device_id, args, comm)``.

    Attributes:
      program: the Triton backend's ``TritonProgram`` (kernels, fallbacks, ``as_text()``).
      collectives: how the collectives of the last call communicated (NCCL or host-staged,
        and why), as :func:`program_text` prints it.
    """

    def __init__(self, program, axis_name):
        self.program = getattr(program, "program", program)  # a GpuProgram wraps it
        self.axis_name = axis_name
        self.collectives = "(not run yet)"
        self.staged: list = []
        self._consts: dict = {}

    def run(self, device_id: int, args, comm) -> list:
        """Run replica ``device_id`` on host arrays or ``GpuBuffer`` s; returns ``GpuBuffer`` s."""
        from functrax.lowering.triton import runtime
        _make_current(device_id)
        p = self.program
        consts = self._consts.get(device_id)
        if consts is None:
            consts = self._consts[device_id] = [runtime.to_device(c, device_id)
                                                for c in p._consts]
        env = dict(zip(p._constvars, consts))
        env.update((v, runtime.to_device(x, device_id)) for v, x in zip(p._invars, args))
        on_device = getattr(comm, "device_collectives", False)
        for step in p.steps:
            if step.kernel is not None:
                step.run(env)
            elif on_device and len(step.group.eqns) == 1 and \
                    step.group.eqns[0].primitive in _DEVICE_COLLECTIVES:
                self._collective(step.group.eqns[0], env, device_id)
            else:  # a numpy fallback (host-staged collectives too): on host copies
                host = {v: _host(env[v]) for v in step._ins}
                step.run(host)
                env.update((v, host[v]) for v in step._outs)
        outs = [np.asarray(v.val, v.aval.dtype) if type(v) is Literal else env[v]
                for v in p._outvars]
        return [runtime.to_device(o, device_id) for o in outs]

    @staticmethod
    def _collective(eqn, env, device_id):
        """A collective on device buffers (the communicator's numpy rule gets them as they
        are; the NCCL communicator runs it on the GPUs)."""
        from functrax.lowering.triton import runtime
        ins = [runtime.to_device(np.asarray(v.val, v.aval.dtype), device_id)
               if type(v) is Literal else env[v] for v in eqn.invars]
        outs = numpy_rules[eqn.primitive](*ins, **eqn.params)
        outs = outs if eqn.primitive.multiple_results else [outs]
        env.update((v, runtime.to_device(o, device_id)) for v, o in zip(eqn.outvars, outs))

    def as_text(self) -> str:
        lines = [f"pmap replica program (axis {self.axis_name!r}), one per GPU",
                 f"collectives: {self.collectives}"]
        lines += [f"  host-staged {name}: {why}" for name, why in self.staged]
        lines.append("(the collective steps listed below as numpy fallbacks go through these "
                     "collectives, on the device buffers when NCCL runs them)")
        return "\n".join(lines) + "\n" + self.program.as_text()

    def __repr__(self):
        return f"ReplicaProgram({self.program!r}, collectives: {self.collectives})"


def _make_current(device_id: int):
    """Make GPU ``device_id`` current in this (pooled, reused) replica thread (see
    ``gpu_buffer.make_current``)."""
    if gpu_hooks.registered().buffer is not gpu_buffer.GpuBuffer:
        return  # another GPU registered (the tests' fake one): no CUDA context to switch
    gpu_buffer.make_current(device_id)


def replica_program(closed, axis_name, axis_size, donated=()) -> ReplicaProgram:
    """The :class:`ReplicaProgram` of the per-device ``closed``, compiled once per jaxpr."""
    return env_replica_program(closed, ((axis_name, axis_size),), donated)


def env_replica_program(closed, axis_env, donated=()) -> ReplicaProgram:
    """The :class:`ReplicaProgram` of ``closed`` with the named axes ``axis_env`` (pairs
    ``(name, size)``: one for a pmap, one per manual mesh axis for a shard_map) bound,
    compiled once per jaxpr, axis sizes and donation."""
    per = _PROGRAMS.get(closed)
    if per is None:
        per = _PROGRAMS[closed] = {}
    key = (tuple(axis_env), tuple(donated))
    prog = per.get(key)
    if prog is None:
        from functrax.lowering.triton.gpu_program import compile_for_placement
        with ExitStack() as stack:
            for name, size in axis_env:
                stack.enter_context(core.extend_axis_env(name, size))
            opt = optimize(leading_collectives(optimize(closed)))
            names = tuple(n for n, _ in axis_env)
            prog = per[key] = ReplicaProgram(compile_for_placement(opt, donated),
                                             names[0] if len(names) == 1 else names)
    return prog


def program_text(pmapped) -> str:
    """The GPU replica programs of a pmapped function's calls so far (kernels, fallbacks and
    how the collectives communicate), one after the other."""
    texts = []
    for entry in pmapped._cache.values():
        for prog in _PROGRAMS.get(entry.closed, {}).values():
            texts.append(prog.as_text())
    return "\n\n".join(texts) if texts else "(no GPU replica program compiled yet)"


# --- running a call ---


def _plan(size, inner, devices, gpus_given):
    if inner != 1:
        raise NotImplementedError("pmap on GPUs: a pmap nested inside a pmap on GPUs is not "
                                  "supported; run the nested pmap on CPU devices, or vmap "
                                  "the inner axis (vmap(..., axis_name=...))")
    if gpus_given:
        return rt.plan_devices(size, 1, devices)
    if size > len(devices):
        raise rt.device_error(size, len(devices))
    return [[d] for d in devices[:size]]


def run(closed, axis_name, args, in_axes, size, devices, *, gpus_given, inner=1,
        global_size=None, donated=(), before=None):
    """Run the replicas of ``closed`` (the per-device jaxpr) on GPUs.

    Args:
      args: the flat arguments (host values, GPU arrays, ``GpuShardedArray`` s).
      in_axes: the mapped axis of each (None: broadcast).
      devices: the GPUs (explicit ``devices`` of the pmap when ``gpus_given``).
      before: called once the inputs are taken (pmap deletes the donated ones there).

    Returns:
      ``(outputs, devices)``: per replica, the list of its output ``GpuBuffer`` s; the device
      of each replica.
    """
    from functrax.runtime.nccl_communicator import make_communicator
    if global_size is not None and global_size != size:
        raise NotImplementedError("pmap on GPUs across MPI processes is not supported; run "
                                  "the multi-process pmap on CPU devices")
    groups = _plan(size, inner, devices, gpus_given)
    devs = [g[0] for g in groups]
    ids = [d.id for d in devs]
    per_dev = [[] for _ in range(size)]
    for x, ax in zip(args, in_axes):
        if type(x) is GpuShardedArray and ax == x._axis and x._shards is not None and \
                [s.device_id for s in x._shards] == ids:
            for i, s in enumerate(x._shards):  # already on its device: no host round trip
                per_dev[i].append(s)
            continue
        v = x if isinstance(x, np.ndarray) else rt.host_value(x)
        for i in range(size):
            per_dev[i].append(rt.take_shard(v, ax, i))
    if before is not None:
        before()
    prog = replica_program(closed, axis_name, size, donated)
    comm, prog.collectives = make_communicator(ids)

    def body(i):
        vals, per_dev[i] = per_dev[i], None
        return prog.run(ids[i], vals, comm)

    outs = rt.run_replicas(body, axis_name, groups, None, comm)
    prog.staged = list(getattr(comm, "staged", ()))
    return outs, devs


def wrap_outputs(outs, devs, out_axes, out_avals, size, mapped) -> list:
    """The pmap's results: a :class:`GpuShardedArray` per mapped output, a ``GpuArray``
    (replica 0's buffer) per ``out_axes=None`` output."""
    from functrax.runtime.gpu_devices import GpuArray
    results = []
    for k, (ax, aval) in enumerate(zip(out_axes, out_avals)):
        if ax is None:
            results.append(GpuArray._wrap(outs[0][k], aval, devs[0]))
        else:
            results.append(GpuShardedArray._make([o[k] for o in outs], ax, devs,
                                                 mapped(aval, size, ax)))
    return results
