"""Var rows broadcast against a fixed dim: rows that cannot pair raise the ShapeError naming
the row before the (possibly n x n) result is allocated; rows that pair still compute."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import lazyk
from lazyk.runtime import nest_run

_HUGE = """
import resource, sys
import numpy as np, lazyk
resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))  # no n x n result fits
n, bad = int(sys.argv[1]), int(sys.argv[2])
lengths = np.ones(n, np.int64)
lengths[bad] = 2
offsets = np.concatenate([[0], np.cumsum(lengths)])
x = lazyk.from_offsets(offsets, np.ones(int(offsets[-1])))
k = lazyk.compile(lazyk.placeholder("x", "N * var * float64") - lazyk.placeholder("y", "N * float64"))
for run in (lambda: (x - np.arange(n)).eval(), lambda: k(x, np.arange(n, dtype=np.float64))):
    try:
        run()
    except lazyk.ShapeError as e:
        print(type(e).__name__, e)
    else:
        print("no error")
"""


@pytest.mark.parametrize("bad", [0, 999_999])
def test_rows_that_cannot_pair_raise_before_the_result_is_allocated(bad):
    r = subprocess.run([sys.executable, "-c", _HUGE, "1000000", str(bad)], capture_output=True,
                       text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert len(lines) == 2, r.stdout
    for line in lines:  # no MemoryError for 1e12 elements: the row is named
        assert line.startswith("ShapeError"), line
        assert f"row {bad}:" in line and "has length 2" in line and "1000000" in line


def test_large_results_whose_rows_pair_are_computed(monkeypatch):
    monkeypatch.setattr(nest_run, "CHECK_FIRST", 1024)  # the check pass runs here
    n = 300
    rows = [[float(i)] if i % 3 else [float(j) for j in range(n)] for i in range(n)]
    x = lazyk.array(rows)
    got = np.asarray((x - np.arange(n)).eval())
    want = np.array([r * n if len(r) == 1 else r for r in rows]) - np.arange(n)
    assert got.dtype == want.dtype and got.shape == want.shape == (n, n)
    np.testing.assert_array_equal(got, want)
    got = np.asarray((x * np.arange(n)).sum(axis=-1).eval())  # a reduce pass checks too
    stretched = want + np.arange(n)  # x's rows, those of length 1 repeated
    np.testing.assert_allclose(got, (stretched * np.arange(n)).sum(axis=-1), rtol=1e-12)
    rows[-1] = [1.0, 2.0]
    with pytest.raises(lazyk.ShapeError, match=f"row {n - 1}: operand .* has length 2"):
        (lazyk.array(rows) - np.arange(n)).eval()
