"""`bind()` of compiled expressions over var / option data: values against the
plain-Python reference (also after in-place changes of the inputs' values), no compile at
bind or call, `out` checked once at bind, calls from several threads at once."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
from lazyk.arrays.array import masked
from lazyk.errors import BindError, CastingError, NotSupportedError, ShapeError
from lazyk.kernel.nest import nest_stats
from tests import ragged_reference as R
from tests import ragged_strategies as S
from tests.test_ragged_reference import same
from tests.test_ragged_today import LAZYK_REDUCERS

LAYOUTS = S.LAYOUTS + S.QVAR_LAYOUTS + S.QNEST_LAYOUTS


def _in_threads(work, errors: list, n: int = 4) -> None:
    """Run `work` in n threads at once; the first error any of them recorded fails."""
    threads = [threading.Thread(target=work) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def _out_data(data, dims, level=0, fill=7):
    """Data of the reference result's structure whose every value differs from it: a
    missing var row becomes a present empty row (bind writes the row's validity), a
    missing value a present one (a missing fixed-size row stays missing)."""
    if level == len(dims):
        if data is None:
            return fill
        return (not data) if isinstance(data, (bool, np.bool_)) else data + 7
    if data is None:
        return [] if dims[level].var else None
    return [_out_data(x, dims, level + 1, fill) for x in data]


def make_out(ref):
    """An out for the reference result: NumPy for fixed results, else a lazyk array of
    the result's type and row lengths; every value differs from the answer."""
    t = ref.type
    data = _out_data(ref.data, t.dims, fill=True if t.dtype == np.bool_ else 7)
    if t.option or any(d.var or d.option for d in t.dims):
        return lazyk.array(data, type=str(t))
    return np.array(data, dtype=t.dtype).reshape([d.size for d in t.dims])


def check_bound(ref_fn, bind_fn, scalars=False, again=None) -> str:
    """'match', 'refused' or 'raises' (both raised alike); AssertionError otherwise.
    `again`: (change, ref_fn2, call): after the bound call, `change()` changes the
    inputs' values in place; the bound call must then give `ref_fn2()` and what
    `call(out=o)` writes into a fresh out."""
    try:
        ref = ref_fn()
    except (ShapeError, ValueError):
        return "raises"  # lazyk's errors there: tests/test_ragged_today.py
    if not ref.type.dims and not scalars:
        return "scalar"
    out = make_out(ref)
    try:
        bound = bind_fn(out)
    except NotSupportedError:
        return "refused"
    try:
        got = bound()
    except ValueError as e:  # the reference answered: lazyk must too
        raise AssertionError(f"bound call raised {e!r}; the reference gives {ref}") from e
    assert got is out
    _same_out(out, ref)
    if again is not None:
        change, ref_fn2, call = again
        change()
        try:
            ref2 = ref_fn2()
        except (ShapeError, ValueError):
            return "match"
        assert bound() is out
        _same_out(out, ref2)
        fresh = make_out(ref2)
        assert call(out=fresh) is fresh
        _same_out(fresh, ref2)
    return "match"


def _same_out(out, ref) -> None:
    if isinstance(out, np.ndarray):
        assert out.dtype == ref.type.dtype
        assert same(out.tolist(), ref.data, rel=1e-5), (out.tolist(), ref.data)
    else:
        assert str(out.type) == str(ref.type) or "?var" in str(out.type)
        assert same(out.to_list(), ref.data, rel=1e-5), (out.to_list(), ref.data)


def placeholder(t: str, name="x"):
    return lazyk.placeholder(name, t)


@settings(max_examples=20, deadline=None)
@given(S.ragged(layouts=LAYOUTS, dtypes=S.NUMERIC), st.sampled_from([2, 0.5]))
def test_elementwise_matches_reference(case, k):
    t, d = case
    f = lazyk.compile(placeholder(t) * k + 1)
    check_bound(lambda: R.elementwise("add", R.elementwise("multiply", R.array(d, t), k), 1),
                lambda out: f.bind(out, lazyk.array(d, type=t)))


@settings(max_examples=20, deadline=None)
@given(S.ragged_pair(layouts=LAYOUTS, own_rows=True, broadcast=True),
       st.sampled_from(["add", "multiply", "maximum"]))
def test_binary_matches_reference(pair, op):
    t1, d1, t2, d2 = pair
    f = lazyk.compile(getattr(lazyk, op)(placeholder(t1, "x"), placeholder(t2, "y")))
    check_bound(lambda: R.elementwise(op, R.array(d1, t1), R.array(d2, t2)),
                lambda out: f.bind(out, lazyk.array(d1, type=t1), lazyk.array(d2, type=t2)))


@settings(max_examples=20, deadline=None)
@given(S.ragged(layouts=LAYOUTS, dtypes=S.NUMERIC), st.sampled_from(LAZYK_REDUCERS),
       st.booleans(), st.booleans())
def test_last_axis_reductions_match_reference(case, op, keepdims, skipna):
    t, d = case
    kw = {} if op == "count" else {"skipna": skipna}
    f = lazyk.compile(getattr(lazyk, op)(placeholder(t), axis=-1, keepdims=keepdims, **kw))
    check_bound(lambda: R.reduce(op, R.array(d, t), -1, keepdims=keepdims, skipna=skipna),
                lambda out: f.bind(out, lazyk.array(d, type=t)))


@settings(max_examples=20, deadline=None)
@given(S.ragged(layouts=("N * var * var * T", "var * var * T", "3 * var * 4 * T",
                         "N * ?var * T"), dtypes=("float64", "int64")),
       st.sampled_from(["sum", "max", "mean"]), st.data())
def test_reductions_over_other_axes_match_reference(case, op, data):
    t, d = case
    nd = t.count("*")
    axis, keepdims = data.draw(S.reduce_args(nd))
    if axis is None or (isinstance(axis, tuple) and len(axis) == nd):
        return  # a reduction over every axis: refused by name (test below)
    f = lazyk.compile(getattr(lazyk, op)(placeholder(t), axis=axis, keepdims=keepdims))
    check_bound(lambda: R.reduce(op, R.array(d, t), axis, keepdims=keepdims),
                lambda out: f.bind(out, lazyk.array(d, type=t)))


# ---------------------------------------------------------------- the forms that bind
def _rows(lengths, rng, dtype=np.float64):
    off = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=off[1:])
    content = rng.integers(-9, 9, int(off[-1])).astype(dtype)
    return off, content


def _split(off, content):
    return [list(content[off[i]:off[i + 1]]) for i in range(len(off) - 1)]


FORMS = [
    ("var", "N * var * float64", lambda x: x * 2 + 1, "N * var * float64"),
    ("var*var", "var * var * float64", lambda x: x - 1, "var * var * float64"),
    ("?var", "N * ?var * float64", lambda x: x * 3, "N * ?var * float64"),
    ("?T", "N * var * ?float64", lambda x: x + 1, "N * var * ?float64"),
    ("sum->N*T", "N * var * float64", lambda x: x.sum(axis=-1), "N * float64"),
    ("sum->var", "N * var * var * float64", lambda x: x.sum(axis=-1), "N * var * float64"),
    ("fold0->var", "var * var * float64", lambda x: x.sum(axis=0), "var * float64"),
]
DATA = {
    "N * var * float64": [[1.0, 2.0], [], [3.0]],
    "var * var * float64": [[1.0, 2.0], [3.0, 4.0], [5.0]],
    "N * ?var * float64": [[1.0, 2.0], None, [3.0]],
    "N * var * ?float64": [[1.0, None], [], [None]],
    "N * var * var * float64": [[[1.0, 2.0], []], [[3.0]]],
}


@pytest.mark.parametrize("name,t,fn,rt", FORMS, ids=[f[0] for f in FORMS])
def test_each_form_binds_and_matches_the_call(name, t, fn, rt):
    f = lazyk.compile(fn(lazyk.placeholder("x", t)))
    x = lazyk.array(DATA[t], type=t.replace("N", str(len(DATA[t]))))
    want = f(x)
    if isinstance(want, np.ndarray):
        out = np.full_like(want, 99)
    else:
        out = lazyk.array(_out_data(want.to_list(), R.parse_type(str(want.type)).dims),
                          type=str(want.type))
    b = f.bind(out, x)
    assert b() is out
    got = out if isinstance(out, np.ndarray) else out.to_list()
    assert same(np.asarray(got).tolist() if isinstance(got, np.ndarray) else got,
                want.tolist() if isinstance(want, np.ndarray) else want.to_list())


def test_in_place_value_changes_are_seen_and_nothing_compiles_at_bind_or_call():
    x = lazyk.placeholder("x", "N * var * float64")
    y = lazyk.placeholder("y", "N * var * float64")
    f = lazyk.compile(x * 2 + y)
    s = lazyk.compile((x * y).sum(axis=-1))
    rng = np.random.default_rng(1)
    off, ca = _rows(rng.integers(0, 6, 50), rng)
    cb = rng.standard_normal(len(ca))
    a, b = lazyk.from_offsets(off, ca), lazyk.from_offsets(off, cb)
    out = lazyk.from_offsets(off.copy(), np.zeros(len(ca)))
    sums = np.zeros(50)
    f.bind(out, a, b)()  # the first bind compiles the fill kernel (cached per structure)
    s.bind(sums, a, b)()
    before = (nest_stats["compiles"], lazyk.stats()["compiles"])
    off2, ca2 = _rows(rng.integers(0, 6, 80), rng)  # new data of the same types
    a2 = lazyk.from_offsets(off2, ca2)
    b2 = lazyk.from_offsets(off2, rng.standard_normal(len(ca2)))
    out2 = lazyk.from_offsets(off2.copy(), np.zeros(len(ca2)))
    bf, bs = f.bind(out2, a2, b2), s.bind(np.zeros(80), a2, b2)
    cb2 = b2.to_list()
    for step in range(3):
        ca2 *= -1.5  # in place: the bound calls read the very arrays
        ca2[::3] += step
        bf()
        bs()
        want = [[2 * p + q for p, q in zip(r, w)] for r, w in zip(_split(off2, ca2), cb2)]
        assert same(out2.to_list(), want)
        np.testing.assert_allclose(bs.out, [sum(p * q for p, q in zip(r, w))
                                            for r, w in zip(_split(off2, ca2), cb2)],
                                   rtol=1e-12, atol=1e-12)
    assert (nest_stats["compiles"], lazyk.stats()["compiles"]) == before


def test_missing_values_changed_in_place_are_seen():
    x = lazyk.placeholder("x", "N * var * ?float64")
    f = lazyk.compile(x + 1)
    s = lazyk.compile(x.sum(axis=-1, skipna=True))
    rng = np.random.default_rng(2)
    off, c = _rows([2, 0, 3], rng)
    valid = np.array([True, False, True, True, False])
    a = lazyk.from_offsets(off, masked(c, valid))
    out = lazyk.array([[0.0, 0.0], [], [0.0, 0.0, 0.0]], type="3 * var * ?float64")
    sums = np.zeros(3)
    b, bs = f.bind(out, a), s.bind(sums, a)
    b()
    bs()
    assert out.to_list() == [[c[0] + 1, None], [], [c[2] + 1, c[3] + 1, None]]
    np.testing.assert_allclose(sums, [c[0], 0, c[2] + c[3]])


def test_changed_row_lengths_raise_naming_the_row():
    x = lazyk.placeholder("x", "N * var * float64")
    f = lazyk.compile(x * 2)
    off = np.array([0, 2, 3, 5])
    a = lazyk.from_offsets(off, np.arange(5.0))
    out = lazyk.from_offsets(off.copy(), np.zeros(5))
    b = f.bind(out, a)
    b()
    off[2] = 2  # row 1 now empty, row 2 three long: the structure changed in place
    with pytest.raises(ShapeError, match="row 1"):
        b()


def test_a_bound_fold_over_every_item_reads_them_as_one_run():
    # rows of one offsets array folded over every axis: one loop over the items, whose
    # offsets each call checks again (the items, where they start and end, and rising)
    x = lazyk.placeholder("x", "N * var * float64")
    off, vals = np.array([0, 2, 3, 3, 6]), np.arange(1.0, 7.0)
    a = lazyk.from_offsets(off, vals)
    for fn, want in ((lambda e: e.sum(), 21.0), (lambda e: lazyk.max(e * 2), 12.0),
                     (lambda e: e.mean(), 3.5), (lambda e: (e > 2).sum(), 4)):
        f = lazyk.compile(fn(x))
        out = np.zeros((), f(a).dtype)
        b = f.bind(out, a)
        assert b._fill.items is not None
        assert b() == want == f(a) == fn(a).eval()
    b = lazyk.compile(x.sum()).bind(np.zeros(()), a)
    vals[0] = 10.0  # values changed in place: seen
    assert b() == 30.0
    off[1] = 1  # rows of other lengths over the same items: the same total
    assert b() == 30.0 == a.sum().eval()
    off[4] = 5  # fewer items
    with pytest.raises(ShapeError, match="items 0..5 now, 0..6 at bind: bind again"):
        b()
    off[4], off[2] = 6, 0  # rows out of order
    with pytest.raises(lazyk.ArrayConstructionError, match=r"offsets\[2\] = 0"):
        b()


def test_bad_out_is_refused_at_bind_naming_out_and_the_row():
    x = lazyk.placeholder("x", "N * var * float64")
    f = lazyk.compile(x * 2)
    a = lazyk.array([[1.0, 2.0], [], [3.0]])
    with pytest.raises(ShapeError, match=r"out: dimension 1 \(var\), row 2 .* length 2"):
        f.bind(lazyk.array([[0.0, 0.0], [], [0.0, 0.0]]), a)
    with pytest.raises(BindError, match="out has elements float32"):
        f.bind(lazyk.array([[0.0, 0.0], [], [0.0]], type="3 * var * float32"), a)
    with pytest.raises(BindError, match="out has type"):
        f.bind(lazyk.array([[[0.0]], [], [[0.0]]]), a)
    with pytest.raises(BindError, match="lazyk array of the result's type"):
        f.bind(np.zeros((3, 2)), a)
    with pytest.raises(ShapeError, match="out: dimension 0 has size 2"):
        f.bind(lazyk.array([[0.0, 0.0], []]), a)
    q = lazyk.compile(lazyk.placeholder("q", "N * var * ?float64") + 1)
    with pytest.raises(BindError, match="missing values need an out of"):
        q.bind(lazyk.array([[0.0, 0.0]], type="1 * var * float64"),
               lazyk.array([[1.0, None]], type="1 * var * ?float64"))
    s = lazyk.compile(x.sum(axis=-1))
    with pytest.raises(ShapeError, match="out has shape"):
        s.bind(np.zeros(4), a)
    with pytest.raises(BindError, match="out has dtype int64"):
        s.bind(np.zeros(3, np.int64), a)
    ro = np.zeros(3)
    ro.flags.writeable = False
    with pytest.raises(BindError, match="read-only"):
        s.bind(ro, a)
    with pytest.raises(CastingError, match="input 'x'.*casting='no'"):
        s.bind(np.zeros(3), lazyk.array([[1, 2], [3]]))  # int64 rows: bind casts nothing


def test_out_whose_rows_step_through_memory():
    f = lazyk.compile(lazyk.placeholder("x", "N * var * float64") * 2)
    base = lazyk.from_offsets(np.array([0, 3, 4, 9]), np.zeros(9))
    out = base[:, ::2]  # rows of every other element: not evenly spaced
    b = f.bind(out, lazyk.array([[1.0, 2.0], [3.0], [4.0, 5.0, 6.0]]))
    assert b().to_list() == [[2.0, 4.0], [6.0], [8.0, 10.0, 12.0]]
    assert base.to_list() == [[2.0, 0.0, 4.0], [6.0], [8.0, 0.0, 10.0, 0.0, 12.0]]


def test_min_of_an_empty_row_raises_as_the_call_does():
    f = lazyk.compile(lazyk.placeholder("x", "N * var * float64").min(axis=-1))
    a = lazyk.array([[1.0], []])
    b = f.bind(np.zeros(2), a)
    with pytest.raises(ValueError, match="zero-size row 1 in reduction min"):
        b()
    with pytest.raises(ValueError, match="zero-size row 1 in reduction min"):
        f(a)


def test_out_that_is_an_input_gets_the_right_values():
    x = lazyk.placeholder("x", "N * var * float64")
    y = lazyk.placeholder("y", "N * var * float64")
    f = lazyk.compile(x + y)
    c = np.arange(4.0)
    a = lazyk.from_offsets(np.array([0, 3, 3, 4]), c)
    b = lazyk.from_offsets(np.array([0, 1, 1, 2]), np.array([10.0, 20.0]))  # rows of 1
    assert f.bind(a, a, b)().to_list() == [[10.0, 11.0, 12.0], [], [23.0]]
    assert c.tolist() == [10.0, 11.0, 12.0, 23.0]  # written in place, read before


def test_numpy_rows_are_read_in_place():
    x = lazyk.placeholder("x", "N * var * float64")
    s = lazyk.compile(x.sum(axis=-1))
    rows = np.arange(6.0).reshape(3, 2)
    out = np.zeros(3)
    b = s.bind(out, rows)
    rows[1] = 10
    np.testing.assert_array_equal(b(), [1.0, 20.0, 9.0])
    with pytest.raises(BindError, match="input 'x' is a NumPy array not in C order"):
        s.bind(out, rows.T)


def test_what_cannot_be_bound_is_refused_by_name():
    x = lazyk.placeholder("x", "N * ?var * float64")
    y = lazyk.placeholder("y", "N * ?var * float64")
    a = lazyk.array([[1.0, -2.0], None], type="2 * ?var * float64")
    b = lazyk.array([None, [3.0]], type="2 * ?var * float64")
    # (where() over missing rows binds: tests/test_ragged_bind_where.py)
    assert lazyk.compile(lazyk.where(x > 0, x, y)).bind(
        lazyk.array([None, None], type="2 * ?var * float64"), a, b)().to_list() == [None, None]
    # (`?n` results bind: tests/test_ragged_bind_qn.py)
    t = lazyk.placeholder("t", "N * var * ?string")
    # where() over missing strings binds in steps (tests/test_ragged_bind_where.py)
    assert lazyk.compile(lazyk.where(t == "a", 1, 2)).bind(
        lazyk.array([[0, 0]], type="1 * var * ?int64"),
        lazyk.array([["a", None]], type="1 * var * ?string"))().to_list() == [[1, None]]


@pytest.fixture
def small_parts(monkeypatch):
    """Split the outer rows into several parts over the pool even for small data."""
    import lazyk.kernel.nest
    monkeypatch.setattr(lazyk.kernel.nest, "MIN_PART", 8)
    before = lazyk.get_num_threads()
    lazyk.set_num_threads(3)
    yield
    lazyk.set_num_threads(before)


def test_bound_call_from_several_threads_at_once(small_parts):
    x = lazyk.placeholder("x", "N * var * float64")
    f = lazyk.compile((x * x).sum(axis=-1))
    g = lazyk.compile(x * 3)
    rng = np.random.default_rng(3)
    jobs = []
    for n in (5, 200, 3000):
        off, c = _rows(rng.integers(0, 9, n), rng)
        a = lazyk.from_offsets(off, c)
        want_s = np.array([sum(v * v for v in r) for r in _split(off, c)])
        jobs.append((f.bind(np.zeros(n), a), want_s, g.bind(lazyk.from_offsets(
            off.copy(), np.zeros(len(c))), a), c * 3))
    assert jobs[-1][0]._nparts > 1 and jobs[-1][2]._nparts > 1  # split over the pool
    errors = []

    def work():
        try:
            for _ in range(30):
                for bs, want_s, bg, want_g in jobs:  # every thread writes the same values
                    np.testing.assert_allclose(bs(), want_s)
                    got = [v for r in bg().to_list() for v in r]
                    assert np.array_equal(got, want_g)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    _in_threads(work, errors)


# ------------------------------------------- forms that bind as several kernel steps
STEPPED = {
    "x - x.mean(axis=-1, keepdims=True)": (
        lambda x: x - x.mean(axis=-1, keepdims=True),
        lambda X: R.elementwise("subtract", X, R.reduce("mean", X, -1, keepdims=True))),
    "x / x.sum(axis=-1, keepdims=True)": (
        lambda x: x / x.sum(axis=-1, keepdims=True),
        lambda X: R.elementwise("true_divide", X, R.reduce("sum", X, -1, keepdims=True))),
    "(x - x.max(axis=-1, keepdims=True)).sum(axis=-1)": (
        lambda x: (x - x.max(axis=-1, keepdims=True, skipna=True)).sum(axis=-1),
        lambda X: R.reduce("sum", R.elementwise(
            "subtract", X, R.reduce("max", X, -1, keepdims=True, skipna=True)), -1)),
    "x - x.mean()": (lambda x: x - x.mean(),
                     lambda X: R.elementwise("subtract", X, R.reduce("mean", X))),
}


def _changer(t: str, d, a):
    """(change: the values of `a` become x * -2 + 3, written in place through out=; the
    reference of the new values)."""
    p = lazyk.placeholder("p", t)
    h = lazyk.compile(p * -2 + 3)

    def change():
        assert h(lazyk.array(d, type=t), out=a) is a
    return change, lambda: R.elementwise("add", R.elementwise("multiply", R.array(d, t), -2),
                                         3)


@settings(max_examples=20, deadline=None)
@given(S.ragged(layouts=S.LAYOUTS + S.QVAR_LAYOUTS, dtypes=("float64", "int64", "float32")),
       st.sampled_from(sorted(STEPPED)))
def test_reductions_feeding_more_work_bind_and_match_the_reference(case, form):
    t, d = case
    fn, ref_fn = STEPPED[form]
    f = lazyk.compile(fn(placeholder(t)))
    a = lazyk.array(d, type=t)
    change, ref2 = _changer(t, d, a)
    got = check_bound(lambda: ref_fn(R.array(d, t)), lambda out: f.bind(out, a),
                      scalars=True, again=(change, lambda: ref_fn(ref2()), lambda out: f(a, out=out)))
    if "?var" not in t:
        assert got in ("match", "raises"), got


@settings(max_examples=20, deadline=None)
@given(S.ragged(layouts=S.LAYOUTS + S.QVAR_LAYOUTS + S.QNEST_LAYOUTS, dtypes=S.NUMERIC),
       st.sampled_from(LAZYK_REDUCERS), st.booleans(), st.booleans())
def test_reductions_over_every_axis_bind_and_match_the_reference(case, op, keepdims, skipna):
    t, d = case
    kw = {} if op == "count" else {"skipna": skipna}
    f = lazyk.compile(getattr(lazyk, op)(placeholder(t), keepdims=keepdims, **kw))
    a = lazyk.array(d, type=t)
    change, ref2 = _changer(t, d, a)

    def ref(X):
        return R.reduce(op, X, None, keepdims=keepdims, skipna=skipna)
    got = check_bound(lambda: ref(R.array(d, t)), lambda out: f.bind(out, a), scalars=True,
                      again=(change, lambda: ref(ref2()), lambda out: f(a, out=out)))
    assert got in ("match", "raises"), got


@settings(max_examples=20, deadline=None)
@given(S.ragged_pair(layouts=S.LAYOUTS, option_rows=False),
       st.sampled_from([None, "sum", "max", "center"]), st.booleans())
def test_where_over_missing_values_binds_and_matches_the_reference(pair, op, skipna):
    t1, d1, t2, d2 = pair
    x, y = placeholder(t1, "x"), placeholder(t2, "y")
    e = lazyk.where(x > 0, x, y)
    f = lazyk.compile(e if op is None else
                      x - e.mean(axis=-1, keepdims=True, skipna=skipna) if op == "center" else
                      getattr(e, op)(axis=-1, skipna=skipna))
    a, b = lazyk.array(d1, type=t1), lazyk.array(d2, type=t2)
    change, ref2 = _changer(t1, d1, a)

    def ref(X):
        w = R.where(R.elementwise("greater", X, 0), X, R.array(d2, t2))
        if op == "center":
            return R.elementwise("subtract", X, R.reduce("mean", w, -1, keepdims=True,
                                                         skipna=skipna))
        return w if op is None else R.reduce(op, w, -1, skipna=skipna)
    got = check_bound(lambda: ref(R.array(d1, t1)), lambda out: f.bind(out, a, b),
                      scalars=True, again=(change, lambda: ref(ref2()), lambda out: f(a, b, out=out)))
    assert got in ("match", "raises"), got
    if "?" in t1 + t2 and op is not None and got == "match":  # where() first
        assert len(f.bind(make_out(ref(ref2())), a, b).steps) == (2 if op == "center" else 1)


def test_string_parameters_bind_and_read_the_strings_in_place():
    s = lazyk.placeholder("s", "N * var * string")
    t = lazyk.placeholder("t", "N * var * ?string")
    sa = lazyk.array([["a", "bc"], [], ["xyz"]])
    ta = lazyk.array([["a", None], [], ["xyz"]], type="3 * var * ?string")
    n = lazyk.str_len(s)
    cases = [(n * 2, (sa,), [[2, 4], [], [6]]),
             (s == t, (sa, ta), [[True, None], [], [True]]),
             (n.sum(axis=-1), (sa,), [3, 0, 3]),
             (n - n.mean(axis=-1, keepdims=True), (sa,), [[-0.5, 0.5], [], [0.0]])]
    for e, args, want in cases:
        k = lazyk.compile(e)
        ref = k(*args)
        out = np.zeros(3, np.int64) if isinstance(want[0], int) else \
            lazyk.array(_out_data(ref.to_list(), R.parse_type(str(ref.type)).dims, fill=True if "bool" in str(ref.type)
                                  else 7), type=str(ref.type))
        got = k.bind(out, *args)()
        assert (got.tolist() if isinstance(got, np.ndarray) else got.to_list()) == want


def _pair(n, rng):
    off, c = _rows(rng.integers(0, 6, n), rng)
    return off, c, lazyk.from_offsets(off, c)


def test_stepped_forms_see_value_changes_and_compile_nothing_at_bind_or_call():
    x = lazyk.placeholder("x", "N * var * float64")
    forms = [lazyk.compile(x - x.mean(axis=-1, keepdims=True)), lazyk.compile(x - x.mean()),
             lazyk.compile(x.sum())]
    rng = np.random.default_rng(4)
    off, c, a = _pair(40, rng)

    def outs(off_):
        return [lazyk.from_offsets(off_.copy(), np.zeros(int(off_[-1]))),
                lazyk.from_offsets(off_.copy(), np.zeros(int(off_[-1]))), np.zeros(())]
    for k, o in zip(forms, outs(off)):  # the first binds compile (cached per structure)
        k.bind(o, a)()
    before = (nest_stats["compiles"], lazyk.stats()["compiles"])
    off, c, a = _pair(70, rng)  # new data of the same types
    bound = [k.bind(o, a) for k, o in zip(forms, outs(off))]
    for step in range(3):
        c *= -1.5  # in place: the bound calls read the very arrays
        c[::4] += step
        rows = _split(off, c)
        got = [b() for b in bound]
        assert same(got[0].to_list(), [[v - np.mean(r) for v in r] for r in rows])
        assert same(got[1].to_list(), [[v - c.mean() for v in r] for r in rows])
        assert np.isclose(float(got[2]), c.sum())
    assert (nest_stats["compiles"], lazyk.stats()["compiles"]) == before


def test_stepped_forms_check_out_once_naming_out_and_the_row():
    x = lazyk.placeholder("x", "N * var * float64")
    a = lazyk.array([[1.0, 2.0], [], [3.0]])
    f = lazyk.compile(x - x.mean(axis=-1, keepdims=True))
    with pytest.raises(ShapeError, match=r"out: dimension 1 \(var\), row 2 .* length 2"):
        f.bind(lazyk.array([[0.0, 0.0], [], [0.0, 0.0]]), a)
    with pytest.raises(BindError, match="out has elements float32"):
        f.bind(lazyk.array([[0.0, 0.0], [], [0.0]], type="3 * var * float32"), a)
    s = lazyk.compile(x.sum(keepdims=True))
    with pytest.raises(ShapeError, match=r"out has shape \(1,\), the result \(1, 1\)"):
        s.bind(np.zeros(1), a)
    with pytest.raises(BindError, match="out has dtype int64"):
        s.bind(np.zeros((1, 1), np.int64), a)
    q = lazyk.placeholder("q", "N * var * ?float64")
    with pytest.raises(BindError, match=r"out: the result has .*missing values \(\(q: N "
                                        r".*-> \?float64\): pass a lazyk array"):
        lazyk.compile(q.sum()).bind(np.zeros(()), lazyk.array([[1.0, None]],
                                                              type="1 * var * ?float64"))


def test_a_row_that_turns_missing_or_back_in_place_raises_naming_input_and_row():
    x = lazyk.placeholder("x", "N * ?var * float64")
    copy = lazyk.compile(x + 0)
    a = lazyk.array([[1.0], [], [2.0]], type="3 * ?var * float64")
    forms = [(lazyk.compile(x * 2), lazyk.array([[0.0], [], [0.0]], type="3 * ?var * float64")),
             (lazyk.compile(x.sum(axis=-1)), lazyk.array([0.0, 0.0, 0.0], type="3 * ?float64")),
             (lazyk.compile(x - x.mean(axis=-1, keepdims=True)),
              lazyk.array([[0.0], [], [0.0]], type="3 * ?var * ?float64"))]
    bound = [k.bind(o, a) for k, o in forms]
    for b in bound:
        b()
    # out= of another call writes a's rows in place: the empty row 1 becomes missing
    copy(lazyk.array([[5.0], None, [6.0]], type="3 * ?var * float64"), out=a)
    for b in bound:
        with pytest.raises(ShapeError, match=r"input 'x': row 1 of \?var dimension 1 .*is "
                                             r"missing now, present at bind: bind again"):
            b()
    copy(lazyk.array([[5.0], [], [6.0]], type="3 * ?var * float64"), out=a)  # present again
    assert bound[0]().to_list() == [[10.0], [], [12.0]]
    assert bound[1]().to_list() == [5.0, 0.0, 6.0]
    assert bound[2]().to_list() == [[0.0], [], [0.0]]
    b = forms[0][0].bind(lazyk.array([[0.0], None, [0.0]], type="3 * ?var * float64"),
                         lazyk.array([[5.0], None, [6.0]], type="3 * ?var * float64"))
    assert b().to_list() == [[10.0], None, [12.0]]


def test_stepped_bound_call_from_several_threads_at_once(small_parts):
    """Calls of one stepped bound object run one at a time (a lock); those of an
    every-axis reduction at once (each thread its own partial results)."""
    x = lazyk.placeholder("x", "N * var * float64")
    f = lazyk.compile(x - x.mean(axis=-1, keepdims=True))
    rng = np.random.default_rng(5)
    off, c, a = _pair(3000, rng)
    b = f.bind(lazyk.from_offsets(off.copy(), np.zeros(len(c))), a)
    total = lazyk.compile(x.sum()).bind(np.zeros(()), a)
    assert total._nparts > 1
    want = [v - np.mean(r) for r in _split(off, c) for v in r]
    errors = []

    def work():
        try:
            for _ in range(20):
                got = [v for r in b().to_list() for v in r]
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
                np.testing.assert_allclose(float(total()), c.sum(), rtol=1e-12)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    _in_threads(work, errors)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_bound_arg_reduction_writes_none_for_an_empty_row(op, keepdims):
    x = lazyk.placeholder("x", "N * var * float64")
    a = lazyk.array([[1.0, 5.0], [], [7.0, 2.0, 3.0]])
    f = lazyk.compile(getattr(lazyk, op)(x, axis=1, keepdims=keepdims))
    want = f(a).to_list()
    assert None in (want if not keepdims else [r[0] for r in want])
    shape = "3 * 1 * ?int64" if keepdims else "3 * ?int64"
    for start in (lazyk.full(shape, 0), lazyk.array([[None]] * 3 if keepdims else [None] * 3,
                                                    shape)):
        assert f.bind(start, a)().to_list() == want


def test_bound_result_without_missing_values_marks_an_optional_out_present():
    xm = lazyk.placeholder("x", "N * var * ?float64")
    am = lazyk.array([[1.0, None], [], [None], [4.0, 2.0]], "4 * var * ?float64")
    f = lazyk.compile(lazyk.std(xm, axis=1, skipna=True))
    assert str(f.signature).endswith("-> N * float64")  # as the call gives
    got = f(am)
    assert str(got.type) == "4 * float64"
    bound = f.bind(lazyk.array([None] * 4, "4 * ?float64"), am)().to_list()
    np.testing.assert_array_equal(np.array(bound, float), got.to_numpy())
