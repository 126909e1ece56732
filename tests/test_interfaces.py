"""Interfaces a new user reaches first: `lazyk.explain`, captured arrays in `lazyk.compile`,
NumPy functions on expressions, iteration, Python lists in `evaluate`, and notebook display."""
import gc
import pickle
import weakref

import numpy as np
import pytest

import lazyk

# --- lazyk.explain -----------------------------------------------------------------------------

def test_lazyk_explain_is_the_function_and_matches_the_method():
    x = lazyk.placeholder("x", "N * float64")
    e = lazyk.sin(x) * 2 + 1
    text = lazyk.explain(e)
    assert callable(lazyk.explain)
    assert text == e.explain()
    assert "== graph as built" in text and "%1 = sin(%0) : N * float64" in text
    assert repr(text) == str(text)  # a prompt prints the lines, not an escaped str


def test_explain_shows_as_preformatted_html_in_a_notebook():
    e = lazyk.array(np.arange(3.0)) < 2
    text = lazyk.explain(e)
    html = text._repr_html_()
    assert html.startswith("<pre>") and html.endswith("</pre>")
    assert "&lt;" in html and "less(" in html  # escaped: `<` never starts a tag
    assert str(text).count("\n") == html.count("\n")


# --- arrays captured by lazyk.compile are constants --------------------------------------------

def test_a_captured_numpy_array_is_a_constant_not_a_parameter():
    x = lazyk.placeholder("x", "N * float64")
    w = np.array([0.5, 2.0, -1.0])
    k = lazyk.compile(x * w + 1)
    assert k.signature == "(x: N * float64) -> 3 * float64"
    assert k.params == ("x",) and [v is w for v in k.constants.values()] == [True]
    a = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(k(a), a * w + 1)
    np.testing.assert_array_equal(k(x=a), a * w + 1)
    out = np.empty(3)
    assert k(a, out=out) is out
    np.testing.assert_array_equal(out, a * w + 1)
    with pytest.raises(TypeError, match=r"expected 1 input \(x: N \* float64\).*captured are "
                                        "constants"):
        k(a, w)


def test_a_captured_lazyk_array_is_kept_alive_and_read_without_a_copy():
    x = lazyk.placeholder("x", "N * int64")
    c = lazyk.array(np.arange(4))
    k = lazyk.compile(x - c)
    ref = weakref.ref(c)
    del c
    gc.collect()
    assert ref() is not None  # the compiled expression holds it
    np.testing.assert_array_equal(k(np.full(4, 10)), 10 - np.arange(4))
    np.asarray(ref())[0] = 100  # bound once: the very array, no copy
    np.testing.assert_array_equal(k(np.zeros(4, np.int64)), [-100, -1, -2, -3])


def test_a_captured_ragged_array_is_a_constant():
    rows = lazyk.array([[1.0, None, 3.0], [], [4.0]])
    s = lazyk.placeholder("s", "float64")
    k = lazyk.compile(rows.sum(axis=-1, skipna=True) * s)
    assert k.signature == "(s: float64) -> 3 * float64"
    np.testing.assert_array_equal(k(2.0), np.array([4.0, 0.0, 4.0]) * 2.0)
    y = lazyk.placeholder("y", "3 * var * ?float64")
    k2 = lazyk.compile(y + rows)
    assert k2.signature == "(y: 3 * var * ?float64) -> 3 * var * ?float64"
    got = k2(lazyk.array([[1.0, 1.0, None], [], [0.5]], type="3 * var * ?float64"))
    assert got.to_list() == [[2.0, None, None], [], [4.5]]


def test_compiled_constants_pickle_with_their_values():
    x = lazyk.placeholder("x", "N * float64")
    w = np.array([1.0, 10.0, 100.0])
    k = lazyk.compile(lazyk.sum(x * w))
    k2 = pickle.loads(pickle.dumps(k))
    assert k2.signature == k.signature == "(x: N * float64) -> float64"
    a = np.array([1.0, 2.0, 3.0])
    assert k2(a) == k(a) == np.sum(a * w)
    assert k2.__dask_tokenize__() == k.__dask_tokenize__()
    other = lazyk.compile(lazyk.sum(x * np.array([1.0, 10.0, 101.0])))
    assert other.__dask_tokenize__() != k.__dask_tokenize__()  # the values are in the token
    rows = lazyk.array([[1, 2], [3]])
    r = pickle.loads(pickle.dumps(lazyk.compile(rows * lazyk.placeholder("s", "int64"))))
    assert r.signature == "(s: int64) -> 2 * var * int64" and r(3).to_list() == [[3, 6], [9]]


def test_a_compiled_constant_reaches_dask_blocks():
    da = pytest.importorskip("dask.array")
    import lazyk.dask  # noqa: F401  (runs compiled calls on Dask arrays)

    x = lazyk.placeholder("x", "N * float64")
    w = np.array([1.0, 2.0, 3.0, 4.0])
    k = lazyk.compile(x * w + 1)
    got = k(da.from_array(np.arange(4.0), chunks=2))
    np.testing.assert_array_equal(got.compute(), np.arange(4.0) * w + 1)


def test_bind_takes_only_the_parameters():
    x = lazyk.placeholder("x", "N * float64")
    w = np.array([1.0, 2.0, 3.0])
    k = lazyk.compile(x * w)
    a, out = np.array([4.0, 5.0, 6.0]), np.empty(3)
    ck = k.bind(out, a)
    assert ck() is out
    np.testing.assert_array_equal(out, a * w)
    a[:] = 1.0  # the bound kernel reads the very arrays bound
    ck()
    np.testing.assert_array_equal(out, w)
    y = lazyk.placeholder("y", "2 * var * float64")
    rows = lazyk.array([[1.0, 2.0], [3.0]])
    b = lazyk.compile(y * rows).bind(lazyk.array([[0.0, 0.0], [0.0]]),
                                     lazyk.array([[2.0, 2.0], [2.0]]))
    assert b().to_list() == [[2.0, 4.0], [6.0]]


# --- NumPy functions on expressions ------------------------------------------------------------

X = np.array([0.5, -1.25, 2.0, 3.5])


def _expr():
    return lazyk.sin(lazyk.array(X)) * 2 + 1


def _ref():
    return np.sin(X) * 2 + 1


def test_every_numpy_ufunc_of_the_op_table_stays_lazy():
    from lazyk.frontend import ops
    from lazyk.frontend.numpy_api import UFUNCS

    rows = {n for n, r in ops.OPS.items() if r.kind == "elementwise" and
            isinstance(r.numpy, np.ufunc)}
    assert set(UFUNCS.values()) == rows and len(rows) > 40  # from the table, not a list
    a, b = np.array([0.25, 0.5, 0.75]), np.array([2.0, 1.5, 0.5])
    ea, eb = lazyk.array(a) + 0, lazyk.array(b) + 0
    for uf, name in UFUNCS.items():
        if name in ("invert", "left_shift", "right_shift", "bitwise_and", "bitwise_or",
                    "bitwise_xor"):
            args = (np.array([6, 3]), np.array([1, 2]))[:uf.nin]
            lazy = [lazyk.array(x) + 0 for x in args]
        else:
            args, lazy = (a, b)[:uf.nin], (ea, eb)[:uf.nin]
        got = uf(*lazy)
        assert isinstance(got, lazyk.Expr), name
        with np.errstate(all="ignore"):
            want = uf(*args)
        value = got.to_numpy()
        assert value.dtype == want.dtype, name
        np.testing.assert_allclose(value, want, rtol=1e-12, err_msg=name)


def test_numpy_reductions_and_functions_stay_lazy_with_their_keywords():
    e, ref = _expr(), _ref()
    m = lazyk.array(np.arange(12.0).reshape(3, 4)) - 5
    mref = np.arange(12.0).reshape(3, 4) - 5
    cases = [
        (np.sum(e), np.sum(ref)),
        (np.sum(m, axis=1, keepdims=True), np.sum(mref, axis=1, keepdims=True)),
        (np.mean(m, axis=0), np.mean(mref, axis=0)),
        (np.prod(m, 1, np.float32), np.prod(mref, 1, np.float32)),
        (np.min(m, axis=1, initial=-1), np.min(mref, axis=1, initial=-1)),
        (np.amax(m), np.amax(mref)),
        (np.any(m > 5, axis=0), np.any(mref > 5, axis=0)),
        (np.all(m > -6), np.all(mref > -6)),
        (np.where(e > 1, e, 0.0), np.where(ref > 1, ref, 0.0)),
        (np.clip(e, 0, 2), np.clip(ref, 0, 2)),
        (np.clip(e, max=1.5), np.clip(ref, max=1.5)),
        (np.clip(e, 0.5), np.clip(ref, 0.5, None)),
        (np.add.reduce(m, axis=1), np.add.reduce(mref, axis=1)),
        (np.maximum.reduce(m), np.maximum.reduce(mref)),
        (np.real(e), np.real(ref)),
        (np.count_nonzero(m > 0, axis=1), np.count_nonzero(mref > 0, axis=1)),
        (np.count_nonzero(m, axis=0, keepdims=True), np.count_nonzero(mref, axis=0,
                                                                      keepdims=True)),
        (np.count_nonzero(e), np.count_nonzero(ref)),
    ]
    for got, want in cases:
        assert isinstance(got, lazyk.Expr)
        value = got.to_numpy()
        assert value.dtype == np.asarray(want).dtype and value.shape == np.shape(want)
        np.testing.assert_allclose(value, want, rtol=1e-12)
    with_nan = lazyk.array(np.array([1.0, np.nan, 3.0])) * 1
    for f in (np.nansum, np.nanmean, np.nanmin, np.nanmax, np.nanprod):
        got = f(with_nan)
        assert isinstance(got, lazyk.Expr)
        assert got.to_numpy() == f(np.array([1.0, np.nan, 3.0])), f.__name__
    assert np.shape(m) == (3, 4) and np.ndim(m) == 2
    out = np.empty(())
    assert np.sum(e, out=out) is out and out == pytest.approx(np.sum(ref))
    out4 = np.empty(4)
    assert np.sin(e, out=out4) is out4
    np.testing.assert_allclose(out4, np.sin(ref))


def test_reductions_into_out_follow_numpys_rules():
    a = np.array([[1.5, 2.5], [3.0, 7.25]])
    x = lazyk.array(a)
    for call in (lambda o: np.sum(x, axis=0, out=o), lambda o: x.sum(axis=0, out=o),
                 lambda o: np.std(x, axis=0, out=o), lambda o: np.add.reduce(x, out=o),
                 lambda o: x.argmax(axis=0, out=o), lambda o: np.cumsum(x, axis=0, out=o)):
        with pytest.raises(lazyk.ShapeError, match=r"out= of shape \(3, 2\).*exactly"):
            call(np.zeros((3, 2)))  # (NumPy refuses it; no result copied into every row)
        np.sum(a, axis=0, out=np.zeros(2))  # (what NumPy takes)
    with pytest.raises(lazyk.ShapeError, match=r"\(5,\).*\(\)"):
        x.sum(out=np.zeros(5))
    # float sums, means and variances go into int outs unsafely, as NumPy stores them
    for f in (np.sum, np.mean, np.var, np.max):
        got, want = np.zeros(2, np.int64), np.zeros(2, np.int64)
        f(x, axis=0, out=got)
        f(a, axis=0, out=want)
        np.testing.assert_array_equal(got, want)
    # ... but not a standard deviation (a square root) or positions into a float out
    with pytest.raises(lazyk.CastingError, match="float64.*int64"):
        np.std(x, axis=0, out=np.zeros(2, np.int64))
    with pytest.raises(TypeError, match="argmax.*float64"):
        np.argmax(x * 1, axis=0, out=np.zeros(2))
    got = np.zeros(2, np.int32)
    np.argmax(x * 1, axis=0, out=got)
    np.testing.assert_array_equal(got, np.argmax(a, axis=0))


def test_count_nonzero_matches_awkward_over_rows_and_missing_values():
    ak = pytest.importorskip("awkward")
    for data in ([[1.0, 0.0, np.nan], [], [0.0], None, [None, 2.0]],
                 [[[1, 0], []], [], [[0, 0, 3]]], [[True, False], [True, True]],
                 [[0, None], [2, 3, 0]]):
        x, a = lazyk.array(data), ak.Array(data)
        total = lazyk.count_nonzero(x).eval()
        assert int(total) == ak.count_nonzero(a) and str(total.type) == "int64"
        got = lazyk.count_nonzero(x, axis=-1).eval()
        assert got.to_list() == ak.count_nonzero(a, axis=-1).to_list(), data
        assert str(got.type).endswith("int64")  # (?int64 over missing rows)
    assert str(lazyk.count_nonzero(lazyk.array([[1, 0], [2]]), axis=1).type) == "2 * int64"
    # strings count where they are not empty, as in NumPy
    words = np.array(["a", "", "bc"])
    assert int(lazyk.count_nonzero(lazyk.array(words)).eval()) == np.count_nonzero(words) == 2
    assert int(lazyk.count_nonzero(lazyk.array(np.array([b"a", b""]))).eval()) == 1
    assert int(lazyk.count_nonzero(lazyk.array(["a", None, ""])).eval()) == 1
    # a bad axis names the function the user called
    for f in (lazyk.count_nonzero, lazyk.count):
        with pytest.raises(np.exceptions.AxisError, match=f"^{f.__name__}: axis 3"):
            f(lazyk.array([[1, 0], [2]]), axis=3)


def test_numpy_functions_lazyk_lacks_are_refused_by_name():
    e = _expr()
    for f, args in ((np.cbrt, ()), (np.median, ()), (np.diff, ()), (np.unique, ()),
                    (np.allclose, (1.0,)), (np.stack, ())):
        call = (lambda: f([e, e])) if f is np.stack else (lambda: f(e, *args))
        with pytest.raises(lazyk.NotSupportedError) as info:
            call()
        msg = str(info.value)
        assert msg.startswith(f"numpy.{f.__name__} is not supported on lazy expressions")
        assert "evaluate first (expr.eval())" in msg
        assert "Expr(sin(" in msg and "type='4 * float64'" in msg
        assert "\n" not in msg and "%1" not in msg  # never the whole graph
    with pytest.raises(lazyk.NotSupportedError, match="numpy.add.accumulate"):
        np.add.accumulate(e)
    with pytest.raises(lazyk.NotSupportedError, match="numpy.sum: the keyword.* where"):
        np.sum(e, where=e > 0)
    with pytest.raises(lazyk.NotSupportedError, match=r"numpy.where\(\) without x, y"):
        np.where(e > 0)
    # explicit conversions still compute
    np.testing.assert_allclose(np.asarray(e), _ref())
    np.testing.assert_allclose(np.array(e), _ref())



def test_numpy_functions_on_ragged_arrays_stay_lazy_and_fixed_ones_stay_numpy():
    rows = [[3.0, 1.0, 2.0], [], [5.0, -1.0]]
    x = lazyk.array(rows)
    # np.sort does not go through a method (np.argsort, np.cumsum do): the same lazy sort
    got = np.sort(x, axis=1)
    assert isinstance(got, lazyk.Expr) and got.eval().to_list() == [[1.0, 2.0, 3.0], [],
                                                                     [-1.0, 5.0]]
    assert np.sort(x, axis=1, kind="stable").eval().to_list() == \
        lazyk.sort(x, axis=1).eval().to_list()
    counts, edges = np.histogram(x, 3, (-1, 5))
    np.testing.assert_array_equal(counts, np.histogram(sum(rows, []), 3, (-1, 5))[0])
    with pytest.raises(lazyk.NotSupportedError) as info:
        np.median(x)
    msg = str(info.value)
    assert msg.startswith("numpy.median is not supported on lazyk arrays (an array of type "
                          "'3 * var * float64')") and "pad and fill first" in msg
    for f, name in [(np.linalg.norm, "numpy.linalg.norm"), (np.fft.fft, "numpy.fft.fft")]:
        with pytest.raises(lazyk.NotSupportedError, match=rf"^{name} is not supported"):
            f(x * 2)  # (a function of a NumPy submodule: named by its full name)
    # fixed dims: NumPy's own functions, on the array's NumPy view, as before
    d = lazyk.array(np.array([[3.0, 1.0], [0.5, 2.0]]))
    got = np.sort(d, axis=1)
    assert type(got) is np.ndarray
    np.testing.assert_array_equal(got, [[1.0, 3.0], [0.5, 2.0]])
    assert np.concatenate([d, d]).shape == (4, 2) and float(np.median(d)) == 1.5
    names = lazyk.array(np.array(["b", "a"]))
    np.testing.assert_array_equal(np.sort(names), ["a", "b"])

def test_short_form_names_an_expression_in_one_line():
    from lazyk.frontend.expr import summary

    a = lazyk.placeholder("a", "N * float64")
    b = lazyk.placeholder("b", "N * float64")
    assert summary(lazyk.sin(a) * 2 + 1) == "Expr(sin(a) * 2.0 + 1.0, type='N * float64')"
    assert summary((a + b) * (a - b)) == "Expr((a + b) * (a - b), type='N * float64')"
    assert summary(a - (b - 1) / a ** 2) == "Expr(a - (b - 1.0) / a ** 2.0, type='N * float64')"
    assert summary(lazyk.where(a > 0, a, -a).sum()) == \
        "Expr(sum(where(a > 0.0, a, -a)), type='float64')"
    with pytest.raises(TypeError, match=r"a lazy expression \(Expr\(sin\(a\) \* 2\.0, "
                                        r"type='N \* float64'\)\) cannot be indexed by \[0\]"):
        (lazyk.sin(a) * 2)[0]
    x = a
    for _ in range(64):  # 2**64 leaves as a tree: the short form stays short
        x = x + x
    text = summary(x)
    assert len(text) <= 90 and "..." in text and "\n" not in text


# --- iteration ---------------------------------------------------------------------------------

def test_iterating_an_expression_is_iterating_numpy_result():
    e = lazyk.array(np.arange(6.0).reshape(2, 3)) * 2
    rows = list(e)
    assert len(rows) == len(e) == 2
    for got, want in zip(rows, np.arange(6.0).reshape(2, 3) * 2):
        assert isinstance(got, np.ndarray)
        np.testing.assert_array_equal(got, want)
    items = list(lazyk.array(np.array([1, 2, 3], np.int32)) + 1)
    assert items == [2, 3, 4] and all(type(v) is np.int32 for v in items)
    with pytest.raises(TypeError, match=r"iteration over a 0-d expression \(Expr\(sum"):
        iter(lazyk.sum(lazyk.array(np.ones(3))))


def test_iterating_var_and_missing_data_yields_lazyk_rows():
    e = lazyk.array([[1, 2, None], [], [3]]) * 10
    rows = list(e)
    assert len(rows) == len(e) == 3
    assert [r.to_list() for r in rows] == [[10, 20, None], [], [30]]
    assert all(str(r.type) == "var * ?int64" for r in rows)
    values = list(lazyk.array([1.5, None]) + 1)
    assert [v.to_list() for v in values] == [2.5, None]


# --- Python lists in evaluate, clear errors for None, huge arrays and the command line ----------

def test_evaluate_reads_python_lists_as_lazyk_array_does():
    got = lazyk.evaluate("2*a + b", local_dict={"a": [1, 2, 3], "b": np.ones(3)})
    np.testing.assert_array_equal(got, 2 * np.array([1, 2, 3]) + np.ones(3))
    assert got.dtype == np.float64
    a = [1.5, -2.0]  # noqa: F841 (read by name from this frame)
    got = lazyk.evaluate("a * 2")
    assert isinstance(got, np.ndarray) and got.tolist() == [3.0, -4.0]
    rows, opt = [[1, 2], [3]], (1, None, 3)  # noqa: F841 (read by name)
    assert lazyk.evaluate("rows * 10").to_list() == [[10, 20], [30]]
    got = lazyk.evaluate("opt + 1")
    assert str(got.type) == "3 * ?int64" and got.to_list() == [2, None, 4]


def test_none_into_a_parameter_without_missing_values_says_so():
    k = lazyk.compile(lazyk.placeholder("xi", "N * int64") + 1)
    with pytest.raises(lazyk.TypeMatchError) as info:
        k([1, None])
    msg = str(info.value)
    assert "has missing values" in msg and "declare the parameter ?int64" in msg
    assert "'N * ?int64'" in msg and "dtype object" not in msg
    np.testing.assert_array_equal(k([1, 2]), [2, 3])
    q = lazyk.compile(lazyk.placeholder("xq", "N * ?int64") + 1)
    assert q([1, None]).to_list() == [2, None]


def test_full_that_cannot_be_allocated_names_type_and_bytes():
    with pytest.raises(MemoryError, match=r"type 'var \* float64'.* 8,000,000,000,000,000 "
                                          "bytes"):
        lazyk.full("var * float64", 1.0, lengths=[10**15])
    assert lazyk.full("var * float64", 1.0, lengths=[2]).to_list() == [1.0, 1.0]


def test_cli_explain_without_types_hints_at_type(capsys):
    from lazyk.cli import main

    assert main(["explain", "sin(a) * b"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ExprParseError: name 'a' is not defined (line 1, column 5)")
    assert "\nhint: give each name's type with --type, e.g. lazyk explain 'sin(a) * b' " \
        "--type a='N * float64' --type b='N * float64'\n" in err
    assert main(["explain", "sin(a) * 2", "--type", "a=N * float64", "--no-asm"]) == 0
    assert "%1 = sin(%0) : N * float64" in capsys.readouterr().out
    # an expression that does not parse: one line and a caret, no traceback
    for text, where in (("a +", "column 4"), ("frob(a)", "unknown function frob"),
                        ("a[0]", "column 2")):
        assert main(["explain", text, "--type", "a=N * float64"]) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: ExprParseError: ") and where in err
        assert "Traceback" not in err and "^" in err


def test_cli_parse_prints_no_blank_line_around_an_error(capsys):
    from lazyk.cli import main

    assert main(["parse", "N * flot64"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: unknown type name flot64")
    assert main(["parse", "3 * int8", "bad!", "N * float64"]) == 1
    out, _ = capsys.readouterr()
    assert out.startswith("3 * int8\n") and "\n\nN * float64\n" in out
    assert not out.endswith("\n\n")


# --- notebook display ---------------------------------------------------------------------------

def test_array_html_shows_type_shape_rows_and_missing_values():
    import re

    values = np.arange(40.0).reshape(20, 2)
    text = lazyk.array(values)._repr_html_()
    assert "type <code>20 * 2 * float64</code>, shape <code>(20, 2)</code>" in text
    shown = re.findall(r'<th style="text-align:right">(\d+)</th>.*?<code>\[(.*?)\]</code>', text)
    assert [int(i) for i, _ in shown] == [0, 1, 2, 3, 4, 15, 16, 17, 18, 19]
    for i, row in shown:  # the rows shown are NumPy's rows
        assert [float(v) for v in row.split(", ")] == values[int(i)].tolist()
    assert "... 10 more rows ..." in text
    ragged = lazyk.array([[1.5, None, 3.0], None, []], type="3 * ?var * ?float64")._repr_html_()
    assert "shape <code>(3, var)</code>" in ragged
    missing = '<i style="color:#888">missing</i>'
    assert f"<code>[1.5, {missing}, 3.0]</code>" in ragged  # a missing value
    assert f"<code>{missing}</code>" in ragged and "<code>[]</code>" in ragged  # a missing row
    assert "&lt;b&gt;" in lazyk.array(["<b>"])._repr_html_()  # text is escaped
    assert f"<code>{missing}</code>" in lazyk.array([None], type="1 * ?int8")[0]._repr_html_()


def test_expression_html_shows_short_form_and_type_without_computing():
    x = lazyk.placeholder("x", "N * float64")  # no data: computing it would raise
    text = (lazyk.sqrt(x) < 2)._repr_html_()
    assert "<code>sqrt(x) &lt; 2.0</code>" in text and "type <code>N * bool</code>" in text
    rows = lazyk.array([[1, None], [3]]) + 1
    assert "type <code>2 * var * ?int64</code>" in rows._repr_html_()


def test_python_dash_m_lazyk_is_the_command():
    import subprocess
    import sys
    ok = subprocess.run([sys.executable, "-m", "lazyk", "parse", "3 * var * int32"],
                        capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.startswith("3 * var * int32")
    bad = subprocess.run([sys.executable, "-m", "lazyk", "parse", "int33"],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "^" in bad.stderr


def test_explain_shows_only_its_own_kernels_while_other_threads_run_some():
    import re
    import threading

    stop = threading.Event()
    busy = lazyk.array(np.arange(3.0))
    rows = lazyk.array([[1.0], [2.0, 3.0]])

    def work():
        while not stop.is_set():
            (lazyk.sin(busy) * 2 + 1).eval()
            (rows * 2).sum(axis=-1).eval()
    t = threading.Thread(target=work)
    t.start()
    try:
        x = lazyk.placeholder("x", "N * float64")
        for _ in range(20):
            text = lazyk.explain(lazyk.sin(x) * 2 + 1)
            assert re.findall(r"shape \(\d+,\)", text) == ["shape (8,)"]
            text = lazyk.explain(lazyk.array([[1.0], [2.0, 3.0, 4.0]]).sum(axis=-1))
            assert "== loop-nest kernels: 1 " in text and text.count("== nest ") == 1
    finally:
        stop.set()
        t.join()
