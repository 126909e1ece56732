"""Reductions over long and short var rows side by side (the nest folds contiguous rows by
windows of several lanes, reaching before or past a row inside its content), and
`N * var * var` reductions over the last axis run as one reduction over the inner rows:
values, dtypes and types against the plain-Python reference `tests/ragged_reference.py`,
structure (one kernel run, no count pass), errors naming the bad row, and no read outside
the content (guard pages, in a subprocess)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
from lazyk.codegen.levels import FIXED, VAR, Fill
from lazyk.kernel import nest as nest_kernel
from tests import ragged_reference as R
from tests.ragged_strategies import long_rows, ragged
from tests.test_ragged_nest import check

OPS = ("sum", "prod", "min", "max", "mean", "any", "all")


def offsets_form(data, t):
    """`N * var * T` / `N * var * var * T` over NumPy offsets and content (from_offsets, the
    layout where one row's stop is the next row's start)."""
    dtype = t.split(" * ")[-1]
    if t.count("var") == 1:
        lens = [len(r) for r in data]
        off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        flat = [v for r in data for v in r]
        return lazyk.from_offsets(off, np.array(flat, dtype=dtype))
    outer = np.concatenate([[0], np.cumsum([len(r) for r in data])]).astype(np.int32)
    inner_rows = [r for rows in data for r in rows]
    return lazyk.from_offsets(outer, offsets_form(inner_rows, "N * var * " + dtype))


def reduce_both(op, x, rx, axis, keepdims):
    try:
        ref = R.reduce(op, rx, axis=axis, keepdims=keepdims)
    except ValueError:  # min / max of an empty row
        with pytest.raises(ValueError):
            getattr(x, op)(axis=axis, keepdims=keepdims).eval()
        return
    check(getattr(x, op)(axis=axis, keepdims=keepdims), ref)


@settings(max_examples=20, deadline=None)
@given(long_rows(nan=True), st.sampled_from(OPS), st.booleans(), st.data())
def test_long_and_short_rows(case, op, keepdims, data):
    t, d = case
    if op == "prod":  # exact in any order: factors of +-1 and +-2
        d = _clip(d)
    rx = R.array(d, t)
    nd = t.count("*")
    axis = data.draw(st.sampled_from([-1, None] + ([1, (1, 2)] if nd == 3 else [])))
    for x in (lazyk.array(d, type=t), offsets_form(d, t)):
        reduce_both(op, x, rx, axis, keepdims)


@settings(max_examples=15, deadline=None)
@given(long_rows(layouts=("N * var * T",), dtypes=("float64", "int32"), options=True),
       st.sampled_from(["sum", "max", "mean", "prod"]), st.booleans())
def test_missing_values_in_long_rows(case, op, skipna):
    """`?T` leaves: skipped under skipna, else the row's result is missing; lists and a
    masked NumPy content over offsets."""
    t, d = case
    if op == "prod":
        d = _clip(d)
    rx = R.array(d, t)
    flat = [v for r in d for v in r]
    vals = lazyk.array(flat, type=f"{len(flat)} * ?{t.split('?')[-1]}")
    off = np.concatenate([[0], np.cumsum([len(r) for r in d])]).astype(np.int64)
    for x in (lazyk.array(d, type=t), lazyk.from_offsets(off, vals)):
        ref = R.reduce(op, rx, axis=-1, skipna=skipna)
        check(getattr(x, op)(axis=-1, skipna=skipna), ref)


def _clip(d):
    if isinstance(d, list):
        return [_clip(v) for v in d]
    if d is None or isinstance(d, bool) or d != d or d in (float("inf"), float("-inf")):
        return d
    return type(d)(2 if d > 2 else -2 if d < -2 else d if d in (-1, 1, 2, -2) else 1)


@settings(max_examples=15, deadline=None)
@given(long_rows(layouts=("N * var * T",), dtypes=("float64", "int32", "float32")),
       st.sampled_from(["sum", "max", "mean"]))
def test_two_operands_and_a_scalar(case, op):
    """Two arrays over the same offsets, a broadcast 0-d leaf, leaves in two dtypes."""
    t, d = case
    x = offsets_form(d, t)
    y = offsets_form([[v * 2 for v in r] for r in d], t)
    rx, ry = R.array(d, t), R.array([[v * 2 for v in r] for r in d], t)
    z = lazyk.array(np.float64(1.5))
    rz = R.elementwise("add", R.elementwise("multiply", rx, ry), R.array(1.5, "float64"))
    reduce_both(op, x * y + z, rz, -1, False)


def test_neighbours_do_not_leak():
    """NaN, inf and huge integers in one row never reach the rows next to it (the windows
    read them and drop them)."""
    rng = np.random.default_rng(5)
    lens = rng.integers(0, 30, 400)
    off = np.concatenate([[0], np.cumsum(lens)])
    v = rng.integers(-5, 6, int(off[-1])).astype(np.float64)
    bad = rng.random(len(lens)) < 0.2  # rows full of NaN / inf
    for r in np.flatnonzero(bad):
        v[off[r]:off[r + 1]] = rng.choice([np.nan, np.inf, -np.inf], lens[r])
    x = lazyk.from_offsets(off, v)
    for op, f in (("sum", np.sum), ("max", np.max), ("min", np.min), ("prod", np.prod)):
        got = np.array(getattr(x, op)(axis=-1, initial=0.0 if op in "maxmin" else None)
                       .eval().to_list()) if op in ("max", "min") else \
            np.array(getattr(x, op)(axis=-1).eval().to_list())
        with np.errstate(invalid="ignore"):  # inf - inf
            want = np.array([f(v[a:b], initial=0.0) if op in ("max", "min") else f(v[a:b])
                             for a, b in zip(off[:-1], off[1:])])
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)
    i = rng.integers(-2**62, 2**62, int(off[-1]))
    got = np.array(lazyk.from_offsets(off, i).sum(axis=-1).eval().to_list(), np.int64)
    with np.errstate(over="ignore"):
        want = np.array([i[a:b].sum() for a, b in zip(off[:-1], off[1:])], np.int64)
    np.testing.assert_array_equal(got, want)


def test_every_row_length_around_the_windows():
    """Rows of every length 0-60 (the leading windows, whole blocks, the last window) twice
    over, shuffled, in content long enough for the window fold: every reduction against
    NumPy, over float64, int32, `?float64` and a strided content (the plain loop)."""
    rng = np.random.default_rng(11)
    lens = rng.permutation(np.tile(np.arange(61), 2))
    off = np.concatenate([[0], np.cumsum(lens)])
    v = rng.integers(-5, 6, int(off[-1])).astype(np.float64) / 2
    rows = [(a, b) for a, b in zip(off[:-1], off[1:])]
    present = rng.random(len(v)) > 0.25
    wide = np.repeat(v, 2)[::2]  # the same values, 16 bytes apart
    for name, x, vals, mask in (
            ("float64", lazyk.from_offsets(off, v), v, None),
            ("int32", lazyk.from_offsets(off, (v * 2).astype(np.int32)),
             (v * 2).astype(np.int32), None),
            ("strided", lazyk.from_offsets(off, wide), v, None),
            ("?float64", lazyk.from_offsets(off, lazyk.array(np.ma.masked_array(
                v, mask=~present))), v, present)):
        for op in ("sum", "prod", "min", "max", "mean", "any", "all"):
            kw = {"initial": 0} if op in ("min", "max") else {}
            got = getattr(x, op)(axis=-1, skipna=mask is not None, **kw).eval()
            assert str(got.type).split(" * ")[0] == str(len(rows)), (name, op, got.type)
            got = np.array([np.nan if g is None else g for g in got.to_list()], np.float64)
            f = getattr(np, op)
            want = []
            for a, b in rows:
                r = vals[a:b] if mask is None else vals[a:b][mask[a:b]]
                want.append(f(r, **kw) if len(r) or op != "mean" else np.nan)
            np.testing.assert_allclose(got, np.array(want, np.float64), rtol=1e-12,
                                       equal_nan=True, err_msg=f"{name} {op}")
    # rows of 1 stretching against those rows, their content long enough for windows
    ones = np.arange(len(v), dtype=np.float64)
    y = lazyk.from_offsets(np.arange(len(rows) + 1), ones)
    got = (lazyk.from_offsets(off, v) * y).sum(axis=-1).eval().to_list()
    np.testing.assert_allclose(got, [v[a:b].sum() * r for r, (a, b) in enumerate(rows)],
                               rtol=1e-12)


def test_min_max_nan_at_every_place_of_the_windows():
    """A float min / max keeps each lane's NaN apart from its value: a NaN at any place of a
    row (the leading windows, a whole block, the last window) makes that row's result NaN,
    and rows without one pick their min / max, as NumPy does (float32 and float64, infinities
    included); a histogram of those maxima counts no NaN row."""
    rng = np.random.default_rng(3)
    lens = np.repeat(np.arange(1, 41), 3)
    off = np.concatenate([[0], np.cumsum(lens)])
    for dt in (np.float32, np.float64):
        v = rng.normal(size=int(off[-1])).astype(dt)
        v[rng.random(len(v)) < 0.05] = np.inf
        v[rng.random(len(v)) < 0.05] = -np.inf
        for r, (a, b) in enumerate(zip(off[:-1], off[1:])):
            if r % 3:  # two of every three rows get a NaN at a place of their own
                v[a + (r * 7) % (b - a)] = np.nan
        x = lazyk.from_offsets(off, v)
        for op in ("min", "max"):
            got = getattr(lazyk, op)(x, axis=1).eval()
            want = np.array([getattr(np, op)(v[a:b]) for a, b in zip(off[:-1], off[1:])])
            assert got.dtype == np.dtype(dt), (op, got.type)
            np.testing.assert_array_equal(np.array(got.to_list(), dt), want, err_msg=op)
            counts = lazyk.histogram(getattr(lazyk, op)(x, axis=1), 20, (-4, 4)).to_numpy()
            np.testing.assert_array_equal(counts, np.histogram(want, 20, (-4, 4))[0])


def test_math_rows_fold_from_blocks():
    """A body with math calls folds short rows from blocks of values computed ahead in one
    vectorized loop: rows of every length 0-60 and around the block's size (255-257, 600),
    shuffled; two operands over different offsets; a 0-d leaf; float32 and int32 leaves; a
    selection; every reduction against NumPy, row by row."""
    rng = np.random.default_rng(12)
    lens = rng.permutation(np.concatenate([np.tile(np.arange(61), 3), [255, 256, 257, 600]]))
    off = np.concatenate([[0], np.cumsum(lens)])
    v = rng.uniform(-3, 3, int(off[-1]))
    w = rng.uniform(-3, 3, int(off[-1]))
    x = lazyk.from_offsets(off, v)
    # y's rows start 7 elements further into its content than x's
    y = lazyk.from_offsets(off + 7, np.concatenate([np.full(7, np.nan), w]))
    rows = list(zip(off[:-1], off[1:]))
    per_row = rng.uniform(-1, 1, len(rows))
    for op in OPS:
        kw = {"initial": 0.0} if op in ("min", "max") else {}
        for e, vals, rtol, sel in (
                (lazyk.cos(x), np.cos(v), 1e-12, None),
                (lazyk.cos(x) * lazyk.exp(y / 10), np.cos(v) * np.exp(w / 10), 1e-12, None),
                (lazyk.cos(x * lazyk.array(np.float64(1.5))), np.cos(v * 1.5), 1e-12, None),
                (lazyk.cos(x - lazyk.array(per_row)[:, None]),  # (not in blocks)
                 np.cos(v - np.repeat(per_row, lens)), 1e-12, None),
                (lazyk.sin(lazyk.from_offsets(off, v.astype(np.float32))),
                 np.sin(v.astype(np.float32)), 1e-5, None),
                (lazyk.exp(lazyk.from_offsets(off, (v * 3).astype(np.int32)) / 4),
                 np.exp((v * 3).astype(np.int32) / 4), 1e-12, None),
                (lazyk.cos(x)[lazyk.sin(y) > 0], np.cos(v), 1e-12, np.sin(w) > 0)):
            got = getattr(e, op)(axis=-1, **kw).eval()
            assert str(got.type) == f"{len(rows)} * {vals.dtype if op not in ('any', 'all') else 'bool'}", \
                (op, got.type)
            got = np.array([np.nan if g is None else g for g in got.to_list()], np.float64)
            wide = vals.astype(np.float64)  # (float32 values fold in float64)
            want = []
            for a, b in rows:
                r = wide[a:b] if sel is None else wide[a:b][sel[a:b]]
                want.append(getattr(np, op)(r, **kw) if len(r) or op != "mean" else np.nan)
            np.testing.assert_allclose(got, np.array(want, np.float64), rtol=rtol,
                                       atol=rtol, equal_nan=True, err_msg=f"{op} {vals.dtype}")


def test_counts_of_trues_fold_from_bytes_or_windows(monkeypatch):
    """`sum(x > c, axis=-1)` over rows of at most 8 elements on average folds from a block
    of one byte per value (a row's count: 16 bytes at a time, masked to the row, summed
    across); over longer rows by windows (a window's count: the popcount of its compare
    bits; other count dtypes: lanes).
    Both against NumPy, row by row: rows of every length 0-9 and a few around the
    block's size (255-257, 600), int32 and int64 offsets, a view starting mid-content,
    several threads' parts, dtype= int32 and uint8 counts, a 0-d threshold, a comparison of
    two operands, and the code path each takes."""
    rng = np.random.default_rng(14)
    monkeypatch.setattr(nest_kernel, "MIN_PART", 256)  # several parts of these rows
    for lens in (rng.permutation(np.concatenate([np.tile([0, 1, 1, 2, 0], 500),
                                                 [255, 256, 257, 600]])),  # short (~1.3)
                 rng.permutation(np.concatenate([np.tile(np.arange(10), 300),
                                                 [255, 256, 257, 600]])),  # ~5: bytes
                 rng.integers(0, 41, 2000)):  # longer (~20): windows
        off = np.concatenate([[0], np.cumsum(lens)])
        v = rng.uniform(-1, 1, int(off[-1])).astype(np.float32)
        w = rng.uniform(-1, 1, int(off[-1]))
        rows = list(zip(off[:-1], off[1:]))
        for width in (np.int64, np.int32):
            x = lazyk.from_offsets(off.astype(width), v)
            y = lazyk.from_offsets(off.astype(width), w)
            for e, t, flags, kw in (
                    (x > 0.25, "int64", v > 0.25, {}),
                    (x > lazyk.array(np.float32(-0.5)), "int64", v > -0.5, {}),
                    (x < y, "int64", v < w, {}),
                    (x > 0, "int32", v > 0, {"dtype": np.int32}),
                    (x > 0, "uint8", v > 0, {"dtype": np.uint8})):
                got = e.sum(axis=-1, **kw).eval()
                assert str(got.type) == f"{len(rows)} * {t}", got.type
                want = [int(flags[a:b].sum()) % (256 if t == "uint8" else 1 << 62)
                        for a, b in rows]
                assert got.to_list() == want, (lens.mean(), width, t)
                for threads in (1, 2, 3):  # parts that start at any row
                    with lazyk.threads(threads):
                        assert e.sum(axis=-1, **kw).eval().to_list() == want
            view = x[7:-3]  # rows of a view: the offsets start mid-content
            assert (view > 0.25).sum(axis=-1).eval().to_list() == \
                [int((v[a:b] > 0.25).sum()) for a, b in rows[7:-3]]
    ir = (lazyk.from_offsets(off, v) > 0).sum(axis=-1).explain()
    assert '%"short" = alloca i1' in ir and "llvm.vector.reduce.add.v16i8" in ir and \
        "llvm.ctpop.i8" in ir
    # a sum of plain numbers folds by windows only
    assert '%"run" = alloca' not in lazyk.from_offsets(off, v).sum(axis=-1).explain()


def test_math_rows_with_missing_values_fold_from_blocks():
    """`?float64` values under a math call: each value and whether it is present go into
    the block; skipna or not, every reduction against NumPy, row by row."""
    rng = np.random.default_rng(13)
    lens = rng.permutation(np.concatenate([np.tile(np.arange(40), 3), [300]]))
    off = np.concatenate([[0], np.cumsum(lens)])
    v = rng.uniform(-3, 3, int(off[-1]))
    present = rng.random(len(v)) > 0.2
    x = lazyk.from_offsets(off, lazyk.array(np.ma.masked_array(v, mask=~present)))
    for op in OPS:
        kw = {"initial": 0.0} if op in ("min", "max") else {}
        for skipna in (True, False):
            got = getattr(lazyk.cos(x), op)(axis=-1, skipna=skipna, **kw).eval().to_list()
            want = []
            for a, b in zip(off[:-1], off[1:]):
                r = np.cos(v[a:b])[present[a:b]]
                if not skipna and not present[a:b].all() or (op == "mean" and not len(r)):
                    want.append(None)
                else:
                    want.append(getattr(np, op)(r, **kw))
            assert [g is None for g in got] == [w is None for w in want], (op, skipna)
            np.testing.assert_allclose([g for g in got if g is not None],
                                       [w for w in want if w is not None], rtol=1e-12,
                                       err_msg=f"{op} skipna={skipna}")


def test_math_rows_call_the_vector_library():
    """`cos(x).sum(axis=-1)` over short rows computes a block of values on the stack (no
    allocation) and calls the vector math library, as `cos(x)` does."""
    from lazyk.backend import vecmath
    if not vecmath.load():
        pytest.skip("libmvec not available")
    x = lazyk.from_offsets(np.array([0, 1, 1, 4]), np.arange(4.0))
    q = lazyk.from_offsets(np.array([0, 1, 1, 4]),
                           lazyk.array(np.ma.masked_array(np.arange(4.0), mask=[0, 1, 0, 0])))
    for e in (lazyk.cos(x), lazyk.cos(x - lazyk.array(np.float64(1.5))),
              lazyk.cos(x)[x > 1], lazyk.cos(q)):
        text = e.sum(axis=-1).explain()
        ir, asm = text[:text.index("== assembly")], text[text.index("== assembly"):]
        assert '%"block" = alloca double' in ir and "stage.body" in ir
        assert "_ZGV" in asm and "cos" in asm


@settings(max_examples=20, deadline=None)
@given(ragged(layouts=("N * var * var * T", "N * var * ?var * T"), nan=True),
       st.sampled_from(OPS), st.booleans(), st.booleans())
def test_var_var_last_axis_is_one_reduction(case, op, skipna, keepdims):
    """Over offsets and over lists (index pairs that touch), `?T` leaves and `?var` rows
    below too: one kernel run, no count pass, the reference's values and types."""
    t, d = case
    rx = R.array(d, t)
    try:
        ref = R.reduce(op, rx, axis=-1, keepdims=keepdims, skipna=skipna)
    except ValueError:
        return
    x = lazyk.array(d, type=t)
    runs = nest_kernel.nest_stats["runs"]
    check(x.__getattribute__(op)(axis=-1, keepdims=keepdims, skipna=skipna), ref)
    if len(d) and t.split(" * ")[1] == "var":  # (`?var` outer rows: the full nest)
        assert nest_kernel.nest_stats["runs"] - runs == 1


def test_var_var_structure_and_types():
    outer = np.array([0, 2, 2, 5], np.int64)
    inner = np.array([0, 3, 3, 4, 12, 30], np.int32)
    v = np.arange(30, dtype=np.int16)
    x = lazyk.from_offsets(outer, lazyk.from_offsets(inner, v))
    runs = nest_kernel.nest_stats["runs"]
    got = x.sum(axis=-1).eval()
    assert nest_kernel.nest_stats["runs"] - runs == 1
    assert str(got.type) == "3 * var * int64"
    assert got.to_list() == [[3, 0], [], [3, int(v[4:12].sum()), int(v[12:30].sum())]]
    kern = [k for k in nest_kernel.kernels.values() if k.spec.inputs == (np.dtype(np.int16),)]
    assert any(k.levels == (FIXED, VAR) and k.npass == Fill() for k in kern)
    # outer rows that start later: the result's offsets start at 0
    y = lazyk.from_offsets(outer[1:], lazyk.from_offsets(inner, v))
    assert y.max(axis=-1, keepdims=True).eval().to_list() == [[], [[3], [11], [29]]]
    # elementwise work, a second array over the same outer rows, a fixed dim broadcast
    w = lazyk.from_offsets(outer, lazyk.from_offsets(inner, v * 2))
    got = (x * 3 - w).mean(axis=-1).eval().to_list()
    want = [[1.0, None], [], [3.0, 7.5, 20.5]]
    assert [[None if g != g else g for g in r] for r in got] == want


def test_var_var_bad_offsets_name_the_row():
    v = np.arange(6.0)
    bad_outer = lazyk.from_offsets(np.array([0, 2, 1, 3]),
                                   lazyk.from_offsets(np.array([0, 1, 3, 6]), v))
    with pytest.raises(lazyk.ArrayConstructionError, match="row 1 "):
        bad_outer.sum(axis=-1).eval()
    bad_inner = lazyk.from_offsets(np.array([0, 2, 2, 3]),
                                   lazyk.from_offsets(np.array([0, 1, 3, 2]), v))
    with pytest.raises(lazyk.ArrayConstructionError, match=r"row \[2, 0\]"):
        bad_inner.sum(axis=-1).eval()
    inner = np.array([0, 1, 3, 6])
    past = lazyk.from_offsets(np.array([0, 2, 2, 3]), lazyk.from_offsets(inner, v))
    inner[3] = 9  # changed after construction: past the content
    with pytest.raises(lazyk.ArrayConstructionError, match=r"row \[2, 0\]"):
        past.sum(axis=-1).eval()


GUARDED = textwrap.dedent("""
    import ctypes, mmap
    import numpy as np
    import lazyk
    PAGE = mmap.PAGESIZE
    libc = ctypes.CDLL(None)
    mem = mmap.mmap(-1, 3 * PAGE)
    base = ctypes.addressof(ctypes.c_char.from_buffer(mem))
    for p in (0, 2):  # guard pages before and after the content page
        assert libc.mprotect(ctypes.c_void_p(base + p * PAGE), PAGE, 0) == 0
    v = np.frombuffer(mem, np.float64, PAGE // 8, PAGE)  # the whole middle page
    v[:] = np.arange(len(v)) % 7
    rng = np.random.default_rng(3)
    for trial in range(30):
        lens = rng.integers(0, 41, 200)
        off = np.concatenate([[0], np.cumsum(lens)])
        off = off[off <= len(v)]
        off[-1] = len(v)  # the last row ends at the page's end
        x = lazyk.from_offsets(off, v)
        got = np.array(x.sum(axis=-1).eval().to_list())
        want = np.array([v[a:b].sum() for a, b in zip(off[:-1], off[1:])])
        assert np.allclose(got, want), trial
        got = np.array(lazyk.cos(x).sum(axis=-1).eval().to_list())  # blocks of values
        assert np.allclose(got, [np.cos(v[a:b]).sum() for a, b in zip(off[:-1], off[1:])])
        y = lazyk.from_offsets(np.array([0, 1, len(off) - 1]), x)
        assert np.allclose(np.concatenate(y.max(axis=-1, initial=-1.0).eval().to_list()),
                           [max(v[a:b].max(initial=-1.0), -1.0)
                            for a, b in zip(off[:-1], off[1:])])
    print("ok")
""")


@pytest.mark.skipif(sys.platform == "win32", reason="mprotect guard pages")
def test_windows_stay_inside_the_content():
    """Content between two PROT_NONE pages: a window read outside it would crash."""
    r = subprocess.run([sys.executable, "-c", GUARDED], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


def test_elementwise_over_one_offsets_array_has_no_count_pass():
    """The result's rows are the operands' rows: no count pass; the fill pass still checks
    every row (offsets changed after construction are caught)."""
    off = np.array([2, 4, 4, 9])
    v = np.arange(10.0)
    x, y = lazyk.from_offsets(off, v), lazyk.from_offsets(off, v[::-1].copy())
    runs = nest_kernel.nest_stats["runs"]
    got = (x * y - x.mean(axis=-1, keepdims=True)).eval()
    assert nest_kernel.nest_stats["runs"] - runs == 2  # the mean, then the elementwise fill
    assert str(got.type) == "3 * var * float64"
    want = [[v[a:b] * v[::-1][a:b] - (v[a:b].mean() if b > a else 0)
             for a, b in zip(off[:-1], off[1:])]]
    assert [np.allclose(g, w) for g, w in zip(got.to_list(), want[0])] == [True] * 3
    off[2] = 1  # a decreasing offset now
    with pytest.raises(lazyk.ArrayConstructionError, match="row 1 "):
        (x * 2).eval()
