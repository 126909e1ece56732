"""The native pool: parts run on distinct threads, chunks cover the range exactly, reentrancy."""
from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest

llvm = pytest.importorskip("llvmlite.binding")

from lazyk.arrays import outputs  # noqa: E402
from lazyk.backend import threads  # noqa: E402

_IR = r"""
declare i64 @pthread_self()
define void @record(ptr %arg, i64 %tid) {
  %s = call i64 @pthread_self()
  %p = getelementptr i64, ptr %arg, i64 %tid
  store i64 %s, ptr %p
  ret void
}
; ckernel strided ABI: out[i] = 2*a[i] + 3*b[i] over byte strides
define void @axpby(ptr %dst, i64 %ds, ptr %src, ptr %ss, i64 %n, ptr %self) {
entry:
  %pa0 = load ptr, ptr %src
  %q = getelementptr ptr, ptr %src, i64 1
  %pb0 = load ptr, ptr %q
  %sa = load i64, ptr %ss
  %r = getelementptr i64, ptr %ss, i64 1
  %sb = load i64, ptr %r
  %c = icmp sgt i64 %n, 0
  br i1 %c, label %loop, label %done
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
  %oa = mul i64 %i, %sa
  %ob = mul i64 %i, %sb
  %od = mul i64 %i, %ds
  %xa = getelementptr i8, ptr %pa0, i64 %oa
  %xb = getelementptr i8, ptr %pb0, i64 %ob
  %va = load double, ptr %xa
  %vb = load double, ptr %xb
  %two = fmul double %va, 2.0
  %three = fmul double %vb, 3.0
  %s = fadd double %two, %three
  %xo = getelementptr i8, ptr %dst, i64 %od
  store double %s, ptr %xo
  %i1 = add i64 %i, 1
  %c2 = icmp slt i64 %i1, %n
  br i1 %c2, label %loop, label %done
done:
  ret void
}
"""


@pytest.fixture(scope="module")
def native():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    tm = llvm.Target.from_default_triple().create_target_machine(opt=2)
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(_IR), tm)
    engine.finalize_object()
    yield engine
    threads.set_num_threads(threads.get_num_threads())


def _axpby(engine, task, a, b, out, min_chunk):
    srcs = (ctypes.c_void_p * 2)(a.ctypes.data, b.ctypes.data)
    strides = (ctypes.c_int64 * 2)(a.strides[0], b.strides[0])
    task(engine.get_function_address("axpby"), out.ctypes.data, out.strides[0],
         ctypes.addressof(srcs), ctypes.addressof(strides), out.shape[0], 0, min_chunk)


def test_num_threads_default_and_set() -> None:
    before = threads.get_num_threads()
    try:
        threads.set_num_threads(3)
        assert threads.get_num_threads() == 3
        with pytest.raises(ValueError):
            threads.set_num_threads(0)
    finally:
        threads.set_num_threads(before)


def test_parts_run_on_distinct_threads(native) -> None:
    threads.set_num_threads(4)
    ids = (ctypes.c_int64 * 4)()
    threads.parallel_for(native.get_function_address("record"), ctypes.addressof(ids), 4)
    pool = threads.pool()
    # Parts are claimed by whoever is running (a sleeping worker's part runs on the caller),
    # so each ran exactly once, on the caller (part 0 always) or on one of the pool's threads.
    assert all(ids) and ids[0] == threading.get_ident()  # pthread_self() values
    assert set(ids) <= {threading.get_ident()} | {t.ident for t in pool._threads}
    threads.set_num_threads(2)  # fewer threads: same pool, fewer parts
    assert threads.pool() is pool and threads.parts_for(10**9) == 2


def test_rouse_wakes_sleeping_workers(native) -> None:
    # A large evaluation wakes the workers as it starts planning, so none is still asleep
    # (50-200 us to wake on a VM) when its first kernel comes.
    import time
    threads.set_num_threads(2)
    ids = (ctypes.c_int64 * 2)()
    threads.parallel_for(native.get_function_address("record"), ctypes.addressof(ids), 2)
    pool = threads.pool()

    def settle(want, seconds):
        end = time.monotonic() + seconds
        while pool._sleepers.value != want and time.monotonic() < end:
            time.sleep(0.0005)
        return pool._sleepers.value
    def fewest(seconds):  # the fewest sleepers seen: a woken worker spins ~1 ms, then sleeps
        end, low = time.monotonic() + seconds, pool._sleepers.value
        while low and time.monotonic() < end:
            low = min(low, pool._sleepers.value)
        return low
    assert settle(len(pool._threads), 5.0) == len(pool._threads)  # idle: asleep
    # awake, spinning for the next job (on a busy machine the workers need not all be
    # awake at one moment: more workers than cores wake and sleep again in turn, and this
    # thread may not run while one is awake: a few tries)
    woke = False
    for _ in range(5):
        threads.rouse(threads.ROUSE_ROWS)
        if fewest(1.0) < len(pool._threads):
            woke = True
            break
        settle(len(pool._threads), 5.0)
    assert woke
    assert settle(len(pool._threads), 5.0) == len(pool._threads)  # asleep again after it
    threads.rouse(threads.ROUSE_ROWS - 1)  # a small evaluation: no worker is woken
    with threads.threads(1):
        threads.rouse(threads.ROUSE_ROWS)  # one thread: none either
    time.sleep(0.01)
    assert pool._sleepers.value == len(pool._threads)


@pytest.mark.parametrize("n", [0, 1, 63, 64, 65, 1000, 4099, 100_003])
@pytest.mark.parametrize("nthreads", [1, 2, 3])
def test_chunks_cover_range(native, n: int, nthreads: int) -> None:
    threads.set_num_threads(nthreads)
    rng = np.random.default_rng(n)
    a, b = rng.random(n), rng.random(2 * n)[::2]  # a strided operand
    out = np.full(n + 1, -1.0)
    _axpby(native, threads.StridedTask(2), a, b, out[:n], min_chunk=16)
    np.testing.assert_array_equal(out[:n], 2 * a + 3 * b)
    assert out[n] == -1.0  # nothing past the end


def test_below_threshold_runs_one_part() -> None:
    threads.set_num_threads(2)
    assert threads.parts_for(threads.MIN_CHUNK) == 1
    assert threads.parts_for(4 * threads.MIN_CHUNK) == 2
    threads.set_num_threads(1)
    assert threads.parts_for(10**9) == 1


def test_concurrent_callers(native) -> None:
    threads.set_num_threads(2)
    errors = []

    def work(seed: int) -> None:
        task = threads.StridedTask(2)
        rng = np.random.default_rng(seed)
        for _ in range(20):
            a, b = rng.random(50_000), rng.random(50_000)
            out = np.empty(50_000)
            _axpby(native, task, a, b, out, min_chunk=1000)
            if not np.array_equal(out, 2 * a + 3 * b):
                errors.append(seed)

    ts = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def test_job_posted_before_worker_starts_is_not_lost() -> None:
    # A worker that started after the first job was published used to miss it and deadlock.
    import subprocess
    import sys

    code = ("import ctypes\nfrom lazyk.backend import threads\n"
            "import llvmlite.binding as llvm\n"
            "for i in range(30):\n"
            "    p = threads.Pool(2)\n"
            "    task = threads.StridedTask(0)\n"
            "    task.buf[8] = 2  # two parts of an empty range: nothing to call\n"
            "    p.run(threads.strided_part_address(), task.address, 2)\n"
            "    p.close()\n"
            "print('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "ok", r.stderr


_SUM_IR = r"""
; reduction ckernel, strided ABI: *dst = sum(src0[i]) (initialised here, as lazyk kernels do)
define void @sum(ptr %dst, i64 %ds, ptr %src, ptr %ss, i64 %n, ptr %self) {
entry:
  %pa = load ptr, ptr %src
  %sa = load i64, ptr %ss
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %body]
  %acc = phi double [0.0, %entry], [%acc1, %body]
  %c = icmp slt i64 %i, %n
  br i1 %c, label %body, label %done
body:
  %o = mul i64 %i, %sa
  %x = getelementptr i8, ptr %pa, i64 %o
  %v = load double, ptr %x
  %acc1 = fadd double %acc, %v
  %i1 = add i64 %i, 1
  br label %loop
done:
  store double %acc, ptr %dst
  ret void
}
"""


@pytest.mark.parametrize("n", [1, 100, 5000, 100_001])
def test_reduction_partials(n: int) -> None:
    tm = llvm.Target.from_default_triple().create_target_machine(opt=2)
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(_SUM_IR), tm)
    engine.finalize_object()
    threads.set_num_threads(2)
    a = np.arange(n, dtype=np.float64)
    task = threads.StridedTask(1)
    partials = np.full(threads.max_chunks(task.max_parts) + 1, np.nan)
    srcs = (ctypes.c_void_p * 1)(a.ctypes.data)
    strides = (ctypes.c_int64 * 1)(8)
    used = task(engine.get_function_address("sum"), partials.ctypes.data, 0,
                ctypes.addressof(srcs), ctypes.addressof(strides), n, 0,
                min_chunk=16, dst_chunk_stride=8)
    assert np.isnan(partials[used:]).all() and not np.isnan(partials[:used]).any()
    assert partials[:used].sum() == a.sum()


@pytest.mark.parametrize("red", ["sum", "min", "max", "prod", "mean"])
def test_lazyk_reductions_split_over_threads(red: str) -> None:
    lazyk = pytest.importorskip("lazyk")
    if not hasattr(lazyk, "compile"):
        pytest.skip("front end not available")
    threads.set_num_threads(2)
    n = 4 * threads.MIN_CHUNK + 7
    rng = np.random.default_rng(1)
    a = rng.uniform(0.999, 1.001, n)
    pa = lazyk.placeholder("a", "N * float64")
    f = lazyk.compile(getattr(lazyk, red)(pa * 1.0))
    np.testing.assert_allclose(f(a), getattr(np, red)(a), rtol=1e-12)
    if red in ("min", "max"):
        a[n - 3] = np.nan  # lands in the last thread's chunk; must still propagate
        assert np.isnan(f(a))


def test_empty_reuses_blocks_of_dead_outputs() -> None:
    n = outputs.REUSE_MIN_BYTES // 8 + 1000
    a = outputs.empty(n, np.float64)
    assert a.shape == (n,) and a.flags.writeable and a.flags.aligned
    a[:] = 1.0
    addr = a.ctypes.data
    view = a[10:]
    del a
    b = outputs.empty((n,), np.float64)
    assert b.ctypes.data != addr  # the view still holds the first block
    del view
    c = outputs.empty((n // 2, 2), "f8")  # same size class: the idle block comes back
    assert c.ctypes.data == addr and c.shape == (n // 2, 2)
    del b, c
    assert outputs.idle_bytes() <= outputs.REUSE_MAX_IDLE
    small = outputs.empty(10, np.int32)
    assert small.dtype == np.int32 and small.flags.owndata  # plain np.empty below the threshold


def test_lazyk_repeated_threaded_calls_use_new_arrays() -> None:
    lazyk = pytest.importorskip("lazyk")
    threads.set_num_threads(2)
    n = 4 * threads.MIN_CHUNK + 7
    pa, pb = lazyk.placeholder("a", "N * float64"), lazyk.placeholder("b", "N * float64")
    f, g = lazyk.compile(2 * pa + pb), lazyk.compile(lazyk.sum(pa * pb))
    rng = np.random.default_rng(3)
    for _ in range(3):  # same geometry, new arrays: the cached bound kernel is re-pointed
        a, b, out = rng.random(n), rng.random(n), np.empty(n)
        np.testing.assert_array_equal(f(a, b), 2 * a + b)
        assert f(a, b, out=out) is out
        np.testing.assert_array_equal(out, 2 * a + b)
        np.testing.assert_allclose(g(a, b), np.sum(a * b), rtol=1e-12)


def test_one_task_called_from_many_threads(native) -> None:
    threads.set_num_threads(2)
    task = threads.StridedTask(2)  # shared on purpose: callers must not share claim counters
    n = 40_000
    errors = []

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(10):
            a, b, out = rng.random(n), rng.random(n), np.empty(n)
            _axpby(native, task, a, b, out, min_chunk=500)
            if not np.array_equal(out, 2 * a + 3 * b):
                errors.append(seed)

    ts = [threading.Thread(target=work, args=(s,)) for s in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def test_native_code_is_built_once_and_shared() -> None:
    # Racing first calls used to build (and free) several copies; see
    # tests/test_native_reliability.py for the threaded scenario in a fresh process.
    n = threads.native()
    assert threads.native() is n and threads.pool().native is n
    assert threads.strided_part_address() == n.strided_part != 0


@pytest.mark.parametrize("nthreads,values,want", [(2, 3, 4), (2, 5, 6), (3, 4, 6), (2, 1, 1),
                                                  (2, 100, 8)])
def test_nest_parts_are_a_multiple_of_the_threads(nthreads, values, want):
    """Loop-nest parts of about equal content, as many on each thread: 3 parts on 2 threads
    left one thread twice the work of the other. `values`: content in MIN_PARTs."""
    from lazyk.kernel import nest
    n = 10**6

    def before(r):
        return r * values * nest.MIN_PART // n
    with threads.threads(nthreads):
        bounds = nest.split(n, before(n), before)
    assert len(bounds) - 1 == want and bounds[0] == 0 and bounds[-1] == n
    sizes = np.diff(bounds)
    assert sizes.max() - sizes.min() <= 2


@pytest.mark.parametrize("weight,want", [(1, 1), (2, 2), (6, 6), (100, 8)])
def test_nest_parts_weigh_the_values_each_unit_reads(weight, want):
    """Content of one MIN_PART is one part; read by `weight` operands it is worth `weight`
    parts (up to PARTS_PER_THREAD per thread, a multiple of the threads)."""
    from lazyk.kernel import nest
    n = 10**5

    def before(r):
        return r * nest.MIN_PART // n
    before.rows = False
    with threads.threads(2):
        bounds = nest.split(n, before(n), before, weight)
    assert len(bounds) - 1 == want and bounds[0] == 0 and bounds[-1] == n
