"""Regression tests for defects found by QA (one section per defect)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import lazyk
from lazyk.errors import NotSupportedError, TypeParseError

# --- 1. placeholder types are read by lazyk.dshape -------------------------------------------

@pytest.mark.parametrize("text", ["N * int", "N * real", "N * complex[float32]",
                                  "N * >float64", "N * int32 # c", "3 * N * float32"])
def test_placeholder_type_matches_dshape(text):
    t = lazyk.dshape(text)
    p = lazyk.placeholder("a", text)
    assert p.ndim == t.ndim
    assert all(d == s for d, s in zip(p.shape, t.shape) if s is not None)
    assert p.dtype == t.dtype.to_numpy().newbyteorder("=")
    assert p.env["a"].dtype == p.dtype


def test_placeholder_int_is_int32_like_dshape():
    assert lazyk.placeholder("a", "N * int").dtype == np.int32
    assert lazyk.placeholder("a", "N * real").dtype == np.float64
    assert lazyk.placeholder("a", "N * complex[float32]").dtype == np.complex64
    assert lazyk.placeholder("a", "3 * N * float32").shape == (3, "N")


def test_placeholder_big_endian_accepts_both_byte_orders():
    k = lazyk.compile(lazyk.placeholder("a", "N * >float64") * 2)
    x = np.arange(4.0)
    np.testing.assert_array_equal(k(x), x * 2)
    np.testing.assert_array_equal(k(x.astype(">f8")), x * 2)


@pytest.mark.parametrize("text", ["N * f8", "N * long", "N * 03 * float64", "N * flot64"])
def test_placeholder_malformed_type_has_caret(text):
    with pytest.raises(TypeParseError) as info:
        lazyk.placeholder("a", text)
    msg = str(info.value)
    assert "line 1, column 5" in msg and "^" in msg


@pytest.mark.parametrize("text, what", [("N * ?3 * int32", "?3"),
                                        ("N * {x: int32}", "{x: int32}"),
                                        ("N * fixed_bytes[4]", "fixed_bytes[4]"),
                                        ("... * int32", "ellipsis")])
def test_placeholder_refuses_unsupported_types_clearly(text, what):
    with pytest.raises(NotSupportedError, match="placeholder type") as info:
        lazyk.placeholder("a", text)
    assert what in str(info.value)


def test_explain_cli_shows_type_caret():
    r = subprocess.run([sys.executable, "-m", "lazyk.cli", "explain", "--type",
                        "a=N * flot64", "a+1"], capture_output=True, text=True)
    assert r.returncode == 1
    assert "TypeParseError" in r.stderr and "column 5" in r.stderr and "^" in r.stderr


def test_astype_keeps_numpy_dtype_spellings():
    x = np.arange(3)
    assert lazyk.astype(x, "f8").dtype == np.float64
    assert lazyk.astype(x, "int").dtype == np.dtype(int)
    assert lazyk.astype(x, "complex[float32]").dtype == np.complex64


# --- 2. integers to negative integer powers raise as in NumPy --------------------------------

NEG_POW = "Integers to negative integer powers are not allowed"


@pytest.mark.parametrize("exponent", [-1, np.int32(-2), np.int64(-1)])
def test_int_power_negative_constant_raises(exponent):
    x = np.arange(5, dtype=np.int32)
    with pytest.raises(ValueError, match=NEG_POW):
        np.power(x, exponent)
    with pytest.raises(ValueError, match=NEG_POW):
        (lazyk.array(x) ** exponent).eval()
    with pytest.raises(ValueError, match=NEG_POW):
        lazyk.power(x, exponent)
    with pytest.raises(ValueError, match=NEG_POW):
        lazyk.placeholder("a", "N * int32") ** exponent


def test_int_power_negative_array_exponent_raises():
    base = np.arange(3, dtype=np.int8)
    exp = np.array([1, 2, -1], dtype=np.int64)
    with pytest.raises(ValueError, match=NEG_POW):
        (lazyk.array(base) ** exp).eval()
    with pytest.raises(ValueError, match=NEG_POW):
        (2 ** lazyk.array(np.array([1, -1], dtype=np.int32))).eval()
    with pytest.raises(ValueError, match=NEG_POW):
        lazyk.evaluate("a ** b", local_dict={"a": np.arange(3), "b": np.array([1, -2, 3])})


def test_int_power_non_negative_and_float_still_work():
    x = np.arange(5, dtype=np.int32)
    np.testing.assert_array_equal(lazyk.evaluate(lazyk.array(x) ** 2), x ** 2)
    np.testing.assert_array_equal(lazyk.evaluate(lazyk.array(x + 1) ** -1.0), (x + 1) ** -1.0)
    e = np.array([0, 1, 2, 3, 4], dtype=np.int64)
    np.testing.assert_array_equal(lazyk.evaluate(lazyk.array(x) ** e), x ** e)


# --- 3. evaluate's options are checked on every call ----------------------------------------

@pytest.mark.parametrize("as_string", [True, False])
@pytest.mark.parametrize("kw, err", [(dict(casting="bogus"), ValueError),
                                     (dict(order="Z"), ValueError),
                                     (dict(local_dict=[1]), TypeError),
                                     (dict(global_dict=3), TypeError)])
def test_evaluate_bad_options_raise(kw, err, as_string):
    b = np.arange(6.0).reshape(2, 3)
    expr = "b * 2" if as_string else lazyk.array(b) * 2
    with pytest.raises(err):
        lazyk.evaluate(expr, **kw)


def test_evaluate_string_direct_bad_options_raise():
    from lazyk.runtime.stringeval import evaluate_string

    with pytest.raises(TypeError, match="local_dict"):
        evaluate_string("b * 2", local_dict=[1])
    with pytest.raises(ValueError, match="casting"):
        evaluate_string("b * 2", local_dict={"b": np.ones(2)}, casting="bogus")


def test_evaluate_local_dict_mapping_accepted():
    from types import MappingProxyType

    r = lazyk.evaluate("b * 2", local_dict=MappingProxyType({"b": np.ones(3)}))
    np.testing.assert_array_equal(r, np.full(3, 2.0))


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
@pytest.mark.parametrize("fortran_input", [True, False])
def test_evaluate_order_of_fresh_result_like_numpy(order, fortran_input):
    x = np.arange(12.0).reshape(3, 4)
    if fortran_input:
        x = np.asfortranarray(x)
    r = lazyk.evaluate("x * 2 + 1", local_dict={"x": x}, order=order)
    n = np.add(np.multiply(x, 2), 1, order=order)
    np.testing.assert_array_equal(r, n)
    assert r.flags.f_contiguous == n.flags.f_contiguous
    assert r.flags.c_contiguous == n.flags.c_contiguous


def test_evaluate_order_f_reduction():
    x = np.arange(24.0).reshape(2, 3, 4)
    r = lazyk.evaluate(lazyk.array(x).sum(axis=2), order="F")
    np.testing.assert_array_equal(r, x.sum(axis=2))
    assert r.flags.f_contiguous


# --- 4. zeros / empty / full check lengths and types ----------------------------------------

@pytest.mark.parametrize("make", [lazyk.zeros, lazyk.empty,
                                  lambda t, lengths=None: lazyk.full(t, 7, lengths)])
@pytest.mark.parametrize("lengths, where", [([2, -1], "lengths[1]"), ([-5, 1], "lengths[0]"),
                                            ([2, 3, 4], "lengths[2]"),
                                            ([2.5, 1], "lengths[0]"),
                                            ([True, 1], "lengths[0]"),
                                            ([[2, 1], [3]], "lengths[1][0]")])
def test_var_lengths_validated(make, lengths, where):
    with pytest.raises(lazyk.ArrayConstructionError) as info:
        make("2 * var * int32", lengths)
    assert where in str(info.value)


def test_var_lengths_nested_and_arrays_still_work():
    assert lazyk.zeros("2 * var * int32", np.array([1, 2])).to_list() == [[0], [0, 0]]
    assert lazyk.zeros("2 * var * var * int8", [[1, 2], [1, 2, 3]]).to_list() == \
        [[[0]], [[0, 0], [0, 0, 0]]]
    with pytest.raises(ValueError, match=r"lengths\[1\]\[3\]"):
        lazyk.zeros("2 * var * var * int8", [[1, 2], [1, 2, 3, 4]])
    with pytest.raises(ValueError, match="no var dims"):
        lazyk.zeros("3 * int32", [1])


@pytest.mark.parametrize("make", [lazyk.zeros, lazyk.empty])
def test_symbolic_type_refused_clearly(make):
    with pytest.raises(ValueError, match="symbolic.*concrete") as info:
        make("N * int32")
    assert "fill value" not in str(info.value)


@pytest.mark.parametrize("make", [lazyk.zeros, lazyk.empty])
def test_too_large_type_names_byte_size(make):
    with pytest.raises((ValueError, MemoryError)) as info:
        make("4611686018427387904 * int64")
    msg = str(info.value)
    assert "fill value" not in msg and "36893488147419103232 bytes" in msg


# --- 5. set_num_threads wants an int --------------------------------------------------------

@pytest.mark.parametrize("bad", [1.5, "2", 2.0, None, True])
def test_set_num_threads_requires_int(bad):
    before = lazyk.get_num_threads()
    with pytest.raises(TypeError):
        lazyk.set_num_threads(bad)
    assert lazyk.get_num_threads() == before


def test_set_num_threads_accepts_integers():
    before = lazyk.get_num_threads()
    try:
        lazyk.set_num_threads(np.int64(1))
        assert lazyk.get_num_threads() == 1
        with pytest.raises(ValueError):
            lazyk.set_num_threads(0)
    finally:
        lazyk.set_num_threads(before)
    assert lazyk.get_num_threads() == before


# --- 6. docs/types.md says what string constants do ---------------------------------------

def test_string_constant_behaviour_matches_docs():
    from pathlib import Path

    a = np.arange(3)
    with pytest.raises(lazyk.UnsupportedOperandError, match="number and a string"):
        lazyk.evaluate('a == "x"', local_dict={"a": a})
    doc = (Path(__file__).resolve().parents[1] / "docs" / "types.md").read_text()
    assert "string constants are\n  not supported yet" not in doc
    assert "String constants, as Python writes them" in doc


# --- found while testing: JIT lock self-deadlock --------------------------------------------

_CLOSE_DURING_COMPILE = '''
from lazyk.backend import cpu
IR = "define i64 @{name}(i64 %x) {{\\n  ret i64 %x\\n}}\\n"
victim = cpu.JITModule(IR.format(name="qa_victim_fn"), ("qa_victim_fn",))
def gen():
    victim.close()  # what a GC-run Kernel.__del__ does in the middle of a compile
    return IR.format(name="qa_other_fn")
m = cpu.JITModule(gen, ("qa_other_fn",))
print("ok", bool(m.addresses["qa_other_fn"]), victim.engine is None)
'''


def test_jit_close_during_compile_does_not_deadlock():
    # A subprocess: on the old (plain Lock) code this hung forever holding the JIT lock.
    try:
        r = subprocess.run([sys.executable, "-c", _CLOSE_DURING_COMPILE], capture_output=True,
                           text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("JITModule.close() inside a compile deadlocked on the JIT lock")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ok", "True", "True"]
