"""``functrax.optim``: optax-shaped gradient transformations, optimizers and schedules.

Optimizers are :class:`GradientTransformation` pairs of pure functions over pytrees; their
states are NamedTuples of arrays, so a whole training step jits.

>>> import functrax, functrax.numpy as fnp
>>> from functrax import optim
>>> opt = optim.adam(optim.exponential_decay(0.1, 100, 0.5))
>>> params = {"w": fnp.zeros(2)}
>>> state = opt.init(params)
>>> @functrax.jit
... def step(params, state):
...     grads = functrax.grad(lambda p: fnp.sum((p["w"] - 1.0) ** 2))(params)
...     updates, state = opt.update(grads, state, params)
...     return optim.apply_updates(params, updates), state
>>> params, state = step(params, state)
>>> fnp.round(params["w"], 3)
Array([0.1, 0.1], dtype=float32)
"""
from functrax.optim.transforms import *  # noqa: F401,F403
from functrax.optim.schedules import *  # noqa: F401,F403
from functrax.optim import schedules, transforms  # noqa: F401
