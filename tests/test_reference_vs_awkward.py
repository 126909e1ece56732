"""The plain-Python reference's Awkward vocabulary against Awkward Array itself.

hypothesis draws nested lists of every layout (empty rows, empty arrays, missing values,
missing rows, length-1 rows, fixed dims, depth 2 and 3) and compares each reference function
of tests/ragged_reference.py with Awkward's function of that name (cumsum / cumprod and
histogram, which Awkward does not have, with NumPy row by row). Where Awkward 2.14's results
disagree with each other the reference keeps one rule and the drawn cases avoid the other;
the `test_differs_from_awkward_*` tests at the end state each difference:

- cartesian: a later array's missing list gives an empty list in Awkward, a missing one for
  the first array (the reference: missing for any array); at axis 0 Awkward's
  `nested=[0]` nests after the last array (as `nested=[1]`).
- argmin / argmax over a non-innermost axis count only present rows in Awkward, so the
  position does not take the item back when rows are missing (the reference counts them);
  over an axis with two levels of lists below, Awkward's positions are not the positions
  along that axis.
- sort / argsort of `var * var * ?var * T` lists misplace rows in Awkward (the reference
  sorts each list); NaN has no place in Awkward's order (the reference: NumPy's, above
  every number).
- pad_none of byte-masked missing lists (how Arrow and `ak_array` mark them) loses or
  reorders lists in Awkward 2.14 (the drawn cases use Awkward's indexed option form).
- fill_none: Awkward promotes with a Python scalar as a NumPy array (int32 filled with 0 is
  int64); the reference as NumPy 2 does (int32). The values are equal.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import lazyk
from tests import ragged_reference as R
from tests import ragged_strategies as S
from tests.test_ragged_reference import ak_array, same

try:
    import awkward as ak
except ImportError:
    ak = None

pytestmark = pytest.mark.skipif(ak is None, reason="awkward is not installed (pip install "
                                                   "'lazyk[ragged]')")

LAYOUTS = S.LAYOUTS + S.QNEST_LAYOUTS
NESTED = tuple(t for t in LAYOUTS if t.count("*") >= 2)  # at least one list level


def py(x):
    """An Awkward result (array, NumPy scalar or None) as Python values."""
    if isinstance(x, ak.Array):
        return x.to_list()
    return None if x is None else x.item() if hasattr(x, "item") else x


def ak_of(x: R.RArray):
    return ak_array(str(x.type), x.data)


def indexed(array):
    """The same array with every ByteMaskedArray (ak_array's `?`) as an IndexedOptionArray,
    the option node ak.Array(list) builds."""
    def fn(layout, **kwargs):
        if isinstance(layout, ak.contents.ByteMaskedArray):
            out = layout.to_IndexedOptionArray64()
            return out.copy(content=ak.transform(fn, out.content, highlevel=False))
    return ak.transform(fn, array)


def leaf_dtype(x) -> np.dtype | None:
    """The dtype of an Awkward array's values (None when it holds none)."""
    flat = ak.flatten(x, axis=None)
    return ak.to_numpy(flat).dtype if len(flat) else None


def lists_at(data, depth: int) -> list:
    """The lists (or, at the leaf depth, the values) at `depth`, in order; a missing row
    above holds none."""
    if depth == 0:
        return [data]
    if data is None:
        return []
    return [r for x in data for r in lists_at(x, depth - 1)]


def map_lists(data, depth: int, fn):
    """`fn` on every list at `depth` (a missing row above stays missing)."""
    if depth == 0:
        return fn(data)
    return None if data is None else [map_lists(x, depth - 1, fn) for x in data]


def drawn(data, layouts=LAYOUTS, dtypes=S.DTYPES, nan=False) -> R.RArray:
    t, d = data.draw(S.ragged(layouts=layouts, dtypes=dtypes, nan=nan), label="array")
    return R.array(d, t)


# ---------------------------------------------------------------- structure
@given(st.data())
def test_num_matches_awkward(data):
    x = drawn(data)
    axis = data.draw(st.integers(-x.type.ndim, x.type.ndim - 1), label="axis")
    ref = R.num(x, axis)
    got = ak.num(ak_of(x), axis=axis)
    assert same(py(got), ref.data)
    if isinstance(got, ak.Array) and len(got):
        assert leaf_dtype(got) in (None, np.int64) and ref.type.dtype == np.int64


@given(st.data())
def test_flatten_matches_awkward(data):
    x = drawn(data)
    axis = data.draw(st.sampled_from([None] + list(range(x.type.ndim))), label="axis")
    ref = R.flatten(x, axis)
    got = ak.flatten(ak_of(x), axis=axis)
    assert same(py(got), ref.data)
    if len(got):
        assert leaf_dtype(got) in (None, ref.type.dtype)


@given(st.data())
def test_firsts_matches_awkward(data):
    x = drawn(data, NESTED)
    axis = data.draw(st.integers(1, x.type.ndim - 1), label="axis")
    assert same(py(ak.firsts(ak_of(x), axis=axis)), R.firsts(x, axis).data)


@given(st.data())
def test_local_index_and_is_none_match_awkward(data):
    x = drawn(data)
    nd = x.type.ndim
    axis = data.draw(st.integers(-nd, nd - 1), label="axis")
    assert same(py(ak.local_index(ak_of(x), axis=axis)), R.local_index(x, axis).data)
    axis = data.draw(st.integers(0, nd - 1), label="is_none axis")
    assert same(py(ak.is_none(ak_of(x), axis=axis)), R.is_none(x, axis).data)


@given(S.ragged_pair(LAYOUTS, S.DTYPES, own_rows=True), st.data())
def test_concatenate_matches_awkward(pair, data):
    t1, d1, t2, d2 = pair
    x, y = R.array(d1, t1), R.array(d2, t2)
    axis = data.draw(st.integers(0, x.type.ndim - 1), label="axis")
    ref = R.concatenate([x, y, x], axis)
    got = ak.concatenate([ak_of(x), ak_of(y), ak_of(x)], axis=axis)
    assert same(got.to_list(), ref.data)
    assert leaf_dtype(got) in (None, ref.type.dtype)


@given(st.data(), st.sampled_from([0, -2, 1.5, True]))
def test_fill_none_matches_awkward_values(data, value):
    x = drawn(data)
    ref = R.fill_none(x, value)
    got = ak.fill_none(ak_of(x), value)
    assert same(got.to_list(), ref.data)
    if x.type.option:
        assert ref.type.dtype == np.result_type(x.type.dtype, value) and not ref.type.option
    else:
        assert ref is x  # nothing to fill


@given(st.data(), st.integers(0, 5), st.booleans())
def test_pad_none_matches_awkward(data, target, clip):
    x = drawn(data)
    axis = data.draw(st.integers(0, x.type.ndim - 1), label="axis")
    ref = R.pad_none(x, target, axis, clip=clip)
    got = ak.pad_none(indexed(ak_of(x)), target, axis=axis, clip=clip)  # see the differs test
    assert same(got.to_list(), ref.data)


# ---------------------------------------------------------------- reductions
def _rows_missing_below(x: R.RArray, a: int) -> bool:
    return any(d.option for d in x.type.dims[a + 1:])


@given(st.data(), st.sampled_from(["argmin", "argmax"]), st.booleans())
def test_argmin_argmax_match_awkward(data, op, keepdims):
    x = drawn(data, nan=True)
    nd = x.type.ndim
    axis = data.draw(st.sampled_from([None] + list(range(-nd, nd))), label="axis")
    keepdims = keepdims and axis is not None  # Awkward's shape is odd over fixed dims
    if axis is not None:
        a = axis % nd
        # Awkward counts only present rows along a non-innermost axis, and positions along
        # an axis with two levels of lists below are not positions at all (differs test)
        assume(a == nd - 1 or a == nd - 2 and not _rows_missing_below(x, a))
    ref = getattr(R, op)(x, axis, keepdims=keepdims)
    got = getattr(ak, op)(ak_of(x), axis=axis, keepdims=keepdims)
    assert same(py(got), ref.data), (str(x.type), axis)


@given(st.data(), st.sampled_from(["std", "var"]), st.sampled_from([0, 1]))
def test_std_var_match_awkward(data, op, ddof):
    x = drawn(data, nan=True)
    nd = x.type.ndim
    axis = data.draw(st.sampled_from([None] + list(range(-nd, nd))), label="axis")
    # Awkward raises for `N * var * 4 * T` holding no value
    assume(axis is not None or lists_at(x.data, nd - 1) and any(lists_at(x.data, nd - 1)))
    ref = getattr(R, op)(x, axis, ddof=ddof)
    with np.errstate(all="ignore"):
        got = getattr(ak, op)(ak_of(x), axis=axis, ddof=ddof)
    # (Awkward's are float64; lazyk's and the reference's NumPy's dtype: float32 rounds)
    rel = 1e-9 if ref.type.dtype == np.float64 else 1e-6
    assert same(py(got), ref.data, rel=rel), (str(x.type), axis)
    assert ref.type.dtype == np.var(np.ones(2, x.type.dtype)).dtype
    if isinstance(got, ak.Array) and len(got):
        assert leaf_dtype(got) in (None, np.float64)


@given(st.data(), st.sampled_from(["cumsum", "cumprod"]))
def test_cumsum_cumprod_match_numpy_per_row(data, op):
    """Awkward has no cumsum: every last-axis list against NumPy's on its present values."""
    x = drawn(data, dtypes=S.DTYPES, nan=True)
    ref = getattr(R, op)(x)
    assert ref.type.dtype == getattr(np, op)(np.ones(1, x.type.dtype)).dtype
    assert ref.type.dims[1:] == x.type.dims[1:] and len(ref.data) == len(x.data)
    depth = x.type.ndim - 1
    for row, out in zip(lists_at(x.data, depth), lists_at(ref.data, depth), strict=True):
        assert (row is None) == (out is None)
        if row is None:
            continue
        with np.errstate(all="ignore"):
            want = iter(getattr(np, op)(np.array([v for v in row if v is not None],
                                                 x.type.dtype)).tolist())
        assert same(out, [None if v is None else next(want) for v in row])


@given(st.data(), st.booleans())
def test_sort_argsort_match_awkward(data, ascending):
    x = drawn(data)  # no NaN: Awkward's NaN placement is not an order
    nd = x.type.ndim
    # Awkward misplaces rows when the sorted lists sit under lists (see the differs test)
    assume(nd < 3 or not x.type.dims[nd - 1].option)
    ref, refarg = R.sort(x, ascending=ascending), R.argsort(x, ascending=ascending)
    got = ak.sort(ak_of(x), axis=-1, ascending=ascending, stable=True)
    gotarg = ak.argsort(ak_of(x), axis=-1, ascending=ascending, stable=True)
    assert same(got.to_list(), ref.data)
    assert same(gotarg.to_list(), refarg.data)
    assert refarg.type.dtype == np.int64


@given(st.data())
def test_sort_with_nan_matches_numpy_per_row(data):
    x = drawn(data, S.LAYOUTS, S.NUMERIC, nan=True)

    depth = x.type.ndim - 1
    for row, order in zip(lists_at(x.data, depth), lists_at(R.argsort(x).data, depth)):
        if row is not None and None not in row:
            assert order == np.argsort(np.array(row, x.type.dtype), kind="stable").tolist()


# ---------------------------------------------------------------- selection and gather
@given(st.data())
def test_select_same_structure_mask_matches_awkward(data):
    x = drawn(data, dtypes=S.NUMERIC)
    mask = R.elementwise("greater", x, 0)  # ?bool where x has missing values
    ref = R.select(x, mask)
    assert same(ak_of(x)[ak_of(mask)].to_list(), ref.data), str(x.type)


@given(st.data())
def test_select_rows_and_lists_matches_awkward(data):
    """A mask of fewer dims (from num: missing where the list is) selects whole lists; a
    one-dim mask selects rows of the outer dim."""
    x = drawn(data, NESTED)
    k = data.draw(st.integers(1, x.type.ndim - 1), label="mask dims")
    mask = R.elementwise("greater", R.num(x, k), 1)
    ref = R.select(x, mask)
    assert mask.type.ndim == k
    assert same(ak_of(x)[ak_of(mask)].to_list(), ref.data), (str(x.type), k)


@given(st.data(), st.sampled_from(["argmin", "argmax"]))
def test_gather_with_keepdims_arg_reduction_matches_awkward(data, op):
    x = drawn(data, NESTED)
    idx = getattr(R, op)(x, -1, keepdims=True)  # a fixed 1, None for an empty list
    ref = R.gather(x, idx)
    got = ak_of(x)[getattr(ak, op)(ak_of(x), axis=-1, keepdims=True)]
    assert same(got.to_list(), ref.data), str(x.type)


@st.composite
def var_index(draw, x: R.RArray, option: bool):
    """An index of x's dims with var last lists: positions in -n..n-1 of x's lists there
    (missing one time in four with `option`); missing where x's list is missing."""
    nd = x.type.ndim

    def row(r):
        if r is None:
            return None
        n = draw(st.integers(0, 3))
        return [None if option and draw(st.integers(0, 3)) == 0 else
                draw(st.integers(-len(r), len(r) - 1)) for _ in range(n if r else 0)]
    data = map_lists(x.data, nd - 1, row)
    dims = [str(d) for d in x.type.dims[:nd - 1]] + ["?var" if x.type.dims[nd - 1].option
                                                     else "var"]
    return R.array(data, " * ".join(dims + [("?" if option else "") + "int64"]))


@given(st.data(), st.booleans())
def test_gather_with_var_index_matches_awkward(data, option):
    x = drawn(data, NESTED)
    idx = data.draw(var_index(x, option), label="index")
    ref = R.gather(x, idx)
    assert same(ak_of(x)[ak_of(idx)].to_list(), ref.data), (str(x.type), str(idx.type))


def test_gather_and_select_errors():
    x = R.array([[1, 2, 3], [], [4]], "3 * var * int64")
    idx = R.array([[0], [0], [0]], "3 * var * int64")
    with pytest.raises(IndexError, match=r"index 0 is out of bounds for row \[1\] of length 0"):
        R.gather(x, idx)
    with pytest.raises(IndexError):
        ak_of(x)[ak_of(idx)]
    with pytest.raises(IndexError, match=r"index -4 is out of bounds for row \[0\]"):
        R.gather(x, R.array([[-4], [], []], "3 * var * int64"))
    with pytest.raises(lazyk.ShapeError, match=r"row \[0\]: the mask has length 2 and the "
                                               r"array 3"):
        R.select(x, R.array([[True, False], [], [True]], "3 * var * bool"))
    with pytest.raises(lazyk.ShapeError, match="outermost dim: the index has length 2"):
        R.gather(R.array([[[1]], [[2]], [[3]]], "3 * var * var * int64"),
                 R.array([[[0]], [[0]]], "2 * var * var * int64"))
    with pytest.raises(TypeError, match="a mask is bool"):
        R.select(x, idx)
    with pytest.raises(lazyk.ShapeError, match="the arrays have lengths"):
        R.concatenate([x, R.array([[1]], "1 * var * int64")], axis=1)
    with pytest.raises(ValueError, match="n >= 1"):
        R.combinations(x, 0)


# ---------------------------------------------------------------- combinations
@given(st.data(), st.integers(1, 3), st.booleans())
def test_combinations_and_argcombinations_match_awkward(data, n, named):
    x = drawn(data)
    axis = data.draw(st.integers(0, x.type.ndim - 1), label="axis")
    fields = ["a", "b", "c"][:n] if named else None
    ref = R.combinations(x, n, axis, fields=fields)
    got = ak.combinations(ak_of(x), n, axis=axis, fields=fields)
    assert same(got.to_list(), R.records(ref, axis + 1)), (str(x.type), axis)
    ref = R.argcombinations(x, n, axis, fields=fields)
    got = ak.argcombinations(ak_of(x), n, axis=axis, fields=fields)
    assert same(got.to_list(), R.records(ref, axis + 1))
    parts = list(ref.values()) if named else list(ref)
    assert all(p.type.dtype == np.int64 for p in parts)


def _missing_lists(x: R.RArray, a: int) -> bool:
    """Whether x has a missing list at any depth from 1 to `a`."""
    found = []

    def look(v, depth):
        if v is None:
            found.append(depth)
        elif depth <= a:
            for w in v:
                look(w, depth + 1)
    for v in x.data:
        look(v, 1)
    return any(1 <= d <= a for d in found)


@given(S.ragged_pair(LAYOUTS, S.DTYPES, own_rows=True), st.data())
def test_cartesian_matches_awkward(pair, data):
    t1, d1, t2, d2 = pair
    x, y = R.array(d1, t1), R.array(d2, t2)
    axis = data.draw(st.integers(0, x.type.ndim - 1), label="axis")
    assume(not _missing_lists(y, axis))  # Awkward: a later array's missing list gives []
    arrays = [x, y] + data.draw(st.sampled_from([[], [y]]), label="third")
    # at axis 0 Awkward nests after the last array whichever is named (the differs test)
    nested = data.draw(st.sampled_from([None, True] + [[j] for j in range(len(arrays) - 1)
                                                       if axis > 0]), label="nested")
    named = data.draw(st.booleans(), label="named")
    depth = axis + 1 + (len(arrays) - 1 if nested is True else len(nested or []))
    if named:
        keys = ["x", "y", "z"][:len(arrays)]
        if isinstance(nested, list):
            nested = [keys[j] for j in nested]
        ref = R.cartesian(dict(zip(keys, arrays)), axis, nested=nested)
        got = ak.cartesian(dict(zip(keys, map(ak_of, arrays))), axis=axis, nested=nested)
    else:
        ref = R.cartesian(arrays, axis, nested=nested)
        got = ak.cartesian([ak_of(a) for a in arrays], axis=axis, nested=nested)
    assert same(got.to_list(), R.records(ref, depth)), (t1, t2, axis, nested)


# ---------------------------------------------------------------- histogram
@given(st.data(), st.booleans())
def test_histogram_matches_numpy(data, weighted):
    # with weights, no infinities: numpy sums weights per bin as differences of a running
    # sum there, so an infinite weight anywhere makes NaN in other bins
    x = drawn(data, S.LAYOUTS, S.NUMERIC, nan=not weighted)
    kind = data.draw(st.sampled_from(["range", "auto", "edges"]), label="bins")
    if kind == "edges":
        bins = sorted(data.draw(st.lists(st.integers(-6, 6), min_size=2, max_size=5,
                                         unique=True), label="edges"))
        hist_range = None
    else:
        bins = data.draw(st.integers(1, 6), label="bins")
        hist_range = None if kind == "auto" else tuple(sorted(
            data.draw(st.tuples(st.integers(-6, 6), st.integers(-6, 6)), label="range")))
    w = R.elementwise("absolute", R.elementwise("add", x, 1)) if weighted else None
    xs = lists_at(x.data, x.type.ndim)
    present = [(v, u) for v, u in zip(xs, lists_at(w.data, x.type.ndim) if w else [1] * len(xs))
               if v is not None and u is not None]
    values = np.array([v for v, _ in present], x.type.dtype)
    weights = np.array([u for _, u in present], w.type.dtype) if w else None
    try:
        want, want_edges = np.histogram(values, bins, hist_range, weights=weights)
    except ValueError:
        with pytest.raises(ValueError):
            R.histogram(x, bins, hist_range, weights=w)
        return
    ref = R.histogram(x, bins, hist_range, weights=w)
    assert R.histogram_bin_edges(x, bins, hist_range) == want_edges.tolist()
    assert same(ref.data, want.tolist(), rel=1e-12), (str(x.type), bins, hist_range)
    assert ref.type.dtype == want.dtype and str(ref.type) == f"{len(want)} * {want.dtype}"


def test_histogram_rules_by_hand():
    x = R.array([[0.0, 1.0, None], [], [2.0, float("nan"), 4.0, -1.0]], "3 * var * ?float64")
    assert R.histogram(x, 4, (0, 4)).data == [1, 1, 1, 1]  # 4.0: the last bin is closed
    assert R.histogram(x, 2, (0, 2)).data == [1, 2]
    f = R.array([[np.float32(0.1) * 3]], "1 * var * float32")
    edges = R.histogram_bin_edges(f, 3, (0.0, 0.3))
    assert edges == np.histogram_bin_edges(np.float32([0.3]), 3, (0.0, 0.3)).tolist()
    assert edges[-1] == float(np.float32(0.3))  # float32 data: float32 edges
    with pytest.raises(ValueError, match="range"):
        R.histogram(x, 3)  # NaN in the data: no automatic range


# ---------------------------------------------------------------- where Awkward differs
def test_differs_from_awkward_cartesian_missing_list_of_a_later_array():
    a = R.array([[1, 2], None, [3]], "3 * ?var * int64")
    b = R.array([None, [5], [6, 7]], "3 * ?var * int64")
    assert R.records(R.cartesian([a, b]), 2) == [None, None, [(3, 6), (3, 7)]]
    assert R.records(R.cartesian([b, a]), 2) == [None, None, [(6, 3), (7, 3)]]
    assert ak.cartesian([ak_of(a), ak_of(b)]).to_list() == [[], None, [(3, 6), (3, 7)]]
    assert ak.cartesian([ak_of(b), ak_of(a)]).to_list() == [None, [], [(6, 3), (7, 3)]]


def test_differs_from_awkward_cartesian_nested_at_axis_0():
    x, y, z = (R.array(v, "2 * float64") for v in ([0.0, 1.0], [2.0, 3.0], [4.0, 5.0]))
    ref = R.records(R.cartesian([x, y, z], 0, nested=[0]), 2)
    assert ref == [[(a, b, c) for b in (2.0, 3.0) for c in (4.0, 5.0)] for a in (0.0, 1.0)]
    got = ak.cartesian([ak_of(x), ak_of(y), ak_of(z)], axis=0, nested=[0]).to_list()
    assert len(got) == 4 and got == R.records(R.cartesian([x, y, z], 0, nested=[1]), 2)


def test_differs_from_awkward_arg_reduction_positions_over_missing_rows():
    z = R.array([[[1, 2], None, [5, 0]]], "1 * var * ?var * int64")
    assert R.argmax(z, 1).data == [[2, 0]]  # z[0][2][0] = 5 is the largest of column 0
    assert R.gather(R.array([[1, None, 5]], "1 * var * ?int64"),
                    R.array([[2]], "1 * 1 * int64")).data == [[5]]
    assert ak.argmax(ak_of(z), axis=1).to_list() == [[1, 0]]  # the position among [1, 2], [5, 0]
    w = R.array([[[1, 2]], [[3, 4], [5, 6]]], "2 * var * var * int64")
    assert R.argmax(w, 0).data == [[1, 1], [1, 1]]  # only w[1] has a second list
    assert ak.argmax(ak_of(w), axis=0).to_list() == [[1, 1], [0, 0]]


def test_differs_from_awkward_sort_under_missing_lists():
    y = R.array([[None, [3]], [[2, 1]]], "2 * var * ?var * int64")
    assert R.sort(y).data == [[None, [3]], [[1, 2]]]
    assert R.argsort(y).data == [[None, [0]], [[1, 0]]]
    got = ak.sort(ak_of(y)).to_list()
    assert got != R.sort(y).data  # Awkward 2.14: [[None, [3]], [None]]
    # NaN: NumPy's place (above every number); Awkward's depends on where NaN starts
    n = float("nan")
    v = R.array([[2.0, n, 1.0, None, -np.inf]], "1 * var * ?float64")
    assert same(R.sort(v).data, [[-np.inf, 1.0, 2.0, n, None]])
    assert same(R.sort(v, ascending=False).data, [[n, 2.0, 1.0, -np.inf, None]])


def test_differs_from_awkward_fill_none_dtype():
    x = R.array([[1, None]], "1 * var * ?int32")
    r = R.fill_none(x, 0)
    assert r.data == [[1, 0]] and r.type.dtype == np.int32
    assert leaf_dtype(ak.fill_none(ak_of(x), 0)) == np.int64
    assert R.fill_none(x, np.int64(0)).type.dtype == np.int64  # a NumPy scalar is strong


def test_differs_from_awkward_pad_none_of_byte_masked_lists():
    x = R.array([None, [1.0]], "2 * ?var * float64")
    assert R.pad_none(x, 0).data == [None, [1.0]]
    assert R.pad_none(x, 2).data == [None, [1.0, None]]
    assert ak.pad_none(indexed(ak_of(x)), 2).to_list() == [None, [1.0, None]]
    assert ak.pad_none(ak_of(x), 0).to_list() == [[1.0], None]  # Awkward 2.14, byte-masked
