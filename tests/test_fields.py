"""Awkward's `fields`, `with_field`, `without_field`, `to_list`, `to_numpy`, `from_iter`,
`from_numpy`, `unflatten` and `run_lengths`, against Awkward."""
from __future__ import annotations

import numpy as np
import pytest

import lazyk

ak = pytest.importorskip("awkward")

PT = [[50.0, 20.0, 31.0], [], [35.0]]
ETA = [[0.1, 2.0, -0.5], [], [-1.0]]


def jets():
    return (lazyk.zip({"pt": lazyk.array(PT), "eta": lazyk.array(ETA)}),
            ak.zip({"pt": ak.Array(PT), "eta": ak.Array(ETA)}))


def test_fields_with_field_and_without_field_as_awkward():
    lj, aj = jets()
    assert lazyk.fields(lj) == ak.fields(aj) == ["pt", "eta"]
    assert lazyk.fields(lj.eval()) == ["pt", "eta"] and lazyk.fields(lj.pt) == []
    got = lazyk.with_field(lj, lj.pt * 2, "pt2")
    want = ak.with_field(aj, aj.pt * 2, "pt2")
    assert lazyk.fields(got) == ak.fields(want)
    assert got.eval().to_list() == want.to_list()
    replaced = lazyk.with_field(lj, lj.eta * 0, "eta")  # (a field of that name: replaced)
    assert replaced.eval().to_list() == ak.with_field(aj, aj.eta * 0, "eta").to_list()
    ev_l = lazyk.zip({"Jet": lj, "met": lazyk.array([1.0, 2.0, 3.0])}, depth_limit=1)
    ev_a = ak.zip({"Jet": aj, "met": ak.Array([1.0, 2.0, 3.0])}, depth_limit=1)
    deep = lazyk.with_field(ev_l, ev_l.Jet.pt + 1, ("Jet", "pt1"))
    assert deep.eval().to_list() == ak.with_field(ev_a, ev_a.Jet.pt + 1,
                                                  ("Jet", "pt1")).to_list()
    # a per-event value meets per-object fields from the right: [:, None]
    per = lazyk.with_field(lj, lazyk.array([1.0, 2.0, 3.0])[:, None], "met")
    assert per.met.eval().to_list() == [[1.0, 1.0, 1.0], [], [3.0]]
    assert lazyk.without_field(lj, "eta").eval().to_list() == \
        ak.without_field(aj, "eta").to_list()
    assert lazyk.fields(lazyk.without_field(ev_l, ("Jet", "eta"))["Jet"]) == ["pt"]
    # missing records stay missing
    masked = lazyk.mask(lj, lj.pt > 30)
    assert lazyk.with_field(masked, masked.pt * 2, "x").eval().to_list() == \
        ak.with_field(ak.mask(aj, aj.pt > 30), ak.mask(aj, aj.pt > 30).pt * 2, "x").to_list()
    with pytest.raises(KeyError, match="no field 'phi'"):
        lazyk.without_field(lj, "phi")
    with pytest.raises(TypeError, match="where is a field name"):
        lazyk.without_field(lj, 5)
    assert lazyk.fields(np.zeros(2, dtype=[("x", "f8")])) == ["x"]  # (as ak.fields)
    assert lazyk.fields([{"a": 1}]) == ["a"] and lazyk.fields([1, 2]) == []
    with pytest.raises(TypeError, match="with_field takes records"):
        lazyk.with_field(lj.pt, lj.pt, "x")
    with pytest.raises(TypeError, match="where is a field name"):
        lazyk.with_field(lj, lj.pt, 3)
    with pytest.raises(lazyk.ShapeError):
        lazyk.with_field(lj, lazyk.array([[1.0, 2.0], [], [2.0]]), "x").eval()


def test_to_list_to_numpy_from_iter_from_numpy():
    lj, aj = jets()
    assert lazyk.to_list(lj) == ak.to_list(aj)
    assert lazyk.to_list(lj.pt * 2) == ak.to_list(aj.pt * 2)
    a = np.arange(6.0).reshape(2, 3)
    got = lazyk.to_numpy(lazyk.from_numpy(a) * 2)
    assert isinstance(got, np.ndarray) and got.tolist() == (a * 2).tolist()
    assert lazyk.from_iter(x for x in [[1, None], []]).to_list() == \
        ak.from_iter(x for x in [[1, None], []]).to_list()
    with pytest.raises(lazyk.NotSupportedError):
        lazyk.to_numpy(lj.pt)
    got = lazyk.to_numpy(lazyk.array([1, None, 3]))  # (missing values: masked, as Awkward's)
    want = ak.to_numpy(ak.Array([1, None, 3]))
    assert got.dtype == want.dtype and got.mask.tolist() == want.mask.tolist()
    assert got.filled(0).tolist() == want.filled(0).tolist()
    two = lazyk.to_numpy(lazyk.array([[1.0, None], [None, 4.0]], type="2 * 2 * ?float64"))
    assert two.mask.tolist() == [[False, True], [True, False]] and two[1, 1] == 4.0
    with pytest.raises(ValueError, match="allow_missing=False"):
        lazyk.to_numpy(lazyk.array([1, None]), allow_missing=False)
    with pytest.raises(TypeError, match="from_numpy takes a NumPy array, not list"):
        lazyk.from_numpy([1, 2])
    with pytest.raises(TypeError, match="not a str"):
        lazyk.from_iter("abc")


def test_from_iter_reads_tuples_as_tuple_records_as_awkward():
    for items in ([(1, 2.0), (3, 4.0)], [[(1, "a")], [], [(2, "bb"), (3, "c")]],
                  [(1, [1, 2]), None, (2, [])], [{"x": (1, 2)}, {"x": (3, 4)}],
                  [(1, (2, 3.5))], [(1, None), (None, 2)], [(), ()], [[1, 2], [3]]):
        got, want = lazyk.from_iter(items), ak.from_iter(items)
        assert str(got.type) == str(want.type) and got.to_list() == want.to_list()
    assert str(lazyk.array([(1, 2.0), (3, 4.0)]).type) == "2 * 2 * float64"  # (NumPy's)
    with pytest.raises(lazyk.ArrayConstructionError, match="item \\[1\\] has 3"):
        lazyk.from_iter([(1, 2), (1, 2, 3)])


def test_to_numpy_masks_missing_rows_whole_as_awkward():
    """Missing rows over fixed dims (`?n * T`, as padding rows that may be missing
    gives): a masked array with the row masked whole, as `ak.to_numpy`."""
    for items, t in (([[1, 2], None, [3, 4]], "3 * ?2 * int64"),
                     ([[1.5, None], None], "2 * ?2 * ?float64"),
                     ([[[1, 2, 3]], None], "2 * ?1 * 3 * float32"),
                     ([[[1], [2]], [None, [3]]], "2 * 2 * ?1 * int16"),
                     ([None, []], "2 * ?0 * int8")):
        got = lazyk.to_numpy(lazyk.array(items, type=t))
        want = ak.to_numpy(ak.Array(items))
        assert isinstance(got, np.ma.MaskedArray) and got.shape == want.shape
        assert got.dtype == np.dtype(t.split("* ")[-1].lstrip("?"))
        assert got.mask.tolist() == np.ma.getmaskarray(want).tolist()
        assert got.filled(0).tolist() == want.filled(0).tolist()
    rows = lazyk.array([[1.0, 2.0, 3.0], None, [4.0]])  # padded and filled as the docs say
    got = lazyk.to_numpy(lazyk.fill_none(lazyk.pad_none(rows, 2, axis=1, clip=True), 0))
    assert got.mask.tolist() == [[False, False], [True, True], [False, False]]
    assert got.filled(-1).tolist() == [[1.0, 2.0], [-1.0, -1.0], [4.0, 0.0]]
    with pytest.raises(ValueError, match="allow_missing=False"):
        lazyk.to_numpy(lazyk.array([[1], None], type="2 * ?1 * int64"), allow_missing=False)


def test_to_numpy_of_strings_as_awkward():
    """Strings and bytes over fixed dims: a NumPy `U` / `S` array; missing ones masked."""
    for items in (["ab", "c"], [["ab", "c"], ["", "e"]], ["ab", None], [b"ab", b"c"],
                  [b"x", None, b"yz"]):
        got, want = lazyk.to_numpy(lazyk.array(items)), ak.to_numpy(ak.Array(items))
        assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape
        assert np.ma.getmaskarray(got).tolist() == np.ma.getmaskarray(want).tolist()
        assert np.ma.MaskedArray(got).compressed().tolist() == \
            np.ma.MaskedArray(want).compressed().tolist()
    with pytest.raises(ValueError, match="allow_missing=False"):
        lazyk.to_numpy(lazyk.array(["a", None]), allow_missing=False)
    with pytest.raises(lazyk.NotSupportedError):
        lazyk.to_numpy(lazyk.array([["a"], ["b", "c"]]))


def test_unflatten_and_run_lengths_as_awkward():
    v = np.array([1, 2, 3, 4, 5, 6])
    for counts in ([2, 0, 3, 1], np.array([6]), [0, 0, 6, 0], 3, 2):
        got = lazyk.unflatten(lazyk.array(v), counts)
        want = ak.unflatten(v, counts)
        assert got.to_list() == want.to_list(), counts
        assert (str(got.type).split(" * ")[1] == "var") == isinstance(counts, list) or \
            isinstance(counts, np.ndarray)
    assert lazyk.unflatten(lazyk.array(v) * 2, lazyk.array([1, 5])).to_list() == \
        [[2], [4, 6, 8, 10, 12]]
    assert lazyk.unflatten(np.arange(0), []).to_list() == []  # (as Awkward's)
    with pytest.raises(lazyk.ShapeError, match="add up to 5 .*values are 6"):
        lazyk.unflatten(v, [2, 3])
    with pytest.raises(lazyk.ShapeError, match="lists of 4"):
        lazyk.unflatten(v, 4)
    with pytest.raises(lazyk.NotSupportedError, match="axis 0 only"):
        lazyk.unflatten(v, [6], axis=1)
    for data in ([1, 1, 2, 3, 3, 3], [], [7]):
        assert lazyk.run_lengths(lazyk.array(data, type=f"{len(data)} * int64")).to_list() \
            == ak.run_lengths(ak.Array(np.array(data, np.int64))).to_list()
    rows = [[1, 1, 2], [], [2, 2], [3], [3, 3, 1, 1, 1]]
    assert lazyk.run_lengths(lazyk.array(rows)).to_list() == \
        ak.run_lengths(ak.Array(rows)).to_list()
    with pytest.raises(lazyk.NotSupportedError, match="run_lengths of"):
        lazyk.run_lengths(lazyk.array([[1, None]]))
    for bad in (lazyk.array([1, None, 2]), lazyk.array(["a", "a"])):
        with pytest.raises(lazyk.NotSupportedError, match="numbers without missing values"):
            lazyk.run_lengths(bad)
    assert lazyk.unflatten(np.arange(3), np.array([1, 2], np.uint64)).to_list() == \
        [[0], [1, 2]]
    with pytest.raises(lazyk.NotSupportedError, match="counts that may be missing"):
        lazyk.unflatten(np.arange(6.0), lazyk.array([2, None, 4]))
    p = lazyk.placeholder("x", "N * int64")  # (computed at once: not over parameters)
    for call in (lambda: lazyk.run_lengths(p), lambda: lazyk.unflatten(p * 2, [1, 1]),
                 lambda: lazyk.unflatten(np.arange(3), p)):
        with pytest.raises(lazyk.NotSupportedError, match="computed at once.*parameter 'x'"):
            call()


def test_a_field_set_on_lazy_records_as_on_awkward_arrays():
    lj, aj = jets()
    lj["pt2"] = lj.pt * 2
    aj["pt2"] = aj.pt * 2
    lj["eta"] = abs(lj.eta)  # (a field of that name: replaced in place)
    aj["eta"] = abs(aj.eta)
    assert lazyk.fields(lj) == ak.fields(aj) == ["pt", "eta", "pt2"]
    assert lj.eval().to_list() == aj.to_list()
    ev = lazyk.zip({"Jet": lj, "met": lazyk.array([1.0, 2.0, 3.0])}, depth_limit=1)
    ev_a = ak.zip({"Jet": aj, "met": ak.Array([1.0, 2.0, 3.0])}, depth_limit=1)
    ev["Jet", "ht"] = ev.Jet.pt + ev.Jet.pt2
    ev_a["Jet", "ht"] = ev_a.Jet.pt + ev_a.Jet.pt2
    ev["nj"] = lazyk.num(ev.Jet.pt, axis=1)
    ev_a["nj"] = ak.num(ev_a.Jet.pt, axis=1)
    assert ev.eval().to_list() == ev_a.to_list()
    with pytest.raises(TypeError, match="where is a field name"):
        lj[3] = lj.pt


def test_a_field_set_on_records_taken_from_others_leaves_the_others_alone():
    j0 = lazyk.zip({"pt": lazyk.array([[45.0, 40.0], [], [50.0]])})
    e = lazyk.zip({"Jet": j0, "met": lazyk.array([1.0, 2.0, 3.0])}, depth_limit=1)
    j = e.Jet
    j["pt"] = j.pt * 1000
    j["y"] = j.pt
    assert lazyk.to_list(e.Jet.pt) == lazyk.to_list(j0.pt) == [[45.0, 40.0], [], [50.0]]
    assert lazyk.fields(e.Jet) == lazyk.fields(j0) == ["pt"]
    assert lazyk.fields(j) == ["pt", "y"] and lazyk.to_list(j.y)[0] == [45000.0, 40000.0]
    e["Jet", "z"] = e.Jet.pt + 1  # (a path sets the field of e's own Jet)
    assert lazyk.fields(e.Jet) == ["pt", "z"] and lazyk.fields(j0) == ["pt"]


def test_a_new_field_on_an_array_of_records_names_with_field():
    r = lazyk.array([{"x": 1, "y": 2.0}, {"x": 2, "y": 3.0}])
    with pytest.raises(KeyError, match="lazyk.with_field"):
        r["z"] = r.x * 10
    got = lazyk.with_field(r, r.x * 10, "z").eval()
    assert got.to_list() == [{"x": 1, "y": 2.0, "z": 10}, {"x": 2, "y": 3.0, "z": 20}]


def test_a_field_set_as_an_attribute_as_by_name():
    s = np.zeros(3, dtype=[("a", "f8"), ("b", "i4")])
    s["a"], s["b"] = [1.0, 2.0, 3.0], [4, 5, 6]
    r = lazyk.array(s.copy())
    r.a += 1  # as r["a"] += 1, into the records' memory
    r.b = np.array([7, 8, 9])
    assert r.to_list() == [{"a": 2.0, "b": 7}, {"a": 3.0, "b": 8}, {"a": 4.0, "b": 9}]
    assert r.a.type == lazyk.dshape("3 * float64") and r.b.type == lazyk.dshape("3 * int32")
    lists = lazyk.array([{"x": 1, "y": [1.0, 2.0]}, {"x": 2, "y": []}])
    lists.x *= 10
    assert lists.to_list() == [{"x": 10, "y": [1.0, 2.0]}, {"x": 20, "y": []}]
    with pytest.raises(AttributeError, match="no field 'z'.*with_field"):
        r.z = 1
    with pytest.raises(AttributeError, match="no field 'foo'"):
        lazyk.array(np.arange(3.0)).foo = 1
    with pytest.raises(AttributeError):
        r.shape = (3,)
    lj, aj = jets()  # lazy records: r.pt = ... is r["pt"] = ...
    lj.pt = lj.pt * 2
    lj.eta += 1
    aj["pt"], aj["eta"] = aj.pt * 2, aj.eta + 1
    assert lazyk.fields(lj) == ["pt", "eta"] and lj.eval().to_list() == aj.to_list()
    with pytest.raises(AttributeError, match="no field 'pt2'.*r\\['pt2'\\] = value"):
        lj.pt2 = lj.pt


def test_an_in_place_operator_on_a_field_of_missing_records_says_why_it_is_read_only():
    r = lazyk.array([{"x": 1.0, "y": 2}, None, {"x": 3.0, "y": 4}])
    for write in (lambda: r.__setitem__("x", 5.0), lambda: r["x"].__iadd__(1)):
        with pytest.raises(ValueError, match="field of records that may be missing"):
            write()
    r[0] = {"x": 5.0, "y": 6}  # (whole records are written)
    assert r.to_list() == [{"x": 5.0, "y": 6}, None, {"x": 3.0, "y": 4}]
