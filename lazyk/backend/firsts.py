"""Each list's first item (`lazyk.firsts` at axis 1 of lists of numbers), on the thread pool:
one pass over the rows' offsets that writes the item and its present flag into lazyk's `?T`
form. A NumPy take of the starts, a comparison of the offsets and a copy of the flags took
about twice the time on one core."""
from __future__ import annotations

import ctypes

import numpy as np

from lazyk.backend.rowcheck import PART_ROWS, native_function
from lazyk.backend.rowcopy import MIN_ROWS
from lazyk.backend.threads import parallel_for, parts_for

# The argument record (int64 words): 0 rows, 1 parts, 2 the offsets (item 0, contiguous),
# 3 the values (item 0), 4 their stride in bytes, 5 their number (at least 1), 6 out values,
# 7 out present flags (one item each). A start is clamped to the values, so no offsets make
# the kernel read outside them; an empty row's item is 0 and its flag 0.
_IR = r"""
define void @lazyk_first_items_BITS(ptr noalias %a, i64 %part) {
entry:
PART_ROWS
  %w2 = getelementptr i64, ptr %a, i64 2
  %off = load ptr, ptr %w2
  %w3 = getelementptr i64, ptr %a, i64 3
  %base = load ptr, ptr %w3
  %w4 = getelementptr i64, ptr %a, i64 4
  %stride = load i64, ptr %w4
  %w5 = getelementptr i64, ptr %a, i64 5
  %count = load i64, ptr %w5
  %last = sub i64 %count, 1
  %w6 = getelementptr i64, ptr %a, i64 6
  %out = load ptr, ptr %w6
  %w7 = getelementptr i64, ptr %a, i64 7
  %flags = load ptr, ptr %w7
  br label %loop
loop:
  %r = phi i64 [%lo, %entry], [%r1, %body]
  %done = icmp uge i64 %r, %hi
  br i1 %done, label %exit, label %body
body:
  %sp = getelementptr i64, ptr %off, i64 %r
  %s = load i64, ptr %sp
  %ep = getelementptr i64, ptr %sp, i64 1
  %e = load i64, ptr %ep
  %has = icmp sgt i64 %e, %s
  %in = call i64 @llvm.umin.i64(i64 %s, i64 %last)
  %at = mul i64 %in, %stride
  %vp = getelementptr i8, ptr %base, i64 %at
  %v = load iBITS, ptr %vp, align 1
  %kept = select i1 %has, iBITS %v, iBITS 0
  %op = getelementptr iBITS, ptr %out, i64 %r
  store iBITS %kept, ptr %op, align 1
  %flag = zext i1 %has to iBITS
  %fp = getelementptr iBITS, ptr %flags, i64 %r
  store iBITS %flag, ptr %fp, align 1
  %r1 = add i64 %r, 1
  br label %loop
exit:
  ret void
}
declare i64 @llvm.umin.i64(i64, i64)
"""
WIDTHS = (1, 2, 4, 8)


def first_items(offsets: np.ndarray, values: np.ndarray, out: np.ndarray,
                present: np.ndarray) -> None:
    """Write row r's first item of `values` (1-d numbers of 1, 2, 4 or 8 bytes, any
    stride, at least one) into `out[r]` and whether row r has one into `present[r]` (the
    views of `masked_empty(..., filled=True)`); row r is items offsets[r]..offsets[r+1]."""
    offsets = np.ascontiguousarray(offsets, np.int64)
    nrows, width = len(offsets) - 1, values.dtype.itemsize
    if values.ndim != 1 or not len(values) or width not in WIDTHS or nrows < 0 or \
            out.shape != (nrows,) or out.dtype.itemsize != width or \
            not out.flags.c_contiguous or present.strides != out.strides:
        raise ValueError("first_items: arrays that do not match")
    if nrows == 0:
        return
    nparts = parts_for(nrows, MIN_ROWS)
    words = [nrows, nparts, offsets.ctypes.data, values.ctypes.data, values.strides[0],
             len(values), out.ctypes.data, present.ctypes.data]
    arg = (ctypes.c_int64 * len(words))(*words)
    name = f"lazyk_first_items_{8 * width}"
    text = _IR.replace("PART_ROWS", PART_ROWS).replace("BITS", str(8 * width))
    parallel_for(native_function(name, lambda: text), ctypes.addressof(arg), nparts)
