"""``jit(..., in_shardings=, out_shardings=)``: checking the shardings against the arguments
and outputs, placing arguments and laying out results (as JAX's ``jit``).

One host process drives every virtual device and a jitted program computes on the global
arrays, so shardings change no number: an argument given an in_sharding is checked (a
committed ``MeshShardedArray`` must already have it: JAX never reshards one silently) or
placed (``device_put``); an output given an out_sharding comes back as a
``MeshShardedArray`` with it. An output made by ``lax.with_sharding_constraint`` inside the
program is laid out by that constraint when no out_sharding is given for it (as XLA's
sharding propagation would).

Each leaf of a shardings tree is a ``Sharding`` (``NamedSharding``,
``SingleDeviceSharding``), a ``PartitionSpec`` (over the mesh in scope, ``set_mesh``) or
``None`` (unconstrained); the tree is a prefix of the arguments tuple / of the output.
"""
from __future__ import annotations

from functrax import core, dtypes
from functrax.primitives.sharding_constraint import NO_DIMS, sharding_constraint_p
from functrax.runtime.devices import devices, put_rules
from functrax.runtime.mesh import get_mesh
from functrax.runtime.mesh_array import MeshShardedArray
from functrax.runtime.shardings import (
    NamedSharding, PartitionSpec, Sharding, SingleDeviceSharding, spec_dims,
)
from functrax.tree_util import (
    flatten_one_level_with_keys, is_tree_node, keystr, tree_flatten_with_path,
    tree_structure, tree_unflatten,
)

__all__ = ["UNSPECIFIED", "is_sharding_leaf", "check_sharding_tree", "JitShardings",
           "resolve_leaf", "broadcast_shardings"]


class _Unspecified:
    """The default of ``in_shardings`` / ``out_shardings``: nothing asked (JAX's)."""

    def __repr__(self):
        return "UNSPECIFIED"

    def __reduce__(self):
        return "UNSPECIFIED"


UNSPECIFIED = _Unspecified()


def is_sharding_leaf(x) -> bool:
    return x is None or isinstance(x, (Sharding, PartitionSpec))


def check_sharding_tree(fn: str, what: str, tree) -> None:
    """Every leaf of ``tree`` is a Sharding, a PartitionSpec or None.

    Raises:
      TypeError: naming ``what`` and the path of the first other leaf.
    """
    for path, leaf in tree_flatten_with_path(tree, is_leaf=is_sharding_leaf)[0]:
        if not is_sharding_leaf(leaf):
            raise TypeError(
                f"{fn}: {what}{keystr(path)} is {leaf!r} of type {type(leaf).__name__}; every "
                f"leaf of {what} must be a Sharding (functrax.NamedSharding(mesh, P(...)) or "
                "SingleDeviceSharding), a PartitionSpec (with a mesh in scope, "
                "functrax.set_mesh) or None (unconstrained)")


class _Mismatch(Exception):
    def __init__(self, path, prefix, full):
        super().__init__()
        self.path, self.prefix, self.full = path, prefix, full


def _walk(prefix, full, path, out):
    if is_sharding_leaf(prefix) or not is_tree_node(prefix):
        out.extend([prefix] * tree_structure(full).num_leaves)
        return
    if not is_tree_node(full) or type(prefix) is not type(full):
        raise _Mismatch(path, prefix, full)
    p_kids, p_aux = flatten_one_level_with_keys(prefix)
    f_kids, f_aux = flatten_one_level_with_keys(full)
    try:
        same = len(p_kids) == len(f_kids) and bool(p_aux == f_aux)
    except Exception:  # aux data that does not compare (arrays): not the same node
        same = False
    if not same:
        raise _Mismatch(path, prefix, full)
    for (key, p), (_, f) in zip(p_kids, f_kids):
        _walk(p, f, path + (key,), out)


def _describe(x) -> str:
    if isinstance(x, (tuple, list)) and not isinstance(x, PartitionSpec):
        return f"a {type(x).__name__} of {len(x)} entr{'y' if len(x) == 1 else 'ies'}"
    if isinstance(x, dict):
        return f"a dict with keys {sorted(x, key=str)}"
    if is_tree_node(x):
        return f"a {type(x).__name__} node"
    return f"a leaf ({type(x).__name__})"


def broadcast_shardings(fn, what, prefix, full, full_desc, top_names=None) -> list:
    """One entry of ``prefix`` per leaf of ``full`` (``prefix`` a pytree prefix of it).

    Raises:
      ValueError: naming ``fn``, ``what`` at the path where the structures part, the
        argument there (``top_names[i]`` for the i-th top-level entry) and the structure
        expected.
    """
    out: list = []
    try:
        _walk(prefix, full, (), out)
    except _Mismatch as m:
        where = f"{what}{keystr(m.path)}"
        arg = ""
        if m.path and top_names is not None and hasattr(m.path[0], "idx"):
            arg = f" (argument '{top_names[m.path[0].idx]}')"
        raise ValueError(
            f"{fn}: {what} must be a tree prefix of {full_desc}, but {where}{arg} is "
            f"{_describe(m.prefix)} where the value there is {_describe(m.full)} of structure "
            f"{tree_structure(m.full)}. Give one sharding per entry (a tuple with one entry "
            "per positional argument), or one Sharding for a whole subtree") from None
    return out


def _mesh_in_scope(fn, what):
    mesh = get_mesh()
    if mesh.empty:
        raise ValueError(f"{fn}: {what} is a PartitionSpec, which needs a mesh in scope "
                         "(functrax.set_mesh(mesh) or `with mesh:`); or pass "
                         "functrax.NamedSharding(mesh, spec)")
    return mesh


def resolve_leaf(fn: str, what: str, sharding, aval):
    """``sharding`` (a Sharding, PartitionSpec or None) for a value of ``aval``, checked:
    a PartitionSpec becomes a NamedSharding over the mesh in scope.

    Raises:
      TypeError: a leaf that is not a sharding.
      ValueError: naming ``what``, the dimension, the mesh axis and the sizes when an axis
        size does not divide the dimension (or the spec is longer than the rank).
    """
    if sharding is None:
        return None
    if isinstance(sharding, PartitionSpec):
        sharding = NamedSharding(_mesh_in_scope(fn, what), sharding)
    if not isinstance(sharding, Sharding):
        raise TypeError(f"{fn}: the sharding of {what} must be a Sharding, a PartitionSpec "
                        f"or None, got {sharding!r} of type {type(sharding).__name__}")
    if isinstance(sharding, NamedSharding):
        spec_dims(fn, what, sharding.spec, aval.shape, sharding.mesh)
    return sharding


def _committed(x):
    """The sharding of an argument already laid out by the user (a committed array)."""
    return x.sharding if isinstance(x, MeshShardedArray) else None


def _short(aval) -> str:
    return f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]"


def _put(x, sharding):
    return put_rules[type(sharding)](x, sharding)


class JitShardings:
    """The in/out shardings of one jitted function, resolved once per traced entry."""

    def __init__(self, name, in_shardings, out_shardings):
        fn = f"jit of {name}"
        if isinstance(in_shardings, list):
            in_shardings = tuple(in_shardings)  # as JAX: a list means one entry per argument
        if in_shardings is not UNSPECIFIED:
            check_sharding_tree(fn, "in_shardings", in_shardings)
        if out_shardings is not UNSPECIFIED:
            check_sharding_tree(fn, "out_shardings", out_shardings)
        self.fn, self.name = fn, name
        self.in_shardings, self.out_shardings = in_shardings, out_shardings
        self._cache: dict = {}

    def check_kwargs(self, dyn_kw):
        if dyn_kw and self.in_shardings is not UNSPECIFIED:
            raise ValueError(f"jit does not support kwargs when in_shardings is specified "
                             f"({self.fn} was called with the keyword arguments "
                             f"{sorted(dyn_kw)}): pass them positionally, or make them "
                             "static (static_argnames)")

    def resolve(self, entry, arg_names):
        """``(in, out)``: one sharding or None per flat argument leaf / output leaf."""
        key = (entry.key, get_mesh())
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = (self._resolve_in(entry, arg_names),
                                      self._resolve_out(entry))
        return hit

    def _resolve_in(self, entry, arg_names):
        in_tree, avals, _ = entry.key
        n = len(avals)
        if self.in_shardings is UNSPECIFIED:
            return [None] * n
        dyn, dyn_kw = tree_unflatten(in_tree, [0] * n)
        self.check_kwargs(dyn_kw)
        dyn = tuple(dyn)
        top = [f"{a}" for a in arg_names]
        shardings = broadcast_shardings(
            self.fn, "in_shardings", self.in_shardings, dyn,
            f"the positional arguments tuple ({len(dyn)} non-static arguments: "
            f"{', '.join(top) or 'none'})", top)
        leaf_names = [f"{top[p[0].idx]}{keystr(p[1:])}"
                      for p, _ in tree_flatten_with_path(dyn)[0]]
        return [resolve_leaf(self.fn, f"argument '{nm}'", s, a)
                for nm, s, a in zip(leaf_names, shardings, avals)]

    def _resolve_out(self, entry):
        out_avals = entry.out_avals
        eqn_of = {id(v): e for e in entry.closed.jaxpr.eqns for v in e.outvars}
        outvars = entry.closed.jaxpr.outvars
        if self.out_shardings is UNSPECIFIED:
            shardings = [None] * len(out_avals)
        else:
            struct = tree_unflatten(entry.out_tree, [0] * len(out_avals))
            shardings = broadcast_shardings(self.fn, "out_shardings", self.out_shardings,
                                            struct, "the function's output")
        paths = [keystr(p) for p, _ in tree_flatten_with_path(
            tree_unflatten(entry.out_tree, [0] * len(out_avals)))[0]]
        out = []
        for s, a, v, path in zip(shardings, out_avals, outvars, paths):
            if s is None:  # a value the program constrained keeps that layout (propagation)
                e = eqn_of.get(id(v))
                if e is not None and e.primitive is sharding_constraint_p:
                    s = e.params["sharding"]
            out.append(resolve_leaf(self.fn, f"the output{path or ''}", s, a))
        return out

    # --- calling ---

    def place_inputs(self, leaves, shardings, names):
        """Leaves checked against / placed by their in_shardings (eager calls)."""
        out = list(leaves)
        for i, (x, s) in enumerate(zip(leaves, shardings)):
            if s is None or isinstance(x, core.Tracer):
                continue
            arg_s = _committed(x)
            aval = core.get_aval(x)
            if arg_s is not None:
                if not (s == arg_s or s.is_equivalent_to(arg_s, len(aval.shape))):
                    raise ValueError(
                        f"Sharding passed to jit does not match the sharding on the respective "
                        f"arg. Got jit sharding: {s} and arg sharding: {arg_s} for arg "
                        f"'{names[i]}' of {self.fn} with shape {_short(aval)}. functrax never "
                        "reshards a committed array silently: reshard it first "
                        f"(functrax.device_put({names[i]}, sharding)) or change in_shardings")
                continue
            if not dtypes.is_extended(aval.dtype):
                out[i] = _put(x, s)
        return out

    @staticmethod
    def place_outputs(outs, shardings):
        """Outputs laid out by their shardings: MeshShardedArrays (one already laid out so
        is returned as it is)."""
        res = []
        for o, s in zip(outs, shardings):
            if s is None or dtypes.is_extended(o.aval.dtype) or (
                    isinstance(o, MeshShardedArray) and o.sharding == s):
                res.append(o)
            else:
                res.append(_put(o, s))
        return res

    @staticmethod
    def constrain_traced(outs, shardings):
        """Under an outer transformation: the outputs behind ``sharding_constraint``."""
        return [o if s is None else sharding_constraint_p.bind(
            o, sharding=s, layout=None, unconstrained_dims=NO_DIMS)
            for o, s in zip(outs, shardings)]

    # --- reporting (Compiled.input_shardings / output_shardings) ---

    @staticmethod
    def reported(shardings):
        """Unconstrained entries report the device that runs the program."""
        default = None
        res = []
        for s in shardings:
            if s is None:
                default = default or SingleDeviceSharding(devices()[0])
                s = default
            res.append(s)
        return res
