"""Mixed precision: dtype policies and loss scaling (as DeepMind's ``jmp``).

A :class:`Policy` says in which dtype parameters are stored, computations run and outputs are
returned (``params=float32,compute=bfloat16,output=float32`` is the usual mixed policy); its
``cast_to_*`` methods cast the floating-point leaves of a pytree and leave every other leaf
alone. Matrix products and convolutions of float16 / bfloat16 operands accumulate in float32
on every backend and are rounded once to their result type, so a bfloat16 compute dtype loses
precision only in the stored values.

float16 gradients underflow or overflow without loss scaling: scale the loss before
differentiating (``loss_scale.scale(loss)``), unscale the gradients
(``loss_scale.unscale(grads)``), check them (:func:`all_finite`), skip the update of a step
whose gradients overflowed (:func:`select_tree`) and let :class:`DynamicLossScale` adjust the
scale (``loss_scale.adjust(finite)``). Loss scales are pytrees: they pass through ``jit`` and
are saved with the rest of the training state.

>>> import functrax, functrax.numpy as fnp
>>> from functrax import mixed_precision as mp
>>> policy = mp.get_policy("mixed_bf16")
>>> policy
Policy(param_dtype=float32, compute_dtype=bfloat16, output_dtype=float32)
>>> policy.cast_to_compute({"w": fnp.ones(2), "step": fnp.asarray(3)})["w"].dtype
dtype(bfloat16)
>>> ls = mp.DynamicLossScale(2.0 ** 15)
>>> grads = ls.unscale(ls.scale({"w": fnp.ones(2, fnp.float16)}))
>>> ls.adjust(mp.all_finite(grads)).counter
Array(1, dtype=int32)
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from functrax import core, dtypes, lax
from functrax import numpy as fnp
from functrax.tree_util import GetAttrKey, register_pytree_with_keys, tree_flatten, tree_map
from functrax.tree_util import tree_leaves, tree_unflatten

__all__ = ["Policy", "get_policy", "NoOpLossScale", "StaticLossScale", "DynamicLossScale",
           "all_finite", "select_tree", "cast_to_full", "cast_to_half"]

# --- dtype names ---

_DTYPE_NAMES = {
    "float32": "float32", "f32": "float32", "full": "float32",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
    "float16": "float16", "f16": "float16", "half": "float16",
    "float64": "float64", "f64": "float64",
}
_MIXED = {"mixed_bf16": "bfloat16", "mixed_f16": "float16"}
_KEYS = {"params": "param_dtype", "p": "param_dtype", "compute": "compute_dtype",
         "c": "compute_dtype", "output": "output_dtype", "o": "output_dtype"}

_ACCEPTED = (
    "Accepted forms: one dtype used for params, compute and output ('float32', 'bfloat16', "
    "'float16', 'float64' or the short names 'f32'/'full', 'bf16', 'f16'/'half', 'f64'); "
    "'mixed_bf16' / 'mixed_f16' (params float32, compute bfloat16 / float16, output "
    "float32); or comma-separated 'params=<dtype>,compute=<dtype>,output=<dtype>' (keys "
    "also 'p', 'c', 'o'; compute defaults to params, output to compute), e.g. "
    "'params=float32,compute=bfloat16,output=float32'.")


def _float_dtype(dtype, where: str) -> np.dtype:
    """``dtype`` (a name, numpy or functrax type) as a floating numpy dtype."""
    if isinstance(dtype, str) and dtype.strip().lower() in _DTYPE_NAMES:
        dtype = _DTYPE_NAMES[dtype.strip().lower()]
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{where}: {dtype!r} is not a dtype; pass a floating dtype such as "
                        "functrax.numpy.bfloat16 or 'float32'.") from None
    if not dtypes.is_float(dt):
        raise TypeError(f"{where}: the dtype must be floating (float16, bfloat16, float32, "
                        f"float64), got {dt.name}.")
    return dt


def _leaf_float_dtype(x):
    """The dtype of ``x`` when it is a floating-point array (functrax array, tracer, numpy
    array or numpy scalar), else None (ints, bools, PRNG keys, Python scalars, others)."""
    if not isinstance(x, (core.Array, core.Tracer, np.ndarray, np.generic)):
        return None
    dt = x.dtype
    if dtypes.is_extended(dt) or not dtypes.is_float(dt):
        return None
    return np.dtype(dt)


def _cast_leaf(x, dtype: np.dtype):
    dt = _leaf_float_dtype(x)
    if dt is None:
        return x
    dtype = dtypes.canonicalize_dtype(dtype)
    if dt == dtype:
        return x
    if isinstance(x, (np.ndarray, np.generic)):  # numpy stays numpy (as jmp)
        return x.astype(dtype)
    return lax.convert_element_type(x, dtype)


def _cast_floating_to(tree, dtype):
    return tree_map(lambda x: _cast_leaf(x, dtype), tree)


def cast_to_full(tree):
    """``tree`` with its floating-point array leaves cast to float32.

    Args:
      tree: a pytree.

    Returns:
      the same structure; other leaves are returned as they are.

    >>> cast_to_full({"w": fnp.ones(2, fnp.float16)})["w"].dtype
    dtype('float32')
    """
    return _cast_floating_to(tree, np.dtype(np.float32))


def cast_to_half(tree):
    """``tree`` with its floating-point array leaves cast to float16 (see
    :func:`cast_to_full`).

    >>> cast_to_half({"w": fnp.ones(2)})["w"].dtype
    dtype('float16')
    """
    return _cast_floating_to(tree, np.dtype(np.float16))


# --- policies ---


def _short(dt: np.dtype) -> str:
    return dt.name


@dataclasses.dataclass(frozen=True)
class Policy:
    """In which dtype parameters are stored, computations run and outputs are returned.

    Args:
      param_dtype, compute_dtype, output_dtype: floating dtypes (a numpy or functrax dtype,
        or a name such as ``"bf16"``); stored as numpy dtypes.

    Raises:
      TypeError: for a dtype that is not floating.

    The ``cast_to_*`` methods cast the floating-point array leaves of a pytree (functrax
    arrays, tracers inside ``jit``/``grad``/``vmap``, numpy arrays) and return every other
    leaf (ints, bools, PRNG keys, Python scalars, ...) as it is.

    >>> p = Policy("float32", "bf16", "float32")
    >>> p.cast_to_compute((fnp.ones(2), fnp.arange(2)))[0].dtype, str(p)
    (dtype(bfloat16), 'params=float32,compute=bfloat16,output=float32')
    """

    param_dtype: Any
    compute_dtype: Any
    output_dtype: Any

    def __post_init__(self):
        for f in ("param_dtype", "compute_dtype", "output_dtype"):
            object.__setattr__(self, f, _float_dtype(getattr(self, f), f"Policy({f}=...)"))

    def cast_to_param(self, tree):
        """``tree`` with its floating-point array leaves cast to ``param_dtype``."""
        return _cast_floating_to(tree, self.param_dtype)

    def cast_to_compute(self, tree):
        """``tree`` with its floating-point array leaves cast to ``compute_dtype``."""
        return _cast_floating_to(tree, self.compute_dtype)

    def cast_to_output(self, tree):
        """``tree`` with its floating-point array leaves cast to ``output_dtype``."""
        return _cast_floating_to(tree, self.output_dtype)

    def with_param_dtype(self, param_dtype) -> "Policy":
        """This policy with another ``param_dtype``."""
        return dataclasses.replace(self, param_dtype=param_dtype)

    def with_compute_dtype(self, compute_dtype) -> "Policy":
        """This policy with another ``compute_dtype``."""
        return dataclasses.replace(self, compute_dtype=compute_dtype)

    def with_output_dtype(self, output_dtype) -> "Policy":
        """This policy with another ``output_dtype``."""
        return dataclasses.replace(self, output_dtype=output_dtype)

    def __repr__(self):
        return (f"Policy(param_dtype={_short(self.param_dtype)}, compute_dtype="
                f"{_short(self.compute_dtype)}, output_dtype={_short(self.output_dtype)})")

    def __str__(self):
        return (f"params={_short(self.param_dtype)},compute={_short(self.compute_dtype)},"
                f"output={_short(self.output_dtype)}")


def _parse_error(spec, why: str) -> ValueError:
    return ValueError(f"get_policy: cannot parse {spec!r}: {why}. {_ACCEPTED}")


def _parse_dtype_name(spec, name: str) -> np.dtype:
    key = name.strip().lower()
    if key not in _DTYPE_NAMES:
        raise _parse_error(spec, f"{name.strip()!r} is not a floating dtype name")
    return np.dtype(_DTYPE_NAMES[key])


def _parse_pairs(spec: str) -> dict:
    found = {}
    for part in spec.split(","):
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if not sep or key not in _KEYS:
            raise _parse_error(spec, f"{part.strip()!r} is not 'params=...', 'compute=...' "
                                     "or 'output=...'")
        if _KEYS[key] in found:
            raise _parse_error(spec, f"the {key!r} dtype is given twice")
        found[_KEYS[key]] = _parse_dtype_name(spec, value)
    if "param_dtype" not in found:
        raise _parse_error(spec, "the 'params' dtype is missing")
    found.setdefault("compute_dtype", found["param_dtype"])
    found.setdefault("output_dtype", found["compute_dtype"])
    return found


def get_policy(spec) -> Policy:
    """The :class:`Policy` a string names (``str(policy)`` gives one back).

    Args:
      spec: ``"params=float32,compute=bfloat16,output=float32"`` (keys also ``p``/``c``/
        ``o``; compute defaults to params, output to compute), one dtype used everywhere
        (``"float32"``/``"f32"``, ``"bfloat16"``/``"bf16"``, ``"float16"``/``"f16"``,
        ``"float64"``/``"f64"``), or ``"mixed_bf16"`` / ``"mixed_f16"`` (params float32,
        compute bfloat16 / float16, output float32). Case and spaces do not matter. A
        :class:`Policy` is returned as it is.

    Returns:
      the Policy.

    Raises:
      ValueError: for a string of none of these forms (the message lists them).
      TypeError: for a ``spec`` that is neither a string nor a Policy.

    >>> get_policy("p=f32,c=f16")
    Policy(param_dtype=float32, compute_dtype=float16, output_dtype=float16)
    >>> get_policy("mixed_f16").output_dtype
    dtype('float32')
    """
    if isinstance(spec, Policy):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"get_policy: expected a policy string or a Policy, got "
                        f"{type(spec).__name__} {spec!r}. {_ACCEPTED}")
    s = spec.strip().lower()
    if s in _MIXED:
        return Policy(np.float32, _MIXED[s], np.float32)
    if "=" in s:
        return Policy(**_parse_pairs(spec))
    if not s:
        raise _parse_error(spec, "the string is empty")
    dt = _parse_dtype_name(spec, s)
    return Policy(dt, dt, dt)


# --- loss scaling ---


def _scalar_array(x, dtype, where: str):
    """A Python number as a 0-d numpy array of ``dtype``; arrays and tracers as they are."""
    if isinstance(x, bool):
        raise TypeError(f"{where}: expected a number, got the bool {x}.")
    if isinstance(x, (int, float, np.number)):
        return np.asarray(x, dtype)
    if getattr(x, "shape", None) != ():
        raise TypeError(f"{where}: expected a scalar, got {type(x).__name__} of shape "
                        f"{getattr(x, 'shape', None)}.")
    return x


def _mul_leaf(x, s, *, in_leaf_dtype: bool):
    """``x * s`` cast back to ``x``'s dtype, for floating-point array leaves (others: x).
    ``in_leaf_dtype``: multiply by ``s`` cast to the leaf's dtype (else in ``s``'s dtype,
    which is float32, then round once)."""
    dt = _leaf_float_dtype(x)
    if dt is None:
        return x
    if in_leaf_dtype:
        s = lax.convert_element_type(s, dt)
    return lax.convert_element_type(fnp.multiply(x, s), dt)


def _scale_tree(tree, loss_scale):
    return tree_map(lambda x: _mul_leaf(x, loss_scale, in_leaf_dtype=True), tree)


def _unscale_tree(tree, loss_scale):
    inv = fnp.divide(np.float32(1), loss_scale)
    return tree_map(lambda x: _mul_leaf(x, inv, in_leaf_dtype=False), tree)


def _check_predicate(pred, where: str, what: str):
    pred = pred if isinstance(pred, (core.Array, core.Tracer)) else fnp.asarray(pred)
    if pred.shape != () or np.dtype(pred.dtype) != np.bool_:
        raise TypeError(f"{where}: {what} must be a boolean scalar (e.g. all_finite(grads)), "
                        f"got shape {tuple(pred.shape)} and dtype {pred.dtype}; reduce it "
                        "with functrax.numpy.all.")
    return pred


@dataclasses.dataclass(frozen=True)
class NoOpLossScale:
    """A loss scale that does nothing (float32 or bfloat16 training).

    ``scale``/``unscale`` return the tree itself, ``adjust`` this same loss scale, and
    ``loss_scale`` is 1. A pytree without leaves.

    >>> NoOpLossScale().unscale({"g": 2.0})
    {'g': 2.0}
    """

    @property
    def loss_scale(self):
        """The scale: 1 (float32)."""
        return np.float32(1)

    def scale(self, tree):
        """``tree`` as it is."""
        return tree

    def unscale(self, tree):
        """``tree`` as it is."""
        return tree

    def adjust(self, grads_finite) -> "NoOpLossScale":
        """This loss scale (``grads_finite`` is ignored)."""
        return self


@dataclasses.dataclass(frozen=True, eq=False)
class StaticLossScale:
    """A fixed loss scale.

    Args:
      loss_scale: the scale, a number or a float32 scalar array (the pytree's one leaf).

    ``scale(tree)`` multiplies each floating-point leaf by the scale (in the leaf's dtype),
    ``unscale(tree)`` by ``1 / scale`` (in float32, rounded once to the leaf's dtype); other
    leaves are returned as they are. ``adjust`` returns this loss scale.

    Raises:
      TypeError: for a ``loss_scale`` that is not a scalar number.

    >>> StaticLossScale(128.0).scale(fnp.ones(2, fnp.float16))
    Array([128., 128.], dtype=float16)
    """

    loss_scale: Any

    def __post_init__(self):
        object.__setattr__(self, "loss_scale", _scalar_array(
            self.loss_scale, np.float32, "StaticLossScale(loss_scale=...)"))

    def scale(self, tree):
        """``tree`` with each floating-point leaf multiplied by the loss scale."""
        return _scale_tree(tree, self.loss_scale)

    def unscale(self, tree):
        """``tree`` with each floating-point leaf multiplied by ``1 / loss_scale``, cast
        back to the leaf's dtype."""
        return _unscale_tree(tree, self.loss_scale)

    def adjust(self, grads_finite) -> "StaticLossScale":
        """This loss scale (``grads_finite`` is ignored)."""
        return self


@dataclasses.dataclass(frozen=True, eq=False)
class DynamicLossScale:
    """A loss scale that halves when gradients overflow and grows while they do not.

    Args:
      loss_scale: the initial scale (a number, or a float32 scalar array); typically
        ``2 ** 15`` for float16.
      counter: the number of consecutive steps with finite gradients since the last change
        (int32 scalar).
      period: after this many consecutive finite steps the scale is multiplied by
        ``factor`` (static).
      factor: the growth and shrink factor (static, > 1).
      min_loss_scale: the scale never drops below this (static).

    ``loss_scale`` and ``counter`` are the pytree's leaves (arrays: traced under ``jit``,
    saved in checkpoints); ``period``, ``factor`` and ``min_loss_scale`` are its static aux
    data. ``scale``/``unscale`` as :class:`StaticLossScale`.

    Raises:
      TypeError: for non-scalar ``loss_scale``/``counter``.
      ValueError: for ``period < 1``, ``factor <= 1`` or ``min_loss_scale <= 0``.

    >>> ls = DynamicLossScale(1024.0, period=2)
    >>> ls = ls.adjust(fnp.asarray(True)).adjust(fnp.asarray(True))
    >>> ls.loss_scale, ls.counter
    (Array(2048., dtype=float32), Array(0, dtype=int32))
    >>> ls.adjust(fnp.asarray(False)).loss_scale
    Array(1024., dtype=float32)
    """

    loss_scale: Any
    counter: Any = 0
    period: int = 2000
    factor: Any = 2
    min_loss_scale: float = 1.0

    def __post_init__(self):
        where = "DynamicLossScale"
        object.__setattr__(self, "loss_scale", _scalar_array(
            self.loss_scale, np.float32, f"{where}(loss_scale=...)"))
        object.__setattr__(self, "counter", _scalar_array(
            self.counter, np.int32, f"{where}(counter=...)"))
        if not isinstance(self.period, (int, np.integer)) or self.period < 1:
            raise ValueError(f"{where}: period must be a positive int (the number of finite "
                             f"steps before the scale grows), got {self.period!r}.")
        if not isinstance(self.factor, (int, float, np.number)) or not self.factor > 1:
            raise ValueError(f"{where}: factor must be a number > 1, got {self.factor!r}.")
        if not isinstance(self.min_loss_scale, (int, float, np.number)) or not (
                self.min_loss_scale > 0):
            raise ValueError(f"{where}: min_loss_scale must be a number > 0, got "
                             f"{self.min_loss_scale!r}.")
        object.__setattr__(self, "period", int(self.period))
        object.__setattr__(self, "min_loss_scale", float(self.min_loss_scale))
        factor = self.factor
        object.__setattr__(self, "factor", int(factor) if float(factor).is_integer()
                           else float(factor))

    def scale(self, tree):
        """``tree`` with each floating-point leaf multiplied by the loss scale."""
        return _scale_tree(tree, self.loss_scale)

    def unscale(self, tree):
        """``tree`` with each floating-point leaf multiplied by ``1 / loss_scale``, cast
        back to the leaf's dtype."""
        return _unscale_tree(tree, self.loss_scale)

    def adjust(self, grads_finite) -> "DynamicLossScale":
        """The loss scale after a step whose gradients were (not) all finite.

        Args:
          grads_finite: a boolean scalar (array or tracer), e.g. ``all_finite(grads)``.

        Returns:
          a new DynamicLossScale: when ``grads_finite``, the counter counts the step and on
          the ``period``-th consecutive finite step the scale is multiplied by ``factor``
          (unless that overflows float32) and the counter restarts; otherwise the scale is
          divided by ``factor`` (not below ``min_loss_scale``) and the counter restarts.

        Raises:
          TypeError: when ``grads_finite`` is not a boolean scalar.
        """
        finite = _check_predicate(grads_finite, "DynamicLossScale.adjust", "grads_finite")
        scale, counter = fnp.asarray(self.loss_scale), fnp.asarray(self.counter)
        grown = scale * self.factor
        grown = fnp.where(fnp.isfinite(grown), grown, scale)
        up = fnp.where(counter == self.period - 1, grown, scale)
        down = fnp.maximum(scale / self.factor, np.asarray(self.min_loss_scale, scale.dtype))
        new_scale = fnp.where(finite, up, down)
        new_counter = fnp.where(finite, (counter + 1) % self.period, 0).astype(counter.dtype)
        return _new_dynamic(new_scale, new_counter, self.period, self.factor,
                            self.min_loss_scale)


def _new_dynamic(loss_scale, counter, period, factor, min_loss_scale):
    """A DynamicLossScale holding exactly these leaves (no conversion, no checks: leaves may
    be tracers, or whatever a tree operation puts there)."""
    obj = object.__new__(DynamicLossScale)
    for name, value in (("loss_scale", loss_scale), ("counter", counter), ("period", period),
                        ("factor", factor), ("min_loss_scale", min_loss_scale)):
        object.__setattr__(obj, name, value)
    return obj


def _new_static(loss_scale):
    obj = object.__new__(StaticLossScale)
    object.__setattr__(obj, "loss_scale", loss_scale)
    return obj


register_pytree_with_keys(NoOpLossScale, lambda x: ((), None), lambda aux, kids: NoOpLossScale())
register_pytree_with_keys(
    StaticLossScale, lambda x: (((GetAttrKey("loss_scale"), x.loss_scale),), None),
    lambda aux, kids: _new_static(*kids))
register_pytree_with_keys(
    DynamicLossScale,
    lambda x: (((GetAttrKey("loss_scale"), x.loss_scale), (GetAttrKey("counter"), x.counter)),
               (x.period, x.factor, x.min_loss_scale)),
    lambda aux, kids: _new_dynamic(*kids, *aux))


# --- skipping a step ---


def _is_inexact_leaf(x) -> bool:
    if isinstance(x, (float, complex)):
        return True
    if not isinstance(x, (core.Array, core.Tracer, np.ndarray, np.generic)):
        return False
    return not dtypes.is_extended(x.dtype) and dtypes.is_inexact(x.dtype)


def all_finite(tree):
    """Whether every floating-point (and complex) leaf of ``tree`` is free of inf and NaN.

    Args:
      tree: a pytree (gradients); integer, boolean, PRNG-key and non-array leaves count as
        finite.

    Returns:
      a boolean scalar array (a tracer inside ``jit``); True for a tree without such leaves.

    >>> all_finite({"a": fnp.ones(2), "b": fnp.array([1.0, fnp.inf])})
    Array(False, dtype=bool)
    """
    leaves = [x for x in tree_leaves(tree) if _is_inexact_leaf(x)]
    if not leaves:
        return fnp.asarray(True)
    return fnp.all(fnp.stack([fnp.all(fnp.isfinite(x)) for x in leaves]))


def select_tree(pred, a, b):
    """``a`` where ``pred`` else ``b``, leaf by leaf (``lax.select`` on a scalar predicate):
    keeps the old parameters and optimizer state of a step whose gradients overflowed.

    Args:
      pred: a boolean scalar (array or tracer), e.g. ``all_finite(grads)``.
      a, b: pytrees of the same structure whose corresponding leaves have the same shape
        and dtype.

    Returns:
      a pytree of ``a``'s structure.

    Raises:
      TypeError: when ``pred`` is not a boolean scalar, or two leaves differ in shape or
        dtype (the message names the leaf).
      ValueError: when ``a`` and ``b`` have different structures.

    >>> select_tree(fnp.asarray(False), {"w": fnp.ones(2)}, {"w": fnp.zeros(2)})
    {'w': Array([0., 0.], dtype=float32)}
    """
    pred = _check_predicate(pred, "select_tree", "pred")
    leaves_a, tree_a = tree_flatten(a)
    leaves_b, tree_b = tree_flatten(b)
    if tree_a != tree_b:
        raise ValueError(f"select_tree: a and b must have the same tree structure, got "
                         f"{tree_a} and {tree_b}.")
    out = []
    for i, (x, y) in enumerate(zip(leaves_a, leaves_b)):
        x, y = fnp.asarray(x), fnp.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype:
            raise TypeError(f"select_tree: leaf {i} of a is {x.dtype}{list(x.shape)} but of b "
                            f"{y.dtype}{list(y.shape)}; both trees need the same shapes and "
                            "dtypes (cast with Policy.cast_to_param first).")
        out.append(lax.select(pred, x, y))
    return tree_unflatten(tree_a, out)
