"""``functrax.custom_derivatives``: user-defined derivative rules (JAX's
``jax.custom_derivatives``).

- :class:`custom_jvp` / :class:`custom_vjp` (``nondiff_argnums``, ``nondiff_argnames``;
  ``defjvp(..., symbolic_zeros=)``, ``defvjp(fwd, bwd, symbolic_zeros=, optimize_remat=)``);
- :class:`SymbolicZero`, :func:`zero_from_primal`, :class:`CustomVJPPrimal`,
  :func:`custom_vjp_primal_tree_values`: the values rules see with ``symbolic_zeros=True``;
- :func:`custom_gradient`, :func:`closure_convert`;
- :func:`linear_call`: a linear function with a custom transpose.

>>> import functrax
>>> @custom_jvp
... def f(x):
...     return x * 2.0
>>> f.defjvp(lambda p, t: (f(p[0]), 3.0 * t[0]))  # doctest: +ELLIPSIS
<function <lambda> at ...>
>>> functrax.grad(f)(1.0)
Array(3., dtype=float32, weak_type=True)
"""
from functrax.transforms.custom_derivatives import custom_jvp, custom_vjp  # noqa: F401
from functrax.transforms.custom_gradient import closure_convert, custom_gradient  # noqa: F401
from functrax.transforms.linear_call import linear_call  # noqa: F401
from functrax.transforms.symbolic_zeros import (  # noqa: F401
    CustomVJPPrimal, SymbolicZero, custom_vjp_primal_tree_values, zero_from_primal,
)

__all__ = ["custom_jvp", "custom_vjp", "CustomVJPPrimal", "SymbolicZero", "closure_convert",
           "custom_gradient", "custom_vjp_primal_tree_values", "linear_call",
           "zero_from_primal"]
