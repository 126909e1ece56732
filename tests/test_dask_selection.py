"""Row selection (`x[mask]`, a mask of one dim) and `flatten` on Dask collections: each
partition keeps its kept rows (row counts known once computed: `nan`, as Dask's unknown
chunk sizes), while `num` at axis 0, reductions and histograms combine the partitions; the
answer equals one machine's and a plain-Python reference whatever the partitions. Work that
needs the whole collection's rows is refused by name."""
from __future__ import annotations

import math

import numpy as np
import pytest

import lazyk

pytest.importorskip("dask")
import dask  # noqa: E402

import lazyk.dask  # noqa: E402

DATA = {"var": [[0.5, 3.0], [], [2.0, 7.5, 4.0], [5.0], [], [6.0, -1.0, 8.0], [9.0, 1.0]],
        "?var": [[0.5, 3.0], [], [2.0, 7.5, 4.0], [5.0], None, [6.0, -1.0, 8.0], [9.0, 1.0]]}


def both(rows_per_part: int, kind: str = "var"):
    x = lazyk.array(DATA[kind], type=f"7 * {kind} * float64")
    return x, lazyk.dask.from_ragged(x, rows_per_part)


def values(got):
    return got.to_list() if hasattr(got, "to_list") else got.tolist()


def long(x):
    return x[lazyk.num(x) > 1]


WORK = {
    "select": long,
    "select, then elementwise": lambda x: long(x) * 2 - 1,
    "select, then within rows": lambda x: long(x)[long(x) > 2],
    "select twice": lambda x: long(x)[lazyk.num(long(x)) > 2],
    "select, then num": lambda x: lazyk.num(long(x), axis=1),
    "select, then row sums": lambda x: long(x).sum(axis=-1),
    "select by a reduction": lambda x: x[lazyk.any(x > 5, axis=1)],
    "select, then num at axis 0": lambda x: lazyk.num(long(x), axis=0),
    "select, then sum": lambda x: lazyk.sum(long(x)),
    "select, then sum of row sums": lambda x: lazyk.sum(long(x).sum(axis=1), axis=0),
    "select, then max": lambda x: lazyk.max(long(x), axis=None),
    "select, then mean": lambda x: lazyk.mean(long(x).sum(axis=1), axis=0),
    "select pairs, then sum over rows": lambda x: lazyk.sum(x[lazyk.num(x) == 2], axis=0),
    "select pairs, then min over rows": lambda x: lazyk.min(x[lazyk.num(x) == 2], axis=0),
    "select nothing": lambda x: x[lazyk.num(x) > 9],
    "select nothing, then flatten": lambda x: lazyk.flatten(x[lazyk.num(x) > 9]),
    "select nothing, then sum over rows": lambda x: lazyk.sum(x[lazyk.num(x) > 9], axis=0),
    "select nothing, then num": lambda x: lazyk.num(x[lazyk.num(x) > 9], axis=0),
    "flatten": lambda x: lazyk.flatten(x),
    "flatten axis=None": lambda x: lazyk.flatten(x, axis=None),
    "flatten axis=0": lambda x: lazyk.flatten(x, axis=0),
    "flatten, then select": lambda x: lazyk.flatten(x)[lazyk.flatten(x) > 2],
    "flatten, then num": lambda x: lazyk.num(lazyk.flatten(x), axis=0),
    "flatten, then sum": lambda x: lazyk.sum(lazyk.flatten(x) ** 2),
    "flatten, then std": lambda x: lazyk.std(lazyk.flatten(x)),
    "select, then flatten": lambda x: lazyk.flatten(long(x)) + 1,
}


@pytest.mark.parametrize("kind", sorted(DATA))
@pytest.mark.parametrize("rows_per_part", [1, 3, 7])
@pytest.mark.parametrize("name", sorted(WORK))
def test_selected_rows_match_one_machine(name, rows_per_part, kind):
    x, rows = both(rows_per_part, kind)
    want = WORK[name](x).eval()
    got = lazyk.dask.evaluate(WORK[name](rows)).compute()
    assert values(got) == values(want), name
    if hasattr(want, "type") and hasattr(got, "type"):
        assert str(got.type) == str(want.type)


@pytest.mark.parametrize("name", ["select pairs, then sum over rows", "select nothing, then "
                                  "sum over rows", "select pairs, then min over rows",
                                  "flatten, then std", "select, then num at axis 0"])
def test_a_tree_of_partials_skips_partitions_without_rows(name):
    x, rows = both(1)  # 7 partitions, combined two at a time: some hold no selected row
    got = lazyk.dask.evaluate(WORK[name](rows), split_every=2).compute()
    assert values(got) == values(WORK[name](x).eval())


def test_selection_and_flatten_match_a_python_reference():
    present = [r for r in DATA["?var"] if r is not None]
    for rows_per_part in (2, 5):
        x, rows = both(rows_per_part, "?var")
        got = lazyk.dask.evaluate(long(rows)).compute()
        assert got.to_list() == [r for r in DATA["?var"] if r is None or len(r) > 1]
        assert str(got.type) == "5 * ?var * float64"
        flat = lazyk.dask.evaluate(lazyk.flatten(rows))  # plain values: a dask.array
        assert flat.dtype == np.float64 and math.isnan(flat.chunks[0][0])
        assert flat.compute().tolist() == [v for r in present for v in r]
        n = lazyk.dask.evaluate(lazyk.num(lazyk.flatten(rows), axis=0)).compute()
        assert int(n) == sum(map(len, present)) and n.dtype == np.int64
        total = lazyk.dask.evaluate(lazyk.sum(long(rows).sum(axis=1, skipna=True),
                                              axis=0, skipna=True)).compute()
        assert float(total) == sum(sum(r) for r in present if len(r) > 1)


def test_row_counts_are_known_once_computed():
    x, rows = both(3)
    kept = [sum(len(r) > 1 for r in DATA["var"][i:i + 3]) for i in range(0, 7, 3)]
    s = lazyk.dask.evaluate(long(rows))
    assert isinstance(s, lazyk.dask.RaggedArray) and not s.rows_known
    assert len(s.row_counts) == 3 and all(math.isnan(c) for c in s.row_counts)
    assert str(s.type) == "var * var * float64"
    with pytest.raises(lazyk.NotSupportedError, match=r"known only once computed.*"
                       r"compute_row_counts\(\)"):
        s[1:3]
    known = s.compute_row_counts()
    assert known.rows_known and known.row_counts == tuple(kept)
    assert str(known.type) == "4 * var * float64"
    assert known[1:3].compute().to_list() == [[2.0, 7.5, 4.0], [6.0, -1.0, 8.0]]
    # a plain result is a dask.array of unknown chunk sizes, as Dask's boolean indexing
    n = lazyk.dask.evaluate(lazyk.num(long(rows), axis=1))
    assert n.dtype == np.int64 and all(math.isnan(c) for c in n.chunks[0])
    np.testing.assert_array_equal(n.compute(), [2, 3, 3, 2])
    assert n.compute_chunk_sizes().chunks == (tuple(kept),)
    # a computed selection is an operand: counted, selected and reduced again
    again = lazyk.dask.evaluate(s.sum(axis=1) + lazyk.num(s, axis=0)).compute()
    np.testing.assert_array_equal(again, [7.5, 17.5, 17.0, 14.0])
    buf = np.zeros(4, np.int64)
    assert lazyk.dask.evaluate(lazyk.num(long(rows), axis=1), out=buf) is buf
    np.testing.assert_array_equal(buf, [2, 3, 3, 2])


@pytest.mark.parametrize("rows_per_part", [1, 4])
def test_histograms_of_selected_rows_sum_the_partitions(rows_per_part):
    x, rows = both(rows_per_part, "?var")
    kept = [v for r in DATA["?var"] if r is not None and len(r) > 1 for v in r]
    got = lazyk.dask.evaluate(lazyk.histogram(long(rows), 4, (0, 8))).compute()
    want = np.histogram(kept, 4, (0, 8))[0]
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, lazyk.histogram(long(x), 4, (0, 8)).to_numpy())
    w = lazyk.dask.evaluate(lazyk.histogram(lazyk.flatten(long(rows)), 4, (0, 8),
                                            weights=lazyk.flatten(long(rows)) * 0.5))
    np.testing.assert_allclose(w.compute(), np.histogram(kept, 4, (0, 8),
                                                         weights=np.array(kept) * 0.5)[0])
    counts = lazyk.dask.evaluate(lazyk.histogram(lazyk.num(long(rows)), 3, (0, 3)))
    lengths = [len(r) for r in DATA["?var"] if r is not None and len(r) > 1]
    np.testing.assert_array_equal(counts.compute(), np.histogram(lengths, 3, (0, 3))[0])


def test_a_partition_of_records_travels_as_columns_and_reads_them_in_place():
    # between processes a partition pickles as its buffers; rebuilt, its records' fields
    # read those columns (contiguous), as `lazyk.from_awkward` reads them
    import pickle

    from lazyk.dask.partitions import Part
    data = [{"m": 1.0, "j": [{"pt": 5.0, "q": 1}]}, {"m": 2.0, "j": []},
            {"m": 3.0, "j": [{"pt": 7.0, "q": -1}, {"pt": 8.0, "q": 1}]}]
    x = lazyk.array(data)
    got = pickle.loads(pickle.dumps(Part(x[1:], 1))).array
    assert not got.built  # (no C structs until something needs the records whole)
    assert lazyk.num(got.j).eval().to_list() == [0, 2] and not got.built
    assert got.to_list() == data[1:] and got.readonly
    assert got.j.pt.to_list() == [[], [7.0, 8.0]] and got.j.pt.meta[6:8] == (8, 8)
    assert got.j.q.meta[6:8] == (8, 8) and got.m.to_list() == [2.0, 3.0]


def test_a_histogram_graph_carries_no_data_in_its_last_task():
    # the task that turns the summed counters into counts is a function of the counts:
    # Dask tokenizes (pickles) and ships it, so it must not hold the expression's data
    import pickle
    x = lazyk.dask.from_ragged(lazyk.from_offsets(np.arange(0, 200_001, 2),
                                                  np.arange(200_000.0)), 25_000)
    h = lazyk.histogram(x, 10, (0, 200_000), density=True)
    assert len(pickle.dumps(h.finisher())) < 2_000
    got = lazyk.dask.evaluate(h).compute()
    np.testing.assert_allclose(got, np.histogram(np.arange(200_000.0), 10, (0, 200_000),
                                                 density=True)[0])


REFUSED = {  # name: (work, why, what to do instead)
    "gathering rows": (lambda r: r[np.array([0, 2])], "place in the whole collection",
                       "x\\[mask\\]"),
    "lazyk.argmax over axis 0": (lambda r: lazyk.argmax(lazyk.num(r), axis=0),
                                 "places in the whole collection", "axis=1"),
    "lazyk.local_index at axis 0": (lambda r: lazyk.local_index(r, axis=0),
                                    "across the partitions' rows", "axis=1"),
    "lazyk.sort at axis 0": (lambda r: lazyk.sort(lazyk.num(r), axis=0),
                             "across the partitions' rows", "axis=1"),
    "lazyk.cumsum at axis 0": (lambda r: lazyk.cumsum(r, axis=None),
                               "across the partitions' rows", "axis=1"),
    "lazyk.pad_none at axis 0": (lambda r: lazyk.pad_none(r, 9, axis=0), "row count",
                                 "axis=1"),
    "lazyk.concatenate at axis 0": (lambda r: lazyk.concatenate([r, r], axis=0),
                                    "end to end", "axis=1"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_work_across_the_whole_collection_is_refused_by_name(name):
    _, rows = both(3)
    work, why, instead = REFUSED[name]
    with pytest.raises(lazyk.NotSupportedError, match=f"^{name}.* split into partitions .*{why}.*: not "
                       f"supported on Dask \\(.*{instead}.*compute the collection first"):
        lazyk.dask.evaluate(work(rows))


def test_selected_rows_do_not_meet_rows_of_unknown_place():
    x, rows = both(3)
    with pytest.raises(lazyk.NotSupportedError, match="^add: rows selected or flattened .* "
                       "meet the collection's own rows.*x\\[m\\] \\* y\\[m\\]"):
        lazyk.dask.evaluate(long(rows) + rows)
    with pytest.raises(lazyk.NotSupportedError, match="^add: an operand of type 4 \\* int64 "
                       "along rows selected.*cannot be split"):
        lazyk.dask.evaluate(lazyk.num(long(rows)) + np.arange(4))
    other = lazyk.dask.from_ragged(x, 2)
    with pytest.raises(lazyk.ShapeError, match="split differently: 7 \\* var \\* float64 in 3 "
                       "partitions and 7 \\* var \\* float64 in 4 partitions"):
        lazyk.dask.evaluate(lazyk.num(long(rows)) + lazyk.num(long(other)))
    # one value for every row broadcasts, as on one machine
    got = lazyk.dask.evaluate(lazyk.num(long(rows)) + np.arange(1)).compute()
    np.testing.assert_array_equal(got, [2, 3, 3, 2])
    # two selections by one mask line up, partition by partition
    y = lazyk.dask.from_ragged((x * 10).eval(), 3)
    got = lazyk.dask.evaluate(long(rows) + y[lazyk.num(rows) > 1]).compute()
    assert got.to_list() == (long(x) * 11).eval().to_list()


def test_errors_in_selected_rows_name_the_rows_they_came_from():
    x = lazyk.array([[1.0, 2.0], [3.0], [4.0, 5.0], [6.0], [7.0, 8.0, 9.0]])
    y = lazyk.array([[1.0, 2.0], [3.0], [4.0, 5.0], [6.0], [7.0, 8.0]])
    rx, ry = lazyk.dask.from_ragged(x, 2), lazyk.dask.from_ragged(y, 2)
    with pytest.raises(lazyk.ShapeError, match="^row 2: .*length") as one:
        (x[lazyk.num(x) > 1] + y[lazyk.num(x) > 1]).eval()
    with dask.config.set(scheduler="sync"):
        with pytest.raises(lazyk.ShapeError, match=r"^row 0: .*length.* selected or "
                           r"flattened from row 4\)") as many:
            lazyk.dask.evaluate(rx[lazyk.num(rx) > 1] + ry[lazyk.num(rx) > 1]).compute()
    assert "operand" in str(one.value) and "operand" in str(many.value)


def test_selection_on_a_local_cluster():
    distributed = pytest.importorskip("distributed")
    x, rows = both(2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address="127.0.0.1:0") as cluster, \
            distributed.Client(cluster):
        got = lazyk.sum(x[lazyk.num(x) == 2], axis=0).eval()
        pairs = lazyk.dask.evaluate(lazyk.sum(rows[lazyk.num(rows) == 2], axis=0)).compute()
        assert pairs.to_list() == got.to_list() == [9.5, 4.0]
        h = lazyk.dask.evaluate(lazyk.histogram(lazyk.flatten(long(rows)), 3, (0, 9)))
        np.testing.assert_array_equal(h.compute(), [3, 2, 4])
        s = lazyk.dask.evaluate(long(rows)).compute_row_counts()
        assert s.row_counts == (1, 1, 1, 1)
        assert s.compute().to_list() == long(x).eval().to_list()


def test_row_work_over_dask_arrays_runs_on_their_chunks():
    da = pytest.importorskip("dask.array")
    a = np.array([[3.0, -1.0], [0.5, 2.0], [-4.0, 7.0], [1.0, 1.5], [9.0, -2.0]])
    x = da.from_array(a, chunks=(2, 2))
    got = lazyk.dask.evaluate(lazyk.sort(x, axis=1, ascending=False))
    assert got.chunks == ((2, 2, 1), (2,))
    np.testing.assert_array_equal(got.compute(), -np.sort(-a, axis=1))
    np.testing.assert_array_equal(lazyk.dask.evaluate(lazyk.cumsum(x, axis=1)).compute(),
                                  np.cumsum(a, axis=1))
    am = lazyk.dask.evaluate(lazyk.argmax(x, axis=1)).compute()
    assert am.dtype == np.int64
    np.testing.assert_array_equal(am, np.argmax(a, axis=1))
    np.testing.assert_array_equal(lazyk.dask.evaluate(lazyk.num(x, axis=1)).compute(),
                                  [2] * 5)
    s = lazyk.sin(x[:, 0])
    picked = lazyk.dask.evaluate(s[s > 0])  # a dask.array of unknown chunk sizes
    assert all(math.isnan(c) for c in picked.chunks[0])
    np.testing.assert_array_equal(picked.compute(), np.sin(a[:, 0])[np.sin(a[:, 0]) > 0])
    within = lazyk.dask.evaluate(lazyk.sin(x)[lazyk.sin(x) > 0]).compute()  # var rows
    assert within.to_list() == [[v for v in row if v > 0] for row in np.sin(a).tolist()]
    with pytest.raises(lazyk.NotSupportedError, match="^lazyk.sort at axis 0 of rows split "
                       "into partitions"):
        lazyk.dask.evaluate(lazyk.sort(x[:, 0]))
    # a Dask array of unknown chunk sizes (boolean indexing) splits as such
    flat = da.from_array(a.ravel(), chunks=4)
    rows = lazyk.dask.from_ragged(flat[flat > 0])
    assert str(rows.type) == "var * float64" and not rows.rows_known
    total = lazyk.dask.evaluate(lazyk.sum(rows * 2)).compute()
    assert float(total) == 2 * a[a > 0].sum()


def test_selection_and_flatten_match_awkward():
    ak = pytest.importorskip("awkward")
    a = ak.Array(DATA["?var"])
    for rows_per_part in (1, 3):
        _, rows = both(rows_per_part, "?var")
        picked = lazyk.dask.evaluate(rows[lazyk.num(rows) > 1]).compute()
        assert picked.to_list() == a[ak.num(a) > 1].to_list()
        flat = lazyk.dask.evaluate(lazyk.flatten(rows[lazyk.num(rows) > 1])).compute()
        assert flat.tolist() == ak.flatten(a[ak.num(a) > 1]).to_list()
        none = lazyk.dask.evaluate(lazyk.flatten(rows, axis=None)).compute()
        assert none.tolist() == ak.flatten(a, axis=None).to_list()
        top = lazyk.dask.evaluate(lazyk.flatten(rows, axis=0)).compute()
        assert top.to_list() == ak.flatten(a, axis=0).to_list()
        n = lazyk.dask.evaluate(lazyk.num(rows[lazyk.num(rows) > 1], axis=0)).compute()
        assert int(n) == ak.num(a[ak.num(a) > 1], axis=0)


def test_per_event_values_meet_per_object_values_with_a_new_axis():
    x = lazyk.array([[1.0, 2.0], [3.0], [4.0, 5.0, 6.0], []])
    met = lazyk.array([10.0, 20.0, 30.0, 40.0])
    rows, rmet = lazyk.dask.from_ragged(x, 2), lazyk.dask.from_ragged(met, 2)
    for m, mx in ((lazyk.num(rows) >= 0, lazyk.num(x) >= 0), (lazyk.num(rows) > 1,
                                                             lazyk.num(x) > 1)):
        got = lazyk.dask.evaluate((rmet[m] * 2)[:, None] + rows[m]).compute()
        want = [[2 * e + v for v in row] for e, row, keep in
                zip(met.to_list(), x.to_list(), mx.eval().to_list()) if keep]
        assert got.to_list() == want
        assert got.to_list() == ((met[mx] * 2)[:, None] + x[mx]).eval().to_list()
    with pytest.raises(lazyk.NotSupportedError, match="slice of outer rows, then ints, slices "
                       "and new axes"):
        lazyk.dask.evaluate((rows * 2)[None])


def test_an_index_error_in_selected_rows_says_where_the_rows_came_from():
    x = lazyk.array([[1.0], [2.0, 3.0], [4.0], [5.0, 6.0], [7.0, 8.0], [9.0]])
    X = lazyk.dask.from_ragged(x, 2)
    with pytest.raises(IndexError, match="selected or flattened from rows"):
        lazyk.dask.evaluate(X[lazyk.num(X) > 1][:, 2]).compute()


def test_rows_selected_by_different_masks_are_refused_by_name():
    # a partition's rows kept by two masks need not pair (one row would stretch)
    x = lazyk.array([[1.0], [10.0], [100.0], [1000.0]], type="4 * var * float64")
    m1, m2 = np.array([True, False, False, True]), np.array([True, True, False, False])
    d = lazyk.dask.from_ragged(x, 2)
    with pytest.raises(lazyk.NotSupportedError, match="different masks"):
        lazyk.dask.evaluate(d[m1] + d[m2])
    got = lazyk.dask.evaluate(d[m1] + d[m1]).compute()
    assert got.to_list() == (x[m1] + x[m1]).eval().to_list()


def test_flatten_of_records_with_no_axis_is_refused_by_its_name():
    """`flatten(records, axis=None)` joins the fields' values end to end: refused on Dask,
    the message naming it and what works (each field flattened)."""
    x, rows = both(3)
    r = lazyk.zip({"a": rows, "b": rows * 2})
    with pytest.raises(lazyk.NotSupportedError, match=r"flatten of records with axis=None.*"
                       r"flatten each field"):
        lazyk.dask.evaluate(lazyk.flatten(r, axis=None))
    got = lazyk.dask.evaluate(lazyk.flatten(r.b, axis=None)).compute()
    assert list(got) == [2 * v for v in lazyk.flatten(x, axis=None).eval().tolist()]
