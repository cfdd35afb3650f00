"""The user-facing ``shard_map`` (``functrax.shard_map``, as ``jax.shard_map``): checks the
specs against the arguments and the mesh, traces the per-device function (cached per
argument signature), checks the replication of its outputs (``check_vma``) and binds the
``shard_map`` primitive (``functrax/transforms/shard_map.py`` holds its rules)."""
from __future__ import annotations

import functools

from functrax import core, dtypes
from functrax.core.tracing import DebugInfo, fun_name, fun_source, trace_to_jaxpr
from functrax.primitives.shard_map import block_aval, shard_map_p
from functrax.runtime.mesh import Mesh, get_mesh
from functrax.runtime.mesh_array import MeshShardedArray, put_sharded
from functrax.runtime.shardings import NamedSharding, PartitionSpec, spec_dims
from functrax.transforms.call_util import closure_convert
from functrax.transforms.shard_map import mesh_axis_env, spec_axes
from functrax.transforms.shard_map_vma import jaxpr_vma
from functrax.tree_util import (
    broadcast_prefix, keystr, tree_flatten, tree_flatten_with_path, tree_unflatten,
)

__all__ = ["shard_map", "ShardMapFunction"]

_INFER = object()


def _is_spec(x) -> bool:
    return x is None or isinstance(x, PartitionSpec)


def _prefix(fn, what, specs, tree_value, value_desc):
    """``specs`` broadcast over the leaves of ``tree_value`` (one spec per leaf)."""
    try:
        return broadcast_prefix(specs, tree_value, is_leaf=_is_spec)
    except ValueError:
        _, tree = tree_flatten(tree_value)
        raise ValueError(f"{fn}: {what} must be a tree prefix of {value_desc}, but got "
                         f"{what}={specs!r} for a value of structure {tree}. Give one "
                         "PartitionSpec per argument (a tuple with one entry per positional "
                         "argument), or one spec for a whole pytree") from None


class ShardMapFunction:
    """A function mapped over the devices of a mesh by :func:`shard_map`."""

    def __init__(self, fun, mesh, in_specs, out_specs, check_vma, axis_names):
        self.fun, self.mesh, self.in_specs, self.out_specs = fun, mesh, in_specs, out_specs
        self.check_vma, self.axis_names = bool(check_vma), frozenset(axis_names)
        self._name = fun_name(fun)
        self._cache: dict = {}
        functools.update_wrapper(self, fun, updated=())

    # --- checking the arguments ---

    def _mesh(self) -> Mesh:
        mesh = self.mesh if self.mesh is not None else get_mesh()
        if not isinstance(mesh, Mesh) or mesh.empty:
            raise ValueError(f"shard_map of {self._name}: no mesh; pass mesh= "
                             "(functrax.make_mesh(...)) or set one with functrax.set_mesh")
        bad = sorted(self.axis_names - set(mesh.axis_names))
        if bad:
            raise ValueError(f"shard_map of {self._name}: axis_names {sorted(self.axis_names)} "
                             f"name {bad}, which are not axes of the mesh {mesh}")
        return mesh

    def _manual(self, mesh) -> tuple:
        return tuple(n for n in mesh.axis_names if not self.axis_names or n in self.axis_names)

    def _in_specs(self, args, leaves):
        if self.in_specs is _INFER:
            specs = []
            for leaf in leaves:
                s = getattr(leaf, "sharding", None) if isinstance(leaf, MeshShardedArray) \
                    else None
                if s is None:
                    raise ValueError(f"shard_map of {self._name}: in_specs was not given and "
                                     "cannot be inferred from an argument that is not an "
                                     "array placed with a NamedSharding; pass in_specs")
                specs.append(s.spec)
            return specs
        return _prefix(f"shard_map of {self._name}", "in_specs", self.in_specs, args,
                       f"the positional arguments tuple ({len(args)} arguments)")

    def _check_names(self, spec, what, mesh, manual):
        for n in spec_axes(spec):
            if n in mesh.shape and n not in manual:
                raise ValueError(f"shard_map of {self._name}: the spec {spec} of {what} names "
                                 f"the mesh axis {n!r}, which is not one of the manual axes "
                                 f"{manual} (axis_names)")

    # --- tracing ---

    def _trace(self, block_avals, in_tree, names, mesh, manual, specs):
        box = []
        typed = frozenset(manual) if self.check_vma else frozenset()
        if typed:  # each input varies over the manual axes its spec names (JAX's vma)
            block_avals = [a.update(vma=spec_axes(s) & typed)
                           for a, s in zip(block_avals, specs)]

        def flat_fun(*tracers):
            out = self.fun(*tree_unflatten(in_tree, list(tracers)))
            leaves, out_tree = tree_flatten(out)
            box.append((out, out_tree))
            return leaves

        info = DebugInfo(self._name, fun_source(self.fun), names, "shard_map")
        with mesh_axis_env(mesh, manual), core.vma_axes(typed):
            closed = trace_to_jaxpr(flat_fun, block_avals, info)
        return closed, box[0][1]

    def _out_specs(self, closed, out_tree, mesh, manual):
        struct = tree_unflatten(out_tree, [0] * out_tree.num_leaves)
        specs = _prefix(f"shard_map of {self._name}", "out_specs", self.out_specs, struct,
                        "the function's output")
        paths = [keystr(p) for p, _ in tree_flatten_with_path(struct)[0]]
        for path, spec, aval in zip(paths, specs, closed.out_avals):
            what = f"the output{path or ''} (per-device shape {aval.shape})"
            if not isinstance(spec, PartitionSpec) and spec is not None:
                raise TypeError(f"shard_map of {self._name}: out_specs entries must be "
                                f"PartitionSpecs, got {spec!r} for {what}")
            spec = PartitionSpec() if spec is None else spec
            if len(spec) > len(aval.shape):
                raise ValueError(f"shard_map of {self._name}: out_specs{path} is {spec}, of "
                                 f"{len(spec)} entries, but {what} has rank "
                                 f"{len(aval.shape)}: a PartitionSpec may have at most one "
                                 "entry per dimension")
            for n in spec_axes(spec):
                if n not in mesh.shape:
                    raise ValueError(f"shard_map of {self._name}: out_specs{path} is {spec}, "
                                     f"naming the axis {n!r}, which is not an axis of the "
                                     f"mesh {mesh} (its axes are {mesh.axis_names})")
            self._check_names(spec, what, mesh, manual)
        return tuple(PartitionSpec() if s is None else s for s in specs), paths

    def _check_vma(self, closed, in_specs, out_specs, paths, mesh, manual):
        vmas = jaxpr_vma(closed.jaxpr, [spec_axes(s) & set(manual) for s in in_specs])
        for path, spec, vma, aval in zip(paths, out_specs, vmas, closed.out_avals):
            missing = [a for a in manual if a in vma and a not in spec_axes(spec)]
            if missing:
                a = missing[0]
                raise ValueError(
                    f"shard_map of {self._name}: out_specs{path} is {spec}, which says the "
                    f"output{path} (per-device shape {aval.shape}) is replicated over the "
                    f"mesh axis {a!r} (size {mesh.shape[a]}), but it varies over that axis "
                    f"(varying over {sorted(vma)}: it depends on an input split over "
                    f"{a!r}, or on axis_index / ppermute / psum_scatter / all_to_all over "
                    f"it). Either reduce it over the axis first (lax.psum, lax.pmean, "
                    f"lax.pmax or lax.all_gather over {a!r}), or mention {a!r} in its "
                    f"out_spec to return the per-device blocks concatenated (e.g. "
                    f"P({a!r})); if it really is the same on every device, pass "
                    "check_vma=False.")

    def _entry(self, args):
        mesh = self._mesh()
        manual = self._manual(mesh)
        path_leaves, in_tree = tree_flatten_with_path(args)
        leaves = [x for _, x in path_leaves]
        names = [f"args{keystr(p)}" for p, _ in path_leaves]
        specs = self._in_specs(args, leaves)
        block_avals = []
        for name, x, spec in zip(names, leaves, specs):
            if not core.is_arraylike(x):
                raise TypeError(f"shard_map of {self._name}: argument {name} is "
                                f"{x!r} of type {type(x).__name__}, not an array")
            aval = core.get_aval(x)
            spec = PartitionSpec() if spec is None else spec
            spec_dims(f"shard_map of {self._name}", f"argument {name}", spec, aval.shape,
                      mesh)
            self._check_names(spec, f"argument {name}", mesh, manual)
            block_avals.append(block_aval(aval, spec, mesh.shape))
        specs = tuple(PartitionSpec() if s is None else s for s in specs)
        env = tuple((f.name, f.size) for f in core.axis_env())
        key = (in_tree, tuple(block_avals), specs, mesh, manual, env)
        entry = self._cache.get(key)
        if entry is None:
            closed, out_tree = self._trace(block_avals, in_tree, names, mesh, manual, specs)
            out_specs, paths = self._out_specs(closed, out_tree, mesh, manual)
            if self.check_vma:
                self._check_vma(closed, specs, out_specs, paths, mesh, manual)
            call, consts = closure_convert(closed)
            entry = (call, consts, out_tree, out_specs)
            if not any(isinstance(c, core.Tracer) for c in consts):
                self._cache[key] = entry
        return entry, leaves, specs, mesh, manual

    def __call__(self, *args):
        (call, consts, out_tree, out_specs), leaves, specs, mesh, manual = self._entry(args)
        eager = type(core.current_trace()) is core.EvalTrace
        outs = shard_map_p.bind(
            *consts, *leaves, jaxpr=call, mesh=mesh,
            in_specs=(PartitionSpec(),) * len(consts) + specs, out_specs=out_specs,
            check_vma=self.check_vma, manual_axes=manual)
        if eager:  # the outputs keep their blocks, laid out as out_specs say
            outs = [o if dtypes.is_extended(o.dtype) else put_sharded(o, NamedSharding(mesh, s))
                    for o, s in zip(outs, out_specs)]
        return tree_unflatten(out_tree, outs)


def shard_map(f=None, /, *, out_specs, in_specs=_INFER, mesh=None, axis_names=frozenset(),
              check_vma=True):
    """Map ``f`` over the devices of ``mesh``: each device runs ``f`` on its block of the
    inputs (as ``jax.shard_map``).

    Args:
      f: the per-device function (pytrees of arrays in and out). Omitted: returns a
        decorator.
      out_specs: a PartitionSpec per output (a pytree prefix of the outputs): the per-device
        results are concatenated along the dimensions it splits; a mesh axis it does not
        name means the output is the same on every device along that axis.
      in_specs: a PartitionSpec per positional argument (a tuple prefix of the arguments):
        dimension ``d`` split over mesh axes of total size ``k`` is cut into blocks of
        ``size // k``. Omitted: taken from arguments placed with a ``NamedSharding``.
      mesh: the :class:`~functrax.sharding.Mesh` (default: the mesh in scope,
        ``functrax.set_mesh``).
      axis_names: the mesh axes ``f`` handles by hand (default: all of them).
      check_vma: check statically that an output replicated over an axis (by its
        out_spec) does not vary over it.

    Returns:
      The mapped function (global arrays in and out).

    Raises:
      ValueError: naming the argument, the axis and the sizes, for specs that do not match
        the arguments (structure, rank, an axis not in the mesh, a size that does not
        divide a dimension), and for an output that varies over an axis its out_spec
        replicates it over.

    >>> import functrax, functrax.numpy as fnp
    >>> from functrax import lax
    >>> m = functrax.make_mesh((1,), ("x",), devices=functrax.devices()[:1])
    >>> f = shard_map(lambda b: lax.psum(b.sum(), "x"), mesh=m, in_specs=functrax.P("x"),
    ...               out_specs=functrax.P())
    >>> f(fnp.arange(4.0))
    Array(6., dtype=float32)
    """
    if f is None:
        return functools.partial(shard_map, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                                 axis_names=axis_names, check_vma=check_vma)
    if not callable(f):
        raise TypeError(f"shard_map: expected a function as its first argument, got {f!r} of "
                        f"type {type(f).__name__}")
    if mesh is not None and not isinstance(mesh, Mesh):
        raise TypeError(f"shard_map: mesh must be a Mesh (functrax.make_mesh), got {mesh!r} "
                        f"of type {type(mesh).__name__}")
    return ShardMapFunction(f, mesh, in_specs, out_specs, check_vma, axis_names)
