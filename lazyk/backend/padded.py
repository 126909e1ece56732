"""Lists padded with missing items, or cut, to a target length (`lazyk.pad_none` at axis 1
and `lazyk.firsts`, the first item of each list, of lists of numbers), on the thread pool: one
pass over the rows' offsets that writes each item and its present flag into lazyk's `?T`
form. NumPy needed an index array, a take and a comparison (3-5x the time)."""
from __future__ import annotations

import ctypes

import numpy as np

from lazyk.backend.rowcheck import native_function, row_kernel
from lazyk.backend.rowcopy import MIN_ROWS
from lazyk.backend.threads import parallel_for, parts_for

# The argument record (int64 words): 0 rows, 1 parts, 2 the offsets (item 0, contiguous),
# 3 the values (item 0), 4 their stride in bytes, 5 their number (at least 1), 6 out values,
# 7 out present flags (one item each), 8 the target length, 9 the out rows' offsets, or 0:
# every out row has `target` items (cut). A read is clamped to the values, so no offsets make
# the kernel read outside them; a padded item is 0 and its flag 0.
_IR = r"""
define void @lazyk_padded_items_BITS(ptr noalias %a, i64 %part) {
entry:
PART_ROWS
WORDS 2 off:ptr base:ptr stride:i64 count:i64 out:ptr flags:ptr target:i64 noff:ptr
  %last = sub i64 %count, 1
  %cut = icmp eq ptr %noff, null
  br label %rows
rows:
  %r = phi i64 [%lo, %entry], [%r1, %row_end]
  %done = icmp uge i64 %r, %hi
  br i1 %done, label %exit, label %row
row:
ROW off r s e
  br i1 %cut, label %cut_row, label %grown_row
cut_row:
  %o1 = mul i64 %r, %target
  br label %items_start
grown_row:
  %np = getelementptr i64, ptr %noff, i64 %r
  %o2 = load i64, ptr %np
  %nep = getelementptr i64, ptr %np, i64 1
  %e2 = load i64, ptr %nep
  %m2 = sub i64 %e2, %o2
  br label %items_start
items_start:
  %o = phi i64 [%o1, %cut_row], [%o2, %grown_row]
  %m = phi i64 [%target, %cut_row], [%m2, %grown_row]
  br label %items
items:
  %j = phi i64 [0, %items_start], [%j1, %item]
  %fin = icmp sge i64 %j, %m
  br i1 %fin, label %row_end, label %item
item:
  %k = add i64 %s, %j
  %has = icmp slt i64 %k, %e
  %in = call i64 @llvm.umin.i64(i64 %k, i64 %last)
  %at = mul i64 %in, %stride
  %vp = getelementptr i8, ptr %base, i64 %at
  %v = load iBITS, ptr %vp, align 1
  %kept = select i1 %has, iBITS %v, iBITS 0
  %p = add i64 %o, %j
  %op = getelementptr iBITS, ptr %out, i64 %p
  store iBITS %kept, ptr %op, align 1
  %flag = zext i1 %has to iBITS
  %fp = getelementptr iBITS, ptr %flags, i64 %p
  store iBITS %flag, ptr %fp, align 1
  %j1 = add i64 %j, 1
  br label %items
row_end:
  %r1 = add i64 %r, 1
  br label %rows
exit:
  ret void
}
declare i64 @llvm.umin.i64(i64, i64)
"""
WIDTHS = (1, 2, 4, 8)


def padded_items(offsets: np.ndarray, values: np.ndarray, out: np.ndarray,
                 present: np.ndarray, target: int, new_offsets: np.ndarray | None = None) -> None:
    """Write row r's items of `values` (1-d numbers of 1, 2, 4 or 8 bytes, any stride) into
    `out` and whether each is there into `present` (the views of `masked_empty(...,
    filled=True)`), then missing items: `target` items per row (the rest cut), or with
    `new_offsets` row r's `new_offsets[r + 1] - new_offsets[r]` (at least its length) from
    `new_offsets[r]` on. Row r is items offsets[r]..offsets[r+1]."""
    offsets = np.ascontiguousarray(offsets, np.int64)
    nrows, width = len(offsets) - 1, values.dtype.itemsize
    size = nrows * target if new_offsets is None else int(new_offsets[-1])
    if values.ndim != 1 or width not in WIDTHS or nrows < 0 or target < 0 or \
            out.shape != (size,) or out.dtype.itemsize != width or \
            not out.flags.c_contiguous or present.strides != out.strides or \
            (new_offsets is not None and (new_offsets.dtype != np.int64 or
                                          new_offsets.shape != offsets.shape or
                                          not new_offsets.flags.c_contiguous)):
        raise ValueError("padded_items: arrays that do not match")
    if nrows == 0 or size == 0:
        return
    if not len(values):  # (every row empty: a read is clamped to an item that exists)
        values = np.zeros(1, values.dtype)
    nparts = parts_for(nrows, MIN_ROWS)
    words = [nrows, nparts, offsets.ctypes.data, values.ctypes.data, values.strides[0],
             len(values), out.ctypes.data, present.ctypes.data, target,
             0 if new_offsets is None else new_offsets.ctypes.data]
    arg = (ctypes.c_int64 * len(words))(*words)
    name = f"lazyk_padded_items_{8 * width}"
    fn = native_function(name, lambda: row_kernel(_IR).replace("BITS", str(8 * width)))
    parallel_for(fn, ctypes.addressof(arg), nparts)
