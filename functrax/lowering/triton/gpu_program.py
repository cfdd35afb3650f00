"""Running a compiled Triton program on a CUDA GPU, buffers staying on the device.

``jit(f, backend="triton")`` (and ``jit`` of GPU-resident inputs) compiles through
:func:`compile_for_placement`: on a machine whose kernels run on a GPU
(``runtime.gpu_active()``) the ``TritonProgram`` is built with ``codegen.GPU_CONFIG``
(autotuned block sizes, tf32 dots, hand-written kernels) and wrapped in a
:class:`GpuProgram`, whose ``run`` takes host arrays or ``GpuBuffer`` s and returns
``GpuBuffer`` s; elsewhere the program runs in Triton's interpreter on numpy buffers.

Kernel steps launch on the device buffers (``runtime.TritonKernel`` uploads host values it
is given: constants once, literals once per value). A numpy fallback step (listed in the
program's ``fallbacks``) and a host callback step (``host_callbacks``: the user's Python)
copy their inputs to the host, run there, and their outputs are
uploaded by the next kernel that reads them. A control-flow step (``control_flow``) runs its
body programs as ``GpuProgram`` s: carries stay on the device, only the predicate / index
scalar is read back.
"""
from __future__ import annotations

import numpy as np

from functrax.core import Literal
from functrax.lowering.triton import gpu_hooks, runtime

__all__ = ["GpuProgram", "compile_for_placement"]


def _host(x):
    return x.to_numpy() if hasattr(x, "to_numpy") else x


class GpuProgram:
    """A ``TritonProgram`` run on GPU buffers: ``run(*arrays) -> list of GpuBuffer``.

    Attributes:
      program: the wrapped ``TritonProgram`` (its ``kernels``, ``fallbacks``, ``plan``,
        ``as_text()`` and ``cost_analysis()`` are forwarded).
      device_outputs: True: ``run`` returns device buffers (``jit`` wraps them as
        GPU-resident arrays).
    """

    device_outputs = True

    def __init__(self, program, device_id: int = 0):
        self.program = program
        self.device_id = device_id
        self.out_avals = program.out_avals
        self.donated = program.donated
        self._consts: dict = {}  # device -> uploaded constants

    def __getattr__(self, name):
        if name == "program":
            raise AttributeError(name)
        return getattr(self.program, name)

    def __call__(self, *args):
        return self.run(*args)

    def _device_of(self, args) -> int:
        return next((x.device_id for x in args if gpu_hooks.is_buffer(x)), self.device_id)

    def run(self, *args) -> list:
        """Run on host arrays or ``GpuBuffer`` s; returns the outputs as ``GpuBuffer`` s."""
        p = self.program
        if len(args) != len(p._invars):
            raise TypeError(f"Triton program takes {len(p._invars)} inputs, got {len(args)}")
        dev = self._device_of(args)
        consts = self._consts.get(dev)
        if consts is None:
            consts = self._consts[dev] = [runtime.to_device(c, dev) for c in p._consts]
        env = dict(zip(p._constvars, consts))
        env.update((v, runtime.to_device(x, dev)) for v, x in zip(p._invars, args))
        for step in p.steps:
            if step.fallback is not None or getattr(step, "on_host", False):
                # a listed numpy fallback or a host callback: runs on host copies
                host = {v: _host(env[v]) for v in step._ins}
                step.run(host)
                env.update((v, host[v]) for v in step._outs)
            else:
                step.run(env)
        outs = [np.asarray(v.val, v.aval.dtype) if type(v) is Literal else env[v]
                for v in p._outvars]
        return [runtime.to_device(o, dev) for o in outs]

    def run_consuming(self, args: list):
        """Run on ``args`` (a list, emptied); donated buffers are not reused."""
        vals = tuple(args)
        args.clear()
        return self.run(*vals)

    def __repr__(self):
        return f"GpuProgram({self.program!r}, device={self.device_id})"


def compile_for_placement(closed, donated=()):
    """The Triton backend's executable of ``closed``: a :class:`GpuProgram` when kernels run
    on a GPU, else the interpreter's ``TritonProgram``."""
    from functrax.lowering.triton.backend import compile_triton
    if runtime.gpu_active():
        from functrax.lowering.triton.codegen import GPU_CONFIG
        return GpuProgram(compile_triton(closed, donated, kernel_config=GPU_CONFIG))
    return compile_triton(closed, donated)
