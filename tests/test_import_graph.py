"""The import graph stays clean: no circle, no upward import, no import inside a function and no
module-private name used by another module.

docs/import_graph.py reads the graph from the source (ast) and holds the stage order.
"""
import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "docs"))
import import_graph  # noqa: E402

# the whole source is read once for the four checks below
report = functools.cache(import_graph.report)


def test_every_module_has_a_stage():
    for module in import_graph.modules():
        import_graph.stage_of(module)  # KeyError names a module missing from STAGES


def test_no_circle():
    assert not report()["circles"], "import circle(s) among lazyk modules"


def test_no_upward_import():
    found = report()["upward"]
    assert not found, (
        f"imports of a later stage from an earlier one: {found}; pass a function or an object "
        "down instead (lazyk.hooks; docs/import_graph.py has the stage order)")


def test_no_import_inside_functions():
    found = report()["inside"]
    assert not found, (
        f"imports of lazyk modules inside functions: {found}; import at the top of the module "
        "(only optional heavy dependencies and DEFERRED modules are imported inside functions)")


def test_no_private_name_used_across_modules():
    found = report()["private"]
    assert not found, (
        f"module-private names used by another module: {found}; make the name public (no "
        "leading underscore) where another module needs it")


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


def test_design_doc_lists_every_module():
    text = (import_graph.ROOT / "docs" / "design.md").read_text()
    block = text[text.index("## Modules, by stage"):text.index("Contracts below")]
    missing = [m for m, path in import_graph.modules().items()
               if path.name != "__init__.py" and path.name not in block]
    assert not missing, f"docs/design.md 'Modules, by stage' does not list: {missing}"


def test_no_module_over_600_lines():
    root = Path(__file__).resolve().parent.parent
    long = [f"{p.relative_to(root)} ({n})" for p in sorted((root / "lazyk").rglob("*.py"))
            + sorted((root / "passes").rglob("*.py"))
            if (n := len(p.read_text().splitlines())) > 600]
    assert not long, f"modules over 600 lines: {long}; split them by what they hold"
