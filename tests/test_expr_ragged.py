"""Ragged (var) and missing-value (?T) expressions against hand-computed expectations."""
import numpy as np
import pytest

import lazyk


def A(data, type=None):
    return lazyk.array(data, type=type)


def test_var_times_scalar_plus_length_one_rows():
    a = A([[1.0, 2.0, 3.0], [4.0]], "2 * var * float64")
    b = A([[10.0], [20.0]])
    e = a * 2 + b
    assert str(e.type) == "2 * var * float64"
    r = e.eval()
    assert str(r.type) == "2 * var * float64"
    assert r.to_list() == [[12.0, 14.0, 16.0], [28.0]]


def test_var_with_var_equal_lengths_pair_up_and_length_one_broadcasts():
    a = A([[1, 2, 3], [4], [5, 6]])
    b = A([[10, 20, 30], [1, 2, 3], [7]])
    assert (a + b).eval().to_list() == [[11, 22, 33], [5, 6, 7], [12, 13]]


def test_var_against_fixed_gives_fixed_when_rows_fit():
    a = A([[1, 2, 3], [4]])
    f = np.array([[10, 20, 30], [40, 50, 60]])
    e = a + f
    assert str(e.type) == "2 * 3 * int64"
    r = e.eval()
    assert str(r.type) == "2 * 3 * int64"
    assert r.to_list() == [[11, 22, 33], [44, 54, 64]]


def test_mismatched_rows_name_row_and_lengths():
    a = A([[1, 2, 3], [4]])
    b = A([[1, 2], [3]])
    with pytest.raises(lazyk.ShapeError, match=r"row 0: operand 0 has length 3 and operand 1 "
                                               r"has length 2"):
        (a + b).eval()


def test_missing_values_propagate_and_comparisons_give_option_bool():
    a = A([[1.0, None, 3.0], [4.0]], "2 * var * ?float64")
    e = a * 10 - 1
    assert str(e.type) == "2 * var * ?float64"
    assert e.eval().to_list() == [[9.0, None, 29.0], [39.0]]
    c = a > 2
    assert str(c.type) == "2 * var * ?bool"
    assert c.eval().to_list() == [[False, None, True], [True]]
    o = A([1, None, 3], "3 * ?int32")
    assert (o + o).eval().to_list() == [2, None, 6]
    assert str((o + 1.5).eval().type) == "3 * ?float64"


def test_nan_is_a_value_not_missing():
    a = A([[np.nan, None]], "1 * var * ?float64")
    r = lazyk.isnan(a).eval().to_list()
    assert r == [[True, None]]


def test_reductions_over_var_rows():
    a = A([[1, 2, 3], [4], [5, 6]])
    s = a.sum(axis=-1)
    assert str(s.type) == "3 * int64"
    assert s.eval().to_list() == [6, 4, 11]
    assert a.max(axis=-1).eval().to_list() == [3, 4, 6]
    assert a.mean(axis=1).eval().to_list() == [2.0, 4.0, 5.5]
    assert (a * a).sum(axis=-1, keepdims=True).eval().to_list() == [[14], [16], [61]]


def test_reductions_with_missing_and_skipna():
    a = A([[1.0, None, 3.0], [4.0], []], "3 * var * ?float64")
    assert a.sum(axis=-1).eval().to_list() == [None, 4.0, 0.0]
    assert str(a.sum(axis=-1, skipna=True).type) == "3 * float64"
    assert a.sum(axis=-1, skipna=True).eval().to_list() == [4.0, 4.0, 0.0]
    assert a.mean(axis=-1, skipna=True).eval().to_list() == [2.0, 4.0, None]
    assert a.max(axis=-1, skipna=True).eval().to_list() == [3.0, 4.0, None]
    assert a.max(axis=-1).eval().to_list() == [None, 4.0, None]
    o = A([1, None, 3], "3 * ?int32")
    assert o.sum().eval().to_list() is None
    assert o.sum(skipna=True).eval().to_list() == 4


def test_reduction_feeding_more_work():
    a = A([[1.0, 2.0, 6.0], [4.0]])
    assert (a - a.mean(axis=-1, keepdims=True)).eval().to_list() == [[-2.0, -1.0, 3.0], [0.0]]
    o = A([[1.0, None, 3.0], [4.0, 6.0]], "2 * var * ?float64")
    share = (o / o.sum(axis=-1, keepdims=True, skipna=True)).eval()
    assert share.to_list() == [[0.25, None, 0.75], [0.4, 0.6]]
    assert (a.sum(axis=-1) * 2).eval().to_list() == [18.0, 8.0]


def test_unsupported_forms_say_so():
    a = A([[1.0, 2.0], [3.0]])
    with pytest.raises(lazyk.NotSupportedError):
        lazyk.evaluate(a + 1, out=np.zeros(3))


def test_more_forms_outer_dims_top_level_var_and_scalars():
    a = A([[[1, 2], [3]], [[4], [5, 6, 7]]])
    assert str(a.type) == "2 * 2 * var * int64"
    assert (a * 2).eval().to_list() == [[[2, 4], [6]], [[8], [10, 12, 14]]]
    assert a.sum(axis=-1).eval().to_list() == [[3, 3], [4, 18]]
    v = A([1, 2, 3], "var * int32")
    r = (v + 1).eval()
    assert str(r.type) == "var * int32" and r.to_list() == [2, 3, 4]
    assert v.sum().eval().to_list() == 6
    o = A(None, "?int32")
    assert str((o + 1).type) == "?int32" and (o + 1).eval().to_list() is None
    five = A(5, "?int32")
    assert (A([1, None, 3], "3 * ?int32") + five).eval().to_list() == [6, None, 8]
    b = A([[1], [2, 3, 4]])
    got = (b + np.array([10, 20, 30])).eval()
    assert str(got.type) == "2 * 3 * int64" and got.to_list() == [[11, 21, 31], [12, 23, 34]]
    p = A([[1, None]], "1 * var * ?int64")
    assert lazyk.where(p > 0, p, 0).eval().to_list() == [[1, None]]


def test_arrmeta_gather_equals_list_reading():
    from lazyk.ragged import from_array, gather

    a = A([[1, 2, 3], [4, 5], [6]], "3 * var * int64")
    cases = [A([[1.0, None, 3.0], [4.0]], "2 * var * ?float64"),
             A([[1, 2, 3], [4], []], "3 * var * int32"), A([[[1, 2], [3]], [[4], [5, 6, 7]]]),
             A([1, None, 3], "3 * ?int16"), A([1, 2, 3], "var * int32"), A(None, "?int32"),
             a[::-1], a[:, ::-1], a[1:]]
    for c in cases:
        g, f = gather(c, np.dtype("f8")), from_array(c, np.dtype("f8"))
        assert (g.outer, g.var, g.last) == (f.outer, f.var, f.last), c.type
        np.testing.assert_array_equal(g.lengths, f.lengths)
        np.testing.assert_array_equal(g.values, f.values)
        assert (g.mask is None) == (f.mask is None)
        if g.mask is not None:
            np.testing.assert_array_equal(g.mask, f.mask)
    assert (a[:, ::-1] * 10).eval().to_list() == [[30, 20, 10], [50, 40], [60]]
