"""Awkward's `mask`, `nan_to_none`, `drop_none`, `singletons`, `ptp` and nan-reductions, over
every ragged layout (missing values and rows, empty rows and arrays), against Awkward."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lazyk
from tests import ragged_strategies as S

ak = pytest.importorskip("awkward")

QVAR = tuple(t for t in S.QVAR_LAYOUTS if not t.startswith("?"))  # (rows of rows)
LAYOUTS = S.LAYOUTS + QVAR + ("N * var * ?var * T",)
NAN_REDUCTIONS = ("nansum", "nanprod", "nanmin", "nanmax", "nanmean", "nanstd", "nanvar",
                  "nanargmin", "nanargmax")


def plain(v):
    """Nested lists with NaN as a string (NaN != NaN) and floats to 6 digits (sums
    reassociate; float32 means stay float32, as NumPy, where Awkward gives float64)."""
    if isinstance(v, list):
        return [plain(u) for u in v]
    if isinstance(v, dict):
        return {k: plain(u) for k, u in v.items()}
    if isinstance(v, (float, np.floating)):
        return "nan" if math.isnan(v) else float(f"{float(v):.6g}")  # (float32 means)
    if isinstance(v, np.integer):
        return int(v)
    return v


def both(case):
    x = lazyk.array(case[1], type=case[0])
    # (Awkward's of the same type: empty lists are not `unknown`; one outer list as a row)
    return x, lazyk.to_awkward(x[None])[0] if case[0].startswith("var") else lazyk.to_awkward(x)


def listed(x):
    got = x.eval() if hasattr(x, "eval") else x
    return plain(got.to_list() if hasattr(got, "to_list") else got)


def awkward(x):
    return plain(x.to_list() if isinstance(x, ak.Array) else x)


def same(got, fn, *args, **kw):
    """lazyk's `got` equals Awkward's `fn(*args, **kw)`, where Awkward has an answer (some
    layouts of missing lists of fixed-size lists raise inside Awkward 2.x)."""
    try:
        want = fn(*args, **kw)
    except (AttributeError, IndexError):
        return True
    return listed(got) == awkward(want)


@given(S.ragged(layouts=LAYOUTS, dtypes=S.NUMERIC, nan=True), st.booleans())
def test_mask_of_values_and_of_rows(case, valid_when):
    x, a = both(case)
    m = x > 1
    assert listed(lazyk.mask(x, m, valid_when=valid_when)) == \
        awkward(ak.mask(a, a > 1, valid_when=valid_when))
    if x.ndim > 1 and not x.type.missing_rows:  # a mask of the outer rows
        rows = lazyk.num(x, axis=1) > 1
        assert listed(lazyk.mask(x, rows)) == awkward(ak.mask(a, ak.num(a, axis=1) > 1))


@given(S.ragged(layouts=LAYOUTS, dtypes=("float64", "float32"), nan=True))
def test_nan_to_none_and_drop_none_at_every_axis(case):
    x, a = both(case)
    assert listed(lazyk.nan_to_none(x)) == awkward(ak.nan_to_none(a))
    y, b = lazyk.nan_to_none(x), ak.nan_to_none(a)
    parts = str(y.type).split(" * ")
    for axis in [None] + list(range(x.ndim)) + [-1]:
        if axis is not None and not parts[axis % x.ndim + 1].startswith("?"):
            continue  # (nothing missing there: Awkward 2.x drops the values' None there)
        assert same(lazyk.drop_none(y, axis=axis), ak.drop_none, b, axis=axis), axis
    assert "?" not in str(lazyk.drop_none(y).type).split(" * ")[-1]  # no value is missing


@given(S.ragged(layouts=QVAR + ("N * var * T", "var * var * T"), dtypes=S.NUMERIC))
def test_singletons_at_every_axis(case):
    x, a = both(case)
    for axis in range(x.ndim):
        assert listed(lazyk.singletons(x, axis=axis)) == \
            awkward(ak.singletons(a, axis=axis)), axis
    first = lazyk.firsts(x, axis=-1) if x.ndim > 1 else x
    assert listed(lazyk.singletons(first, axis=-1)) == \
        awkward(ak.singletons(ak.firsts(a, axis=-1) if x.ndim > 1 else a, axis=-1))


@given(S.ragged(layouts=LAYOUTS, dtypes=S.NUMERIC, nan=True), st.sampled_from(NAN_REDUCTIONS),
       st.booleans())
def test_nan_reductions_over_the_last_axis_and_all(case, name, keepdims):
    x, a = both(case)
    for axis in (-1, None):
        if keepdims and (axis is None or x.type.missing_rows):
            continue  # (a missing row kept: [None] in lazyk, None in Awkward; README)
        got = getattr(lazyk, name)(x, axis=axis, keepdims=keepdims)
        assert same(got, getattr(ak, name), a, axis=axis, keepdims=keepdims), (name, axis)


@given(S.ragged(layouts=LAYOUTS, dtypes=("int64", "int32", "float64")), st.booleans())
def test_ptp_over_the_last_axis_and_all(case, mask_identity):
    x, a = both(case)
    kw = {"mask_identity": mask_identity}
    assert same(lazyk.ptp(x, axis=-1, **kw), ak.ptp, a, axis=-1, **kw)
    assert same(lazyk.ptp(x, **kw), ak.ptp, a, axis=None, **kw)


def test_examples_records_and_fused_work():
    x = lazyk.array([[1.0, 2.0, np.nan], [], [4.0]])
    assert lazyk.mask(x, lazyk.array([True, False, True])).eval().to_list()[1] is None
    jets = lazyk.zip({"pt": lazyk.array([[50.0, 20.0, 31.0], [], [35.0]]),
                      "eta": lazyk.array([[0.1, 2.0, -0.5], [], [-1.0]])})
    good = lazyk.mask(jets, jets.pt > 30)
    assert good.eval().to_list()[0][1] is None
    assert lazyk.sum(good.pt, axis=1, skipna=True).eval().to_list() == [81.0, 0.0, 35.0]
    assert lazyk.drop_none(good).eta.eval().to_list() == [[0.1, -0.5], [], [-1.0]]
    # selection, NaN and the reduction after them in one expression, and compiled
    p = lazyk.placeholder("x", "N * var * float64")
    f = lazyk.compile(lazyk.nanmean(lazyk.mask(p, p > 1), axis=1))
    assert f(x).to_list() == [2.0, None, 4.0]
    g = lazyk.compile(lazyk.drop_none(lazyk.nan_to_none(p)))
    assert g(x).to_list() == [[1.0, 2.0], [], [4.0]]
    assert lazyk.singletons(lazyk.argmax(lazyk.array([[1, 5], [], [2]]), axis=1)).eval() \
        .to_list() == [[1], [], [0]]
    # NumPy data: a dense mask gives missing values
    assert lazyk.mask(np.arange(4.0), np.arange(4) % 2 == 0).eval().to_list() == \
        [0.0, None, 2.0, None]


def test_bad_input_is_named():
    x = lazyk.array([[1.0, 2.0], [3.0]])
    with pytest.raises(lazyk.DTypeError, match="mask: the mask must be booleans, not 2 \\* var \\* float64"):
        lazyk.mask(x, x)
    with pytest.raises(TypeError, match="valid_when must be True or False"):
        lazyk.mask(x, x > 1, valid_when="yes")
    with pytest.raises(lazyk.ShapeError, match="row 0"):
        lazyk.mask(x, lazyk.array([[True, False, True], [False]])).eval()
    with pytest.raises(lazyk.ShapeError, match="a mask of 0 dims"):
        lazyk.mask(x, True)
    with pytest.raises(lazyk.ShapeError, match="a mask of 3 dims"):
        lazyk.mask(x, lazyk.array([[[True]], [[False]]]))
    with pytest.raises(lazyk.ShapeError, match="no dims to mask"):
        lazyk.mask(5.0, True)
    with pytest.raises(TypeError, match="mask_identity must be True or False"):
        lazyk.ptp(x, mask_identity="no")
    r = lazyk.array([{"a": 1, "b": [1.0]}, {"a": 2, "b": []}])
    with pytest.raises(lazyk.NotSupportedError, match="singletons of records with list"):
        lazyk.singletons(lazyk.mask(r, lazyk.array([True, False])))
    with pytest.raises(np.exceptions.AxisError, match="drop_none: axis 5"):
        lazyk.drop_none(x, axis=5)
    with pytest.raises(np.exceptions.AxisError, match="singletons: axis 2"):
        lazyk.singletons(x, axis=2)
    for fn in (lazyk.ptp, lazyk.nansum, lazyk.nanargmax):
        with pytest.raises(lazyk.DTypeError, match="of 1 \\* string: numbers only"):
            fn(lazyk.array(["a"]))
    with pytest.raises(TypeError, match="builtins.object"):
        lazyk.mask(object(), True)


def test_weighted_mean_as_awkward_and_numpy():
    d, w = [[1.0, 3.0], [], [2.0, None, 4.0]], [[3.0, 1.0], [], [1.0, 1.0, 2.0]]
    x, a = lazyk.array(d), ak.Array(d)
    for kw in ({"axis": 1}, {"axis": -1, "keepdims": True}):
        got = lazyk.mean(x, weight=lazyk.array(w), skipna=True, **kw)
        assert listed(got) == awkward(ak.mean(a, weight=ak.Array(w), **kw))
    got = lazyk.mean(x, weight=lazyk.array(w), skipna=True).eval().to_list()
    assert plain(got) == plain(float(ak.mean(a, weight=ak.Array(w))))
    v, wv = np.arange(4.0), np.array([1.0, 0.0, 0.0, 1.0])
    assert lazyk.mean(v, weight=wv).eval().to_list() == np.average(v, weights=wv)
    with pytest.raises(lazyk.NotSupportedError, match="weight= and skipnan="):
        lazyk.mean(x, weight=x, skipnan=True)
    n = [[1.0, np.nan, 3.0], [], [np.nan], [2.0, None, 4.0]]
    wn = [[1.0, 1.0, 2.0], [], [3.0], [1.0, 5.0, 3.0]]
    assert lazyk.nanmean(np.array([1.0, 2.0]), axis=0, weight=np.array([np.nan, 1.0])) \
        .eval().to_list() == 2.0  # (a NaN weight: its pair left out, as Awkward's)
    for kw in ({"axis": 1}, {"axis": 1, "keepdims": True}, {}):
        got = lazyk.nanmean(lazyk.array(n), weight=lazyk.array(wn), **kw)
        assert plain(listed(got)) == plain(awkward(ak.nanmean(ak.Array(n), weight=ak.Array(wn),
                                                              **kw)))


def test_masks_of_masks_constant_conditions_and_scalars():
    x = lazyk.array([[1.0, 5.0], [2.0], [7.0, 0.5, 3.0]])
    a = lazyk.to_awkward(x)
    want = ak.mask(a * 2, ak.mask(a > 0, a > 2)).to_list()
    assert lazyk.mask(x * 2, lazyk.mask(x > 0, x > 2)).eval().to_list() == want
    p = lazyk.placeholder("x", "N * var * float64")
    assert lazyk.compile(lazyk.mask(p * 2, lazyk.mask(p > 0, p > 2)))(x).to_list() == want
    f = lazyk.array([[1.0, 5.0]])  # (a fixed dim stays fixed: the mask of values is a where)
    got = lazyk.mask(f, lazyk.mask(f > 0, f > 2)).eval()
    assert got.to_list() == [[None, 5.0]] and str(got.type) == "1 * 2 * ?float64"
    # a constant condition takes its own branch's missing values only, as NumPy's where
    miss = lazyk.array(None, type="?float64")
    assert lazyk.where(False, miss, np.array([3.0, 4.0])).eval().to_list() == [3.0, 4.0]
    assert lazyk.where(True, miss, np.array([3.0, 4.0])).eval().to_list() == [None, None]
    assert lazyk.nan_to_none(3.0).eval().to_list() == 3.0
    assert lazyk.nanmax(np.float64(3.0)).eval().to_list() == 3.0
    assert lazyk.ptp(7).eval().to_list() == 0
    c = [[1 + 2j, 3 - 1j], [], [2j]]  # (complex: NumPy's order, real part first)
    for kw in ({}, {"mask_identity": False}):
        assert lazyk.ptp(lazyk.array(c), axis=1, **kw).eval().to_list() == \
            ak.ptp(ak.Array(c), axis=1, **kw).tolist()
    assert lazyk.ptp(np.array([1 + 2j, 3 - 1j])).eval().to_list() == np.ptp([1 + 2j, 3 - 1j])
    assert lazyk.imag(lazyk.array([[1.0, None]])).eval().to_list() == [[0.0, None]]


@pytest.mark.parametrize("name", ["nanmax", "nanmin", "nansum", "nanprod", "nanmean"])
def test_nan_reductions_of_values_that_cannot_be_missing_skip_nan_in_the_fold(name):
    """No missing value is made of the data (`?float64` over all of it): the fold skips
    NaN; a list of NaN only is None (the identity for sum and prod), as Awkward's."""
    d = [[1.0, np.nan, 3.0], [], [np.nan], [2.5, -1.0]]
    for x in (lazyk.array(d), lazyk.array(np.array([[1.0, np.nan], [np.nan, np.nan]]))):
        got = getattr(lazyk, name)(x, axis=1)
        graph = got.explain().split("== graph as built")[1].split("== ")[0]
        assert str(x.type).replace("float64", "?float64") not in graph
        assert plain(listed(got)) == awkward(getattr(ak, name)(ak.Array(x.to_list()), axis=1))
        assert plain(listed(getattr(lazyk, name)(x))) == \
            awkward(getattr(ak, name)(ak.Array(x.to_list()), axis=None))
    n = np.array([[1.0, np.nan], [3.0, 4.0]])  # (no axis: each value, NaN missing)
    for data in (n.T, np.asfortranarray(n)):
        want = [[None if v != v else v for v in row] for row in data.tolist()]
        assert getattr(lazyk, name)(data, axis=()).eval().to_list() == \
            (want if name not in ("nansum", "nanprod") else
             [[0.0 if v is None and name == "nansum" else 1.0 if v is None else v
               for v in row] for row in want])


def test_drop_none_of_data_that_cannot_be_missing_selects_nothing():
    x = lazyk.array([[1.0, 2.0], [], [3.0]])
    for e in (x, x * 2):
        for axis in (None, 0, 1):
            got = lazyk.drop_none(e, axis=axis)
            assert "select" not in got.explain().split("== LLVM")[0]  # (no selection made)
            assert got.eval().to_list() == ak.drop_none(ak.Array(e.eval().to_list()),
                                                         axis=axis).to_list()


def test_dropped_values_keep_their_dtype_and_records_strings_pass_through():
    b = lazyk.array([[True, None, False]])
    got = lazyk.drop_none(b).eval()
    assert got.to_list() == [[True, False]] and str(got.type) == "1 * var * bool"
    assert lazyk.singletons(b, axis=1).eval().to_list() == [[[True], [], [False]]]
    j = lazyk.zip({"pt": lazyk.array([[1.0, 2.0], []])})
    assert lazyk.drop_none(j).eval().to_list() == [[{"pt": 1.0}, {"pt": 2.0}], []]
    s = lazyk.array([["a", None], []])
    assert lazyk.drop_none(s).eval().to_list() == [["a"], []]
    assert lazyk.singletons(s, axis=1).eval().to_list() == [[["a"], []], []]


def test_weights_never_stretch_the_values():
    x = lazyk.array([[1.0], [2.0]], type="2 * var * float64")
    with pytest.raises(lazyk.ShapeError, match="would stretch rows of one value"):
        lazyk.mean(x, weight=lazyk.array([[1.0, 1.0, 1.0], [1.0]]))
    with pytest.raises(lazyk.ShapeError, match="would stretch the values"):
        lazyk.mean(np.array([1.0, 2.0, 3.0]), weight=np.array([[1.0], [0.0], [0.0]]))
    p = lazyk.placeholder("p", "N * var * float64")
    with pytest.raises(lazyk.NotSupportedError, match="rows of their own"):
        lazyk.mean(p, weight=lazyk.placeholder("q", "N * var * float64"))
    j = lazyk.array([[1.0, 3.0], [], [2.0, 4.0]])
    assert lazyk.mean(j, weight=j * 0 + 2, axis=1).eval().to_list()[0] == 2.0  # (one structure)
    per_event = lazyk.array([1.0, 2.0, 3.0])[:, None]  # (weights of one per row stretch)
    assert lazyk.mean(j, weight=per_event, axis=1).eval().to_list()[2] == 3.0


def test_std_and_var_of_fixed_values_count_them_from_the_shape():
    """Over fixed dims of values that cannot be missing the count is the shape's: two
    folds (the sum, the squared deviations) and the finish, no kernel counting values."""
    x = np.random.default_rng(3).standard_normal((50, 40)).astype(np.float32)
    for axis in (None, 0, (0, 1)):
        e = lazyk.std(lazyk.array(x), axis=axis, ddof=1)
        assert "fuse_elementwise: 3 kernel(s)" in e.explain()
        got = np.asarray(lazyk.evaluate(e))
        want = np.std(x, axis=axis, ddof=1)
        assert got.dtype == want.dtype and np.allclose(got, want, rtol=1e-5)
    # values that may be missing: counted (None left out under skipna)
    r = lazyk.array([[1.0, None, 3.0], [2.0, 2.0, None]])
    assert lazyk.var(r, axis=1, skipna=True).to_list() == [1.0, 0.0]


def test_nan_reductions_of_fixed_values_run_no_loop_nest(monkeypatch):
    """`nanmax`, `nanmin`, `nanmean` over NumPy data are `where(count > 0, fold, None)`: the count
    and the fold run as flat (threaded) kernels and the result takes its missing values
    from the count, no loop nest (its Python cost was ~150 us a call)."""
    from lazyk.runtime import ragged

    def refuse(*a, **k):
        raise AssertionError("a loop nest ran")
    x = np.random.default_rng(4).standard_normal((30, 20))
    x[:, 3] = np.nan
    x[5, :7] = np.nan
    monkeypatch.setattr(ragged, "evaluate_nest", refuse)
    for name in ("nanmax", "nanmin", "nanmean"):
        for axis in (None, 0, 1):
            got = getattr(lazyk, name)(x, axis=axis, keepdims=axis == 1).eval()
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                want = getattr(np, name)(x, axis=axis, keepdims=axis == 1)
            assert str(got.type).endswith("?float64")
            assert [None if v is None else round(v, 9) for v in np.ravel(got.to_list())] == \
                [None if np.isnan(v) else round(v, 9) for v in np.ravel(want)]


@pytest.mark.parametrize("name", ["var", "std"])
def test_weighted_var_and_std_as_awkward(name):
    x = [[1.0, 2.0, 4.0], [3.0], [], [2.0, 2.0], [1.0, None, 5.0]]
    w = [[1.0, 3.0, 0.5], [2.0], [], [1.0, 1.0], [2.0, 1.0, 1.0]]
    lx, lw, ax, aw = lazyk.array(x), lazyk.array(w), ak.Array(x), ak.Array(w)
    lazy, eager = getattr(lazyk, name), getattr(ak, name)
    for kw in ({"axis": 1}, {"axis": 1, "ddof": 1}, {"axis": 1, "keepdims": True},
               {"axis": None}):
        got = lazy(lx, weight=lw, skipna=True, **kw).eval()
        want = eager(ax, weight=aw, **kw)
        assert_close(got.to_list(), ak.to_list(want))
        assert str(got.type).endswith("float64")
    per_event = lazy(lx, axis=1, weight=lazyk.array([1.0, 2.0, 3.0, 4.0, 5.0])[:, None],
                     skipna=True).eval()
    assert_close(per_event.to_list(), ak.to_list(eager(ax, axis=1, weight=ak.Array(
        [1.0, 2.0, 3.0, 4.0, 5.0]))))
    ints = lazy(lazyk.array([[1, 2, 4]]), axis=1, weight=lazyk.array([[1, 3, 1]])).eval()
    assert_close(ints.to_list(), ak.to_list(eager(ak.Array([[1, 2, 4]]), axis=1,
                                                   weight=ak.Array([[1, 3, 1]]))))
    with pytest.raises(lazyk.ShapeError, match=f"{name}: the weights"):
        lazy(lazyk.array([[1.0], [3.0]]), axis=1, weight=lazyk.array([[1.0, 2.0], [1.0]]))


def assert_close(got, want):
    """Equal structure (lists and None) and values within rounding (NaN equal to NaN)."""
    flat = lambda v: [i for r in v for i in flat(r)] if isinstance(v, list) else [v]  # noqa: E731
    shape = lambda v: [shape(r) for r in v] if isinstance(v, list) else v is None  # noqa: E731
    g, w = flat(got), flat(want)
    assert shape(got) == shape(want), (got, want)
    assert len(g) == len(w) and all(
        (a is None and b is None) or (a is not None and b is not None and
                                      (math.isclose(a, b, rel_tol=1e-12) or a != a and b != b))
        for a, b in zip(g, w)), (got, want)
