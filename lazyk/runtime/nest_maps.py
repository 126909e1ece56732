"""Several elementwise results over the items of one offsets array in one pass (`Map` with
`values` > 1): each operand read once, the work the results share computed once, one
result array each. The values a combination's slots read are stored this way
(`lazyk.runtime.picks`: px, py, pz and E of one collection are one pass, not four)."""
from __future__ import annotations

import numpy as np

from lazyk.arrays.array import array as lazyk_array
from lazyk.arrays.buffers import offsets_array
from lazyk.arrays.outputs import empty as fresh
from lazyk.codegen.levels import Fill, Map
from lazyk.frontend.graph import toposort
from lazyk.frontend.leaves import is_text, leaf_data
from lazyk.frontend.ops import ELEMENTWISE
from lazyk.frontend.spec import KernelSpec, pack_params
from lazyk.kernel.flat import data_pointer
from lazyk.kernel.nest import kernel_for
from lazyk.passes.fuse import fuse_outputs
from lazyk.runtime.nest_plan import (
    flat_items,
    kinds_of,
    nest_operand,
    nest_plan,
    nest_words,
)
from lazyk.runtime.nest_threads import nest_parts
from lazyk.runtime.ragged_rules import RECORDERS, one_leaf_per_array

_LEAVES = ("input", "scalar", "const")


def evaluate_maps(roots: list, env: dict) -> list | None:
    """The value of each root (elementwise graphs of one shape `N * var * T` over arrays
    whose rows are those of one offsets array, none with missing values), as arrays
    sharing those rows, computed in one pass; None where the pass does not take them
    (then each is evaluated on its own)."""
    if len(roots) < 2 or len({r.shape for r in roots}) > 1 or \
            any(n.op not in ELEMENTWISE and n.op not in _LEAVES or is_text(n.dtype)
                for n in toposort(roots)):
        return None  # (text: its own path, one result at a time)
    roots, names = one_leaf_per_array(list(roots), env)
    if not names:
        return None
    leaves = [leaf_data(env[n]) for n in names]
    ops_ = [nest_operand(v) for v in leaves]
    if any(o is None or o.mask_offset is not None for o in ops_):
        return None
    levels, sizes, kinds = nest_plan(ops_)
    items = flat_items(ops_, levels, kinds, sizes)
    if items is None:  # (rows of several offsets arrays, or fixed dims: each on its own)
        return None
    ops_, offsets, (levels, sizes, kinds) = items
    body, inputs, outs, consts = fuse_outputs(roots)
    by_name = {n: j for j, n in enumerate(names)}
    labels = [by_name[n] for n in inputs]
    sel, sel_kinds = [ops_[j] for j in labels], kinds_of(kinds, labels)
    spec = KernelSpec(inputs=tuple(o.dtype for o in sel),
                      aligned=tuple(bool(o.aligned) for o in sel), body=body,
                      outputs=tuple((i, r.dtype) for i, r in zip(outs, roots)))
    mode = Map(values=len(roots))
    kern = kernel_for((spec, tuple(levels), tuple(tuple(k) for k in sel_kinds),
                       (False,) * len(sel), mode, Fill(), False, False, False))
    n = sizes[0]
    values = [fresh((n,), r.dtype) for r in roots]
    table = np.array([data_pointer(v) for v in values[1:]], np.int64)  # (word 4)
    words, _ = nest_words(levels, sizes, sel, sel_kinds)
    words[3], words[4] = data_pointer(values[0]), data_pointer(table)
    parts = nest_parts(levels, sizes, {}, [], sel, sel_kinds, mode, [0], n)
    kern.run(words, pack_params(spec.params, consts), parts, (leaves, values, table), labels)
    for rec in RECORDERS:
        rec.append(("nest", kern, len(parts)))
    return [offsets_array(offsets, lazyk_array(v), check=None) for v in values]


def evaluate_together(nodes: list, env: dict) -> dict:
    """{node: value} of those of `nodes` (elementwise graphs) that share their shape with
    another, each such group computed in one pass where `evaluate_maps` takes it; the
    others are left out (each computed on its own)."""
    by_shape: dict = {}
    for n in nodes:
        by_shape.setdefault(n.shape, {})[n] = None  # (in order, each once)
    got: dict = {}
    for group in by_shape.values():
        group = list(group)
        got.update(zip(group, (evaluate_maps(group, env) if len(group) > 1 else None) or ()))
    return got
