"""Native reliability: concurrent first calls, fork with threads about, the pool after fork.

Each scenario runs in a fresh subprocess with a timeout, so a crash or a hang fails one test.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("llvmlite.binding")
pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


# Waits for a forked child: "ok" when it exited 0, "hung" after `limit` seconds (then killed).
_WAIT = '''
import os, time
def wait_child(pid, limit=15.0):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        p, status = os.waitpid(pid, os.WNOHANG)
        if p:
            code = os.waitstatus_to_exitcode(status)
            return "ok" if code == 0 else f"exit {code}"
        time.sleep(0.01)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return "hung"
'''


def _run(code: str, timeout: float = 120) -> str:
    """Run `code` (with `wait_child`) in a fresh interpreter; its last stdout line."""
    try:
        r = subprocess.run([sys.executable, "-W", "ignore", "-c", _WAIT + textwrap.dedent(code)],
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung for {timeout} s")
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return r.stdout.strip().splitlines()[-1]


def test_concurrent_first_large_calls() -> None:
    # Threads making their first threaded-size call together each built the pool's native
    # code; a losing copy was freed while another thread ran it (a segfault most runs).
    out = _run('''
        import threading, numpy as np, lazyk
        from lazyk.backend import threads
        builds = []
        init = threads._Native.__init__
        threads._Native.__init__ = lambda self: (builds.append(1), init(self))[1]
        threads.set_num_threads(4)
        A = np.random.default_rng(0).random(300_000)
        x = lazyk.placeholder('x', 'N * float64')
        f = lazyk.compile(x * 2.0 + x)
        f(A[:10])
        start, bad = threading.Barrier(8), []
        def work():
            start.wait()
            for _ in range(20):
                r = f(A)
                if r.dtype != np.float64 or r.shape != A.shape or not np.array_equal(r, A * 2.0 + A):
                    bad.append(r)
        ts = [threading.Thread(target=work) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        print(len(builds), len(bad))
    ''')
    assert out == "1 0"  # built exactly once, every result equal to NumPy's


def test_fork_while_another_thread_compiles() -> None:
    # The child inherited the JIT lock held by a thread that does not exist there: it hung.
    out = _run('''
        import random, threading, numpy as np, lazyk
        a = lazyk.placeholder('a', 'N * float64')
        stop, compiled = False, [0]
        def compiler():
            rng = random.Random()
            while not stop:
                lazyk.compile(a * rng.random() + 1.0)(np.ones(3))  # a new kernel each time
                compiled[0] += 1
        threading.Thread(target=compiler, daemon=True).start()
        while compiled[0] < 2:
            time.sleep(0.01)
        results = []
        for k in range(6):
            time.sleep(random.random() * 0.03)
            pid = os.fork()
            if pid == 0:
                x = np.arange(10.0)
                r = lazyk.compile(a * 5.0 - 1.0 + k)(x)  # compile in the child too
                s = lazyk.evaluate("x * 2 + 1")
                ok = (np.array_equal(r, x * 5.0 - 1.0 + k) and r.dtype == np.float64
                      and np.array_equal(s, x * 2 + 1))
                os._exit(0 if ok else 3)
            results.append(wait_child(pid))
            if results[-1] != "ok":
                break
        stop = True
        print(" ".join(results))
    ''')
    assert out == " ".join(["ok"] * 6)


def test_fork_while_threads_hold_lazyk_locks() -> None:
    # Every lock a compile or evaluation takes, held by another thread at the fork (the JIT
    # lock past the fork hook's wait): the child gets them all free.
    out = _run('''
        import threading, numpy as np, lazyk
        from lazyk.kernel import flat as kernel
        from lazyk.kernel import nest as nest_kernel
        from lazyk.runtime import launch as runtime
        from lazyk.arrays import outputs
        from lazyk.backend import cpu, threads
        cpu._FORK_WAIT = 0.2
        x = np.arange(10.0)
        lazyk.evaluate("x + 1")
        task = threads.StridedTask(1)
        locks = [cpu._lock, kernel.kernels._lock, runtime.plans._lock,
                 nest_kernel.kernels._lock, threads._pool_lock, threads._native_lock, outputs._idle_lock,
                 task._lock]
        held, release = threading.Event(), threading.Event()
        def holder():
            for lock in locks:
                lock.acquire()
            held.set()
            release.wait()
            for lock in locks:
                lock.release()
        threading.Thread(target=holder, daemon=True).start()
        held.wait()
        pid = os.fork()
        if pid == 0:
            r = lazyk.evaluate("x * 3 - 2")
            f = lazyk.compile(lazyk.placeholder('a', 'N * float64') * 7.0)
            ok = np.array_equal(r, x * 3 - 2) and np.array_equal(f(x), x * 7.0)
            ok &= not any(lock.locked() for lock in locks[1:])
            os._exit(0 if ok else 3)
        got = wait_child(pid)
        release.set()
        print(got)
    ''')
    assert out == "ok"


def test_fork_after_the_pool_ran() -> None:
    # The parent's workers do not exist in the child: it must start its own pool, whose
    # workers really run parts, and run threaded-size kernels right (the cached threaded
    # record of the parent's pool included).
    out = _run('''
        import ctypes, threading, numpy as np, lazyk
        import llvmlite.binding as llvm
        from lazyk.backend import cpu, threads
        threads.set_num_threads(2)
        A = np.random.default_rng(1).random(400_000)
        B = np.random.default_rng(2).random(400_000)
        a, b = lazyk.placeholder('a', 'N * float64'), lazyk.placeholder('b', 'N * float64')
        f = lazyk.compile(a * 2.0 - b)
        for _ in range(3):
            assert np.array_equal(f(A, B), A * 2.0 - B)
        out = np.empty_like(A)
        f(A, B, out=out)
        parent_pool = threads.pool()
        assert len(parent_pool._threads) == 1
        # Records which thread ran each part; part 0 (the caller's) waits until part 1 is
        # done (at most ~1 s), so only a worker can have run part 1.
        ir = """declare i64 @pthread_self()
        declare i64 @llvm.readcyclecounter()
        define void @who(ptr %arg, i64 %tid) {
        entry:
          %s = call i64 @pthread_self()
          %p = getelementptr i64, ptr %arg, i64 %tid
          %first = icmp eq i64 %tid, 0
          br i1 %first, label %wait, label %done
        wait:
          %t0 = call i64 @llvm.readcyclecounter()
          br label %spin
        spin:
          %q = getelementptr i64, ptr %arg, i64 1
          %v = load atomic i64, ptr %q seq_cst, align 8
          %t = call i64 @llvm.readcyclecounter()
          %el = sub i64 %t, %t0
          %late = icmp ugt i64 %el, 3000000000
          %set = icmp ne i64 %v, 0
          %stop = or i1 %set, %late
          br i1 %stop, label %done, label %spin
        done:
          store atomic i64 %s, ptr %p seq_cst, align 8
          ret void
        }"""
        jit = cpu.JITModule(ir, ("who",))  # alive while its code runs
        who = jit.addresses["who"]
        pid = os.fork()
        if pid == 0:
            checks = []
            for _ in range(3):
                r = f(A, B)
                checks.append(r.dtype == np.float64 and r.shape == A.shape
                              and np.array_equal(r, A * 2.0 - B))
                o = np.zeros_like(A)
                checks.append(f(A, B, out=o) is o and np.array_equal(o, A * 2.0 - B))
            checks.append(np.array_equal(lazyk.evaluate("A * B + 1"), A * B + 1))
            p = threads.pool()
            checks.append(p is not parent_pool and len(p._threads) == 1
                          and p._threads[0].is_alive())
            ids = (ctypes.c_int64 * 2)()
            p.run(who, ctypes.addressof(ids), 2)
            checks.append(ids[0] != 0 and ids[1] not in (0, ids[0]))  # a child's worker ran part 1
            os._exit(0 if all(checks) else 10 + checks.index(False))
        got = wait_child(pid)
        assert np.array_equal(f(A, B), A * 2.0 - B)  # the parent's pool is untouched
        print(got)
    ''')
    assert out == "ok"


def test_fork_while_other_threads_run_kernels() -> None:
    # Forks land in the middle of threaded calls (cached records busy, task locks held).
    out = _run('''
        import random, threading, numpy as np, lazyk
        lazyk.set_num_threads(2)
        A = np.random.default_rng(3).random(300_000)
        B = A[::-1].copy()
        a, b = lazyk.placeholder('a', 'N * float64'), lazyk.placeholder('b', 'N * float64')
        f = lazyk.compile(a * 2.0 - b)
        # NOTE: first calls import modules; a fork while another thread imports one hangs
        # the child on Python's module lock (CPython's limitation, not lazyk's).
        f(A, B)
        lazyk.evaluate("A * B + 1")
        stop = False
        def runner():
            o = np.empty_like(A)
            while not stop:
                f(A, B)
                f(A, B, out=o)
                lazyk.evaluate("A * B + 1")
        for _ in range(2):
            threading.Thread(target=runner, daemon=True).start()
        time.sleep(0.2)
        results = []
        for _ in range(4):
            time.sleep(random.random() * 0.02)
            pid = os.fork()
            if pid == 0:
                o = np.zeros_like(A)
                checks = [np.array_equal(f(A, B), A * 2.0 - B),
                          f(A, B, out=o) is o and np.array_equal(o, A * 2.0 - B),
                          np.array_equal(lazyk.evaluate("A * B + 1"), A * B + 1)]
                os._exit(0 if all(checks) else 10 + checks.index(False))
            results.append(wait_child(pid))
        stop = True
        print(" ".join(results))
    ''')
    assert out == "ok ok ok ok"


def test_a_forked_child_lets_go_of_the_parents_helper_processes() -> None:
    # The optimizer helpers end when their stdin closes: a child that kept the parent's pipe
    # open kept them alive past the parent and stalled the parent's closing (5 s a helper).
    out = _run('''
        import os, time, lazyk
        from lazyk.backend import cpu
        r = lazyk.array([[1.0, 2.0], [], [3.0]])
        h = cpu.host()
        h.ahead_helper()  # (started beside this process, as after a first ragged kernel)
        for _ in range(200):
            if h.ahead_helper() is not None:
                break
            time.sleep(0.05)
        helper = h.ahead_helper()
        assert helper is not None
        fd = helper.proc.stdin.fileno()
        pid = os.fork()
        if pid == 0:
            try:
                os.fstat(fd)
                os._exit(3)  # the pipe to the helper is still open in the child
            except OSError:
                pass
            os._exit(0 if (r * 3).sum(axis=1).eval().to_list() == [9.0, 0.0, 9.0] else 4)
        print(wait_child(pid))
    ''')
    assert out == "ok"
