"""promote(): identical to NumPy 2 (NEP 50) for every numeric pair and weak Python scalar."""
import itertools

import numpy as np
import pytest

from lazyk import DTypeError, dshape
from lazyk.types import Option, Scalar, Timedelta, promote

NUMERIC = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64", "complex64", "complex128"]
WEAK = {bool: False, int: 0, float: 0.0, complex: 0j}


@pytest.mark.parametrize("a, b", list(itertools.product(NUMERIC, NUMERIC)))
def test_strong_pairs_match_numpy(a, b):
    expected = np.promote_types(a, b)
    got = promote(dshape(a), dshape(b))
    assert got is Scalar(expected.name)
    assert got.to_numpy() == expected


@pytest.mark.parametrize("a, weak", list(itertools.product(NUMERIC, WEAK)))
def test_weak_python_scalars_match_numpy(a, weak):
    # NEP 50: the result is what NumPy 2 gives for an array of `a` and a Python scalar.
    expected = (np.zeros(1, a) + WEAK[weak]).dtype
    assert promote(dshape(a), weak) is Scalar(expected.name)
    assert promote(weak, dshape(a)) is Scalar(expected.name)


HAND = [  # hand-checked entries of the table in docs/types.md
    ("int8", "uint8", "int16"),
    ("int64", "uint64", "float64"),
    ("uint32", "int32", "int64"),
    ("float16", "int16", "float32"),
    ("float16", "uint8", "float16"),
    ("float32", "int32", "float64"),
    ("complex64", "float64", "complex128"),
    ("bool", "int8", "int8"),
    ("bool", "float16", "float16"),
]


@pytest.mark.parametrize("a, b, out", HAND)
def test_hand_checked(a, b, out):
    assert promote(a, b) is Scalar(out)
    assert promote(b, a) is Scalar(out)


@pytest.mark.parametrize("a, weak, out", [
    ("int8", int, "int8"), ("uint8", int, "uint8"), ("float32", float, "float32"),
    ("float16", float, "float16"), ("int32", float, "float64"), ("int16", complex,
                                                                 "complex128"),
    ("float32", complex, "complex64"), ("bool", int, "int64"), ("bool", bool, "bool"),
    ("int8", bool, "int8"),
])
def test_weak_hand_checked(a, weak, out):
    assert promote(dshape(a), weak) is Scalar(out)


def test_weak_with_weak():
    assert promote(int, float) is Scalar("float64")
    assert promote(bool, int) is Scalar("int64")
    assert promote(float, complex) is Scalar("complex128")
    assert promote(bool, bool) is Scalar("bool")


def test_byte_order_result_is_native():
    big, little = Scalar("int32", ">"), Scalar("float32", "<")
    assert promote(big, big) is Scalar("int32")
    assert promote(big, little) is Scalar("float64")
    assert promote(Scalar("float64", ">"), float) is Scalar("float64")


def test_options_and_other_types():
    assert promote(Option(Scalar("int8")), Scalar("float32")) is Option(Scalar("float32"))
    assert promote(dshape("?int8"), int) is dshape("?int8")
    assert promote(dshape("string"), dshape("string")) is Scalar("string")
    assert promote(Timedelta("s"), Timedelta("ms")) is Timedelta("ms")
    assert promote(np.dtype("int16"), np.float32) is Scalar("float32")
    assert promote(dshape("intptr"), dshape("intptr")) is Scalar("intptr")


@pytest.mark.parametrize("a, b", [
    ("string", "int32"), ("int32", "string"), ("bytes", "string"), ("{x: int32}", "int32"),
    ("string", int),
])
def test_no_common_type(a, b):
    with pytest.raises(DTypeError) as info:
        promote(a, b)
    assert "no common type" in str(info.value)


@pytest.mark.parametrize("bad", [123, 1.5, None, [("a", "i1")], str])
def test_foreign_operands_are_refused_by_type(bad):
    with pytest.raises(TypeError) as info:
        promote(bad, "int8")
    assert "dshape() takes a type string" in str(info.value)
