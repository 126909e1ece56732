"""Thread policy: environment variables, limits of set_num_threads, the threads() context."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import lazyk
from lazyk.backend import threads


def _cores() -> int:
    return os.cpu_count() or 1


@pytest.mark.parametrize("env, want", [
    ({}, None),
    ({"LAZYK_NUM_THREADS": "3"}, 3),
    ({"OMP_NUM_THREADS": "1"}, 1),
    ({"OMP_NUM_THREADS": "2,1"}, 2),
    ({"LAZYK_NUM_THREADS": "1", "OMP_NUM_THREADS": "4"}, 1),
    ({"LAZYK_NUM_THREADS": " 2 "}, 2),
])
def test_default_from_environment(env, want):
    assert threads.default_num_threads(env) == (want or _cores())


@pytest.mark.parametrize("bad", ["0", "-2", "two", "1.5"])
def test_bad_environment_value_is_ignored_with_a_warning(bad):
    with pytest.warns(RuntimeWarning, match="LAZYK_NUM_THREADS"):
        n = threads.default_num_threads({"LAZYK_NUM_THREADS": bad, "OMP_NUM_THREADS": "1"})
    assert n == 1


def test_environment_value_is_capped():
    huge = str(100 * _cores())
    with pytest.warns(RuntimeWarning, match="LAZYK_NUM_THREADS.*capped"):
        n = threads.default_num_threads({"LAZYK_NUM_THREADS": huge})
    assert n == threads.MAX_THREADS_PER_CORE * _cores()


def test_environment_read_at_import():
    code = "import lazyk; print(lazyk.get_num_threads())"
    for env, want in (({"LAZYK_NUM_THREADS": "1"}, "1"), ({"OMP_NUM_THREADS": "1"}, "1")):
        full = {k: v for k, v in os.environ.items()
                if k not in ("LAZYK_NUM_THREADS", "OMP_NUM_THREADS")}
        full.update(env)
        out = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == want


def test_set_num_threads_limits():
    before = lazyk.get_num_threads()
    try:
        for bad in (0, -1):
            with pytest.raises(ValueError, match=">= 1"):
                lazyk.set_num_threads(bad)
        with pytest.raises(TypeError):
            lazyk.set_num_threads(1.5)
        with pytest.warns(RuntimeWarning, match=r"lazyk\.set_num_threads\(\d+\): capped") as w:
            lazyk.set_num_threads(1000 * _cores())
        assert w[0].filename == __file__  # (the user's line)
        assert lazyk.get_num_threads() == threads.MAX_THREADS_PER_CORE * _cores()
        with pytest.warns(RuntimeWarning, match=r"lazyk\.threads\(\d+\): capped") as w:
            with lazyk.threads(1000 * _cores()):
                assert lazyk.get_num_threads() == threads.MAX_THREADS_PER_CORE * _cores()
        assert w[0].filename == __file__
    finally:
        lazyk.set_num_threads(before)
    assert lazyk.get_num_threads() == before


def test_threads_context_restores_and_results_match():
    before = lazyk.get_num_threads()
    a = np.linspace(0, 1, 300_000)
    with lazyk.threads(1):
        assert lazyk.get_num_threads() == 1
        one = lazyk.evaluate("sin(a) * 2")
    assert lazyk.get_num_threads() == before
    np.testing.assert_allclose(one, np.sin(a) * 2, rtol=1e-15)
    with pytest.raises(RuntimeError), lazyk.threads(1):
        raise RuntimeError("boom")
    assert lazyk.get_num_threads() == before
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError), lazyk.threads(0):
            pass
    assert lazyk.get_num_threads() == before
