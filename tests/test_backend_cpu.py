"""The CPU backend's linking: every symbol a kernel calls resolves, or the compile is refused."""
import numpy as np
import pytest

from lazyk.backend import cpu
from lazyk.errors import CompileError

CALLS = """
declare double @{callee}(double)
define double @{name}(double %x) {{
  %r = call double @{callee}(double %x)
  ret double %r
}}
"""


def test_unresolvable_call_is_refused_naming_the_symbol():
    # MCJIT links an unknown symbol as address 0: the first call would segfault.
    ir = CALLS.format(name="lazyk_test_calls_nothing", callee="lazyk_no_such_function")
    with pytest.raises(CompileError, match="lazyk_no_such_function"):
        cpu.JITModule(ir, ("lazyk_test_calls_nothing",))


def test_libm_call_resolves():
    m = cpu.JITModule(CALLS.format(name="lazyk_test_calls_sin", callee="sin"),
                      ("lazyk_test_calls_sin",))
    assert m.addresses["lazyk_test_calls_sin"]
    m.close()


def test_codegen_libcalls_resolve():
    # double -> half has no instruction without AVX512-FP16: LLVM calls __truncdfhf2 from
    # libgcc_s, which a Python process maps RTLD_LOCAL (it crashed on an AMD znver4 host).
    import lazyk

    x = np.array([0.1, -2.5, 65504.0, 1e6, np.nan, 3.14159], dtype=np.float64)
    got = lazyk.array(x).astype("float16").eval().to_numpy()
    assert got.dtype == np.float16
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got, x.astype(np.float16))


def test_object_symbol_scan():
    h = cpu.host()
    import llvmlite.binding as llvm

    mod = llvm.parse_assembly(CALLS.format(name="f", callee="lazyk_missing_callee"))
    mod.triple = h.triple
    assert cpu.object_symbols(h.tm.emit_object(mod))[1] == ["lazyk_missing_callee"]
    assert cpu.object_symbols(b"not an object") == (None, [])


def test_wide_vectors_on_cpus_whose_512_bit_vectors_run_at_full_speed():
    from lazyk.backend.optworker import wide_vectors

    assert wide_vectors("+avx2,+avx512f,+fma", "sapphirerapids").endswith(",-prefer-256-bit")
    for features, name in (("+avx2,+avx512f", "skylake-avx512"), ("+avx2,-avx512f", "emeraldrapids"),
                           ("+avx2", "znver3")):
        assert wide_vectors(features, name) == features


def test_vector_math_loop_uses_the_hosts_preferred_width():
    import lazyk
    from lazyk.backend.objcache import host_target

    wide = host_target()[1].endswith(",-prefer-256-bit")
    assert cpu.host().features == host_target()[1]  # (the cache key names what is compiled)
    x = lazyk.array(np.linspace(0, 1, 1000))
    asm = str(lazyk.cos(x * 2.0).explain())
    assert ("zmm" in asm) == wide
    np.testing.assert_allclose(lazyk.cos(x * 2.0).to_numpy(), np.cos(np.linspace(0, 1, 1000) * 2.0),
                               rtol=0, atol=1e-14)
