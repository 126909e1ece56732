"""Short lists sorted natively, on the thread pool: each list of int64 sort keys in place with
the positions the keys came from (`sort_rows`, an argsort), and each list of numbers as they
are (`sort_values`). The lists of collision events hold a few items each; NumPy's stable
argsort of a padded matrix of them paid for the padding and a call per row
(`lazyk.arrays.sorting` sorts longer lists so). A short list goes through a sorting network
(Batcher's: `batcher`; values up to 16, keys with positions up to 8) with no branch on its
values (a branch per comparison mispredicts half the time on random values); longer lists
take a stable insertion sort.
"""
from __future__ import annotations

import ctypes

import numpy as np

from lazyk.backend.rowcheck import native_function, row_kernel
from lazyk.backend.rowcopy import MIN_ROWS
from lazyk.backend.threads import parallel_for, parts_for


# The argument record (int64 words): 0 lists, 1 parts, 2 the offsets (n + 1, contiguous,
# rising, inside the keys: the caller's own), 3 the keys, 4 the positions, 5 the keys' count,
# 6 the address of a flag word set where a list lies outside them (`_run`).
def _head(name: str, vt: str, pad: str, first: str, one: str) -> str:
    """The IR every row sort opens with: function `name` over the part's rows, a list's two
    arrays (words 3 and 4, of `vt` items from its start: `%kb`, `%pb`), a padding slot
    holding `pad` and a slot to write padding into (`%sink`); a list of one item goes to
    block `one`, an empty one to the next row, the others to `first`."""
    # (a row's indices are checked again here: another thread may have written the offsets
    # since the caller checked them; a bad row sets the flag word and is left as it is)
    return f"""
define void @{name}(ptr noalias %a, i64 %part) {{
entry:
PART_ROWS
WORDS 2 off:ptr keys:ptr pos:ptr total:i64 flag:ptr
  %pad = alloca {vt}
  store {vt} {pad}, ptr %pad
  %sink = alloca {vt}
  br label %row
row:
  %r = phi i64 [%lo, %entry], [%r1, %next]
  %more = icmp ult i64 %r, %hi
  br i1 %more, label %body, label %exit
body:
ROW off r s e
  %neg = icmp slt i64 %s, 0
  %back = icmp sgt i64 %s, %e
  %past = icmp sgt i64 %e, %total
  %b1 = or i1 %neg, %back
  %bad = or i1 %b1, %past
  br i1 %bad, label %badrow, label %fine
badrow:
  store i64 1, ptr %flag
  br label %next
fine:
  %n = sub i64 %e, %s
  %kb = getelementptr {vt}, ptr %keys, i64 %s
  %pb = getelementptr {vt}, ptr %pos, i64 %s
  %one = icmp sle i64 %n, 1
  br i1 %one, label %single, label %{first}
single:
  %has = icmp eq i64 %n, 1
  br i1 %has, label %{one}, label %next"""


_IR = _head("lazyk_sort_rows", "i64", str((1 << 63) - 1), "several", "fill") + r"""
several:
  %few = icmp sle i64 %n, WIDTH
  br i1 %few, label %network, label %fill
network:
NETWORK
  br label %next
fill:
  %f = phi i64 [0, %single], [0, %several], [%f1, %fillbody]
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


def batcher(n: int) -> tuple:
    """The compare-exchanges (i, j), i < j, of Batcher's odd-even merge sort of n items (n a
    power of two): 5 for 4 items, 19 for 8 (the fewest for 8), 63 for 16."""
    pairs, p = [], 1
    while p < n:
        k = p
        while k >= 1:
            for j in range(k % p, n - k, 2 * k):
                pairs += [(i + j, i + j + k) for i in range(min(k, n - j - k))
                          if (i + j) // (2 * p) == (i + j + k) // (2 * p)]
            k //= 2
        p *= 2
    return tuple(pairs)


PAIRS = batcher(8)  # the argsort's network
WIDTH = 8


def network() -> str:
    """The IR of one list of `%n` <= WIDTH items sorted by `PAIRS`: item i (key, position
    i) is loaded where i < n, else a padding key that sorts last (int64 max, a position past
    every item's); pairs compare as (key, position), so equal keys keep their order (the
    network itself is not stable) and padding stays behind the items; the first n written
    back, the others into a slot on the stack: no branch on n or on a key."""
    lines = []
    k, q = {}, {}
    for i in range(WIDTH):
        lines += [f"  %in{i} = icmp slt i64 {i}, %n",
                  f"  %ka{i} = getelementptr i64, ptr %kb, i64 {i}",
                  f"  %kr{i} = select i1 %in{i}, ptr %ka{i}, ptr %pad",
                  f"  %k{i}.0 = load i64, ptr %kr{i}"]
        k[i], q[i] = f"%k{i}.0", str(i)
    for c, (i, j) in enumerate(PAIRS):
        lines += [f"  %gt{c} = icmp sgt i64 {k[i]}, {k[j]}",
                  f"  %eq{c} = icmp eq i64 {k[i]}, {k[j]}",
                  f"  %pg{c} = icmp sgt i64 {q[i]}, {q[j]}",
                  f"  %te{c} = and i1 %eq{c}, %pg{c}",
                  f"  %sw{c} = or i1 %gt{c}, %te{c}",
                  f"  %kl{c} = select i1 %sw{c}, i64 {k[j]}, i64 {k[i]}",
                  f"  %kh{c} = select i1 %sw{c}, i64 {k[i]}, i64 {k[j]}",
                  f"  %ql{c} = select i1 %sw{c}, i64 {q[j]}, i64 {q[i]}",
                  f"  %qh{c} = select i1 %sw{c}, i64 {q[i]}, i64 {q[j]}"]
        k[i], k[j], q[i], q[j] = f"%kl{c}", f"%kh{c}", f"%ql{c}", f"%qh{c}"
    for i in range(WIDTH):
        lines += [f"  %pa{i} = getelementptr i64, ptr %pb, i64 {i}",
                  f"  %kw{i} = select i1 %in{i}, ptr %ka{i}, ptr %sink",
                  f"  %pw{i} = select i1 %in{i}, ptr %pa{i}, ptr %sink",
                  f"  store i64 {k[i]}, ptr %kw{i}",
                  f"  store i64 {q[i]}, ptr %pw{i}"]
    return "\n".join(lines)


def _text() -> str:
    return row_kernel(_IR.replace("NETWORK", network()).replace("WIDTH", str(WIDTH)))


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
    _run(native_function("lazyk_sort_rows", _text), offsets, keys, positions)


def _run(fn: int, offsets: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """Row sort `fn` over each list of `offsets` (into `a`, `b`), on the thread pool;
    ValueError where a list's indices no longer lie inside `a` (written since checked)."""
    nrows = len(offsets) - 1
    nparts = parts_for(nrows, MIN_ROWS)
    flag = np.zeros(1, np.int64)
    words = [nrows, nparts, offsets.ctypes.data, a.ctypes.data, b.ctypes.data, len(a),
             flag.ctypes.data]
    arg = (ctypes.c_int64 * len(words))(*words)
    parallel_for(fn, ctypes.addressof(arg), nparts)
    if flag[0]:
        raise ValueError("the lists' offsets changed while they were sorted (another thread "
                         "wrote them): a list's items no longer lie inside the values")


# The argument record of a value sort (int64 words): 0 lists, 1 parts, 2 the offsets (as
# for keys), 3 the values (`%kb` a list's), 4 the sorted values (the same dtype, contiguous,
# as many: `%pb`).
# A list of 2 to 16 values goes through the smallest network of `NETWORKS` it fits
# (`CLASSES`), comparing the values themselves; a list holding NaN or a zero, or longer,
# takes the insertion sort by keys.
_VALUES_IR = r"""
CLASSES
copy:
  %c = phi i64 [0, %single], [0, %LAST], NANS[%c1, %copied]
  %cmore = icmp slt i64 %c, %n
  br i1 %cmore, label %copied, label %outer
copied:
  %cp = getelementptr VT, ptr %kb, i64 %c
  %cv = load VT, ptr %cp
  %cq = getelementptr VT, ptr %pb, i64 %c
  store VT %cv, ptr %cq
  %c1 = add i64 %c, 1
  br label %copy
outer:
  %i = phi i64 [1, %copy], [%i1, %place]
  %omore = icmp slt i64 %i, %n
  br i1 %omore, label %obody, label %next
obody:
  %vp = getelementptr VT, ptr %pb, i64 %i
  %v = load VT, ptr %vp
KEY v k
  br label %inner
inner:
  %j = phi i64 [%i, %obody], [%jm, %shift]
  %jpos = icmp sgt i64 %j, 0
  br i1 %jpos, label %cmp, label %place
cmp:
  %jm = sub i64 %j, 1
  %qp = getelementptr VT, ptr %pb, i64 %jm
  %q = load VT, ptr %qp
KEY q qk
  %gt = icmp sgt i64 %qk, %k
  br i1 %gt, label %shift, label %place
shift:
  %dp = getelementptr VT, ptr %pb, i64 %j
  store VT %q, ptr %dp
  br label %inner
place:
  %ap = getelementptr VT, ptr %pb, i64 %j
  store VT %v, ptr %ap
  %i1 = add i64 %i, 1
  br label %outer
next:
  %r1 = add i64 %r, 1
  br label %row
exit:
  ret void
}
"""

_TOP = (1 << 63) - 1
_NAN_KEY = _TOP - 2  # every NaN's key: above every number (`lazyk.arrays.sorting.sort_keys`)
# dtype -> LLVM type of its values
VALUE_TYPES = {"float64": "double", "float32": "float", "int64": "i64", "int32": "i32",
               "int16": "i16", "int8": "i8", "uint64": "i64", "uint32": "i32", "uint16": "i16",
               "uint8": "i8", "bool": "i8"}
# The values' networks by list length (`batcher`): a list of 2-4 values takes 4's, ...
NETWORKS = (4, 8, 16)


def _key(dtype: np.dtype, ascending: bool, v: str, k: str) -> list:
    """IR lines: `%k`, the int64 sort key of value `%v` (the keys of `sort_keys`: IEEE order
    as signed integers, -0.0 and 0.0 one key, every NaN one key above the numbers;
    descending: reversed)."""
    t = VALUE_TYPES[dtype.name]
    if dtype.kind == "f":
        d = f"%{k}.d" if t == "float" else f"%{v}"
        lines = [f"  %{k}.d = fpext float %{v} to double"] if t == "float" else []
        lines += [f"  %{k}.b = bitcast double {d} to i64",
                  f"  %{k}.s = ashr i64 %{k}.b, 63",
                  f"  %{k}.m = and i64 %{k}.s, {_TOP}",
                  f"  %{k}.x = xor i64 %{k}.b, %{k}.m",
                  f"  %{k}.z = fcmp oeq double {d}, 0.0",
                  f"  %{k}.y = select i1 %{k}.z, i64 0, i64 %{k}.x",
                  f"  %{k}.n = fcmp uno double {d}, {d}",
                  f"  %{k}.a = select i1 %{k}.n, i64 {_NAN_KEY}, i64 %{k}.y"]
    elif dtype.kind == "u" and dtype.itemsize == 8:
        lines = [f"  %{k}.a = xor i64 %{v}, {-(1 << 63)}"]
    elif t == "i64":
        lines = [f"  %{k}.a = add i64 %{v}, 0"]
    else:
        ext = "sext" if dtype.kind == "i" else "zext"
        lines = [f"  %{k}.a = {ext} {t} %{v} to i64"]
    return lines + [f"  %{k} = xor i64 %{k}.a, {0 if ascending else -1}"]


def _padding(dtype: np.dtype, ascending: bool) -> str:
    """The value that sorts after every other (a list's padding in a network)."""
    if dtype.kind == "f":
        return "0x7FF0000000000000" if ascending else "0xFFF0000000000000"
    if dtype.kind == "b":
        return "1" if ascending else "0"
    info = np.iinfo(dtype)
    value = int(info.max if ascending else info.min)
    bits = 8 * dtype.itemsize  # (as a signed constant of its width: LLVM's spelling)
    return str(value - (1 << bits) if value >= 1 << (bits - 1) else value)


def _network(dtype: np.dtype, ascending: bool, width: int, pairs: tuple) -> str:
    """The IR of block `net<width>`: one list of 2 <= `%n` <= width values sorted by
    `pairs`, comparing the values themselves: value i is loaded where i < n, else the
    padding (it sorts last); each pair's first placed first with no branch (equal values
    need no order); the first n written back, the others into a slot on the stack. A list
    holding NaN or a zero goes to the insertion sort by keys (`net<width>.nan`), which is
    stable (-0.0 and 0.0 stay in their order, as NumPy's)."""
    t, w = VALUE_TYPES[dtype.name], f"n{width}"
    f = dtype.kind == "f"
    swap = ("fcmp ogt" if ascending else "fcmp olt") if f else \
        ("icmp " + ("s" if dtype.kind == "i" else "u") + ("gt" if ascending else "lt"))
    lines, v = [], {}
    for i in range(width):
        lines += [f"  %{w}in{i} = icmp slt i64 {i}, %n",
                  f"  %{w}a{i} = getelementptr {t}, ptr %kb, i64 {i}",
                  f"  %{w}r{i} = select i1 %{w}in{i}, ptr %{w}a{i}, ptr %pad",
                  f"  %{w}v{i} = load {t}, ptr %{w}r{i}"]
        v[i] = f"%{w}v{i}"
    if f:  # (NaN or a zero, whose sign a stable sort keeps in place: by keys)
        for i in range(width):
            lines += [f"  %{w}u{i} = fcmp ueq {t} {v[i]}, 0.0"]
        lines += [f"  %{w}nan0 = or i1 %{w}u0, %{w}u1"]
        lines += [f"  %{w}nan{i - 1} = or i1 %{w}nan{i - 2}, %{w}u{i}" for i in range(2, width)]
        lines += [f"  br i1 %{w}nan{width - 2}, label %net{width}.nan, label %net{width}.go",
                  f"net{width}.nan:", "  br label %copy", f"net{width}.go:"]
    for c, (i, j) in enumerate(pairs):
        lines += [f"  %{w}sw{c} = {swap} {t} {v[i]}, {v[j]}",
                  f"  %{w}lo{c} = select i1 %{w}sw{c}, {t} {v[j]}, {t} {v[i]}",
                  f"  %{w}hi{c} = select i1 %{w}sw{c}, {t} {v[i]}, {t} {v[j]}"]
        v[i], v[j] = f"%{w}lo{c}", f"%{w}hi{c}"
    for i in range(width):
        lines += [f"  %{w}o{i} = getelementptr {t}, ptr %pb, i64 {i}",
                  f"  %{w}w{i} = select i1 %{w}in{i}, ptr %{w}o{i}, ptr %sink",
                  f"  store {t} {v[i]}, ptr %{w}w{i}"]
    return "\n".join(lines + ["  br label %next"])


def _values_text(name: str, dtype: np.dtype, ascending: bool) -> str:
    classes = []
    for w in NETWORKS:  # several<w>: the list fits network w, else the next one's test
        after = f"several{w * 2}" if w != NETWORKS[-1] else "copy"
        classes += [f"several{w}:", f"  %fits{w} = icmp sle i64 %n, {w}",
                    f"  br i1 %fits{w}, label %net{w}, label %{after}", f"net{w}:",
                    _network(dtype, ascending, w, batcher(w))]
    text = _head(name, VALUE_TYPES[dtype.name], _padding(dtype, ascending), "several4",
                 "copy") + _VALUES_IR.replace("CLASSES", "\n".join(classes)).replace(
        "LAST", f"several{NETWORKS[-1]}").replace(
        "NANS", "".join(f"[0, %net{w}.nan], " for w in NETWORKS) if dtype.kind == "f" else "")
    lines = []
    for line in text.split("\n"):
        parts = line.split()
        if parts[:1] == ["KEY"]:
            lines += _key(dtype, ascending, *parts[1:])
        else:
            lines.append(line)
    return row_kernel("\n".join(lines).replace("VT", VALUE_TYPES[dtype.name]))


def sort_values(offsets: np.ndarray, values: np.ndarray, out: np.ndarray,
                ascending: bool = True) -> None:
    """Write into `out` each list `values[offsets[r]:offsets[r + 1]]` sorted, stably (NaN
    above every number; descending: reversed). `values` and `out`: one contiguous dtype
    of `VALUE_TYPES`; the offsets the caller's own (rising, inside the values); the lists
    short (longer ones take an insertion sort)."""
    offsets = np.ascontiguousarray(offsets, np.int64)
    nrows = len(offsets) - 1
    if nrows <= 0:
        return
    dt = values.dtype
    if dt.name not in VALUE_TYPES or out.dtype != dt or not dt.isnative or \
            not values.flags.c_contiguous or not out.flags.c_contiguous or \
            out.shape != values.shape or int(offsets[-1]) > len(values):
        raise ValueError("sort_values: arrays that do not match")
    name = f"lazyk_sort_{dt.name}_{'up' if ascending else 'down'}"
    _run(native_function(name, lambda: _values_text(name, dt, ascending)), offsets, values,
         out)
