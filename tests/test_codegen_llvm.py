"""Codegen structure: entries, typed-pointer IR, vector instructions in the contiguous loop."""
import re

import numpy as np
from llvmlite import ir

from lazyk.codegen.emit import CPUTarget, emit_body
from lazyk.codegen.llvm import LayoutClass, generate
from lazyk.kernel.flat import Instr, KernelSpec, compile

F8, F4 = np.dtype("f8"), np.dtype("f4")


def add_spec(dt=F8, inputs=None):
    inputs = inputs or (dt, dt)
    body = (Instr("load", inputs[0], (), 0), Instr("load", inputs[1], (), 1),
            Instr("add", dt, (0, 1)))
    return KernelSpec(inputs, (True, True), body, ((2, dt),))


def test_one_kernel_with_both_abi_entries():
    text = str(generate(add_spec(), LayoutClass(1, "ccc")))
    defined = re.findall(r"^define .*?@\"?(\w+)\"?\(", text, re.M)
    assert sorted(defined) == ["lazyk_k_destroy", "lazyk_k_fallback", "lazyk_k_nest",
                               "lazyk_k_single", "lazyk_k_strided"]
    # single(char *dst, char *const *src, ckernel_prefix *self)
    assert re.search(r'define void @"lazyk_k_single"\(i8\* %"\.1", i8\*\* %"\.2", i8\* %"\.3"\)',
                     text)
    # typed pointers (llvmlite.ir's default) so libNVVM accepts the same text
    assert "i8*" in text and " ptr " not in text


def test_contiguous_loop_is_vectorized():
    k = compile(add_spec(), LayoutClass(1, "ccc"))
    asm = k.asm
    assert re.search(r"vaddpd\s+.*%(y|z)mm", asm), "no packed double add in the assembly"
    k4 = compile(add_spec(F4), LayoutClass(1, "ccc"))
    assert re.search(r"vaddps\s+.*%(y|z)mm", k4.asm)


def test_where_is_branchless_select():
    body = (Instr("load", F8, (), 0), Instr("load", F8, (), 1), Instr("greater", np.dtype(bool),
            (0, 1)), Instr("subtract", F8, (0, 1)), Instr("subtract", F8, (1, 0)),
            Instr("where", F8, (2, 3, 4)))
    spec = KernelSpec((F8, F8), (True, True), body, ((5, F8),))
    text = str(generate(spec, LayoutClass(1, "ccc")))
    assert "select" in text
    asm = compile(spec, LayoutClass(1, "ccc")).asm
    assert re.search(r"v(blendv|cmp)\w*pd\s+.*%(y|z)mm|vsubpd\s+.*%(y|z)mm\{%k", asm) or \
        re.search(r"vcmp\w*pd\s+.*%k", asm)


def test_byteswap_and_unaligned_loads():
    sw = np.dtype(">f8")
    body = (Instr("load", sw, (), 0), Instr("load", F8, (), 1), Instr("add", F8, (0, 1)))
    spec = KernelSpec((sw, F8), (True, False), body, ((2, F8),))
    text = str(generate(spec, LayoutClass(1, "ccc")))
    assert "llvm.bswap.i64" in text
    assert re.search(r"load double, double\* .*, align 1", text)  # unaligned operand


def test_float16_computes_in_float32():
    h = np.dtype("f2")
    text = str(generate(add_spec(h), LayoutClass(1, "ccc")))
    assert "fpext half" in text and "fadd float" in text and "fptrunc float" in text


def test_sum_uses_reassoc_and_vector_accumulators():
    spec = KernelSpec((F8,), (True,), (Instr("load", F8, (), 0),), ((0, F8),), "sum")
    text = str(generate(spec, LayoutClass(1, "0c")))
    assert "fadd reassoc" in text
    k = compile(spec, LayoutClass(1, "0c"))
    adds = re.findall(r"vaddpd\s+.*%(?:y|z)mm", k.asm)
    assert len(adds) >= 2  # several accumulators (interleaved), not one sequential chain


def test_float_min_max_fold_with_plain_vector_min_max_and_see_nan_apart():
    """NumPy's NaN rule kept by a second fold (a NaN seen) beside a plain min / max, so the
    loop is vector min / max instructions, not `llvm.maximum`'s blends per vector."""
    import lazyk
    rng = np.random.default_rng(2)
    for dt in (np.float32, np.float64):
        for op in ("max", "min"):
            spec = KernelSpec((np.dtype(dt),), (True,), (Instr("load", np.dtype(dt), (), 0),),
                              ((0, np.dtype(dt)),), op)
            asm = compile(spec, LayoutClass(1, "0c")).asm
            assert re.search(rf"v?{op}p[sd]\s", asm) and "blend" not in asm, (dt, op)
            for x in (rng.standard_normal(1000).astype(dt), np.array([1.0, np.nan, 3.0], dt),
                      np.array([np.nan] * 9, dt), np.array([0.0, -0.0, 0.0, -0.0], dt),
                      np.array([-np.inf, 2.0, np.inf], dt)):
                got = np.asarray(lazyk.evaluate(getattr(lazyk, op)(x)))
                want = getattr(np, op)(x)
                assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)


def test_emit_body_is_reusable_with_another_target():
    """The GPU path calls emit_body with its own math naming."""
    class Named(CPUTarget):
        def math(self, module, name, ty):
            fname = f"__nv_{name}"
            fn = module.globals.get(fname)
            return fn or ir.Function(module, ir.FunctionType(ty, [ty]), fname)
    spec = KernelSpec((F8,), (True,), (Instr("load", F8, (), 0), Instr("sin", F8, (0,))),
                      ((1, F8),))
    m = ir.Module()
    fn = ir.Function(m, ir.FunctionType(ir.DoubleType(), [ir.DoubleType()]), "f")
    b = ir.IRBuilder(fn.append_basic_block())
    (v,) = emit_body(b, spec, [fn.args[0]], Named())
    b.ret(v)
    assert "call double @\"__nv_sin\"(double" in str(m) or "@__nv_sin" in str(m)


def _ir(spec, inner):
    return str(generate(spec, LayoutClass(1, inner)))


def test_only_math_over_strided_operands_runs_by_blocks():
    """Blocks (a stack buffer per strided operand) only where a strided operand meets a
    math call: contiguous kernels and plain arithmetic keep their loops."""
    sin = KernelSpec((F4,), (True,), (Instr("load", F4, (), 0), Instr("sin", F4, (0,))),
                     ((1, F4),))
    assert "blk.body" in _ir(sin, "cs") and "blk.body" in _ir(sin, "ss")
    assert "blk.body" not in _ir(sin, "cc") and "alloca [" not in _ir(sin, "cc")
    assert "blk.body" not in _ir(add_spec(), "css") and "blk.body" not in _ir(add_spec(), "ccc")
