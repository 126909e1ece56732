"""A differential fuzzer: random expressions over random ragged and missing-value data,
lazyk against the plain-Python reference `tests/ragged_reference.py`.

Hypothesis draws a layout (fixed, `var`, `?var` dims, `?T` leaves, int / float / bool
leaves), one to three operands of one row structure (each with its own dtype, values,
missing values, missing rows and length-1 rows that broadcast), NumPy arrays and scalars
that broadcast against them, sometimes a view of every operand (`x[1:]`, `x[::-1]`,
`x[:, 1:]`, `x[:, ::-1]`), and an expression tree of depth 1-4: arithmetic, comparisons,
`& | ~` on bools, unary math (domains guarded), `where`, reductions over random axes with
`keepdims`, `skipna`, `initial`, and reductions feeding more elementwise work
(`x - x.mean(axis=-1, keepdims=True)`). Each expression runs directly, through
`lazyk.compile` with placeholders of the operands' types, and through `bind()` where the
compiled expression binds; every answer must be the reference's (values, NaN equal,
dtype, result type, missing state), or, where the reference raises, a clear lazyk error.
A refusal (NotSupportedError) where the reference computes is allowed and counted.

CI runs a small number of examples; a long local run:
    LAZYK_EXPRFUZZ_EXAMPLES=3000 python -m pytest -s -p no:cacheprovider \
        tests/test_ragged_exprfuzz.py
prints the refused forms at the end.
"""
from __future__ import annotations

import collections
import math
import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import lazyk
from lazyk import errors as E
from tests import ragged_reference as R
from tests import ragged_strategies as S
from tests.test_ragged_bind import make_out
from tests.test_ragged_reference import same

EXAMPLES = int(os.environ.get("LAZYK_EXPRFUZZ_EXAMPLES", "40"))
LAYOUTS = S.LAYOUTS + S.QNEST_LAYOUTS + S.QVAR_LAYOUTS + ("N * var * 4 * T", "N * 1 * var * T")
REFUSED: collections.Counter = collections.Counter()
KNOWN: collections.Counter = collections.Counter()  # known differences (see their notes)
OUTCOMES: collections.Counter = collections.Counter()  # direct calls: answered, raised, ...
LAZYK_ERRORS = tuple(v for v in vars(E).values() if isinstance(v, type) and
                     issubclass(v, Exception) and v.__module__ == E.__name__)


@pytest.fixture(scope="module", autouse=True)
def _refusal_summary():
    yield
    if "LAZYK_EXPRFUZZ_EXAMPLES" in os.environ:
        print(f"\noutcomes: {dict(OUTCOMES)}", file=sys.stderr)
        for form_, n in KNOWN.most_common():
            print(f"  known  {n:5d}  {form_}", file=sys.stderr)
        print(f"refused forms ({sum(REFUSED.values())}):", file=sys.stderr)
        for form, n in REFUSED.most_common(40):
            print(f"  {n:5d}  {form}", file=sys.stderr)


# ---------------------------------------------------------------- operands
CONSTS = [2, -1, 0, 3, 0.5, -2.5, 1.0, np.float32(1.5), np.int32(2), np.int64(-3),
          np.float64(0.25), True]


@st.composite
def operands(draw):
    """(array operands, NumPy operands, ndim): 1-3 lazyk arrays of one row structure and
    0-1 NumPy arrays of lower or equal rank that broadcast against them (or sometimes not)."""
    if draw(st.integers(0, 4)) == 0:  # long last rows: the folds' window paths
        t, d = draw(S.long_rows())
        dims, sk = t.split(" * ")[:-1], _skeleton_of(d)
    else:
        dims, _, _ = draw(S.layout_types(LAYOUTS, S.DTYPES))
        sk = S.skeleton(draw, [d.lstrip("?") for d in dims])
    arrays = []
    for _ in range(draw(st.integers(1, 3))):
        dtype = draw(st.sampled_from(S.DTYPES))
        leaf_option = draw(st.booleans())
        mine = [d if not d.startswith("?") or draw(st.booleans()) else d[1:] for d in dims]
        data = S.fill(draw, sk, dtype, leaf_option, draw(st.booleans()), 0, len(dims))
        if draw(st.booleans()):
            data = S._shrink_rows(draw, data, dims)
        data = S._drop_rows(draw, data, mine)
        arrays.append((S.type_string(mine, dtype, leaf_option), data))
    nps = []
    if draw(st.integers(0, 2)) == 0:
        rank = draw(st.integers(1, len(dims)))
        shape = []
        for d in dims[len(dims) - rank:]:
            d = d.lstrip("?")
            shape.append(draw(st.sampled_from([int(d), 1])) if d.isdigit() else
                         draw(st.sampled_from([1, 1, 2])))
        dtype = draw(st.sampled_from(S.DTYPES))
        n = int(np.prod(shape))
        vals = [S._leaf(draw, dtype, False) for _ in range(n)]
        nps.append(np.array(vals, dtype=dtype).reshape(shape))
    if arrays[0][1] and draw(st.integers(0, 3)) == 0:
        # a ragged operand of lower rank: the first one's first element (rows that line
        # up with the inner dims of the others, or raise ShapeError where they do not)
        t, d = arrays[0]
        inner = t.split(" * ", 1)[1]
        if d[0] is not None and not inner.startswith("?"):
            inner = inner if not inner.startswith("var") else f"{len(d[0])} * " + \
                inner.split(" * ", 1)[1]
            if " * " in inner:
                arrays.append((inner, d[0]))
    if len(dims) > 1 and draw(st.integers(0, 5)) == 0:
        # an operand of its own row structure (mostly a ShapeError, or rows of 1)
        t, d = draw(S.ragged(layouts=(" * ".join(d.lstrip("?") if i == 0 else d
                                                  for i, d in enumerate(dims)) + " * T",)))
        arrays.append((t, d))
    return arrays, nps, len(dims)


def _skeleton_of(data):
    """The row structure of nested lists, leaves None (as `S.skeleton` draws them)."""
    return [_skeleton_of(x) for x in data] if isinstance(data, list) else None


VIEWS = {"[1:]": (0, slice(1, None)), "[::-1]": (0, slice(None, None, -1)),
         "[:, 1:]": (1, slice(1, None)), "[:, ::-1]": (1, slice(None, None, -1))}


def _sliced(data, depth, item):
    if data is None:
        return None
    if depth == 0:
        return data[item]
    return [_sliced(x, depth - 1, item) for x in data]


# ---------------------------------------------------------------- expression trees
# A tree is a tuple: ("arg", i) | ("const", v) | ("un", name, a) | ("bin", name, a, b) |
# ("where", c, a, b) | ("red", op, a, axis, keepdims, skipna, initial) |
# ("center", op, a, axis, skipna): a - op(a, axis, keepdims=True).
ARITH = ["add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "power"]
CMP = ["greater", "less", "equal", "not_equal", "greater_equal", "less_equal"]
UNARY = ["negative", "absolute", "sqrt_abs", "exp", "log_abs1"]
SYMBOL = {"add": "+", "subtract": "-", "multiply": "*", "true_divide": "/",
          "floor_divide": "//", "remainder": "%", "power": "**", "greater": ">", "less": "<",
          "equal": "==", "not_equal": "!=", "greater_equal": ">=", "less_equal": "<=",
          "bitwise_and": "&", "bitwise_or": "|"}


class Gen:
    """Draws typed trees: each draw returns (tree, ndim, is_bool)."""

    def __init__(self, data, leaves, n_arrays):
        self.data, self.n_arrays = data, n_arrays
        self.leaves = leaves  # (index, ndim, is_bool)

    def draw(self, s):
        return self.data.draw(s)

    def leaf(self, want_bool=None):
        pool = [x for x in self.leaves if want_bool is None or x[2] == want_bool]
        if not pool:
            if want_bool:
                return None
            pool = self.leaves
        # lazyk arrays (nd of the layout) three times as often as NumPy operands
        pool = pool + [x for x in pool if x[0] < self.n_arrays] * 2
        i, nd, b = self.draw(st.sampled_from(pool))
        return ("arg", i), nd, b

    def any(self, depth):
        return self.boolean(depth) if self.draw(st.integers(0, 3)) == 0 else self.num(depth)

    def num(self, depth, top=False):
        if depth <= 1 or (not top and self.draw(st.integers(0, 4)) == 0):
            return self.leaf(self.draw(st.sampled_from([False, False, False, None])))
        kind = self.draw(st.sampled_from(["un", "bin", "bin", "const", "where", "red", "red",
                                          "center"]))
        if kind == "un":
            a, nd, b = self.num(depth - 1)
            return ("un", self.draw(st.sampled_from(UNARY)), a), nd, False
        if kind in ("bin", "const"):
            op = self.draw(st.sampled_from(ARITH))
            a, nda, _ = self.num(depth - 1)
            if op == "power":  # integer powers of negative exponents raise in NumPy
                k = self.draw(st.sampled_from([0, 1, 2, 3, 0.5, 2.0]))
                return ("bin", op, a, ("const", k)), nda, False
            if kind == "const":
                c = ("const", self.draw(st.sampled_from(CONSTS)))
                return (("bin", op, a, c) if self.draw(st.booleans())
                        else ("bin", op, c, a)), nda, False
            b, ndb, _ = self.any(depth - 1)
            return ("bin", op, a, b), max(nda, ndb), False
        if kind == "where":
            c, ndc, _ = self.boolean(depth - 1)
            a, nda, _ = self.num(depth - 1)
            if self.draw(st.booleans()):
                b, ndb = ("const", self.draw(st.sampled_from(CONSTS))), 0
            else:
                b, ndb, _ = self.num(depth - 1)
            return ("where", c, a, b), max(ndc, nda, ndb), False
        if kind == "red":
            return self.reduction(depth, self.draw(st.sampled_from(
                ["sum", "prod", "min", "max", "mean", "count"])))
        a, nd, _ = self.num(depth - 1)
        if nd == 0:
            return a, nd, False
        op = self.draw(st.sampled_from(["mean", "sum", "max", "min"]))
        axis = self.draw(st.sampled_from([-1, -1, 0, None] + ([1] if nd > 2 else [])))
        return ("center", op, a, axis, self.draw(st.booleans())), nd, False

    def reduction(self, depth, op):
        a, nd, _ = (self.boolean if op in ("any", "all") else self.any)(depth - 1)
        if nd == 0:
            return a, nd, op in ("any", "all")
        axis, keepdims = self.draw(S.reduce_args(nd))
        skipna = self.draw(st.booleans())
        initial = self.draw(st.sampled_from([None, None, -1, 0, 2])) \
            if op in ("min", "max") else None
        n = nd if keepdims else 0 if axis is None else \
            nd - (1 if isinstance(axis, int) else len(axis))
        return ("red", op, a, axis, keepdims, skipna, initial), n, op in ("any", "all")

    def boolean(self, depth, top=False):
        if depth <= 1 or (not top and self.draw(st.integers(0, 4)) == 0):
            got = self.leaf(True)
            if got is not None and self.draw(st.booleans()):
                return got
            a, nd, _ = self.leaf()
            return ("bin", self.draw(st.sampled_from(CMP)), a,
                    ("const", self.draw(st.sampled_from([0, 1, 0.5, -1])))), nd, True
        kind = self.draw(st.sampled_from(["cmp", "cmp", "logic", "not", "red", "where"]))
        if kind == "cmp":
            a, nda, _ = self.num(depth - 1)
            b, ndb, _ = self.any(depth - 1)
            return ("bin", self.draw(st.sampled_from(CMP)), a, b), max(nda, ndb), True
        if kind == "logic":
            a, nda, _ = self.boolean(depth - 1)
            b, ndb, _ = self.boolean(depth - 1)
            op = self.draw(st.sampled_from(["bitwise_and", "bitwise_or"]))
            return ("bin", op, a, b), max(nda, ndb), True
        if kind == "not":
            a, nd, _ = self.boolean(depth - 1)
            return ("un", "invert", a), nd, True
        if kind == "where":
            c, ndc, _ = self.boolean(depth - 1)
            a, nda, _ = self.boolean(depth - 1)
            b, ndb, _ = self.boolean(depth - 1)
            return ("where", c, a, b), max(ndc, nda, ndb), True
        return self.reduction(depth, self.draw(st.sampled_from(["any", "all"])))


def show(t, names) -> str:
    """The tree as the Python a user would write."""
    k = t[0]
    if k == "arg":
        return names[t[1]]
    if k == "const":
        return repr(t[1])
    if k == "un":
        a = show(t[2], names)
        return {"negative": f"(-{a})", "invert": f"(~{a})", "absolute": f"abs({a})",
                "sqrt_abs": f"sqrt(abs({a}))", "exp": f"exp({a})",
                "log_abs1": f"log(abs({a}) + 1)"}[t[1]]
    if k == "bin":
        return f"({show(t[2], names)} {SYMBOL[t[1]]} {show(t[3], names)})"
    if k == "where":
        return f"where({', '.join(show(x, names) for x in t[1:])})"
    if k == "red":
        _, op, a, axis, keepdims, skipna, initial = t
        kw = [f"axis={axis}"] + (["keepdims=True"] if keepdims else []) + \
            (["skipna=True"] if skipna and op != "count" else []) + \
            ([f"initial={initial}"] if initial is not None else [])
        if op == "count":
            return f"count({show(a, names)}, {', '.join(kw)})"
        return f"{show(a, names)}.{op}({', '.join(kw)})"
    _, op, a, axis, skipna = t
    s = show(a, names)
    return f"({s} - {s}.{op}(axis={axis}, keepdims=True{', skipna=True' if skipna else ''}))"


def args_of(t):
    """The operand indices a tree reads."""
    if t[0] == "arg":
        yield t[1]
    for x in t[1:]:
        if isinstance(x, tuple) and x and isinstance(x[0], str):
            yield from args_of(x)


def form(t) -> str:
    """The tree's shape without values: what a refusal is counted under."""
    k = t[0]
    if k in ("arg", "const"):
        return k
    if k == "un":
        return f"{t[1]}({form(t[2])})"
    if k == "bin":
        return f"{t[1]}({form(t[2])}, {form(t[3])})"
    if k == "where":
        return f"where({', '.join(form(x) for x in t[1:])})"
    if k == "red":
        return f"{t[1]}[axis={t[3]},keepdims={t[4]},skipna={t[5]},init={t[6] is not None}]" \
               f"({form(t[2])})"
    return f"center-{t[1]}[axis={t[3]}]({form(t[2])})"


# ---------------------------------------------------------------- the two interpreters
def run_lazyk(t, env):
    k = t[0]
    if k == "arg":
        return env[t[1]]
    if k == "const":
        return t[1]
    if k == "un":
        a = run_lazyk(t[2], env)
        name = t[1]
        if name == "negative":
            return -a
        if name == "invert":
            return ~a
        if name == "absolute":
            return lazyk.abs(a)
        if name == "sqrt_abs":
            return lazyk.sqrt(lazyk.abs(a))
        if name == "exp":
            return lazyk.exp(a)
        return lazyk.log(lazyk.abs(a) + 1)
    if k == "bin":
        return getattr(lazyk, t[1])(run_lazyk(t[2], env), run_lazyk(t[3], env))
    if k == "where":
        return lazyk.where(*(run_lazyk(x, env) for x in t[1:]))
    if k == "red":
        _, op, a, axis, keepdims, skipna, initial = t
        a = run_lazyk(a, env)
        if op == "count":
            return lazyk.count(a, axis=axis, keepdims=keepdims)
        kw = {"initial": initial} if initial is not None else {}
        return getattr(lazyk, op)(a, axis=axis, keepdims=keepdims, skipna=skipna, **kw)
    _, op, a, axis, skipna = t
    a = run_lazyk(a, env)
    return a - getattr(lazyk, op)(a, axis=axis, keepdims=True, skipna=skipna)


def run_ref(t, env):
    k = t[0]
    if k == "arg":
        return env[t[1]]
    if k == "const":
        return t[1]
    if k == "un":
        a = run_ref(t[2], env)
        name = t[1]
        if name in ("negative", "invert", "absolute", "exp"):
            return R.elementwise(name, a)
        if name == "sqrt_abs":
            return R.elementwise("sqrt", R.elementwise("absolute", a))
        return R.elementwise("log", R.elementwise("add", R.elementwise("absolute", a), 1))
    if k == "bin":
        return R.elementwise(t[1], run_ref(t[2], env), run_ref(t[3], env))
    if k == "where":
        return R.where(*(run_ref(x, env) for x in t[1:]))
    if k == "red":
        _, op, a, axis, keepdims, skipna, initial = t
        return R.reduce(op, run_ref(a, env), axis, keepdims, skipna and op != "count",
                        initial)
    _, op, a, axis, skipna = t
    a = run_ref(a, env)
    return R.elementwise("subtract", a, R.reduce(op, a, axis, True, skipna))


# ---------------------------------------------------------------- comparing answers
def as_array(got):
    got = got.eval() if isinstance(got, lazyk.Expr) else got
    return got if isinstance(got, lazyk.Array) else lazyk.array(got)


def close(a, b, rel) -> bool:
    """`same` with an absolute tolerance too: float32 sums in another order differ in
    their last bits, and a difference of nearly equal values (`x - x.mean()`) makes
    those bits large relative to the result."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b or \
            math.isclose(a, b, rel_tol=rel, abs_tol=rel / 10)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y, rel) for x, y in zip(a, b))
    return same(a, b)


def same_answer(got, want_type: str, want_data) -> str | None:
    """None when `got` (a lazyk Array) is the answer, else what differs."""
    if str(got.type) != want_type:
        return f"type {got.type} != {want_type}"
    data = got.to_list()
    if not close(data, want_data, 1e-4 if got.type.dtype == np.float32 else 1e-6):
        return f"values {data!r} != {want_data!r}"
    return None


def ref_raises_alike(ref_err, err) -> bool:
    """lazyk's error where the reference raised `ref_err`: a lazyk error, or NumPy's
    ValueError for a min / max of nothing (lazyk raises ValueError there, as NumPy)."""
    if isinstance(err, LAZYK_ERRORS):
        return not isinstance(err, E.CompileError)
    return type(err) is ValueError and "identity" in str(err) and "identity" in str(ref_err)


def attempt(fn):
    """(answer, None) or (None, exception)."""
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001 - judged by the caller
        return None, e


# ---------------------------------------------------------------- the fuzzer
@st.composite
def cases(draw):
    arrays, nps, nd = draw(operands())
    view = draw(st.sampled_from([None, None, None] + [v for v in VIEWS
                                                      if VIEWS[v][0] < nd]))
    # sometimes several threads over tiny parts (the kernel's split of level-0 rows)
    return arrays, nps, nd, view, draw(st.sampled_from([None, None, 2, 3]))


COLLECT = os.environ.get("LAZYK_EXPRFUZZ_COLLECT")  # a file: log failures, do not stop


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.generate] if COLLECT else list(Phase))
@given(cases(), st.data())
def test_random_expressions_match_the_reference(case, data):
    threads = case[-1]
    old = lazyk.get_num_threads(), lazyk.kernel.nest.MIN_PART
    if threads:
        lazyk.set_num_threads(threads)
        lazyk.kernel.nest.MIN_PART = 2
    try:
        if not COLLECT:
            return check_case(case[:-1], data)
        try:
            check_case(case[:-1], data)
        except AssertionError as e:
            with open(COLLECT, "a") as f:
                f.write(f"threads={threads}: {e}\n====\n")
    finally:
        lazyk.set_num_threads(old[0])
        lazyk.kernel.nest.MIN_PART = old[1]


def check_case(case, data):
    arrays, nps, nd, view = case
    if any(d is None for _, d in arrays):
        view = None  # a missing array (`?var * T`) has no rows to slice
    lz_env, ref_env, leaves, names, types = [], [], [], [], []
    for i, (t, d) in enumerate(arrays):
        a = lazyk.array(d, type=t)
        if view is not None and t.count(" * ") == nd:
            depth, item = VIEWS[view]
            a = a[(slice(None),) * depth + (item,)]
            d = _sliced(d, depth, item)
            assert same(a.to_list(), d)
        lz_env.append(a)
        ref_env.append(R.array(d, str(a.type)))
        leaves.append((i, t.count(" * "), t.endswith("bool")))
        names.append(f"x{i}")
        types.append(str(a.type))
    for j, arr in enumerate(nps):
        i = len(lz_env)
        lz_env.append(arr)
        rt = " * ".join([str(n) for n in arr.shape] + [arr.dtype.name])
        ref_env.append(R.array(arr.tolist(), rt))
        leaves.append((i, arr.ndim, arr.dtype == np.bool_))
        names.append(f"n{j}")
        types.append(rt)
    gen = Gen(data, leaves, len(arrays))
    depth = data.draw(st.sampled_from([2, 3, 3, 4, 4, 1]))
    tree, _, _ = (gen.boolean if data.draw(st.integers(0, 3)) == 0 else gen.num)(depth, True)
    if tree[0] == "arg":
        tree = ("bin", "add", tree, ("const", 1))
    text = show(tree, names)
    inputs = "; ".join(f"{n} = lazyk.array({d!r}, type='{t}')"
                       f"{view if view and t.count(' * ') == nd else ''}"
                       for n, (t, d) in zip(names, arrays)) + \
        "".join(f"; {names[len(arrays) + j]} = np.array({a.tolist()!r}, "
                f"dtype='{a.dtype}')" for j, a in enumerate(nps))
    where = f"\n  {inputs}\n  {text}"

    want, ref_err = attempt(lambda: run_ref(tree, ref_env))
    got, err = attempt(lambda: as_array(run_lazyk(tree, lz_env)))
    direct = check_outcome("direct", tree, want, ref_err, got, err, where)
    OUTCOMES[direct or "answered"] += 1
    if os.environ.get("LAZYK_EXPRFUZZ_SHOW"):
        print(f"{direct or 'answered'}:{where}", file=sys.stderr)

    # the same expression compiled over placeholders of the operands' types
    ph = [lazyk.placeholder(n, symbolic(t, types[0]) if i < len(arrays) else t)
          for i, (n, t) in enumerate(zip(names, types))]
    used = set(args_of(tree))
    kw = {n: v for i, (n, v) in enumerate(zip(names, lz_env)) if i in used}
    k, cerr = attempt(lambda: lazyk.compile(run_lazyk(tree, ph)))
    if cerr is not None:
        if isinstance(cerr, E.NotSupportedError):
            REFUSED["compile: " + form(tree)] += 1
            return
        assert direct == "raised" and isinstance(cerr, LAZYK_ERRORS), \
            f"compile raised {cerr!r}{where}"
        return
    got2, err2 = attempt(lambda: as_array(k(**kw)))
    check_outcome("compiled", tree, want, ref_err, got2, err2, where)
    if direct is not None or want is None or not want.type.dims:
        return
    if err2 is None and got is not None:
        assert same_answer(got2, str(got.type), got.to_list()) is None, \
            f"compiled call != direct call{where}"
    out = make_out(want)
    bound, berr = attempt(lambda: k.bind(out, **kw))
    if berr is not None:
        assert isinstance(berr, (E.NotSupportedError, E.BindError)), \
            f"bind raised {berr!r}{where}"
        REFUSED[f"bind ({type(berr).__name__}): " + form(tree)] += 1
        return
    res, rerr = attempt(bound)
    assert rerr is None, f"bound call raised {rerr!r}{where}"
    assert res is out
    if isinstance(out, np.ndarray):  # a fixed result: NumPy out
        diff = None if out.dtype == want.type.dtype and \
            close(out.tolist(), want.data, 1e-4 if out.dtype == np.float32 else 1e-6) \
            else f"{out.dtype} {out.tolist()!r} != {want.type} {want.data!r}"
    else:
        diff = same_answer(out, str(want.type), want.data)
    assert diff is None, f"bound call: {diff}{where}"


def symbolic(t: str, first: str) -> str:
    """A placeholder type: an outermost fixed dim the size of the first operand's and
    of its rank becomes the symbol N (a dim of the signature, bound at the call)."""
    head, _, rest = t.partition(" * ")
    same = head == first.partition(" * ")[0] and t.count(" * ") == first.count(" * ")
    return f"N * {rest}" if head.isdigit() and same else t


def missing_fixed_rows(want) -> bool:
    """Whether every row of the reference answer at its first `?n` dim is missing.

    Known limit: a `?var` row against a fixed dim of n (`?n` result rows) still runs its
    n elements, so the rows of the other operands under it are checked against the
    fixed dims below (ShapeError), where the reference, finding the row missing, looks
    no further. It only shows where every such row is missing (a present one pairs the
    same rows of the other operands)."""
    dims = want.type.dims
    at = next((k for k, d in enumerate(dims) if d.option and not d.var), None)
    if at is None:
        return False

    def rows(x, level):
        if x is None or level == at:
            return [x]
        return [r for v in x for r in rows(v, level + 1)]
    return all(r is None for r in rows(want.data, 0))


def check_outcome(how, tree, want, ref_err, got, err, where) -> str | None:
    """Assert lazyk's outcome against the reference's; returns 'refused' / 'raised' or None
    when lazyk answered."""
    if ref_err is not None:
        assert err is not None, f"{how}: lazyk answered {got!r}; the reference raises " \
                                f"{ref_err!r}{where}"
        assert ref_raises_alike(ref_err, err), \
            f"{how}: lazyk raised {err!r}; the reference raises {ref_err!r}{where}"
        return "raised"
    if err is not None:
        if isinstance(err, E.ShapeError) and "the fixed dim" in str(err) and \
                missing_fixed_rows(want):
            KNOWN[f"{how}: ShapeError under missing ?n rows: {form(tree)}"] += 1
            return "known"
        if isinstance(err, E.NotSupportedError) and not isinstance(err, E.DTypeError):
            REFUSED[f"{how}: {form(tree)}: {str(err)[:120]}"] += 1
            return "refused"
        raise AssertionError(f"{how}: lazyk raised {err!r}; the reference gives "
                             f"{want.type} {want.data!r}{where}") from err
    diff = same_answer(got, str(want.type), want.data)
    assert diff is None, f"{how}: {diff}{where}"
    return None


# ---------------------------------------------------------------- what the fuzzer found
SYMBOL_FORMS = {
    "x - x.sum(axis=-1)": (lambda x: x - x.sum(axis=-1),
                           lambda r: R.elementwise("subtract", r, R.reduce("sum", r, -1))),
    "where(x > 1, x, x.prod(axis=-1))": (
        lambda x: lazyk.where(x > 1, x, x.prod(axis=-1)),
        lambda r: R.where(R.elementwise("greater", r, 1), r, R.reduce("prod", r, -1)))}


@pytest.mark.parametrize("name", SYMBOL_FORMS)
def test_a_symbolic_dim_against_var_rows_compiles_as_a_fixed_one(name):
    """`N * var` against `N` (rows of N or 1, as against a concrete `3`): compiled, it
    answers as the direct call (it raised ShapeError at compile time)."""
    fn, ref = SYMBOL_FORMS[name]
    k = lazyk.compile(fn(lazyk.placeholder("x", "N * var * float64")))
    assert k.signature == "(x: N * var * float64) -> N * N * float64"
    for data in ([], [[1.0, 2.0, 3.0], [3.0], [4.0, 5.0, 6.0]]):
        x = lazyk.array(data, type=f"{len(data)} * var * float64")
        want = ref(R.array(data, str(x.type)))
        assert same_answer(k(x=x), str(want.type), want.data) is None
        assert same_answer(as_array(fn(x)), str(want.type), want.data) is None
    with pytest.raises(lazyk.ShapeError, match="has length 2, the fixed dim has length 3"):
        k(x=lazyk.array([[1.0, 2.0], [3.0], [4.0, 5.0]]))
    with pytest.raises(lazyk.ShapeError, match="do not broadcast"):  # two symbols
        lazyk.where(lazyk.placeholder("x", "N * var * float64") > 0,
                    lazyk.placeholder("m", "M * float64"), lazyk.placeholder("k", "K * float64"))


def test_bind_refuses_a_part_over_missing_rows_that_hides_other_rows():
    """`(x0 + x2) + a`: row 1 of `x0 + x2` is missing (x0's row is), so x2's empty row
    never meets a's row of 2; the call computes `x0 + x2` first and answers, where one
    bound nest pairs the three rows: bind refuses (it raised ShapeError)."""
    x0 = lazyk.array([[1.0, 2.0], None], type="2 * ?var * float64")
    x2 = lazyk.array([[1.0, 2.0], []], type="2 * var * float64")
    a = lazyk.array([[1.0, 2.0], [3.0, 4.0]], type="2 * var * float64")
    ref = R.elementwise("add", R.elementwise("add", R.array(x0.to_list(), "2 * ?var * float64"),
                                             R.array(x2.to_list(), "2 * var * float64")),
                        R.array(a.to_list(), "2 * var * float64"))
    ps = [lazyk.placeholder(n, str(v.type)) for n, v in (("x", x0), ("y", x2), ("z", a))]
    k = lazyk.compile((ps[0] + ps[1]) + ps[2])
    for got in (((x0 + x2) + a).eval(), k(x0, x2, a)):
        assert same_answer(got, str(ref.type), ref.data) is None
    out = make_out(ref)
    with pytest.raises(lazyk.NotSupportedError, match=r"bind\(\).*row 1.*call the compiled"):
        k.bind(out, x0, x2, a)
    # rows that do not line up in a part without missing rows still raise ShapeError
    k2 = lazyk.compile(ps[0] + (ps[1] + ps[2]))
    with pytest.raises(lazyk.ShapeError):
        k2.bind(out, x0, x2, a)
