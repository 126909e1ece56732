"""Tuple fields in expressions (named by position, "0", "1", ..., as in Awkward Array),
checked against the ragged reference over the same nested lists, and Arrow time64[ns]
read as lazyk's microsecond `time` when no nanosecond is lost."""
import datetime as dt

import numpy as np
import pytest
from hypothesis import given, settings

import lazyk
from lazyk.errors import NotSupportedError
from tests import ragged_reference as R
from tests import ragged_strategies as S


def _zip(a, b, nd):
    """Nested lists of equal structure and `nd` dims -> the same nesting over (a, b)."""
    if nd == 0:
        return (a, b)
    if a is None:  # a missing row of both fields: of the tuples
        return None
    return [_zip(x, y, nd - 1) for x, y in zip(a, b)]


def _tuple_type(t0: str, t1: str) -> str:
    *dims, e0 = t0.split(" * ")
    return " * ".join(dims + [f"({e0}, {t1.split(' * ')[-1]})"])


@settings(max_examples=10, deadline=None)
@given(S.ragged_pair(S.LAYOUTS + S.QVAR_LAYOUTS[:2] + ("N * T",), options=True))
def test_tuple_fields_are_operands(case):
    t0, d0, t1, d1 = case
    tt = _tuple_type(t0, t1)
    x = lazyk.array(_zip(d0, d1, t0.count(" * ")), type=tt)
    assert str(x.type) == tt
    for k, (t, d) in enumerate(((t0, d0), (t1, d1))):
        f = x[str(k)]
        assert str(f.type) == t and f.to_list() == d
    ref = R.elementwise("add", R.array(d0, t0), R.array(d1, t1))
    got = (x["0"] + x["1"] * 1).eval()
    assert str(got.type) == str(ref.type) and got.to_list() == ref.data
    if ref.type.ndim:
        ref = R.reduce("sum", R.array(d1, t1), -1, skipna=True)
        try:
            got = x["1"].sum(axis=-1, skipna=True).eval()
        except NotSupportedError:  # what the nest refuses for any field is refused by name
            return
        assert str(got.type) == str(ref.type) and got.to_list() == ref.data


def test_tuple_fields_by_hand():
    ak = pytest.importorskip("awkward")
    t = lazyk.from_awkward(ak.Array([[(1, 2.0)], [], [(3, 4.5), (5, None)]]))
    assert str(t.type) == "3 * var * (int64, ?float64)"
    got = (t["0"] * t["1"]).sum(axis=-1, skipna=True).eval()
    assert str(got.type) == "3 * float64" and got.to_list() == [2.0, 0.0, 13.5]
    q = lazyk.from_awkward(ak.Array([(1, 2.0), None, (3, None)]))
    assert str(q.type) == "3 * ?(int64, ?float64)"
    assert q["1"].to_list() == [2.0, None, None]  # missing where the tuple or the value is
    assert (q["0"] + 1).eval().to_list() == [2, None, 4]
    n = lazyk.array([(1, (2.0, 3))], type="1 * (int64, (float64, int32))")
    assert (n["1", "0"] + n["1"]["1"] + n["0"]).eval().to_list() == [6.0]
    e = lazyk.array([], type="0 * var * (int64, float64)")
    assert (e["0"] + e["1"]).eval().to_list() == []
    assert lazyk.array([[(1, 2.0)]], type="1 * var * (int64, float64)")["1"].to_list() == [[2.0]]
    with pytest.raises(KeyError, match=r"positions: '0', '1'"):
        t["2"]
    with pytest.raises(NotSupportedError, match=r"t\['0'\] \+ 1 \(fields: '0', '1'\)"):
        t + 1


def test_arrow_time64_ns_in_whole_microseconds():
    pa = pytest.importorskip("pyarrow")
    x = pa.array([1000, None, 86_399_999_999_000, 0], pa.time64("ns"))
    a = lazyk.from_arrow(x)
    assert str(a.type) == "4 * ?time"
    assert a.to_list() == x.to_pylist() == [dt.time(0, 0, 0, 1), None,
                                           dt.time(23, 59, 59, 999_999), dt.time(0)]
    assert lazyk.to_arrow(a).equals(pa.array([1, None, 86_399_999_999, 0], pa.time64("us")))
    assert lazyk.from_arrow(x.slice(2, 2)).to_list() == [dt.time(23, 59, 59, 999_999),
                                                         dt.time(0)]
    assert str(lazyk.from_arrow(pa.array([], pa.time64("ns"))).type) == "0 * time"
    rows = pa.array([[2000, None], [], None], pa.list_(pa.time64("ns")))
    r = lazyk.from_arrow(rows)
    assert str(r.type) == "3 * ?var * ?time" and r.to_list() == rows.to_pylist()
    # a null's slot may hold any value: it is not checked
    masked = pa.Array.from_buffers(pa.time64("ns"), 2, [pa.py_buffer(np.array([2], np.uint8)),
                                                        pa.py_buffer(np.array([7, 3000]))])
    assert lazyk.from_arrow(masked).to_list() == [None, dt.time(0, 0, 0, 3)]


def test_arrow_time64_ns_that_would_lose_nanoseconds_is_refused():
    pa = pytest.importorskip("pyarrow")
    table = pa.table({"a": [1, 2], "t": pa.array([1000, 1001], pa.time64("ns"))})
    with pytest.raises(NotSupportedError, match=r"column 't': Arrow type time64\[ns\]: value 1 "
                                                r"\(1001 ns since midnight\).*time64\('us'\)"):
        lazyk.from_arrow(table)
