"""Threaded stress run: bound ragged sums and compiled calls checked against NumPy while other
threads change the thread setting, open `lazyk.threads(n)` blocks, replace and make the pool
and clear the kernel cache.

    python tests/stress_threads.py SECONDS [SEED]

Prints `seed=S checks=N mismatches=M` (the seed first, so a failing run can be repeated) and
exits 1 on any mismatch. tests/test_stress_threads.py runs it in a subprocess.
"""
from __future__ import annotations

import sys
import threading
import time

import numpy as np

import lazyk
from lazyk.backend import threads as pool_threads
from lazyk.kernel import flat as kernel


def _data(rng: np.random.Generator, n: int):
    lens = rng.integers(0, 40, n)
    offsets = np.concatenate([[0], np.cumsum(lens)])
    values = rng.random(int(offsets[-1]))
    want = np.add.reduceat(np.append(values, 0.0), offsets[:-1]) * (lens > 0)
    return lazyk.from_offsets(offsets, values), values, want


def main(seconds: float, seed: int) -> int:
    print(f"seed={seed}", flush=True)
    rng = np.random.default_rng(seed)
    n = 200_000
    x, values, want = _data(rng, n)
    dense = rng.random(1 << 18)
    k = lazyk.compile(lazyk.placeholder("x", "N * var * float64").sum(axis=-1))
    kd = lazyk.compile(lazyk.placeholder("a", "N * float64") * 2.0 + 1.0)
    stop = time.monotonic() + seconds
    counts = {"checks": 0, "mismatches": 0}
    lock = threading.Lock()
    errors: list = []

    def record(ok: bool, what: str) -> None:
        with lock:
            counts["checks"] += 1
            if not ok:
                counts["mismatches"] += 1
                print(f"mismatch: {what}", flush=True)

    def checker(tid: int) -> None:
        r = np.random.default_rng(seed + 1 + tid)
        try:
            while time.monotonic() < stop:
                with lazyk.threads(int(r.integers(1, 9))):
                    out = np.full(n, -1.0)
                    bound = k.bind(out, x)
                    for _ in range(int(r.integers(1, 4))):
                        out[:] = -1.0
                        bound()
                        record(np.allclose(out, want, rtol=1e-12, atol=0),
                               f"bound sum, thread {tid}")
                    record(np.allclose(np.asarray(k(x)), want, rtol=1e-12, atol=0),
                           f"compiled sum, thread {tid}")
                    got = kd(dense)
                    record(np.array_equal(got, dense * 2.0 + 1.0), f"dense call, thread {tid}")
        except BaseException as e:  # noqa: BLE001 - reported below, the run fails
            errors.append(repr(e))

    def disturber() -> None:
        r = np.random.default_rng(seed + 100)
        try:
            while time.monotonic() < stop:
                what = int(r.integers(0, 5))
                if what == 0:
                    kernel.clear_cache()
                elif what == 4:
                    # what a block asking for more threads does (and a fresh process): the
                    # pool goes; the next one comes from whichever thread asks first
                    with pool_threads._pool_lock:
                        old, pool_threads._pool = pool_threads._pool, None
                    if old is not None:
                        old.close()
                elif what == 1:
                    lazyk.set_num_threads(int(r.integers(1, 9)))
                elif what == 2:
                    pool_threads.pool()  # a pool made by a thread outside any block
                else:
                    with lazyk.threads(int(r.integers(1, 9))):
                        lazyk.evaluate(lazyk.array(dense) + 1.0)
                time.sleep(float(r.random()) * 0.002)
        except BaseException as e:  # noqa: BLE001
            errors.append(repr(e))

    workers = [threading.Thread(target=checker, args=(t,)) for t in range(3)]
    workers.append(threading.Thread(target=disturber))
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    print(f"seed={seed} checks={counts['checks']} mismatches={counts['mismatches']}",
          flush=True)
    for e in errors:
        print(f"error: {e}", flush=True)
    return 1 if counts["mismatches"] or errors or not counts["checks"] else 0


if __name__ == "__main__":
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    seed_arg = int(sys.argv[2]) if len(sys.argv) > 2 else int(time.time_ns() % (1 << 31))
    sys.exit(main(secs, seed_arg))
