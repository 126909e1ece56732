"""libNVVM + ptxas toolchain: NVVM IR text -> PTX, compiled in a worker process.

Some malformed input crashes libNVVM's whole process (FACTS.md), so libNVVM is only ever
loaded in a child (`python nvvmc.py --serve LIBNVVM LIBDEVICE`) that answers length-prefixed
pickled requests on its stdin/stdout. A crash kills the worker, never the user's process;
the next request starts a fresh one.
"""
from __future__ import annotations

import atexit
import ctypes
import os
import pickle
import re
import struct
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

if __name__ == "__main__":
    # The worker raises nothing of ours; skipping `import lazyk` saves ~250 ms per start.
    CompileError = DeviceError = RuntimeError
else:
    from lazyk.backend.objcache import ObjectCache
    from lazyk.errors import CompileError, DeviceError

ARCH = "compute_90"
SASS_ARCH = "sm_90"
_HINT = "install the GPU extra: pip install 'lazyk[cuda]' (or set CUDA_HOME)"
# PTX ISA version each CUDA driver release understands (driver version -> max .version).
# A newer .version than the driver knows is rejected at module load (FACTS.md).
_PTX_FOR_DRIVER = (
    (13000, (9, 0)), (12090, (8, 8)), (12080, (8, 7)), (12060, (8, 5)), (12050, (8, 5)),
    (12040, (8, 4)), (12030, (8, 3)), (12020, (8, 2)), (12010, (8, 1)), (12000, (8, 0)),
)
# sm_90 appeared in PTX ISA 7.8; below that the kernel cannot target Hopper at all.
_MIN_PTX = (7, 8)


@dataclass(frozen=True)
class Toolchain:
    """Paths of libNVVM, libdevice and ptxas (ptxas may be None: verification is optional)."""

    libnvvm: Path
    libdevice: Path
    ptxas: Path | None


def _candidate_roots() -> list[Path]:
    """Directories that may hold a CUDA layout: CUDA_HOME first, then the PyPI wheels."""
    roots = []
    if os.environ.get("CUDA_HOME"):
        roots.append(Path(os.environ["CUDA_HOME"]))
    for entry in sys.path:
        for sub in ("nvidia/cu13", "nvidia/cuda_nvcc", "nvidia/cuda_nvvm"):
            p = Path(entry or ".") / sub
            if p.is_dir():
                roots.append(p)
    return roots


def _first(root: Path, patterns: tuple[str, ...]) -> Path | None:
    for pat in patterns:
        hits = sorted(root.glob(pat))
        if hits:
            return hits[-1]
    return None


_toolchain: Toolchain | None = None


def find_toolchain() -> Toolchain:
    """Locate libNVVM, libdevice and ptxas; raise DeviceError naming what is missing."""
    global _toolchain
    if _toolchain is not None:
        return _toolchain
    lib = dev = ptxas = None
    for root in _candidate_roots():
        lib = lib or _first(root, ("lib/libnvvm.so*", "nvvm/lib64/libnvvm.so*", "lib64/libnvvm.so*"))
        dev = dev or _first(root, ("nvvm/libdevice/libdevice.10.bc", "libdevice/libdevice.10.bc"))
        ptxas = ptxas or _first(root, ("bin/ptxas",))
    missing = [n for n, p in (("libNVVM", lib), ("libdevice", dev)) if p is None]
    if missing:
        raise DeviceError(f"CUDA toolchain not found ({', '.join(missing)} missing): {_HINT}")
    _toolchain = Toolchain(lib, dev, ptxas)
    return _toolchain


# ---- inside the worker process -------------------------------------------------------------

class _NVVM:
    """ctypes view of libNVVM's C API (nvvm.h); lives only in the worker."""

    def __init__(self, tc: Toolchain):
        self.lib = ctypes.CDLL(str(tc.libnvvm))
        self.libdevice = tc.libdevice.read_bytes()
        self.lib.nvvmGetErrorString.restype = ctypes.c_char_p

    def _check(self, status: int, prog, what: str) -> None:
        if status != 0:
            msg = self.lib.nvvmGetErrorString(status).decode()
            raise _WorkerError(f"{what}: {msg}", self._log(prog))

    def _log(self, prog) -> str:
        size = ctypes.c_size_t()
        if self.lib.nvvmGetProgramLogSize(prog, ctypes.byref(size)) != 0 or size.value <= 1:
            return ""
        buf = ctypes.create_string_buffer(size.value)
        self.lib.nvvmGetProgramLog(prog, buf)
        return buf.value.decode(errors="replace")

    def compile(self, ir: str, options: list[str], libdevice: bool) -> tuple[str, str]:
        prog = ctypes.c_void_p()
        self._check(self.lib.nvvmCreateProgram(ctypes.byref(prog)), None, "nvvmCreateProgram")
        try:
            src = ir.encode()
            self._check(self.lib.nvvmAddModuleToProgram(prog, src, len(src), b"lazyk"),
                        prog, "nvvmAddModuleToProgram")
            if libdevice:
                # Lazy add links only the __nv_* functions the kernel calls (~23 ms, FACTS.md).
                self._check(self.lib.nvvmLazyAddModuleToProgram(
                    prog, self.libdevice, len(self.libdevice), b"libdevice"),
                    prog, "nvvmLazyAddModuleToProgram")
            opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
            self._check(self.lib.nvvmVerifyProgram(prog, len(options), opts), prog, "verify")
            self._check(self.lib.nvvmCompileProgram(prog, len(options), opts), prog, "compile")
            size = ctypes.c_size_t()
            self._check(self.lib.nvvmGetCompiledResultSize(prog, ctypes.byref(size)), prog, "size")
            buf = ctypes.create_string_buffer(size.value)
            self._check(self.lib.nvvmGetCompiledResult(prog, buf), prog, "result")
            return buf.value.decode(), self._log(prog)
        finally:
            self.lib.nvvmDestroyProgram(ctypes.byref(prog))


class _WorkerError(Exception):
    def __init__(self, message: str, log: str):
        super().__init__(message)
        self.log = log


def _read_msg(stream):
    head = stream.read(8)
    if len(head) < 8:
        return None
    (n,) = struct.unpack("<Q", head)
    return pickle.loads(stream.read(n))


def _write_msg(stream, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def _serve(tc: Toolchain) -> None:
    """Worker loop: one request in, one reply out, until stdin closes."""
    inp = sys.stdin.buffer
    # Replies go to a private copy of fd 1; fd 1 itself becomes stderr so that anything
    # libNVVM prints cannot corrupt the reply channel.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    nvvm = None
    while (req := _read_msg(inp)) is not None:
        try:
            nvvm = nvvm or _NVVM(tc)
            ptx, log = nvvm.compile(req["ir"], req["options"], req["libdevice"])
            reply = {"ptx": ptx, "log": log}
        except _WorkerError as err:
            reply = {"error": str(err), "log": err.log}
        except Exception as err:  # noqa: BLE001 - the reply carries every failure back
            reply = {"error": f"{type(err).__name__}: {err}", "log": ""}
        _write_msg(out, reply)


# ---- in the user's process -----------------------------------------------------------------

class Worker:
    """A persistent libNVVM worker process; restarted after a crash. Thread-safe."""

    def __init__(self):
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen:
        tc = find_toolchain()  # fail here, in the caller, with the install hint
        return subprocess.Popen(
            [sys.executable, __file__, "--serve", str(tc.libnvvm), str(tc.libdevice)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )

    def request(self, req: dict) -> dict:
        """Send one request; a dead worker becomes a CompileError with its exit status."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = self._start()
            proc = self._proc
            try:
                _write_msg(proc.stdin, req)
                reply = _read_msg(proc.stdout)
            except (BrokenPipeError, OSError):
                reply = None
            if reply is None:
                proc.kill()
                err = proc.stderr.read().decode(errors="replace")[-2000:]
                code = proc.wait()
                self._proc = None
                raise CompileError(f"libNVVM worker died (exit status {code}) compiling "
                                   f"this module; the input crashed libNVVM\n{err}")
            return reply

    def close(self) -> None:
        """Stop the worker (it exits when its stdin closes)."""
        with self._lock:
            if self._proc is not None:
                self._proc.stdin.close()
                self._proc.wait(timeout=10)
                self._proc.stdout.close()
                self._proc.stderr.close()
                self._proc = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


_worker = Worker()
atexit.register(_worker.close)  # a worker left running warns at interpreter exit


_disk = None  # lazyk.backend.objcache.ObjectCache, made on first use; False disables it


def _disk_cache():
    global _disk
    if _disk is None:
        _disk = ObjectCache()
    return _disk or None


def ptx_key(ir: str, options: list[str]) -> str:
    """Disk-cache key: the IR, the options and the exact libNVVM and libdevice files."""
    import hashlib
    tc = find_toolchain()
    h = hashlib.sha256(ir.encode())
    for part in (*options, *(f"{p}:{p.stat().st_size}:{p.stat().st_mtime_ns}"
                             for p in (tc.libnvvm, tc.libdevice))):
        h.update(b"\0" + part.encode())
    return "ptx-" + h.hexdigest()[:48]


def compile_ptx(ir: str, *, fma: bool = False, opt: int = 3, arch: str = ARCH,
                max_ptx: tuple[int, int] | None = None, worker: Worker | None = None) -> str:
    """Compile NVVM IR text to PTX out of process; raise CompileError with IR and log.

    `fma=False` passes `-fma=0` so a*b+c rounds twice, bit-equal to the CPU kernels.
    `max_ptx` clamps the PTX `.version` for an older driver (see clamp_ptx_version).
    PTX is kept in lazyk's on-disk cache, so a new process skips libNVVM (and its worker).
    """
    options = [f"-arch={arch}", f"-opt={opt}", f"-fma={int(fma)}"]
    disk = _disk_cache()
    key = ptx_key(ir, options) if disk is not None else None
    cached = disk.load(key) if disk is not None else None
    if cached is not None:
        ptx = cached.decode()
    else:
        reply = (worker or _worker).request(
            {"kind": "compile", "ir": ir, "options": options, "libdevice": "__nv_" in ir})
        if "error" in reply:
            raise CompileError(f"libNVVM rejected the module: {reply['error']}\n{reply['log']}"
                               f"\n--- NVVM IR ---\n{ir}")
        ptx = reply["ptx"]
    check_ptx(ptx)
    if cached is None and disk is not None:
        disk.store(key, ptx.encode())
    if max_ptx is not None:
        ptx = clamp_ptx_version(ptx, max_ptx)
    return ptx


_EXTERN = re.compile(r"^\s*\.extern\s+\.func\s+(?:\([^)]*\)\s*)?([\w.$]+)", re.M)
_VERSION = re.compile(r"^\.version\s+(\d+)\.(\d+)", re.M)


def check_ptx(ptx: str) -> None:
    """Reject PTX with no kernel entry or with unresolved `.extern .func` calls."""
    externs = _EXTERN.findall(ptx)
    if externs:
        raise CompileError(f"PTX calls unresolved functions {externs} (libdevice not linked?)")
    if ".entry" not in ptx:
        raise CompileError("PTX has no .entry: missing !nvvm.annotations kernel entry?")


def ptx_version(ptx: str) -> tuple[int, int]:
    """The `.version` directive of a PTX text."""
    m = _VERSION.search(ptx)
    if m is None:
        raise CompileError("PTX has no .version directive")
    return int(m.group(1)), int(m.group(2))


def max_ptx_for_driver(driver_version: int) -> tuple[int, int]:
    """Newest PTX ISA a driver (cuDriverGetVersion, e.g. 13000) loads."""
    for ver, isa in _PTX_FOR_DRIVER:
        if driver_version >= ver:
            return isa
    raise DeviceError(f"CUDA driver {driver_version // 1000}.{driver_version % 1000 // 10} "
                      "is too old for sm_90 (needs 12.0 or newer)")


def clamp_ptx_version(ptx: str, limit: tuple[int, int]) -> str:
    """Lower `.version` to `limit` when libNVVM is newer than the driver.

    Our kernels use only loads, stores, arithmetic, shuffles and atomics, all in PTX 7.8, so
    the older directive is honest; raise instead when even 7.8 is not available.
    """
    if limit < _MIN_PTX:
        raise DeviceError(f"driver supports PTX {limit[0]}.{limit[1]}, sm_90 needs 7.8")
    have = ptx_version(ptx)
    if have <= limit:
        return ptx
    return _VERSION.sub(f".version {limit[0]}.{limit[1]}", ptx, count=1)


def assemble(ptx: str, arch: str = SASS_ARCH) -> bytes:
    """Assemble PTX to a cubin with ptxas; CompileError with ptxas's message on rejection."""
    tc = find_toolchain()
    if tc.ptxas is None:
        raise DeviceError(f"ptxas not found: {_HINT}")
    with tempfile.TemporaryDirectory(prefix="lazyk-ptx-") as tmp:
        src, dst = Path(tmp, "k.ptx"), Path(tmp, "k.cubin")
        src.write_text(ptx)
        res = subprocess.run([str(tc.ptxas), f"-arch={arch}", "-o", str(dst), str(src)],
                             capture_output=True, text=True)
        if res.returncode != 0:
            raise CompileError(f"ptxas -arch={arch} rejected the PTX:\n{res.stderr}")
        return dst.read_bytes()


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--serve":
        _serve(Toolchain(Path(sys.argv[2]), Path(sys.argv[3]), None))
    else:
        sys.exit("usage: python nvvmc.py --serve LIBNVVM LIBDEVICE")
