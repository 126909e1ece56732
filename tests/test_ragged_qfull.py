"""Missing rows (`?var`) in the loop nest, against the plain-Python reference.

The forms here run in the generated loop nest (checked with the kernel recorder), and every
drawn case must match `tests/ragged_reference.py` (type string, values, missing rows and
values) or raise the same error: a last `?var` under fixed dims (`N * ?var * T`,
`3 * N * ?var * ?T`, `?var * T`), empty arrays, empty rows and length-1 rows included.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lazyk
from lazyk.runtime.ragged_rules import RECORDERS
from tests import ragged_reference as R
from tests import ragged_strategies as S
from tests.test_ragged_today import LAZYK_REDUCERS, RA, L, check

QV = S.QVAR_LAYOUTS
BINARY = ("add", "subtract", "multiply", "maximum", "greater")


def in_nest(ref_fn, lazyk_fn) -> str:
    """`check` that lazyk matches the reference (or raises alike), every kernel that ran
    being a loop-nest kernel."""
    rec: list = []
    RECORDERS.append(rec)
    try:
        got = check(ref_fn, lazyk_fn)
    finally:
        RECORDERS.remove(rec)
    assert got in ("match", "raises"), f"lazyk refused: {got}"
    if got == "match":
        assert rec and all(r[0] == "nest" for r in rec), f"not in the loop nest: {rec}"
    return got


# ---------------------------------------------------------------- a last ?var under fixed dims
@given(S.ragged_pair(layouts=QV, own_rows=True), st.sampled_from(BINARY))
def test_last_qvar_binary(pair, op):
    t1, d1, t2, d2 = pair
    in_nest(lambda: R.elementwise(op, RA(t1, d1), RA(t2, d2)),
            lambda: getattr(lazyk, op)(L(t1, d1), L(t2, d2)))


@given(S.ragged_pair(layouts=QV, own_rows=True, broadcast=True), st.sampled_from(BINARY))
def test_last_qvar_length_1_rows(pair, op):
    t1, d1, t2, d2 = pair
    in_nest(lambda: R.elementwise(op, RA(t1, d1), RA(t2, d2)),
            lambda: getattr(lazyk, op)(L(t1, d1), L(t2, d2)))


@given(S.ragged(layouts=QV, nan=True), st.sampled_from(LAZYK_REDUCERS), st.booleans(),
       st.booleans())
def test_last_qvar_last_axis_reductions(case, op, keepdims, skipna):
    t, d = case
    kw = {} if op == "count" else {"skipna": skipna}
    in_nest(lambda: R.reduce(op, RA(t, d), -1, keepdims=keepdims, skipna=skipna),
            lambda: getattr(lazyk, op)(L(t, d), axis=-1, keepdims=keepdims, **kw))


@pytest.mark.parametrize("t, data", [
    ("0 * ?var * float64", []), ("2 * 0 * ?var * ?int32", [[], []]),
    ("3 * ?var * float64", [[], None, [1.5]]), ("2 * ?var * int32", [None, None]),
    ("?var * float64", None), ("?var * float64", []), ("?var * ?float64", [None])])
def test_last_qvar_empty_and_short(t, data):
    in_nest(lambda: R.elementwise("add", RA(t, data), 1), lambda: L(t, data) + 1)
    for op in ("sum", "max", "mean"):
        in_nest(lambda: R.reduce(op, RA(t, data), -1, skipna=True),
                lambda: getattr(lazyk, op)(L(t, data), axis=-1, skipna=True))


def test_last_qvar_corrupted_row_mask_offset_raises():
    x = L("3 * ?var * float64", [[1.0, 2.0], None, [3.0]])
    at = 2  # the fixed dim's 2 words, then the ?var dim's mask_offset
    meta = list(x.meta)
    for moff in (1 << 20, -(1 << 20)):
        meta[at] = moff
        with pytest.raises(ValueError, match="outside|memory|block"):
            (lazyk.Array.from_parts(x.type, tuple(meta), x.ptr, x.owner) * 2).eval()


# ---------------------------------------------------------------- where() over missing rows
QALL = QV + S.QNEST_LAYOUTS
F64 = ("float64",)  # one dtype: every layout and mask combination compiles its own kernels


@given(S.ragged_pair(layouts=QALL, dtypes=F64, own_rows=True),
       st.sampled_from(["x", "y", "both"]))
def test_where_rows_of_the_condition_and_the_branch_taken(pair, which):
    t1, d1, t2, d2 = pair

    def ref():
        x, y = RA(t1, d1), RA(t2, d2)
        cond = R.elementwise("greater", x if which != "y" else y, 0)
        return R.where(cond, y, R.elementwise("negative", x)) if which != "both" else \
            R.where(cond, x, y)

    def got():
        x, y = L(t1, d1), L(t2, d2)
        cond = (x if which != "y" else y) > 0
        return lazyk.where(cond, y, -x) if which != "both" else lazyk.where(cond, x, y)
    in_nest(ref, got)


@given(S.ragged_pair(layouts=QALL, dtypes=F64, own_rows=True, broadcast=True),
       st.booleans())
def test_where_length_1_rows_and_a_last_axis_sum(pair, skipna):
    t1, d1, t2, d2 = pair

    def ref():
        x, y = RA(t1, d1), RA(t2, d2)
        return R.where(R.elementwise("less", y, 1), x, R.elementwise("multiply", y, 3))
    in_nest(ref, lambda: lazyk.where(L(t2, d2) < 1, L(t1, d1), L(t2, d2) * 3))
    in_nest(lambda: R.reduce("sum", ref(), -1, skipna=skipna),
            lambda: lazyk.sum(lazyk.where(L(t2, d2) < 1, L(t1, d1), L(t2, d2) * 3), axis=-1,
                              skipna=skipna))


def test_where_by_hand():
    x = L("3 * ?var * float64", [[1.0, 2.0], None, [3.0]])
    y = L("3 * ?var * float64", [None, [5.0], [-1.0]])
    # row 0 takes x only; row 1: the condition's row is missing; row 2 takes y
    assert lazyk.where(x > 0, x, y).to_list() == [[1.0, 2.0], None, [3.0]]
    assert lazyk.where(x > 5, x, y).to_list() == [None, None, [-1.0]]
    e = L("3 * ?var * float64", [[], None, [1.0]])
    assert lazyk.where(e > 0, y, y).to_list() == [[], None, [-1.0]]  # nothing taken
    # a missing row above the last dim: the element taking it makes that row missing
    z = L("2 * ?var * var * float64", [None, [[1.0], [2.0, 3.0]]])
    w = L("2 * var * var * float64", [[[1.0], [-1.0, 1.0]], [[1.0], [-2.0, 4.0]]])
    r = lazyk.where(w > 0, w, z).eval()
    assert str(r.type) == "2 * ?var * var * float64"
    assert r.to_list() == [None, [[1.0], [2.0, 4.0]]]
    assert lazyk.where(w > 5, w, z).to_list() == [None, [[1.0], [2.0, 3.0]]]
    w2 = L("2 * var * var * float64", [[[1.0], [2.0, 1.0]], [[1.0], [-2.0, 4.0]]])
    assert lazyk.where(w2 > 0, w2, z).to_list() == [[[1.0], [2.0, 1.0]],
                                                    [[1.0], [2.0, 4.0]]]


# ---------------------------------------------------------------- reductions over other axes
@given(S.ragged(layouts=QALL, nan=True), st.sampled_from(LAZYK_REDUCERS), st.data())
def test_middle_and_all_axis_reductions(case, op, data):
    t, d = case
    nd = R.parse_type(t).ndim
    axis = data.draw(st.sampled_from([None, *range(nd - 1)]))
    keepdims, skipna = data.draw(st.booleans()), data.draw(st.booleans())
    kw = {} if op == "count" else {"skipna": skipna}

    def ref():
        return R.reduce(op, RA(t, d), axis, keepdims=keepdims, skipna=skipna)

    def got():
        return getattr(lazyk, op)(L(t, d), axis=axis, keepdims=keepdims, **kw)
    in_nest(ref, got)


@given(S.ragged_pair(layouts=QALL, dtypes=F64, own_rows=True), st.data())
def test_fused_middle_axis_sum_of_two(pair, data):
    t1, d1, t2, d2 = pair
    nd = R.parse_type(t1).ndim
    axis = data.draw(st.sampled_from([None, *range(nd - 1)]))
    skipna = data.draw(st.booleans())

    def ref():
        e = R.elementwise("add", R.elementwise("multiply", RA(t1, d1), 2), RA(t2, d2))
        return R.reduce("sum", e, axis, skipna=skipna)

    def got():
        return (L(t1, d1) * 2 + L(t2, d2)).sum(axis=axis, skipna=skipna)
    in_nest(ref, got)


def test_middle_axis_by_hand():
    x = L("2 * var * ?var * float64", [[[1.0, 2.0], None], [[3.0]]])
    # along axis 1 each row of rows folds: a missing row makes the result row missing,
    # or is skipped
    r = x.sum(axis=1).eval()
    assert str(r.type) == "2 * ?var * ?float64" and r.to_list() == [None, [3.0]]
    r = x.sum(axis=1, skipna=True).eval()
    assert str(r.type) == "2 * var * float64" and r.to_list() == [[1.0, 2.0], [3.0]]
    r = x.sum(axis=0).eval()
    assert str(r.type) == "var * ?var * ?float64" and r.to_list() == [[4.0, 5.0], None]
    y = L("3 * ?var * var * float64", [[[1.0, 2.0], [3.0]], None, [[1.0], [1.0, 5.0]]])
    # the missing row folded along its own axis: the result row under it is missing
    r = y.sum(axis=1, skipna=True).eval()
    assert str(r.type) == "3 * ?var * float64"
    assert r.to_list() == [[4.0, 5.0], None, [2.0, 6.0]]
    assert y.sum(axis=0).to_list() is None
    assert y.sum(axis=0, skipna=True).to_list() == [[2.0, 3.0], [4.0, 8.0]]
    assert y.sum().to_list() is None and y.sum(skipna=True).to_list() == 13.0
    assert lazyk.count(y).to_list() == 6
    with pytest.raises(lazyk.ShapeError):  # present rows must still line up
        L("3 * ?var * float64", [[1.0, 2.0], None, [1.0, 2.0, 3.0]]).sum(axis=0).eval()
    # folded along its own axis above a fixed dim: the fixed row under it is missing
    r = lazyk.sum(L("2 * ?var * 2 * float64", [[[1.0, 2.0]], None]), axis=1).eval()
    assert str(r.type) == "2 * ?2 * ?float64" and r.to_list() == [[1.0, 2.0], None]


# ---------------------------------------------------------------- lazyk.compile placeholders
def _param_type(t: str) -> str:
    """The placeholder type of a drawn type: its outermost fixed dim symbolic."""
    head, _, rest = t.partition(" * ")
    return f"N * {rest}" if head.isdigit() else t


@given(S.ragged(layouts=QALL, dtypes=("float64", "int32")), st.sampled_from(LAZYK_REDUCERS),
       st.booleans())
def test_compiled_placeholders_with_missing_rows(case, op, skipna):
    t, d = case
    x = lazyk.placeholder("x", _param_type(t))
    assert str(x.type) == _param_type(t)
    k = lazyk.compile(x * 2 + 1)
    ref = R.elementwise("add", R.elementwise("multiply", RA(t, d), 2), 1)
    assert k.signature == f"(x: {_param_type(t)}) -> {_param_type(str(ref.type))}"
    in_nest(lambda: ref, lambda: k(L(t, d)))
    kw = {} if op == "count" else {"skipna": skipna}
    r = lazyk.compile(getattr(lazyk, op)(x, axis=-1, **kw))
    if in_nest(lambda: R.reduce(op, RA(t, d), -1, skipna=skipna), lambda: r(L(t, d))) == \
            "match":
        ref = R.reduce(op, RA(t, d), -1, skipna=skipna)
        assert r.signature == f"(x: {_param_type(t)}) -> {_param_type(str(ref.type))}"


def test_compiled_placeholders_with_missing_rows_check_inputs():
    import pickle
    x = lazyk.placeholder("x", "N * ?var * float64")
    k = lazyk.compile(x * 2)
    assert k.signature == "(x: N * ?var * float64) -> N * ?var * float64"
    a = L("3 * ?var * float64", [[1.0], None, []])
    assert k(a).to_list() == [[2.0], None, []]
    k2 = pickle.loads(pickle.dumps(k))
    assert k2.signature == k.signature and k2(x=a).to_list() == [[2.0], None, []]
    for bad in (L("2 * ?var * ?float64", [[None], None]), [[1.0], [None]]):
        with pytest.raises(lazyk.TypeMatchError, match=r"expected N \* \?var \* float64"):
            k(bad)
    # ?T values of which none is missing are taken; the missing rows stay
    assert k(L("2 * ?var * ?float64", [[1.0], None])).to_list() == [[2.0], None]
    # var rows (every row present) fill a ?var parameter; the result keeps ?var
    for rows, want in ((L("2 * var * float64", [[1.0], []]), [[2.0], []]),
                       ([[1.0], [2.0]], [[2.0], [4.0]])):
        got = k(rows)
        assert str(got.type) == "2 * ?var * float64" and got.to_list() == want
    # a data leaf with missing rows is a constant of its own type
    k3 = lazyk.compile(lazyk.sum(a, axis=-1))
    assert k3.signature == "() -> 3 * ?float64"
    assert k3().to_list() == [1.0, None, 0.0]
    y = lazyk.placeholder("y", "N * var * ?var * ?int32")
    k4 = lazyk.compile(y.sum(axis=1))
    assert k4.signature == "(y: N * var * ?var * ?int32) -> N * ?var * ?int64"
    assert k4(L("2 * var * ?var * ?int32", [[[1, None], None], [[3]]])).to_list() == \
        [None, [3]]
    with pytest.raises(lazyk.BindError, match="has no data"):
        (x * 2).eval()


# ---------------------------------------------------------------- out= with missing rows
def _filled(data, dims, level=0):
    """Data of the same type with every missing row empty and every missing value 0."""
    if level == len(dims):
        return 0 if data is None else data
    if data is None:
        return []
    return [_filled(x, dims, level + 1) for x in data]


@given(S.ragged(layouts=QALL, dtypes=("float64", "int32")), st.sampled_from(["map", "sum"]),
       st.booleans())
def test_out_with_missing_rows(case, which, widen):
    t, d = case
    ref = R.elementwise("multiply", RA(t, d), 2) if which == "map" else \
        R.reduce("sum", RA(t, d), -1)
    if not any(dim.option for dim in ref.type.dims):
        return
    rtype = R.RType(ref.type.dims, np.dtype("float64") if widen else ref.type.dtype,
                    ref.type.option)
    out = L(str(rtype), _filled(ref.data, ref.type.dims))
    e = L(t, d) * 2 if which == "map" else lazyk.sum(L(t, d), axis=-1)
    assert lazyk.evaluate(e, out=out) is out
    assert str(out.type) == str(rtype)
    assert out.to_list() == ref.data


def test_out_with_missing_rows_by_hand():
    x = L("3 * ?var * float64", [[1.0, 2.0], None, [3.0]])
    o = lazyk.full("3 * ?var * float64", 9.0, lengths=[2, 5, 1])
    assert lazyk.evaluate(x * 2, out=o) is o and o.to_list() == [[2.0, 4.0], None, [6.0]]
    assert lazyk.evaluate(x + 1, out=o).to_list() == [[2.0, 3.0], None, [4.0]]
    # a var result into ?var rows: every row present again
    v = L("3 * var * float64", [[1.0, 2.0], [], [3.0]])
    o2 = lazyk.full("3 * ?var * float64", 9.0, lengths=[2, 0, 1])
    assert lazyk.evaluate(x * 2, out=o2).to_list() == [[2.0, 4.0], None, [6.0]]
    assert lazyk.evaluate(v * 2, out=o2).to_list() == [[2.0, 4.0], [], [6.0]]
    y = L("2 * var * ?var * ?float64", [[[1.0, None], None], [[3.0], [], None]])
    o3 = lazyk.full("2 * var * ?var * ?float64", 0.0, lengths=[[2, 3], [2, 7, 1, 0, 0]])
    assert lazyk.evaluate(y * 2, out=o3).to_list() == [[[2.0, None], None],
                                                       [[6.0], [], None]]
    q = L("2 * ?var * float32", [[1.0], None])
    oq = lazyk.full("2 * ?var * ?float64", 0.0, lengths=[1, 0])
    assert lazyk.evaluate(q * 2, out=oq).to_list() == [[2.0], None]


@pytest.mark.parametrize("out, err, match", [
    ("3 * var * float64", lazyk.ShapeError, r"\?var where the result has missing rows"),
    ("2 * ?var * float64", lazyk.ShapeError, "out has type"),
    ("3 * ?var * int32", lazyk.CastingError, "casting"),
])
def test_out_with_missing_rows_refuses_other_types(out, err, match):
    x = L("3 * ?var * float64", [[1.0, 2.0], None, [3.0]])
    o = lazyk.full(out, 0, lengths=[2, 0, 1][:int(out[0])])
    before = o.to_list()
    with pytest.raises(err, match=match):
        lazyk.evaluate(x * 2, out=o)
    assert o.to_list() == before  # nothing written


def test_out_with_missing_rows_checks_row_lengths_first():
    x = L("3 * ?var * float64", [[1.0, 2.0], None, [3.0]])
    o = lazyk.full("3 * ?var * float64", 0.0, lengths=[2, 0, 2])
    with pytest.raises(lazyk.ShapeError, match="result has length 1, out has length 2"):
        lazyk.evaluate(x * 2, out=o)
    assert o.to_list() == [[0.0, 0.0], [], [0.0, 0.0]]  # nothing written


# ---------------------------------------------------------------- missing rows against fixed dims
def _rows_at(data, level, depth=0):
    """The present rows at `level` of nested lists."""
    if data is None:
        return []
    if depth == level:
        return [data]
    return [r for x in data for r in _rows_at(x, level, depth + 1)]


@given(S.ragged(layouts=QALL, dtypes=S.NUMERIC), st.sampled_from(BINARY), st.booleans(),
       st.booleans())
def test_missing_rows_against_a_fixed_dim(case, op, swap, reduce):
    """A NumPy operand's fixed n against a `?var` dim gives `?n` rows (a missing row stays
    missing, a present one needs n or 1 elements)."""
    t, d = case
    dims = R.parse_type(t).dims
    k = next(i for i, dim in enumerate(dims) if dim.option)
    lengths = [len(r) for r in _rows_at(d, k)] or [2]
    n = max(set(lengths), key=lengths.count) or 2
    shape = (n,) + tuple(dim.size if not dim.var else 1 for dim in dims[k + 1:])
    a = np.arange(1, int(np.prod(shape)) + 1, dtype=np.float64).reshape(shape) / 2
    ra = R.array(a.tolist(), " * ".join([str(s) for s in shape] + ["float64"]))
    args = (RA(t, d), ra) if not swap else (ra, RA(t, d))

    def ref():
        r = R.elementwise(op, *args)
        return R.reduce("sum", r, -1) if reduce else r

    def got():
        e = getattr(lazyk, op)(*((L(t, d), a) if not swap else (a, L(t, d))))
        return lazyk.sum(e, axis=-1) if reduce else e
    in_nest(ref, got)


def test_missing_rows_against_a_fixed_dim_by_hand():
    x = L("3 * ?var * float64", [[1.0, 2.0], None, [3.0]])
    r = (x + np.ones(2)).eval()
    assert str(r.type) == "3 * ?2 * float64" and r.to_list() == [[2.0, 3.0], None, [4.0, 4.0]]
    assert lazyk.sum(x + np.ones(2), axis=-1).to_list() == [5.0, None, 8.0]
    y = L("3 * ?var * var * float64", [[[1.0, 2.0], [3.0]], None, [[1.0], []]])
    z = L("3 * 2 * var * float64", [[[1.0], [1.0]], [[5.0], [1.0, 2.0]], [[1.0], [2.0]]])
    r = (y + z).eval()
    assert str(r.type) == "3 * ?2 * var * float64"
    assert r.to_list() == [[[2.0, 3.0], [4.0]], None, [[2.0], []]]
    s = lazyk.sum(y + z, axis=-1).eval()
    assert str(s.type) == "3 * ?2 * ?float64" and s.to_list() == [[5.0, 4.0], None, [2.0, 0.0]]
    with pytest.raises(lazyk.ShapeError):  # a present row of another length
        (y + L("3 * 3 * var * float64", [[[1.0]] * 3] * 3)).eval()


def test_missing_rows_against_a_fixed_dim_of_size_0():
    """`?0` rows: each row keeps its present byte (one alignment unit of padding each)."""
    x = L("3 * ?var * float64", [[], None, []])
    r = (x + np.ones(0)).eval()
    assert str(r.type) == "3 * ?0 * float64" and r.to_list() == [[], None, []]
    y = L("2 * var * ?var * float64", [[[], None], [[]]])
    r = (y + np.ones(0)).eval()
    assert str(r.type) == "2 * var * ?0 * float64" and r.to_list() == [[[], None], [[]]]
