"""Hash-consed graph nodes: identity, immutability, dump, toposort."""
import pickle

import numpy as np
import pytest

from lazyk.frontend.graph import Node, dump, rewrite, toposort


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
