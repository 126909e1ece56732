"""Threaded stress (tests/stress_threads.py) in a subprocess under PYTHONFAULTHANDLER: a few
seconds here; minutes with LAZYK_STRESS_SECONDS set (the slow variant, skipped otherwise).
Each run prints its seed; LAZYK_STRESS_SEED repeats one."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import lazyk
from lazyk.backend import threads as pool_threads

SCRIPT = Path(__file__).with_name("stress_threads.py")


def _stress(seconds: float) -> None:
    args = [sys.executable, str(SCRIPT), str(seconds)]
    if os.environ.get("LAZYK_STRESS_SEED"):
        args.append(os.environ["LAZYK_STRESS_SEED"])
    env = dict(os.environ, PYTHONFAULTHANDLER="1")
    r = subprocess.run(args, capture_output=True, text=True, env=env,
                       timeout=seconds + 240)
    tail = f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    assert r.returncode == 0, tail
    last = r.stdout.strip().splitlines()[-1]
    assert "mismatches=0" in last and "checks=0" not in last, tail


def test_stress_short():
    _stress(3.0)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("LAZYK_STRESS_SECONDS"),
                    reason="set LAZYK_STRESS_SECONDS to run the long stress")
def test_stress_long():
    _stress(float(os.environ["LAZYK_STRESS_SECONDS"]))


def test_parts_beyond_a_smaller_pool_all_run():
    # A `threads(8)` block plans 8 parts per call; another Python thread (in no block) made
    # the pool with fewer threads: every part still runs (142,863 of 200,000 rows were left
    # uncomputed before).
    old = lazyk.get_num_threads()
    lazyk.set_num_threads(2)
    try:
        rng = np.random.default_rng(5)
        n = 200_000
        lens = rng.integers(0, 40, n)
        offsets = np.concatenate([[0], np.cumsum(lens)])
        values = rng.random(int(offsets[-1]))
        want = np.add.reduceat(np.append(values, 0.0), offsets[:-1]) * (lens > 0)
        x = lazyk.from_offsets(offsets, values)
        k = lazyk.compile(lazyk.placeholder("x", "N * var * float64").sum(axis=-1))
        out = np.empty(n)
        with lazyk.threads(8):
            bound = k.bind(out, x)
            with pool_threads._pool_lock:  # as if the block had just replaced the pool
                old_pool, pool_threads._pool = pool_threads._pool, None
            if old_pool is not None:
                old_pool.close()
            t = threading.Thread(target=pool_threads.pool)
            t.start()
            t.join()
            assert pool_threads.pool().nthreads == 2
            out[:] = -1.0
            bound()
        assert bound._nparts > 2  # parts beyond the pool's threads
        np.testing.assert_allclose(out, want, rtol=1e-12, atol=0)
    finally:
        lazyk.set_num_threads(old)
