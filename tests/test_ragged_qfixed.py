"""`?n` arrays (missing rows against a fixed dim: `N * ?2 * T`, `N * ?0 * T`,
`var * ?3 * T`) as operands, against the reference: elementwise work, broadcasting against
fixed (NumPy) and var operands, where(), and reductions over every axis and tuple of
axes (skipna, keepdims). Values, dtypes, result types and missing state; empty arrays,
empty rows, all rows missing and length-1 rows by hand and from the strategies."""
from __future__ import annotations

import itertools

import awkward as ak
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
from tests import ragged_reference as R
from tests import ragged_strategies as S
from tests.test_ragged_qaxes import _call
from tests.test_ragged_qfull import in_nest
from tests.test_ragged_today import LAZYK_REDUCERS, RA, L, check

# `?n` dims under fixed and var dims, over and under other dims
QFIXED = ("N * ?2 * T", "N * ?0 * T", "2 * var * ?3 * T", "N * ?2 * var * T",
          "N * var * ?2 * T", "2 * ?2 * 3 * T", "N * ?2 * ?var * T",
          "N * ?1 * T", "2 * var * ?1 * T", "N * ?1 * var * T")  # (a fixed 1 there too)


def _ok(ref, got):
    """Matches the reference or raises alike (operands without `?n` dims are NumPy's)."""
    assert check(ref, got) in ("match", "raises")


def _all_axes(nd):
    return [None] + [a for k in range(1, nd + 1) for a in itertools.combinations(range(nd), k)]


@settings(max_examples=20, deadline=None)
@given(S.ragged(layouts=QFIXED, dtypes=("float64", "int32", "bool"), nan=True),
       st.sampled_from(LAZYK_REDUCERS), st.data())
def test_reductions_of_missing_rows_against_a_fixed_dim(case, op, data):
    t, d = case
    axes = data.draw(st.sampled_from(_all_axes(R.parse_type(t).ndim)))
    in_nest(*_call(op, t, d, axes, data.draw(st.booleans()), data.draw(st.booleans())))


@settings(max_examples=20, deadline=None)
@given(S.ragged_pair(layouts=QFIXED, own_rows=True, broadcast=True),
       st.sampled_from(("add", "multiply", "maximum", "greater")))
def test_missing_rows_against_a_fixed_dim_as_operands(pair, op):
    """Each operand with its own missing rows (or none: the same dims fixed, NumPy)."""
    t1, d1, t2, d2 = pair
    _ok(lambda: R.elementwise(op, RA(t1, d1), RA(t2, d2)),
            lambda: getattr(lazyk, op)(L(t1, d1), L(t2, d2)))


@settings(max_examples=12, deadline=None)
@given(S.ragged(layouts=("N * ?2 * T", "2 * var * ?3 * T", "N * ?2 * var * T", "N * ?1 * T"),
                dtypes=("float64", "int64")), st.sampled_from(["cond", "branch", "both"]))
def test_where_over_missing_rows_against_a_fixed_dim(case, which):
    t, d = case
    x, a = RA(t, d), L(t, d)
    if which == "cond":
        ref = lambda: R.where(R.elementwise("greater", x, 0), 1.0, -1.0)  # noqa: E731
        got = lambda: lazyk.where(a > 0, 1.0, -1.0)  # noqa: E731
    elif which == "branch":
        ref = lambda: R.where(R.array([True], "1 * bool"), x,  # noqa: E731
                              R.elementwise("negative", x))
        got = lambda: lazyk.where(np.array([True]), a, -a)  # noqa: E731
    else:
        ref = lambda: R.where(R.elementwise("greater", x, 0), x,  # noqa: E731
                              R.elementwise("negative", x))
        got = lambda: lazyk.where(a > 0, a, -a)  # noqa: E731
    in_nest(ref, got)


@settings(max_examples=20, deadline=None)
@given(S.ragged(layouts=("N * ?2 * T", "N * ?1 * T"), dtypes=("float64", "int32")),
       st.sampled_from(["fixed", "var", "scalar"]), st.data())
def test_broadcast_against_fixed_and_var_operands(case, kind, data):
    """A NumPy row, a scalar, or var rows of length 0-2 (1 stretches to 2; 0 raises)."""
    t, d = case
    n = R.parse_type(t).dims[0].size
    if kind == "fixed":
        b = np.arange(2.0) - 0.5
        rb = R.array(b.tolist(), "2 * float64")
    elif kind == "scalar":
        b = rb = 3
    else:
        rows = [[float(i)] * data.draw(st.sampled_from([1, 1, 2, 0, 3])) for i in range(n)]
        b, rb = L(f"{n} * var * float64", rows), RA(f"{n} * var * float64", rows)
    _ok(lambda: R.elementwise("subtract", RA(t, d), rb), lambda: L(t, d) - b)
    _ok(lambda: R.elementwise("subtract", rb, RA(t, d)), lambda: b - L(t, d))


def test_missing_rows_against_a_fixed_dim_by_hand():
    a = L("3 * ?2 * float64", [[1.0, 2.0], None, [-0.0, 4.0]])
    got = (a + 1).eval()
    assert str(got.type) == "3 * ?2 * float64" and got.to_list() == [[2.0, 3.0], None,
                                                                       [1.0, 5.0]]
    got = (-a).eval()  # a's values exactly: -(-0.0) is 0.0
    assert str(got.type) == "3 * ?2 * float64" and not np.signbit(got.to_list()[2][0])
    assert (a * a).to_list() == [[1.0, 4.0], None, [0.0, 16.0]]
    got = a.sum(axis=1).eval()
    assert str(got.type) == "3 * ?float64" and got.to_list() == [3.0, None, 4.0]
    got = a.sum(axis=0, skipna=True).eval()
    assert str(got.type) == "2 * float64" and got.to_list() == [1.0, 6.0]
    assert a.sum().to_list() is None
    assert lazyk.count(a, axis=0).to_list() == [2, 2]
    got = (a + np.arange(6.0).reshape(3, 2)).eval()
    assert got.to_list() == [[1.0, 3.0], None, [4.0, 9.0]]
    b = L("3 * ?2 * int32", [None, None, None])  # every row missing
    got = (b * 2).eval()
    assert str(got.type) == "3 * ?2 * int32" and got.to_list() == [None, None, None]
    got = b.sum(axis=0, skipna=True).eval()
    assert str(got.type) == "2 * int64" and got.to_list() == [0, 0]
    e = L("0 * ?2 * float64", [])  # an empty array
    got = (e + 1).eval()
    assert str(got.type) == "0 * ?2 * float64" and got.to_list() == []
    z = L("3 * ?0 * float64", [[], None, []])  # empty rows
    got = (z + 1).eval()
    assert str(got.type) == "3 * ?0 * float64" and got.to_list() == [[], None, []]
    assert z.sum(axis=1).to_list() == [0.0, None, 0.0]
    w = L("2 * var * ?2 * float64", [[[1.0, 2.0], None], [[3.0, 4.0]]])
    v = L("2 * var * var * float64", [[[1.0], [5.0]], [[1.0, 2.0]]])  # length-1 rows
    got = (w + v).eval()
    assert str(got.type) == "2 * var * ?2 * float64"
    assert got.to_list() == [[[2.0, 3.0], None], [[4.0, 6.0]]]
    with pytest.raises(lazyk.ShapeError):  # a row of 0 against a fixed 2
        (a + L("3 * var * float64", [[1.0], [2.0, 3.0], []])).eval()


def test_missing_rows_against_a_fixed_dim_still_refused():
    """An outermost `?n` dim."""
    with pytest.raises(lazyk.NotSupportedError, match=r"outermost"):
        (L("?3 * float64", [1.0, 2.0, 3.0]) + 1).eval()


def test_missing_rows_of_one_stretch_as_a_fixed_dim_of_one():
    q = L("3 * ?1 * float64", [None, [1.0], [2.0]])
    assert (q + 1).eval().to_list() == [None, [2.0], [3.0]]
    v = L("3 * var * float64", [[5.0, 6.0], [1.0, 2.0, 3.0], []])
    assert (q * v).eval().to_list() == [None, [1.0, 2.0, 3.0], []]
    assert (v - q).eval().to_list() == [None, [0.0, 1.0, 2.0], []]
    assert lazyk.sum(q, axis=1).eval().to_list() == [None, 1.0, 2.0]


@pytest.mark.parametrize("t, d", [("3 * ?0 * float64", [[], None, []]),
                                  ("2 * 0 * float64", [[], []]),
                                  ("2 * var * ?0 * int32", [[[], None], []]),
                                  ("2 * 2 * ?0 * 3 * float64", [[[], None], [None, None]]),
                                  ("0 * ?0 * float64", [])])
def test_to_arrow_of_rows_of_size_0(t, d):
    """Fixed-size lists of size 0, with the missing rows as nulls."""
    pa = pytest.importorskip("pyarrow")
    got = lazyk.to_arrow(L(t, d))
    assert got.to_pylist() == d
    inner = got.type
    while not pa.types.is_fixed_size_list(inner) or inner.list_size:
        inner = inner.value_type
    assert inner.list_size == 0
    r = (L("2 * ?var * float64", [[1.0], None]) + np.ones(0)).eval()  # a nest result
    assert str(r.type) == "2 * ?0 * float64"
    assert lazyk.to_arrow(r).to_pylist() == [[], None]


def test_a_missing_row_against_a_fixed_dim_pairs_with_any_row():
    """A `?n` operand's missing row pairs with a row of any length (the reference's rule);
    its present rows pair with rows of n or 1."""
    a = L("2 * ?2 * float64", [None, [1.0, 2.0]])
    b = L("2 * var * float64", [[], [1.0, 1.0]])
    for got in ((a + b).eval(), (b - a * 2).eval()):
        assert str(got.type) == "2 * ?2 * float64" and got.to_list()[0] is None
    assert (a + b).to_list() == [None, [2.0, 3.0]]
    got = lazyk.sum(a + b, axis=1).eval()
    assert str(got.type) == "2 * ?float64" and got.to_list() == [None, 5.0]
    assert ((a + b) > 2).to_list() == [None, [False, True]]
    with pytest.raises(lazyk.ShapeError):  # a present row of 2 against a row of 3
        (a + L("2 * var * float64", [[], [1.0, 1.0, 1.0]])).eval()
    # where() still pairs the fixed row with the other operands' rows under it
    with pytest.raises(lazyk.ShapeError):
        lazyk.where(a > 1, b, a).eval()


def test_parts_over_missing_rows_are_planned_from_the_types(monkeypatch):
    """Which parts run first (a missing row hides the rows it is combined with) is decided
    from the operands' types, before any nest runs: no nest raises ShapeError on the way
    to an answer, and `(xq + y) * 2`, which pairs nothing more, stays one nest."""
    from lazyk.runtime import nest_steps
    runs, raised = [], []
    one = nest_steps._evaluate_nest

    def counted(expr):
        runs.append(expr)
        try:
            return one(expr)
        except lazyk.ShapeError:
            raised.append(expr)
            raise
    monkeypatch.setattr(nest_steps, "_evaluate_nest", counted)
    xq = lazyk.array([[1.0, 2.0], None], type="2 * ?var * float64")
    y = lazyk.array([[1.0, 2.0], []], type="2 * var * float64")
    z = lazyk.array([[1.0, 2.0], [3.0, 4.0]], type="2 * var * float64")
    a = L("2 * ?2 * float64", [None, [1.0, 2.0]])
    b = L("2 * var * float64", [[], [1.0, 1.0]])
    for e, want in ((xq + y) + z, [[3.0, 6.0], None]), ((a + b), [None, [2.0, 3.0]]), \
            (lazyk.sum(a + b, axis=1), [None, 5.0]):
        assert e.eval().to_list() == want
    assert runs and not raised
    runs.clear()
    assert ((xq + y) * 2).eval().to_list() == [[4.0, 8.0], None]
    assert len(runs) == 1 and not raised
    with pytest.raises(lazyk.ShapeError):  # rows that do not line up: the user's
        (xq + (y + z)).eval()


def _counted_nests(monkeypatch) -> list:
    """The loop nests evaluated from now on (a list that grows)."""
    from lazyk.runtime import nest_steps
    runs = []
    one = nest_steps._evaluate_nest
    monkeypatch.setattr(nest_steps, "_evaluate_nest", lambda e: runs.append(e) or one(e))
    return runs


def _nested_where_operands():
    rows = [[1.0, 2.0], None, [3.0, -9.0]]
    return L("3 * ?2 * float64", rows), L("3 * 2 * float64", [[1.0, 2.0], [5.0, 6.0],
                                                                [3.0, 4.0]]), rows


def _nested_where(x, y, rows, depth):
    """`depth` nested where()s over x + y, and their value in plain Python."""
    e, want = x + y, [None if r is None else [a + b for a, b in zip(r, s)]
                      for r, s in zip(rows, y.to_list())]
    for i in range(depth):
        e = lazyk.where(e > i, e - 1, e + y)
        want = [None if r is None else [a - 1 if a > i else a + b for a, b in zip(r, s)]
                for r, s in zip(want, y.to_list())]
    return e, want


def test_nested_where_and_histograms_over_missing_fixed_rows_run_few_nests(monkeypatch):
    """where() over `?n` parts does not compute the parts it then drops: nested where()s
    over `N * ?2 * T` rows (and a histogram, whose bin search is nested where()s) ran
    every part again under each where() (4 levels: 36,240 nests, 5 levels 83 s; a histogram
    of a `?2` array 2.6 s, of `x[..., 1:]` never ending). Values against plain Python."""
    runs, x, y, rows = _counted_nests(monkeypatch), *_nested_where_operands()
    e, want = _nested_where(x, y, rows, 4)
    assert e.eval().to_list() == want == [[4.0, 3.0], None, [6.0, 6.0]]
    assert len(runs) <= 200  # (before: 36,240)
    runs.clear()
    values = [v for r in rows if r is not None for v in r]
    assert lazyk.histogram(x, 4, (-10, 10))[0].tolist() == \
        np.histogram(values, 4, (-10, 10))[0].tolist()
    tail = [r[1] for r in rows if r is not None]
    assert lazyk.histogram(x[..., 1:] + 1, 3, (-10, 10))[0].tolist() == \
        np.histogram(np.array(tail) + 1, 3, (-10, 10))[0].tolist()
    assert lazyk.histogram(x[..., 2:], 3, (-10, 10))[0].tolist() == [0, 0, 0]  # `?0` rows
    assert len(runs) <= 150  # (before: 22,000 for the first two)


def test_missing_rows_of_one_fixed_element_keep_their_fixed_dim():
    b = L("3 * ?1 * int32", [None, [1], None])
    assert str((b * 2).eval().type) == "3 * ?1 * int32"
    got = b[::2].sum(axis=0, skipna=True).eval()  # every row missing: the fold of nothing
    assert str(got.type) == "1 * int64" and got.to_list() == [0]
    x = L("3 * ?var * 1 * ?int16", [[[-3]], [], None])
    got = lazyk.var(x, axis=1, skipna=True).eval()  # an empty row: var of nothing is NaN
    assert str(got.type) == "3 * ?1 * float64" and str(got.to_list()) == "[[0.0], [nan], None]"


def test_where_parts_with_missing_fixed_rows_by_their_types_are_not_computed(monkeypatch):
    """A where() operand over `?n` rows and fixed dims only has `?n` rows by its type: it
    is dropped (one nest pairs it) without computing it first. Twelve nested where()s
    computed every part under each where() above: 858 nests, now about four per level."""
    runs, x, y, rows = _counted_nests(monkeypatch), *_nested_where_operands()
    e, want = _nested_where(x, y, rows, 12)
    assert e.eval().to_list() == want
    assert len(runs) <= 60  # (before: 858)
    v = L("3 * var * float64", [[1.0, 2.0], [], [3.0]])  # a var operand: computed first
    assert lazyk.where(x + v > 0, x, y).eval().to_list() == [[1.0, 2.0], None, [3.0, 4.0]]
    # the fixed 1 meets var rows (it stretches: var rows), a fixed 2 (?2) and itself (?1)
    b = L("3 * ?1 * float64", [None, [1.0], [5.0]])
    got = (b + L("3 * var * float64", [[1.0, 2.0], [3.0], [4.0, 5.0, 6.0]])).eval()
    assert str(got.type) == "3 * ?var * float64" and got.to_list() == [None, [4.0],
                                                                        [9.0, 10.0, 11.0]]
    got = (b + np.array([10.0, 20.0])).eval()
    assert str(got.type) == "3 * ?2 * float64" and got.to_list() == [None, [11.0, 21.0],
                                                                      [15.0, 25.0]]
    got = lazyk.where(b > 2, b, -b).eval()
    assert str(got.type) == "3 * ?1 * float64" and got.to_list() == [None, [-1.0], [5.0]]
    got = lazyk.drop_none(b).eval()  # (rows kept natively, then the work over them)
    assert str(got.type) == "2 * ?1 * float64" and got.to_list() == [[1.0], [5.0]]
    for c in (b, L("3 * ?2 * float64", [None, [1.0, 3.0], [5.0, 0.0]])):  # kept items: var
        got = c[c > 2].eval()
        assert str(got.type) == "3 * ?var * float64"
        assert got.to_list() == ak.to_list(ak.Array(c.to_list())[ak.Array(c.to_list()) > 2])
    q = L("3 * ?1 * ?uint16", [[0], None, [None]])  # missing values of the rows, fused
    got = lazyk.is_none(q, axis=-1).eval()
    assert str(got.type) == "3 * ?1 * bool" and got.to_list() == [[False], None, [True]]
    got = lazyk.min(lazyk.is_none(q, axis=-1), axis=0, skipna=True).eval()
    assert str(got.type) == "1 * ?bool" and got.to_list() == [False]
    got = (lazyk.fill_none(q, 9) + 1).eval()
    assert str(got.type) == "3 * ?1 * uint16" and got.to_list() == [[1], None, [10]]
    for n in (1, 3):  # `?n` above the kept items
        x = L(f"2 * ?{n} * var * int64", [None, [[5], [], [-4, 1, 4]][:n]])
        m = L(f"2 * ?{n} * var * ?bool", [None, [[False], [], [False, True, True]][:n]])
        try:  # (refused, or of its type: never `?var` there)
            got = x[m].eval()
        except lazyk.NotSupportedError:
            continue
        assert str(got.type) == str(x[m].type) == f"2 * ?{n} * var * ?int64"
    x = L("4 * ?var * int64", [[3, 1, 2], [], None, [7]])  # the take-back gives ?1 rows
    got = (x[lazyk.argmax(x, axis=1, keepdims=True)] * 2).eval()
    assert str(got.type) == "4 * ?1 * ?int64" and got.to_list() == [[6], [None], None, [14]]
