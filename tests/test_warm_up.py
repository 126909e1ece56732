"""LLVM loads on a background thread once lazyk is imported, so a program's first kernel
finds it ready; `LAZYK_WARM_UP=0` leaves it to the first kernel; a fork right after the
import waits for it and the child computes as usual."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _run(code: str, **env) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env={**os.environ, **env})
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_llvm_loads_in_the_background_after_import():
    code = ("import sys, lazyk\nfrom lazyk.backend import cpu\n"
            "cpu._warming[0].join(60)\n"
            "print('llvmlite.binding' in sys.modules, cpu._host is not None)")
    assert _run(code) == "True True"


def test_the_warm_up_can_be_turned_off():
    code = ("import sys, lazyk\nfrom lazyk.backend import cpu\n"
            "print('llvmlite.binding' in sys.modules, len(cpu._warming))")
    assert _run(code, LAZYK_WARM_UP="0") == "False 0"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_fork_right_after_import_computes_in_the_child():
    code = ("import os, numpy as np, lazyk\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    got = lazyk.sum(lazyk.array(np.arange(5.0)) * 2).eval()\n"
            "    os._exit(0 if float(np.asarray(got)) == 20.0 else 3)\n"
            "print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))")
    assert _run(code) == "0"
