"""lazyk.evaluate(e1, e2, ...): a tuple of results equal to one evaluation each, the work
they share run once (a reduction both read, a result asked twice, histograms over the same
rows in one pass), `out=` by keyword, records and histograms as results."""
import numpy as np
import pytest

import lazyk
from lazyk.kernel.nest import nest_stats


def test_results_equal_one_evaluation_each():
    x = lazyk.array([[1.0, 2.0, 6.0], [], [3.0]])
    a = np.arange(4.0)
    e1, e2, e3 = x * 2, lazyk.sum(x, axis=1), a + 1
    got = lazyk.evaluate(e1, e2, e3)
    assert isinstance(got, tuple) and len(got) == 3
    assert got[0].to_list() == [[2.0, 4.0, 12.0], [], [6.0]]
    assert got[1].to_list() == [9.0, 0.0, 3.0]
    np.testing.assert_array_equal(got[2], a + 1)


def test_a_shared_reduction_runs_once():
    x = lazyk.array([[1.0, 2.0, 6.0], [], [3.0, 5.0]])
    m = lazyk.max(x, axis=1, initial=0.0)[:, None]
    e1, e2 = x - m, x * m
    before = nest_stats["runs"]
    lazyk.evaluate(e1)
    lazyk.evaluate(e2)
    apart = nest_stats["runs"] - before
    before = nest_stats["runs"]
    g1, g2 = lazyk.evaluate(e1, e2)
    together = nest_stats["runs"] - before
    assert together == apart - 1  # the max once, not twice
    assert g1.to_list() == [[-5.0, -4.0, 0.0], [], [-2.0, 0.0]]
    assert g2.to_list() == [[6.0, 12.0, 36.0], [], [15.0, 25.0]]
    before = nest_stats["runs"]
    h1, h2 = lazyk.evaluate(e1, e1)  # the same result twice: computed once, two arrays
    assert nest_stats["runs"] - before == apart // 2
    assert h1 is not h2 and h1.to_list() == h2.to_list()


def test_out_by_keyword_and_errors():
    a, out = np.arange(3.0), np.empty(3)
    assert lazyk.evaluate(lazyk.array(a) * 2, out=out) is out
    np.testing.assert_array_equal(out, a * 2)
    m = lazyk.array([1.0, 2.0, 3.0])
    for second in (m, np.empty(3)):  # never written as if it were out
        with pytest.raises(TypeError, match=r"more lazy results after its first argument.*"
                           r"out=a"):
            lazyk.evaluate(m * 10, second)
    assert m.to_list() == [1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="out= takes one expression"):
        lazyk.evaluate(lazyk.array(a) * 2, lazyk.array(a), out=out)


def test_records_and_histograms_as_results():
    x = lazyk.array([[1.0, 2.0, 3.0], [4.0]])
    pairs, h = lazyk.combinations(x, 2), lazyk.histogram(x, 2, (0, 4))
    got_pairs, counts = lazyk.evaluate(pairs, h)
    assert got_pairs.to_list() == [[(1.0, 2.0), (1.0, 3.0), (2.0, 3.0)], []]
    assert counts.tolist() == [1, 3] and counts.dtype == np.int64
    assert lazyk.evaluate(h).tolist() == [1, 3]
    assert lazyk.evaluate(lazyk.zip({"x": x})).to_list() == [[{"x": 1.0}, {"x": 2.0},
                                                              {"x": 3.0}], [{"x": 4.0}]]


def test_several_results_are_fresh_arrays_in_the_order_asked():
    m = lazyk.array(np.ones((2, 3)))
    assert all(r.flags.f_contiguous for r in lazyk.evaluate(m * 2, m + 1, order="F"))
    t = lazyk.array(np.ones((3, 2)).T)
    assert all(r.flags.c_contiguous for r in lazyk.evaluate(t * 2, t + 1, order="C"))
    e = lazyk.array(np.arange(4.0)) * 2
    r1, r2 = lazyk.evaluate(e, e)
    r1[0] = 99.0
    np.testing.assert_array_equal(r2, [0.0, 2.0, 4.0, 6.0])
    x = lazyk.array([[1.0], []]) * 2
    g1, g2 = lazyk.evaluate(x, x)
    assert g1 is not g2 and g1.to_list() == g2.to_list() == [[2.0], []]
    with pytest.raises(ValueError, match="order"):
        lazyk.evaluate(m * 2, m + 1, order="X")


def test_a_string_with_more_results_is_refused_clearly():
    e = lazyk.array(np.arange(3.0)) * 2
    with pytest.raises(TypeError, match="evaluate a string alone"):
        lazyk.evaluate("x + 1", e)
