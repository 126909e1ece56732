"""Ragged arrays from offsets, Arrow and Awkward: values, zero copy, bad offsets, views."""
import copy

import numpy as np
import pytest

import lazyk
from lazyk.errors import ArrayConstructionError, NotSupportedError


def rows_of(offsets, content):
    return [content[offsets[i]:offsets[i + 1]].tolist() for i in range(len(offsets) - 1)]


def content_address(x):
    """The var dim's content address from the arrmeta (docs/layout.md)."""
    name = next(n for n in x.arrmeta.dtype.names if n.endswith(".content"))
    return int(x.arrmeta[name])


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_from_offsets_values_and_zero_copy(dtype):
    offsets = np.array([0, 2, 2, 5, 6], dtype)
    content = np.arange(6, dtype=np.float64) * 1.5
    x = lazyk.from_offsets(offsets, content)
    assert str(x.type) == "4 * var * float64"
    assert x.to_list() == rows_of(offsets, content)
    assert x.ptr == offsets.ctypes.data and content_address(x) == content.ctypes.data
    assert x.arrmeta["dim1.width"] == offsets.itemsize
    content[3] = -7.0  # the rows are the content itself
    assert x.to_list()[2] == [3.0, -7.0, 6.0]
    x[3, 0] = 42.0
    assert content[5] == 42.0
    assert len(x) == 4 and len(x[2]) == 3


def test_offsets_need_not_start_at_zero_and_content_may_be_longer():
    offsets = np.array([3, 4, 4, 6])
    content = np.arange(10)
    x = lazyk.from_offsets(offsets, content)
    assert x.to_list() == [[3], [], [4, 5]]


def test_nested_var_var_and_fixed_inner_dims():
    inner = lazyk.from_offsets(np.array([0, 2, 2, 3]), np.array([1.0, 2.0, 3.0]))
    x = lazyk.from_offsets(np.array([0, 1, 3], np.int32), inner)
    assert str(x.type) == "2 * var * var * float64"
    assert x.to_list() == [[[1.0, 2.0]], [[], [3.0]]]
    y = lazyk.from_offsets(np.array([0, 1, 3]), np.arange(9).reshape(3, 3))
    assert str(y.type) == "2 * var * 3 * int64"
    assert y.to_list() == [[[0, 1, 2]], [[3, 4, 5], [6, 7, 8]]]


def test_options_inside_and_over_rows():
    content = lazyk.array([1.0, None, 3.0])
    x = lazyk.from_offsets(np.array([0, 2, 3]), content)
    assert str(x.type) == "2 * var * ?float64" and x.to_list() == [[1.0, None], [3.0]]
    y = lazyk.from_offsets(np.array([0, 2, 3]), np.arange(3), validity=[True, False])
    assert str(y.type) == "2 * ?var * int64" and y.to_list() == [[0, 1], None]


def test_empty_arrays_and_empty_rows():
    x = lazyk.from_offsets(np.array([0]), np.zeros(0))
    assert str(x.type) == "0 * var * float64" and x.to_list() == []
    y = lazyk.from_offsets(np.array([0, 0, 0]), np.zeros(0))
    assert y.to_list() == [[], []]
    assert lazyk.evaluate(y.sum(axis=-1)).to_list() == [0.0, 0.0]


@pytest.mark.parametrize("offsets, content, match", [
    (np.array([0, 2, 1, 3]), np.arange(3), r"offsets\[2\] = 1 is less than offsets\[1\] = 2"),
    (np.array([0, 2, 5]), np.arange(4), r"offsets\[2\] = 5 is past the end of the content"),
    (np.array([-1, 2]), np.arange(4), r"offsets\[0\] = -1 is negative"),
    (np.array([0.0, 1.0]), np.arange(4), "int32 or int64, not float64"),
    (np.array([0, 1], np.uint64), np.arange(4), "int32 or int64, not uint64"),
    (np.array([], np.int64), np.arange(4), "n \\+ 1 entries"),
    (np.zeros((2, 2), np.int64), np.arange(4), "1-d"),
    (np.array([0, 1]), np.float64(3.0), "leading fixed dimension"),
])
def test_bad_offsets_raise_naming_the_position(offsets, content, match):
    with pytest.raises(ArrayConstructionError, match=match):
        lazyk.from_offsets(offsets, content, check=True)
    assert issubclass(ArrayConstructionError, ValueError)


@pytest.mark.parametrize("offsets, content, match", [
    (np.array([0, 2, 5]), np.arange(4), r"offsets\[2\] = 5 is past the end of the content"),
    (np.array([-1, 2]), np.arange(4), r"offsets\[0\] = -1 is negative"),
    (np.array([0.0, 1.0]), np.arange(4), "int32 or int64, not float64"),
    (np.array([], np.int64), np.arange(4), "n \\+ 1 entries"),
])
def test_construction_checks_the_ends_in_constant_time(offsets, content, match):
    with pytest.raises(ArrayConstructionError, match=match):
        lazyk.from_offsets(offsets, content)


_BAD_ROWS = """
import sys
import numpy as np, pyarrow as pa, lazyk
# row 1 decreases; row 0 reaches far past the content
off = {off}
x = lazyk.from_offsets(np.array(off), np.arange(4.0))
readers = [
    lambda: x.to_list(), lambda: x[1].to_list(), lambda: x[1:].to_list(), lambda: x[:2].to_list(),
    lambda: x[:, 1:].to_list(), lambda: x[::-1].to_list(), lambda: lazyk.to_arrow(x),
    lambda: x.sum(axis=-1).eval(), lambda: (x * 2 + 1).eval(), lambda: (x + x).sum().eval(),
    lambda: x.max(axis=0).eval(), lambda: (x - x.mean(axis=-1, keepdims=True)).eval(),
    lambda: lazyk.from_offsets(np.array([0, 2]), x).to_list(),
]
for k, read in enumerate(readers):
    try:
        read()
    except lazyk.ArrayConstructionError as e:
        assert "row" in str(e) and "outside the content" in str(e), (k, e)
    else:
        sys.exit(f"reader {{k}} did not raise")
print("ok")
"""


@pytest.mark.parametrize("off", ["[0, 3, 1, 4]", "[0, 10**9, 2, 4]", "[0, 2, -5, 4]"])
def test_bad_offsets_raise_at_first_use_never_read_out_of_bounds(off):
    # Construction is O(1): the rows are checked where they are read. In a subprocess, so
    # a missing check crashes one test, not the suite.
    pytest.importorskip("pyarrow")
    import subprocess
    import sys
    run = subprocess.run([sys.executable, "-c", _BAD_ROWS.format(off=off)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr


def test_check_true_finds_the_first_bad_offset_at_construction():
    off = np.array([0, 1, 2, 3, 2, 4])
    x = lazyk.from_offsets(off, np.arange(4.0))  # O(1): both ends are fine
    with pytest.raises(ArrayConstructionError, match=r"var row 3: start 3, stop 2"):
        x.to_list()
    with pytest.raises(ArrayConstructionError, match=r"offsets\[4\] = 2 is less than"):
        lazyk.from_offsets(off, np.arange(4.0), check=True)


def test_validity_of_the_wrong_length():
    with pytest.raises(ArrayConstructionError, match="one entry per row"):
        lazyk.from_offsets(np.array([0, 1]), np.arange(1), validity=[True, True])


def test_slicing_stays_a_view():
    offsets = np.array([0, 3, 3, 5, 9])
    content = np.arange(9.0)
    x = lazyk.from_offsets(offsets, content)
    ref = rows_of(offsets, content)
    assert x[1:3].to_list() == ref[1:3]
    assert x[::-1].to_list() == ref[::-1]
    assert x[:, 1:].to_list() == [r[1:] for r in ref]
    assert x[:, ::-2].to_list() == [r[::-2] for r in ref]
    assert x[3, 1::2].to_list() == ref[3][1::2]
    for view in (x[1:3], x[::-1], x[:, 1:], x[:, ::-2]):
        assert content_address(view) == content.ctypes.data
    v = x[:, 1:]
    v[...] = -1.0  # writes land in the content
    assert content.tolist() == [0, -1, -1, 3, -1, 5, -1, -1, -1]
    w = x[:, ::-2]
    assert w[:, 1:].to_list() == [r[::-2][1:] for r in x.to_list()]


def test_expressions_over_offsets_arrays():
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 6, 50)
    offsets = np.zeros(51, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    content = rng.standard_normal(int(offsets[-1]))
    x = lazyk.from_offsets(offsets, content)
    ref = rows_of(offsets, content)
    got = lazyk.evaluate(x - x.mean(axis=-1, keepdims=True))
    assert str(got.type) == "50 * var * float64"
    for g, r in zip(got.to_list(), ref):
        np.testing.assert_allclose(g, np.array(r) - (np.mean(r) if r else 0.0))
    s = lazyk.evaluate((x * 2 + x).sum(axis=-1)).to_numpy()
    np.testing.assert_allclose(s, [3 * sum(r) for r in ref])


def test_expression_results_over_options_and_outer_dims():
    x = lazyk.array([[[1.0, None], []], [[3.0], [4.0, 5.0]]], type="2 * 2 * var * ?float64")
    got = lazyk.evaluate(x * 2)
    assert str(got.type) == "2 * 2 * var * ?float64"
    assert got.to_list() == [[[2.0, None], []], [[6.0], [8.0, 10.0]]]
    m = lazyk.evaluate(x.max(axis=-1))
    assert str(m.type) == "2 * 2 * ?float64" and m.to_list() == [[None, None], [3.0, 5.0]]


# ---------------------------------------------------------------- Arrow
def test_arrow_round_trips_and_zero_copy():
    pa = pytest.importorskip("pyarrow")
    for a in [pa.array([[1.5, 2.5], [], [3.5]]),
              pa.array([[1, 2], [], [3]], type=pa.large_list(pa.int32())),
              pa.array([[[1], []], [], [[2, 3]]]),
              pa.array([[1.0, None], None, [3.0]]),
              pa.array([[1, 2, 3], [4, 5, 6]], type=pa.list_(pa.int16(), 3)),
              pa.array([[True, False], [True]]),
              pa.array([], type=pa.list_(pa.float64())),
              pa.array([[1.0, 2.0], [3.0], [4.0, 5.0]]).slice(1, 2)]:
        x = lazyk.from_arrow(a)
        assert x.to_list() == a.to_pylist()
        back = lazyk.to_arrow(x)
        assert back.to_pylist() == a.to_pylist()
    a = pa.array([[1.5, 2.5], [], [3.5]])
    x = lazyk.from_arrow(a)
    assert x.ptr == a.buffers()[1].address  # the offsets in place
    assert content_address(x) == a.values.buffers()[1].address  # the values in place
    assert x.readonly
    back = lazyk.to_arrow(x)
    assert back.buffers()[1].address == x.ptr
    assert back.values.buffers()[1].address == content_address(x)


def test_arrow_chunked_and_unsupported():
    pa = pytest.importorskip("pyarrow")
    one = pa.chunked_array([pa.array([[1.0], [2.0, 3.0]])])
    assert lazyk.from_arrow(one).to_list() == [[1.0], [2.0, 3.0]]
    two = pa.chunked_array([pa.array([[1.0]]), pa.array([[2.0, 3.0], []])])
    assert lazyk.from_arrow(two).to_list() == [[1.0], [2.0, 3.0], []]
    with pytest.raises(NotSupportedError, match="Arrow type"):
        lazyk.from_arrow(pa.array([pa.scalar((1, 2, 3), type=pa.month_day_nano_interval())]))
    with pytest.raises(TypeError, match="pyarrow Array"):
        lazyk.from_arrow([1, 2])


def test_to_arrow_of_lazyk_built_and_viewed_arrays():
    pa = pytest.importorskip("pyarrow")
    x = lazyk.array([[1, None], [], [3]], type="3 * var * ?int32")
    assert lazyk.to_arrow(x).to_pylist() == [[1, None], [], [3]]
    assert lazyk.to_arrow(x).type == pa.large_list(pa.int32())
    y = lazyk.array([[1.0, 2.0, 3.0], [4.0]])
    assert lazyk.to_arrow(y[:, ::-1]).to_pylist() == [[3.0, 2.0, 1.0], [4.0]]
    assert lazyk.to_arrow(y[::-1]).to_pylist() == [[4.0], [1.0, 2.0, 3.0]]
    with pytest.raises(NotSupportedError, match="leading fixed dimension"):
        lazyk.to_arrow(lazyk.array(1.0))


# ---------------------------------------------------------------- Awkward
def test_awkward_round_trips_and_zero_copy():
    ak = pytest.importorskip("awkward")
    for a in [ak.Array([[1.5, 2.5], [], [3.5]]),
              ak.Array([[[1], []], [], [[2, 3]]]),
              ak.Array([[1.0, None], [], [3.0]]),
              ak.Array([[1, 2], None, [3]]),
              ak.to_regular(ak.Array([[1, 2], [3, 4]]), axis=1),
              ak.Array([[1, 2], [], [3]])[::-1],
              ak.Array(np.zeros((0,)))]:
        x = lazyk.from_awkward(a)
        assert x.to_list() == a.tolist()
        assert lazyk.to_awkward(x).tolist() == a.tolist()
    offsets = np.array([0, 2, 2, 3])
    content = np.array([1.0, 2.0, 3.0])
    a = ak.Array(ak.contents.ListOffsetArray(ak.index.Index64(offsets),
                                             ak.contents.NumpyArray(content)))
    x = lazyk.from_awkward(a)
    assert x.ptr == offsets.ctypes.data and content_address(x) == content.ctypes.data
    back = lazyk.to_awkward(lazyk.from_offsets(offsets, content))
    assert np.shares_memory(np.asarray(back.layout.offsets.data), offsets)
    assert np.shares_memory(np.asarray(back.layout.content.data), content)


def test_awkward_bit_masked_and_indexed_options():
    ak = pytest.importorskip("awkward")
    a = ak.Array([1.0, None, 3.0])
    bit = ak.to_layout(a).to_BitMaskedArray(valid_when=True, lsb_order=True)
    assert lazyk.from_awkward(ak.Array(bit)).to_list() == [1.0, None, 3.0]
    idx = ak.contents.IndexedOptionArray(ak.index.Index64(np.array([2, -1, 0])),
                                         ak.contents.NumpyArray(np.array([1.0, 2.0, 3.0])))
    assert lazyk.from_awkward(ak.Array(idx)).to_list() == [3.0, None, 1.0]
    with pytest.raises(NotSupportedError, match="Awkward union"):
        lazyk.from_awkward(ak.Array([1, "a"]))


def test_hand_made_arrmeta_past_the_content_raises_in_expressions():
    """A forged var arrmeta (Array.from_parts) is refused by the row step, never read."""
    import subprocess
    import sys
    code = (
        "import numpy as np, lazyk\n"
        "x = lazyk.from_offsets(np.array([0, 2, 3]), np.arange(3.0))\n"
        "m = list(x.meta); m[-1] = 2  # content length 2: row 1 reaches past it\n"
        "y = lazyk.Array.from_parts(x.type, m, x.ptr, x.owner)\n"
        "try:\n"
        "    lazyk.evaluate(y.sum(axis=-1))\n"
        "except ValueError as e:\n"
        "    print('refused:', e)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    assert "refused: var row 1" in res.stdout


def test_from_offsets_result_is_a_leaf_of_nested_ragged_and_lazyk_results():
    x = lazyk.from_offsets(np.array([0, 2, 3]), np.array([1.0, 2.0, 3.0]))
    r = lazyk.evaluate(x * 10)
    assert str(r.type) == "2 * var * float64" and r.to_list() == [[10.0, 20.0], [30.0]]
    assert r.arrmeta["dim1.width"] == 8 and r.arrmeta["dim1.stop_delta"] == 8
    back = lazyk.from_offsets(np.array([0, 1, 2]), r)  # a lazyk result nests as content
    assert back.to_list() == [[[10.0, 20.0]], [[30.0]]]


def test_strided_and_reversed_content_and_swapped_offsets():
    base = np.arange(10.0)
    for content in (base[::2], base[::-1], base[::-3]):
        offsets = np.array([0, 1, 1, len(content)], ">i8")  # non-native order: copied
        x = lazyk.from_offsets(offsets, content)
        ref = rows_of(offsets.astype(np.int64), content)
        assert x.to_list() == ref
        assert content_address(x) == content.__array_interface__["data"][0]
        sums = lazyk.evaluate(x.sum(axis=-1)).to_numpy()
        np.testing.assert_allclose(sums, [sum(r) for r in ref])
        assert lazyk.evaluate(x * 2).to_list() == [[2 * v for v in r] for r in ref]


def test_random_views_of_offsets_arrays_match_python_and_evaluate():
    rng = np.random.default_rng(7)
    for _ in range(25):
        lengths = rng.integers(0, 5, rng.integers(0, 6))
        offsets = np.zeros(len(lengths) + 1, rng.choice([np.int32, np.int64]))
        np.cumsum(lengths, out=offsets[1:])
        content = rng.integers(-9, 9, int(offsets[-1]) + 2).astype(np.float64)
        x = lazyk.from_offsets(offsets, content)
        ref = rows_of(offsets, content)
        a, b, c = (int(v) if v is not None else None for v in rng.choice(
            [None, -3, -1, 0, 1, 2, 4], 3))
        step = int(rng.choice([1, 2, -1, -2, 3]))
        outer, inner = slice(a, b, step), slice(b, c, int(rng.choice([1, -1, 2])))
        view = x[outer, inner]
        want = [r[inner] for r in ref[outer]]
        assert view.to_list() == want
        got = lazyk.evaluate(view.sum(axis=-1)).to_list()
        assert got == [float(sum(r)) for r in want]
        assert lazyk.evaluate(view + 1).to_list() == [[v + 1 for v in r] for r in want]


def test_from_offsets_names_foreign_content():
    with pytest.raises(TypeError, match="not builtins.object"):
        lazyk.from_offsets(np.array([0, 1]), object())
    assert lazyk.from_offsets(np.array([0, 1, 2]), [1.0, 2.0]).to_list() == [[1.0], [2.0]]
    # lists, Arrow and Awkward content read as lazyk.array reads them (None: missing)
    assert lazyk.from_offsets(np.array([0, 1]), [[1.0], [2.0, 3.0]]).to_list() == [[[1.0]]]
    want = ("2 * var * ?int64", [[1], [None, 3]])
    got = lazyk.from_offsets(np.array([0, 1, 3]), [1, None, 3])
    assert (str(got.type), got.to_list()) == want
    pa = pytest.importorskip("pyarrow")
    for content in (pa.array([1, None, 3]), pa.chunked_array([[1], [None, 3]])):
        got = lazyk.from_offsets(np.array([0, 1, 3]), content)
        assert (str(got.type), got.to_list()) == want


# ---------------------------------------------------------------- strings and bytes
TEXT_CASES = [
    (["kiwi", None, "", "é"], "4 * ?string"),
    ([["kiwi", "b"], [], None, ["kiwi"]], "4 * ?var * string"),
    ([["a", None], [], ["é"]], "3 * var * ?string"),
    ([[b"a", b"\x00b"], []], "2 * var * bytes"),
    ([], "0 * string"),
]


@pytest.mark.parametrize("data,t", TEXT_CASES)
def test_strings_round_trip_through_arrow_and_awkward(data, t):
    pa = pytest.importorskip("pyarrow")
    ak = pytest.importorskip("awkward")
    x = lazyk.from_arrow(pa.array(data, type=None if data else pa.string()))
    assert str(x.type) == t and x.to_list() == data
    assert lazyk.to_arrow(x).to_pylist() == data
    assert lazyk.to_awkward(x).tolist() == data
    if data:
        y = lazyk.from_awkward(ak.Array(data))
        assert y.to_list() == data
        assert lazyk.to_arrow(lazyk.array(data, type=t)).to_pylist() == data


def test_arrow_strings_are_read_in_place_and_compare_in_expressions():
    pa = pytest.importorskip("pyarrow")
    a = pa.array(["x" * (i % 7) for i in range(1000)]).slice(3, 990)
    x = lazyk.from_arrow(a)
    chars = a.buffers()[2]
    begins = x.owner.buffer[:16 * len(x)].view(np.uint64)[::2]  # {begin, size} elements
    assert chars.address <= int(begins.min()) and int(begins.max()) <= chars.address + chars.size
    want = [s == "xxx" for s in a.to_pylist()]
    assert np.asarray(x == "xxx").tolist() == want
    back = lazyk.to_arrow(x)  # back to back in one block: the characters in place
    assert back.equals(a) and back.buffers()[2].address == \
        chars.address + int(np.frombuffer(a.buffers()[1], np.int32)[a.offset])
    rows = lazyk.from_arrow(pa.array([["kiwi", "fig"], None, ["kiwi"]]))
    assert (rows == "kiwi").sum(axis=-1).eval().to_list() == [1, None, 1]
    assert lazyk.str_len(rows).eval().to_list() == [[4, 3], None, [4]]


def test_strings_out_of_order_or_assigned_are_gathered():
    pa = pytest.importorskip("pyarrow")
    x = lazyk.array(["a", "bb", "ccc"])
    x[1] = "zzzz"  # new characters in another block
    assert lazyk.to_arrow(x).to_pylist() == ["a", "zzzz", "ccc"]
    assert lazyk.to_arrow(x[::-1]).to_pylist() == ["ccc", "zzzz", "a"]
    assert lazyk.to_awkward(x[::2]).tolist() == ["a", "ccc"]
    assert lazyk.to_arrow(lazyk.array([b"q", b""])).type == pa.binary()


def test_bad_string_offsets_are_refused():
    from lazyk.arrays.buffers import text_array
    chars = np.frombuffer(b"abcdef", np.uint8)
    assert text_array(np.array([0, 2, 6]), chars).to_list() == ["ab", "cdef"]
    for bad in ([0, 4, 2], [0, 7], [-1, 2]):
        with pytest.raises(ArrayConstructionError, match="offsets"):
            text_array(np.array(bad), chars)


def test_awkward_characters_outside_strings_are_refused():
    ak = pytest.importorskip("awkward")
    chars = ak.to_layout(ak.Array(["ab"])).content
    with pytest.raises(NotSupportedError, match="char"):
        lazyk.from_awkward(ak.Array(chars))


# ---------------------------------------------------------------- records
RECORDS = [{"x": [1.0, 2.0], "y": 3, "s": "ab", "z": None},
           {"x": [], "y": 4, "s": None, "z": 2.5}, None,
           {"x": None, "y": 5, "s": "q", "z": 1.0}]


def test_records_round_trip_through_arrow_and_awkward():
    pa = pytest.importorskip("pyarrow")
    ak = pytest.importorskip("awkward")
    for data in [RECORDS, [r for r in RECORDS if r is not None and r["x"] is not None],
                 [[{"a": 1}], [], [{"a": 2}, {"a": 3}]],
                 [{"p": {"q": 1, "w": [1]}}, {"p": None}]]:
        x = lazyk.from_arrow(pa.array(data))
        assert x.to_list() == data
        assert lazyk.to_arrow(x).to_pylist() == data
        assert lazyk.to_awkward(x).tolist() == data
        assert lazyk.from_awkward(ak.Array(data)).to_list() == data
    x = lazyk.from_arrow(pa.array(RECORDS))
    assert str(x.type) == "4 * ?{x: ?var * float64, y: int64, s: ?string, z: ?float64}"
    assert lazyk.from_arrow(pa.array(RECORDS).slice(1, 2)).to_list() == RECORDS[1:3]


def test_awkward_records_fields_read_their_columns_in_place():
    # a field of records read from Awkward is Awkward's column itself (contiguous, no
    # strided view of the records), lists of records give every field's lists over the same
    # offsets; such records and fields are read-only, as Awkward's arrays are
    ak = pytest.importorskip("awkward")
    pt, eta = np.arange(5.0, dtype=np.float32), np.arange(5, dtype=np.int32)
    events = ak.zip({"met": np.array([1.0, 2.0, 3.0]),
                     "jet": ak.unflatten(ak.zip({"pt": pt, "eta": eta}), [2, 0, 3])},
                    depth_limit=1)
    x = lazyk.from_awkward(events)
    assert str(x.type) == "3 * {met: float64, jet: var * {pt: float32, eta: int32}}"
    jpt, jeta = x.jet.pt, x["jet"]["eta"]
    assert jpt.to_list() == [[0.0, 1.0], [], [2.0, 3.0, 4.0]] == events.jet.pt.to_list()
    assert jeta.to_list() == events.jet.eta.to_list()
    layout = ak.to_layout(events)
    met = np.asarray(x.met)
    assert met.strides == (8,) and np.shares_memory(met, layout.content("met").data)
    # the list content: Awkward's column, contiguous (arrmeta: its address, stride, size)
    assert jpt.meta[5:8] == (layout.content("jet").content.content("pt").data.ctypes.data,
                             4, 4)
    assert x.readonly and jpt.readonly and x.jet.readonly
    with pytest.raises(ValueError, match="read-only"):
        x.jet.pt[0] = [9.0, 9.0]
    with pytest.raises(ValueError, match="read-only"):
        x["met"] = 0.0
    assert x.to_list() == events.to_list()
    assert (lazyk.sum(x.jet.pt, axis=1) + x.met).eval().to_list() == [2.0, 2.0, 12.0]
    lists = lazyk.from_awkward(ak.Array([[1.0], []]))
    assert lists.readonly  # (a write would change the Awkward array)
    with pytest.raises(ValueError, match="read-only"):
        lists += 1
    mine = lists.copy()
    assert not copy.deepcopy(lists).readonly
    mine += 1
    assert not mine.readonly and mine.to_list() == [[2.0], []] and lists.to_list() == [[1.0], []]
    # a slice of the records (a Dask partition's rows) reads the columns' rows in place
    tail = x[1:]
    assert tail.jet.pt.meta[5:8] == (jpt.meta[5], 4, 4) and tail.readonly
    assert tail.jet.pt.to_list() == [[], [2.0, 3.0, 4.0]] and tail.to_list() == x.to_list()[1:]
    assert x[::2].met.to_list() == [1.0, 3.0]
    # after a selection in Awkward the lists are starts and stops (ListArray): their fields
    # read compacted columns, contiguous too
    picked = events[np.array([True, False, True])]
    y = lazyk.from_awkward(picked)
    assert y.jet.pt.meta[6:8] == (4, 4) and y.jet.eta.meta[6:8] == (4, 4)
    assert y.to_list() == picked.to_list() and y.jet.pt.to_list() == [[0.0, 1.0], [2.0, 3.0, 4.0]]


def test_records_read_from_awkward_build_no_structs_until_needed():
    # reading copies nothing: the fields are the columns, and the C structs (and the lists'
    # arrmeta over them) are built only when something needs the records whole
    ak = pytest.importorskip("awkward")
    jets = ak.zip({"pt": np.arange(6.0), "q": np.array([1, -1, 1, 1, -1, 1], np.int8)})
    events = ak.zip({"met": np.array([5.0, 6.0, 7.0, 8.0]),
                     "jet": ak.unflatten(jets, [2, 0, 3, 1])}, depth_limit=1)
    data = events.to_list()
    x = lazyk.from_awkward(events)
    assert str(x.type) == "4 * {met: float64, jet: var * {pt: float64, q: int8}}"
    assert not x.built and not x.jet.built and x.shape == (4,) and len(x) == 4
    # row operations, selections, histograms and interchange read the columns
    assert lazyk.num(x.jet).eval().to_list() == [2, 0, 3, 1]
    assert x.jet[x.jet.pt > 1.5].pt.eval().to_list() == [[], [], [2.0, 3.0, 4.0], [5.0]]
    assert lazyk.sum(x[x.met > 5.5].jet.pt, axis=1).eval().to_list() == [0.0, 9.0, 5.0]
    assert lazyk.histogram(x.jet.pt, 3, (0, 6)).eval().tolist() == [2, 2, 2]
    assert lazyk.to_awkward(x).to_list() == data and lazyk.to_arrow(x).to_pylist() == data
    with pytest.raises(lazyk.UnsupportedOperandError, match="records are not operands"):
        x.jet + 1  # (refused as it is: nothing built for the error)
    # slices of rows stay unbuilt: their columns' rows (the lists over the same content)
    tail, jtail = x[1:], x.jet[2:]
    assert not tail.built and not jtail.built
    assert tail.jet.pt.to_list() == [[], [2.0, 3.0, 4.0], [5.0]]
    assert lazyk.to_awkward(jtail).to_list() == events.jet[2:].to_list()
    assert not x.built and not x.jet.built
    # what needs the records whole builds them, once
    assert jtail.to_list() == events.jet[2:].to_list() and x.jet[::2].to_list() == \
        events.jet[::2].to_list()
    assert tail.to_list() == data[1:] and x[1:3].to_list() == data[1:3]
    assert x.to_list() == data and x.built and x.jet.built and x.readonly


def test_records_read_from_columns_build_once_under_threads():
    ak = pytest.importorskip("awkward")
    from concurrent.futures import ThreadPoolExecutor
    n = 20_000
    events = ak.zip({"a": np.arange(n, dtype=np.int32),
                     "l": ak.unflatten(ak.zip({"v": np.arange(2.0 * n)}), np.full(n, 2))},
                    depth_limit=1)
    x = lazyk.from_awkward(events)
    with ThreadPoolExecutor(4) as pool:
        metas = list(pool.map(lambda _: (x.meta, x.ptr, x.owner, x.l.meta), range(8)))
    assert all(m == metas[0] for m in metas)  # one set of structs kept, for every thread
    assert x.to_list()[-1] == {"a": n - 1, "l": [{"v": 2.0 * n - 2}, {"v": 2.0 * n - 1}]}


def test_arrow_extension_types_read_as_their_storage():
    # `ak.to_arrow` (and Parquet files Awkward writes) give Awkward's Arrow extension types
    ak = pytest.importorskip("awkward")
    pa = pytest.importorskip("pyarrow")
    events = ak.Array([{"m": 1.5, "j": [{"pt": 2.0, "q": None}, {"pt": 3.0, "q": 1}]},
                       {"m": 2.5, "j": []}, {"m": 3.5, "j": None}])
    for converted in (ak.to_arrow(events), ak.to_arrow_table(events)):
        assert isinstance(converted.type if hasattr(converted, "type") else
                          converted.schema.field(0).type, pa.ExtensionType)
        x = lazyk.from_arrow(converted)
        assert str(x.type) == "3 * {m: float64, j: ?var * {pt: float64, q: ?int64}}"
        assert lazyk.num(x.j).eval().to_list() == [2, 0, None]
        assert x.to_list() == events.to_list()


def test_lists_of_records_that_may_be_missing_read_their_columns_too():
    ak = pytest.importorskip("awkward")
    pa = pytest.importorskip("pyarrow")
    events = ak.Array([{"m": 1.5, "j": [{"pt": 2.0, "q": None}, {"pt": 3.0, "q": 1}]},
                       {"m": 2.5, "j": []}, {"m": 3.5, "j": None},
                       {"m": 4.5, "j": [{"pt": 5.0, "q": 2}]}])
    data = events.to_list()
    for x in (lazyk.from_awkward(events), lazyk.from_arrow(pa.array(data))):
        assert str(x.j.type) == "4 * ?var * {pt: float64, q: ?int64}"
        assert str(x.j.pt.type) == "4 * ?var * float64"
        assert x.j.pt.to_list() == [[2.0, 3.0], [], None, [5.0]] and not x.built
        assert lazyk.sum(x.j.pt, axis=1).eval().to_list() == [5.0, 0.0, None, 5.0]
        assert x.j[x.j.pt > 2.5].q.eval().to_list() == [[1], [], None, [2]]
        assert x[1:].j.pt.to_list() == [[], None, [5.0]] and x.j[2:].q.to_list() == [None, [2]]
        assert lazyk.to_awkward(x).to_list() == data and not x.built
        assert x.j[2:].to_list() == [None, [{"pt": 5.0, "q": 2}]]
        assert x.to_list() == data and x.built


def test_arrow_table_fields_read_their_columns_in_place():
    pa = pytest.importorskip("pyarrow")
    pt = pa.array(np.arange(5.0))
    jets = pa.ListArray.from_arrays(pa.array([0, 2, 2, 5], pa.int32()),
                                    pa.StructArray.from_arrays([pt], names=["pt"]))
    x = lazyk.from_arrow(pa.table({"met": pa.array([1.0, 2.0, 3.0]), "jet": jets}))
    assert str(x.type) == "3 * {met: float64, jet: var * {pt: float64}}"
    assert x.jet.pt.meta[5:8] == (pt.buffers()[1].address, 8, 8)  # the column, in place
    assert x.readonly and x.jet.pt.readonly
    got = x.jet[x.jet.pt > 1.5].pt
    assert got.eval().to_list() == [[], [], [2.0, 3.0, 4.0]]
    assert lazyk.sum(x.jet.pt, axis=1).eval().to_list() == [1.0, 0.0, 9.0]


def test_arrow_records_in_expressions_and_list_contents_in_place():
    pa = pytest.importorskip("pyarrow")
    n = 1000
    values = pa.array(np.arange(2.0 * n))
    a = pa.StructArray.from_arrays(
        [pa.array(np.arange(n)), pa.ListArray.from_arrays(
            pa.array(np.arange(0, 2 * n + 1, 2, dtype=np.int32)), values)], names=["i", "l"])
    r = lazyk.from_arrow(a)
    assert str(r.type) == f"{n} * {{i: int64, l: var * float64}}"
    assert content_address(r["l"]) == values.buffers()[1].address  # rows read in place
    got = np.asarray(r.l.sum(axis=-1) + r.i)
    want = np.arange(0, 2 * n, 2) * 2.0 + 1 + np.arange(n)
    np.testing.assert_array_equal(got, want)
    back = lazyk.to_arrow(r)
    assert back.equals(a)  # list keeps int32 offsets
    plain = [{"a": 1, "b": 2.5}, {"a": 3, "b": -1.0}]
    y = lazyk.array(plain, type="2 * {a: int64, b: float64}")
    assert lazyk.to_arrow(y).to_pylist() == plain and lazyk.to_awkward(y).tolist() == plain


def test_records_from_columns_refuse_other_lengths():
    from lazyk.arrays.structs import records_array
    with pytest.raises(ArrayConstructionError, match="field 'b'"):
        records_array(["a", "b"], [lazyk.array(np.arange(3)), lazyk.array(np.arange(2))])


def test_arrow_table_becomes_records_one_per_row():
    pa = pytest.importorskip("pyarrow")
    t = pa.table({"id": [1, 2, 3], "hits": [[1.0, 2.0], [], None], "fruit": ["kiwi", None, "fig"]})
    r = lazyk.from_arrow(t)
    assert str(r.type) == "3 * {id: int64, hits: ?var * float64, fruit: ?string}"
    assert r.to_list() == t.to_pylist()
    assert (r.fruit == "kiwi").eval().to_list() == [True, None, False]
    assert lazyk.from_arrow(t.to_batches()[0]).to_list() == t.to_pylist()
    with pytest.raises(TypeError, match="Table or RecordBatch"):
        lazyk.from_arrow({"id": [1]})


@pytest.mark.parametrize("a", [np.array(["ab", "é", "", "a\x00b"]), np.array([["日本", "x"], ["", "zz"]]),
                               np.array([b"ab", b"", b"c\x00d"]), np.array([], dtype="U3"),
                               np.array(["", ""]), np.array(["kiwi", "fig"])[::-1]])
def test_numpy_text_arrays_pack_into_strings(a):
    from lazyk.arrays.buffers import text_from_numpy
    x = text_from_numpy(a)
    assert x.to_list() == a.tolist()
    assert str(x.type).endswith("string" if a.dtype.kind == "U" else "bytes")
    k = lazyk.compile(lazyk.str_len(lazyk.placeholder("s", "N * string")))
    if a.dtype.kind == "U" and a.ndim == 1:
        assert np.asarray(k(a)).tolist() == [len(s) for s in a.tolist()]


@pytest.mark.parametrize("shape", [(4, 0), (3, 2, 0), (2, 0, 3), (0, 3), (1, 0, 0)])
def test_to_awkward_keeps_rows_of_zero_width_dims(shape):
    ak = pytest.importorskip("awkward")
    a = np.zeros(shape)
    got = lazyk.to_awkward(lazyk.array(a))
    assert got.tolist() == a.tolist()
    assert len(got) == shape[0]
    np.testing.assert_array_equal(ak.to_numpy(got), a)
    assert ak.to_numpy(got).shape == shape


def test_to_awkward_zero_width_dims_under_var_and_options():
    pytest.importorskip("awkward")
    for data, t in (([[[]], [[], []]], "2 * var * 0 * int64"),
                    ([None, [], None], "3 * ?0 * int64"),
                    ([{"a": [], "b": 1}] * 3, "3 * {a: 0 * int64, b: int64}")):
        x = lazyk.array(data, type=t)
        assert lazyk.to_awkward(x).tolist() == data == x.to_list()


def test_to_awkward_records_write_to_arrow_and_parquet(tmp_path):
    ak = pytest.importorskip("awkward")
    pytest.importorskip("pyarrow")
    y = lazyk.array([[1.0, 2.0], [], [3.0]])
    a = lazyk.to_awkward(lazyk.zip({"a": y, "b": y + 1}).eval())
    want = [[{"a": 1.0, "b": 2.0}, {"a": 2.0, "b": 3.0}], [], [{"a": 3.0, "b": 4.0}]]
    assert ak.to_arrow(a).to_pylist() == want  # (each field a contiguous buffer)
    ak.to_parquet(a, tmp_path / "r.parquet")
    assert ak.from_parquet(tmp_path / "r.parquet").tolist() == want


def test_from_awkward_categorical_values_with_missing_ones():
    ak = pytest.importorskip("awkward")
    pa = pytest.importorskip("pyarrow")
    for values in (["x", None, "y", "x"], [1.5, None, 2.5], ["x", "y"]):
        a = ak.from_arrow(pa.array(values).dictionary_encode())  # (Parquet's dictionaries)
        assert a.layout.parameter("__array__") == "categorical"
        assert lazyk.from_awkward(a).to_list() == values


def test_records_with_string_fields_after_selections_and_flatten():
    ak = pytest.importorskip("awkward")
    pa = pytest.importorskip("pyarrow")
    t = pa.table({"b": pa.array([1.0, 2.0, 3.0]), "s": pa.array(["x", "y", "zz"])})
    tx = lazyk.from_arrow(t)
    assert tx[tx.b > 1].eval().to_list() == [r for r in t.to_pylist() if r["b"] > 1]
    j = ak.Array([[{"pt": 10.0, "n": "a"}, {"pt": 3.0, "n": None}, {"pt": 30.0, "n": "c"}],
                  [], [{"pt": 7.0, "n": "e"}]])
    x = lazyk.from_awkward(j)
    assert x[x.pt > 6].eval().to_list() == j[j.pt > 6].to_list()
    assert lazyk.flatten(x).eval().to_list() == ak.flatten(j).to_list()
    assert x[lazyk.num(x) > 0].eval().to_list() == j[ak.num(j) > 0].to_list()


_EMPTY_ARROW = """
import sys
import pyarrow as pa, lazyk
kind = sys.argv[1]
if kind == "list":
    a = pa.ListArray.from_buffers(pa.list_(pa.int64()), 0, [None, None],
                                  children=[pa.array([], pa.int64())])
elif kind == "large_list":
    a = pa.LargeListArray.from_buffers(pa.large_list(pa.float64()), 0, [None, None],
                                       children=[pa.array([], pa.float64())])
elif kind == "nested":
    a = pa.ListArray.from_buffers(pa.list_(pa.list_(pa.int64())), 0, [None, None],
                                  children=[pa.array([], pa.list_(pa.int64()))])
else:
    a = pa.Array.from_buffers(pa.string() if kind == "string" else pa.large_binary(), 0,
                              [None, None, pa.py_buffer(b"")])
a.validate(full=True)
assert a.buffers()[1] is None  # no offsets buffer: valid Arrow for zero rows
x = lazyk.from_arrow(a)
print(len(x), x.type, x.to_list(), lazyk.to_arrow(x).to_pylist())
"""


@pytest.mark.parametrize("kind,type_text", [
    ("list", "0 * var * int64"), ("large_list", "0 * var * float64"),
    ("nested", "0 * var * var * int64"), ("string", "0 * string"), ("binary", "0 * bytes")])
def test_from_arrow_zero_rows_without_offsets_buffer(kind, type_text):
    import subprocess
    import sys

    pytest.importorskip("pyarrow")
    r = subprocess.run([sys.executable, "-c", _EMPTY_ARROW, kind], capture_output=True,
                       text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["0", *type_text.split(), "[]", "[]"]


def test_arrow_fixed_lists_of_size_zero_nulls_and_missing_rows():
    pa = pytest.importorskip("pyarrow")
    a = pa.array([[], []], type=pa.list_(pa.int32(), 0))
    assert str(lazyk.from_arrow(a).type) == "2 * 0 * int32"
    assert lazyk.to_arrow(lazyk.from_arrow(a)).type == a.type
    s = pa.array([[], []], type=pa.list_(pa.string(), 0))
    assert str(lazyk.from_arrow(s).type) == "2 * 0 * string"
    # no values at all: float64, as lazyk.array and Awkward type it
    assert str(lazyk.from_arrow(pa.array([[], []])).type) == "2 * var * float64"
    assert lazyk.from_arrow(pa.array([None, None])).to_list() == [None, None]
    # rows that may be missing, as to_arrow writes `?n` rows: read back as `?var` rows
    y = (lazyk.from_arrow(pa.array([[1.0, 2.0], None])) + np.ones((2, 2))).eval()
    back = lazyk.from_arrow(lazyk.to_arrow(y))
    assert str(back.type) == "2 * ?var * float64" and back.to_list() == [[2.0, 3.0], None]


def test_awkward_regular_arrays_of_size_zero_keep_their_type():
    ak = pytest.importorskip("awkward")
    k = ak.to_regular(ak.Array(np.zeros((2, 0), "i4")), axis=1)
    assert str(lazyk.from_awkward(k).type) == "2 * 0 * int32"


def test_array_reads_arrow_extension_arrays_as_from_arrow_does():
    ak = pytest.importorskip("awkward")
    pytest.importorskip("pyarrow")
    a = ak.Array([[1.0, 2.0], [], [3.0]])
    t = ak.to_arrow(a)  # an Arrow extension array of Awkward's
    assert lazyk.array(t).to_list() == lazyk.from_arrow(t).to_list() == a.to_list()
    assert (lazyk.array(t) * 2).eval().to_list() == [[2.0, 4.0], [], [6.0]]


def test_records_holding_fixed_dims_of_padded_records_read_and_build_whole():
    """A record field of fixed dims of records with tail padding (`{b: int64, c:
    float32}`: 16 bytes a record) steps by the padded size; Arrow's fixed-size lists of
    structs build whole records (to_list), at the top, in lists, in tables."""
    pa = pytest.importorskip("pyarrow")
    v = [{"a": [{"b": 1, "c": 2.5}, {"b": 3, "c": 4.0}], "z": 7}]
    x = lazyk.array(v, type="1 * {a: 2 * {b: int64, c: float32}, z: int8}")
    assert x.to_list() == v and x.a.b.to_list() == [[1, 3]]
    inner = pa.struct([("b", pa.int64()), ("c", pa.float32())])
    t = pa.struct([("a", pa.list_(inner, 2)), ("z", pa.int8())])
    a = pa.array([v[0], None, {"a": [{"b": 5, "c": 6.0}, {"b": 7, "c": 8.0}], "z": 9}], t)
    for arr in (a, pa.array([[v[0]], [], None], pa.list_(t)),
                pa.table({"s": a, "k": pa.array([1, 2, 3])}),
                pa.array([{"a": [{"b": 1}]}], pa.struct([("a", pa.list_(
                    pa.struct([("b", pa.int64())]), 1))]))):
        assert lazyk.from_arrow(arr).to_list() == arr.to_pylist()


def test_sliced_lists_of_missing_records_with_a_fixed_size_list_field():
    """Lists whose content runs past the rows used (a sliced Arrow array) of records that
    may be missing, with a fixed-size list field: expressions read only the rows used."""
    pa = pytest.importorskip("pyarrow")
    t = pa.list_(pa.struct([("f", pa.list_(pa.int64(), 2))]))
    full = pa.array([[{"f": [1, 5]}], [None, {"f": [2, 6]}], [{"f": [3, 7]}, None]], t)
    for a in (full.slice(0, 1), full.slice(1, 1), full.slice(0, 2), full.slice(1), full):
        x, py = lazyk.from_arrow(a), a.to_pylist()
        assert lazyk.num(x).eval().to_list() == [len(r) for r in py]
        assert (x.f + 1).eval().to_list() == [
            [None if e is None else [v + 1 for v in e["f"]] for e in r] for r in py]
        assert lazyk.firsts(x).f.eval().to_list() == [
            None if not r or r[0] is None else r[0]["f"] for r in py]


def test_records_with_fixed_dims_of_strings_or_missing_values_build_whole():
    """Struct fields that are fixed-size lists of strings or of values that may be
    missing: the records build whole (their Python values), as `lazyk.array` builds that
    type; a struct with no fields reads as records of no fields."""
    pa = pytest.importorskip("pyarrow")
    t = pa.struct([("a", pa.list_(pa.string(), 2)), ("b", pa.list_(pa.int64(), 2))])
    a = pa.array([{"a": ["x", "yz"], "b": [1, None]}, None, {"a": ["", None], "b": [3, 4]}], t)
    x = lazyk.from_arrow(a)
    assert str(x.type) == "3 * ?{a: 2 * ?string, b: 2 * ?int64}"
    assert x.to_list() == a.to_pylist()
    tb = pa.table({"s": a, "k": [1, 2, 3]})
    assert lazyk.from_arrow(tb).to_list() == tb.to_pylist()
    rows = pa.array([[a[0].as_py()], [], None], pa.list_(t))
    assert lazyk.from_arrow(rows).to_list() == rows.to_pylist()
    empty = lazyk.from_arrow(pa.array([{}, None], pa.struct([])))
    assert str(empty.type) == "2 * ?{}" and empty.to_list() == [{}, None]
    back = lazyk.from_awkward(lazyk.to_awkward(lazyk.array([{}, {}])))
    assert str(back.type) == "2 * {}" and back.to_list() == [{}, {}]


def test_records_of_no_fields_and_empty_fixed_fields_export_as_records():
    pa = pytest.importorskip("pyarrow")
    pytest.importorskip("awkward")
    for data in ([{}, {}], [{"a": 1, "r": {}}], [{}, None], [{"x": []}], [[{}], []]):
        x = lazyk.array(data)
        assert lazyk.to_awkward(x).tolist() == data
        assert lazyk.to_arrow(x).to_pylist() == data
    assert lazyk.to_arrow(lazyk.array([{}])).type == pa.struct([])


def test_dictionary_fields_under_null_structs_read_as_missing():
    pa = pytest.importorskip("pyarrow")
    t = pa.struct([("y", pa.dictionary(pa.int32(), pa.string()))])
    for a in (pa.array([None], type=t), pa.array([[None]], type=pa.list_(t)),
              pa.array([{"y": "a"}, None, {"y": "b"}], type=t),
              pa.array(["a", "b", None, "a"]).dictionary_encode()):
        assert lazyk.from_arrow(a).to_list() == a.to_pylist()


def test_arrow_extension_types_read_as_their_storage_and_tables_need_a_column():
    """Arrow's own extension types (bool8, json, uuid) read as their storage, bool8 as
    bools; a Table of no columns reads as records of no fields, its rows kept."""
    pa = pytest.importorskip("pyarrow")
    if not all(hasattr(pa, k) for k in ("bool8", "json_", "uuid")):
        pytest.skip("a pyarrow without Arrow's canonical extension types")
    got = lazyk.from_arrow(pa.array([1, 0, None, 5], pa.bool8()))
    assert got.to_list() == [True, False, None, True] and str(got.type) == "4 * ?bool"
    assert lazyk.from_arrow(pa.array(['{"a": 1}', None], pa.json_())).to_list() == \
        ['{"a": 1}', None]
    assert lazyk.from_arrow(pa.array([bytes(range(16))], pa.uuid())).to_list() == \
        [bytes(range(16))]
    none = lazyk.from_arrow(pa.table({"a": [1, 2]}).drop_columns(["a"]))  # (its rows kept)
    assert str(none.type) == "2 * {}" and none.to_list() == [{}, {}]


def test_pyarrow_takes_arrays_expressions_and_records():
    pa = pytest.importorskip("pyarrow")
    rows = lazyk.array([[1.0, 2.0], [], [3.0]])
    assert pa.array(rows).to_pylist() == [[1.0, 2.0], [], [3.0]]
    assert pa.array(rows * 2).to_pylist() == [[2.0, 4.0], [], [6.0]]  # (computed)
    assert pa.array(lazyk.sum(rows, axis=1), type=pa.float32()).type == pa.float32()
    rec = lazyk.zip({"x": rows, "n": lazyk.num(rows)[:, None]})
    table = pa.table({"r": rec, "s": lazyk.array(["a", None, "bc"])})
    assert table.column("r").to_pylist() == [[{"x": 1.0, "n": 2}, {"x": 2.0, "n": 2}], [],
                                             [{"x": 3.0, "n": 1}]]
    assert table.column("s").to_pylist() == ["a", None, "bc"]


def test_one_row_of_rows_converts_through_a_slice_and_says_so():
    x = lazyk.array([[1.0, 2.0], [3.0]])
    with pytest.raises(lazyk.NotSupportedError, match=r"one row .*x\[i:i \+ 1\]"):
        np.asarray(x[0])
    with pytest.raises(lazyk.NotSupportedError, match=r"x\[i:i \+ 1\], or x\[i\]\[None\]"):
        lazyk.to_arrow(x[0])
    assert lazyk.to_arrow(x[0][None]).to_pylist() == [[1.0, 2.0]] if \
        pytest.importorskip("pyarrow") else True
    assert lazyk.flatten(x[0:1]).eval().to_numpy().tolist() == [1.0, 2.0]
