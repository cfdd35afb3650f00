"""Op specs: digitize and the histogram functions of functrax.numpy against numpy's.

Counts are floats in JAX's histogram (the weights' dtype) and int32 in histogramdd /
histogram2d without weights, where numpy gives int64 / float64: the dtype checks are
relaxed to those.
"""
import numpy as np

import functrax.numpy as fnp
from tests.opspec.spec import F32, I32, OpSpec, uniform

EDGES = np.array([-2.0, -0.5, 0.0, 1.0, 2.5], np.float32)
DESC = EDGES[::-1].copy()


def increasing(rng, shape, dtype):
    return np.sort(rng.permutation(13)[:shape[-1]] / 2.0 - 3.0).astype(dtype)


def _hist(**kw):
    return (lambda a: fnp.histogram(a, **kw), lambda a: np.histogram(a, **kw))


def _hist_w(**kw):
    return (lambda a, w: fnp.histogram(a, weights=w, **kw),
            lambda a, w: np.histogram(a, weights=w, **kw))


def _hist2d(**kw):
    return (lambda x, y: fnp.histogram2d(x, y, **kw), lambda x, y: np.histogram2d(x, y, **kw))


def _histdd(**kw):
    def ref(s):
        h, edges = np.histogramdd(s, **kw)
        return (h, *edges)

    def fn(s):
        h, edges = fnp.histogramdd(s, **kw)
        return (h, *edges)
    return fn, ref


H10, HB, HR, HD = _hist(), _hist(bins=EDGES), _hist(bins=4, range=(-1.0, 1.0)), _hist(
    bins=5, density=True)
HW = _hist_w(bins=3)
H2, H2D = _hist2d(bins=3), _hist2d(bins=(2, 3), density=True)
HDD, HDDR = _histdd(bins=(2, 3)), _histdd(bins=2, range=[(-1.0, 1.0), (-2.0, 2.0)])


SPECS = [
    OpSpec("digitize", fnp.digitize, np.digitize, shapes=(((6,), (4,)), ((2, 3), (3,))),
           dtypes=(F32, (I32, F32)), domain=(uniform(), increasing),
           kwargs=({}, {"right": True})),
    OpSpec("digitize_decreasing", lambda x: fnp.digitize(x, DESC),
           lambda x: np.digitize(x, DESC), shapes=(((7,),),), out_dtype=lambda *_: I32),
    OpSpec("histogram_bin_edges", fnp.histogram_bin_edges, np.histogram_bin_edges,
           shapes=(((9,),), ((2, 3),)), kwargs=({}, {"bins": 3}, {"bins": 4, "range": (-1, 2)},
                                                {"bins": EDGES})),
    OpSpec("histogram", H10[0], H10[1], shapes=(((20,),), ((3, 4),)), check_dtype=False),
    OpSpec("histogram_edges", HB[0], HB[1], shapes=(((15,),),), check_dtype=False),
    OpSpec("histogram_range", HR[0], HR[1], shapes=(((15,),),), check_dtype=False),
    OpSpec("histogram_density", HD[0], HD[1], shapes=(((12,),),), check_dtype=False),
    OpSpec("histogram_weights", HW[0], HW[1], shapes=(((10,), (10,)),),
           domain=(uniform(), uniform(0, 2))),
    OpSpec("histogram2d", H2[0], H2[1], shapes=(((20,), (20,)),), check_dtype=False),
    OpSpec("histogram2d_density", H2D[0], H2D[1], shapes=(((16,), (16,)),)),
    OpSpec("histogramdd", HDD[0], HDD[1], shapes=(((12, 2),),), check_dtype=False),
    OpSpec("histogramdd_range", HDDR[0], HDDR[1], shapes=(((12, 2),),), check_dtype=False),
]
