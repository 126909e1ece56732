"""Write the API reference page from the docstrings: `python docs/make_api.py > docs/api.md`.

Every name in `lazyk.__all__` and `lazyk.types.__all__` gets its signature, the first paragraph
of its docstring and one example. Examples run here and the page shows what they return, so a
stale example fails `tests/test_public_api.py` (which compares this output with docs/api.md).
Floats are shown to 6 significant digits: the last bits of vector math differ between CPUs.

A new public name needs a docstring and an entry in EXAMPLES below (elementwise functions and
reductions get a generated one); the test names what is missing.
"""
from __future__ import annotations

import contextlib
import inspect
import io
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import lazyk  # noqa: E402
from lazyk import types as T  # noqa: E402
from lazyk.frontend import ops as _ops  # noqa: E402
from lazyk.frontend.expr import ALIASES, REDUCTIONS  # noqa: E402

# One example per name: code whose last line is an expression (its value is shown). Names not
# listed here get a generated example (elementwise functions and reductions).
EXAMPLES = {
    "__version__": "lazyk.__version__",
    "types": "lazyk.types.Record([('x', lazyk.types.Scalar('int32'))])",
    "dshape": "lazyk.dshape('3 * var * {x: int32, y: ?float64}').shape",
    "Array": "a = lazyk.array([[1.0, 2.0], [3.0]])\n(a.type, a.to_list())",
    "array": "lazyk.array([[1, None, 3], [4]])",
    "empty": "lazyk.empty('2 * ?int32')",
    "zeros": "lazyk.zeros('2 * 3 * float32').to_numpy()",
    "full": "lazyk.full('2 * var * int32', 7, [3, 1])",
    "from_offsets": "x = lazyk.from_offsets(np.array([0, 2, 2, 5]), np.arange(5.0))\n"
                    "(x.type, x.to_list(), (x - x.mean(axis=-1, keepdims=True)).eval())",
    "from_arrow": "import pyarrow as pa\n"
                  "lazyk.from_arrow(pa.array([[1.5, None], [], [3.0]]))",
    "from_awkward": "import awkward as ak\nlazyk.from_awkward(ak.Array([[1, 2], [], [3]]))",
    "to_arrow": "lazyk.to_arrow(lazyk.array([[1.0, 2.0], [3.0]])).to_pylist()",
    "to_awkward": "lazyk.to_awkward(lazyk.array([[1, None], [3]])).tolist()",
    "Expr": "e = lazyk.array(np.arange(3.0)) * 2 + 1\n(e.type, e.eval())",
    "placeholder": "x = lazyk.placeholder('x', 'N * float64')\n(x + 1).type",
    "evaluate": "a, b = np.arange(3.0), np.ones(3)\nlazyk.evaluate('2*a + where(b > 0, b, 0)')",
    "stats": "sorted(lazyk.stats())  # counts of compiles, in-memory hits, disk-cache loads",
    "threads": "with lazyk.threads(1):\n    n = lazyk.get_num_threads()\nn",
    "re_evaluate": "a = np.arange(3.0)\nlazyk.evaluate('2*a + 1')\na = np.ones(3)\nlazyk.re_evaluate({'a': a})",
    "compile": "x = lazyk.placeholder('x', 'N * float64')\nf = lazyk.compile(x * x + 1.0)\n"
               "f(np.arange(4.0))",
    "CompiledExpr": "x = lazyk.placeholder('x', 'N * int64')\n"
                    "f = lazyk.compile(lazyk.sum(x * x))\n(f.signature, f(np.arange(4)))",
    "astype": "lazyk.astype(lazyk.array([1.7, -2.5]), 'int32').eval()",
    "clip": "lazyk.clip(lazyk.array([-1.0, 0.5, 2.0]), 0.0, 1.0).eval()",
    "where": "a = lazyk.array([1.0, -2.0, 3.0])\nlazyk.where(a > 0, a, 0.0).eval()",
    "str_len": "lazyk.str_len(lazyk.array(['kiwi', 'caf\u00e9', ''])).eval()",
    "startswith": "names = lazyk.array(['kiwi', 'apple', 'kiwano'])\n"
                  "lazyk.startswith(names, 'ki').eval()",
    "endswith": "lazyk.endswith(lazyk.array(['kiwi', 'apple']), 'le').eval()",
    "count": "lazyk.count(lazyk.array([[1.0, None, float('nan')], [4.0]]), axis=-1).eval()",
    "argmax": "x = lazyk.array([[1.0, 5.0, 5.0], [], [2.0]])\n"
              "(lazyk.argmax(x, axis=1).eval(), x[lazyk.argmax(x, axis=1, keepdims=True)].eval())",
    "argmin": "lazyk.argmin(lazyk.array([[3, 1, 1], [], [2]]), axis=-1).eval()",
    "positive": "lazyk.positive(lazyk.array([1, -2])).eval()",
    "real": "lazyk.real(lazyk.array(np.array([1 + 2j, 3 - 1j]))).eval()",
    "imag": "lazyk.imag(lazyk.array(np.array([1 + 2j, 3 - 1j]))).eval()",
    "get_num_threads": "lazyk.set_num_threads(2)\nlazyk.get_num_threads()",
    "set_num_threads": "lazyk.set_num_threads(1)  # kernels run on the calling thread only\n"
                       "lazyk.get_num_threads()",
    "DeviceArray": "# not run: needs an NVIDIA GPU and driver\n"
                   "d = lazyk.array(np.arange(4.0), device='cuda')\n(d * 2 + 1).eval()",
    "KernelSpec": "x = lazyk.placeholder('x', 'N * float64')\n"
                  "spec = lazyk.compile(lazyk.sin(x) * 2).program.steps[0].spec\n"
                  "(spec.inputs, [i.op for i in spec.body], spec.reduce)",
    "Instr": "x = lazyk.placeholder('x', 'N * float64')\n"
             "lazyk.compile(x + 1.0).program.steps[0].spec.body[-1]",
    "ArrayConstructionError": "lazyk.array([[1, 2], ['x']], type='2 * var * int32')",
    "BindError": "(lazyk.placeholder('x', 'N * float64') + 1).eval()",
    "CastingError": "lazyk.astype(lazyk.array([1.5]), 'int32', casting='safe')",
    "CompileError": "issubclass(lazyk.CompileError, RuntimeError)  # never expected: a bug report",
    "DeviceError": "# not run: the message names what is missing\n"
                   "lazyk.array([1.0], device='cuda')  # DeviceError without a GPU or driver",
    "DTypeError": "lazyk.bitwise_and(lazyk.array([1.5]), 1)",
    "NotSupportedError": "lazyk.placeholder('x', 'N * ... * float64')",
    "ShapeError": "(lazyk.array(np.ones(3)) + lazyk.array(np.ones(4))).eval()",
    "UnsupportedOperandError": "lazyk.array(['apple', 'kiwi']) + 'x'",
    "TypeMatchError": "lazyk.types.match(lazyk.dshape('N * float64'), lazyk.dshape('3 * int8'))",
    "TypeParseError": "lazyk.dshape('3 * int33')",
    # lazyk.types
    "Type": "isinstance(lazyk.dshape('3 * int32'), lazyk.types.Type)",
    "Dim": "t = lazyk.dshape('3 * var * int32')\n(isinstance(t, lazyk.types.Dim), t.elem)",
    "FixedDim": "lazyk.types.FixedDim(3, lazyk.types.Scalar('int32'))",
    "VarDim": "lazyk.types.VarDim(lazyk.types.Scalar('float64'))",
    "SymbolicDim": "lazyk.types.SymbolicDim('N', lazyk.types.Scalar('float64'))",
    "EllipsisDim": "lazyk.types.EllipsisDim(None, lazyk.types.Scalar('float64'))",
    "Option": "lazyk.types.Option(lazyk.types.Scalar('int64'))",
    "Scalar": "t = lazyk.types.Scalar('int32', '>')\n(t, t.itemsize)",
    "Timedelta": "lazyk.types.Timedelta('ms')",
    "Datetime": "lazyk.types.Datetime('ns')",
    "FixedString": "lazyk.types.FixedString(8, 'ascii').itemsize",
    "FixedBytes": "lazyk.types.FixedBytes(16, 4)",
    "Pointer": "lazyk.types.Pointer(lazyk.types.Scalar('int32'))",
    "TypeVar": "lazyk.types.match(lazyk.dshape('N * T'), lazyk.dshape('3 * float32'))",
    "Tuple": "lazyk.types.Tuple((lazyk.types.Scalar('int32'), lazyk.types.Scalar('float64')))",
    "Record": "r = lazyk.dshape('{x: int32, y: float64}')\n(r.names, r.itemsize)",
    "Function": "lazyk.dshape('(N * float64, scale: float64) -> N * float64').ret",
    "from_numpy": "lazyk.types.from_numpy(np.dtype('<f4'), (2, 3))",
    "promote": "lazyk.types.promote(lazyk.dshape('int8'), lazyk.dshape('uint8'))",
    "match": "lazyk.types.match(lazyk.dshape('N * T'), lazyk.dshape('5 * int16'))",
    "solve": "lazyk.types.solve(lazyk.dshape('N * T'), lazyk.dshape('5 * int16'))",
    "broadcast": "lazyk.types.broadcast(lazyk.dshape('3 * 1 * int8'), lazyk.dshape('4 * float32'))",
    "MAX_DEPTH": "lazyk.types.MAX_DEPTH",
    "SCALAR_NAMES": "lazyk.types.SCALAR_NAMES[:6]",
}

# Values without a docstring of their own.
CONSTANTS = {
    "__version__": "The version of the installed lazyk.",
    "MAX_DEPTH": "How deeply types may nest (the parser reports deeper ones with a position).",
    "SCALAR_NAMES": "The names of the built-in element types.",
}

# Inputs of the generated examples of elementwise functions, by kind of operand.
_FLOATS = ("lazyk.array([0.25, 0.5])", "lazyk.array([2.0, 3.0])")
_INTS = ("lazyk.array([6, 3])", "lazyk.array([2, 1])")
_BOOLS = ("lazyk.array([True, False])", "lazyk.array([True, True])")
_INT_OPS = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "invert", "left_shift",
            "right_shift", "floor_divide", "remainder", "mod"}
_BOOL_OPS = {"logical_and", "logical_or", "logical_xor", "logical_not"}
_INPUTS = {"arccosh": ("lazyk.array([1.0, 2.0])",)}


def _op_name(name: str) -> str:
    return ALIASES.get(name, name)


def _is_ufunc(name: str, obj) -> bool:
    if not callable(obj) or name in EXAMPLES:
        return False
    try:
        return _ops.get(_op_name(name)).kind == "elementwise"
    except lazyk.NotSupportedError:  # not an op of the table
        return False


def _arity(name: str) -> int:
    return _ops.get(_op_name(name)).arity


def _ufunc_example(name: str) -> str:
    if name in _INPUTS:
        args = _INPUTS[name]
    elif name in _BOOL_OPS:
        args = _BOOLS
    elif name in _INT_OPS:
        args = _INTS
    else:
        args = _FLOATS
    return f"lazyk.{name}({', '.join(args[:_arity(name)])}).eval()"


def _reduction_example(name: str) -> str:
    return f"lazyk.{name}(lazyk.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), axis=-1).eval()"


_FLOAT = re.compile(r"(?<![\w.])-?\d+\.\d{7,}(?:e[+-]?\d+)?")


def _show(value) -> str:
    text = repr(value)
    return _FLOAT.sub(lambda m: f"{float(m.group()):.6g}", text)


def _run(code: str) -> str:
    """The example's code as a session: the value of its last line, or the error it raises."""
    lines = code.split("\n")
    shown = "\n".join((">>> " if i == 0 or not ln.startswith(" ") else "... ") + ln
                      for i, ln in enumerate(lines))
    if lines[0].startswith("# not run"):
        return shown
    ns = {"lazyk": lazyk, "np": np}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec("\n".join(lines[:-1]), ns)
            value = eval(lines[-1].split("  #")[0], ns)
        result = _show(value)
    except Exception as err:  # the page shows what the user would see
        first = str(err).splitlines()[0] if str(err) else ""
        result = f"{type(err).__name__}: {_show_text(first)}"
    return f"{shown}\n{result}"


def _show_text(text: str) -> str:
    return _FLOAT.sub(lambda m: f"{float(m.group()):.6g}", text)


def summary(obj, name: str, module=None) -> str:
    """The first paragraph of the docstring on one line ('' when there is none)."""
    if name in CONSTANTS:
        return CONSTANTS[name]
    doc = inspect.getdoc(obj) if _has_own_doc(obj) else None
    if not doc:
        return ""
    return " ".join(doc.split("\n\n")[0].split())


def _has_own_doc(obj) -> bool:
    return (inspect.ismodule(obj) or inspect.isclass(obj) or callable(obj)) and bool(
        getattr(obj, "__doc__", None))


def signature(qual: str, name: str, obj) -> str:
    if not callable(obj) or inspect.ismodule(obj):
        return qual
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return f"{qual}(message)"
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return f"{qual}(...)"
    params = [p for p in sig.parameters.values() if not p.name.startswith("_")]
    if _is_ufunc(name, obj) and [p.kind for p in params] == [inspect.Parameter.VAR_POSITIONAL]:
        return f"{qual}({', '.join(['x'] if _arity(name) == 1 else ['x1', 'x2'])})"
    if inspect.isclass(obj) and not params:
        return qual  # built by a function (e.g. lazyk.array), not called directly
    return f"{qual}({', '.join(_param(p) for p in params)})"


def _param(p: inspect.Parameter) -> str:
    """One parameter as written in the source (annotations are strings here)."""
    text = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
    if p.annotation is not p.empty:
        ann = p.annotation if isinstance(p.annotation, str) else inspect.formatannotation(
            p.annotation)
        text += f": {ann}"
    if p.default is not p.empty:
        text += (" = " if p.annotation is not p.empty else "=") + repr(p.default)
    return text


def public_names() -> list[tuple[str, str, object]]:
    """(qualified name, name, object) for every documented name, lazyk's first."""
    out = [(f"lazyk.{n}", n, getattr(lazyk, n)) for n in lazyk.__all__]
    out += [(f"lazyk.types.{n}", n, getattr(T, n)) for n in T.__all__]
    return out


def _section(name: str, obj, module: str) -> str:
    if module == "lazyk.types":
        return "Types: `lazyk.types`"
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return "Errors"
    if name in REDUCTIONS or name == "count":
        return "Reductions"
    if _is_ufunc(name, obj):
        return "Elementwise functions"
    return "Arrays, expressions and compiled kernels"


_ORDER = ("Arrays, expressions and compiled kernels", "Elementwise functions", "Reductions",
          "Errors", "Types: `lazyk.types`")


def example(name: str, obj) -> str:
    if name in EXAMPLES:
        return EXAMPLES[name]
    if name in REDUCTIONS:
        return _reduction_example(name)
    if _is_ufunc(name, obj):
        return _ufunc_example(name)
    return ""


def render() -> str:
    sections: dict[str, list[str]] = {s: [] for s in _ORDER}
    table_rows: list[str] = []
    for qual, name, obj in public_names():
        module = qual.rsplit(".", 1)[0]
        sec = _section(name, obj, module)
        code = example(name, obj)
        session = _run(code) if code else "(no example)"
        if sec == "Elementwise functions":
            call, result = session.split("\n", 1)
            table_rows.append(f"| `{signature(qual, name, obj)}` | {summary(obj, name)} | "
                              f"`{call[4:]}` → `{result}` |")
            continue
        sections[sec].append(
            f"### `{signature(qual, name, obj)}`\n\n{summary(obj, name) or '(undocumented)'}\n\n"
            f"```python\n{session}\n```\n")
    sections["Elementwise functions"] = [
        "Each takes arrays, expressions or scalars and returns a lazy expression with NumPy's "
        "result type and broadcasting.\n",
        "| function | description | example → result |", "|---|---|---|", *table_rows, ""]
    parts = ["# lazyk API reference\n",
             "Generated from the docstrings by `python docs/make_api.py > docs/api.md`; every "
             "example ran when the page was made (floats shown to 6 significant digits).\n",
             "Names: " + ", ".join(f"`{n}`" for n in lazyk.__all__) + ".\n"]
    for sec in _ORDER:
        parts.append(f"## {sec}\n")
        parts.extend(sections[sec])
    return "\n".join(parts).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
