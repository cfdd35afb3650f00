"""Fusion analysis of views (index arithmetic): which views of a value computed in the
group keep a one-to-one correspondence of dimensions, and how a view's axes follow."""
from __future__ import annotations

from functrax.lowering.fusion.config import IllegalGroup
from functrax import primitives as P
from functrax.lowering.fusion.gather import data_dependent_view_rules

__all__ = ["ViewAnalysis", "view_axis_rules"]


def _nontrivial(shape):
    return [n for n in shape if n != 1]


# --- how the axes of a view of a value computed in the group follow its operand's ---
# Each rule(eqn, t, fresh_axis) gets the operand's axes ``t`` and returns the output's, or
# None when the view does not keep a one-to-one correspondence of dims.


def _broadcast_in_dim_axes(eqn, t, fresh_axis):
    x_shape, out_shape = eqn.invars[0].aval.shape, eqn.outvars[0].aval.shape
    out = [fresh_axis(n) for n in out_shape]
    for i, d in enumerate(eqn.params["broadcast_dimensions"]):
        if x_shape[i] == out_shape[d]:
            out[d] = t[i]
    return tuple(out)


def _transpose_axes(eqn, t, fresh_axis):
    return tuple(t[i] for i in eqn.params["permutation"])


def _squeeze_axes(eqn, t, fresh_axis):
    dims = {d % len(t) for d in eqn.params["dimensions"]}
    return tuple(a for i, a in enumerate(t) if i not in dims)


def _expand_dims_axes(eqn, t, fresh_axis):
    n_out = len(eqn.outvars[0].aval.shape)
    dims = {d % n_out for d in eqn.params["dimensions"]}
    it = iter(t)
    return tuple(None if i in dims else next(it) for i in range(n_out))


def _reshape_axes(eqn, t, fresh_axis):
    x_shape, out_shape = eqn.invars[0].aval.shape, eqn.outvars[0].aval.shape
    if eqn.params.get("dimensions") not in (None, tuple(range(len(x_shape)))):
        return None
    if _nontrivial(x_shape) != _nontrivial(out_shape):
        return None
    it = iter(a for a, n in zip(t, x_shape) if n != 1)
    return tuple(None if n == 1 else next(it) for n in out_shape)


def _same_axes(eqn, t, fresh_axis):  # dynamic_update_slice: a select operand / update
    return t


def _identity_if(is_identity):
    """The rule of a view that is one-to-one only when it is the identity."""
    def rule(eqn, t, fresh_axis):
        same = eqn.invars[0].aval.shape == eqn.outvars[0].aval.shape
        return t if same and is_identity(eqn.params, eqn.invars[0].aval.shape) else None
    return rule


view_axis_rules = {
    P.broadcast_in_dim_p: _broadcast_in_dim_axes, P.transpose_p: _transpose_axes,
    P.squeeze_p: _squeeze_axes, P.expand_dims_p: _expand_dims_axes, P.reshape_p: _reshape_axes,
    P.dynamic_update_slice_p: _same_axes,
    P.rev_p: _identity_if(lambda p, shape: all(shape[d] == 1 for d in p["dimensions"])),
    P.slice_p: _identity_if(lambda p, shape: all(s == 0 for s in p["start_indices"]) and (
        not p.get("strides") or all(s == 1 for s in p["strides"]))),
    P.pad_p: _identity_if(lambda p, shape: all(
        c == (0, 0, 0) for c in map(tuple, p["padding_config"]))),
}


def _view_of_computed(eqn, t, fresh_axis):
    """Axes of a view of a value computed in the group whose axes are ``t``.

    Raises IllegalGroup when the view does not keep a one-to-one correspondence of dims."""
    rule = view_axis_rules.get(eqn.primitive)
    axes = rule(eqn, t, fresh_axis) if rule is not None else None
    if axes is None:
        raise IllegalGroup(f"'{eqn.primitive}' re-indexes a value computed in the same group "
                           f"({eqn.invars[0].aval.str_short()} -> "
                           f"{eqn.outvars[0].aval.str_short()})")
    return axes


class ViewAnalysis:
    """The view equations of :class:`~functrax.lowering.fusion.analysis.Analysis`."""

    def do_view(self, e):
        out = e.outvars[0]
        if all(self.input_like(v) for v in e.invars):
            self.lazy.add(out)
            if out in self.materialized:
                self.fixed[out] = self.fresh(out.aval.shape)
            return
        axes_rule = data_dependent_view_rules.get(e.primitive)
        if axes_rule is not None and self.input_like(e.invars[0]):
            t = axes_rule(self, e)  # a load at computed indices
            self.tuples.append(t)
            self.fixed[out] = t
            return
        if e.primitive is P.concatenate_p:
            raise IllegalGroup("'concatenate' of a value computed in the same group (its "
                               "operands are read at shifted indices)")
        if any(not self.input_like(v) for v in e.invars[1:]):
            raise IllegalGroup(f"'{e.primitive.name}' with a computed index, padding or update "
                               "operand")
        t = _view_of_computed(e, self.use(e.invars[0]), self.fresh_axis)
        self.tuples.append(t)
        self.fixed[out] = t
