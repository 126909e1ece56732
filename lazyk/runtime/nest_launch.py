"""Repeated evaluations of one var / option structure: the loop nest prepared once
(`NestLaunch`).

`prepare(expr)` decides from an expression and its leaves' types what `evaluate_nest`
decides on every call (no string step, no part computed first, no inner reduction, one
nest: an elementwise map over `N * var` rows of one offsets array, or a reduction of the
last axis of `N * var` rows) and keeps it: the kernel, its fixed kernel-data words and
parameters, the result's form. A call with arrays of those types reads their rows
(`nest_plan.nest_operand`, checked on their first use), writes their addresses into a copy
of the kernel data and runs the kernel on the calling thread; the result is built as
`nest_run` builds it. The kernel checks every row it reads, as in `nest_run` (ShapeError or
ArrayConstructionError naming the row). A call the prepared form does not cover (other row
structures, content large enough to split over threads, maps over many items (one loop over
the items is faster there), rows of several offsets arrays in
a map) gives NotImplemented: the caller takes the general path.
"""
from __future__ import annotations

import weakref

import numpy as np

from lazyk.arrays.array import Array, array, masked, masked_empty
from lazyk.arrays.outputs import empty as fresh
from lazyk.backend.threads import part_entry, parts_for
from lazyk.codegen.levels import FIXED, VAR, WORDS, Fill, Map, Reduce
from lazyk.codegen.nest import PREFIX
from lazyk.frontend import ops
from lazyk.frontend.graph import REDUCE_OP, toposort
from lazyk.frontend.leaves import is_ragged, leaf_data
from lazyk.frontend.operands import NATIVE_NUMERIC
from lazyk.kernel.flat import data_pointer
from lazyk.kernel.nest import MIN_PART, nest_stats, status_error
from lazyk.runtime.nest_plan import array_operand, nest_operand, nest_plan, nest_words, offsets_rows
from lazyk.runtime.nest_results import nest_reduced, nest_result
from lazyk.runtime.nest_structure import prepared_plan
from lazyk.runtime.ragged_rules import RECORDERS, selects
from lazyk.types import Option

# A map over more items than this takes the general path: its one loop over the items of
# rows of one offsets array (vectorized, libm calls too) costs less than a loop per row
# here plus the planning it saves (~100 us)
MAP_ITEMS = 1 << 14
# launches prepared (`prepare` calls that returned one): a repeated structure prepares once
launch_stats = {"prepared": 0}


class NestLaunch:
    """One nest prepared for a structure and its leaves' types: `launch(arrays)` computes
    the expression over `arrays` (lazyk Arrays of those types, in the order of `names`)."""

    def __init__(self, prep, names: list, options: tuple, levels: tuple, kinds: list,
                 ops_: list, root, red_node, reduce_arg):
        self.names, self.options = tuple(names), options
        self.levels, self.kinds = levels, [tuple(k) for k in kinds]
        self.labels = list(prep.labels)
        self.sel_kinds = list(prep.sel_kinds)
        # the kernel's loads assume these dtypes and alignments (its spec)
        self.loads = [(ops_[j].dtype, bool(ops_[j].aligned)) for j in self.labels]
        self.mapping = isinstance(prep.mode, Map)
        self.acc, self.skipna = prep.acc, prep.skipna
        self.option = any(prep.maskd)
        # `?T` values written in the result's layout, present bytes into its mask (as
        # `nest_run` writes them: the same kernel)
        self.packed = self.mapping and self.option and prep.value_option and \
            self.acc == root.dtype
        self.kern = prep.kernel(Fill(self.acc.itemsize) if self.packed else Fill())
        self.lay = self.kern.lay
        self.root_dtype, self.red_dtype = root.dtype, red_node.dtype
        self.reduce_arg = reduce_arg
        self.flagged = self.option or (
            not self.mapping and not (ops.OPS[reduce_arg[0]].folds_to_identity or (
                reduce_arg[0] == "mean" and self.acc.kind not in "iu")))
        # the kernel data of one part: the words, the parameters after them (a row of
        # 64-byte multiples), then the status words, then the part table (the address of
        # the kernel data: the part entry reads its part's from there)
        words, _ = nest_words(levels, [0] * len(levels), [ops_[j] for j in self.labels],
                              self.sel_kinds)
        self.nwords = len(words)
        params = prep.step.consts
        self.row = self.kern.record_words(self.nwords, len(params))
        self.table = self.row + 8 + len(levels)
        template = np.zeros(self.table + 1, np.int64)
        self.kern.records(template[None, :self.row], np.zeros(self.nwords, np.int64), params)
        self.template = template
        self.part = self.kern.part
        self._last: tuple = ((),)  # (weak refs to the last call's operands, `_bind`'s answer)

    def __call__(self, arrays) -> object:
        if RECORDERS:  # explain() records the nests the general path runs
            return NotImplemented
        ops_ = [array_operand(a) for a in arrays]  # (checked on an array's first use)
        if None in ops_:
            return NotImplemented
        last = self._last  # the operands of the last call and their kernel data
        if [r() for r in last[0]] == ops_:  # (operands compare by identity)
            _, levels, sizes, content, block = last
        else:
            got = self._bind(ops_)
            if got is None:
                return NotImplemented
            levels, sizes, content, block = got
            self._last = (tuple(weakref.ref(o) for o in ops_), *got)
        n0 = sizes[0]
        if parts_for(content, MIN_PART) > 1:
            return NotImplemented  # content enough for parts on several threads
        if self.mapping and content >= MAP_ITEMS:
            return NotImplemented  # one loop over the items beats a loop per row
        block = block.copy()  # (the kernel data words start at block[PREFIX])
        if self.mapping:
            sel = [ops_[j] for j in self.labels]
            offsets = offsets_rows(sel, self.sel_kinds, levels, sizes)
            if offsets is None:  # rows of several offsets arrays: a count pass first
                return NotImplemented
            nvals = int(offsets[-1])
            block[PREFIX + self.lay["lens"] + 2] = data_pointer(offsets)
        else:
            nvals = n0
        packed = masked_empty((nvals,), self.acc, filled=True) if self.packed else None
        out = fresh(nvals, self.acc) if packed is None else packed[1]
        flags = packed[2].view(np.uint8) if packed is not None else \
            np.empty(nvals, np.uint8) if self.flagged else None
        addr = data_pointer(block)
        block[PREFIX] = addr + 8 * self.row  # the status words
        block[PREFIX + 2] = n0
        block[PREFIX + 3] = data_pointer(out)
        block[PREFIX + 4] = 0 if flags is None else data_pointer(flags)
        block[self.table] = addr  # (the record)
        part_entry(self.part, content)(addr + 8 * self.table, 0)
        nest_stats["runs"] += 1
        if block[self.row]:
            raise status_error(block[self.row:self.table], self.labels)
        if self.mapping:
            mask = flags.view(bool) if self.option else None
            return nest_result(out.astype(self.root_dtype, copy=False), mask, [n0, VAR],
                               {1: offsets}, [n0, nvals], packed=packed)
        values, mask = nest_reduced(out, flags, self.reduce_arg, self.option, self.skipna)
        values = values.astype(self.red_dtype, copy=False)
        if mask is None:
            return Array._wrap(values) if values.dtype in NATIVE_NUMERIC else array(values)
        return masked(values, mask)

    def _bind(self, ops_) -> tuple | None:
        """(levels, sizes, the most content of an operand's rows, the kernel data with the
        operands' words) of operands the prepared nest takes, else None."""
        try:
            levels, sizes, kinds = nest_plan(ops_)
        except ValueError:  # (fixed sizes that do not broadcast: named by the general path)
            return None
        if levels != self.levels or kinds != self.kinds:
            return None
        sel = [ops_[j] for j in self.labels]
        if [(o.dtype, bool(o.aligned)) for o in sel] != self.loads:
            return None
        block = self.template.copy()
        lay, words = self.lay, block[PREFIX:]  # (the kernel data words after the prefix)
        words[lay["sizes"]] = sizes[0]
        for j, o in enumerate(sel):
            at = lay["ops"] + j * lay["per_op"]
            w = self._operand_words(o, j)
            words[at:at + len(w)] = w
        content = max((o.dims[-1].length for o in sel if o.dims and o.dims[-1].rows),
                      default=0)  # (a 0-d operand: a scalar, no rows)
        return levels, sizes, content, block

    def _operand_words(self, o, j: int) -> np.ndarray:
        """Operand `o`'s kernel-data words at selected position j: its address, mask offset
        and level words (kept with the operand, as `nest_plan` keeps its plans: an array's
        operand is reused while the array lives)."""
        kinds = self.sel_kinds[j]
        words = o.__dict__.setdefault("launch_words", {})
        got = words.get((kinds, len(self.levels)))
        if got is not None:
            return got
        w = np.zeros(self.lay["per_op"], np.int64)
        w[0], w[1] = o.ptr, o.mask_offset or 0
        lead = len(self.levels) - len(o.dims)
        for k, level in enumerate(kinds):
            if level.moves:
                vals = level.words(o.dims[k - lead])
                w[2 + WORDS * k:2 + WORDS * k + len(vals)] = vals
        words[kinds, len(self.levels)] = w
        return w


def prepare(expr, names: list) -> NestLaunch | None:
    """A `NestLaunch` for `expr` (an expression over var / option lazyk arrays, its leaves
    named `names` in the order calls give them), or None where `evaluate_nest` would do more
    than one nest of the prepared forms."""
    env = expr.env
    leaves = [leaf_data(env[n]) for n in names]
    if not leaves or not all(is_ragged(v) for v in leaves):
        return None
    if len({id(v.array) for v in leaves}) != len(leaves):
        return None  # (one array read by two leaves: the general path reads it once)
    root, red_node, reduce_arg = expr.node, expr.node, None
    if root.op == REDUCE_OP:
        reduce_arg, root = root.arg, root.srcs[0]
    nodes = toposort(root)
    if any(n.op == REDUCE_OP or n.dtype.kind not in "biufc" or n.op in ops.TEXT or
           (n.op not in ops.OPS and not n.is_leaf) for n in nodes):
        return None  # inner reductions, strings, row operations, tuples: computed in steps
    if {n.arg for n in nodes if n.op == "input"} != set(names):
        return None
    options = []
    for v in leaves:
        t = v.array.type
        if t.missing_var_rows or t.missing_fixed_rows or text_type(t):
            return None  # missing rows: parts computed first; strings: their own step
        options.append(v.option)
    if any(options) and any(selects(n) or n.op == "with_rows" for n in nodes):
        # where() takes each element's missing state from its branch; with_rows(x, y)
        # reads y's rows, never its missing values (`picks._witnessed`)
        return None
    ops_ = [nest_operand(v) for v in leaves]
    if any(o is None for o in ops_):
        return None
    levels, sizes, kinds = nest_plan(ops_)
    if tuple(levels) != (FIXED, VAR):
        return None
    if reduce_arg is not None and (tuple(reduce_arg[1]) != (1,) or reduce_arg[2] or
                                   reduce_arg[0] in ops.ARG_REDUCTIONS):
        return None  # (arg-reductions: positions, none for an empty row)
    prep = prepared_plan(root, red_node, reduce_arg, names, ops_, levels, kinds)
    if prep is None or prep.declined or prep.qlev or prep.wq or \
            not isinstance(prep.mode, (Map, Reduce)):
        return None
    launch_stats["prepared"] += 1
    return NestLaunch(prep, names, tuple(options), tuple(levels), kinds, ops_, root,
                      red_node, reduce_arg)


def text_type(t) -> bool:
    """Whether the elements of lazyk type `t` are strings or bytes."""
    t = t.dtype
    t = t.elem if isinstance(t, Option) else t
    return getattr(t, "name", None) in ("string", "bytes")
