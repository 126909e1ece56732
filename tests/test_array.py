"""lazyk.array over NumPy data: zero-copy views for every layout, arrmeta, conversions."""
import ctypes
import gc
import weakref

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lazyk
from lazyk import types as T
from tests import ragged_strategies as S

BASE = np.arange(24, dtype=np.int32).reshape(4, 6)


def _unaligned() -> np.ndarray:
    raw = np.zeros(4 * 5 + 1, np.uint8)[1:].view("<i4")
    raw[:] = [1, -2, 3, -4, 5]
    return raw


LAYOUTS = {
    "contiguous": lambda: BASE.copy(),
    "negative strides": lambda: BASE[::-1, ::-2],
    "zero strides": lambda: np.broadcast_to(np.arange(3.0), (4, 3)),
    "non-contiguous": lambda: BASE[1:, ::3],
    "fortran": lambda: np.asfortranarray(BASE),
    "byte-swapped": lambda: BASE.astype(">i4"),
    "unaligned": _unaligned,
    "structured": lambda: np.array([(1, 2.5), (3, 4.5)], dtype=[("a", "i1"), ("b", "<f8")]),
    "packed swapped record": lambda: np.array([(1, 2.5)], dtype=np.dtype(
        [("a", "i1"), ("b", ">f8")], align=False)),
    "subarray field": lambda: np.arange(12, dtype=np.int32).view([("m", "i4", (2, 3))]),
    "0-d": lambda: np.array(7.5),
    "complex": lambda: np.array([1 + 2j, -3j], dtype=np.complex64),
}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_numpy_layouts_are_zero_copy_views(name):
    src = LAYOUTS[name]()
    a = lazyk.array(src)
    out = a.to_numpy()
    assert out is src or np.shares_memory(out, src)
    assert out.shape == src.shape and out.strides == src.strides and out.dtype == src.dtype
    assert a.shape == src.shape and a.ndim == src.ndim
    assert a.ptr == src.__array_interface__["data"][0]
    if src.dtype.names is None:
        assert a.to_list() == src.tolist()
    else:
        expect = [{n: np.asarray(row[n]).tolist() for n in src.dtype.names} for row in src]
        assert a.to_list() == expect


def test_write_through_numpy_is_seen_and_back():
    src = np.zeros((3, 4), order="F")
    a = lazyk.array(src[:, ::-1])
    src[0, 3] = 5.0
    assert a.to_list()[0][0] == 5.0
    a[2, 0] = 9.0
    assert src[2, 3] == 9.0


def test_byte_swapped_type_and_values():
    src = np.array([1, 256, -2], dtype=">i4")
    a = lazyk.array(src)
    assert a.type == T.FixedDim(3, T.Scalar("int32", ">"))
    assert str(a.type) in ("3 * >int32", "3 * int32")  # '>' is native on big-endian machines
    assert a.to_list() == [1, 256, -2]
    assert a.to_numpy().dtype == np.dtype(">i4")


def test_unaligned_reads_back_and_is_flagged():
    a = lazyk.array(_unaligned())
    assert a.aligned is False
    assert a.ptr % 4 != 0
    assert a.to_list() == [1, -2, 3, -4, 5]
    assert a[3].to_list() == -4


def test_arrmeta_of_numpy_layouts():
    a = lazyk.array(BASE[::-1, ::2])
    assert a.meta == (4, -24, 3, 8)
    raw = bytes(a.arrmeta)
    assert np.frombuffer(raw, np.int64).tolist() == [4, -24, 3, 8]
    assert a.arrmeta["dim0.stride"] == -24 and a.arrmeta["dim1.size"] == 3
    rec = lazyk.array(LAYOUTS["packed swapped record"]())
    assert rec.meta == (1, 9, 0, 1)  # {size, stride} then the record's field offsets
    assert str(rec.type) == "1 * {a: int8, b: >float64}"


def test_structured_field_views_share_memory():
    src = LAYOUTS["structured"]()
    a = lazyk.array(src)
    b = a.b
    assert b.type == T.dshape("2 * float64")
    assert np.shares_memory(b.to_numpy(), src)
    a["a"][1] = 100
    assert src["a"][1] == 100
    assert a[0].to_list() == {"a": 1, "b": 2.5}


def test_buffer_protocol_objects():
    buf = bytearray(b"\x01\x02\x03")
    a = lazyk.array(buf)
    assert str(a.type) == "3 * uint8" and a.to_list() == [1, 2, 3]
    a[0] = 9
    assert buf[0] == 9
    assert lazyk.array(memoryview(b"ab")).readonly


def test_readonly_numpy_gives_readonly_array():
    src = np.arange(4.0)
    src.flags.writeable = False
    a = lazyk.array(src)
    assert a.readonly
    with pytest.raises(ValueError, match="read-only"):
        a[0] = 1.0
    with pytest.raises(ValueError):
        a[1:][0] = 1.0
    assert src.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_numpy_array_stays_alive():
    src = np.arange(1000.0)
    ref = weakref.ref(src)
    a = lazyk.array(src)
    v = a[10:20]
    del src, a
    gc.collect()
    assert ref() is not None
    assert v.to_list() == list(map(float, range(10, 20)))


def test_to_numpy_dlpack_and_array_protocol():
    a = lazyk.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert a.__dlpack_device__() == (1, 0)
    back = np.from_dlpack(a)
    assert np.shares_memory(back, a.to_numpy()) and back.tolist() == a.to_list()
    c = np.asarray(a)
    assert c is a.to_numpy()
    assert np.asarray(a, dtype=np.float64).dtype == np.float64


def test_to_numpy_refuses_var_with_a_hint():
    a = lazyk.array([[1, 2], [3]])
    with pytest.raises(lazyk.NotSupportedError, match="pad it .* to_list"):
        a.to_numpy()


def test_object_arrays_refused():
    with pytest.raises(lazyk.NotSupportedError):
        lazyk.array(np.array([1, None], dtype=object))


def test_array_from_numpy_with_matching_type_is_a_view_else_a_copy():
    src = np.arange(3, dtype=np.int32)
    assert np.shares_memory(lazyk.array(src, type="3 * int32").to_numpy(), src)
    b = lazyk.array(src, type="3 * float64")
    assert b.to_list() == [0.0, 1.0, 2.0] and not np.shares_memory(b.to_numpy(), src)


def _peek(address: int, ctype):
    return ctype.from_address(address).value


def test_var_layout_is_what_docs_layout_says():
    """Walk a `2 * var * ?int32` array with raw pointers exactly as a kernel would."""
    a = lazyk.array([[1, None, 3], [4]], type="2 * var * ?int32")
    (size0, stride0, _blockref, width, stop_delta, content, istride, vstride, length,
     mask_offset) = a.meta
    assert (size0, stride0, width, stop_delta, istride, vstride, length) == (2, 16, 8, 8, 4, 4, 4)
    rows = []
    for i in range(size0):
        elem = a.ptr + i * stride0
        start = _peek(elem, ctypes.c_int64)
        stop = _peek(elem + stop_delta, ctypes.c_int64)
        assert 0 <= start <= stop <= length
        row = []
        for j in range(stop - start):
            p = content + start * istride + j * vstride
            row.append(_peek(p, ctypes.c_int32) if _peek(p + mask_offset, ctypes.c_uint8) else None)
        rows.append(row)
    assert rows == [[1, None, 3], [4]]


def test_string_layout_is_begin_and_size():
    a = lazyk.array(["hé", "", "xyz"])
    size, stride, _ref = a.meta
    got = []
    for i in range(size):
        begin = _peek(a.ptr + i * stride, ctypes.c_uint64)
        n = _peek(a.ptr + i * stride + 8, ctypes.c_int64)
        got.append(ctypes.string_at(begin, n).decode("utf-8"))
    assert got == ["hé", "", "xyz"]


def test_record_arrmeta_offsets_and_field_names():
    a = lazyk.array([{"x": 1, "s": "a"}], type="1 * {x: int8, s: string}")
    assert a.meta[:4] == (1, 24, 0, 8)
    assert list(a.arrmeta.dtype.names) == ["dim0.size", "dim0.stride", "x.offset", "s.offset",
                                           "s.string.blockref"]


def test_properties():
    a = lazyk.array([[1.0, 2.0], [3.0]])
    assert a.shape == (2, None) and a.ndim == 2
    assert a.dtype == T.Scalar("float64")
    assert len(a) == 2 and len(a[0]) == 2
    assert not a.readonly
    s = lazyk.array(3)
    assert s.shape == () and int(s) == 3 and float(s) == 3.0


def test_other_buffer_objects_and_masked_arrays():
    import array as pyarray

    buf = pyarray.array("i", [1, 2, 3])
    a = lazyk.array(buf)
    assert str(a.type) == "3 * int32"
    a[0] = 7
    assert buf[0] == 7  # zero-copy through the buffer protocol
    m = np.ma.masked_array([1.5, 2.5, 3.5], mask=[0, 1, 0])
    b = lazyk.array(m)
    assert str(b.type) == "3 * ?float64" and b.to_list() == [1.5, None, 3.5]


def test_from_parts_rebuilds_an_array_from_type_arrmeta_and_pointer():
    a = lazyk.array([[1, None], [3]], type="2 * var * ?int16")
    b = lazyk.Array.from_parts(str(a.type), bytes(a.arrmeta), a.ptr, a.owner)
    assert b.to_list() == [[1, None], [3]] and b.meta == a.meta
    block = lazyk.arrays.memory.MemoryBlock(24)
    c = lazyk.Array.from_parts("3 * int64", (3, -8), block.address + 16, block)
    c[...] = [1, 2, 3]
    assert np.frombuffer(block.buffer, np.int64).tolist() == [3, 2, 1]
    with pytest.raises(ValueError, match="outside"):
        lazyk.Array.from_parts("4 * int64", (4, 8), block.address, block)
    with pytest.raises(ValueError, match="needs 2 arrmeta fields"):
        lazyk.Array.from_parts("3 * int64", (3,), block.address, block)


def test_forged_arrmeta_raises_instead_of_crashing():
    a = lazyk.array([[1, 2], [3]], type="2 * var * int32")
    size, stride, ref, width, delta, content, istride, vstride, length = a.meta
    forged = lazyk.Array.from_parts(a.type, (size, stride, ref, width, delta, content + 10**9,
                                             istride, vstride, length), a.ptr, a.owner)
    with pytest.raises(ValueError, match="outside"):
        forged.to_list()
    with pytest.raises(ValueError, match="outside"):
        forged[0, 0]
    too_short = lazyk.Array.from_parts(a.type, (size, stride, ref, width, delta, content,
                                                istride, vstride, 2), a.ptr, a.owner)
    with pytest.raises(ValueError, match="var row 1"):
        too_short.to_list()
    wrong_block = lazyk.Array.from_parts(a.type, (size, stride, ref + 10**6, width, delta,
                                                  content, istride, vstride, length),
                                         a.ptr, a.owner)
    with pytest.raises(ValueError, match="blockref"):
        wrong_block.to_list()


@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=3),
       steps=st.lists(st.integers(-3, 3).filter(bool), min_size=3, max_size=3),
       order=st.sampled_from("CF"), dtype=st.sampled_from(["<i2", ">i4", "<f8", ">c16", "?"]))
def test_random_numpy_views_are_zero_copy(shape, steps, order, dtype):
    base = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape).astype(dtype, order=order)
    view = base[tuple(slice(None, None, s) for s in steps[:len(shape)])]
    a = lazyk.array(view)
    assert a.to_numpy() is view and a.to_list() == view.tolist()
    assert a.meta == tuple(x for pair in zip(view.shape, view.strides) for x in pair)
    assert a.type == T.from_numpy(view.dtype, view.shape)


def test_pickle_round_trip():
    import pickle

    for a in (lazyk.array([[1, None], [3]], type="2 * var * ?int16"),
              lazyk.array(np.arange(6.0).reshape(2, 3)[:, ::-1]),
              lazyk.array([{"s": "é", "v": [1.5]}])):
        b = pickle.loads(pickle.dumps(a))
        assert b.type == a.type and b.to_list() == a.to_list() and b.ptr != a.ptr


_STRINGS_IN_ANOTHER_PROCESS = """
import pickle, sys
import lazyk
s = lazyk.array(["kiwi", "fig"])
r = lazyk.zip({"x": lazyk.array([1, 2]), "y": s})
saved = pickle.dumps([s == "fig", lazyk.str_len(s), r["y"] == "kiwi", s[::-1] == "fig"])
sys.stdout.write(saved.hex())
"""


def test_string_expressions_pickle_into_another_process():
    """A string input's `{begin, size}` elements are made again from the string array where
    the expression is unpickled (they held the first process's addresses: a crash)."""
    import pickle
    import subprocess
    import sys

    got = subprocess.run([sys.executable, "-c", _STRINGS_IN_ANOTHER_PROCESS], check=True,
                         capture_output=True, text=True).stdout
    exprs = pickle.loads(bytes.fromhex(got))
    assert [e.eval().tolist() for e in exprs] == [[False, True], [4, 3], [True, False],
                                                  [True, False]]


def test_copied_and_unpickled_expressions_get_inputs_of_their_own():
    """A copy or an unpickled expression never shares an input name with another input:
    it combines with its original, and histograms evaluated together keep their data."""
    import copy
    import pickle

    a = np.array([1.0, 2.0])
    e = lazyk.array(a) * 2
    d = copy.deepcopy(e)
    a[:] = [5.0, 6.0]
    got = lazyk.evaluate(lazyk.histogram(d, 2, (0, 16)), lazyk.histogram(e, 2, (0, 16)))
    assert [g.tolist() for g in got] == [[2, 0], [0, 2]]
    for other in (copy.deepcopy(e), pickle.loads(pickle.dumps(e))):
        assert (e + other).eval().tolist() == [20.0, 24.0]
    x = lazyk.array([1.0, 2.0])
    z = pickle.loads(pickle.dumps(lazyk.zip({"a": x * 2, "b": x + 1})))
    assert z.eval().to_list() == [{"a": 2.0, "b": 2.0}, {"a": 4.0, "b": 3.0}]
    p = pickle.loads(pickle.dumps(lazyk.placeholder("x", "N * float64") * 2))
    assert "input x" in str(p)  # (a placeholder keeps its name)


def test_ragged_arrays_and_records_pickle_as_their_buffers():
    # a ragged array pickles its offsets and content (cut to what its rows reach), not
    # Python values; records read from columns come back reading columns, read-only
    import pickle

    n = 100_000
    x = lazyk.from_offsets(np.arange(0, 2 * n + 1, 2), np.arange(2.0 * n))
    data = pickle.dumps(x)
    assert len(data) < 2 * 8 * (3 * n)  # (Python floats would take more than this)
    back = pickle.loads(data)
    assert back.type == x.type and not back.readonly
    np.testing.assert_array_equal(np.asarray(lazyk.sum(back, axis=1)), np.arange(n) * 4.0 + 1)
    tail = pickle.dumps(x[n - 2:])  # a slice carries its own rows only
    assert len(tail) < 1_000 and pickle.loads(tail).to_list() == [[2.0 * n - 4, 2.0 * n - 3],
                                                                  [2.0 * n - 2, 2.0 * n - 1]]
    for a in (lazyk.array([["a", None], [], ["bc"]]), lazyk.array([[[1, 2], []], [[3]]]),
              lazyk.array([[1.5, None], None], type="2 * ?var * ?float32"),
              lazyk.array(np.zeros((3, 0, 2))), lazyk.array([{"t": (1, 2.5)}])):
        b = pickle.loads(pickle.dumps(a))
        assert b.type == a.type and b.to_list() == a.to_list()
    ak = pytest.importorskip("awkward")
    events = ak.Array([{"m": 1.0, "j": [{"pt": 2.0}]}, {"m": 3.0, "j": []}])
    r = pickle.loads(pickle.dumps(lazyk.from_awkward(events)))
    assert r.readonly and not r.built and r.j.pt.to_list() == [[2.0], []]
    assert r.to_list() == events.to_list()


def test_each_option_position_has_its_own_shadow():
    a = lazyk.array([{"a": 1, "b": None}, {"a": None, "b": 2.5}],
                    type="2 * {a: ?int8, b: ?float64}")
    size, stride, off_a, off_b, mask_a, mask_b = a.meta
    region = size * stride  # the values; shadow k starts k regions later
    assert (stride, off_a, off_b) == (16, 0, 8) and (mask_a, mask_b) == (region, 2 * region)
    masks = [[_peek(a.ptr + i * stride + off + m, ctypes.c_uint8) for off, m in
              ((off_a, mask_a), (off_b, mask_b))] for i in range(size)]
    assert masks == [[1, 0], [0, 1]]
    rows = lazyk.array([[1], None], type="2 * ?var * int8")
    assert _peek(rows.ptr + 16 + 8, ctypes.c_int64) == 0  # a missing row has size 0


@given(S.ragged(layouts=S.LAYOUTS + S.QVAR_LAYOUTS + S.QNEST_LAYOUTS, nan=True),
       st.integers(0, 4), st.integers(0, 4))
def test_every_ragged_layout_pickles_to_the_same_type_and_values(case, lo, hi):
    import pickle

    t, data = case
    x = lazyk.array(data, type=t)
    parts = [x] if x.type.ndim == 0 or not isinstance(x.type, T.FixedDim) else \
        [x, x[lo:max(lo, hi)], x[::2]]
    for a in parts:
        b = pickle.loads(pickle.dumps(a))
        assert b.type == a.type
        got, want = b.to_list(), a.to_list()
        assert repr(got) == repr(want)  # (NaN where NaN was)


def test_chars_and_dates_that_do_not_fit_their_type_are_refused_by_position():
    import datetime as dt
    for bad in (["ab"], [65], [1.5], [True], [[1, 2]]):
        with pytest.raises(lazyk.ArrayConstructionError, match=r"item \[0\] .* not one character"):
            lazyk.array(bad, type="1 * char")
    assert lazyk.array(["a", ""], type="2 * char").to_list() == ["a", ""]
    for d in (dt.datetime(1, 1, 1), dt.datetime(9999, 1, 1)):
        with pytest.raises(lazyk.ArrayConstructionError, match=r"item \[1\] .* outside the range"):
            lazyk.array([dt.datetime(2000, 1, 1), d], type="2 * datetime[unit='ns']")
    with pytest.raises(lazyk.ArrayConstructionError, match="outside the range"):
        lazyk.array([dt.timedelta(days=300 * 365)], type="1 * timedelta[unit='ns']")
    got = lazyk.array([dt.datetime(2020, 1, 1, 12)], type="1 * date").to_list()
    assert got == [dt.date(2020, 1, 1)]  # (a coarser unit truncates, as NumPy)


def test_a_field_of_tuples_read_as_lists_says_how_to_give_a_tuple_type():
    for a in (lazyk.array([(1, 2.0), (3, 4.0)]), lazyk.array([[(1, 2.0)], []])):
        with pytest.raises(KeyError, match="Python tuples in lists are read as lists"):
            a["0"]
    t = lazyk.array([[(1, 2.0)], []], type="2 * var * (int64, float64)")
    assert t["0"].to_list() == [[1], []]


def test_transpose_of_fixed_dims_is_a_view_as_numpys():
    base = np.arange(24.0).reshape(2, 3, 4)
    a = lazyk.array(base)
    t = a.T
    assert str(t.type) == "4 * 3 * 2 * float64" and np.shares_memory(t.to_numpy(), base)
    np.testing.assert_array_equal((t * 2).eval().to_numpy(), base.T * 2)
    with pytest.raises(lazyk.NotSupportedError, match="transpose of an array of type "
                       "'2 \\* var \\* int64'"):
        lazyk.array([[1], [2, 3]]).T
