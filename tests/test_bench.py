"""A tiny run of the benchmark harness: every peer row present and checked, files written."""
from __future__ import annotations

import json

import numpy as np
import pytest

from lazyk.bench import suite as bench
from lazyk.cli import build_parser


def test_bench_smoke(tmp_path, capsys) -> None:
    # Numba is left out here (its compiles dominate the run); test_numba_kernels covers it.
    args = build_parser().parse_args(["bench", "--sizes", "1000", "--cases", "E1", "E9", "E10",
                                      "--tools", "numpy", "numexpr", "lazyk",
                                      "--bandwidth-n", "200000", "--out", str(tmp_path)])
    assert args.func(args) == 0
    res = json.loads((tmp_path / "results.json").read_text())
    md = (tmp_path / "results.md").read_text()
    rows = res["rows"]
    assert {r["case"] for r in rows} == {"E1", "E9", "E10"}
    numpy_rows = [r for r in rows if r["family"] == "numpy"]
    assert len(numpy_rows) == 3 and all(r["vs_numpy"] == pytest.approx(1.0) for r in numpy_rows)
    for r in rows:  # a row either ran and matched NumPy, or says why not; never silently faked
        assert ("seconds" in r and r["correct"]) or "error" in r
        if "seconds" in r:
            assert r["gbps"] > 0 and r["seconds"] > 0
    assert not any(r["mode"] == "out" and r["case"] == "E10" for r in rows)  # no out= for reductions
    assert set(res["bandwidth"]) == {"copy", "triad", "read", "read2"}
    assert "## n = 1,000" in md and "| E9 |" in md
    assert res["once"]["import_ms"] > 0
    assert "[" in capsys.readouterr().out  # per-line progress
    # Each lazyk spelling is its own row, checked against NumPy like every other row.
    for spelling, modes in (("compiled", {"fresh", "out"}), ("evaluate", {"fresh", "out"}),
                            ("eval", {"fresh"})):
        got = [r for r in rows if r["family"] == "lazyk" and r["spelling"] == spelling]
        assert {r["mode"] for r in got} == modes, spelling
        assert {r["case"] for r in got} == {"E1", "E9", "E10"}
        assert all(r["correct"] and r["seconds"] > 0 for r in got), got
    assert "## lazyk spellings, and numexpr.evaluate against lazyk.evaluate" in md
    assert "| 1e+03 | E9 |" in md.split("## lazyk spellings")[1]
    overhead = res["once"]["call_overhead_us"]
    assert overhead["lazyk evaluate('a + b')"] > 0 and overhead["lazyk (a + b).eval()"] > 0


def test_suite_cases_match_numpy() -> None:
    suite = bench.load_suite()
    assert [c.id for c in suite.CASES] == [f"E{i}" for i in range(1, 11)]
    data = suite.make_data(2000)
    assert data["a2"].shape == (2, 1000) and data["k"].shape == (2, 1) and data["xs"].strides == (16,)
    for case in suite.CASES:
        assert case.traffic(10**6) > 0


def test_numba_kernels_match_numpy() -> None:
    pytest.importorskip("numba")
    suite = bench.load_suite()
    data = suite.make_data(2000)
    for cid, parallel, fresh in (("E8", True, False), ("E9", False, True), ("E10", True, True)):
        case = next(c for c in suite.CASES if c.id == cid)
        args = [data[k] for k in case.names]
        f = suite.numba_fn(case, parallel=parallel, fresh=fresh)
        out = suite.out_for(case, data)
        got = f(*args) if fresh else (f(*args, out), out)[1]
        np.testing.assert_allclose(got, case.numpy(*args), rtol=1e-12)


def test_lazyk_spellings_match_numpy() -> None:
    suite = bench.load_suite()
    data = suite.make_data(3000)
    for case in suite.CASES:
        args = [data[k] for k in case.names]
        ref = case.numpy(*args)
        got = suite.lazyk_evaluate_fn(case, data, None)()
        assert type(got) is np.ndarray and got.shape == np.shape(ref)
        np.testing.assert_allclose(got, ref, rtol=1e-12)
        np.testing.assert_allclose(suite.lazyk_eval_fn(case, data)().to_numpy(), ref, rtol=1e-12)
        out = suite.out_for(case, data)
        if out is not None:
            assert suite.lazyk_evaluate_fn(case, data, out)() is out
            np.testing.assert_allclose(out, ref, rtol=1e-12)
