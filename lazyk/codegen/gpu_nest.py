"""The loop nest (`codegen.nest`) rendered for NVIDIA GPUs: NVVM IR text for libNVVM.

The same generator emits the same levels, checks and folds as on the CPU; only the math
names (`nvvm.CUDA`: libdevice) and the entry differ. The entry runs one part of the nest per
GPU thread: `lazyk_nest_parts(i8 **kds, i64 nparts)`, thread i running
`lazyk_nest_go(kds[i])` over the record the host built for part i (as the CPU thread pool
runs its parts), so the records, status words and results are the CPU's.
"""
from __future__ import annotations

from llvmlite import ir

from lazyk.codegen.levels import Fill, Map
from lazyk.codegen.nest import generate_nest
from lazyk.codegen.nvvm import CUDA, DATA_LAYOUT, TRIPLE, check_dtypes, legalize
from lazyk.errors import NotSupportedError

NAME = "lazyk_nest"
ENTRY = "lazyk_nest_parts"
I32, I64 = ir.IntType(32), ir.IntType(64)
P8 = ir.PointerType(ir.IntType(8))


def _sreg(module: ir.Module, b: ir.IRBuilder, name: str) -> ir.Value:
    full = f"llvm.nvvm.read.ptx.sreg.{name}"
    fn = module.globals.get(full) or ir.Function(module, ir.FunctionType(I32, []), full)
    return b.zext(b.call(fn, []), I64)


def lower_nest(spec, levels: tuple, kinds: tuple, masked: tuple, mode=Map(), npass=Fill(),
               skipna: bool = False, mean: bool = False, where_masks: bool = False) -> str:
    """NVVM IR text of one loop-nest kernel (arguments as `codegen.nest.generate_nest`)."""
    check_dtypes(spec)  # (outputs past the first are level values: the nest computes them)
    try:
        module = generate_nest(spec, levels, kinds, masked, mode, npass, skipna, mean, NAME,
                               target=CUDA, where_masks=where_masks)
    except NotSupportedError as err:  # (the CPU computes it: say where it is refused)
        if "on the GPU" in str(err):
            raise
        raise NotSupportedError(f"{err}: not supported on the GPU yet") from None
    module.triple, module.data_layout = TRIPLE, DATA_LAYOUT
    run = module.get_global(f"{NAME}_go")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [P8.as_pointer(), I64]), ENTRY)
    kds, n = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    i = b.add(b.mul(_sreg(module, b, "ctaid.x"), _sreg(module, b, "ntid.x")),
              _sreg(module, b, "tid.x"))
    with b.if_then(b.icmp_unsigned("<", i, n)):
        b.call(run, [b.load(b.gep(kds, [i]), align=8)])
    b.ret_void()
    module.add_named_metadata("nvvm.annotations").add(
        module.add_metadata([fn, "kernel", ir.Constant(I32, 1)]))
    module.add_named_metadata("nvvmir.version").add(
        module.add_metadata([ir.Constant(I32, 2), ir.Constant(I32, 0)]))
    return legalize(str(module))
