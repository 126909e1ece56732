"""Dates, times, timestamps and durations to and from Arrow and Awkward: values, types and
missing state (NaT and nulls), for every NumPy unit, fixed and ragged, against pyarrow's
and Awkward's own conversions."""
import datetime as dt

import numpy as np
import pytest

import lazyk
from lazyk.errors import NotSupportedError

pa = pytest.importorskip("pyarrow")
ak = pytest.importorskip("awkward")

DAYS = np.array(["2024-01-01", "1969-12-31", "NaT", "2025-06-30", "1900-03-01"], "M8[D]")
# Arrow's unit for each NumPy datetime unit: the calendar ones as date32 (days)
DATE_UNITS = {"Y": "D", "M": "D", "W": "D", "D": "D", "h": "s", "m": "s", "s": "s",
              "ms": "ms", "us": "us", "ns": "ns"}
SPAN_UNITS = {"W": "s", "D": "s", "h": "s", "m": "s", "s": "s", "ms": "ms", "us": "us",
              "ns": "ns"}
OFFSETS = np.array([0, 2, 2, 5])


def dates(unit):
    return (DAYS.astype(f"M8[{unit}]") + np.array([0, 1, 0, 2, 3]).astype(f"m8[{unit}]")
            if unit not in "YMWD" else DAYS.astype(f"M8[{unit}]"))


def spans(unit):
    return np.array([1, -2, "NaT", 40, 0], f"m8[{unit}]")


def reference(v, to):
    """pyarrow's own array of `v` in Arrow's unit `to` (NaT is null there)."""
    return pa.array(v.astype(f"{v.dtype.str[1:3]}[{to}]"))


@pytest.mark.parametrize("unit", list(DATE_UNITS))
def test_datetimes_to_arrow_every_unit_fixed_and_ragged(unit):
    v = dates(unit)
    ref = reference(v, DATE_UNITS[unit])
    assert ref.null_count == 1
    out = lazyk.to_arrow(lazyk.array(v))
    assert out.type == ref.type and out.equals(ref), (out, ref)
    assert _ticks(out) == _ticks(ref)
    rows = lazyk.to_arrow(lazyk.from_offsets(OFFSETS, v))
    assert rows.type.value_type == ref.type
    assert _ticks(rows) == [_ticks(ref)[a:b] for a, b in zip(OFFSETS, OFFSETS[1:])]
    big = lazyk.to_arrow(lazyk.array(v.astype(v.dtype.newbyteorder(">"))))
    assert big.equals(ref)


@pytest.mark.parametrize("unit", list(SPAN_UNITS))
def test_timedeltas_to_arrow_every_unit(unit):
    v = spans(unit)
    ref = reference(v, SPAN_UNITS[unit])
    out = lazyk.to_arrow(lazyk.array(v))
    assert out.type == ref.type and out.equals(ref) and out.null_count == 1
    rows = lazyk.to_arrow(lazyk.from_offsets(OFFSETS, v))
    assert _ticks(rows) == [_ticks(ref)[a:b] for a, b in zip(OFFSETS, OFFSETS[1:])]


def _ticks(a):
    """Arrow dates and times as Python ints (nanosecond values become Python objects only
    through pandas)."""
    listed = pa.types.is_list(a.type) or pa.types.is_large_list(a.type)
    t = a.type.value_type if listed else a.type
    width = pa.int32() if t == pa.date32() else pa.int64()
    return a.cast(pa.large_list(width) if listed else width).to_pylist()


def test_the_reported_date_arrays():
    v = np.array(["2024-01-01", "2024-03-01", "2025-06-30"], dtype="datetime64[D]")
    assert lazyk.to_arrow(lazyk.array(v)).to_pylist() == pa.array(v).to_pylist()
    x = ak.Array([[np.datetime64("2024-01-01", "D"), np.datetime64("2024-02-01", "D")], []])
    assert lazyk.to_arrow(lazyk.from_awkward(x)).to_pylist() == \
        [[dt.date(2024, 1, 1), dt.date(2024, 2, 1)], []]


def test_lazyk_rows_and_options_of_dates_to_arrow():
    a = lazyk.array([["2024-01-01", None], [], ["1999-12-31"]], type="3 * var * ?date")
    out = lazyk.to_arrow(a)
    assert out.type.value_type == pa.date32()
    assert out.to_pylist() == [[dt.date(2024, 1, 1), None], [], [dt.date(1999, 12, 31)]]
    assert out.to_pylist() == a.to_list()
    r = lazyk.array([{"d": "2024-01-01", "t": 5}], type="1 * {d: date, t: time}")
    assert lazyk.to_arrow(r).type == pa.struct([("d", pa.date32()), ("t", pa.time64("us"))])
    assert lazyk.to_arrow(r).to_pylist() == [{"d": dt.date(2024, 1, 1),
                                              "t": dt.time(0, 0, 0, 5)}]


def test_time_of_day_to_arrow_as_time64():
    a = lazyk.array([[1, None], [86_399_999_999]], type="2 * var * ?time")
    out = lazyk.to_arrow(a)
    assert out.type.value_type == pa.time64("us")
    assert out.to_pylist() == [[dt.time(0, 0, 0, 1), None], [dt.time(23, 59, 59, 999999)]]
    fixed = lazyk.to_arrow(lazyk.array([[1, 2]], type="1 * 2 * time"))
    assert fixed.type == pa.list_(pa.time64("us"), 2)


@pytest.mark.parametrize("v, what", [
    (np.array([1], "M8[ps]"), "datetime[unit='ps']"),
    (np.array([1], "m8[M]"), "timedelta[unit='M']"),
    (np.array([1], "m8[Y]"), "timedelta[unit='Y']"),
    (np.array([1], "m8[as]"), "timedelta[unit='as']"),
    (np.array([2 ** 40], "M8[D]"), "date32"),
    (np.array([2 ** 62], "M8[h]"), "overflow"),
    (np.array([2 ** 61], "m8[W]"), "overflow"),
])
def test_units_and_values_arrow_cannot_hold_are_refused(v, what):
    with pytest.raises(NotSupportedError, match=what.replace("[", r"\[")):
        lazyk.to_arrow(lazyk.array(v))


@pytest.mark.parametrize("unit", ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps"])
def test_datetimes_to_awkward_keep_unit_and_nat(unit):
    for v in (dates(unit) if unit != "ps" else np.array([1, "NaT", 3, 4, 5], "M8[ps]"), spans(unit)):
        out = lazyk.to_awkward(lazyk.array(v.astype(v.dtype.newbyteorder(">"))))
        back = ak.to_numpy(out)
        assert back.dtype == v.dtype and back.view(np.int64).tolist() == \
            v.view(np.int64).tolist()
        rows = lazyk.to_awkward(lazyk.from_offsets(OFFSETS, v))
        assert ak.to_numpy(ak.flatten(rows)).view(np.int64).tolist() == \
            v.view(np.int64).tolist()
        assert lazyk.from_awkward(rows).type == lazyk.from_offsets(OFFSETS, v).type


def arrow_cases():
    d = [dt.date(2024, 1, 1), None, dt.date(1969, 7, 20)]
    yield pa.array(d, pa.date32()), "3 * ?date", pa.array(d, pa.date32())
    yield pa.array(d, pa.date64()), "3 * ?date", pa.array(d, pa.date32())
    for unit in ("s", "ms", "us", "ns"):
        ts = pa.array([10 ** 9, None, -5], pa.timestamp(unit))
        yield ts, f"3 * ?datetime[unit='{unit}']" if unit != "us" else "3 * ?datetime", ts
        zoned = pa.array([10 ** 9, 7], pa.timestamp(unit, tz="Europe/Paris"))  # UTC values
        yield zoned, f"2 * datetime[unit='{unit}']" if unit != "us" else "2 * datetime", \
            pa.array([10 ** 9, 7], pa.timestamp(unit))
        du = pa.array([3, None, -4], pa.duration(unit))
        yield du, f"3 * ?timedelta[unit='{unit}']", du
    yield pa.array([1, None, 86399], pa.time32("s")), "3 * ?time", \
        pa.array([10 ** 6, None, 86399 * 10 ** 6], pa.time64("us"))
    yield pa.array([1, 2], pa.time32("ms")), "2 * time", pa.array([1000, 2000], pa.time64("us"))
    yield pa.array([1, None], pa.time64("us")), "2 * ?time", pa.array([1, None], pa.time64("us"))


@pytest.mark.parametrize("a, type, back", list(arrow_cases()), ids=lambda x: str(getattr(
    x, "type", x)))
def test_from_arrow_temporal_at_every_depth(a, type, back):
    x = lazyk.from_arrow(a)
    assert str(x.type) == type
    assert lazyk.to_arrow(x).equals(back), (lazyk.to_arrow(x), back)
    elem = type.split(" * ", 1)[1]
    rows = pa.ListArray.from_arrays(pa.array([0, 1, 1, len(a)], pa.int32()), a)
    r = lazyk.from_arrow(rows)
    assert str(r.type) == f"3 * var * {elem}"
    assert lazyk.to_arrow(r).flatten().equals(back)
    s = pa.StructArray.from_arrays([a, pa.array(range(len(a)))], names=["when", "i"])
    rec = lazyk.from_arrow(s)
    assert str(rec.type) == f"{len(a)} * {{when: {elem}, i: int64}}"
    assert lazyk.to_arrow(rec).field("when").equals(back)
    chunked = pa.chunked_array([a, a])
    assert lazyk.to_arrow(lazyk.from_arrow(chunked)).equals(pa.concat_arrays([back, back]))


def test_parquet_table_with_a_date_column(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({"d": pa.array([dt.date(2024, 1, 1), None, dt.date(2000, 2, 29)]),
                      "ts": pa.array([1, 2, None], pa.timestamp("ms")),
                      "tags": pa.array([[dt.date(2024, 5, 1)], [], None]),
                      "x": [1.5, 2.5, 3.5]})
    pq.write_table(table, tmp_path / "t.parquet")
    x = lazyk.from_arrow(pq.read_table(tmp_path / "t.parquet"))
    assert str(x.type) == "3 * {d: ?date, ts: ?datetime[unit='ms'], tags: ?var * date, " \
        "x: float64}"
    assert x.to_list() == table.to_pylist()
    assert lazyk.to_arrow(x["d"]).equals(table["d"].chunk(0))


def test_from_arrow_refusals_name_the_column_and_field():
    ns = pa.array([1], pa.time64("ns"))
    with pytest.raises(NotSupportedError, match=r"time64\[ns\].*time64\('us'\)"):
        lazyk.from_arrow(ns)
    interval = pa.array([pa.MonthDayNano([1, 2, 3])], pa.month_day_nano_interval())
    table = pa.table({"a": [1], "c": pa.StructArray.from_arrays([interval], names=["gap"])})
    with pytest.raises(NotSupportedError, match=r"column 'c': field 'gap': Arrow type "
                                                r"month_day_nano_interval"):
        lazyk.from_arrow(table)
    table = pa.table({"a": [1], "t": pa.array([[1]], pa.list_(pa.time64("ns")))})
    with pytest.raises(NotSupportedError, match=r"column 't': list values: .*time64\[ns\]"):
        lazyk.from_arrow(table)


def test_time_of_day_reads_as_python_times():
    a = lazyk.array([[1, None], [86_399_999_999]], type="2 * var * ?time")
    assert a.to_list() == [[dt.time(0, 0, 0, 1), None], [dt.time(23, 59, 59, 999999)]]
    assert lazyk.from_arrow(pa.array([dt.time(1, 2, 3), None])).to_list() == \
        [dt.time(1, 2, 3), None]
    with pytest.raises(ValueError, match="not a time of day"):
        lazyk.array(np.array([-1], "m8[us]"), type="1 * time").to_list()


def test_big_endian_dates_times_and_strings_read_their_values():
    d = np.array(["2024-01-02", "NaT"], dtype=">M8[D]")
    assert lazyk.array(d).to_list() == [dt.date(2024, 1, 2), None]
    m = np.array([5, "NaT"], dtype=">m8[s]")
    assert lazyk.array(m).to_list() == [dt.timedelta(seconds=5), None]
    r = np.array([(1, "2024-01-02", "ab")], dtype=[("a", ">i4"), ("d", ">M8[D]"), ("s", ">U2")])
    got = lazyk.array(r)
    assert got.to_list() == [{"a": 1, "d": dt.date(2024, 1, 2), "s": "ab"}]
    assert str(got.type) == "1 * {a: >int32, d: date, s: fixed_string[2, 'utf32']}"


def test_python_dates_times_and_durations_infer_their_types():
    a = lazyk.array([dt.date(2024, 1, 2), None])
    assert str(a.type) == "2 * ?date" and a.to_list() == [dt.date(2024, 1, 2), None]
    b = lazyk.array([dt.datetime(2024, 1, 2, 3, 4)])
    assert str(b.type) == "1 * datetime" and b.to_list() == [dt.datetime(2024, 1, 2, 3, 4)]
    c = lazyk.array([dt.time(1, 2), dt.time(23, 59, 59, 999999), None])
    assert str(c.type) == "3 * ?time"
    assert c.to_list() == [dt.time(1, 2), dt.time(23, 59, 59, 999999), None]
    d = lazyk.array([[dt.timedelta(seconds=5)], []])
    assert d.to_list() == [[dt.timedelta(seconds=5)], []]


def test_lazy_work_over_records_with_a_date_field_names_the_field():
    t = pa.table({"x": [1.0, 2.0, 3.0], "ts": pa.array([0, 10, 20], pa.timestamp("s"))})
    ev = lazyk.from_arrow(t)
    assert ev.x[ev.x > 1].eval().to_list() == [2.0, 3.0]  # (a field on its own)
    with pytest.raises(lazyk.UnsupportedOperandError, match=r"field 'ts' of records .* "
                       r"datetime64\[s\].* zip the fields it needs first"):
        ev[ev.x > 1]
    r = lazyk.zip({"x": ev["x"]})
    assert r[r.x > 1].eval().to_list() == [{"x": 2.0}, {"x": 3.0}]
