"""Transformations: jvp/grad (ad*.py), and later vmap, jit, pmap."""
from functrax.transforms import ad_rules as _ad_rules  # noqa: F401
from functrax.transforms import ad_rules_structural as _ad_rules_structural  # noqa: F401
from functrax.transforms.grad import (  # noqa: F401
    grad, hessian, jacfwd, jacrev, jvp, linear_transpose, linearize, value_and_grad, vjp,
)
