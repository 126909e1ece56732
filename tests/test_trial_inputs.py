"""Inputs a first-time user passes: NumPy masked arrays, pyarrow and Awkward arrays into
compiled calls, `lazyk.evaluate`, `lazyk.array` and operators (missing values are never
dropped), Python integers out of a parameter's range, empty inputs for `?T` / `?var`
parameters, `empty` / `full` with missing rows, and the messages around them."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lazyk
from tests import ragged_reference as R

VALUES = st.lists(st.one_of(st.none(), st.integers(-8, 8).map(lambda v: v / 2)), max_size=6)
ROWS = st.lists(st.one_of(st.none(), VALUES), max_size=5)


def _masked(vals):
    return np.ma.masked_array([0.0 if v is None else v for v in vals],
                              mask=[v is None for v in vals], dtype=np.float64)


def _kinds(vals):
    """The same values as a masked array, a pyarrow array and an Awkward array (those
    installed)."""
    out = {"masked": _masked(vals)}
    try:
        import pyarrow as pa
        out["arrow"] = pa.array(vals, pa.float64())
        out["chunked"] = pa.chunked_array([out["arrow"]])
    except ImportError:
        pass
    try:
        import awkward as ak
        out["awkward"] = ak.Array(vals) if vals else ak.Array(np.zeros(0))
    except ImportError:
        pass
    return out


def _double(vals, type_text):
    return R.elementwise("multiply", R.array(vals, type_text), 2.0)


@given(VALUES)
def test_missing_values_into_option_and_plain_parameters(vals):
    ko = lazyk.compile(lazyk.placeholder("x", "N * ?float64") * 2)
    k = lazyk.compile(lazyk.placeholder("x", "N * float64") * 2)
    want = _double(vals, f"{len(vals)} * ?float64")
    for kind, x in _kinds(vals).items():
        got = ko(x)
        assert str(got.type) == f"{len(vals)} * ?float64", kind
        assert got.to_list() == want.data, kind
        if None in vals:  # never filled in silently
            with pytest.raises(lazyk.TypeMatchError, match="'x'.*has missing values"):
                k(x)
        else:
            out = k(x)
            assert out.dtype == np.float64 and out.shape == (len(vals),), kind
            np.testing.assert_array_equal(out, np.array(vals, np.float64) * 2)
    # evaluate and operators read a masked array as `?T` (as lazyk.array does)
    m = _masked(vals)
    got = lazyk.evaluate("x*2", local_dict={"x": m})
    assert str(got.type) == f"{len(vals)} * ?float64"
    assert got.to_list() == want.data
    summed = (lazyk.array(np.zeros(len(vals))) + m).eval()
    assert summed.to_list() == [None if v is None else v + 0.0 for v in vals]
    assert lazyk.array(m).to_list() == vals


@given(ROWS)
def test_missing_rows_from_arrow_and_awkward(rows):
    pa = pytest.importorskip("pyarrow")
    ak = pytest.importorskip("awkward")
    k = lazyk.compile(lazyk.placeholder("x", "N * ?var * ?float64") * 2)
    want = _double(rows, f"{len(rows)} * ?var * ?float64")
    col = pa.array(rows, pa.list_(pa.float64()))
    for x in (col, ak.from_arrow(col)):
        got = k(x)
        assert str(got.type) == f"{len(rows)} * ?var * ?float64"
        assert got.to_list() == want.data
        assert lazyk.array(x).to_list() == rows


def test_integer_missing_values_are_not_wrapped():
    ak = pytest.importorskip("awkward")
    ki = lazyk.compile(lazyk.placeholder("x", "N * int64") * 2)
    with pytest.raises(lazyk.TypeMatchError, match=r"'x'.*3 \* \?int64.*missing values"):
        ki(ak.Array([1, None, 3]))
    out = lazyk.compile(lazyk.placeholder("x", "N * ?int64") * 2)(ak.Array([1, None, 3]))
    assert out.to_list() == [2, None, 6] and str(out.type) == "3 * ?int64"
    # a masked array with nothing masked is plain data
    m = np.ma.masked_array(np.array([1, 2], np.int64), mask=[False, False])
    np.testing.assert_array_equal(ki(m), [2, 4])


def test_masked_input_after_the_native_guard_is_installed():
    k = lazyk.compile(lazyk.placeholder("x", "N * float64") * 2)
    for _ in range(3):
        k(np.ones(3))
    with pytest.raises(lazyk.TypeMatchError, match="missing values"):
        k(np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0]))
    with pytest.raises(lazyk.TypeMatchError, match="missing values"):
        k(lazyk.array([1.0, None, 3.0]))


def test_masked_array_keeps_its_dtype():
    m = np.ma.masked_array(np.array([1.5, 2.5], np.float32), mask=[0, 1])
    a = lazyk.array(m)
    assert str(a.type) == "2 * ?float32" and a.to_list() == [1.5, None]
    assert str(lazyk.array(np.ma.masked_array([1, 2], dtype=">i4")).type) == "2 * ?int32"


# ---------------------------------------------------------------- integer range
def test_python_integers_out_of_range_raise():
    k = lazyk.compile(lazyk.placeholder("x", "N * int32") + 0)
    with pytest.raises(lazyk.CastingError, match="'x'.*2147483648.*int32"):
        k([2**31, 5])
    with pytest.raises(lazyk.CastingError, match="-2147483649"):
        k([-(2**31) - 1])
    with pytest.raises(lazyk.ArrayConstructionError):
        lazyk.array([2**31], type="1 * int32")
    out = k([2**31 - 1, -(2**31)])
    assert out.dtype == np.int32 and out.tolist() == [2**31 - 1, -(2**31)]
    # integer arrays that do not fit either (one rule for every kernel: sums and sorts alike);
    # casting='unsafe' wraps them around as ndarray.astype does
    big = np.array([2**31, 5])
    with pytest.raises(lazyk.CastingError, match="'x'.*2147483648.*int32"):
        k(big)
    with pytest.raises(lazyk.CastingError, match="'x'.*200.*int8"):
        lazyk.compile(lazyk.sum(lazyk.placeholder("x", "N * int8")))(np.array([1, 200], np.uint8))
    with pytest.raises(lazyk.CastingError, match="'x'.*200.*int8"):
        lazyk.compile(lazyk.cumsum(lazyk.placeholder("x", "N * int8"), axis=0))(
            np.array([1, 200], np.uint8))
    np.testing.assert_array_equal(k(big, casting="unsafe"), big.astype(np.int32))
    np.testing.assert_array_equal(k(np.array([7, -3])), [7, -3])  # (values that fit)
    ku = lazyk.compile(lazyk.placeholder("x", "N * uint8") + 0)
    with pytest.raises(lazyk.CastingError, match="-1.*uint8"):
        ku([-1])
    with pytest.raises(lazyk.CastingError, match="2147483648.*int32"):
        k(2**31)


@pytest.mark.parametrize("type_text, data, bad", [
    ("N * var * int32", [[2**31], []], "2147483648"),
    ("N * ?int32", [2**31, None], "2147483648"),
    ("N * ?var * int8", [[1, 300], None], "300")])
def test_python_integers_out_of_range_raise_for_ragged_parameters(type_text, data, bad):
    k = lazyk.compile(lazyk.placeholder("x", type_text) + 0)
    with pytest.raises(lazyk.CastingError, match=f"'x'.*{bad}"):
        k(data)
    fits = R.array(_clip(data), type_text.replace("N", str(len(data))))
    got = k(_clip(data))
    assert got.to_list() == fits.data and str(got.type) == str(fits.type)


def _clip(data):
    if isinstance(data, list):
        return [_clip(v) for v in data]
    return data if data is None else min(data, 100)


@pytest.mark.parametrize("type_text, data, want", [
    ("N * int32", [], "0 * int32"), ("N * ?int32", [], "0 * ?int32"),
    ("N * var * int32", [[], []], "2 * var * int32")])
def test_empty_lists_into_integer_parameters(type_text, data, want):
    got = lazyk.compile(lazyk.placeholder("x", type_text) + 0)(data)
    t = getattr(got, "type", None)
    assert (str(t) if t is not None else f"{got.shape[0]} * {got.dtype}") == want
    assert (got.to_list() if t is not None else got.tolist()) == data


# ---------------------------------------------------------------- empty inputs
@pytest.mark.parametrize("make", [
    lambda: np.array([]), lambda: [], lambda: np.ma.masked_array([], dtype=float),
    lambda: lazyk.array(np.zeros(0))])
def test_empty_inputs_for_option_parameters(make):
    k = lazyk.compile(lazyk.placeholder("x", "N * ?float64") * 2)
    out = k(make())
    assert str(out.type) == "0 * ?float64" and out.to_list() == []


def test_empty_foreign_inputs_for_option_parameters():
    pa = pytest.importorskip("pyarrow")
    ak = pytest.importorskip("awkward")
    k = lazyk.compile(lazyk.placeholder("x", "N * ?float64") * 2)
    for x in (pa.array([], pa.float64()), pa.array([1.0, None]).slice(0, 0),
              ak.Array(np.zeros(0)), ak.Array([1.0, None])[:0]):
        out = k(x)
        assert str(out.type) == "0 * ?float64" and out.to_list() == []
    kv = lazyk.compile(lazyk.placeholder("x", "N * ?var * float64").sum(axis=-1))
    col = pa.array([[1.0], None, [2.0, 3.0]])
    for x in (col.slice(0, 0), col.slice(0, 1), np.zeros((0, 3)),
              lazyk.from_offsets(np.array([0]), np.zeros(0)), [[]], [[], []]):
        ref = lazyk.array(x) if not isinstance(x, np.ndarray) else x
        want = [sum(r) for r in (ref.to_list() if hasattr(ref, "to_list") else ref.tolist())]
        out = kv(x)
        assert str(out.type) == f"{len(want)} * ?float64" and out.to_list() == want
    kv2 = lazyk.compile(lazyk.placeholder("x", "N * var * ?float64") * 2)
    out = kv2(np.zeros((3, 0)))
    assert str(out.type) == "3 * var * ?float64" and out.to_list() == [[], [], []]


# ---------------------------------------------------------------- foreign objects
def test_lazyk_array_of_arrow_and_awkward():
    pa = pytest.importorskip("pyarrow")
    ak = pytest.importorskip("awkward")
    a = lazyk.array(pa.array([1.0, None]))
    assert str(a.type) == "2 * ?float64" and a.to_list() == [1.0, None]
    c = lazyk.array(pa.chunked_array([[1.0], [None, 3.0]]))
    assert str(c.type) == "3 * ?float64" and c.to_list() == [1.0, None, 3.0]
    r = lazyk.array(ak.Array([[1.0, 2.0], []]))
    assert str(r.type) == "2 * var * float64" and r.to_list() == [[1.0, 2.0], []]
    t = lazyk.array(pa.array([[1, 2], [3]]), type="2 * var * int32")
    assert str(t.type) == "2 * var * int32" and t.to_list() == [[1, 2], [3]]
    tab = lazyk.array(pa.table({"a": [1.0, None]}))
    assert tab.to_list() == [{"a": 1.0}, {"a": None}]
    assert lazyk.array(ak.Array([1.0, None]).layout).to_list() == [1.0, None]
    # an Arrow buffer is a buffer (bytes), not an array of values
    assert np.asarray(lazyk.array(pa.py_buffer(b"ab"))).tolist() == [97, 98]
    # an operator with an Awkward / Arrow operand converts it
    e = lazyk.array([1.0, 2.0]) + ak.Array([1.0, None])
    assert e.eval().to_list() == [2.0, None]
    assert np.asarray((lazyk.array([3, 4]) * pa.array([1, 2])).eval()).tolist() == [3, 8]


def test_fixed_kernel_with_arrow_nulls_is_a_clear_error():
    pa = pytest.importorskip("pyarrow")
    k = lazyk.compile(lazyk.placeholder("x", "N * float64") * 2)
    with pytest.raises(lazyk.TypeMatchError, match=r"'x'.*2 \* \?float64.*missing values"):
        k(pa.array([1.0, None]))
    np.testing.assert_array_equal(k(pa.array([1.0, 2.0])), [2.0, 4.0])


def test_from_awkward_of_unknown_element_type():
    ak = pytest.importorskip("awkward")
    for data, t in [([[None]], "1 * var * ?float64"), ([[]], "1 * var * float64"),
                    ([None, None], "2 * ?float64"), ([[None], None, []], "3 * ?var * ?float64")]:
        a = lazyk.from_awkward(ak.Array(data))
        assert str(a.type) == t and a.to_list() == data  # float64, as ak.to_numpy reads it


def test_from_awkward_uint32_offsets():
    ak = pytest.importorskip("awkward")
    c = ak.contents
    for index in (ak.index.IndexU32(np.array([0, 2, 2, 3], np.uint32)),
                  ak.index.Index32(np.array([0, 2, 2, 3], np.int32))):
        x = ak.Array(c.ListOffsetArray(index, c.NumpyArray(np.array([1.0, 2.0, 3.0]))))
        a = lazyk.from_awkward(x)
        assert str(a.type) == "3 * var * float64" and a.to_list() == x.to_list()
        assert a.sum(axis=-1).eval().tolist() == [3.0, 0.0, 3.0]


def test_dask_ragged_array_into_a_compiled_call():
    pytest.importorskip("dask")
    import lazyk.dask
    x = lazyk.from_offsets(np.array([0, 2, 2, 5]), np.arange(5.0))
    r = lazyk.dask.from_ragged(x, 2)
    kv = lazyk.compile(lazyk.placeholder("x", "N * var * float64").sum(axis=-1))
    got = kv(r)  # a lazy collection, computed as lazyk.dask.evaluate computes it
    assert hasattr(got, "__dask_graph__")
    np.testing.assert_array_equal(np.asarray(got.compute()), [1.0, 0.0, 9.0])
    k = lazyk.compile(lazyk.placeholder("x", "N * float64") * 2)
    with pytest.raises(lazyk.TypeMatchError, match=r"\(x: N \* float64\) -> N \* float64: "
                                                   r".*2 dimension"):
        k(r)


# ---------------------------------------------------------------- placeholders, empty / full
@pytest.mark.parametrize("name", ["out", "casting"])
def test_placeholder_refuses_call_keywords(name):
    with pytest.raises(ValueError, match=f"{name!r} is taken.*{name}="):
        lazyk.placeholder(name, "N * float64")


def test_empty_and_full_with_missing_rows():
    a = lazyk.empty("4 * ?var * ?float64", lengths=[3, None, 0, 1])
    assert str(a.type) == "4 * ?var * ?float64"
    assert a.to_list() == [[None] * 3, None, [], [None]]
    b = lazyk.full("3 * ?var * int32", 7, [2, None, 0])
    assert b.to_list() == [[7, 7], None, []] and str(b.type) == "3 * ?var * int32"
    z = lazyk.zeros("2 * ?var * ?var * int32", [[2, None], [None, 3]])
    assert z.to_list() == [[None, [0, 0, 0]], None]
    with pytest.raises(lazyk.ArrayConstructionError, match=r"None.*only the rows of a \?var"):
        lazyk.full("3 * var * int32", 7, [2, None, 0])
    with pytest.raises(lazyk.ArrayConstructionError, match="too many row lengths"):
        lazyk.full("2 * ?var * int32", 1, [None, None, 3])


# ---------------------------------------------------------------- messages
def test_messages():
    k = lazyk.compile(lazyk.placeholder("x", "N * float64") * 2)
    ro = np.zeros(2)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="out= is read-only"):
        k(np.ones(2), out=ro)
    with pytest.raises(TypeError, match=r"^sum\(\) got an unexpected keyword"):
        lazyk.sum(lazyk.array([1.0, 2.0]), where=False)
    with pytest.raises(lazyk.NotSupportedError, match=r"`\?N`.*missing rows of a fixed"):
        lazyk.placeholder("x", "?N * float64")


def test_refused_arrow_types_suggest_a_conversion():
    pa = pytest.importorskip("pyarrow")
    import decimal

    import pyarrow.compute as pc
    cases = [(pa.array([decimal.Decimal("1.5")]), "float64()")]
    assert lazyk.from_arrow(pa.array([None])).to_list() == [None]  # (null: no values)
    if hasattr(pa, "string_view"):
        cases.append((pa.array(["a"], pa.string_view()), "string()"))
    for x, target in cases:
        with pytest.raises(lazyk.NotSupportedError,
                           match=r"not supported; convert it first: pyarrow\.compute\.cast"):
            lazyk.from_arrow(x)
        converted = pc.cast(x, getattr(pa, target[:-2])())
        assert lazyk.from_arrow(converted).to_list() == converted.to_pylist()
    if hasattr(pc, "run_end_encode"):
        with pytest.raises(lazyk.NotSupportedError, match="run_end_decode"):
            lazyk.from_arrow(pc.run_end_encode(pa.array([1, 1, 2])))


def test_asarray_of_fixed_strings_and_bytes():
    s = lazyk.array(["a", "bcé"])
    got = np.asarray(s)
    assert got.dtype == np.dtype("<U3") and got.tolist() == ["a", "bcé"]
    e = lazyk.where(lazyk.array([True, False]), s, "zz")
    for got in (np.asarray(e), e.to_numpy()):
        assert got.dtype.kind == "U" and got.tolist() == ["a", "zz"]
    b = np.asarray(lazyk.array([[b"x", b"yz"]]))
    assert b.dtype == np.dtype("S2") and b.shape == (1, 2) and b.tolist() == [[b"x", b"yz"]]
    with pytest.raises(lazyk.NotSupportedError, match="no NumPy equivalent"):
        np.asarray(lazyk.array(["a", None]))
