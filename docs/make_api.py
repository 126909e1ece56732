"""Write the API reference page from the docstrings: `python docs/make_api.py > docs/api.md`.

Every name in `lazyk.__all__`, `lazyk.types.__all__` and `lazyk.dask.__all__`, and every
error class, gets its signature, the first paragraph of its docstring and one example; the
public methods and properties of `Array`, `Expr`, `CompiledExpr` and `lazyk.dask.RaggedArray`
get their signature and first paragraph in a table. Examples run here, and the page shows
what their last line gave as a `# -> value` comment, the convention that
`tests/test_docs_examples.py` checks (it runs the page's blocks in order in one session).
Floats are cut to 6 significant digits and `...`: the last bits of vector math differ
between CPUs. `tests/test_public_api.py` compares this output with docs/api.md.

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
from lazyk import errors  # noqa: E402
from lazyk import types as T  # noqa: E402
from lazyk.frontend import ops as _ops  # noqa: E402
from lazyk.frontend.reductions import REDUCTIONS  # noqa: E402
from lazyk.frontend.ufuncs import ALIASES  # noqa: E402

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
    "explain": "e = lazyk.sin(lazyk.placeholder('x', 'N * float64')) * 2\n"
               "lazyk.explain(e).splitlines()[:4]  # the same text as e.explain()",
    "evaluate": "a, b = np.arange(3.0), np.ones(3)\nlazyk.evaluate('2*a + where(b > 0, b, 0)')",
    "stats": "# counts of compiles, in-memory hits, disk-cache loads\nsorted(lazyk.stats())",
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
    "count_nonzero": "lazyk.count_nonzero(lazyk.array([[1.0, 0.0, None], [], [float('nan')]]), "
                     "axis=1).eval()",
    "combinations": "x = lazyk.array([[1.0, 2.0, 3.0], [], [4.0]])\n"
                    "p = lazyk.combinations(x, 2)\n"
                    "(p.to_list(), lazyk.sum(p['0'] * p['1'], axis=1).eval())",
    "argcombinations": "lazyk.argcombinations(lazyk.array([[1.5, 2.5, 3.5], []]), 2).to_list()",
    "argcartesian": "lazyk.argcartesian([lazyk.array([[1.5, 2.5], []]), lazyk.array([[7], [8]])]).to_list()",
    "cartesian": "a, b = lazyk.array([[1, 2], [3]]), lazyk.array([[10], [20, 30]])\n"
                 "lazyk.cartesian({'a': a, 'b': b}).to_list()",
    "histogram": "x = lazyk.array([[0.5, 1.5, 1.5], [], [2.5, None]])\n"
                 "counts, edges = lazyk.histogram(x, 3, (0, 3))\n(counts, edges)",
    "argmax": "x = lazyk.array([[1.0, 5.0, 5.0], [], [2.0]])\n"
              "(lazyk.argmax(x, axis=1).eval(), x[lazyk.argmax(x, axis=1, keepdims=True)].eval())",
    "argmin": "lazyk.argmin(lazyk.array([[3, 1, 1], [], [2]]), axis=-1).eval()",
    "positive": "lazyk.positive(lazyk.array([1, -2])).eval()",
    "num": "lazyk.num(lazyk.array([[1, 2, 3], [], None])).eval()",
    "flatten": "lazyk.flatten(lazyk.array([[1, 2], [], [3]])).eval()",
    "firsts": "lazyk.firsts(lazyk.array([[1, 2], [], [3]])).eval()",
    "local_index": "lazyk.local_index(lazyk.array([[5, 6], [], [7]])).eval()",
    "concatenate": "x, y = lazyk.array([[1], []]), lazyk.array([[2], [3]])\n"
                   "lazyk.concatenate([x, y], axis=1).eval()",
    "is_none": "lazyk.is_none(lazyk.array([[1, None], None]), axis=1).eval()",
    "fill_none": "lazyk.fill_none(lazyk.array([[1.5, None], []]), 0).eval()",
    "ravel": "lazyk.ravel(lazyk.array([[1, None], None, [3]])).eval()",
    "unzip": "a, b = lazyk.unzip(lazyk.combinations(lazyk.array([[1, 2, 3]]), 2))\n"
             "(a + b).eval()",
    "nan_to_num": "lazyk.nan_to_num(lazyk.array([1.0, float('nan'), float('inf')])).eval()",
    "isclose": "lazyk.isclose(lazyk.array([1.0, 2.0]), [1.0 + 1e-9, 2.1]).eval()",
    "mask": "x = lazyk.array([[1, 2], [], [3]])\n"
            "(lazyk.mask(x, x > 1).eval(), lazyk.mask(x, lazyk.num(x, axis=1) > 0).eval())",
    "nan_to_none": "lazyk.nan_to_none(lazyk.array([[1.5, float('nan')], []])).eval()",
    "drop_none": "lazyk.drop_none(lazyk.array([[1, None, 3], None, [None]])).eval()",
    "singletons": "lazyk.singletons(lazyk.argmax(lazyk.array([[1, 5], [], [2]]), axis=1)).eval()",
    "ptp": "lazyk.ptp(lazyk.array([[1, 5, 2], [], [4]]), axis=1).eval()",
    "nansum": "lazyk.nansum(lazyk.array([[1.0, float('nan')], []]), axis=1).eval()",
    "nanprod": "lazyk.nanprod(lazyk.array([[2.0, float('nan')], []]), axis=1).eval()",
    "nanmin": "lazyk.nanmin(lazyk.array([[1.0, float('nan')], []]), axis=1).eval()",
    "nanmax": "lazyk.nanmax(lazyk.array([[1.0, float('nan')], []]), axis=1).eval()",
    "nanmean": "lazyk.nanmean(lazyk.array([[1.0, float('nan'), 3.0], []]), axis=1).eval()",
    "nanstd": "lazyk.nanstd(lazyk.array([[1.0, float('nan'), 3.0], []]), axis=1).eval()",
    "nanvar": "lazyk.nanvar(lazyk.array([[1.0, float('nan'), 3.0], []]), axis=1).eval()",
    "nanargmin": "lazyk.nanargmin(lazyk.array([[float('nan'), 2.0, 1.0], []]), axis=1).eval()",
    "nanargmax": "lazyk.nanargmax(lazyk.array([[float('nan'), 2.0, 1.0], []]), axis=1).eval()",
    "fields": "lazyk.fields(lazyk.zip({'pt': lazyk.array([[1.0]]), 'eta': lazyk.array([[0.5]])}))",
    "with_field": "r = lazyk.zip({'pt': lazyk.array([[1.0, 2.0], []])})\n"
                  "lazyk.with_field(r, r.pt * 2, 'pt2').eval()",
    "without_field": "r = lazyk.zip({'pt': lazyk.array([[1.0]]), 'eta': lazyk.array([[0.5]])})\n"
                     "lazyk.fields(lazyk.without_field(r, 'eta'))",
    "to_list": "lazyk.to_list(lazyk.array([[1, 2], []]) * 2)",
    "to_numpy": "lazyk.to_numpy(lazyk.array([1.5, 2.5]) * 2)",
    "from_iter": "lazyk.from_iter(iter([[1, None], []]))",
    "lazyk.from_numpy": "lazyk.from_numpy(np.arange(3.0))",  # (lazyk.types has one too)
    "unflatten": "lazyk.unflatten(lazyk.array([1, 2, 3, 4, 5]), [2, 0, 3])",
    "run_lengths": "lazyk.run_lengths(lazyk.array([[1, 1, 2], [3, 3], []]))",
    "values_astype": "lazyk.values_astype(lazyk.array([[1.5], [2.5, 3.5]]), 'int32').eval()",
    "full_like": "lazyk.full_like(lazyk.array([[1.5, None], []]), 7).eval()",
    "ones_like": "lazyk.ones_like(lazyk.array([[1, 2], [3]])).eval()",
    "zeros_like": "lazyk.zeros_like(lazyk.array([[1.5, None]]), dtype='int32').eval()",
    "pad_none": "lazyk.pad_none(lazyk.array([[1], [2, 3, 4]]), 2, clip=True).eval()",
    "sort": "lazyk.sort(lazyk.array([[3, 1, None, 2], []])).eval()",
    "argsort": "lazyk.argsort(lazyk.array([[3, 1, None, 2], []])).eval()",
    "cumsum": "lazyk.cumsum(lazyk.array([[1, 2, 3], [], [4, None, 5]])).eval()",
    "cumprod": "lazyk.cumprod(lazyk.array([[1, 2, 3], [4]])).eval()",
    "std": "lazyk.std(lazyk.array([[1.0, 3.0], [5.0]]), axis=-1).eval()",
    "var": "lazyk.var(lazyk.array([[1.0, 2.0, 4.0], []]), axis=-1).eval()",
    "zip": "r = lazyk.zip({'pt': lazyk.array([[10.0, 20.0], []]), 'eta': lazyk.array([[0.5, -1.5], []])})\n"
           "(r.type, r.eval().to_list())",
    "Records": "r = lazyk.zip({'x': lazyk.array([[1, 2], []])})\n(r.fields, r.x.type)",
    "real": "lazyk.real(lazyk.array(np.array([1 + 2j, 3 - 1j]))).eval()",
    "imag": "lazyk.imag(lazyk.array(np.array([1 + 2j, 3 - 1j]))).eval()",
    "get_num_threads": "lazyk.set_num_threads(2)\nlazyk.get_num_threads()",
    "set_num_threads": "lazyk.set_num_threads(1)  # kernels run on the calling thread only\n"
                       "lazyk.get_num_threads()",
    "DeviceArray": "# needs an NVIDIA GPU and driver\n"
                   "d = lazyk.array(np.arange(4.0), device='cuda')\n"
                   "(d * 2 + 1).eval().to_numpy()  # -> array([1., 3., 5., 7.])",
    "KernelSpec": "x = lazyk.placeholder('x', 'N * float64')\n"
                  "spec = lazyk.compile(lazyk.sin(x) * 2).program.steps[0].spec\n"
                  "(spec.inputs, [i.op for i in spec.body], spec.reduce)",
    "Instr": "x = lazyk.placeholder('x', 'N * float64')\n"
             "lazyk.compile(x + 1.0).program.steps[0].spec.body[-1]",
    "ArrayConstructionError": "lazyk.array([[1, 2], ['x']], type='2 * var * int32')",
    "BindError": "(lazyk.placeholder('x', 'N * float64') + 1).eval()",
    "CastingError": "lazyk.astype(lazyk.array([1.5]), 'int32', casting='safe')",
    "CompileError": "# never raised on purpose: report it as a bug, with the IR it carries\n"
                    "issubclass(lazyk.CompileError, RuntimeError)",
    "DeviceError": "# also without a GPU or driver, naming what is missing\n"
                   "lazyk.array([1.0], device='tpu')",
    "ExprParseError": "lazyk.evaluate('2 * (a + 1')",
    "DTypeError": "lazyk.bitwise_and(lazyk.array([1.5]), 1)",
    "NotSupportedError": "lazyk.placeholder('x', 'N * ... * float64')",
    "ShapeError": "(lazyk.array(np.ones(3)) + lazyk.array(np.ones(4))).eval()",
    "UnsupportedOperandError": "lazyk.array(['apple', 'kiwi']) + 'x'",
    "TypeMatchError": "lazyk.types.match(lazyk.dshape('N * float64'), lazyk.dshape('3 * int8'))",
    "TypeParseError": "lazyk.dshape('3 * int33')",
    # lazyk.dask
    "dask.evaluate": "import dask.array as da\nimport lazyk.dask\n"
                     "a = da.arange(6.0, chunks=3)\n"
                     "lazyk.dask.evaluate('sum(a * 2)').compute()",
    "dask.from_ragged": "import lazyk.dask\n"
                        "r = lazyk.dask.from_ragged(lazyk.array([[1.0, 2.0], [], [3.0]]), 2)\n"
                        "(r, lazyk.dask.evaluate(r.sum(axis=-1)).compute())",
    "dask.from_delayed": "import dask\nimport lazyk.dask\n"
                         "part = dask.delayed(lazyk.array)([[1.0], [2.0, 3.0]])\n"
                         "r = lazyk.dask.from_delayed([part, part], 'N * var * float64', [2, 2])\n"
                         "r.compute().to_list()",
    "dask.RaggedArray": "import lazyk.dask\n"
                        "r = lazyk.dask.from_ragged(lazyk.array([[1.0, None], [3.0]]), 1)\n"
                        "(r.npartitions, r.row_counts, (r * 2).type)",
    "dask.RaggedRecords": "import lazyk.dask\n"
                          "q = lazyk.dask.from_ragged(lazyk.array([{'x': [1.0], 'y': 2}]), 1)\n"
                          "lazyk.dask.evaluate(q.x.sum(axis=-1) * q.y).compute()",
    # lazyk.types
    "Type": "isinstance(lazyk.dshape('3 * int32'), lazyk.types.Type)",
    "Dim": "t = lazyk.dshape('3 * var * int32')\n(isinstance(t, lazyk.types.Dim), t.elem)",
    "FixedDim": "lazyk.types.FixedDim(3, lazyk.types.Scalar('int32'))",
    "VarDim": "lazyk.types.VarDim(lazyk.types.Scalar('float64'))",
    "SymbolicDim": "lazyk.types.SymbolicDim('N', lazyk.types.Scalar('float64'))",
    "EllipsisDim": "lazyk.types.EllipsisDim(None, lazyk.types.Scalar('float64'))",
    "Option": "lazyk.types.Option(lazyk.types.Scalar('int64'))",
    "with_value": "lazyk.types.with_value(lazyk.dshape('3 * ?var * ?string'), "
                  "lazyk.types.Scalar('int64'))",
    "with_element": "t = lazyk.dshape('3 * ?var * ?float32')\n"
                    "(lazyk.types.with_element(t, lazyk.types.Scalar('bool')), "
                    "lazyk.types.with_element(t, lambda e: e.elem))",
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


def _cut_float(m: re.Match) -> str:
    """A long float cut after 6 significant digits, then `...` (any digits follow)."""
    text = m.group()
    mant, e, exp = text.partition("e")
    digits = 0
    for i, ch in enumerate(mant):
        if ch.isdigit() and (digits or ch != "0"):
            digits += 1
        if digits == 6:
            return f"{mant[:max(i + 1, mant.index('.'))]}...{e}{exp}"
    return text


def _show_text(text: str) -> str:
    """One line: whitespace as tests/test_docs_examples.py compares it, long floats cut."""
    text = re.sub(r"(?<=[\[(]) | (?=[\]),])", "", " ".join(text.split()))
    return _FLOAT.sub(_cut_float, text)


def _show(value) -> str:
    return _show_text(repr(value))


def _session(code: str) -> tuple[list[str], str, str]:
    """Run an example: (its lines but the last, the last line's code, what that gave).

    What it gave is the last line's value, or `Error: first line of message` when it raised.
    An example of an NVIDIA GPU (`device='cuda'`) is not run here: its last line carries the
    claimed value. Every other line must run.
    """
    *body, last = code.split("\n")
    last_code, _, note = last.partition("  # ")
    if "device='cuda'" in code:
        return body, last_code, note.removeprefix("-> ")
    if note:  # a comment on the last line goes on a line of its own
        body.append(f"# {note}")
    ns = {"lazyk": lazyk, "np": np}
    with contextlib.redirect_stdout(io.StringIO()):
        exec("\n".join(body), ns)
        try:
            result = _show(eval(last_code, ns))
        except Exception as err:  # the page shows what the user would see
            first = str(err).splitlines()[0] if str(err) else ""
            result = _show_text(f"{type(err).__name__}: {first}")
    return body, last_code, result


def _run(code: str) -> str:
    """The example as the page shows it: code, the last line's result after `# -> `."""
    body, last_code, result = _session(code)
    return "\n".join([*body, f"{last_code}  # -> {result}"])


def summary(obj, name: str, module=None) -> str:
    """The first paragraph of the docstring on one line ('' when there is none)."""
    if name in CONSTANTS:
        return CONSTANTS[name]
    doc = inspect.getdoc(obj) if _has_own_doc(obj) else None
    if not doc:
        return ""
    text = " ".join(doc.split("\n\n")[0].split())
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        bases = ", ".join(f"`{b.__name__}`" for b in obj.__bases__)
        text += f" Subclass of {bases}."
    return text


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


def error_classes() -> list[tuple[str, str, type]]:
    """(qualified name, name, class) for every error lazyk raises on purpose."""
    found = [getattr(errors, n) for n in dir(errors)]
    classes = [c for c in found if inspect.isclass(c) and issubclass(c, Exception)
               and c.__module__ == errors.__name__]
    return [(f"lazyk.{c.__name__}" if c.__name__ in lazyk.__all__ else
             f"{c.__module__}.{c.__name__}", c.__name__, c) for c in classes]


def dask_names() -> list[tuple[str, str, object]]:
    """(qualified name, example key, object) for every name in `lazyk.dask.__all__`."""
    import lazyk.dask as ldask  # needs dask: only here, for the page's Dask section
    return [(f"lazyk.dask.{n}", f"dask.{n}", getattr(ldask, n)) for n in ldask.__all__]


# Members without a docstring of their own (or whose inherited one does not fit).
_REFUSED = "Refused (NotSupportedError): Dask computes a collection; `.compute()` gives a " \
    "lazyk array."
MEMBER_DOCS = {
    "lazyk.Expr.node": "The root node of the expression's graph (immutable and hash-consed).",
    "lazyk.Expr.env": "Maps each input leaf's name to its data (a NumPy view) or a "
                      "`Placeholder`.",
    "lazyk.dask.RaggedArray.eval": _REFUSED,
    "lazyk.dask.RaggedArray.to_list": _REFUSED,
    "lazyk.dask.RaggedArray.to_numpy": _REFUSED,
}


def _ragged_array():
    import lazyk.dask as ldask  # needs dask: only here, for the page's Dask section
    return ldask.RaggedArray


def member_classes() -> list[tuple[str, type, bool]]:
    """(qualified name, class, own members only) for the classes whose members get a table."""
    return [("lazyk.Array", lazyk.Array, False), ("lazyk.Expr", lazyk.Expr, False),
            ("lazyk.CompiledExpr", lazyk.CompiledExpr, False),
            ("lazyk.dask.RaggedArray", _ragged_array(), True)]


def members(qual: str, cls: type, own: bool = False) -> list[tuple[str, str]]:
    """(signature, summary) of each public method and property of `cls`; `own`: only those
    it defines, not those of lazyk.Expr and lazyk.Operators."""
    rows = []
    for n in sorted(n for n in dir(cls) if not n.startswith("_") or n == "__call__"):
        home = next(k for k in cls.__mro__ if n in vars(k))
        if n == "__call__" and home is object or own and home.__module__ in (
                "lazyk.frontend.expression", "lazyk.arrays.operators"):
            continue
        attr = inspect.getattr_static(cls, n)
        obj = getattr(cls, n)
        if n == "__call__":
            sig = signature(qual, n, obj).replace(f"{qual}(self, ", f"{qual}(...)(")
        elif callable(obj) and not isinstance(attr, property):
            sig = signature(f"{qual}.{n}", n, obj).replace("(self, ", "(").replace("(self)", "()")
        else:
            sig = f"{qual}.{n}"
        text = MEMBER_DOCS.get(f"{qual}.{n}") or summary(
            attr.fget if isinstance(attr, property) else obj, n)
        rows.append((sig, text))
    return rows


def _section(name: str, obj, module: str) -> str:
    if module == "lazyk.types":
        return "Types: `lazyk.types`"
    if module == "lazyk.dask":
        return "Dask: `lazyk.dask`"
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return "Errors"
    if name in REDUCTIONS or name in ("count", "count_nonzero"):
        return "Reductions"
    if _is_ufunc(name, obj):
        return "Elementwise functions"
    return "Arrays, expressions and compiled kernels"


_ORDER = ("Arrays, expressions and compiled kernels", "Methods and properties",
          "Elementwise functions", "Reductions", "Errors", "Dask: `lazyk.dask`",
          "Types: `lazyk.types`")


def example_key(qual: str, name: str) -> str:
    """The EXAMPLES key of a public name: its qualified name where two modules share it."""
    return qual if qual in EXAMPLES else name


def example(name: str, obj) -> str:
    if name in EXAMPLES:
        return EXAMPLES[name]
    if name in REDUCTIONS:
        return _reduction_example(name)
    if _is_ufunc(name, obj):
        return _ufunc_example(name)
    return ""


def _entry(qual: str, name: str, key: str, obj) -> str:
    code = example(key, obj)
    session = _run(code) if code else "(no example)"
    return (f"### `{signature(qual, name, obj)}`\n\n{summary(obj, name) or '(undocumented)'}\n\n"
            f"```python\n{session}\n```\n")


def render() -> str:
    sections: dict[str, list[str]] = {s: [] for s in _ORDER}
    table_rows: list[str] = []
    documented = set()
    for qual, name, obj in public_names():
        documented.add(qual)
        module = qual.rsplit(".", 1)[0]
        sec = _section(name, obj, module)
        if sec == "Elementwise functions":
            _, call, result = _session(example(name, obj))
            table_rows.append(f"| `{signature(qual, name, obj)}` | {summary(obj, name)} | "
                              f"`{call}` → `{result}` |")
            continue
        sections[sec].append(_entry(qual, name, example_key(qual, name), obj))
    for qual, name, obj in error_classes():
        if qual not in documented:
            sections["Errors"].append(_entry(qual, name, name, obj))
    for qual, key, obj in dask_names():
        sections["Dask: `lazyk.dask`"].append(_entry(qual, key.split(".")[1], key, obj))
    for qual, cls, own in member_classes():
        what = "Its own members; it also has every member of `lazyk.Expr`." if own else \
            "Every public method and property."
        rows = [f"| `{sig}` | {text} |" for sig, text in members(qual, cls, own)]
        sections["Methods and properties"] += [f"### Members of `{qual}`\n", f"{what}\n",
                                               "| member | description |", "|---|---|", *rows,
                                               ""]
    sections["Elementwise functions"] = [
        "Each takes arrays, expressions or scalars and returns a lazy expression with NumPy's "
        "result type and broadcasting.\n",
        "| function | description | example → result |", "|---|---|---|", *table_rows, ""]
    parts = ["# lazyk API reference\n",
             "Generated from the docstrings by `python docs/make_api.py > docs/api.md`. Every "
             "example runs in the test suite, in order, in one session, and `# -> ` shows what "
             "its last line gives (long floats cut to 6 significant digits and `...`).\n",
             "```python\nimport numpy as np\nimport lazyk\n```\n",
             "Names: " + ", ".join(f"`{n}`" for n in lazyk.__all__) + ".\n"]
    for sec in _ORDER:
        parts.append(f"## {sec}\n")
        parts.extend(sections[sec])
    return "\n".join(parts).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
