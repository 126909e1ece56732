"""What a new user met trying explain(), records and per-row arrays: explain() of a string
where() and of ragged parameters prints what runs and the declared types; record fields named
like array attributes; new axes of size 1 on lazy expressions (`e[:, None]`)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lazyk
from lazyk.frontend.expr import as_expr
from tests import ragged_reference as R
from tests.ragged_strategies import LAYOUTS, NUMERIC, QNEST_LAYOUTS, QVAR_LAYOUTS, ragged
from tests.test_ragged_onepath import check


def run_cli(*args):
    code = "import sys; from lazyk.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, timeout=120)


# ------------------------------------------------------------------ explain
def test_explain_string_where_shows_the_numeric_selection():
    s = lazyk.array(["fig", "kiwi"])
    e = lazyk.where(s == "fig", s, "o")
    text = e.explain()
    assert "where() over strings: 1" in text and "characters are not copied" in text
    assert "begin addresses" in text and "sizes" in text
    assert "text_equal" in text and "LLVM IR" in text  # the comparison kernel itself
    assert e.eval().to_list() == ["fig", "o"]


def test_explain_cli_string_where_over_a_parameter():
    r = run_cli("explain", "where(s == 'kiwi', s, 'x')", "--type", "s=N * string",
                "--no-ir", "--no-asm")
    assert r.returncode == 0, r.stderr
    assert "expression over (s: N * string) -> N * string" in r.stdout
    assert "where() over strings: 1" in r.stdout


def test_explain_prints_the_declared_types():
    a = lazyk.placeholder("a", "N * ?var * ?float64")
    e = lazyk.sum(a, axis=-1, skipna=True)
    sig = lazyk.compile(e).signature
    assert sig == "(a: N * ?var * ?float64) -> N * ?float64"
    head = e.explain().split("\n")[0]
    assert head.startswith("== ragged expression over (a: N * ?var * ?float64) -> "
                           "N * ?float64")
    assert lazyk.compile(e).explain().split("\n")[0] == head
    text = e.explain()
    assert "%0 = input a : N * ?var * ?float64" in text
    assert "?var rows" in text  # the sample data has missing rows, as declared
    r = run_cli("explain", "sum(a, axis=-1, skipna=True)", "--type", "a=N * ?var * ?float64",
                "--no-ir", "--no-asm")
    assert r.returncode == 0, r.stderr
    assert "(a: N * ?var * ?float64) -> N * ?float64" in r.stdout
    assert "8 * var" not in r.stdout.split("\n")[0]


def test_explain_shows_reduction_options():
    x = lazyk.array([[1.0, None], [], [3.0]])
    on, off = x.sum(axis=-1, skipna=True).explain(), x.sum(axis=-1).explain()
    assert "sum axes=[1] keepdims=False skipna=True" in on
    assert "sum axes=[1] keepdims=False skipna=False" in off
    m = x.max(axis=-1, initial=0.5).explain()
    assert "initial=0.5" in m
    f = as_expr(np.ones((2, 3))).mean(axis=1, keepdims=True).explain()
    assert "mean axes=[1] keepdims=True skipna=False" in f


def test_explain_one_input_per_array_and_no_contradiction():
    x = lazyk.array([[1.0, 2.0], [3.0]])
    text = (x - x.mean(axis=-1, keepdims=True)).explain()
    lines = text.split("\n")
    assert sum(" = input " in ln for ln in lines[:6]) == 1, lines[:6]
    assert "one loop nest takes it whole" not in text
    assert "loop-nest kernels: 2" in text  # the mean, then the map (rows as x's: no count)
    y = np.arange(6.0).reshape(2, 3)
    e = as_expr(y)
    fixed = (e - e.mean(axis=-1, keepdims=True))
    assert len(fixed.env) == 1
    np.testing.assert_allclose(fixed.eval(), y - y.mean(axis=-1, keepdims=True))
    ya = lazyk.array(y)
    assert len((ya * ya + ya).env) == 1
    assert len((ya + lazyk.array(y)).env) == 1  # (another lazyk array over y: one input)
    assert len((ya + lazyk.array(y.copy())).env) == 2  # another array: another input


# ------------------------------------------------------------------ records
def test_record_fields_named_like_array_attributes():
    pa = pytest.importorskip("pyarrow")
    r = lazyk.from_arrow(pa.table({"type": ["a", "b"], "min": [1.0, 2.0],
                                   "meta": [5.0, 6.0], "shape": [1, 2]}))
    assert r["type"].to_list() == ["a", "b"]
    assert (r["min"] + 1).eval().to_list() == [2.0, 3.0]
    assert (r["meta"] * r["shape"]).eval().to_list() == [5.0, 12.0]
    assert r.ndim == 1 and str(r.type).startswith("2 * {")  # attributes stay attributes
    with pytest.raises(lazyk.NotSupportedError) as err:
        r + 1
    assert "r['type'] + 1" in str(err.value)  # a hint that works
    assert (eval("r['type'] == 'a'", {"r": r})).eval().to_list() == [True, False]


# ------------------------------------------------------------------ new axes
def test_per_row_array_against_a_var_dim():
    x = lazyk.array([[1.0, 2.0, 3.0], [4.0], [5.0, 6.0, 7.0]])
    w = np.array([10.0, 20.0, 30.0])
    assert (x * w).eval().to_list() == [[10, 40, 90], [40, 80, 120], [50, 120, 210]]
    want = [[10, 20, 30], [80], [150, 180, 210]]
    assert (x * w[:, None]).eval().to_list() == want
    assert (x * as_expr(w)[:, None]).eval().to_list() == want
    assert (x * (as_expr(w) + 0)[:, None]).eval().to_list() == want
    assert (x - x.mean(axis=-1)[:, None]).eval().to_list() == [[-1, 0, 1], [0], [-1, 0, 1]]


KEYS = [(slice(None), None), (None,), (Ellipsis, None), (None, Ellipsis, None),
        (slice(None),), (Ellipsis,), (None, slice(None), None, slice(None))]


@given(st.lists(st.integers(0, 3), min_size=0, max_size=3), st.sampled_from(KEYS),
       st.sampled_from(["elementwise", "reduce", "keepdims", "all", "broadcast"]))
def test_new_axes_match_numpy(shape, key, form):
    a = np.arange(float(np.prod(shape, dtype=int))).reshape(shape) - 2
    e, ref = as_expr(a), a
    if form == "elementwise":
        e, ref = e * 2 + 1, ref * 2 + 1
    elif form == "reduce" and a.ndim:
        e, ref = e.sum(axis=0), ref.sum(axis=0)
    elif form == "keepdims" and a.ndim:
        e, ref = e.max(axis=-1, keepdims=True, initial=-9.0), \
            ref.max(axis=-1, keepdims=True, initial=-9.0)
    elif form == "all":
        e, ref = e.sum(), ref.sum()
    elif form == "broadcast" and a.ndim:
        e, ref = e + as_expr(a[-1:]) * 3, ref + a[-1:] * 3
    if sum(k is not None and k is not Ellipsis for k in key) > ref.ndim:
        with pytest.raises(TypeError, match="new axes, whole dims"):
            e[key]
        return
    got = np.asarray(e[key].eval())
    want = np.asarray(ref)[key]
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def new_axis_ref(ref, at):
    dims = str(ref.type).split(" * ")
    return R.array(R._wrap(ref.data, at), " * ".join(dims[:at] + ["1"] + dims[at:]))


@given(ragged(layouts=LAYOUTS + QVAR_LAYOUTS + QNEST_LAYOUTS, dtypes=NUMERIC), st.data())
def test_new_axes_on_ragged_expressions(case, data):
    t, d = case
    x, rx = lazyk.array(d, type=t), R.array(d, t)
    form = data.draw(st.sampled_from(["elementwise", "reduce", "keepdims"]))
    if form == "elementwise":
        e, ref = x + x, R.elementwise("add", rx, rx)
    elif form == "keepdims":  # the last axis, kept: then a new axis anywhere
        e = x.sum(axis=-1, skipna=True, keepdims=True)
        ref = R.reduce("sum", rx, axis=-1, skipna=True, keepdims=True)
        at = data.draw(st.integers(0, ref.type.ndim))
        key = (slice(None),) * at + (None, Ellipsis)
        if t.startswith("?") or (t.split(" * ")[-2].startswith("?") and at == ref.type.ndim):
            with pytest.raises(lazyk.NotSupportedError):
                e[key]
            return
        check(e[key], new_axis_ref(ref, at))
        return
    else:
        axis = data.draw(st.integers(0, rx.type.ndim - 1))
        try:
            ref = R.reduce("sum", rx, axis=axis)
        except lazyk.ShapeError:  # rows that do not fold together: no result to index
            return
        e = x.sum(axis=axis)
    at = data.draw(st.integers(0, ref.type.ndim))
    key = (slice(None),) * at + (None, Ellipsis)
    if t.startswith("?") and not (form == "reduce" and at == axis):
        # one row that may be missing: refused, naming the type (a new axis where a sum's
        # folded axis was is the sum with keepdims: computed)
        with pytest.raises(lazyk.NotSupportedError, match=r"\?var \* "):
            e[key]
        return
    check(e[key], new_axis_ref(ref, at))


def test_new_axes_on_ragged_edges():
    for d, t in (([], "0 * var * float64"), ([[]], "1 * var * float64"),
                 ([[1.0]], "1 * var * float64"), ([[1.0, None], None, []], "3 * ?var * ?float64")):
        x, rx = lazyk.array(d, type=t), R.array(d, t)
        for at in range(3):
            check((x * 2)[(slice(None),) * at + (None, Ellipsis)],
                  new_axis_ref(R.elementwise("multiply", rx, 2), at))


def test_other_indexes_of_expressions_stay_errors():
    e = as_expr(np.arange(4.0)) + 1
    for key in (0, (Ellipsis, Ellipsis), (slice(None), slice(None))):
        with pytest.raises(TypeError, match=r"new axes, whole dims, a slice of the outer rows"):
            e[key]
    assert np.asarray(e[1:3].eval()).tolist() == [2.0, 3.0]  # (outer rows: NumPy's slice)
    assert e[[3, 0]].eval().to_list() == [4.0, 1.0]  # (a list gathers, as NumPy's)
    w = lazyk.compile(lazyk.placeholder("w", "N * float64")[:, None])  # (each call's view)
    assert np.asarray(w(np.arange(2.0))).tolist() == [[0.0], [1.0]]
    s = lazyk.array(["ab", "c"])
    assert lazyk.where(s == "c", s, "zz")[:, None].eval().to_list() == [["zz"], ["c"]]


# ------------------------------------------------------------------ explain: sample data
_EXPLAIN_TEXT = """
import sys
import lazyk
kind = sys.argv[1]
if kind == "string":
    e = lazyk.placeholder("s", "N * string") == "x"
elif kind == "bytes":
    e = lazyk.placeholder("s", "N * 3 * bytes") != b"x"
else:
    e = lazyk.placeholder("s", "N * string") < lazyk.placeholder("t", "N * string")
text = e.explain()
assert "== launch 1" in text and "== assembly" in text, text[:2000]
print(text.splitlines()[0])
"""


@pytest.mark.parametrize("kind, first", [("string", "== expression: N * bool"),
                                         ("bytes", "== expression: N * 3 * bool"),
                                         ("two", "== expression: N * bool")])
def test_explain_of_fixed_string_and_bytes_placeholders(kind, first):
    # sample strings are real words now: the kernel once read address 0x1 and crashed
    r = subprocess.run([sys.executable, "-c", _EXPLAIN_TEXT, kind], capture_output=True,
                       text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == first


def test_cli_explain_of_a_string_placeholder():
    r = run_cli("explain", "s == 'x'", "--type", "s=N * string", "--no-asm")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "== expression: N * bool" in r.stdout and "text_equal" in r.stdout


def test_explain_sample_sizes_follow_concrete_operands():
    from lazyk.runtime.explain import SYMBOL_SIZE, symbol_sizes

    x = lazyk.placeholder("x", "N * float64")
    e = x + lazyk.array([1.0, 2.0])
    assert symbol_sizes(e.node) == {"N": 2}
    text = e.explain()
    assert "== expression: 2 * float64" in text and "shape (2,)" in text
    y = lazyk.placeholder("y", "M * 3 * float64")
    f = (y + lazyk.array([1.0, 2.0, 3.0])).sum(axis=0) * (x * 2.0).sum()
    assert symbol_sizes(f.node) == {"M": SYMBOL_SIZE, "N": SYMBOL_SIZE}
    assert "== expression: 3 * float64" in f.explain()
    z = lazyk.placeholder("z", "N * var * float64") + lazyk.array([1.0, 2.0, 3.0])[:, None]
    assert "-> 3 * var * float64" in z.explain()
