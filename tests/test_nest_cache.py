"""Nest kernels in the disk cache: a new process loads them by their structural key, without
generating, parsing or optimizing any IR, and runs them to the same values."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("llvmlite.binding")

from lazyk.kernel import nest  # noqa: E402

_RUN = textwrap.dedent("""
    import json
    import numpy as np
    import lazyk
    from lazyk.backend import cpu
    off = np.array([0, 3, 3, 7, 8], np.int64)
    content = np.arange(8, dtype=np.float64) - 2.5
    x = lazyk.from_offsets(off, content)
    sums = lazyk.evaluate(lazyk.sum(x * 2 + 1, axis=-1))
    big = lazyk.evaluate(lazyk.any(abs(x) > 1, axis=1))
    h = cpu.host().optimized
    print(json.dumps({"sums": np.asarray(sums).tolist(), "big": np.asarray(big).tolist(),
                      "generated": cpu.generated[0], "optimized": h["in_process"] + h["helper"],
                      "helpers": h["helpers_started"], "stats": lazyk.stats()}))
""")


def _run(cache) -> dict:
    env = dict(os.environ, LAZYK_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, "-c", _RUN], capture_output=True, text=True,
                         env=env, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def test_warm_process_generates_and_optimizes_no_ir(tmp_path) -> None:
    cold, warm = _run(tmp_path / "c"), _run(tmp_path / "c")
    off = [0, 3, 3, 7, 8]
    content = np.arange(8, dtype=np.float64) - 2.5
    rows = [content[a:b] for a, b in zip(off, off[1:])]
    want = [float(np.sum(r * 2 + 1)) for r in rows]
    for run in (cold, warm):
        np.testing.assert_array_equal(run["sums"], want)
        assert run["big"] == [True, False, True, True]
    assert cold["generated"] > 0 and cold["optimized"] > 0
    assert cold["stats"]["disk_loads"] == 0
    assert warm["generated"] == 0 and warm["optimized"] == 0 and warm["helpers"] == 0
    assert warm["stats"]["disk_loads"] == cold["stats"]["compiles"] > 0


def test_structural_keys_tell_kernels_apart() -> None:
    import lazyk

    x = lazyk.from_offsets(np.array([0, 2, 5], np.int64), np.arange(5.0))
    lazyk.evaluate(lazyk.sum(x, axis=-1), lazyk.max(x * 3, axis=-1), lazyk.any(x > 1, axis=1))
    keys = list(nest.kernels._data)
    texts = [nest.structural_key(k) for k in keys]
    assert None not in texts and len(set(texts)) == len(keys)
    assert nest.structural_key((object(),)) is None  # printed by address: the IR keys it


_SAME_CODE = textwrap.dedent("""
    import json
    import lazyk
    from lazyk.backend import cpu
    from lazyk.kernel import nest
    words = [["a", "bb"], None, ["a"], ["ccc", "a", "d"]]  # (missing rows: counted)
    x = lazyk.array(words, type="4 * ?var * string")
    eq, ne = lazyk.evaluate(x == "a"), lazyk.evaluate(x != "a")
    assert eq.tolist() == [None if r is None else [w == "a" for w in r] for r in words]
    assert ne.tolist() == [None if r is None else [w != "a" for w in r] for r in words]
    h = cpu.host().optimized
    print(json.dumps([h["in_process"] + h["helper"], nest.nest_stats["compiles"]]))
""")


def test_two_structures_with_the_same_code_compile_it_once(tmp_path) -> None:
    # Counting the values of a ragged result reads none of them: `x == "a"` and `x != "a"`
    # (two structures) generate the same counting kernel, optimized once.
    env = dict(os.environ, LAZYK_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", _SAME_CODE], capture_output=True, text=True,
                         env=env, check=True)
    optimized, kernels = json.loads(out.stdout.splitlines()[-1])
    assert 0 < optimized < kernels, (optimized, kernels)


def test_the_entry_points_call_one_copy_of_the_nest() -> None:
    # the part and steal entries call the nest function; a copy of its loops in each would
    # be optimized and emitted again (compile time), so each entry stays a few lines
    import lazyk

    x = lazyk.from_offsets(np.array([0, 2, 3], np.int64), np.array([1.0, 2.0, 3.0]))
    e = x * 2  # (a small nest: LLVM would inline it into every entry point)
    assert lazyk.evaluate(e).to_list() == [[2.0, 4.0], [6.0]]
    asm = e.explain().split("== assembly", 1)[1]
    for entry in ("lazyk_nest_part", "lazyk_nest_steal"):
        body = asm.split(f"\n{entry}:", 1)[1].split(f".size\t{entry},", 1)[0]
        code = [ln for ln in body.splitlines() if ln.strip() and
                not ln.lstrip().startswith((".", "#"))]
        assert "lazyk_nest_single" in body and len(code) < 40, (entry, len(code))
