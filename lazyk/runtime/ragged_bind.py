"""`bind()` of a compiled expression over var / option data: the fill pass of its loop nest
planned once for the bound arrays, run many times (`RaggedBound`).

At bind the inputs are checked against the parameter types, the count passes run (the
result's row lengths and missing rows), `out`'s structure is checked against them once
(dims, row lengths, missing rows, element dtype) and every byte a call writes into `out`
is located. A call then copies the prepared kernel data, runs the kernel parts on the
native pool and stores the values: no Python per row, no count pass, no LLVM. A reduction
over every axis combines its parts' partial results after the kernel. Forms the call runs
in several steps (a reduction feeding more work, a reduction of a where() over missing
values) bind as several prepared kernels through scratch the bound object owns
(`StepsBound`). A where() over missing rows gives rows that follow the values: each call
runs its count passes again and checks the rows against bind's (`NestFill.recount`);
its `?n` rows (a branch's missing rows against a fixed dim) keep their storage, so each
call stores which of them are missing into `out`. Where a call computes a part over
missing rows first (`nest_steps._parts_first`: its missing rows hide rows that do not line
up), bind refuses (NotSupportedError) rather than pair those rows in one nest.
"""
from __future__ import annotations

import threading

import numpy as np

from lazyk import hooks
from lazyk.arrays import arrmeta as M
from lazyk.arrays.array import Array
from lazyk.arrays.memory import lookup
from lazyk.backend.threads import get_num_threads, parallel_for
from lazyk.codegen.levels import VAR, Reduce
from lazyk.codegen.nest import PREFIX
from lazyk.errors import ArrayConstructionError, BindError, NotSupportedError, ShapeError
from lazyk.frontend import ops
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import REDUCE_OP, rewrite, toposort
from lazyk.frontend.leaves import is_ragged, leaf_data, text_element
from lazyk.frontend.operands import as_expr, wrap_array
from lazyk.frontend.ops import text_unit
from lazyk.kernel.flat import data_pointer, refuse_pickle
from lazyk.kernel.nest import line_zeros, status_error, whole_lines
from lazyk.runtime import launch as runtime
from lazyk.runtime.nest_run import NestFill, plan_fill
from lazyk.runtime.ragged_out import is_ragged_type, pair_rows, qdims_of
from lazyk.runtime.ragged_rules import branch_masks, selects
from lazyk.types import Option, Scalar, with_element

_U8 = np.dtype(np.uint8)


class _Slots:
    """Where n elements of dtype `dt` go in a byte buffer (offsets checked inside it once):
    a strided view when evenly spaced (the common case), else a byte index."""

    def __init__(self, buf: np.ndarray, offs: np.ndarray, dt: np.dtype):
        n, k = len(offs), dt.itemsize
        self.n, self.dt, self.buf, self.view, self.index = n, dt, buf, None, None
        if n == 0:
            return
        lo, hi = int(offs.min()), int(offs.max()) + k
        if lo < 0 or hi > len(buf):
            raise BindError("out's arrmeta points outside its memory block")
        step = int(offs[1] - offs[0]) if n > 1 else k
        if step >= k and (n < 2 or bool(np.all(np.diff(offs) == step))):
            self.view = np.ndarray((n,), dt, buffer=buf, offset=int(offs[0]), strides=(step,))
        else:
            self.index = offs[:, None] + np.arange(k)

    def get(self) -> np.ndarray:
        """The n values there now."""
        if self.n == 0:
            return np.zeros(0, self.dt)
        if self.view is not None:
            return self.view
        return np.ascontiguousarray(self.buf[self.index]).view(self.dt).reshape(-1)

    def put(self, values) -> None:
        if self.view is not None:
            runtime.copy_cast(self.view, values)
        elif self.n:
            raw = np.broadcast_to(ops.cast_values(values, self.dt), (self.n,))
            self.buf[self.index] = np.ascontiguousarray(raw).view(np.uint8).reshape(self.n, -1)

    def direct(self, dt: np.dtype) -> int:
        """The address the kernel may write `dt` values to directly, or 0."""
        v = self.view
        if v is None or v.dtype != dt or not v.flags.c_contiguous or not v.flags.aligned:
            return 0
        return v.ctypes.data


class _ArraySlots:
    """A fixed result's elements: a NumPy `out` of the result's shape."""

    def __init__(self, out: np.ndarray):
        self.out = out

    def put(self, values) -> None:
        runtime.copy_cast(self.out, np.reshape(values, self.out.shape))

    def direct(self, dt: np.dtype) -> int:
        o = self.out
        ok = o.dtype == dt and o.flags.c_contiguous and o.flags.aligned
        return o.ctypes.data if ok and o.size else 0


def _same_items(offsets: np.ndarray, lo: int, hi: int) -> None:
    """A bound fold over every item of rows read as one run of items lo..hi: the rows
    still start at lo, end at hi, and rise (rows of other lengths give the same fold)."""
    first, last = int(offsets[0]), int(offsets[-1])
    if (first, last) != (lo, hi):
        raise ShapeError(f"the input's rows hold items {first}..{last} now, {lo}..{hi} at "
                         "bind: bind again")
    if not hooks.rows_rise(offsets):
        i = int(np.argmax(offsets[1:] < offsets[:-1])) + 1
        raise ArrayConstructionError(f"offsets[{i}] = {int(offsets[i])} is less than "
                                     f"offsets[{i - 1}] = {int(offsets[i - 1])}: offsets "
                                     "must be non-decreasing")


class RaggedBound:
    """A compiled var / option expression bound to its inputs and `out`: `b()` computes
    into `out` and returns it.

    A call reads the very arrays bound: changes to their values (and to `?T` elements'
    missing state) made in place are seen. Their structure (row lengths, missing rows,
    the arrays themselves) is fixed at bind: the kernel checks every row it reads against
    the bound structure and raises ShapeError (naming the row) when a row's length
    changed, ArrayConstructionError when its indices leave the content, and each call
    checks the inputs' `?var` row masks (ShapeError naming the input and the row that
    turned missing, or present); bind again after such changes. A fold over every item of
    rows of one offsets array reads them as one run (`_same_items` checks each call).
    Thread-safe: each thread has its own kernel data, status words and scratch values;
    calls at once into the same `out` write the same values.
    """

    scratch = False  # computes into scratch of a `StepsBound` (not into the user's out)
    __reduce__ = refuse_pickle

    def __init__(self, fill, out, signature: str):
        self.signature = signature
        self._fill = fill
        # whether the result has missing values (`?T`): the rules applied to no elements
        # (a reduction over every axis: to one present partial result)
        k = 1 if fill.npartial else 0
        result_option = fill.finish(np.zeros(k, fill.acc), np.full(k, 3, np.uint8),
                                    count=1)[1] is not None
        self._kern = fill.kern
        self.out = out
        self._keep = (fill.leaves, fill.offsets, fill.words)
        self._rows = []  # (slots, bytes) of out's `?var` row masks
        self._mask = None
        self._place(out, result_option)
        self._inputs_rows = _input_rows(fill)
        reduce_arg = fill.reduce_arg
        # min / max: `initial` folded in after, or an empty row refused after the kernel ran:
        # never straight into out (an error leaves out as it was)
        extremum = reduce_arg is not None and ops.OPS[reduce_arg[0]].no_empty_fold
        self._direct = 0 if extremum or fill.npartial or self._pick is not None or \
            self._shared(out) else \
            self._slots.direct(fill.acc)
        # the kernel data of every part, but the per-call words (status, values, flags)
        lay, nlev = self._kern.lay, len(self._kern.levels)
        self._nstatus = whole_lines(8 + nlev)
        self._nparts = n = len(fill.parts)
        rw = self._kern.record_words(len(fill.words), len(fill.consts))
        self._blocks = line_zeros(n * rw).reshape(n, rw)
        words = self._kern.records(self._blocks, fill.words, fill.consts)
        for w, (lo, hi, pos, firsts) in zip(words, fill.parts):
            w[1], w[2], w[5] = lo, hi, pos
            for k, first in firsts.items():
                w[lay["lens"] + 2 * k + 1] = first
        self._local = threading.local()
        # values the kernel wrote need no rules applied: no missing values, and no
        # reduction that refuses empty rows (min, max, an integer mean, an arg-reduction)
        row = None if reduce_arg is None else ops.OPS[reduce_arg[0]]
        plain = not fill.option and not fill.qrows and (
            row is None or not (row.no_empty_fold or row.per_value or row.finish) or
            (reduce_arg[0] == "mean" and fill.acc.kind not in "iu"))
        self._noop = plain and bool(self._direct) and self._mask is None  # (out's mask:
        # written each call, all present where the result has no missing values)

    def _place(self, out, result_option: bool) -> None:
        """Check `out` against the result's structure; locate its element (and mask)
        bytes in the order the kernel writes values."""
        fill = self._fill
        dims = list(fill.dims)
        keepdims = fill.reduce_arg is not None and fill.reduce_arg[2]
        if keepdims and isinstance(fill.mode, Reduce):
            dims.append(1)
        self._pick = None  # `?n` rows: the positions of out's values in the kernel's
        self._qn = []  # `?n` rows that follow the values (`_walk`)
        if VAR not in dims and not fill.validity and not result_option and \
                not fill.present and \
                not (isinstance(out, Array) and is_ragged_type(out.type)):
            self._slots = _ArraySlots(_numpy_out(out, fill, dims, keepdims))
            return
        if not isinstance(out, Array) or not is_ragged_type(out.type):
            raise BindError(f"out: the result has var dims or missing values ({self.signature}"
                            "): pass a lazyk array of the result's type and row lengths")
        if out.readonly:
            raise BindError("out is read-only")
        # where() over missing rows with `?n` result rows: which of them are missing
        # follows the values, their storage does not; every value is placed, and each
        # call stores the present bytes its fill pass wrote (`self._qn`)
        self._follow = fill.recount is not None and bool(fill.present)
        skel = fill.skeleton(dims, all_present=self._follow)
        if keepdims and not isinstance(fill.mode, Reduce):
            for a in fill.keep_axes:
                skel = skel[(slice(None),) * a + (None,)]
        self._walk(skel, out, result_option)

    def _walk(self, skel: Array, out: Array, result_option: bool) -> None:
        rdims, _, _ = qdims_of(skel.type)
        odims, oelem, oopt = qdims_of(out.type)
        value = Scalar(str(self._fill.dtype))
        rtext = with_element(skel.type, Option(value) if result_option else value)
        if len(rdims) != len(odims) or any(not b.takes(a) and not (a.fixed and b.fixed)
                                           for a, b in zip(rdims, odims)):
            raise BindError(f"out has type {out.type}, the result {rtext}: out needs the "
                            "result's dimensions (?var where the result has missing rows, "
                            "?n where it has missing rows of a fixed size n)")
        for level, (a, b) in enumerate(zip(rdims, odims)):
            if a.fixed and b.fixed and a.size != b.size:
                raise ShapeError(f"out: dimension {level} has size {b.size}, the result's "
                                 f"has size {a.size} ({rtext})")
        odt = oelem.to_numpy() if hasattr(oelem, "to_numpy") else None
        if odt is None or odt.newbyteorder("=") != self._fill.dtype or not odt.isnative:
            raise BindError(f"out has elements {oelem}, the result {self._fill.dtype}: "
                            "bind needs out of the result's element dtype")
        if result_option and not oopt:
            raise BindError(f"out has type {out.type}, the result {rtext}: missing values "
                            "need an out of ?T elements")
        rm, om = skel.meta, out.meta
        rbuf, roffs = _block(skel)
        obuf, ooffs = _block(out)
        rbuf, roffs, obuf, ooffs, ra, oa, rows = pair_rows(rm, om, rdims, odims, rbuf, roffs,
                                                           obuf, ooffs)
        self._rows = [(_Slots(buf, offs, _U8), ok) for buf, offs, ok in rows]
        # the `?n` levels' entries of those masks: (entry, the fill pass's present bytes)
        qlevels = [k for k, d in enumerate(odims) if d.missing]
        self._qn = [(i, list(self._fill.present).index(k)) for i, k in enumerate(qlevels)
                    if self._follow and k in self._fill.present]
        for i, j in self._qn:
            if self._rows[i][0].n != len(list(self._fill.present.values())[j]):
                raise BindError(f"out: its rows do not match the result's ({rtext})")
        positions = M.gather(rbuf, roffs, 8).view(np.int64).reshape(-1)
        at = np.full(self._fill.nvals, -1, np.int64)
        at[positions] = ooffs
        if self._fill.present:  # values under missing `?n` rows are not stored
            self._pick, at = positions, ooffs
        elif len(positions) != self._fill.nvals or bool((at < 0).any()):
            raise BindError(f"out: its elements do not match the result's ({rtext})")
        self._slots = _Slots(obuf, at, odt)
        if oopt:
            self._mask = _Slots(obuf, at + om[oa], _U8)
            self._mask_ones = not result_option

    def _shared(self, out) -> bool:
        """Whether out's memory may be read by the kernel (then values go through a
        scratch buffer: the kernel never writes what it may still read)."""
        try:
            mine = _block(out)[0] if isinstance(out, Array) else out
        except BindError:
            return True
        return any(t is None or np.may_share_memory(mine, t)
                   for v in self._fill.leaves for t in _leaf_memory(v))

    def _scratch(self) -> tuple:
        """This thread's kernel data, status words, values and flags (made on its first
        call, then reused: calls from other threads never share them)."""
        fill, nparts = self._fill, self._nparts
        values = None if self._direct else np.empty(fill.npartial or fill.nvals, fill.acc)
        flags = np.empty(fill.npartial or fill.nvals, np.uint8) if fill.flagged else None
        status = line_zeros(nparts * self._nstatus).reshape(nparts, self._nstatus)
        blocks = line_zeros(self._blocks.size).reshape(self._blocks.shape)
        blocks[...] = self._blocks
        words = blocks[:, PREFIX:]  # (the kernel data words after each ckernel_prefix)
        words[:, 0] = data_pointer(status) + np.arange(nparts) * (8 * self._nstatus)
        words[:, 3] = self._direct or data_pointer(values)
        words[:, 4] = 0 if flags is None else data_pointer(flags)
        table = (data_pointer(blocks) + np.arange(nparts) * blocks.strides[0]).astype(np.uintp)
        present = [np.empty(len(v), np.uint8) for v in fill.present.values()]
        for k, rows in zip(fill.present_words.values(), present):  # this thread's own
            words[:, k] = data_pointer(rows)
        got = self._local.scratch = (blocks, blocks[:, :PREFIX + 6].copy(), status, table,
                                     data_pointer(table), values, flags, present)
        return got

    before = None  # run before each call (see lazyk.kernel.BoundKernel.before)

    def __call__(self):
        """Run the kernel on the bound arrays into `out`; returns `out`."""
        if self.before is not None:
            self.before()
        try:
            blocks, head, status, table, tab, values, flags, _ = self._local.scratch
        except AttributeError:
            blocks, head, status, table, tab, values, flags, _ = self._scratch()
        fill, nparts = self._fill, self._nparts
        for name, level, slots, ok, ok8 in self._inputs_rows:  # the rows bind counted
            now = slots.get()
            if np.array_equal(now, ok8):  # (mask bytes are 0 or 1: one compare)
                continue
            now = now != 0
            if not np.array_equal(now, ok):
                i = int(np.argmax(now != ok))
                raise ShapeError(f"input {name!r}: row {i} of ?var dimension {level} (counted "
                                 f"over the present rows above) is "
                                 f"{'missing' if ok[i] else 'present'} now, "
                                 f"{'present' if ok[i] else 'missing'} at bind: bind again")
        if fill.items is not None:
            _same_items(*fill.items)
        if fill.recount is not None:
            self._same_rows()
        # the kernel only reads its data, but a part's words are restored all the same
        blocks[:, :PREFIX + 6] = head
        status[:, 0] = 0
        if fill.npartial:
            flags[:] = 0  # the parts fold their elements' flags into these
        step = max(1, get_num_threads())
        for at in range(0, nparts, step):
            parallel_for(self._kern.part, tab + table.itemsize * at, min(step, nparts - at))
        if status[:, 0].any():
            raise status_error(status[int(np.argmax(status[:, 0] != 0))], fill.labels)
        if not self._noop:
            if self._direct:
                values = self._slots.view if isinstance(self._slots, _Slots) else \
                    self._slots.out.reshape(-1)
            count = int(status[:, 6].sum()) if fill.npartial else 0
            got, mask = fill.finish(values, flags, count) if flags is not None or \
                fill.reduce_arg is not None else (values, None)
            if self._pick is not None:
                got = got[self._pick]
                mask = None if mask is None else mask[self._pick]
            if not self._direct or got is not values:
                self._slots.put(got)
            if self._mask is not None:
                self._mask.put(1 if self._mask_ones or mask is None else mask)
        for slots, ok in self._rows:
            slots.put(ok)
        for i, j in self._qn:  # `?n` rows that follow the values: this call's
            self._rows[i][0].put(self._local.scratch[7][j])
        return self.out

    def _same_rows(self) -> None:
        """where() over missing rows: the result's rows follow the values, so each call
        counts them again (the count passes only) and raises ShapeError naming the first
        result row whose length or missing state differs from bind's."""
        fill = self._fill
        got = fill.recount()
        error = _ScratchRows if self.scratch else ShapeError
        if got is None:
            raise error("the result's rows changed with the inputs' values (where() over "
                        "missing rows takes a row from the branch each element selects): "
                        "bind again")
        offsets, validity = got
        for p in sorted(fill.offsets):
            was, now = fill.offsets[p], offsets[p]
            okw, okn = fill.validity.get(p), validity.get(p)
            if len(was) != len(now):  # rows above it turned missing, or present
                continue
            if okw is not None and not np.array_equal(okw, okn):
                i = int(np.argmax(okw != okn))
                raise error(
                    f"row {i} of the result's var dimension {p} is "
                    f"{'missing' if okw[i] else 'present'} now, "
                    f"{'present' if okw[i] else 'missing'} at bind (where() over missing "
                    "rows takes a row's missing state from the branch each element selects, "
                    "from the values): bind again")
            if not np.array_equal(was, now):
                i = int(np.argmax(np.diff(was) != np.diff(now)))
                raise error(
                    f"row {i} of the result's var dimension {p} has length "
                    f"{int(now[i + 1] - now[i])} now, {int(was[i + 1] - was[i])} at bind "
                    "(where() over missing rows takes a row from the branch each element "
                    "selects, from the values): bind again")

    def __repr__(self) -> str:
        return f"<lazyk bound ragged call {self.signature}, {self._nparts} part(s)>"


class StepsBound:
    """A bound call in several kernel steps: each reduction that feeds more work (and the
    where() over missing values a reduction folds) computes into scratch this object owns,
    which the next step reads in place; the last step computes into `out`. `b()` runs
    every step's prepared kernels and returns `out`.

    The inputs are read as by `RaggedBound`. A where() over missing rows computed into
    scratch has rows that follow the values: when they changed, the call binds its steps
    again (the scratch is this object's own; `out` is checked as at bind). Calls from
    several threads are safe but run one at a time on one bound object (its steps share
    its scratch); bind once per thread for calls in parallel.
    """

    __reduce__ = refuse_pickle

    def __init__(self, steps: list, last: RaggedBound, signature: str, again=None):
        self.signature = signature
        self.steps = steps
        self.out = last.out
        self._all = steps + [last]
        self._again = again
        self._lock = threading.Lock()
        for step in steps:
            step.scratch = True

    before = None  # run before each call (see lazyk.kernel.BoundKernel.before)

    def __call__(self):
        """Run each step on the bound arrays, the last into `out`; returns `out`."""
        if self.before is not None:
            self.before()
        with self._lock:
            try:
                for step in self._all:
                    step()
            except _ScratchRows:
                new = self._again()  # the scratch's rows changed with the values
                self.steps, self._all = new.steps, new._all
                for step in self._all:
                    step()
        return self.out

    def __repr__(self) -> str:
        return f"<lazyk bound ragged call {self.signature}, {len(self._all)} steps>"


def bind(expr: Expr, out, signature: str):
    """The bound call of `expr` over its leaves (the arrays bound) into `out`: a
    `RaggedBound`, or a `StepsBound` where a reduction feeds more work (each inner
    reduction, innermost first, into scratch), or a reduction folds where() over missing
    values (the where() into scratch first), or a where() over missing strings (each string
    operation into scratch first). NotSupportedError naming the reason for what cannot be
    planned ahead of the values."""
    env, steps = dict(expr.env), []
    nodes = toposort(expr.node)
    if expr.node.op == "where" and text_unit(expr.node.dtype):
        raise NotSupportedError(f"bind() of {signature}: where() over strings gives a new "
                                "string array each call: call the compiled expression instead")
    used = [leaf_data(expr.env[n.arg]) for n in nodes if n.op == "input"]
    # where() over missing strings: its branches would read the elements of missing
    # strings, so each string operation binds as a step of its own first (into scratch)
    text_first = any(is_ragged(v) and text_element(_element(v.array.type)) is not None
                     for v in used) \
        and any(n.op == "where" and selects(n) for n in nodes) and \
        any(getattr(v, "option", False) for v in used)

    def first(node):
        """Bind `node` into scratch of its result (computed once now: its structure);
        the leaf that reads that scratch."""
        scratch = runtime.evaluate(Expr(node, env))
        steps.append(one(node, scratch))
        leaf = wrap_array(scratch) if isinstance(scratch, np.ndarray) else as_expr(scratch)
        env.update(leaf.env)
        return leaf.node

    def one(node, into):
        """`node` (no inner reduction left) bound into `into`: a reduction of where()
        over missing values takes each element's missing state from the branch it
        selects, so the where() runs first (into scratch)."""
        if node.op == REDUCE_OP:
            top = node.srcs[0]
            names = list(dict.fromkeys(n.arg for n in toposort(top) if n.op == "input"))
            if branch_masks(top, names, [leaf_data(env[n]) for n in names]):
                node = node.replace(srcs=(first(top),))
        return _bound(Expr(node, env), into, signature)

    def inner(node, srcs):
        node = node.replace(srcs=srcs) if srcs != node.srcs else node
        return first(node) if node.op == REDUCE_OP else node

    def text(node, srcs):
        node = node.replace(srcs=srcs) if srcs != node.srcs else node
        return first(node) if node.op in ops.TEXT else node

    root = rewrite(expr.node, text) if text_first else expr.node
    top = root.srcs[0] if root.op == REDUCE_OP else root
    if any(n.op == REDUCE_OP for n in toposort(top)):
        top = rewrite(top, inner)
    last = one(root.replace(srcs=(top,)) if root.op == REDUCE_OP else top, out)
    return StepsBound(steps, last, signature, lambda: bind(expr, out, signature)) if steps \
        else last


class _ScratchRows(ShapeError):
    """The rows of a step's scratch changed with the values (`StepsBound` binds again)."""


def _bound(expr: Expr, out, signature: str) -> RaggedBound:
    try:
        fill = plan_fill(expr)
    except ShapeError as err:
        if not _pairs_missing_rows(expr):
            raise
        # a call computes such a part first (a row missing there hides the rows of the
        # other operands of the part); one bound nest would pair them all
        raise NotSupportedError(
            f"bind() of {signature}: {err} in one loop nest, where an operation over "
            "missing rows (?var) and other rows is computed first: call the compiled "
            "expression instead") from None
    if isinstance(fill, str):
        raise NotSupportedError(f"bind() of {signature}: {fill}: call the compiled "
                                "expression instead")
    if fill.reduce_arg is not None and fill.reduce_arg[0] in ops.ARG_REDUCTIONS and \
            not fill.option and expr.type.missing_values:
        # an arg-reduction over var rows: None for an empty row (its flag says nothing
        # was folded), as a call gives
        fill = NestFill(**{**fill.__dict__, "option": True})
    return RaggedBound(fill, out, signature)


def _pairs_missing_rows(expr: Expr) -> bool:
    """Whether an operation of `expr` (not its root) combines an input with missing rows
    (`?var`) with other inputs (`nest_steps._parts_first` computes those first)."""
    qvar = {n for n, v in expr.env.items()
            if is_ragged(leaf_data(v)) and leaf_data(v).array.type.missing_var_rows}
    for node in toposort(expr.node):
        for src in node.srcs:
            names = {n.arg for n in toposort(src) if n.op == "input"}
            if src.op not in ("input", REDUCE_OP) and len(names) > 1 and names & qvar:
                return True
    return False


def _input_rows(fill) -> list:
    """(input name, level, slots, present at bind) of the row masks of every `?var` dim
    of the inputs: each call checks them (a row that turned missing, or present, in place
    changes the result's structure, which bind fixed)."""
    found = []
    for name, v in zip(fill.names, fill.leaves):
        if not is_ragged(v):
            continue
        a = v.array
        dims = qdims_of(a.type)[0]
        if not any(d.missing for d in dims):
            continue
        try:
            buf, offs = _block(a)
        except BindError:
            raise BindError(f"input {name!r}: a {a.type} array over memory bind cannot "
                            "address (its missing rows are checked on each call); pass "
                            "an array made by lazyk") from None
        levels = [k for k, d in enumerate(dims) if d.missing]
        rows = pair_rows(a.meta, a.meta, dims, dims, buf, offs, buf, offs)[-1]
        for level, (b, o, ok) in zip(levels, rows):
            slots = _Slots(b, o, _U8)
            found.append((name, level, slots, ok.astype(bool), slots.get().copy()))
    return found


def _leaf_memory(v) -> list:
    """The memory a leaf's elements and rows lie in (None: not known)."""
    if not is_ragged(v):
        return [v]
    a = v.array
    try:
        found = [_block(a)[0]]  # and the rows' content blocks
        return found + [lookup(d.ref).buffer for d in M.dims_words(a.type, a.meta)[0]
                        if isinstance(d, M.RowsWords)]
    except (BindError, ValueError):
        return [None]


def _block(a: Array) -> tuple:
    """(bytes of the memory `a` lives in, [offset of its element 0 there])."""
    owner = a.owner
    if hasattr(owner, "buffer"):  # a MemoryBlock
        return owner.buffer, np.array([a.ptr - owner.address])
    if isinstance(owner, np.ndarray) and owner.flags.c_contiguous:
        return owner.reshape(-1).view(np.uint8), np.array([a.ptr - owner.ctypes.data])
    raise BindError(f"out: a {a.type} array over memory bind cannot address; pass an array "
                    "made by lazyk")


def _numpy_out(out, fill, dims: list, keepdims: bool) -> np.ndarray:
    """`out` as a writeable NumPy array of the fixed result's shape and dtype."""
    if isinstance(out, Array):
        out = out.to_numpy()
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a NumPy or lazyk array, not {type(out).__name__}")
    shape = tuple(int(d) for d in dims)
    if keepdims and not isinstance(fill.mode, Reduce):
        shape = list(shape)
        for a in fill.keep_axes:
            shape.insert(a, 1)
        shape = tuple(shape)
    if out.shape != shape:
        raise ShapeError(f"out has shape {out.shape}, the result {shape}")
    if out.dtype != fill.dtype:
        raise BindError(f"out has dtype {out.dtype}, the result {fill.dtype}: bind needs "
                        "out of the result's dtype")
    if not out.flags.writeable:
        raise BindError("out is read-only")
    return out


def _element(t):
    """The element type under every dim, its option stripped."""
    t = t.dtype
    return t.elem if isinstance(t, Option) else t
