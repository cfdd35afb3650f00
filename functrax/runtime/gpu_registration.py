"""Registers the CUDA runtime into the Triton backend's table, when imported.

The table (``functrax/lowering/triton/gpu_hooks.py``) gets :data:`CUDA`: the probe
(``cuda.device_count``), the device buffers (``gpu_buffer.GpuBuffer``), the launcher
(``gpu_launch.launch_gpu``) and, for autotuning, ``gpu_launch.device_name`` /
``gpu_launch.time_launch``. ``functrax/__init__`` imports this module before anything
imports triton and then decides ``TRITON_INTERPRET`` (``gpu_hooks.ensure_triton_env``: the
interpreter when the real probe sees no GPU). Nothing
here imports triton or a CUDA package: they load on first use.
"""
from __future__ import annotations

from functrax.lowering.triton import gpu_hooks
from functrax.runtime import cuda, gpu_buffer, gpu_launch

__all__ = ["CUDA"]

CUDA = gpu_hooks.GpuSupport(device_count=cuda.device_count, buffer=gpu_buffer.GpuBuffer,
                            launch=gpu_launch.launch_gpu, device_name=gpu_launch.device_name,
                            time_launch=gpu_launch.time_launch)

gpu_hooks.register_gpu(CUDA)
gpu_hooks.ensure_triton_env()  # decided by the real probe, before anything imports triton
