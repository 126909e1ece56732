"""numexpr-compatible expression strings -> lazy lazyk expressions (`lazyk.evaluate("2*a + b")`).

The syntax lives in grammar/expr.lark. A string is parsed once into a small call tree of
lazyk.expr function names (cached per text); each evaluation looks the names up and calls
those functions, so types, broadcasting and errors are exactly lazyk's (NumPy's).
"""
from __future__ import annotations

import ast
import sys
import threading
from importlib import resources
from typing import Any

import lark
import numpy as np
from lark import Token

from lazyk.errors import BindError, NotSupportedError, ShapeError, TypeParseError

MAX_DEPTH = 256  # deeper expressions are refused cleanly (Python itself stops near 200)


class ExprParseError(TypeParseError):
    """An expression string that does not parse, or names an unknown variable or function."""


# ---------------------------------------------------------------- the call tree
class Const:
    """A literal: a Python int, float, complex or bool (weak, as in NumPy)."""

    __slots__ = ("value",)
    depth = 1

    def __init__(self, value: Any):
        self.value = value

    def __str__(self) -> str:
        return repr(self.value)


class Name:
    """A variable, looked up in local_dict / global_dict at evaluation time."""

    __slots__ = ("name", "line", "column")
    depth = 1

    def __init__(self, name: str, line: int, column: int):
        self.name, self.line, self.column = name, line, column

    def __str__(self) -> str:
        return self.name


class Call:
    """A call of the lazyk.expr function `func` (operators are calls too)."""

    __slots__ = ("func", "args", "kwargs", "line", "column", "depth")

    def __init__(self, func: str, args: tuple, kwargs: tuple, line: int, column: int):
        self.func, self.args, self.kwargs = func, args, kwargs
        self.line, self.column = line, column
        self.depth = 1 + max([a.depth for a in args] + [v.depth for _, v in kwargs] + [0])

    def __str__(self) -> str:
        parts = [str(a) for a in self.args] + [f"{k}={v}" for k, v in self.kwargs]
        return f"{self.func}({', '.join(parts)})"


# numexpr operator -> lazyk.expr function (NumPy's ufunc names).
BINARY_OPERATORS = {
    "+": "add", "-": "subtract", "*": "multiply", "/": "true_divide", "//": "floor_divide",
    "%": "remainder", "**": "power", "<<": "left_shift", ">>": "right_shift",
    "&": "bitwise_and", "|": "bitwise_or", "^": "bitwise_xor", "<": "less", "<=": "less_equal",
    ">": "greater", ">=": "greater_equal", "==": "equal", "!=": "not_equal",
}
UNARY_OPERATORS = {"-": "negative", "+": "positive", "~": "invert"}

# numexpr function -> (lazyk.expr function, number of positional arguments).
_UNARY_NAMES = ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
                "arcsinh", "arccosh", "arctanh", "log", "log10", "log1p", "log2", "exp",
                "expm1", "sqrt", "conj", "real", "imag", "ceil", "floor", "trunc", "rint",
                "sign", "isnan", "isinf", "isfinite", "absolute", "negative", "invert",
                "logical_not")
_BINARY_NAMES = ("arctan2", "fmod", "hypot", "maximum", "minimum", "fmax", "fmin", "power",
                 "remainder", "copysign", "logical_and", "logical_or", "logical_xor")
FUNCTIONS: dict[str, tuple[str, int]] = {
    **{n: (n, 1) for n in _UNARY_NAMES},
    **{n: (n, 2) for n in _BINARY_NAMES},
    "abs": ("absolute", 1), "where": ("where", 3), "clip": ("clip", 3), "complex": ("complex", 2),
    "contains": ("contains", 2),
}
# Reductions take the operand and an optional axis (positional or `axis=`).
REDUCTIONS = ("sum", "prod", "min", "max", "mean", "any", "all")


_KEYWORDS = frozenset(("and", "or", "not", "None", "lambda", "if", "else", "in", "is"))


class _Fail(Exception):
    """Raised inside the Transformer; turned into a positioned ExprParseError."""

    def __init__(self, message: str, token: Any):
        super().__init__(message)
        self.message, self.token = message, token


def _call(func: str, args: tuple, kwargs: tuple, tok: Token) -> Call:
    node = Call(func, args, kwargs, tok.line, tok.column)
    if node.depth > MAX_DEPTH:
        raise _Fail(f"expression nested deeper than {MAX_DEPTH} levels", tok)
    return node


class _Build(lark.Transformer):
    """One method per grammar rule of expr.lark; builds Const / Name / Call nodes."""

    def number(self, c: list) -> Const:
        tok = c[0]
        try:
            return Const(ast.literal_eval(str(tok)))
        except (ValueError, SyntaxError):
            raise _Fail(f"bad number {tok!s} (leading zeros?)", tok) from None

    def string(self, c: list) -> Any:
        raise _Fail("string constants are not supported yet", c[0])

    def name(self, c: list) -> Any:
        tok = c[0]
        if tok in ("True", "False"):
            return Const(tok == "True")
        if tok in _KEYWORDS:
            raise _Fail(f"{tok!s} is not supported: use & | ~ for and, or, not", tok)
        return Name(str(tok), tok.line, tok.column)

    def group(self, c: list) -> Any:
        return c[1]

    def binary(self, c: list) -> Call:
        a, op, b = c
        return _call(BINARY_OPERATORS[str(op)], (a, b), (), op)

    def unary(self, c: list) -> Any:
        op, x = c
        if isinstance(x, Const) and op in "+-" and not isinstance(x.value, bool):
            return Const(-x.value if op == "-" else x.value)  # keep literals weak scalars
        return _call(UNARY_OPERATORS[str(op)], (x,), (), op)

    def list_first(self, c: list) -> list:
        return c

    def list_more(self, c: list) -> list:
        c[0].append(c[2])
        return c[0]

    def keyword(self, c: list) -> tuple:
        return (c[0], c[2])

    def call(self, c: list) -> Call:
        tok, name = c[0], str(c[0])
        items = c[2] if len(c) > 3 else []
        seen_keyword = False
        for a in items:
            if isinstance(a, tuple):
                seen_keyword = True
            elif seen_keyword:
                raise _Fail("positional argument after a keyword argument", tok)
        args = tuple(a for a in items if not isinstance(a, tuple))
        kwargs = tuple((str(k), v) for k, v in (a for a in items if isinstance(a, tuple)))
        if name in REDUCTIONS:
            return _reduction(name, args, kwargs, tok)
        if name not in FUNCTIONS:
            raise _Fail(f"unknown function {name}", tok)
        target, arity = FUNCTIONS[name]
        if kwargs:
            raise _Fail(f"{name}() takes no keyword arguments", tok)
        if len(args) != arity:
            raise _Fail(f"{name}() takes {arity} argument(s), {len(args)} given", tok)
        return _call(target, args, (), tok)


def _reduction(name: str, args: tuple, kwargs: tuple, tok: Token) -> Call:
    """`sum(x)`, `sum(x, 1)` or `sum(x, axis=1)` with an integer constant axis."""
    if not args or len(args) + len(kwargs) > 2 or any(k != "axis" for k, _ in kwargs):
        raise _Fail(f"{name}() takes an expression and an optional axis", tok)
    if len(args) == 2:
        args, kwargs = args[:1], (("axis", args[1]),)
    for _, v in kwargs:
        if not (isinstance(v, Const) and isinstance(v.value, int)
                and not isinstance(v.value, bool)):
            raise _Fail(f"{name}(): axis must be an integer constant", tok)
    return _call(name, args, kwargs, tok)


_PARSER = lark.Lark(resources.files("lazyk.grammar").joinpath("expr.lark").read_text(),
                    parser="lalr", transformer=_Build())

_TERMINALS = {
    "NAME": "a name", "NUMBER": "a number", "STRING": "a string", "LPAR": "'('",
    "RPAR": "')'", "COMMA": "','", "EQ": "'='", "ADD": "'+' or '-'", "MUL": "'*', '/', '//' or "
    "'%'", "POW": "'**'", "SHIFT": "'<<' or '>>'", "AMP": "'&'", "BAR": "'|'", "CARET": "'^'",
    "TILDE": "'~'", "COMPARE": "a comparison", "$END": "end of input",
}


def _end_position(text: str) -> tuple[int, int]:
    stripped = text.rstrip()
    line = stripped.count("\n") + 1
    return line, len(stripped) - (stripped.rfind("\n") + 1) + 1


def parse(text: str) -> Any:
    """Parse an expression string into its call tree (uncached).

    Raises:
        ExprParseError: with line, column and a caret, for syntax errors and unknown functions.

    Example: `str(parse("2*a + b"))` is `'add(multiply(2, a), b)'`.
    """
    if not isinstance(text, str):
        raise TypeError(f"expression must be a str, got {type(text).__name__}")
    if not text.strip():
        raise ExprParseError("empty expression", text, 1, 1)
    try:
        return _PARSER.parse(text)
    except _Fail as err:
        raise ExprParseError(err.message, text, err.token.line, err.token.column) from None
    except lark.exceptions.VisitError as err:
        orig = err.orig_exc
        if isinstance(orig, _Fail):
            raise ExprParseError(orig.message, text, orig.token.line,
                                 orig.token.column) from None
        raise
    except lark.exceptions.UnexpectedToken as err:
        tok = err.token
        expected = ", ".join(sorted({_TERMINALS.get(e, e) for e in err.expected}))
        stack = getattr(err.state, "value_stack", None) or [None]
        if isinstance(stack[-1], Token) and stack[-1] in _KEYWORDS:
            tok = stack[-1]  # `not a`: the keyword itself is the problem
        if tok.type == "$END":
            line, col = _end_position(text)
            raise ExprParseError(f"unexpected end of input; expected {expected}", text,
                                 line, col) from None
        if tok.type == "COMPARE":
            msg = "chained comparisons are not supported: write (a < b) & (b < c)"
        elif tok.type == "NAME" and tok in _KEYWORDS:
            msg = f"{tok!s} is not supported: use & | ~ for and, or, not"
        else:
            msg = f"unexpected {str(tok)!r}; expected {expected}"
        raise ExprParseError(msg, text, tok.line, tok.column) from None
    except lark.exceptions.UnexpectedCharacters as err:
        ch = text[err.pos_in_stream] if err.pos_in_stream < len(text) else ""
        raise ExprParseError(f"unexpected character {ch!r}", text, err.line,
                             err.column) from None


def _program(root: Any) -> tuple:
    """The call tree in post-order (operands before their call), built without recursion."""
    out: list = []
    stack: list = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if isinstance(node, Call) and not expanded:
            stack.append((node, True))
            kids = list(node.args) + [v for _, v in node.kwargs]
            stack.extend((k, False) for k in reversed(kids))
        else:
            out.append(node)
    return tuple(out)


_CACHE: dict[str, tuple[Any, tuple]] = {}
_CACHE_LIMIT = 4096


def compile_string(text: str) -> tuple[Any, tuple]:
    """(call tree, post-order program) for `text`, parsed once and cached."""
    hit = _CACHE.get(text)
    if hit is None:
        root = parse(text)
        hit = (root, _program(root))
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.clear()
        _CACHE[text] = hit
    return hit


def names(text: str) -> tuple[str, ...]:
    """The variable names `text` uses, in order of first appearance."""
    seen: dict[str, None] = {}
    for node in compile_string(text)[1]:
        if isinstance(node, Name):
            seen.setdefault(node.name, None)
    return tuple(seen)


def _complex(expr: Any, real: Any, imag: Any) -> Any:
    """numexpr's complex(re, im) as re + im*1j with NumPy's typing."""
    return expr.add(real, expr.multiply(imag, 1j))


def build(text: str, local_dict: dict | None = None, global_dict: dict | None = None) -> Any:
    """The lazy expression for `text` with names taken from the two dicts (local first).

    Raises:
        ExprParseError: for a name found in neither dict (with its position).
        NotSupportedError: for a numexpr function lazyk does not implement yet.
    """
    from lazyk import expr as lx

    program = compile_string(text)[1]
    local_dict = local_dict or {}
    global_dict = global_dict or {}
    values: list = []
    for node in program:
        if isinstance(node, Const):
            values.append(node.value)
        elif isinstance(node, Name):
            if "__" in node.name:  # as numexpr: no dunder names (__builtins__, __loader__, ...)
                raise ExprParseError(f"name {node.name!r}: names containing '__' are not "
                                     "allowed", text, node.line, node.column)
            if node.name in local_dict:
                value = local_dict[node.name]
            elif node.name in global_dict:
                value = global_dict[node.name]
            else:
                raise ExprParseError(f"name {node.name!r} is not defined", text, node.line,
                                     node.column)
            if isinstance(value, (str, bytes)):  # never parsed as a further expression
                raise ExprParseError(f"name {node.name!r} is a {type(value).__name__}, not an "
                                     "array or number", text, node.line, node.column)
            values.append(value)
        else:
            n = len(node.args) + len(node.kwargs)
            operands = values[len(values) - n:]
            del values[len(values) - n:]
            args, kw = operands[:len(node.args)], dict(zip((k for k, _ in node.kwargs),
                                                           operands[len(node.args):]))
            if node.func == "complex":
                values.append(_complex(lx, *args))
                continue
            fn = getattr(lx, node.func, None)
            if fn is None:
                where = TypeParseError("", text, node.line, node.column)
                raise NotSupportedError(f"{node.func} is not supported by lazyk yet "
                                        f"(line {node.line}, column {node.column})\n"
                                        + "\n".join(str(where).splitlines()[1:]))
            values.append(fn(*args, **kw))
    return values[-1]


def evaluate_string(text: str, local_dict: dict | None = None, global_dict: dict | None = None,
                    out: Any = None, order: str = "K", casting: str = "same_kind",
                    _depth: int = 1, _checked: bool = False) -> Any:
    """Evaluate a numexpr-style string like `numexpr.evaluate` (names from the caller's frame).

    Args:
        text: e.g. `"where(a > 0, sqrt(a), -b) * 2"`.
        local_dict, global_dict: where names are looked up; the calling frame's locals and
            globals when left out (`_depth` frames up).
        out, order, casting: as `lazyk.evaluate`.
    Raises:
        ExprParseError: syntax errors, unknown names and functions (line, column, caret).
        ValueError / TypeError: an unknown `order` or `casting`; a dict that is not a
            mapping (as numexpr; checked before any name is looked up).
    """
    if not _checked:
        from lazyk.pipeline import check_options

        check_options(order, casting, local_dict, global_dict)
    if local_dict is None or global_dict is None:
        frame = sys._getframe(_depth)
        if local_dict is None:
            local_dict = frame.f_locals
        if global_dict is None:
            global_dict = frame.f_globals
        del frame  # no reference cycle through the frame
    _last.args = (text, out, order, casting)
    done = _fast_evaluate(text, local_dict, global_dict, out, order, casting)
    if done is not _MISS:
        return done
    value = build(text, local_dict, global_dict)
    from lazyk.pipeline import evaluate

    return evaluate(value, out=out, order=order, casting=casting)


def re_evaluate(local_dict: dict | None = None, global_dict: dict | None = None,
                _depth: int = 1) -> Any:
    """Run the last `evaluate(string)` of this thread again, as `numexpr.re_evaluate`: the
    same string, `out`, `order` and `casting`, with names looked up anew (in `local_dict`,
    else the caller's frame), e.g. new arrays of the same dtypes.

    Raises:
        RuntimeError: no string was evaluated in this thread yet.
    """
    args = getattr(_last, "args", None)
    if args is None:
        raise RuntimeError("re_evaluate() needs a previous evaluate() of a string in this "
                           "thread")
    text, out, order, casting = args
    # The options were checked when the string first ran.
    return evaluate_string(text, local_dict, global_dict, out, order, casting,
                           _depth=_depth + 1, _checked=True)


# ---------------------------------------------------------------- repeated evaluate(string)
# A repeated `evaluate(text)` over arrays of the same dtypes, ndims and layout class and
# scalars of the same kind reuses the planned program: a dictionary look-up, a bind (the
# scalars' values become kernel parameters) and one foreign call (a native guard).
_last = threading.local()
_MISS, _SEEN = object(), object()
_FAST: dict = {}
_FAST_LIMIT = 1024
_NUMERIC = frozenset("biufc")


def _special(v: Any) -> bool:
    """A scalar value the program's structure may depend on: an exponent baked into the code
    (a small integer or 0.5: see passes/fuse.py) or a bool."""
    if isinstance(v, complex):
        if v.imag:
            return False
        v = v.real
    if isinstance(v, bool):
        return True
    return v == 0.5 or (float(v).is_integer() and abs(v) <= 16)


def _scalar_class(v: Any) -> Any:
    """What of a scalar's value shapes the graph: its kind and, for Python ints, the range
    (NEP 50 overflow checks, comparisons widened for out-of-range ints), and its sign for
    NumPy integers (negative integer powers raise); special values exactly."""
    if isinstance(v, np.generic):
        item = v.item()
        if _special(item):
            return (v.dtype, "=", repr(item))  # repr keeps 0.0 and -0.0 apart
        return (v.dtype, v.dtype.kind in "iu" and item < 0)
    if _special(v):
        return (type(v), "=", repr(v))
    if type(v) is int:
        return (int, v < 0, (v if v >= 0 else -v - 1).bit_length())
    return (type(v),)


def _sentinels(cls: Any, literals: list, count: int) -> list | None:
    """`count` distinct values of scalar class `cls` that no literal of the text is close
    to (so nothing folds or merges them: each becomes its own kernel parameter)."""
    if cls[1:2] == ("=",):
        return None
    kind = cls[0]
    if kind is int:
        neg, bits = cls[1], cls[2]
        lo, hi = max(17, 1 << (bits - 1)), (1 << bits) - 1
        cands = (-(u + 1) if neg else u for u in range(lo, hi + 1))
    elif isinstance(kind, np.dtype) and kind.kind in "iu":
        info = np.iinfo(kind)
        cands = (-u if cls[1] else u for u in range(17, min(info.max, 2000)))
    else:
        cands = (17.0 + j for j in range(2000))
    out = []
    for c in cands:
        if all(abs(c - lit) >= 2 for lit in literals):
            out.append(c)
            if len(out) == count:
                break
    else:
        return None
    if isinstance(kind, np.dtype):
        return [kind.type(c) for c in out]
    return [kind(c) for c in out]


def _as_param(v: Any, dt: np.dtype) -> bytes:
    """A scalar's kernel-parameter bytes, converted as the graph builder converts it."""
    from lazyk.kernel import pack_params

    if isinstance(v, np.generic):
        v = np.asarray(v).astype(dt)
    return pack_params((dt,), (v,))


def _fast_evaluate(text: str, local_dict: Any, global_dict: Any, out: Any, order: str,
                   casting: str) -> Any:
    """The result of `evaluate(text)` from the cache of planned programs, or `_MISS`."""
    nm = _names_of.get(text)
    if nm is None:
        if len(_names_of) >= _CACHE_LIMIT:
            _names_of.clear()
        nm = _names_of[text] = names(text)  # parses (syntax errors raise as before)
    values = []
    sig = []
    for n in nm:
        if n in local_dict:
            v = local_dict[n]
        elif n in global_dict:
            v = global_dict[n]
        else:
            return _MISS  # the general path raises the positioned error
        values.append(v)
        t = type(v)
        if t is np.ndarray:
            dt = v.dtype
            if dt.kind not in _NUMERIC or not dt.isnative:
                return _MISS
            if v.ndim < 2:
                sig.append((dt, v.ndim))
            else:  # the layout class decides the order of a fresh result ('K', 'A')
                fl = v.flags
                sig.append((dt, v.ndim, fl.c_contiguous, fl.f_contiguous))
        elif t is float or t is int or t is complex or t is bool or (
                isinstance(v, np.generic) and v.dtype.kind in _NUMERIC):
            sig.append(_scalar_class(v))
        else:
            return _MISS
    if out is None:
        osig = None
    elif type(out) is np.ndarray:
        osig = out.dtype
    else:
        return _MISS
    key = (text, tuple(sig), osig, order, casting)
    entry = _FAST.get(key, _MISS)
    if entry is _MISS or entry is _SEEN:
        # Planned on the second call (a one-off string costs what it did), which itself
        # still runs the general path.
        if len(_FAST) >= _FAST_LIMIT:
            _FAST.clear()
        _FAST[key] = _SEEN if entry is _MISS else _plan_fast(text, nm, values, sig, out,
                                                               order)
        return _MISS
    if entry is None:
        return _MISS
    try:
        return entry(values, out, casting)
    except (ShapeError, BindError, OverflowError):
        return _MISS  # the general path gives these errors their usual form


class _FastEntry:
    """A planned program for one (text, operand kinds) and how to feed it: which operand
    each program input is and which operand each kernel parameter takes its value from."""

    def __init__(self, prog: Any, inputs: dict, recipe: list, exps: tuple):
        from lazyk import pipeline

        self.prog, self.inputs, self.recipe, self.exps = prog, inputs, recipe, exps
        self.dtype = prog.dtype
        self.dispatch = None
        self.order: tuple = ()
        step = prog.steps[0]
        # A full reduction (every axis, no mean) folds into a 0-d output: one kernel too.
        self.reduce = step.axes is not None
        self.keepdims = step.keepdims
        if (len(prog.steps) == 1 and not step.mean
                and pipeline._backend() is not None
                and all(isinstance(r, str) for r in step.inputs)):
            from lazyk.kernel import Dispatcher

            self.order = tuple(inputs[r] for r in step.inputs)
            self.dispatch = Dispatcher(step.spec, step.consts)
        self._run = pipeline.run_program
        self._thread_min = pipeline._THREAD_MIN

    def __call__(self, values: list, out: Any, casting: str) -> Any:
        prog = self.prog
        if self.exps:
            for k in self.exps:
                x = values[k]
                if isinstance(x, np.ndarray) and x.size and (x < 0).any():
                    from lazyk.expr import NEGATIVE_INT_POWER

                    raise ValueError(NEGATIVE_INT_POWER)
        consts = None
        if self.recipe:  # the scalar operands' values, written per call
            consts = []
            for k, slots in self.recipe:
                blob = bytearray(prog.steps[k].consts)
                for slot, j, dt in slots:
                    blob[16 * slot:16 * slot + 16] = _as_param(values[j], dt)
                consts.append((k, bytes(blob)))
        d = self.dispatch
        if d is not None:
            arrays = [values[k] for k in self.order]
            o = None
            if out is None:
                shape = arrays[0].shape
                for a in arrays:
                    if a.shape != shape:
                        shape = np.broadcast_shapes(*[a.shape for a in arrays])
                        break
                size = 1
                for n in shape:
                    size *= n
                if not self.reduce:
                    if size < self._thread_min:
                        o = np.empty(shape, self.dtype)
                elif 0 < size < self._thread_min and len(prog.steps[0].axes) == len(shape):
                    o = np.empty((1,) * len(shape) if self.keepdims else (), self.dtype)
            elif out.dtype == self.dtype and out.size < self._thread_min and not self.reduce:
                o = out
            if o is not None:
                return d(o, *arrays) if consts is None else d.call_with(consts[0][1], o, *arrays)
        data = {name: values[k] for name, k in self.inputs.items()}
        if consts is not None:
            from dataclasses import replace

            steps = list(prog.steps)
            for k, blob in consts:
                steps[k] = replace(steps[k], consts=blob)
            prog = replace(prog, steps=tuple(steps))
        if out is None:
            return self._run(prog, data)
        return self._run(prog, data, out, casting=casting)


def _template(text: str, nm: tuple, values: list, sentinels: dict) -> tuple:
    """Plan `text` with each scalar operand k replaced by `sentinels[k]` and each array by a
    view of its own (so operands that are one object stay separate inputs)."""
    from lazyk.pipeline import _exponent_leaves, _fortran_result, canonical, plan

    local, which = {}, {}
    for k, (n, v) in enumerate(zip(nm, values)):
        if type(v) is np.ndarray:
            v = v.view()
            which[id(v)] = k
        else:
            v = sentinels.get(k, v)
        local[n] = v
    from lazyk.expr import as_expr
    from lazyk.pipeline import _env_arrays

    e = as_expr(build(text, local, {}))
    data = _env_arrays(e)
    node, data = canonical(e.node, data)
    inputs = {name: which[id(a)] for name, a in data.items()}
    exps = tuple(dict.fromkeys(inputs[n] for n in _exponent_leaves(node)))
    return plan(node), inputs, exps, node, data, _fortran_result


def _plan_fast(text: str, nm: tuple, values: list, sig: list, out: Any, order: str) -> Any:
    """A `_FastEntry` for these operand kinds, or None when the program's structure could
    depend on more than the kinds (then every call takes the general path)."""
    literals = []
    for node in compile_string(text)[1]:
        if isinstance(node, Const):
            v = node.value
            literals += [v.real, v.imag] if isinstance(v, complex) else [float(v)]
    scalars = [k for k, v in enumerate(values) if type(v) is not np.ndarray]
    sa, sb = {}, {}
    for k in scalars:
        vals = _sentinels(sig[k], literals + [float(np.real(x)) for x in
                                              list(sa.values()) + list(sb.values())], 2)
        if vals is not None:
            sa[k], sb[k] = vals
        elif sig[k][1:2] != ("=",):
            return None
    try:
        pa, inputs, exps, node, data, fortran = _template(text, nm, values, sa)
        pb = _template(text, nm, values, sb)[0]
    except Exception:  # noqa: BLE001 - the general path raises it properly
        return None
    if not pa.steps or len(pa.steps) != len(pb.steps) or pa.dtype != pb.dtype:
        return None
    if out is None:
        if order != "C" and len(pa.shape) >= 2 and fortran(order, data):
            return None
    elif out.dtype != pa.dtype:
        return None  # the general path converts inside the kernel (another program)
    recipe = []
    for k, (x, y) in enumerate(zip(pa.steps, pb.steps)):
        if (x.spec is not y.spec or x.inputs != y.inputs or x.axes != y.axes
                or x.keepdims != y.keepdims or x.mean != y.mean):
            return None
        slots = []
        for slot, dt in enumerate(x.spec.params):
            ca, cb = x.consts[16 * slot:16 * slot + 16], y.consts[16 * slot:16 * slot + 16]
            if ca == cb:
                continue  # a literal (or a special value, which is part of the key)
            try:
                src = [j for j in sa
                       if _as_param(sa[j], dt) == ca and _as_param(sb[j], dt) == cb]
            except (OverflowError, ValueError, TypeError):
                return None
            if len(src) != 1:
                return None  # a value computed from a scalar (folded): no recipe for it
            slots.append((slot, src[0], dt))
        if slots:
            recipe.append((k, slots))
    return _FastEntry(pa, inputs, recipe, exps)


_names_of: dict = {}
