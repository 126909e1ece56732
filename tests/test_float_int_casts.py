"""Float -> integer casts of NaN, inf and out-of-range values: one answer for every array
length and path, NumPy's on x86-64 (docs/types.md, "Float to integer casts")."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import lazyk

VALUES = [-1.0, np.nan, -np.nan, np.inf, -np.inf, 1e30, -1e30, 300.0, 70000.0, 5e9, 1e19,
          -129.0, 2.0 ** 63, -2.0 ** 63 - 4096, 2.0 ** 64, 2.0 ** 31, -2.0 ** 31 - 1,
          2.0 ** 32, 2.0 ** 31 + 0.5, -0.5, 255.9, 65535.5, -2.0 ** 63, -2.0 ** 31,
          -2.0 ** 31 - 0.5, 2.0 ** 63 - 1024, 1.5, -2.5]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def numpy_cast(a: np.ndarray, dt: str) -> np.ndarray:
    """NumPy's cast of each element on its own (its scalar loop); for every type but uint32
    also NumPy's answer for the whole array, whatever its length."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = np.array([np.array([v], a.dtype).astype(dt)[0] for v in a], dt)
        if dt != "uint32":
            np.testing.assert_array_equal(a.astype(dt), one)
    return one


@pytest.mark.parametrize("src", ["float64", "float32", "float16"])
@pytest.mark.parametrize("dt", INTS)
def test_float_to_int_casts_match_numpy_at_every_length(src, dt):
    k = lazyk.compile(lazyk.placeholder("x", f"N * {src}").astype(dt))
    kout = lazyk.compile(lazyk.placeholder("x", f"N * {src}") * 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        values = np.array(VALUES, src)
    for n in range(1, 18):
        for v in values:
            a = np.full(n, v, src)
            want = numpy_cast(a, dt)
            outs = [np.asarray(lazyk.array(a).astype(dt).eval()), k(a)]
            o = np.empty(n, dt)  # an implicit cast into out=
            lazyk.evaluate(lazyk.array(a) * 1, out=o, casting="unsafe")
            outs.append(o)
            o = np.zeros(n, dt)
            kout(a, out=o, casting="unsafe")
            outs.append(o)
            for path, got in enumerate(outs):
                assert got.dtype == np.dtype(dt) and got.shape == (n,), (path, src, dt)
                np.testing.assert_array_equal(got, want, err_msg=f"path {path}: {v} -> {dt}")
        # mixed values in one array: each element as alone
        a = np.concatenate([values] * 3)
        np.testing.assert_array_equal(k(a), numpy_cast(a, dt))


def test_float_to_int_casts_on_ragged_rows_and_bind():
    rows = [[-1.0, np.nan, 300.0], [], [5e9, -np.inf, 1e19, 2.0 ** 64, -0.5]]
    flat = np.array([v for r in rows for v in r])
    for dt in INTS:
        got = lazyk.array(rows).astype(dt).eval()
        assert str(got.type) == f"3 * var * {dt}"
        assert got.to_list() == [list(numpy_cast(np.array(r), dt)) for r in rows]
    k = lazyk.compile(lazyk.placeholder("x", "N * float64").astype("uint16"))
    out = np.empty(len(flat), np.uint16)
    bound = k.bind(out, flat)
    bound()
    np.testing.assert_array_equal(out, numpy_cast(flat, "uint16"))


def test_documented_examples():
    def cast(v, dt):
        return lazyk.array(np.array([v])).astype(dt).eval()[0]
    assert cast(-1.0, "uint16") == 65535 and cast(300.0, "int8") == 44
    assert cast(np.nan, "int16") == 0 and cast(np.nan, "int32") == -2 ** 31
    assert cast(5e9, "uint32") == 705032704 and cast(np.nan, "uint32") == 0
    assert cast(1e19, "uint64") == 10 ** 19
    assert [int(cast(v, "uint64")) for v in (np.nan, -np.inf, -1e30, np.inf, 2.0 ** 64, -1.0)] \
        == [2 ** 63] * 3 + [0, 0, 2 ** 64 - 1]


def test_no_poison_cast_in_cpu_or_nvvm_ir():
    from lazyk.codegen import nvvm
    from lazyk.frontend.spec import Instr, KernelSpec

    f8 = np.dtype("f8")
    for dt in INTS:
        spec = KernelSpec((f8,), (True,), (Instr("load", f8, (), 0),
                                           Instr("astype", np.dtype(dt), (0,), np.dtype(dt))),
                          ((1, np.dtype(dt)),))
        text = nvvm.lower(spec, nvvm.LayoutClass(1, (False,), (True, True)))
        assert "fptoui" not in text and "fptosi" in text and "select" in text
    ir = lazyk.placeholder("x", "N * float64").astype("uint32").explain()
    source = ir.split("== LLVM IR")[1]
    assert "fptoui" not in source and "fptosi" in source


def test_float_results_stored_into_integer_outs_of_every_kind():
    """Where NumPy copies a result into `out` (not the kernel), the same rule holds."""
    n = 12  # NumPy's vectorized uint32 loop differs from its scalar one from 4 elements
    values = np.full(n, np.nan)
    values[1::3], values[2::3] = 5e9, -1e30
    want = numpy_cast(values, "uint32")
    assert not np.array_equal(values.astype("uint32"), want)  # NumPy itself differs here
    k = lazyk.compile(lazyk.placeholder("x", "N * float64") * 1)
    for out in (np.zeros(n, ">u4"), np.zeros((2, n), np.uint32)[:, ::1][0],
                np.zeros(2 * n, np.uint32)[::2]):
        k(values, out=out, casting="unsafe")
        np.testing.assert_array_equal(out, want)
        out[...] = 0
        lazyk.evaluate(lazyk.array(values) * 1, out=out, casting="unsafe")
        np.testing.assert_array_equal(out, want)
    # a constant result, and ragged results stored into integer lazyk arrays
    out = np.zeros(n, np.uint32)
    lazyk.evaluate(lazyk.array(np.float64(np.nan)) * 1, out=out, casting="unsafe")
    np.testing.assert_array_equal(out, numpy_cast(np.full(n, np.nan), "uint32"))
    rows = [list(values[:5]), [], list(values[5:])]
    ro = lazyk.array([[0] * 5, [], [0] * 7], type="3 * var * uint32")
    lazyk.evaluate(lazyk.array(rows) * 1, out=ro, casting="unsafe")
    assert ro.to_list() == [list(numpy_cast(np.array(r), "uint32")) for r in rows]
