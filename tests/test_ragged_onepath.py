"""Forms that run in the generated loop nest itself: stepping and sliced views of var rows
(`x[:, ::2]`, `x[:, ::-1]`, `x[:, 1:]`, `x[::-1]`) over every nest layout, leaves stored in
another dtype than the body computes in (int8 / int32 / uint16 / float32 / `>f8` against
float64, converted where loaded), means accumulated in an integer dtype, expressions over
0-d leaves; each against the plain-Python reference `tests/ragged_reference.py`, and a
structure check that none of them leaves the nest. Random windows and corrupted stepping
views never read out of bounds (a subprocess, so a crash fails one test only)."""
from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
import lazyk.arrays.memory
import lazyk.runtime.ragged
from lazyk.kernel import nest as nest_kernel
from tests import ragged_reference as R
from tests.ragged_strategies import ragged, ragged_pair

# every nest layout, the outer dim of each sliced below
LAYOUTS = ("var * T", "N * var * T", "var * var * T", "N * var * var * T",
           "3 * var * 4 * T", "var * var * var * T")
MIXED = ("int8", "int32", "uint16", "float32", ">f8")


@contextlib.contextmanager
def nest_only():
    """Fail when the loop nest does not return the result itself."""
    orig = lazyk.runtime.ragged.evaluate_nest

    def only(expr):
        got = orig(expr)
        assert got is not None, f"the nest declined {expr.node.op} over {list(expr.env)}"
        return got
    lazyk.runtime.ragged.evaluate_nest = only
    try:
        yield
    finally:
        lazyk.runtime.ragged.evaluate_nest = orig


def same(a, b) -> bool:
    """Nested lists equal, NaN equal to NaN, floats to a relative 1e-6."""
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and \
            all(same(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b or \
            math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)
    return a == b


def check(got, ref):
    got = got.eval() if isinstance(got, lazyk.Expr) else got
    if not isinstance(got, lazyk.Array):
        got = lazyk.array(got)
    assert str(got.type) == str(ref.type), (str(got.type), str(ref.type))
    assert same(got.to_list(), ref.data), (got.to_list(), ref.data)


def sliced(data, depth: int, item):
    """`item` (a slice) applied to the nested lists at `depth`."""
    if data is None:
        return None
    if depth == 0:
        return data[item]
    return [sliced(x, depth - 1, item) for x in data]


windows = st.tuples(st.sampled_from([None, -3, -1, 0, 1, 2, 5]),
                    st.sampled_from([None, -2, -1, 0, 1, 3, 9]),
                    st.sampled_from([None, 1, 2, 3, -1, -2, -3]))


def view_of(t, data, depth, win):
    """(lazyk view, reference) of `data[:, ..., slice(*win)]` at `depth` (a view where the
    layout has one: a top or fixed-prefixed var dim, or any fixed dim; else a copy)."""
    a = lazyk.array(data, type=t)
    item = slice(*win)
    v = a[(slice(None),) * depth + (item,)]
    want = sliced(data, depth, item)
    assert v.to_list() == want
    return v, R.array(want, str(v.type))


def ref_type(t: str) -> str:
    return t.replace(">float64", "float64")


# ---------------------------------------------------------------- stepping and sliced views
@settings(max_examples=20, deadline=None)
@given(ragged(layouts=LAYOUTS, dtypes=("float64", "int32", "bool"), option_rows=False),
       windows, st.data())
def test_stepping_views_elementwise_and_reductions(arr, win, data):
    t, values = arr
    nd = t.count(" * ")
    depth = data.draw(st.integers(0, nd - 1))
    v, rv = view_of(t, values, depth, win)
    with nest_only():
        check(v * 2 + 1, R.elementwise("add", R.elementwise("multiply", rv, 2), 1))
        check(v + v, R.elementwise("add", rv, rv))
        op = data.draw(st.sampled_from(["sum", "max", "mean", "any"]))
        axis = data.draw(st.sampled_from([-1, None] + ([0] if nd > 1 else [])))
        try:
            ref = R.reduce(op, rv, axis=axis, skipna=True)
        except ValueError as e:
            want = lazyk.ShapeError if isinstance(e, lazyk.ShapeError) else ValueError
            with pytest.raises(want):
                getattr(v, op)(axis=axis, skipna=True).eval()
            return
        check(getattr(v, op)(axis=axis, skipna=True), ref)


@settings(max_examples=20, deadline=None)
@given(ragged_pair(layouts=LAYOUTS, broadcast=True, option_rows=False), windows, st.data())
def test_stepping_views_pair_with_other_operands(pair, win, data):
    ta, da, tb, db = pair
    nd = ta.count(" * ")
    depth = data.draw(st.integers(0, nd - 1))
    a, ra = view_of(ta, da, depth, win)
    b, rb = view_of(tb, db, depth, win)
    with nest_only():
        try:
            ref = R.where(R.elementwise("greater", ra, 0), ra, rb)
        except lazyk.ShapeError:
            with pytest.raises(lazyk.ShapeError):
                lazyk.where(a > 0, a, b).eval()
            return
        check(lazyk.where(a > 0, a, b), ref)
        check((a - b).sum(axis=-1, skipna=True),
              R.reduce("sum", R.elementwise("subtract", ra, rb), axis=-1, skipna=True))


def test_stepping_views_by_hand():
    x = lazyk.array([[1.0, 2.0, 3.0], [], [4.0, 5.0]], type="3 * var * float64")
    y = lazyk.array([1.0, 2.0, 3.0, 4.0, 5.0], type="var * float64")
    f = lazyk.array([[[1, 2, 3, 4]], [], [[5, 6, 7, 8], [9, 10, 11, 12]]],
                    type="3 * var * 4 * int32")
    with nest_only():
        assert (x[:, ::2] + 1).eval().to_list() == [[2.0, 4.0], [], [5.0]]
        assert (x[:, ::-1] * 1).eval().to_list() == [[3.0, 2.0, 1.0], [], [5.0, 4.0]]
        assert (x[:, 1:] + x[:, :-1]).eval().to_list() == [[3.0, 5.0], [], [9.0]]
        assert x[:, ::-2].sum(axis=-1).eval().to_list() == [4.0, 0.0, 5.0]
        assert (y[::-1] - 1).eval().to_list() == [4.0, 3.0, 2.0, 1.0, 0.0]
        assert y[::3].max().eval().to_list() == 4.0
        got = (f[:, ::-1] + 0).eval()
        assert str(got.type) == "3 * var * 4 * int32"
        assert got.to_list() == [[[1, 2, 3, 4]], [], [[9, 10, 11, 12], [5, 6, 7, 8]]]
        assert f[:, ::-1].sum(axis=1).eval().to_list() == \
            [[1, 2, 3, 4], [0, 0, 0, 0], [14, 16, 18, 20]]


def test_stepping_views_run_in_the_nest():
    x = lazyk.array([[1.0, 2.0, 3.0], [4.0]], type="2 * var * float64")
    text = (x[:, ::-1] + 1).explain()
    assert "loop-nest kernels" in text and "stepping view" in text
    # the window is part of the structure: unsliced rows compile their own kernel, and a
    # second stepping view of other sizes and steps compiles nothing
    (x[:, ::2] * 3).eval()
    before = nest_kernel.nest_stats["compiles"]
    y = lazyk.array([[1.0] * 7, [], [2.0, 3.0]], type="3 * var * float64")
    assert (y[:, ::-3] * 3).eval().to_list() == [[3.0, 3.0, 3.0], [], [9.0]]
    assert nest_kernel.nest_stats["compiles"] == before
    assert "stepping view" not in (x + 1).explain()


# ---------------------------------------------------------------- leaves in other dtypes
def mixed_array(t: str, data, dtype: str):
    """`data` of type `t` stored as `dtype` (NumPy spelling; `>f8` byte-swapped); unsigned
    dtypes take the absolute values. Returns (the array, its reference)."""
    dims, leaf = t.rsplit(" * ", 1)
    if dtype.startswith("u"):
        data = _map(data, abs)
    name = ("?" if leaf.startswith("?") else "") + {">f8": ">float64"}.get(dtype, dtype)
    a = lazyk.array(data, type=dims + " * " + name)
    return a, R.array(data, ref_type(str(a.type)))


def _map(data, fn):
    if isinstance(data, list):
        return [_map(x, fn) for x in data]
    return None if data is None else fn(data)


@settings(max_examples=20, deadline=None)
@given(ragged_pair(layouts=LAYOUTS, dtypes=("int32",), broadcast=True, option_rows=False),
       st.sampled_from(MIXED), st.data())
def test_leaves_in_other_dtypes_convert_where_loaded(pair, dtype, data):
    ta, da, tb, db = pair
    a, ra = mixed_array(ta, da, dtype)
    b = lazyk.array(db, type=tb.replace("int32", "float64"))
    rb = R.array(db, str(b.type))
    assert str(a.type).endswith(dtype.replace(">f8", ">float64"))
    with nest_only():
        try:
            ref = R.elementwise("add", ra, rb)
        except lazyk.ShapeError:
            with pytest.raises(lazyk.ShapeError):
                (a + b).eval()
            return
        check(a + b, ref)
        check(a * 1.5, R.elementwise("multiply", ra, 1.5))
        op = data.draw(st.sampled_from(["sum", "min", "mean", "prod"]))
        try:
            ref = R.reduce(op, R.elementwise("subtract", rb, ra), axis=-1, skipna=True)
        except ValueError:
            with pytest.raises(ValueError):
                getattr(b - a, op)(axis=-1, skipna=True).eval()
            return
        check(getattr(b - a, op)(axis=-1, skipna=True), ref)


def test_byte_swapped_and_narrow_offsets_leaves_by_hand():
    off = np.array([0, 3, 3, 5])
    big = lazyk.from_offsets(off, np.array([1.0, 2, 3, 4, 5], ">f8"))
    small = lazyk.from_offsets(off.astype(np.int32), np.array([1, -2, 3, 4, 5], np.int8))
    u = lazyk.from_offsets(off, np.array([1, 2, 3, 4, 65535], np.uint16))
    with nest_only():
        assert (big + small).eval().to_list() == [[2.0, 0.0, 6.0], [], [8.0, 10.0]]
        assert (u * 1.0).eval().to_list() == [[1.0, 2.0, 3.0], [], [4.0, 65535.0]]
        assert (big[:, ::-1] * small).eval().to_list() == [[3.0, -4.0, 3.0], [], [20.0, 20.0]]
        got = small.sum(axis=-1).eval()
        assert str(got.type) == "3 * int64" and got.to_list() == [2, 0, 9]


def test_compile_converts_other_input_dtypes_in_the_nest():
    x = lazyk.placeholder("x", "N * var * float64")
    k = lazyk.compile(x * 0.5 + x.sum(axis=-1, keepdims=True))
    ints = lazyk.array([[1, 2], [3], []], type="3 * var * int32")
    with nest_only():
        got = k(ints[:, ::-1])
    assert got.to_list() == [[4.0, 3.5], [4.5], []]
    assert str(got.type) == "3 * var * float64"


# ---------------------------------------------------------------- integer means
def int_mean_ref(ra, axis, skipna, dtype):
    """NumPy's mean in an integer dtype: the sum in that dtype, divided in float64,
    truncated back; None when nothing (or a missing value without skipna) was folded;
    "empty" when a result of input without options folds nothing."""
    rtype = np.dtype(dtype)
    cast = R.RArray(R.RType(ra.type.dims, rtype, ra.type.option), _cast(ra.data, rtype))
    s = R.reduce("sum", cast, axis=axis, skipna=skipna)
    n = R.reduce("count", ra, axis=axis)
    option = s.type.option or ra.type.option

    def div(a, c):
        if isinstance(a, list):
            return [div(x, y) for x, y in zip(a, c)]
        if a is None or c == 0:
            if not option:
                raise ValueError("empty")
            return None
        return int(np.float64(a) / c) if c > 1 else a
    t = R.RType(s.type.dims, rtype, option)
    return R.RArray(t, div(s.data, n.data))


def _cast(data, dtype):
    if isinstance(data, list):
        return [_cast(x, dtype) for x in data]
    return None if data is None else np.asarray(data).astype(dtype).item()


@settings(max_examples=20, deadline=None)
@given(ragged(layouts=LAYOUTS, dtypes=("int32", "int64", "float64"), option_rows=False),
       st.sampled_from(["int64", "int32", "int16", "uint32"]), st.booleans(), st.data())
def test_means_accumulated_in_an_integer_dtype(arr, dtype, skipna, data):
    t, values = arr
    a, ra = lazyk.array(values, type=t), R.array(values, t)
    nd = ra.type.ndim
    axis = data.draw(st.sampled_from([-1, None] + list(range(nd - 1))))
    if dtype.startswith("u"):  # NumPy's unsigned casts of negative values are not C's
        a, ra = abs(a), R.elementwise("absolute", ra)
    try:
        ref = int_mean_ref(ra, axis, skipna, dtype)
    except ValueError as e:
        want = lazyk.ShapeError if isinstance(e, lazyk.ShapeError) else ValueError
        with pytest.raises(want, match=None if want is lazyk.ShapeError else "zero-size"):
            a.mean(axis=axis, skipna=skipna, dtype=dtype).eval()
        return
    with nest_only():
        check(a.mean(axis=axis, skipna=skipna, dtype=dtype), ref)


def test_integer_means_by_hand_match_numpy():
    rows = [[1, 2, 4], [-3, -4], [7]]
    a = lazyk.array(rows, type="3 * var * int32")
    with nest_only():
        got = a.mean(axis=-1, dtype="int64").eval()
        assert str(got.type) == "3 * int64"
        assert got.to_list() == [int(np.mean(r, dtype=np.int64)) for r in rows] == [2, -3, 7]
        assert a.mean(dtype="int64").eval().to_list() == \
            int(np.mean(sum(rows, []), dtype=np.int64))
        m = lazyk.array([[1, None, 2], [None], []], type="3 * var * ?int32")
        assert m.mean(axis=-1, skipna=True, dtype="int64").eval().to_list() == [1, None, None]
    with pytest.raises(ValueError, match="zero-size row 1"):
        lazyk.array([[1], []], type="2 * var * int32").mean(axis=-1, dtype="int64").eval()


# ---------------------------------------------------------------- 0-d leaves
def test_work_on_whole_reductions_runs_in_the_nest():
    x = lazyk.array([[1.0, 2.0], [3.0]], type="2 * var * float64")
    q = lazyk.array([[1.0, None], [2.0]], type="2 * var * ?float64")
    with nest_only():
        got = (x.sum() + 1).eval()
        assert str(got.type) == "float64" and got.to_list() == 7.0
        assert (q.sum() + 1).eval().to_list() is None
        got = (q.sum(skipna=True) * 2).eval()
        assert str(got.type) == "float64" and got.to_list() == 6.0
        got = lazyk.where(q.max() > 1, q.min(skipna=True), 3.0).eval()
        assert str(got.type) == "?float64" and got.to_list() is None
        got = (x - x.mean()).eval()
        assert got.to_list() == [[-1.0, 0.0], [1.0]]


def test_a_fixed_zero_between_var_dims():
    x = lazyk.array([[[], []], [[]]], type="2 * var * 0 * var * float64")
    with nest_only():
        got = (x + 1).eval()
    assert str(got.type) == "2 * var * 0 * var * float64"
    assert got.to_list() == [[[], []], [[]]]


# ---------------------------------------------------------------- slicing fuzz
def fuzz_windows(seed: int, rounds: int) -> dict:
    """Random windows of random arrays (sentinel-padded content: a read past it is a NaN
    the reference lacks), their arrmeta corrupted and their {start, stop} pairs
    overwritten: every answer is the reference's over what `to_list` reads, or a clear
    error."""
    from tests.test_ragged_fuzz import base_arrays, corruptions, expressions, run_case
    rng = np.random.default_rng(seed)
    exprs = expressions()
    fails, counts = [], {"views": 0, "cases": 0}
    picks = [None, -5, -2, -1, 0, 1, 2, 3, 7]
    for _ in range(rounds):
        for kind, a, _ in base_arrays(rng):
            if "?var" in str(a.type):
                continue  # no stepping views under a kept option dim
            for _ in range(3):
                step = int(rng.choice([1, 2, 3, -1, -2, -3]))
                item = slice(rng.choice(picks), rng.choice(picks), step)
                v = a[:, item] if rng.random() < 0.7 else a[int(rng.integers(0, a.meta[0]))
                                                            if a.meta[0] else 0, item]
                counts["views"] += 1
                variants = [("view", lambda v=v: v)]
                variants += [(n, lambda t=t, m=m, p=p, v=v: lazyk.Array.from_parts(
                    t, m, p, v.owner, v.readonly)) for n, t, m, p in
                    (corruptions(v, rng) if str(v.type).count(" * ") == 2 else [])]
                if isinstance(v.owner, lazyk.arrays.memory.MemoryBlock) and v.owner.size >= 16:
                    pairs = v.owner.buffer[:v.owner.size // 16 * 16].view(np.int64)
                    length = v.meta[6] if str(v.type).count(" * ") == 1 else v.meta[8]
                    for val in (-1, length - 1, length, length + 1, 1 << 40, -(1 << 40)):
                        def write(i=int(rng.integers(0, len(pairs))), val=val, v=v,
                                  keep=pairs.copy(), pairs=pairs):
                            pairs[...] = keep
                            pairs[i] = val
                            return v
                        variants.append((f"pair write {val}", write))
                for n, make in variants:
                    counts["cases"] += 1
                    try:
                        x = make()
                    except (ValueError, lazyk.NotSupportedError, TypeError):
                        continue
                    fails += [f"{kind}[{item}] / {n}: {f}" for f in run_case(x, exprs)]
    return {"counts": counts, "fails": fails[:20], "nfails": len(fails)}


def test_random_windows_never_read_out_of_bounds_in_a_subprocess():
    code = ("import json, sys; from tests.test_ragged_onepath import fuzz_windows; "
            "print(json.dumps(fuzz_windows(int(sys.argv[1]), int(sys.argv[2]))))")
    proc = subprocess.run([sys.executable, "-c", code, "11", "1"], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ),
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert proc.returncode == 0, f"the fuzz process died ({proc.returncode}): " \
                                 f"{proc.stderr[-2000:]}"
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["nfails"] == 0, "\n".join(report["fails"])
    assert report["counts"]["cases"] > 100, report["counts"]
