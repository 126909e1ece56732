"""`x[mask]` with a mask of one dim (rows kept from arrays of var rows: an event selection)
inside larger expressions, against the plain-Python reference: masks that keep some rows,
all of them, none; `?bool` masks; views (offsets past 0, slices, reversed rows); the
fields of one collection sharing their rows' work; the errors of work on excluded rows."""
from __future__ import annotations

import numpy as np
import pytest

import lazyk
from lazyk.backend import padded, rowcopy
from lazyk.runtime import nest_select
from tests import ragged_reference as R


def _rows(n: int, seed: int, mean: float = 3.0):
    rng = np.random.default_rng(seed)
    lens = rng.poisson(mean, n)
    off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    return rng, lens, off


def _py(x) -> list:
    return [[float(v) for v in r] for r in x.to_list()]


def _views(seed: int):
    """(lazyk array, its rows as Python lists) of several layouts of the same kind of
    data: offsets from 0, offsets past the content's start, a slice, reversed rows, a
    gathered-rows view (rows out of order)."""
    rng, lens, off = _rows(60, seed)
    vals = rng.normal(size=int(off[-1]) + 5)
    plain = lazyk.from_offsets(off, vals[:off[-1]])
    past = lazyk.from_offsets(off + 5, vals)
    out = [(plain, _py(plain)), (past, _py(past))]
    out.append((plain[7:51], _py(plain)[7:51]))
    out.append((plain[::-1], _py(plain)[::-1]))
    return rng, out


@pytest.mark.parametrize("kind", ["some", "all", "none"])
def test_rows_kept_then_elementwise_work_and_folds(kind):
    rng, views = _views(1)
    for x, rows in views:
        n = len(rows)
        keep = {"some": rng.random(n) < 0.6, "all": np.ones(n, bool),
                "none": np.zeros(n, bool)}[kind]
        want = [[2 * v + 1 for v in r] for r, k in zip(rows, keep) if k]
        got = (x[keep] * 2 + 1).eval()
        assert str(got.type) == f"{len(want)} * var * float64"
        assert _py(got) == want
        sums = lazyk.sum(x[keep] * 2 + 1, axis=1).eval()
        assert np.asarray(sums).dtype == np.float64
        np.testing.assert_allclose(np.asarray(sums), [sum(r) for r in want])
        # the mask computed from the rows themselves, as an event selection is
        sel = x[lazyk.num(x) >= 2]
        ref = R.select(R.array(rows, f"{n} * var * float64"),
                       R.array([len(r) >= 2 for r in rows], f"{n} * bool"))
        assert _py(sel.eval()) == ref.to_list()


def test_a_collection_shares_its_rows_work():
    """The fields of one collection over one offsets array: the kept rows' offsets and
    items found once per evaluation (the results of one `lazyk.evaluate`), each field taken
    once; histograms of the selected rows gather none. The values as Python's."""
    rng, lens, off = _rows(500, 2)
    a, b, c = (rng.normal(size=int(off[-1])).astype(np.float32) for _ in range(3))
    ev = lazyk.zip({"j": lazyk.zip({"a": lazyk.from_offsets(off, a),
                                    "b": lazyk.from_offsets(off, b),
                                    "c": lazyk.from_offsets(off, c)}),
                    "met": np.arange(500.0)}, depth_limit=1)
    calls = []
    real = nest_select.RowCopy

    def counted(offsets, positions=None):
        calls.append(len(positions))
        return real(offsets, positions)
    nest_select.RowCopy = counted
    try:
        sel = ev[lazyk.num(ev.j) >= 3]
        s = sel.j.a * sel.j.b + sel.j.c
        sums, met = lazyk.evaluate(lazyk.sum(s, axis=1), sel.met)
        assert len(calls) == 1
        h1 = lazyk.histogram(lazyk.sum(s, axis=1), 10, (-10, 10))
        h2 = lazyk.histogram(sel.met, 10, (0, 500))
        got1, got2 = lazyk.evaluate(h1, h2)
        assert len(calls) == 1  # (each counts its rows where the mask is true)
    finally:
        nest_select.RowCopy = real
    keep = lens >= 3
    rows = [(a[off[i]:off[i + 1]] * b[off[i]:off[i + 1]] + c[off[i]:off[i + 1]])
            for i in range(500) if keep[i]]
    want = np.array([r.sum(dtype=np.float32) for r in rows], np.float32)
    np.testing.assert_allclose(np.asarray(sums), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(met), np.arange(500.0)[keep])
    np.testing.assert_array_equal(got1, np.histogram(want, 10, (-10, 10))[0])
    np.testing.assert_array_equal(got2, np.histogram(np.arange(500.0)[keep], 10, (0, 500))[0])


def test_combinations_and_argmin_after_a_row_selection():
    """An event selection, then pairs per event and the pair closest to a target, the
    histogram of its sum: as Python computes it."""
    rng, lens, off = _rows(300, 3, mean=2.5)
    pt = rng.uniform(0, 50, int(off[-1]))
    x = lazyk.from_offsets(off + 0, pt)
    sel = x[lazyk.num(x) >= 3]
    pairs = lazyk.combinations(sel, 2, fields=["p", "q"])
    s = pairs.p + pairs.q
    best = lazyk.argmin(abs(s - 40), axis=1, keepdims=True)
    got = lazyk.evaluate(lazyk.histogram(s[best], 20, (0, 100)))
    want = []
    for i in range(300):
        r = pt[off[i]:off[i + 1]]
        if len(r) < 3:
            continue
        sums = [r[p] + r[q] for p in range(len(r)) for q in range(p + 1, len(r))]
        want.append(sums[int(np.argmin(np.abs(np.array(sums) - 40)))])
    np.testing.assert_array_equal(got, np.histogram(want, 20, (0, 100))[0])


def test_an_optional_mask_keeps_missing_rows():
    x = lazyk.array([[1.0, 2.0], [], [3.0], [4.0, 5.0]])
    m = lazyk.array([True, None, False, True], type="4 * ?bool")
    got = (x[m] * 2).eval()
    ref = R.elementwise("multiply", R.select(R.array(x.to_list(), "4 * var * float64"),
                                             R.array(m.to_list(), "4 * ?bool")), 2)
    assert str(got.type) == str(ref.type) == "3 * ?var * float64"
    assert got.to_list() == ref.to_list() == [[2.0, 4.0], None, [8.0, 10.0]]


def test_work_on_excluded_rows_raises_only_where_it_is_done():
    """A reduction without identity over the kept rows only: the rows the mask excludes
    (empty ones here) never raise; over all rows it does."""
    x = lazyk.array([[1.0, 2.0], [], [3.0]])
    kept = x[lazyk.num(x) >= 1]
    assert lazyk.max(kept, axis=1).eval().to_list() == [2.0, 3.0]
    assert lazyk.firsts(kept).eval().to_list() == [1.0, 3.0]
    with pytest.raises(ValueError, match="no identity"):
        lazyk.max(x, axis=1).eval()
    with pytest.raises(ValueError, match="no identity"):
        lazyk.max(x[lazyk.num(x) >= 0], axis=1).eval()


def test_selections_of_selections_and_mask_lengths():
    x = lazyk.array([[1.0], [], [2.0, 3.0], [4.0], [5.0, 6.0, 7.0]])
    m1 = lazyk.num(x) >= 1
    sel = x[m1]
    twice = sel[lazyk.sum(sel, axis=1) > 2]
    assert _py(twice.eval()) == [[2.0, 3.0], [4.0], [5.0, 6.0, 7.0]]
    with pytest.raises(lazyk.ShapeError, match="size 5 in the array"):
        (x * 2)[np.array([True, False])].eval()


def test_int32_offsets_past_zero_and_no_rows():
    off = np.array([3, 5, 5, 6, 9], np.int32)
    v = np.arange(10, dtype=np.float32)
    z = lazyk.zip({"a": lazyk.from_offsets(off, v), "b": lazyk.from_offsets(off, v * 2)})
    sel = z[lazyk.num(z.a) >= 1]
    got = (sel.a + sel.b).eval()
    assert str(got.type) == "3 * var * float32"
    assert got.to_list() == [[9.0, 12.0], [15.0], [18.0, 21.0, 24.0]]
    e = lazyk.from_offsets(np.zeros(1, np.int64), np.zeros(0))
    got = (e[lazyk.num(e) > 0] * 2).eval()
    assert str(got.type) == "0 * var * float64" and got.to_list() == []


def test_an_element_mask_over_a_collection_is_computed_once():
    """The fields of one collection selected by one mask of their items (`jets[jets.pt >
    30]`): the mask is computed once per evaluation, its kept items found once; the
    values as Python's."""
    rng, lens, off = _rows(400, 3, mean=1.0)  # (short rows: items taken by NumPy)
    a, b = (rng.normal(size=int(off[-1])) for _ in range(2))
    jets = lazyk.zip({"a": lazyk.from_offsets(off, a), "b": lazyk.from_offsets(off, b)})
    good = jets[jets.a > 0]
    real, calls = nest_select.runtime.evaluate, []

    def counted(e, *args, **kw):  # (masks of a var dim of bools)
        calls.append(e.dtype == np.bool_ and e.ndim == 2)
        return real(e, *args, **kw)
    nest_select.runtime.evaluate = counted
    try:
        sa, sb = lazyk.evaluate(good.a, good.b)
    finally:
        nest_select.runtime.evaluate = real
    assert sum(calls) == 1
    rows = [(a[off[i]:off[i + 1]], b[off[i]:off[i + 1]]) for i in range(400)]
    assert sa.to_list() == [list(ra[ra > 0]) for ra, _ in rows]
    assert sb.to_list() == [list(rb[ra > 0]) for ra, rb in rows]


def test_a_mask_that_may_be_missing_keeps_missing_fixed_size_rows():
    """Rows of fixed size selected by a `?bool` mask (`x[lazyk.firsts(x, axis=1) > 0]`): a
    missing element keeps a missing row (`?n`), as Awkward; work after it reads them."""
    ak = pytest.importorskip("awkward")
    n = np.array([[-1.0, 2.5], [2.5, 4.0], [0.0, 7.25], [-1.0, -3.5]])
    x, a = lazyk.array(n), ak.to_regular(ak.Array(n), axis=1)
    m = [True, None, False, True]
    got = x[lazyk.array(m)].eval()
    assert str(got.type) == "3 * ?2 * float64"
    assert got.to_list() == a[ak.Array(m)].to_list() == [[-1.0, 2.5], None, [-1.0, -3.5]]
    sel = x[lazyk.firsts(x, axis=1) > 0]
    assert sel.eval().to_list() == a[ak.firsts(a, axis=1) > 0].to_list() == [[2.5, 4.0]]
    assert (sel * 2).eval().to_list() == [[5.0, 8.0]]


def test_a_missing_position_reads_no_row_words_of_the_gathered_array():
    """`x[lazyk.num(x) > 3]` over `?var` rows: the mask is missing where a row is, and the
    gather at a missing position reads nothing of x (its row words and present byte are
    zeros): the present bytes of a large array lie megabytes past its row words, where a
    read from anywhere else faults."""
    ak = pytest.importorskip("awkward")
    n = 2_000_000
    counts = np.zeros(n, np.int64)
    counts[::997] = 5
    a = ak.mask(ak.unflatten(np.arange(counts.sum(), dtype=np.float64), counts),
                np.arange(n) % 3 != 1)
    x = lazyk.from_awkward(a)
    with lazyk.threads(1):
        got = x[lazyk.num(x) > 3].eval()
    want = a[ak.num(a) > 3]
    assert str(got.type) == f"{len(want)} * ?var * float64"
    assert got.to_list() == want.to_list()


@pytest.mark.parametrize("kind", ["some", "all", "none"])
def test_concatenate_of_rows_one_mask_keeps(monkeypatch, kind):
    """`concatenate([mu[m], el[m]], axis=1)` (the kept events' leptons) copies the kept rows
    straight from the unselected arrays: equal to the selections joined; views, dtypes
    promoted as concatenate promotes them, a mask of the wrong length named."""
    from lazyk.runtime import kept_items
    joined = []
    real = kept_items._joining
    monkeypatch.setattr(kept_items, "_joining",
                        lambda *a: joined.append(a[2] is not None) or real(*a))
    rng, views = _views(2)
    _, lens, off = _rows(60, 3, 1.5)
    other = lazyk.from_offsets(off, rng.integers(-9, 9, int(off[-1])).astype(np.int32))
    other_rows = other.to_list()
    for x, rows in views[:3]:  # (60, 60, 44 rows)
        y, y_rows = (other, other_rows) if len(rows) == 60 else (other[7:51], other_rows[7:51])
        keep = {"some": lazyk.num(x) + lazyk.num(y) >= 4, "all": lazyk.num(x) >= 0,
                "none": lazyk.num(x) < 0}[kind]
        flags = [len(a) + len(b) >= 4 for a, b in zip(rows, y_rows)] if kind == "some" \
            else [kind == "all"] * len(rows)
        got = lazyk.concatenate([x[keep], y[keep]], axis=1).eval()
        want = [a + [float(v) for v in b] for a, b, k in zip(rows, y_rows, flags) if k]
        assert str(got.type) == f"{len(want)} * var * float64"
        assert _py(got) == want
        assert lazyk.sum(lazyk.concatenate([y[keep], y[keep]], axis=1), axis=1).eval() \
            .tolist() == [2 * sum(b) for b, k in zip(y_rows, flags) if k]
        # elementwise work over the selections (a flavour per collection, a scaled field)
        tag = lazyk.concatenate([lazyk.full_like(x[keep], 0), x[keep] * 2 + 1,
                                 lazyk.full_like(y[keep], 1)], axis=1).eval()
        assert tag.to_list() == [[0.0] * len(a) + [2 * v + 1 for v in a] + [1.0] * len(b)
                                 for a, b, k in zip(rows, y_rows, flags) if k]
    assert joined and all(joined)
    x = views[0][0]
    with pytest.raises(lazyk.ShapeError, match="size 60"):
        lazyk.concatenate([x[np.ones(5, bool)], x[np.ones(5, bool)]], axis=1).eval()


def test_fields_of_kept_rows_joined_in_one_pass(monkeypatch):
    """The fields of two collections' kept rows joined (`concatenate` of `zip`s of `mu[m]`
    and `el[m]`) are copied in one pass per item size, each equal to Awkward's."""
    import awkward as ak

    from lazyk.backend.rowcopy import RowCopy
    passes = []
    real = RowCopy.fill_many
    monkeypatch.setattr(RowCopy, "fill_many",
                        lambda self, cols, *a: passes.append(len(cols)) or real(self, cols, *a))
    rng = np.random.default_rng(5)
    n = 300
    mu, el = ({"pt": ak.unflatten(rng.random(total), counts),
               "q": ak.unflatten(rng.integers(-1, 2, total).astype(np.int32), counts)}
              for total, counts in ((600, rng.multinomial(600, [1 / n] * n)),
                                    (500, rng.multinomial(500, [1 / n] * n))))
    mu, el = ak.zip(mu), ak.zip(el)  # (lists of records: the fields share their offsets)
    keep = ak.num(mu.pt) + ak.num(el.pt) >= 3
    lm, le = lazyk.from_awkward(mu), lazyk.from_awkward(el)
    m = lazyk.num(lm.pt) + lazyk.num(le.pt) >= 3

    def leptons(c, flavour):
        c = c[m]
        return lazyk.zip({"pt": c.pt, "q": c.q, "f": lazyk.full_like(c.q, flavour)})
    lep = lazyk.concatenate([leptons(lm, 0), leptons(le, 1)], axis=1)
    got = lazyk.evaluate(lazyk.sum(lep.pt, axis=1), lazyk.sum(lep.q * lep.f, axis=1),
                         lazyk.num(lep.q, axis=1))
    apt = ak.concatenate([mu.pt[keep], el.pt[keep]], axis=1)
    aq = ak.concatenate([mu.q[keep], el.q[keep]], axis=1)
    af = ak.concatenate([0 * mu.q[keep], 0 * el.q[keep] + 1], axis=1)
    np.testing.assert_allclose(np.asarray(got[0]), ak.to_numpy(ak.sum(apt, axis=1)))
    assert np.asarray(got[1]).tolist() == ak.sum(aq * af, axis=1).to_list()
    assert np.asarray(got[2]).tolist() == ak.num(aq, axis=1).to_list()
    assert 2 in passes  # (q and f: one pass over the rows; pt alone: float64)


def test_local_index_of_selected_rows_is_walked_by_the_kernel(monkeypatch):
    """`local_index` of computed rows (the kept events' leptons) read by more work is walked
    by the kernel that reads it (no positions stored); its value alone is still stored. The
    leptons outside a picked pair, then the leading one, equal Awkward's."""
    import awkward as ak

    from lazyk.arrays import restructure
    rng, lens, off = _rows(200, 4, 2.5)
    pt = rng.uniform(5, 50, int(off[-1]))
    a = ak.unflatten(pt, lens)
    x = lazyk.from_offsets(off, pt)
    sel, asel = x[lazyk.num(x) >= 3], a[ak.num(a) >= 3]
    i, j = lazyk.argmin(sel, axis=1), lazyk.argmax(sel, axis=1)
    ai, aj = ak.argmin(asel, axis=1), ak.argmax(asel, axis=1)
    assert lazyk.local_index(sel).eval().to_list() == ak.local_index(asel).to_list()
    stored = []
    real = restructure.local_index
    monkeypatch.setattr(restructure, "local_index", lambda *a: stored.append(1) or real(*a))
    index, aindex = lazyk.local_index(sel), ak.local_index(asel)
    others = sel[(index != i[:, None]) & (index != j[:, None])]
    aothers = asel[(aindex != ai) & (aindex != aj)]
    lead = others[lazyk.argmax(others, axis=1, keepdims=True)]
    alead = aothers[ak.argmax(aothers, axis=1, keepdims=True)]
    got = lazyk.evaluate(others, lead, lazyk.sum(index * sel, axis=1))
    assert got[0].to_list() == aothers.to_list()
    assert got[1].to_list() == alead.to_list()
    np.testing.assert_allclose(np.asarray(got[2]), ak.to_numpy(ak.sum(aindex * asel, axis=1)))
    assert not stored


def test_two_results_of_one_take_back_of_rows_selected_by_their_positions():
    """`lazyk.evaluate` of two results reading one take-back of rows selected by
    `local_index` (the leading object outside a pair, used twice) gives each alone."""
    x = lazyk.array([[50.0, 40.0, 30.0], [1.0], [], [2.0, 9.0, 4.0]])
    o = x[lazyk.local_index(x) != 1]
    lead = o[lazyk.argmax(o, axis=1, keepdims=True)]
    a, b = lazyk.evaluate(lead, lead * 2)
    assert a.to_list() == lead.eval().to_list() == [[50.0], [1.0], [None], [4.0]]
    assert b.to_list() == [[100.0], [2.0], [None], [8.0]]


def test_concatenate_of_work_over_two_selections_checks_only_the_kept_rows():
    """Work over two arrays' selections (`x[m] * y[m]`) joined: rows that the mask drops
    are never paired (they may not line up); the kept rows as the plain-Python work."""
    x = lazyk.array([[1.0, 2.0], [3.0, 3.5], [4.0, 5.0]])
    y = lazyk.array([[10.0, 20.0], [1.0, 2.0, 3.0], [6.0, 7.0]])  # (row 1: other length)
    m = np.array([True, False, True])
    got = lazyk.concatenate([x[m] * y[m], x[m]], axis=1).eval()
    assert got.to_list() == [[10.0, 40.0, 1.0, 2.0], [24.0, 35.0, 4.0, 5.0]]


def test_a_repeated_selection_writes_no_kernel_text(monkeypatch):
    # the native row kernels are compiled once per process; a call only looks them up
    x = lazyk.array([[1.0, 5.0], [], [7.0, 0.5, 9.0]])
    want = [[5.0], [], [7.0, 9.0]]
    assert x[x > 2].eval().to_list() == want
    assert lazyk.pad_none(x, 1, axis=1, clip=True).eval().to_list() == [[1.0], [None], [7.0]]
    written = []

    def counted(text):
        written.append(text)
        return text
    monkeypatch.setattr(rowcopy, "row_kernel", counted)
    monkeypatch.setattr(padded, "row_kernel", counted)
    assert x[x > 2].eval().to_list() == want
    assert lazyk.pad_none(x, 1, axis=1, clip=True).eval().to_list() == [[1.0], [None], [7.0]]
    assert written == []
