"""Indexing views, field access, broadcasting assignment, repr and memory ownership."""
import gc
import weakref

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lazyk
from lazyk import ShapeError
from lazyk import types as T
from lazyk.arrays.array import LIST_ROWS


def test_seed_example_var_to_fixed_assignment():
    a = lazyk.zeros("2 * 3 * int32")
    a[...] = [[1, 2, 3], [4]]
    assert a.to_list() == [[1, 2, 3], [4, 4, 4]]
    assert a.to_numpy().dtype == np.int32
    src = lazyk.array([[1, 2, 3], [4]], type="2 * var * int32")
    b = lazyk.array(np.full((2, 3), 9, np.int32))
    b[...] = src
    assert b.to_list() == [[1, 2, 3], [4, 4, 4]]


def test_assignment_error_names_the_row():
    a = lazyk.zeros("3 * 3 * int32")
    with pytest.raises(ShapeError, match="row 1 has 2 elements, the destination has 3"):
        a[...] = [[1, 2, 3], [4, 5], [6]]
    v = lazyk.zeros("2 * var * float64", [2, 3])
    with pytest.raises(ShapeError, match="row 0 has 3 elements, the destination has 2"):
        v[...] = [[1, 2, 3], [4, 5, 6]]


def test_assignment_into_var_rows():
    v = lazyk.zeros("3 * var * float64", [2, 1, 3])
    v[...] = [[1, 2], [3], [4]]
    assert v.to_list() == [[1.0, 2.0], [3.0], [4.0, 4.0, 4.0]]
    v[...] = 0.5
    assert v.to_list() == [[0.5, 0.5], [0.5], [0.5, 0.5, 0.5]]
    v[2] = [7, 8, 9]
    assert v.to_list()[2] == [7.0, 8.0, 9.0]
    v[1, 0] = -1
    assert v.to_list()[1] == [-1.0]


def test_assignment_with_options():
    a = lazyk.array([[1, None], [3]], type="2 * var * ?int32")
    a[...] = [[None, 2], [None]]
    assert a.to_list() == [[None, 2], [None]]
    b = lazyk.zeros("2 * int32")
    with pytest.raises(ValueError, match="missing value"):
        b[...] = lazyk.array([1, None])


def test_assignment_through_record_field_view():
    r = lazyk.array([{"x": 1, "y": [1, 2]}, {"x": 2, "y": [3]}])
    r.x[...] = [10, 20]
    r.y[...] = [[5], [6]]
    assert r.to_list() == [{"x": 10, "y": [5, 5]}, {"x": 20, "y": [6]}]


def test_var_row_indexing_is_a_view():
    a = lazyk.array([[1, 2, 3], [4], []])
    row = a[0]
    assert row.type == T.dshape("var * int64") and row.to_list() == [1, 2, 3]
    row[1] = 20
    assert a.to_list()[0] == [1, 20, 3]
    assert a[0, -1].to_list() == 3
    assert a[0, ::-1].to_list() == [3, 20, 1]
    tail = a[0, 1:]
    tail[...] = [8, 9]
    assert a.to_list() == [[1, 8, 9], [4], []]
    assert a[2].to_list() == []
    with pytest.raises(IndexError, match="out of bounds for a row of 1 elements"):
        a[1, 1]


def test_int_over_var_dim_under_a_slice():
    a = lazyk.array([[1, 2, 3], [4, 5]])
    assert a[:, 0].to_list() == [1, 4] and str(a[:, 0].type) == "2 * int64"
    assert a[:, -1].to_list() == [3, 5]
    assert a[:, ::-1].to_list() == [[3, 2, 1], [5, 4]]
    with pytest.raises(IndexError, match="row 1 has 2 elements"):
        a[:, 2]
    m = lazyk.array([[1, 2], None, [3]])
    assert m[:, 0].to_list() == [1, None, 3]


def test_fixed_indexing_matches_numpy_and_shares_memory():
    src = np.arange(60).reshape(3, 4, 5)
    a = lazyk.array(src)
    for idx in [(1,), (slice(None), 2), (Ellipsis, -1), (None, 1, slice(None, None, -2)),
                (slice(1, None), Ellipsis, None), (-1, -1, -1)]:
        got = a[idx]
        assert got.to_list() == src[idx].tolist()
        assert np.shares_memory(got.to_numpy(), src)
    with pytest.raises(IndexError):
        a[3]
    with pytest.raises(IndexError, match="too many indices"):
        a[0, 0, 0, 0]


@given(st.lists(st.tuples(st.integers(-6, 6), st.integers(-6, 6),
                          st.integers(-3, 3).filter(bool)), min_size=1, max_size=3))
def test_random_slices_match_numpy(slices):
    src = np.arange(5 * 4 * 3, dtype=np.int16).reshape(5, 4, 3)[:, ::-1]
    idx = tuple(slice(a, b, c) for a, b, c in slices)
    assert lazyk.array(src)[idx].to_list() == src[idx].tolist()


@given(st.lists(st.lists(st.integers(0, 9), max_size=5), min_size=1, max_size=5),
       st.integers(-6, 6), st.integers(-6, 6), st.integers(-3, 3).filter(bool))
def test_var_slices_match_python(rows, start, stop, step):
    a = lazyk.array(rows, type="var * var * int32")
    assert a[start:stop:step].to_list() == rows[start:stop:step]
    for i, row in enumerate(rows):
        assert a[i, start:stop:step].to_list() == row[start:stop:step]
    b = lazyk.array(rows, type=f"{len(rows)} * var * int32")
    view = b[:, start:stop:step]
    assert view.to_list() == [r[start:stop:step] for r in rows]
    view[...] = -1  # a view: writes land in b
    assert b.to_list() == [[-1 if j in range(len(r))[start:stop:step] else x
                            for j, x in enumerate(r)] for r in rows]


def test_option_and_string_indexing():
    a = lazyk.array([[1, None, 3], None])
    assert a[0, 1].to_list() is None and a[0, 2].to_list() == 3
    with pytest.raises(IndexError, match="missing"):
        a[1, 0]
    s = lazyk.array([["ab", "c"], ["déf"]])
    assert s[1, 0].to_list() == "déf" and s[0].to_list() == ["ab", "c"]


def test_field_access():
    r = lazyk.array([{"x": 1, "s": "a"}, {"x": 2, "s": "b"}])
    assert r.x.to_list() == [1, 2] and r["s"].to_list() == ["a", "b"]
    assert r[1].s.to_list() == "b" and r[1, "x"].to_list() == 2
    with pytest.raises(AttributeError):
        r.nope
    with pytest.raises(KeyError):
        r["nope"]
    nested = lazyk.array([[{"x": 1}], [{"x": 2}, {"x": 3}]])
    assert nested.x.to_list() == [[1], [2, 3]] and str(nested.x.type) == "2 * var * int64"


def test_repr():
    assert repr(lazyk.array([[1, 2, 3], [4]], type="2 * var * int32")) == \
        "array([[1, 2, 3], [4]], type='2 * var * int32')"
    assert repr(lazyk.array([1.5, None])) == "array([1.5, None], type='2 * ?float64')"
    big = repr(lazyk.array(np.arange(5000)))
    assert big == "array([0, 1, 2, ..., 4997, 4998, 4999], type='5000 * int64')"
    ragged = repr(lazyk.array([[i] for i in range(2000)]))
    assert ragged.startswith("array([[0], [1], [2], ..., [1997]") and "var" not in ragged[:40]


def test_views_keep_owners_alive():
    a = lazyk.array([[1, 2, 3], [4]])
    row = a[0]
    tail = a[0, 1:]
    block = weakref.ref(a.owner)
    del a
    gc.collect()
    assert block() is not None
    assert row.to_list() == [1, 2, 3] and tail.to_list() == [2, 3]
    r = lazyk.array([{"x": 1.5, "s": "z"}])
    x = r.x.to_numpy()
    del r
    gc.collect()
    assert x.tolist() == [1.5]


def test_closed_blocks_fail_cleanly():
    a = lazyk.array([[1, 2], [3]])
    with a[0] as row:
        assert row.to_list() == [1, 2]
    with pytest.raises((ValueError, TypeError, AttributeError)):
        row.to_list()
    assert a.to_list() == [[1, 2], [3]]


def test_setitem_with_lazy_value():
    a = lazyk.array(np.arange(4.0))
    out = lazyk.zeros("4 * float64")
    out[...] = a * 2 + 1
    assert out.to_list() == [1.0, 3.0, 5.0, 7.0]


def test_readonly_views_stay_readonly():
    src = np.arange(3)
    src.flags.writeable = False
    a = lazyk.array(src)
    assert a[1:].readonly
    with pytest.raises(ValueError):
        a[1:][0] = 5


def test_tuple_arrays_keep_their_type():
    a = lazyk.array([(1, 2.5), (3, 4.5)], type="2 * (int8, float32)")
    assert str(a.type) == "2 * (int8, float32)" and a.meta == (2, 8, 0, 4)
    assert a[1].to_list() == (3, 4.5) and str(a[1].type) == "(int8, float32)"
    assert a.to_numpy()["f1"].tolist() == [2.5, 4.5]


def test_edge_indices():
    a = lazyk.array([[1, 2], [3]])
    assert a[None, 1].to_list() == [[3]] and str(a[None, 1].type) == "1 * var * int64"
    assert a[np.int64(1)].to_list() == [3]
    with pytest.raises(IndexError, match="take ints, slices"):
        a[1.5]
    assert a[[1, 0]].eval().to_list() == [[3], [1, 2]]  # (a list gathers, as NumPy's)
    with pytest.raises(IndexError, match="single ellipsis"):
        a[..., ...]
    assert lazyk.array([1, None])[1].to_list() is None
    assert lazyk.array(np.zeros((2, 0)))[:, ::-1].to_list() == [[], []]


def test_closing_a_block_never_frees_memory_under_a_numpy_view():
    r = lazyk.array([{"x": 1.5, "s": "z"}, {"x": 2.5, "s": "w"}])
    x = r.x.to_numpy()
    r.owner.close()
    gc.collect()
    junk = [np.ones(64) for _ in range(100)]  # reuse freed memory if it had been freed
    assert x.tolist() == [1.5, 2.5] and len(junk) == 100
    with pytest.raises((TypeError, ValueError, AttributeError)):
        r.to_list()


def test_assignment_refuses_values_that_do_not_fit():
    a = lazyk.zeros("2 * var * int8", [2, 1])
    with pytest.raises(lazyk.ArrayConstructionError, match="does not fit int8"):
        a[...] = [[1, 300], [2]]
    with pytest.raises(lazyk.ArrayConstructionError, match="does not fit int8"):
        a[0, 0] = 1000
    b = lazyk.zeros("3 * uint8")
    b[...] = np.array([1, 2, 300])  # NumPy data casts like NumPy (wraps)
    assert b.to_list() == [1, 2, 44]
    assert [r.to_list() for r in lazyk.array([[1], [2, 3]])] == [[1], [2, 3]]


def test_views_inside_options_keep_the_mask():
    a = lazyk.array([[1, 2], None, [3, 4]], type="3 * ?2 * int8")
    assert a[:, 1].to_list() == [2, None, 4]
    assert a[:, 1:].to_list() == [[2], None, [4]]
    assert a[:, ::-1].to_list() == [[2, 1], None, [4, 3]]
    with pytest.raises(IndexError, match="missing"):
        a[1, 0]
    r = lazyk.array([{"x": 1, "y": 2.5}, None, {"x": 3, "y": 4.5}],
                    type="3 * ?{x: int8, y: float64}")
    assert r.y.to_list() == [2.5, None, 4.5] and str(r.y.type) == "3 * ?float64"
    assert r[::-1].x.to_list() == [3, None, 1] and r[1].y.to_list() is None
    v = lazyk.array([[{"x": 1, "y": 2}, None], []], type="2 * var * ?{x: int8, y: int16}")
    assert v.y.to_list() == [[2, None], []] and v[:, ::-1].y.to_list() == [[None, 2], []]


def _reference(v, items):
    """NumPy-style indexing of nested lists (ragged rows index independently)."""
    if not items:
        return v
    i, rest = items[0], items[1:]
    if i is None:
        return [_reference(v, rest)]
    if isinstance(i, int):
        return _reference(v[i], rest)
    return [_reference(x, rest) for x in v[i]]


_INDEX_ITEM = st.one_of(st.integers(-4, 4), st.none(),
                        st.builds(slice, st.one_of(st.none(), st.integers(-4, 4)),
                                  st.one_of(st.none(), st.integers(-4, 4)),
                                  st.one_of(st.none(), st.integers(-2, 2).filter(bool))))


@given(st.lists(st.lists(st.one_of(st.none(), st.integers(-9, 9)), max_size=4), max_size=4),
       st.lists(_INDEX_ITEM, max_size=3), st.booleans())
def test_random_indices_match_list_semantics(rows, items, fixed_outer):
    text = (f"{len(rows)}" if fixed_outer else "var") + " * var * ?int32"
    a = lazyk.array(rows, type=text)
    if sum(i is not None for i in items) > 2:
        items = items[:1]
    try:
        want = _reference(rows, items)
    except IndexError:
        with pytest.raises(IndexError):
            a[tuple(items)]
        return
    assert a[tuple(items)].to_list() == want


def test_assignment_through_an_index_with_no_view_goes_row_by_row():
    a = lazyk.array([[1, 2, 3], [4, 5]], type="2 * var * int32")
    a[:, 0] = 9
    a[:, -1] = [7, 8]
    assert a.to_list() == [[9, 2, 7], [9, 8]]
    with pytest.raises(IndexError, match="row 1: index 2 is out of bounds"):
        a[:, 2] = 0
    b = lazyk.array([[[1, 2], [3]], [[4, 5, 6]]], type="var * var * var * int8")
    b[:, :, 0] = [[10, 30], [40]]
    b[:, 0, 1:] = 0
    assert b.to_list() == [[[10, 0], [30]], [[40, 0, 0]]]


def test_string_assignment():
    a = lazyk.array([["a", "bb"], ["ccc"]])
    a[0, 1] = "héllo"
    assert a.to_list() == [["a", "héllo"], ["ccc"]]
    a[...] = [["x", "y"], ["z"]]
    a[1] = "w"
    assert a.to_list() == [["x", "y"], ["w"]]
    r = lazyk.array([{"n": "a", "v": 1}])
    r.n[...] = ["zz"]
    assert r.to_list() == [{"n": "zz", "v": 1}]
    o = lazyk.array(["a", None])
    o[...] = [None, "b"]
    assert o.to_list() == [None, "b"]
    with pytest.raises(lazyk.ArrayConstructionError, match="is a int"):
        a[0, 0] = 5


def test_closed_arrays_raise_cleanly():
    a = lazyk.array(np.arange(3))
    a.close()
    with pytest.raises(ValueError, match="closed"):
        a.to_list()
    assert repr(a) == "array(<closed>)"  # (a repr never raises)
    b = lazyk.array([[1], [2, 3]])
    b.close()
    with pytest.raises(ValueError, match="closed"):
        b[0]


def test_mask_and_position_arrays_and_lists_select_lazily():
    x = lazyk.array([1.0, -2.0])
    assert isinstance(x[np.array([True, False])], lazyk.Expr)  # Awkward's selection
    assert x[np.array([True, False])].to_list() == [1.0]
    assert x[np.array([1, 0])].to_list() == [-2.0, 1.0]
    assert x[[1, 0]].to_list() == [-2.0, 1.0] and x[[False, True]].to_list() == [-2.0]
    with pytest.raises(IndexError, match=r"not list; a mask or positions select or gather "
                       r"as one array"):
        x[[0, "a"]]


def test_one_lazy_position_says_how_to_gather_with_it():
    a = lazyk.array(np.array([3.0, 1.0, 5.0]))
    with pytest.raises(IndexError, match=r"keepdims=True\)\] \(a one-item array\)"):
        a[np.argmax(a)]
    assert a[lazyk.argmax(a, axis=0, keepdims=True)].eval().to_list() == [5.0]


def test_assignment_through_rows_checks_every_row_before_writing():
    x = lazyk.from_offsets(np.array([0, 3, 3, 5]), np.arange(5.0))  # [[0, 1, 2], [], [3, 4]]
    with pytest.raises(IndexError, match="row 1: index 0 is out of bounds"):
        x[:, 0] = 9
    assert x.to_list() == [[0.0, 1.0, 2.0], [], [3.0, 4.0]]
    y = lazyk.from_offsets(np.array([0, 3, 4, 6]), np.arange(6.0))
    y[:, 0] = 9
    assert y.to_list() == [[9.0, 1.0, 2.0], [9.0], [9.0, 5.0]]


def test_assigning_none_to_every_value_broadcasts_it():
    """`x[...] = None` over `?T` values (any dims above them) makes every value missing, as
    `x[0] = None` does for one; missing rows stay missing; values that cannot be missing
    refuse it, naming the first place."""
    x = lazyk.array([1.0, None])
    x[...] = None
    assert x.to_list() == [None, None]
    r = lazyk.array([[1.0, None], None, [2.0]])
    r[...] = None
    assert str(r.type) == "3 * ?var * ?float64" and r.to_list() == [[None, None], None, [None]]
    v = lazyk.array([[1.0, 3.0], [4.0]])
    with pytest.raises(ValueError, match=r"missing value at \[0, 0\]"):
        v[...] = None


def test_indexing_by_a_lazy_scalar_is_refused_in_one_line():
    """`x[:, i]` with a lazy scalar `i`: one line naming it and the gather to use."""
    x = lazyk.from_offsets(np.array([0, 2, 3]), np.arange(3.0))
    i = lazyk.sum(lazyk.array(np.array([0, 1])))
    with pytest.raises(TypeError, match=r"by a lazy scalar \(Expr") as err:
        _ = (x * 2)[:, i]
    assert "\n" not in str(err.value) and "x[positions]" in str(err.value)


@pytest.mark.parametrize("text, data", [
    ("2 * var * 0 * float64", [[[]], [[], []]]),
    ("3 * var * 0 * var * int64", [[[]], [[], [], []], []]),
    ("2 * var * 0 * ?float64", [[[]], [[], []]])])
def test_negative_steps_over_rows_of_empty_fixed_lists(text, data):
    x = lazyk.array(data, type=text)
    for step in (-1, -2):
        want = [row[::step] for row in data]
        assert x[:, ::step].to_list() == want
        assert lazyk.num(x[:, ::step], axis=1).eval().to_list() == [len(r) for r in want]
        assert x[1, ::step].to_list() == data[1][::step]
    assert x[::-1, ::-1].to_list() == [row[::-1] for row in data[::-1]]


def test_bool_indices_assign_as_numpy_and_as_reading():
    x = lazyk.array([[1.0, 2.0], [3.0]])
    x[True] = 5  # (True: a new axis, every row)
    assert x.to_list() == [[5.0, 5.0], [5.0]]
    x = lazyk.array([[1.0, 2.0], [3.0]])
    x[0, True] = 7
    assert x.to_list() == [[7.0, 7.0], [3.0]]
    with pytest.raises(IndexError, match="x\\[False\\]"):
        x[False] = 1
    for index in (True, (0, True), False):
        want, got = np.arange(6.0).reshape(2, 3), lazyk.array(np.arange(6.0).reshape(2, 3))
        want[index] = 9
        got[index] = 9
        assert got.to_list() == want.tolist()


def test_assignment_row_by_row_writes_nothing_when_a_row_fails():
    x = lazyk.array([[1, 2], [3, 4], [5, 6]], type="3 * var * int64")
    with pytest.raises(ValueError, match="row 2: missing value"):
        x[:, 0] = [10, 20, None]
    assert x.to_list() == [[1, 2], [3, 4], [5, 6]]
    n = lazyk.array([[[1.0, 2.0], [3.0]], [[4.0, 6.0]]])
    with pytest.raises(lazyk.ShapeError, match="row 1: "):
        n[:, 0] = [[10, 10], [2, 2, 2]]
    assert n.to_list() == [[[1.0, 2.0], [3.0]], [[4.0, 6.0]]]
    x[:, 0] = [10, 20, 30]
    assert x.to_list() == [[10, 2], [20, 4], [30, 6]]


def test_fields_of_records_that_may_be_missing_are_read_only():
    r = lazyk.array([{"x": 1, "y": 2.0}, {"x": 7, "y": 8.0}], type="2 * ?{x: int64, y: float64}")
    r[1] = None
    for write in (lambda: r.x.__setitem__(1, 5), lambda: r.__setitem__((1, "x"), 5),
                  lambda: r.__setitem__("x", 5)):
        with pytest.raises(ValueError, match="records that may be missing is read-only"):
            write()  # (it made the missing record present, its other fields stale)
    assert r.to_list() == [{"x": 1, "y": 2.0}, None] and r.x.readonly
    r[1] = {"x": 9, "y": 1.5}  # whole records
    assert r.to_list() == [{"x": 1, "y": 2.0}, {"x": 9, "y": 1.5}]
    plain = lazyk.array([{"x": 1, "y": 2.0}])
    plain.x[0] = 5
    assert plain.to_list() == [{"x": 5, "y": 2.0}]


def test_lazy_values_assign_as_arrays_do_where_the_target_is_not_dense():
    x = lazyk.array([[1.0, 2.0, 3.0], [4.0, 5.0]], type="2 * ?var * float64")
    x[:, 1:] = x[:, :-1] * 2  # (no view: row by row, the value computed first)
    assert x.to_list() == [[1.0, 2.0, 4.0], [4.0, 8.0]]
    y = lazyk.array([[1.0, 2.0, 3.0], [4.0, 5.0]])
    y[...] = y[:, :1] * 2  # (rows of one broadcast, as for an array value)
    assert y.to_list() == [[2.0, 2.0, 2.0], [8.0, 8.0]]
    z = lazyk.array([1.0, None, 3.0])
    z[...] = lazyk.array(np.arange(3.0)) * 2  # (into ?T values of fixed dims)
    assert z.to_list() == [0.0, 2.0, 4.0]


def test_a_result_with_no_missing_values_into_missing_values_says_to_assign():
    a, z = lazyk.array(np.arange(3.0)), lazyk.array([1.0, None, 3.0])
    with pytest.raises(lazyk.NotSupportedError, match=r"assign it: out\[\.\.\.\] = expr"):
        lazyk.evaluate(a * 2, out=z)
    z[...] = a * 2
    assert z.to_list() == [0.0, 2.0, 4.0]


def test_an_item_of_every_row_of_a_large_array_is_computed_by_a_kernel(monkeypatch):
    # jets[:, 0] over a million events must not walk Python lists (small arrays do: no
    # kernel to compile)
    n = LIST_ROWS + 1
    a = lazyk.from_offsets(np.arange(0, 2 * n + 1, 2), np.arange(2.0 * n))
    r = lazyk.zip({"x": a, "y": a * 2}).eval()

    def refused(self):
        raise AssertionError("went through Python lists")
    monkeypatch.setattr(lazyk.Array, "to_list", refused)
    got = a[:, 0]
    assert str(got.type) == f"{n} * float64"
    assert np.array_equal(got.to_numpy(), np.arange(0.0, 2.0 * n, 2))
    assert np.array_equal(a[:, -1].to_numpy(), np.arange(1.0, 2.0 * n, 2))
    assert np.array_equal(r[:, 1, "y"].to_numpy(), np.arange(2.0, 4.0 * n, 4))
    with pytest.raises(IndexError, match=r"position 2 .* row \[0\] of length 2"):
        a[:, 2]
