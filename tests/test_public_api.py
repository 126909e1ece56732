"""The public API: every public name has a docstring and an entry in docs/api.md, the page is
what `python docs/make_api.py` writes today, and `lazyk --version` / `help(lazyk)` work."""
import doctest
import inspect
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import lazyk

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api.md"
REGENERATE = "regenerate it: python docs/make_api.py > docs/api.md"

sys.path.insert(0, str(ROOT / "docs"))
import make_api  # noqa: E402

sys.path.pop(0)


def _public_attributes(module) -> set[str]:
    """Names a user sees on `module` (no submodules, no `from __future__` features)."""
    return {n for n, v in vars(module).items()
            if not n.startswith("_") and not isinstance(v, types.ModuleType)
            and type(v).__name__ != "_Feature"}


def test_all_lists_every_public_name():
    missing = _public_attributes(lazyk) - set(lazyk.__all__)
    assert not missing, f"public names missing from lazyk.__all__: {sorted(missing)}"
    absent = [n for n in lazyk.__all__ if not hasattr(lazyk, n)]
    assert not absent, f"lazyk.__all__ names what lazyk does not define: {absent}"
    assert len(set(lazyk.__all__)) == len(lazyk.__all__)
    assert all(hasattr(lazyk.types, n) for n in lazyk.types.__all__)


@pytest.mark.parametrize("qual, name, obj", make_api.public_names(),
                         ids=[q for q, _, _ in make_api.public_names()])
def test_every_public_name_has_docs_and_an_example(qual, name, obj):
    assert make_api.summary(obj, name), f"{qual} has no docstring"
    assert make_api.example(make_api.example_key(qual, name), obj), \
        f"{qual} has no example in docs/make_api.py"
    heading = f"`{make_api.signature(qual, name, obj)}`"
    assert heading in API.read_text(), f"{qual} is not documented in docs/api.md; {REGENERATE}"


def test_api_page_is_up_to_date(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, str(ROOT / "docs" / "make_api.py")], cwd=tmp_path,
                         capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout == API.read_text(), f"docs/api.md is out of date; {REGENERATE}"
    # Examples run: a failing one would show an error where a value belongs. Every error
    # class raises in its own example but CompileError (never raised on purpose).
    errors = re.findall(r"# -> (\w+Error): ", res.stdout)
    assert sorted(set(errors)) == sorted(
        name for _, name, _ in make_api.error_classes() if name != "CompileError")


def test_every_error_class_is_documented():
    """Every class of lazyk.errors has a heading and an example."""
    text = API.read_text()
    found = {name for _, name, _ in make_api.error_classes()}
    assert found >= {n for n in dir(lazyk.errors) if n.endswith("Error")}
    for qual, name, cls in make_api.error_classes():
        assert make_api.summary(cls, name), f"{qual} has no docstring"
        assert make_api.example(name, cls), f"{qual} has no example in docs/make_api.py"
        assert f"### `{make_api.signature(qual, name, cls)}`" in text, f"{qual}; {REGENERATE}"


def test_every_method_and_dask_name_is_documented():
    """The members of Array, Expr, CompiledExpr and RaggedArray, and lazyk.dask's names."""
    pytest.importorskip("dask")
    text = API.read_text()
    for qual, cls, own in make_api.member_classes():
        rows = make_api.members(qual, cls, own)
        names = {sig.split("(")[0].rsplit(".", 1)[-1] for sig, _ in rows}
        if not own:
            wanted = {n for n in dir(cls) if not n.startswith("_")}
            assert wanted <= names, f"{qual}: {sorted(wanted - names)} not listed"
        for sig, doc in rows:
            assert doc, f"{sig} has no docstring"
            assert f"| `{sig}` | {doc} |" in text, f"{sig} is not in docs/api.md; {REGENERATE}"
    for qual, key, obj in make_api.dask_names():
        assert make_api.summary(obj, key), f"{qual} has no docstring"
        assert make_api.example(key, obj), f"{qual} has no example in docs/make_api.py"
        assert f"### `{make_api.signature(qual, key.split('.')[1], obj)}`" in text, qual
    for name in ("eval", "explain", "to_list", "to_numpy", "sum", "mean"):
        assert f"`lazyk.Expr.{name}(" in text


def test_module_docstring_example_runs():
    assert "Each block below" not in lazyk.__doc__
    result = doctest.testmod(lazyk, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 8 and result.failed == 0


def test_help_lists_the_functions():
    text = subprocess.run([sys.executable, "-c", "import lazyk; help(lazyk)"],
                          capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PAGER="cat", TERM="dumb")).stdout
    for word in ("FUNCTIONS", "evaluate(", "placeholder(", "docs/api.md"):
        assert word in text


def test_version_flag():
    from lazyk.cli import main

    res = subprocess.run([sys.executable, "-m", "lazyk.cli", "--version"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0
    assert res.stdout.strip() == f"lazyk {lazyk.__version__}" == "lazyk 0.1.0"
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'version = "{lazyk.__version__}"' in pyproject
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0


def test_cli_help_speaks_to_users():
    from lazyk.cli import build_parser

    parser = build_parser()
    texts = [parser.format_help()]
    sub = next(a for a in parser._actions if a.dest == "command")
    texts += [p.format_help() for p in sub.choices.values()]
    for text in texts:
        assert not re.search(r"issues? ?\d|stage", text, re.I), text


def test_public_docstrings_have_a_signature_line():
    for qual, name, obj in make_api.public_names():
        if callable(obj) and not inspect.isclass(obj):
            assert make_api.signature(qual, name, obj).startswith(qual + "(")
