"""The native code of the thread pool (`lazyk.backend.threads`), as LLVM IR text: workers
parked on a futex, the caller's job publication, the strided task trampoline and the planned
record runner. `pool_ir()` fills in the constants; the pool compiles it once per process.
"""
from __future__ import annotations

# futex(2) through libc's syscall(): no C helper library needed.
SYS_FUTEX = 202  # x86-64
FUTEX_WAIT_PRIVATE = 128
FUTEX_WAKE_PRIVATE = 129
# Spin this many TSC cycles (~1 ms at 2.3 GHz) before sleeping on the futex, both a worker waiting
# for the next job and the caller waiting for the workers. Measured here: waking a sleeping thread
# on this VM costs 50-200 us (an idle vCPU halts), so with ~16 us / 80 us pause-count spins a
# 2-thread call at n = 1e5 took ~200 us against 33 us with both threads kept awake.
SPIN = 2_000_000
CALLER_SPIN = 2_000_000
# The first ~90 us spin on `pause` only (most waits end there); after that each round also calls
# sched_yield, so a thread that shares our CPU with other load gets to run.
PURE_SPIN = 200_000

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
STATE_BYTES = 192

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


def pool_ir(release_gil: bool) -> str:
    """The pool's IR with its constants filled in. With `release_gil` the record runner
    releases the GIL itself (CPython's API must be visible to the JIT); otherwise it keeps it."""
    text = (_IR.replace("SYS_FUTEX", str(SYS_FUTEX)).replace("FUTEX_WAIT", str(FUTEX_WAIT_PRIVATE))
            .replace("FUTEX_WAKE", str(FUTEX_WAKE_PRIVATE)).replace("CALLER_SPIN", str(CALLER_SPIN)).replace("PURE_SPIN", str(PURE_SPIN)).replace("SPIN", str(SPIN)))
    if release_gil:
        return (text.replace("GIL_SAVE", "%save = call ptr @PyEval_SaveThread()")
                .replace("GIL_RESTORE", "call void @PyEval_RestoreThread(ptr %save)")
                + "declare ptr @PyEval_SaveThread()\ndeclare void @PyEval_RestoreThread(ptr)\n")
    return text.replace("GIL_SAVE", "").replace("GIL_RESTORE", "")
