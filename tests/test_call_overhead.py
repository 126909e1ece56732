"""The lazy API's per-call work, by structure (never by timing): nodes know their structure,
an expression built again over new arrays is a look-up, a repeated `.eval()` and a repeated
ragged call plan nothing, and every fast path gives what the general path gives (values,
dtypes, missing values, errors naming the row)."""
from __future__ import annotations

import gc
import pickle
import threading

import numpy as np
import pytest

import lazyk
from lazyk.frontend import structure
from lazyk.frontend.graph import MAX_KEYED_INPUTS, Node, dump, toposort
from lazyk.kernel.nest import nest_stats
from lazyk.runtime import stringeval
from lazyk.runtime.nest_launch import launch_stats


def rows(rng, lens, dtype=np.float64, missing=0.0):
    """A `len(lens) * var * T` lazyk array (some values missing when `missing`) and its
    nested lists."""
    lists = [[None if rng.random() < missing else float(v) for v in rng.random(n) * 10]
             for n in lens]
    if missing:
        return lazyk.array(lists, type=f"{len(lens)} * var * ?{np.dtype(dtype)}"), lists
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    values = np.array([v for r in lists for v in r], dtype)
    return lazyk.from_offsets(offsets, values), [list(map(float, r)) for r in lists]


# --- nodes: structure keys ------------------------------------------------------------------

def test_structure_key_ignores_input_names_but_not_which_inputs_are_one():
    f8 = np.dtype(np.float64)
    a, b, c = (Node("input", f8, (4,), (), n) for n in ("a", "b", "c"))
    two = Node("const", f8, (), (), 2.0)
    ab = Node("add", f8, (4,), (Node("multiply", f8, (4,), (a, two)), b))
    cb = Node("add", f8, (4,), (Node("multiply", f8, (4,), (c, two)), b))
    aa = Node("add", f8, (4,), (Node("multiply", f8, (4,), (a, two)), a))
    assert ab is not cb and ab.skey == cb.skey
    assert (ab.names, cb.names) == (("a", "b"), ("c", "b"))
    assert aa.skey != ab.skey and aa.names == ("a",)  # one input read twice is another graph
    # the shape, the dtype and a constant's value are structure
    assert Node("add", f8, (5,), (Node("input", f8, (5,), (), "a"), b)).skey != ab.skey
    three = Node("const", f8, (), (), 3.0)
    assert Node("add", f8, (4,), (Node("multiply", f8, (4,), (a, three)), b)).skey != ab.skey
    zero, negzero = Node("const", f8, (), (), 0.0), Node("const", f8, (), (), -0.0)
    assert zero is not negzero and zero.skey != negzero.skey


def test_graphs_of_many_inputs_have_no_structure_key_and_still_evaluate():
    xs = [np.full(3, float(i)) for i in range(MAX_KEYED_INPUTS + 2)]
    e = lazyk.array(xs[0])
    for x in xs[1:]:
        e = e + lazyk.array(x)
    assert e.node.skey is None and e.node.names is None
    np.testing.assert_array_equal(e.eval().to_numpy(), sum(xs))
    np.testing.assert_array_equal(e.eval().to_numpy(), sum(xs))


def test_interning_holds_across_threads_and_forgets_dead_nodes():
    f8 = np.dtype(np.float64)
    got, barrier = [], threading.Barrier(8)

    def make():
        barrier.wait()
        a = Node("input", f8, (7,), (), "shared")
        got.append([Node("sin", f8, (7,), (Node("add", f8, (7,), (a, a)),)) for _ in range(200)])
    threads = [threading.Thread(target=make) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(n) for ns in got for n in ns}) == 1
    from lazyk.frontend import graph
    key = ("fresh-op", f8, (3,), (), None)
    Node("fresh-op", f8, (3,), (), None)  # dies at once
    gc.collect()
    assert key not in graph._table


# --- building by structure --------------------------------------------------------------------

def test_rebuilt_expression_is_a_look_up_with_the_same_graph():
    rng = np.random.default_rng(0)
    a, b = rng.random(50), rng.random(50)
    first = 2 * lazyk.array(a) + 3 * lazyk.array(b)
    eager = first.node
    a, b = a.copy(), b.copy()  # (other arrays: other leaves)
    again = 2 * lazyk.array(a) + 3 * lazyk.array(b)
    assert again._node is None  # (no graph made yet)
    assert again.dtype == np.float64 and again.shape == (50,)
    assert again.node.skey == eager.skey and again.node is not eager  # (other leaves)
    assert dump(again.node).replace(again.node.names[0], "A").replace(
        again.node.names[1], "B") == dump(eager).replace(eager.names[0], "A").replace(
        eager.names[1], "B")
    np.testing.assert_array_equal(again.eval().to_numpy(), 2 * a + 3 * b)


def test_built_by_structure_keeps_every_check_and_nep50_rule():
    i8 = lazyk.array(np.arange(5, dtype=np.int8))
    for _ in range(2):  # the second build of each would be a look-up
        assert (i8 + 1).dtype == np.int8 and (i8 + 1.5).dtype == np.float64
        with pytest.raises(OverflowError, match="300"):
            i8 + 300
        with pytest.raises(ValueError, match="negative"):
            i8 ** -1
        with pytest.raises(TypeError, match="keepdims"):
            i8.sum(keepdims=1)
        with pytest.raises(TypeError, match="axis"):
            i8.sum(axis=True)
        with pytest.raises(lazyk.ShapeError):
            i8 + lazyk.array(np.ones(4))


def test_same_array_twice_and_new_arrays_after_it():
    """A structure planned where two inputs are one array binds by position: two other
    arrays later are read as two."""
    rng = np.random.default_rng(1)
    a, b = rng.random(20), rng.random(20)
    one = lazyk.array(a)
    np.testing.assert_allclose((one * 2 + lazyk.array(a)).eval().to_numpy(), 3 * a)
    np.testing.assert_allclose((lazyk.array(a) * 2 + lazyk.array(b)).eval().to_numpy(),
                               2 * a + b)
    x = lazyk.array(a)
    np.testing.assert_allclose((x - x.mean()).eval().to_numpy(), a - a.mean())
    y = lazyk.array(b)
    np.testing.assert_allclose((y - y.mean()).eval().to_numpy(), b - b.mean())


def test_lazyk_arrays_over_one_numpy_array_are_one_input():
    """`lazyk.array(a)` written twice reads one input (as `a` twice does), so the
    expression is built by structure the second time: a look-up, not the builders."""
    a, b = np.arange(6.0), np.ones(6)
    for _ in range(2):
        e = (lazyk.array(a) * 0.2 + lazyk.array(a) * 0.8) + lazyk.array(b) + a
        assert len(e.env) == 2 and e._key is not None
        np.testing.assert_allclose(e.eval().to_numpy(), a + b + a)
    again = lazyk.array(a) * 0.2 + lazyk.array(a) * 0.8
    assert again._node is None  # (a look-up: no graph made yet)
    np.testing.assert_allclose(again.eval().to_numpy(), a)


def test_deferred_expressions_work_everywhere_a_graph_does():
    a = np.arange(6.0)
    for _ in range(2):
        e = lazyk.array(a) * 2 + 1
        assert str(e.type) == "6 * float64" and "multiply" in repr(e)
        np.testing.assert_array_equal(e[:, None].eval().to_numpy(), (a * 2 + 1)[:, None])
        np.testing.assert_array_equal(lazyk.where(e > 5, e, 0).eval().to_numpy(),
                                      np.where(a * 2 + 1 > 5, a * 2 + 1, 0))
        k = lazyk.compile(e)  # (the captured array is a constant)
        np.testing.assert_array_equal(k(), a * 2 + 1)
        back = pickle.loads(pickle.dumps(e))
        np.testing.assert_array_equal(back.eval().to_numpy(), a * 2 + 1)


def test_built_structures_stay_bounded_and_a_rebuild_gives_the_same(monkeypatch):
    # a full memo is emptied: later builds type their graphs again and compute the same
    monkeypatch.setattr(structure.built, "size", 4)
    structure.built.clear()
    xs = [np.arange(n, dtype=np.float64) - 2.5 for n in range(1, 11)]
    for _ in range(2):
        for x in xs:
            e = 2 * lazyk.array(x) + 1
            assert len(structure.built) <= 4
            got = e.eval().to_numpy()
            assert got.dtype == np.float64 and got.shape == x.shape
            np.testing.assert_array_equal(got, 2 * x + 1)


def test_a_long_chain_built_by_structure_materializes_without_recursion():
    a = np.ones(3)
    for _ in range(2):
        e = lazyk.array(a)
        for _ in range(3000):
            e = e + 1.0
    assert e._node is None
    assert e.node.op == "add" and len(toposort(e.node)) > 3000
    np.testing.assert_array_equal(e.eval().to_numpy(), a + 3000)


# --- .eval() plans once -----------------------------------------------------------------------

def test_repeated_eval_and_fresh_leaf_loop_plan_once():
    rng = np.random.default_rng(2)
    a, b = rng.random(30), rng.random(30)
    (7 * lazyk.array(a) - 5 * lazyk.array(b)).eval()  # the structure's first evaluation
    before = stringeval.expr_stats["plans"]
    compiles = lazyk.stats()["compiles"]
    for _ in range(20):
        na, nb = rng.random(30), rng.random(30)
        got = (7 * lazyk.array(na) - 5 * lazyk.array(nb)).eval()
        np.testing.assert_allclose(got.to_numpy(), 7 * na - 5 * nb)
    e = 7 * lazyk.array(a) - 5 * lazyk.array(b)
    for _ in range(5):
        np.testing.assert_allclose(e.eval().to_numpy(), 7 * a - 5 * b)
    assert e._launch is not None
    assert stringeval.expr_stats["plans"] == before
    assert lazyk.stats()["compiles"] == compiles


def test_eval_results_and_errors_equal_the_general_path():
    a = np.arange(12.0).reshape(3, 4)
    f = np.asfortranarray(a)
    for _ in range(2):
        got = (lazyk.array(f) + 1).eval().to_numpy()
        np.testing.assert_array_equal(got, f + 1)
        assert got.flags.f_contiguous  # order 'K' over Fortran inputs
        ints = lazyk.array(np.arange(4)) ** lazyk.array(np.array([1, 2, -1, 0]))
        with pytest.raises(ValueError, match="negative"):
            ints.eval()
        s = (lazyk.array(a) * 2).sum(axis=1)
        np.testing.assert_array_equal(s.eval().to_numpy(), (a * 2).sum(axis=1))


def test_first_eval_of_a_new_object_launches_the_planned_entry_without_a_graph():
    rng = np.random.default_rng(8)
    a, b = rng.random(40), rng.random(40)
    (4 * lazyk.array(a) - lazyk.array(b)).eval()  # plans the structure
    before, compiles = stringeval.expr_stats["plans"], lazyk.stats()["compiles"]
    for _ in range(5):
        a, b = rng.random(40), rng.random(40)
        e = 4 * lazyk.array(a) - lazyk.array(b)
        assert e._node is None and e._launch is None
        got = e.eval()
        assert e._node is None and e._launch is not None  # (launched from its arrays)
        assert isinstance(got, lazyk.Array) and got.type == lazyk.dshape("40 * float64")
        np.testing.assert_array_equal(got.to_numpy(), 4 * a - b)
        np.testing.assert_array_equal(e.eval().to_numpy(), 4 * a - b)  # (kept: `_launch`)
    assert stringeval.expr_stats["plans"] == before
    assert lazyk.stats()["compiles"] == compiles
    # what the entries do not run keeps the general path, evaluated again too
    s = lazyk.array(np.array(["a", "bb"]))
    for _ in range(2):
        e = lazyk.str_len(s) * 2
        assert e.eval().to_list() == [2, 4] and e.eval().to_list() == [2, 4]


def _operands(rng):
    """Pairs of arrays that differ from one pair to the next in one way: dtype, size,
    strides, ndim, C / Fortran order, byte order, alignment, writeability, emptiness."""
    x = rng.random(12) - 0.5
    x[3] = 0.0
    y = rng.random(12) - 0.5
    c, d = x.reshape(3, 4), y.reshape(3, 4)
    raw = np.zeros(12 * 8 + 1, np.uint8)[1:].view(np.float64)
    raw[:] = x
    ro = x.copy()
    ro.flags.writeable = False
    return [(x, y), (x.astype(np.float32), y.astype(np.float32)), (x[:11], y[:11]),
            ((x * 10).astype(np.int32), (y * 10).astype(np.int32)),
            (x[::2], y[::2]), (x[:6], y[:6]), (c, d), (np.asfortranarray(c), d.T.copy().T),
            (c.T, d.T), (c[:, ::2], d[:, ::2]), (c, y[:4]), (x.astype(">f8"), y), (raw, y),
            (ro, y), (x[:0], y[:0]), (np.array(1.5), np.array(-2.0)), (x, y)]


@pytest.mark.parametrize("scalar", [2, 2.0, -3, 0.0, -0.0, float("nan"), np.float32(2)],
                         ids=["2", "2.0", "-3", "0.0", "-0.0", "nan", "f32"])
def test_new_leaves_of_other_kinds_never_reuse_a_wrong_entry(scalar):
    """One expression over operands that change kind from one call to the next (and back):
    each result is NumPy's (values, sign of zero, dtype, shape and, for 2-d, the order)."""
    rng = np.random.default_rng(10)
    pairs = _operands(rng)
    for x, y in pairs + pairs[::-1]:
        for fn in (lambda p, q: scalar * p + q, lambda p, q: p * scalar - q):
            want = fn(x, y)
            e = fn(lazyk.array(x), lazyk.array(y))
            assert e.dtype == want.dtype and e.shape == want.shape, (x.dtype, x.shape)
            got = e.eval().to_numpy()
            assert got.dtype == want.dtype and got.shape == want.shape, (x.dtype, x.shape)
            np.testing.assert_array_equal(got, want)
            assert np.array_equal(np.signbit(got), np.signbit(want)) or want.dtype.kind != "f"
            if want.ndim == 2 and not want.flags.c_contiguous:
                assert got.flags.f_contiguous == want.flags.f_contiguous


def test_one_array_in_two_positions_and_other_arrays_after_it():
    """Which operands read the same array is part of the structure: the same lazyk array
    twice, two lazyk arrays over one NumPy array, a lazyk array and its own NumPy array,
    then two distinct arrays, in every order."""
    rng = np.random.default_rng(11)
    a, b = rng.random(9), rng.random(9)
    la = lazyk.array(a)
    cases = [(lambda: la * 3 + la, 4 * a), (lambda: lazyk.array(a) * 3 + lazyk.array(a), 4 * a),
             (lambda: la * 3 + a, 4 * a), (lambda: lazyk.array(a) * 3 + lazyk.array(b),
                                         3 * a + b), (lambda: la * 3 + lazyk.array(b), 3 * a + b)]
    for build, want in cases + cases[::-1] + cases:
        e = build()
        np.testing.assert_array_equal(e.eval().to_numpy(), want)
        np.testing.assert_array_equal(e.eval().to_numpy(), want)
    big = rng.random(70_000)  # threaded sizes: after small ones of the same expression
    for x in (a, big, a, big):
        np.testing.assert_array_equal((2 * lazyk.array(x) + lazyk.array(x)).eval().to_numpy(),
                                      3 * x)


# --- ragged calls and .eval() -----------------------------------------------------------------

def test_ragged_compiled_call_prepares_once_and_matches_the_reference():
    rng = np.random.default_rng(3)
    px = lazyk.placeholder("x", "N * var * float64")
    py = lazyk.placeholder("y", "N * var * float64")
    k = lazyk.compile((px * 2 + py).sum(axis=-1))
    km = lazyk.compile(px * 2 + py)
    lens = rng.integers(0, 8, 40)
    x, _ = rows(rng, lens)
    y, _ = rows(rng, lens)
    k(x, y), km(x, y)  # first calls: the general path, then prepared
    prepared, plans = launch_stats["prepared"], nest_stats["plans"]
    compiles = nest_stats["compiles"]
    for _ in range(6):  # new arrays of the same types each call
        x, xl = rows(rng, lens)
        y, yl = rows(rng, lens)
        want = [sum(u * 2 + v for u, v in zip(r, s)) for r, s in zip(xl, yl)]
        got = k(x, y)
        assert got.type == lazyk.dshape("40 * float64")
        np.testing.assert_allclose(got.to_numpy(), want)
        mapped = km(x, y)
        assert str(mapped.type) == "40 * var * float64"
        assert mapped.to_list() == [[u * 2 + v for u, v in zip(r, s)] for r, s in zip(xl, yl)]
    assert launch_stats["prepared"] == prepared
    assert nest_stats["plans"] == plans and nest_stats["compiles"] == compiles
    # arrays that take turns: each call reads its own (the last call's words are kept)
    (x1, l1), (x2, l2) = rows(rng, lens), rows(rng, lens)
    for a, al in ((x1, l1), (x2, l2), (x1, l1), (x1, l1), (x2, l2)):
        np.testing.assert_allclose(k(a, a).to_numpy(), [sum(3 * u for u in r) for r in al])
    # and none is kept alive by the compiled expression
    import weakref
    gone = weakref.ref(x1)
    del x1, a
    gc.collect()
    assert gone() is None


def test_ragged_eval_of_rebuilt_expressions_prepares_once():
    rng = np.random.default_rng(4)
    lens = rng.integers(0, 6, 25)
    x, _ = rows(rng, lens)
    y, _ = rows(rng, lens)
    (x * 3 - y).sum(axis=-1).eval()
    prepared = launch_stats["prepared"]
    for _ in range(5):
        x, xl = rows(rng, lens)
        y, yl = rows(rng, lens)
        got = (x * 3 - y).sum(axis=-1).eval()
        np.testing.assert_allclose(
            got.to_numpy(), [sum(u * 3 - v for u, v in zip(r, s)) for r, s in zip(xl, yl)])
    assert launch_stats["prepared"] == prepared


def test_new_ragged_expression_finds_its_nest_from_its_build_token(monkeypatch):
    """A new expression over var / option arrays of types seen before launches its prepared
    nest in one look-up (no binding by structure); other types, or one array in two places,
    never reuse a wrong nest."""
    rng = np.random.default_rng(6)
    lens = rng.integers(0, 6, 20)
    cases = [rows(rng, lens), rows(rng, lens)]
    (cases[0][0] * 3 - cases[1][0]).sum(axis=-1).eval()
    (cases[0][0] * 3 - cases[0][0]).sum(axis=-1).eval()

    def refused(*args):
        raise AssertionError("bound by structure again")
    monkeypatch.setattr(stringeval, "_bind_expr", refused)
    for _ in range(3):
        (x, xl), (y, yl) = rows(rng, lens), rows(rng, lens)
        got = (x * 3 - y).sum(axis=-1).eval()
        assert got.type == lazyk.dshape("20 * float64")
        np.testing.assert_allclose(
            got.to_numpy(), [sum(u * 3 - v for u, v in zip(r, s)) for r, s in zip(xl, yl)])
        got = (x * 3 - x).sum(axis=-1).eval()  # one array in both places
        np.testing.assert_allclose(got.to_numpy(), [sum(2 * u for u in r) for r in xl])
    monkeypatch.undo()
    for dtype, missing in ((np.float32, 0.0), (np.int64, 0.0), (np.float64, 0.3)):
        (x, xl), (y, yl) = rows(rng, lens, dtype, missing), rows(rng, lens, dtype, missing)
        xl, yl = x.to_list(), y.to_list()
        got = (x * 3 - y).sum(axis=-1).eval()
        assert got.type == lazyk.dshape(f"20 * {'?' if missing else ''}{np.dtype(dtype)}")
        want = [None if None in r + s else sum(3 * u - v for u, v in zip(r, s))
                for r, s in zip(xl, yl)]
        assert [g if g is None else pytest.approx(w, rel=1e-5)
                for g, w in zip(got.to_list(), want)] == want


def test_ragged_fast_path_with_missing_values_and_other_dtypes():
    rng = np.random.default_rng(5)
    lens = rng.integers(0, 6, 30)
    px = lazyk.placeholder("x", "N * var * ?float64")
    k = lazyk.compile((px + 1).sum(axis=-1, skipna=True))
    km = lazyk.compile(px * 2)
    kmax = lazyk.compile((px + 0).max(axis=-1))
    for _ in range(4):
        x, xl = rows(rng, lens, missing=0.3)
        np.testing.assert_allclose(
            k(x).to_numpy(), [sum(v + 1 for v in r if v is not None) for r in xl])
        assert km(x).to_list() == [[None if v is None else v * 2 for v in r] for r in xl]
        want = [None if any(v is None for v in r) or not r else max(r) for r in xl]
        assert kmax(x).to_list() == want
    i4 = lazyk.placeholder("i", "N * var * int32")
    ki = lazyk.compile((i4 * 2).sum(axis=-1))
    for _ in range(3):
        vals = [list(rng.integers(-5, 5, n)) for n in lens]
        a = lazyk.array(vals, type=f"{len(lens)} * var * int32")
        got = ki(a)
        assert got.to_numpy().dtype == np.int64
        assert got.to_list() == [int(sum(2 * v for v in r)) for r in vals]


def test_ragged_fast_path_raises_shape_error_naming_the_row():
    rng = np.random.default_rng(6)
    px = lazyk.placeholder("x", "N * var * float64")
    py = lazyk.placeholder("y", "N * var * float64")
    k = lazyk.compile((px * 2 + py).sum(axis=-1))
    lens = np.full(10, 3)
    x, _ = rows(rng, lens)
    y, _ = rows(rng, lens)
    k(x, y), k(x, y), (x * 2 + y).sum(axis=-1).eval()  # prepared
    prepared = launch_stats["prepared"]
    bad = lens.copy()
    bad[7] = 4
    y2, _ = rows(rng, bad)
    for run in (lambda: k(x, y2), lambda: (x * 2 + y2).sum(axis=-1).eval()):
        for _ in range(2):
            with pytest.raises(lazyk.ShapeError, match=r"row 7: operand 0 has length 3 and "
                                                       r"operand 1 has length 4"):
                run()
    assert launch_stats["prepared"] == prepared
    with pytest.raises(lazyk.TypeMatchError):  # (a missing value for a parameter without)
        k(x, lazyk.array([[1, None, 2]] * 10, type="10 * var * ?float64"))


def test_ragged_fast_path_declines_what_it_does_not_cover():
    """Rows of two offsets arrays in a map need a count pass; a string leaf its own step:
    the general path runs them, with the same results."""
    rng = np.random.default_rng(7)
    px = lazyk.placeholder("x", "N * var * float64")
    py = lazyk.placeholder("y", "N * var * float64")
    km = lazyk.compile(px + py)
    lens = rng.integers(0, 5, 12)
    for _ in range(3):
        x, xl = rows(rng, lens)
        y, yl = rows(rng, lens)  # (their own offsets arrays)
        assert km(x, y).to_list() == [[u + v for u, v in zip(r, s)] for r, s in zip(xl, yl)]
    # the same type over unaligned values: the prepared kernel's loads assume alignment
    offsets = np.arange(0, 41, 4)
    raw = np.frombuffer(np.arange(8 * 40 + 1, dtype=np.uint8).tobytes(), np.uint8)
    unaligned = np.frombuffer(raw.data, np.float64, count=40, offset=1)
    assert not unaligned.flags.aligned
    k = lazyk.compile((px * 2).sum(axis=-1))
    aligned = lazyk.from_offsets(offsets, np.arange(40.0))
    k(aligned), k(aligned)
    got = k(lazyk.from_offsets(offsets, unaligned))
    np.testing.assert_allclose(got.to_numpy(), (unaligned * 2).reshape(10, 4).sum(axis=1))
    s = lazyk.array([["a", "bb"], [], ["ccc"]])
    for _ in range(2):
        assert (lazyk.str_len(s) * 2).eval().to_list() == [[2, 4], [], [6]]


def _on_reused_block(x) -> bool:
    """Whether array `x` lives in an output block that `lazyk.arrays.outputs` reuses."""
    while x is not None and not hasattr(x, "block"):
        x = getattr(x, "base", None)
    return x is not None


def test_threaded_eval_runs_what_the_compiled_call_runs(monkeypatch):
    """At threaded sizes `.eval()` over new leaves and `evaluate(string)` take the compiled
    call's path: one native guard that runs a pool record of the same thread plan and
    layout class, outputs from the same allocator; no bind and no Python pool call."""
    from lazyk.backend import threads
    from lazyk.kernel import dispatch

    n = 1 << 22  # 32 MiB outputs: large enough that their blocks are reused
    rng = np.random.default_rng(11)
    a, b = rng.random(n), rng.random(n)
    pa, pb = lazyk.placeholder("a", "N * float64"), lazyk.placeholder("b", "N * float64")
    k = lazyk.compile(2 * pa + 3 * pb)
    local = {"a": a, "b": b}
    for _ in range(4):  # each path plans and binds (its guard comes at the second bind)
        k(a, b)
        e = 2 * lazyk.array(a) + 3 * lazyk.array(b)
        e.eval()
        lazyk.evaluate("2*a + 3*b", local_dict=local)
    mine, theirs = e._launch.func.__self__.dispatch.threaded, k._t_new[4]
    assert mine is not None and theirs is not None
    plan = lambda r: (r.parts, *r.buf[8:13], r._ck.layout,  # noqa: E731
                      r._ck.compiled.layout, r._ck.compiled.spec.aligned)
    assert plan(mine) == plan(theirs)  # parts, chunks, layout (class), alignment
    calls = []
    real_bind, real_for = dispatch.bind, threads.parallel_for
    monkeypatch.setattr(dispatch, "bind", lambda *x, **kw: calls.append("bind")
                        or real_bind(*x, **kw))
    monkeypatch.setattr(threads, "parallel_for", lambda *x: calls.append("pool")
                        or real_for(*x))
    for _ in range(2):
        a2, b2 = rng.random(n), rng.random(n)
        local = {"a": a2, "b": b2}
        want = 2 * a2 + 3 * b2
        got = [k(a2, b2), (2 * lazyk.array(a2) + 3 * lazyk.array(b2)).eval().to_numpy(),
               lazyk.evaluate("2*a + 3*b", local_dict=local)]
        for x in got:
            assert type(x) is np.ndarray and x.shape == (n,) and x.dtype == np.float64
            np.testing.assert_allclose(x, want, rtol=1e-15)
            assert _on_reused_block(x)  # the compiled call's allocator
        del got, x
    assert calls == []


# --- the bench rows ---------------------------------------------------------------------------

def test_call_overhead_rows_are_checked_and_name_their_goals():
    from lazyk.bench.overhead import markdown, overhead_rows

    got = overhead_rows({"numpy", "lazyk"}, samples=1, target_s=0.0005)
    assert {r["case"] for r in got} == {"O1", "O2", "O3", "O4", "O5"}
    assert all("seconds" in r and r["correct"] for r in got), got
    goals = {r["case"]: r for r in got if "goal" in r}
    assert set(goals) == {"O1", "O2", "O3", "O4", "O5"}
    assert goals["O3"]["tool"] == "lazyk compiled" and goals["O2"]["goal"] == "at most 3 us"
    assert all(r["vs_numpy"] > 0 for r in got)
    text = "\n".join(markdown(got))
    assert "## Call overhead" in text and "| O4 |" in text
    assert "NumPy's O1 took 2.1 us; in this run it took" in text


def test_fast_paths_from_several_threads_agree():
    from concurrent.futures import ThreadPoolExecutor

    px = lazyk.placeholder("x", "N * var * float64")
    k = lazyk.compile((px * 2 - 1).sum(axis=-1))

    def run(seed):
        rng = np.random.default_rng(seed)
        for _ in range(20):
            a, b = rng.random(64), rng.random(64)
            dense = (2 * lazyk.array(a) + 3 * lazyk.array(b)).eval().to_numpy()
            x, xl = rows(rng, rng.integers(0, 5, 16))
            ragged = k(x).to_numpy()
            again = (x * 2 - 1).sum(axis=-1).eval().to_numpy()
            want = [sum(2 * u - 1 for u in r) for r in xl]
            if not (np.allclose(dense, 2 * a + 3 * b) and np.allclose(ragged, want) and
                    np.allclose(again, want)):
                return False
        return True
    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(run, range(8)))
