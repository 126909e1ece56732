"""Type-parsing benchmark: short/medium/long strings, cold (parse cache cleared) and warm.

Run: `python benchmarks/bench_types.py`. Prints microseconds per parse (median and best).
- cold: every cache cleared before each parse (text -> type, token kinds beyond the
  language's own words, parse plans): a string never seen in any form is lexed, parsed by
  the LALR table and built.
- cold, pattern seen: only the text cache cleared; the plan recorded for the same sequence
  of token kinds is replayed (what `f"{n} * float64"` with a new n costs).
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
    """Print one row per string: its length, cold and warm median microseconds."""
    dshape, clear = typeparse.dshape, typeparse.clear_cache
    print("microseconds per parse, median / best of 25 runs")
    print(f"{'string':8} {'chars':>5} {'cold':>15} {'cold, pattern seen':>20} {'warm':>15}")
    for name, text in STRINGS.items():
        dshape(text)  # intern the objects once; cold then measures lex + parse + build

        def cold(text: str = text) -> None:
            clear()
            dshape(text)

        def seen(text: str = text) -> None:
            clear(plans=False)
            dshape(text)

        def warm(text: str = text) -> None:
            dshape(text)

        cells = [timings_us(cold, 300), timings_us(seen, 300), timings_us(warm, 20000)]
        print(f"{name:8} {len(text):5d} "
              + " ".join(f"{f'{m:.2f} / {b:.2f}':>{w}}"
                         for (m, b), w in zip(cells, (15, 20, 15))))


if __name__ == "__main__":
    main()
