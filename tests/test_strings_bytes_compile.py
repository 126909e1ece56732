"""`lazyk.compile` over `bytes` parameters (`N * bytes`, `?bytes`, `N * var * ?bytes`, ...):
every string operation that `bytes` arrays take in expressions, checked against Python's
bytes over the same nested lists (missing in, missing out), and the ragged reference for
reductions."""
import operator
import pickle

import numpy as np
import pytest
from hypothesis import given, settings

import lazyk
from lazyk.errors import DTypeError, NotSupportedError, TypeMatchError
from tests import ragged_reference as R
from tests.test_strings_ragged import BYTE_VALUES, bytes_case, tree


def _param(dims, q):
    """The parameter type of a drawn layout: its first fixed size becomes N."""
    dims = ["N" if i == 0 and d.isdigit() else d for i, d in enumerate(dims)]
    return " * ".join(dims + [("?" if q else "") + "bytes"])


def _listed(got):
    return got.tolist() if isinstance(got, np.ndarray) else got.to_list()


def _check(k, want, dims, elem, *inputs):
    got = k(*inputs)
    assert str(lazyk.array(got).type if isinstance(got, np.ndarray) else got.type) == \
        " * ".join(dims + [elem])
    assert _listed(got) == want
    return got


@settings(max_examples=8, deadline=None)
@given(bytes_case(), BYTE_VALUES)
def test_bytes_parameters_against_python_bytes(case, c):
    dims, d, e, q = case
    t = " * ".join(dims + [("?" if q else "") + "bytes"])
    x, y = lazyk.array(d, type=t), lazyk.array(e, type=t)
    p, g = lazyk.placeholder("p", _param(dims, q)), lazyk.placeholder("g", _param(dims, q))
    m = "?" if q else ""
    for op in (operator.eq, operator.lt, operator.ge):
        _check(lazyk.compile(op(p, c)), tree(lambda s, op=op: op(s, c), d), dims, m + "bool", x)
        _check(lazyk.compile(op(p, g)), tree(op, d, e), dims, m + "bool", x, y)
    _check(lazyk.compile(lazyk.str_len(p)), tree(len, d), dims, m + "int64", x)
    k = lazyk.compile(lazyk.startswith(p, c) | lazyk.endswith(p, g))
    _check(k, tree(lambda s, u: s.startswith(c) or s.endswith(u), d, e), dims, m + "bool", x, y)


@settings(max_examples=8, deadline=None)
@given(bytes_case(), BYTE_VALUES)
def test_bytes_parameters_reduced_as_the_reference(case, c):
    dims, d, _, q = case
    x = lazyk.array(d, type=" * ".join(dims + [("?" if q else "") + "bytes"]))
    p = lazyk.placeholder("p", _param(dims, q))
    m = "?" if q else ""
    lens = R.array(tree(len, d), " * ".join(dims + [m + "int64"]))
    hits = R.array(tree(lambda s: s == c, d), " * ".join(dims + [m + "bool"]))
    for ref, e in ((R.reduce("sum", lens, -1, skipna=True), lazyk.str_len(p).sum(axis=-1,
                                                                               skipna=True)),
                   (R.reduce("any", hits, -1), (p == c).any(axis=-1))):
        try:
            got = lazyk.compile(e)(x)
        except NotSupportedError:  # as when evaluated: refused by name, never wrong
            continue
        assert _listed(got) == ref.data
        if not isinstance(got, np.ndarray):
            assert str(got.type) == str(ref.type)


def test_bytes_parameters_by_hand():
    f = lazyk.placeholder("f", "N * bytes")
    k = lazyk.compile(lazyk.str_len(f) + (f < b"b"))
    assert k.signature == "(f: N * bytes) -> N * int64"
    want = [3, 1, 1, 2]
    for given_ in (np.array([b"ab", b"c", b"", b"a"]), [b"ab", b"c", b"", b"a"],
                   lazyk.array([b"ab", b"c", b"", b"a"])):
        got = k(given_)
        assert got.dtype == np.int64 and got.tolist() == want
    v = lazyk.placeholder("v", "N * var * ?bytes")
    k2 = lazyk.compile((v == b"\x00a") | lazyk.endswith(v, b"\xff"))
    assert k2.signature == "(v: N * var * ?bytes) -> N * var * ?bool"
    rows = [[b"\x00a", None, b"x\xff"], [], [b""]]
    got = k2(lazyk.array(rows, type="3 * var * ?bytes"))
    assert str(got.type) == "3 * var * ?bool"
    assert got.to_list() == [[True, None, True], [], [False]]
    # data without missing values fills the ?bytes parameter, NumPy S rows a var one
    assert k2([[b"\x00a"], []]).to_list() == [[True], []]
    assert k2(np.array([[b"a", b"\xff"]])).to_list() == [[False, True]]
    # where() over bytes parameters gives bytes arrays
    x = lazyk.placeholder("x", "N * float64")
    k3 = lazyk.compile(lazyk.where(x > 0, f, b"-"))
    assert k3(np.array([1.0, -1.0, 2.0]), [b"a", b"b", b""]).to_list() == [b"a", b"-", b""]
    k4 = lazyk.compile(lazyk.where(lazyk.str_len(v) > 1, v, b"-") == b"-")
    assert k4(lazyk.array(rows, type="3 * var * ?bytes")).to_list() == \
        [[False, None, False], [], [True]]
    # pickled compiled expressions (Dask workers) take bytes parameters too
    assert pickle.loads(pickle.dumps(k2))(lazyk.array(rows, type="3 * var * ?bytes")
                                          ).to_list() == [[True, None, True], [], [False]]


def test_bytes_parameters_empty_arrays_and_rows():
    v = lazyk.placeholder("v", "N * var * bytes")
    k = lazyk.compile(lazyk.str_len(v).sum(axis=-1))
    assert k(lazyk.array([], type="0 * var * bytes")).tolist() == []
    assert k([[], [b"abc"], []]).tolist() == [0, 3, 0]
    q = lazyk.placeholder("q", "N * ?bytes")
    got = lazyk.compile(q == b"")(lazyk.array([], type="0 * ?bytes"))
    assert str(got.type) == "0 * ?bool" and got.to_list() == []


def test_bytes_parameters_bind():
    v = lazyk.placeholder("v", "N * var * ?bytes")
    k = lazyk.compile((v == b"ab").sum(axis=-1, skipna=True))
    a = lazyk.array([[b"ab", None, b"ab"], [], [b"x"]], type="3 * var * ?bytes")
    run = k.bind(np.empty(3, np.int64), a)
    assert run().tolist() == [2, 0, 0]


def test_bytes_parameters_refuse_str():
    q = lazyk.placeholder("q", "N * ?bytes")
    for build in (lambda: q == "a", lambda: q < lazyk.placeholder("s", "N * ?string"),
                  lambda: lazyk.startswith(q, "a")):
        with pytest.raises(DTypeError, match="bytes and str"):
            lazyk.compile(build())
    k = lazyk.compile(q == b"a")
    for wrong in (["a", "b"], np.array(["a"]), [1, 2]):
        with pytest.raises(TypeMatchError, match="bytes parameters"):
            k(wrong)
    s = lazyk.compile(lazyk.placeholder("s", "N * string") == "a")
    with pytest.raises(TypeMatchError):  # (NumPy bytes are text as lazyk.array reads them,
        s(np.array([b"\xff"]))          # when they are UTF-8)


def test_bytes_leaves_are_constants():
    a = lazyk.array([[b"a", b"bc"], []], type="2 * var * bytes")
    k = lazyk.compile(lazyk.str_len(a) * 2)
    assert k.signature == "() -> 2 * var * int64"
    assert k().to_list() == [[2, 4], []]
    n = lazyk.placeholder("n", "2 * var * bytes")
    k = lazyk.compile(lazyk.str_len(n) * 2 + lazyk.str_len(a))
    assert k(lazyk.array([[b"xyz", b""], []], type="2 * var * bytes")).to_list() == \
        [[7, 2], []]
    f = lazyk.array([b"a", None], type="2 * ?bytes")
    got = lazyk.compile(f == b"a")()
    assert str(got.type) == "2 * ?bool" and got.to_list() == [True, None]
