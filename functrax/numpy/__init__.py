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
