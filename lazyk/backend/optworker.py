"""The LLVM optimizer (O3 + loop/SLP vectorization), in this process or in a helper process.

llvmlite's new-pass-manager `run` keeps ~80-120 KB of native memory per call that is never
given back (each pass builder allocates instrumentation callbacks it does not free), so a
process that compiles thousands of distinct kernels would grow without bound. `lazyk.backend.cpu`
therefore optimizes its first kernels here and later ones in a helper process running this
file (`python optworker.py`), which is replaced after a fixed number of modules: the leak is
bounded and the results are the same (same llvmlite, CPU and options).

A second helper compiles ahead: a module that a query will need next (a fill pass's kernel,
`lazyk.backend.cpu.compile_ahead`) while the caller compiles and runs another, so a query's
first call compiles on two cores.

Only llvmlite is imported here, so the helper starts in a fraction of `import lazyk`'s time.
The helper also emits the object code, so the calling process never parses kernel IR (parsing
and code generation keep ~20 KB per module in LLVM's context and heap).

Protocol on stdin/stdout (little-endian): a header line `triple\\tcpu\\tfeatures\\n` answered
by one byte once the target is ready, then per module a request `<u8 libmvec names?><u64
length><IR text>` answered with `<u8 status><u64 length><optimized IR text or error
message><u64 length><object code>` (status 0 = ok, 1 = LLVM rejected the IR). Requests may be
written before the replies to earlier ones are read: they are answered in order.
"""
from __future__ import annotations

import os
import select
import struct
import subprocess
import sys
from typing import Any


class _Binding:
    """`llvmlite.binding`, imported at its first use: loading it takes ~60 ms (python -X
    importtime), which `import lazyk` does not need to pay before anything compiles."""

    def __getattr__(self, name: str) -> Any:
        import llvmlite.binding

        return getattr(llvmlite.binding, name)


llvm = _Binding()  # lazyk.backend.cpu and .threads use this one too


# CPUs whose 512-bit vectors run at full speed: LLVM still tunes them for 256-bit vectors
# (after older AVX-512 parts that slowed down on them). Measured on an Emerald Rapids host:
# vector cos of 4M float64 20-30% less time, float32 exp about 25%, ADL Q3 / Q6 13-20%,
# memory-bound loops unchanged.
WIDE_VECTOR_CPUS = frozenset({"sapphirerapids", "emeraldrapids", "graniterapids",
                              "graniterapids-d", "diamondrapids"})


def wide_vectors(features: str, cpu: str) -> str:
    """The host's features, told to prefer 512-bit vectors on `WIDE_VECTOR_CPUS`."""
    if cpu in WIDE_VECTOR_CPUS and "+avx512f" in features.split(","):
        return features + ",-prefer-256-bit"
    return features


def target_machine(triple: str, cpu: str, features: str, opt: int = 3) -> Any:
    """The host target machine every kernel is optimized and compiled for (`opt`: the code
    generator's level)."""
    target = llvm.Target.from_triple(triple)
    return target.create_target_machine(cpu=cpu, features=features, opt=opt,
                                        codemodel="jitdefault", jit=True)


# Kernels above this many lines of LLVM IR are optimized without the loop / SLP vectorizers:
# their cost grows with the square of the loop body (a 2,000-op kernel took 2.6 s, 4,000 ops
# 9 s, 8,000 ops 33 s), while without them O3 stays linear (10,000 ops in 0.6 s).
VECTORIZE_MAX_LINES = 3000


def optimize(tm: Any, mod: Any, vectorize: bool = True) -> None:
    """O3 with loop and SLP vectorization through the new pass manager (`vectorize=False`:
    O3 without the vectorizers, for very large kernels).

    NOTE: no runtime loop unrolling: it only unrolls the scalar remainder loops (the
    vectorizer interleaves the vector body itself) and cost ~4 ms of the ~28 ms a
    kernel took to compile (O3 + instruction selection grow with the code).
    """
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = vectorize
    pto.slp_vectorization = vectorize
    pto.loop_unrolling = False
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)


def parse(text: str, triple: str, data_layout: str) -> Any:
    """Parse and verify IR text for the host (RuntimeError with LLVM's message if invalid)."""
    mod = llvm.parse_assembly(text)
    mod.triple = triple
    mod.data_layout = data_layout
    mod.verify()
    return mod


def compile_ir(tm: Any, text: str, triple: str, data_layout: str,
               rename: Any = None, annotate: Any = None) -> tuple[str, bytes]:
    """Parse, verify, optimize, optionally rename declared functions (`rename(name)`: the new
    name or None; libmvec's names for vector math), emit an object: (optimized IR text, object
    code). `annotate(text)`: the IR text to parse instead (libmvec variants declared for libm
    functions). RuntimeError if LLVM rejects the IR."""
    lines = text.count("\n")
    mod = parse(text if annotate is None else annotate(text), triple, data_layout)
    optimize(tm, mod, lines <= VECTORIZE_MAX_LINES)
    if rename is not None:
        # NOTE: in the module, not its text: no second parse (~5 ms a kernel). A name that is
        # taken stays as it is (LLVM would add a suffix): those calls keep the scalar libm.
        functions = list(mod.functions)
        taken = {f.name for f in functions}
        for f in functions:
            new = rename(f.name) if f.is_declaration else None
            if new and new not in taken:
                f.name = new
                taken.add(new)
        mod.verify()
    return str(mod), tm.emit_object(mod)


def _vecmath_hooks(features: str) -> tuple[Any, Any]:
    """(vecmath.vector_name, vecmath.annotate) for this CPU, loaded by path (importing lazyk
    here would cost ~0.2 s)."""
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vecmath.py")
    spec = importlib.util.spec_from_file_location("_lazyk_vecmath", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    have = mod.parse_features(features)
    return (lambda name: mod.vector_name(name, have)), (lambda text: mod.annotate(text, have))


class Helper:
    """The caller's end of one optimizer process running this file, over its stdin/stdout."""

    def __init__(self, triple: str, cpu: str, features: str):
        self.pid = os.getpid()  # a forked child starts its own
        self.runs = 0
        self.busy = False  # a request written, its reply not read yet
        self.ready = False  # its start-up byte read
        self.queue: list[bytes] = []  # digests of the requests written ahead, in order
        self.done: dict = {}  # digest -> reply, read while waiting for a later one
        if not sys.executable:  # (an embedded interpreter: the caller compiles in process)
            raise OSError("no Python executable to run the optimizer process")
        # NOTE: a session of its own: Ctrl-C in a terminal signals the whole foreground
        # process group, and the helper must outlive a KeyboardInterrupt the caller catches
        # (it exits when its stdin closes: with this process)
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, close_fds=True,
            start_new_session=True)
        self.proc.stdin.write(f"{triple}\t{cpu}\t{features}\n".encode())
        self.proc.stdin.flush()

    def alive(self) -> bool:
        """Whether the process still runs (it may have been killed since the last kernel)
        and its pipe is between two requests (a KeyboardInterrupt while it compiled left a
        reply in the pipe that must never answer the next request)."""
        return not self.busy and self.proc.poll() is None

    def started(self, wait: bool = True) -> bool:
        """Whether its start-up is done (`wait=False`: without waiting for it)."""
        if not self.ready and (wait or select.select([self.proc.stdout], [], [], 0)[0]):
            self.ready = self._read(1) == b"\1"
        return self.ready

    def compile(self, text: str, mvec: bool) -> tuple[bool, str, bytes]:
        self.busy = True
        self.submit(text, mvec)
        self.started()  # (its start-up byte comes first)
        reply = self.reply()
        self.busy = False
        return reply

    def submit(self, text: str, mvec: bool) -> None:
        """Write a request; `reply()` reads the replies in the same order."""
        data = text.encode()
        self.runs += 1
        self.proc.stdin.write(struct.pack("<BQ", bool(mvec), len(data)) + data)
        self.proc.stdin.flush()

    def reply(self) -> tuple[bool, str, bytes]:
        """(ok, optimized IR or LLVM's message, object code) of the oldest request."""
        status, n = struct.unpack("<BQ", self._read(9))
        out = self._read(n).decode()
        (m,) = struct.unpack("<Q", self._read(8))
        return status == 0, out, self._read(m)

    def _read(self, n: int) -> bytes:
        data = self.proc.stdout.read(n)
        if len(data) != n:
            raise EOFError
        return data

    def close(self, kill: bool = False) -> Any:
        """End the process (stdin closed: it exits); returns its exit status or None."""
        if self.pid != os.getpid():  # a forked child: the helper is the parent's
            for f in (self.proc.stdin, self.proc.stdout):
                try:
                    f.close()
                except OSError:
                    pass
            return None
        try:
            if kill:
                self.proc.kill()
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover
            self.proc.kill()
            code = self.proc.wait()
        self.proc.stdout.close()
        return code


def _read(stream: Any, n: int) -> bytes:
    data = stream.read(n)
    if len(data) != n:
        raise EOFError
    return data


def main() -> None:
    """Serve optimize requests until stdin closes."""
    import signal

    # Ctrl-C is for the caller (which may catch it and compile on): the helper ends when
    # its stdin closes
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    triple, cpu, features = inp.readline().decode().rstrip("\n").split("\t")
    tm = target_machine(triple, cpu, features)
    data_layout = str(tm.target_data)
    out.write(b"\1")  # ready: a caller that has other work need not wait for the start-up
    out.flush()
    hooks = None
    while True:
        try:
            mvec, n = struct.unpack("<BQ", _read(inp, 9))
            text = _read(inp, n).decode()
        except EOFError:
            return
        if mvec and hooks is None:
            hooks = _vecmath_hooks(features)
        try:
            opt, obj = compile_ir(tm, text, triple, data_layout,
                                  *(hooks if mvec else (None, None)))
            status, reply = 0, opt.encode()
        except RuntimeError as e:
            status, reply, obj = 1, str(e).encode(), b""
        out.write(struct.pack("<BQ", status, len(reply)) + reply + struct.pack("<Q", len(obj))
                  + obj)
        out.flush()


if __name__ == "__main__":
    main()
