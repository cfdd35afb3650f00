"""Host callbacks on the Triton backend: a step run on the host between kernels.

A host callback (``debug.print``, ``debug.callback``, ``pure_callback``, ``io_callback``)
is an OPAQUE group of its own in the fusion plan (family CALLBACK), so it never enters a
kernel; the planner keeps the effectful ones in program order. Its step,
:class:`HostCallbackStep`, calls the numpy rule (the user's Python) on host arrays: on the
interpreter the buffers are numpy arrays already; on a GPU ``GpuProgram`` copies the inputs
to the host first (``on_host``) and the next kernel uploads the results.
"""
from __future__ import annotations

import numpy as np

from functrax.core import Literal
from functrax.lowering.numpy.rules import numpy_rules
from functrax.primitives.callbacks import (
    debug_callback_p, debug_print_p, io_callback_p, pure_callback_p,
)

__all__ = ["HostCallbackStep", "host_callback_step", "HOST_CALLBACKS"]

HOST_CALLBACKS = (debug_callback_p, debug_print_p, pure_callback_p, io_callback_p)


class HostCallbackStep:
    """One callback equation of a plan, run on the host (neither a kernel nor a fallback).

    Attributes:
      group: the OPAQUE ``FusionGroup`` holding the equation.
      on_host: True: its inputs are host arrays (``GpuProgram`` copies device buffers back).
      kernel, fallback: None; kernels, fallbacks: empty.
    """

    kernel = None
    fallback = None
    kernels = ()
    fallbacks = ()
    on_host = True

    def __init__(self, group):
        (eqn,) = group.eqns
        self.group = group
        self.primitive = eqn.primitive
        self._rule = numpy_rules[eqn.primitive]
        self._params = eqn.params
        self._invars = tuple(eqn.invars)
        self._ins = tuple(group.inputs)
        self._outs = tuple(eqn.outvars)

    def run(self, env: dict):
        vals = [np.asarray(v.val, v.aval.dtype) if type(v) is Literal else env[v]
                for v in self._invars]
        for v, x in zip(self._outs, self._rule(*vals, **self._params)):
            env[v] = x

    def describe(self) -> str:
        """One line for ``as_text``."""
        return f"host callback {self.primitive} (Python on the host, between kernels)"

    def body_text(self) -> list:
        return []


def host_callback_step(group, kernel_config=None, cache=None) -> HostCallbackStep:
    """The step of a one-equation OPAQUE group of a host callback (``OPAQUE_STEPS``)."""
    return HostCallbackStep(group)
