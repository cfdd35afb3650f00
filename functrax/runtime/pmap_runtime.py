"""The pmap runtime: runs one replica per device concurrently and implements the collectives.

Each replica of a pmapped program runs in a thread of its own (the calling thread runs
replica 0, pooled worker threads the others; numpy releases the GIL, so they run in
parallel) with a thread-local :class:`ReplicaContext`: its device, its position along
every enclosing pmap axis (``frames``) and the :class:`Communicator` shared by all replicas
of the outermost pmap call. The numpy rules of the collective primitives
(``psum``, ``all_gather``, ... registered here in ``numpy_rules``) read that context, so
the ordinary executor (and the compiled branches of ``cond``/``scan``/``while`` inside a
replica) runs them unchanged: a collective equation becomes a call into the communicator.

Collectives rendezvous by *position in the program*: the k-th collective that a replica
runs over the axes ``A`` meets the k-th collective over ``A`` of the replicas that share its
coordinates on every other axis. The last participant to arrive combines all inputs
(once, into fresh arrays: nothing aliases a buffer that its owner may later overwrite) and
every participant takes its part. A participant that waits longer than
``config.collective_timeout_s`` (a collective that some replica never reaches, e.g. inside
one branch of a ``cond``) raises :class:`CollectiveTimeoutError`; any error in one replica
aborts the pending collectives of the others, so a failing call ends promptly.

Nested pmaps run their inner replicas in new threads, on the devices of the outer replica's
group; their collectives over an outer axis meet the inner replicas of the other outer
replicas through the same communicator.

In a multi-process run (``functrax.distributed.initialize()`` under ``mpiexec``) a
top-level pmap maps a *global* axis (:class:`GlobalAxis`): each process runs the replicas of
its local devices at their global positions (process-major), ``axis_index`` is global, and
the collectives go through ``mpi_communicator.MPICommunicator``, the same
:class:`Communicator` interface over processes. Each collective rule tags its ``combine``
with ``combine.mpi`` (what it computes: a reduction, a gather, a permutation, an
all-to-all) so that the MPI communicator can pick the matching MPI call.
"""
from __future__ import annotations

import functools
import queue
import threading
import time
from contextlib import ExitStack

import numpy as np

from functrax.lowering.thread_share import share_blas, share_cores
from functrax import core
from functrax import primitives as P
from functrax.config import config
from functrax.runtime.devices import local_devices, process_count, process_index
from functrax.lowering.numpy.rules import numpy_rules
from functrax.primitives.collectives import axis_names

config.define("collective_timeout_s", 60.0,
              "Seconds a pmap collective waits for the other replicas (threads, or MPI "
              "processes in a multi-process run) before raising CollectiveTimeoutError "
              "(instead of hanging).")


class CollectiveTimeoutError(RuntimeError):
    """A collective inside pmap waited too long for the other replicas to reach it."""


class _Aborted(Exception):
    """Raised in replicas whose pending collective was cancelled by another's failure."""


_MISSING = object()


# --- communication ---


class Communicator:
    """How the replicas of one pmap call exchange values.

    ``collective(key, n, pos, value, combine, what, device)`` is called by each of the
    ``n`` participants of one collective (``key`` names it, ``pos`` is the caller's
    position among them); ``combine(values)`` (the ``n`` inputs in position order) returns
    the ``n`` results, and each caller gets ``results[pos]``.
    """

    def collective(self, key, n, pos, value, combine, what, device):
        raise NotImplementedError

    def abort(self):
        """Cancel every pending collective (another replica failed)."""


class _Slot:
    __slots__ = ("vals", "arrived", "left", "what", "results", "error")

    def __init__(self, n, what):
        self.vals = [_MISSING] * n
        self.arrived = 0
        self.left = n
        self.what = what
        self.results = None
        self.error = None


class ThreadCommunicator(Communicator):
    """In-process communicator: shared slots guarded by one condition variable."""

    def __init__(self):
        self._cond = threading.Condition()
        self._slots: dict = {}
        self.aborted = False

    def abort(self):
        with self._cond:
            self.aborted = True
            self._cond.notify_all()

    def collective(self, key, n, pos, value, combine, what, device):
        if n == 1:
            return combine([value])[0]
        with self._cond:
            slot = self._arrive(key, n, pos, value, what)
            last = slot.arrived == n
        if last:
            try:
                results = combine(slot.vals)
            except BaseException as e:  # noqa: BLE001 -- the others stop with _Aborted
                with self._cond:
                    slot.error = e
                    self.aborted = True
                    self._cond.notify_all()
                raise
            with self._cond:
                slot.results = results
                self._cond.notify_all()
        with self._cond:
            self._wait(slot, n, what, device)
            if slot.error is not None:
                raise _Aborted()
            slot.left -= 1
            if slot.left == 0:
                del self._slots[key]
            return slot.results[pos]

    def _arrive(self, key, n, pos, value, what):
        if self.aborted:
            raise _Aborted()
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = _Slot(n, what)
        elif slot.what[0] != what[0]:
            err = RuntimeError(
                f"pmap: replicas reached different collectives at the same point of the "
                f"program: one ran {slot.what[0]} while another ran {what[0]}. Every replica "
                "must run the same collectives in the same order (a collective inside a "
                "branch of lax.cond that not every replica takes breaks this).")
            slot.error = err
            self.aborted = True
            self._cond.notify_all()
            raise err
        slot.vals[pos] = value
        slot.arrived += 1
        return slot

    def _wait(self, slot, n, what, device):
        timeout = float(config.read("collective_timeout_s"))
        deadline = time.monotonic() + timeout
        while slot.results is None:
            if slot.error is not None:
                return
            if self.aborted and slot.arrived < n:
                raise _Aborted()
            if slot.arrived < n:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.aborted = True
                    self._cond.notify_all()
                    raise _timeout_error(slot, n, what, device, timeout)
                self._cond.wait(remaining)
            else:
                self._cond.wait()


def _timeout_error(slot, n, what, device, timeout):
    name, names = what
    missing = [p for p, v in enumerate(slot.vals) if v is _MISSING]
    return CollectiveTimeoutError(
        f"pmap: the collective {name} over axis {names} timed out after {timeout:g} s on "
        f"{device}: only {slot.arrived} of its {n} participants reached it (the ones at "
        f"positions {missing} along {names} did not). A collective that not every replica "
        "runs deadlocks: e.g. a collective inside one branch of lax.cond whose predicate "
        "differs between devices, or inside a while_loop running a different number of "
        "iterations. Make every replica run the same collectives. (The timeout is "
        "functrax.config.collective_timeout_s.)")


# --- replica contexts ---


class _Frame:
    __slots__ = ("name", "size", "index")

    def __init__(self, name, size, index):
        self.name, self.size, self.index = name, size, index


class ReplicaContext:
    """What one replica thread knows: its device(s), axis positions, communicator."""

    __slots__ = ("frames", "path", "device", "group", "comm", "counters", "n_calls")

    def __init__(self, frames, path, group, comm):
        self.frames = frames
        self.path = path
        self.group = group
        self.device = group[0]
        self.comm = comm
        self.counters: dict = {}
        self.n_calls = 0

    def find(self, name, prim):
        for k in range(len(self.frames) - 1, -1, -1):
            if self.frames[k].name == name:
                return k
        bound = [f.name for f in self.frames]
        raise NameError(f"unbound axis name: {name}. The following axis names (e.g. defined by "
                        f"pmap or vmap(..., axis_name=...)) are available to collective "
                        f"operations: {bound} (in the {prim} run by the pmap runtime)")

    def participants(self, names, prim):
        """(key, number of participants, this replica's position) for a collective."""
        ks = [self.find(n, prim) for n in names]
        n, pos = 1, 0
        for k in ks:
            f = self.frames[k]
            pos = pos * f.size + f.index
            n *= f.size
        others = tuple(f.index for k, f in enumerate(self.frames) if k not in ks)
        key = (self.path, tuple(ks), others)
        seq = self.counters.get(key, 0)
        self.counters[key] = seq + 1
        return key + (seq,), n, pos


_tls = threading.local()


def current_context() -> ReplicaContext | None:
    """The replica context of this thread (None outside pmap replicas)."""
    return getattr(_tls, "ctx", None)


def _context(prim):
    ctx = current_context()
    if ctx is None:
        raise RuntimeError(f"{prim}: a collective over a named axis ran outside of pmap's "
                           "replicas; collectives need the axis bound by pmap (or "
                           "vmap(..., axis_name=...), which removes them while batching)")
    return ctx


# --- running replicas ---


class _Worker(threading.Thread):
    """A reusable replica thread: runs one task at a time, then returns to the pool."""

    def __init__(self, pool, k):
        super().__init__(daemon=True, name=f"functrax-pmap-worker-{k}")
        self.pool = pool
        self.tasks = queue.SimpleQueue()

    def run(self):
        while True:
            fn, done = self.tasks.get()
            try:
                fn()
            finally:
                self.pool.release(self)
                done.set()


class _WorkerPool:
    """Replica threads, reused between pmap calls (starting a thread costs more than the
    hand-off). A task never waits for a busy worker: with none idle a new one starts, so
    replicas of nested or concurrent pmaps always run at the same time (no deadlock)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._idle: list = []
        self._count = 0

    def submit(self, fn) -> threading.Event:
        done = threading.Event()
        with self._lock:
            worker = self._idle.pop() if self._idle else None
            if worker is None:
                self._count += 1
                worker = _Worker(self, self._count)
                worker.start()
        worker.tasks.put((fn, done))
        return done

    def release(self, worker):
        with self._lock:
            self._idle.append(worker)


_POOL = _WorkerPool()


def device_error(need, have) -> ValueError:
    """JAX's error for a pmap needing ``need`` devices where ``have`` are available."""
    return ValueError(f"compiling computation that requires {need} logical devices, but only "
                      f"{have} XLA devices are available (num_replicas={need})")


def host_value(x) -> np.ndarray:
    """``x`` (an ``Array`` or an array-like) as a host numpy array, to be split over
    replicas (an ``Array``'s own buffer: no copy)."""
    if core.is_concrete_array(x):
        return x._value
    return np.asarray(x, core.get_aval(x).dtype)


def take_shard(v: np.ndarray, ax, i: int):
    """Replica ``i``'s slice of ``v`` along ``ax`` (a view; 0-d stays an ndarray; ``ax``
    None: all of ``v``)."""
    if ax is None:
        return v
    return v[(slice(None),) * ax + (i, Ellipsis)]


class MeshLayout:
    """The devices of a mesh spanning the processes of a multi-process run (``shard_map``):
    ``owners[coords]`` is the process holding the device at ``coords`` (an integer array of
    the mesh's shape over the mapped axes)."""

    __slots__ = ("owners",)

    def __init__(self, owners):
        self.owners = np.asarray(owners, dtype=np.int64)

    def local(self, process: int) -> list:
        """The coordinates (row-major) of ``process``'s devices."""
        return [tuple(int(i) for i in c) for c in np.argwhere(self.owners == process)]


class ProcessGatherWarning(UserWarning):
    """A value split over the devices of several processes was gathered on every process
    (see :func:`warn_process_gather`)."""


def warn_process_gather(what: str) -> None:
    """Say (once per call site, as warnings do) that ``what`` was gathered over the processes:
    never a silent gather. The fix is in the message."""
    import warnings
    warnings.warn(
        f"functrax: {what} was gathered from the devices of every process onto each process "
        "(every process computes with the global value). A jitted program that is one "
        "shard_map keeps its arrays in per-device blocks: put the whole step inside the "
        "shard_map (take gradients inside it), or gather explicitly with "
        "functrax.experimental.multihost_utils.process_allgather.",
        ProcessGatherWarning, stacklevel=3)


def allgather_processes(value: np.ndarray) -> np.ndarray:
    """``value`` (same shape and dtype in every process) of every process, stacked along a
    new leading axis (process order); in a single-process run ``value[None]``. Every
    process must call it at the same point (a collective over the processes, through the
    communicator that ``functrax.distributed.initialize`` registers)."""
    value = np.asarray(value)
    if process_count() == 1:
        return value[None]
    return _process_communicator(MeshLayout(np.arange(process_count()))).allgather(value)


class GlobalAxis:
    """A top-level pmap axis spanning the processes of a multi-process run.

    ``size``: the global number of replicas; ``owners[g]``: the process running the
    replica at global position ``g``; ``positions[i]``: the global position of this
    process's ``i``-th replica.
    """

    __slots__ = ("size", "owners", "positions")

    def __init__(self, size, owners, positions):
        self.size, self.owners, self.positions = size, list(owners), list(positions)


def global_axis_size(size: int, devices=None, nested: bool = False) -> int:
    """The global size of a pmap axis of local (per-process) size ``size``.

    A top-level pmap of a multi-process run maps ``size`` replicas in each process it spans
    (every process, or those of the explicit ``devices``): ``size`` times their number, as
    in JAX; otherwise (one process, a nested pmap, only local ``devices``) ``size``.
    """
    if nested or current_context() is not None or process_count() == 1:
        return size
    if devices is None:
        return size * process_count()
    procs = {d.process_index for d in devices}
    return size if procs == {process_index()} else size * len(procs)


def plan(size: int, inner: int, devices=None, global_size=None):
    """``(groups, axis)``: the devices of each of this process's ``size`` replicas (a group
    of ``inner`` devices each) and, for an axis spanning processes (``global_size`` larger
    than ``size``), its :class:`GlobalAxis` (else None)."""
    if global_size is None or global_size == size:
        return plan_devices(size, inner, devices), None
    me, nproc = process_index(), process_count()
    if devices is None:
        avail = local_devices()
        if size * inner > len(avail):
            raise device_error(global_size * inner, len(avail) * nproc)
        owners = [g // size for g in range(global_size)]
        groups = [avail[i * inner:(i + 1) * inner] for i in range(size)]
    else:
        if len(devices) != global_size * inner:
            raise ValueError(f"pmap: {len(devices)} devices were passed for {global_size} "
                             f"replicas of {inner} device(s) each ({size} in each of the "
                             f"{global_size // size} processes)")
        owners = [devices[g * inner].process_index for g in range(global_size)]
        groups = [devices[g * inner:(g + 1) * inner] for g in range(global_size)
                  if owners[g] == me]
        if len(groups) != size or any(d.process_index != me for grp in groups for d in grp):
            raise ValueError("Leading axis size of input to pmapped function must equal the "
                             "number of local devices passed to pmap. Got axis_size="
                             f"{size}, num_local_devices={len(groups)}.")
    if sorted(set(owners)) != list(range(nproc)) or \
            any(owners.count(q) != size for q in range(nproc)):
        raise ValueError("pmap across processes needs the same number of replicas in every "
                         f"process (all {nproc} of them); the devices give the processes "
                         f"{[owners.count(q) for q in range(nproc)]} replicas")
    positions = [g for g in range(global_size) if owners[g] == me]
    return groups, GlobalAxis(global_size, owners, positions)


def plan_devices(size: int, inner: int, devices=None) -> list:
    """The device group (``inner`` devices) of each of ``size`` replicas.

    Raises:
      ValueError: when there are fewer devices than ``size * inner`` (JAX's text), when
        explicit ``devices`` do not match the axis size, or for explicit devices of a
        nested pmap.
    """
    parent = current_context()
    need = size * inner
    if devices is not None:
        if parent is not None:
            raise ValueError("Nested pmap with explicit devices argument.")
        if len(devices) != need:
            raise ValueError("Leading axis size of input to pmapped function must equal the "
                             "number of local devices passed to pmap. Got axis_size="
                             f"{need}, num_local_devices={len(devices)}.")
        avail = list(devices)
    else:
        avail = list(parent.group) if parent is not None else local_devices()
    if need > len(avail):
        raise device_error(need, len(avail))
    return [avail[i * inner:(i + 1) * inner] for i in range(size)]


def run_replicas(body, axis_name, groups: list, axis: GlobalAxis | None = None,
                 comm: Communicator | None = None) -> list:
    """Run ``body(i)`` for each replica ``i`` concurrently and return their results.

    ``groups[i]`` are the devices of replica ``i`` (its own first); ``axis``: the layout of
    an axis spanning processes (from :func:`plan`; its collectives go through MPI);
    ``comm``: the communicator of a top-level call (default: a new
    :class:`ThreadCommunicator`; pmap on GPUs passes NCCL's). Raises the first error of any
    replica (a timeout before the errors it caused in others).
    """
    parent = current_context()
    size = len(groups)
    positions, global_size = list(range(size)), size
    if parent is None:
        comm, path, frames = comm or ThreadCommunicator(), (), ()
        if axis is not None:
            comm = _process_communicator(axis)
            positions, global_size = axis.positions, axis.size
    else:
        comm, frames = parent.comm, parent.frames
        path = parent.path + (parent.n_calls,)
        parent.n_calls += 1
    contexts = [ReplicaContext(frames + (_Frame(axis_name, global_size, positions[i]),), path,
                               groups[i], comm)
                for i in range(size)]
    return _run_contexts(body, contexts, parent is None)


def run_mesh_replicas(body, names, coords: list, groups: list, layout: MeshLayout) -> list:
    """Run ``body(i)`` for each of this process's devices of a mesh spanning processes.

    ``names``: the mesh axes (one frame each, in this order); ``coords[i]``: the positions of
    local replica ``i`` along them; ``groups[i]``: its devices; ``layout``: which process
    owns each device. Every replica is one thread at one level (``frames`` name every axis),
    and the collectives go through the process communicator of ``layout`` (MPI).
    """
    if current_context() is not None:
        raise NotImplementedError("shard_map over a mesh spanning processes inside pmap or "
                                  "another shard_map is not supported")
    return run_grid_replicas(body, names, layout.owners.shape, coords, groups,
                             _process_communicator(layout))


def run_grid_replicas(body, names, sizes, coords: list, groups: list, comm) -> list:
    """Run ``body(i)`` for each replica ``i`` of a grid of devices, all at one level: its
    frames name every axis of ``names`` (of ``sizes``; ``coords[i]``: its positions), its
    devices are ``groups[i]``, and ``comm`` carries every collective (a collective's
    participants are told apart by their positions on the axes it does not name). A
    top-level call (shard_map over a mesh spanning processes, or over a mesh of GPUs)."""
    contexts = [ReplicaContext(tuple(_Frame(n, s, int(c)) for n, s, c in zip(names, sizes, cs)),
                               (), groups[i], comm)
                for i, cs in enumerate(coords)]
    return _run_contexts(body, contexts, True)


def _run_contexts(body, contexts, top: bool) -> list:
    size = len(contexts)
    if size == 0:
        return []
    comm = contexts[0].comm
    results = [None] * size
    errors = [None] * size

    def run(i):
        prev = current_context()
        _tls.ctx = contexts[i]
        try:
            with ExitStack() as stack:
                for f in contexts[i].frames:
                    stack.enter_context(core.extend_axis_env(f.name, f.size))
                stack.enter_context(core.set_current_trace(core.EVAL_TRACE))
                stack.enter_context(share_cores(size))  # no devices x cores threads
                results[i] = body(i)
        except BaseException as e:  # noqa: BLE001 -- re-raised by the calling thread
            errors[i] = e
            comm.abort()
        finally:
            _tls.ctx = prev

    # replica 0 runs in the calling thread, each other one in a worker thread of its own;
    # BLAS's thread pool is shared by all of them (one per process): cores // replicas
    with share_blas(size if top else 1):
        done = [_POOL.submit(functools.partial(run, i)) for i in range(1, size)]
        run(0)
        for d in done:
            d.wait()
    _raise_first(errors)
    return results


# the communicator factory of axes spanning processes: registered by
# ``functrax.runtime.distributed.initialize`` (MPI), None outside a multi-process run
_PROCESS_COMMUNICATOR = None


def register_process_communicator(factory):
    """Install ``factory(layout) -> Communicator``, the communicator of every top-level pmap
    call whose axis spans processes (``layout``: its :class:`GlobalAxis`) and of every
    shard_map over a mesh spanning processes (a :class:`MeshLayout`); None: none. Returns
    the previous one.

    ``functrax.distributed.initialize()`` registers ``mpi_communicator.MPICommunicator``
    over its MPI communicator; ``shutdown()`` removes it.
    """
    global _PROCESS_COMMUNICATOR
    previous, _PROCESS_COMMUNICATOR = _PROCESS_COMMUNICATOR, factory
    return previous


def _process_communicator(axis) -> Communicator:
    factory = _PROCESS_COMMUNICATOR
    if factory is None:
        raise RuntimeError("pmap across processes needs functrax.distributed.initialize()")
    return factory(axis)


def _raise_first(errors):
    real = [e for e in errors if e is not None and not isinstance(e, _Aborted)]
    if real:
        timeouts = [e for e in real if isinstance(e, CollectiveTimeoutError)]
        raise (timeouts or real)[0]
    if any(e is not None for e in errors):
        raise _Aborted("pmap: a replica's collectives were aborted")


# --- the collectives' numpy rules ---


def _collective(prim, names, value, combine):
    ctx = _context(prim)
    key, n, pos = ctx.participants(names, prim)
    return ctx.comm.collective(key, n, pos, value, combine, (prim, names), ctx.device)


def _fold(op):
    """Reduce the participants' values in position order into a fresh array."""
    def reduce_all(vals):
        acc = np.asarray(op(vals[0], vals[1])) if len(vals) > 1 else np.array(vals[0], copy=True)
        for v in vals[2:]:
            op(acc, v, out=acc)
        return acc
    return reduce_all


_sum_all = _fold(np.add)


def _mpi(combine, *kind):
    """Tag ``combine`` with what it computes, for the MPI communicator (``combine.mpi``)."""
    combine.mpi = kind
    return combine


def _grouped(combine, groups):
    """``combine`` applied within each of ``axis_index_groups`` (the participants' positions
    listed by group, each group in its own order); None: ``combine`` itself. The grouped
    function has no ``mpi`` tag: the MPI and NCCL communicators run it as a generic
    gather-then-combine."""
    if groups is None:
        return combine

    def grouped(vals):
        outs = [None] * len(vals)
        for group in groups:
            for i, out in zip(group, combine([vals[i] for i in group])):
                outs[i] = out
        return outs
    return grouped


def _allreduce_rule(prim, reduce_all, op):
    def rule(*args, axes, axis_index_groups):
        def combine(vals):
            outs = [reduce_all([v[k] for v in vals]) for k in range(len(args))]
            return [outs] * len(vals)
        return _collective(prim, tuple(axes), tuple(args),
                           _grouped(_mpi(combine, "reduce", op), axis_index_groups))
    return rule


numpy_rules[P.psum_p] = _allreduce_rule("psum", _sum_all, "sum")
numpy_rules[P.pmax_p] = _allreduce_rule("pmax", _fold(np.maximum), "max")
numpy_rules[P.pmin_p] = _allreduce_rule("pmin", _fold(np.minimum), "min")


def _all_gather(x, *, all_gather_dimension, axis_name, axis_index_groups, axis_size, tiled):
    def combine(vals):
        join = np.concatenate if tiled else np.stack
        out = join(vals, axis=all_gather_dimension)
        return [out] * len(vals)
    return _collective("all_gather", axis_names(axis_name), x, _grouped(
        _mpi(combine, "gather", all_gather_dimension, tiled), axis_index_groups))


def _reduce_scatter(x, *, scatter_dimension, axis_name, axis_index_groups, axis_size, tiled):
    def combine(vals):
        total = _sum_all(vals)
        if tiled:
            return np.split(total, len(vals), axis=scatter_dimension)
        return [np.take(total, i, axis=scatter_dimension) for i in range(len(vals))]
    combine.local_sum = _sum_all
    return _collective("reduce_scatter", axis_names(axis_name), x, _grouped(
        _mpi(combine, "reduce_scatter", "sum", scatter_dimension, tiled), axis_index_groups))


def _axis_index(*, axis_name):
    ctx = _context("axis_index")
    return np.asarray(ctx.frames[ctx.find(axis_name, "axis_index")].index, np.int32)


def _ppermute(x, *, axis_name, perm):
    def combine(vals):
        src_of = {dst: src for src, dst in perm}
        return [np.array(vals[src_of[i]], copy=True) if i in src_of else np.zeros_like(vals[i])
                for i in range(len(vals))]
    return _collective("ppermute", axis_names(axis_name), x,
                       _mpi(combine, "ppermute", tuple(map(tuple, perm))))


def _all_to_all(x, *, split_axis, concat_axis, axis_name, axis_index_groups, tiled):
    def combine(vals):
        n = len(vals)
        chunks = [np.split(v, n, axis=split_axis) for v in vals]
        return [np.concatenate([chunks[j][i] for j in range(n)], axis=concat_axis)
                for i in range(n)]
    return _collective("all_to_all", axis_names(axis_name), x, _grouped(
        _mpi(combine, "all_to_all", split_axis, concat_axis), axis_index_groups))


numpy_rules[P.all_gather_p] = _all_gather
numpy_rules[P.reduce_scatter_p] = _reduce_scatter
numpy_rules[P.axis_index_p] = _axis_index
numpy_rules[P.ppermute_p] = _ppermute
numpy_rules[P.all_to_all_p] = _all_to_all

