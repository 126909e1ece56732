"""The import graph may only get cleaner: no new circle, upward import or import inside a function.

docs/import_graph.py reads the graph from the source and holds the stage order. The KNOWN lists
are the debts of today's layout; a change that adds to them fails here, and a change that pays
one off must remove it from its list (so the lists only shrink).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "docs"))
import import_graph  # noqa: E402

KNOWN_CIRCLES = [
    {'lazyk.array', 'lazyk.compiled', 'lazyk.dask', 'lazyk.device', 'lazyk.explain',
     'lazyk.expr', 'lazyk.exprparse', 'lazyk.operators', 'lazyk.pipeline', 'lazyk.ragged'},
    {'lazyk.arrmeta', 'lazyk.infer'},
]
KNOWN_UPWARD = {
    ('lazyk.array', 'lazyk.device'),
    ('lazyk.array', 'lazyk.operators'),
    ('lazyk.array', 'lazyk.pipeline'),
    ('lazyk.compiled', 'lazyk.dask'),
    ('lazyk.expr', 'lazyk.compiled'),
    ('lazyk.expr', 'lazyk.device'),
    ('lazyk.expr', 'lazyk.explain'),
    ('lazyk.expr', 'lazyk.pipeline'),
    ('lazyk.expr', 'lazyk.ragged'),
    ('lazyk.exprparse', 'lazyk.kernel'),
    ('lazyk.exprparse', 'lazyk.pipeline'),
    ('lazyk.operators', 'lazyk.pipeline'),
    ('lazyk.passes.fuse', 'lazyk.kernel'),
    ('lazyk.ragged', 'lazyk.explain'),
}
KNOWN_INSIDE = 71


def test_every_module_has_a_stage():
    for module in import_graph.modules():
        import_graph.stage_of(module)  # KeyError names a module missing from STAGES


def test_no_new_circle():
    found = [set(c) for c in import_graph.report()["circles"]]
    new = [c for c in found if not any(c <= k for k in KNOWN_CIRCLES)]
    assert not new, f"new import circle(s): {new}"
    gone = [k for k in KNOWN_CIRCLES if not any(c & k for c in found)]
    assert not gone, f"circle(s) removed, take them out of KNOWN_CIRCLES: {gone}"


def test_no_new_upward_import():
    found = set(import_graph.report()["upward"])
    assert not found - KNOWN_UPWARD, (
        f"imports of a later stage from an earlier one: {sorted(found - KNOWN_UPWARD)}; "
        "pass a function or an object down instead (docs/import_graph.py has the order)")
    assert not KNOWN_UPWARD - found, (
        f"fixed, take them out of KNOWN_UPWARD: {sorted(KNOWN_UPWARD - found)}")


def test_no_more_imports_inside_functions():
    n = len(import_graph.report()["inside"])
    assert n <= KNOWN_INSIDE, (
        f"{n} imports of lazyk modules inside functions, {KNOWN_INSIDE} allowed: import at the "
        "top of the module (only optional heavy dependencies are imported inside functions)")
