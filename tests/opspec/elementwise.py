"""Op specs: elementwise functions of functrax.numpy."""
import numpy as np

import functrax.numpy as fnp
from tests.opspec.spec import F32, I32, OpSpec, positive, uniform

U, B = ((3,),), (((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 2)))

SPECS = [
    OpSpec("sin", fnp.sin, np.sin, shapes=U, dtypes=(F32, I32), primitives=("sin",)),
    OpSpec("log", fnp.log, np.log, shapes=U, domain=positive(), primitives=("log",)),
    OpSpec("add", fnp.add, np.add, shapes=B, dtypes=(F32, I32, (F32, I32)), broadcasting=True,
           out_dtype=lambda a, b: np.result_type(a, b) if a == b else np.dtype(np.float32),
           primitives=("add",)),
]
