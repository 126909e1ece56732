"""match() and broadcast(): type variables, symbolic dims, ellipses, NumPy and var rules."""
import numpy as np
import pytest

from lazyk import TypeMatchError, dshape
from lazyk.types import broadcast, match, solve

BINARY = "(Dims... * T, Dims... * T) -> Dims... * T"


@pytest.mark.parametrize("a, b, out", [
    ("5 * 1 * int32", "3 * int32", "5 * 3 * int32"),       # the example
    ("int32", "4 * int32", "4 * int32"),
    ("2 * 1 * 3 * float64", "4 * 1 * float64", "2 * 4 * 3 * float64"),
    ("2 * var * int32", "2 * 1 * int32", "2 * var * int32"),  # seed 003: var vs 1
    ("2 * var * int32", "2 * 2 * int32", "2 * 2 * int32"),    # seed 003: var vs 2
    ("var * int32", "var * int32", "var * int32"),
    ("?var * int32", "3 * int32", "?3 * int32"),
])
def test_binary_signature_broadcasts(a, b, out):
    assert match(BINARY, a, b) is dshape(out)
    assert match(BINARY, b, a) is dshape(out)


@pytest.mark.parametrize("a, b", [
    ((2, 1, 3), (4, 1)), ((5, 1), (3,)), ((1,), (7, 1, 2)), ((), (3, 3)), ((0,), (1,)),
])
def test_broadcast_equals_numpy(a, b):
    expected = np.broadcast_shapes(a, b)
    ta = dshape(" * ".join([*map(str, a), "float32"]))
    tb = dshape(" * ".join([*map(str, b), "int16"]))
    assert broadcast(ta, tb).shape == expected
    assert broadcast(ta, tb).dtype is dshape("float32")


def test_broadcast_mismatch_names_types_and_axis():
    with pytest.raises(TypeMatchError) as info:
        match(BINARY, "5 * 2 * int32", "3 * int32")
    msg = str(info.value)
    assert "5 * 2 * int32" in msg and "3 * int32" in msg and "dimension 1" in msg
    assert "2 vs 3" in msg
    with pytest.raises(TypeMatchError):
        broadcast("2 * int8", "3 * int8")


def test_type_variable_must_agree():
    with pytest.raises(TypeMatchError) as info:
        match(BINARY, "3 * int32", "3 * float64")
    assert "T is int32" in str(info.value) and "float64" in str(info.value)


def test_symbolic_dims():
    sig = "(N * M * T, M * K * T) -> N * K * T"
    assert match(sig, "2 * 3 * float64", "3 * 5 * float64") is dshape("2 * 5 * float64")
    with pytest.raises(TypeMatchError) as info:
        match(sig, "2 * 3 * float64", "4 * 5 * float64")
    assert "M is already 3" in str(info.value)
    # var and a fixed size agree on N (checked per row at evaluation time).
    assert match("(N * T, N * T) -> N * T", "var * int8", "4 * int8") is dshape("4 * int8")


def test_keywords_fixed_dims_and_records():
    sig = "(N * float64, scale: float64) -> N * float64"
    assert match(sig, "7 * float64", "float64") is dshape("7 * float64")
    with pytest.raises(TypeMatchError):
        match(sig, "7 * float64")
    assert match("3 * T", "3 * int8") is dshape("3 * int8")
    with pytest.raises(TypeMatchError) as info:
        match("3 * T", "4 * int8")
    assert "dimension 0" in str(info.value)
    assert match("{x: T, y: N * T}", "{x: int8, y: 4 * int8}") is dshape("{x: int8, y: 4 * int8}")
    with pytest.raises(TypeMatchError):
        match("{x: T}", "{y: int8}")
    assert match("var * T", "5 * int8") is dshape("var * int8")
    assert match("?T", "int8") is dshape("?int8")
    assert match("Dims... * 3 * T", "2 * 2 * 3 * int8") is dshape("2 * 2 * 3 * int8")
    with pytest.raises(TypeMatchError) as info:
        match("Dims... * 3 * 4 * T", "4 * int8")
    assert "at least 2" in str(info.value)


def test_missing_rows_need_an_option_pattern():
    with pytest.raises(TypeMatchError):
        match("var * T", "?var * int8")
    assert match("?var * T", "?var * int8") is dshape("?var * int8")


def test_broadcast_promotes_dtypes():
    assert broadcast("3 * int8", "uint8") is dshape("3 * int16")
    assert broadcast("2 * var * int32", "2 * 5 * float32") is dshape("2 * 5 * float64")
    with pytest.raises(TypeMatchError):
        broadcast("N * int8", "3 * int8")


from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_SHAPES = st.lists(st.sampled_from([0, 1, 2, 3]), max_size=4).map(tuple)


@given(_SHAPES, _SHAPES)
def test_broadcast_agrees_with_numpy_on_random_shapes(a, b):
    ta = dshape(" * ".join([*map(str, a), "int8"]))
    tb = dshape(" * ".join([*map(str, b), "int8"]))
    try:
        expected = np.broadcast_shapes(a, b)
    except ValueError:
        with pytest.raises(TypeMatchError):
            broadcast(ta, tb)
        with pytest.raises(TypeMatchError):
            match(BINARY, ta, tb)
        return
    assert broadcast(ta, tb).shape == expected
    assert match(BINARY, ta, tb).shape == expected


def test_solve_returns_bindings():
    assert solve("(N * T, M * T) -> T", "3 * int8", "4 * int8") == {
        "T": dshape("int8"), "N": 3, "M": 4}
    assert solve(BINARY, "5 * 1 * int32", "3 * int32") == {"T": dshape("int32"),
                                                           "Dims": (5, 3)}
    assert solve("... * var * T", "2 * var * float32") == {"...": (2,), "T": dshape("float32")}
    assert solve("N * T", "var * int8") == {"N": "var", "T": dshape("int8")}
