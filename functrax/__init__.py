"""functrax: composable function transformations (grad, vmap, jit, pmap) on numpy and Triton.

The public API. The packages are imported layer by layer (see the README's layout): the
backends and the runtime register into the tables of the layers below them as they load.

>>> import functrax, functrax.numpy as fnp
>>> print(functrax.make_jaxpr(fnp.sin)(1.0))
{ lambda ; a:f32[]. let b:f32[] = sin a in (b,) }
"""
# utilities and core
from functrax.config import config  # noqa: F401
from functrax import dtypes, tree_util  # noqa: F401
from functrax.core import (  # noqa: F401
    Array, ClosedJaxpr, Jaxpr, ShapedArray, check_jaxpr, eval_jaxpr, jaxpr_as_fun,
)
from functrax.core.tracing import ShapeDtypeStruct, eval_shape, make_jaxpr  # noqa: F401
from functrax.errors import (  # noqa: F401
    ConcretizationTypeError, JaxprTypeError, MissingRuleError, NonConcreteBooleanIndexError,
    TracerArrayConversionError, TracerBoolConversionError, TracerIntegerConversionError,
    UnexpectedTracerError,
)
# lowering: each backend registers itself (the numpy one also as the eager rules)
from functrax.lowering import numpy as _numpy_backend  # noqa: F401
from functrax.lowering import triton as _triton_backend  # noqa: F401
from functrax.lowering import c as _c_backend  # noqa: F401
# runtime: the CUDA probe, buffers and launcher into the Triton backend's table; then
# TRITON_INTERPRET is decided, before anything imports triton
from functrax.runtime import gpu_registration as _gpu_registration  # noqa: F401
from functrax.runtime.devices import (  # noqa: F401
    Device, Shard, default_backend, device_count, device_put, device_put_replicated,
    device_put_sharded, devices, local_device_count, local_devices, process_count,
    process_index, process_indices,
)
# transforms and control flow (their rule modules fill the transforms' tables)
from functrax.transforms import (  # noqa: F401
    block_until_ready, checkpoint, checkpoint_policies, clear_caches, closure_convert,
    custom_gradient, custom_jvp, custom_vjp, disable_jit, fwd_and_bwd, grad, hessian, jacfwd,
    jacobian, jacrev, jit, jvp, linear_transpose, linearize, remat, value_and_grad, vjp, vmap,
)
from functrax.dtypes import float0  # noqa: F401
from functrax.transforms.pmap import pmap  # noqa: F401
# meshes, shardings and shard_map (issue 18)
from functrax.runtime.mesh import make_mesh, set_mesh  # noqa: F401
from functrax.runtime.mesh_array import (  # noqa: F401
    make_array_from_callback, make_array_from_process_local_data,
    make_array_from_single_device_arrays, reshard,
)
from functrax.runtime.shardings import NamedSharding, P  # noqa: F401
from functrax.transforms.shard_map_api import shard_map  # noqa: F401
from functrax import control_flow as _control_flow  # noqa: F401
# the public modules
from functrax import lax, nn, numpy, optim, random, tree  # noqa: F401
from functrax import mixed_precision  # noqa: F401  (dtype policies, loss scaling)
from functrax import flatten_util  # noqa: F401
from functrax import image, scipy  # noqa: F401
from functrax import errors, typing  # noqa: F401
from functrax import ad_checkpoint, custom_derivatives, extend, interpreters, stages  # noqa: F401
from functrax import distributed  # noqa: F401  (initialize() under mpiexec; imports no mpi4py)
# debugging: host callbacks, debug.print/callback/breakpoint, config context managers
from functrax import debug, experimental, sharding  # noqa: F401
from functrax.experimental import shard_map as _experimental_shard_map  # noqa: F401
from functrax.callbacks import pure_callback  # noqa: F401
from functrax.config import (  # noqa: F401
    check_tracer_leaks, checking_leaks, debug_infs, debug_nans, default_matmul_precision,
    enable_checks, enable_x64, ensure_compile_time_eval, explain_cache_misses, log_compiles,
    numpy_dtype_promotion, numpy_rank_promotion, default_prng_impl, enable_custom_prng,
    legacy_prng_key,
)
from functrax.debugging import (  # noqa: F401
    default_device, device_get, live_arrays, named_call, named_scope, print_environment_info,
    typeof,
)

__version__ = "0.1.0"
