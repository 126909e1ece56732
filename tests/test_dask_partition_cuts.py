"""Dask over ragged data gives one machine's answer whatever the partition cuts: every
reduction over the rows' axis (every op, axes with 0, skipna, keepdims, initial), on every
`rows_per_part` from 1 to N and a tree of pairwise combines, must give the value, dtype,
type and missing state of `lazyk` on one machine, or raise the same class of error."""
from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

dask = pytest.importorskip("dask")

import lazyk  # noqa: E402,I001
import lazyk.dask as ldask  # noqa: E402
from lazyk.dask import folds, partitions  # noqa: E402
from tests import ragged_reference as R  # noqa: E402
from tests import ragged_strategies as S  # noqa: E402
from tests.test_dask_ragged import same  # noqa: E402

LAYOUTS = ("N * var * T", "N * var * var * T", "N * ?var * var * T", "N * var * ?var * T",
           "N * var * 2 * var * T")
OPS = ("sum", "prod", "min", "max", "any", "all", "mean", "count")


@pytest.fixture(autouse=True)
def _sync_scheduler():
    with dask.config.set(scheduler="sync"):
        yield


def _skeleton(draw, dims, level=0):
    """`ragged_strategies.skeleton` with more length-1 and empty rows: rows of length 1
    pair within a partition where a later partition's empty row empties their level."""
    if level == len(dims):
        return None
    d = dims[level]
    if d.startswith("?") and draw(st.integers(0, 4)) == 0:
        return "MISSING"
    n = int(d) if d.isdigit() else draw(st.sampled_from([0, 1, 1, 1, 2, 3]))
    return [_skeleton(draw, dims, level + 1) for _ in range(n)]


@st.composite
def cases(draw, layouts=LAYOUTS):
    """(type, data, op, axis, keepdims, skipna, initial): up to 5 outer rows."""
    dims = [str(draw(st.integers(0, 5)))] + draw(st.sampled_from(layouts)).split(" * ")[1:-1]
    dtype = draw(st.sampled_from(("float64", "int64", "int32", "bool")))
    option = draw(st.booleans())
    data = S.fill(draw, _skeleton(draw, dims), dtype, option, False, 0, len(dims))
    op = draw(st.sampled_from(OPS))
    nd = len(dims)
    rest = draw(st.sets(st.integers(1, nd - 1), max_size=nd - 1))
    axis = draw(st.sampled_from([0, None, tuple(sorted({0} | rest))]))
    initial = None
    if op in ("min", "max") and dtype != "bool" and draw(st.booleans()):
        initial = draw(st.integers(-3, 3))
    return (S.type_string(dims, dtype, option), data, op, axis, draw(st.booleans()),
            draw(st.booleans()), initial)


def _fn(op, axis, keepdims, skipna, initial):
    if op == "count":
        return lambda v: lazyk.count(v, axis=axis, keepdims=keepdims)
    extra = {} if initial is None else {"initial": initial}
    return lambda v: getattr(v, op)(axis=axis, keepdims=keepdims, skipna=skipna, **extra)


def _answer(compute):
    """A result as (type, values, dtype) or an error as its class."""
    try:
        got = compute()
    except (ValueError, lazyk.NotSupportedError) as err:
        return type(err)
    if isinstance(got, (np.ndarray, np.generic)):
        got = lazyk.array(np.asarray(got))
    return str(got.type), got.to_list(), got.dtype


def _agree(got, want, where):
    if isinstance(want, type):
        assert got is want, (where, got, want)
        return
    assert not isinstance(got, type), (where, got, want)
    assert got[0] == want[0] and got[2] == want[2], (where, got, want)
    assert same(got[1], want[1]), (where, got[1], want[1])


def _every_cut(t, data, fn, refused=False):
    """fn on one machine, then on Dask at every rows_per_part (and a pairwise tree);
    `refused`: Dask may refuse the form by name (NotSupportedError) on every cut."""
    a = lazyk.array(data, type=t)
    want = _answer(lambda: fn(a).eval())
    n = a.type.size
    for step, every in itertools.chain(((k, None) for k in range(1, n + 1)), [(1, 2)]):
        x = ldask.from_ragged(a, step)
        got = _answer(lambda: ldask.evaluate(fn(x), split_every=every).compute())
        if refused and got is lazyk.NotSupportedError:
            continue
        _agree(got, want, (t, data, step, every))
    return want


@settings(max_examples=20, deadline=None)
@given(cases())
def test_rows_axis_folds_do_not_depend_on_the_cuts(case):
    t, data, op, axis, keepdims, skipna, initial = case
    want = _every_cut(t, data, _fn(op, axis, keepdims, skipna, initial))
    if isinstance(want, type) and want is not lazyk.NotSupportedError:
        return
    try:  # one machine follows the reference (where the reference has an answer)
        ref = R.reduce(op, R.array(data, t), axis=axis, keepdims=keepdims, skipna=skipna,
                       initial=initial)
    except ValueError:
        return
    if not isinstance(want, type):
        assert want[0] == str(ref.type) and same(want[1], ref.data)


@pytest.mark.parametrize("t, data, axis", [
    ("3 * var * var * int64", [[[0, 0, 0]], [[]], []], 0),
    ("3 * var * var * int64", [[[0, 0, 0]], [[1, 2]], []], 0),
    ("3 * var * var * var * int64", [[[[1, 2]]], [[[3, 4, 5]]], []], 0),
    ("3 * var * var * var * int64", [[[[1, 2]]], [[[3, 4, 5]]], [[[]]]], (0, 1)),
    ("4 * ?var * var * ?int64", [[[1, 2]], None, [[3, None, 5]], []], 0),
    ("3 * var * 2 * var * int64", [[[[1, 2], [3]]], [[[4, 5, 6], [7]]], []], 0),
    ("3 * var * 2 * var * int64", [[[[1, 2], [3]]], [[[4, 5, 6], [7]]], []], (0, 2)),
])
def test_rows_a_later_partition_empties_are_never_paired(t, data, axis):
    """Rows that pair within a partition, but whose level a later partition's rows
    broadcast to length 0, never meet on one machine: Dask gives the same answer."""
    for op, skipna in (("sum", False), ("max", True), ("count", False)):
        _every_cut(t, data, _fn(op, axis, False, skipna, None))


# Folds whose partials are `?n` rows (results, not operands) or hold rows of fixed size 0.
ONCE_REFUSED = ("N * ?var * 2 * var * T", "N * ?var * 2 * T", "N * ?var * 0 * T",
                "N * var * 0 * T", "N * var * ?var * 0 * T")


@settings(max_examples=20, deadline=None)
@given(cases(layouts=ONCE_REFUSED))
def test_folds_over_missing_rows_against_fixed_dims_as_one_machine(case):
    t, data, op, axis, keepdims, skipna, initial = case
    # a mean over `?n` results (sum / count of results that are not operands) is refused
    want = _every_cut(t, data, _fn(op, axis, keepdims, skipna, initial),
                      refused=op == "mean")
    assert want is not lazyk.NotSupportedError or op == "mean" or "0 *" in t, (t, op, axis)


def test_partitions_with_rows_of_size_0_and_deferred_rows_pickle():
    a = lazyk.array([[[]], None, [[], []]], type="3 * ?var * 0 * float64")
    x = ldask.from_ragged(a, 2)
    assert x.compute().to_list() == a.to_list()
    for p in x.__dask_graph__().values():
        back = pickle.loads(pickle.dumps(p))
        assert str(back.array.type) == str(p.array.type)
        assert back.array.to_list() == p.array.to_list()
    rows = folds.Raw([partitions.Part(lazyk.array([[[1, 2]], [[3, 4, 5]]]), 4, 6)])
    back = pickle.loads(pickle.dumps(rows))
    assert back.parts[0].array.to_list() == [[[1, 2]], [[3, 4, 5]]]
    assert (back.parts[0].start, back.parts[0].stop) == (4, 6)
    got = ldask.evaluate(ldask.from_ragged(a, 1).sum(axis=(0, 1), skipna=True)).compute()
    assert got.dtype == np.float64 and got.shape == (0,)
    got = ldask.evaluate(ldask.from_ragged(a, 1).sum(axis=(0, 1))).compute()
    assert str(got.type) == "?0 * ?float64" and got.to_list() is None


def test_deferred_rows_keep_one_machines_error_and_row():
    """Rows that do not pair raise one machine's error, naming the collection's row: in
    the step that sees every partition's rows (a partition hands on rows that do not pair,
    whether or not a length-1 row above them might be stretched to nothing)."""
    for rows, t in (([[1, 2]] * 5 + [[1, 2, 3]], "6 * var * int64"),
                    ([[[1, 2]]] * 5 + [[[1, 2, 3]]], "6 * var * var * int64")):
        _same_error(lazyk.array(rows, type=t))


@pytest.mark.parametrize("rows, t, kw", [
    ([[1, 2, 3], [1, 2, 3], [1, 2], [1, 2, 3, 4], [5], [1, 2]], "6 * var * int64", {}),
    ([[1, 2, 3, 4], [], [1, 2, 3, 4], [1, 2], [1, 2, 3], [5, 6]], "6 * var * int64", {}),
    ([[1, 2, 3, 4], [1, 2], [1, 2, 3, 4], [1, 2], [1], [1, 2, 3], [5, 6], [1, 2, 3]],
     "8 * var * float64", {}),
    ([[[1, 2]], [[1, 2, 3]], [[1], [2]], [[1, 2, 3, 4]]], "4 * var * var * int64", {}),
    ([[[1, 2]], [[1, 2]], [[1], [2, 3]], [[1, 2, 3, 4]]], "4 * var * var * int64",
     {"skipna": True}),
    ([[1, 2, 3, 4], None, [], [1, 2, 3, 4], [1, 2], [1]], "6 * ?var * int64", {}),
    ([[1, 2, 3, 4], None, [], [1, 2, 3, 4], [1, 2], [1]], "6 * ?var * int64",
     {"skipna": True}),
    ([[[1, 2]], None, [[1, 2, 3]], [[1], None], [[1, 2, 3, 4]]], "5 * ?var * ?var * int64",
     {}),
])
@pytest.mark.parametrize("scheduler", ["sync", "threads"])
def test_several_failing_partitions_raise_one_machines_first_row(rows, t, kw, scheduler):
    """Where several partitions (or a later one alone) hold rows that do not fold, the
    error is one machine's, naming the first row that does not fold, whatever the cuts,
    the combine tree and the order the scheduler runs the partitions in."""
    a = lazyk.array(rows, type=t)
    with pytest.raises(lazyk.ShapeError) as one:
        a.sum(axis=0, **kw).eval()
    with dask.config.set(scheduler=scheduler):
        for step, every in itertools.product(range(1, a.type.size + 1), (None, 2)):
            for _ in range(3):
                with pytest.raises(lazyk.ShapeError) as got:
                    ldask.evaluate(ldask.from_ragged(a, step).sum(axis=0, **kw),
                                   split_every=every).compute()
                assert str(got.value) == str(one.value), (step, every)


def _same_error(a):
    with pytest.raises(lazyk.ShapeError) as one:
        a.sum(axis=0).eval()
    for step in (1, 2, 4):
        with pytest.raises(lazyk.ShapeError) as got:
            ldask.evaluate(ldask.from_ragged(a, step).sum(axis=0)).compute()
        assert str(got.value) == str(one.value)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_indexing_a_collection_as_one_machine(data):
    """`r[a:b:c]`, `r[:, k]`, `r[i]`, `r[i, k]`: the same type, values and errors as the
    lazyk array on one machine; slices are collections cut by the partitions they reach."""
    layout = data.draw(st.sampled_from(("N * var * T", "N * ?var * T", "N * var * var * T",
                                        "N * 2 * var * T")))
    dims = [str(data.draw(st.integers(0, 6)))] + layout.split(" * ")[1:-1]
    option = data.draw(st.booleans())
    values = S.fill(data.draw, _skeleton(data.draw, dims), "float64", option, False, 0,
                    len(dims))
    a = lazyk.array(values, type=S.type_string(dims, "float64", option))
    n = a.type.size
    bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
    outer = data.draw(st.one_of(st.integers(-n, n - 1) if n else st.nothing(),
                                st.builds(slice, bound, bound,
                                          st.one_of(st.none(), st.integers(1, 3)))))
    inner = data.draw(st.sampled_from([(), (slice(1, None),), (0,), (-1,), (slice(None, 1),)]))
    key = (outer,) + inner
    x = ldask.from_ragged(a, data.draw(st.integers(1, max(n, 1))))
    try:
        want = a[key]
    except (IndexError, lazyk.NotSupportedError) as err:
        with pytest.raises(type(err)):
            x[key].compute()
        return
    got = x[key].compute()
    want = want if isinstance(want, lazyk.Array) else lazyk.array(want)
    got = got if isinstance(got, lazyk.Array) else lazyk.array(got)
    assert str(got.type) == str(want.type) and same(got.to_list(), want.to_list())
    assert str(x[key].type) == str(want.type) or not isinstance(outer, slice)
    if isinstance(outer, slice) and inner == ():  # an operand: the partitions' views
        s = ldask.evaluate(x[key].sum(axis=-1)).compute()
        s = s.to_list() if isinstance(s, lazyk.Array) else np.asarray(s).tolist()
        assert same(s, want.sum(axis=-1).eval().to_list())


def test_indexing_refusals_name_the_key():
    x = ldask.from_ragged(lazyk.array([[1.0], [2.0, 3.0], []]), 2)
    with pytest.raises(lazyk.NotSupportedError, match="negative steps"):
        x[::-1]
    with pytest.raises(IndexError, match="out of bounds"):
        x[3]
    with pytest.raises(lazyk.NotSupportedError, match="an int or a slice"):
        x[..., 0]
    assert x[1:].row_counts == (1, 1) and x[2:].row_counts == (1,)
    assert ldask.evaluate(x[1:] * 2).compute().to_list() == [[4.0, 6.0], []]


def test_rows_form_of_views_and_partials():
    """Rows that go on unfolded take the fold's dtype, their folded fixed dims made var
    (a partial's 1 and the rows' n then fold together), views read from their own rows."""
    a = lazyk.array([[[[1], [2, 3]]], [[[4, 5], [6]]], [[[7], [8]], [[9], []]]],
                    type="3 * var * 2 * var * int32")[1:]
    r = folds.raw_form(a, ("sum", (0, 2), True), "int64")
    assert str(r.type) == "2 * var * var * var * int64"
    assert r.to_list() == [[[[4, 5], [6]]], [[[7], [8]], [[9], []]]]
    b = lazyk.array([[[]], [[], []], [[]]], type="3 * var * 0 * float64")[1:]
    r = folds.raw_form(b, ("max", (0, 2), True), "float64")
    assert str(r.type) == "2 * var * var * float64" and r.to_list() == [[[], []], [[]]]
    c = lazyk.array([[True], [False, True]], type="2 * var * bool")
    r = folds.raw_form(c, ("sum", (0,), True), "int64")
    assert str(r.type) == "2 * var * int64" and r.to_list() == [[1], [0, 1]]
