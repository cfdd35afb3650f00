"""Pytree utilities mirroring ``jax.tree_util`` (pure Python, standard library only).

A treedef node is ``_LEAF`` or ``(kind, aux, children)``; ``kind`` is ``tuple``, ``list``,
``dict`` (aux: sorted keys), ``NoneType``, ``_NT`` (namedtuple; aux: its class) or a
``_Registration`` (custom node; aux: its aux data).
"""
from __future__ import annotations

import collections
import dataclasses
import functools
from collections.abc import Callable, Hashable, Iterable
from typing import Any

_LEAF = object()  # Marker for a leaf in a treedef.
_NT = object()    # Node kind of namedtuples.
_NoneType = type(None)
_NONE_NODE = (_NoneType, None, ())
_NO_INIT = object()
_IsLeaf = Callable[[Any], bool] | None


class _Registration:
    __slots__ = ("flatten", "flatten_with_keys", "type", "unflatten")

    def __init__(self, nodetype, flatten, unflatten, flatten_with_keys):
        self.type, self.flatten, self.unflatten = nodetype, flatten, unflatten
        self.flatten_with_keys = flatten_with_keys


_registry: dict[type, _Registration] = {}  # Custom node types only.
_NODE_TYPES: set[type] = {tuple, list, dict, _NoneType}  # Built-in and custom node types.


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """Key-path entry for a tuple/list child; ``str`` gives ``[0]``."""
    idx: int

    def __str__(self): return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class DictKey:
    """Key-path entry for a mapping child; ``str`` gives ``['a']``."""
    key: Hashable

    def __str__(self): return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """Key-path entry for an attribute (namedtuple/dataclass field); ``str`` gives ``.name``."""
    name: str

    def __str__(self): return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """Key-path entry for a child of a custom node registered without keys."""
    key: int

    def __str__(self): return f"[<flat index {self.key}>]"


def keystr(keys, *, simple: bool = False, separator: str = "") -> str:
    """Renders a key path; with ``simple=True`` only raw keys, joined by ``separator``.
    >>> keystr((DictKey('a'), SequenceKey(0), GetAttrKey('w')))
    "['a'][0].w"
    """
    if simple:
        keys = [getattr(k, "idx", getattr(k, "key", getattr(k, "name", k))) for k in keys]
    return separator.join(map(str, keys))


def _flatten_fast(x, leaves):
    """Flattens ``x`` (no is_leaf, no paths), appending to ``leaves``; returns its node."""
    t = type(x)
    if t is tuple or t is list:
        kind, aux, kids = t, None, x
    elif t is dict:
        kind, aux = dict, tuple(sorted(x))
        kids = [x[k] for k in aux]
    elif x is None:
        return _NONE_NODE
    else:
        reg = _registry.get(t)
        if reg is not None:
            (kids, aux), kind = reg.flatten(x), reg
        elif isinstance(x, tuple) and hasattr(x, "_fields"):
            kind, aux, kids = _NT, t, x
        else:
            leaves.append(x)
            return _LEAF
    children = []
    for c in kids:  # Handle the common leaf case inline, saving a call per leaf.
        if type(c) in _NODE_TYPES or isinstance(c, tuple):
            children.append(_flatten_fast(c, leaves))
        else:
            leaves.append(c)
            children.append(_LEAF)
    return (kind, aux, tuple(children))


def _flatten_general(x, leaves, is_leaf, path, paths):
    """Flattens with an optional ``is_leaf``; records key paths when ``paths`` is a list."""
    want = paths is not None
    if is_leaf is not None and is_leaf(x):
        kind = _LEAF
    else:
        t, keys = type(x), None
        kind = _registry.get(t, t if t in _NODE_TYPES else _LEAF)
        if kind is tuple or kind is list:
            aux, kids = None, x
        elif kind is dict:
            aux = tuple(sorted(x))
            kids, keys = [x[k] for k in aux], want and [DictKey(k) for k in aux]
        elif kind is _NoneType:
            return _NONE_NODE
        elif kind is not _LEAF:
            if want and kind.flatten_with_keys is not None:
                pairs, aux = kind.flatten_with_keys(x)
                pairs = list(pairs)
                keys, kids = [k for k, _ in pairs], [c for _, c in pairs]
            else:
                kids, aux = kind.flatten(x)
                kids = list(kids)
                keys = want and [FlattenedIndexKey(i) for i in range(len(kids))]
        elif isinstance(x, tuple) and hasattr(x, "_fields"):
            kind, aux, kids = _NT, t, x
            keys = want and [GetAttrKey(f) for f in x._fields]
    if kind is _LEAF:
        leaves.append(x)
        if want:
            paths.append(path)
        return _LEAF
    if not want:
        return (kind, aux, tuple([_flatten_general(c, leaves, is_leaf, None, None) for c in kids]))
    keys = keys or [SequenceKey(i) for i in range(len(kids))]
    return (kind, aux, tuple([_flatten_general(c, leaves, is_leaf, path + (k,), paths)
                              for k, c in zip(keys, kids)]))


def _unflatten(node, it):
    kind, aux, children = node
    vals = [next(it) if c is _LEAF else _unflatten(c, it) for c in children]
    if kind is tuple:
        return tuple(vals)
    if kind is list:
        return vals
    if kind is dict:
        return dict(zip(aux, vals))
    if kind is _NoneType:
        return None
    return aux(*vals) if kind is _NT else kind.unflatten(aux, tuple(vals))


def _flatten_up_to(node, x, out):
    kind, aux, children = node
    if kind is tuple or kind is list:
        name = kind.__name__
        if type(x) is not kind:
            raise ValueError(f"Expected {name}, got {x!r}.")
        if len(x) != len(children):
            raise ValueError(f"{name.capitalize()} arity mismatch: {len(x)} != "
                             f"{len(children)}; {name}: {x!r}.")
        kids = x
    elif kind is dict:
        if type(x) is not dict:
            raise ValueError(f"Expected dict, got {x!r}.")
        if tuple(sorted(x)) != aux:
            raise ValueError(f"Dict key mismatch; expected keys: {list(aux)!r}; dict: {x!r}.")
        kids = [x[k] for k in aux]
    elif kind is _NoneType:
        if x is not None:
            raise ValueError(f"Expected None, got {x!r}.")
        return
    elif kind is _NT:
        if type(x) is not aux:
            raise ValueError(f"Named tuple type mismatch: expected type: {aux!r}, tuple: {x!r}.")
        kids = x
    else:
        if type(x) is not kind.type:
            raise ValueError(f"Custom node type mismatch: expected type: {kind.type!r}, "
                             f"value: {x!r}.")
        kids, xaux = kind.flatten(x)
        kids = list(kids)
        if xaux != aux:
            raise ValueError(f"Mismatch custom node data: {aux!r} != {xaux!r}; value: {x!r}.")
        if len(kids) != len(children):
            raise ValueError(f"Custom type arity mismatch: {len(kids)} != {len(children)}; "
                             f"value: {x!r}.")
    for c, y in zip(children, kids):
        if c is _LEAF:
            out.append(y)
        else:
            _flatten_up_to(c, y, out)


def _repr(node):
    if node is _LEAF:
        return "*"
    kind, aux, children = node
    parts = ", ".join(map(_repr, children))
    if kind is tuple:
        return f"({parts},)" if len(children) == 1 else f"({parts})"
    if kind is list:
        return f"[{parts}]"
    if kind is dict:
        return "{" + ", ".join(f"{k!r}: {_repr(c)}" for k, c in zip(aux, children)) + "}"
    if kind is _NoneType:
        return "None"
    name, data = ("namedtuple", aux.__name__) if kind is _NT else (kind.type.__name__, aux)
    return f"CustomNode({name}[{data}], [{parts}])"


def _compose(node, inner):
    if node is _LEAF:
        return inner
    return (node[0], node[1], tuple(_compose(c, inner) for c in node[2]))


class PyTreeDef:
    """Immutable, hashable structure of a pytree (its nodes, without the leaves)."""
    __slots__ = ("_hash", "_node", "_num_leaves", "_num_nodes")

    def __init__(self, node, num_leaves=None):
        self._node, self._num_leaves, self._num_nodes, self._hash = node, num_leaves, None, None

    def _count(self):
        nl = nn = 0
        stack = [self._node]
        while stack:
            n = stack.pop()
            nn += 1
            if n is _LEAF:
                nl += 1
            else:
                stack.extend(n[2])
        self._num_leaves, self._num_nodes = nl, nn

    @property
    def num_leaves(self) -> int:
        """Number of leaves."""
        if self._num_leaves is None:
            self._count()
        return self._num_leaves

    @property
    def num_nodes(self) -> int:
        """Number of nodes, counting leaves and ``None`` nodes (as JAX does)."""
        if self._num_nodes is None:
            self._count()
        return self._num_nodes

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        """Builds a pytree with this structure; ValueError if the leaf count differs."""
        if type(leaves) is not list and type(leaves) is not tuple:
            leaves = list(leaves)
        n, expected = len(leaves), self.num_leaves
        if n != expected:
            raise ValueError(f"Too {'few' if n < expected else 'many'} leaves for PyTreeDef; "
                             f"expected {expected}, got {n}.")
        return leaves[0] if self._node is _LEAF else _unflatten(self._node, iter(leaves))

    def flatten_up_to(self, tree: Any) -> list:
        """Flattens ``tree`` only down to this treedef's leaves.

        Args: tree: a pytree whose structure has this treedef as a prefix.
        Returns: a list with, per leaf of this treedef, the matching subtree of ``tree``.
        Raises: ValueError: if this treedef is not a prefix of ``tree``'s structure.
        >>> tree_structure((1, [2, 3])).flatten_up_to(({'a': 1}, [(2,), None]))
        [{'a': 1}, (2,), None]
        """
        if self._node is _LEAF:
            return [tree]
        out = []
        _flatten_up_to(self._node, tree, out)
        return out

    def children(self) -> list[PyTreeDef]:
        """Treedefs of the root's immediate children (``[]`` for a leaf)."""
        return [] if self._node is _LEAF else [PyTreeDef(c) for c in self._node[2]]

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """The treedef obtained by replacing every leaf of ``self`` with ``inner``."""
        return PyTreeDef(_compose(self._node, inner._node))

    def __eq__(self, other):
        if not isinstance(other, PyTreeDef):
            return NotImplemented
        return self._node is other._node or self._node == other._node

    def __hash__(self):
        if self._hash is None:
            try:  # Nodes are nested tuples: hash in C when all aux data is hashable (as JAX
                self._hash = hash(self._node)  # requires); else leave custom aux data out.
                return self._hash
            except TypeError:
                pass
            sig, stack = [], [self._node]
            while stack:
                n = stack.pop()
                if n is _LEAF:
                    sig.append(0)
                else:
                    sig += (n[0], len(n[2]), n[1] if n[0] is dict or n[0] is _NT else None)
                    stack.extend(n[2])
            self._hash = hash(tuple(sig))
        return self._hash

    def __repr__(self):
        return f"PyTreeDef({_repr(self._node)})"

    def __reduce__(self):  # custom nodes pickle by their (registered) type
        return (_treedef_from_portable, (_portable(self._node),))


def _portable(node):
    """A picklable description of a node: the markers become strings, a custom node's
    registration its type."""
    if node is _LEAF:
        return "*"
    kind, aux, children = node
    kids = tuple(_portable(c) for c in children)
    if kind is _NT:
        return ("namedtuple", aux, kids)
    if isinstance(kind, _Registration):
        return ("custom", kind.type, aux, kids)
    return (kind.__name__, aux, kids)


_BUILTIN_KINDS = {"tuple": tuple, "list": list, "dict": dict, "NoneType": _NoneType}


def _from_portable(p):
    if p == "*":
        return _LEAF
    if p[0] == "namedtuple":
        return (_NT, p[1], tuple(_from_portable(c) for c in p[2]))
    if p[0] == "custom":
        reg = _registry.get(p[1])
        if reg is None:
            raise ValueError(f"cannot unpickle a PyTreeDef holding {p[1]!r}: the type is not "
                             "registered as a pytree node in this process (register it "
                             "before unpickling)")
        return (reg, p[2], tuple(_from_portable(c) for c in p[3]))
    return (_BUILTIN_KINDS[p[0]], p[1], tuple(_from_portable(c) for c in p[2]))


def _treedef_from_portable(p):
    return PyTreeDef(_from_portable(p))


def tree_flatten(tree: Any, is_leaf: _IsLeaf = None) -> tuple[list, PyTreeDef]:
    """Flattens a pytree into ``(leaves, treedef)``; dict children come in sorted key order.

    Args: tree: the pytree. is_leaf: optional predicate; subtrees it accepts are leaves.
    Returns: the list of leaves and the ``PyTreeDef`` describing the structure.
    >>> tree_flatten({'b': [1, 2], 'a': (3, None)})
    ([3, 1, 2], PyTreeDef({'a': (*, None), 'b': [*, *]}))
    """
    leaves = []
    if is_leaf is None:
        node = _flatten_fast(tree, leaves)
    else:
        node = _flatten_general(tree, leaves, is_leaf, None, None)
    return leaves, PyTreeDef(node, len(leaves))


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """Inverse of ``tree_flatten``. Raises ValueError if the number of leaves is wrong.
    >>> tree_unflatten(tree_structure([0, {'x': 0}]), [5, 6])
    [5, {'x': 6}]
    """
    return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: _IsLeaf = None) -> list:
    """The leaves of ``tree`` in flattening order.
    >>> tree_leaves([1, (2, None), {'b': 4, 'a': 3}])
    [1, 2, 3, 4]
    """
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: _IsLeaf = None) -> PyTreeDef:
    """The treedef of ``tree``.
    >>> tree_structure((1, [2], None))
    PyTreeDef((*, [*], None))
    """
    return tree_flatten(tree, is_leaf)[1]


def _flatten_rest(treedef, rest, is_leaf):
    """``treedef.flatten_up_to`` of each of ``rest``; errors name both structures."""
    out = []
    for i, r in enumerate(rest, 1):
        try:
            out.append(treedef.flatten_up_to(r))
        except ValueError as e:
            try:
                other = tree_structure(r, is_leaf)
            except Exception:  # Describing the mismatch must not mask it.
                other = repr(r)
            raise ValueError(f"Tree structure mismatch: argument {i} has structure {other}, "
                             f"which does not have the first tree's structure {treedef} as a "
                             f"prefix: {e}") from None
    return out


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: _IsLeaf = None) -> Any:
    """Maps ``f`` over the leaves of ``tree`` and the corresponding subtrees of ``rest``.

    Args: f: called as ``f(leaf, *subtrees_of_rest)``. tree: gives the output structure.
      rest: pytrees that must each have ``tree``'s structure as a prefix.
      is_leaf: optional leaf predicate applied to ``tree``.
    Returns: a pytree with ``tree``'s structure holding the outputs of ``f``.
    Raises: ValueError: if a tree in ``rest`` mismatches (the message names both structures).
    >>> tree_map(lambda x, y: x + y, {'a': 1, 'b': (2,)}, {'a': 10, 'b': (20,)})
    {'a': 11, 'b': (22,)}
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    if not rest:
        return treedef.unflatten([f(x) for x in leaves])
    return treedef.unflatten(list(map(f, leaves, *_flatten_rest(treedef, rest, is_leaf))))


def tree_flatten_with_path(tree: Any, is_leaf: _IsLeaf = None) -> tuple[list, PyTreeDef]:
    """Like ``tree_flatten``, but returns ``(key_path, leaf)`` pairs instead of leaves.
    >>> tree_flatten_with_path({'a': [7]})[0]
    [((DictKey(key='a'), SequenceKey(idx=0)), 7)]
    """
    leaves, paths = [], []
    node = _flatten_general(tree, leaves, is_leaf, (), paths)
    return list(zip(paths, leaves)), PyTreeDef(node, len(leaves))


def tree_leaves_with_path(tree: Any, is_leaf: _IsLeaf = None) -> list:
    """``(key_path, leaf)`` pairs in flattening order.
    >>> [keystr(p) for p, _ in tree_leaves_with_path([1, {'k': 2}])]
    ['[0]', "[1]['k']"]
    """
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any,
                       is_leaf: _IsLeaf = None) -> Any:
    """Like ``tree_map``, but calls ``f(key_path, leaf, *subtrees_of_rest)``.
    >>> tree_map_with_path(lambda p, x: keystr(p), {'a': (1,)})
    {'a': ("['a'][0]",)}
    """
    pairs, treedef = tree_flatten_with_path(tree, is_leaf)
    others = _flatten_rest(treedef, rest, is_leaf)
    return treedef.unflatten([f(*pair, *xs) for pair, *xs in zip(pairs, *others)])


def broadcast_prefix(prefix_tree: Any, full_tree: Any, is_leaf: _IsLeaf = None) -> list:
    """Broadcasts the leaves of ``prefix_tree`` over the leaves of ``full_tree``.

    Args: prefix_tree: its structure must be a prefix of ``full_tree``'s. full_tree: the
      full pytree. is_leaf: optional predicate for ``prefix_tree`` (e.g. ``x is None``).
    Returns: a list with, for each leaf of ``full_tree``, the prefix leaf that covers it.
    Raises: ValueError: if ``prefix_tree`` is not a prefix of ``full_tree``.
    >>> broadcast_prefix((0, None), ([5, 6], {'a': 7}), is_leaf=lambda x: x is None)
    [0, 0, None]
    """
    result = []

    def add(x, subtree):
        result.extend([x] * tree_structure(subtree).num_leaves)

    tree_map(add, prefix_tree, full_tree, is_leaf=is_leaf)
    return result


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                   pytree_to_transpose: Any) -> Any:
    """Turns an outer-of-inner pytree into an inner-of-outer one.

    Args: outer_treedef / inner_treedef: structures of the two levels (inner is inferred
      from the first outer leaf when None). pytree_to_transpose: the pytree to transpose.
    Returns: the transposed pytree.
    Raises: TypeError: if the leaf count is inconsistent with the two treedefs.
    >>> tree_transpose(tree_structure([0, 0]), tree_structure((0, 0)), [(1, 2), (3, 4)])
    ([1, 3], [2, 4])
    """
    if inner_treedef is None:
        inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
    flat, treedef = tree_flatten(pytree_to_transpose)
    inner_size, outer_size = inner_treedef.num_leaves, outer_treedef.num_leaves
    if treedef.num_leaves != inner_size * outer_size:
        raise TypeError(f"Mismatch\n{treedef}\n != \n{outer_treedef.compose(inner_treedef)}")
    it = iter(flat)
    lol = [[next(it) for _ in range(inner_size)] for _ in range(outer_size)]
    cols = zip(*lol) if lol else [()] * inner_size  # An empty outer level stays empty.
    return inner_treedef.unflatten([outer_treedef.unflatten(col) for col in cols])


def tree_all(tree: Any, *, is_leaf: _IsLeaf = None) -> bool:
    """Whether all leaves are truthy.
    >>> tree_all([1, (True, None)]), tree_all({'a': 0})
    (True, False)
    """
    return all(tree_leaves(tree, is_leaf))


def tree_reduce(function: Callable[[Any, Any], Any], tree: Any, initializer: Any = _NO_INIT,
                is_leaf: _IsLeaf = None) -> Any:
    """``functools.reduce`` of ``function`` over the leaves (and optional ``initializer``).
    >>> tree_reduce(max, [3, (9, 1)]), tree_reduce(lambda a, b: a + b, [], 0)
    (9, 0)
    """
    init = () if initializer is _NO_INIT else (initializer,)
    return functools.reduce(function, tree_leaves(tree, is_leaf), *init)


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    """Treedefs of the root's immediate children (``[]`` for a leaf treedef)."""
    return treedef.children()


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """``treedef.num_nodes == 1``: as in JAX, also True for ``None`` and ``()``."""
    return treedef.num_nodes == 1


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The treedef of a tuple whose children have the given treedefs."""
    return PyTreeDef((tuple, None, tuple(t._node for t in treedefs)))


def all_leaves(iterable: Iterable[Any], is_leaf: _IsLeaf = None) -> bool:
    """Whether every element of ``iterable`` is a leaf.
    >>> all_leaves([1, 'a']), all_leaves([1, None])
    (True, False)
    """
    return not any((type(x) in _NODE_TYPES or (isinstance(x, tuple) and hasattr(x, "_fields")))
                   and (is_leaf is None or not is_leaf(x)) for x in iterable)


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable,
                         flatten_with_keys_func: Callable | None = None) -> None:
    """Registers ``nodetype`` (exactly; subclasses are not covered) as a pytree node type.

    Args: flatten_func: ``x -> (children, aux_data)``; aux_data is compared with ``==``.
      unflatten_func: ``(aux_data, children_tuple) -> x``.
      flatten_with_keys_func: optional ``x -> ([(key, child), ...], aux_data)``.
    Raises: ValueError: if ``nodetype`` is already registered (built-in nodes included).
    >>> class Box:
    ...     def __init__(self, v): self.v = v
    >>> register_pytree_node(Box, lambda b: ((b.v,), None), lambda _, c: Box(*c))
    >>> tree_leaves([Box(1), Box((2, 3))])
    [1, 2, 3]
    """
    if nodetype in _NODE_TYPES:
        raise ValueError(f"Duplicate custom PyTreeDef type registration for {nodetype!r}.")
    _registry[nodetype] = _Registration(nodetype, flatten_func, unflatten_func,
                                        flatten_with_keys_func)
    _NODE_TYPES.add(nodetype)


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable,
                              unflatten_func: Callable,
                              flatten_func: Callable | None = None) -> None:
    """Like ``register_pytree_node``, with ``x -> ([(key, child), ...], aux_data)`` given
    first; ``flatten_func`` is derived from it when None. ValueError if already registered."""
    if flatten_func is None:
        def flatten_func(x):
            pairs, aux = flatten_with_keys(x)
            return [c for _, c in pairs], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator registering ``cls`` via its ``tree_flatten()`` method and its
    ``tree_unflatten(aux_data, children)`` classmethod; returns ``cls``."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(nodetype: type, data_fields: Iterable[str] | None = None,
                       meta_fields: Iterable[str] | None = None,
                       drop_fields: Iterable[str] = ()) -> type:
    """Registers a dataclass-like type, rebuilt as ``nodetype(**fields)``; usable as decorator.

    Args: data_fields: fields that are children. meta_fields: static fields, kept (and
      compared) as treedef aux data. When both are None they are inferred from the init
      fields of the dataclass (``metadata={'static': True}`` marks meta fields).
      drop_fields: init fields to leave out.
    Returns: ``nodetype``.
    Raises: TypeError: if only one list is given, or fields of a non-dataclass must be
      inferred. ValueError: if the lists do not cover exactly the dataclass's init fields.
    """
    if data_fields is None or meta_fields is None:
        if (data_fields is None) != (meta_fields is None):
            raise TypeError("register_dataclass: data_fields and meta_fields must both be "
                            "given, or both be None to infer them.")
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(f"register_dataclass: cannot infer fields of non-dataclass "
                            f"{nodetype!r}; pass data_fields and meta_fields.")
        data_fields, meta_fields = [], []
        for f in dataclasses.fields(nodetype):
            if f.init and f.name not in drop_fields:
                (meta_fields if f.metadata.get("static", False) else data_fields).append(f.name)
    elif dataclasses.is_dataclass(nodetype):
        init = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop_fields)
        if {*data_fields, *meta_fields} != init:
            raise ValueError(f"data_fields and meta_fields must include all dataclass fields "
                             f"with init=True and only them; expected {sorted(init)}, got "
                             f"{list(data_fields)} and {list(meta_fields)}.")
    data, meta = tuple(data_fields), tuple(meta_fields)
    register_pytree_node(
        nodetype,
        lambda x: ([getattr(x, n) for n in data], tuple(getattr(x, n) for n in meta)),
        lambda aux, kids: nodetype(**dict(zip(meta, aux)), **dict(zip(data, kids))),
        lambda x: ([(GetAttrKey(n), getattr(x, n)) for n in data],
                   tuple(getattr(x, n) for n in meta)))
    return nodetype


register_pytree_with_keys(
    collections.OrderedDict, lambda x: ([(DictKey(k), v) for k, v in x.items()], tuple(x)),
    lambda keys, vals: collections.OrderedDict(zip(keys, vals)))
register_pytree_with_keys(
    collections.defaultdict,
    lambda x: ([(DictKey(k), x[k]) for k in sorted(x)], (x.default_factory, tuple(sorted(x)))),
    lambda aux, vals: collections.defaultdict(aux[0], zip(aux[1], vals)))


class _HashableCallableShim:
    """Wraps a partial so ``functools.partial`` does not merge it (its args stay static)."""

    def __init__(self, fun): self.fun = fun

    def __call__(self, *args, **kw): return self.fun(*args, **kw)

    def __hash__(self): return hash(self.fun)

    def __eq__(self, other):
        return self.fun == (other.fun if isinstance(other, _HashableCallableShim) else other)


class Partial(functools.partial):
    """A ``functools.partial`` that is a pytree: ``args``/``keywords`` are its children and
    ``func`` is static aux data, so it can cross ``jit``/``vmap`` boundaries as an argument.
    >>> p = Partial(lambda x, y: x * y, 3)
    >>> tree_leaves(p), p(5)
    ([3], 15)
    """

    def __new__(klass, func, *args, **kw):
        if isinstance(func, functools.partial):
            shim = _HashableCallableShim(func)  # Attributes set afterwards, as partial would
            out = super().__new__(klass, shim, *args, **kw)  # otherwise unwrap the shim.
            shim.func, shim.args, shim.keywords = func.func, func.args, func.keywords
            return out
        return super().__new__(klass, func, *args, **kw)


register_pytree_node(Partial, lambda p: ((p.args, p.keywords), p.func),
                     lambda func, xs: Partial(func, *xs[0], **xs[1]))


# --- one level, registry views, static nodes ---

KeyEntry = SequenceKey | DictKey | GetAttrKey | FlattenedIndexKey
KeyPath = tuple  # of KeyEntry


def _one_level(tree, with_keys: bool):
    (kind, aux, _), kids, keys = _node_of(tree)
    if kind is _LEAF:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    return (list(zip(keys, kids)) if with_keys else kids), aux


def _node_of(tree):
    """``((kind, aux, ()), children, keys)`` of the root of ``tree`` (kind ``_LEAF`` for a
    leaf)."""
    leaves, paths = [], []
    node = _flatten_general(tree, leaves, lambda x: x is not tree, (), paths)
    if node is _LEAF:
        return (_LEAF, None, ()), [], []
    if node is _NONE_NODE:
        return node, [], []
    return node, leaves, [p[0] for p in paths]


def flatten_one_level(pytree: Any) -> tuple[list, Hashable]:
    """The children of the root node and its aux data (``ValueError`` for a leaf).

    >>> flatten_one_level({'b': [1, 2], 'a': 3})
    ([3, [1, 2]], ('a', 'b'))
    """
    return _one_level(pytree, False)


def flatten_one_level_with_keys(pytree: Any) -> tuple[list, Hashable]:
    """Like :func:`flatten_one_level`, the children paired with their keys."""
    return _one_level(pytree, True)


def is_tree_node(x: Any, is_leaf: _IsLeaf = None) -> bool:
    """Whether ``x`` is an internal pytree node (not a leaf).

    >>> is_tree_node((1,)), is_tree_node(1), is_tree_node(None)
    (True, False, True)
    """
    if is_leaf is not None and is_leaf(x):
        return False
    return type(x) in _NODE_TYPES or (isinstance(x, tuple) and hasattr(x, "_fields"))


def register_pytree_with_keys_class(cls: type) -> type:
    """Class decorator registering ``cls`` via its ``tree_flatten_with_keys()`` method and
    ``tree_unflatten(aux_data, children)`` classmethod (``tree_flatten`` if it has one)."""
    register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten,
                              getattr(cls, "tree_flatten", None) and (lambda x: x.tree_flatten()))
    return cls


def register_static(cls: type) -> type:
    """Registers ``cls`` as a pytree node with no children: an instance is its own (static,
    hashable) aux data, so ``jit`` treats it as static. Returns ``cls`` (a decorator).

    >>> @register_static
    ... class Tag(str):
    ...     pass
    >>> tree_leaves([1, Tag("x")])
    [1]
    """
    register_pytree_node(cls, lambda x: ((), x), lambda x, _: x)
    return cls


def static(**kwargs):
    """``dataclasses.field(**kwargs)`` marked static for :func:`register_dataclass`."""
    metadata = dict(kwargs.pop("metadata", None) or {}, static=True)
    return dataclasses.field(metadata=metadata, **kwargs)


def tree_broadcast(prefix_tree: Any, full_tree: Any, is_leaf: _IsLeaf = None) -> Any:
    """``prefix_tree``'s leaves broadcast into the structure of ``full_tree``.

    >>> tree_broadcast((1, 2), ([0, 0], {'a': 0}))
    ([1, 1], {'a': 2})
    """
    return tree_structure(full_tree).unflatten(broadcast_prefix(prefix_tree, full_tree,
                                                                is_leaf))


def tree_reduce_associative(operation: Callable[[Any, Any], Any], tree: Any, *,
                            identity: Any = _NO_INIT, is_leaf: _IsLeaf = None) -> Any:
    """Reduce the leaves with an associative ``operation``, pairing them as a balanced tree
    (``identity`` for a tree without leaves; ``ValueError`` without one).

    >>> tree_reduce_associative(lambda a, b: a + b, [1, (2, 3), {'x': 4}])
    10
    """
    items = tree_leaves(tree, is_leaf)
    if not items:
        if identity is _NO_INIT:
            raise ValueError("must specify identity for reduction over an empty tree")
        return identity
    while len(items) > 1:
        pairs = [operation(items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)]
        items = pairs + ([items[-1]] if len(items) % 2 else [])
    return items[0]


class PyTreeRegistry:
    """A view of the node registry with the methods of JAX's ``default_registry``."""

    def flatten(self, tree, leaf_predicate=None):
        return tree_flatten(tree, leaf_predicate)

    def flatten_one_level(self, tree):
        try:
            return _one_level(tree, False)
        except ValueError:
            return None

    def register_node(self, nodetype, flatten_func, unflatten_func, flatten_with_keys=None):
        register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


default_registry = PyTreeRegistry()

