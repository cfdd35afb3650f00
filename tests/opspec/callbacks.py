"""Op specs of the host callbacks with results: ``pure_callback`` (each ``vmap_method``, and
wrapped in ``custom_jvp`` to be differentiable) and ``io_callback``. The callbacks compute
with numpy on the host; the drivers check them eagerly, under jit, vmap (against a loop) and
on the Triton backend (the callback runs on the host between kernels). ``debug.print`` /
``debug.callback`` return nothing: tests/test_debugging.py checks what they print.
"""
from __future__ import annotations

import numpy as np

import functrax
from functrax.experimental import io_callback
from tests.opspec.spec import F32, OpSpec

_SDS = functrax.ShapeDtypeStruct


def _like(*xs):
    """The result type of a broadcasting binary numpy function of ``xs``."""
    shape = np.broadcast_shapes(*(np.shape(x) for x in xs))
    return _SDS(shape, functrax.dtypes.result_type(*xs))


def _np(fn):
    return lambda *xs: fn(*(np.asarray(x) for x in xs))


def _pure(fn, method):
    return lambda *xs: functrax.pure_callback(_np(fn), _like(*xs), *xs, vmap_method=method)


# sin and cos on the host, differentiable to any order through custom_jvp
@functrax.custom_jvp
def host_sin(x):
    return functrax.pure_callback(_np(np.sin), _like(x), x, vmap_method="sequential")


@functrax.custom_jvp
def host_cos(x):
    return functrax.pure_callback(_np(np.cos), _like(x), x, vmap_method="legacy_vectorized")


host_sin.defjvp(lambda p, t: (host_sin(p[0]), host_cos(p[0]) * t[0]))
host_cos.defjvp(lambda p, t: (host_cos(p[0]), -host_sin(p[0]) * t[0]))

_PRIM = ("pure_callback",)
SPECS = [
    OpSpec("pure_callback_sequential", _pure(np.sin, "sequential"), np.sin,
           primitives=_PRIM),
    OpSpec("pure_callback_sequential_unrolled", _pure(np.tanh, "sequential_unrolled"),
           np.tanh, primitives=_PRIM),
    OpSpec("pure_callback_expand_dims", _pure(np.add, "expand_dims"), np.add,
           shapes=(((3,), (3,)), ((2, 3), (3,))), primitives=_PRIM),
    OpSpec("pure_callback_broadcast_all", _pure(np.multiply, "broadcast_all"), np.multiply,
           shapes=(((3,), (3,)), ((2, 3), (2, 3))), primitives=_PRIM),
    OpSpec("pure_callback_legacy_vectorized", _pure(np.exp, "legacy_vectorized"), np.exp,
           primitives=_PRIM),
    OpSpec("pure_callback_custom_jvp", host_sin, np.sin, dtypes=(F32,), primitives=_PRIM),
    OpSpec("io_callback_unordered",
           lambda x: io_callback(_np(np.cos), _like(x), x), np.cos,
           primitives=("io_callback",)),
]
