"""`lazyk.explain` of what is not a computed expression: a compiled function (its
expression's text) and fixed strings themselves (no kernel), and `lazyk.evaluate` of fixed
strings (a copy, no kernel)."""
from __future__ import annotations

import numpy as np
import pytest

import lazyk


def test_explain_of_a_compiled_function_is_its_expressions():
    p = lazyk.placeholder("p", "N * float64")
    f = lazyk.compile(p * 2)
    assert str(lazyk.explain(f)) == str(f.explain())
    assert "== LLVM IR" in str(lazyk.explain(f))


def test_fixed_strings_explain_and_evaluate_without_a_kernel():
    data = np.array(["ab", "c"])
    a = lazyk.array(data)
    text = str(lazyk.explain(a))
    assert text.startswith("== expression: 2 * fixed_string[2, 'utf32']") and "no kernel" in text
    got = lazyk.evaluate(a)
    np.testing.assert_array_equal(got, data)
    assert got.dtype == data.dtype and not np.shares_memory(got, data)


@pytest.mark.parametrize("target", ["cpu", "cuda"])
def test_arrays_of_records_and_dates_explain_that_they_run_no_kernel(target):
    for a in (lazyk.array([{"x": 1, "y": 2.0}]), lazyk.array([[{"x": 1}], []]),
              lazyk.array(np.array(["2020-01-01"], "datetime64[D]"))):
        text = lazyk.explain(a, target=target)
        assert text.startswith(f"== array: {a.type}") and "no kernel" in text
        assert a.explain(target=target) == text


def test_explain_describes_an_expression_its_data_makes_fail():
    x = lazyk.array([[1.0, 2.0, 3.0], [], [4.0]])
    for e, error in ((x.max(axis=1), "ValueError: zero-size row 1"),
                     (x.sum(axis=0), "ShapeError"),
                     (x[lazyk.array([[5], [], [0]])], "IndexError")):
        text = str(lazyk.explain(e))
        assert "== graph as built" in text and f"raised {error}" in text


def test_explain_of_placeholders_runs_on_sample_data_that_fits_the_work():
    P = lazyk.placeholder
    v = P("v", "N * var * float64")
    for e in (v.max(axis=1), v.sum(axis=0), v[P("q", "N * var * int64")],
              lazyk.any(P("b", "N * var * bool"), axis=1),
              lazyk.where(P("c", "N * bool"), P("s", "N * string"), "zz") == "kiwi"):
        text = e.explain()
        assert "raised" not in text and "define" in text, text[:400]


def test_explain_says_what_evaluation_raises():
    x = lazyk.array([[1.0, -2.0], [], [4.0]])
    assert x.sum().sum().eval().to_list() == 3.0  # (a fold of one value: itself)
    e = lazyk.array(np.arange(6).reshape(2, 3)) ** lazyk.array(np.array([1, -1, 2]))
    assert "raised ValueError: Integers to negative integer powers" in e.explain()
    w = lazyk.placeholder("v", "N * var * float64") + lazyk.placeholder("m", "N * M * float64")
    assert "running it on sample data for its placeholders raised ShapeError" in w.explain()


def test_explain_of_records_counts_every_kernel_their_evaluation_runs():
    a = lazyk.array(np.arange(3.0))
    r = lazyk.zip({"a": lazyk.sin(a) * 2 + a.sum(), "b": lazyk.array(np.arange(3)) ** 2})
    r.a.eval(), r.b.eval()  # (evaluated before: explain still sees each launch)
    assert "== kernels: 0 loop nest(s), 3 fixed-dim kernel(s)" in lazyk.explain(r)
