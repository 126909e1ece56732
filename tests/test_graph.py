"""Hash-consed graph nodes: identity, immutability, dump, toposort and the facts kept per
graph (order, ops, inputs)."""
import pickle
import random

import numpy as np
import pytest

import lazyk
from lazyk.frontend import graph
from lazyk.frontend.graph import Node, dump, graph_ops, input_names, rewrite, toposort
from lazyk.lru import Memo


def test_equal_nodes_are_one_object():
    a = Node("input", np.float64, (3,), (), "a")
    b = Node("input", np.float64, (3,), (), "b")
    assert Node("add", np.float64, (3,), (a, b)) is Node("add", "float64", [3], [a, b])
    assert Node("add", np.float64, (3,), (a, b)) is not Node("add", np.float64, (3,), (b, a))


def test_constants_of_different_python_types_stay_apart():
    one_int = Node("const", np.int64, (), (), 1)
    one_bool = Node("const", np.int64, (), (), True)
    one_float = Node("const", np.int64, (), (), 1.0)
    assert len({id(one_int), id(one_bool), id(one_float)}) == 3
    assert Node("const", np.float64, (), (), float("nan")) is \
        Node("const", np.float64, (), (), float("nan"))


def test_byte_order_is_part_of_identity():
    assert Node("input", ">f8", (2,), (), "a") is not Node("input", "<f8", (2,), (), "a")


def test_immutable_and_picklable():
    a = Node("input", np.float32, ("N",), (), "a")
    with pytest.raises(AttributeError):
        a.op = "x"
    n = Node("sin", np.float32, ("N",), (a,))
    assert pickle.loads(pickle.dumps(n)) is n


def test_dump_and_toposort():
    a = Node("input", np.float64, ("N",), (), "a")
    c = Node("const", np.float64, (), (), 2.0)
    m = Node("multiply", np.float64, ("N",), (a, c))
    s = Node("add", np.float64, ("N",), (m, m))
    assert toposort(s) == [a, c, m, s]
    assert dump(s) == ("%0 = input a : N * float64\n%1 = const 2.0 : float64\n"
                       "%2 = multiply(%0, %1) : N * float64\n%3 = add(%2, %2) : N * float64")


def test_rewrite_visits_each_node_once():
    a = Node("input", np.float64, (4,), (), "a")
    x = a
    for _ in range(200):  # deep and shared: no recursion limit, linear work
        x = Node("add", np.float64, (4,), (x, x))
    calls = []
    rewrite(x, lambda n, srcs: calls.append(n) or n.replace(srcs=srcs))
    assert len(calls) == 201


def _dag(seed: int, size: int = 120) -> list:
    rng = random.Random(seed)
    f8 = np.dtype(np.float64)
    nodes = [Node("input", f8, (4,), (), f"x{i}") for i in range(6)]
    for _ in range(size):
        a, b = rng.choice(nodes[-15:]), rng.choice(nodes)
        nodes.append(Node(rng.choice(["add", "multiply"]), f8, (4,), (a, b)))
    return nodes


def _reference_order(roots, descend=None) -> list:
    """Depth first, sources in order, each node after its sources (the definition)."""
    order, seen = [], set()

    def visit(n):
        if n in seen:
            return
        seen.add(n)
        if descend is None or descend(n):
            for s in n.srcs:
                visit(s)
        order.append(n)
    for r in roots:
        visit(r)
    return order


def test_toposort_order_and_kept_facts_match_a_walk():
    for seed in range(20):
        nodes = _dag(seed)
        root = nodes[-1]
        want = _reference_order([root])
        assert toposort(root) == want and toposort(root) == want  # (walked, then kept)
        got = toposort(root)
        got.append(None)  # a caller's list is its own: the kept order is unchanged
        assert toposort(root) == want
        assert graph_ops(root) == {n.op for n in want}
        assert input_names(root) == tuple(dict.fromkeys(n.arg for n in want
                                                        if n.op == "input"))
        roots = nodes[-30:-27]
        stop = {n for n in nodes if hash(n) % 5 == 0}
        assert toposort(roots) == _reference_order(roots)
        assert toposort(roots, descend=lambda n: n not in stop) == \
            _reference_order(roots, lambda n: n not in stop)


def test_a_second_evaluation_walks_none_of_its_graph_again(monkeypatch):
    rng = np.random.default_rng(0)
    offsets = np.concatenate([[0], np.cumsum(rng.integers(0, 5, 50))])
    x = lazyk.from_offsets(offsets, rng.random(offsets[-1]))
    sel = x[lazyk.num(x) >= 2]
    pairs = lazyk.combinations(sel, 2, fields=["a", "b"])
    e = lazyk.sum(pairs.a * pairs.b, axis=1)
    for memo in ("_orders", "_ops", "_shared"):  # (empty: none emptied mid-test when full)
        monkeypatch.setattr(graph, memo, Memo(1 << 10))
    walked, walk = [], graph._walk
    monkeypatch.setattr(graph, "_walk", lambda roots, descend: walked.append(roots) or
                        walk(roots, descend))
    first = lazyk.evaluate(e).to_list()
    mine = set(walk((e.node,), None))
    assert any(r in mine for roots in walked for r in roots)
    walked.clear()
    assert lazyk.evaluate(e).to_list() == first
    assert walked and not any(r in mine for roots in walked for r in roots)
