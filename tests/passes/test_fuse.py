"""Fusion: one KernelSpec per reduction plus one for trailing elementwise work."""
import numpy as np

import lazyk
from lazyk.frontend import expr as E
from lazyk.passes.fold import fold_constants
from lazyk.passes.fuse import fuse_elementwise


def test_elementwise_dag_is_one_kernel_and_shared_node_computed_once():
    x, y = np.arange(5.0), np.ones(5)
    a, b = E.as_expr(x), E.as_expr(y)
    s = E.sin(a)
    e = s * b + s / 2
    prog = fuse_elementwise(e.node)
    assert len(prog.steps) == 1
    spec = prog.steps[0].spec
    assert [i.op for i in spec.body].count("sin") == 1
    assert [i.op for i in spec.body].count("load") == 2
    assert spec.reduce is None and spec.inputs == (np.dtype("f8"),) * 2
    np.testing.assert_allclose(lazyk.evaluate(e), np.sin(x) * y + np.sin(x) / 2)


def test_final_reduction_fuses_into_the_kernel():
    x = np.arange(6.0).reshape(2, 3)
    e = (E.as_expr(x) * 2 + 1).sum(axis=1)
    prog = fuse_elementwise(e.node)
    assert len(prog.steps) == 1
    step = prog.steps[0]
    assert step.spec.reduce == "sum" and step.axes == (1,)
    np.testing.assert_array_equal(lazyk.evaluate(e), (x * 2 + 1).sum(axis=1))


def test_reduction_feeding_elementwise_splits_kernels():
    x = np.arange(6.0).reshape(2, 3)
    a = E.as_expr(x)
    e = a / a.sum(axis=0) + 1
    prog = fuse_elementwise(e.node)
    assert len(prog.steps) == 2
    assert prog.steps[0].spec.reduce == "sum"
    assert prog.steps[1].inputs == (a.node.arg, 0)  # the leaf and kernel 0's result
    np.testing.assert_allclose(lazyk.evaluate(e), x / x.sum(axis=0) + 1)


def test_int_sum_accumulates_in_int64():
    x = np.full(300, 100, np.int8)
    e = lazyk.sum(x)
    spec = fuse_elementwise(e.node).steps[0].spec
    assert [i.op for i in spec.body] == ["load", "astype"]
    assert spec.outputs[0][1] == np.int64
    assert lazyk.evaluate(e) == 30000


def test_constant_program_has_no_kernel():
    prog = fuse_elementwise(fold_constants(E.add(np.float32(1), np.float32(2)).node))
    assert prog.steps == ()
