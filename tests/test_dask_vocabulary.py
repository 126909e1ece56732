"""The ragged vocabulary on Dask collections (selection and gather within rows, row
operations that keep the rows, arg-reductions, combinations, histograms): the answer equals
one machine's whatever the partitions (row selection and flatten: tests/test_dask_selection.py)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import lazyk

pytest.importorskip("dask")
import dask.array as da  # noqa: E402

import lazyk.dask  # noqa: E402

DATA = {"var": [[0.5, 3.0], [], [2.0, 7.5, 4.0], [5.0], [], [6.0, -1.0, 8.0], [9.0, 1.0]],
        "?var": [[0.5, 3.0], [], [2.0, 7.5, 4.0], [5.0], None, [6.0, -1.0, 8.0], [9.0, 1.0]]}


def both(rows_per_part: int, kind: str = "?var"):
    x = lazyk.array(DATA[kind], type=f"7 * {kind} * float64")
    return x, lazyk.dask.from_ragged(x, rows_per_part)


def values(got):
    return got.to_list() if hasattr(got, "to_list") else got.tolist()


WORK = {
    "num": lambda x: lazyk.num(x, axis=1),
    "select": lambda x: x[x > 2],
    "select then sum": lambda x: (x[x > 2] * 2).sum(axis=-1),
    "argmax": lambda x: lazyk.argmax(x, axis=1),
    "gather": lambda x: x[lazyk.argmin(x, axis=1, keepdims=True)],
    "firsts": lambda x: lazyk.firsts(x),
    "pad and fill": lambda x: lazyk.fill_none(lazyk.pad_none(x, 2), 0.0),
    "is_none": lambda x: lazyk.is_none(x, axis=0),
    "local_index": lambda x: lazyk.local_index(x),
    "cumsum": lambda x: lazyk.cumsum(x, axis=1),
    "sort": lambda x: lazyk.sort(x, axis=1, ascending=False),
    "pairs": lambda x: lazyk.any(lazyk.combinations(x, 2)["0"] + 1 < lazyk.combinations(x, 2)["1"],
                                 axis=1),
    "full_like": lambda x: lazyk.full_like(x, 3),
    "leading two": lambda x: x[lazyk.argsort(x, axis=1, ascending=False)][:, :2],
    "gather then a mask": lambda x: x[lazyk.argsort(x, axis=1)][x > 2],
    "pairs of values over the leading one": lambda x: lazyk.sum(lazyk.combinations(
        x / lazyk.pad_none(x, 1)[:, 0][:, None], 2)["0"], axis=1, skipna=True),
    "mask": lambda x: lazyk.mask(x, x > 2),
    "mask rows": lambda x: lazyk.mask(x, lazyk.num(x, axis=1) > 1),
    "drop_none of a mask": lambda x: lazyk.drop_none(lazyk.mask(x, x > 2)),
    "singletons": lambda x: lazyk.singletons(lazyk.argmax(x, axis=1)),
    "ptp": lambda x: lazyk.ptp(x, axis=1),
    "nanmean of NaN": lambda x: lazyk.nanmean(lazyk.where(x > 5, np.nan, x), axis=1),
}


@pytest.mark.parametrize("kind", sorted(DATA))
@pytest.mark.parametrize("rows_per_part", [1, 3, 7])
@pytest.mark.parametrize("name", sorted(WORK))
def test_row_work_matches_one_machine(name, rows_per_part, kind):
    x, rows = both(rows_per_part, kind)
    try:
        want = WORK[name](x).eval()
    except lazyk.NotSupportedError as err:  # the same refusal on Dask
        with pytest.raises(lazyk.NotSupportedError, match=re.escape(str(err).split(" ")[0])):
            lazyk.dask.evaluate(WORK[name](rows)).compute()
        return
    got = lazyk.dask.evaluate(WORK[name](rows)).compute()
    assert values(got) == values(want), name



@pytest.mark.parametrize("kind", sorted(DATA))
def test_a_compiled_pair_search_runs_on_collections(kind):
    # the tuples planned over a placeholder, then called with a collection of rows: the
    # collection `lazyk.dask.evaluate` gives, equal to one machine's
    x, rows = both(3, kind)
    p = lazyk.placeholder("p", f"N * {kind} * float64")
    pairs = lazyk.combinations(p, 2, fields=["a", "b"])
    k = lazyk.compile(lazyk.sum(pairs.a * pairs.b, axis=1, skipna=True))
    want = lazyk.sum(lazyk.combinations(x, 2)["0"] * lazyk.combinations(x, 2)["1"], axis=1,
                     skipna=True).eval()
    assert values(k(x)) == values(want)
    assert values(k(rows).compute()) == values(want)

@pytest.mark.parametrize("rows_per_part", [2, 5])
def test_histograms_sum_the_partitions_counts(rows_per_part):
    x, rows = both(rows_per_part)
    for kw in ({}, {"weights": "w"}, {"density": True}):
        args = dict(kw)
        if "weights" in args:
            args_one = dict(weights=(x * 0.5 + 1)[x > 0])
            args = dict(weights=(rows * 0.5 + 1)[rows > 0])
        else:
            args_one = args
        got = lazyk.dask.evaluate(lazyk.histogram(rows[rows > 0], 4, (0, 8), **args))
        want = lazyk.histogram(x[x > 0], 4, (0, 8), **args_one).to_numpy()
        value = got.compute()
        assert value.dtype == want.dtype and value.shape == want.shape
        np.testing.assert_allclose(value, want, rtol=1e-12)
    a = np.arange(100) / 10
    got = lazyk.dask.evaluate(lazyk.histogram(lazyk.sin(da.from_array(a, chunks=30)), 4,
                                              (-1, 1)))
    np.testing.assert_array_equal(got.compute(), np.histogram(np.sin(a), 4, (-1, 1))[0])


def test_a_histogram_needs_its_range_up_front():
    _, rows = both(3)
    with pytest.raises(lazyk.NotSupportedError, match="needs range=.* or the bin edges"):
        lazyk.dask.evaluate(lazyk.histogram(rows, 3))


@pytest.mark.parametrize("rows_per_part", [1, 2, 3])
def test_records_under_rows_that_may_be_missing(rows_per_part):
    # (Parquet's list<struct> column with a null list)
    ev = lazyk.array([{"met": 1.0, "Jet": [{"pt": 10.0}, {"pt": 20.0}]},
                      {"met": 2.0, "Jet": None}, {"met": 3.0, "Jet": []},
                      {"met": 4.0, "Jet": [{"pt": 30.0}]}])
    d = lazyk.dask.from_ragged(ev, rows_per_part)
    assert str(d.Jet.pt.type) == "4 * ?var * float64"
    got = lazyk.dask.evaluate(lazyk.num(d.Jet.pt, axis=1)).compute()
    assert values(got) == [2, None, 0, 1] == lazyk.num(ev.Jet.pt, axis=1).eval().to_list()
    x, dx = both(rows_per_part)
    one = lazyk.zip({"a": x, "b": x * 2})
    assert values(lazyk.dask.evaluate(lazyk.zip({"a": dx, "b": dx * 2})).compute()) == \
        one.eval().to_list()


def test_a_missing_total_explained_histograms_and_unfit_weights():
    """A 0-d `?T` result as a Dask array (masked); explain() of a histogram over a
    collection shows one partition's work; weights that do not broadcast to the values are
    refused as on one machine."""
    x = lazyk.array([[1.0, None], [3.0]])
    total = lazyk.dask.evaluate(lazyk.sum(lazyk.dask.from_ragged(x, 1))).to_dask_array()
    got = total.compute(scheduler="sync")
    assert np.ma.is_masked(got) and got.dtype == np.float64
    r = lazyk.dask.from_ragged(lazyk.array([[1.0, 2.0], [3.0]]), 1)
    text = lazyk.histogram(r, 3, (0, 4)).explain()
    assert text.startswith("== the work of one Dask partition") and "loop nest" in text
    w = lazyk.array([[4, 3, 2]], type="1 * var * int64")
    for values in (np.array([True]), da.from_array(np.array([True]), chunks=1)):
        with pytest.raises(lazyk.NotSupportedError, match="the weights broadcast to the values"):
            h = lazyk.histogram(values, 3, (-2, 4), weights=lazyk.dask.from_ragged(w, 1)
                                if isinstance(values, da.Array) else w)
            lazyk.dask.evaluate(h).compute(scheduler="sync") if isinstance(values, da.Array) \
                else h.eval()


@pytest.mark.parametrize("rows_per_part", [1, 2, 3])
def test_min_max_with_initial_where_a_partition_folds_no_value(rows_per_part):
    """A partition whose rows hold no value (or whose selection keeps none) folds to
    `initial`, as one machine's fold of nothing does; without `initial` the others decide."""
    x = lazyk.array([[1.0, 3.0], [], [], [], [-5.0]], "5 * var * float64")
    c = lazyk.dask.from_ragged(x, rows_per_part)
    cases = [lambda v: lazyk.max(lazyk.flatten(v), axis=0, initial=0.0),
             lambda v: lazyk.min(lazyk.flatten(v[v > 2]), axis=0, initial=9.0),
             lambda v: lazyk.max(lazyk.flatten(v[v > 100]), axis=0, initial=7.0),
             lambda v: lazyk.min(lazyk.flatten(v[v > 2]), axis=0),
             lambda v: lazyk.max(v, initial=-1.0)]
    for make in cases:
        want = make(x).eval().to_numpy()
        got = lazyk.dask.evaluate(make(c)).compute(scheduler="sync")
        assert np.asarray(got).tolist() == want.tolist() and np.asarray(got).dtype == want.dtype
    assert [lazyk.dask.evaluate(make(c)).compute(scheduler="sync").item()
            for make in cases] == [3.0, 3.0, 7.0, 3.0, 3.0]


def test_bytes_results_empty_partitions_and_one_row_masks_as_one_machine():
    ev = lazyk.dask.evaluate
    b = lazyk.array([[b"ab", b"2"], [b"x"]], type="2 * var * bytes")
    for k in (1, 2):
        q = lazyk.dask.from_ragged(b, k)
        assert ev(lazyk.flatten(q)).compute(scheduler="sync").to_list() == [b"ab", b"2", b"x"]
        assert ev(q[:, 0]).compute(scheduler="sync").to_list() == [b"ab", b"x"]
    # min / max of flattened ?var rows where a partition holds no value
    x = lazyk.array([None, [2.5], []], type="3 * ?var * float64")
    for k in (1, 2):
        q = lazyk.dask.from_ragged(x, k)
        assert ev(lazyk.min(lazyk.flatten(q), axis=0)).compute(scheduler="sync") == 2.5
        assert ev(lazyk.max(lazyk.flatten(q))).compute(scheduler="sync") == 2.5
    none = lazyk.dask.from_ragged(lazyk.array([None, []], type="2 * ?var * float64"), 1)
    with pytest.raises(ValueError, match="zero-size array to reduction operation min"):
        ev(lazyk.min(lazyk.flatten(none))).compute(scheduler="sync")
    # one row in all, a partition of none: a mask of length 1 lines up with the row
    y = lazyk.array([[1.0, 2.0]], type="1 * var * float64")
    q = lazyk.dask.from_ragged([y[0:1], y[1:1]])
    assert ev(q[np.array([True])]).compute(scheduler="sync").to_list() == [[1.0, 2.0]]
    assert ev(q * np.array([2.0])).compute(scheduler="sync").to_list() == [[2.0, 4.0]]


def test_zip_of_collections_says_how_a_per_row_field_lines_up():
    x = lazyk.dask.from_ragged(lazyk.array([[1.0, 2.0], []]), 1)
    y = lazyk.dask.from_ragged(lazyk.array(np.array([2, 3])), 1)
    with pytest.raises(lazyk.NotSupportedError, match=r"per-row value meets lists as "
                                                      r"v\[:, None\], zip's fields too"):
        lazyk.dask.evaluate(lazyk.zip({"x": x, "y": y}))
    got = lazyk.dask.evaluate(lazyk.zip({"x": x, "y": y[:, None]})).compute(scheduler="sync")
    assert got.to_list() == [[{"x": 1.0, "y": 2}, {"x": 2.0, "y": 2}], []]


@pytest.mark.parametrize("rows_per_part", [1, 2, 3])
def test_records_made_missing_stay_missing_records(rows_per_part):
    """firsts, pad_none and gathers of records on Dask give missing records (`?{...}`),
    as on one machine and in Awkward."""
    pt = lazyk.array([[1.0, 2.0], [], [3.0], []])
    one = lazyk.zip({"pt": pt, "q": pt * 2})
    d = lazyk.dask.from_ragged(pt, rows_per_part)
    z = lazyk.zip({"pt": d, "q": d * 2})
    for f in (lazyk.firsts, lambda r: lazyk.pad_none(r, 2),
              lambda r: r[lazyk.argmax(r.pt, axis=1, keepdims=True)]):
        want = f(one).eval().to_list()
        assert None in (want if f is lazyk.firsts else [v for w in want for v in w])
        assert values(lazyk.dask.evaluate(f(z)).compute()) == want


def test_rows_of_records_that_may_be_missing_are_refused_by_name():
    ak = pytest.importorskip("awkward")
    x = lazyk.from_awkward(ak.Array([[{"pt": 1.0}, None], []]))
    with pytest.raises(lazyk.NotSupportedError, match=r"records that may be missing \(\?\{"):
        lazyk.dask.from_ragged(x, 1)


def test_pairs_of_records_made_missing_match_one_machine():
    pt = lazyk.array([[1.0, 2.0], [], [3.0]])
    one = lazyk.zip({"pt": pt, "q": pt * 2})
    d = lazyk.dask.from_ragged(pt, 1)
    got = lazyk.dask.evaluate(lazyk.combinations(lazyk.pad_none(lazyk.zip({"pt": d, "q": d * 2}),
                                                                2), 2)).compute()
    assert values(got) == lazyk.combinations(lazyk.pad_none(one, 2), 2).eval().to_list()


def test_a_collection_of_records_that_may_be_missing_is_refused_as_input():
    """Records that may be missing, computed on Dask, are not read back as lazy records (their
    missing records would be lost): a clear refusal; their fields still work."""
    pt = lazyk.array([[1.0, 2.0], [], [3.0]])
    d = lazyk.dask.from_ragged(pt, 2)
    e = lazyk.dask.evaluate(lazyk.pad_none(lazyk.zip({"pt": d}), 2))
    assert values(lazyk.dask.evaluate(e.pt).compute()) == [[1.0, 2.0], [None, None], [3.0, None]]
    with pytest.raises(lazyk.NotSupportedError, match="records that may be missing"):
        lazyk.firsts(e)


@pytest.mark.parametrize("rows_per_part", [1, 2])
def test_a_mean_over_nothing_selected_is_nan_beside_values_that_may_be_missing(rows_per_part):
    # the mean's own operand has no missing values (`num` of `?float64` values has none)
    x = lazyk.array([[0.5], [1.0, 2.0]], type="2 * var * ?float64")
    m = lazyk.array(np.array([0.3, 0.4]))
    e = lambda x, m: lazyk.mean(m[lazyk.num(x, axis=1) > 2])  # noqa: E731
    assert np.isnan(lazyk.evaluate(e(x, m)))
    dx, dm = (lazyk.dask.from_ragged(a, rows_per_part) for a in (x, m))
    assert np.isnan(lazyk.dask.evaluate(e(dx, dm)).compute())


@pytest.mark.parametrize("rows_per_part", [1, 2, 3])
def test_histogram_weights_that_may_be_missing_per_event(rows_per_part):
    v = lazyk.array(np.array([0.1, 0.6, 0.7, 0.2]))
    w = lazyk.array([1.0, None, 2.0, 0.5], type="4 * ?float64")
    x = lazyk.array([[3.0], [], [1.5, 2.0], [4.0]], type="4 * var * float64")
    dv, dw, dx = (lazyk.dask.from_ragged(a, rows_per_part) for a in (v, w, x))
    for one, dask, want in ((lazyk.histogram(v, 2, (0, 1), weights=w),
                             lazyk.histogram(dv, 2, (0, 1), weights=dw), [1.5, 2.0]),
                            (lazyk.histogram(v, 2, (0, 1), weights=lazyk.firsts(x)),
                             lazyk.histogram(dv, 2, (0, 1), weights=lazyk.firsts(dx)),
                             [7.0, 1.5])):  # (a missing weight counts nothing)
        np.testing.assert_allclose(lazyk.evaluate(one), want)
        np.testing.assert_allclose(lazyk.dask.evaluate(dask).compute(), want)


@pytest.mark.parametrize("rows_per_part", [1, 3])
def test_histograms_of_a_max_over_rows_that_may_be_empty_count_them_nowhere(rows_per_part):
    # as on one machine (Awkward's None): each partition's bins skip the empty rows
    x = lazyk.array(DATA["var"], type="7 * var * float64")
    m = lazyk.array(np.linspace(0.0, 9.0, 7))
    dx, dm = lazyk.dask.from_ragged(x, rows_per_part), lazyk.dask.from_ragged(m, rows_per_part)
    forms = [lambda x, m: lazyk.histogram(lazyk.max(x, axis=1), 3, (0, 9)),  # noqa: E731
             lambda x, m: lazyk.histogram(m, 3, (0, 9), weights=lazyk.max(x, axis=1)),
             lambda x, m: lazyk.histogram(lazyk.max(x, axis=1) - lazyk.min(x, axis=1), 3,
                                          (0, 9)),
             lambda x, m: lazyk.histogram(m[lazyk.max(x, axis=1) > 4], 3, (0, 9))]
    for f in forms:
        want = lazyk.evaluate(f(x, m))
        np.testing.assert_allclose(lazyk.dask.evaluate(f(dx, dm)).compute(), want)
    np.testing.assert_array_equal(lazyk.evaluate(forms[0](x, m)), [0, 2, 3])  # (5 of 7)


def test_a_result_of_unknown_row_counts_says_how_to_use_it_again():
    x = lazyk.array([[0.5, 0.1], [], [0.9]], type="3 * var * float64")
    flat = lazyk.dask.evaluate(lazyk.flatten(lazyk.dask.from_ragged(x, 2)))
    with pytest.raises(lazyk.NotSupportedError, match=r"unknown shape.*from_ragged"):
        lazyk.dask.evaluate(lazyk.sum(flat))
    assert lazyk.dask.evaluate(lazyk.sum(lazyk.dask.from_ragged(flat))).compute() == 1.5


def test_missing_values_on_dask_arrays_are_refused_with_what_works():
    """dask.array collections hold no `?T`: a nan-reduction's None is refused naming the
    operand and what gives NumPy's NaN instead."""
    d = da.from_array(np.array([[1.0, np.nan], [3.0, 4.0]]), chunks=1)
    with pytest.raises(lazyk.NotSupportedError, match=r"type \?float64.*skipnan=True"):
        lazyk.dask.evaluate(lazyk.nanmax(d, axis=1))
    np.testing.assert_array_equal(
        lazyk.dask.evaluate(lazyk.max(d, axis=1, skipnan=True)).compute(), [1.0, 4.0])


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reductions_across_the_chunks_of_dask_arrays_match_numpy(op):
    """Over axis 0 (and every axis) of a dask.array the places are the whole array's: the
    fused values' Dask array, found by Dask's own arg-reduction, as NumPy's."""
    rng = np.random.default_rng(3)
    x, y = rng.random((11, 4, 3)), rng.random((11, 4, 3))
    x[3, 1, 2] = x[7, 0, 0] = np.nan  # (the first NaN wins, as NumPy's)
    dx, dy = da.from_array(x, chunks=(3, 2, 3)), da.from_array(y, chunks=(5, 4, 1))
    fn = getattr(lazyk, op)
    for axis in (None, 0, 1, -1):
        for keepdims in (False, True):
            got = lazyk.dask.evaluate(fn(dx * 2 - dy, axis=axis, keepdims=keepdims))
            want = getattr(np, op)(x * 2 - y, axis=axis, keepdims=keepdims)
            assert isinstance(got, da.Array)
            got = got.compute()
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    got = lazyk.dask.evaluate(fn(dx, axis=0) + 2 * fn(np.sin(dy), axis=0)).compute()
    np.testing.assert_array_equal(got, getattr(np, op)(x, axis=0) +
                                  2 * getattr(np, op)(np.sin(y), axis=0))
    for axis in (0, None):  # an empty axis (or array), as NumPy
        with pytest.raises(ValueError, match="empty"):
            lazyk.dask.evaluate(fn(da.zeros((0, 3), chunks=2), axis=axis)).compute()
    # ties and NaNs in chunks cut along axis 1: the first in NumPy's (flat) order wins
    for t in (np.array([[0, 1], [1, 0]]), np.array([[0, np.nan], [np.nan, 0]])):
        for keepdims in (False, True):
            got = lazyk.dask.evaluate(fn(da.from_array(t, chunks=(2, 1)), keepdims=keepdims))
            np.testing.assert_array_equal(got.compute(), getattr(np, op)(t, keepdims=keepdims))


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_running_folds_across_the_chunks_of_dask_arrays_match_numpy(op):
    """Along axis 0, and over the flattened values (axis=None), a running sum or product
    of a dask.array runs across its chunks (Dask's own, over the fused values), with
    NumPy's dtypes."""
    rng = np.random.default_rng(4)
    x = rng.integers(-3, 4, (9, 4, 3)).astype(np.int32)
    y = rng.random((9, 4, 3)) + 0.5
    dx, dy = da.from_array(x, chunks=(2, 3, 2)), da.from_array(y, chunks=(4, 4, 3))
    fn, ref = getattr(lazyk, op), getattr(np, op)
    for axis in (None, 0):
        for mk in (lambda a, b: a, lambda a, b: a * 2 - 1, lambda a, b: a * b,
                   lambda a, b: a > 0):
            got = lazyk.dask.evaluate(fn(mk(dx, dy), axis=axis))
            want = ref(mk(x, y), axis=axis)
            assert isinstance(got, da.Array)
            got = got.compute()
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-12)
    got = lazyk.dask.evaluate(fn(dy, axis=0) * 2 + lazyk.argmax(dy, axis=0)).compute()
    np.testing.assert_allclose(got, ref(y, axis=0) * 2 + np.argmax(y, axis=0), rtol=1e-12)


def test_ptp_over_fixed_dims_has_numpys_type_on_one_machine_and_on_dask():
    """Over fixed dims of values that cannot be missing every slice has a value: ptp is
    NumPy's float64 (not ?float64), and so runs over dask.array collections."""
    x = np.random.default_rng(5).random((10, 3))
    for axis in (None, 0, 1):
        e = lazyk.ptp(x, axis=axis)
        assert "?" not in str(e.type) and np.asarray(e.eval()).dtype == np.float64
        np.testing.assert_allclose(np.asarray(e.eval()), np.ptp(x, axis=axis))
        got = lazyk.dask.evaluate(lazyk.ptp(da.from_array(x, chunks=(4, 2)), axis=axis))
        np.testing.assert_allclose(got.compute(), np.ptp(x, axis=axis))
    # compiled over fixed dims of any size too; an empty axis raises as max's, as NumPy's
    f = lazyk.compile(lazyk.ptp(lazyk.placeholder("a", "N * M * float64"), axis=0))
    assert "?" not in f.signature and np.allclose(f(x), np.ptp(x, axis=0))
    with pytest.raises(ValueError):
        lazyk.ptp(np.zeros((0, 3)), axis=0).eval()
    # var rows may hold no value: None there, as Awkward's
    assert lazyk.ptp(lazyk.array([[1, 5], []]), axis=1).to_list() == [4, None]


@pytest.mark.parametrize("rows_per_part", [1, 2, 4])
def test_lists_of_lists_gathered_at_pair_positions(rows_per_part):
    # positions of pairs of lists (fewer dims than the lists they index) split by rows as
    # the lists are: one machine's answer
    x = lazyk.array([[[0.0, 1.0], [6.0], [2.0]], [], [[5.0, 0.0]], [[1.0], []]],
                    type="4 * var * var * float64")
    rows = lazyk.dask.from_ragged(x, rows_per_part)
    for work in (lambda v: v[lazyk.argcombinations(v, 2)["0"]],
                 lambda v: lazyk.sum(v[lazyk.argcombinations(v, 2)["1"]], axis=-1),
                 lambda v: lazyk.sum(v[lazyk.argcombinations(v, 2)["0"]], axis=-1)
                 [lazyk.num(v, axis=1) > 0]):
        assert values(lazyk.dask.evaluate(work(rows)).compute()) == values(work(x).eval())


def test_weights_of_more_dims_than_the_values_are_one_machines_error():
    v = lazyk.array([[1.0, 2.0], [3.0], []])
    w = lazyk.array([[[1.0], [3.0]], [[5.0]], []])
    with pytest.raises(lazyk.NotSupportedError, match="have more dims than the values"):
        lazyk.dask.evaluate(lazyk.histogram(lazyk.dask.from_ragged(v, 2), 3, (0, 6),
                                            weights=lazyk.dask.from_ragged(w, 2)))


def test_records_in_rows_of_one_that_may_be_missing_are_one_machines_records():
    # records of take-backs over lists that may be missing (`?1` rows), laid out as on one
    # machine over every partitioning (Dask gave ?var records, `[None]` for an empty list)
    x = lazyk.array([[[1, 2], None, []], [], [[3]]], type="3 * var * ?var * int32")

    def pick(v):
        best = v[lazyk.argmax(v, axis=-1, keepdims=True)]
        return lazyk.zip({"p": best, "q": best + 1})
    one = pick(x).eval()
    assert str(one.type) == "3 * var * ?1 * {p: ?int32, q: ?int32}"
    assert one.to_list() == [[[{"p": 2, "q": 3}], None, [{"p": None, "q": None}]], [],
                             [[{"p": 3, "q": 4}]]]
    for n in (1, 2, 3):
        got = lazyk.dask.evaluate(pick(lazyk.dask.from_ragged(x, n))).compute()
        assert got.type == one.type and got.to_list() == one.to_list()


@pytest.mark.parametrize("rows_per_part", [1, 2, 3])
def test_weights_in_var_rows_for_values_of_a_fixed_size_1_as_on_one_machine(rows_per_part):
    # values of a fixed 1 (a keepdims fold, met[:, None]) against var rows of weights are
    # refused from the types on both (one machine raised ShapeError or NotSupportedError by
    # the rows, Dask NotSupportedError); weights that fit count the same on both, and a
    # value that would stretch to several weights names the user's types on both
    jets = lazyk.array([[1.0, 2.0], [3.0], [], [5.0]])
    w = lazyk.array([[0.5, 1.0], [2.0], [4.0], [1.0]])
    dj, dw = (lazyk.dask.from_ragged(a, rows_per_part) for a in (jets, w))
    met = np.array([1.0, 3.0, 2.0, 5.0])
    dmet = da.from_array(met, chunks=rows_per_part)
    for v, dv in ((lazyk.max(jets, axis=1, keepdims=True, initial=0.0),
                   lazyk.max(dj, axis=1, keepdims=True, initial=0.0)),
                  (met[:, None], dmet[:, None])):
        for make in (lambda: lazyk.histogram(v, 3, (0, 6), weights=w).eval(),
                     lambda: lazyk.dask.evaluate(lazyk.histogram(dv, 3, (0, 6), weights=dw))):
            with pytest.raises(lazyk.NotSupportedError, match="fixed size 1 at axis 1"):
                make()
    fit = lazyk.array([[0.5, 1.0], [2.0], [], [1.0]])
    want = np.histogram([1.0, 2.0, 3.0, 5.0], 3, (0, 6), weights=[0.5, 1.0, 2.0, 1.0])[0]
    one = lazyk.histogram(jets, 3, (0, 6), weights=fit).to_numpy()
    dask = lazyk.dask.evaluate(lazyk.histogram(
        dj, 3, (0, 6), weights=lazyk.dask.from_ragged(fit, rows_per_part))).compute()
    assert one.tolist() == dask.tolist() == want.tolist() and one.dtype == dask.dtype
    ones = lazyk.array([[1.0], [3.0], [2.0], [5.0]], type="4 * var * float64")
    for make in (lambda: lazyk.histogram(ones, 3, (0, 6), weights=w).to_numpy(),
                 lambda: lazyk.dask.evaluate(lazyk.histogram(
                     lazyk.dask.from_ragged(ones, rows_per_part), 3, (0, 6),
                     weights=dw)).compute(scheduler="sync")):
        with pytest.raises(lazyk.ShapeError, match=re.escape(
                "values (4 * var * float64) with weights (4 * var * float64): a row of one")):
            make()


def test_a_field_set_on_dask_records_names_with_field():
    r = lazyk.zip({"x": lazyk.array([[1.0, 2.0], [], [3.0]]), "y": lazyk.array([[1, 2], [], [3]])})
    d = lazyk.dask.from_ragged(r.eval(), 2)
    for write in (lambda: d.__setitem__("z", d.x * 2), lambda: setattr(d, "x", d.x * 2)):
        with pytest.raises(TypeError, match=r"lazyk.with_field\(r, value, '[xz]'\)"):
            write()
    got = lazyk.dask.evaluate(lazyk.with_field(d, d.x * 2, "z")).compute()
    assert got.to_list() == lazyk.with_field(r, r.x * 2, "z").eval().to_list()
    assert values(lazyk.dask.evaluate(d.x).compute()) == [[1.0, 2.0], [], [3.0]]
