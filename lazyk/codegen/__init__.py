"""Codegen: kernel specs and level stacks -> IR text (LLVM for the CPU, NVVM for NVIDIA GPUs).

In import order:
- `emit` the per-element code every target shares (math naming, the scalar `Emitter` the op
  rows lower through, `emit_body`);
- `levels` the level model: how one operand reaches its elements at one level (strided,
  var rows, missing rows, kept, gathered, tuples), the nest's modes and passes;
- `nest` ONE loop nest for any stack of levels, with its parts `nest_walk` (rows read,
  checked and paired), `nest_values` (loads, body, writes, scans), `nest_selection`
  (kept elements, gathers), `nest_groups` (folds over middle levels), `nest_window`
  (contiguous rows folded by windows), `nest_reduce` (accumulators, arg-reductions) and
  `nest_bins` (histogram counters);
- `llvm` the strided flat ckernels of dense layouts; `nvvm` and `gpu_nest` the same bodies
  and nests as NVVM IR.

Imports the errors, arrays (arrmeta word layouts) and frontend (op table, specs) stages;
never the backend, kernels or runtime: its output is text.
"""
