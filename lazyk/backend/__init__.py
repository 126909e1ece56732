"""Backend: IR text -> machine code or PTX, the disk cache, the native thread pool and native row work.

In import order:
- `cpu` llvmlite for the host (target machine, JIT, symbols); `optworker` O3 and object code,
  in this process or a helper process; `vecmath` vector intrinsics renamed to libmvec;
  `objcache` the on-disk object cache (the user's own, private directory only);
- `poolcode` the thread pool's native code as IR text; `threads` the pool and the one rule
  for how many parts a piece of work is split into;
- `rowcheck`, `rowcopy`, `padded` native row work compiled once per process (offsets checks,
  rows copied, items kept, lists padded or cut);
- `nvvmc` NVVM IR -> PTX (libNVVM in a worker process, ptxas); `cuda` the CUDA driver.

Never sees a graph or a type: text in, addresses and launches out. Imports only the errors,
lru and version modules (and `arrays.outputs` for the blocks native row work fills).
"""
