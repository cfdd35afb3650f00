"""Tests for functrax.tree_util (semantics follow jax.tree_util)."""
import collections
import dataclasses
import doctest
import functools
from collections import OrderedDict, defaultdict
from typing import Any, NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from functrax import tree_util as tu
from functrax.tree_util import DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey

Point = collections.namedtuple("Point", ["x", "y"])


class Triple(NamedTuple):
    a: Any
    b: Any
    c: Any


# ----------------------------------------------------------------- reference model
def same(a, b):
    """Strict structural equality: types must match exactly; OrderedDict order matters."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        if type(a) is OrderedDict and list(a) != list(b):
            return False
        if type(a) is defaultdict and a.default_factory is not b.default_factory:
            return False
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def ordered_items(t):
    if type(t) is OrderedDict:
        return list(t.items())
    return [(k, t[k]) for k in sorted(t)]


def ref_leaves(t):
    if t is None:
        return []
    if isinstance(t, (tuple, list)):
        return [x for c in t for x in ref_leaves(c)]
    if isinstance(t, dict):
        return [x for _, c in ordered_items(t) for x in ref_leaves(c)]
    return [t]


def ref_num_nodes(t):
    if isinstance(t, (tuple, list)):
        return 1 + sum(map(ref_num_nodes, t))
    if isinstance(t, dict):
        return 1 + sum(map(ref_num_nodes, t.values()))
    return 1


def ref_map(f, t):
    """Structure-preserving map written independently of the library."""
    if t is None:
        return None
    if isinstance(t, tuple):
        vals = [ref_map(f, c) for c in t]
        return type(t)(*vals) if hasattr(t, "_fields") else tuple(vals)
    if isinstance(t, list):
        return [ref_map(f, c) for c in t]
    if type(t) is defaultdict:
        return defaultdict(t.default_factory, {k: ref_map(f, v) for k, v in t.items()})
    if isinstance(t, dict):
        return type(t)((k, ref_map(f, v)) for k, v in t.items())
    return f(t)


def ref_repr(t):
    if t is None:
        return "None"
    if isinstance(t, tuple) and hasattr(t, "_fields"):
        inner = ", ".join(map(ref_repr, t))
        return f"CustomNode(namedtuple[{type(t).__name__}], [{inner}])"
    if isinstance(t, tuple):
        inner = ", ".join(map(ref_repr, t))
        return f"({inner},)" if len(t) == 1 else f"({inner})"
    if isinstance(t, list):
        return "[" + ", ".join(map(ref_repr, t)) + "]"
    if type(t) is dict:
        return "{" + ", ".join(f"{k!r}: {ref_repr(v)}" for k, v in ordered_items(t)) + "}"
    if type(t) is OrderedDict:
        inner = ", ".join(ref_repr(v) for v in t.values())
        return f"CustomNode(OrderedDict[{tuple(t)!r}], [{inner}])"
    if type(t) is defaultdict:
        inner = ", ".join(ref_repr(v) for _, v in ordered_items(t))
        return f"CustomNode(defaultdict[{(t.default_factory, tuple(sorted(t)))!r}], [{inner}])"
    return "*"


def ref_get(t, path):
    for k in path:
        if isinstance(k, SequenceKey):
            t = t[k.idx]
        elif isinstance(k, DictKey):
            t = t[k.key]
        elif isinstance(k, GetAttrKey):
            t = getattr(t, k.name)
        else:
            raise AssertionError(f"unexpected key {k!r}")
    return t


# -------------------------------------------------------------------- strategies
_keys = st.text(alphabet="abcde", min_size=1, max_size=2)


def _extend(children):
    return st.one_of(
        st.lists(children, max_size=4).map(tuple),
        st.lists(children, max_size=4),
        st.dictionaries(_keys, children, max_size=4),
        st.builds(Point, children, children),
        st.builds(Triple, children, children, children),
        st.dictionaries(_keys, children, max_size=4).map(OrderedDict),
        st.builds(defaultdict, st.sampled_from([list, int]),
                  st.dictionaries(_keys, children, max_size=3)),
    )


trees = st.recursive(st.one_of(st.integers(-50, 50), st.none()), _extend, max_leaves=25)
small_trees = st.recursive(st.one_of(st.just(0), st.none()), _extend, max_leaves=4)


# ------------------------------------------------------------ property tests
@given(trees)
def test_flatten_roundtrip_and_leaf_order(t):
    leaves, td = tu.tree_flatten(t)
    assert leaves == ref_leaves(t)
    assert td.num_leaves == len(leaves)
    assert td.num_nodes == ref_num_nodes(t)
    assert same(tu.tree_unflatten(td, leaves), ref_map(lambda x: x, t))
    assert same(td.unflatten(iter(leaves)), ref_map(lambda x: x, t))  # any iterable works
    assert tu.tree_leaves(t) == leaves and tu.tree_structure(t) == td


@given(trees)
def test_repr_matches_reference(t):
    assert repr(tu.tree_structure(t)) == f"PyTreeDef({ref_repr(t)})"


@given(trees)
def test_tree_map_single_and_multiple(t):
    assert same(tu.tree_map(lambda x: x * 2 + 1, t), ref_map(lambda x: x * 2 + 1, t))
    t2 = ref_map(lambda x: x - 7, t)
    t3 = ref_map(str, t)
    out = tu.tree_map(lambda a, b, c: (a, b, c), t, t2, t3)
    assert same(out, ref_map(lambda x: (x, x - 7, str(x)), t))


@given(trees, trees)
def test_treedef_equality_and_hash(a, b):
    da, db = tu.tree_structure(a), tu.tree_structure(b)
    assert (da == db) == same(ref_map(lambda _: 0, a), ref_map(lambda _: 0, b))
    assert (da != db) == (not (da == db))
    if da == db:
        assert hash(da) == hash(db)
    mapped = tu.tree_structure(ref_map(lambda x: (x, "w"), a),
                               is_leaf=lambda x: type(x) is tuple and x[1:] == ("w",))
    assert mapped == da and hash(mapped) == hash(da)
    assert {da: 1}[tu.tree_structure(ref_map(str, a))] == 1


@given(small_trees, small_trees)
def test_treedef_equality_small_space(a, b):
    # A small generation space makes equal-but-distinct structures common.
    da, db = tu.tree_structure(a), tu.tree_structure(b)
    assert (da == db) == same(a, b)
    if da == db:
        assert hash(da) == hash(db)


@given(trees)
def test_key_paths_address_leaves(t):
    pairs, td = tu.tree_flatten_with_path(t)
    assert td == tu.tree_structure(t)
    assert [x for _, x in pairs] == ref_leaves(t)
    for path, leaf in pairs:
        assert ref_get(t, path) == leaf
    assert len({p for p, _ in pairs}) == len(pairs)
    assert tu.tree_leaves_with_path(t) == pairs
    out = tu.tree_map_with_path(lambda p, x: (tu.keystr(p), x), t)
    assert [s for s, _ in tu.tree_leaves(out, is_leaf=lambda v: type(v) is tuple and
                                         len(v) == 2 and isinstance(v[0], str))] == \
        [tu.keystr(p) for p, _ in pairs]


def _expand(x):
    return None if x % 3 == 0 else ([x, (x, {"k": x})] if x % 3 == 1 else x)


@given(trees)
def test_flatten_up_to_and_broadcast_prefix(t):
    full = ref_map(_expand, t)
    td = tu.tree_structure(t)
    subtrees = td.flatten_up_to(full)
    assert len(subtrees) == td.num_leaves
    assert all(same(s, _expand(x)) for s, x in zip(subtrees, ref_leaves(t)))
    expected = [x for x in ref_leaves(t) for _ in ref_leaves(_expand(x))]
    assert tu.broadcast_prefix(t, full) == expected
    assert len(expected) == len(tu.tree_leaves(full))
    # tree_map only needs the first tree to be a prefix of the others.
    assert same(tu.tree_map(lambda x, s: s, t, full), full)


@given(trees)
def test_tree_transpose_property(t):
    outer = tu.tree_structure(t)
    inner = tu.tree_structure({"a": 0, "b": (0, 0)})
    nested = ref_map(lambda x: {"a": x, "b": (x + 1, -x)}, t)
    out = tu.tree_transpose(outer, inner, nested)
    assert same(out["a"], ref_map(lambda x: x, t))
    assert same(out["b"][0], ref_map(lambda x: x + 1, t))
    assert same(out["b"][1], ref_map(lambda x: -x, t))
    if outer.num_leaves:
        assert same(tu.tree_transpose(outer, None, nested), out)


@given(trees)
def test_is_leaf_stops_descent(t):
    def is_list(x):
        return isinstance(x, list)

    leaves, td = tu.tree_flatten(t, is_leaf=is_list)
    assert same(td.unflatten(leaves), ref_map(lambda x: x, t)) or not leaves
    assert all(not isinstance(x, (tuple, dict)) or is_list(x) for x in leaves)
    assert sum(len(ref_leaves(x)) if is_list(x) else 1 for x in leaves) == len(ref_leaves(t))


# ------------------------------------------------------------------ unit tests
def test_builtin_node_semantics():
    assert tu.tree_leaves(None) == []
    assert tu.tree_leaves([None, 1, (None,)]) == [1]
    assert repr(tu.tree_structure(None)) == "PyTreeDef(None)"
    assert tu.tree_leaves([None, 1], is_leaf=lambda x: x is None) == [None, 1]
    assert repr(tu.tree_structure(5)) == "PyTreeDef(*)"
    assert repr(tu.tree_structure((1,))) == "PyTreeDef((*,))"
    assert repr(tu.tree_structure((1, {"b": [2, 3], "a": 4}))) == \
        "PyTreeDef((*, {'a': *, 'b': [*, *]}))"
    assert repr(tu.tree_structure((1, {"a": 2, "b": [3, 4]}))) == \
        "PyTreeDef((*, {'a': *, 'b': [*, *]}))"
    assert repr(tu.tree_structure(Point(1, 2))) == \
        "PyTreeDef(CustomNode(namedtuple[Point], [*, *]))"


def test_dict_sorted_and_ordered_dicts():
    leaves, td = tu.tree_flatten({"b": 1, "a": 2, "c": 3})
    assert leaves == [2, 1, 3]
    assert list(td.unflatten([7, 8, 9])) == ["a", "b", "c"]
    od = OrderedDict([("b", 1), ("a", 2)])
    leaves, td = tu.tree_flatten(od)
    assert leaves == [1, 2]
    out = td.unflatten([5, 6])
    assert type(out) is OrderedDict and list(out.items()) == [("b", 5), ("a", 6)]
    assert td != tu.tree_structure(OrderedDict([("a", 1), ("b", 2)]))
    assert repr(td) == "PyTreeDef(CustomNode(OrderedDict[('b', 'a')], [*, *]))"
    dd = defaultdict(list, {"y": 1, "x": 2})
    leaves, td = tu.tree_flatten(dd)
    assert leaves == [2, 1]
    out = td.unflatten([3, 4])
    assert type(out) is defaultdict and out.default_factory is list
    assert dict(out) == {"x": 3, "y": 4} and out["missing"] == []
    assert td != tu.tree_structure(defaultdict(int, {"y": 1, "x": 2}))
    assert td != tu.tree_structure({"y": 1, "x": 2})


def test_unregistered_subclasses_are_leaves():
    class MyTuple(tuple):
        pass

    class MyDict(dict):
        pass

    assert tu.tree_leaves([MyTuple((1, 2)), MyDict(a=1)]) == [MyTuple((1, 2)), MyDict(a=1)]
    assert tu.all_leaves([MyTuple((1, 2)), 3, "s"])
    assert not tu.all_leaves([1, None])
    assert not tu.all_leaves([Point(1, 2)])
    assert tu.all_leaves([[1], 2], is_leaf=lambda x: isinstance(x, list))
    assert not tu.all_leaves([[1], 2])


def test_unflatten_wrong_leaf_count():
    td = tu.tree_structure((1, [2, 3]))
    with pytest.raises(ValueError, match="Too few leaves for PyTreeDef; expected 3, got 2"):
        td.unflatten([1, 2])
    with pytest.raises(ValueError, match="Too many leaves for PyTreeDef; expected 3, got 4"):
        tu.tree_unflatten(td, [1, 2, 3, 4])
    with pytest.raises(ValueError, match="expected 1, got 0"):
        tu.tree_structure(1).unflatten([])


def test_tree_map_mismatch_names_both_structures():
    with pytest.raises(ValueError) as e:
        tu.tree_map(lambda a, b: a, (1, 2), [1, 2])
    assert "PyTreeDef((*, *))" in str(e.value) and "PyTreeDef([*, *])" in str(e.value)
    with pytest.raises(ValueError, match="arity mismatch"):
        tu.tree_map(lambda a, b: a, (1, 2), (1, 2, 3))
    with pytest.raises(ValueError, match=r"Dict key mismatch.*argument 2|argument 2.*Dict key"):
        tu.tree_map(lambda a, b, c: a, {"a": 1}, {"a": 2}, {"b": 3})
    with pytest.raises(ValueError, match=r"PyTreeDef\(None\).*PyTreeDef\(\[\*\]\)"):
        tu.tree_map(lambda a, b: a, [1], None)


def test_tree_map_prefix_and_is_leaf():
    assert tu.tree_map(lambda x, y: (x, y), (1, 2), ([3, 4], 5)) == ((1, [3, 4]), (2, 5))
    out = tu.tree_map(lambda x: len(x), {"a": [1, 2], "b": [[3]]},
                      is_leaf=lambda x: isinstance(x, list))
    assert out == {"a": 2, "b": 1}
    assert tu.tree_map(lambda x: x, None) is None
    assert tu.tree_map(lambda x, y: x + y, [None, 1], [None, 2]) == [None, 3]


def test_flatten_up_to_errors():
    cases = [
        ((1, 2), (1, 2, 3), "Tuple arity mismatch: 3 != 2"),
        ((1, 2), [1, 2], "Expected tuple"),
        ([1], (1,), "Expected list"),
        ({"a": 1}, {"b": 1}, "Dict key mismatch"),
        ({"a": 1}, OrderedDict(a=1), "Expected dict"),
        ((None,), (1,), "Expected None"),
        (Point(1, 2), Triple(1, 2, 3), "Named tuple type mismatch"),
        (Point(1, 2), (1, 2), "Named tuple type mismatch"),
        (OrderedDict(a=1, b=2), OrderedDict(b=1, a=2), "Mismatch custom node data"),
        (OrderedDict(a=1), {"a": 1}, "Custom node type mismatch"),
    ]
    for prefix, full, msg in cases:
        with pytest.raises(ValueError, match=msg):
            tu.tree_structure(prefix).flatten_up_to(full)
    assert tu.tree_structure(7).flatten_up_to({"x": (1, 2)}) == [{"x": (1, 2)}]
    assert tu.tree_structure(None).flatten_up_to(None) == []


def test_broadcast_prefix_in_axes_style():
    x, y = {"w": 1, "b": 2}, [3, (4, 5)]
    assert tu.broadcast_prefix((0, None), (x, y), is_leaf=lambda v: v is None) == \
        [0, 0, None, None, None]
    assert tu.broadcast_prefix(1, (x, y)) == [1] * 5
    assert tu.broadcast_prefix(({"w": 0, "b": 1}, 2), (x, y)) == [1, 0, 2, 2, 2]
    with pytest.raises(ValueError):  # None is a node, so it cannot cover a leaf...
        tu.broadcast_prefix((0, None), (x, y))
    with pytest.raises(ValueError):
        tu.broadcast_prefix((0, 1, 2), (x, y))


def test_treedef_api():
    td = tu.tree_structure((1, [2, None], {"a": 3}))
    assert td.num_leaves == 3 and td.num_nodes == 7
    assert td.children() == [tu.tree_structure(0), tu.tree_structure([0, None]),
                             tu.tree_structure({"a": 0})]
    assert tu.treedef_children(td) == td.children()
    assert tu.treedef_children(tu.tree_structure(1)) == []
    assert tu.treedef_is_leaf(tu.tree_structure(1))
    assert tu.treedef_is_leaf(tu.tree_structure(None))  # As in JAX: num_nodes == 1.
    assert not tu.treedef_is_leaf(tu.tree_structure((1,)))
    assert tu.treedef_tuple([tu.tree_structure(1), tu.tree_structure([1, 2])]) == \
        tu.tree_structure((0, [0, 0]))
    composed = tu.tree_structure([0, 0]).compose(tu.tree_structure((0, None)))
    assert composed == tu.tree_structure([(0, None), (0, None)])
    assert composed.num_leaves == 2 and composed.num_nodes == 7
    assert td != (1, [2, None], {"a": 3}) and td != tu.tree_structure((1, [2, None], {"b": 3}))
    assert len({td, tu.tree_structure((5, [6, None], {"a": 7}))}) == 1


def test_deep_and_wide_trees():
    deep = 1
    for _ in range(300):
        deep = [deep, None]
    leaves, td = tu.tree_flatten(deep)
    assert leaves == [1] and td.unflatten([2])[0][0][0] is not None
    wide = {f"k{i:05d}": (i, [i]) for i in range(5000)}
    leaves, td = tu.tree_flatten(wide)
    assert leaves == [v for i in range(5000) for v in (i, i)]
    assert td.unflatten(leaves) == wide


# ------------------------------------------------------------------- key paths
def test_key_path_strings():
    t = {"a": [1, Point(x=2, y=3)], "b": (None, 4)}
    paths = [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(t)]
    assert paths == ["['a'][0]", "['a'][1].x", "['a'][1].y", "['b'][1]"]
    p = tu.tree_leaves_with_path(t)[1][0]
    assert p == (DictKey("a"), SequenceKey(1), GetAttrKey("x"))
    assert tu.keystr(p, simple=True, separator="/") == "a/1/x"
    assert str(FlattenedIndexKey(3)) == "[<flat index 3>]"
    assert str(DictKey(1)) == "[1]" and repr(SequenceKey(0)) == "SequenceKey(idx=0)"
    assert hash(DictKey("a")) == hash(DictKey("a")) and DictKey("a") != GetAttrKey("a")
    od = OrderedDict([("z", 1), ("y", 2)])
    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(od)] == ["['z']", "['y']"]
    out = tu.tree_map_with_path(lambda p, x, y: (tu.keystr(p), x + y),
                                [1, {"k": 2}], [10, {"k": 20}])
    assert out == [("[0]", 11), {"k": ("[1]['k']", 22)}]
    pairs = tu.tree_leaves_with_path([[1, 2], 3, 4], is_leaf=lambda x: x == [1, 2])
    assert pairs == [((SequenceKey(0),), [1, 2]), ((SequenceKey(1),), 3), ((SequenceKey(2),), 4)]


# ---------------------------------------------------------------- registration
class Box:
    def __init__(self, value, tag):
        self.value, self.tag = value, tag

    def __eq__(self, other):
        return type(other) is Box and (self.value, self.tag) == (other.value, other.tag)


_unflatten_calls = []


def _box_unflatten(tag, children):
    _unflatten_calls.append(type(children))
    return Box(children[0], tag)


tu.register_pytree_node(Box, lambda b: ((b.value,), b.tag), _box_unflatten)


class Unhashable:
    def __init__(self, xs, meta):
        self.xs, self.meta = xs, meta


tu.register_pytree_node(Unhashable, lambda u: (u.xs, u.meta), lambda m, xs: Unhashable(list(xs), m))


def test_register_pytree_node():
    t = [Box((1, 2), "t"), Box(3, "u")]
    leaves, td = tu.tree_flatten(t)
    assert leaves == [1, 2, 3]
    assert td.unflatten([4, 5, 6]) == [Box((4, 5), "t"), Box(6, "u")]
    assert _unflatten_calls[-1] is tuple
    assert repr(tu.tree_structure(Box(1, "t"))) == "PyTreeDef(CustomNode(Box[t], [*]))"
    assert tu.tree_structure(Box(1, "t")) != tu.tree_structure(Box(1, "other"))
    assert tu.tree_structure(Box(1, "t")) == tu.tree_structure(Box(2, "t"))
    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(Box([1, 2], "t"))] == \
        ["[<flat index 0>][0]", "[<flat index 0>][1]"]
    # Aux data that is unhashable is compared, not hashed.
    td1 = tu.tree_structure(Unhashable([1, 2], ["m"]))
    td2 = tu.tree_structure(Unhashable([3, 4], ["m"]))
    assert td1 == td2 and hash(td1) == hash(td2)
    assert td1 != tu.tree_structure(Unhashable([3, 4], ["n"]))
    with pytest.raises(ValueError, match="Duplicate"):
        tu.register_pytree_node(Box, lambda b: ((), None), lambda a, c: Box(None, None))
    for builtin in (tuple, list, dict, type(None)):
        with pytest.raises(ValueError):
            tu.register_pytree_node(builtin, lambda x: ((), None), lambda a, c: None)


def test_register_pytree_node_class_and_with_keys():
    @tu.register_pytree_node_class
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def tree_flatten(self):
            return (self.a, self.b), "pair"

        @classmethod
        def tree_unflatten(cls, aux, children):
            assert aux == "pair"
            return cls(*children)

    out = tu.tree_map(lambda x: x * 10, Pair(1, [2]))
    assert type(out) is Pair and out.a == 10 and out.b == [20]

    class Named:
        def __init__(self, **kw):
            self.kw = kw

    tu.register_pytree_with_keys(
        Named, lambda n: ([(GetAttrKey(k), n.kw[k]) for k in sorted(n.kw)], tuple(sorted(n.kw))),
        lambda keys, vals: Named(**dict(zip(keys, vals))))
    t = Named(q=1, p=(2,))
    assert tu.tree_leaves(t) == [2, 1]
    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(t)] == [".p[0]", ".q"]
    assert tu.tree_map(lambda x: -x, t).kw == {"p": (-2,), "q": -1}
    with pytest.raises(ValueError, match="Duplicate"):
        tu.register_pytree_with_keys(Named, lambda n: ([], None), lambda a, c: None)


def test_register_dataclass():
    @tu.register_dataclass
    @dataclasses.dataclass
    class Params:
        w: Any
        b: Any
        name: str = dataclasses.field(default="p", metadata={"static": True})

    p = Params(w=[1, 2], b=3, name="lin")
    leaves, td = tu.tree_flatten(p)
    assert leaves == [1, 2, 3]
    out = td.unflatten([4, 5, 6])
    assert out == Params(w=[4, 5], b=6, name="lin")
    assert td != tu.tree_structure(Params(w=[1, 2], b=3, name="other"))
    assert td == tu.tree_structure(Params(w=[9, 9], b=9, name="lin"))
    assert [tu.keystr(k) for k, _ in tu.tree_leaves_with_path(p)] == [".w[0]", ".w[1]", ".b"]

    @dataclasses.dataclass
    class Explicit:
        x: Any
        y: Any
        flag: bool

    assert tu.register_dataclass(Explicit, data_fields=["y", "x"], meta_fields=["flag"]) is Explicit
    leaves, td = tu.tree_flatten(Explicit(1, 2, True))
    assert leaves == [2, 1] and td.unflatten([7, 8]) == Explicit(8, 7, True)

    @dataclasses.dataclass
    class Bad:
        x: Any
        y: Any

    with pytest.raises(ValueError):
        tu.register_dataclass(Bad, data_fields=["x"], meta_fields=[])
    with pytest.raises(TypeError):
        tu.register_dataclass(Bad, data_fields=["x", "y"])

    class NotDC:
        def __init__(self, u):
            self.u = u

    with pytest.raises(TypeError):
        tu.register_dataclass(NotDC)
    tu.register_dataclass(NotDC, data_fields=["u"], meta_fields=[])
    assert tu.tree_map(lambda v: v + 1, NotDC(1)).u == 2


# --------------------------------------------------------------------- Partial
def test_partial_is_pytree():
    def f(a, b, c=0, *, d=0):
        return a * 1000 + b * 100 + c * 10 + d

    p = tu.Partial(f, 1, d=4)
    leaves, td = tu.tree_flatten(p)
    assert leaves == [1, 4]
    assert isinstance(p, functools.partial) and p(2, 3) == 1234
    q = td.unflatten([5, 6])
    assert isinstance(q, tu.Partial) and q(2, 3) == 5236
    assert tu.tree_map(lambda x: x + 1, p)(0) == 2005
    assert tu.tree_structure(tu.Partial(f, 9, d=9)) == td
    assert tu.tree_structure(tu.Partial(f, 9)) != td  # different keyword structure
    assert tu.tree_structure(tu.Partial(lambda a, b: a, 1, d=1)) != td  # different func
    inner = functools.partial(f, 7)
    nested = tu.Partial(inner, 8)
    assert tu.tree_leaves(nested) == [8] and nested(9) == 7890
    assert tu.tree_structure(tu.Partial(inner, 0)) == tu.tree_structure(nested)
    assert tu.tree_leaves(tu.Partial(tu.Partial(f, 1), 2)) == [2]


# ---------------------------------------------------- transpose / reductions
def test_tree_transpose_examples_and_errors():
    outer = tu.tree_structure([0, 0, 0])
    inner = tu.tree_structure({"x": 0, "y": 0})
    t = [{"x": i, "y": -i} for i in range(3)]
    assert tu.tree_transpose(outer, inner, t) == {"x": [0, 1, 2], "y": [0, -1, -2]}
    assert tu.tree_transpose(outer, None, t) == {"x": [0, 1, 2], "y": [0, -1, -2]}
    with pytest.raises(TypeError, match="Mismatch"):
        tu.tree_transpose(outer, inner, [{"x": 1, "y": 2}] * 2)


def test_tree_all_and_reduce():
    assert tu.tree_all([1, (True, {"a": "x"}), None])
    assert not tu.tree_all([1, (True, {"a": ""})])
    assert tu.tree_all(None)
    assert tu.tree_reduce(lambda a, b: a + b, [1, (2, {"k": 3})]) == 6
    assert tu.tree_reduce(lambda a, b: a + [b], {"b": 2, "a": 1}, []) == [1, 2]
    assert tu.tree_reduce(lambda a, b: a * b, [], 5) == 5
    with pytest.raises(TypeError):
        tu.tree_reduce(lambda a, b: a + b, [])
    def int_list(x):
        return isinstance(x, list) and all(type(v) is int for v in x)

    assert tu.tree_reduce(lambda a, b: a + len(b), [[1, 2], [3]], 0, is_leaf=int_list) == 3


def test_module_doctests():
    result = doctest.testmod(tu, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 10 and result.failed == 0


@settings(max_examples=25)
@given(trees)
def test_unflatten_rejects_wrong_counts(t):
    leaves, td = tu.tree_flatten(t)
    with pytest.raises(ValueError, match=f"expected {len(leaves)}, got {len(leaves) + 1}"):
        td.unflatten(leaves + [0])
    if leaves:
        with pytest.raises(ValueError, match=f"expected {len(leaves)}, got {len(leaves) - 1}"):
            td.unflatten(leaves[1:])
