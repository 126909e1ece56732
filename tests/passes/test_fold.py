"""Constant folding on small graphs: dumps before/after, same values as unfolded."""
import numpy as np

import lazyk
from lazyk.frontend import expr as E
from lazyk.frontend.check import check_graph
from lazyk.frontend.graph import dump
from lazyk.passes.fold import fold_constants
from lazyk.passes.fuse import fuse_elementwise
from lazyk.runtime.launch import run_program


def _run(node, env):
    return run_program(fuse_elementwise(node), env)


def test_all_constant_subgraph_becomes_one_const():
    x = np.arange(4.0)
    e = E.as_expr(x) * E.add(np.float64(2), np.float64(3))
    before = dump(e.node)
    folded = fold_constants(e.node)
    check_graph(folded)
    assert "add" in before and "add" not in dump(folded)
    assert dump(folded) == ("%0 = input " + e.node.srcs[0].arg + " : 4 * float64\n"
                            "%1 = const 5.0 : float64\n"
                            "%2 = multiply(%0, %1) : 4 * float64")
    env = {e.node.srcs[0].arg: x}
    np.testing.assert_array_equal(_run(folded, env), _run(e.node, env))


def test_fold_keeps_numpy_semantics():
    # int8 overflow wraps, 1/0 is inf, astype rounds like NumPy
    e = E.multiply(np.int8(100), np.int8(3))
    assert fold_constants(e.node).arg == np.int8(44)
    d = fold_constants(E.true_divide(np.float32(1), np.float32(0)).node)
    assert d.op == "const" and d.dtype == np.float32 and np.isinf(d.arg)
    c = fold_constants(lazyk.astype(np.float64(2.7), np.int16).node)
    assert (c.op, c.dtype, c.arg) == ("const", np.int16, 2)


def test_nothing_to_fold_is_identity():
    e = E.as_expr(np.ones(3)) + 1
    assert fold_constants(e.node) is e.node


def test_folded_expression_evaluates_to_const():
    e = E.sqrt(np.float64(16.0)) + np.float64(1.0)
    got = lazyk.evaluate(e)
    assert got.shape == () and got.dtype == np.float64 and got == 5.0
