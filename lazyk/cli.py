"""lazyk: typed, lazy array expressions compiled by LLVM into one fused kernel.

Parse type strings, show how an expression compiles, run the benchmarks and manage the
on-disk kernel cache.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

from lazyk import __version__
from lazyk.backend.objcache import KEY_FILE, ObjectCache
from lazyk.bench import adl as bench_adl
from lazyk.bench.suite import add_arguments as bench_arguments
from lazyk.bench.suite import command as bench_command
from lazyk.errors import TypeParseError
from lazyk.runtime.explain import command as explain_command
from lazyk.types.parse import describe


def _cmd_parse(args: argparse.Namespace) -> int:
    status, shown = 0, 0
    for text in args.types:
        try:
            described = describe(text)
        except TypeParseError as err:
            print(f"error: {err}", file=sys.stderr)
            status = 1
            continue
        if shown:
            print()  # a blank line between two descriptions, never around an error
        print(described)
        shown += 1
    return status


def _cmd_bench(args: argparse.Namespace) -> int:
    if args.adl:
        return bench_adl.command(args)
    if args.ragged:
        return _bench_ragged(args)
    return bench_command(args)


def _bench_ragged(args: argparse.Namespace) -> int:
    """`lazyk bench --ragged`: benchmarks/bench_ragged.py's workloads (lazyk against Awkward
    Array and NumPy), its table printed and written as JSON under --out."""
    here = Path(args.suite).resolve().parent if args.suite else \
        Path(__file__).resolve().parents[1] / "benchmarks"
    path = here / "bench_ragged.py"
    if not path.exists():
        print(f"lazyk bench --ragged: {path} not found (it ships with the source tree; pass "
              "--suite PATH/bench_expr.py to point at a checkout)", file=sys.stderr)
        return 1
    spec = importlib.util.spec_from_file_location("lazyk_bench_ragged", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    argv = ["--json", str(out / "results-ragged.json")]
    argv += ["--quick"] if args.quick else ["--rows", str(args.ragged_rows),
                                            "--repeat", str(args.ragged_repeat)]
    return mod.main(argv)


def _cmd_cache(args: argparse.Namespace) -> int:
    cache = ObjectCache()
    if args.action == "clear":
        key = Path(os.path.realpath(cache.directory)) / KEY_FILE
        had = args.key and key.is_file() and not key.is_symlink()
        n = cache.clear(remove_key=args.key)
        print(f"removed {n} entries from {cache.directory}" +
              (" and its secret key" if had and not os.path.lexists(key) else ""))
    else:
        info = cache.info()
        bad = "" if not info["problem"] else \
            f" (read-only: {info['problem']}; stored kernels load, new ones are not stored)" \
            if info["loads"] else f" (unusable: {info['problem']}; nothing is cached)"
        print(f"directory: {info['directory']}{bad}\nentries:   {info['entries']}\n"
              f"bytes:     {info['bytes']}\n"
              f"limit:     {cache.max_bytes} bytes (least recently used entries go first; "
              "LAZYK_CACHE_DIR sets the directory)")
    return 0


_EXAMPLES = """examples:
  lazyk parse "3 * var * {x: float64, y: ?int32}"
  lazyk explain "sin(a) * b + 1" --type a="N * float64" --type b="N * float64"
  lazyk bench --quick
  lazyk bench --ragged --ragged-rows 1e5
  lazyk bench --adl --adl-events 1e6
  lazyk cache info
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lazyk", description=__doc__, epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"lazyk {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("parse", help="parse type strings; print canonical form, tree, size")
    p.add_argument("types", nargs="+", metavar="TYPE")
    p.set_defaults(func=_cmd_parse)

    p = sub.add_parser("bench", help="time the expressions E1-E10 (benchmarks/bench_expr.py) "
                       "against NumPy, numexpr and Numba; write JSON, Markdown and a chart")
    bench_arguments(p)
    p.add_argument("--ragged", action="store_true",
                   help="ragged and missing-value workloads (benchmarks/bench_ragged.py): "
                        "lazyk against Awkward Array and NumPy on ~1e7 values in --ragged-rows "
                        "rows; prints the table, writes results-ragged.json under --out")
    p.add_argument("--ragged-rows", type=lambda s: int(float(s)), default=1_000_000,
                   help="rows for --ragged (default 1e6; --quick: 1e5)")
    p.add_argument("--ragged-repeat", type=int, default=5,
                   help="timed calls per tool for --ragged (the median is reported)")
    bench_adl.add_arguments(p)
    p.set_defaults(func=_cmd_bench)

    p = sub.add_parser("explain", help="graph after each pass, kernel spec, layout, LLVM IR, asm")
    p.add_argument("expr", metavar="EXPR")
    p.add_argument("--type", action="append", default=[], metavar="NAME=TYPE",
                   help="a placeholder's type, e.g. a='N * float64' (repeatable)")
    p.add_argument("--no-ir", action="store_true", help="leave out the LLVM IR")
    p.add_argument("--no-asm", action="store_true", help="leave out the assembly")
    p.add_argument("--target", choices=("cpu", "cuda"), default="cpu",
                   help="cuda: each kernel's NVVM IR and PTX (libNVVM, no GPU needed)")
    p.set_defaults(func=explain_command)

    p = sub.add_parser("cache", help="the on-disk kernel cache: `info` (where, how big, whether "
                       "it is used) or `clear` (delete lazyk's entries, nothing else)")
    p.add_argument("action", choices=("info", "clear"))
    p.add_argument("--key", action="store_true",
                   help="with clear: also delete the secret key that signs the entries")
    p.set_defaults(func=_cmd_cache)

    return parser


def main(argv: list[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # (a type's text may hold what the terminal's
        if hasattr(stream, "reconfigure"):  # encoding cannot: escaped, not a traceback)
            stream.reconfigure(errors="backslashreplace")
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "key", False) and args.action != "clear":
        parser.error("cache info takes no --key (it goes with clear)")
    try:
        code = args.func(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader closed stdout (`lazyk cache info | head -1`): stop quietly, as Unix
        # tools do; point stdout at devnull so the interpreter's final flush cannot fail
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a tool killed by it
    return code


if __name__ == "__main__":
    sys.exit(main())
