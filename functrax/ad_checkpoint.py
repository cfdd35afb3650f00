"""``functrax.ad_checkpoint``: rematerialization (JAX's ``jax.ad_checkpoint``).

- :func:`checkpoint` (``remat``): recompute a function's intermediates in the backward pass,
  saving only what its ``policy`` allows;
- :func:`checkpoint_name`: tag a value (the ``name`` primitive) for the name-based policies;
- :data:`checkpoint_policies`: every policy of JAX's (``everything_saveable``,
  ``nothing_saveable``, ``dots_saveable``, ``save_only_these_names``, ...);
- :data:`Saveable`, :data:`Recompute`, :class:`Offloadable`: a policy's possible answers
  besides a bool. functrax runs on one host memory, so offloading is a no-op: an
  ``Offloadable`` value is saved;
- :func:`print_saved_residuals` / :func:`saved_residuals`: what reverse mode stores.

>>> import functrax, functrax.numpy as fnp
>>> policy = checkpoint_policies.save_only_these_names("h")
>>> f = checkpoint(lambda x: fnp.sin(checkpoint_name(fnp.sin(x), "h")), policy=policy)
>>> print_saved_residuals(f, 1.0)
f32[] from the argument x
f32[] named 'h' from <lambda>
"""
from functrax.primitives.names import checkpoint_name  # noqa: F401
from functrax.transforms.checkpoint import (  # noqa: F401
    Offloadable, Recompute, Saveable, checkpoint, checkpoint_policies, remat,
)
from functrax.transforms.saved_residuals import print_saved_residuals, saved_residuals  # noqa: F401

__all__ = ["checkpoint", "remat", "checkpoint_name", "checkpoint_policies", "Offloadable",
           "Recompute", "Saveable", "print_saved_residuals", "saved_residuals"]
