"""Awkward's row vocabulary in lazyk (`lazyk.num`, `flatten`, `firsts`, `local_index`,
`concatenate`, `is_none`, `fill_none`, `pad_none`, `sort`, `argsort`, `cumsum`,
`cumprod`, `std`, `var`) against the plain-Python reference (tests/ragged_reference.py,
itself checked against Awkward 2 by tests/test_reference_vs_awkward.py) over every drawn
layout (empty rows and arrays, length-1 rows, `?T`, `?var` at any depth, fixed dims, depth
2 and 3): values, missing positions, the result's type string, and the lazy type before
evaluation (which shows `var` for an outer length known only once computed)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
from lazyk.arrays import memory
from tests import ragged_reference as R
from tests import ragged_strategies as S
from tests.test_ragged_reference import ak_array, same
from tests.test_reference_vs_awkward import indexed

try:
    import awkward as ak
except ImportError:
    ak = None

LAYOUTS = S.LAYOUTS + S.QNEST_LAYOUTS + ("N * ?var * T",)
NESTED = tuple(t for t in LAYOUTS if t.count("*") >= 2)
FEW = settings(max_examples=25)


def drawn(data, layouts=LAYOUTS, dtypes=S.DTYPES, nan=False):
    """(reference array, lazyk array) of one drawn layout."""
    t, d = data.draw(S.ragged(layouts=layouts, dtypes=dtypes, nan=nan), label="array")
    return R.array(d, t), lazyk.array(d, t)


def lazy_type_fits(lazy, got) -> bool:
    """The type before evaluation is the result's, but for an outer length it shows as
    `var` until it is known (and an array `var * X`, one row, keeps its `var` where the
    reference names its length)."""
    a, b = str(lazy).split(" * "), str(got).split(" * ")
    return a == b or (len(a) == len(b) and a[0] == "var" and a[1:] == b[1:])


def check(expr, ref, rel=1e-6):
    """`expr` evaluates to the reference's values, missing positions and type."""
    got = expr.eval()
    data = got.to_list() if got.type.ndim else got.to_list()
    assert same(data, ref.data, rel), (data, ref.data)
    assert lazy_type_fits(got.type, ref.type), (str(got.type), str(ref.type))
    assert lazy_type_fits(expr.type, got.type), (str(expr.type), str(got.type))
    return got


# ---------------------------------------------------------------- structure
@FEW
@given(st.data())
def test_num(data):
    ref_x, x = drawn(data)
    nd = ref_x.type.ndim
    axis = data.draw(st.integers(-nd, nd - 1), label="axis")
    ref = R.num(ref_x, axis)
    if axis % nd == 0:
        got = lazyk.num(x, axis=axis).eval()
        assert int(got) == ref.data and got.to_numpy().dtype == np.int64
        return
    check(lazyk.num(x, axis=axis), ref)


def test_num_of_lists_is_computed_by_the_kernel_that_reads_it(monkeypatch):
    """The lengths of lists none of which is missing are offsets[1:] - offsets[:-1] in the
    kernel that reads them: `num(a) + num(b) >= 3` stores no lengths (rows of int32
    offsets, a sliced array and lists of lists too; missing lists keep the row operation)."""
    from lazyk.runtime import row_steps

    ran = []
    real = row_steps._restructured
    monkeypatch.setattr(row_steps, "_restructured",
                        lambda name, *a: ran.append(name) or real(name, *a))
    a = lazyk.from_offsets(np.array([0, 2, 2, 5, 9], np.int32), np.arange(9.0))
    b = lazyk.array([[1], [2, 3, 4], [], [5]])
    got = (lazyk.num(a) + lazyk.num(b) >= 3).eval()
    assert got.to_list() == [True, True, True, True] and str(got.type) == "4 * bool"
    assert lazyk.num(a).eval().to_list() == [2, 0, 3, 4]
    assert lazyk.num(a).eval().to_numpy().dtype == np.int64
    assert lazyk.num(b[1:]).eval().to_list() == [3, 0, 1]
    deep = lazyk.array([[[1], [2, 3]], [], [[4]]])
    assert lazyk.num(deep, axis=1).eval().to_list() == [2, 0, 1]
    assert ran == []
    q = lazyk.array([[1.0], None, []], type="3 * ?var * float64")
    assert lazyk.num(q).eval().to_list() == [1, None, 0] and ran == ["num"]
    # missing lists read by more work: computed by its kernel from the rows' own bytes
    ran.clear()
    v = np.arange(9.0)
    for off in (np.array([0, 2, 2, 5, 9, 9]), np.array([0, 2, 2, 5, 9, 9], np.int32)):
        m = lazyk.from_offsets(off, v, validity=np.array([1, 0, 1, 1, 1], bool))
        got = (lazyk.num(m) + lazyk.num(m) * 10 + 1).eval()
        assert got.to_list() == [23, None, 34, 45, 1] and str(got.type) == "5 * ?int64"
        assert (lazyk.num(m[1:]) >= 3).eval().to_list() == [None, True, True, False]
        assert lazyk.sum(lazyk.num(m), skipna=True).eval() == 9
    assert ran == []
    bad = lazyk.from_offsets(np.array([0, 2, 3, 5]), v, validity=np.ones(3, bool))
    at = bad.ptr - bad.owner.address  # (its own copy of the offsets, changed in place)
    bad.owner.buffer[at + 16:at + 24].view(np.int64)[0] = 1
    with pytest.raises(ValueError, match="row 1"):
        (lazyk.num(bad) + 1).eval()


@FEW
@given(st.data())
def test_flatten(data):
    ref_x, x = drawn(data)
    axis = data.draw(st.sampled_from([None] + list(range(ref_x.type.ndim))), label="axis")
    check(lazyk.flatten(x, axis=axis), R.flatten(ref_x, axis))


def test_flatten_of_rows_back_to_back_views_their_content():
    """Rows in offsets form (Arrow's, Awkward's, from_offsets): flatten at axis 1 is a view
    of the content they cover, whatever the items (missing values, strings, lists); a view
    of some of the rows covers only theirs; reversed rows are copied."""
    ak = pytest.importorskip("awkward")
    for d in ([[1.0, None], [], [3.0]], [["a", "bb"], [], ["c"]], [[[1, 2], [3]], [[4]]],
              [[{"x": 1, "y": [1, 2]}], [{"x": 2, "y": []}]]):
        x = lazyk.from_awkward(ak.Array(d))
        for rows, viewed in ((x, True), (x[1:], True), (x[::-1], False)):
            got = lazyk.flatten(rows).eval()
            assert got.to_list() == ak.flatten(ak.Array(rows.to_list()), axis=1).to_list()
            if "x" not in str(x.type):  # (records read from columns: flattened by column)
                assert (got.owner is memory.lookup(rows.meta[2])) == viewed  # (the content)


@FEW
@given(st.data())
def test_firsts(data):
    ref_x, x = drawn(data, NESTED)
    axis = data.draw(st.integers(1, ref_x.type.ndim - 1), label="axis")
    check(lazyk.firsts(x, axis=axis), R.firsts(ref_x, axis))


@FEW
@given(st.data())
def test_local_index_and_is_none(data):
    ref_x, x = drawn(data)
    nd = ref_x.type.ndim
    axis = data.draw(st.integers(-nd, nd - 1), label="axis")
    check(lazyk.local_index(x, axis=axis), R.local_index(ref_x, axis))
    axis = data.draw(st.integers(0, nd - 1), label="is_none axis")
    check(lazyk.is_none(x, axis=axis), R.is_none(ref_x, axis))


@FEW
@given(S.ragged_pair(LAYOUTS, S.DTYPES, own_rows=True), st.data())
def test_concatenate(pair, data):
    t1, d1, t2, d2 = pair
    rx, ry = R.array(d1, t1), R.array(d2, t2)
    x, y = lazyk.array(d1, t1), lazyk.array(d2, t2)
    axis = data.draw(st.integers(0, rx.type.ndim - 1), label="axis")
    check(lazyk.concatenate([x, y, x], axis=axis), R.concatenate([rx, ry, rx], axis))


def test_concatenate_joins_along_axis_0_unless_told_as_awkward_and_numpy():
    ak = pytest.importorskip("awkward")
    x, y = [[1], []], [[2], [3]]
    got = lazyk.concatenate([lazyk.array(x), lazyk.array(y)]).eval()
    assert got.to_list() == ak.concatenate([ak.Array(x), ak.Array(y)]).tolist() == \
        [[1], [], [2], [3]]
    assert lazyk.concatenate([lazyk.array(x), lazyk.array(y)], axis=1).eval().to_list() == \
        [[1, 2], [3]]
    a, b = np.ones((2, 3)), np.zeros((2, 3))
    np.testing.assert_array_equal(lazyk.concatenate([a, b]).eval().to_numpy(),
                                  np.concatenate([a, b]))


@FEW
@given(st.data(), st.integers(0, 5), st.booleans())
def test_pad_none(data, target, clip):
    ref_x, x = drawn(data)
    axis = data.draw(st.integers(0, ref_x.type.ndim - 1), label="axis")
    try:
        e = lazyk.pad_none(x, target, axis=axis, clip=clip)
    except lazyk.NotSupportedError as err:  # missing fixed-size lists in `?n` rows
        assert clip and "fixed-size lists" in str(err) and axis + 1 < ref_x.type.ndim
        return
    check(e, R.pad_none(ref_x, target, axis, clip=clip))


def test_a_missing_row_mask_over_clipped_rows_says_what_it_refuses():
    """A row mask that may be missing over `?n` rows (pad_none(clip=True) of missing rows)
    is refused naming the mask; a filled mask selects."""
    p = lazyk.pad_none(lazyk.array([[1.0, 2.0], None, [3.0]]), 3, clip=True)
    m = lazyk.num(p, axis=1) >= 2
    with pytest.raises(lazyk.NotSupportedError, match=r"x\[mask\]: a row mask that may be "
                       r"missing \(3 \* \?bool\) over rows .* \(3 \* \?3 \* \?float64"):
        p[m]
    assert p[lazyk.fill_none(m, False)].eval().to_list() == [[1.0, 2.0, None],
                                                              [3.0, None, None]]


@pytest.mark.parametrize("dtype", ["int8", "bool", "uint16", "int32", "float32", "float64"])
def test_pad_none_of_lists_of_numbers_copied_row_by_row(dtype):
    """Lists of numbers padded without clip (copied natively, the padding a second source):
    every dtype width, lists sliced out of a larger array, missing lists, targets below,
    at and above the longest list."""
    rng = np.random.default_rng(5)
    lens = rng.integers(0, 6, 40)
    off = np.concatenate([[0], np.cumsum(lens)])
    values = rng.integers(0, 100, int(off[-1])).astype(dtype)
    rows = [values[a:b].tolist() for a, b in zip(off[:-1], off[1:])]
    valid = rng.random(40) > 0.2
    for target in (0, 1, 3, 5, 9):
        want = [r + [None] * max(target - len(r), 0) for r in rows]
        x = lazyk.from_offsets(off, values)
        got = lazyk.pad_none(x, target).eval()
        assert got.to_list() == want
        assert str(got.type) == str(x.type).replace("var * ", "var * ?")
        assert lazyk.pad_none(x[7:31], target).eval().to_list() == want[7:31]
        q = lazyk.pad_none(lazyk.from_offsets(off, values, validity=valid), target).eval()
        assert q.to_list() == [w if v else None for w, v in zip(want, valid)]


# ---------------------------------------------------------------- missing values
@FEW
@given(st.data(), st.sampled_from([0, -2, 1.5, True]))
def test_fill_none(data, value):
    ref_x, x = drawn(data)
    ref = R.fill_none(ref_x, value)
    e = lazyk.fill_none(x, value)
    if not ref_x.type.option:
        assert e.node is lazyk.frontend.expr.as_expr(x).node  # returned as it is
    check(e, ref)


def test_fill_none_and_is_none_fuse_into_one_kernel():
    content = np.ma.masked_array([1.5, 0.0, 2.5, 0.0], [False, True, False, True])
    x = lazyk.from_offsets(np.array([0, 3, 3, 4]), lazyk.array(content))  # offsets form
    before = lazyk.kernel.nest.nest_stats["runs"]
    got = (lazyk.fill_none(x, -1.0) * 2 + lazyk.is_none(x, axis=-1)).eval()
    assert lazyk.kernel.nest.nest_stats["runs"] - before == 1  # one loop nest, one pass
    assert got.to_list() == [[3.0, -1.0, 5.0], [], [-1.0]]
    assert str(got.type) == "3 * var * float64"
    q = lazyk.array([[1.5, None, 2.5], [], None, [None]], "4 * ?var * ?float64")
    got = (lazyk.fill_none(q, -1.0) * 2 + lazyk.is_none(q, axis=-1)).eval()
    assert got.to_list() == [[3.0, -1.0, 5.0], [], None, [-1.0]]  # missing rows stay
    assert str(got.type) == "4 * ?var * float64"


def test_is_none_keeps_missing_rows_of_an_operand_whose_values_cannot_be_missing():
    # a `?var` row missing only in the operand without `?T` values is missing in the
    # result (it showed that operand's row as present, False per item)
    q = lazyk.array([None, [1, 2], [3, None]], "3 * ?var * ?int32")
    r = lazyk.array([None, [1, 2], None], "3 * ?var * int32")
    for e in (q * r, r * q, q + r.astype(np.float32)):
        got = lazyk.is_none(e, axis=-1).eval()
        assert got.to_list() == [None, [False, False], None]
        assert str(got.type) == "3 * ?var * bool"
    x = lazyk.array([None, [[None, 7]], [[3, 3], [2, 2]]], "3 * ?var * 2 * ?uint32")
    y = lazyk.array([None, [[1.0, 0.0]], None], "3 * ?var * 2 * float64")
    got = lazyk.is_none(x * y, axis=-1).eval()
    assert got.to_list() == [None, [[True, False]], None]
    assert got.to_list() == ak.to_list(ak.is_none(ak.Array((x * y).eval().to_list()),
                                                  axis=-1)) if ak else True


def test_fill_none_keeps_missing_rows_of_an_operand_whose_values_cannot_be_missing():
    # a row missing only in the operand without `?T` values, where the `?T` operand's row
    # is empty, stays missing (it became an empty row)
    x = lazyk.array([[], [], None, [[-1]]], "4 * ?var * 1 * ?int32")
    t = lazyk.array([[], None, None, [[7]]], "4 * ?var * 1 * uint8")
    got = lazyk.fill_none(lazyk.minimum(x, t), 2).eval()
    assert got.to_list() == [[], None, None, [[-1]]]
    assert str(got.type) == "4 * ?var * 1 * int32"


def test_fill_none_of_an_expression_and_arrays():
    x = lazyk.array([[1, None], [3]], "2 * var * ?int32")
    y = lazyk.array([[None, 20], [None]], "2 * var * ?int32")
    # where(): missing where the condition is, else where the branch taken is
    e = lazyk.fill_none(lazyk.where(x > 1, x, y), 0)
    assert e.eval().to_list() == [[0, 0], [3]] and e.dtype == np.int32
    e = lazyk.fill_none(lazyk.where(lazyk.fill_none(x, 0) > 1, x, y), -1)
    assert e.eval().to_list() == [[-1, 20], [3]]
    assert lazyk.fill_none(x, np.int64(7)).dtype == np.int64  # a NumPy scalar is strong
    assert lazyk.fill_none(x + y, lazyk.array([[5, 6], [7]])).eval().to_list() == \
        [[5, 6], [7]]
    assert lazyk.fill_none(x.sum(axis=-1), 9).eval().to_list() == [9, 3]
    with pytest.raises(OverflowError):
        lazyk.fill_none(lazyk.array([[1, None]], "1 * var * ?int8"), 1000)


def test_fill_none_of_folds_that_read_several_computed_values_read_each_its_own():
    # std reads two computed folds (a sum of squares that may be missing, a count that is
    # not); each is read from its own values on every evaluation (the count was at times
    # read from the sum's leaf: inf and NaN, or wrong comparisons)
    ak = pytest.importorskip("awkward")
    for rows in ([[0.05, 0.62], [0.56]] * 3, [[0.05, 0.62], [0.56], [0.3, None, 0.5]] * 3):
        for t in ("var * ?float64", "?var * ?float64"):
            x = lazyk.array(rows, f"{len(rows)} * {t}")
            for f, g in ((lazyk.std, ak.std), (lazyk.var, ak.var)):
                ref = ak.to_list(ak.fill_none(g(ak.Array(rows), axis=1), 0.0))
                e = lazyk.fill_none(f(x, axis=1, skipna=True), 0.0)
                for _ in range(30):
                    np.testing.assert_allclose((e + 0.5).eval().to_list(),
                                               np.add(ref, 0.5), rtol=1e-12)
                    assert (e > 0.05).eval().to_list() == [v > 0.05 for v in ref]


# ---------------------------------------------------------------- order
@FEW
@given(st.data(), st.booleans())
def test_sort_and_argsort(data, ascending):
    ref_x, x = drawn(data, dtypes=S.DTYPES, nan=True)
    check(lazyk.sort(x, ascending=ascending), R.sort(ref_x, ascending=ascending))
    check(lazyk.argsort(x, ascending=ascending), R.argsort(ref_x, ascending=ascending))


def test_sort_long_rows_and_integer_extremes():
    big = np.iinfo(np.int64).max
    x = lazyk.array([[big, 1, None, big - 1, -big - 1], [], [0]], "3 * var * ?int64")
    assert lazyk.sort(x).eval().to_list() == [[-big - 1, 1, big - 1, big, None], [], [0]]
    assert lazyk.argsort(x, ascending=False).eval().to_list() == [[0, 3, 1, 4, 2], [], [0]]
    rng = np.random.default_rng(2)  # one long row among short ones: its own matrix
    lens = np.array([1000] + [2] * 10)
    values = rng.integers(0, 5, lens.sum()).astype(np.float64)
    off = np.concatenate([[0], np.cumsum(lens)])
    y = lazyk.from_offsets(off, values)
    got = lazyk.argsort(y).eval().to_list()
    want = [np.argsort(values[a:b], kind="stable").tolist() for a, b in zip(off, off[1:])]
    assert got == want
    assert lazyk.sort(y, ascending=False).eval().to_list()[0] == sorted(values[:1000])[::-1]


def test_sort_of_records_says_to_order_by_a_field():
    r = lazyk.zip({"pt": lazyk.array([[2.0, 1.0]]) * 1, "eta": lazyk.array([[0.5, 0.1]]) * 1})
    for fn in (lazyk.sort, lazyk.argsort):
        with pytest.raises(lazyk.NotSupportedError, match=r"of records: order them by a field"):
            fn(r)
    assert r[lazyk.argsort(r.pt, axis=1)].eta.eval().to_list() == [[0.1, 0.5]]


def test_sort_rows_of_spread_lengths_by_length_class():
    """Many short rows and a few long ones (lengths too spread for one padded matrix: the
    rows sort by length class), with NaN, -0.0, ties and missing values, both orders:
    values and positions against the plain-Python reference, stable."""
    rng = np.random.default_rng(7)
    lens = rng.integers(0, 6, 3000)
    lens[[5, 700, 2999]] = [40, 300, 100]
    data = []
    for n in lens:
        row = [float(v) for v in rng.integers(-3, 4, n)]
        for i in range(n):
            u = rng.random()
            row[i] = np.nan if u < 0.05 else -0.0 if u < 0.1 else None if u < 0.15 else row[i]
        data.append(row)
    t = f"{len(data)} * var * ?float64"
    x, ref_x = lazyk.array(data, t), R.array(data, t)
    for ascending in (True, False):
        check(lazyk.sort(x, ascending=ascending), R.sort(ref_x, ascending=ascending))
        check(lazyk.argsort(x, ascending=ascending), R.argsort(ref_x, ascending=ascending))
    plain = [[v for v in r if v is not None and v == v] for r in data]  # no missing, no NaN
    off = np.concatenate([[0], np.cumsum([len(r) for r in plain])])
    y = lazyk.from_offsets(off, np.array([v for r in plain for v in r], np.float32))
    assert lazyk.sort(y).eval().to_list() == [sorted(r) for r in plain]
    assert lazyk.argsort(y, ascending=False).eval().to_list() == \
        [sorted(range(len(r)), key=lambda i: -r[i]) for r in plain]


def test_sort_fixed_data_follows_numpy_along_any_axis():
    a = np.array([[3.0, np.nan, 1.0], [2.0, 2.0, -1.0]])
    for axis in (0, 1, -1):
        assert np.array_equal(lazyk.sort(a, axis=axis).to_numpy(), np.sort(a, axis=axis),
                              equal_nan=True)
        assert np.array_equal(lazyk.argsort(a, axis=axis).to_numpy(),
                              np.argsort(a, axis=axis, kind="stable"))
    desc = lazyk.sort(a, ascending=False).to_numpy()
    assert np.array_equal(desc, [[np.nan, 3.0, 1.0], [2.0, 2.0, -1.0]], equal_nan=True)
    # descending along every axis: stable (ties in their order), NaN first
    b = np.array([[[3.0, 1.0], [np.nan, 2.0]], [[0.0, 2.0], [3.0, 2.0]], [[3.0, 5.0],
                  [1.0, 1.0]]])
    key = np.where(np.isnan(b), -np.inf, -b)
    for axis in (0, 1, 2, -1):
        want = np.argsort(key, axis=axis, kind="stable")
        got = lazyk.argsort(b, axis=axis, ascending=False).to_numpy()
        assert got.tolist() == want.tolist(), axis
        assert np.array_equal(lazyk.sort(b, axis=axis, ascending=False).to_numpy(),
                              np.take_along_axis(b, want, axis), equal_nan=True)



def _lanes_sorted(v, mask, axis, ascending):
    """Plain-Python reference: each lane along `axis` sorted (NaN above numbers), missing
    values last; (values with None, positions)."""
    mv, mm = np.moveaxis(v, axis, -1), np.moveaxis(mask, axis, -1)
    vals, pos = np.empty(mv.shape, object), np.empty(mv.shape, int)
    for idx in np.ndindex(mv.shape[:-1]):
        row = [(i, float(mv[idx][i])) for i in range(mv.shape[-1]) if not mm[idx][i]]
        row.sort(key=(lambda t: (np.isnan(t[1]), 0 if np.isnan(t[1]) else t[1])) if ascending
                 else (lambda t: (not np.isnan(t[1]), 0 if np.isnan(t[1]) else -t[1])))
        order = [i for i, _ in row] + [i for i in range(mv.shape[-1]) if mm[idx][i]]
        pos[idx] = order
        for k, i in enumerate(order):
            vals[idx + (k,)] = None if mm[idx][i] else float(mv[idx][i])
    return np.moveaxis(vals, -1, axis).tolist(), np.moveaxis(pos, -1, axis)


@FEW
@given(st.data())
def test_sort_fixed_data_with_missing_values_along_any_axis(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
    n = int(np.prod(shape))
    v = np.array(data.draw(st.lists(st.sampled_from([0.0, 1.0, 2.0, np.nan]), min_size=n,
                                    max_size=n))).reshape(shape)
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n))).reshape(shape)
    x = lazyk.array(np.ma.MaskedArray(v, mask))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    ascending = data.draw(st.booleans())
    want, positions = _lanes_sorted(v, mask, axis, ascending)
    assert str(lazyk.sort(x, axis=axis, ascending=ascending).eval().to_list()) == str(want)
    got = lazyk.argsort(x, axis=axis, ascending=ascending).eval()
    np.testing.assert_array_equal(np.asarray(got), positions)

# ---------------------------------------------------------------- running folds
@FEW
@given(st.data(), st.sampled_from(["cumsum", "cumprod"]))
def test_cumsum_cumprod(data, op):
    ref_x, x = drawn(data, nan=True)
    check(getattr(lazyk, op)(x), getattr(R, op)(ref_x))


def test_is_none_of_strings_that_cannot_be_missing():
    for x in (lazyk.array(["a", "b"]), lazyk.array(np.array(["a", "bb"])),
              lazyk.array([b"a", b"b"]), lazyk.array([{"s": "a", "x": 1}, {"s": "b", "x": 2}]).s):
        assert lazyk.is_none(x).eval().to_list() == [False, False]
    rows = lazyk.array([["a", "b"], [], ["c"]])
    assert lazyk.is_none(rows, axis=1).eval().to_list() == [[False, False], [], [False]]


def test_running_folds_over_every_axis_keep_missing_values_in_place():
    m = np.ma.MaskedArray([[1, 2], [3, 4]], [[False, True], [False, False]])
    got = lazyk.cumsum(lazyk.array(m), axis=None).eval()
    assert got.to_list() == np.ma.cumsum(m, axis=None).tolist(fill_value=None)
    assert str(got.type) == "4 * ?int64"
    x = lazyk.array([[1, None], [3, 4, 5]], type="2 * var * ?int64")
    assert lazyk.cumsum(x, axis=None).eval().to_list() == [1, None, 4, 8, 13]
    deep = lazyk.array([[[1, 2], [3]], [], [[None, 4]]])
    assert lazyk.cumprod(deep, axis=None).eval().to_list() == [1, 2, 6, None, 24]


def test_cumsum_fuses_with_its_inputs_and_follows_numpy():
    x = lazyk.from_offsets(np.array([0, 3, 3, 5]), np.array([1, 2, 3, 4, 5], np.int32))
    before = lazyk.kernel.nest.nest_stats["runs"]
    got = lazyk.cumsum(x * 2 + 1).eval()
    assert lazyk.kernel.nest.nest_stats["runs"] - before == 1  # the scan reads x itself
    assert got.to_list() == [[3, 8, 15], [], [9, 20]] and str(got.type) == "3 * var * int64"
    for dt in ("float32", "float16", "int8", "bool", "complex64"):
        a = (np.arange(1, 25).reshape(4, 6) % 5).astype(dt)
        for fn in ("cumsum", "cumprod"):
            for axis in (0, 1, -1):
                want = getattr(np, fn)(a, axis=axis)
                got = getattr(lazyk, fn)(a, axis=axis).to_numpy()
                assert got.dtype == want.dtype and np.array_equal(got, want), (dt, fn, axis)
        assert np.array_equal(lazyk.cumsum(a, axis=None).to_numpy(), np.cumsum(a))
    big = np.random.default_rng(1).random(300_000)  # one row: never split between threads
    assert np.array_equal(lazyk.cumsum(big).to_numpy(), np.cumsum(big))


# ---------------------------------------------------------------- spread
@FEW
@given(st.data(), st.sampled_from(["std", "var"]), st.sampled_from([0, 1]))
def test_std_var(data, op, ddof):
    ref_x, x = drawn(data, nan=True)
    axis = data.draw(st.sampled_from([None, -1]), label="axis")
    ref = getattr(R, op)(ref_x, axis, ddof=ddof)
    e = getattr(lazyk, op)(x, axis=axis, ddof=ddof, skipna=True)
    rel = 1e-9 if ref.type.dtype == np.float64 else 1e-6  # (rounded once to float32)
    if axis is None:
        got = e.eval()
        assert same(float(got) if not got.type.missing_values else None, ref.data, rel)
        return
    check(e, ref, rel=rel)


def test_std_var_fixed_data_follow_numpy():
    rng = np.random.default_rng(0)
    for dt in ("float64", "float32", "int32", "bool", "complex128"):
        a = (rng.random((5, 7)) * 10).astype(dt) if dt != "complex128" else \
            rng.random((5, 7)) + 1j * rng.random((5, 7))
        for axis in (None, 0, 1, (0, 1)):
            for ddof in (0, 1, 9):
                for fn in ("std", "var"):
                    with np.errstate(all="ignore"), warnings.catch_warnings():
                        warnings.simplefilter("ignore", RuntimeWarning)  # ddof > n
                        want = getattr(np, fn)(a, axis=axis, ddof=ddof)
                    got = getattr(lazyk, fn)(a, axis=axis, ddof=ddof).to_numpy()
                    assert got.dtype == want.dtype, (dt, axis, ddof, fn)
                    assert np.allclose(got, want, rtol=1e-5, equal_nan=True), (dt, axis, fn)
    # numerically sound: two passes, not sum(x^2) - sum(x)^2
    big = 1e9 + np.arange(4.0)
    assert lazyk.var(big).to_numpy() == np.var(big) == 1.25
    kept = lazyk.std(a, axis=1, keepdims=True).to_numpy()
    assert kept.shape == (5, 1)


@pytest.mark.parametrize("fn", ["var", "std"])
def test_var_and_std_of_an_integer_dtype_truncate_as_numpy(fn):
    rng = np.random.default_rng(1)
    for _ in range(40):
        a = rng.integers(-50, 50, (int(rng.integers(1, 5)), int(rng.integers(2, 6))))
        for dt in (np.int64, np.int32, np.uint8, np.int8):
            for axis in (0, 1, None):
                with np.errstate(all="ignore"):  # (NumPy's std takes an integer dtype only
                    want = getattr(np, fn)(a, axis=axis, dtype=dt) if fn == "var" or \
                        axis is None else np.sqrt(np.var(a, axis=axis, dtype=dt)).astype(dt)
                got = getattr(lazyk, fn)(a, axis=axis, dtype=dt).to_numpy()  # for one value)
                assert got.dtype == want.dtype and np.array_equal(got, want), (a, dt, axis)
    x = lazyk.array([[0, 10, -2], [1]], type="2 * var * int64")
    want = [28, 0] if fn == "var" else [5, 0]  # (std: the root of the truncated var, truncated)
    assert getattr(lazyk, fn)(x, axis=1, dtype=np.int64).eval().to_list() == want
    with pytest.raises(TypeError, match=f"{fn} with dtype=bool"):
        getattr(lazyk, fn)(x, axis=1, dtype=bool)


def test_std_var_read_the_rows_twice():
    # the mean (its sum and count in one pass), then the mean square of the deviations
    x = lazyk.array([[1.0, 2.0, 4.0], [], [3.0]])
    for e in (lazyk.std(x, axis=1), lazyk.var(x, axis=1)):
        nests = [ln for ln in e.explain().splitlines() if ln.startswith("== nest")]
        assert sum(": reduce," in ln for ln in nests) == 2, nests
    got = lazyk.var(x, axis=1).eval().to_list()
    assert got[0] == np.var([1.0, 2.0, 4.0]) and np.isnan(got[1]) and got[2] == 0.0


def test_std_var_skipna_and_missing_rows():
    x = lazyk.array([[1.0, None, 3.0], None, []], "3 * ?var * ?float64")
    assert lazyk.var(x, axis=-1).eval().to_list()[:2] == [None, None]  # no skipna
    got = lazyk.var(x, axis=-1, skipna=True).eval().to_list()
    assert got[0] == 1.0 and got[1] is None and np.isnan(got[2])
    assert lazyk.std(x, skipna=True).eval().to_list() == 1.0


# ---------------------------------------------------------------- composition, compile
def test_row_operations_compose_lazily_and_compile():
    x = lazyk.placeholder("x", "N * var * ?float64")
    e = lazyk.num(x) + lazyk.sum(lazyk.fill_none(x, 0.0), axis=-1) + \
        lazyk.fill_none(lazyk.firsts(lazyk.sort(x, ascending=False)), -1.0)
    f = lazyk.compile(e)
    assert f.signature == "(x: N * var * ?float64) -> N * float64"
    data = lazyk.array([[1.0, None, 4.0], [], [None]], "3 * var * ?float64")
    assert f(data).to_list() == [3 + 5.0 + 4.0, 0 + 0.0 - 1.0, 1 + 0.0 - 1.0]
    assert lazyk.flatten(lazyk.local_index(data))[:, None].eval().to_list() == \
        [[0], [1], [2], [0]]
    with pytest.raises(lazyk.NotSupportedError, match="bind"):
        f.bind(None, data)


def test_fixed_dims():
    y = np.arange(12.0).reshape(4, 3)
    assert str(lazyk.pad_none(y, 4).eval().type) == "4 * 4 * ?float64"
    assert str(lazyk.pad_none(y, 2).eval().type) == "4 * 3 * ?float64"
    assert str(lazyk.concatenate([y, y], axis=1).eval().type) == "4 * 6 * float64"
    assert str(lazyk.flatten(y).eval().type) == "12 * float64"
    assert lazyk.firsts(y).eval().to_list() == [0.0, 3.0, 6.0, 9.0]
    x = lazyk.array([[[1, 2, 3]], []], "2 * var * 3 * int64")
    got = (lazyk.firsts(x) * 2).eval()  # missing lists of a fixed size: ?3
    assert got.to_list() == [[2, 4, 6], None] and str(got.type) == "2 * ?3 * int64"


def test_views_and_empty_arrays():
    x = lazyk.array([[1, 2, 3, 4], [5, 6], [], [7]], "4 * var * int64")
    v = x[::-1, ::2]  # a stepping view, reversed rows
    assert lazyk.flatten(v).eval().to_list() == [7, 5, 1, 3]
    assert lazyk.cumsum(v).eval().to_list() == [[7], [], [5], [1, 4]]
    assert lazyk.sort(v, ascending=False).eval().to_list() == [[7], [], [5], [3, 1]]
    empty = lazyk.array([], "0 * var * ?float64")
    for fn in (lazyk.num, lazyk.flatten, lazyk.firsts, lazyk.local_index, lazyk.sort,
               lazyk.cumsum, lambda a: lazyk.fill_none(a, 0), lambda a: lazyk.pad_none(a, 2)):
        assert fn(empty).eval().to_list() == []


# ---------------------------------------------------------------- errors
def test_errors_name_the_operands():
    x = lazyk.array([[1, 2], [3]], "2 * var * int64")
    with pytest.raises(ValueError, match=r"num: axis 2 is out of bounds .*2 \* var \* int64"):
        lazyk.num(x, axis=2)
    with pytest.raises(np.exceptions.AxisError, match="firsts: axis 0 .* must be >= 1"):
        lazyk.firsts(x, axis=0)
    with pytest.raises(ValueError, match="sort: axis 0 .* only the last axis over var"):
        lazyk.sort(x, axis=0)
    with pytest.raises(ValueError, match="one number of dims"):
        lazyk.concatenate([x, lazyk.array([1, 2])])
    y = lazyk.array([[[1], [2, 3]], [[4]]], "2 * var * var * int64")
    z = lazyk.array([[[1]], [[4]]], "2 * var * var * int64")
    with pytest.raises(lazyk.ShapeError, match=r"row 0 has length 2 in operand 0 and 1 in "
                                               r"operand 1"):
        lazyk.concatenate([y, z], axis=2).eval()
    with pytest.raises(lazyk.ShapeError, match="operand 0 has 2 rows and operand 1 has 3"):
        lazyk.concatenate([x, lazyk.array([[1], [2], [3]])], axis=1).eval()
    with pytest.raises(lazyk.NotSupportedError, match="cumsum along axis 0 .* last axis"):
        lazyk.cumsum(x, axis=0)
    with pytest.raises(ValueError, match="pad_none: target"):
        lazyk.pad_none(x, -1)
    with pytest.raises(TypeError, match="fill_none: the value"):
        lazyk.fill_none(x, None)


# ---------------------------------------------------------------- records
def test_zip_is_lazy_and_builds_records():
    pt = lazyk.from_offsets(np.array([0, 2, 2, 3]), np.array([10.0, 20.0, 5.0]))
    eta = lazyk.array([[0.5, -1.5], [], [2.0]])
    before = lazyk.kernel.nest.nest_stats["runs"]
    r = lazyk.zip({"pt": pt * 2, "eta": eta})
    assert str(r.type) == "3 * var * {pt: float64, eta: float64}" and r.fields == ["pt", "eta"]
    assert lazyk.kernel.nest.nest_stats["runs"] == before  # nothing ran
    assert r.pt.eval().to_list() == [[20.0, 40.0], [], [10.0]] and r["eta"] is r.eta
    got = r.eval()
    assert str(got.type) == "3 * var * {pt: float64, eta: float64}"
    assert got.to_list() == [[{"pt": 20.0, "eta": 0.5}, {"pt": 40.0, "eta": -1.5}], [],
                             [{"pt": 10.0, "eta": 2.0}]]
    assert (got.pt + got.eta).eval().to_list() == [[20.5, 38.5], [], [12.0]]  # views
    met = lazyk.array([1.0, 2.0, 3.0])
    assert lazyk.zip({"pt": pt, "met": met[:, None]}).eval().to_list()[0] == \
        [{"pt": 10.0, "met": 1.0}, {"pt": 20.0, "met": 1.0}]
    pair = lazyk.zip((pt, eta))
    assert str(pair.type) == "3 * var * (float64, float64)" and pair.fields == ["0", "1"]
    assert pair[1] is pair["1"] and pair.eval().to_list()[2] == [(5.0, 2.0)]
    outer = lazyk.zip({"pt": pt, "eta": eta}, depth_limit=1)
    assert str(outer.eval().type) == "3 * {pt: var * float64, eta: var * float64}"
    stretched = lazyk.zip({"a": pt, "b": lazyk.array([[1.0], [], [2.0, 3.0]])}).eval()
    assert stretched.to_list()[2] == [{"a": 5.0, "b": 2.0}, {"a": 5.0, "b": 3.0}]  # rows of 1
    with pytest.raises(lazyk.ShapeError, match="row 0"):
        lazyk.zip({"a": pt, "b": lazyk.array([[1.0, 2.0, 3.0], [], [2.0]])}).eval()
    with pytest.raises(AttributeError, match="no field 'phi'"):
        r.phi


def test_row_operations_take_records_field_by_field():
    x = lazyk.array([[1, 2], [], [3]], "3 * var * int64")
    y = lazyk.array([[1.5, None], [], [0.5]], "3 * var * ?float64")
    r = lazyk.zip({"x": x, "y": y})
    arr = r.eval()
    for rec in (r, arr):  # lazy records and a lazyk array of records alike
        assert lazyk.num(rec).eval().to_list() == [2, 0, 1]
        assert lazyk.flatten(rec).eval().to_list() == [
            {"x": 1, "y": 1.5}, {"x": 2, "y": None}, {"x": 3, "y": 0.5}]
        # (a missing record where the list is empty, as Awkward's)
        assert lazyk.firsts(rec).eval().to_list() == [{"x": 1, "y": 1.5}, None,
                                                      {"x": 3, "y": 0.5}]
        assert lazyk.pad_none(rec, 1, clip=True).eval().to_list()[1] == [None]
        assert lazyk.local_index(rec).eval().to_list() == [[0, 1], [], [0]]
        assert len(lazyk.concatenate([rec, rec], axis=1).eval().to_list()[0]) == 4


def test_concatenate_of_collections_field_by_field_in_one_evaluation():
    """The fields of two collections joined row by row, with a third collection of other
    offsets and an event selection, in one evaluation: each row is the plain-Python join
    (float32 and int32 promoted as NumPy promotes), whichever collections share offsets."""
    rng = np.random.default_rng(3)
    n = 500
    cols = {}
    for name in ("a", "b", "c"):
        lens = rng.poisson(1.5, n)
        off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        cols[name] = (off, rng.normal(size=off[-1]).astype(np.float32),
                      rng.integers(-5, 5, off[-1]).astype(np.int32))
    recs = {k: lazyk.zip({"x": lazyk.from_offsets(o, x), "i": lazyk.from_offsets(o, i)})
            for k, (o, x, i) in cols.items()}
    keep = np.asarray(lazyk.num(recs["a"]).eval()) >= 1
    ab = lazyk.concatenate([recs["a"][keep], recs["b"][keep]], axis=1)
    ca = lazyk.concatenate([recs["c"][keep], recs["a"][keep], recs["c"][keep]], axis=1)
    got = lazyk.evaluate(ab.x + ab.i, ca.x * 2, ca.i)

    def rows(name, field):
        off, x, i = cols[name]
        v = x if field == "x" else i
        return [v[off[r]:off[r + 1]] for r in range(n) if keep[r]]

    def joined(names, field):
        return [np.concatenate(parts) for parts in zip(*(rows(k, field) for k in names))]
    want = [[x + i for x, i in zip(joined("ab", "x"), joined("ab", "i"))],
            [2 * x for x in joined("cac", "x")], joined("cac", "i")]
    for g, w in zip(got, want):
        lists = g.to_list()
        assert len(lists) == len(w) == keep.sum()
        for row, ref in zip(lists, w):
            assert np.array_equal(np.asarray(row, ref.dtype), ref)
    assert got[0].type.dtype.name == "float64" and got[2].type.dtype.name == "int32"


# ---------------------------------------------------------------- methods, NumPy, new axes
def test_methods_and_numpy_functions_stay_lazy():
    x = lazyk.array([[1.0, 2.0, 4.0], [], [3.0]])
    a = np.arange(12.0).reshape(3, 4)
    la = lazyk.array(a)
    for got, want in ((np.std(x * 1, axis=-1), [np.std([1, 2, 4]), np.nan, 0.0]),
                      (np.var(la * 1, axis=0, ddof=1), np.var(a, axis=0, ddof=1)),
                      (np.std(la * 1, correction=1), np.std(a, ddof=1)),
                      (np.cumsum(la * 1), np.cumsum(a)),
                      (np.cumprod(la * 1, axis=0), np.cumprod(a, axis=0)),
                      (np.argsort(la * -1), np.argsort(-a, kind="stable")),
                      (x.cumsum(axis=1), [[1.0, 3.0, 7.0], [], [3.0]])):
        assert isinstance(got, lazyk.Expr)  # nothing computed yet
        value = got.eval()
        value = value.to_list() if isinstance(want, list) else value.to_numpy()
        assert same(value, want) if isinstance(want, list) else np.allclose(value, want)
    out = np.empty(4)
    assert np.var(la * 1, axis=0, out=out) is out and np.allclose(out, np.var(a, axis=0))
    # axis=None: NumPy's flattened values, missing ones kept (sorted last, as NumPy's
    # masked sort; missing rows hold none)
    q = lazyk.array([[3.0, None, 2.0], None, [5.0, 4.0]])
    assert np.sort(q, axis=None).eval().to_list() == [2.0, 3.0, 4.0, 5.0, None]
    assert np.argsort(q, axis=None).eval().to_list() == [2, 0, 4, 3, 1]
    assert np.cumsum(q).eval().to_list() == [3.0, None, 5.0, 10.0, 14.0]


def test_new_axes_on_row_operations():
    x = lazyk.array([[1.0, 2.0, 4.0], [], [3.0]])
    n = lazyk.num(x)
    got = (x - n[:, None]).eval()  # a per-row value against the rows
    assert got.to_list() == [[-2.0, -1.0, 1.0], [], [2.0]]
    assert lazyk.num(x)[None].eval().to_list() == [[3, 0, 1]]


# ---------------------------------------------------------------- Awkward 2 itself
@settings(max_examples=25)
@given(st.data())
def test_values_match_awkward(data):
    """The same drawn array through lazyk and through Awkward 2 (the reference's
    documented differences from Awkward are not drawn: NaN in sorts, sorts of lists under
    missing lists, pad_none of byte-masked lists)."""
    if ak is None:
        pytest.skip("awkward is not installed")
    t, d = data.draw(S.ragged(layouts=LAYOUTS, dtypes=S.NUMERIC), label="array")
    x, a = lazyk.array(d, t), ak_array(t, d)
    nd = x.type.ndim
    axis = data.draw(st.integers(1, nd - 1), label="axis") if nd > 1 else None
    pairs = [(lazyk.num(x, axis=-1), ak.num(a, axis=-1)),
             (lazyk.flatten(x, axis=None), ak.flatten(a, axis=None)),
             (lazyk.local_index(x), ak.local_index(a)),
             (lazyk.is_none(x, axis=nd - 1), ak.is_none(a, axis=nd - 1)),
             (lazyk.pad_none(x, 2, axis=nd - 1), ak.pad_none(indexed(a), 2, axis=nd - 1)),
             (lazyk.std(x, axis=-1, skipna=True), ak.std(a, axis=-1))]
    if nd < 2 or not t.split(" * ")[-2].startswith("?"):  # Awkward misplaces those rows
        pairs.append((lazyk.sort(x), ak.sort(a)))
    if axis is not None:
        pairs += [(lazyk.firsts(x, axis=axis), ak.firsts(a, axis=axis)),
                  (lazyk.flatten(x, axis=axis), ak.flatten(a, axis=axis)),
                  (lazyk.concatenate([x, x], axis=axis), ak.concatenate([a, a], axis=axis))]
    for mine, theirs in pairs:
        want = theirs.to_list() if isinstance(theirs, ak.Array) else theirs
        want = want.item() if hasattr(want, "item") else want
        assert same(mine.eval().to_list(), want), (repr(mine.node), want)


def test_explain_shows_the_row_operations_and_the_scan_nest():
    x = lazyk.placeholder("x", "N * var * ?float64")
    text = str((lazyk.cumsum(x * 2) + lazyk.num(x)[:, None]).explain())
    assert "rows(%0) num[1]" in text and "== row operations lowered" in text
    assert "scan add" in text  # the scan's own loop nest, with the elementwise work in it


@pytest.mark.parametrize("dtype", ["uint64", "int64", "uint8", "float64"])
@pytest.mark.parametrize("ascending", [True, False])
def test_sort_at_the_ends_of_integer_ranges_with_missing_values(dtype, ascending):
    lo, hi = (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)) if dtype != "float64" \
        else (-np.inf, np.inf)
    vals = [lo, hi, 0, 1, 2, 3] + ([lo + 1, lo + 2, hi - 1, hi - 2] if dtype != "float64"
                                   else [-0.0, 0.0])
    vals = [float(v) for v in vals] if dtype == "float64" else vals
    rng = np.random.default_rng(7)
    rows = [[None if rng.random() < 0.2 else vals[int(rng.integers(len(vals)))]
             for _ in range(int(rng.integers(0, 7)))] for _ in range(40)]
    x = lazyk.array(rows, type=f"40 * var * ?{dtype}")

    def order(row):  # stable, missing values last (Awkward's and NumPy's rule)
        present = [i for i, v in enumerate(row) if v is not None]
        present.sort(key=lambda i: row[i], reverse=not ascending)
        return present + [i for i, v in enumerate(row) if v is None]
    assert lazyk.argsort(x, ascending=ascending).eval().to_list() == [order(r) for r in rows]
    got = lazyk.sort(x, ascending=ascending).eval().to_list()
    assert str(got) == str([[r[i] for i in order(r)] for r in rows])  # (-0.0 keeps its sign)


def test_rows_of_zero_size_fixed_dims():
    """Lists whose items are fixed dims holding no values (`var * 1 * 0 * T`): pad_none
    gives Awkward's missing rows; combinations of them, whose records would hold fields
    of no bytes, are refused naming the type."""
    ak = pytest.importorskip("awkward")
    c = ak.contents
    a = ak.Array(c.ListOffsetArray(ak.index.Index64(np.array([0, 1, 3, 3])), c.RegularArray(
        c.RegularArray(c.NumpyArray(np.zeros(0, np.float32)), 0, zeros_length=3), 1)))
    x = lazyk.from_awkward(a)
    assert lazyk.pad_none(x, 1, axis=1).eval().to_list() == ak.pad_none(a, 1, axis=1).to_list()
    with pytest.raises(lazyk.NotSupportedError, match="fixed dims holding no values"):
        lazyk.combinations(x, 2).eval()


def test_slices_of_row_operation_results_over_lists_of_lists():
    rows = [[[3.0, 1.0, 2.0], [], [0.0, -5.0]], [], [[7.0], [9.0, 8.0]]]
    x = lazyk.array(rows, type="3 * var * var * float64")
    got = lazyk.sort(x)[:, :1].eval()
    assert got.to_list() == [[[1.0, 2.0, 3.0]], [], [[7.0]]]
    assert str(got.type) == "3 * var * var * float64"
    assert lazyk.cumsum(x)[:, 1:].eval().to_list() == [[[], [0.0, -5.0]], [], [[9.0, 17.0]]]
    assert lazyk.argsort(x)[:, -1:].eval().to_list() == [[[1, 0]], [], [[1, 0]]]
    assert "sort" in str(lazyk.explain(lazyk.sort(x)[:, :1]))


def test_initial_of_a_fold_over_a_row_operations_result():
    x = lazyk.array([[1.0, 5.0], [], [7.0]])
    flat = np.array([1.0, 5.0, 7.0])
    assert lazyk.max(lazyk.flatten(x), initial=10.0).eval() == np.max(flat, initial=10.0)
    assert lazyk.min(lazyk.flatten(x), initial=0.0).eval() == np.min(flat, initial=0.0)
    assert lazyk.max(lazyk.flatten(x[x > 100]), initial=-1.0).eval() == -1.0
    assert lazyk.max(lazyk.num(x), initial=10).eval() == 10
    assert lazyk.max(lazyk.sort(lazyk.flatten(x)), initial=10.0).eval() == 10.0
    got = lazyk.max(lazyk.sort(x), axis=1, initial=6.0).eval()  # (rows: each seeded)
    assert got.to_list() == [6.0, 6.0, 7.0]


def test_initial_of_a_fold_over_computed_folds_inside_a_larger_expression():
    # the inner fold is computed first; the outer one, now over fixed dims, still folds
    # `initial` (it was dropped: max(..., initial=100) + 1 gave the max + 1)
    x = lazyk.array([[1.0, 2.0], [3.0]], "2 * var * float64")
    sums = np.array([3.0, 3.0])
    assert lazyk.evaluate(lazyk.max(lazyk.sum(x, axis=1), initial=100.0) + 1) == 101.0
    assert lazyk.evaluate(lazyk.min(lazyk.sum(x, axis=1), initial=-5.0) + 1) == -4.0
    assert lazyk.evaluate(lazyk.max(lazyk.num(x, axis=1), initial=10) * 2) == 20
    assert lazyk.evaluate(lazyk.max(lazyk.sum(x, axis=1), initial=1.0) + 1) == \
        np.max(sums, initial=1.0) + 1
    empty = lazyk.array([], "0 * var * float64")  # (nothing folded: initial itself)
    assert lazyk.evaluate(lazyk.max(lazyk.sum(empty, axis=1), initial=0.0) + 1) == 1.0
    y = lazyk.array([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0]]], "2 * var * 2 * float64")
    got = lazyk.evaluate(lazyk.max(lazyk.sum(y, axis=1), axis=1, initial=7.0, keepdims=True) - 1)
    np.testing.assert_array_equal(got.to_numpy() if hasattr(got, "to_numpy") else got,
                                  [[6.0], [6.0]])


def test_num_of_a_selection_checks_the_mask_and_keeps_the_parameters():
    x = lazyk.array([[1.0, 2.0], [3.0]])
    with pytest.raises(lazyk.ShapeError, match=r"x\[mask\]"):
        lazyk.num(x[lazyk.array([[True], [True, False]])]).eval()
    assert lazyk.num(x[x > 1.5]).eval().to_list() == [1, 1]
    p = lazyk.placeholder("pt", "N * var * float64")
    q = lazyk.placeholder("q", "N * var * int64")
    r = lazyk.zip({"pt": p, "q": q})
    f = lazyk.compile(lazyk.num(r[r.q > 0], axis=1))
    assert f.signature == "(pt: N * var * float64, q: N * var * int64) -> N * int64"
    pt, qd = [[10.0, 20.0, 30.0], [], [5.0], [7.0, 8.0]], [[1, -1, 1], [], [1], [-1, 1]]
    assert f(pt, qd).tolist() == f(pt=pt, q=qd).tolist() == [2, 0, 1, 1]


def test_running_folds_and_orders_of_a_0d_array_as_numpy():
    x = np.array(5.0)
    a = lazyk.array(x)
    for got, want in [(lazyk.cumsum(a), np.cumsum(x)), (lazyk.cumprod(a), np.cumprod(x)),
                      (lazyk.sort(a, axis=None), np.sort(x, axis=None)),
                      (lazyk.argsort(a), np.argsort(x))]:
        v = got.eval().to_numpy()
        assert v.shape == want.shape == (1,) and v.dtype == want.dtype and (v == want).all()
    with pytest.raises(np.exceptions.AxisError):
        lazyk.sort(a).eval()  # (NumPy: axis -1 of a 0-d array)
    y = np.array([[100], [100], [100]], dtype=np.int8)  # dtype= along a leading axis
    got = lazyk.cumsum(lazyk.array(y), axis=0, dtype=np.int8).eval().to_numpy()
    want = np.cumsum(y, axis=0, dtype=np.int8)
    assert got.dtype == want.dtype and (got == want).all()


def test_argsort_of_int64_at_both_ends_keeps_missing_values_in_order():
    """Rows that need the stable sort of all items (int64 at both ends of its range) with
    missing values whose slots hold other bytes (`pad_none`'s): missing values come last,
    in their order, ascending or not."""
    top, bottom = 2**63 - 1, -2**63
    x = lazyk.pad_none(lazyk.array([[top, bottom], [None, 5]], type="2 * var * ?int64"), 3,
                       clip=True)
    assert lazyk.argsort(x, ascending=False).eval().to_list() == [[0, 1, 2], [1, 0, 2]]
    assert lazyk.argsort(x).eval().to_list() == [[1, 0, 2], [1, 0, 2]]
    w = lazyk.array([[10.0, 20.0, 30.0], [10.0, 20.0, 30.0]])
    assert w[lazyk.argsort(x, ascending=False)].eval().to_list() == [[10.0, 20.0, 30.0],
                                                                      [20.0, 10.0, 30.0]]


@pytest.mark.parametrize("n", [0, 1, 2, 3])
@pytest.mark.parametrize("clip", [True, False])
def test_pad_none_inside_rows_of_a_slice(n, clip):
    """pad_none at axis 2 of `var * ?var` rows sliced from the middle (their items lie
    after other rows' items): the padded rows, missing rows kept."""
    x = lazyk.array([[None, [1.0]], [None], [[2.0, 3.0]]], type="3 * var * ?var * float64")

    def pad(row):
        if row is None:
            return None
        row = row + [None] * max(0, n - len(row))
        return row[:n] if clip else row
    for sl in (slice(0, 1), slice(1, 3), slice(1, 2), slice(2, 3)):
        assert lazyk.pad_none(x[sl], n, axis=2, clip=clip).eval().to_list() == \
            [[pad(r) for r in rows] for rows in x.to_list()[sl]]


def test_take_back_over_fixed_rows_that_may_be_missing():
    """`x[argmax(x, axis=1, keepdims=True)]` of `?2` rows (pad_none of `?var` rows)."""
    z = lazyk.array([[1.0, 2.0], None, [3.0, 0.5]], type="3 * ?var * float64")
    pz = lazyk.pad_none(z, 2, clip=True)
    assert pz[lazyk.argmax(pz, axis=1, keepdims=True)].eval().to_list() == [[2.0], None, [3.0]]
    assert pz[lazyk.argmin(pz, axis=1, keepdims=True)].eval().to_list() == [[1.0], None, [0.5]]


def test_short_lists_sort_natively_and_stably_like_numpy():
    from lazyk.backend.rowsort import sort_rows
    rng = np.random.default_rng(3)
    lens = rng.integers(0, 12, 3000)
    off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    keys = rng.integers(-4, 4, int(off[-1])).astype(np.int64)
    got, pos = keys.copy(), np.empty_like(keys)
    sort_rows(off, got, pos)  # (several parts on the thread pool)
    for r in range(0, len(lens), 7):
        seg = keys[off[r]:off[r + 1]]
        order = np.argsort(seg, kind="stable")
        assert np.array_equal(got[off[r]:off[r + 1]], seg[order])
        assert np.array_equal(pos[off[r]:off[r + 1]], order)
    if ak is None:
        return
    x = lazyk.from_offsets(off, keys.astype(np.float64))
    a = ak.unflatten(keys.astype(np.float64), lens)
    for asc in (True, False):
        assert lazyk.sort(x, ascending=asc).eval().to_list() == \
            ak.sort(a, ascending=asc).to_list()
        assert lazyk.argsort(x, ascending=asc).eval().to_list() == \
            ak.argsort(a, ascending=asc, stable=True).to_list()


@pytest.mark.parametrize("dtype", ["float64", "float32", "int8", "int16", "complex64"])
def test_pad_none_and_firsts_of_numbers_in_one_native_pass_equal_awkward(dtype):
    """pad_none (cut or not) and firsts of lists of numbers, empty and missing lists and
    rows of values too: one native pass writes items and present flags."""
    ak = pytest.importorskip("awkward")
    rng = np.random.default_rng(7)
    for data in ([[1, 2, 3, 4], [], [5]], [[1, 2], None, [3, 4, 5, 6]], [[], []],
                 [list(rng.integers(0, 9, k)) if k >= 0 else None
                  for k in rng.integers(-1, 6, 300)]):
        x = lazyk.array(data).astype(dtype).eval()
        a = ak.Array(x.to_list())
        for target in (0, 1, 3, 5):
            for clip in (False, True):
                got = lazyk.pad_none(x, target, clip=clip).eval()
                assert got.to_list() == ak.pad_none(a, target, clip=clip).to_list()
                assert str(got.type).endswith(f" * ?{dtype}")
        assert lazyk.firsts(x).eval().to_list() == ak.firsts(a).to_list()


@pytest.mark.parametrize("dtype", ["float64", "int8", "complex64", "complex128"])
def test_flatten_of_lists_that_may_be_missing_equals_awkward(dtype):
    """flatten at axis 1 of `?var` rows of numbers: a slice of the values where the missing
    rows hold no items, else the present rows copied natively."""
    ak = pytest.importorskip("awkward")
    rng = np.random.default_rng(11)
    data = [list(rng.integers(0, 9, k)) if k >= 0 else None for k in rng.integers(-1, 6, 400)]
    x = lazyk.array(data, type=f"{len(data)} * ?var * int64").astype(dtype).eval()
    got = lazyk.flatten(x).eval()
    assert got.to_list() == ak.flatten(ak.Array(x.to_list())).to_list()
    assert str(got.type).endswith(f" * {dtype}")
    off, values = np.array([1, 3, 5, 6]), np.arange(7).astype(dtype)  # (a missing row with
    for valid in ([True, False, True], [True, True, True], [False] * 3):  # items: skipped)
        y = lazyk.from_offsets(off, values, validity=np.array(valid))
        want = [v for r, ok in enumerate(valid) if ok for v in values[off[r]:off[r + 1]]]
        assert lazyk.flatten(y).eval().to_list() == [v.item() for v in want]
