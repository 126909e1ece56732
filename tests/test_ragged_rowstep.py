"""Fused ragged reductions over operands that share one index buffer, and indices changed
after construction: still checked before any read."""
import numpy as np
import pytest

import lazyk


def _rows(offsets, content):
    return [content[a:b] for a, b in zip(offsets[:-1], offsets[1:])]


@pytest.mark.parametrize("idx", [np.int64, np.int32])
def test_shared_offsets_match_numpy(idx):
    rng = np.random.default_rng(3)
    offsets = np.concatenate(([0], np.cumsum(rng.integers(0, 6, 200)))).astype(idx)
    x = rng.standard_normal(int(offsets[-1]))
    y = rng.standard_normal(int(offsets[-1]))
    lx, ly = lazyk.from_offsets(offsets, x), lazyk.from_offsets(offsets, y)
    got = (lx * 2 + ly).sum(axis=-1).eval().to_numpy()
    want = np.array([np.sum(a * 2 + b) for a, b in zip(_rows(offsets, x), _rows(offsets, y))])
    assert got.dtype == np.float64 and got.shape == (200,)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    got = (lx * lx).max(axis=-1, initial=-1.0).eval().to_numpy()
    want = np.array([np.max(a * a, initial=-1.0) for a in _rows(offsets, x)])
    np.testing.assert_array_equal(got, want)


def test_shared_offsets_with_a_broadcast_row():
    offsets = np.array([0, 1, 3, 3, 6])
    x = np.arange(6.0)
    lx = lazyk.from_offsets(offsets, x)
    got = (lx + lazyk.from_offsets(np.array([0, 1, 2, 2, 3]), np.array([10.0, 20.0, 30.0]))
           ).sum(axis=-1).eval().to_numpy()
    np.testing.assert_array_equal(got, [10.0, 1 + 2 + 2 * 20, 0.0, 3 + 4 + 5 + 3 * 30])


@pytest.mark.parametrize("bad", [-1, 100, 0])
def test_offsets_changed_after_construction_are_checked(bad):
    offsets = np.array([0, 2, 4, 6])
    x = lazyk.from_offsets(offsets, np.arange(6.0))
    assert x.sum(axis=-1).eval().to_numpy().tolist() == [1.0, 5.0, 9.0]
    offsets[2 if bad else 3] = bad  # negative, past the content, or decreasing
    with pytest.raises(ValueError, match="outside the content"):
        (x + x).sum(axis=-1).eval()


@pytest.mark.parametrize("skew", [False, True])
def test_rows_split_over_threads_match_numpy(skew):
    # enough values for the row kernel to split its rows over threads
    rng = np.random.default_rng(5)
    lengths = rng.integers(0, 12, 120_000)
    if skew:  # nearly every value in the last rows: an uneven split, same results
        lengths[:-100] = rng.integers(0, 2, len(lengths) - 100)
        lengths[-100:] = 7000
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    x = rng.standard_normal(int(offsets[-1]))
    lx = lazyk.from_offsets(offsets, x)
    row = np.repeat(np.arange(len(lengths)), lengths)
    want = np.bincount(row, weights=x * x, minlength=len(lengths))
    for n in (1, 2, 3):
        with lazyk.threads(n):
            got = (lx * lx).sum(axis=-1).eval().to_numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    with lazyk.threads(2):
        got = lx.max(axis=-1, initial=-np.inf).eval().to_numpy()
    peak = np.full(len(lengths), -np.inf)
    np.maximum.at(peak, row, x)
    np.testing.assert_array_equal(got, peak)
