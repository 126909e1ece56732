"""NVVM toolchain and codegen without a GPU: IR -> libNVVM (out of process) -> PTX -> ptxas."""
import sys

import pytest

from lazyk.errors import CompileError, DeviceError
from lazyk.lru import Memo

nvvmc = pytest.importorskip("lazyk.backend.nvvmc")
try:
    nvvmc.find_toolchain()
except DeviceError as err:  # pragma: no cover - the cuda extra is a test dependency here
    pytest.skip(f"no CUDA toolchain: {err}", allow_module_level=True)

@pytest.fixture(autouse=True, scope="module")
def _fresh_ptx_cache(tmp_path_factory):
    """A new on-disk PTX cache per run: libNVVM really runs, ~/.cache stays untouched."""
    from lazyk.backend.objcache import ObjectCache
    saved, nvvmc._disk = nvvmc._disk, ObjectCache(tmp_path_factory.mktemp("ptx-cache"))
    yield
    nvvmc._disk = saved


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


def test_ptx_disk_cache_skips_libnvvm(monkeypatch):
    ir = HAND_IR.replace("%y = call double @__nv_sin(double %x)", "%y = fadd double %x, 1.5")
    first = nvvmc.compile_ptx(ir)
    hits = nvvmc._disk.hits

    class NoWorker:
        def request(self, req):
            raise AssertionError("libNVVM was asked again")
    assert nvvmc.compile_ptx(ir, worker=NoWorker()) == first
    assert nvvmc._disk.hits == hits + 1
    assert nvvmc.ptx_key(ir, ["-fma=1"]) != nvvmc.ptx_key(ir, ["-fma=0"])
    path = nvvmc._disk.path(nvvmc.ptx_key(ir, ["-arch=compute_90", "-opt=3", "-fma=0"]))
    path.write_bytes(b"torn")  # a corrupt entry is dropped and compiled again
    assert nvvmc.compile_ptx(ir) == first


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


# ---- codegen: KernelSpec -> NVVM IR -> PTX -> ptxas, for every op class and layout --------
np = pytest.importorskip("numpy")
from lazyk.errors import DTypeError, NotSupportedError  # noqa: E402
from lazyk.frontend import ops  # noqa: E402
from lazyk.kernel.flat import Instr, KernelSpec  # noqa: E402

nvvm = pytest.importorskip("lazyk.codegen.nvvm")
F8 = np.dtype("f8")
ELEMENT_DTYPES = ["float64", "float32", "float16", "int64", "int32", "int8", "uint64", "uint8",
                  "bool", "complex128", "complex64"]


def gpu_lowers(name, loop, attr) -> bool:
    """Whether one op on this loop lowers for the GPU (complex math has no libdevice)."""
    ins = tuple(np.dtype(d) for d in loop[:-1])
    body = tuple(Instr("load", d, (), k) for k, d in enumerate(ins))
    body += (Instr(name, loop[-1], tuple(range(len(ins))), attr),)
    spec = KernelSpec(ins, (True,) * len(ins), body, ((len(ins), loop[-1]),))
    try:
        nvvm.lower(spec, flat(1, (True,) * (len(ins) + 1)))
    except NotSupportedError as err:
        assert "not supported on the GPU yet" in str(err) or "complex" in str(err), err
        return False
    return True


def all_ops_spec(dtype) -> tuple[KernelSpec, list[str]]:
    """One kernel applying every op row that supports `dtype`, summed as float64.

    One libNVVM compile per dtype instead of one per op keeps the suite fast.
    """
    dt = np.dtype(dtype)
    body = [Instr("load", dt, (), k) for k in range(3)]
    acc, names = None, []
    for name in ops.ELEMENTWISE:
        row = ops.OPS[name]
        attr = F8 if name == "astype" else None
        operands = [dt] * row.arity if name != "where" else [np.dtype(bool), dt, dt]
        try:
            loop = row.resolve(*operands, attr=attr)
        except DTypeError:
            continue
        if not row.supported(loop) or not gpu_lowers(name, loop, attr):
            continue
        args = (0, 1, 2)[:row.arity] if name != "where" else (len(body) - 1, 1, 2)
        if name == "where":
            body.append(Instr("not_equal", np.dtype(bool), (0, 1)))
            args = (len(body) - 1, 1, 2)
        body.append(Instr(name, loop[-1], args, attr))
        body.append(Instr("astype", F8 if loop[-1].kind != "c" else np.dtype("c16"),
                          (len(body) - 1,), F8 if loop[-1].kind != "c" else np.dtype("c16")))
        if loop[-1].kind == "c":
            body.append(Instr("real", F8, (len(body) - 1,)))
        val = len(body) - 1
        if acc is not None:
            body.append(Instr("add", F8, (acc, val)))
            val = len(body) - 1
        acc = val
        names.append(name)
    spec = KernelSpec(inputs=(dt,) * 3, aligned=(True,) * 3, body=tuple(body),
                      outputs=((acc, F8),))
    return spec, names


def flat(ndim=1, inner=(True, True, True, True), reduced=None):
    return nvvm.LayoutClass(ndim, reduced or (False,) * ndim, inner)


def compile_and_assemble(spec, lc) -> str:
    ptx = nvvmc.compile_ptx(nvvm.lower(spec, lc))
    nvvmc.assemble(ptx)
    return ptx


@pytest.mark.parametrize("dtype", ELEMENT_DTYPES)
def test_every_op_compiles_for_dtype(dtype):
    spec, names = all_ops_spec(dtype)
    assert len(names) >= 10, names
    ptx = compile_and_assemble(spec, flat())
    assert ".visible .entry lazyk_kernel(" in ptx
    if np.dtype(dtype).kind == "f" and np.dtype(dtype).itemsize == 8:
        assert "sin" in names and "__nv_sin" not in ptx  # libdevice inlined, nothing external


def binary_spec(dt_a, dt_b, op="add", out=None, reduce=None, aligned=(True, True)):
    a, b = np.dtype(dt_a), np.dtype(dt_b)
    loop = ops.OPS[op].resolve(a, b)
    out = np.dtype(out or loop[-1])
    body = (Instr("load", a, (), 0), Instr("load", b, (), 1), Instr(op, loop[-1], (0, 1)))
    return KernelSpec(inputs=(a, b), aligned=aligned, body=body, outputs=((2, out),),
                      reduce=reduce)


@pytest.mark.parametrize("lc", [
    flat(0, (True,) * 3),
    flat(1, (True,) * 3),
    flat(1, (False, True, False)),               # strided output, broadcast input
    flat(2, (True, True, False)),                # transposed operand
    flat(3, (False, False, False)),
], ids=["0d", "contiguous", "strided", "2d", "3d"])
def test_layouts_compile(lc):
    spec = binary_spec("f8", "f4", "multiply")
    ptx = compile_and_assemble(spec, lc)
    assert ptx.count(".entry") == (2 if lc.ndim >= 2 else 1)  # 2+ dims add lazyk_rows
    if lc.ndim >= 2:
        assert ".visible .entry lazyk_rows(" in ptx
        assert "rem.u64" in ptx or "div.u64" in ptx  # index unravelled over the shape


def test_byteswapped_and_unaligned_inputs():
    spec = binary_spec(">f8", "<i4", "add", out="f8", aligned=(False, True))
    ir_text = nvvm.lower(spec, flat(1, (True,) * 3))
    assert "llvm.bswap.i64" in ir_text and "align 1" in ir_text
    compile_and_assemble(spec, flat(1, (True,) * 3))


def test_float16_goes_through_float32():
    spec = binary_spec("f2", "f2", "true_divide")
    ptx = compile_and_assemble(spec, flat(1, (True,) * 3))
    assert "cvt.f32.f16" in ptx and "div.rn.f32" in ptx and "cvt.rn.f16.f32" in ptx


def test_fma_off_keeps_cpu_rounding():
    a = np.dtype("f8")
    body = (Instr("load", a, (), 0), Instr("load", a, (), 1), Instr("load", a, (), 2),
            Instr("multiply", a, (0, 1)), Instr("add", a, (3, 2)))
    spec = KernelSpec((a,) * 3, (True,) * 3, body, ((4, a),))
    text = nvvm.lower(spec, flat(1, (True,) * 4))
    assert "fma" not in nvvmc.compile_ptx(text)
    assert "fma.rn.f64" in nvvmc.compile_ptx(text, fma=True)


def test_output_stores_are_aligned():
    ptx = compile_and_assemble(binary_spec("f8", "f8"), flat(1, (True,) * 3))
    assert "st.global.f64" in ptx or "st.f64" in ptx
    assert "st.u8" not in ptx and "st.global.u8" not in ptx


@pytest.mark.parametrize("reduce,dtype,out", [
    ("sum", "f8", "f8"), ("sum", "i4", "i8"), ("prod", "u8", "u8"), ("min", "f4", "f4"),
    ("max", "i1", "i1"), ("any", "?", "?"), ("all", "?", "?"), ("max", "f2", "f2"),
])
def test_full_reduction_two_passes(reduce, dtype, out):
    spec = binary_spec(dtype, dtype, "multiply" if dtype != "?" else "logical_and",
                       out=out, reduce=reduce)
    ptx = compile_and_assemble(spec, flat(1, (False, True, True), (True,)))
    assert ".visible .entry lazyk_kernel(" in ptx and ".visible .entry lazyk_finish(" in ptx
    assert "bar.sync" in ptx and ".shared" in ptx


@pytest.mark.parametrize("reduced", [(False, True), (True, False), (True, False, True)])
def test_partial_reduction(reduced):
    spec = binary_spec("f8", "f8", "subtract", reduce="sum")
    lc = nvvm.LayoutClass(len(reduced), reduced, (False, True, True))
    ptx = compile_and_assemble(spec, lc)
    # Reducing the innermost dim: a block per output and a shared-memory tree (coalesced);
    # otherwise a thread per output, neighbours reading neighbours.
    assert ptx.count(".entry") == 1 and ("bar.sync" in ptx) == reduced[-1]


@pytest.mark.parametrize("reduced", [(True,), (False, True), (True, False)])
def test_complex_reductions_compile(reduced):
    spec = binary_spec("c16", "c8", "multiply", reduce="sum")
    compile_and_assemble(spec, nvvm.LayoutClass(len(reduced), reduced, (False, True, True)))


def test_not_supported_on_gpu_yet():
    spec = KernelSpec((np.dtype("c16"),), (True,), (Instr("load", np.dtype("c16"), (), 0),
                      Instr("sqrt", np.dtype("c16"), (0,))), ((1, np.dtype("c16")),))
    with pytest.raises(NotSupportedError, match="sqrt on complex128: not supported on the GPU yet"):
        nvvm.lower(spec, flat(1, (True,) * 2))
    two = KernelSpec((F8,), (True,), (Instr("load", F8, (), 0),), ((0, F8), (0, F8)))
    with pytest.raises(NotSupportedError, match="not supported on the GPU yet"):
        nvvm.lower(two, flat(1, (True,) * 3))


def test_nan_propagating_minimum_and_fneg_legalized():
    # elementwise: NumPy's operand order (ties give the second operand), no libdevice call
    spec = binary_spec("f8", "f8", "minimum")
    text = nvvm.lower(spec, flat(1, (True,) * 3))
    assert "__nv_fmin" not in text and "fcmp olt" in text and "fcmp uno" in text
    # a reduction folds through libdevice fmin plus the NaN select
    red = KernelSpec((F8,), (True,), (Instr("load", F8, (), 0),), ((0, F8),), reduce="min")
    text = nvvm.lower(red, flat(1, (True,) * 2, reduced=(True,)))
    assert "__nv_fmin" in text and "fcmp uno" in text
    neg = KernelSpec((F8,), (True,), (Instr("load", F8, (), 0), Instr("negative", F8, (0,))),
                     ((1, F8),))
    text = nvvm.lower(neg, flat(1, (True,) * 2))
    assert "fneg" not in text and "fsub double -0.0" in text
    assert "neg.f64" in nvvmc.compile_ptx(text)


@pytest.mark.parametrize("op", ["remainder", "fmod", "floor_divide"])
@pytest.mark.parametrize("dt", ["f8", "f4"])
def test_float_remainder_calls_libdevice_fmod(op, dt):
    # NVPTX lowers LLVM's frem to x - trunc(x / y) * y, off by an ulp of x on a real GPU
    # where NumPy is exact: the far case calls libdevice's fmod instead.
    text = nvvm.lower(binary_spec(dt, dt, op), flat(1, (True,) * 3))
    assert " frem " not in text
    assert ("__nv_fmodf" if dt == "f4" else "__nv_fmod") in text
    assert nvvmc.compile_ptx(text)


def test_kernel_data_layout_matches_struct():
    from llvmlite import binding as llvm
    td = llvm.create_target_data(nvvm.DATA_LAYOUT)
    for nin, ndim in ((1, 1), (3, 2), (2, 0)):
        kd = nvvm.KernelData(nin, ndim)

        class L:
            shape = (5,) * ndim
            strides = ((8,) * ndim,) * (nin + 1)
            size = 5 ** ndim
        assert len(kd.pack(1, (2,) * nin, 3, L)) == kd.struct_type().get_abi_size(td)


def test_layout_class_from_bound_layout():
    from lazyk.passes.dims import simplify_dims
    spec = binary_spec("f8", "f8")
    lay = simplify_dims((4, 5), ((40, 8), (40, 8), (0, 8)))
    lc = nvvm.LayoutClass.of(lay, spec)
    assert lc.ndim == lay.ndim and lc.inner_contiguous[0]


def test_explain_shows_nvvm_ir_and_ptx():
    from lazyk.kernel import gpu
    text = gpu.explain(binary_spec("f8", "f8"), flat(1, (True,) * 3))
    assert "--- NVVM IR" in text and "nvptx64-nvidia-cuda" in text
    assert "--- PTX" in text and ".entry lazyk_kernel" in text


# ---- runtime without a GPU: clean DeviceErrors, device names, interface parsing -----------
def test_no_driver_is_device_error():
    from lazyk.backend import cuda
    if cuda.available():
        pytest.skip("a CUDA driver is present")
    with pytest.raises(DeviceError, match="no CUDA driver"):
        cuda.init()
    from lazyk.runtime.device import DeviceArray
    with pytest.raises(DeviceError, match="no CUDA driver"):
        DeviceArray.from_numpy(np.zeros(3))
    d = DeviceArray((3,), "float64", 4096)  # (memory at an address: copied back, refused)
    for call in (d.to_numpy, lambda: d.to("cpu")):
        with pytest.raises(DeviceError, match="no CUDA driver"):
            call()


def test_parse_device_names():
    from lazyk.runtime.device import parse_device
    assert parse_device("cuda") == "cuda:0" and parse_device("CUDA:1") == "cuda:1"
    assert parse_device(None) == "cpu"
    with pytest.raises(DeviceError, match="unknown device 'tpu'"):
        parse_device("tpu")


class FakeGPUArray:
    """Stands in for a CuPy/PyTorch tensor: only the interface, no memory behind it."""

    shape = None

    def __init__(self, shape, typestr="<f8"):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "version": 3,
                                         "data": (0xDEAD0000, False), "strides": None}


def test_mixing_devices_names_operands_and_devices():
    from lazyk.runtime.device import common_device
    gpu = FakeGPUArray((3,))
    assert common_device({"a": gpu, "b": gpu}) == "cuda:0"
    assert common_device({"a": np.zeros(3)}) == "cpu"
    with pytest.raises(DeviceError, match=r"a \(3,\) float64, c \(3,\) float64 on cpu; b on cuda:0"):
        common_device({"a": np.zeros(3), "b": gpu, "c": np.ones(3)})


def test_cuda_array_interface_import_and_export():
    from lazyk.runtime.device import DeviceArray
    view = DeviceArray.from_cuda_array_interface(FakeGPUArray((2, 3), "<f4"))
    assert view.ptr == 0xDEAD0000 and view.strides == (12, 4) and view.dtype == np.float32
    cai = view.__cuda_array_interface__
    assert cai["shape"] == (2, 3) and cai["typestr"] == "<f4" and cai["data"][0] == 0xDEAD0000


def test_missing_cuda_bindings_is_device_error(monkeypatch):
    from lazyk.backend import cuda
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)
    monkeypatch.setattr(cuda, "_driver", None)  # not imported yet, as in a new process
    with pytest.raises(DeviceError, match=r"pip install 'lazyk\[cuda\]'"):
        cuda.driver()


def test_gpu_operands_build_lazy_expressions_and_fail_cleanly_without_driver():
    import lazyk.frontend.expr as lx
    from lazyk.backend import cuda
    from lazyk.runtime.device import DeviceArray
    g = DeviceArray.from_cuda_array_interface(FakeGPUArray((3,)))
    e = lx.sin(g) * 2.0 + g
    assert e.shape == (3,) and e.dtype == np.float64
    with pytest.raises(DeviceError, match=r"different devices .* on cpu; .* on cuda:0"):
        (g + np.ones(3)).eval()
    if not cuda.available():
        with pytest.raises(DeviceError, match="no CUDA driver"):
            e.eval()


def test_expr_explain_target_cuda():
    import lazyk.frontend.expr as lx
    a = lx.as_expr(np.ones((4, 5)))
    text = (lx.sin(a) * np.ones(5)).sum(axis=1).explain(target="cuda")
    assert "=== CUDA kernel 0 (reduce=sum) ===" in text
    assert "nvptx64-nvidia-cuda" in text and ".visible .entry lazyk_kernel(" in text
    text = (lx.placeholder("x", "N * float32") * 3 + 1).explain(target="cuda")
    assert "st.global.f32" in text


def test_device_explain_cuda_is_the_explain_entry_point():
    import lazyk.frontend.expr as lx
    from lazyk.runtime.device import explain_cuda
    e = lx.placeholder("x", "N * float64") * 2.0
    text = explain_cuda(e)
    assert text == e.explain(target="cuda")
    assert text.count("=== CUDA kernel") == 1 and ".visible .entry lazyk_kernel(" in text
    assert explain_cuda(lx.as_expr(np.float64(2.0)) + 1.0) == "(constant expression: no kernel)"


def test_array_device_argument_and_to():
    import lazyk
    from lazyk.backend import cuda
    a = lazyk.array([1.0, 2.0])
    assert a.to("cpu") is a
    with pytest.raises(DeviceError, match="unknown device"):
        a.to("tpu")
    if not cuda.available():
        with pytest.raises(DeviceError, match="no CUDA driver"):
            lazyk.array([1.0, 2.0], device="cuda")


def test_bench_device_cuda_without_gpu_fails_cleanly(capsys):
    from lazyk.backend import cuda
    from lazyk.cli import main
    if cuda.available():
        pytest.skip("a GPU is present: the benchmark would run")
    assert main(["bench", "--device", "cuda", "--quick"]) == 1
    assert "no CUDA driver" in capsys.readouterr().err


# ---- runtime plumbing against an emulated driver --------------------------------------------
# The PTX cannot run here; this fake driver keeps "device memory" in a host arena and runs
# each launch's generated NVVM IR on the CPU (HostKernels). It checks everything but the
# GPU's instruction selection: allocation, copies, kernel-data packing, offsets and strides,
# grid-stride loops, block trees with barriers, both reduction passes, the cache, the runner.
class _Enum:
    def __getattr__(self, name):
        return name


class FakeDriver:
    class CUresult:
        CUDA_SUCCESS = 0

    CUdevice_attribute = _Enum()
    ATTRS = {"CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR": 9,
             "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR": 0,
             "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT": 1,
             "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK": 1024}

    def __init__(self):
        self.arena = np.zeros(1 << 22, np.uint8)
        self.base = self.arena.ctypes.data
        self.top, self.live, self.launches, self.partials = 256, set(), [], {}
        self.unloaded, self.streams = [], []

    def ok(self, *values):
        return (0, *values)

    def cuInit(self, flags):
        return self.ok()

    def cuDriverGetVersion(self):
        return self.ok(13000)

    def cuDeviceGetCount(self):
        return self.ok(1)

    def cuDeviceGet(self, i):
        return self.ok(i)

    def cuDevicePrimaryCtxRetain(self, dev):
        return self.ok(0xC0)  # a context handle: an address

    def cuDeviceGetAttribute(self, attr, dev):
        return self.ok(self.ATTRS[attr])

    def cuDeviceGetName(self, n, dev):
        return self.ok(b"Fake H100\0")

    def cuCtxSetCurrent(self, ctx):
        self.current = ctx
        return self.ok()

    def cuCtxGetCurrent(self):
        return self.ok(getattr(self, "current", 0))

    def cuDeviceTotalMem(self, dev):
        return self.ok(self.arena.size)

    def cuMemAlloc(self, n):
        ptr = self.base + self.top
        self.top += (n + 255) // 256 * 256
        assert self.top < self.arena.size
        self.live.add(ptr)
        return self.ok(ptr)

    def cuMemFree(self, ptr):
        self.live.remove(ptr)
        return self.ok()

    def _copy(self, dst, src, n):
        import ctypes
        ctypes.memmove(dst, src, n)
        return self.ok()

    def cuMemcpyHtoDAsync(self, dst, src, n, stream):
        return self._copy(dst, src, n)

    cuMemcpyDtoHAsync = cuMemcpyHtoDAsync
    cuMemcpyDtoDAsync = cuMemcpyHtoDAsync

    def cuStreamSynchronize(self, stream):
        return self.ok()

    def cuModuleLoadData(self, image):
        assert image.endswith(b"\0") and b".entry" in image
        return self.ok(("module", len(self.launches), id(image)))

    def cuPointerGetAttribute(self, attr, ptr):
        assert attr == "CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL"
        return self.ok(1 if ptr == 0xC0DA0000 else 0)

    CUpointer_attribute = _Enum()

    def cuStreamCreate(self, flags):
        self.streams.append("stream")
        return self.ok(len(self.streams))

    def cuStreamDestroy(self, stream):
        self.streams.remove("stream")
        return self.ok()

    def cuModuleUnload(self, module):
        self.unloaded.append(module)
        return self.ok()

    def cuModuleGetFunction(self, module, name):
        return self.ok((module, name.decode()))

    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, shmem, stream, params, extra):
        import ctypes

        from lazyk.kernel import gpu
        (module, name) = fn
        kernel = next(k for k in gpu.kernels.values() if k.module.handle == module)
        self.launches.append((name, gx, bx))
        args = (ctypes.c_void_p * 2).from_address(params)
        count = ctypes.c_int64.from_address(args[1]).value if name == "lazyk_finish" else None
        HostKernels.run(kernel, name, gx, bx, args[0], count)
        return self.ok()


class HostKernels:
    """Runs the generated NVVM IR itself on the CPU, one OS thread per GPU thread.

    The IR handed to libNVVM is JIT-compiled for the host after renaming what only exists
    on the GPU: special registers and bar.sync become callbacks (thread-local ids, a
    threading.Barrier per block), shared memory a global (blocks run one after another),
    libdevice `__nv_sin` libm's `sin`. A wrapper loads the by-value kernel-data struct from
    the launch's parameter bytes, so packing, indexing, loops, trees and both reduction
    passes are exactly what the GPU would run; only the instruction selection differs.
    """

    _engines: dict = {}
    _tls = None

    @classmethod
    def _setup(cls):
        import ctypes
        import threading

        import llvmlite.binding as llvm
        if cls._tls is not None:
            return
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        cls._tls = tls = threading.local()
        sreg, bar = ctypes.CFUNCTYPE(ctypes.c_int32), ctypes.CFUNCTYPE(None)
        cls._callbacks = {f"emu_{r}": sreg(lambda r=r: getattr(tls, r))
                          for r in ("tid", "ctaid", "ntid", "nctaid")}
        cls._callbacks["emu_barrier"] = bar(lambda: tls.barrier.wait())
        for name, cb in cls._callbacks.items():
            llvm.add_symbol(name, ctypes.cast(cb, ctypes.c_void_p).value)

    @staticmethod
    def hostify(text: str, kd: str) -> str:
        import re
        text = re.sub(r"^target (triple|datalayout).*$", "", text, flags=re.M)
        text = re.sub(r"llvm\.nvvm\.read\.ptx\.sreg\.(\w+)\.x", r"emu_\1", text)
        text = text.replace("llvm.nvvm.barrier0", "emu_barrier").replace(" addrspace(3)", "")
        text = re.sub(r"__nv_(\w+)", r"\1", text)
        for name, extra, call in (("lazyk_kernel", "", ""), ("lazyk_rows", "", ""),
                                  ("lazyk_finish", ", i64 %n", ", i64 %n")):
            if f'@"{name}"' in text:
                text += (f"define void @emu_{name}(i8* %p{extra}) {{\n"
                         f"  %s = bitcast i8* %p to {kd}*\n  %v = load {kd}, {kd}* %s\n"
                         f"  call void @{name}({kd} %v{call})\n  ret void\n}}\n")
        return text

    @classmethod
    def run(cls, kernel, name, grid, block, kd_ptr, count):
        import ctypes
        import threading

        import llvmlite.binding as llvm
        cls._setup()
        ee = cls._engines.get(id(kernel))
        if ee is None:
            mod = llvm.parse_assembly(cls.hostify(kernel.ir, str(kernel.kd.struct_type())))
            # Host CPU features: F16C converts float16 in hardware instead of calling
            # compiler-rt helpers that MCJIT cannot resolve here.
            tm = llvm.Target.from_default_triple().create_target_machine(
                cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten())
            ee = llvm.create_mcjit_compiler(mod, tm)
            ee.finalize_object()
            cls._engines[id(kernel)] = (ee, kernel)
        else:
            ee = ee[0]
        argtypes = [ctypes.c_void_p] + ([ctypes.c_int64] if count is not None else [])
        address = ee.get_function_address(f"emu_{name}")
        assert address, f"no kernel {name} in the module"
        fn = ctypes.CFUNCTYPE(None, *argtypes)(address)
        args = (kd_ptr,) + ((count,) if count is not None else ())
        tls, barriers = cls._tls, "emu_barrier" in kernel.ir or "barrier0" in kernel.ir
        for b in range(grid):
            bar = threading.Barrier(block) if barriers else None

            def thread(t, b=b, bar=bar):
                tls.tid, tls.ctaid, tls.ntid, tls.nctaid, tls.barrier = t, b, block, grid, bar
                fn(*args)
            if not barriers:  # no bar.sync: threads are independent, run them in turn
                for t in range(block):
                    thread(t)
                continue
            ts = [threading.Thread(target=thread, args=(t,)) for t in range(block)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()


@pytest.fixture
def fake_driver(monkeypatch):
    from lazyk.backend import cuda
    from lazyk.kernel import gpu
    fake = FakeDriver()
    monkeypatch.setattr(cuda, "driver", lambda: fake)
    monkeypatch.setattr(cuda, "_initialised", False)
    gpu.kernels.clear()
    monkeypatch.setattr(cuda, "_pool", cuda._Pool())  # pointers die with each fake arena
    from lazyk.runtime import device
    monkeypatch.setattr(device, "_GEOMETRY", Memo(256))
    # Trees of 32 threads: the same code as 256 (which the ptxas tests compile) at an eighth
    # of the emulation's thread and barrier traffic.
    monkeypatch.setattr(nvvm, "REDUCE_BLOCK", 32)
    nvvm.lower.cache_clear()
    cuda.get_device.cache_clear()
    yield fake
    cuda.get_device.cache_clear()
    nvvm.lower.cache_clear()


def test_emulated_round_trip_and_elementwise(fake_driver):
    import lazyk
    import lazyk.frontend.expr as lx
    x = np.arange(12.0).reshape(3, 4)
    y = np.linspace(-1, 1, 4).astype(np.float32)
    dx, dy = lazyk.array(x, device="cuda"), lazyk.DeviceArray.from_numpy(y)
    assert np.array_equal(dx.to("cpu"), x)
    got = (lx.sin(dx) * dy + 1).eval()
    assert isinstance(got, lazyk.DeviceArray) and got.shape == (3, 4)
    np.testing.assert_array_equal(got.to("cpu"), np.sin(x) * y + 1)
    # transposed operand: strides walk the device memory as on the host
    t = lazyk.DeviceArray(x.T.shape, x.dtype, dx.ptr, x.T.strides, owner=dx)
    np.testing.assert_array_equal((t - 1.0).eval().to("cpu"), x.T - 1.0)
    # long rows of a 2-d layout (a broadcast row vector): a block per row, no per-element
    # index division
    w, r = np.arange(3 * 200.0).reshape(3, 200), np.linspace(0, 1, 200)
    got = (lx.as_expr(lazyk.DeviceArray.from_numpy(w)) * lazyk.DeviceArray.from_numpy(r)).eval()
    assert fake_driver.launches[-1] == ("lazyk_rows", 3, 224)
    np.testing.assert_array_equal(got.to("cpu"), w * r)


def test_emulated_reductions_and_cache(fake_driver):
    import lazyk.frontend.expr as lx
    from lazyk.kernel import gpu
    from lazyk.runtime.device import DeviceArray
    a = np.arange(1.0, 31.0).reshape(5, 6)
    da = DeviceArray.from_numpy(a)
    total = lx.sum(lx.as_expr(da) * 2.0).eval()
    assert total.shape == () and total.to("cpu") == (a * 2).sum()
    assert [n for n, *_ in fake_driver.launches[-2:]] == ["lazyk_kernel", "lazyk_finish"]
    rows = lx.as_expr(da).sum(axis=1).eval()
    np.testing.assert_allclose(rows.to("cpu"), a.sum(axis=1))
    assert fake_driver.launches[-1][1:] == (5, nvvm.REDUCE_BLOCK)  # a block per row
    cols = lx.as_expr(da).max(axis=0, keepdims=True).eval()
    np.testing.assert_array_equal(cols.to("cpu"), a.max(axis=0, keepdims=True))
    mean = lx.as_expr(da).mean(axis=1).eval()
    np.testing.assert_allclose(mean.to("cpu"), a.mean(axis=1))
    # NOTE: the first build of `x * 2.0` may order its SSA body differently from later ones
    # (interning order in the front end), so compare two later builds.
    lx.sum(lx.as_expr(DeviceArray.from_numpy(np.ones(77))) * 2.0).eval()
    n = len(gpu.kernels)
    lx.sum(lx.as_expr(DeviceArray.from_numpy(np.ones(99))) * 2.0).eval()
    assert len(gpu.kernels) == n  # new size, same layout class: no recompilation


def test_emulated_launch_config_and_memory_pool(fake_driver, monkeypatch):
    import lazyk.frontend.expr as lx
    from lazyk.backend import cuda
    from lazyk.runtime.device import DeviceArray
    big = DeviceArray.from_numpy(np.ones(10_000))
    assert lx.sum(lx.as_expr(big) + 0.5).eval().to("cpu") == 15_000
    name, grid, block = fake_driver.launches[0]
    assert block == nvvm.REDUCE_BLOCK and grid == 8  # 1 SM x 8 blocks per SM caps the grid
    # The scratch and the result (dropped with its statement) went back to the pool.
    assert sum(map(len, cuda._pool.free.values())) == 2
    d = lx.as_expr(DeviceArray.from_numpy(np.ones(100)))
    result = (d * 2.0).eval()
    allocs = len(fake_driver.live)
    for _ in range(5):
        result = (d * 2.0).eval()
    # Steady state: outputs and scratch come from the pool (one more: old and new result
    # overlap during the assignment).
    assert len(fake_driver.live) <= allocs + 1
    monkeypatch.setattr(cuda, "POOL_BYTES", 0)
    before = len(fake_driver.live)
    del result  # a full pool frees for real
    assert len(fake_driver.live) == before - 1
    # By default the pool keeps up to a quarter of the device's memory (an H200's 35 GiB
    # hold a few 800 MB results of 1e8 float64 values; 1 GiB did not).
    monkeypatch.setattr(cuda, "POOL_BYTES", None)
    dev, pool = cuda.get_device(0), cuda._Pool()
    assert dev.memory == fake_driver.arena.size
    assert pool.give(dev, dev.memory // 8, 1) and pool.give(dev, dev.memory // 8, 2)
    assert not pool.give(dev, dev.memory // 8, 3)
    assert pool.take(0, dev.memory // 8) == 2


def test_emulated_bench_suite_e1_to_e10(fake_driver):
    import importlib.util
    from pathlib import Path

    import lazyk
    from lazyk.frontend.expr import as_expr
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_cuda.py"
    spec = importlib.util.spec_from_file_location("lazyk_bench_cuda_test", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    suite = bench.load_suite()
    data = suite.make_data(3000)
    dev = bench._device_inputs(data)
    assert dev["xs"].strides == (16,)  # E9 stays a strided device view
    for case in suite.CASES:
        got = case.lazyk(lazyk, *(as_expr(dev[k]) for k in case.names)).eval().to("cpu")
        np.testing.assert_allclose(got, case.numpy(*(data[k] for k in case.names)),
                                   rtol=1e-12, err_msg=case.id)


@pytest.mark.parametrize("dtype,op", [("int32", "sum"), ("bool", "any"), ("float16", "max"),
                                      ("uint8", "prod"), ("complex128", "sum"),
                                      ("complex64", "prod")])
def test_emulated_reduction_dtypes(fake_driver, dtype, op):
    import lazyk.frontend.expr as lx
    from lazyk.runtime.device import DeviceArray
    a = (np.arange(24) % 5).astype(dtype).reshape(4, 6)
    d = lx.as_expr(DeviceArray.from_numpy(a))
    for axis in (None, 1):
        got = getattr(lx, op)(d, axis=axis).eval().to("cpu")
        want = getattr(np, op)(a, axis=axis)
        assert got.dtype == want.dtype and np.array_equal(got, want), (axis, got, want)


def test_emulated_cache_is_bounded_and_unloads(fake_driver, monkeypatch):
    import lazyk.frontend.expr as lx
    from lazyk.kernel import gpu
    from lazyk.runtime.device import DeviceArray
    monkeypatch.setattr(gpu.kernels, "size", 1)
    d = lx.as_expr(DeviceArray.from_numpy(np.ones(10)))
    (d + 1.0).eval()
    (d * 3.0).eval()
    assert len(gpu.kernels) == 1 and len(fake_driver.unloaded) == 1
    # the first kernel's module is gone: its cached geometry recompiles instead of launching it
    np.testing.assert_array_equal((d + 1.0).eval().to("cpu"), np.full(10, 2.0))


def test_dlpack_export_import_round_trip():
    from lazyk.runtime import device
    src = device.DeviceArray((2, 3), np.float32, 0xDEAD0000, (4, 8), device="cuda:1")
    assert src.__dlpack_device__() == (2, 1)
    capsule = src.__dlpack__()
    assert len(device._exported) >= 1
    view = device.from_dlpack(capsule)
    assert (view.ptr, view.shape, view.strides, view.dtype, view.device) == \
        (0xDEAD0000, (2, 3), (4, 8), np.float32, "cuda:1")
    with pytest.raises(DeviceError, match="unconsumed"):
        device.from_dlpack(capsule)
    before = len(device._exported)
    view.close()  # the consumer calls the producer's deleter exactly once
    assert len(device._exported) == before - 1
    del capsule
    unconsumed = src.__dlpack__()
    n = len(device._exported)
    del unconsumed  # never consumed: the capsule destructor releases it
    assert len(device._exported) == n - 1


def test_emulated_to_numpy_and_array_protocol(fake_driver):
    import lazyk.frontend.expr as lx
    from lazyk.runtime.device import DeviceArray
    x = np.arange(6.0)
    e = lx.as_expr(DeviceArray.from_numpy(x)) * 2.0
    assert isinstance(e.eval(), DeviceArray)
    np.testing.assert_array_equal(e.to_numpy(), x * 2.0)
    np.testing.assert_array_equal(np.asarray(e), x * 2.0)


def test_emulated_evaluate_into_out(fake_driver):
    import lazyk
    import lazyk.frontend.expr as lx
    from lazyk.runtime.device import DeviceArray
    x = np.arange(5.0)
    d = DeviceArray.from_numpy(x)
    out = DeviceArray.empty((5,), np.float64)
    assert lazyk.evaluate(lx.as_expr(d) + 1.0, out=out) is out
    np.testing.assert_array_equal(out.to("cpu"), x + 1.0)
    with pytest.raises(NotSupportedError, match="not supported on the GPU yet"):
        lazyk.evaluate(lx.as_expr(d) + 1.0, out=DeviceArray.empty((5,), np.float32))
    with pytest.raises(DeviceError, match="different devices"):
        lazyk.evaluate(lx.as_expr(d) + 1.0, out=np.empty(5))


def test_emulated_compiled_expression_on_gpu_inputs(fake_driver):
    import lazyk
    from lazyk.runtime.device import DeviceArray
    a = lazyk.placeholder("a", "N * float64")
    b = lazyk.placeholder("b", "N * float64")
    k = lazyk.compile(2 * a + lazyk.sin(b))
    x, y = np.arange(4.0), np.linspace(0, 1, 4)
    got = k(DeviceArray.from_numpy(x), DeviceArray.from_numpy(y))
    assert isinstance(got, DeviceArray)
    np.testing.assert_allclose(got.to("cpu"), 2 * x + np.sin(y))
    np.testing.assert_allclose(k(x, y), 2 * x + np.sin(y))  # host inputs still run on the CPU


def test_cli_explain_target_cuda(capsys):
    from lazyk.cli import main
    assert main(["explain", "sin(a) * b", "--type", "a=N * float64", "--type",
                 "b=N * float32", "--target", "cuda"]) == 0
    out = capsys.readouterr().out
    assert "--- NVVM IR" in out and ".visible .entry lazyk_kernel(" in out


def test_ragged_and_missing_stay_on_the_cpu():
    import lazyk
    from lazyk.runtime.device import DeviceArray
    ragged = lazyk.array([[1.0, 2.0], [3.0]])
    with pytest.raises(NotSupportedError, match="not supported on the GPU yet"):
        lazyk.array([1.0, None], device="cuda")
    with pytest.raises(NotSupportedError, match="not supported on the GPU yet"):
        ragged.to("cuda")
    gpu = DeviceArray.from_cuda_array_interface(FakeGPUArray((2,)))
    with pytest.raises(DeviceError, match=r"on cpu; .* on cuda:0"):
        (ragged * gpu).eval()


def test_emulated_empty_reductions(fake_driver):
    import lazyk.frontend.expr as lx
    from lazyk.runtime.device import DeviceArray
    d = lx.as_expr(DeviceArray.from_numpy(np.ones((3, 0))))
    np.testing.assert_array_equal(lx.sum(d, axis=1).eval().to("cpu"), np.zeros(3))
    np.testing.assert_array_equal(lx.prod(d, axis=1).eval().to("cpu"), np.ones(3))
    assert lx.sum(d).eval().to("cpu") == 0.0
    assert lx.sum(d, axis=0).eval().shape == (0,)
    with pytest.raises(ValueError, match="no identity"):
        lx.max(d, axis=1).eval()


def test_emulated_streams_and_foreign_pointer_devices(fake_driver):
    from lazyk.backend import cuda
    from lazyk.kernel import gpu
    from lazyk.passes.dims import simplify_dims
    from lazyk.runtime.device import DeviceArray, device_of
    dev = cuda.get_device(0)
    x = DeviceArray.from_numpy(np.arange(8.0))
    out = DeviceArray.empty((8,), np.float64)
    with cuda.Stream(dev) as stream:
        gpu.execute(binary_spec("f8", "f8"), simplify_dims((8,), ((8,),) * 3), out.ptr,
                     (x.ptr, x.ptr), dev, stream.handle)
        stream.synchronize()
    assert fake_driver.streams == []
    np.testing.assert_array_equal(out.to("cpu"), np.arange(8.0) * 2)
    gpu1 = FakeGPUArray((3,))
    gpu1.__cuda_array_interface__["data"] = (0xC0DA0000, False)
    assert device_of(gpu1) == "cuda:1" and device_of(FakeGPUArray((3,))) == "cuda:0"


def test_parameters_in_kernel_data_struct_and_ptx():
    from llvmlite import binding as llvm

    from lazyk.kernel.flat import pack_params
    td = llvm.create_target_data(nvvm.DATA_LAYOUT)
    kd = nvvm.KernelData(2, 1, 3)

    class L:
        shape = (5,)
        strides = ((8,),) * 3
        size = 5
    params = pack_params((np.dtype("f8"), np.dtype("c8"), np.dtype("i1")), (1.5, 2 - 1j, -3))
    assert len(kd.pack(1, (2, 2), 3, L, params)) == kd.struct_type().get_abi_size(td)
    body = (Instr("load", np.dtype("f8"), (), 0), Instr("param", np.dtype("f8"), (), 0),
            Instr("multiply", np.dtype("f8"), (0, 1)), Instr("param", np.dtype("f4"), (), 1),
            Instr("astype", np.dtype("f8"), (3,), np.dtype("f8")),
            Instr("add", np.dtype("f8"), (2, 4)))
    spec = KernelSpec((np.dtype("f8"),), (True,), body, ((5, np.dtype("f8")),))
    ir_text = nvvm.lower(spec, flat(inner=(True, True)))
    assert "[4 x i64]" in ir_text  # two 16-byte slots in the by-value kernel data
    compile_and_assemble(spec, flat(inner=(True, True)))


def test_emulated_parameters_of_several_dtypes(fake_driver):
    import lazyk
    import lazyk.frontend.expr as lx
    x32 = np.linspace(-2, 2, 37).astype(np.float32)
    i16 = np.arange(-18, 19, dtype=np.int16)
    dx, di = lazyk.DeviceArray.from_numpy(x32), lazyk.DeviceArray.from_numpy(i16)
    for s in (0.5, -1.25):
        got = (lx.as_expr(dx) * s + np.float32(3)).eval().to("cpu")
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, x32 * s + np.float32(3))
    for k in (7, -300):
        np.testing.assert_array_equal((lx.as_expr(di) * k).eval().to("cpu"), i16 * k)
    np.testing.assert_array_equal(lx.where(lx.as_expr(di) > 0, np.float64(2.5), True)
                                  .eval().to("cpu"), np.where(i16 > 0, 2.5, True))
    total = lx.sum(lx.as_expr(dx) * 2.0).eval().to("cpu")
    np.testing.assert_allclose(total, (x32 * 2.0).sum(dtype=np.float32), atol=1e-5)


def test_emulated_gpu_expressions_skip_the_general_path(fake_driver, monkeypatch):
    # A fixed-dim expression over GPU arrays is planned once per structure; later ones (the
    # same expression, or one built anew over other arrays) run without the general path.
    import lazyk
    from lazyk.runtime import launch, stringeval
    x = np.arange(10.0)
    a, b = lazyk.array(x, device="cuda"), lazyk.array(x[::-1].copy(), device="cuda")
    plans = stringeval.expr_stats["plans"]
    np.testing.assert_array_equal((a * 2.0 + b).eval().to_numpy(), x * 2 + x[::-1])
    assert stringeval.expr_stats["plans"] == plans + 1
    general, check = [], launch.check_int_powers
    monkeypatch.setattr(launch, "check_int_powers", lambda e: general.append(e))
    e = b * 2.0 + a
    np.testing.assert_array_equal(e.eval().to_numpy(), x[::-1] * 2 + x)
    np.testing.assert_array_equal(e.eval().to_numpy(), x[::-1] * 2 + x)
    assert not general and stringeval.expr_stats["plans"] == plans + 1
    # integer exponents are checked on the device by the general path, every call
    i = lazyk.array(np.array([1, 2, 3]), device="cuda")
    j = lazyk.array(np.array([2, -1, 0]), device="cuda")
    monkeypatch.setattr(launch, "check_int_powers", check)
    with pytest.raises(ValueError, match="negative integer powers"):
        (i ** j).eval()
    with pytest.raises(lazyk.DeviceError, match="operands live on different devices"):
        (a + x).eval()
