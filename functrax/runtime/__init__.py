"""The runtime layer: where programs run and what they run on.

- ``devices``: virtual CPU devices, ``ShardedArray``, ``device_put``; ``gpu_devices``: CUDA
  devices and GPU-resident arrays;
- ``cuda``: the CUDA probe and the cuda-core / driver loaders; ``gpu_buffer``: GPU memory;
  ``gpu_launch``: compiling and launching Triton kernels through cuda-core;
  ``gpu_registration``: registers those into the Triton backend (``lowering/triton/
  gpu_hooks.py``) when functrax is imported;
- ``mesh`` / ``shardings`` / ``mesh_array``: device meshes, ``PartitionSpec`` /
  ``NamedSharding``, and arrays split into per-device blocks over a mesh (public home:
  ``functrax.sharding``);
- ``pmap_runtime``: replica threads and collectives (pmap's and shard_map's);
  ``pmap_gpu``: pmap on GPUs;
  ``shard_map_gpu``: shard_map on a mesh of GPUs;
  ``nccl_communicator`` / ``mpi_communicator``: collectives through NCCL / MPI;
  ``distributed``: multi-process runs under MPI.
"""
