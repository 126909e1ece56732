"""A persistent native thread pool that runs kernels over chunks of the outer dimension.

Python-level dispatch (events, queues) costs tens of microseconds per call, more than the whole
kernel at n = 1e5. So the pool is native code generated with llvmlite at first use: worker
threads are Python threads parked inside one foreign call (the GIL released for good), waiting on
a shared generation counter (spin, then futex); `run` publishes a job, runs part 0 on the calling
thread and waits for the others. No C compiler is needed at install time.
"""
from __future__ import annotations

import atexit
import contextlib
import contextvars
import ctypes
import os
import threading
import weakref

from lazyk.backend.cpu import JITModule
from lazyk.backend.optworker import llvm
from lazyk.backend.poolcode import FUTEX_WAKE_PRIVATE, STATE_BYTES, SYS_FUTEX, pool_ir

# Below this many elements per extra thread, waking a worker costs more than it saves
# (measured: ~3-5 us dispatch vs ~0.3 ns/element for a streaming add).
MIN_CHUNK = 1 << 15

# The pool's native code and the layout of its state: lazyk.backend.poolcode.


class _Native:
    """The JIT-compiled pool functions; built once per process (see `native()`), never freed:
    worker threads and planned records run its code for the life of the process."""

    def __init__(self) -> None:
        # The record runner releases the GIL itself where CPython's API is visible to the JIT
        # (it is in a normal python executable); otherwise it keeps it.
        text = pool_ir(bool(llvm.address_of_symbol("PyEval_SaveThread")
                            and llvm.address_of_symbol("PyEval_RestoreThread")))
        # A JITModule: on-disk object cache (the pool cost ~25 ms to compile in every process).
        names = ("lazyk_pool_worker", "lazyk_pool_run", "lazyk_strided_part", "lazyk_record_go")
        self.engine = JITModule(text, names)
        addr = self.engine.addresses.__getitem__
        self.worker = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(addr("lazyk_pool_worker"))
        self.run = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                    ctypes.c_int64)(addr("lazyk_pool_run"))
        self.strided_part = addr("lazyk_strided_part")
        self.record_go_address = addr("lazyk_record_go")
        self.record_go = ctypes.PYFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                                           ctypes.c_void_p)(self.record_go_address)


class Pool:
    """Persistent workers parked in native code; `run(fn, arg, n)` calls fn(arg, tid) for tid < n."""

    def __init__(self, nthreads: int) -> None:
        self.native = native()
        self.nthreads = max(1, int(nthreads))
        self._state = (ctypes.c_char * (STATE_BYTES + 64))()
        # 64-byte align the state inside the buffer so each field group owns its cache line.
        base = ctypes.addressof(self._state)
        self.state = (base + 63) & ~63
        self._epoch = ctypes.c_int64.from_address(self.state + 152)
        self._sleepers = ctypes.c_int32.from_address(self.state + 8)
        self._threads = []
        for tid in range(1, self.nthreads):
            t = threading.Thread(target=self.native.worker, args=(self.state, tid), daemon=True,
                                 name=f"lazyk-worker-{tid}")
            t.start()
            self._threads.append(t)

    def run(self, fn_address: int, arg_address: int, nparts: int) -> None:
        """Run native `void fn(void *arg, int64 tid)` for tid in [0, nparts) with the GIL released."""
        # A nested or concurrent call finds the pool busy and runs its parts itself (natively).
        # NOTE: every part, also beyond the pool's threads (parts are claimed, not assigned):
        # another Python thread may have made a smaller pool than this caller's `threads(n)`
        # block planned parts for, and a part left out was a result row never computed.
        self.native.run(self.state, fn_address, arg_address, max(1, int(nparts)))

    @property
    def epoch(self) -> int:
        """Bumped when the thread setting changes: records planned before are stale."""
        return self._epoch.value

    def bump_epoch(self) -> None:
        self._epoch.value += 1

    def close(self) -> None:
        """Stop and join the workers; records planned for this pool become stale."""
        self._epoch.value = -1
        if not self._threads:
            return
        # A job in flight is safe: workers finish the parts they claimed, the caller claims
        # the rest.
        ctypes.c_int32.from_address(self.state + 16).value = 1
        gen = ctypes.c_int32.from_address(self.state)
        for _ in range(5):
            # NOTE: this Python increment can race a job being published from another thread
            # and be lost; bump and wake again until every worker has seen the shutdown.
            gen.value += 1
            _wake(self.state)
            for t in self._threads:
                t.join(timeout=0.2)
            if not any(t.is_alive() for t in self._threads):
                break
        else:  # pragma: no cover - a worker never woke: never free the memory it waits on
            _parked_states.append(self._state)
        self._threads = []

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_parked_states: list = []  # pool states a worker may still read (see Pool.close)


_syscall = None


def _wake(address: int) -> None:
    """futex-wake all waiters on the int at `address`."""
    global _syscall
    if _syscall is None:
        _syscall = ctypes.CDLL(None, use_errno=True).syscall
    _syscall(ctypes.c_long(SYS_FUTEX), ctypes.c_void_p(address),
             ctypes.c_long(FUTEX_WAKE_PRIVATE), ctypes.c_int(2147483647))


# Inputs of at least this many rows wake the workers as their evaluation starts (`rouse`).
ROUSE_ROWS = 1 << 16


def rouse(rows: int) -> None:
    """Wake the pool's sleeping workers without a job: they spin (~1 ms) for the next one.
    Called where an evaluation over `rows` rows starts planning: a worker asleep after an
    idle millisecond takes 50-200 us to wake on a virtual machine (an idle vCPU halts), as
    long as a 2-thread histogram of 1e6 values; woken now, it is spinning when the first
    kernel comes. Fewer than ROUSE_ROWS rows, no worker asleep, or one thread: nothing
    (small calls in a loop would keep the workers spinning for nothing)."""
    p = _pool
    if rows >= ROUSE_ROWS and p is not None and p._sleepers.value > 0 and \
            get_num_threads() > 1:
        _wake(p.state)


# Below this many values a part runs with the GIL held: ~1 us less per call than releasing
# it, for a kernel too short for other Python threads to gain anything meanwhile.
HOLD_GIL_VALUES = 1 << 14
_protos: dict[tuple, ctypes._CFuncPtr] = {}


def part_entry(fn_address: int, values: int = HOLD_GIL_VALUES) -> ctypes._CFuncPtr:
    """`f(arg_address, tid)`: native `void fn(void *arg, int64 tid)` run on this thread,
    with the GIL released unless the part reads fewer than HOLD_GIL_VALUES values."""
    hold = values < HOLD_GIL_VALUES
    f = _protos.get((fn_address, hold))
    if f is None:
        kind = ctypes.PYFUNCTYPE if hold else ctypes.CFUNCTYPE
        f = _protos[fn_address, hold] = kind(None, ctypes.c_void_p, ctypes.c_int64)(fn_address)
    return f


def _call_part(fn_address: int, arg_address: int, nparts: int) -> None:
    """Run every part on the calling thread (GIL released by ctypes)."""
    f = part_entry(fn_address)
    for tid in range(nparts):
        f(arg_address, tid)


_native: _Native | None = None
_native_lock = threading.Lock()
_pool: Pool | None = None
_pool_lock = threading.Lock()
# More threads than this many per core only add switching; set_num_threads caps there.
MAX_THREADS_PER_CORE = 4


def native() -> _Native:
    """The process's pool code, built exactly once.

    NOTE: built under a lock: threads making their first large call together each built a
    copy, and a losing copy was freed (its machine code with it) while another thread ran it.
    """
    global _native
    if _native is None:
        with _native_lock:
            if _native is None:
                _native = _Native()
    return _native


def _max_threads() -> int:
    return MAX_THREADS_PER_CORE * (os.cpu_count() or 1)


def _capped(n: int, what: str, stacklevel: int) -> int:
    """`n` threads, or the cap with a warning naming `what` asked for more."""
    import warnings

    if n <= _max_threads():
        return n
    warnings.warn(f"{what}: capped at {_max_threads()} ({MAX_THREADS_PER_CORE} per core on "
                  f"this {os.cpu_count() or 1}-core machine)", RuntimeWarning,
                  stacklevel=stacklevel + 1)
    return _max_threads()


def default_num_threads(environ=None) -> int:
    """The thread count the environment asks for: `LAZYK_NUM_THREADS`, else `OMP_NUM_THREADS`
    (Dask's `distributed` workers set it to 1), else the number of cores.

    A value that is not a positive integer is ignored with a warning; values above
    `MAX_THREADS_PER_CORE` times the core count are capped with a warning, as
    `set_num_threads` caps them.
    """
    import warnings

    env = os.environ if environ is None else environ
    for var in ("LAZYK_NUM_THREADS", "OMP_NUM_THREADS"):
        text = env.get(var, "").strip()
        if not text:
            continue
        # OMP_NUM_THREADS may be a nesting list ("4,2"); its first entry is the outer level.
        first = text.split(",")[0].strip() if var == "OMP_NUM_THREADS" else text
        try:
            n = int(first)
        except ValueError:
            n = 0
        if n < 1:
            warnings.warn(f"lazyk: ignoring {var}={text!r} (expected a positive integer)",
                          RuntimeWarning, stacklevel=2)
            continue
        return _capped(n, f"lazyk: {var}={text!r}", stacklevel=2)
    return os.cpu_count() or 1


_num_threads = default_num_threads()
# The count of a `threads(n)` block, local to the Python thread (and asyncio task) inside it.
_local_count: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "lazyk_threads", default=None)
_blocks = 0  # `threads(n)` blocks open in any Python thread (planned records are off then)


def _checked_count(n: int, what: str = "set_num_threads", stacklevel: int = 3) -> int:
    import operator

    if isinstance(n, bool):
        raise TypeError("number of threads must be an int, not bool")
    try:
        n = operator.index(n)  # 1.5 or "2" are mistakes, not 1 or 2 threads
    except TypeError:
        raise TypeError(f"number of threads must be an int, not {type(n).__name__}") from None
    if n < 1:
        raise ValueError(f"number of threads must be >= 1, got {n}")
    return _capped(n, f"lazyk.{what}({n})", stacklevel=stacklevel)


def set_num_threads(n: int) -> None:
    """Set how many threads kernels may use.

    The default comes from `LAZYK_NUM_THREADS`, else `OMP_NUM_THREADS`, else the core
    count (read at import). Values below 1 raise ValueError; values above 4 threads per core
    are capped with a RuntimeWarning. The setting is process-wide: every Python thread
    outside a `lazyk.threads(n)` block uses it.
    """
    global _num_threads

    n = _checked_count(n)
    with _pool_lock:
        _num_threads = n
        _resize(n)


def _resize(n: int) -> None:
    """Make the pool fit `n` threads (call with `_pool_lock` held)."""
    global _pool

    # Fewer threads: keep the pool and use fewer parts (switching costs nothing, which
    # benchmarks alternating 1 and all threads rely on); more: start a bigger pool.
    if _pool is not None and _pool.nthreads < n:
        _pool.close()
        _pool = None
    elif _pool is not None:
        _pool.bump_epoch()


def get_num_threads() -> int:
    """How many threads kernels called from this Python thread may use: the count of the
    innermost `lazyk.threads(n)` block this thread is in, else `set_num_threads`'s."""
    n = _local_count.get()
    return _num_threads if n is None else n


def local_blocks() -> bool:
    """Whether a `threads(n)` block is open in any Python thread: a planned threaded record
    (fixed parts, run natively without asking the count) must not be planned or used then."""
    return _blocks > 0


@contextlib.contextmanager
def threads(n: int):
    """`with lazyk.threads(1): ...` runs kernels called from this Python thread on `n`
    threads inside the block, then restores the previous count exactly.

    The setting is local to the Python thread (a context variable; asyncio tasks each get
    their own): blocks in different threads, overlapping or not, never change each other's
    count nor the process-wide one of `set_num_threads`. Blocks nest.
    """
    global _blocks

    n = _checked_count(n, "threads", stacklevel=4)  # (the block's `with` line)
    with _pool_lock:
        _blocks += 1
        # records planned before the block are stale; none are planned while blocks are open
        _resize(max(n, _pool.nthreads if _pool is not None else 0))
    token = _local_count.set(n)
    try:
        yield
    finally:
        _local_count.reset(token)
        with _pool_lock:
            _blocks = max(0, _blocks - 1)


def pool() -> Pool:
    """The process-wide pool, created at first use with `get_num_threads()` threads."""
    global _pool
    p = _pool
    if p is None:
        with _pool_lock:
            if _pool is None:
                _pool = Pool(max(_num_threads, get_num_threads()))
            p = _pool
    return p


def parts_for(work: int, min_work: int = MIN_CHUNK, threads: int | None = None,
              per_thread: int = 1) -> int:
    """How many thread parts `work` is worth, for every runner: 1 on one thread or below two
    parts of `min_work` (the work a part must hold to pay for waking a thread: the runner
    says in its own unit), else up to `per_thread` parts per thread of at least `min_work`
    each. `threads`: the thread count to split for (default: `get_num_threads()`)."""
    n = get_num_threads() if threads is None else threads
    if n <= 1 or work < 2 * min_work:
        return 1
    return min(n * per_thread, work // min_work)


def parallel_for(fn_address: int, arg_address: int, nparts: int) -> None:
    """Run native `void fn(void *arg, int64 tid)` for tid in [0, nparts) on the pool."""
    if nparts <= 1:
        _call_part(fn_address, arg_address, 1)
    else:
        pool().run(fn_address, arg_address, nparts)


CHUNKS_PER_PART = 4  # stealing granularity: a stalled thread leaves at most 1/4 of its share


def chunk_size(count: int, parts: int) -> int:
    """Outer elements per claimable chunk: CHUNKS_PER_PART per part, rounded up to 64 so
    chunks of a long 1-D loop start on cache lines. A short outer dim (rows of a 2-D layout)
    is not rounded: 100 rows in chunks of 64 left one thread 64 rows and the other 36."""
    chunk = -(-count // (parts * CHUNKS_PER_PART))
    return (chunk + 63) & ~63 if chunk > 64 else chunk


def max_chunks(nparts: int | None = None) -> int:
    """Most chunks (and reduction partials) one call can produce with `nparts` parts."""
    return CHUNKS_PER_PART * max(nparts or 0, get_num_threads(), os.cpu_count() or 1)


_tasks: weakref.WeakSet = weakref.WeakSet()  # live tasks: their locks are freed in a forked child


class StridedTask:
    """A reusable 1-D strided ckernel call split over threads; fields set per call, no allocation.

    For a reduction pass `dst_stride=0` and `dst_chunk_stride=itemsize`: chunk i writes its
    partial at `dst + i * itemsize`; the call returns how many chunks (partials) there were.
    """

    def __init__(self, nsrc: int, max_parts: int | None = None) -> None:
        self.max_parts = max(max_parts or 0, get_num_threads(), os.cpu_count() or 1)
        self.buf = (ctypes.c_int64 * (16 + 8 * self.max_parts))()
        self.address = ctypes.addressof(self.buf)
        self.buf[5] = nsrc
        self._lock = threading.Lock()  # the buffer holds one call's claim counters
        _tasks.add(self)

    def __call__(self, fn: int, dst: int, dst_stride: int, src_array: int, src_stride_array: int,
                 count: int, self_ptr: int, min_chunk: int = MIN_CHUNK, dst_chunk_stride: int = 0,
                 max_parts: int | None = None) -> int:
        """Execute fn over `count` elements; src/src_stride are addresses of native arrays.

        Returns the number of chunks the range was cut into (each got one kernel call).
        """
        if not self._lock.acquire(blocking=False):
            # Another Python thread is running this task right now: use a private buffer.
            return StridedTask(self.buf[5], self.max_parts)(
                fn, dst, dst_stride, src_array, src_stride_array, count, self_ptr, min_chunk,
                dst_chunk_stride, max_parts)
        try:
            return self._run(fn, dst, dst_stride, src_array, src_stride_array, count, self_ptr,
                             min_chunk, dst_chunk_stride, max_parts)
        finally:
            self._lock.release()

    def _run(self, fn: int, dst: int, dst_stride: int, src_array: int, src_stride_array: int,
             count: int, self_ptr: int, min_chunk: int, dst_chunk_stride: int,
             max_parts: int | None) -> int:
        b = self.buf
        parts = min(parts_for(count, min_chunk), self.max_parts)
        if max_parts is not None:
            parts = max(1, min(parts, max_parts))
        if parts == 1:
            chunk, nchunks, per = max(count, 1), (1 if count else 0), 1
        else:
            chunk = chunk_size(count, parts)
            nchunks = -(-count // chunk)
            per = -(-nchunks // parts)
        b[0], b[1], b[2], b[3], b[4], b[6], b[7], b[8] = (
            fn, dst, dst_stride, src_array, src_stride_array, count, self_ptr, parts)
        b[9], b[10], b[11], b[12] = dst_chunk_stride, chunk, nchunks, per
        for t in range(parts):
            b[16 + 8 * t] = 0
        parallel_for(strided_part_address(), self.address, parts)
        return nchunks


def strided_part_address() -> int:
    """Address of the native `lazyk_strided_part(task, tid)` trampoline."""
    return native().strided_part


def _after_fork_child() -> None:
    """A forked child has only the thread that forked: drop the parent's pool (its workers do
    not exist here; the child starts its own on first use) and free every lock."""
    global _pool, _blocks
    # only the forking thread's blocks are still open here (at most its own nesting)
    _blocks = 0 if _local_count.get() is None else 1
    for lock in (_pool_lock, _native_lock, *(t._lock for t in list(_tasks))):
        lock._at_fork_reinit()
    old, _pool = _pool, None
    if old is not None:
        old._epoch.value = -1  # records planned for the parent's pool are stale: replanned
        old._threads = []
        _parked_states.append(old._state)  # never freed: a stale record may still point at it


os.register_at_fork(after_in_child=_after_fork_child)


@atexit.register
def _shutdown() -> None:
    # Workers sit in foreign code; stop them before the interpreter tears down.
    if _pool is not None:
        _pool.close()
