"""functrax.tree (JAX's short names), the rest of tree_util, PyTreeDef pickling and
flatten_util.ravel_pytree."""
import collections
import dataclasses
import pickle

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import tree, tree_util as tu
from functrax.flatten_util import ravel_pytree

Point = collections.namedtuple("Point", "x y")


@tu.register_pytree_node_class
class Box:
    def __init__(self, v, tag):
        self.v, self.tag = v, tag

    def tree_flatten(self):
        return (self.v,), self.tag

    @classmethod
    def tree_unflatten(cls, tag, kids):
        return cls(kids[0], tag)

    def __eq__(self, other):
        return type(other) is Box and self.v == other.v and self.tag == other.tag


TREES = [1, None, (), (1,), [1, (2, None)], {"b": [1, 2], "a": 3}, Point(1, (2, 3)),
         collections.OrderedDict(z=1, a=2), Box([1, 2], "t"), {"box": Box(3, ("k", 1))}]


@pytest.mark.parametrize("t", TREES, ids=repr)
def test_tree_names_are_the_tree_util_functions(t):
    assert tree.flatten(t) == tu.tree_flatten(t)
    assert tree.leaves(t) == tu.tree_leaves(t)
    assert tree.structure(t) == tu.tree_structure(t)
    assert tree.unflatten(tree.structure(t), tree.leaves(t)) == t
    assert tree.map(lambda x: x * 2, t) == tu.tree_map(lambda x: x * 2, t)
    assert tree.leaves_with_path(t) == tu.tree_leaves_with_path(t)


@pytest.mark.parametrize("t", TREES, ids=repr)
def test_treedef_pickles_and_compares_equal(t):
    td = tu.tree_structure(t)
    back = pickle.loads(pickle.dumps(td))
    assert back == td and hash(back) == hash(td) and repr(back) == repr(td)
    assert back.unflatten(tu.tree_leaves(t)) == t


class Unregistered:
    pass


def test_unpickling_a_custom_node_needs_its_registration():
    tu.register_pytree_node(Unregistered, lambda x: ((), None), lambda a, c: Unregistered())
    data = pickle.dumps(tu.tree_structure([Unregistered()]))
    saved = tu._registry.pop(Unregistered)
    try:
        with pytest.raises(ValueError, match="not registered as a pytree node"):
            pickle.loads(data)
    finally:
        tu._registry[Unregistered] = saved


def test_one_level():
    assert tu.flatten_one_level({"b": [1, 2], "a": 3}) == ([3, [1, 2]], ("a", "b"))
    kids, aux = tu.flatten_one_level_with_keys(Point(1, 2))
    assert kids == [(tu.GetAttrKey("x"), 1), (tu.GetAttrKey("y"), 2)] and aux is Point
    assert tu.flatten_one_level(None) == ([], None)
    with pytest.raises(ValueError, match="can't tree-flatten type"):
        tu.flatten_one_level(3.0)
    assert tu.default_registry.flatten_one_level(3.0) is None
    assert tu.is_tree_node([1]) and tu.is_tree_node(None) and not tu.is_tree_node(fnp.ones(2))
    assert not tu.is_tree_node([1], is_leaf=lambda x: isinstance(x, list))


def test_static_nodes_and_fields():
    @tu.register_static
    class Mode(str):
        pass

    assert tu.tree_leaves([1, Mode("sum"), 2]) == [1, 2]
    f = functrax.jit(lambda x, m: x * 2 if m == "double" else x)
    assert float(f(fnp.float32(3), Mode("double"))) == 6.0

    @tu.register_dataclass
    @dataclasses.dataclass
    class Op:
        x: object
        name: str = tree.static(default="add")

    leaves, td = tree.flatten(Op(fnp.ones(2)))
    assert len(leaves) == 1 and tree.unflatten(td, leaves).name == "add"


def test_with_keys_class_and_broadcast_and_associative_reduce():
    @tu.register_pytree_with_keys_class
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def tree_flatten_with_keys(self):
            return [(tu.GetAttrKey("a"), self.a), (tu.GetAttrKey("b"), self.b)], None

        @classmethod
        def tree_unflatten(cls, aux, kids):
            return cls(*kids)

    paths = [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(Pair(1, [2]))]
    assert paths == [".a", ".b[0]"]
    assert tree.broadcast((1, 2), ([0, 0], {"a": 0})) == ([1, 1], {"a": 2})
    order = []

    def cat(a, b):
        order.append((a, b))
        return a + b
    assert tree.reduce_associative(cat, ["a", ("b", "c"), {"k": "d"}]) == "abcd"
    assert order[:2] == [("a", "b"), ("c", "d")]  # balanced: pairs first
    assert tree.reduce_associative(cat, [], identity="") == ""
    with pytest.raises(ValueError, match="identity"):
        tree.reduce_associative(cat, [])


def test_ravel_pytree_round_trip_grad_and_jit():
    p = {"w": fnp.arange(6.0).reshape(2, 3), "b": (fnp.int32(4), fnp.ones(2))}
    flat, unravel = ravel_pytree(p)
    assert flat.shape == (9,) and flat.dtype == np.float32
    back = unravel(flat)
    assert back["b"][0].dtype == np.int32 and int(back["b"][0]) == 4
    np.testing.assert_array_equal(np.asarray(back["w"]), np.asarray(p["w"]))
    g = functrax.grad(lambda v: fnp.sum(unravel(v)["w"] ** 2))(flat)
    np.testing.assert_allclose(np.asarray(g), np.r_[0, 0, 0, 2 * np.arange(6.0)])  # b, then w
    np.testing.assert_array_equal(np.asarray(functrax.jit(lambda v: unravel(v)["b"][1])(flat)),
                                  np.ones(2))
    with pytest.raises(TypeError, match=r"shape \(9,\)"):
        unravel(fnp.ones(8))
    empty, un = ravel_pytree({})
    assert empty.shape == (0,) and un(empty) == {}
