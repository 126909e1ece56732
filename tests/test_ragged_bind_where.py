"""`bind()` of a where() over missing rows (`?var`): the result's rows follow the values,
so each bound call counts them again and raises ShapeError when they no longer match
what bind planned; else bound call == unbound call == the plain-Python reference, after
the inputs' values and missing values changed in place, also from several threads."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
from lazyk.errors import ShapeError
from tests import ragged_reference as R
from tests import ragged_strategies as S
from tests.test_ragged_bind import (  # noqa: F401
    _in_threads,
    _same_out,
    check_bound,
    make_out,
    small_parts,
)
from tests.test_strings_where import _text, _text_type

QLAYOUTS = S.QVAR_LAYOUTS + S.QNEST_LAYOUTS


def _rows_of(data, nd: int, level: int = 0):
    """The row structure of reference data: rows and missing rows kept, values as 0."""
    if level == nd:
        return 0
    if data is None:
        return None
    return [_rows_of(x, nd, level + 1) for x in data]


def _changed(data, nd: int, flips, leaf_option: bool, level: int = 0):
    """`data` with new values, and missing values where `leaf_option`, row structure kept
    (`flips`: an iterator of draws in 0..5)."""
    if data is None and level < nd:
        return None
    if level == nd:
        k = next(flips)
        if leaf_option and k == 0:
            return None
        v = 0 if data is None else data
        return (k - 2) * 1.5 if isinstance(v, float) else (k - 2) if not isinstance(
            v, bool) else bool(k % 2)
    return [_changed(x, nd, flips, leaf_option, level + 1) for x in data]


FORMS = {
    "where(x > 0, x, y)": (lambda x, y: lazyk.where(x > 0, x, y),
                           lambda X, Y: R.where(R.elementwise("greater", X, 0), X, Y)),
    "where(y < 1, x * 2, y)": (
        lambda x, y: lazyk.where(y < 1, x * 2, y),
        lambda X, Y: R.where(R.elementwise("less", Y, 1), R.elementwise("multiply", X, 2), Y)),
    "where(x > 0, x, y).sum(axis=-1)": (
        lambda x, y: lazyk.where(x > 0, x, y).sum(axis=-1, skipna=True),
        lambda X, Y: R.reduce("sum", R.where(R.elementwise("greater", X, 0), X, Y), -1,
                              skipna=True)),
}


@settings(max_examples=25, deadline=None)
@given(S.ragged_pair(layouts=QLAYOUTS, own_rows=True), st.sampled_from(sorted(FORMS)),
       st.lists(st.integers(0, 5), min_size=200, max_size=200))
def test_where_over_missing_rows_binds_and_follows_value_changes(pair, form, draws):
    t1, d1, t2, d2 = pair
    fn, ref_fn = FORMS[form]
    if "?var" not in t1 + t2:
        return
    k = lazyk.compile(fn(lazyk.placeholder("x", t1), lazyk.placeholder("y", t2)))
    a, b = lazyk.array(d1, type=t1), lazyk.array(d2, type=t2)
    args = [{"x": a, "y": b}[n] for n in k.params]
    try:
        ref = ref_fn(R.array(d1, t1), R.array(d2, t2))
    except (ShapeError, ValueError):
        with pytest.raises((ShapeError, ValueError)):
            k(*args)
        return
    out = make_out(ref)
    bound = k.bind(out, *args)
    assert bound() is out
    _same_out(out, ref)
    # new values and missing values written into the inputs in place (rows kept)
    nd = len(t1.split(" * ")) - 1
    flips = iter(draws * 10)
    e1 = _changed(d1, nd, flips, t1.split(" * ")[-1].startswith("?"))
    e2 = _changed(d2, nd, flips, t2.split(" * ")[-1].startswith("?"))
    for arr, t, e in ((a, t1, e1), (b, t2, e2)):
        p = lazyk.placeholder("p", t)
        assert lazyk.compile(p * 1)(lazyk.array(e, type=t), out=arr) is arr
    ref2 = ref_fn(R.array(e1, t1), R.array(e2, t2))
    assert ref2.type.dims == ref.type.dims
    if _rows_of(ref2.data, len(ref2.type.dims)) != _rows_of(ref.data, len(ref.type.dims)):
        # (a form in steps binds its scratch again: then out's check names the row)
        with pytest.raises(ShapeError, match=r"row \d+ of the result's var dimension .*bind "
                                             r"again|out: dimension \d+ \(var\), row \d+"):
            bound()
    else:
        assert bound() is out
        _same_out(out, ref2)
    fresh = make_out(ref2)
    assert k(*args, out=fresh) is fresh
    _same_out(fresh, ref2)


def test_a_result_row_that_turns_missing_names_the_row():
    x = lazyk.placeholder("x", "N * ?var * float64")
    y = lazyk.placeholder("y", "N * ?var * float64")
    a = lazyk.array([[1.0, -2.0], [3.0], [5.0]], type="3 * ?var * float64")
    b = lazyk.array([None, [3.0], [1.0]], type="3 * ?var * float64")
    k = lazyk.compile(lazyk.where(x > 0, x, y))
    out = lazyk.array([None, [0.0], [0.0]], type="3 * ?var * float64")
    run = k.bind(out, a, b)
    assert run().to_list() == [None, [3.0], [5.0]]
    flip = lazyk.compile(lazyk.placeholder("p", "N * ?var * float64") * -1)
    flip(a, out=a)  # [[-1, 2], [-3], [-5]]: row 0 still takes y's missing row
    assert run().to_list() == [None, [3.0], [1.0]]
    lazyk.compile(lazyk.placeholder("p", "N * ?var * float64") * 0 + 1)(a, out=a)
    with pytest.raises(ShapeError, match="row 0 of the result's var dimension 1 is present "
                                         "now, missing at bind"):
        run()
    assert k.bind(lazyk.array([[0.0, 0.0], [0.0], [0.0]], type="3 * ?var * float64"),
                  a, b)().to_list() == [[1.0, 1.0], [1.0], [1.0]]


def test_where_over_missing_rows_bound_call_from_several_threads(small_parts):  # noqa: F811
    rng = np.random.default_rng(5)
    n = 400
    rows = [None if rng.integers(0, 5) == 0 else list(rng.integers(-3, 4, rng.integers(0, 4))
                                                       .astype(float)) for _ in range(n)]
    other = [None if r is None or rng.integers(0, 3) == 0 else [1.0] * len(r) for r in rows]
    x = lazyk.placeholder("x", "N * ?var * float64")
    y = lazyk.placeholder("y", "N * ?var * float64")
    k = lazyk.compile(lazyk.where(x >= 0, x, y))
    a = lazyk.array(rows, type=f"{n} * ?var * float64")
    b = lazyk.array(other, type=f"{n} * ?var * float64")
    ref = R.where(R.elementwise("greater_equal", R.array(rows, str(a.type)), 0),
                  R.array(rows, str(a.type)), R.array(other, str(b.type)))
    runs = [k.bind(make_out(ref), a, b) for _ in range(3)]
    assert runs[0]._nparts > 1
    errors = []

    def work():
        try:
            for _ in range(20):
                for run in runs:
                    _same_out(run(), ref)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    _in_threads(work, errors)


# ------------------------------------------- where() over missing strings binds in steps
def _paths(data, nd: int, level: int = 0, at=()):
    """The index of every leaf of nested lists (rows that are None have none)."""
    if level == nd:
        return [at]
    if data is None:
        return []
    return [p for i, x in enumerate(data) for p in _paths(x, nd, level + 1, at + (i,))]


@settings(max_examples=20, deadline=None)
@given(S.ragged(layouts=S.LAYOUTS, dtypes=("int64",), option_rows=False),
       st.booleans(), st.lists(st.integers(0, 5), min_size=60, max_size=60))
def test_where_over_missing_strings_binds_and_sees_strings_changed_in_place(case, fold, draws):
    t, d = case
    ts = _text_type(t, "string")
    nd = len(R.parse_type(t).dims)
    p = lazyk.placeholder("s", ts)
    hit = lazyk.where(p == _text(1, "string"), lazyk.str_len(p), 0)
    k = lazyk.compile(hit.sum(axis=-1) if fold else hit)
    s = lazyk.array(_text(d, "string"), type=ts)

    def lens(data):
        if isinstance(data, list):
            return [lens(x) for x in data]
        return None if data is None else len(_text(data, "string"))

    def ref(data):
        X = R.array(data, t)
        w = R.where(R.elementwise("equal", X, 1), R.array(lens(data), t), 0)
        return R.reduce("sum", w, -1) if fold else w
    e1 = _changed(d, nd, iter(draws * 20), t.split(" * ")[-1].startswith("?"))

    def change():  # new strings and missing strings, written element by element
        new = _text(e1, "string")
        for at in _paths(new, nd):
            v = new
            for i in at:
                v = v[i]
            s[at] = v
    got = check_bound(lambda: ref(d), lambda out: k.bind(out, s), scalars=True,
                      again=(change, lambda: ref(e1), lambda out: k(s, out=out)))
    assert got in ("match", "raises"), got
