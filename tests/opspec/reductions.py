"""Op specs: reductions of functrax.numpy."""
import numpy as np

import functrax.numpy as fnp
from tests.opspec.spec import F32, I32, OpSpec

S = (((2, 3),), ((4,),))

SPECS = [
    OpSpec("sum", fnp.sum, np.sum, shapes=S, dtypes=(F32, I32), reduces=True,
           kwargs=({}, {"axis": 0}, {"axis": -1, "keepdims": True}), primitives=("reduce_sum",)),
]
