"""Records read from Awkward and Arrow (`lazyk.arrays.buffers.ColumnArray`): their fields
are the columns and their C structs are built only when needed. Over random events with
lists of records (empty, missing, absent), what they give before and after the structs
are built, sliced, selected and pickled, equals Awkward's."""
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lazyk

ak = pytest.importorskip("awkward")
pa = pytest.importorskip("pyarrow")

_jet = st.fixed_dictionaries({"pt": st.floats(0, 100, width=32),
                              "q": st.one_of(st.none(), st.integers(-1, 1))})
_event = st.fixed_dictionaries({
    "met": st.floats(0, 100, width=32),
    "jets": st.lists(_jet, max_size=4),
    "muons": st.one_of(st.none(), st.lists(_jet, max_size=3)),
})



# (first: every field and option holds a value, so no field has Awkward's unknown type)
_FIRST = {"met": 1.0, "jets": [{"pt": 60.0, "q": 1}, {"pt": 1.0, "q": None}],
          "muons": [{"pt": 2.0, "q": None}, {"pt": 3.0, "q": -1}]}


def _same(got, want):
    return len(got) == len(want) and all(
        (g is None) == (w is None) and (w is None or g == pytest.approx(w, rel=1e-6))
        for g, w in zip(got, want))


@given(st.lists(_event, max_size=11), st.integers(0, 12), st.integers(0, 12),
       st.sampled_from(["awkward", "arrow"]))
def test_column_records_equal_awkward_before_and_after_building(data, lo, hi, source):
    events = ak.Array([_FIRST] + data)
    hi = max(lo, hi)  # (Awkward raises on some reversed slices of records)
    if source == "awkward":
        x = lazyk.from_awkward(events)
    else:
        x = lazyk.from_arrow(ak.to_arrow_table(events))
    assert x.readonly and not x.built
    # reads of the columns: lengths, sums, a selection, a slice
    assert lazyk.num(x.jets).eval().to_list() == ak.num(events.jets).to_list()
    assert _same(lazyk.sum(x.muons.pt, axis=1).eval().to_list(),
                 ak.sum(events.muons.pt, axis=1).to_list())
    picked = x.jets[x.jets.pt > 50].q.eval().to_list()
    assert picked == events.jets[events.jets.pt > 50].q.to_list()
    assert x[lo:hi].jets.pt.to_list() == events[lo:hi].jets.pt.to_list()
    assert x.muons[lo:hi].q.to_list() == events.muons[lo:hi].q.to_list()
    assert lazyk.to_awkward(x).to_list() == events.to_list()
    back = pickle.loads(pickle.dumps(x[lo:hi]))
    assert not x.built and not back.built
    assert back.to_list() == events[lo:hi].to_list()
    # what needs the structs whole
    assert x.muons[lo:hi].to_list() == events.muons[lo:hi].to_list()
    assert x[lo:hi].to_list() == events[lo:hi].to_list()
    assert x.to_list() == events.to_list() and x.built
    assert x.jets.pt.to_list() == events.jets.pt.to_list()
    np.testing.assert_array_equal(np.asarray(x.met), np.asarray(events.met))


def test_a_field_of_optional_records_in_rows_of_size_0():
    x = lazyk.array([[], []], type="2 * 0 * ?{a: ?int64}")
    assert x["a"].to_list() == [[], []] and str(x["a"].type) == "2 * 0 * ?int64"
    assert lazyk.num(x).eval().to_list() == [0, 0]


def test_evaluated_records_read_their_columns_and_copy_writable():
    """`zip(...).eval()` reads each field from its computed column (read-only, nothing
    copied); `.copy()` of it, or of records read from Awkward, is writable C structs."""
    x, y = lazyk.array([[1.0, 2.0], [], [3.0]]), lazyk.array([[4, 5], [], [6]])
    r = lazyk.zip({"a": x * 2, "b": y}).eval()
    assert isinstance(r, lazyk.arrays.buffers.ColumnArray) and r.readonly and not r.built
    assert r.to_list() == [[{"a": 2.0, "b": 4}, {"a": 4.0, "b": 5}], [], [{"a": 6.0, "b": 6}]]
    with pytest.raises(ValueError, match="read-only"):
        r[0] = r[2]
    for ro in (r, lazyk.from_awkward(ak.Array([{"x": 1, "y": [1, 2]}, {"x": 2, "y": []}]))):
        c = ro.copy()
        assert not c.readonly and c.type == ro.type and c.to_list() == ro.to_list()
    c = lazyk.zip({"a": lazyk.array([1.0, 2.0]), "b": lazyk.array([3, 4])}).eval().copy()
    c[0] = {"a": 5.0, "b": 6}
    assert c.to_list() == [{"a": 5.0, "b": 6}, {"a": 2.0, "b": 4}]
