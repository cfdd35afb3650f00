"""Many processes over MPI: ``functrax.distributed.initialize()`` under ``mpiexec -n P``.

Each process (an MPI rank) owns its local devices (``num_cpu_devices`` /
``FUNCTRAX_NUM_CPU_DEVICES`` virtual CPU devices, default 1); after :func:`initialize`,
``functrax.devices()`` lists the devices of every process (globally unique ids,
process-major), ``local_devices()`` this process's, ``process_index()`` is the MPI rank
and ``process_count()`` the number of ranks. A top-level ``pmap`` then maps a global axis:
each process passes its local shard (leading axis ``local_device_count()``), and the
collectives (``psum``, ``all_gather``, ``ppermute``, ``all_to_all``, ...) span every
device of every process through MPI (``functrax/runtime/mpi_communicator.py``). Likewise
``make_mesh`` builds a mesh over every process's devices (each process owning a contiguous
block along the leading axes) and ``shard_map`` on it runs, in each process, the blocks of its
own devices, with collectives over any mesh axes (``MeshMPICommunicator``); arrays over such
a mesh hold this process's blocks (``make_array_from_process_local_data``), and
``functrax.experimental.multihost_utils.process_allgather`` gathers them.

Needs the optional extra ``functrax[mpi]`` (``mpi4py`` and the ``mpich`` wheel, whose
``mpiexec`` lands in the Python environment's ``bin/``)::

    pip install 'functrax[mpi]'
    mpiexec -n 2 python examples/pmap_data_parallel.py

A collective that a peer never completes (a dead process, or one running other
collectives) raises ``CollectiveTimeoutError`` after ``config.collective_timeout_s``
seconds. MPI cannot cancel it, so the process must end: :func:`initialize` installs a
``sys.excepthook`` that prints the uncaught exception and calls ``MPI_Abort`` (as
``python -m mpi4py`` does), which ends every rank with a non-zero exit status instead of
leaving them hanging in ``MPI_Finalize``. (With ``mpiexec``'s default clean-up, a rank that
exits with an error also makes ``mpiexec`` kill the others at once.)

``import functrax`` does not import mpi4py; :func:`initialize` does.
"""
from __future__ import annotations

import os
import sys
import time

from functrax.runtime import devices as _devices_mod
from functrax.runtime import pmap_runtime

__all__ = ["initialize", "shutdown", "is_initialized", "launched_by_mpiexec"]

# the environment variables of the MPI launchers naming this process's rank (MPICH's Hydra
# and Intel MPI: PMI_RANK; Open MPI: OMPI_COMM_WORLD_RANK; PMIx launchers: PMIX_RANK)
_RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK")


class _State:
    __slots__ = ("mpi", "world", "comm", "rank", "size", "counts", "prev_hook")


_state: _State | None = None
_ABORT_GRACE_S = 0.5  # between printing an uncaught exception and MPI_Abort


def launched_by_mpiexec() -> bool:
    """Was this process started by an MPI launcher (``mpiexec`` / ``mpirun``)?

    >>> isinstance(launched_by_mpiexec(), bool)
    True
    """
    return any(v in os.environ for v in _RANK_VARS)


def is_initialized() -> bool:
    """Has :func:`initialize` run (and no :func:`shutdown` since)?"""
    return _state is not None


def _import_mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError(
            "functrax.distributed.initialize() needs mpi4py and an MPI library: install the "
            "optional extra with `pip install 'functrax[mpi]'` (mpi4py and the mpich wheel, "
            f"which provides mpiexec); importing mpi4py failed: {e}") from e
    return MPI


def initialize(coordinator_address=None, num_processes=None, process_id=None,
               local_device_ids=None, *, abort_on_uncaught_exception: bool = True) -> None:
    """Join the processes of an MPI run (call once, at start-up, before using any device).

    Args:
      coordinator_address: not used (MPI's launcher connects the processes); must be None.
      num_processes: if given, must equal the number of MPI ranks.
      process_id: if given, must equal this process's MPI rank.
      local_device_ids: not supported (the local devices are the ``num_cpu_devices``
        virtual CPU devices); must be None.
      abort_on_uncaught_exception: install a ``sys.excepthook`` that calls ``MPI_Abort``
        after printing an uncaught exception, so that every rank ends (default True).

    Raises:
      RuntimeError: when called twice, or after the devices were already used.
      ImportError: when mpi4py is missing (install ``functrax[mpi]``).

    Example (under ``mpiexec -n 2 python script.py``)::

        functrax.distributed.initialize()
        functrax.process_count()   # 2
        functrax.devices()         # [CpuDevice(id=0), CpuDevice(id=1)]
    """
    global _state
    if _state is not None:
        raise RuntimeError("functrax.distributed.initialize should only be called once.")
    for name, v in (("coordinator_address", coordinator_address),
                    ("local_device_ids", local_device_ids)):
        if v is not None:
            raise ValueError(f"functrax.distributed.initialize: {name}={v!r} is not supported: "
                             "the processes are the ranks of an MPI launch (mpiexec) and "
                             "each owns its num_cpu_devices virtual CPU devices; pass None")
    used = _devices_mod.devices_in_use()
    if used is not None:
        raise RuntimeError(
            "functrax.distributed.initialize() must be called before any functrax devices are "
            f"used: this process already made its device list ({len(used)} device(s), "
            "by functrax.devices(), pmap, device_put_sharded, ...). Call it first thing in "
            "the program (or clear_backends() from functrax.runtime.devices before calling it).")
    count = _devices_mod.configured_count()
    MPI = _import_mpi()
    from functrax.runtime.mpi_communicator import communicator_for  # (needs mpi4py)
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    if num_processes is not None and num_processes != size:
        raise ValueError(f"functrax.distributed.initialize: num_processes={num_processes} but "
                         f"mpiexec started {size} processes")
    if process_id is not None and process_id != rank:
        raise ValueError(f"functrax.distributed.initialize: process_id={process_id} but this "
                         f"process is MPI rank {rank}")
    if MPI.Query_thread() < MPI.THREAD_SERIALIZED:
        raise RuntimeError("functrax.distributed: the MPI library provides thread level "
                           f"{MPI.Query_thread()}, below MPI_THREAD_SERIALIZED, which pmap's "
                           "replica threads need (use an MPI built with thread support, e.g. "
                           "the mpich wheel of functrax[mpi])")
    comm = world.Dup()  # functrax's own communicator: user MPI traffic cannot interfere
    st = _State()
    st.mpi, st.world, st.comm, st.rank, st.size = MPI, world, comm, rank, size
    st.counts = comm.allgather(count)
    st.prev_hook = None
    if abort_on_uncaught_exception and size > 1:
        st.prev_hook = sys.excepthook
        sys.excepthook = _abort_hook(st)
    _devices_mod.set_process_layout((rank, st.counts))
    pmap_runtime.register_process_communicator(lambda layout: communicator_for(comm, layout))
    _state = st


def _abort_hook(st):
    prev = sys.excepthook

    def hook(exc_type, exc, tb):
        try:
            prev(exc_type, exc, tb)
            sys.stderr.write(f"functrax.distributed: uncaught {exc_type.__name__} in MPI rank "
                             f"{st.rank} of {st.size}: aborting the MPI job\n")
            sys.stdout.flush()
            sys.stderr.flush()
            # MPI_Abort ends every process at once: give mpiexec time to forward the output
            time.sleep(_ABORT_GRACE_S)
        finally:
            st.world.Abort(1)

    return hook


def shutdown() -> None:
    """Leave the multi-process mode: the device list is this process's own again.

    MPI itself stays initialized (mpi4py finalizes it at exit). Does nothing if
    :func:`initialize` did not run.
    """
    global _state
    st = _state
    if st is None:
        return
    if st.prev_hook is not None:
        sys.excepthook = st.prev_hook
    _state = None
    pmap_runtime.register_process_communicator(None)
    _devices_mod.set_process_layout(None)
