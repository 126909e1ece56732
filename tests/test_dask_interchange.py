"""Dask collections over Arrow strings and records: partitions joined and shipped as their
buffers (characters, record fields), values against plain Python."""
import pickle

import numpy as np
import pytest

import lazyk

pa = pytest.importorskip("pyarrow")
dask = pytest.importorskip("dask")
lazyk_dask = pytest.importorskip("lazyk.dask")


def test_string_rows_of_a_chunked_arrow_column():
    col = pa.chunked_array([[["kiwi", "x"], []], [["kiwi"], None, ["é", "kiwi"]]])
    r = lazyk_dask.from_ragged(col)
    got = lazyk_dask.evaluate((r == "kiwi").sum(axis=-1)).compute(scheduler="sync")
    want = [None if row is None else sum(s == "kiwi" for s in row) for row in col.to_pylist()]
    assert got.tolist() == want
    joined = lazyk_dask.evaluate(lazyk.str_len(r)).compute(scheduler="sync")
    assert joined.to_list() == [None if row is None else [len(s) for s in row]
                                for row in col.to_pylist()]


def test_records_from_an_arrow_table_split_into_partitions():
    t = pa.table({"tags": [["kiwi", "x"], [], ["kiwi"], None],
                  "v": [[1.0, 2.0], [], [3.0], [4.0, 5.0]], "y": [1, 2, 3, 4]})
    q = lazyk_dask.from_ragged(lazyk.from_arrow(t), 2)
    w = lazyk_dask.evaluate(q.v.sum(axis=-1) * q.y).compute(scheduler="sync")
    np.testing.assert_array_equal(w, [3.0, 0.0, 9.0, 36.0])
    tags = lazyk_dask.evaluate(q.tags == "kiwi").compute(scheduler="sync")
    assert tags.to_list() == [[True, False], [], [True], None]


def test_string_and_record_parts_pickle_as_buffers():
    from lazyk.dask.partitions import Part
    x = lazyk.from_arrow(pa.table({"s": ["ab", None, "c"], "v": [[1.0], [], [2.0, 3.0]]}))
    for a in (x, x["s"], x[1:]):
        back = pickle.loads(pickle.dumps(Part(a))).array
        assert back.to_list() == a.to_list() and back.type == a.type


def test_record_partitions_with_nulls_in_some_row_groups_only():
    # Parquet row groups: one without nulls, one with missing values in both fields
    t1 = pa.table({"v": pa.array([[1.0, 2.0], []]), "k": pa.array([1, 2])})
    t2 = pa.table({"v": pa.array([[None, 3.0], [4.0]]), "k": pa.array([3, None])})
    r = lazyk_dask.from_ragged([lazyk.from_arrow(t1), lazyk.from_arrow(t2)])
    assert str(r.type) == "4 * {v: var * ?float64, k: ?int64}"
    assert r.compute(scheduler="sync").to_list() == \
        t1.to_pylist() + t2.to_pylist()
    sums = lazyk_dask.evaluate(r.v.sum(axis=-1, skipna=True)).compute(scheduler="sync")
    np.testing.assert_array_equal(sums, [3.0, 0.0, 3.0, 4.0])
    assert lazyk_dask.evaluate(r.k + 1).compute(scheduler="sync").to_list() == [2, 3, 4, None]
    with pytest.raises(ValueError, match="partition 1 has type"):
        lazyk_dask.from_ragged([lazyk.from_arrow(t1), lazyk.from_arrow(t1.rename_columns(
            ["w", "k"]))])


def test_fields_of_nullable_nested_records_as_one_machine():
    t = pa.table({"m": [{"x": 1.0, "y": [1.0]}, None, {"x": 3.0, "y": None}],
                  "v": [1.0, 2.0, 3.0]})
    one = lazyk.from_arrow(t)
    for per_part in (1, 2):
        q = lazyk_dask.from_ragged(one, per_part)
        assert q["m"].type == one["m"].type
        assert q["m"].compute(scheduler="sync").to_list() == t.column("m").to_pylist()
        got = lazyk_dask.evaluate(q["m"].x * q.v).compute(scheduler="sync")
        assert got.to_list() == (one["m"].x * one.v).eval().to_list() == [1.0, None, 9.0]
        sums = lazyk_dask.evaluate(q["m"].y.sum(axis=-1)).compute(scheduler="sync")
        assert sums.to_list() == one["m"].y.sum(axis=-1).eval().to_list() == [1.0, None, None]


def test_rows_per_part_is_a_positive_int_for_one_array_only():
    x = lazyk.array([[1.0], [], [2.0, 3.0]])
    for bad in (1.5, 0, True, "2"):
        with pytest.raises(ValueError, match="rows_per_part must be a positive int"):
            lazyk_dask.from_ragged(x, bad)
    assert lazyk_dask.from_ragged(x, np.int64(2)).npartitions == 2
    with pytest.raises(ValueError, match="chunks of a ChunkedArray are the partitions"):
        lazyk_dask.from_ragged(pa.chunked_array([[[1.0]], [[2.0], []]]), 5000)
