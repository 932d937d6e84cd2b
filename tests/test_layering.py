"""The package's architecture as a contract, checked on its source: every import, at module
level or inside a function, points down the declared order of layers, and no module imports
itself back through any path.

``LAYERS`` is the order, bottom first; each is one folder of ``weft/``. A module may import its
own layer and the layers below it. ``libs`` and ``integrations`` share the top and do not
import each other. ``weft/__init__.py`` (the public namespace) and ``weft/__main__.py`` stand
above all. Where a lower layer needs a higher one (the runtime telling the tape about a launch),
the higher one registers a hook in the lower one: it is never an import.
"""
import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "weft")

from weft.core.modpaths import LAYERS  # noqa: E402  (the order, declared once)

TOP = {"weft", "weft.__main__"}


def modules():
    out = {}
    for folder, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                out[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = path
    return out


MODULES = modules()


def imports(name, path):
    """``[(imported module, line)]`` of one module: every import statement, wherever it is."""
    tree = ast.parse(open(path).read())
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for a in node.names:
                full = f"{base}.{a.name}"
                out.append((full if full in MODULES else base, node.lineno))
    return [(m, line) for m, line in out if m == "weft" or m.startswith("weft.")]


GRAPH = {name: imports(name, path) for name, path in MODULES.items()}


def level(module):
    """``(index of its layer, its layer's name)``; the top namespace is above every layer."""
    if module in TOP:
        return len(LAYERS), "weft"
    folder = module.split(".")[1]
    for i, entry in enumerate(LAYERS):
        if folder == entry or (isinstance(entry, tuple) and folder in entry):
            return i, folder
    raise AssertionError(f"{module} is in no declared layer")


def test_modules_are_found():
    assert {"weft.transpiler.pipeline", "weft.runtime.launch", "weft.stdlib.registry",
            "weft.autodiff.tape", "weft.core.types"} <= MODULES.keys()


def test_top_level_is_at_most_eight_layer_folders():
    entries = [e for e in os.listdir(ROOT) if e != "__pycache__"]
    folders = sorted(e for e in entries if os.path.isdir(os.path.join(ROOT, e)))
    loose = sorted(e for e in entries if e.endswith(".py") and e not in ("__init__.py",
                                                                          "__main__.py"))
    assert len(folders) <= 8, folders
    assert not loose, f"modules at the top of weft/ outside every layer: {loose}"
    declared = {f for e in LAYERS for f in (e if isinstance(e, tuple) else (e,))}
    assert set(folders) == declared


@pytest.mark.parametrize("folder", sorted(
    {f for e in LAYERS for f in (e if isinstance(e, tuple) else (e,))}))
def test_each_layer_opens_with_its_docstring(folder):
    tree = ast.parse(open(os.path.join(ROOT, folder, "__init__.py")).read())
    doc = ast.get_docstring(tree)
    level_of = {f: i + 1 for i, e in enumerate(LAYERS)
                for f in (e if isinstance(e, tuple) else (e,))}
    assert doc and doc.startswith(f"Layer {level_of[folder]}"), \
        f"weft/{folder}/__init__.py should open with 'Layer {level_of[folder]}...'"


@pytest.mark.parametrize("entry", LAYERS, ids=[e if isinstance(e, str) else "+".join(e)
                                               for e in LAYERS])
def test_layer_imports_only_downwards(entry):
    folders = entry if isinstance(entry, tuple) else (entry,)
    bad = []
    for m, deps in sorted(GRAPH.items()):
        if m in TOP or m.split(".")[1] not in folders:
            continue
        mine, my_folder = level(m)
        for t, line in deps:
            if t == "weft" and my_folder in ("libs", "integrations"):
                continue  # programs written on the public API (the cycle test checks it)
            if t == "weft":
                bad.append(f"{MODULES[m]}:{line}: {m} imports the public package weft")
                continue
            theirs, their_folder = level(t)
            if theirs > mine or (theirs == mine and their_folder != my_folder):
                bad.append(f"{MODULES[m]}:{line}: {m} ({my_folder}) imports {t} "
                           f"({their_folder})")
    assert not bad, "imports against the declared order:\n" + "\n".join(bad)


def test_no_import_cycles():
    """No module reaches itself again through imports, those inside functions included (the
    public package ``weft`` counts as a module: ``libs`` written on it are not imported by it)."""
    edges = {m: sorted({t for t, _ in deps if t in MODULES and t != m})
             for m, deps in GRAPH.items()}
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def strongly_connected(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                strongly_connected(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            strongly_connected(v)
    assert not cycles, "import cycles (each a set of modules that import each other):\n" + \
        "\n".join(" <-> ".join(c) for c in cycles)
