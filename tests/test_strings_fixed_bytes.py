"""`fixed_bytes[n]` elements (NumPy `V<n>`, Arrow fixed-size binary) in the string
operations: each value is all n of its bytes (NULs included), compared in byte order as
Python's bytes, `str_len` n; fixed, var and `?var` dims, `?fixed_bytes[n]`, records,
compiled calls. Checked against Python's bytes over the same nested lists."""
import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
from lazyk.errors import DTypeError
from tests import ragged_reference as R
from tests import ragged_strategies as S
from tests.test_strings_ragged import BYTES_LAYOUTS, tree

UNITS = st.sampled_from([b"\x00", b"a", b"b", b"\xff"])


def _fill(draw, sk, n, leaf_option):
    if sk == "MISSING":
        return None
    if sk is None:
        if leaf_option and draw(st.integers(0, 3)) == 0:
            return None
        return b"".join(draw(UNITS) for _ in range(n))
    return [_fill(draw, x, n, leaf_option) for x in sk]


@st.composite
def fixed_bytes_case(draw):
    """(dims, width n, nested values, a second fill of the same rows, leaf option)."""
    dims, _, q = draw(S.layout_types(BYTES_LAYOUTS, ("int64",)))
    n = draw(st.integers(1, 3))
    sk = S.skeleton(draw, dims)
    return dims, n, _fill(draw, sk, n, q), _fill(draw, sk, n, q), q


def _type(dims, n, q):
    return " * ".join(dims + [f"{'?' if q else ''}fixed_bytes[{n}]"])


def _check(expr, want, dims, elem):
    got = expr.eval()
    assert str(got.type) == " * ".join(dims + [elem])
    assert got.to_list() == want


@settings(max_examples=8, deadline=None)
@given(fixed_bytes_case(), st.sampled_from([b"", b"a", b"a\x00", b"\xff", b"ab", b"b\xff"]))
def test_fixed_bytes_as_python_bytes(case, c):
    dims, n, d, e, q = case
    x, y = lazyk.array(d, type=_type(dims, n, q)), lazyk.array(e, type=_type(dims, n, q))
    assert str(x.type) == _type(dims, n, q)
    m = "?" if q else ""
    for op in (operator.eq, operator.lt, operator.ge):
        _check(op(x, c), tree(lambda s, op=op: op(s, c), d), dims, m + "bool")
        _check(op(x, y), tree(op, d, e), dims, m + "bool")
    _check(lazyk.str_len(x), tree(len, d), dims, m + "int64")
    _check(lazyk.startswith(x, c) | lazyk.endswith(y, c),
           tree(lambda s, u: s.startswith(c) or u.endswith(c), d, e), dims, m + "bool")
    hits = R.array(tree(lambda s: s == c, d), " * ".join(dims + [m + "bool"]))
    ref = R.reduce("sum", hits, -1, skipna=True)
    try:
        got = (x == c).sum(axis=-1, skipna=True).eval()
    except lazyk.NotSupportedError:  # refused by name as for bytes, never wrong
        return
    assert str(got.type) == str(ref.type) and got.to_list() == ref.data


def test_fixed_bytes_by_hand():
    v = np.array([b"ab", b"c\x00", b"\x00\x00", b"de"]).view("V2")
    a = lazyk.array(v)
    assert str(a.type) == "4 * fixed_bytes[2]"
    _check(a == b"c\x00", [False, True, False, False], ["4"], "bool")
    _check(a == b"c", [False] * 4, ["4"], "bool")  # a value is all of its n bytes
    _check(lazyk.str_len(a), [2, 2, 2, 2], ["4"], "int64")
    _check(a[::-2] < b"d", [False, True], ["2"], "bool")  # stepping views
    _check(a == np.array([b"ab", b"c", b"", b"x"]), [True, False, False, False], ["4"], "bool")
    r = lazyk.from_offsets(np.array([0, 3, 3, 4]), v)  # rows over the NumPy bytes
    assert str(r.type) == "3 * var * fixed_bytes[2]"
    _check(r == b"ab", [[True, False, False], [], [False]], ["3", "var"], "bool")
    _check((r == b"de").any(axis=-1), [False, False, True], ["3"], "bool")
    w = lazyk.where(np.array([True, False, True, False]), a, b"zz")
    assert w.eval().to_list() == [b"ab", b"zz", b"\x00\x00", b"zz"]
    rec = lazyk.array([{"k": b"ab", "v": 1.0}, {"k": b"cd", "v": 2.0}],
                      type="2 * {k: fixed_bytes[2], v: float64}")
    assert ((rec.k == b"ab") & (rec.v > 0)).eval().to_list() == [True, False]
    # compiled: fixed_bytes arrays fill bytes parameters, leaves compile as bytes
    b = lazyk.placeholder("b", "N * var * bytes")
    assert lazyk.compile(b == b"ab")(r).to_list() == [[True, False, False], [], [False]]
    assert lazyk.compile(b == b"ab")(a[:, None]).to_list() == [[True], [False], [False],
                                                                 [False]]
    assert lazyk.compile(a == b"ab")().tolist() == [True, False, False, False]  # a constant


def test_fixed_bytes_empty():
    e = lazyk.array(np.zeros(0, "V3"))
    _check(e == b"abc", [], ["0"], "bool")
    r = lazyk.from_offsets(np.array([0, 0, 0]), np.zeros(0, "V3"))
    _check(lazyk.str_len(r), [[], []], ["2", "var"], "int64")


def test_fixed_bytes_refusals():
    a = lazyk.array(np.array([b"ab"]).view("V2"))
    with pytest.raises(DTypeError, match="bytes and str"):
        a == "ab"
    with pytest.raises(lazyk.NotSupportedError, match="bytes"):
        a + 1
    with pytest.raises(lazyk.NotSupportedError, match="fixed_bytes"):
        lazyk.placeholder("b", "N * fixed_bytes[2]")


def test_arrow_fixed_size_binary():
    pa = pytest.importorskip("pyarrow")
    pc = pytest.importorskip("pyarrow.compute")
    x = pa.array([[b"ab", None], None, [b"cd", b"ab"], []], pa.list_(pa.binary(2)))
    a = lazyk.from_arrow(x)
    assert str(a.type) == "4 * ?var * ?fixed_bytes[2]"
    assert a.to_list() == x.to_pylist()
    got = (a == b"ab").eval()
    assert str(got.type) == "4 * ?var * ?bool"
    assert got.to_list() == [[True, None], None, [False, True], []]
    flat = pa.array([b"ab", None, b"\x00b"], pa.binary(2))
    f = lazyk.from_arrow(flat)
    want = pc.equal(flat, pa.scalar(b"\x00b", pa.binary(2))).to_pylist()
    assert (f == b"\x00b").eval().to_list() == want
    assert lazyk.to_arrow(f).equals(flat)
    assert lazyk.from_arrow(flat.slice(2)).to_list() == [b"\x00b"]
    assert lazyk.from_arrow(pa.array([], pa.binary(3))).to_list() == []


def test_fixed_strings_and_bytes_under_an_outermost_var_dim_or_a_zero_dim():
    s = lazyk.array(["ab", "c"], type="var * fixed_string[2]")
    _check(s == "ab", [True, False], ["var"], "bool")
    b = lazyk.array([b"ab", None], type="?var * ?fixed_bytes[2]")
    _check(lazyk.str_len(b), [2, None], ["?var"], "?int64")
    _check(lazyk.array(None, type="?var * fixed_bytes[2]") == b"ab", None, ["?var"], "bool")
    z = lazyk.array([[], []], type="2 * 0 * var * fixed_string[3]")
    _check(z == "abc", [[], []], ["2", "0", "var"], "bool")


def test_fixed_bytes_under_a_fixed_1_below_missing_rows():
    """`2 * ?var * 1 * fixed_bytes[4]` compared with bytes: the fixed 1 keeps its rows."""
    x = lazyk.array([[[b"\x00\x00\x00\x00"]], None], type="2 * ?var * 1 * fixed_bytes[4]")
    got = (x == b"").eval()
    assert str(got.type) == "2 * ?var * 1 * bool"
    assert got.to_list() == [[[False]], None]
    assert (x == b"\x00\x00\x00\x00").eval().to_list() == [[[True]], None]
