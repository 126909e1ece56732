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
    # the bytes each query reads: Q1 the MET pt column (float32), Q2 the jets' pt and
    # offsets; the bandwidth against the copy measured in the same run
    assert res["rows"]["Q1"]["bytes_read"] == 4 * 10_000
    q2 = res["rows"]["Q2"]
    assert q2["bytes_read"] > 8 * 10_001 and q2["lazyk_gb_s"] > 0 and res["copy_gb_s"] > 0
    assert q2["of_copy"] == pytest.approx(q2["lazyk_gb_s"] / res["copy_gb_s"])
    for row, got in res["rows"].items():  # every other query: run, or pending with a reason
        assert "lazyk_ms" in got or got["pending"].startswith("pending")


def test_bench_adl_help():
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
