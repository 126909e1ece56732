"""Native row functions (`native_function`: compiled from IR text once per process, through
the disk cache; `PART_ROWS`: a part's rows of the thread pool's split) and the first of them:
whether offsets never decrease (`rises`).

Every evaluation checks the offsets of the var columns it reads before a kernel trusts
them (a column's memory may have changed since the array was made). NumPy's
`np.all(off[1:] >= off[:-1])` makes a temporary and reads the offsets twice (~0.7 ms for
1e6 rows, a tenth of a histogram of 4e6 jets); this reads them once, a vector at a time, on
every thread."""
from __future__ import annotations

import ctypes
from typing import Callable

import numpy as np

from lazyk.backend.cpu import JITModule
from lazyk.backend.threads import parallel_for, parts_for
from lazyk.lru import lock

# Rows lo..hi of part `%part` of `nparts` (words 0 and 1 of the argument record: rows, parts).
PART_ROWS = """  %nrows = load i64, ptr %a
  %w1 = getelementptr i64, ptr %a, i64 1
  %nparts = load i64, ptr %w1
  %lo0 = mul i64 %nrows, %part
  %lo = udiv i64 %lo0, %nparts
  %part1 = add i64 %part, 1
  %hi0 = mul i64 %nrows, %part1
  %hi = udiv i64 %hi0, %nparts"""



def row_kernel(text: str) -> str:
    """The IR text of a row kernel with its shorthands written out: `PART_ROWS`, a line
    `WORDS k name:type ...` (words k, k + 1, ... of the argument record `%a` loaded as
    `%name`, type ptr or i64) and a line `ROW off r start stop` (row `%r` of the int64
    offsets `%off`: `%start`, `%stop`)."""
    out = []
    for line in text.replace("PART_ROWS", PART_ROWS).split("\n"):
        parts = line.split()
        if parts[:1] == ["ROW"]:
            off, r, lo, hi = parts[1:]
            out += [f"  %{lo}.p = getelementptr i64, ptr %{off}, i64 %{r}",
                    f"  %{lo} = load i64, ptr %{lo}.p",
                    f"  %{hi}.p = getelementptr i64, ptr %{lo}.p, i64 1",
                    f"  %{hi} = load i64, ptr %{hi}.p"]
            continue
        if parts[:1] != ["WORDS"]:
            out.append(line)
            continue
        for k, word in enumerate(parts[2:], int(parts[1])):
            name, ty = word.split(":")
            out += [f"  %w{k} = getelementptr i64, ptr %a, i64 {k}",
                    f"  %{name} = load {ty}, ptr %w{k}"]
    return "\n".join(out)


_native: dict = {}  # function name -> (its module, its address)
_lock = lock()  # (fresh in a forked child)


def native_function(name: str, ir: Callable[[], str], names: tuple = ()) -> int:
    """The address of native function `name`, compiled from `ir()` at first use with the
    other functions `names` of its module; the module is kept for the life of the
    process."""
    with _lock:
        if name not in _native:
            names = tuple(dict.fromkeys((name, *names)))
            jit = JITModule(ir(), names)
            for n in names:
                _native[n] = (jit, jit.addresses[n])
        return _native[name][1]


# Offsets per part at least: below this a part is a few microseconds, less than the pool's.
MIN_OFFSETS = 1 << 16

# The argument record (int64 words): 0 pairs (offsets - 1: PART_ROWS's rows), 1 parts,
# 2 the offsets (item 0, contiguous), 3 one int64 per part: set where the part holds a
# decrease. No branch in the loop: an or over every pair (it vectorizes).
_IR = r"""
define void @lazyk_rises_BITS(ptr noalias %a, i64 %part) {
entry:
PART_ROWS
WORDS 2 off:ptr flags:ptr
  br label %loop
loop:
  %i = phi i64 [%lo, %entry], [%i1, %body]
  %bad = phi i64 [0, %entry], [%bad1, %body]
  %done = icmp uge i64 %i, %hi
  br i1 %done, label %exit, label %body
body:
  %p = getelementptr iBITS, ptr %off, i64 %i
  %x = load iBITS, ptr %p
  %i1 = add i64 %i, 1
  %q = getelementptr iBITS, ptr %off, i64 %i1
  %y = load iBITS, ptr %q
  %lt = icmp slt iBITS %y, %x
  %z = zext i1 %lt to i64
  %bad1 = or i64 %bad, %z
  br label %loop
exit:
  %fp = getelementptr i64, ptr %flags, i64 %part
  store i64 %bad, ptr %fp
  ret void
}
"""


def rises(offsets: np.ndarray) -> bool:
    """Whether 1-d integer `offsets` never decrease (native for contiguous int32 and int64
    offsets, NumPy otherwise)."""
    n = len(offsets) - 1
    bits = 8 * offsets.dtype.itemsize
    if n < 1 or offsets.dtype.kind != "i" or bits not in (32, 64) or \
            offsets.strides[0] != offsets.dtype.itemsize or n < MIN_OFFSETS:
        return n < 1 or bool(np.all(offsets[1:] >= offsets[:-1]))
    nparts = parts_for(n, MIN_OFFSETS)
    flags = np.zeros(nparts, np.int64)
    arg = (ctypes.c_int64 * 4)(n, nparts, offsets.ctypes.data, flags.ctypes.data)
    parallel_for(native_function(f"lazyk_rises_{bits}",
                                 lambda: row_kernel(_IR).replace("BITS", str(bits))),
                 ctypes.addressof(arg), nparts)
    return not flags.any()


# The argument record (int64 words): 0 positions, 1 the sources' rows (each offsets array's
# length - 1), 2 the positions (int64), 3 the output offsets (positions + 1 words), 4 set to
# 1 + the first position outside the rows (0: none), then per source its offsets (int64).
# One pass: NumPy's gathers and cumsum took ~8x as long (four temporaries per source).
_ROWS_AT_IR = r"""
define void @lazyk_rows_at_NSRC(ptr noalias %a, i64 %part) {
entry:
  %n = load i64, ptr %a
  %w1 = getelementptr i64, ptr %a, i64 1
  %limit = load i64, ptr %w1
  %w2 = getelementptr i64, ptr %a, i64 2
  %pos = load ptr, ptr %w2
  %w3 = getelementptr i64, ptr %a, i64 3
  %out = load ptr, ptr %w3
  %w4 = getelementptr i64, ptr %a, i64 4
SOURCES
  store i64 0, ptr %out
  br label %rows
rows:
  %r = phi i64 [0, %entry], [%r1, %row]
  %t = phi i64 [0, %entry], [%tN, %row]
  %done = icmp sge i64 %r, %n
  br i1 %done, label %exit, label %check
check:
  %pp = getelementptr i64, ptr %pos, i64 %r
  %p = load i64, ptr %pp
  %p1 = add i64 %p, 1
  %bad = icmp uge i64 %p, %limit
  br i1 %bad, label %fail, label %row
row:
LENGTHS
  %r1 = add i64 %r, 1
  %op = getelementptr i64, ptr %out, i64 %r1
  store i64 %tN, ptr %op
  br label %rows
fail:
  %rr = add i64 %r, 1
  store i64 %rr, ptr %w4
  ret void
exit:
  ret void
}
"""


def _rows_at_ir(nsrc: int) -> str:
    sources = "".join(f"  %s{j}p = getelementptr i64, ptr %a, i64 {5 + j}\n"
                      f"  %o{j} = load ptr, ptr %s{j}p\n" for j in range(nsrc))
    lengths = "".join(f"  %b{j}p = getelementptr i64, ptr %o{j}, i64 %p\n"
                      f"  %b{j} = load i64, ptr %b{j}p\n"
                      f"  %e{j}p = getelementptr i64, ptr %o{j}, i64 %p1\n"
                      f"  %e{j} = load i64, ptr %e{j}p\n"
                      f"  %l{j} = sub i64 %e{j}, %b{j}\n"
                      f"  %t{j + 1} = add i64 %{'t' if j == 0 else f't{j}'}, %l{j}\n"
                      for j in range(nsrc))
    return (_ROWS_AT_IR.replace("NSRC", str(nsrc)).replace("SOURCES\n", sources)
            .replace("LENGTHS\n", lengths).replace("%tN", f"%t{nsrc}"))


def rows_at(sources: list, positions: np.ndarray) -> np.ndarray:
    """Offsets (int64, from 0) of new rows: row r holds, source after source, the items of
    row `positions[r]` of each source's offsets (contiguous int64, as many rows each,
    checked to rise). IndexError for a position outside the rows."""
    nsrc, n = len(sources), len(positions)
    out = np.empty(n + 1, np.int64)
    arg = (ctypes.c_int64 * (5 + nsrc))(n, max(len(sources[0]) - 1, 0), positions.ctypes.data,
                                         out.ctypes.data, 0,
                                         *(off.ctypes.data for off in sources))
    parallel_for(native_function(f"lazyk_rows_at_{nsrc}", lambda: _rows_at_ir(nsrc)),
                 ctypes.addressof(arg), 1)
    if arg[4]:
        raise IndexError(f"RowCopy: position {positions[arg[4] - 1]} outside the "
                         f"{max(len(sources[0]) - 1, 0)} rows")
    return out
