"""``shard_map`` on a mesh of CUDA GPUs: one replica per mesh device, each a Triton program
on its GPU (the machinery of ``pmap_gpu``).

A shard_map runs here when its mesh's devices are GPUs (``functrax.make_mesh(...,
devices=functrax.devices("gpu"))``); :func:`placement` decides it, once per call, from the
mesh's devices (a mesh mixing CPU and GPU devices is an error). Otherwise it runs on the
mesh's CPU devices as before.

The per-device jaxpr is compiled once per jaxpr and mesh axis sizes by the Triton backend,
with every manual mesh axis bound (``pmap_gpu.env_replica_program``: collectives over
non-leading dimensions rewritten to leading-dimension ones). Every replica runs at one level
of the pmap runtime (``pmap_runtime.run_grid_replicas``: one frame per mesh axis), in its
own thread, on its GPU's buffers. The collectives go through the communicator of the mesh
(``nccl_communicator.make_communicator(ids, grid)``): with nccl4py, a
:class:`~functrax.runtime.nccl_communicator.MeshNcclCommunicator`, whose collective over one
mesh axis or a tuple of axes runs on the NCCL communicator of exactly the GPUs it spans (one
sub-communicator per axis group, created once); without it, host-staged.

Eager outputs are :class:`GpuMeshShardedArray` s whose blocks stay on their GPUs; a following
GPU shard_map whose in_spec matches their sharding consumes the blocks where they are.

Not supported on GPUs (clear errors): a shard_map on GPUs nested inside pmap or another
shard_map's replicas.
"""
from __future__ import annotations

import numpy as np

from functrax.runtime import pmap_gpu
from functrax.runtime import pmap_runtime as rt
from functrax.runtime.devices import Shard
from functrax.runtime.mesh_array import MeshShardedArray

__all__ = ["placement", "run", "GpuMeshShardedArray", "last_collectives"]

_LAST = ["(no shard_map has run on GPUs yet)"]


def _is_gpu_device(d) -> bool:
    from functrax.runtime.gpu_devices import GpuDevice
    return type(d) is GpuDevice


def placement(mesh) -> list | None:
    """The GPUs a shard_map over ``mesh`` runs on, row-major over the mesh (None: the
    mesh's CPU devices).

    Raises:
      ValueError: the mesh mixes CPU and GPU devices.

    >>> import functrax
    >>> placement(functrax.make_mesh((1,), ("x",), devices=functrax.devices("cpu")[:1])) is None
    True
    """
    devs = list(mesh.devices.flat)
    kinds = {_is_gpu_device(d) for d in devs}
    if kinds == {True, False}:
        raise ValueError(f"shard_map: the mesh {dict(mesh.shape)} mixes CPU and GPU devices "
                         f"({devs}); build it from devices of one platform "
                         "(functrax.make_mesh(..., devices=functrax.devices('gpu')) or "
                         "devices=functrax.devices('cpu'))")
    return devs if kinds == {True} else None


def run(closed, axes, sizes, devices, blocks_of) -> list:
    """Run the per-device program ``closed`` once per GPU of ``devices``.

    Args:
      axes / sizes: the manual mesh axes and their sizes (one replica frame each).
      devices: the GPUs, an array laid out as ``axes``.
      blocks_of: ``coords -> [input blocks]`` of the device at ``coords`` (axis -> position):
        host arrays, or ``GpuBuffer`` s already on that device.

    Returns:
      Per device (row-major over ``axes``), the list of its output ``GpuBuffer`` s.

    Raises:
      NotImplementedError: called inside pmap or shard_map replicas.
    """
    from functrax.runtime.nccl_communicator import make_communicator
    if rt.current_context() is not None:
        raise NotImplementedError(
            "shard_map on GPUs nested inside pmap or another shard_map is not supported; "
            "map the inner axes in the outer shard_map's mesh, or run the nested one on a "
            "mesh of CPU devices")
    axes, sizes = tuple(axes), tuple(int(s) for s in sizes)
    devs = np.asarray(devices, dtype=object).reshape(sizes)
    flat = list(devs.reshape(-1))
    grid = np.array([d.id for d in flat], dtype=np.int64).reshape(sizes)
    coords = list(np.ndindex(*sizes))
    prog = pmap_gpu.env_replica_program(closed, tuple(zip(axes, sizes)))
    comm, prog.collectives = make_communicator([d.id for d in flat], grid)

    def body(i):
        return prog.run(flat[i].id, blocks_of(dict(zip(axes, coords[i]))), comm)

    outs = rt.run_grid_replicas(body, axes, sizes, coords, [[d] for d in flat], comm)
    prog.staged = list(getattr(comm, "staged", ()))
    _LAST[0] = "\n".join([prog.collectives] + [f"host-staged {name}: {why}"
                                                for name, why in prog.staged])
    return outs


def last_collectives() -> str:
    """How the collectives of the latest shard_map on GPUs communicated (NCCL or
    host-staged, and why; then each host-staged collective with its reason).

    >>> isinstance(last_collectives(), str)
    True
    """
    return _LAST[0]


class GpuMeshShardedArray(MeshShardedArray):
    """A :class:`~functrax.runtime.mesh_array.MeshShardedArray` whose blocks are
    ``GpuBuffer`` s on the mesh's GPUs (the output of a shard_map on GPUs). ``np.asarray``
    copies the blocks to the host and assembles them; ``addressable_shards`` are
    GPU-resident arrays. (Along a mesh axis the shard_map does not map, every device's entry
    is the block computed on the first device of that axis.)"""

    __slots__ = ()

    @property
    def _value(self):
        g = self._gathered
        if g is None:
            if self._blocks is None:
                raise RuntimeError(f"Array has been deleted with shape="
                                   f"{self.aval.str_short()}.")
            host = MeshShardedArray._make(self.shard_values(), self._sharding, self.aval)
            g = self._gathered = host._value
        return g

    def shard_values(self) -> list:
        """Host copies of the per-device blocks, row-major over the mesh."""
        return [None if b is None else b.to_numpy() for b in self.gpu_blocks()]

    def gpu_blocks(self) -> list:
        """The per-device ``GpuBuffer`` s (no copy), row-major over the mesh."""
        return self.device_blocks()

    @property
    def addressable_shards(self) -> list:
        from functrax.runtime.gpu_devices import GpuArray
        return [Shard(d, idx, GpuArray._wrap(b, self.aval.update(shape=tuple(b.shape)), d), rid)
                for d, idx, b, rid in self._raw_shards() if b is not None]

    global_shards = addressable_shards

    def block_until_ready(self):
        for b in self.gpu_blocks():
            b.block_until_ready()
        return self
