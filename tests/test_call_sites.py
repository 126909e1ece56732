"""Call-site behaviour new users hit: `out=` spellings, refused operand types, compiled-call
arguments, conversions to NumPy, very deep expressions and evaluate() input safety."""
from __future__ import annotations

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
