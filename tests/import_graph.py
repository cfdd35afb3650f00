"""The import graph of the library (``functrax/`` and ``kernels/``) and its layers.

Every import counts: top-level and inside functions, ``import a.b``, ``from a import b``
(``b`` a submodule or a name), relative imports and ``importlib.import_module("...")`` with a
literal name. ``python -m tests.import_graph`` prints the layer violations and the import
cycles (strongly connected components), largest first; ``tests/test_layers.py`` holds them.

The layers, lowest first: a module may import its own layer and the layers below it.
"""
from __future__ import annotations

import ast
import os
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("functrax", "kernels")

# (layer, module prefixes); a module's layer is that of its longest matching prefix
LAYERS = (
    ("utilities", ("functrax.config", "functrax.errors", "functrax.dtypes",
                   "functrax.pretty_printer", "functrax.tree_util")),
    ("core", ("functrax.core",)),
    ("primitives", ("functrax.primitives",)),
    ("passes", ("functrax.passes",)),
    ("lowering", ("functrax.lowering", "kernels")),
    ("runtime", ("functrax.runtime",)),
    ("transforms", ("functrax.transforms", "functrax.control_flow")),
    ("public API", ("functrax",)),
)
LAYER_NAMES = tuple(name for name, _ in LAYERS)


@dataclass(frozen=True)
class Import:
    """``source`` imports ``target`` at ``path:line``."""
    source: str
    target: str
    path: str
    line: int

    def __str__(self):
        return f"{self.path}:{self.line}: {self.source} imports {self.target}"


def module_files(root: str = ROOT) -> dict:
    """Module name -> file path, for every module of the library."""
    mods = {}
    for pkg in PACKAGES:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, pkg)):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                if name.endswith(".py"):
                    path = os.path.join(dirpath, name)
                    mod = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                    mods[mod[:-len(".__init__")] if mod.endswith(".__init__") else mod] = path
    return mods


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of ``module``'s layer."""
    best, best_len = None, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                best, best_len = i, len(p)
    if best is None:
        raise ValueError(f"{module} is in no layer of tests/import_graph.py")
    return best


def folder_of(module: str, mods: dict) -> str:
    """The folder holding the module's file (a package's ``__init__`` is in its folder)."""
    return os.path.dirname(mods[module])


def _resolve(name: str, mods: dict):
    """The library module ``name`` refers to (the longest existing prefix), or None."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _targets(module: str, node, mods: dict):
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = module.split(".")
            if not mods[module].endswith("__init__.py"):
                parts = parts[:-1]
            parts = parts[:len(parts) - node.level + 1]
            base = ".".join(parts + ([node.module] if node.module else []))
        return [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module" and node.args
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return [node.args[0].value]
    return []


def imports(root: str = ROOT) -> list:
    """Every import between two library modules, as :class:`Import` s."""
    mods = module_files(root)
    out = []
    for mod, path in mods.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        rel = os.path.relpath(path, root)
        for node in ast.walk(tree):
            for name in _targets(mod, node, mods):
                target = _resolve(name, mods)
                if target is not None and target != mod:
                    out.append(Import(mod, target, rel, node.lineno))
    return list(dict.fromkeys(out))  # one entry per (source, target, line)


def layer_violations(root: str = ROOT) -> list:
    """Imports from a lower layer to a higher one."""
    return [i for i in imports(root) if layer_of(i.target) > layer_of(i.source)]


def cycles(root: str = ROOT) -> list:
    """The import cycles: strongly connected components of more than one module (sorted
    lists of module names), largest first."""
    graph: dict = {m: set() for m in module_files(root)}
    for i in imports(root):
        graph[i.source].add(i.target)
    index, low, stack, on_stack, comps = {}, {}, [], set(), []

    def visit(v):  # Tarjan's algorithm, iterative over each vertex's successors
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        while work:
            node, succ = work[-1]
            w = next(succ, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[node] = min(low[node], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(comps, key=lambda c: (-len(c), c))


def cross_folder_cycles(root: str = ROOT) -> list:
    """The cycles whose modules lie in more than one folder."""
    mods = module_files(root)
    return [c for c in cycles(root) if len({folder_of(m, mods) for m in c}) > 1]


def report(root: str = ROOT) -> str:
    """The layer violations and the cycles, as text."""
    lines = [f"layers (lowest first): {' <- '.join(LAYER_NAMES)}"]
    bad = layer_violations(root)
    lines.append(f"{len(bad)} imports from a lower layer to a higher one")
    lines += [f"  {i} ({LAYER_NAMES[layer_of(i.source)]} -> "
              f"{LAYER_NAMES[layer_of(i.target)]})" for i in bad]
    mods = module_files(root)
    cyc = cycles(root)
    lines.append(f"{len(cyc)} import cycles; across folders: {len(cross_folder_cycles(root))}")
    for c in cyc:
        folders = sorted({os.path.relpath(folder_of(m, mods), root) for m in c})
        lines.append(f"  {len(c)} modules in {', '.join(folders)}: {', '.join(c)}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report())
