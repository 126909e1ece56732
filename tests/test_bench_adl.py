"""`lazyk bench --adl`: the ADL queries' counts checked against Awkward's, the table printed,
the JSON written (a few thousand events; pending queries reported as such)."""
import json

import pytest

from lazyk.cli import main

pytest.importorskip("awkward")
pytest.importorskip("boost_histogram")


def test_bench_adl_checks_times_and_writes_json(tmp_path, capsys):
    assert main(["bench", "--adl", "--quick", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "| Q1 |" in text and "| Q5 pairs |" in text
    res = json.loads((tmp_path / "results-adl.json").read_text())
    assert res["events"] == 10_000
    for row in ("Q1", "Q2", "Q5 pairs"):  # run here (their counts equal Awkward's)
        assert res["rows"][row]["lazyk_ms"] > 0 and res["rows"][row]["ratio"] > 0
    for row, got in res["rows"].items():  # every other query: run, or pending with a reason
        assert "lazyk_ms" in got or got["pending"].startswith("pending")


def test_bench_adl_help():
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
