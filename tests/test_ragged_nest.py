"""Loop-nest kernels (var dims at any depth) against the plain-Python reference of the seed
rules: values, dtypes, types, missing values, errors; bad offsets caught in the kernel;
one compile per structure; the thread split."""
from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
from lazyk.kernel import nest as nest_kernel
from tests import ragged_reference as R
from tests.ragged_strategies import ragged, ragged_pair

NEST = ("var * T", "var * var * T", "N * var * T", "N * var * var * T", "3 * var * 4 * T",
        "var * var * var * T")


def same(a, b) -> bool:
    """Nested lists equal, NaN equal to NaN, floats to a relative 1e-6."""
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and \
            all(same(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b or \
            math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)
    return a == b


def check(got, ref):
    got = got.eval() if isinstance(got, lazyk.Expr) else got
    assert str(got.type) == str(ref.type), (str(got.type), str(ref.type))
    assert same(got.to_list(), ref.data), (got.to_list(), ref.data)


def both(t, data):
    return lazyk.array(data, type=t), R.array(data, t)


@settings(max_examples=30, deadline=None)
@given(ragged_pair(layouts=NEST, broadcast=True, option_rows=False),
       st.sampled_from(["add", "multiply", "subtract", "maximum"]))
def test_elementwise_pairs(pair, op):
    ta, da, tb, db = pair
    a, ra = both(ta, da)
    b, rb = both(tb, db)
    fn = {"add": lambda x, y: x + y, "multiply": lambda x, y: x * y,
          "subtract": lambda x, y: x - y, "maximum": lazyk.maximum}[op]
    try:
        ref = R.elementwise(op, ra, rb)
    except lazyk.ShapeError:
        with pytest.raises(lazyk.ShapeError, match="row"):
            fn(a, b).eval()
        return
    check(fn(a, b), ref)


@settings(max_examples=30, deadline=None)
@given(ragged_pair(layouts=NEST, broadcast=True, option_rows=False), st.booleans())
def test_where_takes_the_missing_state_of_the_branch_taken(pair, reduce):
    ta, da, tb, db = pair
    a, ra = both(ta, da)
    b, rb = both(tb, db)
    try:
        ref = R.where(R.elementwise("greater", ra, 0), ra, rb)
        if reduce:
            ref = R.reduce("sum", ref, axis=-1)
    except lazyk.ShapeError:
        with pytest.raises(lazyk.ShapeError):
            lazyk.where(a > 0, a, b).eval()
        return
    got = lazyk.where(a > 0, a, b)
    check(got.sum(axis=-1) if reduce else got, ref)


@settings(max_examples=30, deadline=None)
@given(ragged(layouts=NEST, dtypes=("float64", "int64", "int32", "bool"), option_rows=False),
       st.sampled_from(["sum", "prod", "min", "max", "any", "all", "mean"]),
       st.booleans(), st.booleans())
def test_reduce_last_axis(arr, op, skipna, keepdims):
    t, data = arr
    a, ra = both(t, data)
    kw = {"skipna": True} if skipna else {}
    try:
        ref = R.reduce(op, ra, axis=-1, keepdims=keepdims, skipna=skipna)
    except ValueError as e:
        assert "zero-size" in str(e)
        with pytest.raises(ValueError, match="zero-size"):
            getattr(a, op)(axis=-1, keepdims=keepdims, **kw).eval()
        return
    got = getattr(a, op)(axis=-1, keepdims=keepdims, **kw).eval()
    if not isinstance(got, lazyk.Array):
        got = lazyk.array(got)
    check(got, ref)


@settings(max_examples=30, deadline=None)
@given(ragged(layouts=NEST, dtypes=("float64", "int64", "bool"), option_rows=False),
       st.sampled_from(["sum", "prod", "min", "max", "any", "all", "mean"]),
       st.booleans(), st.booleans())
def test_reduce_every_axis(arr, op, skipna, keepdims):
    t, data = arr
    a, ra = both(t, data)
    kw = {"skipna": True} if skipna else {}
    try:
        ref = R.reduce(op, ra, axis=None, keepdims=keepdims, skipna=skipna)
    except ValueError as e:
        assert "zero-size" in str(e)
        with pytest.raises(ValueError, match="zero-size"):
            getattr(a, op)(keepdims=keepdims, **kw).eval()
        return
    got = getattr(a, op)(keepdims=keepdims, **kw).eval()
    if not isinstance(got, lazyk.Array):
        got = lazyk.array(got)
    check(got, ref)


@settings(max_examples=40, deadline=None)
@given(ragged(layouts=NEST, dtypes=("float64", "int64", "bool"), option_rows=False),
       st.sampled_from(["sum", "prod", "min", "max", "any", "all", "mean"]),
       st.booleans(), st.booleans(), st.data())
def test_reduce_one_middle_axis(arr, op, skipna, keepdims, data):
    t, values = arr
    a, ra = both(t, values)
    nd = ra.type.ndim
    if nd < 2:
        return
    axis = data.draw(st.integers(0, nd - 2))
    kw = {"skipna": True} if skipna else {}
    try:
        ref = R.reduce(op, ra, axis=axis, keepdims=keepdims, skipna=skipna)
    except ValueError as e:  # ShapeError (rows that do not fold) is a ValueError too
        want = lazyk.ShapeError if isinstance(e, lazyk.ShapeError) else ValueError
        with pytest.raises(want, match="fold together" if want is lazyk.ShapeError
                           else "zero-size"):
            getattr(a, op)(axis=axis, keepdims=keepdims, **kw).eval()
        return
    check(getattr(a, op)(axis=axis, keepdims=keepdims, **kw).eval(), ref)


@settings(max_examples=30, deadline=None)
@given(ragged(layouts=NEST, dtypes=("float64", "int32", "bool"), option_rows=False),
       st.sampled_from(["sum", "prod", "any", "all", "min", "mean"]),
       st.booleans(), st.booleans(), st.data())
def test_reduce_several_axes(arr, op, skipna, keepdims, data):
    t, values = arr
    a, ra = both(t, values)
    nd = ra.type.ndim
    if nd < 3:
        return
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, nd - 1), min_size=2,
                                          max_size=nd - 1))))
    kw = {"skipna": True} if skipna else {}
    try:
        ref = R.reduce(op, ra, axis=axes, keepdims=keepdims, skipna=skipna)
    except ValueError as e:  # ShapeError too
        want = lazyk.ShapeError if isinstance(e, lazyk.ShapeError) else ValueError
        with pytest.raises(want):
            getattr(a, op)(axis=axes, keepdims=keepdims, **kw).eval()
        return
    check(getattr(a, op)(axis=axes, keepdims=keepdims, **kw).eval(), ref)


@settings(max_examples=20, deadline=None)
@given(ragged(layouts=NEST, dtypes=("float64",), options=False))
def test_minmax_initial(arr):
    t, data = arr
    a, ra = both(t, data)
    check(a.max(axis=-1, initial=0.5).eval(), R.reduce("max", ra, axis=-1, initial=0.5))
    check(a.min(axis=-1, initial=0.5).eval(), R.reduce("min", ra, axis=-1, initial=0.5))


def test_forms_refused_before_now_run():
    a = lazyk.array([[[1., 2.], [3.]], [[4.]]], type="2 * var * var * float64")
    assert (a * 2).eval().to_list() == [[[2., 4.], [6.]], [[8.]]]
    assert str((a * 2).eval().type) == "2 * var * var * float64"
    assert a.sum(axis=-1).eval().to_list() == [[3., 3.], [4.]]
    b = lazyk.array([[[1, 2, 3, 4]], [[5, 6, 7, 8], [1, 1, 1, 1]]], type="2 * var * 4 * int32")
    got = (b + np.arange(4, dtype=np.int32)).eval()
    assert str(got.type) == "2 * var * 4 * int32"
    assert got.to_list() == [[[1, 3, 5, 7]], [[5, 7, 9, 11], [1, 2, 3, 4]]]
    c = lazyk.array([[[[1.], []]], [[[2., 3.]]]], type="var * var * var * var * float64")
    assert c.sum(axis=-1).eval().to_list() == [[[1., 0.]], [[5.]]]
    assert (c * c).eval().to_list() == [[[[1.], []]], [[[4., 9.]]]]


def test_seed_broadcasting():
    x = lazyk.array([[1, 2], [3]], type="2 * var * int64")
    y = lazyk.array([[4], [5, 6, 7]], type="2 * var * int64")
    assert (x + y).eval().to_list() == [[5, 6], [8, 9, 10]]
    # fixed n against var: every row n or 1, gives fixed n
    z = (x + np.array([10, 20])).eval()
    assert str(z.type) == "2 * 2 * int64" and z.to_list() == [[11, 22], [13, 23]]
    with pytest.raises(lazyk.ShapeError, match=r"row 1: operand 0 has length 3"):
        (y + np.array([10, 20])).eval()
    with pytest.raises(lazyk.ShapeError, match=r"row \[0, 1\]"):
        a = lazyk.array([[[1., 2.], [3., 4.]]], type="1 * var * var * float64")
        b = lazyk.array([[[1., 2.], [3., 4., 5.]]], type="1 * var * var * float64")
        (a + b).eval()


def test_centering_with_keepdims():
    rng = np.random.default_rng(3)
    lens = rng.integers(0, 6, 50)
    off = np.concatenate([[0], np.cumsum(lens)])
    x = lazyk.from_offsets(off, rng.standard_normal(off[-1]))
    got = (x - x.mean(axis=-1, keepdims=True)).eval()
    assert str(got.type) == "50 * var * float64"
    for row, want in zip(got.to_list(), x.to_list()):
        assert np.allclose(row, np.asarray(want) - np.mean(want))


def test_nested_from_offsets_sum():
    rng = np.random.default_rng(4)
    outer = np.concatenate([[0], np.cumsum(rng.integers(0, 5, 40))])
    inner = np.concatenate([[0], np.cumsum(rng.integers(0, 5, outer[-1]))]).astype(np.int32)
    content = rng.standard_normal(inner[-1])
    x = lazyk.from_offsets(outer, lazyk.from_offsets(inner, content))
    got = x.sum(axis=-1).eval()
    want = [[float(np.sum(r)) for r in row] for row in x.to_list()]
    assert str(got.type) == "40 * var * float64"
    assert same(got.to_list(), want)
    got = (x * 2 + 1).eval()
    assert same(got.to_list(), [[[2 * v + 1 for v in r] for r in row] for row in x.to_list()])


def test_empty_arrays():
    a = lazyk.array([], type="0 * var * var * float64")
    assert (a * 2).eval().to_list() == []
    assert a.sum(axis=-1).eval().to_list() == []
    b = lazyk.array([[], [[]]], type="2 * var * var * float64")
    assert (b + 1).eval().to_list() == [[], [[]]]
    assert b.sum(axis=-1).eval().to_list() == [[], [0.0]]


def test_one_compile_for_many_sizes():
    def run(n):
        rng = np.random.default_rng(n)
        outer = np.concatenate([[0], np.cumsum(rng.integers(0, 4, n))])
        inner = np.concatenate([[0], np.cumsum(rng.integers(0, 4, outer[-1]))])
        x = lazyk.from_offsets(outer, lazyk.from_offsets(inner, rng.standard_normal(inner[-1])))
        return (x * 3.0).sum(axis=-1).eval()
    run(5)
    before = nest_kernel.nest_stats["compiles"]
    for n in (1, 7, 100, 1000):
        run(n)
    assert nest_kernel.nest_stats["compiles"] == before


def test_thread_split_same_result(monkeypatch):
    rng = np.random.default_rng(5)
    lens = rng.integers(0, 20, 3000)
    off = np.concatenate([[0], np.cumsum(lens)])
    x = lazyk.from_offsets(off, rng.standard_normal(off[-1]))
    y = lazyk.from_offsets(off, rng.standard_normal(off[-1]))
    inner = lazyk.from_offsets(np.concatenate([[0], np.cumsum(rng.integers(0, 4, 300))]),
                               x)
    outer = np.concatenate([[0], np.cumsum(rng.integers(0, 5, 400))])
    eq = lazyk.from_offsets(outer, lazyk.from_offsets(np.arange(0, 3 * outer[-1] + 1, 3),
                                                      rng.standard_normal(3 * outer[-1])))
    monkeypatch.setattr(nest_kernel, "MIN_PART", 64)
    old = lazyk.get_num_threads()
    try:
        out = {}
        for t in (1, 2):
            lazyk.set_num_threads(t)
            out[t] = [(x * 2 + y).sum(axis=-1).eval().to_list(),
                      (x - x.mean(axis=-1, keepdims=True)).eval().to_list(),
                      (inner * 2).eval().to_list(), inner.max(axis=-1, initial=0).eval().to_list(),
                      eq.sum(axis=1).eval().to_list(), inner.sum().eval().to_list()]
    finally:
        lazyk.set_num_threads(old)
    assert all(same(a, b) for a, b in zip(out[1], out[2]))


def test_thread_split_with_a_broadcast_outer_dim(monkeypatch):
    monkeypatch.setattr(nest_kernel, "MIN_PART", 4)
    old = lazyk.get_num_threads()
    lazyk.set_num_threads(2)
    try:
        x = lazyk.from_offsets(np.array([0, 3]), np.arange(3.0))       # 1 * var: broadcasts
        y = lazyk.from_offsets(np.arange(0, 3001, 3), np.ones(3000))   # 1000 * var
        assert (x + y).sum(axis=-1).eval().to_list() == [6.0] * 1000
        assert (y * x).eval().to_list() == [[0.0, 1.0, 2.0]] * 1000
    finally:
        lazyk.set_num_threads(old)


def test_several_axes():
    a = lazyk.array([[[1., 2.], [3.]], [[4.]]], type="2 * var * var * float64")
    assert a.sum(axis=1).eval().to_list() == [[4.0, 5.0], [4.0]]  # [3] stretches
    assert a.sum(axis=(1, 2)).eval().to_list() == [6.0, 4.0]
    assert a.mean(axis=(1, 2)).eval().to_list() == [2.0, 4.0]


BAD_OFFSETS = textwrap.dedent("""
    import numpy as np, lazyk
    off = np.array([0, 2, 2, 5, 6])
    x = lazyk.from_offsets(off, np.arange(6.0))
    off[2] = 10 ** 12          # corrupt in place, after the construction check
    for f in (lambda: x.sum(axis=-1), lambda: x * 2, lambda: x - x.mean(axis=-1, keepdims=True)):
        try:
            f().eval()
            print("NO ERROR")
        except ValueError as e:  # the arrmeta check or the kernel's (a ValueError too)
            assert "row 1" in str(e) or "row 2" in str(e), e
            print("raised")
    inner = np.array([0, 1, 3, 3], np.int32)
    y = lazyk.from_offsets(np.array([0, 2, 3]), lazyk.from_offsets(inner, np.arange(3.0)))
    inner[1] = -7
    for f in (lambda: y.sum(axis=-1), lambda: y + y):
        try:
            f().eval()
            print("NO ERROR")
        except lazyk.ArrayConstructionError as e:
            assert "row [0" in str(e), e
            print("raised")
""")


def test_bad_offsets_raise_in_the_kernel(tmp_path):
    r = subprocess.run([sys.executable, "-c", BAD_OFFSETS], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["raised"] * 5, r.stdout


FUZZ_OFFSETS = textwrap.dedent("""
    import numpy as np, lazyk
    rng = np.random.default_rng(7)
    outcomes = {"ok": 0, "raised": 0}
    for it in range(150):
        outer = np.concatenate([[0], np.cumsum(rng.integers(0, 4, 6))])
        inner = np.concatenate([[0], np.cumsum(rng.integers(0, 4, outer[-1]))])
        inner = inner.astype(rng.choice([np.int32, np.int64]))
        x = lazyk.from_offsets(outer, lazyk.from_offsets(inner, rng.standard_normal(inner[-1])))
        y = lazyk.from_offsets(outer, lazyk.from_offsets(inner, np.ones(inner[-1])))
        which = outer if rng.integers(2) else inner
        which[rng.integers(len(which))] = rng.choice([-5, -1, 10 ** 9, 3, 2 ** 31 - 1])
        for f in (lambda: x.sum(axis=-1), lambda: x * 2 + y, lambda: x.max(axis=1, initial=0),
                  lambda: x.sum(), lambda: x.prod(axis=0), lambda: (x - y).mean(axis=-1)):
            try:
                f().eval()
                outcomes["ok"] += 1
            except ValueError:  # ArrayConstructionError, ShapeError
                outcomes["raised"] += 1
    print(outcomes["ok"] > 0 and outcomes["raised"] > 0, outcomes)
""")


def test_corrupted_offsets_raise_never_crash():
    r = subprocess.run([sys.executable, "-c", FUZZ_OFFSETS], capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("True"), r.stdout


def test_thread_split_of_count_passes(monkeypatch):
    """N * var * var results: both count passes and the fill split over threads agree
    with one thread and with the reference."""
    rng = np.random.default_rng(11)
    data = [[[float(v) for v in rng.standard_normal(rng.integers(0, 4))]
             for _ in range(rng.integers(0, 4))] for _ in range(500)]
    x = lazyk.array(data, type="500 * var * var * float64")
    want = [[[v * 2 + 1 for v in row] for row in rows] for rows in data]
    monkeypatch.setattr(nest_kernel, "MIN_PART", 16)
    old = lazyk.get_num_threads()
    try:
        for t in (1, 2):
            lazyk.set_num_threads(t)
            got = (x * 2 + 1).eval()
            assert str(got.type) == "500 * var * var * float64"
            assert got.to_list() == want
    finally:
        lazyk.set_num_threads(old)


def test_min_over_an_empty_row_of_a_skipna_fold_raises_as_over_the_fold_computed_first():
    """A skipna fold over rows that are all missing gives an empty row, not a missing one
    (its type has no `?`), so a min / max over that row has no value to give and no None
    either: the ValueError naming the row, as over the fold's result computed first and
    as the reference (Awkward's None: values that may be missing, or `initial=`)."""
    x = lazyk.array([None, [[0], [None]]], type="2 * ?var * 1 * ?int32")
    t = lazyk.array([None, None], type="2 * ?var * 1 * uint8")
    inner = lazyk.prod(lazyk.maximum(-x, t), axis=0, keepdims=True, skipna=True)
    assert str(inner.type) == "1 * var * 1 * int64" and inner.eval().to_list() == [[]]
    rx = R.elementwise("maximum", R.elementwise("negative", R.array(x.to_list(), str(x.type))),
                       R.array(t.to_list(), str(t.type)))
    rin = R.reduce("prod", rx, axis=0, keepdims=True, skipna=True)
    assert str(rin.type) == "1 * var * 1 * int64" and rin.data == [[]]
    with pytest.raises(ValueError, match="zero-size"):
        R.reduce("min", rin, axis=(0, 1), skipna=True)
    for op in ("min", "max"):
        for of in (inner, inner.eval(), inner + 0):
            e = getattr(lazyk, op)(of, axis=(0, 1), skipna=True)
            assert str(e.type) == "1 * int64"
            for run in (e.eval, lambda e=e: lazyk.evaluate(e), lazyk.compile(e),
                        (e + 1).eval):
                with pytest.raises(ValueError, match=rf"^zero-size row 0 in reduction {op}, "
                                   "which has no identity: pass initial=, or keep the rows"):
                    run()
        got = getattr(lazyk, op)(inner, axis=(0, 1), initial=5).eval()
        assert str(got.type) == "1 * int64" and got.to_list() == [5]
