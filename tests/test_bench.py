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
    assert "## n = 1,000" in md and "| E9 | `x[::2] + y[::2]` |" in md
    assert all(isinstance(r["in_cache"], bool) for r in rows if "seconds" in r)
    assert [c["case"] for c in res["chart"]["panels"][0]["cells"]] == ["E1", "E9", "E10"]
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
    assert "| 1e+03 | E9 `x[::2] + y[::2]` |" in md.split("## lazyk spellings")[1]
    overhead = res["once"]["call_overhead_us"]
    assert overhead["lazyk evaluate('a + b')"] > 0 and overhead["lazyk (a + b).eval()"] > 0


@pytest.mark.parametrize("argv, message", [
    (["--sizes", "-5"], "--sizes: must be at least 1"), (["--sizes", "x"], "not a number"),
    (["--cases", "E99"], "--cases: unknown E99"), (["--adl", "--adl-events", "0"], "at least 1")])
def test_bench_refuses_bad_arguments_with_a_usage_error(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        args = build_parser().parse_args(["bench", "--tools", "lazyk", "--out", str(tmp_path),
                                          *argv])
        args.func(args)
    assert exc.value.code == 2 and message in capsys.readouterr().err


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


def _result(llc_mb=32.0) -> dict:
    """A small results dict as `lazyk bench` writes it: two cases at two sizes, each with
    NumPy, two peer rows and two lazyk rows (times in seconds)."""
    times = {"numpy": 4.0, "numexpr 2t": 2.0, "numba par": 1.0, "lazyk 2t": 0.5,
             "lazyk 2t out=": 0.8, "lazyk evaluate 2t": 0.1}
    family = {"numpy": "numpy", "numexpr 2t": "numexpr", "numba par": "numba"}
    rows = []
    for n in (1000, 10_000_000):
        for case, expr in (("E1", "a + b"), ("E7", "where(a > b, a - b, b - a)")):
            for tool, t in times.items():
                spelling = "evaluate" if "evaluate" in tool else "compiled"
                rows.append({"n": n, "case": case, "expr": expr, "tool": tool,
                             "family": family.get(tool, "lazyk"), "threads": 2,
                             "mode": "out" if "out=" in tool else "fresh",
                             "spelling": spelling, "correct": True, "seconds": t * n * 1e-9})
    traffic = {"E1": lambda n: 24 * n, "E7": lambda n: 24 * n}
    cases = [type("Case", (), {"id": c, "traffic": traffic[c], "reduce": False})
             for c in ("E1", "E7")]
    bw = {"triad": {"gbps": 10.0}, "read": {"gbps": 10.0}}
    bench._annotate(rows, cases, bw, llc_mb)
    meta = {"date": "today", "processor": "cpu", "cores": 2, "python": "3", "numpy": "2",
            "versions": {}, "samples": 5, "notes": [], "sizes": [1000, 10_000_000],
            "llc_mb": llc_mb}
    bandwidth = {k: {"gbps": 10.0, "tool": "numpy"} for k in ("copy", "triad", "read", "read2")}
    return {"meta": meta, "bandwidth": bandwidth, "rows": rows,
            "once": {"import_ms": 1.0, "call_overhead_us": {}}}


def test_chart_series_are_numpy_the_best_peer_and_lazyk() -> None:
    from lazyk.bench.report import chart_series

    data = chart_series(_result())
    assert len(data["series"]) == 3 and data["series"][0] == "NumPy (= 1)"
    small, large = data["panels"]
    assert small["n"] == 1000 and large["n"] == 10_000_000
    for panel in data["panels"]:
        e7 = panel["cells"][1]
        assert e7["case"] == "E7" and e7["expr"] == "where(a > b, a - b, b - a)"
        # the fastest peer row (not NumPy), the fastest compiled lazyk row (not evaluate)
        assert e7["best_peer"] == "numba par" and e7["best_peer_x"] == pytest.approx(4.0)
        assert e7["lazyk"] == "lazyk 2t" and e7["lazyk_x"] == pytest.approx(8.0)
    # 24 KB fit in a 32 MB cache, 240 MB do not
    assert [c["in_cache"] for c in small["cells"]] == [True, True]
    assert [c["in_cache"] for c in large["cells"]] == [False, False]
    unknown = chart_series(_result(llc_mb=None))
    assert not any(c["in_cache"] for p in unknown["panels"] for c in p["cells"])


def test_report_names_the_expressions_and_marks_cells_in_cache() -> None:
    from lazyk.bench.report import markdown

    md = markdown(_result())
    assert "| E7 | `where(a > b, a - b, b - a)` |" in md  # the cases table
    assert "| 1e+03 | E1 `a + b` |" in md and "| 1e+07 | E1 `a + b` |" in md
    small = md.split("## n = 1,000\n")[1].split("## n = 10,000,000")[0]
    large = md.split("## n = 10,000,000\n")[1]
    assert small.count("(in cache)") == 12 and "(in cache)" not in large.split("##")[0]
    assert "`(in cache)`: the bytes one call moves fit in the last-level cache (32 MB" in md


def test_chart_draws_when_matplotlib_is_installed(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    from lazyk.bench.report import chart

    path = tmp_path / "results.png"
    assert chart(_result(), path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
