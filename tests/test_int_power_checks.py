"""Integer powers with negative exponents raise NumPy's ValueError on every path: compiled
calls (native guard and threaded records too), bind(), ragged data, exponents computed by
sub-expressions, strings, Dask. A kernel cannot raise, so the exponents are checked before
it runs (`lazyk.runtime.check_int_powers`, `CompiledExpr.check_powers`)."""
from __future__ import annotations

import numpy as np
import pytest

import lazyk
from lazyk.runtime.launch import THREAD_MIN

MSG = "Integers to negative integer powers are not allowed"


def numpy_power(a, b):
    return np.power(np.asarray(a), np.asarray(b))


def test_numpy_raises_the_same_error():
    with pytest.raises(ValueError, match=MSG):
        numpy_power([2, 3, 5], [-1, -2, -3])


def test_compiled_calls_every_path():
    x, y = lazyk.placeholder("x", "N * int64"), lazyk.placeholder("y", "N * int64")
    k = lazyk.compile(x ** y)
    with pytest.raises(ValueError, match=MSG):
        k([2, 3, 5], [-1, -2, -3])
    a, b = np.array([2, 3, 5]), np.array([1, 2, 3])
    for _ in range(3):  # the native guard takes over repeated calls
        np.testing.assert_array_equal(k(a, b), numpy_power(a, b))
    with pytest.raises(ValueError, match=MSG):
        k(a, np.array([1, -2, 3]))
    out = np.empty(3, np.int64)
    k(a, b, out=out)
    with pytest.raises(ValueError, match=MSG):
        k(a, np.array([1, 2, -3]), out=out)
    np.testing.assert_array_equal(out, numpy_power(a, b))  # out untouched
    n = 4 * THREAD_MIN  # threaded records and their guard
    big, exps = np.arange(n) % 5, np.ones(n, np.int64)
    for _ in range(3):
        np.testing.assert_array_equal(k(big, exps), big)
    exps[-1] = -1
    with pytest.raises(ValueError, match=MSG):
        k(big, exps)


def test_computed_exponents():
    x, y = lazyk.placeholder("x", "N * int64"), lazyk.placeholder("y", "N * int64")
    k = lazyk.compile(x ** (y - 5))
    a, b = np.array([2, 3, 5]), np.array([6, 7, 8])
    np.testing.assert_array_equal(k(a, b), numpy_power(a, b - 5))
    with pytest.raises(ValueError, match=MSG):
        k(a, [6, 7, 4])
    with pytest.raises(ValueError, match=MSG):
        (lazyk.array(a) ** (lazyk.array([6, 7, 4]) - 5)).eval()
    with pytest.raises(ValueError, match=MSG):
        lazyk.evaluate("a ** (b - 5)", local_dict={"a": a, "b": np.array([6, 7, 4])})
    for _ in range(2):  # the cached string plan too
        got = lazyk.evaluate("a ** (b - 5)", local_dict={"a": a, "b": b})
        np.testing.assert_array_equal(got, numpy_power(a, b - 5))
        with pytest.raises(ValueError, match=MSG):
            lazyk.evaluate("a ** (b - 5)", local_dict={"a": a, "b": np.array([6, 4, 8])})
    with pytest.raises(ValueError, match=MSG):  # an exponent's own exponent
        (lazyk.array([2, 3]) ** (lazyk.array([1, 2]) ** lazyk.array([1, -1]))).eval()
    with pytest.raises(ValueError, match=MSG):  # int8 widened to the loop's int64
        (lazyk.array([2, 3]) ** lazyk.array(np.array([1, -2], np.int8))).eval()
    got = (lazyk.array([2, 3]) ** lazyk.array(np.array([1, 2], np.uint8))).eval().to_numpy()
    np.testing.assert_array_equal(got, numpy_power([2, 3], np.array([1, 2], np.uint8)))
    got = (lazyk.array([2.0, 3.0]) ** lazyk.array([1, -2])).eval().to_numpy()  # float loop
    np.testing.assert_array_equal(got, numpy_power([2.0, 3.0], [1, -2]))


def test_bind_checks_each_call():
    x, y = lazyk.placeholder("x", "N * int64"), lazyk.placeholder("y", "N * int64")
    k = lazyk.compile(x ** y)
    a, b, out = np.array([2, 3, 5]), np.array([1, 2, 3]), np.empty(3, np.int64)
    bound = k.bind(out, a, b)
    np.testing.assert_array_equal(bound(), numpy_power(a, b))
    b[1] = -2  # changed in place: the bound call reads it
    with pytest.raises(ValueError, match=MSG):
        bound()
    b[1] = 2
    np.testing.assert_array_equal(bound(), numpy_power(a, b))


def test_ragged_paths():
    r, y = lazyk.placeholder("r", "N * var * int64"), lazyk.placeholder("y", "N * int64")
    k = lazyk.compile(r ** y)
    with pytest.raises(ValueError, match=MSG):
        k([[2, 3], [5]], [1, -1])
    got = k([[2, 3], [5]], [1, 2])
    assert got.to_list() == [[2, 9], [5, 25]]
    with pytest.raises(ValueError, match=MSG):
        (lazyk.array([[2, 3], [5]]) ** lazyk.array([[1, -1], [2]])).eval()
    assert (lazyk.array([[2, 3], [5]]) ** lazyk.array([[1, 1], [2]])).eval().to_list() == \
        [[2, 3], [25]]
    rows = lazyk.array([[1, 2], [3]])
    out = lazyk.array([[0, 0], [0]])
    bound = lazyk.compile(r ** r).bind(out, rows)
    assert bound().to_list() == [[1, 4], [27]]
    rows[1, 0] = -3  # in place: the bound call sees it
    with pytest.raises(ValueError, match=MSG):
        bound()
    # a missing exponent is not a value: nothing to refuse
    got = (lazyk.array([2, 3]) ** lazyk.array([1, None])).eval()
    assert got.to_list() == [2, None]


def test_dask_blocks():
    pytest.importorskip("dask")
    import dask.array as da

    import lazyk.dask as ld

    a = da.from_array(np.array([2, 3, 5, 7]), chunks=2)
    b = da.from_array(np.array([1, 2, 3, -1]), chunks=2)
    k = lazyk.compile(lazyk.placeholder("x", "N * int64") ** lazyk.placeholder("y", "N * int64"))
    with pytest.raises(ValueError, match=MSG):
        k(a, b).compute()
    with pytest.raises(ValueError, match=MSG):
        ld.evaluate("a ** (b - 2)", local_dict={"a": a, "b": b + 2}).compute()
    ok = da.from_array(np.array([1, 2, 3, 1]), chunks=2)
    np.testing.assert_array_equal(k(a, ok).compute(), numpy_power([2, 3, 5, 7], [1, 2, 3, 1]))


def test_exponents_of_one_value_from_an_arg_reduction():
    a = lazyk.array(np.array([3, 1, 2]))
    assert (a ** lazyk.argmin(a)).to_numpy().tolist() == [3, 1, 2]
    assert (a ** (lazyk.argmax(a) + 1)).to_numpy().tolist() == [3, 1, 2]
    with pytest.raises(ValueError, match="negative integer powers"):
        (a ** (lazyk.argmin(a) - 5)).eval()


def test_a_power_with_no_elements_checks_no_exponent():
    for a, b in [(np.array([], np.int64), -1), (np.zeros((3, 0), np.uint32), np.int32(-3)),
                 (np.zeros((0, 2), np.int64), np.array([-1, 2]))]:
        want = a ** b
        got = (lazyk.array(a) ** (lazyk.array(b) if isinstance(b, np.ndarray) else b)).eval()
        assert got.to_numpy().shape == want.shape and got.to_numpy().dtype == want.dtype
    with pytest.raises(ValueError, match="negative integer powers"):
        lazyk.array(np.array([1])) ** -1
