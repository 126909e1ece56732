"""lazyk.runtime.launch.evaluate dispatches strings, var / option data and GPU leaves to the paths
that lazyk.runtime.stringeval, lazyk.runtime.ragged and lazyk.runtime.device install when imported."""
import subprocess
import sys

import numpy as np
import pytest

import lazyk
from lazyk.frontend.expr import as_expr
from lazyk.runtime import launch as runtime
from lazyk.runtime import ragged, stringeval


def test_every_path_is_installed_by_import_lazyk():
    assert set(runtime._paths) == set(runtime.PATHS)
    assert runtime._paths["string"] is stringeval.evaluate_string
    assert runtime._paths["ragged"] is ragged.evaluate_if_ragged


def test_unknown_path_name_is_refused():
    with pytest.raises(ValueError, match="unknown evaluation path"):
        runtime.install_path("tpu", lambda *a: None)


def test_missing_path_raises_a_clear_error(monkeypatch):
    monkeypatch.setattr(runtime, "_paths", {})
    with pytest.raises(RuntimeError, match="'string' evaluation path is not installed"):
        runtime.evaluate("a + 1", local_dict={"a": np.ones(3)})


def test_ragged_path_declines_plain_arrays():
    assert ragged.evaluate_if_ragged(as_expr(np.arange(3.0))) is NotImplemented
    x = lazyk.array([[1.0, 2.0], [3.0]], type="2 * var * float64")
    got = runtime.evaluate(lazyk.sum(x, axis=1))
    np.testing.assert_array_equal(got.to_numpy(), [3.0, 3.0])


def test_compiled_on_dask_loads_lazyk_dask_when_needed():
    pytest.importorskip("dask.array")
    # `import lazyk` does not import Dask; a Dask input loads lazyk.dask and runs lazily.
    code = ("import sys, numpy as np, lazyk\n"
            "print('dask before:', 'dask.array' in sys.modules, 'lazyk.dask' in sys.modules)\n"
            "import dask.array as da\n"
            "k = lazyk.compile(2 * lazyk.placeholder('a', 'N * float64'))\n"
            "r = k(da.ones(4, chunks=2))\n"
            "print(type(r).__module__, r.compute().tolist())\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "dask before: False False" in p.stdout
    assert "dask.array.core [2.0, 2.0, 2.0, 2.0]" in p.stdout
