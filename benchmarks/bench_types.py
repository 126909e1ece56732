"""Type-parsing benchmark: a mixed corpus of type strings, cold and warm.

Run: `python benchmarks/bench_types.py` (`--quick` for fewer runs). Prints microseconds per
parse for each string: the median and the best of `repeat` runs of `number` parses (the best
run is the one least disturbed by other processes), then the median over the ~100-character
strings, the figure to compare.
- cold: the text cache is cleared before each parse, so the string is split, parsed and
  built; the lexer still knows the words it has seen (`x`, `int32`), as in a running program.
- cold, nothing seen: the word memo is cleared too (every identifier is classified anew).
- warm: the parse cache hit (one dict look-up).
Interned type objects stay, as they do in a running program.
"""
from __future__ import annotations

import statistics
import sys
import time

from lazyk.types import parse as typeparse

STRINGS = {
    "short": "3 * var * int32",
    "dims": "1000 * 1000 * 3 * ?float32",
    "medium": "3 * var * {x: int32, y: ?float64, name: fixed_string[16], tags: var * string, "
              "pos: (float32, float32)}",
    "signature": "(N * {id: int64, price: ?float64, when: datetime}, window: int32, "
                 "weights: N * 3 * float32) -> N * ?float64",
    "nested": "var * {name: string, scores: 10 * ?float32, meta: {a: int8, b: uint16, "
              "c: ?bool}, when: date}",
    "complex": "N * M * {re: float64, im: float64, flags: 4 * uint8, "
               "label: fixed_string[8, 'ascii'], valid: bool}",
    "ellipsis": "(Dims... * float64, Dims... * float64, scale: float64, offset: ?float64) "
                "-> Dims... * float64",
    "quoted": "10 * var * var * {'first name': string, 'last name': string, age: ?int16, "
              "h: float32}",
    "wide": "{a: int8, b: int16, c: int32, d: int64, e: uint8, f: uint16, g: uint32, "
            "h: uint64, i: float32, j: float64}",
    "tuple": "?var * (int64, ?float64, string, pointer[int32], timedelta[unit='ns'], "
             "datetime[unit='ms'])",
    "reduce": "(N * int32, N * int32) -> N * {sum: int64, mean: float64, min: int32, "
              "max: int32, count: int64}",
    "long": "(N * {id: int64, price: ?float64, when: datetime, name: fixed_string[24, "
            "'ascii'], tags: var * string, flag: bool}, window: int32, weights: N * 3 * "
            "float32) -> N * ?float64",
}


def timings_us(fn: object, number: int, repeat: int) -> tuple[float, float]:
    """(median, best) over `repeat` runs of the mean time of `number` calls, in microseconds."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(number):
            fn()
        times.append((time.process_time() - start) / number * 1e6)
    return statistics.median(times), min(times)


def main() -> None:
    """Print one row per string (length, then median / best microseconds per column) and
    the median over the strings of 80-120 characters."""
    repeat = 7 if "--quick" in sys.argv else 25
    dshape, clear = typeparse.dshape, typeparse.clear_cache
    print("microseconds per parse, median / best")
    heads = ("cold", "cold, nothing seen", "warm")
    print(f"{'string':10} {'chars':>5} " + " ".join(f"{h:>19}" for h in heads))
    cold_medians = []
    for name, text in STRINGS.items():
        dshape(text)  # intern the objects once; cold then measures split + parse + build

        def cold(text: str = text) -> None:
            clear(tokens=False)
            dshape(text)

        def nothing_seen(text: str = text) -> None:
            clear()
            dshape(text)

        def warm(text: str = text) -> None:
            dshape(text)

        cells = [timings_us(cold, 300, repeat), timings_us(nothing_seen, 300, repeat),
                 timings_us(warm, 20000, repeat)]
        if 80 <= len(text) <= 120:
            cold_medians.append(cells[0][0])
        print(f"{name:10} {len(text):5d} "
              + " ".join(f"{f'{m:.2f} / {b:.2f}':>19}" for m, b in cells))
    print(f"cold, median over the {len(cold_medians)} strings of 80-120 characters: "
          f"{statistics.median(cold_medians):.2f} us")


if __name__ == "__main__":
    main()
