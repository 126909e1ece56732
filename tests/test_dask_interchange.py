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
    from lazyk.daskparts import Part
    x = lazyk.from_arrow(pa.table({"s": ["ab", None, "c"], "v": [[1.0], [], [2.0, 3.0]]}))
    for a in (x, x["s"], x[1:]):
        back = pickle.loads(pickle.dumps(Part(a))).array
        assert back.to_list() == a.to_list() and back.type == a.type
