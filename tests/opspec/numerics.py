"""Op specs: windows, sampled calculus (gradient, trapezoid, interp, unwrap), cov/corrcoef,
logspace/geomspace/fromfunction, matvec/vecmat, frexp/spacing, vectorize and friends, and
the ufunc methods of functrax.numpy, against numpy's functions of the same names.
"""
import operator

import numpy as np

import functrax.numpy as fnp
from tests.opspec.spec import F32, I32, OpSpec, distinct, positive, uniform

C64 = np.dtype(np.complex64)


def sorted_distinct(lo=-3.0, hi=3.0):
    base = distinct(lo, hi)

    def gen(rng, shape, dtype):
        return np.sort(np.asarray(base(rng, shape, dtype)), axis=-1)
    return gen


def wide(lo=-40.0, hi=40.0):
    """Values across many binades, with zeros (frexp / spacing)."""
    def gen(rng, shape, dtype):
        x = rng.uniform(lo, hi, shape) * 10.0 ** rng.randint(-3, 4, shape)
        return np.where(rng.random(shape) < 0.15, 0, x).astype(dtype)
    return gen


def phases(rng, shape, dtype):
    """A random walk with jumps larger than pi (something to unwrap)."""
    return np.cumsum(rng.uniform(-5, 5, shape), axis=-1).astype(dtype)


def _windows():
    return [OpSpec(name, getattr(fnp, name), getattr(np, name), shapes=((),),
                   kwargs=({"M": 7}, {"M": 1}, {"M": 0}, {"M": 4}))
            for name in ("bartlett", "blackman", "hamming", "hanning")] + [
        OpSpec("kaiser", lambda beta, M: fnp.kaiser(M, beta), lambda beta, M: np.kaiser(M, beta),
               shapes=(((),),), domain=uniform(0.5, 8.0), rtol=2e-5,
               kwargs=({"M": 7}, {"M": 1}, {"M": 4}), primitives=("bessel_i0e",)),
        OpSpec("numpy_i0", fnp.i0, np.i0, shapes=(((5,),), ((2, 3),)), domain=uniform(-9.0, 9.0),
               rtol=2e-5, primitives=("bessel_i0e",)),
    ]


def _frompyfunc_ops():
    mul = fnp.frompyfunc(operator.mul, nin=2, nout=1, identity=1)
    hyp = fnp.frompyfunc(lambda x, y: fnp.sqrt(x * x + y * y), nin=2, nout=1)
    return mul, hyp


MUL, HYP = _frompyfunc_ops()


def _piecewise(x):
    return fnp.piecewise(x, [x < -0.5, x > 1.0], [lambda v: -v, lambda v: v * v, 0.5])


def _np_piecewise(x):
    return np.piecewise(x, [x < -0.5, x > 1.0], [lambda v: -v, lambda v: v * v, 0.5])


def _np_reduceat(a, idx):
    return np.add.reduceat(a, idx)


IDX = np.array([0, 3, 1, 5])

SPECS = [
    *_windows(),
    # --- sampled calculus ---
    OpSpec("gradient", fnp.gradient, np.gradient, shapes=(((6,),), ((3, 4),)),
           kwargs=({}, {"axis": -1})),
    OpSpec("gradient_axes", fnp.gradient, np.gradient, shapes=(((3, 4, 2),),),
           kwargs=({"axis": (0, 2)}, {"axis": 1})),
    OpSpec("gradient_spacing", lambda f, x: fnp.gradient(f, x), lambda f, x: np.gradient(f, x),
           shapes=(((6,), (6,)),), domain=(uniform(), sorted_distinct()),
           atol=1e-4, rtol=1e-4),
    OpSpec("gradient_dx", lambda f, dx: fnp.gradient(f, dx), lambda f, dx: np.gradient(f, dx),
           shapes=(((5,), ()), ((2, 3), ())), domain=(uniform(), positive())),
    OpSpec("trapezoid", fnp.trapezoid, np.trapezoid, shapes=(((6,),), ((3, 4),)),
           kwargs=({}, {"dx": 0.5}, {"axis": 0})),
    OpSpec("trapezoid_x", lambda y, x: fnp.trapezoid(y, x), lambda y, x: np.trapezoid(y, x),
           shapes=(((5,), (5,)), ((2, 4), (4,)), ((2, 3), (2, 3))),
           domain=(uniform(), sorted_distinct())),
    OpSpec("interp", fnp.interp, np.interp, shapes=(((7,), (5,), (5,)), ((2, 3), (4,), (4,))),
           domain=(uniform(-4, 4), sorted_distinct(), uniform()),
           kwargs=({}, {"left": -1.0, "right": 2.0})),
    OpSpec("interp_period", lambda x, xp, fp: fnp.interp(x, xp, fp, period=2.5),
           lambda x, xp, fp: np.interp(x, xp, fp, period=2.5), shapes=(((6,), (4,), (4,)),),
           domain=(uniform(-4, 4), uniform(-5, 5), uniform()), atol=1e-4, rtol=1e-4),
    OpSpec("unwrap", fnp.unwrap, np.unwrap, shapes=(((8,),), ((2, 6),)), domain=phases,
           kwargs=({}, {"discont": 4.0}, {"period": 5.0}, {"axis": 0}), atol=1e-4),
    # --- covariance ---
    OpSpec("cov", fnp.cov, np.cov, shapes=(((3, 6),), ((5,),)),
           kwargs=({}, {"rowvar": False}, {"bias": True}, {"ddof": 0})),
    OpSpec("cov_y", fnp.cov, np.cov, shapes=(((2, 5), (5,)),)),
    OpSpec("cov_weights", lambda m, f, a: fnp.cov(m, fweights=f, aweights=a),
           lambda m, f, a: np.cov(m, fweights=f, aweights=a), shapes=(((2, 5), (5,), (5,)),),
           dtypes=((F32, I32, F32),), domain=(uniform(), uniform(1, 3), positive())),
    OpSpec("corrcoef", fnp.corrcoef, np.corrcoef, shapes=(((3, 6),),),
           kwargs=({}, {"rowvar": False})),
    OpSpec("corrcoef_y", fnp.corrcoef, np.corrcoef, shapes=(((6,), (6,)),)),
    # --- ranges ---
    OpSpec("logspace", fnp.logspace, np.logspace, shapes=(((), ()), ((2,), ())),
           kwargs=({"num": 5}, {"num": 4, "base": 2.0, "endpoint": False}, {"num": 3,
                                                                              "axis": -1}),
           domain=uniform(-1, 1), atol=1e-4, rtol=1e-4),
    OpSpec("geomspace", fnp.geomspace, np.geomspace, shapes=(((), ()), ((3,), ())),
           domain=positive(0.5, 10), kwargs=({"num": 5}, {"num": 4, "endpoint": False}),
           atol=1e-4, rtol=1e-4),
    OpSpec("fromfunction", lambda: fnp.fromfunction(lambda i, j: i * 2 + j, (3, 4)),
           lambda: np.fromfunction(lambda i, j: i * 2 + j, (3, 4)), shapes=((),)),
    # --- products ---
    OpSpec("matvec", fnp.matvec, np.matvec, shapes=(((2, 3, 4), (4,)), ((3, 4), (2, 4)))),
    OpSpec("vecmat", fnp.vecmat, np.vecmat, shapes=(((3,), (2, 3, 4)), ((2, 3), (3, 2))),
           dtypes=(F32, C64)),
    # --- float decompositions ---
    OpSpec("frexp", fnp.frexp, np.frexp, shapes=(((7,),), ((2, 3),)), domain=wide()),
    OpSpec("frexp_mantissa", lambda x: fnp.frexp(x)[0], lambda x: np.frexp(x)[0],
           shapes=(((6,),),), domain=uniform(-9, 9)),
    OpSpec("spacing", fnp.spacing, np.spacing, shapes=(((7,),),), domain=wide()),
    # --- vectorization ---
    OpSpec("vectorize", fnp.vectorize(lambda m, v: m @ v, signature="(n,k),(k)->(n)"),
           np.vectorize(lambda m, v: m @ v, signature="(n,k),(k)->(n)"),
           shapes=(((2, 3, 4), (4,)), ((3, 4), (2, 1, 4)))),
    OpSpec("vectorize_scalar", fnp.vectorize(lambda x, y: fnp.where(x > y, x - y, x * y)),
           np.vectorize(lambda x, y: x - y if x > y else x * y),
           shapes=(((4,), (4,)), ((2, 1), (3,)))),
    OpSpec("apply_along_axis",
           lambda a, axis: fnp.apply_along_axis(lambda v: (v * v).sum() + v[0], axis, a),
           lambda a, axis: np.apply_along_axis(lambda v: (v * v).sum() + v[0], axis, a),
           shapes=(((3, 4),), ((2, 3, 2),)), kwargs=({"axis": 0}, {"axis": 1}, {"axis": -1})),
    OpSpec("apply_over_axes", lambda a: fnp.apply_over_axes(fnp.sum, a, [0, 2]),
           lambda a: np.apply_over_axes(np.sum, a, [0, 2]), shapes=(((2, 3, 4),),)),
    OpSpec("piecewise", _piecewise, _np_piecewise, shapes=(((7,),), ((2, 3),))),
    # --- ufunc methods ---
    OpSpec("ufunc_add_reduce", fnp.add.reduce, np.add.reduce, shapes=(((3, 4),),),
           dtypes=(F32, I32), kwargs=({}, {"axis": 1}, {"axis": None})),
    OpSpec("ufunc_multiply_accumulate", fnp.multiply.accumulate, np.multiply.accumulate,
           shapes=(((3, 4),),), kwargs=({}, {"axis": 1})),
    OpSpec("ufunc_maximum_outer", fnp.maximum.outer, np.maximum.outer,
           shapes=(((3,), (2, 2)),), dtypes=(F32, I32)),
    OpSpec("ufunc_add_at", lambda a, i, b: fnp.add.at(a, i, b, inplace=False),
           lambda a, i, b: _at(np.add, a, i, b), shapes=(((5,), (4,), (4,)),),
           dtypes=((F32, I32, F32),), domain=(uniform(), uniform(0, 4), uniform())),
    OpSpec("ufunc_add_reduceat", lambda a: fnp.add.reduceat(a, IDX),
           lambda a: _np_reduceat(a, IDX), shapes=(((7,),), ((7, 2),))),
    OpSpec("frompyfunc_reduce", MUL.reduce, np.multiply.reduce, shapes=(((3, 4),),),
           kwargs=({}, {"axis": 1})),
    OpSpec("frompyfunc_accumulate", MUL.accumulate, np.multiply.accumulate,
           shapes=(((4, 3),),), kwargs=({"axis": 1},)),
    OpSpec("frompyfunc_at", lambda a, i, b: MUL.at(a, i, b, inplace=False),
           lambda a, i, b: _at(np.multiply, a, i, b), shapes=(((5,), (4,), (4,)),),
           dtypes=((F32, I32, F32),), domain=(uniform(), uniform(0, 4), uniform())),
    OpSpec("frompyfunc_reduceat", lambda a: MUL.reduceat(a, IDX),
           lambda a: np.multiply.reduceat(a, IDX), shapes=(((7,),),)),
    OpSpec("frompyfunc_outer", HYP.outer, lambda a, b: np.hypot.outer(a, b),
           shapes=(((3,), (4,)),)),
    OpSpec("frompyfunc_call", HYP, np.hypot, shapes=(((2, 3), (3,)),)),
]


def _at(ufunc, a, i, b):
    out = np.array(a, copy=True)
    ufunc.at(out, i, b)
    return out
