"""OpSpec: what one table entry says about a function under test."""
from __future__ import annotations

import dataclasses
import importlib
from typing import Callable

import numpy as np

F32, F64, I32, I8, U8, BOOL = (np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int8,
                                                     np.uint8, np.bool_))
FLOATS = (F32,)
NUMERIC = (F32, I32)

# input domains: rng, shape, dtype -> numpy array
def uniform(lo=-3.0, hi=3.0):
    def gen(rng, shape, dtype):
        dtype = np.dtype(dtype)
        if dtype == BOOL:
            return rng.random(shape) < 0.5
        if dtype.kind in "iu":
            lo_, hi_ = ((max(int(lo), 0), max(int(hi), 1)) if dtype.kind == "u"
                        else (int(lo), int(hi)))
            return rng.randint(lo_, hi_ + 1, size=shape).astype(dtype)
        return rng.uniform(lo, hi, size=shape).astype(dtype)
    return gen


def positive(lo=0.1, hi=4.0):
    return uniform(lo, hi)


def nonzero(lo=-3.0, hi=3.0):
    base = uniform(lo, hi)

    def gen(rng, shape, dtype):
        x = base(rng, shape, dtype)
        return np.where(x == 0, np.asarray(1, x.dtype), x)
    return gen


def distinct(lo=-3.0, hi=3.0):
    """Values without ties (for argmax/sort whose tie-breaking may legitimately differ)."""
    def gen(rng, shape, dtype):
        n = int(np.prod(shape))
        vals = rng.permutation(n).astype(np.float64) / max(n, 1) * (hi - lo) + lo
        return vals.reshape(shape).astype(dtype)
    return gen


@dataclasses.dataclass(frozen=True)
class OpSpec:
    """One function under test.

    Attributes:
      name: test id.
      fn: the functrax function, called on functrax arrays (static args via ``kwargs``).
      ref: the numpy reference, called on numpy arrays with the same ``kwargs``.
      shapes: a tuple of argument-shape tuples to try, e.g. ``(((3,), (3,)), ((2, 3), ()))``.
      dtypes: a tuple of per-argument dtype tuples (or single dtypes applied to all args).
      domain: input generator per argument (one for all, or a tuple).
      kwargs: a tuple of kwargs dicts to try (each combined with each shape/dtype).
      atol, rtol: float32 tolerances (float64 / ints compare tighter / exactly).
      broadcasting: also test with hypothesis-generated mutually broadcastable shapes.
      reduces: fn takes ``axis``/``keepdims``; hypothesis tests random axes.
      check_dtype: compare the result dtype with numpy's (canonicalized) result dtype.
      out_dtype: override for the expected result dtype: fn(input dtypes) -> dtype.
      primitives: names of primitives this spec exercises (coverage of the registry).
    """

    name: str
    fn: Callable
    ref: Callable
    shapes: tuple = (((3,),), ((2, 3),))
    dtypes: tuple = (F32,)
    domain: object = uniform()
    kwargs: tuple = ({},)
    atol: float = 1e-5
    rtol: float = 1e-5
    broadcasting: bool = False
    reduces: bool = False
    check_dtype: bool = True
    out_dtype: Callable | None = None
    primitives: tuple = ()

    def arg_dtypes(self, dt, nargs):
        return tuple(dt) if isinstance(dt, tuple) else (dt,) * nargs

    def domains(self, nargs):
        return tuple(self.domain) if isinstance(self.domain, tuple) else (self.domain,) * nargs

    def make_args(self, rng, shapes, dts):
        return [np.asarray(gen(rng, s, d)) for gen, s, d in
                zip(self.domains(len(shapes)), shapes, self.arg_dtypes(dts, len(shapes)))]

    def cases(self):
        """(shapes, dtypes, kwargs) triples to run."""
        for shapes in self.shapes:
            for dts in self.dtypes:
                for kw in self.kwargs:
                    yield shapes, dts, kw


ALL_FAMILIES = ("elementwise", "reductions", "shape_ops", "creation", "linalg", "indexing",
                "sorting", "lax_ops", "control_flow", "nn", "random", "convolution",
                "windows", "scipy_linalg", "scipy_special", "fft", "polynomial", "set_ops",
                "histograms", "array_edit", "numerics", "callbacks", "scipy_stats",
                "custom_derivatives")


def all_specs():
    specs = []
    for fam in ALL_FAMILIES:
        specs.extend(importlib.import_module(f"tests.opspec.{fam}").SPECS)
    names = [s.name for s in specs]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, f"duplicate op-spec names: {dup}"
    return specs
