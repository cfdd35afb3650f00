"""``functrax.numpy``: the numpy API on functrax arrays, traceable by every transform.

Type promotion (JAX's lattice, weak Python scalars) and broadcasting happen here, so the
primitives underneath only see equal dtypes and shapes.

>>> import functrax.numpy as fnp
>>> fnp.sum(fnp.arange(4.0))
Array(6., dtype=float32)
"""
import numpy as _np

from functrax import dtypes as _dtypes
from functrax.core import Array as ndarray  # noqa: F401
from functrax.numpy.creation import *  # noqa: F401,F403
from functrax.numpy.creation import array, asarray  # noqa: F401
from functrax.numpy.reductions import *  # noqa: F401,F403
from functrax.numpy.reductions import all, any, max, min, sum  # noqa: F401,A004
from functrax.numpy.shape_ops import *  # noqa: F401,F403
from functrax.numpy.padding import *  # noqa: F401,F403
from functrax.numpy.ufuncs import *  # noqa: F401,F403
from functrax.numpy.ufuncs import abs, round  # noqa: F401,A004
from functrax.numpy.selection import *  # noqa: F401,F403
from functrax.numpy import array_methods as _array_methods  # noqa: F401,E402
from functrax.numpy.dtype_helpers import *  # noqa: F401,F403,E402

pi, e, inf, nan, newaxis, euler_gamma = _np.pi, _np.e, _np.inf, _np.nan, None, _np.euler_gamma
from functrax.numpy.sorting import *  # noqa: F401,F403,E402
from functrax.numpy.linalg_ops import *  # noqa: F401,F403,E402
from functrax.numpy.convolution import *  # noqa: F401,F403,E402
from functrax.numpy.indexing import *  # noqa: F401,F403,E402
from functrax.numpy import linalg  # noqa: F401,E402
from functrax.numpy import fft  # noqa: F401,E402
# the rest of jax.numpy's names, one module per family
from functrax.numpy.dtype_helpers import bool  # noqa: F401,E402,A004
from functrax.numpy.array_edit import *  # noqa: F401,F403,E402
from functrax.numpy.bit_ops import *  # noqa: F401,F403,E402
from functrax.numpy.calculus import *  # noqa: F401,F403,E402
from functrax.numpy.dtype_checks import *  # noqa: F401,F403,E402
from functrax.numpy.histograms import *  # noqa: F401,F403,E402
from functrax.numpy.index_grids import *  # noqa: F401,F403,E402
from functrax.numpy.io import *  # noqa: F401,F403,E402
from functrax.numpy.joining import *  # noqa: F401,F403,E402
from functrax.numpy.polynomial import *  # noqa: F401,F403,E402
from functrax.numpy.set_ops import *  # noqa: F401,F403,E402
from functrax.numpy.statistics import *  # noqa: F401,F403,E402
from functrax.numpy.vectorize import *  # noqa: F401,F403,E402
from functrax.numpy.windows import *  # noqa: F401,F403,E402
from functrax.numpy.bessel import *  # noqa: F401,F403,E402
# last: add, multiply, maximum, ... become ufunc objects (fnp.add.outer, fnp.add.at, ...)
from functrax.numpy.ufunc_class import *  # noqa: F401,F403,E402
