"""numexpr-style strings: the call tree, errors with position, and evaluation vs NumPy."""
import numpy as np
import pytest

import lazyk
from lazyk import NotSupportedError, TypeParseError
from lazyk.frontend import exprparse
from lazyk.frontend.exprparse import ExprParseError, parse
from lazyk.runtime import stringeval

TREES = [
    ("2*a + b", "add(multiply(2, a), b)"),
    ("a - b - c", "subtract(subtract(a, b), c)"),
    ("a / b // c % d", "remainder(floor_divide(true_divide(a, b), c), d)"),
    ("-a**2", "negative(power(a, 2))"),            # Python: ** binds tighter than unary -
    ("a**-b", "power(a, negative(b))"),
    ("a**b**c", "power(a, power(b, c))"),           # right-associative
    ("-2 * a", "multiply(-2, a)"),                   # literals stay Python scalars
    ("+a", "positive(a)"),
    ("~a & b | c ^ d", "bitwise_or(bitwise_and(invert(a), b), bitwise_xor(c, d))"),
    ("a < b | c", "less(a, bitwise_or(b, c))"),     # Python: | binds tighter than <
    ("(a < b) | (c >= d)", "bitwise_or(less(a, b), greater_equal(c, d))"),
    ("a << 2 + b", "left_shift(a, add(2, b))"),
    ("a == b", "equal(a, b)"),
    ("a != 1.5e3", "not_equal(a, 1500.0)"),
    ("where(a > 0, sqrt(a), -b)", "where(greater(a, 0), sqrt(a), negative(b))"),
    ("abs(a) + conj(b)", "add(absolute(a), conj(b))"),
    ("arctan2(a, b)", "arctan2(a, b)"),
    ("sum(a * b, axis=0)", "sum(multiply(a, b), axis=0)"),
    ("prod(a, 1)", "prod(a, axis=1)"),
    ("max(a, axis=-1)", "max(a, axis=-1)"),
    ("sum(a)", "sum(a)"),
    ("0x10 + 1_000 + .5 + 2j", "add(add(add(16, 1000), 0.5), 2j)"),
    ("True & a", "bitwise_and(True, a)"),
    ("  a\n  + b ", "add(a, b)"),
    ("((a))", "a"),
    ("complex(a, b)", "complex(a, b)"),
]


@pytest.mark.parametrize("text, tree", TREES)
def test_call_tree(text, tree):
    assert str(parse(text)) == tree


# (text, line, column, words)
ERRORS = [
    ("a +", 1, 4, "end of input"),
    ("foo(a)", 1, 1, "unknown function foo"),
    ("a < b < c", 1, 7, "chained comparisons"),
    ("a and b", 1, 3, "use & | ~"),
    ("not a", 1, 1, "use & | ~"),
    ("sin(a, b)", 1, 1, "takes 1 argument(s), 2 given"),
    ("where(a, b)", 1, 1, "takes 3 argument(s)"),
    ("'\\N{nope}' == a", 1, 1, "bad string constant"),
    ("b'caf\u00e9' == a", 1, 1, "bad string constant"),
    ("(a", 1, 3, "end of input"),
    ("a $ b", 1, 3, "unexpected character '$'"),
    ("010 + a", 1, 1, "bad number"),
    ("sum(a, axis=b)", 1, 1, "axis must be an integer constant"),
    ("sum(a, keepdims=1)", 1, 1, "keepdims must be True or False"),
    ("sum(a, initial=1)", 1, 1, "no keyword 'initial'"),
    ("a.sum()", 1, 2, "method calls are not supported"),
    ("sum(a, 1.5)", 1, 1, "axis must be an integer constant"),
    ("sum(a, axis=1, b)", 1, 1, "positional argument after a keyword"),
    ("sum()", 1, 1, "sum() takes sum(x), sum(x, axis) or"),
    ("sin(x=a)", 1, 1, "takes no keyword arguments"),
    ("a +\n  * b", 2, 3, "unexpected '*'"),
    ("", 1, 1, "empty expression"),
    ("a b", 1, 3, "unexpected 'b'"),
]


@pytest.mark.parametrize("text, line, column, words", ERRORS)
def test_errors_have_position(text, line, column, words):
    with pytest.raises(ExprParseError) as info:
        parse(text)
    err = info.value
    assert isinstance(err, TypeParseError) and isinstance(err, ValueError)
    assert (err.line, err.column) == (line, column), str(err)
    assert words in str(err)
    lines = str(err).splitlines()
    assert lines[2] == "  " + " " * (column - 1) + "^"


def test_deep_expressions_are_clean_errors():
    with pytest.raises(ExprParseError) as info:
        parse("-" * 10_000 + "a")
    assert "nested deeper" in str(info.value)
    with pytest.raises(ExprParseError, match=r"each operator of a chain .* build it with "
                       "Python operators"):
        parse("+".join(["a"] * 10_000))
    assert str(parse("(" * 5000 + "a" + ")" * 5000)) == "a"  # grouping adds no depth


def test_cache_and_names():
    first = exprparse.compile_string("a * b + a")
    assert exprparse.compile_string("a * b + a") is first
    assert exprparse.names("a * b + sin(c) + a") == ("a", "b", "c")


def test_unknown_name_at_evaluation_names_it_and_its_position():
    a = np.ones(3)  # noqa: F841 - found through the frame
    with pytest.raises(ExprParseError) as info:
        stringeval.evaluate_string("a +\n  missing")
    assert "'missing' is not defined" in str(info.value)
    assert (info.value.line, info.value.column) == (2, 3)


# ---------------------------------------------------------------- evaluation
lx = pytest.importorskip("lazyk.frontend.expr")


def _need(*names):
    for n in names:
        if not hasattr(lx, n):
            pytest.skip(f"lazyk.frontend.expr has no {n} yet")


def test_evaluate_from_caller_frame():
    _need("add", "multiply")
    a = np.arange(6, dtype=np.float64)
    b = np.full(6, 0.5)
    got = stringeval.evaluate_string("2*a + b")
    np.testing.assert_array_equal(got, 2 * a + b)
    assert got.dtype == np.float64


def test_evaluate_with_dicts_and_local_first():
    _need("add", "multiply")
    a = np.arange(4, dtype=np.int32)
    got = stringeval.evaluate_string("a * k + 1", local_dict={"a": a, "k": 3},
                                    global_dict={"k": 100})
    np.testing.assert_array_equal(got, a * 3 + 1)
    assert got.dtype == np.int32  # weak Python ints keep int32 (NEP 50)


def test_lazyk_evaluate_dispatches_strings():
    import lazyk

    _need("subtract", "true_divide")
    x = np.linspace(1.0, 2.0, 7, dtype=np.float32)
    got = lazyk.evaluate("(x - 1) / x")
    np.testing.assert_allclose(got, (x - 1) / x, rtol=1e-6)
    assert got.dtype == np.float32


def test_out_argument():
    _need("add")
    a = np.arange(5.0)
    out = np.empty(5)
    res = stringeval.evaluate_string("a + a", out=out)
    np.testing.assert_array_equal(out, 2 * a)
    assert res is out or np.shares_memory(res, out)


@pytest.mark.parametrize("text, reference", [
    ("sin(a) ** 2 + cos(a) ** 2", lambda a, b: np.sin(a) ** 2 + np.cos(a) ** 2),
    ("sqrt(a) * exp(-b)", lambda a, b: np.sqrt(a) * np.exp(-b)),
    ("arctan2(a, b) + log1p(a)", lambda a, b: np.arctan2(a, b) + np.log1p(a)),
    ("abs(a - 2*b)", lambda a, b: np.abs(a - 2 * b)),
    ("(a > 1) & (b < 0.5)", lambda a, b: (a > 1) & (b < 0.5)),
    ("where(a > 1, a, -b)", lambda a, b: np.where(a > 1, a, -b)),
    ("floor(a) + ceil(b)", lambda a, b: np.floor(a) + np.ceil(b)),
    ("a // 0.5 % 3", lambda a, b: a // 0.5 % 3),
])
def test_functions_match_numpy(text, reference):
    a = np.linspace(0.1, 3.0, 11)
    b = np.linspace(-1.0, 1.0, 11)
    tree = parse(text)
    funcs = {n.func for n in exprparse.compile_string(text)[1] if hasattr(n, "func")}
    _need(*funcs)
    expected = reference(a, b)
    got = stringeval.evaluate_string(text, local_dict={"a": a, "b": b})
    assert got.dtype == expected.dtype, str(tree)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_issue_example_string():
    _need("add", "multiply", "subtract", "where", "greater")
    a, b = np.arange(6.0), np.linspace(-1, 1, 6)
    c = np.array([-2.0, 0.0, 1.0, 3.0, -0.5, 2.0])
    got = stringeval.evaluate_string("2*a + 3*b - where(c > 0, c, 0)")
    np.testing.assert_allclose(got, 2 * a + 3 * b - np.where(c > 0, c, 0), rtol=1e-15)
    assert got.dtype == np.float64


def test_reduction_with_axis():
    _need("sum", "multiply")
    m = np.arange(12.0).reshape(3, 4)
    got = stringeval.evaluate_string("sum(m * 2, axis=1)", local_dict={"m": m})
    np.testing.assert_array_equal(got, (m * 2).sum(axis=1))


def test_complex_builder():
    _need("add", "multiply")
    re_, im = np.array([1.0, 2.0]), np.array([3.0, -4.0])
    got = stringeval.evaluate_string("complex(re_, im)", local_dict={"re_": re_, "im": im})
    np.testing.assert_array_equal(got, re_ + 1j * im)
    assert got.dtype == np.complex128


def test_missing_lazyk_function_is_not_supported_with_position():
    if hasattr(lx, "contains"):
        pytest.skip("lazyk.frontend.expr implements contains")
    with pytest.raises(NotSupportedError) as info:
        stringeval.evaluate_string("contains(a, b)", local_dict={"a": 1, "b": 2})
    assert "contains" in str(info.value) and "line 1, column 1" in str(info.value)


from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_SOUP = st.lists(st.sampled_from(
    ["a", "b", "1", "2.5", "010", "1e", "j", "+", "-", "*", "**", "/", "//", "%", "<", "<=",
     "==", "&", "|", "^", "~", "<<", "(", ")", ",", "=", "axis", "sum", "sin", "where",
     "foo", "and", "'s'", "$", " ", "\n", "True"]), max_size=20)


@given(st.one_of(_SOUP.map("".join), _SOUP.map(" ".join), st.text(max_size=20)))
def test_any_text_parses_or_raises_expr_parse_error(text):
    try:
        tree = parse(text)
    except ExprParseError as err:
        assert err.line >= 1 and err.column >= 1
        return
    assert str(tree)


def test_numexpr_extra_functions_evaluate():
    """arcsinh, arccosh, arctanh, fmod and copysign: numexpr names reach lazyk's rows."""
    import numpy as np

    import lazyk

    a = np.array([-2.0, -0.5, 0.0, 0.5, 2.0])
    b = np.array([3.0, 1.5, 1.0, 2.0, 5.0])
    with np.errstate(all="ignore"):
        for text, want in [("arcsinh(a)", np.arcsinh(a)), ("arccosh(b)", np.arccosh(b)),
                           ("arctanh(a / 3)", np.arctanh(a / 3)), ("fmod(b, a)", np.fmod(b, a)),
                           ("copysign(b, a)", np.copysign(b, a))]:
            got = lazyk.evaluate(text, local_dict={"a": a, "b": b})
            np.testing.assert_allclose(got, want, rtol=1e-14, atol=0, equal_nan=True)


@pytest.mark.parametrize("text, said", [
    ("a + None", "None is not a value in an expression"),
    ("a and a", "use & | ~ for and, or, not"),
    ("a if a else a", "use where"),
    ("a is a", "is is not supported in an expression"),
])
def test_python_keywords_say_what_to_write_instead(text, said):
    with pytest.raises(ExprParseError, match=said):
        stringeval.evaluate_string(text, {"a": np.arange(3.0)})


@pytest.mark.parametrize("code", ["x*(2.5+1)", "x*(s+1)", "s*s*x", "-s*x", "x*(s-t)",
                                  "x*s**2", "x*(s>t)", "x/(s*t)", "x*(1/3)", "x*(i/j)",
                                  "x + -(1/3)", "x + i/j/2"])
def test_operators_over_python_numbers_stay_weak(code):
    # NumPy's rule (NEP 50): Python numbers combined by operators are Python numbers, so a
    # float32 array keeps its dtype, as it does in the same Python code (1/3 of two ints too)
    x = np.arange(1, 4, dtype=np.float32)
    env = {"x": x, "s": 2.0, "t": 0.5, "i": 1, "j": 3}
    got, want = lazyk.evaluate(code, local_dict=env), eval(code, {}, env)
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_division_of_python_numbers_by_zero_is_a_weak_inf_or_nan():
    x = np.arange(1, 4, dtype=np.float32)
    for code, value in (("x*0 + 1/0", np.inf), ("x*0 + -1/0", -np.inf), ("x*0 + 0/0", np.nan),
                        ("x*0 + 1.0%0", np.nan), ("x*0 + 0.0**-1", np.inf),
                        ("x*0 + (-1)**0.5", np.nan), ("x*0 + 1//0", 0.0)):
        got = lazyk.evaluate(code, local_dict={"x": x})
        assert got.dtype == np.float32 and np.array_equal(got, np.full(3, value), equal_nan=True)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.float32])
@pytest.mark.parametrize("s, t", [(1.5, True), (-3, True), (2, False), (2**31, True)])
def test_a_python_bool_beside_python_numbers_is_python_s_0_or_1(dtype, s, t):
    # `s - t` is a Python number in the same Python code, weak as the others
    x = np.arange(1, 4, dtype=dtype)
    env = {"x": x, "s": s, "t": t}
    try:
        want = eval("x*(s-t)", {}, env)
    except OverflowError:  # (2**31 - 1 for int8: NumPy's refusal too)
        with pytest.raises(OverflowError):
            lazyk.evaluate("x*(s-t)", local_dict=env)
        return
    got = lazyk.evaluate("x*(s-t)", local_dict=env)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
