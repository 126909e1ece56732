"""NumPy's rules where ragged and missing data meet them: negative integer powers raise,
`axis=None` keeps missing values, `std` / `var` keep float32, `where=` is refused by name."""
from __future__ import annotations

import numpy as np
import pytest

import lazyk

NEG = "Integers to negative integer powers are not allowed"


def test_negative_integer_powers_of_ragged_rows_raise_as_numpy():
    y = lazyk.array([[2, 3], [4]])
    for build in (lambda: y ** (y - 4), lambda: (y ** -y).sum(axis=1),
                  lambda: y ** lazyk.where(y > 2, -1, 1)):
        for _ in range(2):  # (the second time through the cached launch)
            with pytest.raises(ValueError, match=NEG):
                build().eval()
    off = np.array([0, 2, 3])  # (two arrays over one offsets array: one structure)
    a = lazyk.from_offsets(off, np.array([2, 3, 4]))
    b = lazyk.from_offsets(off, np.array([1, -1, 2]))
    with pytest.raises(ValueError, match=NEG):
        (a ** b).eval()
    assert (a ** (b + 1)).eval().tolist() == [[4, 1], [64]]
    assert (y ** y).eval().tolist() == [[4, 27], [256]]
    with pytest.raises(ValueError, match=NEG):
        lazyk.evaluate("y ** (y - 4)", local_dict={"y": y})


def test_concatenate_axis_none_keeps_missing_values():
    x = lazyk.array([1.0, None, 3.0])
    got = np.concatenate([x, x], axis=None).eval()
    assert str(got.type) == "6 * ?float64" and got.tolist() == [1.0, None, 3.0] * 2
    r = lazyk.array([[[1], [2, None]], None, [[3]]])
    got = lazyk.concatenate([r, lazyk.array([7])], axis=None).eval()
    assert got.tolist() == [1, 2, None, 3, 7]
    dense = lazyk.concatenate([lazyk.array(np.arange(6.0).reshape(2, 3)), np.array(5.0)],
                              axis=None).eval()
    np.testing.assert_array_equal(dense.to_numpy(), np.concatenate(
        [np.arange(6.0).reshape(2, 3), np.array(5.0)], axis=None))


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int32", "complex64"])
def test_std_var_over_var_dims_keep_numpys_dtype(dtype):
    rows = [[1, 0, 3], [2, 1, 1]]
    x = lazyk.array(rows, type=f"2 * var * {dtype}")
    flat = np.array([v for r in rows for v in r], dtype)
    for name in ("std", "var"):
        got = getattr(lazyk, name)(x).eval()
        want = getattr(np, name)(flat)
        assert got.to_numpy().dtype == want.dtype
        np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-3)
        per_row = getattr(lazyk, name)(x, axis=-1).eval().to_numpy()
        assert per_row.dtype == want.dtype
        np.testing.assert_allclose(per_row, [getattr(np, name)(np.array(r, dtype))
                                             for r in rows], rtol=1e-3)


def test_where_keyword_of_reductions_is_refused_by_name():
    a = lazyk.array(np.array([1.0, 2.0, 3.0]))
    mask = np.array([True, False, True])
    for call in (lambda: np.sum(a, where=mask), lambda: a.max(where=mask),
                 lambda: np.sum(a * 1, where=mask)):
        with pytest.raises(lazyk.NotSupportedError, match="where"):
            call()
    assert a[mask].sum().eval().to_numpy() == 4.0
