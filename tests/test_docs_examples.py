"""Every ```python block of README.md and docs/*.md runs, and shows what its text says.

The convention (strict; write new examples this way):
- A file's python blocks run in order in one fresh namespace, as one session would run them:
  every name a block uses is defined in it or in an earlier block of the same file (imports
  included; nothing is predefined).
- A top-level statement whose last line ends in `# -> TEXT` claims a value. For an expression
  (or an assignment to one name) TEXT must equal the value's `repr`, or for an array
  (lazyk, NumPy) its `to_list()` / `tolist()` as printed by Python. For a `print(...)` call,
  TEXT must equal what it printed. `# -> SomeError: message` claims that the statement raises
  SomeError (the exact class name) with that first line of message. In the comparison runs
  of whitespace count as one space (none just inside brackets or before a comma), and `...` stands for any text
  (as doctest's ELLIPSIS). A value that differs fails the test.
- A `# ->` comment anywhere else (inside a statement of several lines, a `for` or `with`
  block) fails the test, so nothing that looks checked goes unchecked. Other comments are prose.
- A statement that raises without claiming the error fails the test.
- A block that imports pyarrow, awkward, dask or distributed skips where that package is not
  installed; one that mentions `device="cuda"` skips without an NVIDIA GPU and driver, one
  that mentions `target="cuda"` without the CUDA toolchain (the `cuda` extra). A later block
  that uses a name a skipped block defines skips too.
Bash blocks are not run; every `lazyk SUBCOMMAND` in them must be a command of the CLI.
"""
from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import json
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import lazyk

ROOT = Path(__file__).resolve().parent.parent
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
OPTIONAL = ("pyarrow", "awkward", "dask", "distributed")
# lazyk functions that import an optional package themselves.
NEEDS = {"to_awkward": "awkward", "from_awkward": "awkward", "to_arrow": "pyarrow",
         "from_arrow": "pyarrow"}
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks(path: Path, lang: str = "python") -> list[tuple[int, str]]:
    """(first line number, code) of each fenced block of `lang` in the file."""
    text = path.read_text()
    return [(text.count("\n", 0, m.start(2)) + 1, m.group(2))
            for m in FENCE.finditer(text) if m.group(1) == lang]


def _claims(code: str) -> dict[int, str]:
    """Line number (1-based, in the block) -> the text after `# ->` on that line."""
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.COMMENT and tok.string.startswith("# ->"):
            out[tok.start[0]] = tok.string[4:].strip()
    return out


def _norm(text: str) -> str:
    text = " ".join(text.split())
    return re.sub(r"(?<=[\[(]) | (?=[\]),])", "", text)


def matches(claim: str, shown: list[str]) -> bool:
    """True when the claim equals one of the texts (whitespace normalised, `...` any text)."""
    want = _norm(claim)
    pattern = ".*?".join(re.escape(part) for part in want.split("..."))
    return any(_norm(t) == want or re.fullmatch(pattern, _norm(t), re.S) for t in shown)


def shown(value) -> list[str]:
    """The ways an example may show a value: its repr, or an array's values as a list."""
    texts = [repr(value)]
    for name in ("to_list", "tolist"):
        fn = getattr(value, name, None)
        if callable(fn) and not isinstance(value, type):
            with contextlib.suppress(Exception):
                texts.append(str(fn()))
    return texts


def _gpu_available() -> bool:
    try:
        from lazyk.backend import cuda
    except ImportError:
        return False
    return bool(cuda.available())


def _toolchain_available() -> bool:
    from lazyk.backend import nvvmc
    try:
        nvvmc.find_toolchain()
    except Exception:
        return False
    return True


def _why_skip(code: str, tainted: set[str]) -> str | None:
    """Why this block cannot run here (a missing package, GPU or name), or None."""
    tree = ast.parse(code)
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        for name in names:
            top = "dask" if name.startswith("lazyk.dask") else name.split(".")[0]
            if top in OPTIONAL and importlib.util.find_spec(top) is None:
                return f"needs {top}, which is not installed"
        if isinstance(node, ast.Attribute) and node.attr in NEEDS and \
                importlib.util.find_spec(NEEDS[node.attr]) is None:
            return f"needs {NEEDS[node.attr]}, which is not installed"
    if re.search(r"""device\s*=\s*["']cuda""", code) and not _gpu_available():
        return "needs an NVIDIA GPU and driver"
    if re.search(r"""target\s*=\s*["']cuda""", code) and not _toolchain_available():
        return "needs the CUDA toolchain (pip install 'lazyk[cuda]')"
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} & tainted
    return f"uses {', '.join(sorted(used))} from a skipped block" if used else None


def _defined(code: str) -> set[str]:
    """Names a block binds (assignments, imports, functions, classes)."""
    out = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            out.add(node.name)
    return out


@dataclass
class Session:
    """One file's namespace and how far its blocks have run."""
    path: Path
    ns: dict = field(default_factory=lambda: {"__name__": "__docs__"})
    done: int = 0
    failed: str | None = None
    tainted: set = field(default_factory=set)
    skipped: dict = field(default_factory=dict)


_SESSIONS: dict[Path, Session] = {}


def run_block(path: Path, line: int, code: str, ns: dict) -> None:
    """Run one block statement by statement, checking each claim."""
    tree = ast.parse(code)
    claims = _claims(code)
    where = {node.end_lineno: node for node in tree.body}
    for ln in claims:
        node = where.get(ln)
        assert node is not None and not isinstance(node, ast.With | ast.For | ast.If | ast.While), \
            f"{path.name}:{line + ln - 1}: a '# ->' claim must end a simple top-level statement"
    for node in tree.body:
        claim = claims.get(node.end_lineno)
        here = f"{path.name}:{line + node.lineno - 1}"
        src = ast.get_source_segment(code, node)
        module = ast.Module([node], type_ignores=[])
        ast.increment_lineno(module, line - 1)
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                if claim is not None and isinstance(node, ast.Expr):
                    value = eval(compile(ast.Expression(node.value), str(path), "eval"), ns)
                else:
                    exec(compile(module, str(path), "exec"), ns)
                    value = None
                    if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                            isinstance(node.targets[0], ast.Name):
                        value = ns[node.targets[0].id]
        except Exception as err:  # the example may claim this very error
            first = str(err).split("\n")[0]
            got = f"{type(err).__name__}: {first}"
            if claim is None or not matches(claim, [got]):
                raise AssertionError(f"{here}: {src}\n  raised {got}\n  claimed {claim}") from err
            continue
        if claim is None:
            continue
        is_print = isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and \
            isinstance(node.value.func, ast.Name) and node.value.func.id == "print"
        texts = [printed.getvalue().rstrip("\n")] if is_print else shown(value)
        assert matches(claim, texts), f"{here}: {src}\n  claimed {claim}\n  gives {texts}"


CASES = [(path, k) for path in FILES for k in range(len(blocks(path)))]


@pytest.mark.parametrize("path, k", CASES, ids=[f"{p.name}:{k}" for p, k in CASES])
def test_doc_example_runs_and_shows_its_values(path, k):
    session = _SESSIONS.setdefault(path, Session(path))
    found = blocks(path)
    while session.done <= k:
        if session.failed:
            pytest.skip(f"an earlier block of {path.name} failed: {session.failed}")
        line, code = found[session.done]
        session.done += 1
        why = _why_skip(code, session.tainted)
        if why:
            session.tainted |= _defined(code)
            session.skipped[session.done - 1] = f"{path.name}:{line} {why}"
            continue
        threads = lazyk.get_num_threads()
        try:
            run_block(path, line, code, session.ns)
        except BaseException:
            session.failed = f"block {session.done - 1} (line {line})"
            raise
        finally:
            lazyk.set_num_threads(threads)  # an example may change it: not for later tests
    if k in session.skipped:
        pytest.skip(session.skipped[k])


def test_bash_examples_name_real_commands():
    from lazyk import cli
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        cli.main(["--help"])
    commands = set(re.search(r"\{([\w,]+)\}", out.getvalue()).group(1).split(","))
    used = []
    for path in FILES:
        for line, code in blocks(path, "bash"):
            for m in re.finditer(r"(?:^|[\s/])lazyk (\w[\w-]*)", code):
                used.append(m.group(1))
                assert m.group(1) in commands, \
                    f"{path.name}:{line}: `lazyk {m.group(1)}` is not a command ({commands})"
    assert used, "no bash block runs a lazyk command"


def test_readme_speed_table_is_the_committed_results():
    """The README's table of ratios is computed from the results file it names."""
    text = (ROOT / "README.md").read_text()
    stem = re.search(r"benchmarks/(results-\d{4}-\d{2}-\d{2})\.md", text).group(1)
    rows = json.loads((ROOT / "benchmarks" / f"{stem}.json").read_text())["rows"]
    table = re.findall(r"^\| (E\d+) \| `[^`]+` \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$",
                       text, re.M)
    assert [case for case, *_ in table] == [f"E{i}" for i in range(1, 11)]
    for case, *shown_ in table:
        want = []
        for label, n in (("np", 10**6), ("np", 10**7), ("peer", 10**6), ("peer", 10**7)):
            here = [r for r in rows if r["n"] == n and r["case"] == case]
            fresh = min(r["seconds"] for r in here if r["tool"] in ("lazyk 1t", "lazyk 2t"))
            lazyk_best = min(r["seconds"] for r in here if r["family"] == "lazyk")
            numpy = min(r["seconds"] for r in here if r["family"] == "numpy")
            peer = min(r["seconds"] for r in here if r["family"] in ("numexpr", "numba"))
            want.append(f"{numpy / fresh:.1f}" if label == "np" else f"{peer / lazyk_best:.2f}")
        assert shown_ == want, f"README speed table, {case}: shows {shown_}, {stem}.json gives {want}"


def test_the_checker_is_strict():
    here = Path("example.md")
    ns: dict = {}
    run_block(here, 1, "a = [1, 2]\nlen(a)  # -> 2\nprint('x  y')  # -> x y\n", ns)
    run_block(here, 1, "a[5]  # -> IndexError: list index out of range\n", ns)
    run_block(here, 1, "list(range(9))  # -> [0, 1, ..., 8]\n", ns)
    with pytest.raises(AssertionError, match="claimed 3"):
        run_block(here, 1, "len(a)  # -> 3\n", ns)
    with pytest.raises(AssertionError, match="claimed ValueError"):
        run_block(here, 1, "a[5]  # -> ValueError: list index out of range\n", ns)
    with pytest.raises(AssertionError, match="raised IndexError"):
        run_block(here, 1, "a[5]\n", ns)
    with pytest.raises(AssertionError, match="simple top-level statement"):
        run_block(here, 1, "for i in a:\n    i  # -> 1\n", ns)
    with pytest.raises(AssertionError, match="simple top-level statement"):
        run_block(here, 1, "b = (1 +  # -> 3\n     2)\n", ns)
    assert not matches("[1, 2]", ["[1, 2, 3]"]) and matches("[1, 2, ...]", ["[1, 2, 3]"])


def test_a_block_using_a_skipped_block_s_names_skips():
    assert _why_skip("y = x + 1", {"x"}) == "uses x from a skipped block"
    assert _why_skip("y = 1", {"x"}) is None
    assert _defined("import numpy as np\nfrom a import b\nx, y = 1, 2\ndef f(): pass") == \
        {"np", "b", "x", "y", "f"}
