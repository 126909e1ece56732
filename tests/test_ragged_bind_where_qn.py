"""`where()` over missing rows whose result has `?n` rows (a `?var` branch against a fixed
dim of n): which result rows are missing follows the values (a row is missing where an
element takes a missing row). Evaluated, called and bound (then the values changed in
place: the bound call stores each call's missing rows) against the plain-Python
reference."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
from tests import ragged_reference as R
from tests import ragged_strategies as S
from tests.test_ragged_bind import _same_out, check_bound, make_out
from tests.test_ragged_bind_where import _changed

# dims around the `?var` dim that meets m's fixed dim of n
LAYOUTS = (("N", "?var"), ("2", "N", "?var"), ("N", "?var", "2"), ("N", "?var", "var"),
           ("N", "var", "?var"))


@st.composite
def qn_case(draw):
    """(type of x, its nested data, m): x's `?var` rows have m's length n (or 1, or are
    missing), so the result has `?n` rows; m's dims after n are x's (1 for var dims)."""
    dims = draw(st.sampled_from(LAYOUTS))
    n, q = draw(st.sampled_from([2, 3])), draw(st.booleans())
    dims = [str(draw(st.integers(0, 3))) if d == "N" else d for d in dims]

    def rows(level):
        if level == len(dims):
            return None if q and draw(st.integers(0, 3)) == 0 else draw(st.integers(-4, 4)) / 2
        d = dims[level]
        if d == "?var":
            if draw(st.integers(0, 2)) == 0:
                return None
            size = draw(st.sampled_from([n, n, 1]))
        else:
            size = int(d) if d.isdigit() else draw(S.LENGTHS)
        return [rows(level + 1) for _ in range(size)]
    t = " * ".join(dims + [("?" if q else "") + "float64"])
    k = dims.index("?var")
    shape = (n,) + tuple(int(d) if d.isdigit() else 1 for d in dims[k + 1:])
    m = (np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) - 1) / 2
    return t, rows(0), m
FORMS = {
    "where(m > c, x, m)": (lambda x, m, c: lazyk.where(m > c, x, m),
                           lambda X, M, c: R.where(R.elementwise("greater", M, c), X, M)),
    "where(m > c, m, x * 2)": (
        lambda x, m, c: lazyk.where(m > c, m, x * 2),
        lambda X, M, c: R.where(R.elementwise("greater", M, c), M,
                                R.elementwise("multiply", X, 2))),
}


@settings(max_examples=25, deadline=None)
@given(qn_case(), st.sampled_from(sorted(FORMS)), st.sampled_from([-1.0, 0.0, 9.0]),
       st.lists(st.integers(0, 5), min_size=60, max_size=60))
def test_where_with_missing_fixed_rows_follows_the_values(case, form, c, draws):
    t, d, a = case
    ta = " * ".join([str(n) for n in a.shape] + ["float64"])
    build, ref_of = FORMS[form]
    x = lazyk.array(d, type=t)

    def ref(data, m):
        return ref_of(R.array(data, t), R.array(m.tolist(), ta), c)
    try:
        want = ref(d, a)
    except (lazyk.ShapeError, ValueError):
        return
    if not re.search(r"\?\d", str(want.type)):  # m of size 1 stretches: `?var` rows
        return  # (bound as where() over missing rows: tests/test_ragged_bind_where.py)
    got = build(x, lazyk.array(a), c).eval()  # the unbound nest follows the reference too
    _same_out(got, want)
    if "?var * var" in t:  # `?n` rows over var rows: evaluated, bind refuses by name
        k = lazyk.compile(build(lazyk.placeholder("x", t), lazyk.placeholder("m", ta), c))
        with pytest.raises(lazyk.NotSupportedError, match=r"`\?n` result rows over var"):
            k.bind(make_out(want), x=x, m=a)
        return
    for axis in (-1, 0):  # and reductions of it (the where() first, then the fold)
        try:
            r = R.reduce("sum", want, axis, skipna=True)
        except (lazyk.ShapeError, ValueError):  # rows that do not fold together
            continue
        try:
            _same_out(build(x, lazyk.array(a), c).sum(axis=axis, skipna=True).eval(), r)
        except lazyk.NotSupportedError:  # refused by name (README), never a wrong answer
            pass
    k = lazyk.compile(build(lazyk.placeholder("x", t), lazyk.placeholder("m", ta), c))
    nd = len(R.parse_type(t).dims)
    e1 = _changed(d, nd, iter(draws * 20), t.split(" * ")[-1].startswith("?"))
    m1 = np.resize(np.array(draws, np.float64) - 2.0, a.shape)

    def change():  # values only: the rows of x stay; m's values flip the conditions
        lazyk.compile(lazyk.placeholder("p", t) * 1)(lazyk.array(e1, type=t), out=x)
        a[...] = m1
    assert check_bound(lambda: want, lambda out: k.bind(out, x=x, m=a),
                       again=(change, lambda: ref(e1, m1),
                              lambda out: k(x=x, m=a, out=out))) == "match"


def test_where_with_missing_fixed_rows_by_hand():
    x = lazyk.array([[[1.0, 2.0], None], [None, [3.0, 4.0]], []],
                    type="3 * var * ?var * float64")
    m = np.array([5.0, -5.0])
    want = [[[1.0, -5.0], None], [None, [3.0, -5.0]], []]
    e = lazyk.where(lazyk.array(m) > 0, x, m)
    assert str(e.type) == "3 * var * ?2 * float64" and e.eval().to_list() == want
    k = lazyk.compile(lazyk.where(lazyk.placeholder("m", "2 * float64") > 0,
                                  lazyk.placeholder("x", "N * var * ?var * float64"),
                                  lazyk.placeholder("m", "2 * float64")))
    out = make_out(R.array(want, "3 * var * ?2 * float64"))
    run = k.bind(out, m, x)
    assert run().to_list() == want
    m[:] = [-1.0, -2.0]  # nothing taken from the missing rows: every row present
    assert run().to_list() == [[[-1.0, -2.0]] * 2, [[-1.0, -2.0]] * 2, []]
    m[:] = [1.0, 2.0]
    assert run().to_list() == [[[1.0, 2.0], None], [None, [3.0, 4.0]], []]
    empty = lazyk.array([], type="0 * var * ?var * float64")
    assert k(m, empty).to_list() == []
