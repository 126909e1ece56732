"""Type-parsing benchmark: short/medium/long strings, cold (parse cache cleared) and warm.

Run: `python benchmarks/bench_types.py`. Prints the median microseconds per parse.
"Cold" clears the text -> type cache before every parse, so the string is lexed, parsed
and built; interned type objects and the lexer's token-kind cache stay warm, as they do in
a running program.
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
            "tags: var * string}, window: int32, weights: N * 3 * float32) -> N * ?float64",
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
    print(f"{'string':8} {'chars':>5} {'cold median':>12} {'cold best':>10} "
          f"{'warm median':>12} {'warm best':>10}   (microseconds)")
    for name, text in STRINGS.items():
        dshape(text)  # intern the objects once; cold then measures lex + parse + build

        def cold(text: str = text) -> None:
            clear()
            dshape(text)

        def warm(text: str = text) -> None:
            dshape(text)

        cold_med, cold_best = timings_us(cold, 300)
        warm_med, warm_best = timings_us(warm, 20000)
        print(f"{name:8} {len(text):5d} {cold_med:12.2f} {cold_best:10.2f} "
              f"{warm_med:12.3f} {warm_best:10.3f}")


if __name__ == "__main__":
    main()
