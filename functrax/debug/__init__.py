"""Debugging inside (jitted, transformed) programs, as ``jax.debug``: :func:`print` and
:func:`callback` run Python on the host with the runtime values, :func:`breakpoint` enters a
debugger on them. Sharding visualisation (``inspect_array_sharding``,
``visualize_array_sharding``, ``visualize_sharding``) comes with sharding (a later issue).

>>> import functrax, functrax.numpy as fnp
>>> _ = functrax.vmap(lambda v: functrax.debug.print("v {}", v))(fnp.arange(2.0))
v 0.0
v 1.0
"""
from functrax.debug.printing import callback, print  # noqa: F401,A004
from functrax.debug.breakpoint import breakpoint, register_debugger  # noqa: F401,A004
from functrax.primitives.callbacks import DebugEffect, OrderedDebugEffect  # noqa: F401

__all__ = ["print", "callback", "breakpoint", "register_debugger", "DebugEffect",
           "OrderedDebugEffect"]
