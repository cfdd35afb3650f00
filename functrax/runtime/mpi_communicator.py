"""The multi-process pmap communicator: collectives of a pmap whose axis spans the processes
of an MPI run (``functrax.distributed.initialize()`` under ``mpiexec``).

A pmap at the top level of a multi-process run maps a *global* axis: process ``q`` runs the
replicas whose global positions it owns (its local devices), and a collective over that
axis meets the replicas of every process. :class:`MPICommunicator` implements the
:class:`~functrax.runtime.pmap_runtime.Communicator` interface in two stages:

1. within a process, the local replicas meet as in the single-process runtime (the
   :class:`ThreadCommunicator` rendezvous, with ``n`` = this process's participants);
2. the last local replica to arrive exchanges the process's values with the other
   processes through mpi4py, then hands each local replica its result:

   * ``psum`` / ``pmax`` / ``pmin`` (and ``psum_scatter``): the local values are reduced
     first, then ``Iallreduce`` (SUM / MAX / MIN) over the processes; dtypes that MPI
     cannot reduce (bool, float16, bfloat16) take the gather path;
   * ``all_gather`` and every other collective: ``Iallgather`` of the raw bytes of the
     local values, then the single-process ``combine`` over all the values;
   * ``ppermute``: ``Isend`` / ``Irecv`` pairs (the non-blocking halves of ``Sendrecv``),
     tagged with the destination's position; pairs inside a process are plain copies;
   * ``all_to_all``: one ``Ialltoall`` carrying the chunks from every local replica to
     every replica of each process.

Every MPI call is non-blocking and polled (``Testall``) until a deadline of
``config.collective_timeout_s`` seconds: a peer that died or never reaches the collective
raises :class:`CollectiveTimeoutError` in the surviving processes instead of hanging. The
pending MPI requests cannot be cancelled, so after such an error this module refuses any
further cross-process collective, and the process must end: an uncaught exception makes
``functrax.distributed`` call ``MPI_Abort`` (see ``functrax.distributed.initialize``).

Only one cross-process collective is in flight in a process at a time (the collectives of a
pmap run in program order), so MPI needs ``MPI_THREAD_SERIALIZED``; a lock serializes the
calls anyway. A collective over the global axis inside a nested pmap that does not also
reduce over the inner axes would run several such collectives concurrently in orders that
differ between processes; it raises ``NotImplementedError``.
"""
from __future__ import annotations

import threading
import time

import numpy as np
from mpi4py import MPI

from functrax.config import config
from functrax.runtime.pmap_runtime import (
    CollectiveTimeoutError, MeshLayout, ThreadCommunicator, current_context,
)

__all__ = ["MPICommunicator", "MeshMPICommunicator", "communicator_for"]

_OPS = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}
_mpi_lock = threading.Lock()
_broken: list = []  # the error that left MPI requests pending: no further collective may run


def _check_not_broken(api: str, what) -> None:
    if _broken:
        raise RuntimeError(f"{api}: the collective {what[0]} cannot run: an earlier "
                           f"collective across MPI processes failed ({_broken[0]}); the "
                           "process must end (MPI requests are still pending)")


_NATIVE = {np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                  np.uint32, np.uint64, np.float32, np.float64, np.complex64,
                                  np.complex128)}


def _reducible(dtype: np.dtype, op: str) -> bool:
    """Can MPI reduce ``dtype`` with ``op`` natively?"""
    return dtype in _NATIVE and (dtype.kind != "c" or op == "sum")


def _contig(a) -> np.ndarray:
    """``a`` as a C-contiguous ndarray (0-d stays 0-d; a copy only when needed)."""
    return np.asarray(a, order="C")


def _bytes(a: np.ndarray) -> list:
    """An MPI buffer spec of the raw bytes of the C-contiguous array ``a`` (aliases it)."""
    return [a.reshape(-1).view(np.uint8), MPI.BYTE]


class MPICommunicator(ThreadCommunicator):
    """The communicator of one top-level pmap call whose axis spans the MPI processes.

    Args:
      comm: the MPI communicator of every process (``functrax.distributed``'s).
      owners: ``owners[g]`` is the process (rank of ``comm``) that runs the replica at
        global position ``g`` of the pmap axis.
    """

    def __init__(self, comm, owners):
        super().__init__()
        self.mpi = comm
        self.rank = comm.Get_rank()
        self.nproc = comm.Get_size()
        self.owners = np.asarray(owners)
        self._layouts: dict = {}

    # --- the two-stage rendezvous ---

    def collective(self, key, n, pos, value, combine, what, device):
        ks = key[1]
        if 0 not in ks:  # the collective stays inside this process (an inner pmap axis)
            return super().collective(key, n, pos, value, combine, what, device)
        ctx = current_context()
        if len(ks) != len(ctx.frames):
            raise NotImplementedError(
                f"pmap across MPI processes: the collective {what[0]} over axis {what[1]} "
                "inside a nested pmap must also be over the nested pmaps' axes "
                f"{[f.name for k, f in enumerate(ctx.frames) if k not in ks]} (one "
                "collective spanning every replica); several concurrent collectives over the "
                "multi-process axis are not supported")
        layout = self._layout(tuple(ctx.frames[k].size for k in ks), ks.index(0))
        mine = layout[self.rank]

        def exchange(vals):
            return self._exchange(vals, combine, what, device, layout, n)

        return super().collective(key, len(mine), mine.index(pos), value, exchange, what,
                                  device)

    def _layout(self, sizes, j0) -> list:
        """The sorted positions (in the collective's order) of each process's replicas."""
        lay = self._layouts.get((sizes, j0))
        if lay is None:
            grid = np.arange(int(np.prod(sizes))).reshape(sizes)
            shape = [-1 if j == j0 else 1 for j in range(len(sizes))]
            own = np.broadcast_to(self.owners.reshape(shape), sizes)
            lay = self._layouts[(sizes, j0)] = [grid[own == q].tolist()
                                                for q in range(self.nproc)]
        return lay

    def _exchange(self, vals, combine, what, device, layout, n):
        """The local replicas' ``vals`` (in position order) -> their results."""
        _check_not_broken("pmap", what)
        kind = getattr(combine, "mpi", None) or ("gather",)
        t = (what, device)
        if kind[0] in ("reduce", "reduce_scatter"):
            leaves = vals[0] if isinstance(vals[0], tuple) else (vals[0],)
            if all(_reducible(np.asarray(a).dtype, kind[1]) for a in leaves):
                return self._allreduce(vals, combine, kind, layout, n, t)
        elif kind[0] == "ppermute":
            return self._ppermute(vals, kind[1], layout, t)
        elif kind[0] == "all_to_all":
            return self._all_to_all(vals, kind[1], kind[2], layout, n, t)
        return self._gather(vals, combine, layout, n, t)

    # --- MPI ---

    def _start(self, fn, *args, **kwargs):
        with _mpi_lock:
            return fn(*args, **kwargs)

    def _poll(self, reqs, t):
        """Poll ``reqs`` until they complete or ``collective_timeout_s`` passes."""
        timeout = float(config.read("collective_timeout_s"))
        start = time.monotonic()
        while True:
            with _mpi_lock:
                if MPI.Request.Testall(reqs):  # (MPICH progresses transfers only in calls)
                    return
            waited = time.monotonic() - start
            if waited >= timeout:
                raise self._timeout(t, timeout)
            # spin (yielding the GIL) while a transfer is likely under way, then back off
            time.sleep(0.0 if waited < 0.05 else 1e-4 if waited < 1.0 else 1e-3)

    def _timeout(self, t, timeout):
        (name, names), device = t
        _broken.append(f"{name} over axis {names} timed out")
        return CollectiveTimeoutError(
            f"pmap: the collective {name} over axis {names} across MPI processes timed out "
            f"after {timeout:g} s on {device} of MPI rank {self.rank} (the collective spans "
            f"ranks {sorted(set(self.owners.tolist()))}; this rank reached it, at least one "
            "other rank did not complete it): a peer process died, or does not run the same "
            "collectives in the same order. The timeout is functrax.config."
            "collective_timeout_s (raise it with functrax.config.update("
            "'collective_timeout_s', seconds) if a process may legitimately take longer to "
            "reach the collective). MPI requests are left pending: this process must end "
            "(functrax.distributed aborts the MPI job on an uncaught exception).")

    def _allreduce(self, vals, combine, kind, layout, n, t):
        if kind[0] == "reduce":
            partial = combine(vals)[0]  # the local reduction: fresh arrays, one per operand
        else:
            partial = [combine.local_sum(vals)]
        bufs = [np.array(a, order="C", copy=True) for a in partial]
        # (mpi4py reads the MPI datatype from the array's buffer format)
        reqs = [self._start(self.mpi.Iallreduce, MPI.IN_PLACE, b, _OPS[kind[1]]) for b in bufs]
        self._poll(reqs, t)
        if kind[0] == "reduce":
            return [bufs] * len(vals)
        _, _, dim, tiled = kind
        total = bufs[0]
        blocks = np.split(total, n, axis=dim) if tiled else None
        return [np.array(blocks[p]) if tiled else np.take(total, p, axis=dim)
                for p in layout[self.rank]]

    def _gather(self, vals, combine, layout, n, t):
        is_tuple = isinstance(vals[0], tuple)
        leaves = [list(v) if is_tuple else [v] for v in vals]
        recvs, reqs, keep = [], [], []
        for k in range(len(leaves[0])):
            stacked = _contig(np.stack([np.asarray(lv[k]) for lv in leaves]))
            recv = np.empty((self.nproc,) + stacked.shape, stacked.dtype)
            keep.append(stacked)
            recvs.append(recv)
            reqs.append(self._start(self.mpi.Iallgather, _bytes(stacked), _bytes(recv)))
        self._poll(reqs, t)
        every = [None] * n
        for q, positions in enumerate(layout):
            for j, p in enumerate(positions):
                got = tuple(r[q, j] for r in recvs)
                every[p] = got if is_tuple else got[0]
        results = combine(every)
        return [results[p] for p in layout[self.rank]]

    def _ppermute(self, vals, perm, layout, t):
        mine = layout[self.rank]
        index = {p: j for j, p in enumerate(mine)}
        owner = {p: q for q, ps in enumerate(layout) for p in ps}
        ref = np.asarray(vals[0])
        out, reqs, keep = [None] * len(mine), [], []
        for src, dst in perm:
            qs, qd = owner[src], owner[dst]
            if qd == self.rank and qs == self.rank:
                out[index[dst]] = np.array(vals[index[src]], copy=True)
            elif qd == self.rank:
                buf = out[index[dst]] = np.empty(ref.shape, ref.dtype)
                reqs.append(self._start(self.mpi.Irecv, _bytes(buf), source=qs, tag=dst))
            elif qs == self.rank:
                b = _contig(vals[index[src]])
                keep.append(b)
                reqs.append(self._start(self.mpi.Isend, _bytes(b), dest=qd, tag=dst))
        self._poll(reqs, t)
        return [np.zeros_like(ref) if o is None else o for o in out]

    def _all_to_all(self, vals, split, concat, layout, n, t):
        mine = layout[self.rank]
        chunks = [np.split(np.asarray(v), n, axis=split) for v in vals]
        # send[q, i, j]: the chunk for the i-th replica of process q from local replica j
        send = _contig(np.stack([np.stack([np.stack([c[g] for c in chunks]) for g in ps])
                                 for ps in layout]))
        recv = np.empty_like(send)
        req = self._start(self.mpi.Ialltoall, _bytes(send), _bytes(recv))
        self._poll([req], t)
        out = []
        for i in range(len(mine)):
            pieces = {ps[j]: recv[q, i, j] for q, ps in enumerate(layout) for j in range(len(ps))}
            out.append(np.concatenate([pieces[g] for g in range(n)], axis=concat))
        return out

    # --- whole arrays of every process (outside replicas) ---

    def allgather(self, value: np.ndarray) -> np.ndarray:
        """``value`` (same shape and dtype in every process) of every process, stacked."""
        send = np.array(value, order="C", copy=True)
        recv = np.empty((self.nproc,) + send.shape, send.dtype)
        req = self._start(self.mpi.Iallgather, _bytes(send), _bytes(recv))
        self._poll([req], (("process_allgather", ()), f"MPI rank {self.rank}"))
        return recv


# --- shard_map over a mesh spanning processes ---


class _Groups:
    """The participants of a collective over the frames ``ks`` of a mesh: per device (flat,
    row-major over the mesh) its group (the devices sharing its positions on the other
    axes) and its position in it (row-major over ``ks`` in that order)."""

    def __init__(self, owners: np.ndarray, ks: tuple):
        shape = owners.shape
        others = [k for k in range(owners.ndim) if k not in ks]
        coords = np.indices(shape).reshape(owners.ndim, -1)
        self.group = (np.ravel_multi_index(coords[others], [shape[k] for k in others])
                      if others else np.zeros(coords.shape[1], np.int64))
        self.pos = (np.ravel_multi_index(coords[list(ks)], [shape[k] for k in ks])
                    if ks else np.zeros(coords.shape[1], np.int64))
        self.count = int(np.prod([shape[k] for k in others]))
        self.n = int(np.prod([shape[k] for k in ks]))
        flat = owners.reshape(-1)
        self.members = [[] for _ in range(self.count)]
        for f in np.argsort(self.pos, kind="stable"):
            self.members[self.group[f]].append(int(f))
        self.spans = any(len({int(flat[f]) for f in m}) > 1 for m in self.members)


_IDENTITY = {"sum": lambda dt: 0,
             "max": lambda dt: -np.inf if dt.kind in "fc" else np.iinfo(dt).min,
             "min": lambda dt: np.inf if dt.kind in "fc" else np.iinfo(dt).max}


class MeshMPICommunicator(MPICommunicator):
    """The communicator of one ``shard_map`` call over a mesh whose devices belong to several
    processes.

    Each process runs its own devices' replicas, one frame per mesh axis. A collective whose
    groups (the devices sharing the positions on the axes it does not name) all lie inside
    one process is the in-process rendezvous. Otherwise every local replica meets in one
    rendezvous (they all run the collective: the program is the same on every device), and
    the last one to arrive runs ONE MPI exchange for all the groups: an ``Iallreduce`` of a
    buffer with one row per group (``psum`` / ``pmax`` / ``pmin`` / ``psum_scatter``; rows
    of groups without a member here hold the reduction's identity), or an ``Iallgather`` of
    every local value followed by each group's ``combine`` (every other collective). So one
    cross-process collective at a time runs in each process, in program order.

    Args:
      comm: the MPI communicator of every process.
      owners: the process of each device, an integer array over the mapped mesh axes (in the
        order of the replicas' frames).
    """

    def __init__(self, comm, owners):
        owners = np.asarray(owners)
        super().__init__(comm, owners.reshape(-1))
        self.grid = owners
        flat = owners.reshape(-1)
        self.procs = [np.flatnonzero(flat == q).tolist() for q in range(self.nproc)]
        self.local = self.procs[self.rank]
        self._plans: dict = {}

    def collective(self, key, n, pos, value, combine, what, device):
        ctx = current_context()
        if len(ctx.frames) != self.grid.ndim:
            raise NotImplementedError(f"shard_map across MPI processes: the collective {what[0]}"
                                      " runs inside a nested pmap, which is not supported")
        ks = key[1]
        plan = self._plans.get(ks)
        if plan is None:
            plan = self._plans[ks] = _Groups(self.grid, ks)
        if not plan.spans:  # every group is inside one process
            return ThreadCommunicator.collective(self, key, n, pos, value, combine, what, device)
        flat = int(np.ravel_multi_index(tuple(f.index for f in ctx.frames), self.grid.shape))

        def exchange(vals):
            return self._mesh_exchange(vals, combine, what, device, plan)

        return ThreadCommunicator.collective(self, ("mesh", key[0], ks, key[3]),
                                             len(self.local), self.local.index(flat), value,
                                             exchange, what, device)

    def _mesh_exchange(self, vals, combine, what, device, plan):
        _check_not_broken("shard_map", what)
        kind = getattr(combine, "mpi", None) or ("gather",)
        t = (what, device)
        if kind[0] in ("reduce", "reduce_scatter"):
            leaves = vals[0] if isinstance(vals[0], tuple) else (vals[0],)
            if all(_reducible(np.asarray(a).dtype, kind[1]) for a in leaves):
                return self._mesh_allreduce(vals, combine, kind, plan, t)

        def combine_groups(every):
            out = [None] * len(every)
            for members in plan.members:
                for f, r in zip(members, combine([every[f] for f in members])):
                    out[f] = r
            return out

        return self._gather(vals, combine_groups, self.procs, len(self.owners), t)

    def _mesh_allreduce(self, vals, combine, kind, plan, t):
        local_of = {f: j for j, f in enumerate(self.local)}
        partials = {}
        for g, members in enumerate(plan.members):
            mine = [vals[local_of[f]] for f in members if f in local_of]
            if mine:
                partials[g] = (list(combine(mine)[0]) if kind[0] == "reduce"
                               else [combine.local_sum(mine)])
        ref = next(iter(partials.values()))
        bufs = []
        for k, r in enumerate(ref):
            r = np.asarray(r)
            buf = np.full((plan.count,) + r.shape, _IDENTITY[kind[1]](r.dtype), r.dtype)
            for g, p in partials.items():
                buf[g] = p[k]
            bufs.append(buf)
        reqs = [self._start(self.mpi.Iallreduce, MPI.IN_PLACE, b, _OPS[kind[1]]) for b in bufs]
        self._poll(reqs, t)
        out = []
        for f in self.local:
            g = plan.group[f]
            if kind[0] == "reduce":
                out.append([b[g] for b in bufs])
                continue
            _, _, dim, tiled = kind
            total, p = bufs[0][g], int(plan.pos[f])
            out.append(np.array(np.split(total, plan.n, axis=dim)[p]) if tiled
                       else np.take(total, p, axis=dim))
        return out


def communicator_for(comm, layout):
    """The communicator of ``layout``: a pmap's ``GlobalAxis`` or a shard_map's
    ``MeshLayout`` (``functrax.runtime.pmap_runtime``)."""
    if isinstance(layout, MeshLayout):
        return MeshMPICommunicator(comm, layout.owners)
    return MPICommunicator(comm, layout.owners)
