"""Inputs a new user passes: Python ints past int64, pandas Series, string lists, data without
missing values for `?T` parameters, and the errors for mistakes."""
import re

import numpy as np
import pytest

import lazyk
from lazyk.errors import ArrayConstructionError


# ---------------------------------------------------------------- ints past int64
@pytest.mark.parametrize("data, where", [([2**63, -1], "[0]"), ([[1], [2**63, -1]], "[1, 0]"),
                                         ([-5, 3, 2**64 - 1], "[2]")])
def test_uint64_and_negative_ints_raise_a_clear_error(data, where):
    with pytest.raises(ArrayConstructionError, match=rf"integer \d+ at {re_esc(where)}.*"
                                                     r"negative integer -\d+"):
        lazyk.array(data)


def re_esc(s):
    import re
    return re.escape(s)


def test_int_error_does_not_end_a_map_early():
    rows = [[1, 2], [2**63, -1], [3]]
    got = []
    with pytest.raises(ArrayConstructionError):
        for a in map(lazyk.array, rows):
            got.append(a)
    assert len(got) == 1
    assert str(lazyk.array([2**63, 1]).type) == "2 * uint64"


# ---------------------------------------------------------------- pandas columns
@pytest.mark.parametrize("dtype, np_dtype", [("Int64", "int64"), ("UInt8", "uint8"),
                                             ("Float32", "float32"), ("boolean", "bool")])
def test_nullable_pandas_series_keep_dtype_and_missing_values(dtype, np_dtype):
    pd = pytest.importorskip("pandas")
    data = [1, None, 0] if dtype != "boolean" else [True, None, False]
    a = lazyk.array(pd.Series(data, dtype=dtype))
    assert str(a.type) == f"3 * ?{np_dtype}"
    want = [None if v is None else np.dtype(np_dtype).type(v).item() for v in data]
    assert a.to_list() == want
    full = lazyk.array(pd.Series(data[:1] + data[2:], dtype=dtype))
    assert str(full.type) == f"2 * ?{np_dtype}"


def test_pandas_series_sum_skips_nothing_silently():
    pd = pytest.importorskip("pandas")
    s = pd.Series([1, None, 3], dtype="Int64")
    assert lazyk.array(s).sum(skipna=True).eval().to_list() == 4
    assert lazyk.array(s).sum().eval().to_list() is None


def test_plain_and_string_pandas_series():
    pd = pytest.importorskip("pandas")
    a = lazyk.array(pd.Series([1.5, 2.5]))
    assert str(a.type) == "2 * float64"
    np.testing.assert_array_equal(a.to_numpy(), [1.5, 2.5])
    assert str(lazyk.array(pd.Series(np.arange(3, dtype=np.int16))).type) == "3 * int16"
    s = lazyk.array(pd.Series(["ab", None, "é"], dtype="string"))
    assert str(s.type) == "3 * ?string" and s.to_list() == ["ab", None, "é"]
    assert lazyk.array(pd.Series(["ab", "c"])).to_list() == ["ab", "c"]


def test_pandas_series_as_operand_and_compiled_input():
    pd = pytest.importorskip("pandas")
    r = (lazyk.array(np.arange(3.0)) + pd.Series([1., 2., 3.])).eval()
    np.testing.assert_array_equal(np.asarray(r), [1., 3., 5.])
    assert np.asarray(r).dtype == np.float64
    s = pd.Series([1, None, 3], dtype="Int64")
    k = lazyk.compile(lazyk.placeholder("x", "N * ?int64") + 1)
    got = k(s)
    assert str(got.type) == "3 * ?int64" and got.to_list() == [2, None, 4]
    kf = lazyk.compile(lazyk.placeholder("x", "N * float64") * 2)
    np.testing.assert_array_equal(kf(pd.Series([1., 2.])), [2., 4.])


# ---------------------------------------------------------------- strings for string parameters
def test_string_parameter_takes_lists_and_numpy_unicode():
    k = lazyk.compile(lazyk.str_len(lazyk.placeholder("s", "N * string")))
    for x in (["ab", "é"], ("ab", "é"), np.array(["ab", "é"])):
        got = k(x)
        np.testing.assert_array_equal(got, [2, 1])
        assert np.asarray(got).dtype == np.int64
    k2 = lazyk.compile(lazyk.str_len(lazyk.placeholder("s", "N * 2 * string")))
    np.testing.assert_array_equal(k2(np.array([["abc", ""], ["x", "yz"]])), [[3, 0], [1, 2]])
    with pytest.raises(lazyk.errors.TypeMatchError):
        k([1, 2])


def test_var_string_parameter_takes_nested_lists_and_numpy_unicode():
    k = lazyk.compile(lazyk.str_len(lazyk.placeholder("s", "N * var * string")))
    got = k([["ab", "é"], ["c"], []])
    assert str(got.type) == "3 * var * int64" and got.to_list() == [[2, 1], [1], []]
    got = k(np.array([["ab", "c"]]))
    assert str(got.type) == "1 * var * int64" and got.to_list() == [[2, 1]]


# ---------------------------------------------------------------- `T` data for `?T` parameters
def test_option_parameter_takes_data_without_missing_values():
    pa = pytest.importorskip("pyarrow")
    k = lazyk.compile(lazyk.placeholder("x", "N * var * ?float64").sum(axis=-1, skipna=True))
    assert k.signature == "(x: N * var * ?float64) -> N * float64"
    for x in (lazyk.from_arrow(pa.array([[3.0], [4.0, 5.0]])), [[3.0], [4.0, 5.0]]):
        got = k(x)
        assert str(got.type) == "2 * float64" and got.to_list() == [3.0, 9.0]
    got = k(lazyk.from_arrow(pa.array([[3.0], [4.0, None]])))
    assert got.to_list() == [3.0, 4.0]
    got = k(np.arange(6.0).reshape(2, 3))  # fixed rows as var rows; NumPy in, NumPy out
    assert isinstance(got, np.ndarray) and got.tolist() == [3.0, 12.0]


def test_option_parameter_result_keeps_the_promised_type():
    k = lazyk.compile(lazyk.placeholder("x", "N * ?float64") + 1)
    got = k(np.ones(3))
    assert str(got.type) == "3 * ?float64" and got.to_list() == [2.0, 2.0, 2.0]
    assert k(np.arange(2, dtype=np.float32)).to_list() == [1.0, 2.0]
    ks = lazyk.compile(lazyk.str_len(lazyk.placeholder("s", "N * ?string")))
    for x in (["ab", "c"], np.array(["ab", "c"]), lazyk.array(["ab", "c"])):
        got = ks(x)
        assert str(got.type) == "2 * ?int64" and got.to_list() == [2, 1]
    kr = lazyk.compile(lazyk.placeholder("x", "N * ?var * float64").sum(axis=-1))
    got = kr([[1.0, 2.0], [3.0], []])
    assert str(got.type) == "3 * ?float64" and got.to_list() == [3.0, 3.0, 0.0]
    kv = lazyk.compile(lazyk.str_len(lazyk.placeholder("s", "N * var * ?string")))
    got = kv([["a"], ["bc", "d"]])
    assert str(got.type) == "2 * var * ?int64" and got.to_list() == [[1], [2, 1]]


def test_option_parameter_with_out_and_bind():
    k = lazyk.compile(lazyk.placeholder("x", "N * ?float64") * 2)
    out = lazyk.empty("3 * ?float64")
    assert k(np.arange(3.0), out=out) is out
    assert out.to_list() == [0.0, 2.0, 4.0]
    with pytest.raises(lazyk.errors.BindError, match="copy"):  # changes never seen
        k.bind(out, np.arange(3.0) + 1)
    b = k.bind(out, lazyk.array([1.0, 2.0, None]))
    assert b() is out and out.to_list() == [2.0, 4.0, None]
    kv = lazyk.compile(lazyk.placeholder("x", "N * var * ?float64") + 1)
    outv = lazyk.empty("2 * var * ?float64", lengths=[1, 2])
    x = lazyk.array([[3.0], [4.0, 5.0]])
    assert kv(x, out=outv) is outv and outv.to_list() == [[4.0], [5.0, 6.0]]
    outv2 = lazyk.empty("2 * var * ?float64", lengths=[1, 2])
    with pytest.raises(lazyk.errors.BindError, match="copy"):
        kv.bind(outv2, x)
    xq = lazyk.array([[3.0], [4.0, None]])
    b = kv.bind(outv2, xq)
    assert b() is outv2 and outv2.to_list() == [[4.0], [5.0, None]]


def test_missing_values_for_a_parameter_without_them_name_what_differs():
    k = lazyk.compile(lazyk.placeholder("x", "N * var * float64").sum(axis=-1))
    with pytest.raises(lazyk.errors.TypeMatchError,
                       match=r"elements are \?float64, the parameter's float64"):
        k(lazyk.array([[1.0, None]]))
    assert k([[1.0, 2.0]]).tolist() == [3.0]  # fixed rows for var: accepted


def test_ragged_data_of_an_option_type_with_nothing_missing_is_taken():
    """Awkward / Arrow / lazyk data typed `?T` or `?var` with no value or row missing (a
    slice past the missing ones included) fills a parameter without `?`; data with one
    missing where the call reads it is refused, naming what differs."""
    ak = pytest.importorskip("awkward")
    pa = pytest.importorskip("pyarrow")
    k = lazyk.compile(lazyk.placeholder("p", "N * var * float64").sum(axis=-1))
    cases = [(ak.Array([[1.0, None], [2.0]])[:, :1], [1.0, 2.0]),
             (ak.Array([[1.0], None, [2.0, 3.0]])[[0, 2]], [1.0, 5.0]),
             (pa.array([[1.0, 2.0], [None]])[0:1], [3.0]),
             (lazyk.array([[1.0, 2.0], [4.0]], type="2 * ?var * ?float64"), [3.0, 4.0])]
    for data, want in cases:
        got = k(data)
        assert got.tolist() == want and got.dtype == np.float64
    for bad in (ak.Array([[1.0, None], [2.0]]), ak.Array([[1.0], None]),
                pa.array([[1.0, 2.0], [None]])[1:2]):
        with pytest.raises(lazyk.errors.TypeMatchError, match="missing"):
            k(bad)


def test_var_rows_and_strings_for_a_numeric_fixed_parameter_name_both_types():
    k = lazyk.compile(lazyk.placeholder("p", "N * 3 * float64").sum(axis=-1))
    for bad, got in ((lazyk.array([[1.0, 2.0, 3.0], [4.0]]), "2 * var * float64"),
                     (lazyk.array(["ab", "c"]), "2 * string")):
        with pytest.raises(lazyk.errors.TypeMatchError,
                           match=re.escape(f"input 'p': expected N * 3 * float64, got {got}: "
                                           "(p: N * 3 * float64)")):
            k(bad)


def test_fixed_rows_with_missing_values_for_a_var_parameter():
    k = lazyk.compile(lazyk.placeholder("x", "N * var * ?float64").sum(axis=-1, skipna=True))
    got = k(lazyk.array([[1.0, None], [2.0, 3.0]]))  # 2 * 2 * ?float64
    assert str(got.type) == "2 * float64" and got.to_list() == [1.0, 5.0]


# ---------------------------------------------------------------- errors for mistakes
@pytest.mark.parametrize("dtype, value", [(np.int64, 2**70), (np.uint64, 2**64), (np.int8, 300),
                                          (np.int64, -(2**63) - 1)])
def test_python_int_past_the_dtype_names_value_and_dtype(dtype, value):
    a = lazyk.array(np.arange(3, dtype=dtype))
    with pytest.raises(OverflowError) as info:
        (a + value).eval()
    assert f"Python integer {value} out of bounds for {np.dtype(dtype)}" in str(info.value)
    with pytest.raises(OverflowError):  # NumPy refuses the same
        np.arange(3, dtype=dtype) + value
    got = (lazyk.array(np.arange(3.0)) + 2**70).eval()  # floats hold it, as in NumPy
    np.testing.assert_array_equal(np.asarray(got), np.arange(3.0) + 2**70)


@pytest.mark.parametrize("name", ["1x", "a b", "", "x-y"])
def test_placeholder_name_must_be_an_identifier(name):
    with pytest.raises(ValueError, match=re_esc(repr(name)) + " is not a Python identifier"):
        lazyk.placeholder(name, "N * float64")
    assert lazyk.placeholder("x_1", "N * float64") is not None


@pytest.mark.parametrize("t, lengths, match", [
    ("3 * var * float64", [1, 2], r"needs 3 row lengths for its var dim number 0; lengths has 2"),
    ("2 * var * var * float64", [[1, 2], [1]],
     r"needs 3 row lengths for its var dim number 1; lengths\[1\] has 1"),
    ("2 * var * 2 * var * int32", [[1, 2], [1, 0, 2, 1, 1]],
     r"needs 6 row lengths for its var dim number 1; lengths\[1\] has 5"),
    ("var * float64", None, r"needs 1 row length for its var dim number 0; lengths has 0"),
])
def test_full_names_the_row_lengths_needed_and_given(t, lengths, match):
    with pytest.raises(ArrayConstructionError, match=match):
        lazyk.full(t, 0.0, lengths=lengths)
    a = lazyk.full("2 * var * 2 * var * int32", 7, lengths=[[1, 2], [1, 0, 2, 1, 1, 0]])
    assert a.to_list() == [[[[7], []]], [[[7, 7], [7]], [[7], []]]]


def test_truth_value_of_an_optional_bool():
    x = lazyk.array([True, None, False])
    assert bool(x[0]) is True and bool(x[2]) is False
    assert bool(x.any(skipna=True)) is True and bool(x.all(skipna=True)) is False
    for missing in (x[1], x.all(), x.all().eval()):
        with pytest.raises(ValueError, match="the truth value of a missing value is unknown"):
            bool(missing)
    with pytest.raises(ValueError, match="missing value"):
        float(lazyk.array([1.0, None])[1])
    assert bool(lazyk.array(np.arange(3)).sum() > 2) is True


def test_pandas_string_series_for_string_parameters():
    pd = pytest.importorskip("pandas")
    k = lazyk.compile(lazyk.str_len(lazyk.placeholder("s", "N * string")))
    for i in range(20):  # the copy lives through the call
        np.testing.assert_array_equal(k(pd.Series(["ab" * i, "é"])), [2 * i, 1])
    kq = lazyk.compile(lazyk.str_len(lazyk.placeholder("s", "N * ?string")))
    got = kq(pd.Series(["ab", None], dtype="string"))
    assert str(got.type) == "2 * ?int64" and got.to_list() == [2, None]


def test_empty_nullable_pandas_series():
    pd = pytest.importorskip("pandas")
    a = lazyk.array(pd.Series([], dtype="Int64"))
    assert str(a.type) == "0 * ?int64" and a.to_list() == []


def test_python_ints_past_64_bits_for_a_float_parameter_convert_as_numpy():
    k = lazyk.compile(lazyk.placeholder("x", "N * float64") * 1)
    got = k([2**70, 1.5])
    np.testing.assert_array_equal(got, np.asarray([2**70, 1.5], np.float64))
    np.testing.assert_array_equal(k([2**70]), [float(2**70)])


def test_truth_value_of_many_values_is_refused_before_anything_runs():
    """NumPy's rule, without computing: an expression of more than one value (or of a var
    or symbolic dim) has no truth value; one value, in any number of dims of 1, has."""
    big = lazyk.array(np.arange(3.0)) * 2
    for e in (big, lazyk.array([[1.0], []]) * 2, lazyk.placeholder("p", "N * float64") > 0):
        with pytest.raises(ValueError, match="ambiguous.*lazyk.any"):
            bool(e)
    assert bool(lazyk.array(np.ones((1, 1))) > 0) is True


def test_dask_leaves_in_a_one_machine_evaluation_are_refused_by_name():
    da = pytest.importorskip("dask.array")
    c = da.from_array(np.arange(12.0).reshape(4, 3), chunks=(2, 3))
    for e in (lazyk.argmax(c, axis=1), lazyk.argmax(c, axis=1, keepdims=True), lazyk.sin(c)):
        with pytest.raises(lazyk.NotSupportedError, match="lazyk.dask.evaluate"):
            e.eval()


def test_a_closed_array_is_refused_by_every_reader():
    """close() drops the array's memory: calls, expressions and histograms that had read
    the array before refuse it afterwards (they read freed memory before)."""
    p = lazyk.placeholder("p", "N * var * float64")
    f = lazyk.compile(p.sum(axis=-1))
    rows = [[]] * 2000
    rows[-1] = [1.0, 2.0]
    x = lazyk.array(rows, type="2000 * var * float64")
    assert f(x)[-1] == 3.0 and lazyk.histogram(x, 3, (0, 3)).eval().tolist() == [0, 1, 1]
    x.close()
    for use in (lambda: f(x), lambda: (x * 2).eval(), lambda: lazyk.histogram(x, 3, (0, 3)).eval(),
                lambda: x.to_list()):
        with pytest.raises(ValueError, match="closed"):
            use()
    with lazyk.array(np.arange(3.0)) as y:
        assert (y * 2).eval().tolist() == [0.0, 2.0, 4.0]
    with pytest.raises(ValueError, match="closed"):
        (y * 2).eval()


def test_truth_value_of_one_value_under_a_var_dim_is_computed():
    x = lazyk.array(np.array([3.0]))
    assert bool(x[x > 1]) is True


def test_a_type_of_huge_fixed_dims_is_checked_against_the_data_before_any_memory():
    for t, data, row in [("10000000000 * int8", [1, 2], r"\(top level\) has 2"),
                         ("2 * 10000000000 * int8", [[1], [2]], "0 has 1"),
                         ("9223372036854775807 * int8", [1], r"\(top level\) has 1")]:
        with pytest.raises(lazyk.ArrayConstructionError, match=f"row {row} elements, the "
                                                               "type says"):
            lazyk.array(data, type=t)


def test_type_and_data_mistakes_say_what_to_write():
    with pytest.raises(ArrayConstructionError, match="function signature"):
        lazyk.array([1, 2], type="(int32) -> int32")
    with pytest.raises(ArrayConstructionError, match=r"give the whole array's type, '3 \* int8'"):
        lazyk.array([1, 2, 3], type=np.int8)
    assert lazyk.array(3, type=np.int8).to_list() == 3
    # ints beside floats are floats, whatever their size (as Python's arithmetic)
    assert lazyk.array([[1.0], [2**63, -1]]).to_list() == [[1.0], [2.0**63, -1.0]]
    big = lazyk.array([2**70, 1.5])
    assert str(big.type) == "2 * float64" and big.to_list() == [float(2**70), 1.5]
    with pytest.raises(ArrayConstructionError, match="does not fit in int64 or uint64"):
        lazyk.array([2**70, 1])


def test_bytes_expression_and_mask_assignment_say_what_to_do():
    """An expression read as bytes is refused (numexpr takes str), and NumPy's a[mask] = v
    says it is not supported and what computes the new values."""
    with pytest.raises(TypeError, match=r"a str expression, not bytes \(b'a\*2'\): decode"):
        lazyk.evaluate(b"a*2")
    b = lazyk.array(np.array([1.0, 60.0]))
    for key in (b > 50, np.array([True, False]), [0, 1]):
        with pytest.raises(lazyk.NotSupportedError, match=r"a\[mask\] = v .* lazyk.where"):
            b[key] = 0.0
    b[1:] = 3.0
    assert b.to_list() == [1.0, 3.0]


def test_a_compiled_call_given_a_histogram_names_the_input():
    f = lazyk.compile(lazyk.placeholder("x", "N * float64") * 2)
    with pytest.raises(TypeError, match="inputs must be NumPy or lazyk arrays, lists, "
                       "scalars or strings, not Histogram"):
        f(lazyk.histogram(np.arange(4.0), 2))


def test_the_truth_of_an_array_is_numpys():
    """One value (any number of dims of size 1) has a truth value, as in NumPy; more or
    none is ambiguous, naming lazyk.any / lazyk.all; a missing value's is unknown."""
    assert bool(lazyk.array([1.0])) and not bool(lazyk.array([[0]])) and bool(lazyk.array(3.0))
    for a in (lazyk.array([1.0, 2.0]), lazyk.array(np.zeros(0)),
              lazyk.array([[1.0]], type="1 * var * float64")):
        with pytest.raises(ValueError, match="ambiguous .* lazyk.any"):
            bool(a)
    with pytest.raises(ValueError, match="missing value is unknown"):
        bool(lazyk.array([None], type="1 * ?int64"))


def test_float32_and_float16_values_print_in_their_own_digits():
    assert repr(lazyk.array(np.float32([0.1, np.nan]))) == "array([0.1, nan], type='2 * float32')"
    assert repr(lazyk.array([[0.1, None]], type="1 * var * ?float32")) == \
        "array([[0.1, None]], type='1 * var * ?float32')"
    assert repr(lazyk.array(np.float16([1.1]))) == "array([1.1], type='1 * float16')"
    assert "0.1, 0.2, ..., 199.7" in repr(lazyk.array(np.arange(2000, dtype=np.float32) / 10))
