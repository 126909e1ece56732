"""`lazyk bench --adl`: the eight IRIS-HEP ADL queries, lazyk against Awkward Array +
boost-histogram (benchmarks/bench_adl.py, which ships with the source tree): counts checked
equal first, then interleaved timing rounds; prints the table and writes results-adl.json
under --out."""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from lazyk.bench.measure import count_arg


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The `--adl` options of `lazyk bench`."""
    p.add_argument("--adl", action="store_true",
                   help="the eight ADL analysis queries (benchmarks/bench_adl.py): lazyk "
                        "against Awkward Array + boost-histogram on --adl-events NanoAOD-like "
                        "events; prints the table, writes results-adl.json under --out "
                        "(needs awkward and boost-histogram)")
    p.add_argument("--adl-events", type=count_arg, default=1_000_000,
                   help="events for --adl (default 1e6; --quick: 1e4)")
    p.add_argument("--adl-repeat", type=int, default=5,
                   help="interleaved rounds for --adl (the median is reported)")


def command(args: argparse.Namespace) -> int:
    """Run benchmarks/bench_adl.py with the `--adl` options."""
    here = Path(args.suite).resolve().parent if args.suite else \
        Path(__file__).resolve().parents[2] / "benchmarks"
    path = here / "bench_adl.py"
    if not path.exists():
        print(f"lazyk bench --adl: {path} not found (it ships with the source tree; pass "
              "--suite PATH/bench_expr.py to point at a checkout)", file=sys.stderr)
        return 1
    try:
        import awkward  # noqa: F401
        import boost_histogram  # noqa: F401
    except ImportError as err:
        print(f"lazyk bench --adl needs awkward and boost-histogram ({err})", file=sys.stderr)
        return 1
    spec = importlib.util.spec_from_file_location("bench_adl", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_adl"] = mod  # (its compile timings import it by name)
    spec.loader.exec_module(mod)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    events = 10_000 if args.quick else args.adl_events
    argv = ["--events", str(events), "--repeat", str(1 if args.quick else args.adl_repeat),
            "--check-events", str(min(events, 10_000)), "--json", str(out / "results-adl.json")]
    return mod.main(argv + (["--no-compile"] if args.quick else []))
