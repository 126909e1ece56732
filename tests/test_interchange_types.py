"""Arrow dictionaries and maps, Awkward tuples, unions, and records in expressions.

Every conversion is a round trip checked against pyarrow / awkward themselves (values, the
lazyk type, the missing state), with empty arrays, nulls at every level, sliced (offset)
Arrow arrays and chunked arrays.
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lazyk
from lazyk.errors import NotSupportedError, UnsupportedOperandError
from tests import ragged_reference as ref

pa = pytest.importorskip("pyarrow")
pc = pytest.importorskip("pyarrow.compute")
ak = pytest.importorskip("awkward")

TEXT = st.one_of(st.none(), st.text(alphabet="abé\x00", max_size=3))
INT = st.one_of(st.none(), st.integers(-2 ** 40, 2 ** 40))


def sliced(arr, cut):
    """`arr` sliced by the fractions `cut` (lo, hi): an Arrow array with an offset."""
    lo, hi = sorted(int(f * len(arr)) for f in cut)
    return arr.slice(lo, hi - lo)


CUTS = st.tuples(st.floats(0, 1), st.floats(0, 1))


def chunks_of(arr, k):
    """`arr` as a ChunkedArray of about k pieces (k = 0: no chunks when empty)."""
    n = len(arr)
    edges = sorted({0, n} | {n * i // max(k, 1) for i in range(k)})
    pieces = [arr.slice(a, b - a) for a, b in zip(edges, edges[1:])]
    return pa.chunked_array(pieces or [], type=arr.type)


# ---------------------------------------------------------------- dictionaries
@given(st.lists(TEXT, max_size=12), CUTS, st.integers(0, 3))
def test_dictionary_strings_decode_like_arrow(data, cut, k):
    d = sliced(pa.array(data, pa.string()).dictionary_encode(), cut)
    want = d.to_pylist()
    for src in (d, chunks_of(d, k)):
        x = lazyk.from_arrow(src)
        leaf = "?string" if d.null_count else "string"
        assert str(x.type) == f"{len(d)} * {leaf}"
        assert x.to_list() == want
        back = lazyk.to_arrow(x)
        assert back.type == pa.string() and back.to_pylist() == want
        assert back.null_count == d.null_count


@given(st.lists(INT, max_size=12), CUTS)
def test_dictionary_numbers_and_dictionaries_inside_lists_and_structs(data, cut):
    d = sliced(pa.array(data, pa.int64()).dictionary_encode(), cut)
    x = lazyk.from_arrow(d)
    assert str(x.type) == f"{len(d)} * {'?int64' if d.null_count else 'int64'}"
    assert x.to_list() == d.to_pylist()
    np.testing.assert_array_equal(np.asarray((x * 2).eval().to_list(), float),
                                  np.asarray([None if v is None else 2 * v
                                              for v in d.to_pylist()], float))
    # inside a list (with null rows) and a struct field
    rows = [None if v is None else [v, v] for v in data]
    lists = pa.array(rows, pa.list_(pa.dictionary(pa.int8(), pa.int64())))
    assert lazyk.from_arrow(sliced(lists, cut)).to_list() == sliced(lists, cut).to_pylist()
    recs = pa.StructArray.from_arrays([pa.array(data, pa.int64()).dictionary_encode()],
                                      names=["d"])
    got = lazyk.from_arrow(sliced(recs, cut))
    assert got.to_list() == sliced(recs, cut).to_pylist()
    assert lazyk.to_arrow(got).to_pylist() == sliced(recs, cut).to_pylist()


def test_dictionary_chunks_with_different_dictionaries_and_nested_text():
    t = pa.list_(pa.dictionary(pa.int8(), pa.string()))
    c = pa.chunked_array([pa.array([["a", "b"], ["a"]], t), pa.array([["c"], None, []], t)])
    x = lazyk.from_arrow(c)
    assert str(x.type) == "5 * ?var * string"
    assert x.to_list() == [["a", "b"], ["a"], ["c"], None, []]
    assert (x == "a").eval().to_list() == [[True, False], [True], [False], None, []]
    empty = pa.array([], pa.string()).dictionary_encode()
    assert lazyk.from_arrow(empty).to_list() == [] and str(lazyk.from_arrow(empty).type) == \
        "0 * string"


# ---------------------------------------------------------------- maps
MAP_ROWS = st.lists(st.one_of(st.none(), st.lists(st.tuples(st.text("kv", max_size=2), INT),
                                                  max_size=4)), max_size=10)


@given(MAP_ROWS, CUTS, st.integers(0, 3))
def test_maps_become_lists_of_key_value_records(rows, cut, k):
    m = sliced(pa.array(rows, pa.map_(pa.string(), pa.int64())), cut)
    want = [None if r is None else [{"key": a, "value": b} for a, b in r]
            for r in m.to_pylist()]
    for src in (m, chunks_of(m, k)):
        x = lazyk.from_arrow(src)
        rows_t = "?var" if m.null_count else "var"
        # the option follows the nulls of the whole value buffer the rows index into
        one = src if isinstance(src, pa.Array) else \
            src.chunk(0) if src.num_chunks == 1 else src.combine_chunks()
        value_t = "?int64" if one.values.field("value").null_count else "int64"
        assert str(x.type) == f"{len(m)} * {rows_t} * {{key: string, value: {value_t}}}"
        assert x.to_list() == want
        back = lazyk.to_arrow(x)  # a list of structs (Arrow's map layout, typed as a list)
        assert pa.types.is_list(back.type) or pa.types.is_large_list(back.type)
        assert back.to_pylist() == want and back.null_count == m.null_count
        assert lazyk.to_awkward(x).tolist() == want


def test_map_values_in_expressions_and_empty_maps():
    m = pa.array([[("a", 1), ("b", 2)], None, [], [("c", 5)]], pa.map_(pa.string(), pa.int64()))
    x = lazyk.from_arrow(m)
    assert x.value.sum(axis=-1).eval().to_list() == [3, None, 0, 5]
    assert (x.key == "b").eval().to_list() == [[False, True], None, [], [False]]
    e = lazyk.from_arrow(pa.array([], pa.map_(pa.string(), pa.float64())))
    assert str(e.type) == "0 * var * {key: string, value: float64}" and e.to_list() == []


# ---------------------------------------------------------------- Awkward tuples
TUPLE_T = "?(?int64, var * ?float64, ?string)"
TUPLES = st.lists(st.one_of(st.none(), st.tuples(
    INT, st.lists(st.one_of(st.none(), st.floats(-1e3, 1e3)), max_size=3), TEXT)), max_size=8)


def as_structs(v):
    """Python values with each tuple as the dict Arrow gives for it ({"0": ..., "1": ...})."""
    if isinstance(v, tuple):
        return {str(i): as_structs(e) for i, e in enumerate(v)}
    if isinstance(v, list):
        return [as_structs(e) for e in v]
    return v


@given(TUPLES, st.booleans())
def test_awkward_tuples_round_trip(data, nested):
    t = f"var * {TUPLE_T}" if nested else TUPLE_T
    if nested:
        data = [data, [], data[:1]]
    a = ak.enforce_type(ak.from_iter(data), t)
    x = lazyk.from_awkward(a)
    assert str(x.type) == f"{len(data)} * {t}"
    assert x.to_list() == a.tolist()
    for part in (a[1:], a[::-1]):  # views of the layout (offsets, an index)
        assert lazyk.from_awkward(part).to_list() == part.tolist()
    back = lazyk.to_awkward(x)
    assert str(back.type) == str(a.type) and back.tolist() == a.tolist()
    assert lazyk.from_awkward(back).to_list() == a.tolist()
    # Arrow has no tuples: its struct fields are named "0", "1", ... as Awkward names them
    arrow = lazyk.to_arrow(x)
    assert arrow.to_pylist() == as_structs(a.tolist())
    assert lazyk.from_arrow(arrow).to_list() == as_structs(a.tolist())
    # lazyk's own tuples convert the same way
    own = lazyk.array(a.tolist(), type=f"{len(data)} * {t}")
    assert lazyk.to_awkward(own).tolist() == a.tolist()


def test_plain_tuples_inside_records_and_fixed_dims():
    a = ak.Array([{"p": (1, 2.0)}, {"p": (3, 4.0)}])
    x = lazyk.from_awkward(a)
    assert str(x.type) == "2 * {p: (int64, float64)}"
    assert lazyk.to_awkward(x).tolist() == a.tolist()
    y = lazyk.array([[(1, 2.0)], [(3, 4.0)]], type="2 * 1 * (int64, float64)")
    assert str(lazyk.to_awkward(y).type) == "2 * 1 * (int64, float64)"
    assert lazyk.to_awkward(y).tolist() == y.to_list()
    e = lazyk.from_awkward(ak.enforce_type(ak.from_iter([]), "(int64, float64)"))
    assert str(e.type) == "0 * (int64, float64)" and e.to_list() == []


# ---------------------------------------------------------------- unions
def test_arrow_unions_are_refused_naming_the_type():
    types = pa.array([0, 1, 0], pa.int8())
    sparse = pa.UnionArray.from_sparse(types, [pa.array([1, 2, 3]), pa.array(["a", "b", "c"])])
    dense = pa.UnionArray.from_dense(types, pa.array([0, 0, 1], pa.int32()),
                                     [pa.array([1, 2]), pa.array(["b"])])
    for u in (sparse, dense, pa.ListArray.from_arrays(pa.array([0, 2, 3], pa.int32()), dense),
              pa.chunked_array([dense])):
        with pytest.raises(NotSupportedError, match=r"Arrow union arrays \((sparse|dense)_union"
                                                    r".*select the values of one type first"):
            lazyk.from_arrow(u)


def test_awkward_unions_are_refused_naming_the_type():
    for a in (ak.Array([1, "a"]), ak.Array([[1, "a"], []]), ak.Array([1, None, "a"]),
              ak.Array([{"x": 1}, {"x": "a"}])):
        with pytest.raises(NotSupportedError, match=r"Awkward union arrays \(union\[.*"
                                                    r"layout.project\(i\)"):
            lazyk.from_awkward(a)
    # the advice works: one type at a time converts
    a = ak.Array([1, "a", 2])
    assert lazyk.from_awkward(ak.Array(a.layout.project(0))).to_list() == [1, 2]


# ---------------------------------------------------------------- records in expressions
@pytest.mark.parametrize("data, t, hint", [
    ([{"x": [1.0]}, {"x": []}], "2 * {x: var * float64}", r"r\[.x.\] \+ 1"),
    ([{"x": 1, "y": 2.0}], "1 * {x: int64, y: float64}", r"r\[.x.\] \+ 1 \(fields: x, y\)"),
    ([None, {"a b": 1}], "2 * ?{'a b': ?int64}", r"r\['a b'\] \+ 1"),
    ([[{"x": 1}], None], "2 * ?var * {x: int64}", r"r\[.x.\] \+ 1"),
])
def test_records_are_not_operands_their_fields_are(data, t, hint):
    r = lazyk.array(data, type=t)
    for make in (lambda: r + 1, lambda: 1 + r, lambda: lazyk.sum(r)):
        with pytest.raises(UnsupportedOperandError, match="records are not operands of expressions.*" + hint):
            make()
    with pytest.raises(NotSupportedError, match="tuples are not operands"):
        lazyk.array([(1, 2.0)], type="1 * (int64, float64)") * 2


def test_fields_of_records_stay_operands():
    r = lazyk.array([{"x": [1.0, 2.0], "y": 3}, {"x": [], "y": 4}],
                    type="2 * {x: var * float64, y: int64}")
    assert (r.x + 1).eval().to_list() == [[2.0, 3.0], []]
    assert (r.x.sum(axis=-1) + r.y).eval().to_list() == [6.0, 4.0]


OPT_RECORDS = st.lists(st.one_of(st.none(), st.fixed_dictionaries({"x": INT, "s": TEXT})),
                       max_size=10)


@given(OPT_RECORDS, CUTS)
def test_field_of_missing_records_is_missing_as_in_arrow_and_awkward(data, cut):
    t = "?{x: ?int64, s: ?string}"
    a = sliced(pa.array(data, pa.struct([("x", pa.int64()), ("s", pa.string())])), cut)
    field = pc.struct_field(a, "x")
    # Arrow's nulls decide the lazyk type (`?{x: ?int64}` where both levels have some)
    for r in (lazyk.array(a.to_pylist(), type=f"{len(a)} * {t}"), lazyk.from_arrow(a)):
        x = r.x
        if str(r.type) == f"{len(a)} * {t}":
            assert str(x.type) == f"{len(a)} * ?int64" and x.readonly
        else:
            assert str(x.type) == f"{len(a)} * {'?int64' if field.null_count else 'int64'}"
        assert x.to_list() == field.to_pylist()
        assert r["s"].to_list() == pc.struct_field(a, "s").to_pylist()
        assert x.to_list() == ak.enforce_type(ak.from_iter(a.to_pylist()), t).x.tolist()
        got = (x + 1).eval()
        want = ref.elementwise("add", ref.array(x.to_list(), str(x.type)), 1)
        assert got.to_list() == want.data and str(got.type) == str(want.type)
        assert lazyk.to_arrow(x).to_pylist() == pc.struct_field(a, "x").to_pylist()


@given(st.lists(st.one_of(st.none(), OPT_RECORDS), max_size=5))
def test_field_of_missing_records_under_missing_rows(rows):
    t = f"{len(rows)} * ?var * ?{{x: ?int64, s: ?string}}"
    r = lazyk.array(rows, type=t)
    want = [None if row is None else [None if e is None else e["x"] for e in row]
            for row in rows]
    assert str(r.x.type) == f"{len(rows)} * ?var * ?int64" and r.x.to_list() == want
    got = (r.x * 2).eval()
    ref_want = ref.elementwise("multiply", ref.array(want, f"{len(rows)} * ?var * ?int64"), 2)
    assert got.to_list() == ref_want.data
    a = ak.enforce_type(ak.from_iter(rows), "?var * ?{x: ?int64, s: ?string}")
    assert got.to_list() == (a.x * 2).tolist()
    assert r.s.to_list() == [None if row is None else [None if e is None else e["s"]
                                                       for e in row] for row in rows]


def test_field_of_missing_records_views_and_assignment():
    r = lazyk.array([{"x": 1}, None, {"x": None}], type="3 * ?{x: ?int64}")
    assert r[0].x.to_list() == 1 and r[1]["x"].to_list() is None
    assert r[::-1, "x"].to_list() == [None, None, 1]
    n = lazyk.array([{"p": {"q": 1}}, {"p": None}, None], type="3 * ?{p: ?{q: ?int64}}")
    assert n.p.q.to_list() == n["p", "q"].to_list() == [1, None, None]
    with pytest.raises(ValueError, match="read-only"):
        r.x[0] = 5  # a copy: writing to it would change nothing
    with pytest.raises(NotSupportedError, match="assign whole records"):
        r["x"] = 5
    r[2] = {"x": 7}  # whole records are assigned
    assert r.x.to_list() == [1, None, 7]
