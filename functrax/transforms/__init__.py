"""The transformations: ``jvp``/``grad`` and the rest of autodiff (``jvp``, ``partial_eval``,
``transpose``, ``ad``, ``grad``, custom derivatives, ``checkpoint``), ``vmap`` (``batching``),
``jit`` and ``pmap``. Each keeps its rule table (``jvp_rules``, ``transpose_rules``,
``vmap_rules``, ``partial_eval_rules``) keyed by primitive; the ``*_rules*.py`` modules fill
them and are imported here in order. Transforms never inspect one another's tracers.
"""
from functrax.transforms import ad_rules as _ad_rules  # noqa: F401
from functrax.transforms import ad_rules_structural as _ad_rules_structural  # noqa: F401
from functrax.transforms import ad_rules_indexing as _ad_rules_indexing  # noqa: F401
from functrax.transforms import special_rules as _special_rules  # noqa: F401
from functrax.transforms.grad import (  # noqa: F401
    fwd_and_bwd, grad, jvp, linear_transpose, linearize, value_and_grad, vjp,
)
from functrax.transforms.jacobians import hessian, jacfwd, jacobian, jacrev  # noqa: F401
from functrax.transforms.custom_derivatives import custom_jvp, custom_vjp  # noqa: F401,E402
from functrax.transforms.checkpoint import checkpoint, checkpoint_policies, remat  # noqa: F401,E402
from functrax.transforms import batching_rules as _batching_rules  # noqa: F401,E402
from functrax.transforms.vmap import vmap  # noqa: F401,E402
from functrax.transforms import jit_rules as _jit_rules  # noqa: F401,E402
from functrax.transforms.jit import (  # noqa: F401,E402
    block_until_ready, clear_caches, disable_jit, jit, library_jit,
)
from functrax.transforms import batching_rules_indexing as _batching_rules_indexing  # noqa: F401,E402
from functrax.transforms import batching_rules_calls as _batching_rules_calls  # noqa: F401,E402
from functrax.transforms import collective_rules as _collective_rules  # noqa: F401,E402
from functrax.transforms import prng_rules as _prng_rules  # noqa: F401,E402
from functrax.transforms import linalg_rules as _linalg_rules  # noqa: F401,E402
from functrax.transforms import conv_rules as _conv_rules  # noqa: F401,E402
from functrax.transforms import window_rules as _window_rules  # noqa: F401,E402
from functrax.transforms import callback_rules as _callback_rules  # noqa: F401,E402
from functrax.transforms import linalg_rules_more as _linalg_rules_more  # noqa: F401,E402
from functrax.transforms import fft_rules as _fft_rules  # noqa: F401,E402
from functrax.transforms.linear_call import linear_call  # noqa: F401,E402
from functrax.transforms.custom_gradient import closure_convert, custom_gradient  # noqa: F401,E402
