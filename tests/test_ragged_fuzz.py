"""Bounds fuzzing of ragged operands: corrupted arrmeta and offsets give a clear error or the
reference's answer; never a crash, never a read outside the operands.

Arrays `N * var * T`, `N * ?var * T` and `N * var * ?T` are built through `from_offsets`
(over content placed inside a buffer of 0xFF sentinel bytes: NaN for float64, so a read
past the content shows up as a NaN the reference does not have), `from_arrow` and
`lazyk.array` (`N * ?var * ?T` in index pairs). Then
their arrmeta is corrupted (`Array.from_parts`: row slices past the end, bad strides and
pointers, wrong index widths, huge or negative `stop_delta`, content address and length
past the content, bad index and row strides, stale block refs, far mask offsets) or their
offsets are overwritten after the construction check (decreasing, past the content,
negative, huge). Each case runs elementwise work and reductions; the answer must be the
reference's (`tests/ragged_reference.py` over what the bounds-checked Python reader
`to_list` sees), or a clear error (ValueError and its lazyk subclasses, ShapeError,
NotSupportedError). When the Python reader refuses the arrmeta, lazyk must refuse too.

The cases run in one subprocess with a timeout, so a crash fails this test only.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import lazyk
from lazyk import errors as E
from lazyk.arrays import memory

OK_ERRORS = (ValueError, E.NotSupportedError, E.BindError, TypeError)
PAD = 64  # sentinel bytes on each side of the content


# ---------------------------------------------------------------- building operands
def padded(values: np.ndarray) -> np.ndarray:
    """`values` copied into the middle of a 0xFF-filled buffer (a view of it)."""
    raw = np.full(PAD + values.nbytes + PAD, 0xFF, np.uint8)
    view = raw[PAD:PAD + values.nbytes].view(values.dtype)
    view[...] = values
    return view


def padded_masked(values: np.ndarray, mask: np.ndarray):
    """A `n * ?float64` lazyk array in lazyk's mask form (values, then one shadow slot per
    value) inside a sentinel-padded buffer; its block is exactly values + shadow."""
    n = len(values)
    raw = np.full(PAD + 2 * 8 * n + PAD, 0xFF, np.uint8)
    region = raw[PAD:PAD + 16 * n]
    region[:8 * n].view(np.float64)[:] = values
    region[8 * n:].reshape(n, 8)[:, 0] = mask
    region[8 * n:].reshape(n, 8)[:, 1:] = 0
    block = memory.foreign(region)
    return lazyk.Array.from_parts(f"{n} * ?float64", (n, 8, 8 * n), block.address, block)


def base_arrays(rng: np.random.Generator) -> list:
    """(name, array, offsets buffer or None) of every kind, small random rows."""
    out = []
    rows = int(rng.integers(1, 6))
    lengths = rng.integers(0, 4, rows)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    n = int(offsets[-1])
    values = rng.integers(-4, 5, n).astype(np.float64)
    for width in (np.int64, np.int32):
        off = padded(offsets.astype(width))
        out.append((f"var/{np.dtype(width).name}", lazyk.from_offsets(off, padded(values)), off))
        off = padded(offsets.astype(width))
        valid = rng.random(rows) < 0.7
        out.append((f"?var/{np.dtype(width).name}",
                    lazyk.from_offsets(off, padded(values), validity=valid), None))
    off = padded(offsets)
    content = padded_masked(values, rng.random(n) < 0.7)
    out.append(("var/?T", lazyk.from_offsets(off, content), off))
    items = [None if rng.random() < 0.25 else
             [None if rng.random() < 0.2 else float(v) for v in values[a:b]]
             for a, b in zip(offsets[:-1], offsets[1:])]
    # lazyk's own {start, stop} pairs (stride 16, stop_delta 8)
    out.append(("array", lazyk.array(items, type=f"{rows} * ?var * ?float64"), None))
    try:
        import pyarrow as pa
    except ImportError:
        return out
    out.append(("arrow", lazyk.from_arrow(pa.array(items, pa.list_(pa.float64()))), None))
    return out


# ---------------------------------------------------------------- corruptions
def _var_at(a) -> int:
    """Index of the var dim's first arrmeta field (blockref)."""
    return 3 if str(a.type).split(" * ")[1] == "?var" else 2


def corruptions(a, rng) -> list:
    """(name, type, meta, ptr) variants of `a`'s arrmeta."""
    meta, ptr, v = list(a.meta), a.ptr, _var_at(a)
    big = 1 << 40
    edits = [("size", 0, [meta[0] + 1, meta[0] + 3, meta[0] + 1000]),
             ("stride", 1, [0, -meta[1], 2 * meta[1], 3, 16]),
             ("blockref", v, [meta[v] + 1, meta[v] - 1, 10 ** 9]),
             ("width", v + 1, [0, 2, 3, 4, 8, 16]),
             ("stop_delta", v + 2, [0, -8, 4, 16, big, -big]),
             ("content", v + 3, [meta[v + 3] + 8, meta[v + 3] - 8, meta[v + 3] + 1,
                                 meta[v + 3] + big, 0]),
             ("index_stride", v + 4, [0, -8, 16, 4, 1]),
             ("row_stride", v + 5, [0, -8, 16, 4]),
             ("length", v + 6, [meta[v + 6] + 1, meta[v + 6] + 100, -1, 0, big])]
    if v == 3:
        edits.append(("row_mask_offset", 2, [0, -meta[2], big, -big, meta[2] + 8]))
    if len(meta) > v + 7:
        edits.append(("value_mask_offset", v + 7, [0, -meta[v + 7], big, meta[v + 7] + 64]))
    out = []
    for name, at, choices in edits:
        for val in choices:
            m = list(meta)
            m[at] = int(val)
            out.append((f"{name}={val}", a.type, tuple(m), ptr))
    for d in (8, -8, 4, 1, -a.meta[1]):
        out.append((f"ptr{d:+d}", a.type, tuple(meta), ptr + d))
    return out


def offset_writes(off: np.ndarray, length: int) -> list:
    """(name, index, value) writes into an offsets array after its check."""
    k = len(off)
    out = [("negative start", 0, -3), ("past the content", k - 1, length + 5),
           ("huge", k - 1, 1 << 30)]
    if k > 2:
        out.append(("decreasing", 1, int(off[0]) - 1 if off[0] else -1))
        out.append(("decreasing late", k - 2, int(off[-1]) + 2))
    return out


# ---------------------------------------------------------------- running a case
def expressions():
    from tests import ragged_reference as R
    return [
        ("x * 2 + 1", lambda x: x * 2 + 1,
         lambda r: R.elementwise("add", R.elementwise("multiply", r, 2), 1)),
        ("x + x", lambda x: x + x, lambda r: R.elementwise("add", r, r)),
        ("where(x > 0, x, -x)", lambda x: lazyk.where(x > 0, x, -x),
         lambda r: R.where(R.elementwise("greater", r, 0), r, R.elementwise("negative", r))),
        ("sum(-1, skipna)", lambda x: x.sum(axis=-1, skipna=True),
         lambda r: R.reduce("sum", r, -1, skipna=True)),
        ("max(-1, initial)", lambda x: x.max(axis=-1, initial=-9.0),
         lambda r: R.reduce("max", r, -1, initial=-9.0)),
        ("sum(0, skipna)", lambda x: x.sum(axis=0, skipna=True),
         lambda r: R.reduce("sum", r, 0, skipna=True)),
        ("mean()", lambda x: x.mean(), lambda r: R.reduce("mean", r)),
    ]


def run_case(a, exprs) -> list:
    """Failures (strings) of every expression over the (maybe corrupted) array `a`."""
    from tests import ragged_reference as R
    from tests.test_ragged_reference import same
    try:
        data = a.to_list()  # bounds-checked reader: what the arrmeta says, or an error
        ref_in = R.array(data, str(a.type))
    except Exception:  # noqa: BLE001 - any refusal: lazyk must refuse as well
        data = ref_in = None
    fails = []
    for name, lz, ref in exprs:
        try:
            want, want_err = (ref(ref_in), None) if ref_in is not None else (None, "refused")
        except (E.ShapeError, ValueError) as e:
            want, want_err = None, e
        try:
            got = lz(a)
            got = got.eval() if isinstance(got, lazyk.Expr) else got
            got_list, got_type = got.to_list(), str(got.type)
        except OK_ERRORS:
            continue  # a clear error is always an acceptable answer
        except Exception as e:  # noqa: BLE001
            fails.append(f"{name}: unexpected {e!r}")
            continue
        if want_err is not None:
            fails.append(f"{name}: answered {got_list!r}; the reference "
                         f"{'could not read the array' if want_err == 'refused' else 'raises'}")
        elif got_type != str(want.type) or not same(got_list, want.data):
            fails.append(f"{name}: {got_type} {got_list!r} != reference {want.type} "
                         f"{want.data!r} (input {data!r})")
    return fails


def run_all(seed: int, rounds: int) -> dict:
    """Every corruption of every base array over `rounds` random draws."""
    rng = np.random.default_rng(seed)
    exprs = expressions()
    counts = {"cases": 0, "constructed": 0, "read": 0}
    fails = []
    for _ in range(rounds):
        for kind, a, off in base_arrays(rng):
            variants = [(n, lambda t=t, m=m, p=p: lazyk.Array.from_parts(t, m, p, a.owner,
                                                                         a.readonly))
                        for n, t, m, p in corruptions(a, rng)]
            if off is not None:
                for n, i, val in offset_writes(off, a.meta[_var_at(a) + 6]):
                    def write(i=i, val=val, keep=off.copy()):
                        off[...] = keep
                        off[i] = np.asarray(val).astype(off.dtype)
                        return a
                    variants.append((f"offsets: {n}", write))

                def past(keep=off.copy(), v=_var_at(a)):
                    # the last row and the content length both 2 past the content: what
                    # lies there is sentinel bytes, outside the content's block
                    off[...] = keep
                    off[-1] += 2
                    m = list(a.meta)
                    m[v + 6] += 2
                    return lazyk.Array.from_parts(a.type, tuple(m), a.ptr, a.owner)
                variants.append(("offsets and length past the content", past))
            variants.append(("as built", lambda: a))
            for n, make in variants:
                counts["cases"] += 1
                try:
                    x = make()
                except OK_ERRORS:
                    continue
                counts["constructed"] += 1
                try:
                    x.to_list()
                    counts["read"] += 1
                except Exception:  # noqa: BLE001 - counted only
                    pass
                fails += [f"{kind} / {n}: {f}" for f in run_case(x, exprs)]
    return {"counts": counts, "fails": fails[:20], "nfails": len(fails)}


# ---------------------------------------------------------------- tests
def test_corrupted_ragged_operands_raise_or_match_in_a_subprocess():
    code = ("import json, sys; from tests.test_ragged_fuzz import run_all; "
            "print(json.dumps(run_all(int(sys.argv[1]), int(sys.argv[2]))))")
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-c", code, "7", "2"], capture_output=True,
                          text=True, timeout=120, env=env,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert proc.returncode == 0, f"the fuzz process died ({proc.returncode}): " \
                                 f"{proc.stderr[-2000:]}"
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["nfails"] == 0, "\n".join(report["fails"])
    counts = report["counts"]
    # the fuzz reaches the kernels: many variants construct and many are readable
    assert counts["constructed"] > counts["cases"] // 3 and counts["read"] > 50, counts


def test_a_read_past_the_content_is_refused():
    """The last row and the content's length 2 past its block (the sentinel bytes beyond
    hold NaN): refused before any kernel reads, by the Python reader and by expressions."""
    off = np.array([0, 2, 3])
    a = lazyk.from_offsets(off, padded(np.arange(3.0)))
    off[2] = 5
    meta = list(a.meta)
    meta[-1] = 5  # length 5 of a 3-element content
    bad = lazyk.Array.from_parts(a.type, tuple(meta), a.ptr, a.owner)
    with pytest.raises(ValueError, match="outside"):
        bad.to_list()
    for expr in (lambda x: x * 2, lambda x: x.sum(axis=-1), lambda x: x.max(axis=0)):
        with pytest.raises(ValueError, match="outside its memory block"):
            expr(bad).eval()


def test_missing_rows_with_far_mask_offsets_are_refused():
    a = lazyk.from_offsets(np.array([0, 2, 3]), np.arange(3.0), validity=[True, False])
    meta = list(a.meta)
    for m in (1 << 40, -(1 << 40), -meta[2] - 64):
        meta[2] = m
        with pytest.raises(ValueError, match="outside"):  # at construction or evaluation
            x = lazyk.Array.from_parts(a.type, tuple(meta), a.ptr, a.owner)
            (x + 1).eval()


def test_bad_offsets_written_after_the_check_are_refused():
    off = np.array([0, 2, 3, 3])
    a = lazyk.from_offsets(off, np.arange(3.0))
    off[1] = 7  # past the content
    with pytest.raises(ValueError, match="outside the content"):
        (a * 2).eval()
    with pytest.raises(ValueError, match="outside the content"):
        a.sum(axis=-1).eval()
    q = lazyk.from_offsets(np.array([0, 2, 3, 3]), np.arange(3.0), validity=[True, True, False])
    indices = q.owner.buffer[:32].view(np.int64)  # the offsets, copied next to the mask
    indices[3] = 1  # the stop of the missing row: never read
    assert (q * 2).to_list() == [[0.0, 2.0], [4.0], None]
    indices[1] = 9  # a present row past the content
    with pytest.raises(ValueError, match="outside the content"):
        (q * 2).eval()
