"""Interfaces a new user reaches first: `lazyk.explain`, captured arrays in `lazyk.compile`,
NumPy functions on expressions, iteration, Python lists in `evaluate`, and notebook display."""
import gc
import pickle
import weakref

import numpy as np
import pytest

import lazyk

# --- lazyk.explain -----------------------------------------------------------------------------

def test_lazyk_explain_is_the_function_and_matches_the_method():
    x = lazyk.placeholder("x", "N * float64")
    e = lazyk.sin(x) * 2 + 1
    text = lazyk.explain(e)
    assert callable(lazyk.explain)
    assert text == e.explain()
    assert "== graph as built" in text and "%1 = sin(%0) : N * float64" in text
    assert repr(text) == str(text)  # a prompt prints the lines, not an escaped str


def test_explain_shows_as_preformatted_html_in_a_notebook():
    e = lazyk.array(np.arange(3.0)) < 2
    text = lazyk.explain(e)
    html = text._repr_html_()
    assert html.startswith("<pre>") and html.endswith("</pre>")
    assert "&lt;" in html and "less(" in html  # escaped: `<` never starts a tag
    assert str(text).count("\n") == html.count("\n")


# --- arrays captured by lazyk.compile are constants --------------------------------------------

def test_a_captured_numpy_array_is_a_constant_not_a_parameter():
    x = lazyk.placeholder("x", "N * float64")
    w = np.array([0.5, 2.0, -1.0])
    k = lazyk.compile(x * w + 1)
    assert k.signature == "(x: N * float64) -> 3 * float64"
    assert k.params == ("x",) and [v is w for v in k.constants.values()] == [True]
    a = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(k(a), a * w + 1)
    np.testing.assert_array_equal(k(x=a), a * w + 1)
    out = np.empty(3)
    assert k(a, out=out) is out
    np.testing.assert_array_equal(out, a * w + 1)
    with pytest.raises(TypeError, match=r"expected 1 input \(x: N \* float64\).*captured are "
                                        "constants"):
        k(a, w)


def test_a_captured_lazyk_array_is_kept_alive_and_read_without_a_copy():
    x = lazyk.placeholder("x", "N * int64")
    c = lazyk.array(np.arange(4))
    k = lazyk.compile(x - c)
    ref = weakref.ref(c)
    del c
    gc.collect()
    assert ref() is not None  # the compiled expression holds it
    np.testing.assert_array_equal(k(np.full(4, 10)), 10 - np.arange(4))
    np.asarray(ref())[0] = 100  # bound once: the very array, no copy
    np.testing.assert_array_equal(k(np.zeros(4, np.int64)), [-100, -1, -2, -3])


def test_a_captured_ragged_array_is_a_constant():
    rows = lazyk.array([[1.0, None, 3.0], [], [4.0]])
    s = lazyk.placeholder("s", "float64")
    k = lazyk.compile(rows.sum(axis=-1, skipna=True) * s)
    assert k.signature == "(s: float64) -> 3 * float64"
    np.testing.assert_array_equal(k(2.0), np.array([4.0, 0.0, 4.0]) * 2.0)
    y = lazyk.placeholder("y", "3 * var * ?float64")
    k2 = lazyk.compile(y + rows)
    assert k2.signature == "(y: 3 * var * ?float64) -> 3 * var * ?float64"
    got = k2(lazyk.array([[1.0, 1.0, None], [], [0.5]], type="3 * var * ?float64"))
    assert got.to_list() == [[2.0, None, None], [], [4.5]]


def test_compiled_constants_pickle_with_their_values():
    x = lazyk.placeholder("x", "N * float64")
    w = np.array([1.0, 10.0, 100.0])
    k = lazyk.compile(lazyk.sum(x * w))
    k2 = pickle.loads(pickle.dumps(k))
    assert k2.signature == k.signature == "(x: N * float64) -> float64"
    a = np.array([1.0, 2.0, 3.0])
    assert k2(a) == k(a) == np.sum(a * w)
    assert k2.__dask_tokenize__() == k.__dask_tokenize__()
    other = lazyk.compile(lazyk.sum(x * np.array([1.0, 10.0, 101.0])))
    assert other.__dask_tokenize__() != k.__dask_tokenize__()  # the values are in the token
    rows = lazyk.array([[1, 2], [3]])
    r = pickle.loads(pickle.dumps(lazyk.compile(rows * lazyk.placeholder("s", "int64"))))
    assert r.signature == "(s: int64) -> 2 * var * int64" and r(3).to_list() == [[3, 6], [9]]


def test_bind_takes_only_the_parameters():
    x = lazyk.placeholder("x", "N * float64")
    w = np.array([1.0, 2.0, 3.0])
    k = lazyk.compile(x * w)
    a, out = np.array([4.0, 5.0, 6.0]), np.empty(3)
    ck = k.bind(out, a)
    assert ck() is out
    np.testing.assert_array_equal(out, a * w)
    a[:] = 1.0  # the bound kernel reads the very arrays bound
    ck()
    np.testing.assert_array_equal(out, w)
    y = lazyk.placeholder("y", "2 * var * float64")
    rows = lazyk.array([[1.0, 2.0], [3.0]])
    b = lazyk.compile(y * rows).bind(lazyk.array([[0.0, 0.0], [0.0]]),
                                     lazyk.array([[2.0, 2.0], [2.0]]))
    assert b().to_list() == [[2.0, 4.0], [6.0]]
