"""NVVM toolchain and codegen without a GPU: IR -> libNVVM (out of process) -> PTX -> ptxas."""
import sys

import pytest

from lazyk.errors import CompileError, DeviceError

nvvmc = pytest.importorskip("lazyk.backend.nvvmc")
try:
    nvvmc.find_toolchain()
except DeviceError as err:  # pragma: no cover - the cuda extra is a test dependency here
    pytest.skip(f"no CUDA toolchain: {err}", allow_module_level=True)

# A grid-stride kernel out = sin(a), written by hand in NVVM's typed-pointer dialect.
HAND_IR = """\
target triple = "nvptx64-nvidia-cuda"
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-\
f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"

declare double @__nv_sin(double)
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()

define void @k(double* %out, double* %a, i64 %n) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %b = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %nt = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %nb = call i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
  %bb = mul i32 %b, %nt
  %i0 = add i32 %bb, %t
  %i064 = zext i32 %i0 to i64
  %st = mul i32 %nt, %nb
  %st64 = zext i32 %st to i64
  br label %loop
loop:
  %i = phi i64 [ %i064, %entry ], [ %inext, %body ]
  %c = icmp slt i64 %i, %n
  br i1 %c, label %body, label %exit
body:
  %pa = getelementptr double, double* %a, i64 %i
  %x = load double, double* %pa
  %y = call double @__nv_sin(double %x)
  %po = getelementptr double, double* %out, i64 %i
  store double %y, double* %po
  %inext = add i64 %i, %st64
  br label %loop
exit:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (double*, double*, i64)* @k, !"kernel", i32 1}
!nvvmir.version = !{!1}
!1 = !{i32 2, i32 0}
"""
KERNEL_MD = '!0 = !{void (double*, double*, i64)* @k, !"kernel", i32 1}'


@pytest.fixture(scope="module")
def hand_ptx():
    return nvvmc.compile_ptx(HAND_IR)


def test_hand_kernel_has_entry_and_libdevice(hand_ptx):
    assert ".visible .entry k(" in hand_ptx
    assert ".extern" not in hand_ptx
    assert nvvmc.ptx_version(hand_ptx) >= (7, 8)
    assert ".target sm_90" in hand_ptx


def test_hand_kernel_assembles(hand_ptx):
    cubin = nvvmc.assemble(hand_ptx)
    assert cubin[:4] == b"\x7fELF"


def test_fma_option():
    ir = HAND_IR.replace("%y = call double @__nv_sin(double %x)",
                         "%m = fmul double %x, %x\n  %y = fadd double %m, %x")
    ir = ir.replace("declare double @__nv_sin(double)\n", "")
    assert "fma.rn.f64" in nvvmc.compile_ptx(ir, fma=True)
    unfused = nvvmc.compile_ptx(ir, fma=False)
    assert "fma" not in unfused and "mul.rn.f64" in unfused


def test_malformed_ir_is_compile_error():
    with pytest.raises(CompileError, match="libNVVM rejected"):
        nvvmc.compile_ptx("this is not IR")
    with pytest.raises(CompileError, match="INVALID_IR"):
        nvvmc.compile_ptx(HAND_IR.replace("double*", "ptr"))  # opaque pointers: LLVM 22 text


def test_missing_annotation_is_compile_error():
    with pytest.raises(CompileError, match="no .entry"):
        nvvmc.compile_ptx(HAND_IR.replace("!nvvm.annotations = !{!0}", "!nvvm.annotations = !{}"))


def test_libnvvm_crash_leaves_process_alive():
    # An empty annotation node segfaults libNVVM 13.0 itself; only the worker may die.
    with pytest.raises(CompileError, match="worker died"):
        nvvmc.compile_ptx(HAND_IR.replace(KERNEL_MD, "!0 = !{}"))
    assert ".entry" in nvvmc.compile_ptx(HAND_IR)  # a fresh worker takes over


def test_unresolved_extern_detected():
    ptx = ".version 9.0\n.target sm_90\n.extern .func  (.param .b64 r) __nv_sin\n(.param .b64 x)\n;"
    with pytest.raises(CompileError, match="__nv_sin"):
        nvvmc.check_ptx(ptx)


def test_ptx_version_clamp(hand_ptx):
    assert nvvmc.max_ptx_for_driver(13000) == (9, 0)
    assert nvvmc.max_ptx_for_driver(12040) == (8, 4)
    old = nvvmc.clamp_ptx_version(hand_ptx, (8, 4))
    assert nvvmc.ptx_version(old) == (8, 4)
    nvvmc.assemble(old)
    with pytest.raises(DeviceError, match="too old"):
        nvvmc.max_ptx_for_driver(11080)


def test_missing_extra_is_device_error(monkeypatch, tmp_path):
    monkeypatch.setattr(nvvmc, "_toolchain", None)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    with pytest.raises(DeviceError, match=r"pip install 'lazyk\[cuda\]'"):
        nvvmc.find_toolchain()


def test_cuda_home_override(monkeypatch, tmp_path):
    real = nvvmc.find_toolchain()
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libnvvm.so").symlink_to(real.libnvvm)
    (tmp_path / "nvvm" / "libdevice").mkdir(parents=True)
    (tmp_path / "nvvm" / "libdevice" / "libdevice.10.bc").symlink_to(real.libdevice)
    monkeypatch.setattr(nvvmc, "_toolchain", None)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert nvvmc.find_toolchain().libnvvm == tmp_path / "lib" / "libnvvm.so"
