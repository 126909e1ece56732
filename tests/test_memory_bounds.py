"""Memory stays bounded: the optimizer's native leak is contained in a helper process, and every
cache that grows with distinct inputs (kernels, launches, prepared binds, plans, specs) is an
LRU of a fixed size whose dropped entries free their code.

Each test runs in a subprocess (its own RSS, its own small cache sizes, a temporary disk cache).
"""
import os
import subprocess
import sys
import textwrap

_RSS = """
import ctypes, gc
_libc = ctypes.CDLL("libc.so.6")
def rss_mib():
    gc.collect()
    _libc.malloc_trim(0)  # freed heap memory back to the system: measure what is kept
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
"""


def _run(code: str, tmp_path, env_extra: dict | None = None, timeout: float = 300) -> str:
    env = dict(os.environ, LAZYK_CACHE_DIR=str(tmp_path / "cache"), **(env_extra or {}))
    r = subprocess.run([sys.executable, "-c", _RSS + textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=timeout, env=env)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    return r.stdout


def test_optimizer_helper_keeps_rss_flat(tmp_path):
    # 160 distinct modules compiled without a disk-cache hit: in process, llvmlite kept ~80-150
    # KB per module (10-18 MiB over the 120 measured here); through the helper (replaced every
    # 40 modules)
    # this process keeps almost nothing. Every module's code runs and is checked.
    out = _run("""
        import ctypes
        from lazyk.backend import cpu, optworker
        cpu.HELPER_MODULES = 40
        IR = '''define double @f{i}(double %x) {{
          %a = fmul double %x, {i}.0
          %b = fadd double %a, 1.0
          ret double %b
        }}
        '''
        proto = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)

        def one(i):
            m = cpu.JITModule(IR.format(i=i), (f"f{i}",))
            assert proto(m.addresses[f"f{i}"])(2.0) == 2.0 * i + 1.0
            m.close()

        for i in range(40):  # warm up: allocator, first helper
            one(i)
        before = rss_mib()
        for i in range(40, 160):
            one(i)
        after = rss_mib()
        h = cpu.host()
        print(f"{after - before:.2f}", h.optimized["in_process"], h.optimized["helper"],
              h.optimized["helpers_started"])
    """, tmp_path, {"LAZYK_OPTIMIZE_IN_PROCESS": "0"})
    grew, in_process, helper, started = out.split()
    assert int(in_process) == 0 and int(helper) == 160 and int(started) == 4, out
    assert float(grew) < 4.0, f"RSS grew {grew} MiB over 120 modules"


def test_helper_rejects_bad_ir_and_survives(tmp_path):
    out = _run("""
        from lazyk.backend import cpu, optworker
        from lazyk.errors import CompileError
        try:
            cpu.JITModule("define i64 @g(i64 %x) {\\n  ret i32 %x\\n}\\n", ("g",))
            raise AssertionError("invalid IR must raise")
        except CompileError as e:
            assert "LLVM rejected generated IR" in str(e)
        m = cpu.JITModule("define i64 @h(i64 %x) {\\n  ret i64 %x\\n}\\n", ("h",))
        print("ok", cpu.host().optimized["helper"], bool(m.addresses["h"]))
    """, tmp_path, {"LAZYK_OPTIMIZE_IN_PROCESS": "0"})
    assert out.split() == ["ok", "1", "True"]


def test_helper_that_dies_is_replaced_or_bypassed(tmp_path):
    # A helper killed between modules is replaced quietly; one that dies on a module is
    # replaced and the module tried once more (dying again there: CompileError). A helper
    # that cannot work at all (dies on its first module): optimize here.
    out = _run("""
        import ctypes
        from lazyk.backend import cpu, optworker
        from lazyk.errors import CompileError
        IR = "define i64 @{n}(i64 %x) {{\\n  %y = add i64 %x, 3\\n  ret i64 %y\\n}}\\n"
        proto = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)
        def one(n):
            m = cpu.JITModule(IR.format(n=n), (n,))
            assert proto(m.addresses[n])(4) == 7
        one("k0")
        h = cpu.host()
        h._helper.proc.kill()
        h._helper.proc.wait()
        one("k1")  # a new helper, quietly
        assert h.optimized["helpers_started"] == 2 and h.optimized["in_process"] == 0
        real = optworker.Helper.compile
        def dies(self, text, mvec):  # the process dies while it optimizes this module
            self.proc.kill()
            self.proc.wait()
            return real(self, text, mvec)
        optworker.Helper.compile = dies
        try:
            one("k2")
            raise AssertionError("a module every helper dies on must raise")
        except CompileError as e:
            assert "optimizer process died on this kernel" in str(e) and "@k2" in str(e)
        assert h.optimized["helpers_started"] == 3
        optworker.Helper.compile = real
        one("k2")
        assert h.optimized["helpers_started"] == 4 and h.optimized["in_process"] == 0
        h._helper.close()
        h._helper = None
        optworker.__file__ = "/nonexistent/optworker.py"  # python exits at once
        one("k3")
        print("ok", h._helper_broken, h.optimized["in_process"], h.optimized["helper"])
    """, tmp_path, {"LAZYK_OPTIMIZE_IN_PROCESS": "0"})
    assert out.split() == ["ok", "True", "1", "3"]


def test_distinct_expressions_keep_caches_and_rss_bounded(tmp_path):
    # 1,000 evaluate calls on distinct expression strings and distinct shapes (launch entries,
    # prepared binds, plans, specialised specs, parse caches) plus 17 distinct kernel
    # structures into an 8-kernel cache: every cache stays at its size, dropped kernels free
    # their code, and RSS stays flat once the caches are full.
    out = _run("""
        import numpy as np, lazyk
        from lazyk.kernel import flat as kernel
        from lazyk.runtime import launch as runtime
        from lazyk.backend import cpu, optworker

        kernel.kernels.size = 8
        kernel.prepared_binds.size = 16
        runtime.launches.size = 16
        runtime.plans.size = 16
        from lazyk.frontend import exprparse
        exprparse._CACHE.size = 64  # parsed strings (4096 by default: ~1 KB each)
        from lazyk.runtime import stringeval
        stringeval._names_of.size = 64
        stringeval._expr_entries.size = 16  # expressions by structure (shapes included)

        def structure(i):
            s = "a"
            for bit in bin(i + 2)[3:]:
                s = f"({s} + b)" if bit == "0" else f"({s} * b)"
            return s

        def step(i):
            n = 1 + i % 499
            a, b = np.arange(n, dtype=np.float64), np.full(n, 0.5)
            if i % 60 == 0:  # a new kernel structure
                s = structure(i // 60)
                want = eval(s)
            else:  # a new string and a new shape, the same few kernels
                s = f"x{i} * 3.0 + b"
                want = a * 3.0 + b
            got = lazyk.evaluate(s, local_dict={"a": a, "b": b, f"x{i}": a})
            assert got.shape == (n,) and got.dtype == np.float64
            assert np.allclose(got, want), (s, got[:4], want[:4])

        for i in range(200):
            step(i)
        mid = rss_mib()
        for i in range(200, 1000):
            step(i)
        end = rss_mib()
        sizes = (len(kernel.kernels), len(kernel.prepared_binds), len(runtime.launches),
                 len(runtime.plans), len(runtime.specialized))
        assert sizes[0] <= 8 and sizes[1] <= 16 and sizes[2] <= 16 and sizes[3] <= 16, sizes
        live = len(cpu._engines)
        print(f"{end - mid:.2f}", live, *sizes)
    """, tmp_path, {"LAZYK_OPTIMIZE_IN_PROCESS": "0"})  # new kernels leak nothing here
    grew, live = out.split()[:2]
    # kernels: at most 8 cached + those the 16 launch / 16 prepared entries hold, plus the
    # guards and the thread pool's own modules
    assert int(live) <= 8 + 16 + 16 + 4, out
    assert float(grew) < 3.0, f"RSS grew {grew} MiB over 800 distinct expressions: {out}"


_SIGINT = """
import os, signal, time
import numpy as np, lazyk
from lazyk.backend import cpu
x = np.arange(5.0)
print(lazyk.evaluate(lazyk.array(x) * 2.5 + 1).tolist())
try:
    os.killpg(os.getpgrp(), signal.SIGINT)  # Ctrl-C in a terminal: the whole group
    time.sleep(5)
except KeyboardInterrupt:
    print("interrupted")
got = lazyk.evaluate(lazyk.sin(lazyk.array(x)) * 3.5 - 7)
assert np.allclose(got, np.sin(x) * 3.5 - 7)
h = cpu.host()
print(h.optimized["helper"], h.optimized["helpers_started"], h.optimized["in_process"])
"""


def test_ctrl_c_spares_the_optimizer_helper(tmp_path):
    # its own session (a process group of its own, as a terminal's Ctrl-C signals the group)
    env = dict(os.environ, LAZYK_CACHE_DIR=str(tmp_path / "cache"),
               LAZYK_OPTIMIZE_IN_PROCESS="0")
    r = subprocess.run([sys.executable, "-c", _SIGINT], capture_output=True, text=True,
                       timeout=120, env=env, start_new_session=True)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    lines = r.stdout.splitlines()
    assert lines[:2] == ["[1.0, 3.5, 6.0, 8.5, 11.0]", "interrupted"], r.stdout
    # one helper compiled both kernels
    assert lines[2].split() == ["2", "1", "0"]


def test_interrupted_request_never_answers_the_next_one(tmp_path):
    # a KeyboardInterrupt between a request and its reply: that helper is replaced (its
    # pending reply, another kernel's code, must not be read for the next kernel)
    out = _run("""
        import ctypes
        from lazyk.backend import cpu, optworker
        IR = "define i64 @{n}(i64 %x) {{\\n  %y = add i64 %x, {k}\\n  ret i64 %y\\n}}\\n"
        proto = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)
        m = cpu.JITModule(IR.format(n="a", k=1), ("a",))
        h = cpu.host()
        real = optworker.Helper._read
        def interrupted(self, n):
            optworker.Helper._read = real
            raise KeyboardInterrupt
        optworker.Helper._read = interrupted
        try:
            cpu.JITModule(IR.format(n="b", k=2), ("b",))
        except KeyboardInterrupt:
            pass
        m = cpu.JITModule(IR.format(n="c", k=3), ("c",))
        print(proto(m.addresses["c"])(4), h.optimized["helpers_started"])
    """, tmp_path, {"LAZYK_OPTIMIZE_IN_PROCESS": "0"})
    assert out.split() == ["7", "2"]


def test_idle_output_blocks_are_bounded_and_given_back(tmp_path):
    out = _run('''
        import numpy as np, lazyk
        from lazyk.arrays import outputs
        x = lazyk.array(np.random.rand(500_000)); y = lazyk.array(np.random.rand(500_000))
        res = [(2 * x + y).eval() for _ in range(20)]
        want = 2 * x.to_numpy() + y.to_numpy()
        assert all(np.array_equal(r, want) for r in res)
        del res
        gc.collect()
        held = outputs.idle_bytes()
        assert 0 < held <= outputs.REUSE_MAX_IDLE
        assert outputs.release_idle() == held and outputs.idle_bytes() == 0
        assert np.array_equal((2 * x + y).eval(), want)  # (fresh blocks again)
        print("ok")
    ''', tmp_path)
    assert out.strip() == "ok"
    out = _run('''
        import numpy as np, lazyk
        from lazyk.arrays import outputs
        x = lazyk.array(np.random.rand(500_000))
        res = [(x * 2).eval() for _ in range(5)]
        del res
        gc.collect()
        print(outputs.REUSE_MAX_IDLE, outputs.idle_bytes())
    ''', tmp_path, env_extra={"LAZYK_IDLE_OUTPUT_MB": "0"})
    assert out.strip() == "0 0"
