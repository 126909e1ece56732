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
        if layout.size == 0 and self.spec.reduce is None:
            return
        out += layout.offsets[0]
        srcs = tuple(p + off for p, off in zip(srcs, layout.offsets[1:]))
        check_aligned(self.spec, out, layout)
        self.device.activate()
        fn = self.module.function
        if self.spec.reduce is not None and self.lc.full_reduction:
            grid, _ = self.device.launch_config(layout.size, nvvm.REDUCE_BLOCK)
            # Partials are compute values (float16 accumulates as float, complex as two
            # parts): 16 bytes covers all.
            with cuda.Buffer(grid * 16, self.device) as scratch:
                data = self.kd.pack(out, srcs, scratch.ptr, layout, params)
                cuda.launch(fn(nvvm.ENTRY), grid, nvvm.REDUCE_BLOCK, [data], stream)
                cuda.launch(fn(nvvm.FINISH), 1, nvvm.REDUCE_BLOCK,
                            [data, np.int64(grid).tobytes()], stream)
                cuda.synchronize(stream)  # scratch is freed on exit
            return
        kept = layout.size
        if self.spec.reduce is not None:
            kept = int(np.prod([n for n, r in zip(layout.shape, layout.reduced) if not r]))
        grid, block = self.device.launch_config(kept)
        entry = nvvm.ENTRY
        inner = layout.shape[-1] if layout.shape else 0
        if self.spec.reduce is None and self.lc.ndim >= 2 and inner >= ROWS_MIN:
            # Rows long enough for a block: no per-element index division (nvvm ROWS).
            entry, block = nvvm.ROWS, min(cuda.BLOCK, (inner + 31) // 32 * 32)
            rows = layout.size // inner
            grid = max(1, min(rows, self.device.sm_count * cuda.BLOCKS_PER_SM
                              * (cuda.BLOCK // block)))
        if self.lc.block_per_output:
            # One block of REDUCE_BLOCK threads per output (the tree assumes that size).
            grid = max(1, min(kept, self.device.sm_count * cuda.BLOCKS_PER_SM))
            block = nvvm.REDUCE_BLOCK
        cuda.launch(fn(entry), grid, block, [self.kd.pack(out, srcs, 0, layout, params)], stream)


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
