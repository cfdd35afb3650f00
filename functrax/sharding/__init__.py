"""Meshes and shardings (as ``jax.sharding``): :class:`Mesh`, :class:`PartitionSpec`
(``P``), :class:`NamedSharding`, :class:`SingleDeviceSharding`, :class:`AxisType`, the mesh
in scope (:func:`set_mesh` / :func:`get_mesh`) and :func:`reshard`.

The classes live in the runtime layer (``functrax/runtime/mesh.py``, ``shardings.py``,
``mesh_array.py``), where ``device_put`` and ``shard_map`` use them; this module is their
public home.

>>> import functrax
>>> from functrax.sharding import NamedSharding, PartitionSpec as P
>>> mesh = functrax.make_mesh((1,), ("x",), devices=functrax.devices()[:1])
>>> functrax.device_put(functrax.numpy.zeros(4), NamedSharding(mesh, P("x"))).sharding.spec
P('x',)
"""
from functrax.runtime.mesh import AxisType, Mesh, get_mesh, make_mesh, set_mesh, use_mesh  # noqa: F401
from functrax.runtime.mesh_array import (  # noqa: F401
    MeshShardedArray, make_array_from_callback, make_array_from_process_local_data,
    make_array_from_single_device_arrays, reshard,
)
from functrax.runtime.shardings import (  # noqa: F401
    NamedSharding, P, PartitionSpec, Sharding, SingleDeviceSharding,
    make_single_device_sharding,
)

__all__ = ["AxisType", "Mesh", "NamedSharding", "PartitionSpec", "P", "Sharding",
           "SingleDeviceSharding", "get_mesh", "make_single_device_sharding", "reshard",
           "set_mesh", "use_mesh", "make_mesh"]
