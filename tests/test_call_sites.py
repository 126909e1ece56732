"""Call-site behaviour new users hit: `out=` spellings, refused operand types, compiled-call
arguments, conversions to NumPy, very deep expressions and evaluate() input safety."""
from __future__ import annotations

import re

import numpy as np
import pytest

import lazyk
from lazyk.errors import CastingError, DTypeError, NotSupportedError, ShapeError

BASE = np.arange(6.0).reshape(2, 3)


def _operands():
    return [lazyk.array(BASE), lazyk.array(BASE) * 1]


# --- out= on reductions and ufuncs --------------------------------------------------------------

@pytest.mark.parametrize("v", _operands(), ids=["array", "expr"])
@pytest.mark.parametrize("call, oshape, odtype", [
    (lambda v, o: v.sum(axis=1, out=o), (2,), np.float64),
    (lambda v, o: v.mean(out=o), (), np.float64),
    (lambda v, o: np.sum(v, axis=1, out=o), (2,), np.float64),
    (lambda v, o: np.add.reduce(v, axis=1, out=o), (2,), np.float64),
    (lambda v, o: v.sum(axis=1, keepdims=True, out=o), (2, 1), np.float64),
    (lambda v, o: v.sum(axis=0, dtype=np.float32, out=o), (3,), np.float32),
    (lambda v, o: v.max(axis=0, out=o), (3,), np.float64),
    (lambda v, o: np.mean(v, axis=0, out=o), (3,), np.float64),
    (lambda v, o: v.sum(axis=1, out=o), (2,), np.int64),  # NumPy: unsafe cast into out
    (lambda v, o: np.sin(v, out=o), (2, 3), np.float64),
    (lambda v, o: np.add(v, 1, out=(o,)), (2, 3), np.float64),
])
def test_out_spellings_match_numpy(v, call, oshape, odtype):
    want = call(BASE, np.empty(oshape, odtype))
    o = np.full(oshape, -7, odtype)
    got = call(v, o)
    assert got is o
    assert o.dtype == want.dtype and o.shape == want.shape
    np.testing.assert_allclose(o, want, rtol=1e-6)


@pytest.mark.parametrize("v", _operands(), ids=["array", "expr"])
def test_out_errors(v):
    with pytest.raises(ShapeError, match=r"\(3,\)"):
        v.sum(axis=1, out=np.empty(3))
    with pytest.raises(ShapeError):
        np.add(v, 1, out=np.empty((2, 4)))
    with pytest.raises(CastingError, match="float64.*int64.*same_kind"):
        np.add(v, 1, out=np.empty((2, 3), np.int64))
    ro = np.empty(2)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        v.sum(axis=1, out=ro)
    ro2 = np.empty((2, 3))
    ro2.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        np.add(v, 1, out=ro2)


def test_reduction_into_lazyk_array_out():
    o = lazyk.zeros("2 * float64")
    assert lazyk.array(BASE).sum(axis=1, out=o) is o
    np.testing.assert_array_equal(o.to_numpy(), BASE.sum(axis=1))


# --- operators on strings, bytes, records, datetimes and Python str ------------------------------

def _non_numeric():
    return [
        ("2 * string", lazyk.array(["apple", "kiwi"])),
        ("2 * bytes", lazyk.array([b"ab", b"c"])),
        ("1 * {x: int64, y: float64}", lazyk.array([{"x": 1, "y": 2.0}])),
        ("1 * date", lazyk.array(np.array(["2020-01-01"], "datetime64[D]"))),
        ("2 * {f0: int32, f1: float64}", lazyk.array(np.zeros(2, "i4,f8"))),
    ]


_OPS = [("==", lambda a, b: a == b), ("!=", lambda a, b: a != b), ("<", lambda a, b: a < b),
        (">=", lambda a, b: a >= b), ("+", lambda a, b: a + b), ("*", lambda a, b: a * b)]


@pytest.mark.parametrize("sym, op", _OPS, ids=[s for s, _ in _OPS])
@pytest.mark.parametrize("other", ["kiwi", b"kiwi", 1, 2.5])
def test_operators_on_non_numeric_arrays_raise(sym, op, other):
    for text, arr in _non_numeric():
        # `"x" < arr` is Python's `arr > "x"`: the error names the operator that ran.
        mirror = {"<": ">", ">=": "<="}.get(sym, sym)
        for left, right, s in ((arr, other, sym), (other, arr, mirror)):
            with pytest.raises(NotSupportedError) as info:
                op(left, right)
            msg = str(info.value)
            assert text in msg and f"({s})" in msg, msg
            assert isinstance(info.value, DTypeError)  # also a TypeError, as NumPy's


def test_string_equality_never_returns_a_bool():
    arr = lazyk.array(["apple", "kiwi"])
    for thunk in (lambda: arr == "kiwi", lambda: "kiwi" == arr, lambda: arr != "x",
                  lambda: arr < "x", lambda: arr + "x", lambda: np.equal(arr, arr)):
        with pytest.raises(NotSupportedError, match="2 \\* string"):
            thunk()


def test_numeric_array_against_str_follows_numpy():
    n = np.array([1.0, 2.0, 3.0])
    for a in (lazyk.array(n), lazyk.array(n) + 0):
        for got, want in ((a == "x", n == "x"), ("x" == a, "x" == n), (a != "x", n != "x")):
            assert isinstance(got, lazyk.Expr)
            r = got.to_numpy()
            assert r.dtype == want.dtype == np.bool_ and r.shape == want.shape
            np.testing.assert_array_equal(r, want)
        for sym, op in _OPS[2:]:
            with pytest.raises(TypeError, match=f"\\({re.escape(sym)}\\).*3 \\* float64.*str"):
                op(a, "x")
            with pytest.raises(TypeError):
                op("x", a)
