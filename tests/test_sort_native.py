"""Short lists sorted natively: each list's values through a sorting network (2-8 values)
or an insertion sort by keys (longer lists, NaN, zeros), against NumPy's stable sort of
each list and Awkward's `ak.sort`."""
from __future__ import annotations

import numpy as np
import pytest

import lazyk
from lazyk.backend.rowsort import VALUE_TYPES, sort_values

ak = pytest.importorskip("awkward")

SPECIAL = [np.nan, -np.inf, np.inf, 0.0, -0.0, 1.5, -2.0, 3.25, 1e30, -1e-30, 7, 8, 9, 10]


def _values(dtype: str, n: int, rng) -> np.ndarray:
    if dtype.startswith("float"):
        return rng.choice(np.array(SPECIAL, dtype), n)
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool)
    info = np.iinfo(dtype)
    return rng.choice(np.array([info.min, info.min + 1, 0, 1, 5, info.max - 1, info.max],
                               dtype), n)


def _numpy_sorted(values: np.ndarray, off: np.ndarray, ascending: bool) -> np.ndarray:
    """Each list sorted stably (descending: the flipped list sorted, flipped back, so -0.0
    and 0.0 keep their order and NaN comes first), as lazyk documents."""
    out = np.empty_like(values)
    for r in range(len(off) - 1):
        seg = values[off[r]:off[r + 1]]
        out[off[r]:off[r + 1]] = np.sort(seg, kind="stable") if ascending else \
            np.flip(np.sort(np.flip(seg), kind="stable"))
    return out


@pytest.mark.parametrize("dtype", sorted(VALUE_TYPES))
@pytest.mark.parametrize("ascending", [True, False])
def test_sort_values_matches_numpy_per_list(dtype, ascending):
    rng = np.random.default_rng(len(dtype) + ascending)
    lens = rng.integers(0, 20, 2000)  # (1, 2-4, 5-8 in networks; longer by keys)
    off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    values = _values(dtype, int(off[-1]), rng)
    got = np.empty_like(values)
    sort_values(off, values, got, ascending)
    want = _numpy_sorted(values, off, ascending)
    assert got.dtype == values.dtype
    np.testing.assert_array_equal(got, want)
    if values.dtype.kind == "f":  # (-0.0 and 0.0 in their order)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_sort_values_refuses_arrays_that_do_not_match():
    off = np.array([0, 2, 3], np.int64)
    with pytest.raises(ValueError, match="do not match"):
        sort_values(off, np.zeros(3), np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="do not match"):
        sort_values(np.array([0, 5], np.int64), np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match="do not match"):
        sort_values(off, np.zeros(3, np.complex128), np.zeros(3, np.complex128))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "uint8"])
@pytest.mark.parametrize("ascending", [True, False])
def test_lazyk_sort_of_short_lists_equals_awkward(dtype, ascending):
    rng = np.random.default_rng(11)
    lens = rng.poisson(4, 3000)
    values = _values(dtype, int(lens.sum()), rng)
    if dtype.startswith("float"):
        values[np.isnan(values)] = 4.0  # (Awkward puts NaN where its sort leaves it)
    a = ak.unflatten(values, lens)
    x = lazyk.from_awkward(a)
    got = lazyk.sort(x, axis=-1, ascending=ascending).eval()
    want = ak.sort(a, axis=-1, ascending=ascending)
    assert str(got.type) == f"3000 * var * {dtype}"
    assert got.to_list() == want.to_list()
    # inside a larger expression, sliced first (lists that start past item 0)
    got2 = lazyk.sort(x[5:], axis=-1, ascending=ascending).eval()
    assert got2.to_list() == ak.sort(a[5:], axis=-1, ascending=ascending).to_list()


def test_lists_outside_the_values_are_refused_by_the_kernel():
    """The row sorts check each list again (another thread may write the offsets between
    the caller's check and the sort): a list outside the values raises, nothing is read."""
    from lazyk.backend.rowsort import sort_rows

    values = np.arange(6.0)
    for off in ([0, 9, 6], [0, 4, 2, 6], [0, -3, 6]):  # (the last offset fits)
        off = np.array(off, np.int64)
        with pytest.raises(ValueError, match="offsets changed"):
            sort_values(off, values, np.empty_like(values))
        with pytest.raises(ValueError, match="offsets changed"):
            sort_rows(off, values.view(np.int64).copy(), np.empty(6, np.int64))


def test_values_in_the_other_byte_order_sort_by_keys():
    v = np.array([3.0, 1.0, 2.0, 5.0, 4.0]).astype(">f8")
    x = lazyk.from_offsets(np.array([0, 3, 5]), v)
    got = lazyk.sort(x, axis=1).eval()
    assert got.to_list() == [[1.0, 2.0, 3.0], [4.0, 5.0]]
    assert lazyk.sort(x, axis=1, ascending=False).eval().to_list() == [[3.0, 2.0, 1.0],
                                                                       [5.0, 4.0]]
