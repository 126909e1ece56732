"""`lazyk bench --ragged`: the ragged workloads' table, answers checked, JSON written."""
import json

from lazyk.cli import build_parser, main


def test_bench_ragged_prints_the_table_and_writes_json(tmp_path, capsys):
    assert main(["bench", "--ragged", "--ragged-rows", "2000", "--ragged-repeat", "1",
                 "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "| workload | numpy | awkward | lazyk |" in text
    for key in "abcdefghijklmnopq":
        assert f"| {key}  " in text
    # every tool's answer is checked against NumPy's before timing
    assert "WRONG ANSWER" not in text and "error:" not in text
    res = json.loads((tmp_path / "results-ragged.json").read_text())
    assert res["rows"] == 2000 and [r["key"] for r in res["results"]] == list("abcdefghijklmnopq")
    lz = {r["key"]: r["tools"]["lazyk"] for r in res["results"]}
    assert lz["a"]["status"] == "ok" and lz["f"]["status"] == "ok"


def test_bench_ragged_help_and_defaults():
    args = build_parser().parse_args(["bench", "--ragged"])
    assert args.ragged and args.ragged_rows == 1_000_000 and args.ragged_repeat == 5


def test_bench_ragged_times_the_tools_in_interleaved_rounds(tmp_path, capsys):
    import importlib.util
    import statistics
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_ragged.py"
    spec = importlib.util.spec_from_file_location("bench_ragged_rounds", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    # every round times every tool once (a batch of calls for fast ones), in an order that
    # rotates; no sample dropped (the first three calls size the batches)
    order = []
    calls = {t: (lambda t=t: order.append(t)) for t in ("numpy", "awkward", "lazyk")}
    samples = mod.interleaved(calls, 4)
    assert {t: len(s) for t, s in samples.items()} == {"numpy": 4, "awkward": 4, "lazyk": 4}
    firsts = [order[i] for i in range(len(order)) if i == 0 or order[i] != order[i - 1]]
    n, a, lz = "numpy", "awkward", "lazyk"
    assert firsts == [n, a, lz] + [n, a, lz] + [a, lz, n] + [lz, n, a] + [n, a, lz]
    assert mod.main(["--rows", "300", "--repeat", "3", "--json", str(tmp_path / "r.json")]) == 0
    assert "interleaved rounds" in capsys.readouterr().out
    res = json.loads((tmp_path / "r.json").read_text())
    assert res["method"].startswith("interleaved rounds")
    for row in res["results"]:
        for tool, v in row["tools"].items():
            if v["status"] != "ok":
                continue
            assert len(v["samples"]) == 3 and v["seconds"] == statistics.median(v["samples"])
            if tool != "awkward" and "awkward" in row["tools"] and \
                    row["tools"]["awkward"]["status"] == "ok":
                assert len(v["x_ak_rounds"]) == 3
