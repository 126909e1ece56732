"""Each short list of int64 sort keys sorted in place with the positions the keys came from
(`sort_rows`, an argsort), on the thread pool: a stable insertion sort per list. The lists of
collision events hold a few items each; NumPy's stable argsort of a padded matrix of them
paid for the padding and a call per row (`lazyk.arrays.sorting` sorts longer lists so)."""
from __future__ import annotations

import ctypes

import numpy as np

from lazyk.backend.rowcheck import native_function, row_kernel
from lazyk.backend.rowcopy import MIN_ROWS
from lazyk.backend.threads import parallel_for, parts_for

# The argument record (int64 words): 0 lists, 1 parts, 2 the offsets (n + 1, contiguous,
# rising, inside the keys: the caller's own), 3 the keys, 4 the positions.
_IR = r"""
define void @lazyk_sort_rows(ptr noalias %a, i64 %part) {
entry:
PART_ROWS
WORDS 2 off:ptr keys:ptr pos:ptr
  br label %row
row:
  %r = phi i64 [%lo, %entry], [%r1, %next]
  %more = icmp ult i64 %r, %hi
  br i1 %more, label %body, label %exit
body:
ROW off r s e
  %n = sub i64 %e, %s
  %kb = getelementptr i64, ptr %keys, i64 %s
  %pb = getelementptr i64, ptr %pos, i64 %s
  br label %fill
fill:
  %f = phi i64 [0, %body], [%f1, %fillbody]
  %fmore = icmp slt i64 %f, %n
  br i1 %fmore, label %fillbody, label %outer
fillbody:
  %fp = getelementptr i64, ptr %pb, i64 %f
  store i64 %f, ptr %fp
  %f1 = add i64 %f, 1
  br label %fill
outer:
  %i = phi i64 [1, %fill], [%i1, %place]
  %omore = icmp slt i64 %i, %n
  br i1 %omore, label %obody, label %next
obody:
  %kp = getelementptr i64, ptr %kb, i64 %i
  %k = load i64, ptr %kp
  %pp = getelementptr i64, ptr %pb, i64 %i
  %p = load i64, ptr %pp
  br label %inner
inner:
  %j = phi i64 [%i, %obody], [%jm, %shift]
  %jpos = icmp sgt i64 %j, 0
  br i1 %jpos, label %cmp, label %place
cmp:
  %jm = sub i64 %j, 1
  %qp = getelementptr i64, ptr %kb, i64 %jm
  %q = load i64, ptr %qp
  %gt = icmp sgt i64 %q, %k
  br i1 %gt, label %shift, label %place
shift:
  %dp = getelementptr i64, ptr %kb, i64 %j
  store i64 %q, ptr %dp
  %qpp = getelementptr i64, ptr %pb, i64 %jm
  %qv = load i64, ptr %qpp
  %dpp = getelementptr i64, ptr %pb, i64 %j
  store i64 %qv, ptr %dpp
  br label %inner
place:
  %ap = getelementptr i64, ptr %kb, i64 %j
  store i64 %k, ptr %ap
  %app = getelementptr i64, ptr %pb, i64 %j
  store i64 %p, ptr %app
  %i1 = add i64 %i, 1
  br label %outer
next:
  %r1 = add i64 %r, 1
  br label %row
exit:
  ret void
}
"""


def sort_rows(offsets: np.ndarray, keys: np.ndarray, positions: np.ndarray) -> None:
    """Sort each list `keys[offsets[r]:offsets[r + 1]]` (int64, contiguous) in place,
    stably, and write into `positions` (int64, like `keys`) each item's position in its
    list before the sort. The offsets are the caller's own (rising, inside the keys); the
    lists short (an insertion sort's moves grow as the square of a list's length)."""
    offsets = np.ascontiguousarray(offsets, np.int64)
    nrows = len(offsets) - 1
    if nrows <= 0:
        return
    if keys.dtype != np.int64 or not keys.flags.c_contiguous or int(offsets[-1]) > len(keys) \
            or positions.shape != keys.shape or positions.dtype != np.int64 or \
            not positions.flags.c_contiguous:
        raise ValueError("sort_rows: arrays that do not match")
    nparts = parts_for(nrows, MIN_ROWS)
    words = [nrows, nparts, offsets.ctypes.data, keys.ctypes.data, positions.ctypes.data]
    arg = (ctypes.c_int64 * len(words))(*words)
    text = row_kernel(_IR)
    parallel_for(native_function("lazyk_sort_rows", lambda: text), ctypes.addressof(arg),
                 nparts)
