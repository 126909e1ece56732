"""The import graph may only get cleaner: no new circle, upward import, import inside a function
or module-private name used by another module.

docs/import_graph.py reads the graph from the source and holds the stage order. The KNOWN lists
are the debts of today's layout; a change that adds to them fails here, and a change that pays
one off must remove it from its list (so the lists only shrink).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "docs"))
import import_graph  # noqa: E402

KNOWN_CIRCLES = [
    {'lazyk.array', 'lazyk.backend.cuda', 'lazyk.codegen.nvvm', 'lazyk.compiled', 'lazyk.device',
     'lazyk.explain', 'lazyk.expr', 'lazyk.exprparse', 'lazyk.operators', 'lazyk.ragged',
     'lazyk.runtime'},
    {'lazyk.arrmeta', 'lazyk.infer'},
]
KNOWN_UPWARD = {
    ('lazyk.array', 'lazyk.device'),
    ('lazyk.array', 'lazyk.operators'),
    ('lazyk.array', 'lazyk.runtime'),
    ('lazyk.codegen.nvvm', 'lazyk.backend'),
    ('lazyk.codegen.nvvm', 'lazyk.backend.nvvmc'),
    ('lazyk.codegen.nvvm', 'lazyk.runtime'),
    ('lazyk.expr', 'lazyk.codegen.nvvm'),
    ('lazyk.expr', 'lazyk.compiled'),
    ('lazyk.expr', 'lazyk.device'),
    ('lazyk.expr', 'lazyk.explain'),
    ('lazyk.expr', 'lazyk.ragged'),
    ('lazyk.expr', 'lazyk.runtime'),
    ('lazyk.operators', 'lazyk.runtime'),
}
KNOWN_INSIDE = 80
# (importer, module, name): a module-private name of `module` that `importer` uses.
KNOWN_PRIVATE = {
    ('lazyk.arrmeta', 'lazyk.infer', '_Subset'),
    ('lazyk.compiled', 'lazyk.expr', '_is_dask_array'),
    ('lazyk.compiled', 'lazyk.graph', '_arg_key'),
    ('lazyk.compiled', 'lazyk.kernel', '_GUARD_OK'),
    ('lazyk.compiled', 'lazyk.kernel', '_guard_fn'),
    ('lazyk.compiled', 'lazyk.pipeline', '_THREAD_MIN'),
    ('lazyk.compiled', 'lazyk.pipeline', '_as_out'),
    ('lazyk.compiled', 'lazyk.pipeline', '_backend'),
    ('lazyk.compiled', 'lazyk.pipeline', '_empty_out'),
    ('lazyk.compiled', 'lazyk.pipeline', '_needs_temporary'),
    ('lazyk.compiled', 'lazyk.pipeline', '_out_strides'),
    ('lazyk.compiled', 'lazyk.pipeline', '_over'),
    ('lazyk.compiled', 'lazyk.pipeline', '_prepare'),
    ('lazyk.dask', 'lazyk.graph', '_arg_key'),
    ('lazyk.dask', 'lazyk.pipeline', '_backend'),
    ('lazyk.dask', 'lazyk.pipeline', '_broadcast'),
    ('lazyk.dask', 'lazyk.pipeline', '_empty_out'),
    ('lazyk.dask', 'lazyk.pipeline', '_launch'),
    ('lazyk.dask', 'lazyk.pipeline', '_out_strides'),
    ('lazyk.dask', 'lazyk.pipeline', '_over'),
    ('lazyk.explain', 'lazyk.pipeline', '_recorders'),
    ('lazyk.exprparse', 'lazyk.pipeline', '_THREAD_MIN'),
    ('lazyk.exprparse', 'lazyk.pipeline', '_backend'),
    ('lazyk.exprparse', 'lazyk.pipeline', '_env_arrays'),
    ('lazyk.exprparse', 'lazyk.pipeline', '_exponent_leaves'),
    ('lazyk.exprparse', 'lazyk.pipeline', '_fortran_result'),
    ('lazyk.pipeline', 'lazyk.kernel', '_check_params'),
    ('lazyk.ragged', 'lazyk.expr', '_wrap_array'),
    ('lazyk.ragged', 'lazyk.kernel', '_check_params'),
    ('lazyk.ragged', 'lazyk.pipeline', '_as_out'),
}


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


def test_no_new_private_name_used_across_modules():
    found = set(import_graph.report()["private"])
    assert not found - KNOWN_PRIVATE, (
        f"module-private names used by another module: {sorted(found - KNOWN_PRIVATE)}; "
        "make the name public (no leading underscore) where another module needs it")
    assert not KNOWN_PRIVATE - found, (
        f"fixed, take them out of KNOWN_PRIVATE: {sorted(KNOWN_PRIVATE - found)}")


def test_private_names_are_found_in_both_spellings(tmp_path):
    (tmp_path / "a.py").write_text("_x = _y = 1\n__all__ = []\n")
    (tmp_path / "b.py").write_text(
        "from lazyk.a import _x, __all__\n"
        "from lazyk import a as m\n"
        "import lazyk.a\n"
        "def f():\n"
        "    return m._y + lazyk.a._x + m.__doc__\n")
    (tmp_path / "c.py").write_text("from .a import _y\n")
    mods = {"lazyk": tmp_path / "__init__.py", "lazyk.a": tmp_path / "a.py",
            "lazyk.b": tmp_path / "b.py", "lazyk.c": tmp_path / "c.py"}
    (tmp_path / "__init__.py").write_text("")
    found = {(a, m, n) for a, m, n, _ in import_graph.private_uses(mods)}
    assert found == {("lazyk.b", "lazyk.a", "_x"), ("lazyk.b", "lazyk.a", "_y"),
                     ("lazyk.c", "lazyk.a", "_y")}
