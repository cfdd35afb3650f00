"""The architecture holds: imports point one way through the layers, no import cycle spans
two folders, and no module writes attributes onto another module (see tests/import_graph.py).
"""
import ast
import os

import pytest

from tests import import_graph as ig


def test_imports_point_one_way():
    bad = sorted({str(i) + f" ({ig.LAYER_NAMES[ig.layer_of(i.source)]} imports "
                  f"{ig.LAYER_NAMES[ig.layer_of(i.target)]})" for i in ig.layer_violations()})
    assert not bad, ("imports from a lower layer to a higher one (layers, lowest first: "
                     + " <- ".join(ig.LAYER_NAMES) + "):\n" + "\n".join(bad))


def test_no_import_cycle_spans_folders():
    cross = ig.cross_folder_cycles()
    assert not cross, "import cycles across folders:\n" + "\n".join(map(", ".join, cross))


def test_every_library_module_has_a_layer():
    for mod in ig.module_files():
        ig.layer_of(mod)  # raises for a module outside every layer


def test_largest_remaining_cycle_is_inside_one_folder_and_reported(capsys):
    cycles = ig.cycles()
    mods = ig.module_files()
    for c in cycles:
        assert len({ig.folder_of(m, mods) for m in c}) == 1, c
    if cycles:
        with capsys.disabled():
            print(f"\nlargest import cycle inside one folder: {len(cycles[0])} modules "
                  f"({os.path.relpath(ig.folder_of(cycles[0][0], mods), ig.ROOT)})")


# --- the checker itself catches what it must ---


def _fake_tree(tmp_path, files: dict):
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return str(tmp_path)


def test_checker_finds_function_level_and_importlib_imports(tmp_path):
    root = _fake_tree(tmp_path, {
        "functrax/__init__.py": "",
        "functrax/core/__init__.py": "def f():\n    from functrax.lowering import x\n",
        "functrax/lowering/__init__.py": "",
        "functrax/lowering/x.py": "import importlib\nm = importlib.import_module('functrax.lax')\n",
        "functrax/lax.py": "from functrax import core\n",
        "kernels/__init__.py": "",
    })
    bad = {(i.source, i.target, i.line) for i in ig.layer_violations(root)}
    assert bad == {("functrax.core", "functrax.lowering.x", 2),
                   ("functrax.lowering.x", "functrax.lax", 2)}
    # and the three modules form a cycle through three folders
    assert ig.cross_folder_cycles(root) == [
        ["functrax.core", "functrax.lax", "functrax.lowering.x"]]


def test_checker_finds_a_cross_folder_cycle(tmp_path):
    root = _fake_tree(tmp_path, {
        "functrax/__init__.py": "",
        "functrax/passes/__init__.py": "",
        "functrax/passes/a.py": "from functrax.passes.sub import b\n",
        "functrax/passes/sub/__init__.py": "",
        "functrax/passes/sub/b.py": "from . import c\n",
        "functrax/passes/sub/c.py": "from functrax.passes import a\n",
        "kernels/__init__.py": "",
    })
    assert ig.cross_folder_cycles(root) == [
        ["functrax.passes.a", "functrax.passes.sub.b", "functrax.passes.sub.c"]]


# --- registration without side effects on other modules ---


def _module_names(tree) -> set:
    """Names bound to library modules by imports (``from functrax import lax``, ...)."""
    mods = set(ig.module_files())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names
                         if a.name in mods)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.update(a.asname or a.name for a in node.names
                         if f"{node.module}.{a.name}" in mods)
    return names


@pytest.mark.parametrize("module", sorted(ig.module_files()))
def test_no_module_sets_attributes_on_another(module):
    path = ig.module_files()[module]
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    others = _module_names(tree)
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        for t in targets:
            assert not (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                        and t.value.id in others), (
                f"{path}:{node.lineno}: assigns {t.value.id}.{t.attr}: register into a "
                "table the other module owns instead")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "setattr" and node.args
                and isinstance(node.args[0], ast.Name) and node.args[0].id in others):
            raise AssertionError(f"{path}:{node.lineno}: setattr on module {node.args[0].id}")
