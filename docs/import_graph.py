"""Read lazyk's import graph from the source (ast) and report how it fits the stage order.

    python docs/import_graph.py          # circles, upward imports, imports inside functions,
                                         # module-private names used across modules,
                                         # the largest modules

The stage order of docs/design.md, written once here: a module may import modules of its own
stage or of earlier stages. Imports inside functions are allowed only for the optional heavy
dependencies (OPTIONAL) and for the lazyk modules listed as measured import-time savings
(DEFERRED; imports of them inside functions are not counted).
`tests/test_import_graph.py` fails on any circle, upward import, import inside a function, or
module-private name (`_x`) of one lazyk module imported or read by another one.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Stage order, earliest first; every lazyk module belongs to exactly one stage.
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("errors", ("lazyk.version", "lazyk.errors", "lazyk.hooks", "lazyk.lru")),
    ("types", ("lazyk.types", "lazyk.grammar")),
    ("arrays", ("lazyk.arrays",)),
    ("frontend", ("lazyk.frontend",)),
    ("passes", ("lazyk.passes",)),
    ("codegen", ("lazyk.codegen",)),
    ("backend", ("lazyk.backend",)),
    ("kernel", ("lazyk.kernel",)),
    ("runtime", ("lazyk.runtime",)),
    ("dask", ("lazyk.dask",)),
    ("api", ("lazyk",)),
    ("bench", ("lazyk.bench",)),
    ("cli", ("lazyk.cli", "lazyk.__main__")),
)
# Optional heavy dependencies: imported inside the functions that need them, and only there.
OPTIONAL = ("dask", "distributed", "pyarrow", "awkward", "matplotlib", "cuda", "numba",
            "numexpr", "cupy")
# lazyk modules imported where first needed, for a measured import-time saving: each one
# named here with what it saves.
DEFERRED = {
    # imports dask.array: ~640 ms on top of `import lazyk` (same measure), only where Dask
    # collections are used.
    "lazyk.dask",
    "lazyk.dask.collection",
    "lazyk.dask.layers",
}


def modules() -> dict[str, Path]:
    """Every lazyk module name -> its source file (passes/ and grammar/ install inside lazyk)."""
    found = {}
    for folder, package in ((ROOT / "lazyk", "lazyk"), (ROOT / "passes", "lazyk.passes"),
                            (ROOT / "grammar", "lazyk.grammar")):
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts]) if parts else package] = path
    return found


def stage_of(module: str) -> int:
    """Index of the stage a lazyk module belongs to (longest matching prefix)."""
    best, index = -1, None
    for k, (_, names) in enumerate(STAGES):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best:
                best, index = len(name), k
    if index is None:
        raise KeyError(f"{module} is in no stage: add it to STAGES in docs/import_graph.py")
    return index


def _resolve(node: ast.AST, module: str, is_package: bool, known: set[str]) -> list[str]:
    """lazyk modules an import statement names (`from lazyk import x` may name a module)."""
    out = []
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            pkg = module.split(".") if is_package else module.split(".")[:-1]
            pkg = pkg[:len(pkg) - node.level + 1]
            base = ".".join(pkg + ([base] if base else []))
        names = [f"{base}.{a.name}" for a in node.names]  # each resolves to a module
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name not in out:
            out.append(name)
    return out


def edges() -> list[tuple[str, str, bool, int]]:
    """(importer, imported, inside_a_function, line) for every import of a lazyk module."""
    mods = modules()
    known = set(mods)
    out = []
    for module, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        inner: set[int] = set()
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner.update(id(n) for n in ast.walk(fn) if n is not fn)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _resolve(node, module, is_package, known):
                    # `from . import x` names the parent package; `import lazyk` is the api
                    if target != module and (target == "lazyk" or not (
                            module.startswith(target + ".")
                            and mods[target].name == "__init__.py")):
                        out.append((module, target, id(node) in inner, node.lineno))
    return out


def _dotted(node: ast.AST) -> str | None:
    """`a.b.c` for a chain of attribute reads on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(mods: dict[str, Path] | None = None) -> list[tuple[str, str, str, int]]:
    """(importer, module, name, line) for each module-private name `_x` of a lazyk module
    that another module imports (`from lazyk.m import _x`) or reads (`m._x`, where `m` names
    the imported module). `mods`: module name -> source file (default: `modules()`)."""
    mods = modules() if mods is None else mods
    known = set(mods)
    out = []
    for module, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        bound: dict[str, str] = {}  # local name -> the lazyk module it names
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname and a.name in known:
                        bound[a.asname] = a.name
                    elif not a.asname and a.name.split(".")[0] == "lazyk":
                        bound["lazyk"] = "lazyk"
            elif isinstance(node, ast.ImportFrom):
                base_name = node.module or ""
                if node.level:  # the package a relative import names
                    pkg = module.split(".") if is_package else module.split(".")[:-1]
                    pkg = pkg[:len(pkg) - node.level + 1]
                    base_name = ".".join(pkg + ([node.module] if node.module else []))
                if base_name not in known:
                    continue
                for a in node.names:
                    full = f"{base_name}.{a.name}"
                    if full in known:
                        bound[a.asname or a.name] = full
                    elif _is_private(a.name) and base_name != module:
                        out.append((module, base_name, a.name, node.lineno))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and _is_private(node.attr)):
                continue
            chain = _dotted(node.value)
            if chain is None:
                continue
            head, _, rest = chain.partition(".")
            if head not in bound:
                continue
            target = ".".join(p for p in (bound[head], rest) if p)
            if target in known and target != module:
                out.append((module, target, node.attr, node.lineno))
    return sorted(set(out))


def circles(pairs: list[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    graph: dict[str, set[str]] = {}
    for a, b in pairs:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return sorted(found)


def report() -> dict:
    """Circles, upward imports, imports inside functions, private names used across modules
    and module sizes."""
    es = edges()
    upward = sorted({(a, b) for a, b, _, _ in es if stage_of(b) > stage_of(a)})
    inside = sorted({(a, b) for a, b, inner, _ in es if inner and b not in DEFERRED})
    sizes = sorted(((len(p.read_text().splitlines()), m) for m, p in modules().items()),
                   reverse=True)
    private = sorted({(a, m, n) for a, m, n, _ in private_uses()})
    return {"circles": circles([(a, b) for a, b, _, _ in es]), "upward": upward,
            "inside": inside, "private": private, "sizes": sizes}


def main() -> int:
    r = report()
    print(f"circles: {len(r['circles'])}")
    for c in r["circles"]:
        print(f"  {len(c)} modules: {' '.join(c)}")
    print(f"upward imports (a later stage imported by an earlier one): {len(r['upward'])}")
    for a, b in r["upward"]:
        print(f"  {a} ({STAGES[stage_of(a)][0]}) -> {b} ({STAGES[stage_of(b)][0]})")
    print(f"imports of lazyk modules inside functions: {len(r['inside'])}")
    print(f"module-private names imported from another module: {len(r['private'])}")
    for a, m, n in r["private"]:
        print(f"  {a} -> {m}.{n}")
    print("largest modules (lines): " + ", ".join(f"{m} {n}" for n, m in r["sizes"][:10]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
