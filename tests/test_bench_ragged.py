"""`lazyk bench --ragged`: the ragged workloads' table, answers checked, JSON written."""
import json

from lazyk.cli import build_parser, main


def test_bench_ragged_prints_the_table_and_writes_json(tmp_path, capsys):
    assert main(["bench", "--ragged", "--ragged-rows", "2000", "--ragged-repeat", "1",
                 "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "| workload | numpy | awkward | lazyk |" in text
    for key in "abcdef":
        assert f"| {key}  " in text
    # every tool's answer is checked against NumPy's before timing
    assert "WRONG ANSWER" not in text and "error:" not in text
    res = json.loads((tmp_path / "results-ragged.json").read_text())
    assert res["rows"] == 2000 and [r["key"] for r in res["results"]] == list("abcdef")
    lz = {r["key"]: r["tools"]["lazyk"] for r in res["results"]}
    assert lz["a"]["status"] == "ok" and lz["f"]["status"] == "ok"


def test_bench_ragged_help_and_defaults():
    args = build_parser().parse_args(["bench", "--ragged"])
    assert args.ragged and args.ragged_rows == 1_000_000 and args.ragged_repeat == 5
