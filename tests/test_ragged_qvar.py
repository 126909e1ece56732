"""Missing rows (`?var`) in ragged expressions against the plain-Python reference.

Layouts: fixed dims, then a `?var` last dim, over `T` or `?T` (`tests/ragged_strategies.py`
QVAR_LAYOUTS), beside plain `var` operands with rows of their own. Every drawn case must
match the reference (type string, values, missing rows and values) or raise the same error
(ShapeError, ValueError); a refusal fails. Then Arrow and Awkward data with null rows, and
the `?var` forms still refused.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
from tests import ragged_reference as R
from tests import ragged_strategies as S
from tests.test_ragged_today import LAZYK_REDUCERS, RA, L, check

Q = S.QVAR_LAYOUTS
BINARY = ("add", "subtract", "multiply", "maximum", "greater")


def matches(ref_fn, lazyk_fn) -> str:
    got = check(ref_fn, lazyk_fn)
    assert got in ("match", "raises"), f"lazyk refused: {got}"
    return got


def test_reference_rules_for_missing_rows():
    """The reference's own rules, by hand (lazyk is held to them below)."""
    x = RA("3 * ?var * float64", [[1.0, 2.0], None, [3.0]])
    y = RA("3 * var * float64", [[1.0], [1.0, 2.0, 3.0], [4.0, 5.0]])
    # a missing row lines up with any row, and stays missing
    assert R.elementwise("add", x, y).data == [[2.0, 3.0], None, [7.0, 8.0]]
    with pytest.raises(lazyk.ShapeError):  # present rows must still line up
        R.elementwise("add", x, RA("3 * var * float64", [[1.0, 2.0, 3.0], [], []]))
    # where: the condition's rows, and the rows of the branch each element takes
    z = RA("3 * ?var * float64", [None, [5.0], [-1.0]])
    assert R.where(R.elementwise("greater", x, 0), x, z).data == [[1.0, 2.0], None, [3.0]]
    assert R.where(R.elementwise("greater", x, 5), x, z).data == [None, None, [-1.0]]
    # folds: order does not matter; a missing row skipped (skipna) or the result missing
    for rows in ([None, [1.0, 2.0], [1.0, 2.0, 3.0]], [[1.0, 2.0], None, [1.0, 2.0, 3.0]]):
        with pytest.raises(lazyk.ShapeError):
            R.reduce("sum", RA("3 * ?var * float64", rows), 0)
    w = RA("3 * ?var * float64", [[1.0, 2.0], None, [3.0]])
    assert R.reduce("sum", w, 0).data is None
    assert R.reduce("sum", w, 0, skipna=True).data == [4.0, 5.0]
    assert R.reduce("sum", w, -1, skipna=True).data == [3.0, None, 3.0]


@given(S.ragged_pair(layouts=Q, own_rows=True), st.sampled_from(BINARY), st.booleans())
def test_binary(pair, op, broadcast):
    t1, d1, t2, d2 = pair
    matches(lambda: R.elementwise(op, RA(t1, d1), RA(t2, d2)),
            lambda: getattr(lazyk, op)(L(t1, d1), L(t2, d2)))


@given(S.ragged_pair(layouts=Q, own_rows=True, broadcast=True), st.sampled_from(BINARY))
def test_binary_length_1_rows(pair, op):
    t1, d1, t2, d2 = pair
    matches(lambda: R.elementwise(op, RA(t1, d1), RA(t2, d2)),
            lambda: getattr(lazyk, op)(L(t1, d1), L(t2, d2)))


@given(S.ragged(layouts=Q, dtypes=S.NUMERIC, nan=True),
       st.sampled_from(["negative", "sqrt", "absolute"]), st.sampled_from([2, 0.5]))
def test_unary_and_scalars(case, op, k):
    t, d = case
    matches(lambda: R.elementwise("multiply", R.elementwise(op, RA(t, d)), k),
            lambda: getattr(lazyk, op)(L(t, d)) * k)


@given(S.ragged_pair(layouts=Q, own_rows=True))
def test_where_takes_the_rows_of_the_condition_and_the_branch_selected(pair):
    t1, d1, t2, d2 = pair

    def ref():
        x, y = RA(t1, d1), RA(t2, d2)
        return R.where(R.elementwise("greater", x, 0), y, R.elementwise("negative", x))
    matches(ref, lambda: lazyk.where(L(t1, d1) > 0, L(t2, d2), -L(t1, d1)))

    def ref2():  # the condition and one branch over y's rows, the other over x's
        x, y = RA(t1, d1), RA(t2, d2)
        return R.where(R.elementwise("less", y, 1), x, R.elementwise("multiply", y, 3))
    matches(ref2, lambda: lazyk.where(L(t2, d2) < 1, L(t1, d1), L(t2, d2) * 3))


def test_where_by_hand():
    x = L("3 * ?var * float64", [[1.0, 2.0], None, [3.0]])
    y = L("3 * ?var * float64", [None, [5.0], [-1.0]])
    # row 0: every element from x (y's missing row is not taken); row 1: the condition's
    # row is missing; row 2: from y
    assert lazyk.where(x > 0, x, y).to_list() == [[1.0, 2.0], None, [3.0]]
    assert lazyk.where(x > 5, x, y).to_list() == [None, None, [-1.0]]
    e = L("3 * ?var * float64", [[], None, [1.0]])
    # an empty row of the condition takes no element: present, as the reference says
    assert lazyk.where(e > 0, y, y).to_list() == [[], None, [-1.0]]


@st.composite
def reduce_cases(draw):
    t, d = draw(S.ragged(layouts=Q, nan=True))
    axis, keepdims = draw(S.reduce_args(R.parse_type(t).ndim))
    return (t, d), draw(st.sampled_from(LAZYK_REDUCERS)), axis, keepdims, draw(st.booleans())


def reduce_case(case, op, axis, keepdims, skipna, initial=None):
    t, d = case
    kw = {} if op == "count" else {"skipna": skipna}
    if initial is not None:
        kw["initial"] = initial
    return matches(lambda: R.reduce(op, RA(t, d), axis, keepdims=keepdims, skipna=skipna,
                                    initial=initial),
                   lambda: getattr(lazyk, op)(L(t, d), axis=axis, keepdims=keepdims, **kw))


@given(reduce_cases())
def test_reductions(args):
    reduce_case(*args)


@given(reduce_cases(), st.integers(-3, 3))
def test_min_max_initial(args, initial):
    case, _, axis, keepdims, skipna = args
    reduce_case(case, "max", axis, keepdims, skipna, initial)


@given(S.ragged_pair(layouts=Q, dtypes=("float64",), own_rows=True),
       st.sampled_from(["sum2", "center", "where-sum"]), st.booleans())
def test_fused_work(pair, which, skipna):
    t1, d1, t2, d2 = pair
    if which == "sum2":
        matches(lambda: R.reduce("sum", R.elementwise(
                    "add", R.elementwise("multiply", RA(t1, d1), 2), RA(t2, d2)), -1,
                    skipna=skipna),
                lambda: (L(t1, d1) * 2 + L(t2, d2)).sum(axis=-1, skipna=skipna))
    elif which == "center":
        matches(lambda: R.elementwise("subtract", RA(t1, d1), R.reduce(
                    "mean", RA(t1, d1), -1, keepdims=True, skipna=skipna)),
                lambda: L(t1, d1) - L(t1, d1).mean(axis=-1, keepdims=True, skipna=skipna))
    else:
        def ref():
            x, y = RA(t1, d1), RA(t2, d2)
            return R.reduce("sum", R.where(R.elementwise("greater", x, 0), x, y), None,
                            skipna=skipna)
        matches(ref, lambda: lazyk.sum(lazyk.where(L(t1, d1) > 0, L(t1, d1), L(t2, d2)),
                                       skipna=skipna))


@given(S.ragged(layouts=("N * ?var * T",), dtypes=S.NUMERIC), st.integers(0, 3), st.data())
def test_numpy_operands(case, n, data):
    """A missing row against a NumPy operand stays missing: a last dim of n gives `?n`
    rows (every present row of length n or 1; `?0` rows too), outer dims broadcast as
    NumPy's."""
    t, d = case
    rows = len(d)
    a = np.arange(1, n + 1, dtype=np.float64) if data.draw(st.booleans()) else \
        np.arange(rows, dtype=np.int32).reshape(rows, 1)

    def ref():
        r = R.array(a.tolist(), " * ".join([str(k) for k in a.shape] + [a.dtype.name]))
        return R.elementwise("add", RA(t, d), r)
    matches(ref, lambda: L(t, d) + a)
    for axis in (-1, 0, None):  # the nest, after the elementwise part for 0 and None
        skipna = data.draw(st.booleans())
        matches(lambda: R.reduce("sum", ref(), axis, skipna=skipna),
                lambda: lazyk.sum(L(t, d) + a, axis=axis, skipna=skipna))


def test_by_hand():
    x = L("3 * ?var * float64", [[1.0, 2.0], None, [3.0]])
    r = (x * 2).eval()
    assert str(r.type) == "3 * ?var * float64" and r.to_list() == [[2.0, 4.0], None, [6.0]]
    s = x.sum(axis=-1).eval()
    assert str(s.type) == "3 * ?float64" and s.to_list() == [3.0, None, 3.0]
    assert x.sum(axis=-1, skipna=True).to_list() == [3.0, None, 3.0]
    assert x.sum(axis=0).to_list() is None and x.sum().to_list() is None
    assert x.sum(axis=0, skipna=True).to_list() == [4.0, 5.0]  # [3.0] stretches
    assert x.sum(skipna=True).to_list() == 6.0
    assert lazyk.count(x).to_list() == 3
    assert (x + np.ones(2)).to_list() == [[2.0, 3.0], None, [4.0, 4.0]]
    assert str((x + np.ones(2)).eval().type) == "3 * ?2 * float64"
    # a missing row lines up with any row; present rows must still line up
    y = L("3 * var * float64", [[1.0], [1.0, 2.0, 3.0], [1.0]])
    assert (x + y).to_list() == [[2.0, 3.0], None, [4.0]]
    with pytest.raises(lazyk.ShapeError):
        (x + L("3 * var * float64", [[1.0, 2.0, 3.0], [], []])).eval()
    with pytest.raises(lazyk.ShapeError):  # row 0 and row 2 do not fold, row 1 missing
        L("3 * ?var * float64", [[1.0, 2.0], None, [1.0, 2.0, 3.0]]).sum(axis=0).eval()


@pytest.mark.parametrize("t", ["0 * ?var * float64", "2 * 0 * ?var * ?int32"])
def test_empty_arrays(t):
    data = [[], []] if t.startswith("2 *") else []
    matches(lambda: R.elementwise("add", RA(t, data), 1), lambda: L(t, data) + 1)


def test_nested_missing_rows_run():
    """`?var` below another var dim (Arrow lists of lists with null inner lists): means,
    middle-axis reductions and where() run (tests/test_ragged_qfull.py), and so does a
    missing row folded along its own axis above a fixed dim."""
    v = L("2 * var * ?var * float64", [[[1.0], None], [[2.0, 3.0]]])
    assert v.mean().to_list() is None and v.mean(skipna=True).to_list() == 2.0
    assert lazyk.sum(v, axis=1).to_list() == [None, [2.0, 3.0]]
    assert lazyk.where(v > 1, v, 0).to_list() == [[[0.0], None], [[2.0, 3.0]]]
    s = lazyk.sum(L("2 * ?var * 2 * float64", [[[1.0, 2.0]], None]), axis=-1).eval()
    assert str(s.type) == "2 * ?var * ?float64" and s.to_list() == [[3.0], None]
    s = lazyk.sum(L("2 * ?var * 2 * float64", [[[1.0, 2.0]], None]), axis=1).eval()
    assert str(s.type) == "2 * ?2 * ?float64" and s.to_list() == [[1.0, 2.0], None]


# ---------------------------------------------------------------- Arrow and Awkward
def test_arrow_null_rows():
    pa = pytest.importorskip("pyarrow")
    for src in (pa.array([[1.5, 2.0], None, [], [3.0, None]]),
                pa.array([[1, 2], None, [3]], type=pa.large_list(pa.int32()))):
        x = lazyk.from_arrow(src)
        assert str(x.type).split(" * ")[1] == "?var"
        assert x.to_list() == src.to_pylist()
        back = lazyk.to_arrow(x)
        assert back.to_pylist() == src.to_pylist() and back.null_count == src.null_count
        r = (x * 2).eval()
        want = [None if row is None else [None if v is None else v * 2 for v in row]
                for row in src.to_pylist()]
        assert r.to_list() == want
        assert lazyk.to_arrow(r).to_pylist() == want
        assert lazyk.sum(x, axis=-1, skipna=True).to_list() == [
            None if row is None else sum(v for v in row if v is not None)
            for row in src.to_pylist()]
    chunked = pa.chunked_array([pa.array([[1.0], None]), pa.array([None, [2.0, 3.0]])])
    x = lazyk.from_arrow(chunked)
    assert str(x.type) == "4 * ?var * float64" and x.to_list() == chunked.to_pylist()
    assert x.sum(axis=0, skipna=True).to_list() == [3.0, 4.0]
    # a sliced array: offsets, validity and values taken from its offset
    sl = pa.array([[9.0], None, [1.0, 2.0], None, [3.0]]).slice(1, 3)
    x = lazyk.from_arrow(sl)
    assert x.to_list() == [None, [1.0, 2.0], None]
    assert (x + 1).to_list() == [None, [2.0, 3.0], None]


def test_one_missing_row_with_int32_offsets():
    pa = pytest.importorskip("pyarrow")
    x = lazyk.from_arrow(pa.array([None], pa.list_(pa.float64())))
    assert str(x.type) == "1 * ?var * float64" and x.to_list() == [None]
    assert (x + 1).to_list() == [None] and x.sum(axis=-1).to_list() == [None]
    y = lazyk.from_offsets(np.array([0, 2], np.int32), np.ones(2), validity=[False])
    assert y.to_list() == [None] and lazyk.to_arrow(y).to_pylist() == [None]


def test_awkward_option_of_list():
    ak = pytest.importorskip("awkward")
    a = ak.Array([[1.0, 2.0], None, [], [3.0]])
    x = lazyk.from_awkward(a)
    assert str(x.type) == "4 * ?var * float64"
    assert ak.to_list(lazyk.to_awkward(x)) == a.to_list()
    # Awkward's own answer for a None row summed along its axis: None, as lazyk's
    assert ak.to_list(ak.sum(a, axis=-1)) == lazyk.sum(x, axis=-1, skipna=True).to_list() \
        == [3.0, None, 0.0, 3.0]
    r = (x * 2 + 1).eval()
    assert str(r.type) == "4 * ?var * float64"
    assert ak.to_list(lazyk.to_awkward(r)) == ak.to_list(a * 2 + 1)
    b = ak.Array([[1, None], None, [3]])  # IndexedOption inside and out
    y = lazyk.from_awkward(b)
    assert str(y.type) == "3 * ?var * ?int64" and y.to_list() == b.to_list()
    assert ak.to_list(lazyk.to_awkward(y)) == b.to_list()
    assert (y + 1).to_list() == ak.to_list(b + 1)


@settings(max_examples=20, deadline=None)
@given(S.ragged(layouts=("N * var * T", "N * ?var * T"), dtypes=("float64",)), st.data())
def test_where_branch_with_a_missing_row_is_missing_before_it_pairs(case, data):
    """`where(c, x + z, y)` with z's row missing: the branch's row is missing whatever x's
    row length, as the reference computes the branch first (c's rows differ from x's
    there)."""
    tx, dx = case
    dz = [None if r is None or data.draw(st.booleans()) else r for r in dx]
    tz = tx.replace("* var", "* ?var")
    rows = []
    for i, (xr, zr) in enumerate(zip(dx, dz)):
        n = len(xr) if xr is not None else 1
        if zr is None:
            n += data.draw(st.integers(0, 2))  # c's row (and y's) other than x's
        sign = data.draw(st.sampled_from([1.0, -1.0, 0.0]))  # 0: both branches
        rows.append([sign if sign else (-1.0) ** (i + j) for j in range(n)])
    tc, y = f"{len(rows)} * var * float64", [[3 * v for v in r] for r in rows]

    def ref():
        return R.where(R.elementwise("greater", RA(tc, rows), 0),
                       R.elementwise("add", RA(tx, dx), RA(tz, dz)), RA(tc, y))
    matches(ref, lambda: lazyk.where(L(tc, rows) > 0, L(tx, dx) + L(tz, dz), L(tc, y)))


def test_where_branch_with_a_missing_row_by_hand():
    c = L("2 * var * float64", [[1.0, -1.0], [1.0, -1.0]])
    x = L("2 * var * float64", [[1.0, 2.0], [1.0, 2.0, 3.0]])
    z = L("2 * ?var * float64", [[1.0, 1.0], None])
    y = L("2 * var * float64", [[5.0, 6.0], [7.0, 8.0]])
    got = lazyk.where(c > 0, x + z, y).eval()
    assert str(got.type) == "2 * ?var * float64" and got.to_list() == [[2.0, 6.0], None]
    got = lazyk.where(c > 5, (x + z) * 2, y).sum(axis=-1).eval()  # never takes the branch
    assert got.to_list() == [11.0, 15.0]
    with pytest.raises(lazyk.ShapeError):  # x's row against a present row of z still pairs
        lazyk.where(c > 0, x + L("2 * ?var * float64", [[1.0, 1.0], [1.0, 2.0]]), y).eval()


def _fit(rows, n, depth):
    """Every present row padded or cut to length n (rows of length 1 kept: they stretch)."""
    if depth:
        return [_fit(r, n, depth - 1) for r in rows]
    return [r if r is None or len(r) == 1 else (r + [1.5] * n)[:n] for r in rows]


@settings(max_examples=20, deadline=None)
@given(S.ragged_pair(layouts=("N * ?var * T", "3 * N * ?var * T"), dtypes=("float64",),
                     own_rows=True), st.integers(1, 3), st.sampled_from(["x", "a", "sum"]),
       st.data())
def test_where_over_missing_rows_against_a_fixed_dim(pair, n, form, data):
    """`?n` rows inside where(): a row is missing where the condition's is or where an
    element takes a branch's missing row; then reductions over any axes of that."""
    t1, d1, t2, d2 = pair
    depth = R.parse_type(t1).ndim - 2
    d1, d2 = _fit(d1, n, depth), _fit(d2, n, depth)
    a = np.arange(n, dtype=np.float64) - 0.5
    ra = R.array(a.tolist(), f"{n} * float64")

    def ref_where():
        x, y = RA(t1, d1), RA(t2, d2)
        if form == "x":
            return R.where(R.elementwise("greater", x, 0), x, ra)
        return R.where(R.elementwise("greater", ra, 0), x, R.elementwise("add", y, ra))

    def got_where():
        x, y = L(t1, d1), L(t2, d2)
        return lazyk.where(x > 0, x, a) if form == "x" else lazyk.where(a > 0, x, y + a)
    matches(ref_where, got_where)
    if form == "sum":
        nd = R.parse_type(t1).ndim
        axis = data.draw(st.sampled_from([None, -1, 0, (0, 1), tuple(range(nd - 1))]))
        skipna, keepdims = data.draw(st.booleans()), data.draw(st.booleans())
        op = data.draw(st.sampled_from(["sum", "max", "mean"]))
        matches(lambda: R.reduce(op, ref_where(), axis, keepdims=keepdims, skipna=skipna),
                lambda: getattr(lazyk, op)(got_where(), axis=axis, keepdims=keepdims,
                                           skipna=skipna))


def test_assignment_keeps_missing_rows_missing():
    x = lazyk.array([[1.0, None], [], None, [3.0]])  # 4 * ?var * ?float64
    x[...] = 5.0
    assert x.to_list() == [[5.0, 5.0], [], None, [5.0]]
    z = lazyk.from_offsets(np.array([0, 1, 3]), np.arange(3.0), validity=np.array([True, False]))
    z[...] = 5.0  # (the missing row's storage is never written nor shown)
    assert z.to_list() == [[5.0], None]
    w = lazyk.from_offsets(np.array([0, 1, 3]), np.arange(3.0), validity=np.array([True, False]))
    with pytest.raises(ValueError, match="cannot make a missing row present"):
        w[1] = [7.0]
    assert w.to_list() == [[0.0], None]
    y = lazyk.array([[1.0, None], [], None, [3.0]])
    y[...] = lazyk.array([[2.0, 2.0], [], None, [4.0]])  # missing where the source is
    assert y.to_list() == [[2.0, 2.0], [], None, [4.0]]
    with pytest.raises(ValueError, match="cannot make a missing row present"):
        y[...] = lazyk.array([[2.0, 2.0], [], [], [4.0]])
