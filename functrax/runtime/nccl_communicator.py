"""The GPU pmap communicator: collectives between the GPUs of one process through NCCL.

``pmap`` on CUDA GPUs (``pmap_gpu.py``) runs one replica per GPU; the collectives of the
replica programs go through a :class:`~functrax.runtime.pmap_runtime.Communicator`:

* :class:`NcclCommunicator` (``nccl4py``, the optional extra ``functrax[nccl]``): the values
  stay in GPU memory. The replicas meet in the in-process rendezvous of
  :class:`~functrax.runtime.pmap_runtime.ThreadCommunicator` (each replica first allocates
  its own output buffers, on its own device); the last one to arrive issues one NCCL group
  (``group_start`` ... ``group_end``) holding the call of every rank, each on its device's
  stream (so it is ordered after the kernels that produced its input and before those that
  read its output; nothing waits on the host):

  - ``psum`` / ``pmax`` / ``pmin`` (``pmean`` is a psum then a division): ``AllReduce``
    SUM / MAX / MIN;
  - ``all_gather`` (leading dimension): ``AllGather``;
  - ``psum_scatter`` (leading dimension): ``ReduceScatter`` SUM;
  - ``ppermute``: ``Send`` / ``Recv`` pairs; ranks that receive nothing get zeros;
  - ``all_to_all`` (leading split and concat dimensions): ``Send`` / ``Recv`` of each chunk.

  ``pmap_gpu`` rewrites the collectives over other dimensions into these leading-dimension
  forms plus transposes/reshapes that the Triton backend compiles. One NCCL communicator
  per device set (``Communicator.init_all``) is created once per process and reused.
* :class:`MeshNcclCommunicator`: the same for a shard_map over a mesh of GPUs
  (``shard_map_gpu.py``), whose collective over one mesh axis or a tuple of axes runs on
  the NCCL communicator of exactly the GPUs it spans (one sub-communicator per axis group);
* the host-staged path, when nccl4py is missing (or ``config.pmap_gpu_collectives`` is
  ``"host"``), for dtypes NCCL cannot reduce (bool, int16, complex...) and for collectives
  over a nested pmap's axes: the values are copied to the host, combined by the
  ``ThreadCommunicator`` as on CPU devices, and the results copied back. The program text
  (``pmap_gpu.program_text``) says which path runs and why.

Every NCCL call of nccl4py used here: ``nccl.core.Communicator.init_all(device_ids)``,
``comm.allreduce(send, recv, op, stream=)``, ``comm.allgather(send, recv, stream=)``,
``comm.reduce_scatter(send, recv, op, stream=)``, ``comm.send(buf, peer, stream=)``,
``comm.recv(buf, peer, stream=)``, ``nccl.core.group_start()`` / ``group_end()`` and the
``SUM`` / ``MAX`` / ``MIN`` constants. Buffers are passed as objects exposing
``__cuda_array_interface__`` (``GpuBuffer``, or a :class:`_Chunk` view of part of one).
"""
from __future__ import annotations

import logging
import threading

import numpy as np

from functrax.config import config
from functrax.lowering.triton import gpu_hooks
from functrax.runtime.pmap_runtime import ThreadCommunicator

__all__ = ["NcclCommunicator", "MeshNcclCommunicator", "group_device_ids", "nccl_module",
           "make_communicator", "MISSING_NCCL4PY"]

log = logging.getLogger("functrax.pmap")

MISSING_NCCL4PY = ("functrax's NCCL collectives for pmap on GPUs need the nccl4py package, "
                   "which is not installed: pip install 'functrax[nccl]' (or pip install "
                   "nccl4py)")

config.define("pmap_gpu_collectives", "auto",
              "How the collectives of a pmap on CUDA GPUs communicate: 'auto' (NCCL through "
              "nccl4py when it is installed and initializes, else host-staged), 'nccl' "
              "(require NCCL: an error names the functrax[nccl] extra when it is missing) or "
              "'host' (copy to the host, combine there, copy back).",
              validate=lambda v: v in ("auto", "nccl", "host"))

_MODULE: dict = {}
_COMMS: dict = {}  # tuple of device ids -> [nccl Communicator per rank]
_LOCK = threading.Lock()
_WARNED: set = set()

# numpy dtypes NCCL reduces natively. (bfloat16 is left out: its CUDA-array-interface
# typestr is the opaque '<V2', which nccl4py cannot map to ncclBfloat16.)
_REDUCIBLE = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32",
              "float64"}


def nccl_module():
    """The ``nccl.core`` module of nccl4py.

    Raises:
      ImportError: naming the ``functrax[nccl]`` extra when nccl4py is not installed.
    """
    mod = _MODULE.get("core")
    if mod is None:
        try:
            import nccl.core as mod
        except ImportError as e:
            raise ImportError(f"{MISSING_NCCL4PY} ({e})") from e
        _MODULE["core"] = mod
    return mod


def make_communicator(device_ids, grid=None):
    """The communicator of a pmap over the GPUs ``device_ids`` (one per replica, in order),
    or of a shard_map over the mesh of GPUs ``grid`` (their ids laid out as its manual axes,
    ``device_ids`` row-major over it).

    Returns ``(communicator, description)``: a :class:`NcclCommunicator`, or a
    ``ThreadCommunicator`` for the host-staged path, and a line saying which and why.

    Raises:
      ImportError: ``config.pmap_gpu_collectives == "nccl"`` and nccl4py is missing.
    """
    mode = config.read("pmap_gpu_collectives")
    if mode == "host":
        return ThreadCommunicator(), ("host-staged (config.pmap_gpu_collectives='host'): "
                                      "values copied to the host, combined there, copied back")
    try:
        comm = NcclCommunicator(device_ids) if grid is None else MeshNcclCommunicator(grid)
    except ImportError as e:
        if mode == "nccl":
            raise
        return _host_staged(device_ids, f"nccl4py is not installed: pip install "
                                        f"'functrax[nccl]' ({e})")
    except Exception as e:  # noqa: BLE001 -- no libnccl, driver mismatch: stage through host
        if mode == "nccl":
            raise RuntimeError(f"pmap: cannot initialize NCCL on GPUs {list(device_ids)}: "
                               f"{type(e).__name__}: {e}") from e
        return _host_staged(device_ids, f"NCCL failed to initialize: {type(e).__name__}: {e}")
    return comm, comm.describe()


def _host_staged(device_ids, why):
    text = (f"host-staged: values copied to the host, combined there, copied back "
            f"(NCCL unavailable: {why})")
    key = tuple(device_ids)
    if key not in _WARNED:
        _WARNED.add(key)
        log.warning("pmap on GPUs %s: collectives are %s", list(device_ids), text)
    return ThreadCommunicator(), text


def _leaves(value):
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _is_device(x) -> bool:
    return hasattr(x, "__cuda_array_interface__") and hasattr(x, "device_id")


def _host(x):
    return x.to_numpy() if _is_device(x) else x


def _stream(buf):
    """The stream ``buf``'s device orders its work on (None: the default stream)."""
    ctx = getattr(buf, "_ctx", None)
    return None if ctx is None else ctx.stream


class _Chunk:
    """A contiguous part of a device buffer (``count`` elements of ``dtype`` from element
    ``offset``) as NCCL takes it: ``__cuda_array_interface__`` (shape ``(count,)``)."""

    __slots__ = ("base", "offset", "count", "dtype", "device_id")

    def __init__(self, base, offset: int, count: int, dtype):
        self.base, self.offset, self.count = base, int(offset), int(count)
        self.dtype = np.dtype(dtype)
        self.device_id = base.device_id

    @property
    def __cuda_array_interface__(self) -> dict:
        ptr = self.base.data_ptr() + self.offset * self.dtype.itemsize
        return {"shape": (self.count,), "typestr": self.dtype.str, "data": (ptr, False),
                "strides": None, "version": 3}


def _bytes(buf, first: int = 0, count: int | None = None) -> _Chunk:
    """Bytes ``first .. first+count`` of ``buf`` (all of it by default)."""
    return _Chunk(buf, first, buf.nbytes - first if count is None else count, np.uint8)


def _elements(buf) -> _Chunk:
    return _Chunk(buf, 0, buf.size, buf.dtype)


def _new_buffer(shape, dtype, device_id):
    return gpu_hooks.buffer_class()(shape, dtype, device_id)  # (the registered GPU's class)


def _zeros(shape, dtype, device_id):
    return gpu_hooks.buffer_class().from_numpy(np.zeros(shape, dtype), device_id)


class NcclCommunicator(ThreadCommunicator):
    """Collectives of a pmap over GPUs ``device_ids`` (rank ``i`` = replica ``i``) via NCCL.

    Values that are device buffers, of a collective over the whole pmap axis, go through
    NCCL; anything else (host values from a numpy fallback, dtypes NCCL cannot reduce,
    collectives over a nested pmap's axes) is host-staged (see the module doc).
    """

    device_collectives = True

    def __init__(self, device_ids, nccl=None):
        super().__init__()
        self.nccl = nccl if nccl is not None else nccl_module()
        self.device_ids = tuple(int(d) for d in device_ids)
        self.comms = self._comms()
        self.staged: list = []  # (collective, reason) of host-staged collectives, first ones

    def _comms(self, device_ids=None):
        """The NCCL communicators over ``device_ids`` (default: every GPU of the call),
        created once per process and device tuple."""
        key = self.device_ids if device_ids is None else tuple(device_ids)
        comms = _COMMS.get(key)
        if comms is None:
            with _LOCK:
                comms = _COMMS.get(key)
                if comms is None:
                    comms = _COMMS[key] = list(self.nccl.Communicator.init_all(list(key)))
        return comms

    def describe(self) -> str:
        version = getattr(self.nccl, "__version__", "?")
        return (f"NCCL (nccl4py {version}) on each device's stream, one communicator over "
                f"GPUs {list(self.device_ids)}")

    # --- dispatch ---

    def collective(self, key, n, pos, value, combine, what, device):
        kind = getattr(combine, "mpi", None)
        comms = self._group_comms(key, n)
        reason = self._unsupported(comms, value, kind)
        if reason is not None:
            if len(self.staged) < 16:
                self.staged.append((what[0], reason))
            staged = tuple(_host(x) for x in value) if isinstance(value, tuple) else \
                _host(value)
            return super().collective(key, n, pos, staged, combine, what, device)
        ins = _leaves(value)
        outs = [self._output(kind, x, n, pos) for x in ins]
        issue = getattr(self, "_" + kind[0])

        def device_combine(vals):
            with _Group(self.nccl):
                issue(comms, kind, [v[0] for v in vals], [v[1] for v in vals])
            return [v[1] for v in vals]

        got = super().collective(key, n, pos, (ins, outs), device_combine, what, device)
        return list(got) if kind[0] == "reduce" else got[0]

    def _group_comms(self, key, n):
        """The NCCL communicators (one per rank, in position order) of the participants of
        collective ``key``; None: no communicator holds exactly them (a nested pmap's axes)."""
        if key[0] != () or key[1] != (0,) or key[2] != () or n != len(self.comms):
            return None
        return self.comms

    @staticmethod
    def _unsupported(comms, value, kind):
        """Why this collective is host-staged (None: it goes through NCCL)."""
        if kind is None or kind[0] not in ("reduce", "gather", "reduce_scatter", "ppermute",
                                           "all_to_all"):
            return "no NCCL form of this collective"
        if comms is None:
            return "a collective over a nested pmap's axes"
        leaves = _leaves(value)
        if not all(_is_device(x) for x in leaves):
            return "host values (a numpy fallback step)"
        if kind[0] in ("reduce", "reduce_scatter") and \
                any(x.dtype.name not in _REDUCIBLE for x in leaves):
            return f"NCCL cannot reduce {leaves[0].dtype.name}"
        dims = {"gather": kind[1:2], "reduce_scatter": kind[2:3], "all_to_all": kind[1:3]}
        if any(d != 0 for d in dims.get(kind[0], ())):
            return "a collective over a non-leading dimension"
        return None

    def _output(self, kind, x, n, pos):
        """This replica's output buffer (allocated in its own thread, on its device)."""
        shape, dev = tuple(x.shape), x.device_id
        if kind[0] == "gather":
            shape = (shape[0] * n,) + shape[1:] if kind[2] else (n,) + shape
        elif kind[0] == "reduce_scatter":
            shape = (shape[0] // n,) + shape[1:] if kind[3] else shape[1:]
        elif kind[0] == "ppermute" and pos not in {d for _, d in kind[1]}:
            return _zeros(shape, x.dtype, dev)  # receives nothing
        return _new_buffer(shape, x.dtype, dev)

    # --- the NCCL calls (inside one group; rank i's on device i's stream) ---

    _OPS = {"sum": "SUM", "max": "MAX", "min": "MIN"}

    def _reduce(self, comms, kind, ins, outs):
        op = getattr(self.nccl, self._OPS[kind[1]])
        for k in range(len(ins[0])):
            for r, comm in enumerate(comms):
                if ins[r][k].size:
                    comm.allreduce(_elements(ins[r][k]), _elements(outs[r][k]), op,
                                   stream=_stream(ins[r][k]))

    def _gather(self, comms, kind, ins, outs):
        for r, comm in enumerate(comms):
            if ins[r][0].size:
                comm.allgather(_bytes(ins[r][0]), _bytes(outs[r][0]), stream=_stream(ins[r][0]))

    def _reduce_scatter(self, comms, kind, ins, outs):
        for r, comm in enumerate(comms):
            if ins[r][0].size:
                comm.reduce_scatter(_elements(ins[r][0]), _elements(outs[r][0]), self.nccl.SUM,
                                    stream=_stream(ins[r][0]))

    def _ppermute(self, comms, kind, ins, outs):
        for src, dst in kind[1]:
            x = ins[src][0]
            if x.size:
                comms[src].send(_bytes(x), dst, stream=_stream(x))
                comms[dst].recv(_bytes(outs[dst][0]), src, stream=_stream(outs[dst][0]))

    def _all_to_all(self, comms, kind, ins, outs):
        n = len(comms)
        chunk = ins[0][0].nbytes // n  # the leading dimension splits into n equal chunks
        if not chunk:
            return
        for src in range(n):
            x, y = ins[src][0], outs[src][0]
            for dst in range(n):
                comms[src].send(_bytes(x, dst * chunk, chunk), dst, stream=_stream(x))
                comms[src].recv(_bytes(y, dst * chunk, chunk), dst, stream=_stream(y))


# --- shard_map over a mesh of GPUs: one sub-communicator per axis group ---


def group_device_ids(grid, ks, others) -> list:
    """The GPUs of one collective over a mesh (``grid``: the GPU ids, one dimension per
    replica frame): along the frames ``ks`` (row-major in that order: the participants'
    positions), at the positions ``others`` on the remaining frames."""
    rest = [k for k in range(grid.ndim) if k not in ks]
    ids = []
    for sub in np.ndindex(*[grid.shape[k] for k in ks]):
        idx = [0] * grid.ndim
        for k, c in zip(ks, sub):
            idx[k] = c
        for k, c in zip(rest, others):
            idx[k] = c
        ids.append(int(grid[tuple(idx)]))
    return ids


class MeshNcclCommunicator(NcclCommunicator):
    """Collectives of a shard_map over a mesh of GPUs via NCCL.

    ``grid`` holds the GPU ids laid out as the mesh's manual axes (one replica frame per
    axis). A collective over some of the axes meets the GPUs that share the positions on the
    others: it runs on the NCCL communicator of exactly those GPUs, ranked in the
    participants' position order (one sub-communicator per axis group, created once per
    process and reused, as the whole-mesh one).
    """

    def __init__(self, grid, nccl=None):
        self.grid = np.asarray(grid, dtype=np.int64)
        super().__init__(self.grid.reshape(-1).tolist(), nccl)

    def describe(self) -> str:
        version = getattr(self.nccl, "__version__", "?")
        return (f"NCCL (nccl4py {version}) on each device's stream, one communicator per "
                f"group of GPUs a collective spans, over the mesh of GPUs {self.grid.tolist()}")

    def _group_comms(self, key, n):
        if key[0] != ():
            return None  # a collective of a pmap / shard_map nested in the replicas
        ids = group_device_ids(self.grid, key[1], key[2])
        return self._comms(ids) if len(ids) == n else None


class _Group:
    """``nccl.group_start()`` ... ``group_end()`` around the calls of every rank."""

    def __init__(self, nccl):
        self.nccl = nccl

    def __enter__(self):
        self.nccl.group_start()

    def __exit__(self, *exc):
        self.nccl.group_end()
        return False
