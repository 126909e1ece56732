"""Values, errors, thread settings and CLI details a first-time user runs into: `initial=`
out of the dtype's range, pandas object columns and pandas on the left of an operator,
thread-local `lazyk.threads`, argument checks, bind keywords, cache-directory warnings."""
import re

import numpy as np
import pytest

import lazyk

A8 = np.array([1, 2], np.int8)


def _pd():
    return pytest.importorskip("pandas")


# ---------------------------------------------------------------- initial= in range
@pytest.mark.parametrize("data, op, initial", [
    (A8, "max", 200), (A8, "min", -129), (np.array([5], np.uint64), "max", -1),
    (np.array([5], np.int64), "min", 2**63), (np.array([1, 2], np.int64), "max", 1e30),
    (A8, "max", 300.0), (A8, "max", np.int64(200)), (A8, "max", float("inf"))])
def test_initial_out_of_range_raises_like_numpy(data, op, initial):
    with pytest.raises(OverflowError):
        getattr(np, op)(data, initial=initial)
    with pytest.raises(OverflowError, match=re.escape(f"initial={initial!r}") + f".*{data.dtype}"):
        getattr(lazyk.array(data), op)(initial=initial)


def test_initial_out_of_range_ragged_and_compiled():
    rows = lazyk.from_offsets(np.array([0, 2, 2]), A8)
    with pytest.raises(OverflowError, match="initial=300.*int8"):
        rows.max(axis=-1, initial=300)
    p = lazyk.placeholder("x", "N * int8")
    with pytest.raises(OverflowError, match="initial=200.*int8"):
        lazyk.compile(p.max(initial=200))
    q = lazyk.placeholder("r", "N * var * int8")
    with pytest.raises(OverflowError, match="initial=-200.*int8"):
        lazyk.compile(q.min(axis=-1, initial=-200))


@pytest.mark.parametrize("data, op, initial", [
    (A8, "max", 127), (A8, "min", -128), (A8, "max", 2.5), (A8, "max", -1.5),
    (np.array([5], np.uint64), "max", 2**64 - 1), (np.arange(3.), "max", 1e300),
    (np.array([], np.int8), "max", 100), (np.array([3, 4], np.int16), "min", np.int8(-3))])
def test_initial_in_range_equals_numpy(data, op, initial):
    want = getattr(np, op)(data, initial=initial)
    got = getattr(lazyk.array(data), op)(initial=initial).eval().to_numpy()
    assert got.dtype == want.dtype and got.shape == () and got == want
    rows = lazyk.from_offsets(np.array([0, len(data), len(data)]), data)
    empty = getattr(np, op)(data[:0], initial=initial)
    got = getattr(rows, op)(axis=-1, initial=initial).eval()
    assert str(got.type) == f"2 * {data.dtype}"
    assert got.to_list() == [want.item(), empty.item()]


@pytest.mark.parametrize("dtype", [np.float64, np.int16])
def test_initial_over_a_placeholder_dim_empty_at_run_time(dtype):
    p = lazyk.placeholder("x", f"N * M * {np.dtype(dtype).name}")
    fns = {"max": lazyk.compile(lazyk.max(p, initial=5)),
           "max+1": lazyk.compile(lazyk.max(p + 1, axis=1, initial=5) + 1),
           "min*2": lazyk.compile(lazyk.min(p, axis=0, initial=-3) * 2)}
    refs = {"max": lambda a: np.max(a, initial=5),
            "max+1": lambda a: np.max(a + 1, axis=1, initial=5) + 1,
            "min*2": lambda a: np.min(a, axis=0, initial=-3) * 2}
    for shape in [(0, 3), (3, 0), (0, 0), (2, 3)]:
        a = np.arange(np.prod(shape), dtype=dtype).reshape(shape) - 2
        for name, f in fns.items():
            want, got = refs[name](a), np.asarray(f(a))
            assert got.shape == want.shape and got.dtype == want.dtype, (name, shape)
            np.testing.assert_array_equal(got, want, err_msg=f"{name} {shape}")


def test_initial_refuses_complex_for_integers():
    with pytest.raises(TypeError, match="initial"):
        lazyk.array(A8).max(initial=1j)


@pytest.mark.parametrize("lo, hi", [(0, 300), (-300, 5), (-1000, 1000), (-300, -200),
                                    (200, 300)])
def test_clip_scalar_beyond_the_dtype_as_numpy(lo, hi):
    # NumPy drops a bound beyond the range on the side where it cannot clip anything
    try:
        want = np.clip(A8, lo, hi)
    except OverflowError as err:
        with pytest.raises(OverflowError, match=str(err)):
            lazyk.clip(lazyk.array(A8), lo, hi)
        return
    got = np.asarray(lazyk.clip(lazyk.array(A8), lo, hi))
    assert got.dtype == want.dtype and got.tolist() == want.tolist()
    u8 = np.array([1, 5, 250], np.uint8)
    assert np.asarray(lazyk.clip(u8 + lazyk.array(u8) * 0, -1, 3)).tolist() == \
        np.clip(u8, -1, 3).tolist()


# ---------------------------------------------------------------- pandas
def test_pandas_object_columns_read_as_python_values():
    pd = _pd()
    s = lazyk.array(pd.Series(["a", "b"], dtype=object))
    assert str(s.type) == "2 * string" and s.to_list() == ["a", "b"]
    s = lazyk.array(pd.Series(["a", None], dtype=object))
    assert str(s.type) == "2 * ?string" and s.to_list() == ["a", None]
    v = lazyk.array(pd.Series([[1.0], [2.0, 3.0]]))
    assert v.type == lazyk.array([[1.0], [2.0, 3.0]]).type
    assert v.to_list() == [[1.0], [2.0, 3.0]]
    eq = lazyk.array(["a", "b"]) == pd.Series(["a", "c"], dtype=object)
    assert eq.eval().to_list() == [True, False]


def test_compiled_calls_take_pandas_object_columns():
    pd = _pd()
    k = lazyk.compile(lazyk.placeholder("x", "N * var * float64").sum(axis=-1))
    assert k(pd.Series([[1.0], [2.0, 3.0]])).to_list() == [1.0, 5.0]
    k = lazyk.compile(lazyk.placeholder("s", "N * string") == "a")
    np.testing.assert_array_equal(k(pd.Series(["a", "b"], dtype=object)), [True, False])


@pytest.mark.parametrize("op", ["add", "sub", "mul", "eq", "lt"])
def test_pandas_on_the_left_builds_an_expression(op):
    pd = _pd()
    import operator
    f = getattr(operator, op)
    x, y = np.arange(3.), np.array([2.0, 1.0, 0.0])
    for left in (pd.Series(x), pd.Index(x)):
        e = f(left, lazyk.array(y))
        assert isinstance(e, lazyk.Expr)
        got = e.eval().to_numpy()
        want = f(x, y)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- threads(n) per Python thread
def test_threads_blocks_in_two_python_threads_do_not_interfere():
    import threading

    from lazyk.backend import threads as pool

    before = lazyk.get_num_threads()
    a_in, b_in, a_done = threading.Event(), threading.Event(), threading.Event()
    seen, errors = {}, []
    x = np.linspace(0, 1, 400_000)
    k = lazyk.compile(lazyk.sin(lazyk.placeholder("x", "N * float64")) * 2)

    def run(name, n, mine, other):
        try:
            with lazyk.threads(n):
                mine.set()
                assert other.wait(10)
                seen[name] = (lazyk.get_num_threads(), pool.parts_for(10**8))
                np.testing.assert_allclose(k(x), np.sin(x) * 2, rtol=1e-15)
                if name == "A":
                    a_done.set()
                else:  # B leaves last
                    assert a_done.wait(10)
            seen[name + " after"] = lazyk.get_num_threads()
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    ta = threading.Thread(target=run, args=("A", 1, a_in, b_in))
    tb = threading.Thread(target=run, args=("B", 3, b_in, a_in))
    ta.start(), tb.start(), ta.join(10), tb.join(10)
    assert not errors, errors
    assert seen["A"] == (1, 1) and seen["B"] == (3, 3)
    assert seen["A after"] == seen["B after"] == before == lazyk.get_num_threads()
    np.testing.assert_allclose(k(x), np.sin(x) * 2, rtol=1e-15)


def test_threads_blocks_nest_and_restore_exactly():
    before = lazyk.get_num_threads()
    with lazyk.threads(1):
        with lazyk.threads(2):
            assert lazyk.get_num_threads() == 2
        assert lazyk.get_num_threads() == 1
    assert lazyk.get_num_threads() == before


# ---------------------------------------------------------------- errors that name the mistake
def test_from_offsets_names_object_content():
    with pytest.raises(TypeError, match="object-dtype NumPy array"):
        lazyk.from_offsets(np.array([0, 1, 2]), np.array([1, "a"], dtype=object))


def test_out_of_var_type_is_named_out():
    p = lazyk.placeholder("p", "N * float64")
    ragged_out = lazyk.array([[1.0], [2.0, 3.0], [4.0]])
    with pytest.raises(lazyk.NotSupportedError, match=r"out= of type '3 \* var \* float64'"):
        lazyk.compile(p * 2)(np.arange(4.0), out=ragged_out)
    with pytest.raises(lazyk.NotSupportedError, match="out="):
        lazyk.compile(p * 2).bind(ragged_out, np.arange(4.0))
    with pytest.raises(lazyk.TypeMatchError,  # an input: both types named
                       match=r"expected N \* float64, got 3 \* var \* float64"):
        lazyk.compile(p * 2)(ragged_out)


def test_empty_takes_lengths_of_optional_rows():
    for f in (lazyk.empty, lazyk.zeros):
        a = f("2 * ?var * float64", lengths=[1, 2])
        assert str(a.type) == "2 * ?var * float64" and a.to_list() == [[0.0], [0.0, 0.0]]
    assert lazyk.empty("2 * ?var * ?int32", lengths=[2, 0]).to_list() == [[None, None], []]
    assert lazyk.empty("2 * ?var * float64").to_list() == [None, None]
    assert lazyk.empty("2 * ?int8").to_list() == [None, None]


@pytest.mark.parametrize("validity", [np.array([1.0, 0.5]), np.array([1, 2]), ["yes", ""]])
def test_validity_must_be_bool_or_0_1(validity):
    with pytest.raises(lazyk.ArrayConstructionError, match="validity takes bool"):
        lazyk.from_offsets(np.array([0, 1, 2]), np.arange(2.0), validity=validity)


def test_validity_of_integers_0_1():
    x = lazyk.from_offsets(np.array([0, 1, 2]), np.arange(2.0), validity=np.array([1, 0]))
    assert x.to_list() == [[0.0], None]


@pytest.mark.parametrize("kw", [{"skipna": "yes"}, {"keepdims": 1}, {"skipnan": None},
                                {"keepdims": "no"}])
def test_reduction_flags_must_be_bools(kw):
    for x in (lazyk.array([1.0, 2.0]), lazyk.array([[1.0], [2.0, None]])):
        with pytest.raises(TypeError, match=f"{next(iter(kw))} must be True or False"):
            x.sum(**kw)
    assert lazyk.array([1.0, 2.0]).sum(keepdims=np.True_).eval().to_list() == [3.0]


# ---------------------------------------------------------------- bind: names, casting, result
def test_bind_takes_names_and_returns_out():
    x, y = lazyk.placeholder("x", "N * float64"), lazyk.placeholder("y", "N * float64")
    k = lazyk.compile(x * 2 + y)
    o = np.empty(4)
    ck = k.bind(o, y=np.ones(4), x=np.arange(4.0))
    assert ck() is o
    np.testing.assert_array_equal(o, np.arange(4.0) * 2 + 1)
    lo = lazyk.array(np.empty(4))
    assert k.bind(lo, np.arange(4.0), y=np.ones(4))() is lo
    np.testing.assert_array_equal(lo.to_numpy(), np.arange(4.0) * 2 + 1)
    r = lazyk.placeholder("r", "N * var * float64")
    kr = lazyk.compile(r * 2)
    a = lazyk.from_offsets(np.array([0, 2, 3]), np.arange(3.0))
    out = lazyk.from_offsets(np.array([0, 2, 3]), np.empty(3))
    b = kr.bind(out, r=a)
    assert b() is out and out.to_list() == [[0.0, 2.0], [4.0]]


def test_bind_refusing_casts_says_how():
    k = lazyk.compile(lazyk.placeholder("x", "N * float64") * 2)
    with pytest.raises(lazyk.CastingError, match="bind.. converts no input") as err:
        k.bind(np.empty(4), np.arange(4))
    assert "casting='unsafe'" not in str(err.value)
    with pytest.raises(TypeError, match="bind.. takes no casting="):
        k.bind(np.empty(4), np.arange(4), casting="unsafe")


# ---------------------------------------------------------------- expression strings, CLI
def test_string_reductions_take_keywords():
    a = np.arange(6.0).reshape(2, 3)
    got = lazyk.evaluate("mean(a, axis=-1, keepdims=True)")
    want = a.mean(axis=-1, keepdims=True)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(lazyk.evaluate("max(a, 1, initial=4)"),
                                  np.max(a, 1, initial=4))
    np.testing.assert_array_equal(lazyk.evaluate("min(a, initial=-1)"), np.min(a, initial=-1))
    r = lazyk.array([[1.0, None], [2.0]])
    got = lazyk.evaluate("sum(r, axis=-1, skipna=True)", local_dict={"r": r})
    assert got.to_list() == [1.0, 2.0]
    with pytest.raises(OverflowError, match="initial=300"):
        lazyk.evaluate("max(b, initial=300)", local_dict={"b": A8})


def _cli(*args, **env):
    import os
    import subprocess
    import sys
    full = dict(os.environ, **env)
    code = "import sys; from lazyk.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, timeout=120, env=full)


def test_cli_explain_takes_reduction_keywords():
    r = _cli("explain", "mean(x, axis=-1, keepdims=True)", "--type", "x=N * 3 * float64",
             "--no-ir", "--no-asm")
    assert r.returncode == 0, r.stderr
    assert "mean axes=[1] keepdims=True skipna=False : N * 1 * float64" in r.stdout


def test_cli_exits_quietly_on_a_closed_stdout():
    import os
    import subprocess
    import sys
    read, write = os.pipe()
    os.close(read)  # nobody reads: the first write fails with EPIPE
    code = "import sys; from lazyk.cli import main; sys.exit(main(sys.argv[1:]))"
    try:
        r = subprocess.run([sys.executable, "-c", code, "cache", "info"], stdout=write,
                           stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert r.returncode == 141 and "Traceback" not in r.stderr and r.stderr == ""


def test_cache_dir_that_is_a_file_warns_once(tmp_path):
    path = tmp_path / "not-a-dir"
    path.write_text("")
    code = ("import warnings, numpy as np, lazyk\n"
            "warnings.simplefilter('always')\n"
            "for f in (lazyk.sin, lazyk.cos):\n"
            "    x = lazyk.placeholder('x', 'N * float64')\n"
            "    k = lazyk.compile(f(x) * 3.0625 + 0.6875)\n"
            "    assert np.allclose(k(np.arange(3.0)), f(np.arange(3.0)).eval().to_numpy()"
            " * 3.0625 + 0.6875)\n")
    import os
    import subprocess
    import sys
    env = dict(os.environ, LAZYK_CACHE_DIR=str(path))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("kernel cache directory") == 1, r.stderr
    assert "is not a directory" in r.stderr
    info = _cli("cache", "info", LAZYK_CACHE_DIR=str(path))
    assert info.returncode == 0, info.stderr
    assert "unusable" in info.stdout and "not a directory" in info.stdout


def test_indexing_an_expression_says_to_evaluate_first():
    a = np.arange(10.0)
    e = lazyk.array(a) * 2
    with pytest.raises(TypeError, match=r"evaluate it first, e.g. expr.eval\(\)\[3\]"):
        e[3]
    np.testing.assert_array_equal(e.eval()[3:7].to_numpy(), (a * 2)[3:7])
    np.testing.assert_array_equal(np.asarray(e[3:7].eval()), (a * 2)[3:7])  # (lazily too)


def test_initial_out_of_range_on_dask():
    da = pytest.importorskip("dask.array")
    import lazyk.dask as ldask
    x = da.from_array(np.array([1, 2, 3, 4], np.int8), chunks=2)
    with pytest.raises(OverflowError, match="initial=200.*int8"):
        lazyk.max(x, initial=200)
    got = np.asarray(ldask.evaluate(lazyk.max(x, initial=100)).compute())
    assert got.dtype == np.int8 and got == 100


def test_out_that_cannot_hold_missing_values_is_named_with_its_type():
    """A result that may be missing into a lazyk `out=` without `?`: the message names
    out's type and the result's and says why (the values may be missing)."""
    x = lazyk.array([1.0, None, 2.0])
    with pytest.raises(lazyk.NotSupportedError,
                       match=r"out= of type '3 \* float64' for a '3 \* \?float64' result "
                             r"\(its values may be missing"):
        lazyk.evaluate(x * 2, out=lazyk.array([0.0, 0.0, 0.0]))
    with pytest.raises(lazyk.NotSupportedError, match=r"float64 array\[3\]"):
        lazyk.evaluate(x * 2, out=np.zeros(3))
