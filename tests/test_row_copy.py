"""Native copies of whole list rows (`lazyk.backend.rowcopy`): the rows of row selections
and of concatenations along axis 1, against NumPy, on every item size, strided values,
rows longer than a vector, rows that end at their values' end, and many thread parts."""
from __future__ import annotations

import ctypes
import mmap
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazyk.backend import rowcopy
from lazyk.backend.rowcopy import KeptItems, RowCopy


def _expected(sources, positions, dtype):
    rows = range(len(sources[0][1]) - 1) if positions is None else positions
    return np.array([x for r in rows for v, off in sources for x in v[off[r]:off[r + 1]]],
                    dtype)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 11), min_size=0, max_size=60), st.integers(0, 5),
       st.sampled_from(["i1", "i2", "f4", "f8", "c16"]), st.booleans(), st.integers(1, 4),
       st.booleans(), st.integers(1, 3))
def test_rows_as_numpy_copies_them(lens, pad, dtype, strided, min_rows, select, nsrc):
    rng = np.random.default_rng(len(lens))
    sources = []
    for k in range(nsrc):  # (one copy function per number of sources)
        ln = np.array(lens[k:] + lens[:k], np.int64)
        off = np.r_[pad, pad + np.cumsum(ln)]
        n = int(off[-1])  # (rows end at the values' end: no vector may read past them)
        base = (rng.random(2 * n if strided else n) * 100).astype(dtype)
        sources.append((base[::2] if strided else base, off))
    positions = np.flatnonzero(rng.random(len(lens)) < 0.5) if select else None
    old = rowcopy.MIN_ROWS
    rowcopy.MIN_ROWS = min_rows  # (many thread parts, each ending between rows)
    try:
        plan = RowCopy([off for _, off in sources], positions)
        got = plan.fill([v for v, _ in sources], np.dtype(dtype))
    finally:
        rowcopy.MIN_ROWS = old
    want = _expected(sources, positions, dtype)
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    n = len(lens) if positions is None else len(positions)
    assert plan.offsets[0] == 0 and len(plan.offsets) == n + 1 and plan.offsets[-1] == len(want)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 11), min_size=0, max_size=60), st.integers(1, 3),
       st.integers(1, 4), st.sampled_from(["i1", "f4", "f8", "c16"]), st.booleans(),
       st.integers(1, 4))
def test_several_columns_in_one_pass_as_each_alone(lens, nsrc, ncol, dtype, select, min_rows):
    """`fill_many`: the fields of one collection (columns over the same offsets, strided or
    not) copied in one pass give what each column's own `fill` gives."""
    rng = np.random.default_rng(len(lens) + 7 * ncol)
    offs = [np.r_[0, np.cumsum(np.array(lens[k:] + lens[:k], np.int64))] for k in range(nsrc)]
    columns = [[(rng.random(2 * int(off[-1])) * 100).astype(dtype)[::1 + (c + j) % 2]
                [:int(off[-1])] for j, off in enumerate(offs)] for c in range(ncol)]
    positions = np.flatnonzero(rng.random(len(lens)) < 0.6) if select else None
    old = rowcopy.MIN_ROWS
    rowcopy.MIN_ROWS = min_rows
    try:
        plan = RowCopy(offs, positions)
        got = plan.fill_many(columns, np.dtype(dtype))
    finally:
        rowcopy.MIN_ROWS = old
    assert len(got) == ncol
    for values, g in zip(columns, got):
        want = _expected(list(zip(values, offs)), positions, dtype)
        assert g.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(g, want)
    with pytest.raises(ValueError, match="values arrays"):
        plan.fill_many([columns[0][:-1] + [columns[0][-1]] * 2], np.dtype(dtype))


def test_many_rows_over_threads():
    """1e5 rows of 0-9 items, two sources, kept rows: as NumPy's repeat and take."""
    rng = np.random.default_rng(3)
    la, lb = rng.integers(0, 10, 100_000), rng.poisson(1.0, 100_000)
    oa, ob = np.r_[0, np.cumsum(la)], np.r_[0, np.cumsum(lb)]
    a, b = rng.random(oa[-1]).astype(np.float32), rng.random(ob[-1]).astype(np.float32)
    keep = rng.random(100_000) < 0.4
    got = RowCopy([oa], np.flatnonzero(keep)).fill([a], np.float32)
    np.testing.assert_array_equal(got, a[np.repeat(keep, la)])
    joined = RowCopy([oa, ob])
    got = joined.fill([a, b], np.float32)
    place = np.r_[0, np.cumsum(la + lb)]
    first = np.repeat(place[:-1] - oa[:-1], la) + np.arange(oa[-1])
    np.testing.assert_array_equal(got[first], a)
    assert len(got) == oa[-1] + ob[-1]


def test_bad_rows_are_refused_before_copying():
    off = np.array([0, 2, 5])
    with pytest.raises(ValueError, match="decrease"):
        RowCopy([np.array([0, 3, 2])])
    with pytest.raises(IndexError, match="position"):
        RowCopy([off], np.array([0, 2]))
    with pytest.raises(IndexError, match="position 0 outside the 0 rows"):  # (no offsets)
        RowCopy([np.zeros(0, np.int64)], np.array([0]))
    with pytest.raises(ValueError, match="numbers of rows"):
        RowCopy([off, np.array([0, 1])])
    with pytest.raises(ValueError, match="rows up to 5"):
        RowCopy([off]).fill([np.zeros(4)], np.float64)
    with pytest.raises(ValueError):
        RowCopy([off]).fill([np.zeros(5, np.float32)], np.float64)


@contextmanager
def _before_a_guard_page():
    """(a page of memory, its size) followed by an unreadable page (PROT_NONE)."""
    page = mmap.PAGESIZE
    block = mmap.mmap(-1, 2 * page)
    base = ctypes.addressof(ctypes.c_char.from_buffer(block))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    assert libc.mprotect(base + page, page, 0) == 0  # PROT_NONE
    try:
        yield block, page
    finally:
        libc.mprotect(base + page, page, 3)


def test_no_read_past_the_values():
    """Values that end just before an unreadable page: every row read stays within them
    (a whole-vector load past the last item would fault here)."""
    with _before_a_guard_page() as (block, page):
        for dtype in ("f4", "f8", "i2"):
            n = page // np.dtype(dtype).itemsize
            values = np.frombuffer(block, dtype, count=n)  # (its last item ends the page)
            values[:] = np.arange(n)
            lens = np.array([0, 1, 2, 3] * (n // 8) + [n - 6 * (n // 8) - 3, 3])
            off = np.r_[0, np.cumsum(lens)]
            got = RowCopy([off], np.arange(len(lens))[::-1].copy()).fill([values], dtype)
            want = np.concatenate([values[off[r]:off[r + 1]] for r in range(len(lens))[::-1]])
            np.testing.assert_array_equal(got, want)
            del values


def test_tuple_slots_refuses_arrays_that_do_not_match():
    from lazyk.arrays.array import masked_empty
    from lazyk.backend.rowcopy import tuple_slots
    first, listed = np.array([0, 0, 0, 1]), np.array([[0, 1]])
    got, into, present = masked_empty((2, 2), np.int64)
    off = np.array([0, 2, 4])
    assert tuple_slots(off, np.array([0, -1]), None, first, listed, into, present)
    assert got.to_list() == [[0, 1], [0, 1]]
    assert not tuple_slots(off, np.array([0, 1]), None, first, listed, into, present)
    assert tuple_slots(off, np.array([0, 1]), np.array([True, False]), first, listed,
                       into, present)
    assert got.to_list() == [[0, 1], [None, None]]
    assert not tuple_slots(np.array([0, 2, 5]), np.array([0, 0]), None, first, listed,
                           into, present)  # (a row longer than the table: refused)
    with pytest.raises(ValueError):
        tuple_slots(off, np.array([0]), None, first, listed, into, present)
    with pytest.raises(ValueError):
        tuple_slots(off, np.array([0, 0]), None, first[:-1], listed, into, present)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 19), min_size=0, max_size=60), st.integers(0, 5),
       st.sampled_from(["?", "i1", "i2", "f4", "f8", "c16"]), st.booleans(),
       st.integers(1, 4), st.floats(0, 1))
def test_kept_items_as_numpy_takes_them(lens, pad, dtype, strided, min_rows, share):
    """`x[mask]` by a mask of x's own rows: the kept rows' offsets and items, rows of up to
    8 items (one word of mask bytes) and longer, any part boundaries."""
    from lazyk.backend.rowcopy import KeptItems
    rng = np.random.default_rng(len(lens) + pad)
    off = np.r_[pad, pad + np.cumsum(np.array(lens, np.int64))]
    n = int(off[-1] - off[0])
    keep = rng.random(n) < share
    base = (rng.random(2 * n if strided else n) * 100).astype(dtype)
    values = base[::2] if strided else base
    old = rowcopy.MIN_ROWS
    rowcopy.MIN_ROWS = min_rows
    try:
        plan = KeptItems(off, keep)
        got = plan.fill(values)
    finally:
        rowcopy.MIN_ROWS = old
    want = values[keep]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    running = np.r_[0, np.cumsum(keep)]
    np.testing.assert_array_equal(plan.offsets, running[off - off[0]])


def test_kept_items_read_no_mask_byte_past_the_mask():
    """A mask that ends just before an unreadable page: rows near its end are counted item
    by item (a word read past the last byte would fault here)."""
    from lazyk.backend.rowcopy import KeptItems
    with _before_a_guard_page() as (block, page):
        keep = np.frombuffer(block, np.bool_, count=page)
        keep[:] = np.arange(page) % 3 == 0
        lens = np.array([1, 0, 3, 8, 2] * (page // 14) + [page - 14 * (page // 14)])
        off = np.r_[0, np.cumsum(lens)]
        plan = KeptItems(off, keep)
        np.testing.assert_array_equal(plan.offsets, np.r_[0, np.cumsum(keep)][off])
        np.testing.assert_array_equal(plan.fill(np.arange(page)), np.flatnonzero(keep))
        del keep


def test_kept_items_refuse_rows_that_do_not_match():
    from lazyk.backend.rowcopy import KeptItems
    keep = np.ones(5, bool)
    with pytest.raises(ValueError, match="decrease"):
        KeptItems(np.array([0, 3, 2]), keep)
    with pytest.raises(ValueError, match="mask's items"):
        KeptItems(np.array([0, 3, 6]), keep)
    plan = KeptItems(np.array([0, 2, 5]), keep)
    with pytest.raises(ValueError, match="for 5 items"):
        plan.fill(np.zeros(4))
    with pytest.raises(ValueError):
        plan.fill(np.zeros((5, 1)))
    assert plan.fill(np.arange(5.0)).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-3, 9), min_size=0, max_size=80), st.sampled_from(["i4", "i8"]),
       st.integers(1, 8), st.booleans(), st.booleans())
def test_offsets_rise_as_numpy_says(steps, dtype, min_offsets, strided, threaded):
    from lazyk import threads
    from lazyk.backend import rowcheck
    off = np.cumsum(np.r_[5, steps]).astype(dtype)
    if strided:
        off = np.repeat(off, 2)[::2]
    old = rowcheck.MIN_OFFSETS
    rowcheck.MIN_OFFSETS = min_offsets  # (many thread parts; a decrease across two parts)
    try:
        with threads(2 if threaded else 1):
            got = rowcheck.rises(off)
    finally:
        rowcheck.MIN_OFFSETS = old
    assert got is (bool(np.all(off[1:] >= off[:-1])))


def test_kept_items_read_the_offsets_they_checked():
    """The passes run on a copy of the offsets checked: another thread changing the
    caller's offsets meanwhile cannot send them outside the items."""
    off = np.array([0, 2, 2, 5], np.int64)
    keep = np.array([True, False, True, True, False])
    k = KeptItems(off, keep)
    off[1] = 2**40  # (after the check)
    assert k.rows is not off and k.rows.tolist() == [0, 2, 2, 5]
    assert k.fill(np.arange(5.0)).tolist() == [0.0, 2.0, 3.0]
