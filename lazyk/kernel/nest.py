"""Loop-nest kernels over ragged layouts (`codegen.nest`): compiled once per structure (never
per size), run with per-call kernel data, the outermost level split by content into a few
parts per thread that the threads claim one by one (`lazyk.set_num_threads`); a bad row
reported by the kernel becomes a Python error."""
from __future__ import annotations

import sys

import numpy as np

from lazyk.backend.cpu import JITModule, compile_ahead, start_helper
from lazyk.backend.objcache import GENERATOR, source_digest
from lazyk.backend.threads import get_num_threads, parallel_for, parts_for
from lazyk.codegen.nest import (
    PREFIX,
    add_part_entry,
    add_steal_entry,
    generate_nest,
    nest_layout,
)
from lazyk.errors import ArrayConstructionError, ShapeError
from lazyk.frontend.spec import PARAM_SLOT, check_params
from lazyk.kernel.flat import count_kernel, data_pointer
from lazyk.lru import LRU

# compiled nest kernels by structure (each ~64 KB of code)
kernels = LRU(128, "nest kernels")
# "plans" / "plan_hits": `nestrun` plans made / served from its per-structure cache
nest_stats = {"compiles": 0, "hits": 0, "runs": 0, "plans": 0, "plan_hits": 0}
_NAME = "lazyk_nest"
# Below this many values per extra thread, starting a thread costs more than it saves.
MIN_PART = 1 << 18
# Parts per thread when several threads run: each claims the next part when it is done, so a
# thread the OS holds back (a busy machine) delays at most one small part.
PARTS_PER_THREAD = 4


def whole_lines(words: int) -> int:
    """`words` int64 words rounded up to whole cache lines (8 words): a part's block of that
    many, from a `line_zeros` line, shares no line with the next part's."""
    return -(-words // 8) * 8


def line_zeros(n: int) -> np.ndarray:
    """n zero int64 words starting on a cache line (64 bytes). Threads write their own parts'
    records and counters in such buffers: laid out in whole lines from an aligned start, no
    line holds two parts' words. (NumPy aligns to 16 bytes: two threads writing one line
    ran a histogram of row folds at half speed in some processes.)"""
    raw = np.zeros(n + 7, np.int64)
    skip = (-data_pointer(raw) % 64) // 8
    return raw[skip:skip + n]


class NestKernel:
    """JIT code of one loop nest (see `codegen.nest`)."""

    def __init__(self, key: tuple):
        spec, levels, kinds, masked, mode, npass, skipna, mean, where_masks = key
        self.key, self.spec, self.levels, self.kinds = key, spec, levels, kinds
        self.masked, self.mode, self.npass = masked, mode, npass
        self.lay = nest_layout(len(levels), len(kinds))
        names = (f"{_NAME}_part", f"{_NAME}_steal", f"{_NAME}_single", f"{_NAME}_destroy")
        self.jit = JITModule(lambda: _source(key), names, key_text=structural_key(key))
        self.part, self.steal, self.single, destroy = (self.jit.addresses[n] for n in names)
        # the ckernel_prefix of every record of this kernel: {function, destructor}
        self.prefix = np.array([self.single, destroy], np.int64)

    @property
    def ir(self) -> str:
        return self.jit.source_ir

    def __del__(self) -> None:
        jit = getattr(self, "jit", None)
        try:
            if jit is not None and not sys.is_finalizing():
                jit.close()
        except Exception:  # pragma: no cover  (interpreter shutdown)
            pass

    def run(self, words: np.ndarray, params: bytes, parts: list, keep,
            labels: list | None = None) -> list:
        """Run once per part. `words`: the kernel data words (see `nest_layout`) without the
        status address; `parts`: (lo, hi, first position, {level: first row}) per part.
        `keep` holds every buffer the kernel reads or writes alive while it runs. Returns
        each part's status words (mode "all" leaves its count in word 6). Raises
        ArrayConstructionError / ShapeError (with the index path) when a part reports a bad row,
        IndexError for a position outside its row (`x[positions]`)."""
        after = getattr(self.mode, "after", None)  # (its parameters follow the body's)
        check_params(self.spec, params if after is None else
                     params[:PARAM_SLOT * len(self.spec.params)])
        if after is not None:
            check_params(after, params[PARAM_SLOT * len(self.spec.params):])
        nlev, n = len(self.levels), len(parts)
        # each part its own record (ckernel_prefix, kernel data) and status: no shared
        # scratch. One allocation from a cache line holds the records and the status rows
        # (whole lines each: no line written by two threads), the part table and the steal
        # words.
        rw, sw = self.record_words(len(words), len(params)), whole_lines(8 + nlev)
        buf = line_zeros(n * (rw + sw + 1) + 3)
        base = data_pointer(buf)
        blocks = self.records(buf[:n * rw].reshape(n, rw), words, params)
        statuses = buf[n * rw:n * (rw + sw)].reshape(n, sw)
        lens = self.lay["lens"]
        at = n * (rw + sw)  # the part table: each part's record address
        # (word by word: parts are few, and NumPy's vector calls cost more for so few)
        for t, (lo, hi, pos, firsts) in enumerate(parts):
            b = blocks[t]
            b[0], b[1], b[2], b[5] = base + 8 * (n * rw + t * sw), lo, hi, pos
            for k, first in firsts.items():
                b[lens + 2 * k + 1] = first
            buf[at + t] = base + 8 * rw * t
        # the native pool's threads claim the parts one by one (the GIL released)
        if n == 1:
            parallel_for(self.part, base + 8 * at, 1)
        else:
            buf[at + n:] = base + 8 * at, n, 0
            parallel_for(self.steal, base + 8 * (at + n), min(get_num_threads(), n))
        del keep  # the buffers the kernel read stay alive until here
        nest_stats["runs"] += 1
        if (statuses[0, 0] if n == 1 else np.count_nonzero(statuses[:, 0])):
            for st in statuses:
                if st[0]:
                    raise _error(st, labels or list(range(len(self.kinds))))
        return statuses

    @staticmethod
    def record_words(nwords: int, nparams: int) -> int:
        """int64 words of one part's record: the prefix, the kernel data words and the
        parameter bytes, rounded up to 64 bytes."""
        return -(-(8 * (PREFIX + nwords) + nparams) // 64) * 8

    def records(self, rows: np.ndarray, words: np.ndarray, params: bytes) -> np.ndarray:
        """Fill `rows` (int64, one record per row, `record_words` long) with the
        ckernel_prefix, `words` and the parameter bytes; returns the view of the kernel
        data words (row t, word i: the record's word i after the prefix)."""
        nw = len(words)
        rows[:, :PREFIX] = self.prefix
        rows[:, PREFIX:PREFIX + nw] = words
        if params:
            at = 8 * (PREFIX + nw)
            rows.view(np.uint8)[:, at:at + len(params)] = np.frombuffer(params, np.uint8)
        return rows[:, PREFIX:]


def structural_key(key: tuple) -> str | None:
    """Disk-cache key text of a kernel key: its text and the code generator's sources, so a
    hit skips IR generation (~20 ms a kernel); None where some part prints no stable or no
    whole text (an object printed by its address, a graph node printed by its type, an array
    printed in part): the IR then makes the key."""
    text = repr(key)
    if " at 0x" in text or "Node(" in text or "..." in text:
        return None
    code = source_digest(*GENERATOR)
    return f"nest:{_NAME}|{text}|{code}"


def _with_part_entry(module) -> str:
    add_part_entry(module, _NAME)
    add_steal_entry(module, _NAME)
    return str(module)


def _error(st: np.ndarray, labels: list) -> Exception:
    """The error a part's status words describe; `labels[j]`: how input j is named."""
    code, level, j = int(st[0]), int(st[1]), int(st[2])
    path = [int(i) for i in st[8:8 + level]]
    if code == 5:  # a position outside its row (the path reaches the position itself)
        row = f"row {path}" if path else "the array"
        pos = f"{st[3]} (or a uint64 one past int64)" if st[3] == -2 ** 63 else st[3]
        return IndexError(f"x[positions] (or an index of lists, x[:, i]): position {pos} "
                          f"(at {path + [int(st[8 + level])]}) is out of range for {row} of "
                          f"length {st[4]}")
    where = f"row {path[0]}" if len(path) == 1 else f"row {path}" if path else "the top row"
    if code == 1:
        return ArrayConstructionError(
            f"var {where} of operand {labels[j]}: indices {st[3]}..{st[4]} are outside the "
            f"content (0..{st[5]}); its offsets changed or its arrmeta is bad")
    if code == 2:
        if st[5] >= 0:
            return ShapeError(f"{where}: operand {labels[int(st[5])]} has length {st[4]} and "
                              f"operand {labels[j]} has length {st[3]}")
        if st[5] == -2:  # (a tuple level: its count comes from the rows, never stretches)
            return ShapeError(f"{where}: operand {labels[j]} has length {st[3]} and the row "
                              f"holds {st[4]} tuples (combinations / cartesian): a row of 1 "
                              "stretches to the tuples, never the tuples to a row")
        hint = " (operands broadcast from the right, as in NumPy: one value per outer row " \
            "pairs with the rows' lists as v[:, None])" if level == 1 else ""
        return ShapeError(f"{where}: operand {labels[j]} has length {st[3]}, the fixed dim "
                          f"has length {st[4]}{hint}")
    if code == 6:  # (a selection's level: rows pair exactly)
        other = "the fixed dim" if st[5] < 0 else f"operand {labels[int(st[5])]}"
        return ShapeError(f"x[mask] at {where}: operand {labels[j]} has length {st[3]} and "
                          f"{other} has length {st[4]} (a mask selects from rows of its "
                          "own length)")
    if code == 7:  # (above a gathered level: rows pair exactly)
        other = "the fixed dim" if st[5] < 0 else f"operand {labels[int(st[5])]}"
        one = "; a dim of 1 of x (a per-event value, a field of records kept as given) " \
            "stretches in elementwise work only: take the records first, " \
            "r[positions].field, or stretch x first" if st[5] < 0 and st[4] == 1 else ""
        return ShapeError(f"x[positions] at {where}: operand {labels[j]} has length {st[3]} "
                          f"and {other} has length {st[4]} (positions gather from rows of "
                          f"their own length: no row of 1 stretches{one})")
    if code == 8:  # (combinations or a product of long rows: the count past int64)
        return ValueError(f"{where}: its rows (of {st[3]} items, {st[4]} slots) hold more "
                          "tuples than an int64 counts")
    if code == 4:
        return ShapeError(f"{where}: rows of length {st[4]} and {st[3]} do not fold "
                          f"together (operand {labels[j]}; a reduction over an axis above a "
                          f"var dim combines rows element by element, and only rows of length 1 "
                          f"stretch)")
    return ShapeError(f"{where} changed length while it was read ({st[3]}, was {st[4]})")


# the error a part's status words describe, for callers that run prepared parts themselves
status_error = _error


def nest_kernel(spec, levels: tuple, kinds: tuple, masked: tuple, mode: str, npass: str,
                skipna: bool = False, mean: bool = False,
                where_masks: bool = False) -> NestKernel:
    """The compiled nest kernel for these keys (cached; never keyed on sizes)."""
    return kernel_for((spec, tuple(levels), tuple(tuple(k) for k in kinds), tuple(masked),
                       mode, npass, bool(skipna), bool(mean), bool(where_masks)))


def _source(key: tuple) -> str:
    """The IR of the nest kernel for `key` (see `kernel_for`)."""
    spec, levels, kinds, masked, mode, npass, skipna, mean, where_masks = key
    return _with_part_entry(generate_nest(spec, levels, kinds, masked, mode, npass, skipna,
                                          mean, _NAME, where_masks=where_masks))


def kernel_ahead(key: tuple) -> None:
    """Start compiling `kernel_for(key)`'s kernel beside this process's work (a fill pass
    while its count passes compile and run), unless it is compiled already."""
    text_key = None if key in kernels else structural_key(key)
    if text_key is not None:
        compile_ahead(lambda: _source(key), text_key)


def kernel_for(key: tuple) -> NestKernel:
    """`nest_kernel` for its key tuple (spec, levels, kinds, masked, mode, npass, skipna,
    mean, where_masks), all tuples and bools as `nest_kernel` builds them."""
    k = kernels.get(key)
    if k is not None:
        nest_stats["hits"] += 1
        count_kernel(True)
        return k
    k = kernels.put(key, NestKernel(key))
    if not k.jit.from_disk:
        start_helper()  # (a program that compiles one loop nest often compiles more)
    nest_stats["compiles"] += 1
    count_kernel(False, k.jit)
    return k


def split(n: int, total: int, before, weight: int = 1, per_thread: int = PARTS_PER_THREAD) -> list:
    """Bounds of level-0 parts holding about equal content: `before(r)` is a non-decreasing
    estimate of the content before row r (`total` = before(n)); `weight`: values read per
    unit of content (a kernel reading six operands per value is worth splitting at a sixth of
    the values of one reading one); `per_thread`: the most parts per thread. Found by
    bisection, so
    O(parts * log n) probes, no pass over the rows. A `before` with `starts` (an array
    with before(r) = starts[r] - base for r < n) and `base` is searched in NumPy; one
    with `rows` (before(r) = r), or None, needs no search."""
    threads = get_num_threads()
    nparts = min(parts_for(max(total, 0) * max(weight, 1), MIN_PART, threads,
                           per_thread), n)
    if nparts > threads:  # a multiple of the threads: 3 equal parts on 2 threads ran 2 on one
        nparts = min(-(-nparts // threads) * threads, n)
    if nparts <= 1:
        return [0, n]
    goals = [-(-total * t // nparts) for t in range(1, nparts)]  # (before(r) is an int)
    if before is None or getattr(before, "rows", False):  # before(r) = r
        return [0, *sorted({g for g in goals if 0 < g < n}), n]
    starts = getattr(before, "starts", None)
    if starts is not None:  # (goals in its dtype: no conversion of the array)
        at = np.array(goals, np.int64) + before.base
        cuts = np.searchsorted(starts, at.astype(starts.dtype)).tolist()
        return [0, *sorted({c for c in cuts if 0 < c < n}), n]
    cuts = []
    for goal in goals:
        lo, hi = 0, n
        while lo < hi:
            mid = (lo + hi) // 2
            if before(mid) < goal:
                lo = mid + 1
            else:
                hi = mid
        cuts.append(lo)
    return [0, *sorted({c for c in cuts if 0 < c < n}), n]
