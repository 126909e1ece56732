"""Ragged and missing-value data on Dask (`lazyk.dask.from_ragged`): values, types and
missing values against the plain-Python reference on random partitionings (empty
partitions, empty rows and length-1 rows included), the graph structure, refusals, and a
2-process cluster (pickling, one compile per worker)."""
from __future__ import annotations

import functools
import math
import pickle
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

import lazyk  # noqa: E402,I001
import lazyk.dask as ldask  # noqa: E402
from lazyk.dask import partitions, tasks  # noqa: E402
from lazyk.dask.partitions import concat  # noqa: E402
from tests import ragged_reference as R  # noqa: E402
from tests import ragged_strategies as S  # noqa: E402

# Dims under the partitioned outer rows.
INNER = ("var * T", "var * var * T", "var * 4 * T", "?var * T", "?var * var * T", "2 * T")


@st.composite
def rows(draw, inner=INNER, dtypes=("float64", "int64", "float32", "bool"), pair=False):
    """(type, data[, type2, data2], cuts): up to 9 outer rows over an inner layout, and
    the partition boundaries (a rows-per-part int, or sorted cut points)."""
    n = draw(st.integers(0, 9))
    dims = [str(n)] + draw(st.sampled_from(inner)).split(" * ")[:-1]
    sk = S.skeleton(draw, dims)
    out = []
    for _ in range(2 if pair else 1):
        dtype = draw(st.sampled_from(dtypes))
        option = draw(st.booleans())
        out += [S.type_string(dims, dtype, option),
                S.fill(draw, sk, dtype, option, False, 0, len(dims))]
    out.append(draw(st.one_of(st.integers(1, 4),
                              st.lists(st.integers(0, n), max_size=3).map(sorted))))
    return tuple(out)


def split(x: lazyk.Array, cuts) -> ldask.RaggedArray:
    if isinstance(cuts, int):
        return ldask.from_ragged(x, cuts)
    bounds = [0] + list(cuts) + [x.type.size]
    return ldask.from_ragged([x[a:b] for a, b in zip(bounds[:-1], bounds[1:])])


def same(a, b) -> bool:
    """Nested lists equal, NaN equal to NaN, floats to a relative 1e-5."""
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and \
            all(same(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or \
            math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-9)
    return a == b


def check(got, ref):
    """A computed result (lazyk array or NumPy from a dask.array) against the reference."""
    if isinstance(got, (np.ndarray, np.generic)):
        got = lazyk.array(np.asarray(got))
    assert str(got.type) == str(ref.type), (str(got.type), str(ref.type))
    assert same(got.to_list(), ref.data), (got.to_list(), ref.data)


def run(expr, single, ref_fn, refusable=True, split_every=None):
    """Compute `expr` on Dask and compare with the reference; where the reference raises,
    the same kind of error; where lazyk refuses the form on one machine, Dask may refuse it
    too (NotSupportedError naming it), and forms Dask refuses by name pass unless
    `refusable` is False."""
    try:
        ref = ref_fn()
    except ValueError as err:  # ShapeError (rows that do not fold) is a ValueError too
        with pytest.raises((type(err), lazyk.NotSupportedError)):
            ldask.evaluate(expr(), split_every=split_every).compute()
        return
    try:
        got = ldask.evaluate(expr(), split_every=split_every).compute()
    except lazyk.NotSupportedError as err:
        if "fold only within one partition" in str(err) and refusable:
            return  # refused on Dask by name (axis-0 folds of missing rows; var rows
            # kept below two folded axes)
        with pytest.raises(lazyk.NotSupportedError):
            single().eval()
        return
    check(got, ref)


@pytest.fixture(autouse=True)
def _sync_scheduler():
    with dask.config.set(scheduler="sync"):
        yield


# ---------------------------------------------------------------- values
@settings(max_examples=15, deadline=None)
@given(rows(pair=True), st.sampled_from(["mul_add", "where", "maximum"]))
def test_elementwise_keeps_the_partitions(drawn, op):
    ta, dta, tb, dtb, cuts = drawn
    a, b = lazyk.array(dta, type=ta), lazyk.array(dtb, type=tb)
    ra, rb = R.array(dta, ta), R.array(dtb, tb)
    xa, xb = split(a, cuts), split(b, cuts)
    fns = {"mul_add": (lambda p, q: p * q + 1,
                       lambda: R.elementwise("add", R.elementwise("multiply", ra, rb), 1)),
           "where": (lambda p, q: lazyk.where(p > 0, p, q),
                     lambda: R.where(R.elementwise("greater", ra, 0), ra, rb)),
           "maximum": (lazyk.maximum, lambda: R.elementwise("maximum", ra, rb))}
    fn, ref = fns[op]
    r = ldask.evaluate(fn(xa, xb))
    assert isinstance(r, (ldask.RaggedArray, da.Array))
    run(lambda: fn(xa, xb), lambda: fn(a, b), ref)


def _reducer(op, axis, keepdims, skipna):
    """`op` over `axis` as a function of an array or collection (`count` takes no skipna)."""
    if op == "count":
        return lambda v: lazyk.count(v, axis=axis, keepdims=keepdims)
    return lambda v: getattr(v, op)(axis=axis, keepdims=keepdims, skipna=skipna)


@settings(max_examples=20, deadline=None)
@given(rows(), st.sampled_from(["sum", "prod", "min", "max", "any", "all", "mean", "count"]),
       st.booleans(), st.booleans(), st.data())
def test_reductions_over_inner_axes(drawn, op, skipna, keepdims, data):
    t, values, cuts = drawn
    a, ra = lazyk.array(values, type=t), R.array(values, t)
    x = split(a, cuts)
    axis = data.draw(st.integers(1, ra.type.ndim - 1))
    fn = _reducer(op, axis, keepdims, skipna)
    run(lambda: fn(x), lambda: fn(a),
        lambda: R.reduce(op, ra, axis=axis, keepdims=keepdims, skipna=skipna))
    if not keepdims and axis == ra.type.ndim - 1 and ra.type.ndim == 2:
        try:
            got = ldask.evaluate(fn(x))
        except lazyk.NotSupportedError:
            return
        if isinstance(got, da.Array):  # plain results: chunks are the partitions' rows
            assert got.chunks == (x.row_counts,)


@settings(max_examples=20, deadline=None)
@given(rows(), st.sampled_from(["sum", "prod", "min", "max", "any", "all", "mean", "count"]),
       st.sampled_from([0, None, "0,1"]), st.booleans(), st.booleans())
def test_reductions_over_the_rows_axis_combine_partials(drawn, op, axis, skipna, keepdims):
    t, values, cuts = drawn
    a, ra = lazyk.array(values, type=t), R.array(values, t)
    x = split(a, cuts)
    if axis == "0,1":
        axis = (0, 1)
    fn = _reducer(op, axis, keepdims, skipna)
    run(lambda: fn(x), lambda: fn(a),
        lambda: R.reduce(op, ra, axis=axis, keepdims=keepdims, skipna=skipna))


@settings(max_examples=20, deadline=None)
@given(rows(inner=("?var * T", "?var * var * T", "var * var * T", "?var * 2 * var * T",
                   "var * var * var * T")),
       st.sampled_from(["sum", "prod", "min", "max", "any", "all", "mean", "count"]),
       st.sampled_from([0, None, (0, 1), (0, 2), (0, 1, 3)]), st.booleans(), st.booleans(),
       st.sampled_from([None, 2]))
def test_rows_axis_folds_of_missing_rows_and_of_rows_below_two_folded_axes(
        drawn, op, axis, skipna, keepdims, split_every):
    """Axis-0 reductions over `N * ?var * ...` (missing rows right under the outer rows)
    and ones keeping var rows below two folded axes: computed, never refused, even where
    a partition holds only missing rows or folds nothing."""
    t, values, cuts = drawn
    a, ra = lazyk.array(values, type=t), R.array(values, t)
    if isinstance(axis, tuple) and max(axis) >= ra.type.ndim:
        axis = 0
    x = split(a, cuts)
    fn = _reducer(op, axis, keepdims, skipna)
    try:
        R.reduce(op, ra, axis=axis, keepdims=keepdims, skipna=skipna)
    except ValueError:
        try:
            want = fn(a).eval()
        except (ValueError, lazyk.NotSupportedError):
            return  # rows that do not fold: refused on one machine too
        # NOTE: lazyk on one machine folds some empty-row layouts without the length check
        # the reference makes (axis (0, 2) of var * var * var); Dask must agree with lazyk
        # there.
        got = ldask.evaluate(fn(x), split_every=split_every).compute()
        got = lazyk.array(np.asarray(got)) if isinstance(got, np.ndarray) else got
        assert str(got.type) == str(want.type) and same(got.to_list(), want.to_list())
        return
    below = t.split(" * ")[1:3]
    if isinstance(axis, tuple) and 1 in axis and below == ["?var", "2"]:
        # `N * ?var * 2 * var * T` over (0, 1): `?2` results (not operands); the partials
        # fold the present rows, the last step folds them with one missing row
        want = fn(a).eval()
        try:
            got = ldask.evaluate(fn(x), split_every=split_every).compute()
        except lazyk.NotSupportedError as err:
            # a mean: sum / count of `?2` partials (not operands), refused where a
            # partition has some to fold
            assert op == "mean" and "?2" in str(err)
            return
        got = lazyk.array(np.asarray(got)) if isinstance(got, np.ndarray) else got
        assert str(got.type) == str(want.type) and same(got.to_list(), want.to_list())
        return
    if isinstance(axis, tuple) and 2 in axis and below == ["?var", "var"]:
        # `N * ?var * var * T` over (0, 2): Dask folds its `k * ?var * 1 * T` partials as
        # `k * ?var * T` over axis 0, never refused, equal to one machine
        try:
            want = fn(a).eval()
        except ValueError as err:  # rows that do not fold: the same error
            with pytest.raises(type(err)):
                ldask.evaluate(fn(x), split_every=split_every).compute()
            return
        got = ldask.evaluate(fn(x), split_every=split_every).compute()
        got = lazyk.array(np.asarray(got)) if isinstance(got, np.ndarray) else got
        assert str(got.type) == str(want.type) and same(got.to_list(), want.to_list())
    run(lambda: fn(x), lambda: fn(a),
        lambda: R.reduce(op, ra, axis=axis, keepdims=keepdims, skipna=skipna),
        refusable=False, split_every=split_every)


def test_var_rows_kept_below_two_folded_axes_and_missing_rows():
    """A partition folding nothing (or holding only missing rows) adds nothing; a missing
    row makes the result missing but row lengths must still line up across partitions."""
    a = lazyk.array([[], [[0.0]]], type="2 * var * var * float64")
    assert a.sum(axis=(0, 1)).eval().to_list() == [0.0]
    assert ldask.evaluate(ldask.from_ragged(a, 1).sum(axis=(0, 1))).compute().to_list() == \
        [0.0]
    b = lazyk.array([None] * 3 + [[1.0, 2.0], [0.0, 0.5]], type="5 * ?var * float64")
    got = ldask.evaluate(ldask.from_ragged(b, 1).sum(axis=0, skipna=True)).compute()
    assert got.to_list() == [1.0, 2.5] and str(got.type) == "var * float64"
    got = ldask.evaluate(ldask.from_ragged(b, 2).sum(axis=0)).compute()
    assert got.to_list() is None and str(got.type) == str(b.sum(axis=0).eval().type)
    # min / max of ?T: a partition folding nothing must not make the result missing
    d = lazyk.array([[], [[None, 5.0, 0.0]], [[1.0, 2.0, None]]], type="3 * var * 3 * ?float64")
    e = lazyk.array([[], [1.0], [2.0]], type="3 * var * ?float64")
    for v, axis in ((d, (0, 1)), (e, None), (e, (0, 1))):
        for op in ("min", "max"):
            want = getattr(v, op)(axis=axis).eval()
            got = ldask.evaluate(getattr(ldask.from_ragged(v, 1), op)(axis=axis)).compute()
            got = lazyk.array(np.asarray(got)) if isinstance(got, np.ndarray) else got
            assert got.to_list() == want.to_list() and str(got.type) == str(want.type)
    assert ldask.evaluate(ldask.from_ragged(e, 1).min()).compute().to_list() == 1.0
    # mean of missing rows only: missing (an empty count row must not hide it)
    gone = lazyk.array([None, None], type="2 * ?var * float64")
    got = ldask.evaluate(ldask.from_ragged(gone, 1).mean(axis=0)).compute()
    assert got.to_list() is None and str(got.type) == str(gone.mean(axis=0).eval().type)
    c = lazyk.array([None] * 7 + [[], [0.0, 0.0]], type="9 * ?var * float64")
    with pytest.raises(lazyk.ShapeError):  # rows of 0 and 2 behind the missing ones
        c.sum(axis=0).eval()
    with pytest.raises(lazyk.ShapeError):
        ldask.evaluate(ldask.from_ragged(c, 1).sum(axis=0)).compute()


def test_skipnan_initial_and_tree_of_combines():
    values = [[1.0, float("nan"), 3.0], [None], [], [4.0, 5.0], [float("nan")], [2.0]] * 5
    a = lazyk.array(values, type="30 * var * ?float64")
    x = ldask.from_ragged(a, 2)  # 15 partitions: a tree of combines with split_every=3
    for e in (lambda v: v.sum(skipna=True, skipnan=True),
              lambda v: v.mean(skipna=True, skipnan=True),
              lambda v: v.max(skipna=True, skipnan=True),
              lambda v: v.min(skipna=True, initial=-1.0),
              lambda v: v.max(axis=-1, skipna=True, initial=0.0),
              lambda v: lazyk.count(v, skipnan=True)):
        got = ldask.evaluate(e(x), split_every=3).compute()
        want = e(a).eval()
        got = lazyk.array(np.asarray(got)) if isinstance(got, np.ndarray) else got
        assert str(got.type) == str(want.type)
        assert same(got.to_list(), want.to_list())


def test_against_numpy_reduceat_on_offsets():
    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 6, 400)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    content = rng.random(offsets[-1])
    x = lazyk.from_offsets(offsets, content)
    r = ldask.from_ragged(x, 37)
    assert r.npartitions == 11 and sum(r.row_counts) == 400
    s = ldask.evaluate(lazyk.sin(r).sum(axis=-1))
    assert isinstance(s, da.Array) and s.chunks == (r.row_counts,) and s.dtype == np.float64
    want = np.add.reduceat(np.sin(content), offsets[:-1]) * (lengths > 0)
    np.testing.assert_allclose(s.compute(scheduler="threads"), want, rtol=1e-12)
    np.testing.assert_allclose(ldask.evaluate(r.sum()).compute(), content.sum(), rtol=1e-12)
    m = ldask.evaluate(r.max(axis=-1, initial=-1.0)).compute()
    np.testing.assert_array_equal(m, np.where(lengths > 0, np.maximum.reduceat(
        content, np.minimum(offsets[:-1], len(content) - 1)), -1.0))
    c = ldask.evaluate(r - r.mean(axis=-1, keepdims=True)).compute()  # ragged result
    assert str(c.type) == "400 * var * float64"
    means = np.add.reduceat(content, offsets[:-1]) / np.maximum(lengths, 1)
    np.testing.assert_allclose(lazyk.to_arrow(c).flatten().to_numpy(),
                               content - np.repeat(means, lengths), rtol=1e-12)


def test_operands_next_to_the_rows():
    y = lazyk.array([[1.0, 2.0], [3.0, 4.0], [5.0], [6.0, 7.0]], type="4 * var * float64")
    x = ldask.from_ragged(y, 3)
    w = np.array([1.0, 2.0, 3.0, 4.0])
    cases = [  # split by the rows (axis 0 of length 4) or passed whole (inner axes)
        (lambda v: v * w[:, None], lambda v: v * w[:, None]),
        (lambda v: v.sum(axis=-1) * w, lambda v: v.sum(axis=-1) * w),
        (lambda v: v * da.from_array(w[:, None], chunks=1), lambda v: v * w[:, None]),
        (lambda v: v * np.array([10.0, 20.0]), lambda v: v * np.array([10.0, 20.0])),
        (lambda v: v - v.mean(axis=0), lambda v: v - v.mean(axis=0)),
        (lambda v: v / v.sum(), lambda v: v / v.sum()),
        (lambda v: v.max(axis=0) - 1, lambda v: v.max(axis=0) - 1),
    ]
    for fn, ref in cases:
        got = ldask.evaluate(fn(x)).compute()
        want = ref(y).eval()
        got = lazyk.array(np.asarray(got)) if isinstance(got, np.ndarray) else got
        assert str(got.type) == str(want.type)
        assert same(got.to_list(), want.to_list())


def test_partitions_are_views_and_concatenation():
    x = lazyk.from_offsets(np.array([0, 2, 2, 5], np.int32), np.arange(5.0))
    r = ldask.from_ragged(x, 2)
    got = r.compute()
    assert str(got.type) == "3 * var * float64" and got.to_list() == x.to_list()
    graph = dict(r.__dask_graph__())
    p0, p1 = (getattr(graph[(r.name, i)], "value", graph[(r.name, i)]).array for i in (0, 1))
    assert p0.to_list() == [[0.0, 1.0], []] and p1.to_list() == [[2.0, 3.0, 4.0]]
    # row slices: the same offsets and content memory, nothing copied
    assert p0.ptr == x.ptr and p1.ptr == x.ptr + 2 * 4 and p1.meta[5] == x.meta[5]
    # a partition pickles as the buffers of its own rows, not the whole content or lists
    back = pickle.loads(pickle.dumps(graph[(r.name, 1)]))
    back = getattr(back, "value", back).array
    assert back.to_list() == [[2.0, 3.0, 4.0]] and str(back.type) == "1 * var * float64"
    big = ldask.from_ragged(lazyk.from_offsets(np.arange(0, 200001, 2), np.arange(2e5)),
                            40000)  # 100000 rows of 2 values: 3 partitions
    part = dict(big.__dask_graph__())[(big.name, 2)]
    raw = pickle.dumps(getattr(part, "value", part), protocol=5)
    assert len(raw) < 20000 * 3 * 8 + 1000, len(raw)  # its 20000 rows, not all 100000
    back = pickle.loads(raw).array
    assert back.to_list() == [[2.0 * i, 2.0 * i + 1] for i in range(80000, 100000)]
    # a computed collection (made on a worker under distributed) pickles as buffers too
    (joined,) = dask.compute(ldask.evaluate(big * 2))
    raw = pickle.dumps(joined, protocol=5)
    assert joined.__reduce__()[0] is partitions.build  # the buffers, not Python lists
    assert len(raw) < 2e5 * 8 + (1e5 + 1) * 8 + 1000, len(raw)  # values and offsets
    back = pickle.loads(raw)
    assert type(back) is lazyk.Array and back.to_list() == joined.to_list()
    assert type(ldask.evaluate(big * 2).compute()) is lazyk.Array
    m = lazyk.array([[1, None], None, [3]], type="3 * ?var * ?int64")
    joined = concat([m[:1], m[1:1], m[1:]])
    assert str(joined.type) == str(m.type) and joined.to_list() == m.to_list()
    assert concat([np.arange(2), np.arange(3)]).to_list() == [0, 1, 0, 1, 2]


# ---------------------------------------------------------------- structure and errors
WORDS = st.sampled_from(["kiwi", "fig", "", "kiwis", "ki", "é"])


@settings(max_examples=20, deadline=None)
@given(st.lists(st.one_of(st.none(), st.lists(st.one_of(st.none(), WORDS), max_size=4)),
                max_size=9),
       st.booleans(), st.integers(1, 4))
def test_string_rows_against_python(rows_, option, step):
    """`N * var * string` (and `?string`, `?var` rows) partitions: comparisons, counts,
    lengths and the rows themselves against plain Python."""
    if not option:
        rows_ = [[w or "" for w in r] if r is not None else [] for r in rows_]
    t = f"{len(rows_)} * {'?var' if option else 'var'} * {'?string' if option else 'string'}"
    x = lazyk.array(rows_, type=t)
    r = ldask.from_ragged(x, step)
    assert r.compute().to_list() == rows_ and str(r.type) == t
    hits = ldask.evaluate((r == "kiwi").sum(axis=-1, skipna=True)).compute()
    want = [None if row is None else sum(w == "kiwi" for w in row) for row in rows_]
    hits = hits.to_list() if isinstance(hits, lazyk.Array) else hits.tolist()
    assert hits == want
    n = ldask.evaluate(lazyk.str_len(r)).compute()
    assert n.to_list() == [None if row is None else [None if w is None else len(w)
                                                      for w in row] for row in rows_]
    assert str(n.type) == str(lazyk.str_len(x).eval().type)
    plain = ldask.from_ragged(lazyk.array(["kiwi", "é", ""]), 2)
    assert ldask.evaluate(plain).compute().to_list() == ["kiwi", "é", ""]
    np.testing.assert_array_equal(ldask.evaluate(plain == "é").compute(), [False, True, False])
    starts = ldask.evaluate(lazyk.startswith(r, "ki")).compute()
    assert starts.to_list() == lazyk.startswith(x, "ki").eval().to_list()


BYTE_WORDS = st.sampled_from([b"kiwi", b"", b"\xff\x00", b"ki", b"\xc3\xa9"])


@settings(max_examples=15, deadline=None)
@given(st.lists(st.one_of(st.none(), st.lists(st.one_of(st.none(), BYTE_WORDS), max_size=4)),
                max_size=9),
       st.booleans(), st.integers(1, 4))
def test_bytes_rows_against_python(rows_, option, step):
    """`N * var * bytes` (and `?bytes`, `?var` rows) partitions: comparisons with bytes,
    byte lengths, prefixes and the rows themselves against plain Python."""
    if not option:
        rows_ = [[w or b"" for w in r] if r is not None else [] for r in rows_]
    t = f"{len(rows_)} * {'?var' if option else 'var'} * {'?bytes' if option else 'bytes'}"
    x = lazyk.array(rows_, type=t)
    r = ldask.from_ragged(x, step)
    assert r.compute().to_list() == rows_ and str(r.type) == t
    assert pickle.loads(pickle.dumps(r.persist())).compute().to_list() == rows_

    def each(fn):
        return [None if row is None else [None if w is None else fn(w) for w in row]
                for row in rows_]
    hits = ldask.evaluate((r == b"kiwi").sum(axis=-1, skipna=True)).compute()
    want = [None if row is None else sum(w == b"kiwi" for w in row) for row in rows_]
    hits = hits.to_list() if isinstance(hits, lazyk.Array) else hits.tolist()
    assert hits == want
    n = ldask.evaluate(lazyk.str_len(r)).compute()
    assert n.to_list() == each(len) and str(n.type) == str(lazyk.str_len(x).eval().type)
    got = ldask.evaluate(lazyk.startswith(r, b"\xff") | (r < b"ki")).compute()
    assert got.to_list() == each(lambda w: w.startswith(b"\xff") or w < b"ki")
    with pytest.raises(TypeError, match="bytes and str"):
        ldask.evaluate(r == "kiwi")


def test_date_and_time_rows_are_held_not_computed():
    import datetime as dt

    days = [[dt.date(2024, 2, 29), None], [], [dt.date(1970, 1, 1)], None]
    stamps = [[dt.datetime(2024, 1, 1, 12, 30, 5, 7)], [None, dt.datetime(1999, 12, 31)]]
    for rows_, t in ((days, "4 * ?var * ?date"), (stamps, "2 * var * ?datetime")):
        x = lazyk.array(rows_, type=t)
        for r in (ldask.from_ragged(x, 1), ldask.from_ragged(x, 3),
                  ldask.from_ragged([x[:1], x[1:]])):
            assert str(r.type) == t and r.dtype.kind == "M"
            assert r.compute().to_list() == rows_
            assert ldask.evaluate(r).compute().to_list() == rows_
            assert pickle.loads(pickle.dumps(r.persist())).compute().to_list() == rows_
            for build in (lambda v: v == v, lambda v: lazyk.count(v, axis=-1),
                          lambda v: v.max(axis=0)):
                with pytest.raises(lazyk.UnsupportedOperandError, match=re.escape(t.split(" * ", 1)[1])):
                    ldask.evaluate(build(r))
                with pytest.raises(lazyk.UnsupportedOperandError):
                    build(x)  # refused on one machine too
    fixed = lazyk.array([dt.date(2020, 1, 1), None, dt.date(2021, 5, 6)], type="3 * ?date")
    r = ldask.from_ragged(fixed, 2)
    assert r.compute().to_list() == fixed.to_list()
    got = r.to_dask_array().compute()
    assert got.dtype == np.dtype("M8[D]") and got.mask.tolist() == [False, True, False]
    load = dask.delayed(lambda i: lazyk.array([[dt.date(2000 + i, 1, 1)], []],
                                              type="2 * var * date"))
    g = ldask.from_delayed([load(0), load(1)], "N * var * ?date", [2, 2])
    assert g.compute().to_list() == [[dt.date(2000, 1, 1)], [], [dt.date(2001, 1, 1)], []]
    mixed = ldask.from_ragged([lazyk.array([[b"a"]], type="1 * var * bytes"),
                               lazyk.array([[None]], type="1 * var * ?bytes")])
    assert str(mixed.type) == "2 * var * ?bytes"
    assert ldask.evaluate(mixed == b"a").compute().to_list() == [[True], [None]]


def test_record_rows_and_their_fields():
    rows_ = [{"x": [1.0, 2.0], "y": 3}, {"x": [], "y": 4}, {"x": [5.0], "y": -1}] * 3
    x = lazyk.array(rows_)
    q = ldask.from_ragged(x, 4)
    assert isinstance(q, ldask.RaggedRecords) and q.row_counts == (4, 4, 1)
    assert q.compute().to_list() == rows_
    assert isinstance(q.x, ldask.RaggedArray) and str(q["x"].type) == "9 * var * float64"
    got = ldask.evaluate(q.x.sum(axis=-1) + q.y).compute()
    np.testing.assert_array_equal(got, [sum(r["x"]) + r["y"] for r in rows_])
    assert got.dtype == np.float64
    got = ldask.evaluate(q.x * 2.0 - q.x.mean(axis=-1, keepdims=True)).compute()
    assert got.to_list() == (x.x * 2.0 - x.x.mean(axis=-1, keepdims=True)).eval().to_list()
    assert ldask.evaluate(q.y.max()).compute() == 4
    with pytest.raises(AttributeError, match="fields x, y"):
        q.z  # noqa: B018
    with pytest.raises(lazyk.UnsupportedOperandError, match="records are not operands"):
        lazyk.sin(q)


def test_records_as_operands_as_on_one_machine():
    """Records themselves are refused as on one machine (UnsupportedOperandError naming the
    operation and the type, never Python's own TypeError or an identity `==`); their
    fields compute as on one machine, fixed and var ones."""
    import operator

    rows_ = [{"x": [1.0, 2.0], "y": 3}, {"x": [], "y": 4}, {"x": [5.0], "y": -1}] * 3
    flat_rows = [{"x": 1.5, "y": 3}, {"x": -2.0, "y": 4}, {"x": 0.0, "y": -1}] * 3
    other = lazyk.array([[1.0]] * 9, type="9 * var * float64")
    for data in (rows_, flat_rows):
        x = lazyk.array(data)
        q, o = ldask.from_ragged(x, 4), ldask.from_ragged(other, 4)
        refused = [lazyk.sin, lambda v: v + 1, lambda v: 1 + v, operator.eq, operator.ne,
                   lambda v: v == 1, lambda v: v + v, lambda v: np.sin(v), operator.neg,
                   lambda v: v.sum(), lambda v: lazyk.count(v, axis=0),
                   lambda v: v * (o if isinstance(v, ldask.RaggedRecords) else other),
                   lambda v: (o if isinstance(v, ldask.RaggedRecords) else other) < v]
        for fn in refused:
            args = (x, x) if fn in (operator.eq, operator.ne) else (x,)
            with pytest.raises(lazyk.UnsupportedOperandError) as one:
                fn(*args)
            args = (q, q) if fn in (operator.eq, operator.ne) else (q,)
            with pytest.raises(lazyk.UnsupportedOperandError) as got:
                fn(*args)
            # the same operation and types named, and what to do instead
            named = re.match(r"^.*?unsupported operand type\(s\) .*? \(", str(one.value))
            assert str(got.value).startswith(named.group(0)), (got.value, one.value)
            assert "use their fields" in str(got.value)
        with pytest.raises(lazyk.NotSupportedError, match="records are not operands"):
            ldask.evaluate(q)
    # fields: fixed and var, in one expression, reductions over axis 0 too
    x, q = lazyk.array(flat_rows), ldask.from_ragged(lazyk.array(flat_rows), 4)
    for fn in (lambda v: v.x * v.y + 1, lambda v: lazyk.where(v.y > 0, v.x, -v.x),
               lambda v: (v.x - v.y).max(), lambda v: v.x.mean(axis=0) * v.y):
        want, got = fn(x).eval(), ldask.evaluate(fn(q)).compute()
        np.testing.assert_allclose(np.asarray(got), want.to_numpy())
        assert np.asarray(got).dtype == want.to_numpy().dtype
    x, q = lazyk.array(rows_), ldask.from_ragged(lazyk.array(rows_), 2)
    fn = lambda v: lazyk.where(v.y > 0, v.x.sum(axis=-1), -1.0) + v.x.max(axis=-1, initial=0.0)  # noqa: E731
    np.testing.assert_allclose(ldask.evaluate(fn(q)).compute(), fn(x).eval().to_numpy())
    with pytest.raises(lazyk.ShapeError):  # var rows against the fixed dim of 9
        (x.x + x.y).eval()
    with pytest.raises(lazyk.ShapeError):  # (the rows' axis 0 against the last axis)
        ldask.evaluate(q.x + q.y).compute()


def test_partitions_of_one_size_share_the_rebuilt_graph(monkeypatch):
    """The graph rebuilt at a partition's shapes is kept per task function: partitions of
    one size rebuild it once (the per-task cost of our own on small partitions)."""
    calls = []
    shape_of = tasks.reshaped
    monkeypatch.setattr(tasks, "reshaped", lambda n, s, env=None: calls.append(n) or shape_of(n, s, env))
    y = lazyk.array([[1.0, 2.0], [3.0], [], [4.0]] * 4)
    counts = {}
    for step in (16, 4):  # one partition, then four of the same size
        calls.clear()
        got = ldask.evaluate(ldask.from_ragged(y, step) * 2 + 1).compute()
        assert got.to_list() == (y * 2 + 1).eval().to_list()
        counts[step] = len(calls)
    assert counts[4] == counts[16] > 0


def test_one_blockwise_layer_per_expression():
    from dask.blockwise import Blockwise

    x = ldask.from_ragged(lazyk.array([[1.0, 2.0], [3.0], [], [4.0]]), 2)
    for e in (lazyk.sin(x) * 2 + x, x.sum(axis=-1) * 3, lazyk.where(x > 1, x, 0).max(axis=-1)):
        r = ldask.evaluate(e)
        layers = r.__dask_graph__().layers
        assert len(layers) == 2, list(layers)  # the partitions, then one lazyk layer
        assert isinstance(layers[r.name], Blockwise)
        assert len(r.__dask_graph__()) == 2 * x.npartitions
    s = ldask.evaluate(x.sum())
    kinds = sorted(type(v).__name__ for v in s.__dask_graph__().layers.values())
    # the partitions, one blockwise layer of partials, the combine, the 0-d NumPy result
    assert kinds == ["Blockwise"] + ["MaterializedLayer"] * 3
    assert len(s.__dask_graph__()) == 2 * x.npartitions + 2


def test_refusals_name_what_they_refuse():
    y = lazyk.array([[1.0, 2.0], [3.0], [4.0], []])
    x2, x3 = ldask.from_ragged(y, 2), ldask.from_ragged(y, 3)
    with pytest.raises(lazyk.ShapeError, match=r"\(2, 2\).*\(3, 1\)"):
        ldask.evaluate(x2 + x3)
    with pytest.raises(lazyk.NotSupportedError, match="from_ragged"):
        ldask.evaluate(x2 + y)  # a ragged array that is not split like the rows
    with pytest.raises(lazyk.NotSupportedError, match="lazyk.dask.evaluate"):
        (x2 * 2).eval()
    with pytest.raises(lazyk.NotSupportedError, match=r"\.compute\(\)"):
        x2.eval()
    for bad in ({"a": 1}, object()):
        for rows in (None, 10):  # named by its type, with or without rows_per_part
            with pytest.raises(TypeError, match=type(bad).__name__):
                ldask.from_ragged(bad, rows)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        ldask.from_ragged([np.arange(3)])
    with pytest.raises(ValueError, match="rows_per_part"):
        ldask.from_ragged(y)
    with pytest.raises(ValueError, match="partition 1 has type"):
        ldask.from_ragged([y, lazyk.array([[1, 2]])])
    with pytest.raises(lazyk.NotSupportedError, match=r"var \* fixed_bytes\[2\]"):
        ldask.from_ragged(lazyk.array([[b"ab"], []], type="2 * var * fixed_bytes[2]"), 1)
    with pytest.raises(lazyk.NotSupportedError, match="leading fixed"):
        ldask.from_ragged(lazyk.array([[1.0], [2.0, 3.0]], type="var * var * float64")[0], 1)
    with pytest.raises(lazyk.ShapeError, match="axis 0 holds the rows"):
        ldask.evaluate(ldask.from_ragged(lazyk.array([1.0, None, 2.0, 3.0]), 2) + x2)
    masked = da.from_array(np.ma.masked_array([1.0, 2.0, 3.0, 4.0], [0, 1, 0, 0]), chunks=2,
                           asarray=False)
    with pytest.raises(lazyk.NotSupportedError, match="masked"):
        ldask.evaluate(x2.sum(axis=-1) + masked).compute()


def test_min_max_when_a_partition_has_nothing_to_fold():
    x = ldask.from_ragged(lazyk.array([[], [0.5], [], [-2.0, 3.0]]), 1)
    assert ldask.evaluate(x.min()).compute() == -2.0
    assert ldask.evaluate(x.max()).compute() == 3.0
    i = ldask.from_ragged(lazyk.array([[], [7], []], type="3 * var * int32"), 2)
    got = ldask.evaluate(i.min())
    assert got.dtype == np.int32 and got.compute() == 7
    with pytest.raises(ValueError, match="zero-size"):  # nothing at all: as NumPy
        ldask.evaluate(ldask.from_ragged(lazyk.array([[], []]), 1).max()).compute()


def test_axis0_folds_of_deeper_missing_rows_by_hand():
    # a fold of missing rows below a var dim would be one missing row in a partial, hiding
    # the present rows' lengths that must line up with other partitions': one task folds
    a = lazyk.array([[None, [1.0]], [[2.0, 3.0]], [[1.0], [4.0, None]]],
                    type="3 * var * ?var * ?float64")
    for step in (1, 2, 3):
        r = ldask.from_ragged(a, step)
        for skipna in (False, True):
            got = ldask.evaluate(r.sum(axis=0, skipna=skipna)).compute()
            want = a.sum(axis=0, skipna=skipna).eval()
            assert str(got.type) == str(want.type) and got.to_list() == want.to_list()
        got = ldask.evaluate(r.sum(axis=0, skipna=True)).compute()
        assert got.to_list() == [[3.0, 4.0], [7.0, 4.0]]
        assert str(got.type) == "var * var * float64"
    got = ldask.evaluate(ldask.from_ragged(a, 1).sum(axis=-1, skipna=True)).compute()
    assert got.to_list() == a.sum(axis=-1, skipna=True).eval().to_list()
    # rows in different partitions that do not line up: the error of one machine
    bad = lazyk.array([[None], [[2.0, 3.0]], [[1.0, 2.0, 3.0]]],
                      type="3 * var * ?var * float64")
    with pytest.raises(lazyk.ShapeError, match="length 2 and 3"):
        ldask.evaluate(ldask.from_ragged(bad, 1).sum(axis=0)).compute()
    empty = lazyk.array([], type="0 * var * ?var * float64")
    got = ldask.evaluate(ldask.from_ragged([empty, empty]).sum(axis=0)).compute()
    want = empty.sum(axis=0).eval()
    assert got.to_list() == [] and str(got.type) == str(want.type)


def _fold_as_one_machine(fn, a, x, ra, op, axis, keepdims, skipna, split_every=None,
                         refused=()):
    """Dask's fold of `x` (the partitions of `a`) gives one machine's answer (value, type,
    or error class) and the reference's (`ra`); `refused=(NotSupportedError,)`: a refusal
    on one machine is a refusal on Dask too."""
    try:
        want = fn(a).eval()
    except (*refused, ValueError) as err:  # ValueError: rows that do not fold, an empty min
        with pytest.raises(type(err)):
            ldask.evaluate(fn(x), split_every=split_every).compute()
        return
    got = ldask.evaluate(fn(x), split_every=split_every).compute()
    got = lazyk.array(np.asarray(got)) if isinstance(got, (np.ndarray, np.generic)) else got
    assert str(got.type) == str(want.type) and same(got.to_list(), want.to_list())
    try:
        ref = R.reduce(op, ra, axis=axis, keepdims=keepdims, skipna=skipna)
    except ValueError:
        return
    check(got, ref)


@settings(max_examples=10, deadline=None)
@given(rows(inner=("var * ?var * T", "var * ?var * var * T", "2 * ?var * T",
                   "var * var * ?var * T")),
       st.sampled_from(["sum", "prod", "min", "max", "any", "all", "mean", "count"]),
       st.sampled_from([0, None, (0, 1), (0, 2)]), st.booleans(), st.booleans())
def test_axis0_folds_of_deeper_missing_rows(drawn, op, axis, skipna, keepdims):
    """Axis-0 reductions over `N * var * ?var * T` (and deeper) against the reference:
    values, types, missing rows and values, the errors of rows that do not line up."""
    t, values, cuts = drawn
    a, ra = lazyk.array(values, type=t), R.array(values, t)
    x = split(a, cuts)
    fn = _reducer(op, axis, keepdims, skipna)
    _fold_as_one_machine(fn, a, x, ra, op, axis, keepdims, skipna,
                         refused=(lazyk.NotSupportedError,))


def test_missing_values_from_arrow_chunks():
    pa = pytest.importorskip("pyarrow")
    chunks = pa.chunked_array([pa.array([[1.0, None], [], [3.0]]), pa.array([], pa.list_(
        pa.float64())), pa.array([None, [4.0, 5.0]])])
    x = ldask.from_ragged(chunks)
    assert x.row_counts == (3, 0, 2) and str(x.type) == "5 * ?var * ?float64"
    got = ldask.evaluate(x.sum(axis=-1, skipna=True)).compute()
    assert got.to_list() == [1.0, 0.0, 3.0, None, 9.0]
    assert ldask.evaluate(x * 2).compute().to_list() == [[2.0, None], [], [6.0], None,
                                                         [8.0, 10.0]]
    assert ldask.evaluate(lazyk.count(x, axis=-1)).compute().to_list() == [1, 0, 1, None, 2]


def _load(i: int):
    """A partition made by a task (as a Parquet row group read on a worker)."""
    return lazyk.array([[float(i), None], [], [2.0 * i]], type="3 * var * ?float64")


def test_partitions_made_by_tasks():
    parts = [dask.delayed(_load)(i) for i in range(3)]
    r = ldask.from_delayed(parts, "N * var * ?float64", [3, 3, 3])
    assert r.row_counts == (3, 3, 3) and str(r.type) == "9 * var * ?float64"
    want = lazyk.array(sum((_load(i).to_list() for i in range(3)), []),
                       type="9 * var * ?float64")
    got = ldask.evaluate(r.sum(axis=-1, skipna=True))
    assert got.chunks == ((3, 3, 3),)
    np.testing.assert_array_equal(got.compute(), want.sum(axis=-1, skipna=True).to_numpy())
    assert ldask.evaluate(r * 2).compute().to_list() == (want * 2).eval().to_list()
    with pytest.raises(lazyk.ShapeError, match="part 1 has type 3 \\* var"):
        ldask.from_delayed(parts[:2], "N * var * ?float64", [3, 4]).compute()
    with pytest.raises(lazyk.TypeMatchError, match="part 0"):
        ldask.from_delayed(parts[:1], "N * var * int64", [3]).compute()
    with pytest.raises(ValueError, match="row counts"):
        ldask.from_delayed(parts, "N * var * float64", [3])
    with pytest.raises(ValueError, match=r"row counts \(known integers >= 0\), not \[nan, 3"):
        ldask.from_delayed(parts, "N * var * float64", [float("nan"), 3, 3])
    with pytest.raises(ValueError, match="no parts"):
        ldask.from_delayed([], "N * var * float64", [])
    assert ldask.from_delayed(parts, "N * var * ?float64", [3.0, 3, np.int64(3)]).row_counts \
        == (3, 3, 3)


# ---------------------------------------------------------------- a 2-process cluster
def test_cluster_pickles_tasks_and_compiles_once_per_worker():
    distributed = pytest.importorskip("distributed")
    from lazyk.kernel import nest as nest_kernel

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address="127.0.0.1:0")
    client = distributed.Client(cluster)
    try:
        rng = np.random.default_rng(5)
        lengths = rng.integers(0, 5, 600)
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        x = lazyk.from_offsets(offsets, rng.random(offsets[-1]))
        r = ldask.from_ragged(x, 50)  # 12 partitions of 50 rows, on two workers
        e = ldask.evaluate((lazyk.sin(r) * 2).sum(axis=-1))
        want = (lazyk.sin(x) * 2).sum(axis=-1).to_numpy()
        # (a function of this module would make each worker import the test module)
        stats = functools.partial(getattr, nest_kernel, "nest_stats")
        before = client.run(stats)
        np.testing.assert_allclose(client.compute(e).result(timeout=60), want, rtol=1e-12)
        first = client.run(stats)
        # another collection of other sizes: the same kernels, no compile anywhere
        r2 = ldask.from_ragged(x[5:], 41)
        e2 = ldask.evaluate((lazyk.sin(r2) * 2).sum(axis=-1))
        np.testing.assert_allclose(client.compute(e2).result(timeout=60), want[5:],
                                   rtol=1e-12)
        second = client.run(stats)
        made = {w: first[w]["compiles"] - before[w]["compiles"] for w in first}
        assert sum(first[w]["runs"] - before[w]["runs"] for w in first) >= 12
        assert all(n <= 2 for n in made.values()), made  # count pass + fill pass at most
        assert all(second[w]["compiles"] == first[w]["compiles"] for w in first)
        ragged = client.compute(ldask.evaluate(r * 2)).result(timeout=60)
        assert ragged.to_list() == (x * 2).eval().to_list()
        mean = client.compute(ldask.evaluate(r.mean(axis=None))).result(timeout=60)
        np.testing.assert_allclose(mean, x.mean().eval().to_numpy(), rtol=1e-12)
        # parts made on the workers (lazyk.array pickles by name: no test module there)
        loaded = ldask.from_delayed([dask.delayed(lazyk.array)(_load(i).to_list(),
                                                               type="3 * var * ?float64")
                                     for i in range(4)], "N * var * ?float64", [3] * 4)
        got = client.compute(ldask.evaluate(loaded.max(skipna=True))).result(timeout=60)
        assert got.to_list() == 6.0
        # strings and records travel between processes (as Python values)
        words = lazyk.array([["kiwi", "fig"], [], ["kiwi"] * 3, ["é", None]] * 5,
                            type="20 * var * ?string")
        rw = ldask.from_ragged(words, 3)
        got = client.compute(ldask.evaluate((rw == "kiwi").sum(axis=-1, skipna=True)))
        np.testing.assert_array_equal(got.result(timeout=60), [1, 0, 3, 0] * 5)
        assert client.compute(rw).result(timeout=60).to_list() == words.to_list()
        rec = lazyk.array([{"x": [1.0, 2.0], "y": 3}, {"x": [], "y": 4}] * 3)
        q = ldask.from_ragged(rec, 4)
        got = client.compute(ldask.evaluate(q.x.sum(axis=-1) * q.y)).result(timeout=60)
        np.testing.assert_array_equal(got, [9.0, 0.0] * 3)
        # axis-0 folds of missing rows: partials that say what they folded travel too
        holes = lazyk.array([None, [1.0, 2.0], None, None, [0.5, None], [3.0]] * 2,
                            type="12 * ?var * ?float64")
        rh = ldask.from_ragged(holes, 2)
        for kw in ({"skipna": True}, {}):
            got = client.compute(ldask.evaluate(rh.sum(axis=0, **kw), split_every=2))
            got, want = got.result(timeout=60), holes.sum(axis=0, **kw).eval()
            assert got.to_list() == want.to_list() and str(got.type) == str(want.type)
        assert got.to_list() is None and want.to_list() is None
    finally:
        client.close()
        cluster.close()


def test_masked_dask_arrays_map_to_missing_values():
    rng = np.random.default_rng(11)
    d = np.ma.masked_array(rng.integers(-5, 5, (9, 3)).astype(np.float64),
                           rng.random((9, 3)) < 0.3)
    m = da.from_array(d, chunks=(4, 2), asarray=False)
    with pytest.raises(lazyk.NotSupportedError, match="masked"):
        ldask.evaluate(lazyk.sin(m))  # the mask would be ignored: refused, not dropped
    hidden = da.from_delayed(dask.delayed(np.ma.masked_array)(d.data, d.mask), d.shape,
                             d.dtype)  # masked blocks behind a plain meta: refused when run
    with pytest.raises(lazyk.NotSupportedError, match="masked"):
        ldask.evaluate(lazyk.sin(hidden)).compute()
    x = ldask.from_ragged(m)  # chunks along axis 0 are the partitions; masked = missing
    assert x.row_counts == (4, 4, 1) and str(x.type) == "9 * 3 * ?float64"
    v = da.from_array(np.ma.array([1.0, 2.0, 3.0, 4.0, 5.0], mask=[0, 1, 0, 0, 0]), chunks=2,
                      asarray=False)  # boolean indexing: sizes unknown, plain metadata
    kept = ldask.from_ragged(v[v > 1.5])
    assert str(kept.type) == "var * ?float64"
    assert kept.compute().to_list() == [None, 3.0, 4.0, 5.0]  # (as Dask computes it)
    s = ldask.evaluate(x.sum(axis=-1))  # a missing value makes the row's sum missing
    got = s.to_dask_array()
    assert got.chunks == ((4, 4, 1),)
    out = got.compute()
    assert isinstance(out, np.ma.MaskedArray)
    np.testing.assert_array_equal(out.mask, d.mask.any(axis=-1))
    np.testing.assert_allclose(out.compressed(), d.data.sum(axis=-1)[~d.mask.any(axis=-1)])
    skip = ldask.evaluate(x.sum(axis=-1, skipna=True))  # plain result: a dask.array
    assert isinstance(skip, da.Array)
    np.testing.assert_allclose(skip.compute(), d.sum(axis=-1).filled(0.0))
    np.testing.assert_allclose(ldask.evaluate(x.mean(skipna=True)).compute().to_list(),
                               d.mean())
    col = ldask.evaluate(x.max(axis=0, skipna=True)).to_dask_array().compute()
    np.testing.assert_array_equal(col.filled(-99), d.max(axis=0).filled(-99))
    with pytest.raises(lazyk.NotSupportedError, match="to_dask_array"):
        ldask.from_ragged(lazyk.array([[1.0], []]), 1).to_dask_array()


def test_threads_persist_strings_and_tokens():
    from dask.base import tokenize

    y = lazyk.array([[1.0, 2.0], [3.0], [], [4.0]])
    r = ldask.from_ragged(y, 2)
    with dask.config.set(scheduler="threads"):
        assert ldask.evaluate(r * 2).compute().to_list() == [[2.0, 4.0], [6.0], [], [8.0]]
        kept = ldask.evaluate(r * 2).persist()
        assert isinstance(kept, ldask.RaggedArray) and kept.row_counts == (2, 2)
        assert ldask.evaluate(kept.sum(axis=-1)).compute().tolist() == [6.0, 6.0, 0.0, 8.0]
    got = ldask.evaluate("sum(r * 2, axis=-1)")  # numexpr-style strings take collections
    np.testing.assert_array_equal(got.compute(), [6.0, 6.0, 0.0, 8.0])
    assert tokenize(r * 2) == tokenize(r * 2) and tokenize(r * 2) != tokenize(r * 3)
    assert ldask.evaluate(r * 2).name == ldask.evaluate(r * 2).name


@settings(max_examples=12, deadline=None)
@given(rows(inner=("?var * var * T", "?var * var * var * T")),
       st.sampled_from(["sum", "prod", "min", "max", "any", "all", "mean", "count"]),
       st.sampled_from([(0, 2), (0, 3), (0, 2, 3)]), st.booleans(), st.booleans(),
       st.sampled_from([None, 2]))
def test_rows_axis_folds_keeping_missing_rows(drawn, op, axis, skipna, keepdims,
                                              split_every):
    """Reductions of `N * ?var * var * T` over axes that keep the `?var` rows: Dask folds
    its partials (`k * ?var * 1 * T`) as `k * ?var * T` over axis 0, and answers as one
    machine and the reference do (values, types, missing rows, errors)."""
    t, values, cuts = drawn
    a, ra = lazyk.array(values, type=t), R.array(values, t)
    if max(axis) >= ra.type.ndim:
        axis = (0, 2)
    x = split(a, cuts)
    fn = _reducer(op, axis, keepdims, skipna)
    _fold_as_one_machine(fn, a, x, ra, op, axis, keepdims, skipna, split_every)


def test_errors_name_the_collections_rows():
    """A ShapeError raised in a partition names the row of the whole collection (the
    partition's first row + its own row), as one machine does; a fold across partitions
    names the rows the mismatching partial folded."""
    n = 1200
    rows_ = [[1.0, 2.0]] * n
    bad = list(rows_)
    bad[1003] = [1.0, 2.0, 3.0]
    a = lazyk.array(rows_, type=f"{n} * var * float64")
    b = lazyk.array(bad, type=f"{n} * var * float64")
    x, y = ldask.from_ragged(a, 500), ldask.from_ragged(b, 500)
    assert y.row_counts == (500, 500, 200)
    for e in (lambda p, q: p + q, lambda p, q: (p * 2 + q).sum(axis=-1),
              lambda p, q: (p + q).sum(axis=0)):
        with pytest.raises(lazyk.ShapeError, match=r"^row 1003: ") as one:
            e(a, b).eval()
        with pytest.raises(lazyk.ShapeError) as got:
            ldask.evaluate(e(x, y)).compute()
        assert str(got.value) == str(one.value)
    with pytest.raises(lazyk.ShapeError, match=r"^row 1003: rows of length 2 and 3"):
        ldask.evaluate(y.sum(axis=0)).compute()
    empty = list(rows_)
    empty[1100] = []
    with pytest.raises(ValueError, match="zero-size row 1100 in reduction min"):
        ldask.evaluate(ldask.from_ragged(lazyk.array(empty), 500).min(axis=-1)).compute()
    # missing rows right under the outer rows (dropped from the partials) and deeper ones
    holes = [None if i % 7 == 0 else [1.0, 2.0] for i in range(n)]
    holes[1004] = [1.0, 2.0, 3.0]
    h = lazyk.array(holes, type=f"{n} * ?var * float64")
    deep = lazyk.array([[r] for r in holes], type=f"{n} * var * ?var * float64")
    for v, axis in ((h, 0), (deep, 0)):
        for skipna in (False, True):
            with pytest.raises(lazyk.ShapeError) as one:
                v.sum(axis=axis, skipna=skipna).eval()
            with pytest.raises(lazyk.ShapeError) as got:
                ldask.evaluate(ldask.from_ragged(v, 300).sum(axis=axis, skipna=skipna)
                               ).compute()
            assert "1004" in str(one.value) and str(got.value) == str(one.value)
    # elementwise: the path's first index is the outer row
    c = lazyk.array([[[1.0], [2.0, 5.0]]] * 6, type="6 * var * var * float64")
    d = lazyk.array([[[1.0], [2.0]]] * 4 + [[[1.0], [2.0, 3.0, 4.0]]] * 2,
                    type="6 * var * var * float64")
    with pytest.raises(lazyk.ShapeError, match=r"^row \[4, 1\]: "):
        ldask.evaluate(ldask.from_ragged(c, 3) + ldask.from_ragged(d, 3)).compute()
    # rows that line up in each partition but not across them: the partial's rows
    two = lazyk.array([[1.0, 2.0]] * 6 + [[1.0, 2.0, 3.0]] * 6)
    for split_every in (None, 2):
        with pytest.raises(lazyk.ShapeError, match=r"^rows 6\.\.7: rows of length 2 and 3"):
            ldask.evaluate(ldask.from_ragged(two, 2).sum(axis=0),
                           split_every=split_every).compute()
    tall = lazyk.array([[r] for r in two.to_list()], type="12 * var * var * float64")
    with pytest.raises(lazyk.ShapeError, match=r"^rows \[6\.\.7, 0\]: rows of length 2"):
        ldask.evaluate(ldask.from_ragged(tall, 2).sum(axis=(0, 1))).compute()
    # partitions made by tasks and Dask array chunks carry their first row too
    load = dask.delayed(lambda i: lazyk.array(rows_[:500] if i < 2 else bad[1000:],
                                              type="N * var * float64".replace(
                                                  "N", str(500 if i < 2 else 200))))
    g = ldask.from_delayed([load(i) for i in range(3)], "N * var * float64", [500, 500, 200])
    with pytest.raises(lazyk.ShapeError, match=r"^row 1003: "):
        ldask.evaluate(g + x).compute()
    m = ldask.from_ragged(da.ones((n, 2), chunks=(500, 2)))
    with pytest.raises(lazyk.ShapeError, match=r"^row 1003: "):
        ldask.evaluate(m + y).compute()
    q = ldask.from_ragged(lazyk.array([{"x": r, "y": 1} for r in bad]), 500)
    with pytest.raises(lazyk.ShapeError, match=r"^row 1003: "):
        ldask.evaluate(q.x + x).compute()


@pytest.mark.parametrize("t", ["3 * ?var * var * var * float64", "3 * var * var * var * float64"])
def test_a_partition_folding_no_row_above_kept_var_rows(t):
    # the partition of [[]] folds no row along axis 2 under the kept axis 1: its rows at
    # axis 3 have no length of their own (one task folds the joined rows)
    a = lazyk.array([[[[0.0, 1.0]]], [[]], [[[2.0, 3.0]]]], type=t)
    want = a.sum(axis=(0, 2)).eval()
    assert want.to_list() == [[2.0, 4.0]]
    for k in (1, 2, 3):
        got = ldask.evaluate(ldask.from_ragged(a, k).sum(axis=(0, 2))).compute()
        assert str(got.type) == str(want.type) and got.to_list() == want.to_list()


def test_a_min_of_nothing_in_a_partition_does_not_poison_stretched_rows():
    a = lazyk.array([[[[0.0], [0.0, 1.0]], [], [[2.0]]], [[[]]]],
                    type="2 * ?var * var * var * float64")
    want = a.min(axis=(0, 2, 3)).eval()
    assert want.to_list() == [0.0, None, 2.0]
    got = ldask.evaluate(ldask.from_ragged(a, 1).min(axis=(0, 2, 3))).compute()
    assert str(got.type) == str(want.type) and got.to_list() == want.to_list()



def test_compiled_expressions_take_collections():
    data = [[1.0, 2.0], [3.0], [], [4.0, 5.0, 6.0], [None, 7.0]]
    x = lazyk.array(data, "5 * var * ?float64")
    parts = ldask.from_ragged(x, 2)
    px = lazyk.placeholder("x", "N * var * ?float64")
    py = lazyk.placeholder("y", "N * float64")
    y = np.arange(5.0)
    for k, args in [(lazyk.compile((px * 2).sum(axis=-1)), (x,)),
                    (lazyk.compile(px[px > 2.5] * 2), (x,)),
                    (lazyk.compile(lazyk.num(px, axis=1) + py), (x, y)),
                    (lazyk.compile(px.max(axis=-1) - py), (x, y))]:
        want = k(*args)
        got = k(parts, *[da.from_array(a, chunks=2) for a in args[1:]])
        assert hasattr(got, "__dask_graph__")
        got = got.compute()
        assert str(got.type if hasattr(got, "type") else lazyk.array(got).type) == \
            str(want.type if hasattr(want, "type") else lazyk.array(want).type)
        assert lazyk.array(got).tolist() == lazyk.array(want).tolist()
    k = lazyk.compile(px.sum(axis=-1) + py)
    with pytest.raises(lazyk.ShapeError, match=r"dimension N is 5 in 'x' \(axis 0\) but 4 in "
                       r"'y'"):  # (as a call on one machine)
        k(parts, da.arange(4.0, chunks=2))
    with pytest.raises(lazyk.ShapeError, match=r"dimension N is 5 in 'x' \(axis 0\) but 4"):
        k(x, np.arange(4.0))
    ints = k(ldask.from_ragged(lazyk.array([[1, 2]]), 1), da.arange(1.0, chunks=1))
    assert ints.compute().tolist() == [3.0]  # (numbers converted, as a call converts them)
    with pytest.raises(lazyk.TypeMatchError, match="element type complex128"):
        k(ldask.from_ragged(lazyk.array([[1j, 2]]), 1), da.arange(1.0, chunks=1))
    with pytest.raises(lazyk.NotSupportedError, match="out= with Dask inputs"):
        k(parts, da.from_array(y, chunks=2), out=np.empty(5))


def test_compiled_calls_on_dask_refuse_integers_that_do_not_fit():
    px, py = lazyk.placeholder("x", "N * var * int8"), lazyk.placeholder("y", "N * int8")
    rows_ = lazyk.from_offsets(np.array([0, 2, 3]), np.array([1, 2, 5]))
    big = lazyk.from_offsets(np.array([0, 2, 3]), np.array([1, 300, 5]))
    k = lazyk.compile(lazyk.sum(px, axis=1) + py)
    ok = k(ldask.from_ragged(rows_, 1), da.from_array(np.array([1, 2]), chunks=1))
    assert ok.compute().tolist() == [4, 7]
    for x, y, name, bad in [(big, np.array([1, 2]), "x", 300), (rows_, np.array([1, 300]), "y", 300)]:
        got = k(ldask.from_ragged(x, 1), da.from_array(y, chunks=1))  # (checked as computed)
        with pytest.raises(lazyk.CastingError, match=f"'{name}': the value {bad} does not fit"):
            got.compute()
    shifted = ldask.from_ragged(rows_, 1) + 200  # (an expression over a collection)
    with pytest.raises(lazyk.CastingError, match="'x': the value 20[1-5] does not fit"):
        k(shifted, da.from_array(np.array([1, 2]), chunks=1)).compute()
    wrapped = k(shifted, da.from_array(np.array([1, 2]), chunks=1), casting="unsafe")
    assert wrapped.compute().tolist() == [(201 + 202 - 512) + 1, (205 - 256) + 2]
    dense = lazyk.compile(lazyk.placeholder("z", "N * int8") * 2)
    with pytest.raises(lazyk.CastingError, match="'z': the value 300 does not fit"):
        dense(da.from_array(np.array([1, 300, 5]), chunks=2)).compute()
    assert dense(da.from_array(np.array([1, 3, 5]), chunks=2)).compute().tolist() == [2, 6, 10]


@pytest.mark.parametrize("per_part", [1, 2, 5])
def test_rows_of_strings_selected_by_a_mask_of_rows(per_part):
    rows_ = [["kiwi", "x"], [], ["fig"], [None, "a", "bc"], []]
    s = ldask.from_ragged(lazyk.array(rows_, "5 * var * ?string"), per_part)
    with dask.config.set(scheduler="synchronous"):
        got = ldask.evaluate(s[lazyk.num(s) > 0]).compute()
        lengths = ldask.evaluate(lazyk.str_len(s[lazyk.num(s) > 0])).compute()
    assert got.to_list() == [r for r in rows_ if r]
    assert lengths.to_list() == [[None if v is None else len(v) for v in r] for r in rows_ if r]


def test_an_index_out_of_a_row_names_the_collections_row():
    w = lazyk.array([[1.0, 5.0], [2.0], [], [7.0]])
    d = ldask.from_ragged(w, 2)
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(IndexError, match=r"row 2 has 0 elements"):
            ldask.evaluate(d[:, 0]).compute()
        with pytest.raises(IndexError, match=r"\(at \[2, 0\]\) is out of range for row \[2\]"):
            ldask.evaluate(d[lazyk.array([[0], [0], [0], [0]])]).compute()


def test_explain_shows_the_work_of_one_partition():
    d = ldask.from_ragged(lazyk.array([[1.0, None], None, [2.0]]), 2)
    text = lazyk.explain(lazyk.sum(d * 2, axis=1, skipna=True))
    assert text.startswith("== the work of one Dask partition")
    assert "N * ?var * ?float64" in text and "define" in text  # the type and the LLVM IR
    s = ldask.from_ragged(lazyk.array([["a", "b"], [], None]), 2)
    assert "row operations" in (s[s != "a"]).explain()


def test_a_record_field_called_name_reads_as_on_one_machine():
    pa = pytest.importorskip("pyarrow")
    rows = lazyk.from_arrow(pa.table({"name": ["kiwi", "fig", None], "price": [3.0, 1.0, 2.0]}))
    q = ldask.from_ragged(rows, 2)
    want = lazyk.evaluate((rows.name == "kiwi") | (rows.price < 2)).to_list()
    assert ldask.evaluate((q.name == "kiwi") | (q.price < 2)).compute().tolist() == want
    assert q.compute().to_list() == rows.to_list()


def test_lazy_records_over_collections_evaluate_to_record_collections():
    x = lazyk.array([[1.0, 2.0, 3.0], [], [4.0, 5.0]])
    X = ldask.from_ragged(x, 2)
    p = ldask.evaluate(lazyk.combinations(X, 2))
    assert isinstance(p, ldask.RaggedRecords) and str(p.type) == "3 * var * (float64, float64)"
    assert p.compute().to_list() == lazyk.combinations(x, 2).eval().to_list()
    assert ldask.evaluate(p["0"] + p["1"]).compute().to_list() == [[3.0, 4.0, 5.0], [], [9.0]]
    z = ldask.evaluate(lazyk.zip({"a": X, "b": X * 2}))
    assert z.compute().to_list() == lazyk.zip({"a": x, "b": x * 2}).eval().to_list()
    r = lazyk.array([{"x": [1.0], "y": 3}, {"x": [], "y": 1}, {"x": [5.0, 6.0], "y": 4}])
    q = ldask.from_ragged(r, 2)
    assert ldask.evaluate(q[q.y > 2]).compute().to_list() == r[r.y > 2].eval().to_list()


def test_dask_masks_and_empty_chunked_arrays():
    pa = pytest.importorskip("pyarrow")
    X = ldask.from_ragged(lazyk.array([[1.0, 2.0], [], [3.0], [4.0]]), 2)
    m = da.from_array(np.array([True, False, True, True]), chunks=2)
    assert ldask.evaluate(X[m]).compute().to_list() == [[1.0, 2.0], [3.0], [4.0]]
    c = ldask.from_ragged(pa.chunked_array([], pa.list_(pa.float64())))
    assert str(c.type) == "0 * var * float64" and c.compute().to_list() == []


def test_a_lazyk_string_array_joins_a_string_collection():
    tags = lazyk.array([["kiwi", "x"], [], None, ["café", None, ""]])
    want = lazyk.array(["kiwi", "b", "c", "café"])[:, None]
    got = ldask.evaluate(ldask.from_ragged(tags, 2) == want).compute()
    assert got.to_list() == lazyk.evaluate(tags == want).to_list() == \
        [[True, False], [], None, [True, None, False]]


def test_an_operand_of_fewer_dims_broadcasts_from_the_right_whatever_its_length():
    x = lazyk.array([[1.0, 2.0, 3.0], [4.0, 4.0, 4.0], [5.0, 6.0, 7.0]], "3 * var * float64")
    w = np.array([10.0, 20.0, 30.0])  # (as long as the rows: still one weight per item)
    want = (x * w).eval().to_list()
    for n in (1, 2, 3):
        got = ldask.evaluate(ldask.from_ragged(x, n) * w).compute()  # (3 * 3: NumPy's)
        assert np.asarray(got).tolist() == want
    r = lazyk.array([[1.0], [2.0, 3.0], [4.0]])
    got = ldask.evaluate(lazyk.num(ldask.from_ragged(r, 2)) * np.array([1.0, 2.0, 3.0]))
    assert got.compute().tolist() == [1.0, 4.0, 3.0]  # (as many dims: split by the rows)


def test_float32_folds_over_missing_rows_against_a_fixed_dim():
    # a sum over (0, 1) of `N * ?var * 2 * var * float32` has `?2` rows: Dask's partials
    # add in float32 there (its float64 partials could not be rounded as `?2` operands)
    t = "3 * ?var * 2 * var * float32"
    rows = [[[[1.5], [2.0, 3.0]], [[0.5], [1.0, 1.0]]], None, [[[4.0], [5.0, 6.0]]]]
    for values, ty in ((rows, t), ([], "0" + t[1:]), ([rows[0], rows[2]], "2" + t[1:])):
        a = lazyk.array(values, type=ty)
        for skipna in (False, True):
            want = a.sum(axis=(0, 1), skipna=skipna).eval()
            for cuts in (1, 2):
                got = ldask.evaluate(ldask.from_ragged(a, cuts).sum(axis=(0, 1),
                                                                    skipna=skipna)).compute()
                assert str(got.type) == str(want.type)
                assert got.to_list() == want.to_list()
    assert want.to_list() == [[6.0], [8.0, 10.0]]
    assert str(lazyk.array(rows, type=t).sum(axis=(0, 1)).eval().type) == "?2 * var * ?float32"


def test_records_under_rows_that_may_be_missing():
    pa = pytest.importorskip("pyarrow")
    rows = [[{"pt": 10.0, "q": 1}], None, [], [{"pt": 30.0, "q": -1}, {"pt": 5.0, "q": 1}]]
    a = lazyk.from_arrow(pa.array(rows))  # 4 * ?var * {pt: float64, q: int64}
    for cuts in (1, 2, [1, 3]):
        d = split(a, cuts)
        for fn in (lambda r: lazyk.sum(r.pt, axis=1), lambda r: r.pt * r.q,
                   lambda r: lazyk.num(r.pt[r.q > 0], axis=1)):
            got = ldask.evaluate(fn(d)).compute()
            want = fn(a).eval()
            assert str(got.type) == str(want.type) and got.to_list() == want.to_list()
    assert ldask.from_ragged(a, 2).compute().to_list() == rows


@pytest.mark.parametrize("op", ["min", "max"])
def test_extrema_whose_groups_one_partition_leaves_empty(op):
    # `N * ?var * 2 * var` over (0, 1, 3): each partition holds one row, whose inner lists
    # leave one of the two kept positions empty; the other partition fills it
    a = lazyk.array([[[[], [1.0]]], [[[3.0], []]], None], type="3 * ?var * 2 * var * float64")
    want = getattr(lazyk, op)(a, axis=(0, 1, 3), skipna=True).eval().to_list()
    assert want == [3.0, 1.0]
    for rows in (1, 2):
        x = ldask.from_ragged(a, rows)
        got = ldask.evaluate(getattr(lazyk, op)(x, axis=(0, 1, 3), skipna=True)).compute()
        assert got.to_list() == want
    empty = lazyk.array([[[[], []]]], type="1 * ?var * 2 * var * float64")
    got = ldask.evaluate(getattr(lazyk, op)(ldask.from_ragged(empty, 1), axis=(0, 1, 3)))
    assert got.compute().to_list() == [None, None]  # (as one machine: nothing to fold)


def test_numpy_operands_as_long_as_the_rows_that_never_meet_them():
    # w pairs with the fold over the rows (2 values), not with the 2 rows: whole, as on
    # one machine; beside the rows, the same w is split with them
    x = lazyk.array([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0]]], type="2 * var * 2 * float64")
    w = np.array([1.0, 2.0])
    d = ldask.from_ragged(x, 1)
    for e in (lambda a: lazyk.sum(a, axis=(0, 1)) + w,
              lambda a: lazyk.sum(lazyk.sum(a, axis=-1), axis=-1) * w):
        want = e(x).eval()
        got = ldask.evaluate(e(d)).compute()
        assert np.asarray(got).tolist() == np.asarray(want.to_numpy() if hasattr(
            want, "to_numpy") else want).tolist()


def test_one_collection_paired_twice_in_one_expression():
    # jet cleaning against two lepton collections: two nested products of the same jets
    j = lazyk.array([[1.0, 2.0], [], [3.0]])
    m = lazyk.array([[1.5], [2.0, 5.0], []])
    e = lazyk.array([[0.5, 9.0], [1.0], [2.0]])

    def clean(j, m, e):
        cm = lazyk.cartesian({"j": j, "l": m}, nested=True)
        ce = lazyk.cartesian({"j": j, "l": e}, nested=True)
        return lazyk.all(abs(cm.j - cm.l) > 0.2, axis=-1) & \
            lazyk.all(abs(ce.j - ce.l) > 0.2, axis=-1)
    want = clean(j, m, e).eval().to_list()
    assert want == [[True, True], [], [True]]
    for k in (1, 2):
        got = ldask.evaluate(clean(*(ldask.from_ragged(a, k) for a in (j, m, e))))
        assert got.compute().to_list() == want


def test_fixed_lazyk_operands_with_missing_values_split_with_the_rows():
    v = lazyk.array([[1.0, 2.0], [], [3.0]], type="3 * var * float64")
    m = lazyk.array([True, None, True])  # (3 * ?bool: a row mask that may be missing)
    w = lazyk.array([1.0, None, 2.0])
    for k in (1, 2, 3):
        d = ldask.from_ragged(v, k)
        assert ldask.evaluate(d[m]).compute().to_list() == v[m].eval().to_list() == \
            [[1.0, 2.0], None, [3.0]]
        assert ldask.evaluate(d * w[:, None]).compute().to_list() == \
            (v * w[:, None]).eval().to_list()


def test_folds_over_the_leading_object_of_rows_that_may_be_missing():
    # the take-back at argmax(keepdims=True) of ?var rows (rows of 1 that may be missing),
    # folded over the rows' axis: a partition of missing rows only adds nothing
    x = lazyk.array([None, [-2.0, 2.0], [2.0, 0.0], [1.0]], type="4 * ?var * float64")

    def lead(z):
        return z[lazyk.argmax(z, axis=1, keepdims=True)]
    for f in (lambda z: lazyk.sum(lead(z), axis=0, skipna=True),
              lambda z: lazyk.mean(lead(z), axis=0, skipna=True),
              lambda z: lazyk.count(lead(z), axis=0), lambda z: lead(z) * 2):
        want = f(x).eval().to_list()
        for k in (1, 2, 4):
            got = ldask.evaluate(f(ldask.from_ragged(x, k))).compute()
            assert (got.to_list() if hasattr(got, "to_list") else
                    np.asarray(got).tolist()) == want


def test_ragged_and_plain_results_computed_together_come_back_in_place():
    # dask.compute groups collections by their optimizer and answers group by group: the
    # ragged results share dask.array's, so a fold's plain result keeps its place
    rows = ldask.from_ragged(lazyk.array([[1.0, 2.0], [], [3.0], [4.0, 5.0]]), 2)
    ragged, plain, ragged2 = (ldask.evaluate(rows * 10), ldask.evaluate(rows.sum(axis=-1)),
                              ldask.evaluate(rows + 1))
    r1, p, r2 = dask.compute(ragged, plain, ragged2, scheduler="sync")
    assert r1.to_list() == [[10.0, 20.0], [], [30.0], [40.0, 50.0]]
    assert p.tolist() == [3.0, 0.0, 3.0, 9.0]
    assert r2.to_list() == [[2.0, 3.0], [], [4.0], [5.0, 6.0]]


def test_zip_of_rows_two_masks_made_is_refused_as_their_arithmetic_is():
    met = lazyk.array([1.0, 2.0, 3.0, 4.0])
    m1, m2 = lazyk.array([True, False, True, True]), lazyk.array([True, True, True, False])
    dmet, d1, d2 = (ldask.from_ragged(a, 2) for a in (met, m1, m2))
    for fields in ({"a": dmet[d1], "b": dmet[d2]}, {"a": dmet[d1], "b": dmet}):
        with pytest.raises(lazyk.NotSupportedError, match=r"with_rows: rows selected"):
            ldask.evaluate(lazyk.zip(fields)).compute()
    # fields of the same rows pair partition by partition, as on one machine
    x, y = lazyk.array([[1.0, 2.0], [3.0], []]), lazyk.array([[5.0, 6.0], [7.0], []])
    got = ldask.evaluate(lazyk.zip({"a": ldask.from_ragged(x, 2), "b": ldask.from_ragged(y, 2)}))
    assert got.compute().to_list() == lazyk.zip({"a": x, "b": y}).eval().to_list()
