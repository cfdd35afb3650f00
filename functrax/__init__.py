"""functrax: composable function transformations (grad, vmap, jit, pmap) on numpy and Triton.

>>> import functrax, functrax.numpy as fnp
>>> print(functrax.make_jaxpr(fnp.sin)(1.0))
{ lambda ; a:f32[]. let b:f32[] = sin a in (b,) }
"""
from functrax.config import config  # noqa: F401
from functrax import dtypes  # noqa: F401
# first of the layers: registers the CUDA runtime (probe, buffers, launcher) into the Triton
# backend's table before anything imports triton (TRITON_INTERPRET is decided by the probe)
from functrax.runtime import gpu_registration as _gpu_registration  # noqa: F401
from functrax.core import Array, ShapedArray, ClosedJaxpr, Jaxpr, check_jaxpr, eval_jaxpr  # noqa: F401
from functrax.core import jaxpr_as_fun  # noqa: F401
from functrax.errors import (  # noqa: F401
    ConcretizationTypeError, JaxprTypeError, MissingRuleError, NonConcreteBooleanIndexError,
    TracerArrayConversionError, TracerBoolConversionError, TracerIntegerConversionError,
    UnexpectedTracerError,
)
from functrax.lowering import numpy as _numpy_backend  # noqa: F401  (registers its rules)
from functrax.lowering import triton as _triton_backend  # noqa: F401  (registers the backend)
from functrax import lax  # noqa: F401
from functrax import numpy  # noqa: F401
from functrax import tree_util  # noqa: F401
from functrax.core.tracing import ShapeDtypeStruct, eval_shape, make_jaxpr  # noqa: F401

__version__ = "0.1.0"
from functrax.transforms import (  # noqa: F401,E402
    grad, hessian, jacfwd, jacrev, jvp, linear_transpose, linearize, value_and_grad, vjp,
)
from functrax.transforms import custom_jvp, custom_vjp  # noqa: F401,E402
from functrax.transforms import checkpoint, checkpoint_policies, remat  # noqa: F401,E402
from functrax.transforms import vmap  # noqa: F401,E402
from functrax.transforms import block_until_ready, disable_jit, jit  # noqa: F401,E402
from functrax import control_flow as _control_flow  # noqa: F401,E402  (adds lax.cond, ...)
from functrax import nn, optim  # noqa: F401,E402
from functrax import random  # noqa: F401,E402
from functrax.runtime.devices import devices, local_devices, device_count, local_device_count, process_index, process_count, device_put_sharded, device_put_replicated  # noqa
from functrax.transforms.pmap import pmap  # noqa
from functrax.runtime.devices import device_put, default_backend  # noqa: E402,F401
from functrax import distributed  # noqa: E402  (initialize() under mpiexec; imports no mpi4py)
