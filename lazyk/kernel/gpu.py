"""GPU kernels: compile a KernelSpec once per (device, spec, layout class), bind and launch per call.

The GPU counterpart of `lazyk.kernel`: `lazyk.codegen.nvvm` turns the spec into NVVM IR text,
`lazyk.backend.cuda` turns the text into a loaded module and launches it; this module owns
what joins them: the kernel data each call packs, which entry runs, with how many blocks.
"""
from __future__ import annotations

import numpy as np

from lazyk.backend import cuda, nvvmc
from lazyk.codegen import nvvm
from lazyk.errors import BindError
from lazyk.lru import LRU

# Elementwise layouts of 2+ dims switch to a block per row from this row length on.
ROWS_MIN = 64


class CompiledKernel:
    """One spec compiled for one layout class on one device: the NVVM module, loaded."""

    def __init__(self, spec, lc: nvvm.LayoutClass, device: cuda.Device):
        self.spec, self.lc, self.device = spec, lc, device
        self.ir = nvvm.lower(spec, lc)
        self.module = cuda.load_ir(self.ir, device)
        self.ptx = self.module.ptx
        self.kd = nvvm.KernelData(len(spec.inputs), lc.ndim, len(spec.params))

    def __call__(self, out: int, srcs: tuple[int, ...], layout, stream=0,
                 params: bytes = b"") -> None:
        """Bind (pack kernel data from the layout and the parameter values `params`, as
        `lazyk.frontend.spec.pack_params` writes them) and launch; pointers are device addresses."""
        self.prepare(layout, params)(out, srcs, stream)

    def prepare(self, layout, params: bytes = b"") -> Launch:
        """Everything a launch over `layout` needs but the pointers: a repeated call of the same
        geometry only writes its pointers into the kernel data (`Launch.__call__`)."""
        return Launch(self, layout, params)


class Launch:
    """One compiled kernel bound to one layout: entry, grid, block and the kernel data with
    its pointer words left to fill."""

    def __init__(self, kernel: CompiledKernel, layout, params: bytes):
        self.kernel, self.layout = kernel, layout
        spec, lc, device = kernel.spec, kernel.lc, kernel.device
        self.empty = layout.size == 0 and spec.reduce is None
        dt = np.dtype(spec.outputs[0][1])
        self.align = dt.itemsize // 2 if dt.kind == "c" else dt.itemsize
        if not self.empty:
            check_aligned(spec, 0, layout)  # the strides; each call checks its pointer
        self.offsets = layout.offsets
        self.words = np.frombuffer(kernel.kd.pack(0, (0,) * len(spec.inputs), 0, layout,
                                                  params), np.int64).copy()
        self.scratch_word = 1 + max(len(spec.inputs), 1)
        fn = kernel.module.function
        self.full_reduction = spec.reduce is not None and lc.full_reduction
        if self.full_reduction:
            self.grid, _ = device.launch_config(layout.size, nvvm.REDUCE_BLOCK)
            self.entry, self.finish = fn(nvvm.ENTRY), fn(nvvm.FINISH)
            return
        kept = layout.size
        if spec.reduce is not None:
            kept = int(np.prod([n for n, r in zip(layout.shape, layout.reduced) if not r]))
        grid, block = device.launch_config(kept)
        entry = nvvm.ENTRY
        inner = layout.shape[-1] if layout.shape else 0
        if spec.reduce is None and lc.ndim >= 2 and inner >= ROWS_MIN:
            # Rows long enough for a block: no per-element index division (nvvm ROWS).
            entry, block = nvvm.ROWS, min(cuda.BLOCK, (inner + 31) // 32 * 32)
            rows = layout.size // inner
            grid = max(1, min(rows, device.sm_count * cuda.BLOCKS_PER_SM
                              * (cuda.BLOCK // block)))
        if lc.block_per_output:
            # One block of REDUCE_BLOCK threads per output (the tree assumes that size).
            grid = max(1, min(kept, device.sm_count * cuda.BLOCKS_PER_SM))
            block = nvvm.REDUCE_BLOCK
        self.entry, self.grid, self.block = fn(entry), grid, block

    def __call__(self, out: int, srcs: tuple[int, ...], stream=0) -> None:
        """Launch on device pointers `out` (the layout's first operand) and `srcs`."""
        if self.empty:
            return
        out += self.offsets[0]
        if out % self.align:
            check_aligned(self.kernel.spec, out, self.layout)
        words = self.words.copy()
        words[0] = out
        for k, (p, off) in enumerate(zip(srcs, self.offsets[1:])):
            words[1 + k] = p + off
        device = self.kernel.device
        device.activate()
        if not self.full_reduction:
            cuda.launch(self.entry, self.grid, self.block, [words.tobytes()], stream)
            return
        # Partials are compute values (float16 accumulates as float, complex as two parts):
        # 16 bytes covers all.
        with cuda.Buffer(self.grid * 16, device) as scratch:
            words[self.scratch_word] = scratch.ptr
            data = words.tobytes()
            cuda.launch(self.entry, self.grid, nvvm.REDUCE_BLOCK, [data], stream)
            cuda.launch(self.finish, 1, nvvm.REDUCE_BLOCK, [data, np.int64(self.grid).tobytes()],
                        stream)
            cuda.synchronize(stream)  # scratch is freed on exit


def check_aligned(spec, out: int, layout) -> None:
    """The kernel stores naturally aligned (see codegen.nvvm); refuse outputs that are not."""
    dt = np.dtype(spec.outputs[0][1])
    align = dt.itemsize // 2 if dt.kind == "c" else dt.itemsize
    if out % align or any(st % align for st in layout.strides[0]):
        raise BindError(f"GPU output of {dt} is not {align}-byte aligned (address {out:#x}, "
                        f"strides {layout.strides[0]})")


# Bounded like the CPU cache; an evicted module is unloaded (its kernels are not in flight:
# every launch path synchronizes or is followed by a synchronize before results are read).
def _unload(k) -> None:
    cuda.synchronize()
    k.module.close()


kernels = LRU(256, "GPU kernels", on_evict=_unload)


def kernel(spec, layout, device: cuda.Device | None = None) -> CompiledKernel:
    """The compiled kernel for spec on a layout's class, cached per device."""
    device = device or cuda.get_device(0)
    lc = nvvm.LayoutClass.of(layout, spec)
    key = (device.ordinal, spec, lc)
    return kernels.get_or_build(key, lambda: CompiledKernel(spec, lc, device))


def execute(spec, layout, out: int, srcs: tuple[int, ...], device: cuda.Device | None = None,
            stream=0, params: bytes = b"") -> None:
    """Run spec over a bound layout on device pointers (out first), compiling on first use."""
    kernel(spec, layout, device)(out, srcs, layout, stream, params)


def explain(spec, layout, *, ptx: bool = True) -> str:
    """NVVM IR and (when the toolchain is installed) PTX for `spec` bound to `layout`."""
    lc = layout if isinstance(layout, nvvm.LayoutClass) else nvvm.LayoutClass.of(layout, spec)
    text = nvvm.lower(spec, lc)
    out = [f"--- NVVM IR ({lc}) ---", text]
    if ptx:
        out += ["--- PTX (libNVVM -arch=compute_90 -fma=0) ---", nvvmc.compile_ptx(text)]
    return "\n".join(out)
