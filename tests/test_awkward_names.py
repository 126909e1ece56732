"""Awkward's names a ported analysis reaches for: `unzip`, `ravel`, `nan_to_num`, `isclose`,
`values_astype`, field paths, against Awkward and NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import lazyk

ak = pytest.importorskip("awkward")


def test_unzip_of_combinations_and_records():
    rows = [[1.0, 2.0, 3.0], [4.0], []]
    a1, a2 = ak.unzip(ak.combinations(ak.Array(rows), 2))
    p1, p2 = lazyk.unzip(lazyk.combinations(lazyk.array(rows), 2))
    assert (p1 + p2).eval().tolist() == (a1 + a2).to_list()
    r = lazyk.zip({"pt": lazyk.array(rows), "q": lazyk.array([[1, -1, 1], [1], []])})
    pt, q = lazyk.unzip(r)
    assert (pt * q).eval().tolist() == [[1.0, -2.0, 3.0], [4.0], []]
    with pytest.raises(TypeError, match="unzip takes records"):
        lazyk.unzip(lazyk.array(rows))


def test_ravel_keeps_missing_values_as_awkward():
    data = [[1, None], None, [3], []]
    assert lazyk.ravel(lazyk.array(data)).eval().tolist() == ak.ravel(ak.Array(data)).to_list()


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_nan_to_num_as_numpy(dtype):
    a = np.array([1.0, np.nan, np.inf, -np.inf, 2.0]).astype(dtype)
    if a.dtype.kind == "c":
        a = a + 1j * a[::-1]
    for kw in ({}, {"nan": -1.0, "posinf": 9.0}, {"neginf": -7.0}):
        got = lazyk.nan_to_num(lazyk.array(a), **kw).eval().to_numpy()
        want = np.nan_to_num(a, **kw)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        lazy = np.nan_to_num(lazyk.array(a) + 0, **kw)
        assert isinstance(lazy, lazyk.Expr)
        np.testing.assert_array_equal(lazy.eval().to_numpy(), want)
    r = [[1.0, np.nan], [np.inf], []]
    assert lazyk.nan_to_num(lazyk.array(r)).eval().tolist() == \
        ak.nan_to_num(ak.Array(r)).to_list()


def test_isclose_as_numpy():
    a = np.array([1.0, np.nan, np.inf, -np.inf, 2.0, 0.0])
    b = np.array([1.0 + 1e-9, np.nan, np.inf, np.inf, 2.1, 1e-9])
    for kw in ({}, {"equal_nan": True}, {"rtol": 0.1}, {"atol": 0.0}):
        got = lazyk.isclose(lazyk.array(a), b, **kw).eval().to_numpy()
        np.testing.assert_array_equal(got, np.isclose(a, b, **kw))
        lazy = np.isclose(lazyk.array(a) * 1, b, **kw)
        np.testing.assert_array_equal(lazy.eval().to_numpy(), np.isclose(a, b, **kw))
    # integers compare as floats (a - b never wraps), as NumPy's
    for dt, u, v, kw in ((np.uint8, [100, 3, 0], [101, 4, 255], {"atol": 1}),
                         (np.int16, [30000], [-30000], {"atol": 10000}),
                         (np.int64, [-2**63], [2**63 - 1], {}),
                         (np.uint64, [3], [5], {"atol": 2})):
        u, v = np.array(u, dt), np.array(v, dt)
        got = lazyk.isclose(lazyk.array(u), v, **kw).eval().to_numpy()
        np.testing.assert_array_equal(got, np.isclose(u, v, **kw))
    r = lazyk.isclose(lazyk.array([[3, 0], [200]]), lazyk.array([[4, 255], [201]]), atol=1)
    assert r.eval().to_list() == [[True, False], [True]]


def test_values_astype_and_field_paths():
    x = lazyk.array([[1.5, 2.5], [3.5]])
    got = lazyk.values_astype(x, np.int32).eval()
    assert str(got.type) == "2 * var * int32" and got.tolist() == [[1, 2], [3]]
    a = ak.Array([{"Jet": [{"pt": 1.0, "eta": 0.1}], "met": 3.0}, {"Jet": [], "met": 4.0}])
    ev = lazyk.from_awkward(a)
    assert ev["Jet", "pt"].tolist() == a["Jet", "pt"].to_list()
    z = lazyk.zip({"Jet": lazyk.zip({"pt": lazyk.array([[1.0], []])}),
                   "met": lazyk.array([3.0, 4.0])}, depth_limit=1)
    assert z["Jet", "pt"].eval().tolist() == [[1.0], []]
    with pytest.raises(KeyError, match="nope"):
        ev["Jet", "nope"]


def test_selecting_one_field_of_a_product_over_missing_rows_is_refused_plainly():
    x = lazyk.fill_none(lazyk.array([[12.0, None], [25.0], None]), 0.0)
    c = lazyk.cartesian([x, x])["0"]
    try:
        got = c[c > 5].eval().tolist()
    except lazyk.NotSupportedError as err:
        assert "evaluate the field first" in str(err)
    else:  # (once supported: Awkward's values)
        assert got == [[12.0, 12.0], [25.0], None]
    f = lazyk.cartesian([x, x])["0"].eval()
    assert f[f > 5].eval().tolist() == [[12.0, 12.0], [25.0], None]


def test_rows_then_items_in_one_index_as_awkward():
    d = [[1.0, 2.0], [], [3.0, 4.0, 5.0], [6.0]]
    x, a = lazyk.array(d), ak.Array(d)
    ev = np.array([True, False, True, True])
    cases = [(ev, 0), (ev, slice(None, 1)), (ev, slice(1, None)), (ev, -1), ([0, 2], 0),
             ([True, False, True, True], -1), (ev, None)]
    for key in cases:
        assert x[key].eval().to_list() == a[key].to_list(), key
        assert (x * 2)[key].eval().to_list() == (a * 2)[key].to_list(), key
    lazy = lazyk.num(x, axis=1) > 0  # (a lazy mask too: jets[lazyk.num(jets) > 0, 0])
    assert x[lazy, 0].eval().to_list() == a[ak.num(a, axis=1) > 0, 0].to_list()
    jets = lazyk.zip({"pt": x, "q": x * 0 + 1})
    assert jets[ev, 0].eval().to_list() == ak.zip({"pt": a, "q": a * 0 + 1})[ev, 0].to_list()
    dense = np.arange(12.0).reshape(4, 3)
    assert lazyk.array(dense)[ev, 1].eval().to_list() == dense[ev, 1].tolist()
    with pytest.raises(IndexError, match="a mask or positions of one dim"):
        x[x > 1, 0]
    with pytest.raises(IndexError, match="of type \\(1, 1\\) int64"):
        x[np.array([[0]]), 0]


def test_rows_and_items_paired_as_numpy_and_awkward():
    """x[rows, items]: the item items[k] of row rows[k] (NumPy's pairs of index arrays)."""
    d = [[[1, 2], [3]], [], [[4], [5, 6]]]
    x, a = lazyk.array(d), ak.Array(d)
    for key in (([0, 2], [1, 0]), ([0, 2], [-1, 0]), (np.array([0, 2]), np.array([1, 0])),
                ([0, 2], [1, 0], 0), ([0, 2], [1, 0], slice(None, None, -1))):
        assert x[key].eval().to_list() == a[key].to_list(), key
        assert (x * 2)[key].eval().to_list() == (a * 2)[key].to_list(), key
    assert x[[0, 2], lazyk.array([1, 0])].eval().to_list() == [[3], [4]]
    # (a mask of rows: the kept rows' positions, as NumPy reads it; Awkward refuses it)
    assert x[[True, False, True], [0, 1]].eval().to_list() == [[1, 2], [5, 6]]
    m = [[1, 2], None, [3]]
    assert lazyk.array(m)[[0, 1, 2], [1, 0, 0]].eval().to_list() == \
        ak.Array(m)[[0, 1, 2], [1, 0, 0]].to_list()
    r = lazyk.zip({"p": lazyk.array([[1.0, 2.0], [3.0]]), "q": lazyk.array([[1, 2], [3]])})
    assert r[[1, 0], [0, 1]].eval().to_list() == [{"p": 3.0, "q": 3}, {"p": 2.0, "q": 2}]
    dense = np.arange(6).reshape(2, 3)
    assert lazyk.array(dense)[[0, 1], [2, 0]].eval().to_list() == dense[[0, 1], [2, 0]].tolist()
    with pytest.raises(IndexError, match="row \\[1\\] of length 0"):
        x[[0, 1], [0, 0]].eval()
    with pytest.raises(IndexError, match="the items \\(of type \\(2,\\) bool\\)"):
        x[[0, 2], [True, False]]
    # NumPy's pairs: one of length 1 stretches; a missing item is a missing element
    assert x[[0, 2], [1]].eval().to_list() == a[[0, 2], [1]].to_list()
    assert x[[0], [1, 0]].eval().to_list() == a[[0], [1, 0]].to_list()
    assert lazyk.array([[1, 2], [3], [4, 5, 6]])[[0, 2], lazyk.array([1, None])].eval() \
        .to_list() == [2, None]
    with pytest.raises(IndexError, match="too many indices: 4 for an array of 3 dims"):
        x[[0, 2], [1, 0], 0, 0]
    with pytest.raises(IndexError, match="3 rows and 2 items do not pair"):
        x[[0, 1, 2], [0, 0]]


def test_empty_index_lists_are_no_positions_as_numpy_and_awkward():
    """`x[[], []]`, `x[[], 0]`, `x[[]]`: an empty list is positions of no item (NumPy reads
    it as an integer array, Awkward too); they raised IndexError / TypeError."""
    dense = np.arange(6, dtype=np.int32).reshape(2, 3)
    rows = [[1.0, 2.0], [3.0]]
    none = np.array([], dtype=np.int64)
    keys = (([], []), ([], 0), ([], none), (none, []), ([0], []), ([], [0]), ([], slice(None)),
            [])
    for key in keys:
        want = dense[key]
        for x in (lazyk.array(dense), lazyk.array(dense) * 1):
            got = x[key].eval()
            assert got.to_numpy().dtype == want.dtype == np.int32, key
            assert got.to_numpy().shape == want.shape, key
    for key in keys:
        want = ak.Array(rows)[key]
        for x in (lazyk.array(rows), lazyk.array(rows) * 1):
            got = x[key].eval()
            assert str(got.type) == str(want.type) and got.to_list() == want.to_list(), key
    r = lazyk.zip({"p": lazyk.array(rows), "q": lazyk.array([[1, 2], [3]])})
    a = ak.zip({"p": ak.Array(rows), "q": ak.Array([[1, 2], [3]])})
    for key in (([], []), []):
        assert str(r[key].eval().type) == str(a[key].type), key
    # the neighbours keep NumPy's rules: lists that do not pair, values that are no positions
    with pytest.raises(IndexError, match="shape mismatch"):
        dense[[0, 1], []]
    with pytest.raises(IndexError, match="2 rows and 0 items do not pair"):
        lazyk.array(dense)[[0, 1], []]
    with pytest.raises(IndexError, match="gathers \\(integers\\): got 0 \\* float64"):
        lazyk.array(rows)[np.array([]), []]
    for key in (([], 0), ([0], 0)):  # (a TypeError from the rest of the key)
        with pytest.raises(IndexError, match="too many indices"):
            np.arange(3)[key]
        with pytest.raises(IndexError, match="too many indices: 2 for an array of 1 dims"):
            lazyk.array(np.arange(3))[key]


def test_an_item_of_a_fixed_dim_is_checked_when_written_rows_or_none():
    """`e[:, 5]` of a fixed dim of 4 is NumPy's IndexError when the index is written, also
    with no rows to read (an empty array, `x[[], 5]`): it was an empty result."""
    for x in (np.zeros((0, 4)), np.arange(12).reshape(3, 4)):
        for key in ((slice(None), 5), (slice(None), -5), ([], 5), ([], -9)):
            for v in (lazyk.array(x), lazyk.array(x) * 1):
                with pytest.raises(IndexError, match="out of bounds for axis 1 with size 4"):
                    v[key]
        np.testing.assert_array_equal(np.asarray((lazyk.array(x) * 1)[:, -4].eval()), x[:, -4])
