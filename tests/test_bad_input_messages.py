"""Bad input says what is wrong in the user's words: histogram weights that would stretch
the values, zip of a Python str, `initial=` that is not a number, combinations no array can
hold, explain() given data, arguments of nan_to_num / isclose."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import lazyk


def test_histogram_values_never_stretch_to_the_weights():
    r = lazyk.array([[3.0], [4.0, 5.0]])
    with pytest.raises(lazyk.ShapeError, match="never the values to the weights"):
        lazyk.evaluate(lazyk.histogram(r, 3, (0, 10), weights=lazyk.array([[1., 2., 3.], [1., 1.]])))
    # weights broadcast to the values: a weight per row, or one per value
    got = lazyk.evaluate(lazyk.histogram(lazyk.array([[3.0, 4.0], [5.0]]), 3, (0, 10),
                                         weights=lazyk.array([2.0, 3.0])[:, None]))
    np.testing.assert_array_equal(got, np.histogram([3.0, 4.0, 5.0], 3, (0, 10),
                                                    weights=[2.0, 2.0, 3.0])[0])
    s = lazyk.array([[2.0, 3.0], [4.0, 5.0]])  # (a selection keeps one value of row 0)
    with pytest.raises(lazyk.ShapeError, match="never the values to the weights"):
        lazyk.evaluate(lazyk.histogram(s[s > 2.5], 3, (0, 10), weights=s))
    got = lazyk.evaluate(lazyk.histogram(r, 3, (0, 10), weights=r * 2))
    np.testing.assert_array_equal(got, np.histogram([3.0, 4.0, 5.0], 3, (0, 10),
                                                    weights=[6.0, 8.0, 10.0])[0])


def test_zip_of_a_python_string_names_the_field():
    with pytest.raises(TypeError, match="field 'a' is a Python str"):
        lazyk.zip({"a": "str", "b": lazyk.array([1.0])})


def test_initial_must_be_a_number():
    x = lazyk.array([[1.0], [2.0, 3.0]])
    for bad in ([1], {"a": 1}, np.ones(2), "x"):
        with pytest.raises(TypeError, match="initial must be a number"):
            x.max(axis=1, initial=bad)
    with pytest.raises(TypeError, match="complex"):
        lazyk.max(lazyk.array([1.0, 2.0]), initial=1j)
    assert lazyk.max(lazyk.array([1.0, 2.0]), initial=np.float32(5)).eval().to_numpy() == 5.0
    assert lazyk.sum(lazyk.array([1, 2]), initial=np.int64(3)).eval().to_numpy() == 6


def test_combinations_no_array_can_hold():
    with pytest.raises(ValueError, match="more than any array holds"):
        lazyk.combinations(lazyk.array([list(range(200))]), 20)
    assert lazyk.combinations(lazyk.array([list(range(20))]), 3).type == \
        lazyk.dshape("1 * 1140 * (int64, int64, int64)")


def test_explain_given_data_and_bad_arguments_of_new_functions():
    f = lazyk.compile(lazyk.placeholder("x", "N * float64") * 2)
    with pytest.raises(ValueError, match="it takes no data"):
        f.explain(np.ones(3))
    with pytest.raises(TypeError, match="nan_to_num: nan must be a real number"):
        lazyk.nan_to_num(lazyk.array([1.0]), nan="x")
    with pytest.raises(TypeError, match="isclose: rtol must be a real number"):
        lazyk.isclose(lazyk.array([1.0]), lazyk.array([1.0]), rtol="x")
    with pytest.raises(lazyk.UnsupportedOperandError, match="isclose"):
        lazyk.isclose(lazyk.array(["a"]), lazyk.array(["a"]))


def test_command_line_explain_says_what_the_sample_data_raised():
    got = subprocess.run([sys.executable, "-m", "lazyk", "explain", "a + b", "--type",
                          "a=N * var * float64", "--type", "b=N * float64", "--no-ir",
                          "--no-asm"], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ))
    assert got.returncode == 0, got.stderr
    assert "running it on sample data for its placeholders raised ShapeError" in got.stdout


def test_fill_none_refuses_a_foreign_value_also_without_missing_values():
    """fill_none(x, object()) of data with no missing value raised nothing and returned x
    (Awkward raises TypeError); with missing values it was a TypeError naming the type."""
    for x in (lazyk.array([[1.0, 2.0], []]), lazyk.array([[1.0, None], []])):
        for bad in (object(), [1, 2]):
            with pytest.raises(TypeError, match=type(bad).__name__):
                lazyk.fill_none(x, bad)
    assert lazyk.fill_none(lazyk.array([[1.0, 2.0], []]), 0).to_list() == [[1.0, 2.0], []]


def test_mask_of_another_length_and_string_weights_name_the_users_operands():
    lists = lazyk.array([[1.0, 2.0], [3.0]])
    for x in (lazyk.array(np.arange(3.0)), lists, lazyk.zip({"a": lists})):
        n = 3 if x.ndim == 1 and x.shape[0] == 3 else 2
        m = np.array([True, False, True, False][:5 - n])  # (another length, not 1)
        with pytest.raises(lazyk.ShapeError, match=rf"mask: dim 0 has size {n} in the array "
                           rf"\(.*\) and {5 - n} in the mask \({5 - n} \* bool\)"):
            lazyk.mask(x, m)
    # a mask of one broadcasts, as in Awkward
    assert lazyk.mask(lazyk.array(np.arange(3.0)), np.array([False])).to_list() == [None] * 3
    with pytest.raises(lazyk.NotSupportedError, match="weights of type string: real numbers"):
        lazyk.histogram(lists, 2, (0, 4), weights="w")
