"""lazyk.hooks: earlier stages reach the runtime through services `import lazyk` installs.

Arrays and expressions never import the runtime; these tests check the routes they take
instead (evaluate, compile, explain, devices, `out=`), and that a missing service or front
end is a clear RuntimeError rather than a crash.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

import lazyk
from lazyk import hooks
from lazyk.arrays import operators

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "docs"))
import import_graph  # noqa: E402

sys.path.pop(0)

# The array stage and the expression front end: no lazyk import inside a function, none of
# a later stage (they go through lazyk.hooks and the registered front end instead).
EARLY = ("lazyk.hooks", "lazyk.arrays.memory", "lazyk.arrays.indexpath", "lazyk.arrays.arrmeta", "lazyk.arrays.infer",
         "lazyk.arrays.operators", "lazyk.arrays.views", "lazyk.arrays.array", "lazyk.frontend.graph", "lazyk.frontend.numpy_rules",
         "lazyk.frontend.leaves", "lazyk.frontend.missing", "lazyk.frontend.expression",
         "lazyk.frontend.operands", "lazyk.frontend.structure", "lazyk.frontend.strings",
         "lazyk.frontend.ufuncs", "lazyk.frontend.indexing", "lazyk.frontend.reductions",
         "lazyk.frontend.expr", "lazyk.frontend.check")


def test_every_hook_is_installed_by_import_lazyk():
    assert set(hooks.NAMES) == {"evaluate", "compile", "explain", "as_device_array",
                                "to_device", "from_arrow", "to_arrow", "from_awkward", "var_rows",
                                "evaluate_many", "array_ufunc", "array_function", "launch",
                                "rows_rise", "sort_rows", "sort_values"}
    assert all(name in hooks._services for name in hooks.NAMES)
    x = np.arange(6.0)
    e = lazyk.sqrt(lazyk.array(x)) * 2
    out = hooks.evaluate(e)
    assert isinstance(out, np.ndarray) and out.dtype == np.float64 and out.shape == (6,)
    np.testing.assert_allclose(out, np.sqrt(x) * 2)
    buf = np.zeros(6, np.float32)
    assert hooks.evaluate(e, out=buf) is buf
    np.testing.assert_allclose(buf, (np.sqrt(x) * 2).astype(np.float32), rtol=1e-6)
    f = hooks.compile(lazyk.placeholder("a", "N * float64") + 1.0)
    assert isinstance(f, lazyk.CompiledExpr)
    np.testing.assert_array_equal(f(x), x + 1.0)
    text = hooks.explain(e)
    assert isinstance(text, str) and text.startswith("== expression: 6 * float64")
    assert repr(text) == str(text)  # an Explanation: the REPL prints the text itself


def test_expr_methods_go_through_the_hooks(monkeypatch):
    calls = []

    def evaluate(expr, out=None, casting="same_kind"):
        calls.append(("evaluate", casting))
        return np.full(expr.shape, 7.0)

    monkeypatch.setitem(hooks._services, "evaluate", evaluate)
    # `.eval()` asks the runtime's launch first; NotImplemented: `evaluate` computes it
    monkeypatch.setitem(hooks._services, "launch",
                        lambda expr: calls.append("launch") or NotImplemented)
    monkeypatch.setitem(hooks._services, "compile", lambda expr: ("compiled", expr))
    monkeypatch.setitem(hooks._services, "explain", lambda expr, target: f"text {target}")
    e = lazyk.array(np.arange(3.0)) + 1
    res = e.eval()
    assert isinstance(res, lazyk.Array) and res.to_list() == [7.0, 7.0, 7.0]
    assert e.to_numpy().tolist() == [7.0, 7.0, 7.0]
    assert e.compile() == ("compiled", e)
    assert e.explain() == "text cpu" and e.explain(target="cuda") == "text cuda"
    assert calls == ["launch", ("evaluate", "same_kind"), ("evaluate", "same_kind")]


def test_reduction_out_goes_through_evaluate_with_unsafe_casting():
    a = lazyk.array(np.array([1.5, 2.5, 3.5]))
    out = np.zeros((), np.int64)
    assert a.sum(out=out) is out and out == 7  # 7.5 cast unsafely, as NumPy's sum does
    out2 = np.zeros((), np.int64)
    assert np.sum(a, out=out2) is out2 and out2 == 7
    assert a.sum(initial=1).to_numpy() == np.sum(a.to_numpy(), initial=1) == 8.5
    with pytest.raises(lazyk.NotSupportedError, match="initial= is supported for sum, prod"):
        a.mean(initial=1)
    with pytest.raises(lazyk.NotSupportedError, match="where= is not supported"):
        a.min(where=np.ones(3, bool))
    assert a.min(initial=0.5).to_numpy() == 0.5


def test_device_moves_go_through_the_hooks(monkeypatch):
    a = lazyk.array([1.0, 2.0])
    assert a.to("cpu") is a and a.to(None) is a and a.to(" CPU ") is a
    ragged = lazyk.array([[1], [2, 3]])
    with pytest.raises(lazyk.DeviceError, match="unknown device 'tpu'"):
        ragged.to("tpu")  # the name is checked first, whatever the array holds
    with pytest.raises(lazyk.NotSupportedError, match="var dimensions"):
        ragged.to("cuda")
    seen = []
    monkeypatch.setitem(hooks._services, "to_device",
                        lambda obj, device: seen.append((obj.tolist(), device)) or "moved")
    assert a.to("cuda") == "moved"
    assert lazyk.array([3, 4], device="cuda:1") == "moved"
    assert seen == [([1.0, 2.0], "cuda"), ([3, 4], "cuda:1")]


def test_cuda_array_interface_operands_use_as_device_array(monkeypatch):
    class FakeGpu:
        __cuda_array_interface__ = {}

    monkeypatch.setitem(hooks._services, "as_device_array",
                        lambda obj: np.arange(4, dtype=np.int32))
    e = lazyk.add(FakeGpu(), 1)
    assert e.shape == (4,) and e.dtype == np.int32  # a weak Python int keeps int32


def test_an_uninstalled_hook_is_a_clear_runtime_error(monkeypatch):
    monkeypatch.setattr(hooks, "_services", {})
    e = lazyk.array([1.0]) + 1
    for call in (e.eval, e.to_numpy, e.compile, e.explain,
                 lambda: lazyk.array([1.0]).sum(out=np.zeros(())),
                 lambda: lazyk.array([1.0]).to("cuda")):
        with pytest.raises(RuntimeError, match=r"lazyk\.hooks\.\w+ is not installed"):
            call()


def test_install_refuses_unknown_services():
    with pytest.raises(TypeError, match="no service"):
        hooks.install(evaluat=print)


def test_operators_without_a_front_end_raise_runtime_error(monkeypatch):
    a = lazyk.array([1.0, 2.0])
    assert operators.front_end() is lazyk.frontend.expr
    monkeypatch.setattr(operators, "_front_end", [])
    for call in (lambda: a + 1, lambda: -a, lambda: a.sum(), lambda: a.real,
                 lambda: np.sin(a)):
        with pytest.raises(RuntimeError, match="no lazyk front end is registered"):
            call()


def test_hooks_reach_the_runtime_in_a_fresh_interpreter():
    # Importing a submodule first still runs lazyk/__init__ (and so installs the hooks).
    import subprocess

    code = ("import numpy as np; from lazyk.arrays.array import array; "
            "print((array(np.arange(3.0)) * 2).eval().to_list())")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[0.0, 2.0, 4.0]"


def test_early_stages_import_nothing_later_or_inside_functions():
    order = import_graph.stage_of
    bad = [(a, b, line) for a, b, inner, line in import_graph.edges()
           if a in EARLY and (inner or order(b) > order(a))]
    assert not bad, f"imports inside functions or of later stages: {bad}"


def test_ufunc_methods_lazyk_lacks_run_numpys_on_fixed_arrays():
    x = lazyk.array(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(np.maximum.accumulate(x, axis=1),
                                  np.maximum.accumulate(np.arange(6.0).reshape(2, 3), axis=1))
    np.testing.assert_array_equal(np.add.outer(lazyk.array([1, 2]), lazyk.array([10, 20])),
                                  [[11, 21], [12, 22]])
    with pytest.raises(lazyk.NotSupportedError, match="var dims"):  # no NumPy form
        np.maximum.accumulate(lazyk.array([[1.0], [2.0, 3.0]]), axis=1)
    with pytest.raises(lazyk.NotSupportedError, match="evaluate first"):  # lazy: never eager
        np.maximum.accumulate(x * 2, axis=1)
