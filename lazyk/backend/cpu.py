"""llvmlite.binding for the host CPU: target machine, O3 (new pass manager), MCJIT, symbols."""
from __future__ import annotations

import atexit
import gc
import hashlib
import os
import struct
import threading
from typing import Any, Callable

from lazyk.backend import objcache as _objcache  # the disk cache
from lazyk.backend import optworker
from lazyk.backend import vecmath as _vecmath  # vector math
from lazyk.backend.optworker import llvm
from lazyk.errors import CompileError
from lazyk.lru import LRU

# LLVM's context and our target machine are not thread-safe.
# NOTE: re-entrant: IR generation runs under the lock, and a garbage collection there may
# run a Kernel.__del__ -> JITModule.close() in the same thread (a plain Lock deadlocked).
_lock = threading.RLock()
_host: Host | None = None
_fork_held = []  # whether _before_fork got the lock (it gives up after _FORK_WAIT seconds)
_FORK_WAIT = 10.0


def _before_fork() -> None:
    # Fork between two compiles, never in the middle of one: a child must not inherit LLVM
    # half way through a change, nor the lock held by a thread that does not exist there.
    _fork_held.append(_lock.acquire(timeout=_FORK_WAIT))


def _after_fork_parent() -> None:
    if _fork_held.pop():
        _lock.release()


def _after_fork_child() -> None:
    _fork_held.clear()
    _lock._at_fork_reinit()  # released and owned by nobody: the child compiles as usual
    # The helpers are the parent's: a child holding their pipes open would keep them alive
    # past the parent (they end when their stdin closes) and stall the parent's closing.
    _close_helper()


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_parent,
                    after_in_child=_after_fork_child)


# llvmlite leaks ~100 KB per optimized module (lazyk/backend/optworker.py): the first
# OPTIMIZE_IN_PROCESS modules are optimized here (no start-up cost for small programs), later
# ones in a helper process that is replaced after HELPER_MODULES modules (0: no helper, all in
# process). The environment variable sets OPTIMIZE_IN_PROCESS at import.
OPTIMIZE_IN_PROCESS = int(os.environ.get("LAZYK_OPTIMIZE_IN_PROCESS", "64"))
HELPER_MODULES = 512
# modules whose IR was generated in this process: a disk-cache hit with a structural key
# generates none (Host.optimized counts the modules LLVM parsed and optimized)
generated = [0]


class Host:
    """The host target: triple, CPU name and features, a target machine and its data layout."""

    def __init__(self) -> None:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        self.triple = llvm.get_process_triple()
        self.cpu = llvm.get_host_cpu_name()
        self.features = optworker.wide_vectors(llvm.get_host_cpu_features().flatten(),
                                               self.cpu)
        self.tm = self.new_target_machine()
        self.data_layout = str(self.tm.target_data)
        self.optimized = {"in_process": 0, "helper": 0, "helpers_started": 0, "ahead": 0}
        self._helper: optworker.Helper | None = None
        self._helper_broken = False
        self._ahead: optworker.Helper | None = None  # compiles beside this process (`compile_ahead`)
        self._ahead_broken = False
        load_runtime_libraries()

    def new_target_machine(self, opt: int = 3) -> Any:
        """A fresh target machine; NOTE: an MCJIT engine takes ownership of (and frees) its own."""
        return optworker.target_machine(self.triple, self.cpu, self.features, opt)

    def compile_ir(self, text: str) -> tuple[str, bytes]:
        """Verify, optimize (libmvec names for vector math), emit: (optimized IR text, object
        code), in this process or in the helper process (see OPTIMIZE_IN_PROCESS). Call with
        `_lock` held.

        Raises:
            CompileError: LLVM rejected the IR, or the helper process died on it.
        """
        mvec = _vecmath.load()
        if (HELPER_MODULES and not self._helper_broken
                and self.optimized["in_process"] >= OPTIMIZE_IN_PROCESS):
            # A helper that died between two kernels (killed, out of memory) is replaced
            # quietly; one that dies twice on this kernel raises (the IR is attached).
            for attempt in range(2):
                helper = self._helper
                if helper is not None and (helper.pid != os.getpid() or not helper.alive()
                                           or helper.runs >= HELPER_MODULES):
                    helper.close(kill=helper.busy)
                    self._helper = helper = None
                if helper is None:
                    try:
                        self._helper = helper = optworker.Helper(self.triple, self.cpu, self.features)
                        self.optimized["helpers_started"] += 1
                    except OSError:  # no helper process here: optimize in process
                        self._helper_broken = True
                        break
                try:
                    ok, out, obj = helper.compile(text, mvec)
                except (OSError, EOFError, ValueError):
                    code = helper.close(kill=True)
                    self._helper = None
                    if attempt:
                        raise CompileError(f"the LLVM optimizer process died on this "
                                           f"kernel (exit status {code})\n{text}") from None
                    if helper.runs == 1:
                        self._helper_broken = True  # it never worked here: in process
                        break
                    continue
                if not ok:
                    raise CompileError(f"LLVM rejected generated IR: {out}\n{text}")
                self.optimized["helper"] += 1
                return out, obj
        have = _vecmath.parse_features(self.features) if mvec else None
        rename = (lambda name: _vecmath.vector_name(name, have)) if mvec else None
        annotate = (lambda t: _vecmath.annotate(t, have)) if mvec else None
        try:
            out = optworker.compile_ir(self.tm, text, self.triple, self.data_layout, rename,
                                       annotate)
        except RuntimeError as e:
            raise CompileError(f"LLVM rejected generated IR: {e}\n{text}") from None
        finally:
            self.optimized["in_process"] += 1
        return out

    def ahead_helper(self) -> optworker.Helper | None:
        """The helper process that compiles ahead, once started and ready (None meanwhile:
        one is started if none runs, ready some 50 ms later). Call with `_lock` held."""
        a = self._ahead
        if a is not None and (a.pid != os.getpid() or not a.alive()
                              or (a.runs >= HELPER_MODULES and not a.queue)):
            a.close(kill=bool(a.queue) or a.busy)
            self._ahead = a = None
        if a is None:
            if not HELPER_MODULES or self._ahead_broken:
                return None
            try:
                self._ahead = optworker.Helper(self.triple, self.cpu, self.features)
            except OSError:  # no helper process here
                self._ahead_broken = True
            return None
        try:
            return a if a.started(wait=False) else None
        except (OSError, EOFError):  # it never started: none again in this process
            self._drop_ahead()
            self._ahead_broken = True
            return None

    def compile_ahead(self, text: str) -> bool:
        """Start optimizing `text` in the ahead helper while this process goes on; `collect`
        takes the result. False: no helper is ready. Call with `_lock` held."""
        a = self.ahead_helper()
        if a is None:
            return False
        digest = hashlib.sha256(text.encode()).digest()
        if digest in a.queue or digest in a.done:
            return True
        try:
            # earlier replies read first: a helper blocked writing a reply nobody reads
            # would never read this request, and a long one would block this process too
            self._receive(a)
            a.submit(text, _vecmath.load())
        except (OSError, EOFError, ValueError):
            self._drop_ahead()
            return False
        a.queue.append(digest)
        return True

    def collect(self, digest: bytes) -> tuple[str, bytes] | None:
        """The ahead helper's result for IR of this digest, or None (never asked of it, its
        process died, or LLVM rejected the IR: compiled here, which reports it). Call with
        `_lock` held."""
        a = self._ahead
        if a is None or a.pid != os.getpid() or (digest not in a.queue and
                                                 digest not in a.done):
            return None
        try:
            self._receive(a, digest)
        except (OSError, EOFError, ValueError):
            self._drop_ahead()
            return None
        ok, out, obj = a.done.pop(digest, (False, "", b""))
        if not ok:
            return None
        self.optimized["ahead"] += 1
        return out, obj

    @staticmethod
    def _receive(a: optworker.Helper, digest: bytes | None = None) -> None:
        """Read the helper's replies in order, until the one for `digest` (None: all)."""
        while a.queue and (digest is None or digest not in a.done):
            a.busy = True  # (a reply read half way must never answer another request)
            reply = a.reply()
            a.busy = False
            a.done[a.queue.pop(0)] = reply
            if len(a.done) > 8:  # results nobody asked for (an error stopped the caller)
                a.done.pop(next(iter(a.done)))

    def _drop_ahead(self) -> None:
        if self._ahead is not None:
            self._ahead.close(kill=True)
            self._ahead = None


def _close_helper() -> None:
    h = _host
    if h is not None:
        for name in ("_helper", "_ahead"):
            helper = getattr(h, name)
            if helper is not None:  # (one still compiling ahead: its reply is not wanted)
                helper.close(kill=bool(helper.queue))
                setattr(h, name, None)


atexit.register(_close_helper)


def host() -> Host:
    """The process-wide host target (created once)."""
    global _host
    if _host is None:
        with _lock:
            if _host is None:
                _host = Host()
    return _host


_warming: list = []


def warm_up() -> None:
    """Load LLVM (llvmlite's binding, ~40 ms), the host target and the vector math library
    on a background thread, once per process: a program's first kernel, compiled or loaded
    from the disk cache, then finds them ready. A kernel asked for meanwhile waits for them
    (`_lock`), and so does a fork. `LAZYK_WARM_UP=0` leaves them to the first kernel."""
    if _warming or _host is not None or os.environ.get("LAZYK_WARM_UP", "1") == "0":
        return
    _warming.append(threading.Thread(target=_warm, name="lazyk-warm-up", daemon=True))
    _warming[0].start()


def _warm() -> None:
    try:
        with _lock:  # (a fork waits for the imports and LLVM's set-up to finish)
            h = host()
            _vecmath.load()
            _SharedEngine.current(h)
    except Exception:  # pragma: no cover  (the first kernel meets it again and reports it)
        pass


def start_helper() -> None:
    """Start the helper process that compiles ahead (`compile_ahead`), if none runs: it is
    ready some 50 ms later, by the time a program's first kernels have compiled."""
    with _lock:
        host().ahead_helper()


def compile_ahead(ir_text: Callable[[], str], key_text: str) -> None:
    """Start compiling the module a later `JITModule(ir_text, names, key_text)` will want, in
    a helper process while this one goes on (a fill pass's kernel while its count passes
    compile and run: two cores compile a query's first call). Nothing happens when its
    object code is on disk, or no helper is ready: the first call starts one."""
    h = host()
    with _lock:
        if h.ahead_helper() is None or key_text in _ahead_text:
            return
        cache, key = _disk_cache(key_text)
        if cache.has(key):
            return
        text = _generated(ir_text)
        if h.compile_ahead(text):
            _ahead_text.put(key_text, text)


def _generated(ir_text: Callable[[], str]) -> str:
    """`ir_text()`, with Python's cyclic garbage collector paused meanwhile.

    NOTE: llvmlite's IR objects all point at their parents: a module's ~10,000 of them live
    in cycles until the text is made. Collections while they are alive promote them, and
    later full collections walk them all: ADL Q8's first call spent ~40 ms in the collector
    (one full collection ~35 ms). Collected after the text is made, they are young garbage.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        text = ir_text()
    finally:
        if paused:
            gc.enable()
    generated[0] += 1
    return text


# IR text generated by `compile_ahead`, by its structural key, until its JITModule takes it
_ahead_text = LRU(16, "IR compiled ahead")


class JITModule:
    """One compiled module in its own MCJIT engine; `close()` frees the machine code."""

    def __init__(self, ir_text: str | Callable[[], str], names: tuple[str, ...],
                 key_text: str | None = None):
        # ir_text may be a callable and key_text a structural key: a disk-cache hit
        # then skips IR generation too (~3 ms of the ~4 ms a cached kernel took to load).
        h = host()
        self._source = ir_text
        self._asm: str | None = None
        with _lock:
            if key_text is not None and callable(ir_text):  # (generated by `compile_ahead`)
                self._source = _ahead_text.pop(key_text, ir_text)
            cache, key = _disk_cache(key_text if key_text is not None else self.source_ir)
            obj = cache.load(key)
            self.from_disk = obj is not None  # lazyk.stats() counts disk loads apart
            self.llvm_ir = None
            try:
                self._link(obj if obj is not None else self._compile(h, cache, key), names, h)
            except CompileError:
                if obj is None:
                    raise
                # A cached entry that does not link here is a miss: never fail on it again.
                cache.discard(key)
                self.from_disk = False
                self._link(self._compile(h, cache, key), names, h)

    def _compile(self, h: Host, cache: Any, key: str) -> bytes:
        """Optimise and emit an object file for the source IR; store it in the disk cache.

        Two structures may generate the same IR (a counting pass reads no values): code
        compiled in this process is found again by the IR's digest.
        """
        text = self.source_ir
        digest = hashlib.sha256(text.encode()).digest()
        done = _by_source.get(digest)
        if done is None:
            done = _by_source.put(digest, h.collect(digest) or h.compile_ir(text))
        self.llvm_ir, obj = done
        cache.store(key, obj)
        return obj

    def _link(self, obj: bytes, names: tuple[str, ...], h: Host) -> None:
        """Link `obj` into the current shared engine and look up `names` (all must exist)."""
        _vecmath.load()  # a cached object may call libmvec: resolve it before linking
        defined, missing = object_symbols(obj)
        if missing:  # MCJIT would link them as address 0: a segfault at the first call
            raise CompileError(f"kernel calls symbols this process cannot resolve: "
                               f"{', '.join(missing)}\n{self.source_ir}")
        if defined is not None and not defined.issuperset(names):
            # (in a shared engine the names would find another module's code)
            raise CompileError(f"the object code lacks {sorted(set(names) - defined)}\n"
                               f"{self.source_ir}")
        # an object we cannot read the symbols of gets an engine of its own
        engine = _SharedEngine.current(h) if defined is not None else _SharedEngine(h, 1)
        addresses = engine.link(obj, names)
        if not all(addresses.values()):
            engine.release()
            raise CompileError(f"symbols missing after JIT: {addresses}\n{self.source_ir}")
        self.engine, self.addresses = engine, addresses
        _engines[id(self)] = engine

    @property
    def source_ir(self) -> str:
        """The IR handed to the backend (generated now if only a generator was given)."""
        if callable(self._source):
            self._source = _generated(self._source)
        return self._source

    def optimized_ir(self) -> str:
        """The optimized IR: kept from the compile, or made again (same passes) after the
        object code came from the disk cache, which stores no IR."""
        if self.llvm_ir is None:
            h = host()
            src = self.source_ir
            with _lock:
                self.llvm_ir = h.compile_ir(src)[0]
        return self.llvm_ir

    @property
    def asm(self) -> str:
        """Host assembly for the optimized module (generated on first use)."""
        if self._asm is None:
            h = host()
            text = self.llvm_ir or self.source_ir
            with _lock:
                if self.llvm_ir is None:  # loaded from the disk cache: optimize again
                    text = h.compile_ir(text)[0]
                self._asm = h.tm.emit_assembly(_parse(text, h))
        return self._asm

    def close(self) -> None:
        """Give up the machine code (every address becomes invalid): it is freed with its
        engine, once every module linked there is closed.

        Only `close()` gives it up: owners decide when no code of theirs can run any more.
        """
        eng, self.engine = getattr(self, "engine", None), None
        if eng is not None:
            with _lock:
                _engines.pop(id(self), None)
                eng.release()
            self.addresses = {}


class _SharedEngine:
    """An MCJIT engine that links the object code of up to SHARED_OBJECTS modules, one after
    the other; freed when it is full and every module linked there is closed.

    NOTE: a new engine costs ~0.5 ms (a target machine, code generation of an empty module),
    linking one more object ~0.04 ms: a query's 29 kernels loaded from the disk cache took
    20 ms one engine each. Every kernel defines the same symbol names; the engine's symbol
    table maps a name to the object linked last (its own calls included), so each module
    reads its addresses right after its object is linked.
    """

    _current: _SharedEngine | None = None

    def __init__(self, h: Host, capacity: int = 0) -> None:
        self.capacity = capacity or SHARED_OBJECTS
        empty = llvm.parse_assembly(f'target triple = "{h.triple}"\n')
        # NOTE: the engine's code generator only compiles the empty module (objects are
        # machine code already): level 0
        self.ee = llvm.create_mcjit_compiler(empty, h.new_target_machine(opt=0))
        self.ee.finalize_object()
        self.linked = self.live = 0

    @classmethod
    def current(cls, h: Host) -> _SharedEngine:
        """The engine the next module links into (call with `_lock` held)."""
        e = cls._current
        if e is None or e.linked >= e.capacity:
            e = cls._current = cls(h)
        return e

    def link(self, obj: bytes, names: tuple[str, ...]) -> dict[str, int]:
        # (counted live first: a module closed meanwhile by a garbage collection must not
        # free this engine under the object being linked)
        self.live += 1
        self.linked += 1
        try:
            self.ee.add_object_file(llvm.ObjectFileRef.from_data(obj))
            self.ee.finalize_object()
            return {n: self.ee.get_function_address(n) for n in names}
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        """One module linked here is closed (call with `_lock` held)."""
        self.live -= 1
        if self.live == 0 and self.linked >= self.capacity:
            self.ee.close()


# Modules whose object code one engine links (see `_SharedEngine`): a live module keeps at
# most this many minus one closed modules' code alive.
SHARED_OBJECTS = 16


# NOTE: every open engine is reachable from here, so the garbage collector never frees one
# on its own: in a reference cycle it could run an engine's finalizer before the finalizer
# of a bound kernel whose destructor is code in that engine.
_engines: dict[int, Any] = {}
# (optimized IR, object code) of the last modules compiled here, by the SHA-256 of their IR
_by_source = LRU(64, "compiled modules by IR")


# Libraries whose symbols LLVM's code generator calls on its own (not named in our IR):
# libgcc_s has the float16 conversions (__truncdfhf2, __extendhfsf2), __powidf2, 128-bit
# integer division. NOTE: a Python process usually has libgcc_s mapped, but RTLD_LOCAL, so
# MCJIT cannot see it until it is loaded permanently.
RUNTIME_LIBRARIES = ("libgcc_s.so.1", "libm.so.6")


def load_runtime_libraries() -> None:
    """Make the code generator's runtime helpers visible to MCJIT's symbol lookup."""
    for name in RUNTIME_LIBRARIES:
        try:
            llvm.load_library_permanently(name)
        except RuntimeError:
            pass  # absent: object_symbols() finds kernels that need it


def object_symbols(obj: bytes) -> tuple[set[str] | None, list[str]]:
    """(names an ELF64 object defines for others to call, undefined names the process
    cannot resolve); for another format (None, []): left to the linker."""
    if obj[:4] != b"\x7fELF" or obj[4] != 2:
        return None, []
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize)
                for i in range(shnum)]
    defined, missing = set(), []
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        _, _, _, _, off, size, link, _, _, entsize = sh
        strtab = sections[link][4]
        for at in range(off + entsize, off + size, entsize):  # entry 0 is the null symbol
            name_at, info, _, shndx, _, _ = struct.unpack_from("<IBBHQQ", obj, at)
            if not name_at:
                continue
            name = obj[strtab + name_at:obj.index(b"\0", strtab + name_at)].decode()
            if shndx != 0:
                if info >> 4:  # global or weak: a local name is not in the engine's table
                    defined.add(name)
            elif (info >> 4) != 2 and not llvm.address_of_symbol(name):  # weak may stay 0
                missing.append(name)
    return defined, missing


_disk: list = []


def _disk_cache(ir_text: str) -> tuple[Any, str]:
    """The on-disk object cache and this IR's key."""
    if not _disk:
        _disk.append(_objcache.ObjectCache())
    h = host()
    mvec = _vecmath.CACHE_TAG if _vecmath.load() else "nomvec"
    return _disk[0], _objcache.make_key(ir_text, cpu=h.cpu, features=h.features, options=mvec)


def _parse(text: str, h: Host) -> Any:
    try:
        mod = llvm.parse_assembly(text)
        mod.triple = h.triple
        mod.data_layout = h.data_layout
        mod.verify()
    except RuntimeError as e:
        raise CompileError(f"LLVM rejected generated IR: {e}\n{text}") from None
    return mod
