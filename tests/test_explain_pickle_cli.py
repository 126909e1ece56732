"""What a user sees of lazyk's objects: explain()'s text, pickles and copies, repr, the
command line, and placeholders' names."""
from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import lazyk
from lazyk import cli


def test_explain_header_shows_each_placeholder_type():
    e = lazyk.placeholder("a", "N * var * float64").sum(axis=-1) + \
        lazyk.placeholder("b", "N * float64")
    head = str(e.explain()).splitlines()[0]
    assert "a: N * var * float64" in head and "b: N * float64" in head
    for t in ("N * ?string", "?string", "N * var * ?string"):
        assert str(lazyk.explain(lazyk.placeholder("s", t))).splitlines()[0] == \
            f"== expression: {t}"


def test_explain_of_dask_partitions_says_what_combines_them():
    pytest.importorskip("dask")
    import lazyk.dask as ld

    c = ld.from_ragged(lazyk.array([[1.0, 2.0], [3.0], [4.0, 5.0, 6.0]] * 4), 4)
    first = {k: str(lazyk.explain(e)).splitlines()[0] for k, e in [
        ("map", c * 2), ("total", (c * 2).sum()), ("rows", c.sum(axis=1)),
        ("pairs", lazyk.combinations(c, 2)), ("hist", lazyk.histogram(c, 3, (0, 6)))]}
    assert "combined with the other partitions'" in first["total"]
    for k in ("map", "rows"):
        assert "its rows are those rows of the result" in first[k]
    assert "its records are those rows of the result" in first["pairs"]
    assert "counts are then added" in first["hist"]


def test_more_than_32_dims_in_compiled_calls_out_and_explain():
    ones = (1,) * 33
    f = lazyk.compile(lazyk.placeholder("x", " * ".join(["1"] * 33) + " * float64") + 1)
    got = f(np.zeros(ones))
    assert got.shape == ones and got.ravel().tolist() == [1.0]
    x = lazyk.array(np.full(ones, 2.0))
    out = np.empty(ones)
    lazyk.evaluate(x + 1, out=out)
    assert out.ravel().tolist() == [3.0]
    assert "== expression: 1 * 1" in str(x.explain())
    y = lazyk.array(np.zeros((2,) + ones))
    assert (y + x).eval().shape == (2,) + ones
    with pytest.raises(lazyk.ShapeError, match="axis -34"):
        (y + lazyk.array(np.zeros((3,) + ones))).eval()


def test_explain_refuses_huge_sample_data_with_a_message():
    for t in ("N * 100000 * 100000 * float64", "N * var * 100000 * 100000 * float64"):
        text = str((lazyk.placeholder("a", t) + 1).explain())
        assert "raised NotSupportedError" in text and "sample data" in text
        assert "placeholder 'a'" in text


def test_deep_expressions_pickle_and_copy():
    x = lazyk.array(np.arange(4.0))
    e = x
    for _ in range(1500):
        e = e + 1.0
    want = (np.arange(4.0) + 1500).tolist()
    assert pickle.loads(pickle.dumps(e)).eval().tolist() == want
    assert copy.deepcopy(e).eval().tolist() == want


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_every_pickle_protocol(protocol):
    objs = [lazyk.array(["a", "bc", None]), lazyk.array([[1, 2], [], None]),
            lazyk.array([{"x": 1, "s": "a"}, None]), lazyk.placeholder("s", "N * ?string"),
            lazyk.histogram(lazyk.array([1.0, 2.0]), 2, (0, 3))]
    for o in objs:
        back = pickle.loads(pickle.dumps(o, protocol=protocol))
        assert type(back) is type(o)
    h = pickle.loads(pickle.dumps(objs[-1], protocol=protocol))
    assert lazyk.evaluate(h).tolist() == np.histogram([1.0, 2.0], 2, (0, 3))[0].tolist()
    assert pickle.loads(pickle.dumps(objs[0], protocol=protocol)).tolist() == ["a", "bc", None]


def test_repr_of_a_closed_array_and_copies_as_numpy_makes_them():
    a = lazyk.array(np.arange(3.0))
    a.close()
    assert repr(a) == "array(<closed>)"
    r = lazyk.array([[1.0], []])
    r.close()
    assert repr(r) == "array(<closed>, type='2 * var * float64')"
    n = np.arange(3.0)
    c = copy.copy(lazyk.array(n))
    c[0] = 100.0
    assert n[0] == 0.0  # (NumPy's copy.copy copies: so does lazyk's)
    fo = lazyk.from_offsets(np.array([0, 2, 3]), np.arange(3.0))
    assert not copy.copy(fo).readonly and copy.copy(fo).tolist() == [[0.0, 1.0], [2.0]]


def test_placeholder_names_of_lazyk_arrays_are_refused():
    with pytest.raises(ValueError, match="'_0' is taken"):
        lazyk.placeholder("_0", "N * float64")
    assert lazyk.placeholder("_x", "N * float64").type == lazyk.dshape("N * float64")


def test_compiled_string_parameter_takes_a_python_string():
    g = lazyk.compile(lazyk.placeholder("s", "string") == "abc")
    assert bool(g("abc")) is True and bool(g("abd")) is False


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "lazyk", *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=120)


def test_command_line_speaks_plainly():
    got = _cli("explain", "1 + 2", "--target", "cuda")
    assert got.returncode == 0 and "Traceback" not in got.stderr
    got = _cli("explain", "a + 1", "--type", "a=N * float64", "--target", "cuda", "--no-ir")
    assert got.returncode == 2 and "--no-ir and --no-asm" in got.stderr
    with pytest.raises(SystemExit):
        cli.main(["cache", "info", "--key"])
    got = _cli("parse", "{'é': int32}", env={"PYTHONIOENCODING": "ascii"})
    assert got.returncode == 0 and "Traceback" not in got.stderr and "\\xe9" in got.stdout
