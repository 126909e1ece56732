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
