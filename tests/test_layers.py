"""The package's layers point down: read every module's imports with ``ast`` (nothing is imported) and check that
no import climbs a layer, that there is no import cycle, and that no shoulders module is imported inside a
function (the usual way to hide a cycle). DESIGN.md §3 draws the ladder this test enforces."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "shoulders"

# bottom to top; a module may import its own layer's modules (inside one package) and any lower layer
LAYERS = [
    ("ground", ("shoulders._atomic", "shoulders._lock", "shoulders._scale", "shoulders._seed", "shoulders._show",
                "shoulders.config", "shoulders.device")),
    ("data", ("shoulders.data",)),
    ("text", ("shoulders.text",)),
    ("models", ("shoulders.models",)),
    ("heads", ("shoulders.heads",)),
    ("evaluate", ("shoulders.evaluate",)),
    ("train", ("shoulders.train",)),
    ("recipes", ("shoulders.recipes",)),
    ("giants", ("shoulders.giants",)),
    ("top", ("shoulders.viz", "shoulders.presets", "shoulders")),
]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(name: str) -> int:
    best = None
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if name == prefix or name.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (rank, len(prefix))
    assert best is not None, f"{name} is in no layer of this test: add it to LAYERS"
    return best[0]


def imports(name: str) -> list[tuple[str, int, bool]]:
    """``(imported shoulders module, line, inside a function)`` for every import in module ``name``."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    inner: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inner |= {id(n) for n in ast.walk(node) if n is not node}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in MODULES else mod for a in node.names]
        else:
            continue
        for t in targets:
            if t == "shoulders" or t.startswith("shoulders."):
                while t not in MODULES and "." in t:
                    t = t.rsplit(".", 1)[0]
                found.append((t, node.lineno, id(node) in inner))
    return found


GRAPH = {name: imports(name) for name in MODULES}


def test_every_module_has_a_layer():
    for name in MODULES:
        layer(name)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_point_down(name):
    mine = layer(name)
    up = [(t, line) for t, line, _ in GRAPH[name] if t != name and layer(t) > mine]
    assert not up, f"{name} ({LAYERS[mine][0]}) imports a higher layer: " + ", ".join(
        f"{t} ({LAYERS[layer(t)][0]}, line {line})" for t, line in up)


def test_models_never_import_train_recipes_or_data():
    bad = [(n, t, line) for n in MODULES if n.startswith("shoulders.models.") for t, line, _ in GRAPH[n]
           if t.startswith(("shoulders.train", "shoulders.recipes", "shoulders.data", "shoulders.giants"))]
    assert not bad, f"models must stay pure modules + configs: {bad}"


def test_no_shoulders_import_inside_a_function():
    hidden = [(n, t, line) for n in MODULES for t, line, inside in GRAPH[n] if inside]
    assert not hidden, f"import the package's own modules at module level (a hidden import dodges a cycle): {hidden}"


def test_no_import_cycle():
    graph = {n: {t for t, _, _ in GRAPH[n] if t != n} for n in MODULES}
    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def test_the_checker_sees_a_hidden_import_and_an_upward_arrow(tmp_path):
    """The rules can fail: a function-level import and a models -> train import are both caught."""
    src = "from ..train.loop import fit\n\ndef f():\n    from ..data import path\n"
    tree = ast.parse(src)
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    inner = {id(n) for n in ast.walk(fn) if n is not fn}
    kinds = [(isinstance(n, ast.ImportFrom) and n.module, id(n) in inner) for n in ast.walk(tree)
             if isinstance(n, ast.ImportFrom)]
    assert ("train.loop", False) in kinds and ("data", True) in kinds
    assert layer("shoulders.train.loop") > layer("shoulders.models.word2vec")
