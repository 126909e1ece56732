"""Type-parsing benchmark: short/medium/long strings, cold and warm.

Run: `python benchmarks/bench_types.py`. Prints microseconds per parse (median / best of
25 runs of 300 parses; the best run is the one least disturbed by other processes).
- cold, new pattern: the text cache and the recorded parse plans are cleared before each
  parse, so the string is split, run through the LALR table and built; the lexer still
  knows the words it has seen (`x`, `int32`), as in a running program.
- cold, nothing seen: the word memo is cleared too (every identifier is classified anew).
- cold, pattern seen: only the text cache is cleared; the plan recorded for the same
  sequence of token kinds is replayed (what `f"{n} * float64"` with a new n costs).
- warm: the parse cache hit (one dict look-up).
Interned type objects stay, as they do in a running program.
"""
from __future__ import annotations

import statistics
import time

from lazyk import typeparse

STRINGS = {
    "short": "3 * var * int32",
    "medium": "3 * var * {x: int32, y: ?float64, name: fixed_string[16], tags: var * string, "
              "pos: (float32, float32)}",
    "long": "(N * {id: int64, price: ?float64, when: datetime, name: fixed_string[24, 'ascii'], "
            "tags: var * string, flag: bool}, window: int32, weights: N * 3 * float32) "
            "-> N * ?float64",
}


def timings_us(fn: object, number: int, repeat: int = 25) -> tuple[float, float]:
    """(median, best) over `repeat` runs of the mean time of `number` calls, in microseconds.

    The best run is the figure least disturbed by other processes on a shared machine.
    """
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number * 1e6)
    return statistics.median(times), min(times)


def main() -> None:
    """Print one row per string: its length, then median / best microseconds per column."""
    dshape, clear = typeparse.dshape, typeparse.clear_cache
    print("microseconds per parse, median / best")
    heads = ("cold, new pattern", "cold, nothing seen", "cold, pattern seen", "warm")
    print(f"{'string':8} {'chars':>5} " + " ".join(f"{h:>19}" for h in heads))
    for name, text in STRINGS.items():
        dshape(text)  # intern the objects once; cold then measures lex + parse + build

        def new_pattern(text: str = text) -> None:
            clear(tokens=False)
            dshape(text)

        def nothing_seen(text: str = text) -> None:
            clear()
            dshape(text)

        def pattern_seen(text: str = text) -> None:
            clear(plans=False, tokens=False)
            dshape(text)

        def warm(text: str = text) -> None:
            dshape(text)

        cells = [timings_us(new_pattern, 300), timings_us(nothing_seen, 300),
                 timings_us(pattern_seen, 300), timings_us(warm, 20000)]
        print(f"{name:8} {len(text):5d} "
              + " ".join(f"{f'{m:.2f} / {b:.2f}':>19}" for m, b in cells))


if __name__ == "__main__":
    main()
