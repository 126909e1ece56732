"""libmvec rewrite: the assembly calls `_ZGV*` symbols and results stay within 4 ULP."""
from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest

llvm = pytest.importorskip("llvmlite.binding")

from lazyk.backend import vecmath  # noqa: E402

# glibc documents libmvec's double functions as accurate to 4 ULP; we hold it to that against a
# long-double reference (libm's `*l` functions through NumPy), so the bound is the library's own.
ULP_BOUND = 4.0

UNARY = ["sin", "cos", "tan", "exp", "exp2", "log", "log2", "log10", "sinh", "cosh", "tanh",
         "asin", "acos", "atan"]
BINARY = ["pow", "atan2"]
NUMPY = {"pow": np.power, "atan2": np.arctan2, "asin": np.arcsin, "acos": np.arccos,
         "atan": np.arctan}

pytestmark = pytest.mark.skipif(not vecmath.load(), reason="libmvec not available")

_TEMPLATE = """
declare double @llvm.{f}.f64({params})
define void @k(ptr noalias %out, ptr noalias %a, ptr noalias %b, i64 %n) #0 {{
entry:
  %c = icmp sgt i64 %n, 0
  br i1 %c, label %loop, label %done
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
  %pa = getelementptr double, ptr %a, i64 %i
  %pb = getelementptr double, ptr %b, i64 %i
  %va = load double, ptr %pa
  %vb = load double, ptr %pb
  %r = call double @llvm.{f}.f64({args})
  %po = getelementptr double, ptr %out, i64 %i
  store double %r, ptr %po
  %i1 = add i64 %i, 1
  %c2 = icmp slt i64 %i1, %n
  br i1 %c2, label %loop, label %done
done:
  ret void
}}
attributes #0 = {{ nounwind "prefer-vector-width"="{width}" }}
"""

_keep = []


def _target_machine():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                        features=llvm.get_host_cpu_features().flatten(),
                                        opt=3, codemodel="jitdefault")


def _compile(func: str, width: int):
    """O3 a one-loop kernel calling `llvm.<func>.f64`, rewrite it, JIT it; (callable, IR, asm)."""
    nargs = vecmath.FUNCTIONS[func][1]
    ir = _TEMPLATE.format(f=func, width=width, params=", ".join(["double"] * nargs),
                          args="double %va" if nargs == 1 else "double %va, double %vb")
    tm = _target_machine()
    mod = llvm.parse_assembly(ir)
    mod.triple, mod.data_layout = tm.triple, str(tm.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    text = vecmath.rewrite(str(mod), llvm.get_host_cpu_features().flatten())
    asm = tm.emit_assembly(llvm.parse_assembly(text))
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(text), tm)
    engine.finalize_object()
    _keep.append(engine)
    proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    fn = proto(engine.get_function_address("k"))

    def call(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        out = np.empty_like(a)
        fn(out.ctypes.data, a.ctypes.data, b.ctypes.data, a.size)
        return out

    return call, text, asm


def _inputs(func: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Wide ranges plus NaN, inf, zeros and denormals, in a length that leaves a scalar tail."""
    n = 20_003
    mag = {"exp": 700, "exp2": 1000, "sinh": 700, "cosh": 700, "pow": 30}.get(func, 1e6)
    a = np.concatenate([
        rng.uniform(-mag, mag, n // 2),
        rng.uniform(-4, 4, n // 4),
        np.exp(rng.uniform(-740, 700, n - n // 2 - n // 4 - 12)),
        [np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -5e-324, 2.2e-308, 1e300, -1e300, 1.0, -1.0],
    ])
    if func in ("asin", "acos"):
        a = np.concatenate([rng.uniform(-1, 1, n - 8), [1.0, -1.0, 0.0, 1.5, np.nan, np.inf, 5e-324, -0.0]])
    if func in ("log", "log2", "log10"):
        a = np.abs(a)
    b = rng.uniform(-10, 10, a.size)
    if func == "pow":
        a = np.abs(a)
    return np.ascontiguousarray(a), b


def _ulp_error(got: np.ndarray, a: np.ndarray, b: np.ndarray, func: str) -> float:
    ref_fn = NUMPY.get(func, getattr(np, func))
    args = (a.astype(np.longdouble),) if vecmath.FUNCTIONS[func][1] == 1 else (
        a.astype(np.longdouble), b.astype(np.longdouble))
    with np.errstate(all="ignore"):
        ref_ld = ref_fn(*args)
        ref = ref_ld.astype(np.float64)
    special = ~np.isfinite(ref) | ~np.isfinite(got)
    assert np.array_equal(np.isnan(got), np.isnan(ref)), "NaN positions differ"
    assert np.array_equal(got[special & ~np.isnan(ref)], ref[special & ~np.isnan(ref)]), "inf differs"
    fin = ~special
    with np.errstate(all="ignore"):
        err = np.abs(got[fin].astype(np.longdouble) - ref_ld[fin]) / np.spacing(np.abs(ref[fin]))
    return float(err.max(initial=0.0))


@pytest.mark.parametrize("func", UNARY + BINARY)
def test_accuracy_within_bound(func: str) -> None:
    rng = np.random.default_rng(5)
    call, _, _ = _compile(func, 512)
    a, b = _inputs(func, rng)
    with np.errstate(all="ignore"):
        got = call(a, b)
    assert _ulp_error(got, a, b, func) <= ULP_BOUND


@pytest.mark.parametrize("width,isa", [(256, "d"), (512, "e")])
def test_assembly_calls_libmvec(width: int, isa: str) -> None:
    features = vecmath.parse_features(llvm.get_host_cpu_features().flatten())
    need = {"d": "avx2", "e": "avx512f"}[isa]
    if need not in features:
        pytest.skip(f"CPU lacks {need}")
    _, text, asm = _compile("sin", width)
    assert "@llvm.sin.v" not in text
    assert f"_ZGV{isa}N" in asm and "_sin" in asm


def test_rewrite_names_and_fallbacks() -> None:
    ir = ("%r = call <4 x double> @llvm.exp.v4f64(<4 x double> %x)\n"
          "%s = call <8 x double> @llvm.pow.v8f64(<8 x double> %x, <8 x double> %y)\n"
          "%t = call <16 x float> @llvm.sin.v16f32(<16 x float> %z)\n"
          "%u = call double @llvm.sin.f64(double %w)\n")
    out = vecmath.rewrite(ir, "+avx2,+sse4.1,-avx512f", available=True)
    assert "@_ZGVdN4v_exp(" in out
    assert "@llvm.pow.v8f64" in out and "@llvm.sin.v16f32" in out  # no AVX-512: left scalarized
    assert "@llvm.sin.f64" in out
    out = vecmath.rewrite(ir, ["avx2", "avx512f"], available=True)
    assert "@_ZGVeN8vv_pow(" in out and "@_ZGVeN16v_sinf(" in out
    assert vecmath.rewrite(ir, "+avx2", available=False) == ir
    # SSE variants only where the CPU has no AVX2 (called from AVX code they stall)
    four = "%v = call <4 x float> @llvm.sin.v4f32(<4 x float> %z)\n"
    assert "@_ZGVbN4v_sinf(" in vecmath.rewrite(four, "+sse4.1,-avx2", available=True)
    assert "@llvm.sin.v4f32(" in vecmath.rewrite(four, "+sse4.1,+avx2", available=True)


@pytest.mark.parametrize("func", ["sin", "pow"])
def test_renaming_in_the_module_emits_the_text_rewrites_object(func: str) -> None:
    """The backend renames the declarations (no second parse): the same machine code as the
    text rewrite, which it replaced."""
    from lazyk.backend import optworker

    if not vecmath.load():
        pytest.skip("no libmvec")
    nargs = vecmath.FUNCTIONS[func][1]
    ir = _TEMPLATE.format(f=func, width=256, params=", ".join(["double"] * nargs),
                          args="double %va" if nargs == 1 else "double %va, double %vb")
    tm = _target_machine()
    features = llvm.get_host_cpu_features().flatten()
    have = vecmath.parse_features(features)
    layout = str(tm.target_data)
    text, obj = optworker.compile_ir(tm, ir, tm.triple, layout,
                                     lambda name: vecmath.vector_name(name, have))
    mod = optworker.parse(ir, tm.triple, layout)
    optworker.optimize(tm, mod)
    want = vecmath.rewrite(str(mod), features)
    assert text == want and "@_ZGV" in text
    assert obj == tm.emit_object(optworker.parse(want, tm.triple, layout))
    assert vecmath.vector_name("llvm.sin.v3f64", have) is None
    assert vecmath.vector_name("llvm.fabs.v4f64", have) is None


def test_helper_process_renames_too(tmp_path) -> None:
    """The optimizer helper process (every module optimized there) emits libmvec calls too
    (sin's renamed intrinsic, log1p's declared variant), with NumPy's values."""
    import os
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import numpy as np
        import lazyk
        from lazyk.backend import cpu, vecmath
        from lazyk.kernel import flat
        x = np.linspace(-20, 20, 10_003)
        got = lazyk.evaluate(lazyk.sin(lazyk.array(x)) * 3.5 - 7)
        np.testing.assert_allclose(got, np.sin(x) * 3.5 - 7, rtol=1e-13, atol=1e-13)
        got = lazyk.evaluate(lazyk.log1p(lazyk.array(np.abs(x))))
        np.testing.assert_allclose(got, np.log1p(np.abs(x)), rtol=1e-15, atol=0)
        ir = "".join(k.jit.llvm_ir or "" for k in flat.kernels._data.values())
        print(cpu.host().optimized["helper"], "_ZGV" in ir and "v_log1p(" in ir,
              vecmath.load())
    """)
    env = dict(os.environ, LAZYK_OPTIMIZE_IN_PROCESS="0", LAZYK_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout.split()
    assert int(out[0]) >= 1
    avx2 = "avx2" in vecmath.parse_features(llvm.get_host_cpu_features().flatten())
    assert out[1] == str(out[2] == "True" and avx2)


def test_float32_math_of_a_cast_calls_no_sse_variant_from_avx_code() -> None:
    """4 x double loads, then 4 x float sin: on an AVX2 CPU the loop calls libm, not the
    SSE variant (which stalls between AVX instructions), and gives NumPy's float32 values."""
    import numpy as np

    import lazyk

    if "avx2" not in vecmath.parse_features(llvm.get_host_cpu_features().flatten()):
        pytest.skip("CPU lacks avx2")
    x = np.linspace(-5, 5, 4099)
    e = lazyk.sin(lazyk.array(x).astype(np.float32))
    assert "_ZGVbN" not in e.explain()
    got = e.eval().to_numpy()
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.sin(x.astype(np.float32)), rtol=2e-7, atol=1e-7)


# ---------------------------------------------------------------- libm functions without an
# LLVM intrinsic: their declarations name libmvec variants (`vecmath.annotate`)
LIBM = {"log1p": "log1p", "expm1": "expm1", "arcsinh": "asinh", "arccosh": "acosh",
        "arctanh": "atanh"}
_EDGES = [np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -5e-324, 2.2e-308, 1e-300, -1e-300,
          1e300, -1e300, 1.7e308, -1.7e308, 1.0, -1.0, -1.0000001, -0.9999999999, -2.0, 0.5,
          -0.5, 1e-8, -1e-8, 709.78, 710.0, -745.0, 88.7, 89.0, -104.0, 1e-40, 3.4e38]


def _avx2() -> None:
    if "avx2" not in vecmath.parse_features(llvm.get_host_cpu_features().flatten()):
        pytest.skip("CPU lacks avx2")


def _wide(dtype, rng: np.random.Generator, n: int = 40_003) -> np.ndarray:
    """Wide ranges of both signs (|x| < 1.1, < 4, < 1e6, e**-745 .. e**709) and the edges."""
    k = n // 4
    a = np.concatenate([rng.uniform(-1.1, 1.1, k), rng.uniform(-4, 4, k),
                        rng.uniform(-1e6, 1e6, k),
                        np.exp(rng.uniform(-745, 709, n - 3 * k)) * rng.choice([-1, 1], n - 3 * k),
                        _EDGES])
    with np.errstate(over="ignore"):
        return a.astype(dtype)


def _check_ulp(got: np.ndarray, ref: np.ndarray, ref_wide: np.ndarray) -> float:
    """NaN, infinities and signed zeros exactly NumPy's (`ref`); the largest error elsewhere in
    units of the result's last place, against a more precise reference (`ref_wide`)."""
    assert got.dtype == ref.dtype
    assert np.array_equal(np.isnan(got), np.isnan(ref)), "NaN positions differ"
    special = ~np.isfinite(ref) | ~np.isfinite(got) | (ref == 0)
    keep = special & ~np.isnan(ref)
    assert np.array_equal(got[keep], ref[keep]), "infinities or zeros differ"
    assert np.array_equal(np.signbit(got[keep]), np.signbit(ref[keep])), "signs differ"
    fin = ~special
    tiny = np.finfo(ref.dtype).smallest_subnormal
    with np.errstate(all="ignore"):
        err = np.abs(got[fin].astype(np.longdouble) - ref_wide[fin]) / np.maximum(
            np.spacing(np.abs(ref[fin])), tiny).astype(np.longdouble)
    return float(err.max(initial=0.0))


def _reference(npf, *args):
    """NumPy's values, and more precise ones: long double for float64, float64 for float32."""
    wide = np.longdouble if args[0].dtype == np.float64 else np.float64
    with np.errstate(all="ignore"):
        return npf(*args), npf(*(a.astype(wide) for a in args)).astype(np.longdouble)


def _calls(text: str) -> set:
    """The libmvec functions the assembly in `text` loads the address of or calls."""
    return set(re.findall(r"(?:\$|call\w*\s+)(_ZGV\w+)", text))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("func", sorted(LIBM))
def test_libm_function_calls_libmvec_within_bound(func: str, dtype) -> None:
    """Dense `lazyk.log1p(x)` & co. call the AVX2 libmvec variant (they were scalar libm
    calls), with NumPy's special values and within ULP_BOUND elsewhere."""
    _avx2()
    import lazyk

    a = _wide(dtype, np.random.default_rng(11))
    e = getattr(lazyk, func)(lazyk.array(a))
    lanes, f = (4, "") if dtype == np.float64 else (8, "f")
    assert f"_ZGVdN{lanes}v_{LIBM[func]}{f}" in _calls(e.explain())
    got = lazyk.evaluate(e)
    ref, wide = _reference(getattr(np, func), a)
    assert _check_ulp(got, ref, wide) <= ULP_BOUND


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_hypot_and_complex_abs_call_libmvec_without_overflow(dtype) -> None:
    """hypot and complex abs (a hypot) call `_ZGVdN4vv_hypot` / `_ZGVdN8vv_hypotf`: NumPy's
    values for every pair of edge values (hypot(inf, nan) = inf), no overflow where NumPy has
    none (1e300 and 1e300), within ULP_BOUND elsewhere."""
    _avx2()
    import lazyk

    rng = np.random.default_rng(12)
    big = 1e300 if dtype == np.float64 else 1e38
    edges = np.array(_EDGES + [1e308, 3e38, 2e38, 1e-310, big], np.float64)
    with np.errstate(over="ignore"):
        edges = edges.astype(dtype)
    a = np.concatenate([_wide(dtype, rng), np.repeat(edges, edges.size), np.full(64, big)])
    b = np.concatenate([np.roll(_wide(dtype, rng), 5), np.tile(edges, edges.size),
                        np.full(64, -big)])
    a, b = a.astype(dtype), b.astype(dtype)
    name = "_ZGVdN4vv_hypot" if dtype == np.float64 else "_ZGVdN8vv_hypotf"
    e = lazyk.hypot(lazyk.array(a), lazyk.array(b))
    assert name in _calls(e.explain())
    got = lazyk.evaluate(e)
    ref, wide = _reference(np.hypot, a, b)
    assert _check_ulp(got, ref, wide) <= ULP_BOUND
    assert np.isfinite(got[-64:]).all()
    z = np.empty(a.size, np.complex128 if dtype == np.float64 else np.complex64)
    z.real, z.imag = a, b
    e = abs(lazyk.array(z))
    assert name in _calls(e.explain())
    with np.errstate(all="ignore"):
        assert _check_ulp(lazyk.evaluate(e), np.abs(z), wide) <= ULP_BOUND


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_ragged_row_sums_of_log1p_call_libmvec(dtype) -> None:
    """`lazyk.log1p(x).sum(axis=1)` over var * float: the loop nest (its staged fold) calls
    the libmvec variant, and the sums are NumPy's within rounding."""
    _avx2()
    import lazyk

    ak = pytest.importorskip("awkward")
    rng = np.random.default_rng(13)
    counts = rng.integers(0, 9, 5000)
    content = rng.uniform(-0.99, 50, counts.sum()).astype(dtype)
    content[::97] = np.array([np.inf, -1.0, 0.0, -0.0, 1e-30], dtype)[
        np.arange(content[::97].size) % 5]
    x = ak.unflatten(content, counts)
    e = lazyk.log1p(lazyk.array(x)).sum(axis=1)
    lanes, f = (4, "") if dtype == np.float64 else (8, "f")
    assert f"_ZGVdN{lanes}v_log1p{f}" in _calls(e.explain())
    got = np.asarray(lazyk.evaluate(e))
    with np.errstate(divide="ignore"):
        ref = np.add.reduceat(np.log1p(content.astype(np.float64)),
                              np.r_[0, np.cumsum(counts)[:-1]].clip(max=content.size - 1))
    ref[counts == 0] = 0.0
    np.testing.assert_allclose(got, ref, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_annotate_declares_variants_the_cpu_runs() -> None:
    """`annotate` names the variants of the CPU's ISAs (no SSE ones beside AVX2), merges the
    module's own `llvm.compiler.used` list, and leaves everything else alone."""
    ir = ('declare double @"log1p"(double %".1")\n'
          'declare float @"hypotf"(float %".1", float %".2")\n'
          'declare double @"cbrt"(double %".1")\n'
          '@"llvm.compiler.used" = appending global [1 x i8*] [i8* bitcast (double (double, '
          'double)* @"lazyk.fmod.f64" to i8*)], section "llvm.metadata"\n')
    out = vecmath.annotate(ir, frozenset({"sse4.1", "avx2"}))
    assert ('"vector-function-abi-variant"="_ZGVdN4v_log1p(_ZGVdN4v_log1p)"' in out and
            '"_ZGVdN8vv_hypotf(_ZGVdN8vv_hypotf)"' in out and "_ZGVb" not in out)
    assert "declare <8 x float> @_ZGVdN8vv_hypotf(<8 x float>, <8 x float>)" in out
    assert out.count("llvm.compiler.used") == 1 and "[3 x ptr]" in out
    assert "lazyk.fmod.f64" in out and 'declare double @"cbrt"(double %".1")\n' in out
    wide = vecmath.annotate(ir, frozenset({"sse4.1", "avx2", "avx512f"}))
    assert "_ZGVeN8v_log1p(_ZGVeN8v_log1p)" in wide and "_ZGVeN16vv_hypotf" in wide
    assert "_ZGVbN2v_log1p" in vecmath.annotate(ir, frozenset({"sse4.1"}))
    assert vecmath.annotate(ir, frozenset()) == ir
    assert vecmath.CACHE_TAG != "mvec"  # (objects cached before annotate: scalar libm calls)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("func", ["sin", "exp", "log1p"])
def test_math_over_a_strided_operand_calls_libmvec(func: str, dtype) -> None:
    """A column of a 2-d array (stride known only at run time) runs by blocks through a stack
    buffer: the loop over a block calls the vector function. A loop over the column itself
    was versioned by LLVM on its stride (`ident.check`), every real stride a scalar loop."""
    _avx2()
    import lazyk

    x = np.random.default_rng(6).uniform(0.5, 2, (1001, 4)).astype(dtype)[:, 1]
    e = getattr(lazyk, func)(lazyk.array(x))
    text = e.explain()
    assert "inner='cs'" in text
    ir = text[text.index("== LLVM IR (optimized)"):text.index("== assembly")]
    assert "ident.check" not in ir
    assert _calls(text[text.index("== assembly"):]), "no libmvec call for the strided column"
    np.testing.assert_allclose(np.asarray(lazyk.evaluate(e)), getattr(np, func)(x), rtol=1e-6)


@pytest.mark.parametrize("expr", ["sum(sin(x))", "mean(exp(x))", "sum(sin(c))", "sum(sin(m), 1)"])
def test_float32_math_into_a_float64_sum_calls_libmvec(expr: str) -> None:
    """float32 math feeding a float64 accumulator runs 8 lanes (the 8-lane libmvec function):
    LLVM took the accumulator's 4 lanes, which call libm once per value beside AVX code."""
    _avx2()
    import lazyk

    rng = np.random.default_rng(7)
    env = {"x": rng.uniform(-3, 3, 10_001).astype(np.float32),
           "c": rng.uniform(-3, 3, (10_001, 3)).astype(np.float32)[:, 1],
           "m": rng.uniform(-3, 3, (101, 99)).astype(np.float32)}
    text = str(lazyk.explain(expr, local_dict=env))
    e = lazyk.evaluate(expr, env)
    wide = {k: v.astype(np.float64) for k, v in env.items()}
    want = {"sum(sin(x))": np.sin(wide["x"]).sum(), "mean(exp(x))": np.exp(wide["x"]).mean(),
            "sum(sin(c))": np.sin(wide["c"]).sum(),
            "sum(sin(m), 1)": np.sin(wide["m"]).sum(axis=1)}[expr]
    assert np.asarray(e).dtype == np.float32
    np.testing.assert_allclose(np.asarray(e, np.float64), want, rtol=1e-5, atol=1e-4)
    assert _calls(text[text.index("== assembly"):]), "no libmvec call"
