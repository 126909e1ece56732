"""Native row work, split over the thread pool: the items of whole rows of list columns moved
into new rows, the items a mask keeps, and the slots of picked tuples. Selections of rows
(`events[mask]`), of items (`jets.pt[jets.pt > 30]`) and concatenations along an axis
(`lazyk.concatenate(..., axis=1)`) of columns of numbers build their results with it: a
NumPy version needs an item index per item (`np.repeat` over the row lengths), about 4x the
time of copying the rows, and a boolean take of items costs about 10x `KeptItems.fill`.

`RowCopy(offsets, positions).fill(values, dtype)`: output row r holds, one source after the
other, the items of row `positions[r]` (r itself without positions) of each source.
`KeptItems(offsets, keep).fill(values)`: each row's items where `keep` is true.
`tuple_slots`: tuple numbers within rows (an argmin over combinations) to the item
positions of each tuple slot. Compiled once per process from IR text (through the disk
cache)."""
from __future__ import annotations

import ctypes

import numpy as np

from lazyk.arrays.outputs import empty as fresh
from lazyk.arrays.trees import rising
from lazyk.backend.rowcheck import native_function, rises, row_kernel, rows_at
from lazyk.backend.threads import parallel_for, parts_for

_I64 = np.dtype(np.int64)

# Rows per part at least: a part is a few microseconds of copying before the pool pays.
MIN_ROWS = 1 << 14

# The argument record (int64 words): 0 rows, 1 parts, 2 out offsets, 3 positions (0: none),
# then per column c its output (4 + c), per source j its offsets (int64, absolute; 4 + C + j),
# and per source j and column c (4 + C + S + 3 (j C + c)) its values (item 0), their stride
# in bytes and their number. The sources and columns are compiled in (unrolled): each
# source's row is read once for every column (the fields of a collection), and the words
# load once per part, not once per row (a row of 0-5 items took twice the time).
#
# Items of 4 and 8 bytes in contiguous values move LANES at a time by whole-vector loads and
# stores: a row of up to LANES items takes no branch on its length, where an item loop
# mispredicted at nearly every row of 0-5 items (16 ns a row against 5). A store may run past
# its row's items: the rows after it in the part (written later, by this thread) cover those
# places, so a vector is stored only where it ends within the part's output (`%limit`) and
# loaded only where it ends within the source's values; other rows take the item loop.
# (AVX2 masked stores would need no such care, but cost ~10x a plain store on AMD's cores.)
_HEAD = r"""
define void @NAME(ptr noalias %a, i64 %part) {
entry:
PART_ROWS
WORDS 2 outoff:ptr pos:ptr
  %hasp = icmp ne ptr %pos, null
  %lp = getelementptr i64, ptr %outoff, i64 %hi
  %limit = load i64, ptr %lp
COLUMN_WORDS  br label %rows
rows:
  %r = phi i64 [%lo, %entry], [%r1, %nextrow]
  %rdone = icmp uge i64 %r, %hi
  br i1 %rdone, label %exit, label %row
row:
  br i1 %hasp, label %gather, label %same
gather:
  %pr = getelementptr i64, ptr %pos, i64 %r
  %pg = load i64, ptr %pr
  br label %start
same:
  br label %start
start:
  %p = phi i64 [%pg, %gather], [%r, %same]
  %p1 = add i64 %p, 1
  %dp = getelementptr i64, ptr %outoff, i64 %r
  %d0 = load i64, ptr %dp
"""
_TAIL = r"""  br label %nextrow
nextrow:
  %r1 = add i64 %r, 1
  br label %rows
exit:
  ret void
}
!90 = distinct !{!90, !91, !92}
!91 = !{!"llvm.loop.vectorize.enable", i1 false}
!92 = !{!"llvm.loop.unroll.disable"}
"""
# one source's row (its start, stop and length; the next source's first output place)
_SOURCE = r"""  %s_J = load i64, ptr %sb_J
  %sep_J = getelementptr i64, ptr %off_J, i64 %p1
  %e_J = load i64, ptr %sep_J
  %len_J = sub i64 %e_J, %s_J
  %d_NEXT = add i64 %d_J, %len_J
"""
# one column's items of that row (labels and values suffixed _J_C)
_ITEMS = r"""  br label %go_X
go_X:
CHUNKS
items_X:
  %i_X = phi i64 [%s_J, %go_X], FROM_VEC[%i1_X, %item_X]
  %dd_X = phi i64 [%d_J, %go_X], FROM_VEC_D[%dd1_X, %item_X]
  %idone_X = icmp sge i64 %i_X, %e_J
  br i1 %idone_X, label %done_X, label %item_X
item_X:
  %ib_X = mul i64 %i_X, %stride_X
  %vp_X = getelementptr i8, ptr %base_X, i64 %ib_X
  %v_X = load iBITS, ptr %vp_X, align 1
  %tp_X = getelementptr iBITS, ptr %out_C, i64 %dd_X
  store iBITS %v_X, ptr %tp_X, align 1
  %i1_X = add i64 %i_X, 1
  %dd1_X = add i64 %dd_X, 1
  br label %items_X, !llvm.loop !90
done_X:
"""
_CHUNKS = r"""  %dense_X = icmp eq i64 %stride_X, BYTES
  br i1 %dense_X, label %vec_X, label %items_X
vec_X:
  %c_X = phi i64 [0, %go_X], [%c1_X, %vbody_X]
  %si_X = add i64 %s_J, %c_X
  %di_X = add i64 %d_J, %c_X
  %se_X = add i64 %si_X, LANES
  %de_X = add i64 %di_X, LANES
  %insrc_X = icmp sle i64 %se_X, %count_X
  %inout_X = icmp sle i64 %de_X, %limit
  %fits_X = and i1 %insrc_X, %inout_X
  br i1 %fits_X, label %vbody_X, label %items_X
vbody_X:
  %spc_X = getelementptr iBITS, ptr %base_X, i64 %si_X
  %dpc_X = getelementptr iBITS, ptr %out_C, i64 %di_X
  %vc_X = load <LANES x iBITS>, ptr %spc_X, align 1
  store <LANES x iBITS> %vc_X, ptr %dpc_X, align 1
  %c1_X = add i64 %c_X, LANES
  %more_X = icmp slt i64 %c1_X, %len_J
  br i1 %more_X, label %vec_X, label %done_X"""
_LANES = {4: 8, 8: 4}  # (32 bytes: one AVX2 register)


def _word(name: str, at: int, ptr: bool = True) -> str:
    return f"WORDS {at} {name}:{'ptr' if ptr else 'i64'}\n"


def _ir(width: int, nsrc: int, ncol: int) -> str:
    """The copy function for `ncol` columns of items of `width` bytes from `nsrc` sources
    each (constants: its loops over them unroll)."""
    lanes = _LANES.get(width)
    words = "".join(_word(f"out_{c}", 4 + c) for c in range(ncol))
    words += "".join(_word(f"off_{j}", 4 + ncol + j) for j in range(nsrc))
    body = "  %d_0 = add i64 %d0, 0\n"
    for j in range(nsrc):
        body += f"  %sb_{j} = getelementptr i64, ptr %off_{j}, i64 %p\n"
        body += _SOURCE.replace("NEXT", str(j + 1)).replace("_J", f"_{j}")
        for c in range(ncol):
            x = f"{j}_{c}"
            at = 4 + ncol + nsrc + 3 * (j * ncol + c)
            words += (_word(f"base_{x}", at) + _word(f"stride_{x}", at + 1, False) +
                      _word(f"count_{x}", at + 2, False))
            part = _ITEMS.replace("CHUNKS", _CHUNKS if lanes else "  br label %items_X")
            part = part.replace("FROM_VEC_D", "[%di_X, %vec_X], " if lanes else "")
            part = part.replace("FROM_VEC", "[%si_X, %vec_X], " if lanes else "")
            body += part.replace("_X", f"_{x}").replace("_J", f"_{j}").replace("_C", f"_{c}")
    text = row_kernel(_HEAD.replace("COLUMN_WORDS", words) + body + _TAIL)
    text = text.replace("NAME", f"lazyk_copy_rows_{width}_{nsrc}_{ncol}")
    return (text.replace("LANES", str(lanes)).replace("BYTES", str(width))
            .replace("BITS", str(8 * width)))


_WIDTHS = (1, 2, 4, 8, 16)


def copies(dtype: np.dtype) -> bool:
    """Whether `RowCopy` copies items of `dtype` (1, 2, 4, 8 or 16 bytes, no objects)."""
    return dtype.itemsize in _WIDTHS and not dtype.hasobject


class RowCopy:
    """New rows made of whole rows of list columns: output row r holds, source after
    source, the items of row `positions[r]` (row r without positions) of each source's
    offsets. Built once for a set of offsets (the rows are checked here: lengths not
    negative, positions within the rows); `fill` then copies the items of columns over
    those offsets, on the thread pool.

    `offsets`: the output's offsets (int64, from 0)."""

    def __init__(self, offsets: list, positions: np.ndarray | None = None):
        self.sources = [np.ascontiguousarray(off, np.int64) for off in offsets]
        self.positions = None if positions is None else \
            np.ascontiguousarray(positions, np.int64)
        # (once per offsets in an evaluation: the fields of a collection share them)
        if not all(rising(off, int(off[-1]) if len(off) else 0) for off in self.sources):
            raise ValueError("RowCopy: offsets that decrease")
        if len({len(off) for off in self.sources}) > 1:
            raise ValueError("RowCopy: sources with different numbers of rows")
        if self.positions is None:  # (rows one after the other: the sources' offsets added)
            if not len(self.sources[0]):
                self.offsets = np.zeros(1, np.int64)
                return
            base = sum(int(off[0]) for off in self.sources)
            self.offsets = fresh(len(self.sources[0]), _I64)
            np.subtract(self.sources[0], base, out=self.offsets)
            for off in self.sources[1:]:
                self.offsets += off
            return
        self.offsets = rows_at(self.sources, self.positions)

    def fill(self, values: list, dtype: np.dtype, out: np.ndarray | None = None) -> np.ndarray:
        """A new `dtype` array of the rows' items (or `out`, contiguous, of their number),
        one values array (1-d, `dtype`'s size, any stride, 0 too) per source; each source's
        offsets must lie within its values."""
        return self.fill_many([values], dtype, None if out is None else [out])[0]

    def fill_many(self, columns: list, dtype: np.dtype, outs: list | None = None) -> list:
        """`fill` of several columns over these rows (each a values array per source) in
        one pass: each row of each source is read once for all of them."""
        dtype, total = np.dtype(dtype), int(self.offsets[-1])
        if outs is None:
            outs = [fresh(total, dtype) for _ in columns]
        for out in outs:
            if out.shape != (total,) or out.dtype.itemsize != dtype.itemsize \
                    or not out.flags.c_contiguous or not out.flags.writeable:
                raise ValueError(f"RowCopy: out {out.dtype} {out.shape} for {total} items "
                                 f"of {dtype}")
        nrows, nsrc, ncol = len(self.offsets) - 1, len(self.sources), len(columns)
        words = [nrows, 0, self.offsets.ctypes.data,
                 0 if self.positions is None else self.positions.ctypes.data]
        words += [out.ctypes.data for out in outs] + [off.ctypes.data for off in self.sources]
        for j, off in enumerate(self.sources):
            for values in columns:
                if len(values) != nsrc:
                    raise ValueError(f"RowCopy: {len(values)} values arrays for {nsrc} "
                                     "sources")
                v = values[j]
                if v.ndim != 1 or v.dtype.itemsize != dtype.itemsize or \
                        (len(off) and (off[0] < 0 or off[-1] > len(v))):
                    raise ValueError(f"RowCopy: values {v.dtype} {v.shape} for rows up to "
                                     f"{off[-1] if len(off) else 0} of {dtype}")
                words += [v.ctypes.data, v.strides[0], len(v)]
        if nrows and total and ncol:
            nparts = parts_for(nrows, MIN_ROWS)
            words[1] = nparts
            arg = (ctypes.c_int64 * len(words))(*words)
            name = f"lazyk_copy_rows_{dtype.itemsize}_{nsrc}_{ncol}"
            parallel_for(native_function(name, lambda: _ir(dtype.itemsize, nsrc, ncol)),
                         ctypes.addressof(arg), nparts)
        return outs


# Items kept by a mask of the same rows, in three passes over parts of rows (words: 0 rows,
# 1 parts, 2 row offsets (int64), 3 keep bytes (0 or 1), 4 kept offsets, 5 per part its kept
# items, then its first output item, 6 the end of the keep bytes; 7 out, 8 values, 9 their
# stride in bytes; 3 and 8 point at item 0 of the offsets): the kept items of each part,
# their rows' offsets (a row of up to 8 items counted as one word's set bytes, no branch on
# its length), then per column the kept items themselves (each stored, the output position
# advanced past kept ones only: no branch on the mask).
_KEEP_ROWS_IR = r"""
define void @lazyk_keep_count(ptr noalias %a, i64 %part) {
entry:
PART_ROWS
KEEP_WORDS
  br label %items
items:
  %i = phi i64 [%s, %entry], [%i1, %item]
  %n = phi i64 [0, %entry], [%n1, %item]
  %idone = icmp sge i64 %i, %e
  br i1 %idone, label %exit, label %item
item:
  %kp = getelementptr i8, ptr %keep, i64 %i
  %k = load i8, ptr %kp
  %kb = icmp ne i8 %k, 0
  %kz = zext i1 %kb to i64
  %n1 = add i64 %n, %kz
  %i1 = add i64 %i, 1
  br label %items
exit:
  store i64 %n, ptr %bp
  ret void
}

define void @lazyk_keep_rows(ptr noalias %a, i64 %part) {
entry:
PART_ROWS
KEEP_WORDS
WORDS 6 kend:i64
  br label %rows
rows:
  %r = phi i64 [%lo, %entry], [%r1, %row_done]
  %d = phi i64 [%base, %entry], [%d2, %row_done]
  %rdone = icmp uge i64 %r, %hi
  br i1 %rdone, label %exit, label %row
row:
  %kr = getelementptr i64, ptr %kept, i64 %r
  store i64 %d, ptr %kr
ROW off r rs re
  %len = sub i64 %re, %rs
  %short = icmp ule i64 %len, 8
  %rs8 = add i64 %rs, 8
  %room = icmp sle i64 %rs8, %kend
  %fast = and i1 %short, %room
  br i1 %fast, label %word, label %items
word:
  %wp = getelementptr i8, ptr %keep, i64 %rs
  %wv = load i64, ptr %wp, align 1
  %sh = shl i64 %len, 3
  %sh7 = and i64 %sh, 63
  %m0 = shl i64 1, %sh7
  %m1 = sub i64 %m0, 1
  %whole = icmp eq i64 %len, 8
  %m = select i1 %whole, i64 -1, i64 %m1
  %ones = and i64 %wv, 72340172838076673
  %mine = and i64 %ones, %m
  %c = call i64 @llvm.ctpop.i64(i64 %mine)
  %dw = add i64 %d, %c
  br label %row_done
items:
  %i = phi i64 [%rs, %row], [%i1, %item]
  %d1 = phi i64 [%d, %row], [%dn, %item]
  %idone = icmp sge i64 %i, %re
  br i1 %idone, label %row_done, label %item
item:
  %kp = getelementptr i8, ptr %keep, i64 %i
  %k = load i8, ptr %kp
  %kb = icmp ne i8 %k, 0
  %kz = zext i1 %kb to i64
  %dn = add i64 %d1, %kz
  %i1 = add i64 %i, 1
  br label %items, !llvm.loop !0
row_done:
  %d2 = phi i64 [%d1, %items], [%dw, %word]
  %r1 = add i64 %r, 1
  br label %rows
exit:
  ret void
}
declare i64 @llvm.ctpop.i64(i64)
NO_VECTOR"""
_KEEP_ITEMS_IR = r"""
define void @lazyk_keep_items_W(ptr noalias %a, i64 %part) {
entry:
  %spare = alloca iBITS
PART_ROWS
KEEP_WORDS
  %lp = getelementptr i64, ptr %kept, i64 %hi
  %limit = load i64, ptr %lp
WORDS 7 out:ptr vals:ptr stride:i64
  br label %items
items:
  %i = phi i64 [%s, %entry], [%i1, %item]
  %d = phi i64 [%base, %entry], [%dn, %item]
  %idone = icmp sge i64 %i, %e
  br i1 %idone, label %exit, label %item
item:
  %ib = mul i64 %i, %stride
  %vp = getelementptr i8, ptr %vals, i64 %ib
  %v = load iBITS, ptr %vp, align 1
  %inside = icmp slt i64 %d, %limit
  %tp = getelementptr iBITS, ptr %out, i64 %d
  %to = select i1 %inside, ptr %tp, ptr %spare
  store iBITS %v, ptr %to, align 1
  %kp = getelementptr i8, ptr %keep, i64 %i
  %k = load i8, ptr %kp
  %kb = icmp ne i8 %k, 0
  %kz = zext i1 %kb to i64
  %dn = add i64 %d, %kz
  %i1 = add i64 %i, 1
  br label %items, !llvm.loop !0
exit:
  ret void
}
NO_VECTOR"""
_NO_VECTOR = """!0 = distinct !{!0, !1}
!1 = !{!"llvm.loop.vectorize.enable", i1 false}
"""
# (each part's item range and its kept-items word; `%base`: the part's first output item,
# once the count pass's words are turned into starts)
_KEEP_WORDS = """WORDS 2 off:ptr keep:ptr kept:ptr parts:ptr
  %bp = getelementptr i64, ptr %parts, i64 %part
  %base = load i64, ptr %bp
  %sp = getelementptr i64, ptr %off, i64 %lo
  %s = load i64, ptr %sp
  %ep = getelementptr i64, ptr %off, i64 %hi
  %e = load i64, ptr %ep"""


def _keep_function(name: str, width: int = 0) -> int:
    """`lazyk_keep_count` and `lazyk_keep_rows` (one module), or `lazyk_keep_items_{width}`
    (a module per item width)."""
    def text():  # (written out at the first call only: a call is a look-up after)
        ir = _KEEP_ITEMS_IR.replace("_W(", f"_{width}(").replace("BITS", str(8 * width)) \
            if width else _KEEP_ROWS_IR
        return row_kernel(ir.replace("KEEP_WORDS", _KEEP_WORDS)).replace("NO_VECTOR",
                                                                        _NO_VECTOR)
    names = (f"lazyk_keep_items_{width}",) if width else \
        ("lazyk_keep_count", "lazyk_keep_rows")
    return native_function(name, text, names)


class KeptItems:
    """The items of list rows that a mask of the same rows keeps (`x[mask]`), on the thread
    pool: `offsets` (int64, from 0) are the kept rows' offsets, `fill(values)` a column's
    kept items. `offsets_in`: the rows' offsets, their first item that of keep[0] (a bool
    per item) and of every column filled; checked here (not decreasing, within `keep`)."""

    def __init__(self, offsets_in: np.ndarray, keep: np.ndarray):
        # a copy: every pass reads the offsets it checked (the caller's may change meanwhile)
        off = np.array(offsets_in, np.int64)
        self.keep = np.ascontiguousarray(keep if keep.dtype == bool else keep != 0)
        nrows = len(off) - 1
        if nrows < 0 or (nrows and (off[0] < 0 or off[-1] - off[0] > len(self.keep) or
                                    not rises(off))):
            raise ValueError("KeptItems: row offsets that decrease or pass the mask's items")
        self.first, self.rows = int(off[0]), off
        self.nparts = parts_for(nrows, MIN_ROWS)
        self.starts = np.zeros(self.nparts + 1, np.int64)
        self.offsets = fresh(nrows + 1, _I64)
        self.words = [nrows, self.nparts, off.ctypes.data,
                      self.keep.ctypes.data - self.first, self.offsets.ctypes.data,
                      self.starts.ctypes.data, self.first + len(self.keep)]
        if nrows:
            arg = (ctypes.c_int64 * 7)(*self.words)
            parallel_for(_keep_function("lazyk_keep_count"), ctypes.addressof(arg), self.nparts)
            np.cumsum(self.starts[:-1], out=self.starts[1:])
            self.starts[0] = 0
            parallel_for(_keep_function("lazyk_keep_rows"), ctypes.addressof(arg), self.nparts)
        self.offsets[-1] = self.starts[-1]

    def fill(self, values: np.ndarray) -> np.ndarray:
        """The kept items of `values` (1-d, any stride, values[k] beside keep[k]; items of
        1, 2, 4, 8 or 16 bytes), in a new array of its dtype."""
        width = values.dtype.itemsize
        if values.ndim != 1 or width not in _WIDTHS or values.dtype.hasobject or \
                len(values) < self.rows[-1] - self.first:
            raise ValueError(f"KeptItems: values {values.dtype} {values.shape} for "
                             f"{self.rows[-1] - self.first} items")
        out = fresh(int(self.offsets[-1]), values.dtype)
        if len(out):
            step = values.strides[0]
            words = self.words + [out.ctypes.data, values.ctypes.data - self.first * step,
                                  step]  # (as `keep`: item off[0] at values[0])
            arg = (ctypes.c_int64 * len(words))(*words)
            parallel_for(_keep_function(f"lazyk_keep_items_{width}", width),
                         ctypes.addressof(arg), self.nparts)
        return out


# Tuple numbers to their slots' item positions: row r's tuple p[r] (of a row of l items:
# tuple first[l] + p[r] of the listed tuples of every length up to nmax) gives
# into[r, s] = listed[first[l] + p[r], s] and the present byte of (r, s). Words: 0 rows,
# 1 parts, 2 offsets, 3 p, 4 valid bytes (0: all present), 5 first, 6 listed (at least one
# tuple), 7 slots, 8 into, 9 present bytes (every 8th byte), 10 nmax, 11 + part: how many
# present positions of the part lay outside their rows' tuples (their slots are 0).
_SLOTS_IR = r"""
define void @lazyk_tuple_slots(ptr noalias %a, i64 %part) {
entry:
PART_ROWS
WORDS 2 off:ptr pos:ptr valid:ptr first:ptr listed:ptr slots:i64 into:ptr present:ptr nmax:i64
  %hasv = icmp ne ptr %valid, null
  br label %rows
rows:
  %r = phi i64 [%lo, %entry], [%r1, %next]
  %bad = phi i64 [0, %entry], [%bad1, %next]
  %rdone = icmp uge i64 %r, %hi
  br i1 %rdone, label %exit, label %row
row:
ROW off r o0 o1
  %l = sub i64 %o1, %o0
  %lok = icmp ule i64 %l, %nmax
  %lc = select i1 %lok, i64 %l, i64 0
  %fp0 = getelementptr i64, ptr %first, i64 %lc
  %f0 = load i64, ptr %fp0
  %fp1 = getelementptr i64, ptr %fp0, i64 1
  %f1 = load i64, ptr %fp1
  %c = sub i64 %f1, %f0
  %vp = getelementptr i8, ptr %valid, i64 %r
  %vsafe = select i1 %hasv, ptr %vp, ptr %w1
  %vb = load i8, ptr %vsafe
  %vb1 = icmp ne i8 %vb, 0
  %v = select i1 %hasv, i1 %vb1, i1 true
  %pp = getelementptr i64, ptr %pos, i64 %r
  %q0 = load i64, ptr %pp
  %neg = icmp slt i64 %q0, 0
  %qn = add i64 %q0, %c
  %q = select i1 %neg, i64 %qn, i64 %q0
  %qlo = icmp sge i64 %q, 0
  %qhi = icmp slt i64 %q, %c
  %qin = and i1 %qlo, %qhi
  %inr = and i1 %qin, %lok
  %use = and i1 %v, %inr
  %notin = xor i1 %inr, true
  %isbad = and i1 %v, %notin
  %badn = zext i1 %isbad to i64
  %bad1 = add i64 %bad, %badn
  %at0 = add i64 %f0, %q
  %at = select i1 %use, i64 %at0, i64 0
  %atS = mul i64 %at, %slots
  %rS = mul i64 %r, %slots
  %pbyte = zext i1 %v to i8
  br label %slot
slot:
  %s = phi i64 [0, %row], [%s1, %slot]
  %li = add i64 %atS, %s
  %lp = getelementptr i64, ptr %listed, i64 %li
  %val = load i64, ptr %lp
  %out = select i1 %use, i64 %val, i64 0
  %idx = add i64 %rS, %s
  %ip = getelementptr i64, ptr %into, i64 %idx
  store i64 %out, ptr %ip
  %pi = mul i64 %idx, 8
  %ppb = getelementptr i8, ptr %present, i64 %pi
  store i8 %pbyte, ptr %ppb
  %s1 = add i64 %s, 1
  %sdone = icmp eq i64 %s1, %slots
  br i1 %sdone, label %next, label %slot
next:
  %r1 = add i64 %r, 1
  br label %rows
exit:
  %bi = add i64 %part, 11
  %bp = getelementptr i64, ptr %a, i64 %bi
  store i64 %bad, ptr %bp
  ret void
}
"""


def tuple_slots(off: np.ndarray, positions: np.ndarray, valid: np.ndarray | None,
                first: np.ndarray, listed: np.ndarray, into: np.ndarray,
                present: np.ndarray) -> bool:
    """Write the slots' item positions of the tuples `positions` names into `into` (`N *
    slots` int64, contiguous) and their present bytes into `present` (its `masked_empty`
    view): row r's tuple positions[r] (negative: from the end) of its row of `off`, tuple
    `first[l] + positions[r]` of `listed` (every tuple of rows of up to nmax items, one per
    row of `listed`, `first`: nmax + 2 starts) for a row of l items. Missing where `valid`
    is false. False (nothing else meant) where a present position lies outside its row's
    tuples."""
    off = np.ascontiguousarray(off, np.int64)
    positions = np.ascontiguousarray(positions, np.int64)
    nrows, slots = into.shape
    nmax = len(first) - 2
    if len(off) != nrows + 1 or len(positions) != nrows or not into.flags.c_contiguous or \
            into.dtype != np.int64 or listed.shape[1:] != (slots,) or \
            present.shape != into.shape or present.strides != into.strides or \
            (valid is not None and len(valid) != nrows) or nmax < 0 or slots < 1 or \
            first[0] != 0 or first[-1] != len(listed):
        raise ValueError("tuple_slots: arrays that do not match")
    if not len(listed):  # (rows of fewer items than slots: no tuple; one row to read)
        listed = np.zeros((1, slots), np.int64)
    listed = np.ascontiguousarray(listed, np.int64)
    first = np.ascontiguousarray(first, np.int64)
    if valid is not None:
        valid = np.ascontiguousarray(valid, bool)
    if nrows == 0:
        return True
    nparts = parts_for(nrows, MIN_ROWS)
    words = [nrows, nparts, off.ctypes.data, positions.ctypes.data,
             0 if valid is None else valid.ctypes.data, first.ctypes.data,
             listed.ctypes.data, slots, into.ctypes.data, present.ctypes.data,
             nmax] + [0] * nparts
    arg = (ctypes.c_int64 * len(words))(*words)
    fn = native_function("lazyk_tuple_slots", lambda: row_kernel(_SLOTS_IR))
    parallel_for(fn, ctypes.addressof(arg), nparts)
    return not any(arg[11:11 + nparts])
