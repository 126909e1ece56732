"""Compiled code lives as long as anything can run it: eviction, clear_cache and dropped cache
entries never free code under a running call, a bound kernel or a garbage cycle.

The risky parts run in a subprocess with a timeout: a regression crashes one test, not the suite.
"""
import gc
import os
import subprocess
import sys
import textwrap
import weakref

import numpy as np

from lazyk.backend import cpu
from lazyk.kernel import flat as kernel
from lazyk.kernel.flat import Instr, KernelSpec, bind

F8 = np.dtype(np.float64)


def _run(code: str, timeout: float = 120) -> str:
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=timeout, env=env)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    return r.stdout


def _const_spec(c: float) -> KernelSpec:
    body = (Instr("load", F8, (), 0), Instr("const", F8, (), c), Instr("add", F8, (0, 1)))
    return KernelSpec((F8,), (True,), body, ((2, F8),))


def test_clear_cache_and_evictions_while_threads_call():
    # Callers run compiled expressions (native guards, threaded records, fresh and out=),
    # lazyk.evaluate (runtime launch entries, prepared binds), explicit binds and ragged sums
    # (loop-nest kernels) while another thread clears every cache and compiles distinct
    # kernels into 3-entry (flat) and 1-entry (loop-nest) caches.
    out = _run("""
        import threading, time
        import numpy as np, lazyk
        from lazyk.kernel import flat as kernel
        from lazyk.runtime import launch as runtime

        from lazyk.kernel import nest as nest_kernel

        kernel.kernels.size = 3
        runtime.launches.size = 4
        kernel.prepared_binds.size = 2
        nest_kernel.kernels.size = 1
        x, y = lazyk.placeholder('a', 'N * float64'), lazyk.placeholder('b', 'N * float64')
        stop = time.time() + 3.0
        errors, calls = [], [0]

        def caller(seed):
            rng = np.random.default_rng(seed)
            f = lazyk.compile((x - y) * 2.0 + y)
            g = lazyk.compile(lazyk.sum(x * y))
            while time.time() < stop:
                try:
                    n = int(rng.choice([5, 700, 140_000]))
                    a, b = rng.random(n), rng.random(n)
                    want = (a - b) * 2.0 + b
                    assert np.allclose(f(a, b), want)
                    o = np.empty(n)
                    f(a, b, out=o)
                    assert np.allclose(o, want)
                    assert np.isclose(g(a, b), (a * b).sum())
                    e = lazyk.evaluate("a * 3.0 - b", local_dict={"a": a, "b": b})
                    assert np.allclose(e, a * 3.0 - b)
                    with kernel.bind(f._fast[1], o, a, b, params=f._consts) as k:
                        k()
                    assert np.allclose(o, want)
                    r = (lazyk.array([[1.0, 2.0, 3.0], [4.0], []]) * 2.0).sum(axis=-1).eval()
                    assert r.to_numpy().tolist() == [12.0, 8.0, 0.0]
                    calls[0] += 1
                except Exception as ex:
                    errors.append(repr(ex))

        from lazyk.frontend.spec import Instr, KernelSpec
        f8 = np.dtype(np.float64)

        def churn():
            i = 0
            while time.time() < stop:
                if i % 2:
                    kernel.clear_cache()
                a = np.ones(6)
                # distinct kernels (a constant in the code), more than the 3-entry cache holds:
                # evictions while the callers run (a string's constants are parameters)
                for c in range(4):
                    body = (Instr("load", f8, (), 0), Instr("const", f8, (), 4.0 * i + c),
                            Instr("add", f8, (0, 1)))
                    spec = KernelSpec((f8,), (True,), body, ((2, f8),))
                    assert kernel.execute(spec, np.empty(6), a)[0] == 1.0 + 4 * i + c
                r = lazyk.evaluate(f"a * {i % 40}.5 + {i % 7}", local_dict={"a": a})
                assert np.allclose(r, a * (i % 40 + 0.5) + i % 7)
                m = lazyk.array([[1.0, 2.0], [3.0]])
                s = (m + float(i % 30)).sum(axis=-1).eval().to_numpy().tolist()
                assert s == [3.0 + 2 * (i % 30), 3.0 + i % 30]
                i += 1

        ts = [threading.Thread(target=caller, args=(s,)) for s in range(3)]
        ts.append(threading.Thread(target=churn))
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        print(len(errors), calls[0], kernel.cache_info()["evictions"], nest_kernel.nest_stats["compiles"],
              errors[:2])
    """)
    nerr, ncalls, nevict, nseg = out.split()[:4]
    assert nerr == "0", out
    assert int(ncalls) > 0 and int(nevict) > 0 and int(nseg) > 1, out


def test_dropped_launch_entry_and_guard_stay_runnable():
    # A launch entry or a compiled expression's guard that a caller holds keeps its code
    # alive after the kernel cache and the launch cache have both dropped it.
    out = _run("""
        import gc
        import numpy as np, lazyk
        from lazyk.kernel import flat as kernel
        from lazyk.runtime import launch as runtime

        kernel.kernels.size = 1
        runtime.launches.size = 1
        a = np.arange(8.0)
        lazyk.evaluate("a * 5.0 + 1.0", local_dict={"a": a}, out=np.empty(8))  # (a launch)
        entry = next(iter(runtime.launches.values()))
        x = lazyk.placeholder('x', 'N * float64')
        f = lazyk.compile(x * 7.0)
        f(a)
        f(a)  # now a native guard
        kernel.clear_cache()
        for c in range(4):  # push everything out of both caches
            lazyk.evaluate(f"a - {c}.25", local_dict={"a": a}, out=np.empty(8))
        gc.collect()
        assert all(e is not entry for e in runtime.launches.values())
        spec, layout, compiled, kd, kd_address, size, offs = entry
        import ctypes
        out = np.empty(8)
        src = (ctypes.c_void_p * 1)(a.ctypes.data)
        compiled.single(out.ctypes.data, ctypes.addressof(src), kd_address)
        assert np.allclose(out, a * 5.0 + 1.0)
        assert np.allclose(f(a), a * 7.0)
        print("ok")
    """)
    assert out.split() == ["ok"]


def test_bound_kernel_in_a_garbage_cycle_is_destroyed_before_its_code():
    # Bound kernels, their compiled kernel and its engine all in one cycle: the collector
    # finalizes them in any order; the kernel-data destructor (JIT code) must still run
    # before the code is freed.
    out = _run("""
        import gc
        import numpy as np
        from lazyk.kernel import flat as kernel
        from lazyk.backend import cpu
        from lazyk.kernel.flat import Instr, KernelSpec, bind

        F8 = np.dtype(np.float64)
        gc.disable()
        for k in range(16):
            body = (Instr("load", F8, (), 0), Instr("const", F8, (), k + 0.5),
                    Instr("add", F8, (0, 1)))
            spec = KernelSpec((F8,), (True,), body, ((2, F8),))
            cks = [bind(spec, np.empty(3), np.ones(3)) for _ in range(3)]
            for ck in cks:
                ck()
                ck.cycle = (cks, ck.compiled)
            ck.compiled.cycle = cks
            ck.compiled.jit.cycle = ck.compiled
            kernel.clear_cache()
            del cks, ck
        before = len(cpu._engines)
        gc.collect()
        print("ok", before - len(cpu._engines))
    """)
    word, freed = out.split()
    assert word == "ok" and int(freed) >= 16


def test_code_is_freed_with_the_last_user():
    kernel.clear_cache()
    spec = _const_spec(123.25)
    ck = bind(spec, np.empty(4), np.ones(4))
    jit = ck.compiled.jit
    ref = weakref.ref(ck.compiled)
    kernel.clear_cache()  # no longer cached, still bound
    assert jit.engine is not None and ref() is not None
    out = np.empty(4)
    with bind(spec, out, np.ones(4)) as ck2:  # a recompile: a new kernel
        ck2()
    assert np.array_equal(out, np.full(4, 124.25))
    ck()
    del ck, ck2
    kernel.clear_cache()
    gc.collect()
    assert ref() is None and jit.engine is None
    assert id(jit) not in cpu._engines


def test_closed_compiled_kernel_refuses_to_bind_but_bound_ones_still_run():
    out = _run("""
        import numpy as np
        from lazyk.kernel import flat as kernel
        from lazyk.errors import BindError
        from lazyk.kernel.flat import Instr, KernelSpec, bind

        F8 = np.dtype(np.float64)
        body = (Instr("load", F8, (), 0), Instr("const", F8, (), 7.5), Instr("add", F8, (0, 1)))
        spec = KernelSpec((F8,), (True,), body, ((2, F8),))
        out = np.empty(3)
        ck = bind(spec, out, np.zeros(3))
        compiled = ck.compiled
        compiled.close()  # a bound kernel still uses it: the code stays until that closes
        ck()
        assert np.array_equal(out, np.full(3, 7.5))
        try:
            compiled.bind(np.empty(3), np.zeros(3))
            raise AssertionError("binding a closed kernel must raise")
        except BindError as e:
            assert "closed" in str(e)
        jit = compiled.jit
        ck.close()
        assert compiled.jit is None and jit.engine is None
        again = kernel.compile(spec, compiled.layout)  # the cache compiles it again
        assert again is not compiled and again.jit is not None
        print("ok")
    """)
    assert out.split() == ["ok"]


def test_modules_linked_into_one_engine_each_run_their_own_code():
    # Every kernel defines the same symbol names; modules linked into one shared engine must
    # each get their own code, their calls between their own functions included, and an
    # engine's code is freed once it is full and every module linked there is closed.
    out = _run("""
        import ctypes
        from lazyk.backend import cpu

        def ir(k):
            return f'''
        define i64 @lifetime_inner(i64 %x) noinline {{
          %r = add i64 %x, {k}
          ret i64 %r
        }}
        define i64 @lifetime_outer(i64 %x) {{
          %r = call i64 @lifetime_inner(i64 %x)
          %s = mul i64 %r, 1000
          ret i64 %s
        }}'''

        n = 2 * cpu.SHARED_OBJECTS + 1
        mods = [cpu.JITModule(ir(k), ("lifetime_outer",)) for k in range(n)]
        fn = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)
        got = [fn(m.addresses["lifetime_outer"])(7) for m in mods]
        assert got == [(7 + k) * 1000 for k in range(n)], got
        engines = list({id(m.engine): m.engine for m in mods}.values())
        assert 2 <= len(engines) <= 4, len(engines)
        first = mods[0].engine
        mine = [m for m in mods if m.engine is first]
        for m in mine[:-1]:
            m.close()
        assert not first.ee.closed  # one module linked there is still open
        k = mods.index(mine[-1])
        assert fn(mine[-1].addresses["lifetime_outer"])(0) == k * 1000
        mine[-1].close()
        assert first.ee.closed
        print("ok")
    """)
    assert out.split()[0] == "ok"
