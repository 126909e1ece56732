"""String and bytes constants in `lazyk.evaluate` strings, checked against numexpr (when
installed) and NumPy; and the error for operands that do not broadcast, which must not
change once a string has been evaluated a few times (its planned program is cached)."""
import operator

import numpy as np
import pytest

import lazyk
from lazyk.cli import main
from lazyk.frontend.exprparse import ExprParseError, parse

try:
    import numexpr
except ImportError:  # the NumPy reference alone
    numexpr = None

S = np.array([[b"kiwi", b"x", b""], [b"fig", b"kiwis", b"ki"]])
U = np.char.decode(S, "utf-8")
X = np.arange(6.0).reshape(2, 3)

# (text, NumPy reference over S): a str constant against S data compares its bytes.
S_CASES = [
    ("s == b'kiwi'", lambda s: s == b"kiwi"),
    ("s == 'kiwi'", lambda s: s == b"kiwi"),
    ("s == \"kiwi\"", lambda s: s == b"kiwi"),
    ("'kiwi' == s", lambda s: s == b"kiwi"),
    ("s != 'kiwi'", lambda s: s != b"kiwi"),
    ("s < 'kiwi'", lambda s: s < b"kiwi"),
    ("s <= b'kiwi'", lambda s: s <= b"kiwi"),
    ("s > 'ki'", lambda s: s > b"ki"),
    ("b'ki' >= s", lambda s: s <= b"ki"),
    ("s == 'ki\\x77i'", lambda s: s == b"kiwi"),
    ("(s == 'kiwi') | (s == b'fig')", lambda s: (s == b"kiwi") | (s == b"fig")),
    ("where(s < 'g', x, -x)", lambda s: np.where(s < b"g", X, -X)),
    ("sum(s > 'fig', axis=1)", lambda s: (s > b"fig").sum(axis=1)),
]


@pytest.mark.parametrize("text, ref", S_CASES)
def test_S_arrays_against_numexpr_and_numpy(text, ref):
    env = {"s": S, "x": X}
    got = lazyk.evaluate(text, local_dict=env)
    want = ref(S)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype or text.startswith("sum")  # numexpr sums bools to int64
    # numexpr 2.14 fails on a str and a bytes constant in one string (UFuncTypeError).
    if numexpr is not None and not text.startswith(("where", "sum", "(")):
        ne = numexpr.evaluate(text, local_dict=env)
        assert got.dtype == ne.dtype == np.bool_
        np.testing.assert_array_equal(got, ne)


OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
       ">": operator.gt, ">=": operator.ge}


@pytest.mark.parametrize("op", list(OPS))
def test_text_arrays_compare_as_text(op):
    # U and lazyk `string` data against a str (and UTF-8 bytes) compare as text, as Python.
    u = np.array(["kiwi", "café", "x", "", "cafe"])
    t = lazyk.array(["kiwi", "café", "x", None, "cafe"])
    for const in ["café", "kiwi", "\u00e9"]:
        want = OPS[op](u, np.str_(const))
        for text in [f"u {op} c", f"u {op} {const!r}", f"u {op} {const.encode()!r}"]:
            got = lazyk.evaluate(text, local_dict={"u": u, "c": const})
            assert got.dtype == np.bool_ and got.tolist() == want.tolist(), text
        got = lazyk.evaluate(f"t {op} {const!r}", local_dict={"t": t})
        expect = [None if s is None else OPS[op](s, const) for s in t.to_list()]
        assert str(got.type) == "5 * ?bool" and got.to_list() == expect


def test_string_functions_against_numpy():
    env = {"s": S, "u": U}
    for text, want in [
        ("str_len(s)", np.char.str_len(S)),
        ("str_len(u)", np.char.str_len(U)),
        ("startswith(s, b'ki')", np.char.startswith(S, b"ki")),
        ("startswith(u, 'ki')", np.char.startswith(U, "ki")),
        ("endswith(s, 's')", np.char.endswith(S, b"s")),
        ("endswith(u, b'g')", np.char.endswith(U, "g")),
        ("(str_len(s) > 2) & startswith(u, 'k')",
         (np.char.str_len(S) > 2) & np.char.startswith(U, "k")),
    ]:
        got = lazyk.evaluate(text, local_dict=env)
        assert got.shape == want.shape and got.tolist() == want.tolist(), text
        assert got.dtype == (np.int64 if text.startswith("str_len") else np.bool_), text


def test_bytes_variable_as_numexpr():
    s, key = S, b"fig"  # noqa: F841  (read by evaluate from this frame)
    got = lazyk.evaluate("s == key")
    np.testing.assert_array_equal(got, S == b"fig")
    if numexpr is not None:
        np.testing.assert_array_equal(got, numexpr.evaluate("s == key"))


def test_a_new_constant_never_reuses_an_old_result():
    # The same text again and again (planned programs are cached after a couple of calls),
    # with only the constant's value changing: a variable, re_evaluate and a literal.
    s = np.array([b"kiwi", b"x", b"aa"])
    u = np.char.decode(s, "utf-8")
    for arr in (s, u):
        for c in ["kiwi", "x", b"aa", "kiwi", "zz", "x", "kiwi", b"x"]:
            ref = arr == (c if isinstance(c, type(arr[0].item())) else
                          c.decode() if isinstance(c, bytes) else c.encode())
            for _ in range(3):
                got = lazyk.evaluate("a == c", local_dict={"a": arr, "c": c})
                assert got.tolist() == ref.tolist(), (arr.dtype, c)
        lazyk.evaluate("a < c", local_dict={"a": arr, "c": "kiwi"})
        for c in ["x", "aa", "kiwi"]:
            got = lazyk.re_evaluate(local_dict={"a": arr, "c": c})
            assert got.tolist() == [w < c for w in u.tolist()]
    for lit in ["kiwi", "x", "aa", "kiwi", "x"]:
        for _ in range(3):
            got = lazyk.evaluate(f"s == '{lit}'", local_dict={"s": s})
            assert got.tolist() == (s == lit.encode()).tolist()
        got = lazyk.evaluate(f"s == '{lit}'", local_dict={"s": s, "x": np.arange(3)})
        assert got.tolist() == (s == lit.encode()).tolist()


def test_wrong_combinations_raise_naming_both_types():
    b = lazyk.array([b"kiwi", b"x"])  # bytes data against a str constant
    with pytest.raises(lazyk.UnsupportedOperandError, match="bytes.*str"):
        lazyk.evaluate("b == 'kiwi'", local_dict={"b": b})
    with pytest.raises(lazyk.UnsupportedOperandError, match="bytes.*str"):
        lazyk.evaluate("startswith(b, 'k')", local_dict={"b": b})
    assert lazyk.evaluate("b == b'kiwi'", local_dict={"b": b}).tolist() == [True, False]
    with pytest.raises(lazyk.UnsupportedOperandError, match="not UTF-8"):
        lazyk.evaluate("u == b'\\xff'", local_dict={"u": U})
    with pytest.raises(lazyk.UnsupportedOperandError, match="different encodings"):
        lazyk.evaluate("u == s", local_dict={"u": U, "s": S})
    with pytest.raises(lazyk.UnsupportedOperandError, match="number and a string"):
        lazyk.evaluate("x == 'kiwi'", local_dict={"x": X})
    with pytest.raises(lazyk.UnsupportedOperandError, match="add"):
        lazyk.evaluate("s + 'a'", local_dict={"s": S})
    with pytest.raises(lazyk.UnsupportedOperandError, match="negative"):
        lazyk.evaluate("-'a' == s", local_dict={"s": S})


def test_refusals_name_what_is_missing():
    with pytest.raises(lazyk.NotSupportedError, match=r"contains\(\).*startswith") as info:
        lazyk.evaluate("contains(s, 'iw')", local_dict={"s": S})
    assert "^" in str(info.value)
    with pytest.raises(ExprParseError, match="string alone"):
        lazyk.evaluate("'kiwi'")
    with pytest.raises(ExprParseError, match="string alone") as info:
        lazyk.evaluate(" w", local_dict={"w": "a + b", "a": 1, "b": 2})  # never parsed again
    assert info.value.column == 2
    with pytest.raises(ExprParseError, match="bad string constant") as info:
        parse("s == b'café'")
    assert info.value.column == 6
    assert lazyk.evaluate("'a' < 'b'").tolist() is True


def test_parse_trees():
    assert str(parse("s == b'kiwi'")) == "equal(s, b'kiwi')"
    assert str(parse("'k' <= s")) == "less_equal('k', s)"
    assert str(parse("startswith(s, r'\\d')")) == "startswith(s, '\\\\d')"
    assert str(parse("-'x'")) == "negative('x')"
    with pytest.raises(ExprParseError, match="a string"):  # still offered where one fits
        parse("a + ")


def test_cli_explain_string_constant(capsys):
    assert main(["explain", "a == 'kiwi'", "--type", "a=N * var * ?string", "--no-asm"]) == 0
    text = capsys.readouterr().out
    assert "a: N * var * ?string" in text and "-> N * var * ?bool" in text  # as declared
    assert main(["explain", "startswith(a, 'ki')", "--type", "a=N * string", "--no-ir",
                 "--no-asm"]) == 0
    assert "N * bool" in capsys.readouterr().out
    assert main(["explain", "a == b'kiwi'", "--type", "a=N * float64"]) == 1
    assert "number and a string" in capsys.readouterr().err


def test_cli_explain_refuses_a_type_given_twice_or_for_no_name(capsys):
    args = ["explain", "a + b", "--type", "a=N * float64", "--type", "b=N * float64"]
    assert main(args + ["--type", "c=N * float64"]) == 2
    assert "--type c: the expression has no name 'c' (its names: a, b)" in \
        capsys.readouterr().err
    assert main(args + ["--type", "a=3 * float64"]) == 2
    assert "once per name, got 'a=3 * float64'" in capsys.readouterr().err


@pytest.mark.parametrize("text, t", [("sum(a, axis=-1)", "a=N * var * float64"),
                                     ("a + 1", "a=N * ?float64"), ("a + 1", "a=N * float64")])
def test_cli_explain_leaves_out_ir_and_assembly_of_every_kernel(capsys, text, t):
    assert main(["explain", text, "--type", t, "--no-ir", "--no-asm"]) == 0
    out = capsys.readouterr().out
    assert "== LLVM IR" not in out and "== assembly" not in out
    assert "== kernel" in out or "== loop-nest kernels" in out
    assert main(["explain", text, "--type", t, "--no-ir"]) == 0
    out = capsys.readouterr().out
    assert "== LLVM IR" not in out and "== assembly" in out

@pytest.mark.parametrize("n1, n2", [(2, 3), (3, 2), (100_000, 300_000)])
def test_shape_error_after_re_evaluate(n1, n2):
    a = b = np.arange(float(n2))
    lazyk.evaluate("a+b")
    lazyk.re_evaluate(local_dict={"a": a, "b": b})
    lazyk.evaluate("a+b")
    a, b = np.arange(float(n1)), np.arange(float(n2))
    for _ in range(3):  # every call, however warm the string is
        with pytest.raises(lazyk.ShapeError,
                           match=f"operand 0 has {n1}, operand 1 has {n2}"):
            lazyk.evaluate("a+b")
    with pytest.raises(lazyk.ShapeError, match=f"operand 0 has {n1}, operand 1 has {n2}"):
        lazyk.re_evaluate(local_dict={"a": a, "b": b})
    got = lazyk.re_evaluate(local_dict={"a": b, "b": b})  # and the plan still serves
    np.testing.assert_array_equal(got, b + b)


def test_mappings_after_a_string_are_local_and_global_dicts_as_in_numexpr():
    a, b = np.arange(4.0), np.full(4, 0.5)
    np.testing.assert_array_equal(lazyk.evaluate("2*a + 3*b", {"a": a, "b": b}), 2 * a + 3 * b)
    got = lazyk.evaluate("a - b", {"a": a}, {"a": b, "b": b})  # local names win
    np.testing.assert_array_equal(got, a - b)
    with pytest.raises(TypeError, match="out must be a NumPy or lazyk array, not dict"):
        lazyk.evaluate("a", {"a": a}, {}, {})  # (numexpr's order: the third is out)
    with pytest.raises(TypeError, match="at most once"):
        lazyk.evaluate("a", {"a": a}, {}, None, "C", "safe", 1)
    with pytest.raises(TypeError, match="at most once"):
        lazyk.evaluate("a", {"a": a}, local_dict={"a": a})


def test_a_misplaced_argument_after_a_string_is_named():
    a = np.arange(4.0)
    # a list of pairs is not a mapping: named as the argument it is, not as a missing name
    with pytest.raises(TypeError, match="mappings\\) or out .*not list"):
        lazyk.evaluate("a", [("a", a)])
    with pytest.raises(TypeError, match="not int"):
        lazyk.evaluate("a", 5)
    with pytest.raises(TypeError, match="evaluate a string alone"):
        lazyk.evaluate(lazyk.array(a) + 1, "a * 2")
    out = np.empty(4)
    assert lazyk.evaluate("a * 3", out) is out  # an array after a string is still `out`
    np.testing.assert_array_equal(out, a * 3)


def test_numexprs_positional_order_with_out():
    a, b, out = np.ones(3), np.arange(3.0), np.zeros(3)
    assert lazyk.evaluate("a + b", {"a": a, "b": b}, None, out) is out
    assert out.tolist() == [1.0, 2.0, 3.0]
    assert lazyk.evaluate("a + b", {"a": a}, {"b": b}).tolist() == [1.0, 2.0, 3.0]
    assert lazyk.evaluate("a + b", None).tolist() == [1.0, 2.0, 3.0]  # (the caller's names)
    with pytest.raises(TypeError, match="takes each at most once"):
        lazyk.evaluate("a + b", {"a": a, "b": b}, None, out, out=out)


def test_numexprs_arguments_options_and_functions():
    a, out = np.arange(3.0), np.zeros(3)
    # order and casting by place, as numexpr.evaluate(ex, local_dict, global_dict, out, ...)
    f = lazyk.evaluate("a * 2", {"a": np.ones((2, 3)).T}, None, None, "F")
    assert f.flags.f_contiguous and f.tolist() == [[2.0, 2.0]] * 3
    with pytest.raises(TypeError, match="Cannot cast|casting"):
        lazyk.evaluate("a * 2", {"a": a}, None, np.zeros(3, np.int64), "K", "safe")
    assert lazyk.evaluate("a + 1", {"a": a}, optimization="moderate", sanitize=True,
                          truediv="auto").tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(lazyk.NotSupportedError, match="truediv=False"):
        lazyk.evaluate("a / 2", {"a": a}, truediv=False)
    with pytest.raises(ValueError, match="optimization must be"):
        lazyk.evaluate("a", {"a": a}, optimization="max")
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        lazyk.evaluate("a", {"a": a}, bogus=1)
    assert lazyk.evaluate("round(a * 1.5)", {"a": a}).tolist() == [0.0, 2.0, 3.0]  # rint
    ints = lazyk.evaluate("round(i)", {"i": np.arange(3, dtype=np.int32)})
    assert ints.dtype == np.int32 and ints.tolist() == [0, 1, 2]  # (as numexpr's, np.round's)
    assert lazyk.evaluate("rint(i)", {"i": np.arange(3)}).dtype == np.float64  # (NumPy's)
    for text, hint in [("copy(a)", "write the operand alone"), ("signbit(a)", "copysign"),
                       ("ones_like(a)", "where"), ("nextafter(a, 1)", "not supported")]:
        with pytest.raises(lazyk.NotSupportedError, match=hint):
            lazyk.evaluate(text, {"a": a})
    with pytest.raises(lazyk.ExprParseError, match="real\\(u\\) for u.real"):
        lazyk.evaluate("(a - 1).real", {"a": a})
    with pytest.raises(lazyk.ExprParseError, match="'<>' is not an operator; write !="):
        lazyk.evaluate("a <> a", {"a": a})
    with pytest.raises(lazyk.ExprParseError, match="ASCII letters"):
        lazyk.evaluate("\u03b1 + 1", {"\u03b1": a})
    with pytest.raises(OverflowError, match="107150860718626732094842\\.\\.\\. \\(302 digit"):
        lazyk.evaluate("2**1000")
    with pytest.raises(TypeError, match="not the string 'a'"):
        lazyk.evaluate("a * 2", "a")
    # re_evaluate and explain check their mappings as evaluate does
    lazyk.evaluate("a * 2", {"a": a}, None, out)
    for call in (lambda: lazyk.re_evaluate(["a"]), lambda: lazyk.re_evaluate(5),
                 lambda: lazyk.explain("a * 2", local_dict=["a"])):
        with pytest.raises(TypeError, match="local_dict must be a mapping"):
            call()


def test_order_in_lower_case_as_numexpr():
    """numexpr takes order='k' / 'c' / 'f' as the capitals; anything else is refused."""
    t = np.ones((3, 2)).T
    for order, c_contiguous in (("k", False), ("c", True), ("f", False), ("a", False)):
        for _ in range(2):  # (the second call through the cached plan)
            r = lazyk.evaluate("t + 1", {"t": t}, order=order)
            assert r.flags.c_contiguous == c_contiguous and r.tolist() == (t + 1).tolist()
        assert lazyk.evaluate(lazyk.array(t) * 2, lazyk.array(t) + 1, order=order)[0].shape \
            == (2, 3)
    for bad in ("x", "KK", 1, None):
        with pytest.raises(ValueError, match="order must be one of"):
            lazyk.evaluate("t + 1", {"t": t}, order=bad)


def test_a_total_over_threaded_sizes_plans_its_layout_once(monkeypatch):
    """`evaluate("sum(x)")` at sizes the threads split keeps the layout per geometry (the
    general path cost ~15 us more a call) and answers as NumPy."""
    from lazyk.kernel import dispatch
    plans = []
    real = dispatch.plan
    monkeypatch.setattr(dispatch, "plan", lambda *a: plans.append(1) or real(*a))
    x = np.random.default_rng(1).standard_normal(100_000)
    y = x.astype(np.float32)
    y[5] = np.nan
    for call in range(6):
        if call == 3:  # (the first calls plan each expression's path once)
            assert plans
            plans.clear()
        assert lazyk.evaluate("sum(x * 2)") == pytest.approx(np.sum(x * 2), rel=1e-12)
        assert np.isnan(lazyk.evaluate("max(y)")) and lazyk.evaluate("min(x)") == x.min()
        got = lazyk.evaluate("max(x + 1)")
        assert got == np.max(x + 1) and np.asarray(got).dtype == np.float64
    assert plans == []  # planned once, not per call


def test_out_at_threaded_sizes_runs_the_guarded_record(monkeypatch):
    """`evaluate("a/b", out=o)` at sizes the threads split runs as the call without out=
    does (one bind, then the native guard's pool record; the general path planned each call),
    and a partial overlap of out with an input still goes through a temporary."""
    from lazyk.runtime import launch
    rng = np.random.default_rng(2)
    a = rng.random(100_000).astype(np.float32)
    b = rng.random(100_000).astype(np.float32) + 1
    out = np.empty_like(a)
    for _ in range(3):  # (the string is planned on its second call)
        lazyk.evaluate("a / b", out=out)
    calls = []
    monkeypatch.setattr(launch, "run_layout", lambda *x, **k: calls.append(1))
    for _ in range(3):
        assert lazyk.evaluate("a / b", out=out) is out
    np.testing.assert_array_equal(out, a / b)
    assert calls == []
    monkeypatch.undo()
    base = np.arange(100_001, dtype=np.float64)
    a1, a2 = base[1:], base[:-1]
    lazyk.evaluate("a2 + 1", local_dict={"a2": a2}, out=a1)
    np.testing.assert_array_equal(a1, np.arange(100_000.0) + 1)
