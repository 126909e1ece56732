"""On-disk cache of compiled object code, shared by processes, safe against torn writes.

Entries are keyed by lazyk's and LLVM's versions, the CPU name and features and the hash of the
IR handed to the backend *before* optimization, so a hit skips O3 and codegen altogether. Each
entry is `MAGIC | sha256(identity, key, payload) | len(payload) | payload`, written to a
temporary file and renamed into place (os.replace is atomic), so a reader sees a whole entry or
none. The checksum binds the payload to its own key and to this lazyk / LLVM / CPU (`identity`):
an entry that is torn, truncated, bit-flipped, of an older format, or a valid entry copied under
another key's name fails it, is deleted and recompiled (then replaced), never executed.

Two ways in: `attach(engine)` wires llvmlite's MCJIT object cache (module name = key), or
`load(key)` / `store(key, obj)` for a backend that adds object files itself.
"""
from __future__ import annotations

import hashlib
import os
import struct
import tempfile
import threading
import warnings
from pathlib import Path

from lazyk.version import __version__

MAGIC = b"LZKOBJ2\n"  # LZKOBJ1 entries (checksum over the payload only) are misses
# Entries are small (2-3 KB per kernel) but test suites make tens of thousands: past this size
# the least recently used entries go (hits refresh an entry's mtime).
MAX_BYTES = 256 << 20
_PRUNE_EVERY = 256  # stores per process between size checks (scans the directory); 0: never
_HEADER = struct.Struct("<8s32sQ")  # magic, checksum (see _digest), payload length
SUFFIX = ".o"


def default_dir() -> Path:
    """`$LAZYK_CACHE_DIR`, else `$XDG_CACHE_HOME/lazyk`, else `~/.cache/lazyk`."""
    env = os.environ.get("LAZYK_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg or Path.home() / ".cache") / "lazyk"


_versions_text: str | None = None


def _versions() -> str:
    global _versions_text
    if _versions_text is None:
        _versions_text = _version_string()
    return _versions_text


def _version_string() -> str:
    import llvmlite
    import llvmlite.binding as llvm

    return f"lazyk={__version__};llvmlite={llvmlite.__version__};llvm={llvm.llvm_version_info}"


_host: tuple[str, str] | None = None


def host_target() -> tuple[str, str]:
    """(CPU name, feature string) of this machine, as LLVM sees them; cached per process."""
    global _host
    if _host is None:
        import llvmlite.binding as llvm

        _host = (llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten())
    return _host


def make_key(ir_text: str, *, cpu: str | None = None, features: str | None = None,
             options: str = "") -> str:
    """Cache key: sha256 over versions, CPU, features, backend options and the IR text."""
    if cpu is None or features is None:
        host_cpu, host_features = host_target()
        cpu = host_cpu if cpu is None else cpu
        features = host_features if features is None else features
    h = hashlib.sha256()
    for part in (_versions(), cpu, features, options):
        h.update(part.encode())
        h.update(b"\0")
    h.update(ir_text.encode())
    return h.hexdigest()


def identity() -> str:
    """What an entry's object code was built by and for: lazyk, llvmlite, LLVM, CPU, features."""
    cpu, features = host_target()
    return f"{_versions()};cpu={cpu};features={features}"


def _digest(key: str, payload: bytes) -> bytes:
    # NOTE: over the key too: a valid entry copied under another key's name must not verify
    # (it ran another kernel's code, or a 3-input kernel as a 2-input one).
    h = hashlib.sha256(MAGIC)
    h.update(identity().encode() + b"\0" + key.encode() + b"\0")
    h.update(payload)
    return h.digest()


_digests: dict[tuple[str, ...], str] = {}
_warned: set[str] = set()  # cache directories already reported unusable in this process


def problem(directory: Path) -> str | None:
    """Why `directory` cannot hold the cache (a file in its place, not writable), or None."""
    for d in (directory, *directory.parents):  # the first part that exists decides
        if d.exists():
            if not d.is_dir():
                return f"{d} is not a directory"
            if not os.access(d, os.W_OK | os.X_OK):
                return f"{d} is not writable"
            return None
    return None


def _warn_unusable(directory: Path, err: OSError) -> None:
    """Say once per process and directory that nothing is cached there."""
    if str(directory) in _warned:
        return
    _warned.add(str(directory))
    why = problem(directory) or f"{type(err).__name__}: {err.strerror or err}"
    warnings.warn(f"lazyk: the kernel cache directory {directory} is unusable ({why}); "
                  "kernels are compiled anew in each process: set LAZYK_CACHE_DIR to a "
                  "writable directory", RuntimeWarning, stacklevel=2)


def source_digest(*modules: str) -> str:
    """sha256 over the source files of `modules` (once per process): a key part that changes
    whenever the code generator changes, so a key made from a spec instead of IR stays sound."""
    digest = _digests.get(modules)
    if digest is None:
        import importlib.util

        h = hashlib.sha256()
        for name in modules:
            spec = importlib.util.find_spec(name)
            origin = spec.origin if spec is not None else None
            h.update(name.encode() + b"\0")
            if origin and os.path.isfile(origin):
                with open(origin, "rb") as f:
                    h.update(f.read())
        digest = _digests[modules] = h.hexdigest()
    return digest


class ObjectCache:
    """A directory of verified object files; `hits`/`misses`/`corrupt` count lookups."""

    def __init__(self, directory: str | os.PathLike[str] | None = None,
                 max_bytes: int = MAX_BYTES) -> None:
        self.directory = Path(directory) if directory is not None else default_dir()
        self.max_bytes = max_bytes
        self.hits = 0
        self.misses = 0
        self.corrupt = 0
        self._stores = 0
        self._pending: dict[str, bytes] = {}

    def path(self, key: str) -> Path:
        """Where the entry for `key` lives."""
        return self.directory / (key + SUFFIX)

    def load(self, key: str) -> bytes | None:
        """The verified object code for `key`, or None (missing, or failed verification and
        now deleted)."""
        p = self.path(key)
        try:
            with open(p, "rb") as f:
                blob = f.read()
        except OSError:
            self.misses += 1
            return None
        if len(blob) >= _HEADER.size:
            magic, digest, size = _HEADER.unpack_from(blob)
            payload = blob[_HEADER.size:]
            if magic == MAGIC and size == len(payload) and _digest(key, payload) == digest:
                self.hits += 1
                try:
                    os.utime(p)  # recently used: pruning removes the oldest first
                except OSError:
                    pass
                return payload
        # Torn, truncated, tampered, another key's or an older format: never hand it to the
        # loader; the caller recompiles and stores a good entry in its place.
        self.corrupt += 1
        self.misses += 1
        try:
            p.unlink()
        except OSError:
            pass
        return None

    def discard(self, key: str) -> None:
        """Delete `key`'s entry: it verified but did not link in this process."""
        self.corrupt += 1
        try:
            self.path(key).unlink()
        except OSError:
            pass

    def store(self, key: str, obj: bytes) -> None:
        """Write an entry atomically; failures (read-only disk, full disk) only lose the cache."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=SUFFIX, dir=self.directory)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(_HEADER.pack(MAGIC, _digest(key, obj), len(obj)))
                    f.write(obj)
                os.replace(tmp, self.path(key))
                self._stores += 1
                if _PRUNE_EVERY and self._stores % _PRUNE_EVERY == 1:
                    # Off the compile path: scanning a big directory takes tens of ms.
                    threading.Thread(target=self.prune, daemon=True).start()
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except OSError as err:
            _warn_unusable(self.directory, err)

    def attach(self, engine) -> None:
        """Use this cache as `engine`'s MCJIT object cache; modules must be named by their key."""
        engine.set_object_cache(self._notify, self._getbuffer)

    def lookup(self, key: str) -> bool:
        """Load and verify `key` ahead of `finalize_object`; True means O3 can be skipped."""
        obj = self.load(key)
        if obj is None:
            return False
        self._pending[key] = obj
        return True

    def _getbuffer(self, module) -> bytes | None:
        # NOTE: runs inside an LLVM callback: must not raise.
        try:
            obj = self._pending.pop(module.name, None)
            return obj if obj is not None else self.load(module.name)
        except Exception:
            return None

    def _notify(self, module, obj: bytes) -> None:
        try:
            if len(module.name) == 64:
                self.store(module.name, obj)
        except Exception:
            pass

    def info(self) -> dict[str, object]:
        """Directory, number of entries, their total size in bytes, and `problem`: why the
        directory cannot hold the cache (None when it can)."""
        entries = list(self.directory.glob("*" + SUFFIX)) if self.directory.is_dir() else []
        entries = [e for e in entries if not e.name.startswith(".tmp-")]
        return {"directory": str(self.directory), "entries": len(entries),
                "bytes": sum(e.stat().st_size for e in entries),
                "problem": problem(self.directory)}

    def prune(self, max_bytes: int | None = None) -> int:
        """Delete least recently used entries until at most 80% of `max_bytes` remain."""
        limit = self.max_bytes if max_bytes is None else max_bytes
        try:
            entries = []
            with os.scandir(self.directory) as it:
                for e in it:
                    if e.name.endswith(SUFFIX):
                        st = e.stat()
                        entries.append((st.st_mtime, st.st_size, e.path))
        except OSError:
            return 0
        total = sum(size for _, size, _ in entries)
        if total <= limit:
            return 0
        removed = 0
        for _, size, path in sorted(entries):
            if total <= 0.8 * limit:
                break
            try:
                os.unlink(path)
                total -= size
                removed += 1
            except OSError:
                pass
        return removed

    def clear(self) -> int:
        """Delete every entry (and leftover temporary files); returns how many were removed."""
        if not self.directory.is_dir():
            return 0
        n = 0
        for e in self.directory.glob("*" + SUFFIX):
            try:
                e.unlink()
                n += 1
            except OSError:
                pass
        return n
