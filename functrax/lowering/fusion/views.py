"""Fusion analysis of views (index arithmetic): which views of a value computed in the
group keep a one-to-one correspondence of dimensions, and how a view's axes follow."""
from __future__ import annotations

from functrax.lowering.fusion.config import IllegalGroup
from functrax.lowering.fusion.gather import DATA_DEPENDENT_VIEWS, data_dependent_view_axes

__all__ = ["ViewAnalysis"]


def _nontrivial(shape):
    return [n for n in shape if n != 1]


def _view_of_computed(eqn, t, fresh_axis):
    """Axes of a view of a value computed in the group whose axes are ``t``.

    Raises IllegalGroup when the view does not keep a one-to-one correspondence of dims."""
    name, p = eqn.primitive.name, eqn.params
    x_shape, out_shape = eqn.invars[0].aval.shape, eqn.outvars[0].aval.shape
    if name == "broadcast_in_dim":
        out = [fresh_axis(n) for n in out_shape]
        for i, d in enumerate(p["broadcast_dimensions"]):
            if x_shape[i] == out_shape[d]:
                out[d] = t[i]
        return tuple(out)
    if name == "transpose":
        return tuple(t[i] for i in p["permutation"])
    if name == "squeeze":
        dims = {d % len(x_shape) for d in p["dimensions"]}
        return tuple(a for i, a in enumerate(t) if i not in dims)
    if name == "expand_dims":
        dims = {d % len(out_shape) for d in p["dimensions"]}
        it = iter(t)
        return tuple(None if i in dims else next(it) for i in range(len(out_shape)))
    if name == "reshape" and p.get("dimensions") in (None, tuple(range(len(x_shape)))):
        if _nontrivial(x_shape) == _nontrivial(out_shape):
            it = iter(a for a, n in zip(t, x_shape) if n != 1)
            return tuple(None if n == 1 else next(it) for n in out_shape)
    if name == "dynamic_update_slice":  # a select between the operand and the update
        return t
    if x_shape == out_shape and _identity_view(eqn):
        return t
    raise IllegalGroup(f"'{name}' re-indexes a value computed in the same group "
                       f"({eqn.invars[0].aval.str_short()} -> {eqn.outvars[0].aval.str_short()})")


def _identity_view(eqn):
    name, p = eqn.primitive.name, eqn.params
    shape = eqn.invars[0].aval.shape
    if name == "rev":
        return all(shape[d] == 1 for d in p["dimensions"])
    if name == "slice":
        return all(s == 0 for s in p["start_indices"]) and (
            not p.get("strides") or all(s == 1 for s in p["strides"]))
    if name == "pad":
        return all(c == (0, 0, 0) for c in map(tuple, p["padding_config"]))
    return False


class ViewAnalysis:
    """The view equations of :class:`~functrax.lowering.fusion.analysis.Analysis`."""

    def do_view(self, e):
        out = e.outvars[0]
        if all(self.input_like(v) for v in e.invars):
            self.lazy.add(out)
            if out in self.materialized:
                self.fixed[out] = self.fresh(out.aval.shape)
            return
        if e.primitive.name in DATA_DEPENDENT_VIEWS and self.input_like(e.invars[0]):
            t = data_dependent_view_axes(self, e)  # a load at computed indices
            self.tuples.append(t)
            self.fixed[out] = t
            return
        if e.primitive.name == "concatenate":
            raise IllegalGroup("'concatenate' of a value computed in the same group (its "
                               "operands are read at shifted indices)")
        if any(not self.input_like(v) for v in e.invars[1:]):
            raise IllegalGroup(f"'{e.primitive.name}' with a computed index, padding or update "
                               "operand")
        t = _view_of_computed(e, self.use(e.invars[0]), self.fresh_axis)
        self.tuples.append(t)
        self.fixed[out] = t
