"""Differential test: random expression trees over random layouts; lazyk must equal NumPy."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lazyk
from lazyk.frontend import expr as E
from lazyk.frontend.leaves import leaf_data

DTYPES = ["bool", "int8", "int32", "int64", "uint8", "uint16", "float16", "float32",
          "float64", "complex128"]
LAYOUTS = ["C", "F", "reversed", "strided", "byteswap", "unaligned", "broadcast"]
BINARY = ["add", "subtract", "multiply", "true_divide", "maximum", "minimum", "less",
          "greater_equal", "equal", "fmax", "arctan2", "hypot", "logical_and", "bitwise_or"]
UNARY = ["negative", "absolute", "sin", "sqrt", "exp", "floor", "isnan", "logical_not",
         "log1p", "invert", "sign"]
REDUCE = ["sum", "prod", "min", "max", "mean", "any", "all"]


def _values(rng, dtype, shape):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        return rng.integers(0 if dt.kind == "u" else -4, 5, shape).astype(dt)
    v = rng.normal(size=shape) * 2
    if dt.kind == "c":
        v = v + 1j * rng.normal(size=shape)
    v = v.astype(dt)
    if v.size:
        v.flat[rng.integers(0, v.size)] = np.nan if rng.random() < 0.3 else v.flat[0]
    return v


def _layout(v, layout, rng):
    """The same values as `v`, stored in the requested memory layout."""
    if layout == "F":
        return np.asfortranarray(v)
    if layout == "reversed":
        return np.ascontiguousarray(v[(slice(None, None, -1),) * v.ndim])[
            (slice(None, None, -1),) * v.ndim]
    if v.ndim == 0:
        return v
    if layout == "strided":
        big = np.zeros(tuple(2 * n for n in v.shape), v.dtype)
        view = big[(slice(None, None, 2),) * v.ndim]
        view[...] = v
        return view
    if layout == "byteswap":
        return v.astype(v.dtype.newbyteorder())
    if layout == "unaligned" and v.dtype.itemsize > 1:
        buf = np.zeros(v.nbytes + 1, np.uint8)
        out = np.frombuffer(buf.data, v.dtype, v.size, 1).reshape(v.shape)
        out[...] = v
        return out
    if layout == "broadcast" and v.ndim and v.shape[0] > 1:
        return np.broadcast_to(v[:1], v.shape)
    return v


@st.composite
def leaves(draw):
    ndim = draw(st.integers(0, 3))
    base = tuple(draw(st.sampled_from([0, 1, 2, 3, 5])) for _ in range(ndim))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    out = []
    for _ in range(draw(st.integers(1, 3))):
        # each leaf drops leading dims or sets some dims to 1: NumPy broadcasting
        k = draw(st.integers(0, ndim))
        shape = tuple(1 if draw(st.booleans()) and draw(st.booleans()) else n
                      for n in base[k:])
        v = _values(rng, draw(st.sampled_from(DTYPES)), shape)
        out.append(_layout(v, draw(st.sampled_from(LAYOUTS)), rng))
    return out


@st.composite
def trees(draw, n_leaves, depth=0):
    """A tree as nested tuples: ('leaf', i) | ('scalar', v) | (op, child, ...)."""
    if depth >= 3 or draw(st.integers(0, 3)) == 0:
        if draw(st.integers(0, 5)) == 0:
            return ("scalar", draw(st.sampled_from([2, -1, 0.5, 3.0, True, np.float32(1.5),
                                                    np.int16(3)])))
        return ("leaf", draw(st.integers(0, n_leaves - 1)))
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return (draw(st.sampled_from(UNARY)), draw(trees(n_leaves, depth + 1)))
    if kind == 1:
        return ("where", draw(trees(n_leaves, depth + 1)), draw(trees(n_leaves, depth + 1)),
                draw(trees(n_leaves, depth + 1)))
    return (draw(st.sampled_from(BINARY)), draw(trees(n_leaves, depth + 1)),
            draw(trees(n_leaves, depth + 1)))


def build(tree, leaves, lazy):
    tag = tree[0]
    if tag == "leaf":
        a = leaves[tree[1]]
        return E.as_expr(a) if lazy else a
    if tag == "scalar":
        return tree[1]
    args = [build(t, leaves, lazy) for t in tree[1:]]
    if tag == "where":
        args[0] = E.astype(args[0], bool) if lazy else np.asarray(args[0]).astype(bool)
        return E.where(*args) if lazy else np.where(*args)
    return getattr(E, tag)(*args) if lazy else getattr(np, tag)(*args)


# Intermediates may be computed in the narrowest float a leaf promotes to (np.sin(int8) is
# float16), so the tolerance follows the narrowest leaf, not only the result dtype.
_NARROW = {1: np.float16, 2: np.float32}


def _tolerance(dtype, leaves=()):
    if dtype.kind not in "fc":
        return 0
    widths = [np.dtype(dtype)] + [
        np.dtype(_NARROW.get(a.dtype.itemsize, np.float64)) if a.dtype.kind in "biu"
        else np.dtype(a.dtype.newbyteorder("=")) for a in leaves]
    return max(float(np.finfo(w).resolution) for w in widths) * 50


def check_equal(got, want, scale=None, leaves=()):
    want = np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    tol = _tolerance(want.dtype, leaves)
    if tol:
        atol = tol * (1 + (scale if scale is not None else 0))
        np.testing.assert_allclose(got, want, rtol=tol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


@given(data=st.data())
def test_random_expressions_equal_numpy(data):
    arrays = data.draw(leaves())
    tree = data.draw(trees(len(arrays)))
    with np.errstate(all="ignore"):
        try:
            want = np.asarray(build(tree, arrays, lazy=False))
            want = want.astype(want.dtype.newbyteorder("="))  # results are native
        except (TypeError, ValueError, OverflowError) as err:
            expected = (TypeError, lazyk.NotSupportedError) if isinstance(err, TypeError) \
                else type(err)
            with pytest.raises(expected):
                build(tree, arrays, lazy=True)
            return
    try:
        e = E.as_expr(build(tree, arrays, lazy=True))
    except lazyk.NotSupportedError:
        return  # e.g. complex lowering not implemented for this op
    assert e.dtype == want.dtype and e.shape == want.shape
    with np.errstate(all="ignore"):
        got = lazyk.evaluate(e)
    check_equal(got, want, leaves=arrays)
    if data.draw(st.booleans()) and want.ndim and want.dtype.kind != "c":
        op = data.draw(st.sampled_from(REDUCE))
        axis = data.draw(st.sampled_from([None, 0, -1, tuple(range(want.ndim))]))
        keep = data.draw(st.booleans())
        with np.errstate(all="ignore"):
            try:
                ref = np.asarray(getattr(np, op)(want, axis=axis, keepdims=keep))
            except ValueError:  # min/max of an empty axis
                with pytest.raises(ValueError):
                    lazyk.evaluate(getattr(E, op)(e, axis=axis, keepdims=keep))
                return
            got = lazyk.evaluate(getattr(E, op)(e, axis=axis, keepdims=keep))
        scale = float(np.nansum(np.abs(want.astype(np.float64)))) if want.size else 0.0
        check_equal(got, ref, scale if np.isfinite(scale) else None, arrays)


@given(data=st.data())
def test_random_expressions_into_out(data):
    arrays = data.draw(leaves())
    tree = data.draw(trees(len(arrays)))
    with np.errstate(all="ignore"):
        try:
            want = np.asarray(build(tree, arrays, lazy=False))
            e = E.as_expr(build(tree, arrays, lazy=True))
        except (TypeError, ValueError, OverflowError, lazyk.NotSupportedError):
            return
    order = data.draw(st.sampled_from(["C", "F"]))
    out = np.zeros((2,) + want.shape if data.draw(st.booleans()) else want.shape,
                   want.dtype, order=order)
    with np.errstate(all="ignore"):
        lazyk.evaluate(e, out=out)
    check_equal(out, np.broadcast_to(want, out.shape), leaves=arrays)


@given(data=st.data())
def test_random_expressions_compiled_calls(data):
    arrays = data.draw(leaves())
    tree = data.draw(trees(len(arrays)))
    with np.errstate(all="ignore"):
        try:
            want = np.asarray(build(tree, arrays, lazy=False))
            want = want.astype(want.dtype.newbyteorder("="))
            e = E.as_expr(build(tree, arrays, lazy=True))
        except (TypeError, ValueError, OverflowError, lazyk.NotSupportedError):
            return
    k = lazyk.compile(e)
    args = [leaf_data(e.env[name]) for name in k.params]
    with np.errstate(all="ignore"):
        check_equal(np.asarray(k(*args)), want, leaves=arrays)
        out = np.empty(want.shape, want.dtype)
        assert k(*args, out=out) is out
        check_equal(out, want, leaves=arrays)
        check_equal(np.asarray(k(*args)), want, leaves=arrays)  # warm: cached geometry
