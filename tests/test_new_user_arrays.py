"""Arrays a new user builds from NumPy, masked arrays, lists and types: values, types and
errors (each case once gave a wrong answer or a raw exception)."""
import numpy as np
import pytest

import lazyk
from lazyk.errors import ArrayConstructionError


def test_from_offsets_keeps_the_mask_of_masked_content():
    x = lazyk.from_offsets(np.array([0, 2, 3]), np.ma.array([1.0, 2.0, 3.0],
                                                            mask=[False, True, False]))
    assert str(x.type) == "2 * var * ?float64"
    assert x.to_list() == [[1.0, None], [3.0]]
    assert x.sum(axis=-1).eval().to_list() == [None, 3.0]


def test_masked_record_arrays_stay_records_with_missing_fields():
    m = np.ma.array([[(1, 2.0, "a")], [(3, 4.0, "b")]],
                    mask=[[(True, False, False)], [(False, False, True)]],
                    dtype=[("a", "i4"), ("b", "f8"), ("s", "U2")])
    x = lazyk.array(m)
    assert str(x.type) == "2 * 1 * {a: ?int32, b: float64, s: ?fixed_string[2, 'utf32']}"
    assert x.to_list() == [[{"a": None, "b": 2.0, "s": "a"}], [{"a": 3, "b": 4.0, "s": None}]]


def test_a_bool_index_of_a_ragged_array_is_numpys_new_axis():
    r = lazyk.array([[1, 2, 3], [], [4]])
    assert str(r[True].type) == "1 * 3 * var * int64"
    assert r[True].to_list() == [[[1, 2, 3], [], [4]]]
    with pytest.raises(IndexError, match="x\\[False\\]"):
        r[False]


@pytest.mark.parametrize("t, want", [
    ("2 * fixed_string[3]", ["", ""]),
    ("2 * fixed_string[3, 'utf32']", ["", ""]),
    ("2 * ?fixed_string[3]", ["", ""]),
    ("2 * ?fixed_bytes[2]", [b"\0\0", b"\0\0"]),
    ("2 * {a: fixed_string[2], b: int32}", [{"a": "", "b": 0}] * 2),
    ("1 * ?date", [__import__("datetime").date(1970, 1, 1)]),
])
def test_zeros_of_strings_are_empty_strings(t, want):
    assert lazyk.zeros(t).to_list() == want
    assert lazyk.zeros(t.replace("2 * ", "2 * var * ", 1) if t.startswith("2") else t,
                       **({"lengths": [1, 1]} if t.startswith("2") else {})).to_list() == \
        ([[w] for w in want] if t.startswith("2") else want)


def test_too_long_fixed_bytes_are_refused_not_cut():
    with pytest.raises(ArrayConstructionError, match="item \\[0\\].*6 bytes.*holds 4"):
        lazyk.array([b"abcdef"], type="1 * fixed_bytes[4]")
    assert lazyk.array([b"ab"], type="1 * fixed_bytes[4]").to_list() == [b"ab\0\0"]


def test_zero_dim_numpy_arrays_in_a_list_are_named():
    with pytest.raises(ArrayConstructionError, match="item \\[2\\] is a 0-d NumPy array"):
        lazyk.array([None, [1], np.array(2)])


def test_explain_of_a_string_reads_names_from_the_caller():
    b = np.arange(3.0)  # noqa: F841 (read by name)
    assert lazyk.explain("b * 2 + 1").startswith("== expression: 3 * float64")
    with pytest.raises(lazyk.ExprParseError, match="'zz' is not defined"):
        lazyk.explain("zz + 1")
    text = lazyk.explain("c * 2", local_dict={"c": np.arange(4, dtype=np.int32)})
    assert text.startswith("== expression: 4 * int32")  # (names as evaluate takes them)
    with pytest.raises(ValueError, match="not {'c': 1} .*local_dict="):
        lazyk.explain("c * 2", {"c": 1})


def test_repr_never_raises_and_shows_fields_alike_at_any_length():
    a = lazyk.array(np.array([b"\xff\xfe", b"ok"]))  # bytes that are not text
    assert repr(a).startswith("array([b'\\xff\\xfe', b'ok']")
    big = lazyk.array([{"x": i, "y": [i, i]} for i in range(1001)])
    assert repr(big).startswith("array([{'x': 0, 'y': [0, 0]}, {'x': 1, 'y': [1, 1]}")


def test_repr_of_many_rows_reads_only_the_rows_it_shows(monkeypatch):
    rows = [[i, i + 1] if i % 3 else [] for i in range(5000)]
    x, m = lazyk.array(rows), lazyk.array([None if i % 3 == 0 else i for i in range(5000)])
    sizes = []
    real = lazyk.Array.to_list
    monkeypatch.setattr(lazyk.Array, "to_list", lambda a: sizes.append(len(a)) or real(a))
    assert repr(x) == ("array([[], [1, 2], [2, 3], ..., [4997, 4998], [], [4999, 5000]], "
                       "type='5000 * var * int64')")
    assert repr(m) == "array([None, 1, 2, ..., 4997, None, 4999], type='5000 * ?int64')"
    assert max(sizes) == 3
    pairs = lazyk.from_iter([(i, float(i)) for i in range(1001)])  # (tuples stay tuples)
    assert repr(pairs).startswith("array([(0, 0.0), (1, 1.0), (2, 2.0), ..., (998, 998.0)")


def test_augmented_operators_write_into_the_array_as_numpys_do():
    a = np.arange(4.0)
    A = B = lazyk.array(a)
    A += 1
    A *= A
    assert A is B
    np.testing.assert_array_equal(a, [1.0, 4.0, 9.0, 16.0])
    r = R = lazyk.array([[1.0, 2.0], [], [3.0]])
    r += 1
    assert r is R and r.to_list() == [[2.0, 3.0], [], [4.0]]
    i = lazyk.array(np.arange(3))
    with pytest.raises(lazyk.CastingError, match="same_kind"):
        i += 1.5
    ro = np.arange(3.0)
    ro.flags.writeable = False
    x = lazyk.array(ro)
    with pytest.raises(ValueError, match="read-only"):
        x += 1


def test_compiled_calls_name_inputs_in_shape_and_list_errors():
    x = lazyk.placeholder("x", "N * float64")
    f = lazyk.compile(x + lazyk.array(np.ones(3)))
    with pytest.raises(lazyk.ShapeError, match="x \\(4,\\), captured array 0 \\(3,\\)"):
        f(np.ones(4))
    with pytest.raises(lazyk.TypeMatchError, match="input 'x'.*lists of different lengths"):
        lazyk.compile(x * 2)([[1.0], [2.0, 3.0]])


@pytest.mark.parametrize("fn", [lazyk.argmin, lazyk.argmax])
def test_arg_reductions_of_a_zero_dim_value_are_position_zero(fn):
    z = lazyk.array(np.array(3.0))
    assert int(np.asarray(fn(z).eval())) == int(fn(np.array(3.0)).eval()) == 0
    with pytest.raises(np.exceptions.AxisError):
        fn(z, axis=1)


def test_arrays_eval_and_explain_as_expressions_do():
    r = lazyk.array([{"x": 1}, {"x": 2}])
    z = lazyk.zip({"x": lazyk.array([1, 2])})
    for field in (r.x, z.x):  # an array's field, a lazy field: one way to get values
        assert field.eval().to_list() == [1, 2]
        assert field.explain().startswith("== expression")
    out = np.zeros(2, np.int64)
    assert r.x.eval(out=out) is out and out.tolist() == [1, 2]


def test_numpy_record_scalars_are_zero_dim_records():
    s = np.array([(1, 2.5)], dtype=[("a", "i4"), ("b", "f8")])
    r = lazyk.array(s[0])
    assert str(r.type) == "{a: int32, b: float64}" and r.to_list() == {"a": 1, "b": 2.5}
    assert str(lazyk.array(np.zeros(1, "V2")[0]).type) == "fixed_bytes[2]"


def test_expression_repr_shows_missing_values_in_every_line():
    lines = repr(lazyk.array([1, None]) + 1).splitlines()
    assert lines[1].startswith("%0 = input") and lines[1].endswith(": 2 * ?int64")
    assert lines[-1].endswith(": 2 * ?int64")


def test_a_huge_slice_step_and_invalid_utf8_strings_answer_clearly():
    x = lazyk.array([[1.0, 2, 3], [], [4.0, 5]])
    assert x[:, ::2**62].to_list() == [[1.0], [], [4.0]]
    assert x[:, ::-2**62].to_list() == [[3.0], [], [5.0]]
    pa = pytest.importorskip("pyarrow")
    offsets = pa.py_buffer(np.array([0, 2, 4], np.int32).tobytes())
    bad = pa.Array.from_buffers(pa.string(), 2, [None, offsets, pa.py_buffer(b"ab\xff\xfe")])
    with pytest.raises(ValueError, match=r"string 1 .* is not valid UTF-8"):
        lazyk.from_arrow(bad).to_list()
