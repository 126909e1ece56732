"""Lazy records (`lazyk.zip`, and the records of combinations / cartesian) against Awkward
Array 2's `ak.zip`: depth_limit, tuples and records, fields that are records, fields of
different dims, missing rows, `.fields`, `.type`, `to_list`, indexing, row operations and
several results evaluated together."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import lazyk
from tests import ragged_strategies as S
from tests.test_ragged_reference import same

ak = pytest.importorskip("awkward")
from tests.test_ragged_reference import ak_array  # noqa: E402

PT = [[1.0, 2.0], [], [3.0]]


def _fixed_missing_below(t: str, depth: int) -> bool:
    """Whether a field of type `t` keeps a fixed dim of missing values (`4 * ?T`) inside
    records at `depth` (lazyk's records are C structs: no such field)."""
    dims = t.split(" * ")[depth:-1]
    return t.split(" * ")[-1].startswith("?") and any(not d.lstrip("?").startswith("var")
                                                      for d in dims)


@settings(max_examples=25, deadline=None)
@given(S.ragged_pair(S.LAYOUTS + S.QNEST_LAYOUTS, S.NUMERIC, own_rows=True), st.data())
def test_zip_matches_awkward(pair, data):
    t1, d1, t2, d2 = pair
    x, y = lazyk.array(d1, type=t1), lazyk.array(d2, type=t2)
    ax, ay = ak_array(t1, d1), ak_array(t2, d2)
    nd = x.type.ndim
    limit = data.draw(st.sampled_from([None] + list(range(1, nd + 1))), label="depth_limit")
    depth = nd if limit is None else limit
    assume(not _fixed_missing_below(t1, depth) and not _fixed_missing_below(t2, depth))
    named = data.draw(st.booleans(), label="named")
    arrays, theirs = ({"x": x, "y": y}, {"x": ax, "y": ay}) if named else ((x, y), (ax, ay))
    got = lazyk.zip(arrays, depth_limit=limit)
    want = ak.zip(theirs, depth_limit=limit)
    assert got.fields == want.fields == (["x", "y"] if named else ["0", "1"])
    assert got.ndim == got.depth == depth
    value = got.eval()
    assert same(value.to_list(), want.to_list()), (t1, t2, limit)
    assert str(value.type) == str(got.type)
    # the field, its rows missing where any field's are (Awkward's)
    assert same(got[got.fields[1]].eval().to_list(), want[want.fields[1]].to_list())


def test_fields_of_other_dims_below_the_records():
    pt, n = lazyk.array(PT), lazyk.array([2, 0, 1])
    apt, an = ak.Array(PT), ak.Array([2, 0, 1])
    r = lazyk.zip({"pt": pt, "n": n}, depth_limit=1)
    assert str(r.type) == "3 * {pt: var * float64, n: int64}" == str(ak.zip(
        {"pt": apt, "n": an}, depth_limit=1).type)
    assert r.to_list() == ak.zip({"pt": apt, "n": an}, depth_limit=1).to_list()
    # lazyk broadcasts from the right, as NumPy: a per-list value meets its items as [:, None]
    assert lazyk.zip({"pt": pt, "n": n[:, None]}).to_list() == ak.zip({"pt": apt,
                                                                      "n": an}).to_list()
    # depth 2: fields of their own inner lists, a list of 1 stretching above the records
    x = lazyk.array([[[1.0], [2.0, 3.0]], [], [[4.0]]])
    c = lazyk.array([[7], [], [8]])[:, :, None]
    got = lazyk.zip({"x": x, "c": c}, depth_limit=2).to_list()
    assert got == [[{"x": [1.0], "c": [7]}, {"x": [2.0, 3.0], "c": [7]}], [],
                   [{"x": [4.0], "c": [8]}]]
    # a depth_limit beyond the fields' dims is a limit, as Awkward's
    assert lazyk.zip([pt, pt], depth_limit=5).to_list() == ak.zip([apt, apt],
                                                                  depth_limit=5).to_list()


def test_records_as_fields():
    pt, n = lazyk.array(PT), lazyk.array([2, 0, 1])
    apt, an = ak.Array(PT), ak.Array([2, 0, 1])
    inner, a_inner = lazyk.zip({"x": pt, "y": pt * 2}), ak.zip({"x": apt, "y": apt * 2})
    for fields, theirs, limit in (({"r": inner, "n": n}, {"r": a_inner, "n": an}, 1),
                                  ({"r": inner, "z": pt}, {"r": a_inner, "z": apt}, None)):
        got = lazyk.zip(fields, depth_limit=limit)
        want = ak.zip(theirs, depth_limit=limit)
        assert got.to_list() == want.to_list() and str(got.type) == str(want.type)
    # an array of records is a records field too, its fields views
    arr = inner.eval()
    got = lazyk.zip({"r": arr, "n": n}, depth_limit=1)
    assert got.r.x is not None and got.to_list() == ak.zip({"r": a_inner, "n": an},
                                                           depth_limit=1).to_list()
    assert [e.dtype for e in got.leaves()] == [np.float64, np.float64, np.int64]
    with pytest.raises(lazyk.ShapeError, match="depth_limit=1"):
        lazyk.zip({"r": lazyk.zip({"n": n}), "z": pt})  # its records above the zip's


def test_zero_d_records_and_missing_rows():
    pt = lazyk.array(PT)
    assert lazyk.zip({"s": lazyk.sum(pt), "m": lazyk.max(pt)}).to_list() == {"s": 6.0,
                                                                               "m": 3.0}
    q = lazyk.array([[1.0, 2.0], None, [3.0]], "3 * ?var * float64")
    got = lazyk.zip({"a": pt, "q": q})
    want = ak.zip({"a": ak.Array(PT), "q": ak.Array([[1.0, 2.0], None, [3.0]])})
    assert str(got.type) == "3 * ?var * {a: float64, q: float64}"  # missing in any field
    assert got.to_list() == want.to_list()


def test_indexing_and_row_operations_on_records():
    x = lazyk.array([[1.0, 2.0, 3.0], [], [4.0, 5.0]])
    ax = ak.Array([[1.0, 2.0, 3.0], [], [4.0, 5.0]])
    r, ar = lazyk.zip({"a": x, "b": x * 10}), ak.zip({"a": ax, "b": ax * 10})
    assert r[:, None].ndim == 3 and r[:, None].to_list() == ar[:, np.newaxis].to_list()
    pairs, a_pairs = lazyk.combinations(r, 2), ak.combinations(ar, 2)
    assert pairs.ndim == 2 and pairs["0"].ndim == 2 and len(pairs.leaves()) == 4
    assert lazyk.num(pairs).eval().to_list() == ak.num(a_pairs).to_list()
    assert lazyk.flatten(pairs).to_list() == ak.flatten(a_pairs).to_list()
    # firsts takes each field's first item: an empty list gives missing fields (Awkward:
    # a missing record)
    assert lazyk.firsts(pairs).to_list()[0] == ak.firsts(a_pairs).to_list()[0]
    both = lazyk.concatenate([pairs, pairs], axis=1)
    assert both.to_list() == ak.concatenate([a_pairs, a_pairs], axis=1).to_list()
    nested = lazyk.cartesian({"p": r, "q": x}, nested=True)
    assert nested.to_list() == ak.cartesian({"p": ar, "q": ax}, nested=True).to_list()


def test_records_evaluate_with_other_results():
    x = lazyk.array([[1.0, 2.0, 3.0], [4.0]])
    z, pairs = lazyk.zip({"x": x, "y": x + 1}), lazyk.combinations(x, 2)
    got_z, got_pairs, total = lazyk.evaluate(z, pairs, lazyk.sum(x))
    assert got_z.to_list() == [[{"x": 1.0, "y": 2.0}, {"x": 2.0, "y": 3.0},
                                {"x": 3.0, "y": 4.0}], [{"x": 4.0, "y": 5.0}]]
    assert got_pairs.to_list() == [[(1.0, 2.0), (1.0, 3.0), (2.0, 3.0)], []]
    assert float(total) == 10.0


def test_errors_name_the_field():
    x = lazyk.array(PT)
    r, t = lazyk.zip({"x": x}), lazyk.zip([x, x])
    assert t[1] is t["1"] and r.fields == ["x"]
    with pytest.raises(KeyError, match="no field 'z'"):
        r["z"]
    with pytest.raises(KeyError, match=r"no field 0 .* a tuple only; .* \(r\.eval\(\)\[0\] is "
                       "record 0"):
        r[0]
    with pytest.raises(AttributeError, match="no attribute 'z': no field 'z'"):
        r.z
    with pytest.raises(TypeError, match="field names are str"):
        lazyk.zip({1: x})
    with pytest.raises(TypeError, match="takes a dict"):
        lazyk.zip(x)
    with pytest.raises(ValueError, match="depth_limit must be None or an int >= 1"):
        lazyk.zip({"x": x}, depth_limit=0)
    with pytest.raises(ValueError, match="at least one field"):
        lazyk.zip({})
    with pytest.raises(lazyk.ShapeError, match=r"zip: the fields 'a', 'b' do not line up "
                       r"above the records: row 0"):
        lazyk.zip({"a": x, "b": lazyk.array([[1.0, 2.0, 3.0], [], [2.0]])}).eval()
    with pytest.raises(lazyk.ShapeError, match="zip"):
        lazyk.zip({"a": np.zeros((3, 2)), "b": np.zeros((4, 2))})


def test_an_array_of_records_selects_and_gathers_field_by_field():
    # as Awkward's: `jets[jets.pt > 30]`, `events[mask]`, `jets[argmax(..., keepdims=True)]`
    data = [{"met": 10.0, "jet": [{"pt": 50.0, "eta": 0.5}, {"pt": 20.0, "eta": -2.0}]},
            {"met": 20.0, "jet": []},
            {"met": 30.0, "jet": [{"pt": 35.0, "eta": 1.5}, {"pt": 40.0, "eta": 0.1}]}]
    ev, aev = lazyk.from_awkward(ak.Array(data)), ak.Array(data)
    jets, ajets = ev.jet, aev.jet
    got = jets[jets.pt > 30]
    assert isinstance(got, lazyk.Records) and got.type == lazyk.dshape("3 * var * {pt: float64, eta: float64}")
    assert got.to_list() == ajets[ajets.pt > 30].to_list()
    assert jets[jets.pt > 30].eta.eval().to_list() == [[0.5], [], [1.5, 0.1]]
    kept = ev[lazyk.num(ev.jet) > 0]
    assert kept.to_list() == aev[ak.num(aev.jet) > 0].to_list()
    assert kept.jet.pt.eval().to_list() == [[50.0, 20.0], [35.0, 40.0]]
    best = jets[lazyk.argmax(jets.pt, axis=1, keepdims=True)]
    want = ajets[ak.argmax(ajets.pt, axis=1, keepdims=True)].to_list()
    # the empty row's missing position: a missing record, as Awkward's
    assert want[1] == [None] and best.to_list() == want
    assert str(best.type) == "3 * 1 * ?{pt: ?float64, eta: ?float64}"
    want_pt = ajets.pt[ak.argmax(ajets.pt, axis=1, keepdims=True)].to_list()
    assert best.pt.eval().to_list() == want_pt == [[50.0], [None], [40.0]]
    # Awkward's own records work as lazyk.from_awkward reads them
    assert lazyk.num(ajets).eval().to_list() == [2, 0, 2]
    assert lazyk.firsts(ajets).pt.eval().to_list() == [50.0, None, 35.0]
    # an Awkward mask or Awkward positions index as lazyk's do
    assert ev[ak.num(aev.jet) > 0].met.eval().to_list() == [10.0, 30.0]
    assert jets.pt[ajets.pt > 30].eval().to_list() == ajets.pt[ajets.pt > 30].to_list()
    # lazy records convert as arrays do (evaluated first)
    assert lazyk.to_awkward(got).to_list() == ajets[ajets.pt > 30].to_list()
    with pytest.raises(TypeError, match="records or NumPy array, not dict"):
        lazyk.to_awkward({"pt": 1})
    # a mask of another length names the sizes and the records
    with pytest.raises(lazyk.ShapeError, match=r"size 3 in the array .* 2 in the mask .* "
                                               r"records 3 \* \{met"):
        ev[lazyk.array([True, False])]
    # a mask of other rows is the usual ShapeError, naming the row
    with pytest.raises(lazyk.ShapeError, match="row"):
        jets[lazyk.array([[True], [], [True, False]])].to_list()


def test_row_operations_see_a_per_event_field_stretched_to_the_lists():
    # lazyk.zip({"met": met[:, None], "pt": pt}): met stretches to pt's lists, in any order
    rows = [[5.0, 1.0, 9.0], [3.0], [], [8.0, 0.5]]
    met = [1.0, 2.0, 3.0, 4.0]
    pt, m = lazyk.array(rows), lazyk.array(met)
    wide = [[{"met": v, "pt": p} for p in r] for v, r in zip(met, rows)]
    for r in (lazyk.zip({"met": m[:, None], "pt": pt}), lazyk.zip({"pt": pt, "met": m[:, None]})):
        assert lazyk.num(r).eval().to_list() == [len(w) for w in rows]
        assert lazyk.local_index(r).eval().to_list() == [list(range(len(w))) for w in rows]
        flat = lazyk.flatten(r).eval().to_list()
        assert [sorted(d.items()) for d in flat] == [sorted(d.items()) for w in wide for d in w]
        both = lazyk.concatenate([r, r], axis=1).eval().to_list()
        assert [[sorted(d.items()) for d in w] for w in both] == \
            [[sorted(d.items()) for d in w + w] for w in wide]
        first = lazyk.firsts(r).eval().to_list()  # (None for an empty list, as Awkward's)
        assert [d and d["pt"] for d in first] == [w[0] if w else None for w in rows]
        assert [d and d["met"] for d in first] == [v if w else None for v, w in zip(met, rows)]
        padded = lazyk.pad_none(r, 2, clip=True).eval().to_list()
        assert [[d and d["met"] for d in w] for w in padded] == \
            [[v if k < len(w) else None for k in range(2)] for v, w in zip(met, rows)]


def test_records_are_not_operands_of_numpy_or_lazyk_functions():
    x = lazyk.array([[1.0, 2.0], [3.0]])
    r = lazyk.zip({"a": x, "b": x * 2})
    for call in (lambda: np.sum(r), lambda: np.max(r, axis=1), lambda: np.sort(r),
                 lambda: np.sin(r), lambda: np.asarray(r), lambda: lazyk.sum(r, axis=1)):
        with pytest.raises(lazyk.UnsupportedOperandError, match=r"records are not operands; "
                           r"use a field \(r\.a\)"):
            call()
    assert np.sum(r.a, axis=1).eval().to_list() == [3.0, 3.0]


def test_records_with_a_per_event_field_selected_by_a_mask_of_the_objects():
    x = lazyk.array([[1.0, 5.0], [], [7.0, 2.0, 3.0]])
    met = lazyk.array([1.0, 2.0, 3.0])
    z = lazyk.zip({"pt": x, "met": met[:, None]})
    sel = z[z.pt > 1]
    want = [[{"pt": p, "met": m} for p in r if p > 1]
            for m, r in zip([1.0, 2.0, 3.0], [[1.0, 5.0], [], [7.0, 2.0, 3.0]])]
    assert sel.eval().to_list() == want
    assert sel.met.eval().to_list() == [[d["met"] for d in r] for r in want]
    assert (sel.pt - sel.met).eval().to_list() == [[d["pt"] - d["met"] for d in r] for r in want]


def test_lazy_records_refuse_every_operator_naming_the_fields():
    muons = lazyk.zip({"pt": lazyk.array([[45.0, 40.0], [30.0]]),
                       "q": lazyk.array([[1, -1], [1]])})
    pairs = lazyk.combinations(muons, 2)
    for f in (lambda: pairs["0"] == pairs["1"], lambda: muons != muons,
              lambda: muons == 1, lambda: muons + 1, lambda: 1 - muons, lambda: -muons,
              lambda: muons < 2):
        with pytest.raises(lazyk.UnsupportedOperandError, match="use a field"):
            f()
    assert lazyk.num(muons).eval().to_list() == [2, 1]  # (still records: row operations)


def test_zip_of_fields_whose_lists_differ_is_an_error_not_one_fields_answer():
    x = lazyk.array([[1.0, 2.0, 3.0], [4.0], [5.0, 6.0]])
    y = lazyk.array([[10.0, 20.0], [30.0, 40.0, 50.0], []])
    r = lazyk.zip({"a": x, "b": y})
    for f in (lambda: lazyk.num(r), lambda: lazyk.firsts(r).b, lambda: r[lazyk.num(x) > 0].b,
              lambda: r):
        with pytest.raises(lazyk.ShapeError, match="row 0"):
            f().eval()
    # fields of independent arrays whose lists agree: as one array's
    z = lazyk.array([[5.0, 6.0], [7.0]])
    w = lazyk.array([[1.0, 2.0], [3.0]])
    r2 = lazyk.zip({"x": w, "y": z})
    assert r2[r2.x > 1].eval().to_list() == [[{"x": 2.0, "y": 6.0}], [{"x": 3.0, "y": 7.0}]]
    assert r2[:, :1].eval().to_list() == [[{"x": 1.0, "y": 5.0}], [{"x": 3.0, "y": 7.0}]]
    assert lazyk.num(r2).eval().to_list() == [2, 1]


def test_records_with_a_string_field_of_one_dim():
    s = lazyk.array(["x", "yz"])
    r = lazyk.zip({"a": lazyk.array([1.0, 2.0]), "s": s})
    assert r.eval().to_list() == [{"a": 1.0, "s": "x"}, {"a": 2.0, "s": "yz"}]
    assert r.s.eval().to_list() == ["x", "yz"]
    got = lazyk.zip({"b": lazyk.array([b"q"])})
    assert got.eval().to_list() == [{"b": b"q"}]


def test_iterating_records_gives_each_record():
    r = lazyk.zip({"pt": lazyk.array([[1.0, 2.0], [], [3.0]]), "q": lazyk.array([[1, -1], [], [1]])})
    assert [x.to_list() for x in r] == [x.to_list() for x in r.eval()]
    assert [x.to_list() for x in r][0] == [{"pt": 1.0, "q": 1}, {"pt": 2.0, "q": -1}]


def test_concatenate_records_with_the_same_fields_in_another_order():
    pt, eta = [[1.0, 2.0], [], [3.0]], [[0.1, 0.2], [], [0.3]]
    r1 = lazyk.zip({"pt": lazyk.array(pt), "eta": lazyk.array(eta)})
    r2 = lazyk.zip({"eta": lazyk.array(eta), "pt": lazyk.array(pt)})
    got = lazyk.concatenate([r1, r2], axis=1)
    assert got.pt.eval().to_list() == [[1.0, 2.0, 1.0, 2.0], [], [3.0, 3.0]]
    assert got.eta.eval().to_list() == [[0.1, 0.2, 0.1, 0.2], [], [0.3, 0.3]]
    with pytest.raises(TypeError, match="same fields"):
        lazyk.concatenate([r1, lazyk.zip({"pt": lazyk.array(pt)})], axis=1)


def test_records_projected_onto_a_list_of_fields():
    r = lazyk.zip({"pt": lazyk.array([[1.0, 2.0], []]), "q": lazyk.array([[1, -1], []]),
                   "e": lazyk.array([[0.1, 0.2], []])})
    p = r[["q", "pt"]]
    assert p.fields == ["q", "pt"]
    assert p.eval().to_list() == [[{"q": 1, "pt": 1.0}, {"q": -1, "pt": 2.0}], []]
    with pytest.raises(KeyError, match="'x'"):
        r[["x"]]


def test_records_with_a_string_field_of_lists():
    a, s = [[1.0, 2.0], [], [3.0]], [["x", "y"], [], ["z"]]
    r = lazyk.zip({"a": lazyk.array(a), "s": lazyk.array(s)})
    assert r.eval().to_list() == [[{"a": 1.0, "s": "x"}, {"a": 2.0, "s": "y"}], [],
                                  [{"a": 3.0, "s": "z"}]]
    assert r.s.eval().to_list() == s
    one = lazyk.zip({"a": lazyk.array(a), "s": lazyk.array([["x"], [], ["z"]])})
    assert one.eval().to_list() == [[{"a": 1.0, "s": "x"}, {"a": 2.0, "s": "x"}], [],
                                    [{"a": 3.0, "s": "z"}]]  # (a row of 1 stretches)
    bad = lazyk.zip({"a": lazyk.array(a), "s": lazyk.array([["x", "y", "w"], [], ["z"]])})
    with pytest.raises(lazyk.ShapeError, match="row 0: operand 0 has length 2 and operand 1 "
                       "has length 3"):
        bad.eval()
    p = [[1.0, 3.0], [], [5.0, 0.5, 7.0], None]  # other arrays' lists, some missing
    s = [["a", "b"], [], ["c", None, "e"], None]
    pa, sa = ak.Array(p), ak.Array(s)
    r = lazyk.zip({"p": lazyk.from_awkward(pa), "f": lazyk.from_awkward(sa)})
    z = ak.zip({"p": pa, "f": sa})
    assert r.eval().to_list() == z.to_list()
    assert r[r.p > 2].eval().to_list() == z[z.p > 2].to_list()
    assert lazyk.firsts(r).f.eval().to_list() == ak.firsts(z).f.to_list()
    pick = lazyk.argmax(r.p, axis=1, keepdims=True)
    assert r[pick].f.eval().to_list() == z[ak.argmax(z.p, axis=1, keepdims=True)].f.to_list()


def test_string_field_of_records_in_lists_that_may_be_missing():
    # the fields of one array's records share its lists: row operations and selections
    # move the strings with the numbers (Awkward's answers)
    a = ak.Array([[{"pt": 1.0, "nm": "a"}, {"pt": None, "nm": None}], None, [],
                  [{"pt": 3.0, "nm": "c"}, {"pt": -1.0, "nm": "d"}]])
    r = lazyk.from_awkward(a)
    assert lazyk.firsts(r).nm.eval().to_list() == ak.firsts(a).nm.to_list()
    assert lazyk.flatten(r).nm.eval().to_list() == ak.flatten(a).nm.to_list()
    assert r[r.pt > 0].nm.eval().to_list() == a[a.pt > 0].nm.to_list()
    assert r[r.pt > 0].pt.eval().to_list() == a[a.pt > 0].pt.to_list()


def test_a_missing_per_event_field_leaves_the_other_fields_present():
    # zip({"met": met[:, None], "pt": pt}): a missing met is a missing value of that field
    # only; pt's values stay (Awkward's answer for met[:, np.newaxis])
    met, pt = ak.Array([1.0, None, 3.0, None]), ak.Array([[1.0, 2.0], [5.0], [], [7.0, 8.0]])
    a = ak.zip({"met": met[:, np.newaxis], "pt": pt})
    r = lazyk.zip({"met": lazyk.from_awkward(met)[:, None], "pt": lazyk.from_awkward(pt)})
    assert lazyk.flatten(r).pt.eval().to_list() == ak.flatten(a).pt.to_list()
    assert lazyk.flatten(r).met.eval().to_list() == ak.flatten(a).met.to_list()
    assert lazyk.firsts(r).pt.eval().to_list() == ak.firsts(a).pt.to_list()
    assert r.eval().to_list() == a.to_list()


def test_records_with_strings_selected_by_a_mask_with_missing_values():
    # a missing mask element gives a missing row; the rows it hides differ from field to
    # field (the strings keep theirs), which must not stop the records lining up
    pa = pytest.importorskip("pyarrow")
    t = pa.table({"met": pa.array([10.0, None, 30.0, 40.0]),
                  "jets": pa.array([[{"pt": 1.0, "f": "a"}], [{"pt": 2.0, "f": "b"}], [],
                                    [{"pt": 4.0, "f": None}]])})
    ev, a = lazyk.from_arrow(t), ak.from_arrow(t)
    assert ev[ev.met > 20].jets.eval().to_list() == a[a.met > 20].jets.to_list()
    j = lazyk.from_arrow(pa.array([[{"pt": 1.0, "f": "a"}], [{"pt": 2.0, "f": "b"}]]))
    got = j[lazyk.array([None, True], type="2 * ?bool")].eval()
    assert got.to_list() == [None, [{"pt": 2.0, "f": "b"}]]


def test_a_missing_row_of_one_field_is_missing_in_every_field():
    """zip of a `?var` field and a `var` one: the records' missing rows hide every field's
    row, read lazily too (`r.b`, its folds, combinations of the records), as Awkward's."""
    a_l, b_l = [[1.0, 2.0], None, [3.0]], [[10, 20], [7, 8], [30]]
    a, b = lazyk.array(a_l), lazyk.array(b_l)
    r = lazyk.zip({"a": a, "b": b})
    w = ak.zip({"a": ak.Array(a_l), "b": ak.Array(b_l)})
    assert r.b.eval().to_list() == w.b.to_list() == [[10, 20], None, [30]]
    assert lazyk.sum(r.b, axis=1).eval().to_list() == ak.sum(w.b, axis=1).to_list()
    p, wp = lazyk.combinations(r, 2), ak.combinations(w, 2)
    assert lazyk.sum(p["0"].b + p["1"].b, axis=1).eval().to_list() == \
        ak.sum(wp["0"].b + wp["1"].b, axis=1).to_list() == [30, None, 0]
    assert r.eval().to_list() == w.to_list()
    # missing rows in different fields: missing where either is
    c = lazyk.array([[5, 6], [2, 3, 4], None])
    r2, w2 = lazyk.zip({"a": a, "c": c}), ak.zip({"a": ak.Array(a_l), "c": c.to_list()})
    assert r2.c.eval().to_list() == w2.c.to_list() == [[5, 6], None, None]
    assert r2.a.eval().to_list() == w2.a.to_list() == [[1.0, 2.0], None, None]


@pytest.mark.parametrize("rows", ["3", "var", "?var"])
def test_is_none_of_records_is_each_fields(rows):
    """`is_none(records, axis)` at the records' own level: records of each field's answer
    (Awkward's), whatever the field order; an array's missing records (`?{...}`) are its
    own. `fill_none` of a field lined up with another reads that field's values only."""
    a_l, b_l = [[1, None, None]], [[None, 2, None]]
    want = ak.is_none(ak.zip({"a": ak.Array(a_l), "b": ak.Array(b_l)}), axis=1).to_list()
    for order in (("a", "b"), ("b", "a")):
        cols = {"a": lazyk.array(a_l, type=f"1 * {rows} * ?int64"),
                "b": lazyk.array(b_l, type=f"1 * {rows} * ?int64")}
        r = lazyk.zip({k: cols[k] for k in order})
        got = lazyk.is_none(r, axis=1).eval().to_list()
        assert got == want
        assert lazyk.fill_none(r.b, -1).eval().to_list() == [[-1, 2, -1]]
        # a selection of rows, a slice and flatten keep zip's records as they are
        keep = np.array([True])
        assert lazyk.is_none(r[keep], axis=1).eval().to_list() == want
        assert lazyk.is_none(lazyk.flatten(r), axis=0).eval().to_list() == want[0]
        assert lazyk.is_none(r[:, :2], axis=1).eval().to_list() == [want[0][:2]]
    a = ak.Array([[{"a": 1, "b": None}, None, {"a": None, "b": None}]])
    assert lazyk.is_none(lazyk.from_awkward(a), axis=1).eval().to_list() == \
        ak.is_none(a, axis=1).to_list() == [[False, True, False]]


def test_flatten_of_records_with_no_axis_gives_every_fields_values():
    """`flatten(records, axis=None)`: every field's present values, field after field (as
    Awkward's), never records made of values from different records."""
    a_l, b_l = [[1, None, None], [], [5]], [[None, 2, None], [], [6]]
    r = lazyk.zip({"a": lazyk.array(a_l), "b": lazyk.array(b_l)})
    w = ak.zip({"a": ak.Array(a_l), "b": ak.Array(b_l)})
    assert lazyk.flatten(r, axis=None).eval().to_list() == \
        ak.flatten(w, axis=None).to_list() == [1, 5, 2, 6]
    x_l = [[1.0, 2.0, None], [], [3.0, 4.0]]
    x, ax = lazyk.array(x_l), ak.Array(x_l)
    for got, want in ((lazyk.combinations(x, 2), ak.combinations(ax, 2)),
                      (lazyk.cartesian([x, x]), ak.cartesian([ax, ax]))):
        assert lazyk.flatten(got, axis=None).eval().to_list() == \
            ak.flatten(want, axis=None).to_list()


def test_is_none_of_records_taken_back_is_whether_the_record_is_missing():
    """Records derived from zip's (a take-back, firsts) are missing as a whole: `is_none`
    gives one bool per record, as Awkward's option of records does."""
    x_l = [[1.0, 2.0, 3.0], [], [4.0], [5.0, 0.5]]
    x, ax = lazyk.array(x_l), ak.Array(x_l)
    p, ap = (m.argcombinations(v, 2, fields=["i", "j"]) for m, v in ((lazyk, x), (ak, ax)))
    best = lazyk.firsts(p[lazyk.argmin(x[p.i] + x[p.j], axis=1, keepdims=True)])
    abest = ak.firsts(ap[ak.argmin(ax[ap.i] + ax[ap.j], axis=1, keepdims=True)])
    assert lazyk.is_none(best).eval().tolist() == ak.is_none(abest).to_list() == \
        [False, True, True, False]


def test_records_whose_fields_stretch_a_list_of_one_slice_and_combine_as_lined_up():
    """zip pairs a list of 1 with a longer one (it stretches): slices and combinations of
    the records see the lined-up lists, as the evaluated records have them."""
    r = lazyk.zip({"a": lazyk.array([[1, 2, 3], [4]]), "b": lazyk.array([[1, 2, 3], [3, 5]])})
    whole = r.eval().to_list()
    assert r[:, :2].eval().to_list() == [row[:2] for row in whole]
    assert r[:, 1:].a.eval().to_list() == [[x["a"] for x in row[1:]] for row in whole]
    c = lazyk.combinations(r, 2)
    want = [[(x, y) for i, x in enumerate(row) for y in row[i + 1:]] for row in whole]
    assert lazyk.num(c, axis=1).eval().to_list() == [len(w) for w in want]
    assert c["0"].a.eval().to_list() == [[x["a"] for x, _ in w] for w in want]
    assert c["1"].b.eval().to_list() == [[y["b"] for _, y in w] for w in want]


def test_combinations_of_records_whose_fields_are_selections_by_one_mask():
    a = lazyk.array([[1.0, 2, 3], [], [4, 5]])
    b = lazyk.array([[1, 2, 3], [], [4, 5]])
    m = a > 1.5
    z = lazyk.zip({"x": a[m], "y": b[m]})
    assert lazyk.combinations(z, 2).eval().to_list() == [
        [({"x": 2.0, "y": 2}, {"x": 3.0, "y": 3})], [], [({"x": 4.0, "y": 4}, {"x": 5.0, "y": 5})]]
    assert lazyk.num(lazyk.cartesian([z, a]), axis=1).eval().to_list() == [6, 0, 4]


def _zipped_rows(a: list, b: list) -> list:
    """Plain-Python zip of two lists of lists, a list of 1 stretching (to 0 too)."""
    out = []
    for x, y in zip(a, b):
        n = len(y) if len(x) == 1 else len(x)
        assert len(y) in (1, n)
        out.append([{"a": x[i if len(x) > 1 else 0], "b": y[i if len(y) > 1 else 0]}
                    for i in range(n)])
    return out


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 9), min_size=0, max_size=3),
                          st.lists(st.integers(0, 9), min_size=0, max_size=3),
                          st.lists(st.integers(0, 9), min_size=0, max_size=2)),
                min_size=1, max_size=5))
def test_records_whose_field_is_a_selection_line_up_by_the_kept_lists(rows):
    """A field that is a selection (`b[b > 4]`) lines up by the lists it keeps, not by the
    lists it selects from: a kept list of 0 beside a list of 1 gives an empty list (the 1
    stretches); the records' combinations and products see those lists."""
    A = [[float(v) for v in r[0]] for r in rows]
    B = [[float(v) for v in r[1]] for r in rows]
    C = [[float(v) for v in r[2]] for r in rows]
    kept = [[v for v in row if v > 4] for row in B]
    assume(all(len(x) == len(y) or 1 in (len(x), len(y)) for x, y in zip(A, kept)))
    n = len(rows)
    a, b, c = (lazyk.array(v, f"{n} * var * float64") for v in (A, B, C))
    r = lazyk.zip({"a": a * 2.0, "b": b[b > 4]})
    want = _zipped_rows([[2.0 * v for v in row] for row in A], kept)
    assert r.eval().to_list() == want
    assert lazyk.cartesian([r, c]).eval().to_list() == \
        [[(x, y) for x in w for y in z] for w, z in zip(want, C)]
    assert lazyk.combinations(r, 2).eval().to_list() == \
        [[(x, y) for i, x in enumerate(w) for y in w[i + 1:]] for w in want]


def test_cartesian_of_records_whose_fields_stretch_a_list_of_one_pairs_the_lined_up_lists():
    r = lazyk.zip({"a": lazyk.array([[4.0], [1.0, 2.0]]), "b": lazyk.array([[3.0, 5.0], [7.0, 8.0]])})
    c = lazyk.array([[10.0, 20.0, 30.0], [40.0]])
    whole = r.eval()
    for make in (lambda r: lazyk.cartesian([r, c]), lambda r: lazyk.cartesian([c, r]),
                 lambda r: lazyk.cartesian({"x": r, "y": c}, nested=True),
                 lambda r: lazyk.argcartesian([r, c])):
        assert make(r).eval().to_list() == make(whole).eval().to_list()
    assert lazyk.cartesian([r, c]).eval().to_list()[0] == [
        ({"a": 4.0, "b": b}, y) for b in (3.0, 5.0) for y in (10.0, 20.0, 30.0)]
    p = lazyk.cartesian([r, c])
    assert (p["0"].a + p["1"]).sum(axis=1).eval().to_list() == [144.0, 83.0]


def test_positions_of_records_take_every_fields_missing_rows():
    """argcombinations / argcartesian of records whose second field's row is missing:
    the row of positions is missing too, as the records' row is (they read the first
    field's rows only)."""
    x = lazyk.array([[1.0, 2.0, 3.0], [], [4.0, 5.0]], type="3 * var * float64")
    y = lazyk.array([None, None, [1, 2]], type="3 * ?var * int64")
    r = lazyk.zip({"a": x, "b": y})
    assert r.eval().to_list() == [None, None, [{"a": 4.0, "b": 1}, {"a": 5.0, "b": 2}]]
    for repl in (False, True):
        want = [None, None, [(0, 0), (0, 1), (1, 1)] if repl else [(0, 1)]]
        assert lazyk.argcombinations(r, 2, replacement=repl).eval().to_list() == want
        assert lazyk.num(lazyk.argcombinations(r, 2, replacement=repl), axis=1
                         ).eval().to_list() == [None, None, len(want[2])]
    z = lazyk.array([[7.0], [8.0], [9.0]])
    assert lazyk.argcartesian([r, z]).eval().to_list() == [None, None, [(0, 0), (1, 0)]]
    ax = ak.zip({"a": ak.Array(x.to_list()), "b": ak.Array(y.to_list())})
    assert ak.argcombinations(ax, 2).to_list() == [None, None, [(0, 1)]]


def test_records_with_a_field_of_fixed_rows_that_may_be_missing():
    """A field of `?2` rows (`pad_none(..., clip=True)` of `?var` rows) beside one of plain
    fixed rows: a missing row is missing in the records (num, combinations, positions, the
    records laid out whole), as in Awkward."""
    x = lazyk.array([[1.0, 2.0], None], type="2 * ?var * float64")
    r = lazyk.zip({"a": lazyk.array([[5, 6], [7, 8]]), "b": lazyk.pad_none(x, 2, clip=True)})
    ar = ak.zip({"a": ak.Array([[5, 6], [7, 8]]),
                 "b": ak.pad_none(ak.Array([[1.0, 2.0], None]), 2, clip=True)})
    assert lazyk.num(r, axis=1).eval().to_list() == ak.num(ar, axis=1).to_list() == [2, None]
    assert lazyk.argcombinations(r, 2).eval().to_list() == [[(0, 1)], None]
    assert lazyk.combinations(r, 2).eval().to_list() == [
        [({"a": 5, "b": 1.0}, {"a": 6, "b": 2.0})], None]
    got = r.eval()  # (the pairs' positions and the records: in `?1` and `?2` rows)
    assert str(got.type) == "2 * ?2 * {a: int64, b: ?float64}" and got.to_list() == ar.to_list()
    assert str(lazyk.argcombinations(r, 2).eval().type) == "2 * ?1 * (int64, int64)"


def test_a_mask_of_records_with_fixed_rows_that_may_be_missing_is_refused_by_name():
    """A mask of the records' own `?2` rows keeps their items (as Awkward); a mask of other
    rows is refused by name."""
    y = lazyk.array([[1, 2], None], type="2 * ?var * int64")
    r = lazyk.zip({"a": lazyk.pad_none(lazyk.firsts(y)[:, None], 2), "b": y})
    ay = ak.Array([[1, 2], None])
    ar = ak.zip({"a": ak.pad_none(ak.firsts(ay)[:, None], 2), "b": ay})
    assert r[r.a > 0].eval().to_list() == ar[ar.a > 0].to_list() == [[{"a": 1, "b": 1}, None],
                                                                      None]
    with pytest.raises(lazyk.NotSupportedError, match="may be missing"):
        r[lazyk.array([[True, False], [True, False]])].eval()


def test_positions_of_records_whose_fields_have_different_missing_fixed_rows():
    f = [[1, 2, 3], None, [5, 6]]
    g = [None, [4], [5, 6]]
    r = lazyk.zip({"f": lazyk.pad_none(lazyk.array(f), 2, clip=True),
                   "g": lazyk.pad_none(lazyk.array(g), 2, clip=True)})
    ar = ak.zip({"f": ak.pad_none(ak.Array(f), 2, clip=True),
                 "g": ak.pad_none(ak.Array(g), 2, clip=True)})
    assert lazyk.argcombinations(r, 2).eval().to_list() == \
        ak.argcombinations(ar, 2).to_list() == [None, None, [(0, 1)]]
    assert lazyk.num(r, axis=1).eval().to_list() == [None, None, 2]


def test_records_made_missing_are_missing_records_as_awkwards():
    """firsts of an empty list, pad_none's padding, a missing mask element and a gather at a
    missing position give missing records (`?{...}`), not records of missing fields; records
    whose fields are all missing in the data stay records."""
    data = [[{"pt": 1.0, "q": None}, {"pt": 2.0, "q": 1}], [], None,
            [{"pt": None, "q": None}, {"pt": 3.0, "q": -1}]]
    a = ak.Array(data)
    x = lazyk.from_awkward(a)
    z = lazyk.zip({"pt": x.pt, "q": x.q})
    b = ak.Array([d for d in data if d is not None])  # (`?N * {...}`: not laid out)
    for r in (x, z):
        y = lazyk.from_awkward(b) if r is x else lazyk.zip({"pt": b.pt, "q": b.q})
        got = lazyk.firsts(r)
        assert got.eval().to_list() == ak.firsts(a).to_list()
        assert lazyk.is_none(got).eval().to_list() == ak.is_none(ak.firsts(a)).to_list()
        assert lazyk.pad_none(y, 3, clip=True).eval().to_list() == \
            ak.pad_none(b, 3, clip=True).to_list()
        assert r[r.q > 0].eval().to_list() == a[a.q > 0].to_list()
        best = y[lazyk.argmax(y.pt, axis=1, keepdims=True)]
        want = b[ak.argmax(b.pt, axis=1, keepdims=True)]
        assert best.eval().to_list() == want.to_list()
        assert lazyk.firsts(best).eval().to_list() == ak.firsts(want).to_list()
        best = r[lazyk.argmax(r.pt, axis=1, keepdims=True)]  # (missing rows too)
        assert lazyk.firsts(best).eval().to_list() == \
            ak.firsts(a[ak.argmax(a.pt, axis=1, keepdims=True)]).to_list()
        assert lazyk.to_awkward(got).to_list() == ak.firsts(a).to_list()
        assert lazyk.to_arrow(got).null_count == 2


def test_missing_records_inside_records_concatenated_and_pickled():
    """Missing records as a field of records (pairs of padded records, an event's list of
    muons, a zip of firsts), concatenated, tested by is_none and pickled lazily."""
    import pickle
    pt = lazyk.array([[1.0], []])
    p = lazyk.combinations(lazyk.pad_none(lazyk.zip({"pt": pt}), 2), 2, fields=["a", "b"])
    assert p.eval().to_list() == [[{"a": {"pt": 1.0}, "b": None}], [{"a": None, "b": None}]]
    assert str(p.eval().type) == str(p.type) == "2 * var * {a: ?{pt: ?float64}, b: ?{pt: ?float64}}"
    data = [{"mu": [{"pt": 1.0}, None], "met": 1.0}, {"mu": [], "met": 2.0}]
    ev, a = lazyk.from_awkward(ak.Array(data)), ak.Array(data)
    assert ev[lazyk.num(ev.mu) >= 1].eval().to_list() == a[ak.num(a.mu) >= 1].to_list()
    z = lazyk.zip({"pt": lazyk.array([[1.0, 2.0], []]), "q": lazyk.array([[1, 2], []])})
    r = lazyk.zip({"lead": lazyk.firsts(z), "met": lazyk.array([5.0, 6.0])}, depth_limit=1)
    assert r.eval().to_list() == [{"lead": {"pt": 1.0, "q": 1}, "met": 5.0},
                                  {"lead": None, "met": 6.0}]
    mu = ev.mu
    for axis in (0, 1):
        got = lazyk.concatenate([mu, mu], axis=axis).eval().to_list()
        assert got == ak.concatenate([a.mu, a.mu], axis=axis).to_list()
    assert lazyk.is_none(lazyk.combinations(z, 2)["0"], axis=1).eval().to_list() == \
        [[False], []]
    padded = lazyk.pad_none(z, 3)
    assert pickle.loads(pickle.dumps(padded)).eval().to_list() == padded.eval().to_list()


def test_nested_cartesian_and_is_none_of_records_that_may_be_missing():
    """cartesian(nested=True) of records that may be missing lines up their present flags
    with the fields; is_none of records whose field is such records gives that field's
    records missing or not, lazily and evaluated, as Awkward's."""
    a = ak.Array([[{"pt": 1.0}, None], []])
    x = lazyk.from_awkward(a)
    for pair in (({"x": x, "y": x}, {"x": a, "y": a}),
                 ([x, lazyk.array([[1.0, 2.0], []])], [a, ak.Array([[1.0, 2.0], []])])):
        got = lazyk.cartesian(pair[0], nested=True)
        assert got.eval().to_list() == ak.cartesian(pair[1], nested=True).to_list()
    z = lazyk.zip({"pt": lazyk.array([[1.0, 2.0], [], [3.0]])})
    r = lazyk.zip({"f": lazyk.firsts(z), "n": lazyk.array([1, 2, 3])}, depth_limit=1)
    want = [{"f": False, "n": False}, {"f": True, "n": False}, {"f": False, "n": False}]
    assert lazyk.is_none(r).eval().to_list() == lazyk.is_none(r.eval()).eval().to_list() == want
    p = lazyk.combinations(lazyk.pad_none(z, 2), 2, fields=["a", "b"])
    assert lazyk.is_none(p, axis=1).eval().to_list() == \
        lazyk.is_none(p.eval(), axis=1).eval().to_list() == \
        [[{"a": False, "b": False}], [{"a": True, "b": True}], [{"a": False, "b": True}]]


def test_row_operations_inside_the_fields_keep_the_records_where_and_as_they_are():
    # at an axis inside the fields' own lists each field answers, and records that may be
    # missing stay missing exactly where they were (as Awkward); they were the operation
    # applied to the records' presence (local_index 0: missing) or one level too high
    ak = pytest.importorskip("awkward")
    vals = [[{"u": [1, 2], "v": [10.0]}, None, {"u": [], "v": [20.0, 30.0]}],
            [{"u": [3], "v": []}]]
    a = ak.Array(vals)
    for x in (lazyk.from_awkward(a), lazyk.array(vals)):
        for axis in (2, -1):
            assert lazyk.local_index(x, axis=axis).to_list() == \
                ak.local_index(a, axis=axis).tolist()
            assert lazyk.num(x, axis=axis).to_list() == ak.num(a, axis=axis).tolist()
            assert lazyk.firsts(x, axis=axis).to_list() == ak.firsts(a, axis=axis).tolist()
        assert lazyk.pad_none(x, 2, axis=2).to_list() == ak.pad_none(a, 2, axis=2).tolist()
    top = [{"u": [1]}, None, {"u": [2, 3]}]
    assert lazyk.num(lazyk.array(top), axis=-1).to_list() == [{"u": 1}, None, {"u": 2}]
    assert lazyk.local_index(lazyk.array(top), axis=-1).to_list() == \
        [{"u": [0]}, None, {"u": [0, 1]}]
    with pytest.raises(ValueError, match="flatten: axis 2 is inside the records' fields"):
        lazyk.flatten(lazyk.array(vals), axis=2)  # (as Awkward: no made-up records)
    # records of list fields, never missing: firsts inside the fields keeps the records
    b = ak.Array([[{"u": [1], "v": [10.0, 20.0]}, {"u": [], "v": [5.0]}]])
    assert lazyk.firsts(lazyk.from_awkward(b), axis=2).to_list() == \
        ak.firsts(b, axis=2).tolist()


def test_records_with_trailing_padding_copy_and_pickle():
    # {y: float64, q: bool} spans 9 bytes in a 16-byte record: the copy keeps lazyk's layout
    for x in (lazyk.array([{"y": 1.5, "q": True}, {"y": 2.5, "q": False}]),
              lazyk.array([[{"y": 1.5, "q": True}], [{"y": 0.5, "q": False}]])):
        for got in (x.copy(), pickle.loads(pickle.dumps(x))):
            assert got.to_list() == x.to_list() and got.type == x.type


def test_records_in_fixed_rows_that_may_be_missing_are_laid_out_whatever_the_size():
    x = lazyk.array([[{"pt": 37.4}], None, []])
    ax = ak.Array([[{"pt": 37.4}], None, []])
    for n in (1, 2):  # (refused before: records in `?n` rows were not laid out)
        got = lazyk.pad_none(x, n, axis=1, clip=True).eval()
        assert str(got.type) == f"3 * ?{n} * ?{{pt: ?float64}}"
        assert got.to_list() == ak.pad_none(ax, n, axis=1, clip=True).to_list()
    assert lazyk.pad_none(x.pt, 1, axis=1, clip=True).to_list() == [[37.4], None, [None]]


def test_fields_of_records_fields_line_up_once(monkeypatch):
    # ev.MET.pt: the MET records are lined up once, in ev, not again in each copy handed out
    from lazyk.frontend import records as R
    met = lazyk.zip({"pt": np.arange(3.0), "phi": np.ones(3)})
    jets = lazyk.zip({"pt": lazyk.array([[1.0], [], [2.0, 3.0]])})
    ev = lazyk.zip({"MET": met, "Jet": jets}, depth_limit=1)
    assert ev.MET.pt.eval().tolist() == [0.0, 1.0, 2.0] and ev.Jet.pt.ndim == 2
    calls, lined = [], R.one_shape
    monkeypatch.setattr(R, "one_shape", lambda *a, **k: calls.append(1) or lined(*a, **k))
    assert ev.MET.phi.eval().tolist() == [1.0, 1.0, 1.0]
    assert ev.Jet.pt.eval().to_list() == [[1.0], [], [2.0, 3.0]]
    assert calls == []
    # each copy is still its own: a field set on one leaves ev's as it was
    m = ev.MET
    m["z"] = m.pt * 2
    assert m.fields == ["pt", "phi", "z"] and ev.MET.fields == ["pt", "phi"]
