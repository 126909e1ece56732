"""Graph invariants: PASSES keep them; a broken node is reported with the graph around it."""
import numpy as np
import pytest

import lazyk
from lazyk.frontend import expr as E
from lazyk.frontend.check import GraphError, check_graph
from lazyk.frontend.graph import Node
from lazyk.runtime.launch import PASSES, run_passes


def test_every_pass_keeps_invariants():
    x, y = E.as_expr(np.arange(4.0)), E.as_expr(np.arange(4, dtype=np.int8))
    e = (x * y + E.add(np.float64(1), np.float64(2)) - (y * x)).sum()
    trace = []
    run_passes(e.node, check=True, trace=trace)
    assert [name for name, _ in trace] == ["input"] + [name for name, _ in PASSES]


def test_wrong_operand_dtype_is_reported():
    a = Node("input", np.float32, (3,), (), "a")
    b = Node("input", np.float64, (3,), (), "b")
    bad = Node("add", np.float64, (3,), (a, b))  # float32 operand not cast to the loop
    with pytest.raises(GraphError, match=r"not the loop.*\n.*\n.*\n> %2 = add"):
        check_graph(bad, after="test")


def test_bad_shape_and_reduction_are_reported():
    a = Node("input", np.float64, (3,), (), "a")
    with pytest.raises(GraphError, match="shape"):
        check_graph(Node("sin", np.float64, (4,), (a,)))
    with pytest.raises(GraphError, match="reduction"):
        check_graph(Node("reduce", np.float64, (), (a,), ("sum", (1,), False)))
    with pytest.raises(GraphError, match="weak"):
        check_graph(Node("add", np.float64, (3,), (a, Node("scalar", np.int64, (), (), 1))))


def test_built_expressions_are_valid():
    for e in (lazyk.where(np.ones(3) > 0, np.ones(3, np.float32), 2),
              lazyk.clip(np.arange(3), 0, 1.5), lazyk.mean(np.ones((2, 2), np.float16), 0)):
        check_graph(e.node)
