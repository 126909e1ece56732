"""float32 / complex64 sums add in float64: within a few units in the last place of the
exact sum (a sequential float32 sum of 1e6 values drifts by ~1e-4 relative)."""
import re

import numpy as np

import lazyk


def test_float32_sums_and_means_are_within_a_few_ulp_of_the_exact_sum():
    a = np.full(10**6, 0.1, np.float32)
    exact = a.astype(np.float64).sum()
    got = np.asarray(lazyk.array(a).sum())
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, exact, rtol=3e-7)  # float32: ~6e-8 per ulp
    np.testing.assert_allclose(np.asarray(lazyk.array(a).mean()), exact / a.size, rtol=3e-7)
    rows = a.reshape(100, 10**4)
    np.testing.assert_allclose(np.asarray(lazyk.array(rows).sum(axis=1)),
                               rows.astype(np.float64).sum(axis=1), rtol=3e-7)


def test_complex64_sums_add_in_complex128():
    rng = np.random.default_rng(1)
    c = (rng.random(10**6) + 1j * rng.random(10**6)).astype(np.complex64)
    got = np.asarray(lazyk.array(c).sum())
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, c.astype(np.complex128).sum(), rtol=3e-7)


def test_the_wide_float32_sum_is_still_vectorized():
    text = lazyk.array(np.ones(1000, np.float32)).sum().explain()
    asm = text[text.index("assembly"):]
    assert "vcvtps2pd" in asm and re.search(r"vaddpd\s+%[yz]mm", asm)


def test_ragged_float32_sums_add_in_float64_too():
    a = np.full(10**6, 0.1, np.float32)
    exact = a.astype(np.float64).sum()
    x = lazyk.from_offsets(np.array([0, 10**6]), a)  # one long row: the window fold
    np.testing.assert_allclose(np.asarray(x.sum(axis=-1)), [exact], rtol=3e-7)
    np.testing.assert_allclose(np.asarray(x.sum()), exact, rtol=3e-7)
    np.testing.assert_allclose(np.asarray(x.mean(axis=-1)), [exact / a.size], rtol=3e-7)
    assert np.asarray(x.sum(axis=-1)).dtype == np.float32
    m = lazyk.array([[1.0, None, 3.0], []], type="2 * var * ?float32")
    assert m.mean(axis=-1, skipna=True).eval().to_list() == [2.0, None]
