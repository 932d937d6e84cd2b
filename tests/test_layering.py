"""The package's layers, read from its source: no import cycle among weft's modules, and no
import in a forbidden direction (function-level imports included):

- the transpiler imports neither the runtime nor the user-facing package (``import weft``);
- the stdlib's declarations import neither the runtime, nor the user-facing package, nor the
  transpiler's lowering or passes (only its IR, typed expressions and ABI vocabulary);
- the bottom modules (types, errors, config, lang, diskcache) import no layer above them;
- the tape knows nothing about launches or kernels.
"""
import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "weft")


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
    """``[(imported module, at module level)]`` of one module."""
    tree = ast.parse(open(path).read())
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    top_level = {id(n) for n in tree.body} | {id(n) for s in tree.body if isinstance(s, ast.If)
                                              for n in s.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, id(node) in top_level) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for a in node.names:
                full = f"{base}.{a.name}"
                out.append((full if full in MODULES else base, id(node) in top_level))
    return [(m, top) for m, top in out if m == "weft" or m.startswith("weft.")]


GRAPH = {name: imports(name, path) for name, path in MODULES.items()}


def test_modules_are_found():
    assert {"weft.transpiler.pipeline", "weft.runtime.launch", "weft.stdlib.registry"} <= \
        MODULES.keys()


def layer(m):
    """weft's layers: the bottom modules, stdlib, transpiler, runtime, the rest."""
    parts = m.split(".")
    return parts[1] if len(parts) > 2 and parts[1] in ("stdlib", "transpiler", "runtime") \
        else "bottom" if len(parts) == 2 else m


def test_no_import_cycles():
    """No cycle of module-level imports; an import inside a function may point back up within
    its own layer (the usual way to let two modules of one layer use each other), never across
    layers."""
    edges = {m: {t for t, top in deps if t in MODULES and t != m and t != "weft"
                 and (top or layer(t) != layer(m))}
             for m, deps in GRAPH.items()}
    state = {}

    def visit(m, path):
        state[m] = "active"
        for t in sorted(edges[m]):
            if state.get(t) == "active":
                cycle = path[path.index(t):] + [t]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if t not in state:
                visit(t, path + [t])
        state[m] = "done"

    for m in sorted(edges):
        if m not in state:
            visit(m, [m])


FORBIDDEN = [
    ("weft.transpiler", ("weft.runtime", "weft.cli"), {"weft"}),
    ("weft.stdlib", ("weft.runtime", "weft.cli", "weft.transpiler.lowering",
                     "weft.transpiler.specialize", "weft.transpiler.pipeline",
                     "weft.transpiler.generate", "weft.transpiler.forward",
                     "weft.transpiler.adjoint", "weft.transpiler.tangent",
                     "weft.transpiler.assemble", "weft.transpiler.analyze",
                     "weft.transpiler.verify", "weft.transpiler.targets"), {"weft"}),
    ("weft.types", ("weft.runtime", "weft.transpiler", "weft.stdlib"), {"weft"}),
    ("weft.errors", ("weft.runtime", "weft.transpiler", "weft.stdlib"), {"weft"}),
    ("weft.config", ("weft.runtime", "weft.transpiler", "weft.stdlib"), {"weft"}),
    ("weft.lang", ("weft.runtime", "weft.stdlib", "weft.transpiler.lowering",
                   "weft.transpiler.specialize", "weft.transpiler.pipeline"), {"weft"}),
    ("weft.diskcache", ("weft.runtime", "weft.transpiler", "weft.stdlib"), {"weft"}),
    ("weft.runtime.tape", ("weft.runtime.launch", "weft.runtime.kernel",
                           "weft.runtime.compiled", "weft.transpiler"), set()),
]


@pytest.mark.parametrize("layer,banned,exact", FORBIDDEN, ids=[f[0] for f in FORBIDDEN])
def test_no_forbidden_direction(layer, banned, exact):
    bad = []
    for m, deps in GRAPH.items():
        if m != layer and not m.startswith(layer + "."):
            continue
        for t, _ in deps:
            if t in exact or any(t == b or t.startswith(b + ".") for b in banned):
                bad.append(f"{m} imports {t}")
    assert not bad, "\n".join(bad)
