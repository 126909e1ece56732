"""CSE: commutative operands sorted so a+b and b+a are one node; values unchanged."""
import numpy as np

from lazyk.frontend import expr as E
from lazyk.frontend.check import check_graph
from lazyk.frontend.graph import dump, toposort
from lazyk.passes.cse import eliminate_common_subexpressions
from lazyk.passes.fuse import fuse_elementwise
from lazyk.runtime.launch import run_program


def test_hash_consing_already_shares_equal_subtrees():
    a = E.as_expr(np.arange(3.0))
    assert (E.sin(a) + 1).node is (E.sin(a) + 1).node


def test_commuted_operands_merge():
    x, y = np.arange(4.0), np.arange(4.0)[::-1].copy()
    a, b = E.as_expr(x), E.as_expr(y)
    e = (a * b) - (b * a)
    before = dump(e.node)
    after = eliminate_common_subexpressions(e.node)
    check_graph(after)
    assert before.count("multiply") == 2 and dump(after).count("multiply") == 1
    assert len(toposort(after)) == len(toposort(e.node)) - 1
    env = {a.node.arg: x, b.node.arg: y}
    np.testing.assert_array_equal(run_program(fuse_elementwise(after), env),
                                  run_program(fuse_elementwise(e.node), env))


def test_non_commutative_ops_untouched():
    a, b = E.as_expr(np.ones(2)), E.as_expr(np.zeros(2))
    e = (a - b) + (b - a)
    assert dump(eliminate_common_subexpressions(e.node)).count("subtract") == 2


def test_deep_shared_dag_is_linear():
    x = E.as_expr(np.ones(2))
    for _ in range(300):
        x = x + x
    out = eliminate_common_subexpressions(x.node)
    assert len(toposort(out)) == 301


def test_commutativity_is_a_property_of_the_op_row_and_its_dtypes():
    from lazyk.frontend import ops

    i8, f8, c16 = np.dtype("i8"), np.dtype("f8"), np.dtype("c16")
    for name in ("maximum", "minimum", "fmax", "fmin"):
        row = ops.get(name)
        assert row.commutative(i8, i8) and row.commutative(np.dtype(bool), np.dtype(bool))
        assert not row.commutative(f8, f8) and not row.commutative(c16, c16)
    assert ops.get("add").commutative(c16, c16) and ops.get("multiply").commutative(f8, f8)
    assert not ops.get("subtract").commutative(i8, i8)
    assert not ops.get("less").commutative(i8, i8) and ops.get("equal").commutative(f8, f8)


def test_float_min_max_operands_keep_their_order():
    a, b = E.as_expr(np.arange(4.0)), E.as_expr(np.arange(4.0)[::-1].copy())
    for name in ("maximum", "minimum", "fmax", "fmin"):
        fn = getattr(E, name)
        e = fn(a, b) - fn(b, a)
        assert dump(eliminate_common_subexpressions(e.node)).count(name) == 2
        ia, ib = E.as_expr(np.arange(4)), E.as_expr(np.arange(4)[::-1].copy())
        e = fn(ia, ib) - fn(ib, ia)  # integers: one node
        assert dump(eliminate_common_subexpressions(e.node)).count(name) == 1


def test_min_max_complex_nan_answer_does_not_depend_on_length():
    import lazyk

    for n in range(1, 6):
        x, y = np.full(n, complex(0, np.nan)), np.full(n, complex(1, np.nan))
        for name in ("maximum", "minimum", "fmax", "fmin"):
            for p, q in ((x, y), (y, x)):
                got = np.asarray(getattr(lazyk, name)(lazyk.array(p), lazyk.array(q)).eval())
                want = getattr(np, name)(p, q)
                assert got.dtype == want.dtype and got.shape == want.shape
                np.testing.assert_array_equal(got.real, want.real)
                assert np.isnan(got.imag).all() and np.isnan(want.imag).all()


def test_min_max_signed_zeros_as_numpy():
    import lazyk

    for dt in ("f8", "f4"):
        for n in range(1, 18):
            pz, nz = np.zeros(n, dt), np.full(n, -0.0, dt)
            for name in ("maximum", "minimum"):
                for p, q in ((pz, nz), (nz, pz)):
                    got = np.asarray(getattr(lazyk, name)(lazyk.array(p), lazyk.array(q)).eval())
                    want = getattr(np, name)(p, q)
                    assert got.dtype == want.dtype and got.shape == want.shape
                    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
            for name in ("fmax", "fmin"):
                # NumPy's own fmax / fmin ties depend on the length; lazyk gives the second
                # operand (as NumPy's vectorized loop, and its maximum / minimum) at every one
                for p, q in ((pz, nz), (nz, pz)):
                    got = np.asarray(getattr(lazyk, name)(lazyk.array(p), lazyk.array(q)).eval())
                    np.testing.assert_array_equal(got, getattr(np, name)(p, q))
                    np.testing.assert_array_equal(np.signbit(got), np.signbit(q))
    # NaN: maximum / minimum give the first NaN (its sign too), fmax / fmin the number
    # (two NaNs: a NaN, whose sign NumPy's own loops pick by length)
    x = np.array([np.nan, 1.0, -np.nan, np.nan])
    y = np.array([2.0, np.nan, np.nan, -np.nan])
    for name in ("maximum", "minimum", "fmax", "fmin"):
        got = np.asarray(getattr(lazyk, name)(lazyk.array(x), lazyk.array(y)).eval())
        want = getattr(np, name)(x, y)
        np.testing.assert_array_equal(got, want)
        if name in ("maximum", "minimum"):
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
