"""Compiled expressions check inputs against their signature on every path (QA defects 2, 5, 6)."""
import ctypes

import numpy as np
import pytest

import lazyk


def test_symbol_used_twice_in_one_parameter_is_checked_on_every_path():
    k = lazyk.compile(lazyk.placeholder("p", "N * N * float64") * 2)
    assert k(np.ones((2, 2))).tolist() == [[2.0, 2.0], [2.0, 2.0]]
    for x in (np.ones((2, 3)), np.ones((2, 3), ">f8")):  # fast path and slow path alike
        with pytest.raises(lazyk.ShapeError, match=r"dimension N is 2 .* but 3"):
            k(x)


def test_fixed_sizes_are_checked():
    k = lazyk.compile(lazyk.placeholder("m", "N * 3 * float32") * 2)
    assert k(np.ones((2, 3), "f4")).shape == (2, 3)
    with pytest.raises(lazyk.ShapeError, match=r"'m': axis 1 has size 4, the signature says 3"):
        k(np.ones((2, 4), "f4"))
    c = lazyk.compile(lazyk.array(np.ones(3)) * lazyk.placeholder("s", "N * float64"))
    assert c.signature == "(s: N * float64) -> 3 * float64"  # the captured array: a constant
    with pytest.raises(lazyk.ShapeError, match=r"shapes \(3,\) and \(5,\) do not broadcast"):
        c(np.ones(5))


def test_repeated_calls_still_check_after_a_valid_call():
    k = lazyk.compile(lazyk.placeholder("a", "N * float64") + lazyk.placeholder("b", "N * float64"))
    x = np.arange(4.0)
    for _ in range(3):
        np.testing.assert_array_equal(k(x, x), 2 * x)
    with pytest.raises(lazyk.ShapeError):
        k(x, np.arange(5.0))


def test_list_inputs_are_arrays_and_bad_inputs_name_inputs():
    k = lazyk.compile(lazyk.placeholder("a", "N * float64") + 1)
    np.testing.assert_array_equal(k([1.0, 2.0]), [2.0, 3.0])
    with pytest.raises(TypeError, match="inputs must be"):
        k(object())


def test_bind_then_execute_through_the_prefix():
    k = lazyk.compile(2 * lazyk.placeholder("a", "N * float64") + lazyk.placeholder("b", "N * float64"))
    a, b, out = np.arange(6.0), np.ones(6), np.zeros(6)
    with k.bind(out, a, b) as ck:
        assert isinstance(ck.address, int) and ck.address != 0
        # the prefix's first field is the single-request function pointer
        assert ctypes.c_void_p.from_address(ck.address).value
        ck()
    np.testing.assert_array_equal(out, 2 * a + b)


@pytest.mark.parametrize("build, ref, out", [
    (lambda m: m.sum(axis=1), lambda a: a.sum(axis=1), np.empty(2)),
    (lambda m: lazyk.mean(m, axis=0), lambda a: a.mean(axis=0), np.empty(3)),
    (lambda m: lazyk.sum(m * 2), lambda a: (a * 2).sum(), np.empty(())),
    (lambda m: lazyk.argmax(m, axis=1), lambda a: a.argmax(axis=1), np.empty(2, np.int64)),
    (lambda m: lazyk.std(m, axis=1), lambda a: a.std(axis=1), np.empty(2)),
    (lambda m: m - m.sum(), lambda a: a - a.sum(), np.empty((2, 3))),
    (lambda m: m - lazyk.mean(m, axis=1, keepdims=True),
     lambda a: a - a.mean(axis=1, keepdims=True), np.empty((2, 3))),
])
def test_bind_reductions_and_several_steps(build, ref, out):
    k = lazyk.compile(build(lazyk.placeholder("m", "M * N * float64")))
    a = np.arange(6.0).reshape(2, 3)
    ck = k.bind(out, a)
    assert ck() is out
    np.testing.assert_allclose(out, ref(a))
    a[0, 0] += 10  # the bound call reads the very array bound
    ck()
    np.testing.assert_allclose(out, ref(a))
    np.testing.assert_allclose(k.bind(out, a[:, ::-1])(), ref(a[:, ::-1]))
    with pytest.raises(lazyk.ShapeError, match="out has shape"):
        k.bind(np.empty(out.shape + (2,), out.dtype), a)
    with pytest.raises(lazyk.CastingError, match="input 'm'"):
        k.bind(out, a.astype(np.float32))


def test_bind_refuses_row_operations():
    x = lazyk.placeholder("a", "N * float64")
    k = lazyk.compile(lazyk.cumsum(x))
    with pytest.raises(lazyk.NotSupportedError, match="call the compiled expression"):
        k.bind(np.zeros(3), np.ones(3))


def test_ragged_expressions_explain_and_compile():
    x = lazyk.array([[1.0, 2.0], [3.0]])
    text = x.sum(axis=-1).explain()
    assert "loop-nest kernels: 1" in text and "LLVM IR" in text
    assert "ragged expression" in (lazyk.array([1.0, None]) + 1).explain()
    k = lazyk.compile(x * 2)  # the captured array is a constant
    assert k.signature == "() -> 2 * var * float64"
    assert k().to_list() == [[2.0, 4.0], [6.0]]


def test_broadcasting_inputs_take_the_fast_path_and_stay_correct(monkeypatch):
    from lazyk.runtime import compiled

    x = lazyk.placeholder("a2", "M * N * float64")
    f = lazyk.compile(x * lazyk.placeholder("r", "N * float64")
                      + lazyk.placeholder("k", "M * 1 * float64"))
    a2, r, k = np.random.rand(3, 5), np.random.rand(5), np.random.rand(3, 1)
    np.testing.assert_array_equal(f(a2, r, k), a2 * r + k)
    monkeypatch.setattr(compiled, "run_program", lambda *a, **kw: 1 / 0)  # no general path now
    for _ in range(3):
        np.testing.assert_array_equal(f(a2, r, k), a2 * r + k)
        out = np.empty((3, 5))
        f(a2, r, k, out=out)
        np.testing.assert_array_equal(out, a2 * r + k)
    monkeypatch.undo()
    with pytest.raises(lazyk.ShapeError, match="dimension N"):
        f(a2, np.ones(4), k)


@pytest.mark.parametrize("n", [5, 300_000])  # guard-sized and threaded sizes
def test_out_larger_than_the_inputs_is_refused(n):
    # Inputs broadcast to `out`, never the reverse: an (n-1,) input into an (n,) output read
    # one element past the input's end (a silent wrong answer) before this was checked.
    import lazyk
    from lazyk.errors import ShapeError

    x, y = lazyk.placeholder("x", "N * float64"), lazyk.placeholder("y", "N * float64")
    one, two = lazyk.compile(1.5 * x), lazyk.compile(x + y)
    rows = lazyk.compile(lazyk.placeholder("m", "M * N * float64") + y)
    out = np.zeros(n)
    for call in (lambda: one(np.ones(n - 1), out=out),
                 lambda: two(np.ones(n - 1), np.ones(n - 1), out=out),
                 lambda: rows(np.ones((2, n - 1)), np.ones(n - 1), out=np.zeros((2, n)))):
        with pytest.raises(ShapeError, match=r"\(.*\).*\(.*\)"):
            call()
    assert not out.any()
    # size-1 inputs do broadcast into a larger out, as in NumPy
    np.testing.assert_array_equal(two(np.ones(1), np.full(1, 2.0), out=out), np.full(n, 3.0))


def test_operand_strides_check_the_iteration_shape():
    from lazyk.errors import ShapeError
    from lazyk.runtime.launch import broadcast_strides as over

    assert over((4, 3), (3,), (8,)) == (0, 8)
    assert over((4, 3), (4, 1), (8, 8)) == (8, 0)
    for shape, ashape in (((4, 3), (2,)), ((3,), (4, 3)), ((4, 3), (4, 2))):
        with pytest.raises(ShapeError, match="does not broadcast"):
            over(shape, ashape, (8,) * len(ashape))


# ------------------------------------------------------------------ what compile and a call take
def test_compile_of_a_string_is_refused_at_compile():
    for text in ("a * 2 + 1", b"a * 2"):
        with pytest.raises(TypeError, match=r"lazyk.compile takes a lazy expression.*"
                                            r"lazyk.placeholder"):
            lazyk.compile(text)


@pytest.mark.parametrize("dt", ["uint8", "uint16", "uint32", "uint64", "int8", "int16"])
def test_python_ints_that_fit_are_taken_by_integer_parameters(dt):
    info = np.iinfo(dt)
    k = lazyk.compile(lazyk.placeholder("x", f"N * {dt}") + 1)
    vals = [1, 2, int(info.max) - 1]
    got = k(vals)
    want = np.array(vals, dt) + np.array(1, dt)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    for bad in (int(info.max) + 1, int(info.min) - 1):  # out of range: named, never wrapped
        with pytest.raises(lazyk.CastingError, match=f"the value {bad} does not fit"):
            k([1, bad])
    if dt.startswith("u"):  # int64 arrays: casting rules as before (not same_kind)
        with pytest.raises(lazyk.CastingError, match="cannot cast int64"):
            k(np.array([1, 2], np.int64))
    kv = lazyk.compile(lazyk.placeholder("x", f"N * var * {dt}") + 1)
    got = kv([[1, 2], [int(info.max) - 1]])
    assert str(got.type) == f"2 * var * {dt}"
    assert got.to_list() == [[2, 3], [int(info.max)]]
    # (past uint64 no lazyk array holds the value: ArrayConstructionError names it)
    with pytest.raises((lazyk.CastingError, lazyk.ArrayConstructionError),
                       match=f"{int(info.max) + 1} .*does not fit"):
        kv([[1], [int(info.max) + 1]])


def test_python_ints_past_int64_for_uint64_parameters():
    k = lazyk.compile(lazyk.placeholder("x", "N * uint64") + 1)
    got = k([1, 2 ** 64 - 2])  # NumPy would make float64 of this list
    assert got.dtype == np.uint64 and got.tolist() == [2, 2 ** 64 - 1]
    with pytest.raises(lazyk.CastingError, match=f"the value {2 ** 64} does not fit"):
        k([1, 2 ** 64])


def test_pandas_nullable_series_without_missing_values_are_taken():
    pd = pytest.importorskip("pandas")
    k = lazyk.compile(lazyk.placeholder("x", "N * int64") * 2)
    got = k(pd.Series([1, 2, 3], dtype="Int64"))
    assert got.dtype == np.int64 and got.tolist() == [2, 4, 6]
    f = lazyk.compile(lazyk.placeholder("x", "N * float64") + 0.5)
    np.testing.assert_array_equal(f(pd.Series([1.5, 2.0], dtype="Float64")), [2.0, 2.5])
    b = lazyk.compile(lazyk.placeholder("x", "N * bool") & True)
    np.testing.assert_array_equal(b(pd.Series([True, False], dtype="boolean")), [True, False])
    with pytest.raises(lazyk.TypeMatchError, match="has missing values"):
        k(pd.Series([1, None, 3], dtype="Int64"))
    r = lazyk.compile(lazyk.placeholder("x", "N * var * float64") *
                      lazyk.placeholder("y", "N * int64"))
    got = r([[1.0, 2.0], [3.0]], pd.Series([1, 2], dtype="Int64"))
    assert got.to_list() == [[1.0, 4.0], [3.0, 6.0]]
    with pytest.raises(lazyk.TypeMatchError, match="missing values"):
        r([[1.0, 2.0], [3.0]], pd.Series([1, None], dtype="Int64"))


def test_masked_inputs_without_masked_values_on_the_ragged_path():
    r = lazyk.compile(lazyk.placeholder("x", "N * var * float64") *
                      lazyk.placeholder("y", "N * int64"))
    y = np.ma.masked_array([1, 2], mask=[False, False])
    assert r([[1.0, 2.0], [3.0]], y).to_list() == [[1.0, 4.0], [3.0, 6.0]]
    with pytest.raises(lazyk.TypeMatchError, match="missing values"):
        r([[1.0, 2.0], [3.0]], np.ma.masked_array([1, 2], mask=[False, True]))


def test_bound_calls_refuse_pickling_and_say_what_to_pickle():
    import pickle
    p = lazyk.placeholder("p", "N * float64")
    q = lazyk.placeholder("q", "N * var * float64")
    for bound in (lazyk.compile(p * 2).bind(np.empty(3), np.ones(3)),
                  lazyk.compile(q.sum(axis=1)).bind(np.empty(1), lazyk.array([[1.0]])),
                  lazyk.compile(p - p.sum()).bind(np.empty(3), np.ones(3))):
        with pytest.raises(TypeError, match="pickle the compiled expression"):
            pickle.dumps(bound)


def test_negative_of_bools_points_to_logical_not():
    with pytest.raises(lazyk.DTypeError, match="use ~"):
        -lazyk.array([True, False])


def test_a_lazy_expression_as_out_is_refused_everywhere():
    a = np.arange(4.0)
    o = lazyk.array(np.zeros(4)) * 1
    x = lazyk.placeholder("x", "N * float64")
    r = lazyk.array([[1.0], []])
    for call in (lambda: lazyk.evaluate(lazyk.array(a) * 10, out=o),
                 lambda: (lazyk.array(a) * 10).eval(out=o),
                 lambda: lazyk.evaluate("v * 10", {"v": a}, out=o),
                 lambda: lazyk.compile(x * 10)(a, out=o),
                 lambda: lazyk.compile(x.sum())(a, out=o),
                 lambda: lazyk.compile(x * 10).bind(o, a),
                 lambda: np.add(lazyk.array(a), 1, out=o),
                 lambda: lazyk.evaluate(r * 2, out=r * 1)):
        with pytest.raises(TypeError, match="not a lazy expression"):
            call()


def test_a_lazy_expression_as_an_input_is_named():
    x = lazyk.placeholder("x", "N * float64")
    f = lazyk.compile(x * 2)
    f(np.ones(3))
    with pytest.raises(TypeError, match="input 'x' is a lazy expression"):
        f(lazyk.array(np.arange(3.0)) + 1)
    q = lazyk.placeholder("q", "N * var * float64")
    with pytest.raises(TypeError, match="input 'q' is a lazy expression"):
        lazyk.compile(q * 2)(lazyk.array([[1.0]]) * 2)


def test_selection_and_gather_pair_dims_of_one_size_when_compiled():
    # two names for the paired dims: refused when built, as elementwise work refuses them
    met, keep = lazyk.placeholder("met", "M * float64"), lazyk.placeholder("keep", "N * bool")
    with pytest.raises(lazyk.ShapeError, match=r"x\[mask\]: dim 0 is M in the array .* N in "
                                               r"the mask .* one name"):
        met[keep]
    pt = lazyk.placeholder("pt", "N * var * float64")
    with pytest.raises(lazyk.ShapeError, match="one name"):
        met[lazyk.num(pt, axis=1) > 0]
    same = lazyk.compile(lazyk.placeholder("met", "N * float64")[lazyk.num(pt, axis=1) > 0])
    assert same(np.array([1.0, 2.0, 3.0]), [[1.0], [], [2.0, 3.0]]).tolist() == [1.0, 3.0]
    # a name against a captured array's size: that size, checked at the call (a row of 1
    # does not stretch between array and key)
    dense = lazyk.compile(met[np.array([True, False, True])])
    assert dense(np.array([1.0, 2.0, 3.0])).tolist() == [1.0, 3.0]
    for n in (1, 2, 4):
        with pytest.raises(lazyk.ShapeError, match=rf"dim 0 .* has size {n} in the array and 3 "
                                                   r"in the mask"):
            dense(np.arange(float(n)))
    x = lazyk.placeholder("x", "M * var * float64")
    rows = lazyk.compile(x[lazyk.array([[True], [False], [True]], type="3 * var * bool")])
    assert rows([[1.0], [2.0], [3.0]]).to_list() == [[1.0], [], [3.0]]
    with pytest.raises(lazyk.ShapeError, match=r"size 1 in the array and 3 in the mask"):
        rows([[1.0]])
    positions = lazyk.placeholder("p", "M * var * int64")
    gather = lazyk.compile(lazyk.array([[1.0, 2.0], [3.0], [4.0]])[positions])
    assert gather([[1], [0], [0]]).to_list() == [[2.0], [3.0], [4.0]]
    for bad in ([[0]], [[0]] * 4):
        with pytest.raises(lazyk.ShapeError, match=r"x\[positions\]: dim 0 .* has size 3 in "
                                                   r"the array"):
            gather(bad)


def test_zip_of_two_parameters_lines_up_their_rows_at_each_call():
    x, y = (lazyk.placeholder(n, "N * var * float64") for n in ("x", "y"))
    q = lazyk.placeholder("q", "N * ?var * float64")
    r = lazyk.zip({"a": x, "b": y})
    num, first, total = (lazyk.compile(e) for e in (
        lazyk.num(r, axis=1), lazyk.firsts(r, axis=1).b,
        lazyk.sum(lazyk.zip({"a": x, "q": q}).a, axis=1)))
    assert "y" in num.signature and "y" in first.signature  # (a field read for its rows)
    for ys, want in (([[1.0, 2.0, 3.0], [3.0, 5.0]], [3, 2]),  # x's row of 1 stretches
                     ([[1.0, 2.0, 3.0], [3.0]], [3, 1])):
        got = num([[1.0, 2.0, 3.0], [4.0]], ys)
        assert got.tolist() == want == lazyk.num(lazyk.zip(
            {"a": lazyk.array([[1.0, 2.0, 3.0], [4.0]]), "b": lazyk.array(ys)}), axis=1).tolist()
    for f in (num, first):
        with pytest.raises(lazyk.ShapeError, match=r"row 0: operand 0 has length 3 and operand "
                                                   r"1 has length 2"):
            f([[1.0, 2.0, 3.0], [4.0]], [[1.0, 2.0], [3.0]])
    # a row missing in one field is missing in every field (Awkward's zip)
    assert total([[1.0, 2.0], [3.0]], [[1.0, 2.0], None]).to_list() == [3.0, None]


def test_lists_of_only_none_take_the_parameters_type():
    for t, data, want in (("N * ?var * float64", [None, None], [True, True]),
                          ("N * ?var * ?float64", [[None], None], [False, True])):
        k = lazyk.compile(lazyk.is_none(lazyk.placeholder("x", t)))
        assert np.asarray(k(data)).tolist() == want
    k = lazyk.compile(lazyk.is_none(lazyk.placeholder("x", "N * var * ?float64")))
    with pytest.raises(lazyk.TypeMatchError, match="expected N \\* var \\* \\?float64"):
        k([None, None])  # (missing rows where the parameter has none)


def test_a_new_axis_on_a_parameter_with_inputs_in_fortran_order():
    m = lazyk.placeholder("m", "M * N * float64")
    w = lazyk.placeholder("w", "M * float64")
    f = lazyk.compile(m * w[:, None])
    a, v = np.arange(6.0).reshape(2, 3), np.array([1.0, 2.0])
    want = a * v[:, None]
    for x in (np.asfortranarray(a), np.ascontiguousarray(a.T).T):
        np.testing.assert_array_equal(np.asarray(f(x, v)), want)
    out = np.empty((2, 3), order="F")
    f(a, v, out=out)
    np.testing.assert_array_equal(out, want)
    with pytest.raises(lazyk.ShapeError, match=r"result of shape \(2, 3\) into output of "
                                               r"shape \(3, 2\)"):
        f(a, v, out=np.empty((3, 2), order="F"))


def test_bind_of_row_operations_names_them():
    m = lazyk.placeholder("m", "M * N * float64")
    w = lazyk.placeholder("w", "M * float64")
    with pytest.raises(lazyk.NotSupportedError, match=r"\(here: newaxis\).*call the compiled"):
        lazyk.compile(m * w[:, None]).bind(np.ones((2, 3)), np.ones(2))
