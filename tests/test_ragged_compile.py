"""lazyk.compile over var / option placeholders: values against NumPy / Python, type checks
of the inputs, the signature, pickling and one compile per structure."""
import pickle

import numpy as np
import pytest

import lazyk
from lazyk.errors import BindError, CastingError, NotSupportedError, ShapeError, TypeMatchError
from lazyk.kernel.nest import nest_stats


def ragged(lengths, rng, dtype=np.float64):
    off = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=off[1:])
    content = rng.standard_normal(int(off[-1])).astype(dtype)
    return lazyk.from_offsets(off, content), off, content


def rows(off, content):
    return [content[off[i]:off[i + 1]] for i in range(len(off) - 1)]


def test_signature_and_repr_show_var_and_option_types():
    x = lazyk.placeholder("x", "N * var * ?float64")
    w = lazyk.placeholder("w", "N * float64")
    k = lazyk.compile((x * 2).sum(axis=-1) + w)
    assert k.signature == "(x: N * var * ?float64, w: N * float64) -> N * ?float64"
    assert repr(k) == f"<lazyk.CompiledExpr {k.signature}>"
    assert isinstance(k, lazyk.CompiledExpr)
    assert str(x.type) == "N * var * ?float64"
    assert lazyk.compile(x.sum(axis=-1, skipna=True)).signature == \
        "(x: N * var * ?float64) -> N * float64"


def test_row_sums_match_numpy_for_many_sizes_with_one_compile():
    x = lazyk.placeholder("x", "N * var * float64")
    y = lazyk.placeholder("y", "N * var * float64")
    k = lazyk.compile((x * 2 + y).sum(axis=-1))
    rng = np.random.default_rng(0)
    before = None
    for n in (3, 17, 200, 1000):
        lengths = rng.integers(0, 9, n)
        a, off, ca = ragged(lengths, rng)
        b = lazyk.from_offsets(off, rng.standard_normal(len(ca)))
        cb = b.to_list()
        got = k(a, b)
        want = [sum(2 * p + q for p, q in zip(ra, rb)) for ra, rb in zip(rows(off, ca), cb)]
        assert str(got.type) == f"{n} * float64"
        np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(k(x=a, y=b).to_numpy(), want, rtol=1e-12, atol=1e-12)
        if before is None:
            before = nest_stats["compiles"]  # the first call compiled the kernel
    assert nest_stats["compiles"] == before  # same structure, new sizes: nothing compiled


def test_ragged_results_keepdims_and_elementwise():
    x = lazyk.placeholder("x", "N * var * float64")
    center = lazyk.compile(x - x.mean(axis=-1, keepdims=True))
    double = lazyk.compile(x * 2 + 1)
    assert center.signature == "(x: N * var * float64) -> N * var * float64"
    rng = np.random.default_rng(1)
    for n in (4, 50):
        a, off, c = ragged(rng.integers(0, 6, n), rng)
        got = center(a)
        assert str(got.type) == f"{n} * var * float64"
        for g, r in zip(got.to_list(), rows(off, c)):
            np.testing.assert_allclose(g, r - r.mean() if len(r) else [], atol=1e-12)
        assert double(a).to_list() == [(r * 2 + 1).tolist() for r in rows(off, c)]
    before = lazyk.stats()["compiles"]
    a, off, c = ragged(rng.integers(0, 6, 33), rng)
    double(a)
    center(a)
    assert lazyk.stats()["compiles"] == before  # new data of the same types: cached


def test_options_skipna_and_lists():
    z = lazyk.placeholder("z", "N * var * ?float64")
    k = lazyk.compile(z.sum(axis=-1, skipna=True))
    k_missing = lazyk.compile(z.sum(axis=-1))
    data = [[1.5, None, 2.0], [], [None], [4.0]]
    a = lazyk.array(data)
    assert k(a).to_list() == [3.5, 0.0, 0.0, 4.0]
    assert k(data).to_list() == [3.5, 0.0, 0.0, 4.0]  # nested lists are typed by lazyk.array
    assert k_missing(a).to_list() == [None, 0.0, None, 4.0]
    m = lazyk.placeholder("m", "N * ?int64")
    assert lazyk.compile(m * 2)(lazyk.array([1, None, 3])).to_list() == [2, None, 6]


def test_data_without_missing_values_fills_a_parameter_with_a_fixed_dim_of_size_0():
    # (it raised ArrayConstructionError "0 elements do not split into rows of 0")
    k = lazyk.compile(lazyk.placeholder("x", "N * 0 * 3 * ?uint32") + 1)
    for data in (np.zeros((2, 0, 3), np.uint32), lazyk.array(np.zeros((2, 0, 3), np.uint32))):
        got = k(data)
        assert str(got.type) == "2 * 0 * 3 * ?uint32" and got.to_list() == [[], []]
    got = lazyk.compile(lazyk.placeholder("y", "N * 3 * 0 * ?float64").sum(axis=2))(
        np.zeros((2, 3, 0)))
    assert str(got.type) == "2 * 3 * ?float64" and got.to_list() == [[0.0] * 3] * 2


def test_mixed_fixed_and_var_parameters_and_data_leaves():
    x = lazyk.placeholder("x", "N * var * float64")
    w = lazyk.placeholder("w", "N * float64")
    k = lazyk.compile(x.sum(axis=-1) * w)
    a = lazyk.array([[1.0, 2.0], [], [3.0]])
    np.testing.assert_array_equal(k(a, np.array([1.0, 2.0, 3.0])).to_numpy(), [3.0, 0.0, 9.0])
    # a concrete ragged array in the expression is a constant, as for fixed data
    d = lazyk.compile(lazyk.array([[1.0], [2.0, 5.0]]) * lazyk.placeholder("s", "float64"))
    assert d.signature == "(s: float64) -> 2 * var * float64"
    assert d(2.0).to_list() == [[2.0], [4.0, 10.0]]
    d2 = pickle.loads(pickle.dumps(d))  # the constant travels with it
    assert d2.signature == d.signature
    assert d2(3.0).to_list() == [[3.0], [6.0, 15.0]]


def test_input_dtype_converts_under_casting():
    x = lazyk.placeholder("x", "N * var * float64")
    k = lazyk.compile(x.sum(axis=-1))
    ints = lazyk.array([[1, 2], [3]], type="2 * var * int32")
    got = k(ints)
    assert got.to_list() == [3.0, 3.0] and got.to_numpy().dtype == np.float64
    i = lazyk.placeholder("i", "N * var * int32")
    with pytest.raises(CastingError, match=r"input 'i': expected N \* var \* int32, got "
                                           r"2 \* var \* float64"):
        lazyk.compile(i * 2)(lazyk.array([[1.0], [2.0]], type="2 * var * float64"))
    f = lazyk.array([[1.0], [2.5, 3.0]])
    assert lazyk.compile(i * 2)(f, casting="unsafe").to_list() == [[2], [4, 6]]


@pytest.mark.parametrize("param, data", [
    ("N * var * float64", [[1, 2], [], [3]]),
    ("N * ?var * ?float32", [[0.1, None], None, [3.0]]),
    ("N * var * ?var * int8", [[[1], None, []], [], [[2, -3]]]),
])
def test_row_operations_give_the_parameters_dtype(param, data):
    """Row operations that move values (firsts, flatten, pad_none, a row mask, the take-back
    at argmax(keepdims=True)) convert inputs of another dtype to the parameter's, as the
    signature says and arithmetic does."""
    x = lazyk.placeholder("x", param)
    dtype = np.dtype(param.split("* ")[-1].lstrip("?"))
    arr = lazyk.array(data)
    same = lazyk.array(data, type=param.replace("N", str(len(data))))
    for f in (lazyk.firsts, lazyk.flatten, lambda v: lazyk.pad_none(v, 2),
              lambda v: v[lazyk.num(v, axis=1) > 0],
              lambda v: v[lazyk.argmax(v, axis=-1, keepdims=True)]):
        k = lazyk.compile(f(x))
        got = k(arr)
        assert str(got.type).split(" * ")[-1].lstrip("?") == str(dtype)
        assert str(got.type).split(" * ")[1:] == k.signature.split("-> ")[1].split(" * ")[1:]
        assert got.to_list() == k(same).to_list() == f(same).eval().to_list()


@pytest.mark.parametrize("bad, error, match", [
    # fixed rows are var rows of one length: then the rows must line up
    (np.ones((3, 2)), ShapeError, r"row 2: operand (0 has length 2 and operand 1 has length 0|"
     r"1 has length 0 and operand 0 has length 2)"),
    (lambda: lazyk.array([[1.0, None], [2.0], []]), TypeMatchError, r"missing values \(\?T\)"),
    (lambda: lazyk.from_offsets(np.array([0, 1, 2, 2]),
                                lazyk.array([[1.0], [2.0]], type="2 * var * float64")),
     TypeMatchError, r"got 3 \* var \* var \* float64 \(3 dimensions, not 2\)"),
    (lambda: lazyk.array([[1.0], [2.0]], type="2 * var * float64"), ShapeError, r"dimension N is 2 in 'x'.* 3 in 'y'"),
    (lambda: lazyk.from_offsets(np.array([0, 1, 2, 3]), np.array(["a", "b", "c"])),
     TypeMatchError, "numeric elements only"),
    ("text", TypeError, "inputs must be lazyk arrays"),
])
def test_mismatched_inputs_name_the_parameter_and_both_types(bad, error, match):
    x = lazyk.placeholder("x", "N * var * float64")
    y = lazyk.placeholder("y", "N * var * float64")
    k = lazyk.compile(x + y)
    bad = bad() if callable(bad) else bad
    with pytest.raises(error, match=match):
        k(bad, lazyk.array([[1.0], [2.0, 3.0], []]))


def test_wrong_number_and_names_of_inputs():
    x = lazyk.placeholder("x", "N * var * float64")
    k = lazyk.compile(x * 2)
    with pytest.raises(TypeError, match="expected 1 inputs"):
        k()
    with pytest.raises(TypeError, match="unexpected keyword"):
        k(y=lazyk.array([[1.0]]))
    with pytest.raises(BindError, match="lazyk array of the result's type"):
        k.bind(None, lazyk.array([[1.0]]))  # bind: tests/test_ragged_bind.py


def test_placeholder_types_still_refused():
    for text, what in [("N * var * fixed_bytes[4]", "element type fixed_bytes"),
                       ("... * float64", "ellipsis")]:
        with pytest.raises(NotSupportedError, match=what):
            lazyk.placeholder("x", text)
    x = lazyk.placeholder("x", "N * var * float64")
    with pytest.raises(lazyk.BindError, match="has no data"):
        (x * 2).eval()


def test_pickle_explain_and_cli_explain(capsys):
    x = lazyk.placeholder("x", "N * var * ?float64")
    w = lazyk.placeholder("w", "N * float64")
    k = lazyk.compile((x * 2).sum(axis=-1) + w)
    k2 = pickle.loads(pickle.dumps(k))
    assert k2.signature == k.signature
    a = lazyk.array([[1.0, None], [], [3.0]])
    assert k2(a, np.ones(3)).to_list() == k(a, np.ones(3)).to_list() == [None, 1.0, 7.0]
    text = k.explain()
    assert "loop-nest kernels" in text and "input 0 (?T): strided, var rows" in text
    from lazyk.cli import main
    assert main(["explain", "x * 2",
                 "--type", "x=N * var * float64", "--no-asm"]) == 0
    assert "ragged expression" in capsys.readouterr().out


def test_compiled_calls_from_several_threads_agree():
    from concurrent.futures import ThreadPoolExecutor

    x = lazyk.placeholder("x", "N * var * ?float64")
    k = lazyk.compile((x * 2 + 1).sum(axis=-1, skipna=True))
    rng = np.random.default_rng(5)
    cases = []
    for n in range(8):
        rows_ = [[None if rng.random() < 0.2 else float(v) for v in rng.integers(0, 9, m)]
                 for m in rng.integers(0, 6, 20 + n)]
        want = [sum(2 * v + 1 for v in r if v is not None) for r in rows_]
        cases.append((lazyk.array(rows_, type=f"{len(rows_)} * var * ?float64"), want))

    def run(case):
        a, want = case
        return all(k(a).to_list() == want for _ in range(10))

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(run, cases * 2))


def test_initial_folds_into_each_row_of_a_parameter():
    """`initial=` over a var parameter is folded into every row, as over data: an empty
    row gives `initial`, not a zero-size error."""
    x = lazyk.placeholder("x", "N * var * float64")
    k = lazyk.compile(x.max(axis=-1, initial=0.0))
    a = lazyk.from_offsets(np.array([0, 2, 2, 3]), np.array([1.0, -3.0, -2.0]))
    got = k(a)
    assert got.to_list() == [1.0, 0.0, 0.0] == a.max(axis=-1, initial=0.0).eval().to_list()
    assert str(got.type) == "3 * float64"


def test_signature_keeps_missing_values_of_either_operand():
    # missing rows from one parameter, missing values from the other: both in the result
    x = lazyk.placeholder("x", "3 * ?var * float64")
    y = lazyk.placeholder("y", "3 * var * ?float64")
    k = lazyk.compile(x + y)
    assert k.signature.endswith("-> 3 * ?var * ?float64")
    got = k(lazyk.array([[1.0], None, [2.0, 3.0]], type="3 * ?var * float64"),
            lazyk.array([[1.0], [None], [2.0, None]], type="3 * var * ?float64"))
    assert str(got.type) == "3 * ?var * ?float64"
    assert got.to_list() == [[2.0], None, [4.0, None]]


def test_stats_count_the_loop_nest_kernels():
    x = lazyk.array([[1.0], [2.0, 3.0]])
    e = lazyk.arctan2(x, x * 0.5 + 7.0)

    def total(s):
        return s["compiles"] + s["disk_loads"] + s["cache_hits"]
    before = lazyk.stats()
    e.eval()
    first = lazyk.stats()
    e.eval()
    again = lazyk.stats()
    assert total(first) > total(before)  # compiled, loaded from disk or found in memory
    assert again["cache_hits"] >= first["cache_hits"]  # (a prepared call looks up none)
    assert (again["compiles"], again["disk_loads"]) == (first["compiles"], first["disk_loads"])


@pytest.mark.parametrize("t", ["N * var * float64", "N * ?var * ?float64",
                               "N * 3 * var * int32"])
def test_an_empty_list_is_no_rows_of_the_parameter_type(t):
    q = lazyk.placeholder("q", t)
    got = lazyk.compile(q * 2)([])
    assert str(got.type) == "0 * " + t[4:] and got.to_list() == []
    total = lazyk.compile(q.sum(axis=-1))([])
    assert len(total) == 0 and str(total.type).startswith("0 * ")


def test_a_new_axis_on_a_fold_of_placeholders_is_its_keepdims_form():
    # `mean(p, axis=1)[:, None]` (a per-row value meeting the row's items): the new axis
    # lies where the folded one was, so no placeholder needs one
    p = lazyk.placeholder("x", "N * var * float64")
    rows = [[1.0, 4.0, 2.0], [], [3.0, 5.0]]
    x = lazyk.array(rows)
    f = lazyk.compile(p[p > lazyk.mean(p, axis=1)[:, None]])
    assert f(x).to_list() == [[4.0], [], [5.0]]
    g = lazyk.compile(p - lazyk.max(p, axis=1)[:, None])
    assert g(lazyk.array([[1.0, 4.0], [2.0]])).to_list() == [[-3.0, 0.0], [0.0]]
    d = lazyk.placeholder("d", "N * M * float64")
    h = lazyk.compile(d - d.mean(axis=1)[:, None])
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(h(a), a - a.mean(axis=1)[:, None])


def test_new_axes_on_placeholders_are_views_of_each_calls_arrays():
    p = lazyk.placeholder("x", "N * var * float64")
    w = lazyk.placeholder("w", "N * var * float64")
    x = lazyk.array([[1.0, 2.0], [], [3.0]])
    y = lazyk.array([[10.0], [1.0], [5.0, 6.0]])
    f = lazyk.compile(p[:, :, None] * p[:, None, :])
    assert f(x).to_list() == (x[:, :, None] * x[:, None, :]).eval().to_list()
    c = lazyk.cartesian({"a": p, "b": w}, nested=True)
    g = lazyk.compile(lazyk.sum(lazyk.sum(c["a"] - c["b"], axis=2), axis=1))
    assert g(x, y).tolist() == [-17.0, 0.0, -5.0]
    d = lazyk.placeholder("d", "N * float64")
    a = np.arange(3.0)
    np.testing.assert_array_equal(lazyk.compile(d[:, None] * d[None, :])(a), np.outer(a, a))
    q = lazyk.placeholder("q", "N * ?var * ?float64")
    z = lazyk.array([[1.0, None], None, []], type="3 * ?var * ?float64")
    got = lazyk.compile(q[:, :, None] + 1)(z)
    assert got.to_list() == [[[2.0], [None]], None, []]
    assert str(got.type) == "3 * ?var * 1 * ?float64"


def test_lists_holding_only_missing_values_take_the_parameter_type():
    """Python lists whose values are all None (no number to infer a dtype from) are read
    in the parameter's type, as `lazyk.array(x, type=...)` reads them."""
    x = lazyk.placeholder("x", "N * ?var * ?int32")
    k = lazyk.compile(x * 2)
    got = k([[None], None, [None, None]])
    assert str(got.type) == "3 * ?var * ?int32"
    assert got.to_list() == [[None], None, [None, None]]
    assert k([[None], None, [3, None]]).to_list() == [[None], None, [6, None]]
    with pytest.raises(lazyk.CastingError, match="cannot cast float64 to int32"):
        k([[1.5], None])


def test_a_selection_of_whole_rows_gives_the_parameters_dtype():
    # the kept rows are taken from the input as given, then read as the parameter's dtype
    i = lazyk.placeholder("i", "N * var * int64")
    got = lazyk.compile(i[lazyk.sum(i, axis=1) > 2])([[1.7, 2.2], [0.5]], casting="unsafe")
    assert str(got.type) == "1 * var * int64" and got.to_list() == [[1, 2]]
    x = lazyk.placeholder("x", "N * var * float32")
    e = lazyk.placeholder("e", "N * float64")
    got = lazyk.compile(x[e > 0] * 1)([[0.1, 2.7], [1.3]], [1.0, -1.0])
    want = lazyk.array([[0.1, 2.7], [1.3]], "2 * var * float32")[np.array([True, False])]
    assert str(got.type) == "1 * var * float32" and got.to_list() == want.eval().to_list()
    q = lazyk.placeholder("q", "N * 2 * int8")
    m = lazyk.placeholder("m", "N * ?bool")
    got = lazyk.compile(q[m])(np.array([[300, 1], [2, 3]]), [True, None], casting="unsafe")
    assert got.to_list() == [[44, 1], None] and "int8" in str(got.type)


def test_integers_that_do_not_fit_are_refused_on_every_call_and_only_in_the_rows():
    r = lazyk.placeholder("r", "N * var * int8")
    f = lazyk.compile(lazyk.sum(r, axis=1))
    assert f(lazyk.array([[1, 2], [3]])).to_list() == [3, 3]
    for _ in range(2):  # (a call over arrays of a type seen before checks them too)
        with pytest.raises(lazyk.CastingError, match="300"):
            f(lazyk.array([[1, 2], [300]]))
    g = lazyk.compile(lazyk.sum(lazyk.placeholder("r", "N * var * int16"), axis=1))
    assert g(lazyk.array([[1, 40000], [], [3]])[1:]).to_list() == [0, 3]  # (not in the view)


def test_bound_arg_reductions_over_one_fixed_dim():
    for dt in (np.float64, np.int32):
        a = lazyk.placeholder("a", f"N * {np.dtype(dt)}")
        v = np.array([3, 1, 2, 5], dt)
        for fn, want in ((lazyk.argmin, 1), (lazyk.argmax, 3)):
            assert lazyk.compile(fn(a)).bind(np.zeros((), np.int64), v)() == want


def test_a_bound_min_or_max_that_meets_an_empty_row_leaves_out_as_it_was():
    p = lazyk.placeholder("p", "N * var * float64")
    for fold in ("max", "min"):
        k = lazyk.compile(getattr(p, fold)(axis=1))
        out = np.full(4, -1.0)
        with pytest.raises(ValueError, match="zero-size row 2"):
            k.bind(out, lazyk.array([[1.0, 2.0], [3.0], [], [4.0]]))()
        assert out.tolist() == [-1.0] * 4
        k.bind(out, lazyk.array([[1.0, 2.0], [3.0], [7.0], [4.0]]))()
        assert out.tolist() == ([2.0, 3.0, 7.0, 4.0] if fold == "max" else [1.0, 3.0, 7.0, 4.0])
