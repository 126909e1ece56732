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
import ctypes
import os
import threading
import weakref
from math import prod as _prod

import numpy as _np

_np_empty = _np.empty

# Below this many elements per extra thread, waking a worker costs more than it saves
# (measured: ~3-5 us dispatch vs ~0.3 ns/element for a streaming add).
MIN_CHUNK = 1 << 15

# futex(2) through libc's syscall(): no C helper library needed.
_SYS_FUTEX = 202  # x86-64
_FUTEX_WAIT_PRIVATE = 128
_FUTEX_WAKE_PRIVATE = 129
# Spin this many TSC cycles (~1 ms at 2.3 GHz) before sleeping on the futex, both a worker waiting
# for the next job and the caller waiting for the workers. Measured here: waking a sleeping thread
# on this VM costs 50-200 us (an idle vCPU halts), so with ~16 us / 80 us pause-count spins a
# 2-thread call at n = 1e5 took ~200 us against 33 us with both threads kept awake.
_SPIN = 2_000_000
_CALLER_SPIN = 2_000_000
# The first ~90 us spin on `pause` only (most waits end there); after that each round also calls
# sched_yield, so a thread that shares our CPU with other load gets to run.
_PURE_SPIN = 200_000

# Pool state, one 64-byte cache line per field group so workers and caller do not false-share:
#   0: i32 generation (futex word)    8: i32 sleepers    16: i32 shutdown
#  64: i32 pending (futex word)      72: i32 caller_waiting
#  80: i64 claim word: (parts << 32) | next part to hand out
# 128: ptr fn   136: ptr arg   152: i64 epoch (bumped by set_num_threads; -1 once closed)
# 160: i32 busy (one job at a time; a concurrent caller runs its parts itself)
# NOTE: parts are claimed, not assigned to threads: whoever is running takes the next part,
# the caller included. A worker that is asleep or descheduled (a busy neighbour on a 2-core VM)
# then costs nothing: the caller runs its parts. With fixed assignment the caller waited for it:
# 2 threads at n = 1e5 next to a busy process took 85 us against 44 us on one thread.
_STATE_BYTES = 192

_IR = r"""
declare i64 @syscall(i64, ...)

define private void @futex_wait(ptr %p, i32 %v) {
  %r = call i64 (i64, ...) @syscall(i64 SYS_FUTEX, ptr %p, i64 FUTEX_WAIT, i32 %v, ptr null)
  ret void
}

define private void @futex_wake(ptr %p) {
  %r = call i64 (i64, ...) @syscall(i64 SYS_FUTEX, ptr %p, i64 FUTEX_WAKE, i32 2147483647)
  ret void
}

; Spin, then sleep, until *p != v; returns the new value.
define private i32 @await_change(ptr %p, i32 %v, ptr %sleepers) {
entry:
  br label %start
start:
  %t0 = call i64 @llvm.readcyclecounter()
  br label %spin
spin:
  %g = load atomic i32, ptr %p seq_cst, align 4
  %changed = icmp ne i32 %g, %v
  br i1 %changed, label %done, label %spin_next
spin_next:
  call void @llvm.x86.sse2.pause()
  %t = call i64 @llvm.readcyclecounter()
  %el = sub i64 %t, %t0
  %more = icmp ult i64 %el, SPIN
  br i1 %more, label %maybe_yield, label %sleep
maybe_yield:
  %fast = icmp ult i64 %el, PURE_SPIN
  br i1 %fast, label %spin, label %yield
yield:
  %y = call i32 @sched_yield()
  br label %spin
sleep:
  %s0 = atomicrmw add ptr %sleepers, i32 1 seq_cst
  call void @futex_wait(ptr %p, i32 %v)
  %s1 = atomicrmw sub ptr %sleepers, i32 1 seq_cst
  br label %start
done:
  ret i32 %g
}

declare void @llvm.x86.sse2.pause()
declare i64 @llvm.readcyclecounter()
; Yielding while spinning: when the thread we wait for shares our CPU (other load), it runs now
; instead of after our whole spin; on an idle CPU the call returns at once.
declare i32 @sched_yield()

; Claim and run parts of the current job until none is left; returns how many this thread ran.
; A claim reads the part count from the same atomic word as the part number, so a late claim
; on a finished job (number >= count) runs nothing, and a job's fn/arg, stored before its claim
; word, cannot change while one of its parts is unclaimed.
define private i64 @run_parts(ptr %st, i1 %notify) {
entry:
  %word = getelementptr i8, ptr %st, i64 80
  %pending = getelementptr i8, ptr %st, i64 64
  %waiting = getelementptr i8, ptr %st, i64 72
  %fnp = getelementptr i8, ptr %st, i64 128
  %argp = getelementptr i8, ptr %st, i64 136
  br label %claim
claim:
  %ran = phi i64 [0, %entry], [%ran1, %next]
  %w = atomicrmw add ptr %word, i64 1 seq_cst
  %id = and i64 %w, 4294967295
  %lim = lshr i64 %w, 32
  %mine = icmp ult i64 %id, %lim
  br i1 %mine, label %work, label %exit
work:
  %fn = load atomic ptr, ptr %fnp monotonic, align 8
  %arg = load atomic ptr, ptr %argp monotonic, align 8
  call void %fn(ptr %arg, i64 %id)
  %left = atomicrmw sub ptr %pending, i32 1 seq_cst
  %last = icmp eq i32 %left, 1
  %wakeit = and i1 %last, %notify
  br i1 %wakeit, label %wake, label %next
wake:
  %wt = load atomic i32, ptr %waiting seq_cst, align 4
  %ws = icmp ne i32 %wt, 0
  br i1 %ws, label %dowake, label %next
dowake:
  call void @futex_wake(ptr %pending)
  br label %next
next:
  %ran1 = add i64 %ran, 1
  br label %claim
exit:
  ret i64 %ran
}

; Worker thread: on each new job, claim parts until shutdown.
define void @lazyk_pool_worker(ptr %st, i64 %tid) {
entry:
  %gen = getelementptr i8, ptr %st, i64 0
  %sleepers = getelementptr i8, ptr %st, i64 8
  %shutdown = getelementptr i8, ptr %st, i64 16
  ; A fresh pool's generation is 0; starting from 0 (not from a load) means a job published
  ; before this thread got here is still seen as new.
  br label %wait
wait:
  %seen = phi i32 [0, %entry], [%g, %job]
  %g = call i32 @await_change(ptr %gen, i32 %seen, ptr %sleepers)
  %stop = load atomic i32, ptr %shutdown seq_cst, align 4
  %isstop = icmp ne i32 %stop, 0
  br i1 %isstop, label %exit, label %job
job:
  %n = call i64 @run_parts(ptr %st, i1 true)
  br label %wait
exit:
  ret void
}

; Run fn(arg, part) for part in [0, n): part 0 here, the rest claimed by whoever is running
; (this thread too, once part 0 is done); return when all are done.
define void @lazyk_pool_run(ptr %st, ptr %fn, ptr %arg, i64 %n) {
entry:
  %gen = getelementptr i8, ptr %st, i64 0
  %sleepers = getelementptr i8, ptr %st, i64 8
  %pending = getelementptr i8, ptr %st, i64 64
  %waiting = getelementptr i8, ptr %st, i64 72
  %word = getelementptr i8, ptr %st, i64 80
  %fnp = getelementptr i8, ptr %st, i64 128
  %argp = getelementptr i8, ptr %st, i64 136
  %busy = getelementptr i8, ptr %st, i64 160
  %one = icmp ule i64 %n, 1
  br i1 %one, label %alone, label %lock
lock:
  %cas = cmpxchg ptr %busy, i32 0, i32 1 seq_cst seq_cst
  %got = extractvalue { i32, i1 } %cas, 1
  br i1 %got, label %publish, label %alone
alone:
  ; one part, or another thread's job holds the pool (nested or concurrent caller): run
  ; every part here, in order
  %k = phi i64 [0, %entry], [0, %lock], [%k1, %alone_part]
  %kdone = icmp uge i64 %k, %n
  br i1 %kdone, label %alone_exit, label %alone_part
alone_part:
  call void %fn(ptr %arg, i64 %k)
  %k1 = add i64 %k, 1
  br label %alone
alone_exit:
  ret void
publish:
  store atomic ptr %fn, ptr %fnp monotonic, align 8
  store atomic ptr %arg, ptr %argp monotonic, align 8
  %n32 = trunc i64 %n to i32
  %others = sub i32 %n32, 1
  store atomic i32 %others, ptr %pending seq_cst, align 4
  %lim = shl i64 %n, 32
  %w0 = or i64 %lim, 1
  store atomic i64 %w0, ptr %word seq_cst, align 8
  %old = atomicrmw add ptr %gen, i32 1 seq_cst
  %sl = load atomic i32, ptr %sleepers seq_cst, align 4
  %anysleep = icmp ne i32 %sl, 0
  br i1 %anysleep, label %wake, label %mine
wake:
  call void @futex_wake(ptr %gen)
  br label %mine
mine:
  call void %fn(ptr %arg, i64 0)
  %ran = call i64 @run_parts(ptr %st, i1 false)
  br label %wstart
wstart:
  %t0 = call i64 @llvm.readcyclecounter()
  br label %spin
spin:
  %p = load atomic i32, ptr %pending seq_cst, align 4
  %done = icmp eq i32 %p, 0
  br i1 %done, label %exit, label %spin_next
spin_next:
  call void @llvm.x86.sse2.pause()
  %t = call i64 @llvm.readcyclecounter()
  %el = sub i64 %t, %t0
  %more = icmp ult i64 %el, CALLER_SPIN
  br i1 %more, label %maybe_yield, label %sleep
maybe_yield:
  %fast = icmp ult i64 %el, PURE_SPIN
  br i1 %fast, label %spin, label %yield
yield:
  %y = call i32 @sched_yield()
  br label %spin
sleep:
  store atomic i32 1, ptr %waiting seq_cst, align 4
  call void @futex_wait(ptr %pending, i32 %p)
  store atomic i32 0, ptr %waiting seq_cst, align 4
  br label %wstart
exit:
  store atomic i32 0, ptr %busy seq_cst, align 4
  ret void
}

; Run a planned strided-task record on new data: the single request's argument order plus an
; i64 result, so the native guard can call it (0: done; 1: the record is stale since
; set_num_threads; 2: another thread is running this record: nothing was run).
; Record fields (int64) 13: pool state, 14: busy, 15: the pool epoch it was planned for.
; NOTE: called with the GIL held (from the guard or a PYFUNCTYPE); releases it while it runs.
define i64 @lazyk_record_go(ptr %dst, ptr %src, ptr %rec) {
entry:
  %f_state = getelementptr i64, ptr %rec, i64 13
  %st = load ptr, ptr %f_state
  %epp = getelementptr i8, ptr %st, i64 152
  %ep = load atomic i64, ptr %epp seq_cst, align 8
  %f_want = getelementptr i64, ptr %rec, i64 15
  %want = load i64, ptr %f_want
  %fresh = icmp eq i64 %ep, %want
  br i1 %fresh, label %lock, label %stale
lock:
  %busy = getelementptr i64, ptr %rec, i64 14
  %cas = cmpxchg ptr %busy, i64 0, i64 1 seq_cst seq_cst
  %got = extractvalue { i64, i1 } %cas, 1
  br i1 %got, label %run, label %taken
run:
  call void @lazyk_task_set(ptr %dst, ptr %src, ptr %rec)
  %f_parts = getelementptr i64, ptr %rec, i64 8
  %parts = load i64, ptr %f_parts
  GIL_SAVE
  call void @lazyk_pool_run(ptr %st, ptr @lazyk_strided_part, ptr %rec, i64 %parts)
  GIL_RESTORE
  store atomic i64 0, ptr %busy seq_cst, align 8
  ret i64 0
stale:
  ret i64 1
taken:
  ret i64 2
}

; Part tid of a 1-D strided ckernel call. task (int64 fields): 0 fn, 1 dst, 2 dst_stride, 3 src,
; 4 src_stride, 5 nsrc, 6 count, 7 self, 8 nparts, 9 dst_chunk_stride, 10 chunk, 11 nchunks,
; 12 per_part; claim counters at fields 16 + 8 * part (one cache line each).
; Part t owns chunks [t * per_part, (t + 1) * per_part) and claims them in order (the same
; thread touches the same data every call: it stays in that core's cache); when its own run
; out it steals from the other parts, so a descheduled thread does not stall the call.
; A reduction (dst_stride 0) writes chunk i's partial at dst + i * dst_chunk_stride.
define void @lazyk_strided_part(ptr %task, i64 %tid) {
entry:
  %fn = load ptr, ptr %task
  %f_dst = getelementptr i64, ptr %task, i64 1
  %dst = load ptr, ptr %f_dst
  %f_dsts = getelementptr i64, ptr %task, i64 2
  %dsts = load i64, ptr %f_dsts
  %f_src = getelementptr i64, ptr %task, i64 3
  %src = load ptr, ptr %f_src
  %f_srcs = getelementptr i64, ptr %task, i64 4
  %srcs = load ptr, ptr %f_srcs
  %f_nsrc = getelementptr i64, ptr %task, i64 5
  %nsrc = load i64, ptr %f_nsrc
  %f_count = getelementptr i64, ptr %task, i64 6
  %count = load i64, ptr %f_count
  %f_self = getelementptr i64, ptr %task, i64 7
  %self = load ptr, ptr %f_self
  %f_parts = getelementptr i64, ptr %task, i64 8
  %parts = load i64, ptr %f_parts
  %f_cstride = getelementptr i64, ptr %task, i64 9
  %cstride = load i64, ptr %f_cstride
  %f_chunk = getelementptr i64, ptr %task, i64 10
  %chunk = load i64, ptr %f_chunk
  %f_nchunks = getelementptr i64, ptr %task, i64 11
  %nchunks = load i64, ptr %f_nchunks
  %f_per = getelementptr i64, ptr %task, i64 12
  %per = load i64, ptr %f_per
  %mysrc = alloca ptr, i64 %nsrc, align 8
  br label %victims
victims:
  %v = phi i64 [0, %entry], [%v1, %next_victim]
  %vdone = icmp uge i64 %v, %parts
  br i1 %vdone, label %exit, label %victim
victim:
  %vt0 = add i64 %tid, %v
  %vt = urem i64 %vt0, %parts
  %ci0 = mul i64 %vt, 8
  %ci = add i64 %ci0, 16
  %ctr = getelementptr i64, ptr %task, i64 %ci
  %first = mul i64 %vt, %per
  br label %claim
claim:
  %c = atomicrmw add ptr %ctr, i64 1 monotonic
  %cin = icmp ult i64 %c, %per
  br i1 %cin, label %check, label %next_victim
check:
  %idx = add i64 %first, %c
  %iin = icmp ult i64 %idx, %nchunks
  br i1 %iin, label %run, label %next_victim
run:
  %start = mul i64 %idx, %chunk
  %stop0 = add i64 %start, %chunk
  %stop = call i64 @llvm.umin.i64(i64 %stop0, i64 %count)
  %len = sub i64 %stop, %start
  br label %ptrs
ptrs:
  %k = phi i64 [0, %run], [%k1, %ptr]
  %kdone = icmp eq i64 %k, %nsrc
  br i1 %kdone, label %call, label %ptr
ptr:
  %sp = getelementptr ptr, ptr %src, i64 %k
  %s = load ptr, ptr %sp
  %stp = getelementptr i64, ptr %srcs, i64 %k
  %st = load i64, ptr %stp
  %off = mul i64 %st, %start
  %s2 = getelementptr i8, ptr %s, i64 %off
  %dp = getelementptr ptr, ptr %mysrc, i64 %k
  store ptr %s2, ptr %dp
  %k1 = add i64 %k, 1
  br label %ptrs
call:
  %doff0 = mul i64 %dsts, %start
  %poff = mul i64 %cstride, %idx
  %doff = add i64 %doff0, %poff
  %d2 = getelementptr i8, ptr %dst, i64 %doff
  call void %fn(ptr %d2, i64 %dsts, ptr %mysrc, ptr %srcs, i64 %len, ptr %self)
  br label %claim
next_victim:
  %v1 = add i64 %v, 1
  br label %victims
exit:
  ret void
}

declare i64 @llvm.umin.i64(i64, i64)

; Re-point a strided-task record at new data: dst -> field 1, the nsrc source pointers into
; the array at field 3, claim counters zeroed (lazyk_record_go's first step).
define private void @lazyk_task_set(ptr %dst, ptr %src, ptr %task) {
entry:
  %f_dst = getelementptr i64, ptr %task, i64 1
  store ptr %dst, ptr %f_dst
  %f_src = getelementptr i64, ptr %task, i64 3
  %srcarr = load ptr, ptr %f_src
  %f_nsrc = getelementptr i64, ptr %task, i64 5
  %nsrc = load i64, ptr %f_nsrc
  %f_parts = getelementptr i64, ptr %task, i64 8
  %parts = load i64, ptr %f_parts
  br label %ptrs
ptrs:
  %k = phi i64 [0, %entry], [%k1, %ptr]
  %kdone = icmp eq i64 %k, %nsrc
  br i1 %kdone, label %ctrs, label %ptr
ptr:
  %sp = getelementptr ptr, ptr %src, i64 %k
  %s = load ptr, ptr %sp
  %dp = getelementptr ptr, ptr %srcarr, i64 %k
  store ptr %s, ptr %dp
  %k1 = add i64 %k, 1
  br label %ptrs
ctrs:
  %t = phi i64 [0, %ptrs], [%t1, %ctr]
  %tdone = icmp eq i64 %t, %parts
  br i1 %tdone, label %exit, label %ctr
ctr:
  %ci0 = mul i64 %t, 8
  %ci = add i64 %ci0, 16
  %cp = getelementptr i64, ptr %task, i64 %ci
  store i64 0, ptr %cp
  %t1 = add i64 %t, 1
  br label %ctrs
exit:
  ret void
}
"""


class _Native:
    """The JIT-compiled pool functions; built once per process (see `native()`), never freed:
    worker threads and planned records run its code for the life of the process."""

    def __init__(self) -> None:
        from lazyk.backend.cpu import JITModule

        text = (_IR.replace("SYS_FUTEX", str(_SYS_FUTEX)).replace("FUTEX_WAIT", str(_FUTEX_WAIT_PRIVATE))
                .replace("FUTEX_WAKE", str(_FUTEX_WAKE_PRIVATE)).replace("CALLER_SPIN", str(_CALLER_SPIN)).replace("PURE_SPIN", str(_PURE_SPIN)).replace("SPIN", str(_SPIN)))
        import llvmlite.binding as llvm

        # The record runner releases the GIL itself where CPython's API is visible to the JIT
        # (it is in a normal python executable); otherwise it keeps it.
        if llvm.address_of_symbol("PyEval_SaveThread") and llvm.address_of_symbol(
                "PyEval_RestoreThread"):
            text = (text.replace("GIL_SAVE", "%save = call ptr @PyEval_SaveThread()")
                    .replace("GIL_RESTORE", "call void @PyEval_RestoreThread(ptr %save)")
                    + "declare ptr @PyEval_SaveThread()\ndeclare void @PyEval_RestoreThread(ptr)\n")
        else:  # pragma: no cover
            text = text.replace("GIL_SAVE", "").replace("GIL_RESTORE", "")
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
        self._state = (ctypes.c_char * (_STATE_BYTES + 64))()
        # 64-byte align the state inside the buffer so each field group owns its cache line.
        base = ctypes.addressof(self._state)
        self.state = (base + 63) & ~63
        self._epoch = ctypes.c_int64.from_address(self.state + 152)
        self._threads = []
        for tid in range(1, self.nthreads):
            t = threading.Thread(target=self.native.worker, args=(self.state, tid), daemon=True,
                                 name=f"lazyk-worker-{tid}")
            t.start()
            self._threads.append(t)

    def run(self, fn_address: int, arg_address: int, nparts: int) -> None:
        """Run native `void fn(void *arg, int64 tid)` for tid in [0, nparts) with the GIL released."""
        # A nested or concurrent call finds the pool busy and runs its parts itself (natively).
        self.native.run(self.state, fn_address, arg_address, max(1, min(int(nparts), self.nthreads)))

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


def _wake(address: int) -> None:
    """futex-wake all waiters on the int at `address`."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall(ctypes.c_long(_SYS_FUTEX), ctypes.c_void_p(address), ctypes.c_long(_FUTEX_WAKE_PRIVATE),
                 ctypes.c_int(2147483647))


_part_protos: dict[int, ctypes._CFuncPtr] = {}


def _call_part(fn_address: int, arg_address: int, nparts: int) -> None:
    """Run every part on the calling thread (GIL released by ctypes)."""
    f = _part_protos.get(fn_address)
    if f is None:
        f = _part_protos[fn_address] = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(fn_address)
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


def default_num_threads(environ=None) -> int:
    """The thread count the environment asks for: `LAZYK_NUM_THREADS`, else `OMP_NUM_THREADS`
    (Dask's `distributed` workers set it to 1), else the number of cores.

    A value that is not a positive integer is ignored with a warning; values above
    `MAX_THREADS_PER_CORE` times the core count are capped.
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
        return min(n, _max_threads())
    return os.cpu_count() or 1


_num_threads = default_num_threads()


def _checked_count(n: int) -> int:
    import operator
    import warnings

    if isinstance(n, bool):
        raise TypeError("number of threads must be an int, not bool")
    try:
        n = operator.index(n)  # 1.5 or "2" are mistakes, not 1 or 2 threads
    except TypeError:
        raise TypeError(f"number of threads must be an int, not {type(n).__name__}") from None
    if n < 1:
        raise ValueError(f"number of threads must be >= 1, got {n}")
    if n > _max_threads():
        warnings.warn(f"lazyk.set_num_threads({n}): capped at {_max_threads()} "
                      f"({MAX_THREADS_PER_CORE} per core on this {os.cpu_count() or 1}-core "
                      "machine)", RuntimeWarning, stacklevel=3)
        n = _max_threads()
    return n


def set_num_threads(n: int) -> None:
    """Set how many threads kernels may use.

    The default comes from `LAZYK_NUM_THREADS`, else `OMP_NUM_THREADS`, else the core
    count (read at import). Values below 1 raise ValueError; values above 4 threads per core
    are capped with a RuntimeWarning. The setting is process-wide (`lazyk.threads(n)`
    changes it for a `with` block).
    """
    global _num_threads, _pool

    n = _checked_count(n)
    with _pool_lock:
        _num_threads = n
        # Fewer threads: keep the pool and use fewer parts (switching costs nothing, which
        # benchmarks alternating 1 and all threads rely on); more: start a bigger pool.
        if _pool is not None and _pool.nthreads < n:
            _pool.close()
            _pool = None
        elif _pool is not None:
            _pool.bump_epoch()


def get_num_threads() -> int:
    """How many threads kernels may use."""
    return _num_threads


@contextlib.contextmanager
def threads(n: int):
    """`with lazyk.threads(1): ...` runs kernels on `n` threads inside the block, then
    restores the previous count (process-wide, like `set_num_threads`)."""
    before = get_num_threads()
    set_num_threads(n)
    try:
        yield
    finally:
        set_num_threads(before)


def pool() -> Pool:
    """The process-wide pool, created at first use with `get_num_threads()` threads."""
    global _pool
    p = _pool
    if p is None:
        with _pool_lock:
            if _pool is None:
                _pool = Pool(_num_threads)
            p = _pool
    return p


def nparts_for(count: int, min_chunk: int = MIN_CHUNK) -> int:
    """How many parts to split `count` outer elements into: 1 below the size threshold."""
    if _num_threads == 1 or count < 2 * min_chunk:
        return 1
    return min(_num_threads, count // min_chunk)


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
        parts = min(nparts_for(count, min_chunk), self.max_parts)
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


# --- fresh outputs ---------------------------------------------------------------------------
# A new 80 MB output costs more page faults than arithmetic (first touch: ~2-4 ms per 10 MB here,
# huge pages measured no better on this VM). So large outputs come from blocks that earlier
# outputs gave back when they died: already faulted in, no zeroing, like a caching allocator.
# Below 32 MiB (glibc's largest dynamic mmap threshold) malloc itself reuses a freed block,
# already faulted in, after the first free: np.empty costs 0.7 us there against ~5 us here.
REUSE_MIN_BYTES = 1 << 25
REUSE_MAX_IDLE = 1 << 30  # keep at most 1 GiB of idle blocks; beyond that give memory back
_BLOCK_ROUND = 1 << 21
_np_dtype = _np.dtype
_idle: dict[int, list[int]] = {}
_idle_bytes = 0
_idle_lock = threading.Lock()
_libc = None


def _mm():
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(None, use_errno=True)
        lib.mmap.restype = ctypes.c_void_p
        lib.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                             ctypes.c_int, ctypes.c_long]
        lib.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        _libc = lib
    return _libc


class _Block:
    """Owns one anonymous mapping; when the last array over it dies the block goes idle."""

    __slots__ = ("address", "size")

    def __init__(self, address: int, size: int) -> None:
        self.address, self.size = address, size

    def __del__(self) -> None:
        global _idle_bytes
        try:
            with _idle_lock:
                if _idle_bytes + self.size <= REUSE_MAX_IDLE:
                    _idle.setdefault(self.size, []).append(self.address)
                    _idle_bytes += self.size
                    return
            _mm().munmap(self.address, self.size)
        except Exception:  # interpreter shutdown: the OS reclaims the mapping
            pass


def empty(shape, dtype):
    """Like `np.empty`, but large arrays reuse idle blocks of earlier outputs (no page faults)."""
    global _idle_bytes
    # NOTE: on every fresh-output call: small arrays must cost no more than np.empty (~0.1 us).
    if type(shape) is tuple and isinstance(dtype, _np_dtype):
        count = _prod(shape)
        if count * dtype.itemsize < REUSE_MIN_BYTES:
            return _np_empty(shape, dtype)
    else:
        dtype = _np.dtype(dtype)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        count = _prod(shape)
    nbytes = count * dtype.itemsize
    if nbytes < REUSE_MIN_BYTES or dtype.hasobject:
        return _np_empty(shape, dtype)
    np = _np
    size = -(-nbytes // _BLOCK_ROUND) * _BLOCK_ROUND
    with _idle_lock:
        free = _idle.get(size)
        address = free.pop() if free else None
        if address is not None:
            _idle_bytes -= size
    if address is None:
        # PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS
        address = _mm().mmap(None, size, 3, 0x22, -1, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            return np.empty(shape, dtype)
    buf = (ctypes.c_char * size).from_address(address)
    buf.block = _Block(address, size)  # dies with the last array that uses the buffer
    return np.frombuffer(buf, dtype, count).reshape(shape)


def idle_bytes() -> int:
    """Bytes held in idle output blocks."""
    return _idle_bytes


def _after_fork_child() -> None:
    """A forked child has only the thread that forked: drop the parent's pool (its workers do
    not exist here; the child starts its own on first use) and free every lock."""
    global _pool
    for lock in (_pool_lock, _native_lock, _idle_lock, *(t._lock for t in list(_tasks))):
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
