"""`lazyk.firsts` and `lazyk.num` over one var level (`N * var * T`, `N * ?var * T`,
`N * var * ?T`): the values computed straight into lazyk's `?T` form, the row mask read
through its bytes, the offsets checked in one pass. Compared with a plain-Python reference
and with Awkward, over offsets that do not start at 0, views, empty and all-missing rows,
and offsets that are out of order (the error names the row)."""
from __future__ import annotations

import numpy as np
import pytest

import lazyk
from lazyk.arrays.array import masked, masked_empty
from lazyk.arrays.columns import columns
from lazyk.arrays.trees import Lists, Masked, Unread
from lazyk.errors import ArrayConstructionError

try:
    import awkward as ak
except ImportError:
    ak = None

DTYPES = (np.float64, np.float32, np.int64, np.int32, np.uint8, np.bool_)


def ref_firsts(rows: list) -> list:
    return [None if r is None or not r else r[0] for r in rows]


def ref_num(rows: list) -> list:
    return [None if r is None else len(r) for r in rows]


def rows_of(offsets, content, validity=None, content_mask=None) -> list:
    """The rows as Python lists (None for a missing row or value)."""
    items = [None if content_mask is not None and not content_mask[i] else content[i].item()
             for i in range(len(content))]
    return [None if validity is not None and not validity[i] else
            items[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]


def check(x, rows: list, dtype) -> None:
    """firsts and num of `x` against the reference: values, missing places, dtypes, types."""
    n = len(rows)
    got = lazyk.firsts(x).eval()
    assert got.to_list() == ref_firsts(rows)
    assert str(got.type) == f"{n} * ?{lazyk.array(np.zeros(1, dtype)).type.elem}"
    counts = lazyk.num(x).eval()
    assert counts.to_list() == ref_num(rows)
    missing_rows = any(r is None for r in rows) or "?var" in str(x.type)
    assert str(counts.type) == f"{n} * {'?' if missing_rows else ''}int64"


def drawn(rng, n, dtype, start=0, spare=0):
    """(offsets from `start`, content with `spare` items after the last row)."""
    lens = rng.integers(0, 4, n)
    off = start + np.concatenate([[0], np.cumsum(lens)])
    content = (rng.random(int(off[-1]) + spare) * 100).astype(dtype)
    return off, content


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("start,spare", [(0, 0), (3, 2)])
def test_against_the_reference(dtype, start, spare):
    rng = np.random.default_rng(1)
    off, content = drawn(rng, 50, dtype, start, spare)
    valid = rng.random(50) > 0.3
    check(lazyk.from_offsets(off, content), rows_of(off, content), dtype)
    check(lazyk.from_offsets(off, content, validity=valid), rows_of(off, content, valid),
          dtype)
    vmask = rng.random(len(content)) > 0.4
    inner = lazyk.array(np.ma.MaskedArray(content, ~vmask))
    check(lazyk.from_offsets(off, inner), rows_of(off, content, None, vmask), dtype)
    check(lazyk.from_offsets(off, inner, validity=valid),
          rows_of(off, content, valid, vmask), dtype)


@pytest.mark.parametrize("index", [slice(1, None), slice(None, None, 2),
                                   slice(None, None, -1), slice(5, 5)])
def test_views_of_rows(index):
    """Sliced, stepping and reversed rows (indices not in offsets form)."""
    rng = np.random.default_rng(2)
    off, content = drawn(rng, 30, np.float64, 4, 3)
    valid = rng.random(30) > 0.3
    rows = rows_of(off, content)
    check(lazyk.from_offsets(off, content)[index], rows[index], np.float64)
    qrows = rows_of(off, content, valid)
    check(lazyk.from_offsets(off, content, validity=valid)[index], qrows[index], np.float64)


def test_empty_arrays_rows_and_all_missing():
    empty_off = np.zeros(1, np.int64)
    check(lazyk.from_offsets(empty_off, np.zeros(0)), [], np.float64)
    check(lazyk.from_offsets(empty_off, np.zeros(0), validity=np.zeros(0, bool)), [],
          np.float64)
    off = np.array([2, 2, 2, 2])  # every row empty, content before and after them
    check(lazyk.from_offsets(off, np.arange(4.0)), [[], [], []], np.float64)
    none = np.zeros(3, bool)
    check(lazyk.from_offsets(np.array([0, 1, 3, 4]), np.arange(4.0), validity=none),
          [None, None, None], np.float64)
    inner = lazyk.array(np.ma.MaskedArray(np.arange(4.0), np.ones(4, bool)))
    check(lazyk.from_offsets(np.array([0, 1, 3, 4]), inner), [[None], [None, None], [None]],
          np.float64)


def test_int32_offsets_and_built_arrays():
    off = np.array([1, 3, 3, 6], np.int32)
    content = np.arange(7, dtype=np.int16)
    check(lazyk.from_offsets(off, content), rows_of(off, content), np.int16)
    check(lazyk.from_offsets(off, content, validity=np.array([True, True, False])),
          rows_of(off, content, [True, True, False]), np.int16)
    built = lazyk.array([[1.5, 2.5], None, [], [4.0]], type="4 * ?var * float64")
    check(built, [[1.5, 2.5], None, [], [4.0]], np.float64)
    assert lazyk.firsts(lazyk.array([[1, None], [None], []], type="3 * var * ?int8")
                        ).eval().to_list() == [1, None, None]


@pytest.mark.skipif(ak is None, reason="awkward is not installed")
@pytest.mark.parametrize("validity", [False, True])
def test_same_as_awkward(validity):
    rng = np.random.default_rng(3)
    off, content = drawn(rng, 200, np.float64, 5, 1)
    valid = rng.random(200) > 0.2 if validity else None
    x = lazyk.from_offsets(off, content, validity=valid)
    a = ak.Array(rows_of(off, content, valid))
    assert lazyk.firsts(x).eval().to_list() == ak.firsts(a).to_list()
    assert lazyk.num(x).eval().to_list() == ak.num(a).to_list()
    assert lazyk.firsts(x[3:-7]).eval().to_list() == ak.firsts(a[3:-7]).to_list()


@pytest.mark.parametrize("validity", [None, np.ones(3, bool)])
@pytest.mark.parametrize("op", [lazyk.firsts, lazyk.num])
def test_decreasing_offsets_name_the_row(op, validity):
    """Offsets changed in place after an O(1) construction: refused before any read."""
    off = np.array([0, 2, 4, 6])
    x = lazyk.from_offsets(off, np.arange(6.0), validity=validity)
    if validity is None:
        off[2] = 1  # row 1 runs backwards (2 -> 1)
    else:  # the copied offsets sit in the array's own block: change them there
        block = x.owner.buffer
        start = x.ptr - x.owner.address
        block[start + 16:start + 24].view(np.int64)[0] = 1
    with pytest.raises(ArrayConstructionError, match="var row 1: start 2, stop 1"):
        op(x).eval()


def test_offsets_past_the_content_name_the_row():
    off = np.array([0, 2, 4, 6])
    x = lazyk.from_offsets(off, np.arange(6.0))
    off[3] = 9  # row 2 reaches past the 6 items
    with pytest.raises(ArrayConstructionError, match="var row 2: start 4, stop 9"):
        lazyk.firsts(x).eval()


@pytest.mark.parametrize("shape", [(), (0,), (4,), (2, 3), (0, 3)])
@pytest.mark.parametrize("dtype", [np.float64, np.int8, np.dtype("V3"), "M8[s]"])
def test_masked_empty_is_masked_filled_in_place(shape, dtype):
    rng = np.random.default_rng(4)
    values = np.frombuffer(rng.bytes(int(np.prod(shape)) * np.dtype(dtype).itemsize),
                           dtype).reshape(shape)
    mask = rng.random(shape) > 0.5
    got, into, present = masked_empty(shape, dtype)
    assert got.to_list() == masked(np.zeros(shape, dtype), np.zeros(shape, bool)).to_list()
    into[...] = values
    present[...] = mask
    want = masked(values, mask)
    assert got.type == want.type and got.meta == want.meta
    assert got.to_list() == want.to_list()
    assert want.to_list() == np.ma.MaskedArray(values, ~mask).tolist() or \
        np.dtype(dtype).kind in "VM"  # (NumPy's own lists of those differ in form)


@pytest.mark.parametrize("data,type_,axis,want", [
    ([[1, None], [], [None]], "3 * var * ?int32", 1, [2, 0, 1]),
    ([[[1, None]], [], [[None], [2, 3, None]]], "3 * var * var * ?int32", 2,
     [[2], [], [1, 3]]),
    ([[[1, None]], [], [[None], [2, 3, None]]], "3 * var * var * ?int32", 1, [1, 0, 2]),
    ([[[1.0], [None, 2.0], []], [[], [], [None]]], "2 * 3 * var * ?float64", 2,
     [[1, 2, 0], [0, 0, 1]]),
    ([[[1, None]], None, [[None], []]], "3 * ?var * var * ?int8", 2, [[2], None, [1, 0]]),
    ([[[1, None]], [[None], []]], "var * var * var * ?int8", 2, [[2], [1, 0]]),
])
def test_num_reads_only_the_lists(data, type_, axis, want):
    """num needs the lengths of the lists at the axis, not their items (`?T` items below
    are not read)."""
    x = lazyk.array(data, type=type_)
    assert lazyk.num(x, axis=axis).eval().to_list() == want
    if ak is not None:
        assert ak.num(ak.Array(data), axis=axis).to_list() == want
    order = np.array([2, 0, 1] if len(data) == 3 else [1, 0])  # rows gathered
    assert lazyk.num(x[order], axis=axis).eval().to_list() == [want[i] for i in order]
    if type_.startswith("3 *"):  # a view whose rows step backwards
        assert lazyk.num(x[::-1], axis=axis).eval().to_list() == want[::-1]


def test_columns_leave_the_items_below_the_lists_unread():
    x = lazyk.array([[1, None], [], [None]], type="3 * var * ?int32")
    tree = columns(x, lists=1)
    assert isinstance(tree, Lists) and tree.offsets.tolist() == [0, 2, 2, 3]
    assert isinstance(tree.child, Unread) and tree.child.count == 3
    assert isinstance(columns(x).child, Masked)  # (read in full without `lists`)


@pytest.mark.parametrize("dtype", [np.int16, np.float32, np.float64])
def test_firsts_of_many_rows_over_threads_and_strided_values(dtype):
    # enough rows for every thread to take a part; the values a strided view (a record field)
    rng = np.random.default_rng(7)
    lens = rng.integers(0, 4, 100_000)
    off = np.concatenate([[0], np.cumsum(lens)])
    pairs = (rng.random((int(off[-1]), 2)) * 1000).astype(dtype)
    got = lazyk.firsts(lazyk.from_offsets(off, pairs[:, 1])).eval()
    present = lens > 0
    want = np.where(present, pairs[np.minimum(off[:-1], len(pairs) - 1), 1], 0)
    assert got.to_list() == [w.item() if p else None for w, p in zip(want, present)]
    assert str(got.type) == f"100000 * ?{np.dtype(dtype).name}"


def test_num_of_computed_lists_is_counted_in_their_kernel():
    """num of a selection or of combinations counts the lists where they are computed (a
    fold of the same nest), never storing them; missing values keep the row operation."""
    from lazyk.frontend.graph import REDUCE_OP, graph_ops

    rng = np.random.default_rng(4)
    lens = rng.integers(0, 6, 400)
    off = np.r_[0, np.cumsum(lens)].astype(np.int64)
    values = rng.random(int(off[-1]))
    rows = [values[off[i]:off[i + 1]].tolist() for i in range(len(lens))]
    x = lazyk.from_offsets(off, values)
    sel = lazyk.num(x[x > 0.5], axis=1)
    assert REDUCE_OP in graph_ops(sel.node) and "num" not in graph_ops(sel.node)
    assert lazyk.evaluate(sel).tolist() == [sum(v > 0.5 for v in r) for r in rows]
    pairs = lazyk.num(lazyk.combinations(x, 2), axis=1)
    assert lazyk.evaluate(pairs).tolist() == [len(r) * (len(r) - 1) // 2 for r in rows]
    assert lazyk.evaluate(lazyk.num(x, axis=1)).tolist() == [len(r) for r in rows]
    q = lazyk.array([[1.0, None, 3.0], [], [None]])  # missing values count as items
    assert np.asarray(lazyk.evaluate(lazyk.num(q * 2, axis=1))).tolist() == [3, 0, 1]


def test_count_of_a_selection_reads_only_its_mask():
    from lazyk.frontend.graph import SELECT_OP, graph_ops

    x = lazyk.array([[1.0, 5.0, np.nan], [], [7.0, 3.0]])
    for e in (lazyk.num(x[x > 2], axis=1), lazyk.count(x[x > 2], axis=-1)):
        assert SELECT_OP not in graph_ops(e.node)
        assert lazyk.evaluate(e).tolist() == [1, 0, 2]
    assert lazyk.evaluate(lazyk.count(x[x == x], axis=1)).tolist() == [2, 0, 2]  # NaN: no
    e = lazyk.count(x[x > -1], axis=1, skipnan=True)  # (NaN > -1 is False)
    assert lazyk.evaluate(e).tolist() == [2, 0, 2]
    e = lazyk.count(x[~(x < 2)], axis=1, skipnan=True)  # NaN kept, then left out
    assert lazyk.evaluate(e).tolist() == [1, 0, 2]
    q = lazyk.array([[1.0, None], [4.0]])  # missing values: counted where present
    assert np.asarray(lazyk.evaluate(lazyk.count(q[q > 0], axis=1))).tolist() == [1, 1]


def test_num_of_records_inside_their_fields_lists_is_records_of_each_fields():
    ak = pytest.importorskip("awkward")
    rows = [[[1.0, 2.0], [], [3.0]], [[4.0]], []]
    c = lazyk.combinations(lazyk.array(rows), 2)
    want = ak.combinations(ak.Array(rows), 2)
    x, y = [[1.0, 2.0], [], [3.0]], [[1.0], [2.0, 3.0], []]
    z = lazyk.zip({"a": lazyk.array(x), "y": lazyk.array(y)}, depth_limit=1)
    zw = ak.zip({"a": ak.Array(x), "y": ak.Array(y)}, depth_limit=1)
    for got_of, ref, axes in ((lazyk.num, ak.num, (0, 1, 2, -1, -2)),
                              (lazyk.local_index, ak.local_index, (1, 2, -1, -2))):
        for recs, awk in ((c, want), (z, zw)):
            for axis in axes:
                if axis == 2 and recs is z:
                    continue
                got = got_of(recs, axis=axis)
                got = got.eval() if hasattr(got, "eval") else got
                got = got.to_list() if hasattr(got, "to_list") else np.asarray(got).tolist()
                assert got == ak.to_list(ref(awk, axis=axis)), (got_of.__name__, axis)


def test_firsts_of_one_item_rows_that_may_be_missing():
    """`firsts` of `N * 1 * ?T` (a take-back at argmin(keepdims=True)) is those items: as
    Awkward, missing where they are, in a new array (the source's memory never shared)."""
    import awkward as ak
    a = ak.to_regular(ak.Array([[1.5], [None], [3.0], [None]]), axis=1)
    x = lazyk.from_awkward(a)
    got = lazyk.firsts(x).eval()
    assert str(x.type) == "4 * 1 * ?float64" and str(got.type) == "4 * ?float64"
    assert got.to_list() == ak.firsts(a).to_list() == [1.5, None, 3.0, None]
    source = columns(x).child.unwrap()[1].values
    assert not np.shares_memory(columns(got).unwrap()[1].values, source)
    assert (lazyk.firsts(x) * 2).eval().to_list() == [3.0, None, 6.0, None]
    plain = lazyk.array(np.arange(3.0).reshape(3, 1))  # (present values: firsts gives ?T)
    assert str(lazyk.firsts(plain).eval().type) == "3 * ?float64"


def test_firsts_of_a_computed_take_back_views_its_memory():
    """`firsts(x[argmin(x, keepdims=True)])`: the `N * 1 * ?T` take-back is made by the
    evaluation, so firsts views its memory (no copy); the input's memory is never shared,
    and the values and missing rows are Awkward's."""
    import awkward as ak
    a = ak.Array([[3.0, 1.0, 2.0], [], [5.0], [None, 4.0], [None]])
    x = lazyk.from_awkward(a)
    got = lazyk.firsts(x[lazyk.argmin(x, axis=1, keepdims=True)]).eval()
    want = ak.firsts(a[ak.argmin(a, axis=1, keepdims=True)])
    assert str(got.type) == "5 * ?float64" and got.to_list() == want.to_list()
    assert got.to_list() == [1.0, None, 5.0, 4.0, None]
    source = columns(x).child.child.values
    assert not np.shares_memory(columns(got).unwrap()[1].values, source)
    pos = lazyk.firsts(lazyk.argmin(x, axis=1, keepdims=True)).eval()
    assert pos.to_list() == ak.firsts(ak.argmin(a, axis=1, keepdims=True)).to_list()
    assert str(pos.type) == "5 * ?int64"


def test_kept_rows_of_missing_values_are_lazyk_arrays():
    """Rows kept from `?T` values (`x[m]`, `firsts(...)[m]`) keep their missing values."""
    x = lazyk.array([1.5, None, 3.0, None, 7.0], "5 * ?float64")
    m = lazyk.array([True, True, False, True, True])
    assert x[m].eval().to_list() == [1.5, None, None, 7.0]
    rows = lazyk.array([[1, 2], [], [None, 4], [5]], "4 * var * ?int64")
    keep = lazyk.array([False, True, True, True])
    assert lazyk.firsts(rows)[keep].eval().to_list() == [None, None, 5]
