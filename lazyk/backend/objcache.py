"""On-disk cache of compiled object code: private to the user, shared by their processes.

Entries are keyed by lazyk's and LLVM's versions, the CPU name and features and the hash of the
IR handed to the backend *before* optimization, so a hit skips O3 and codegen altogether. Each
entry is `MAGIC | HMAC-SHA256(secret; MAGIC, identity, key, payload) | len(payload) | payload`,
written 0600 to a temporary file and renamed into place (os.replace is atomic), so a
reader sees a whole entry or none (not fsynced: ~8 ms a kernel; an entry a crash left torn
fails the HMAC and is compiled again). The HMAC binds the payload to its own key and to this
lazyk / LLVM / CPU (`identity`) under a secret only the user can read (`KEY_FILE`, 32 random
bytes, 0600): an entry that is torn, truncated, bit-flipped, of an older format, copied under another
key's name, or written by anyone without the secret fails it, is deleted and recompiled (then
replaced), never executed.

Machine code from the cache runs in the user's process, so the cache is trusted only when
nobody else can write it (`untrusted`): the directory and its parents up to the home or temp
directory must be the user's own (parents: or root's) and not writable by group or others
(parents: unless sticky, as /tmp), and each entry must be a regular file of the user's, opened
without following links (`read_private`). Otherwise nothing is read or written there, and a
warning says why once per process.

Two ways in: `attach(engine)` wires llvmlite's MCJIT object cache (module name = key), or
`load(key)` / `store(key, obj)` for a backend that adds object files itself."""
from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import stat
import struct
import sys
import threading
import time
import warnings
from pathlib import Path

from lazyk.backend.optworker import wide_vectors
from lazyk.backend.private_files import (
    NO_FOLLOW,
    UntrustedError,
    foreign_link,
    make_private_dirs,
    problem,
    read_private,
    untrusted,
    write_private,
)
from lazyk.version import __version__

MAGIC = b"LZKOBJ3\n"  # LZKOBJ1/2 entries (sha256, no secret) are misses
FAMILY = b"LZKOBJ"  # how every format's entries start: what `clear` and pruning may delete
# Entries are small (2-3 KB per kernel) but test suites make tens of thousands: past this size
# the least recently used entries go (hits refresh an entry's mtime).
MAX_BYTES = 256 << 20
MAX_ENTRY = 64 << 20  # a bigger file is never read (PTX of a huge kernel is a few MB)
_PRUNE_EVERY = 256  # stores per process between size checks (scans the directory); 0: never
_HEADER = struct.Struct("<8s32sQ")  # magic, HMAC (see ObjectCache._mac), payload length
SUFFIX = ".o"
KEY_FILE = "hmac-key"  # the user's secret for this directory: 32 random bytes, 0600
_KEY = r"(?:ptx-)?[0-9a-f]{48,64}"  # make_key and nvvmc.ptx_key
_ENTRY = re.compile(rf"{_KEY}\{SUFFIX}")
_TEMP = re.compile(rf"\.{_KEY}\.\w+\.tmp")  # an entry being written (see write_private)
_STALE_TEMP = 60.0  # seconds: an older temporary file was left by a writer that died
# Never follow a link, never block on a FIFO: what was opened is checked with fstat.
_log = logging.getLogger(__name__)


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
    """(CPU name, feature string) of this machine, as lazyk compiles for them; cached per
    process."""
    global _host
    if _host is None:
        import llvmlite.binding as llvm

        cpu = llvm.get_host_cpu_name()
        _host = (cpu, wide_vectors(llvm.get_host_cpu_features().flatten(), cpu))
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


_digests: dict[tuple[str, ...], str] = {}
_warned: set[str] = set()  # cache directories already reported unusable in this process


def read_secret(directory: Path) -> bytes:
    """The user's HMAC key for `directory`'s entries, made on first use (32 random bytes)."""
    path = directory / KEY_FILE
    try:
        try:
            secret = read_private(path, 32, secret=True)
        except FileNotFoundError:
            write_private(path, os.urandom(32), replace=False)
            secret = read_private(path, 32, secret=True)
        if len(secret) != 32:
            raise UntrustedError(f"{path} is not a 32-byte key")
    except (UntrustedError, PermissionError) as err:
        why = str(err).split(": point LAZYK_CACHE_DIR")[0] if isinstance(err, UntrustedError) \
            else f"{path} cannot be read"  # (one fix: the key's, not the directory's)
        raise UntrustedError(f"{why}: delete {path} and lazyk makes a new key") from None
    return secret


def remove_entry(path: str | os.PathLike[str]) -> bool:
    """Delete `path` if it is a regular file in lazyk's entry format (any version)."""
    try:
        fd = os.open(path, NO_FOLLOW)
        try:
            ours = stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, len(FAMILY)) == FAMILY
        finally:
            os.close(fd)
        if ours:
            os.unlink(path)
        return ours
    except OSError:
        return False


def _failure(directory: Path, err: OSError) -> str:
    """Why writing to `directory` failed, in words."""
    try:
        os.lstat(directory)
    except FileNotFoundError:  # (removed while in use: not its temp file)
        if isinstance(err, FileNotFoundError):
            return f"{directory} no longer exists"
    except OSError:  # (a name too long: `problem` says so)
        pass
    return problem(directory) or (f"{err.filename}: {err.strerror}" if err.filename else
                                  f"{err.strerror or err} writing in {directory}")


def _cannot_make(directory: Path) -> str | None:
    """Why a missing `directory` cannot be made (tried, and what was made removed again),
    or None (it exists, or it can be made)."""
    made = [d for d in (directory, *directory.parents) if not d.exists()]
    if not made:
        return None
    try:
        make_private_dirs(directory)
    except OSError as err:
        return _failure(directory, err)
    for d in made:  # (deepest first)
        try:
            os.rmdir(d)
        except OSError:
            break  # (another process began using it meanwhile)
    return None


def _warn_unusable(directory: Path, why: str, loads: bool = False) -> None:
    """Say once per process and directory that nothing is cached there (`loads`: new)."""
    if str(directory) in _warned:
        return
    _warned.add(str(directory))
    then = "new kernels are not stored (those stored there still load)" if loads else \
        "kernels are compiled anew in each process"
    warnings.warn(f"lazyk: the kernel cache directory {directory} is unusable ({why}); {then}",
                  RuntimeWarning, stacklevel=_user_level())


def _user_level() -> int:
    """The warnings stack level of the first caller outside lazyk (the user's line)."""
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


_PACKAGE = str(Path(__file__).resolve().parent.parent)  # (lazyk/)


# The packages whose code decides a kernel's machine code or its kernel data (the code
# generator, the op table, the optimiser, the ABI): a key made from a spec, not from IR,
# carries their digest, so that no edit of any of them can load an older kernel.
GENERATOR = ("lazyk.types", "lazyk.frontend", "lazyk.codegen", "lazyk.backend", "lazyk.kernel")


def source_digest(*modules: str) -> str:
    """sha256 over the source files of `modules` (a package: every .py file in its folder), once
    per process: a key part that changes whenever the code generator changes, so a key made
    from a spec instead of IR stays sound."""
    digest = _digests.get(modules)
    if digest is None:
        import importlib.util

        h = hashlib.sha256()
        for name in modules:
            spec = importlib.util.find_spec(name)
            origin = spec.origin if spec is not None else None
            files = [origin] if origin and os.path.isfile(origin) else []
            if spec is not None and spec.submodule_search_locations:
                files = sorted(str(p) for d in spec.submodule_search_locations
                               for p in Path(d).glob("*.py"))
            h.update(name.encode() + b"\0")
            for path in files:
                h.update(os.path.basename(path).encode() + b"\0")
                with open(path, "rb") as f:
                    h.update(f.read())
        digest = _digests[modules] = h.hexdigest()
    return digest


class ObjectCache:
    """A directory of verified object files; `hits`/`misses`/`corrupt` count lookups.

    Nothing is read or written until the directory proves private (see `untrusted`), on the
    first disk access; a directory that does not is reported once (a RuntimeWarning) and
    `info()["problem"]` says why.
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None,
                 max_bytes: int | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_dir()
        self._max_bytes = max_bytes  # (None: the module's MAX_BYTES, read when pruning)
        self.hits = 0
        self.misses = 0
        self.corrupt = 0
        self._stores = 0
        self._pending: dict[str, bytes] = {}
        # Decided on first disk access: the resolved directory (a link is followed once, so it
        # cannot be pointed elsewhere later) and its secret, or why it is not used.
        self._real = self.directory
        self._secret: bytes | None = None
        self._refused: str | None = None

    def _usable(self, create: bool, warn: bool = True) -> bool:
        """Whether entries may be read and written (`create`: make the directory first)."""
        if self._secret is None and self._refused is None:
            try:
                if not create and not self.directory.is_dir() and \
                        not self.directory.is_symlink():  # (a link is judged: no "nothing")
                    return False  # nothing stored yet
                why = foreign_link(self.directory)  # (before anything is made through it)
                if why:
                    raise UntrustedError(why)
                if create:
                    make_private_dirs(self.directory)
                self._real = Path(os.path.realpath(self.directory))
                try:  # (judged now: a link to a missing directory is refused, else
                    mode = os.lstat(self._real).st_mode  # someone could make it between
                except FileNotFoundError:  # the check and the first write)
                    raise UntrustedError(f"{self._real} does not exist ({self.directory} links "
                                         "to a missing directory): make it, or point "
                                         "LAZYK_CACHE_DIR at a directory of your own") from None
                if not stat.S_ISDIR(mode):
                    raise UntrustedError(f"{self._real} is not a directory" + (
                        " (a loop of symbolic links)" if stat.S_ISLNK(mode) else ""))
                self._refused = untrusted(self._real)
                if self._refused is None:  # (a read-only private cache still loads)
                    self._secret = read_secret(self._real)
            except UntrustedError as err:
                self._refused = str(err)
            except OSError as err:
                self._refused = _failure(self.directory, err)
        if self._refused and warn:
            _warn_unusable(self.directory, self._refused)
        return self._secret is not None

    def path(self, key: str) -> Path:
        """Where the entry for `key` lives (ValueError for a name lazyk does not give keys)."""
        if not _ENTRY.fullmatch(key + SUFFIX):
            raise ValueError(f"not a lazyk cache key: {key!r}")
        return self._real / (key + SUFFIX)

    def _mac(self, key: str, payload: bytes) -> bytes:
        # NOTE: over the key too: a valid entry copied under another key's name must not verify
        # (it ran another kernel's code, or a 3-input kernel as a 2-input one).
        mac = hmac.new(self._secret, MAGIC, hashlib.sha256)
        mac.update(identity().encode() + b"\0" + key.encode() + b"\0")
        mac.update(payload)
        return mac.digest()

    def load(self, key: str) -> bytes | None:
        """The verified object code for `key`, or None (missing, not the user's own, or failed
        verification and now deleted)."""
        if not self._usable(create=False):
            self.misses += 1
            return None
        p = self.path(key)
        try:
            blob = read_private(p, MAX_ENTRY)
        except OSError as err:
            if not isinstance(err, FileNotFoundError):
                _log.debug("lazyk: kernel cache entry not used: %s", err)
            self.misses += 1
            return None
        if len(blob) >= _HEADER.size:
            magic, mac, size = _HEADER.unpack_from(blob)
            payload = blob[_HEADER.size:]
            if (magic == MAGIC and size == len(payload)
                    and hmac.compare_digest(self._mac(key, payload), mac)):
                self.hits += 1
                try:
                    os.utime(p)  # recently used: pruning removes the oldest first
                except OSError:
                    pass
                return payload
        # Torn, truncated, tampered, another key's, another secret's or an older format: never
        # hand it to the loader; the caller recompiles and stores a good entry in its place.
        _log.debug("lazyk: kernel cache entry %s failed verification; deleted", p)
        self.corrupt += 1
        self.misses += 1
        try:
            p.unlink()
        except OSError:
            pass
        return None

    def has(self, key: str) -> bool:
        """Whether an entry for `key` is stored (not verified: `load` does that)."""
        return self._usable(create=False, warn=False) and self.path(key).is_file()

    def discard(self, key: str) -> None:
        """Delete `key`'s entry: it verified but did not link in this process."""
        self.corrupt += 1
        if self._usable(create=False):
            try:
                self.path(key).unlink()
            except OSError:
                pass

    def store(self, key: str, obj: bytes) -> None:
        """Write an entry atomically; failures (read-only disk, full disk, a directory others
        could write) only lose the cache."""
        if not self._usable(create=True):
            return
        try:
            write_private(self.path(key), _HEADER.pack(MAGIC, self._mac(key, obj), len(obj)),
                          obj, sync=False)
        except OSError as err:
            p = self.path(key)
            if isinstance(err, IsADirectoryError) or (p.exists() and not p.is_file()):
                # something else at this one entry's name: that kernel is not stored, the
                # others are
                _log.debug("lazyk: kernel cache entry %s not stored: %s", p, err)
                return
            _warn_unusable(self.directory, _failure(self.directory, err),
                           loads=self._secret is not None)
            return
        self._stores += 1
        if _PRUNE_EVERY and self._stores % _PRUNE_EVERY == 1:
            # Off the compile path: scanning a big directory takes tens of ms.
            threading.Thread(target=self.prune, daemon=True).start()

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

    def _files(self) -> list[tuple[str, os.stat_result]]:
        """(path, lstat) of the regular files named as lazyk names entries and their
        temporary files; the names alone prove nothing (see `remove_entry`)."""
        found = []
        try:
            with os.scandir(os.path.realpath(self.directory)) as it:
                for e in it:
                    if _ENTRY.fullmatch(e.name) or _TEMP.fullmatch(e.name):
                        try:
                            st = e.stat(follow_symlinks=False)
                        except OSError:  # removed meanwhile by another process
                            continue
                        if stat.S_ISREG(st.st_mode):
                            found.append((e.path, st))
        except OSError:
            pass
        return found

    def info(self) -> dict[str, object]:
        """Directory, number of entries, their total size in bytes, `problem`: why the
        directory cannot hold the cache (None when it can), and `loads`: whether stored
        entries still load (a read-only private directory)."""
        self._usable(create=False, warn=False)
        entries = [st.st_size for path, st in self._files() if path.endswith(SUFFIX)]
        why = self._refused or problem(self.directory) or _cannot_make(self.directory)
        return {"directory": os.path.abspath(self.directory), "entries": len(entries),
                "bytes": sum(entries), "problem": why, "loads": self._secret is not None}

    @property
    def max_bytes(self) -> int:
        """The cap in bytes: this cache's own, else `lazyk.backend.objcache.MAX_BYTES` now."""
        return MAX_BYTES if self._max_bytes is None else self._max_bytes

    @max_bytes.setter
    def max_bytes(self, value: int | None) -> None:
        self._max_bytes = value

    def prune(self, max_bytes: int | None = None) -> int:
        """Delete least recently used entries until at most 80% of `max_bytes` remain."""
        limit = self.max_bytes if max_bytes is None else max_bytes
        entries = [(st.st_mtime, st.st_size, path) for path, st in self._files()
                   if path.endswith(SUFFIX)]
        total = sum(size for _, size, _ in entries)
        if total <= limit:
            return 0
        removed = 0
        for _, size, path in sorted(entries):
            if total <= 0.8 * limit:
                break
            if remove_entry(path):
                total -= size
                removed += 1
        return removed

    def clear(self, remove_key: bool = False) -> int:
        """Delete every entry (and temporary files left by writers that died); returns how many
        entries were removed. Only files that lazyk's names and format identify as its own go.
        The secret key stays (entries written later by running processes still verify) unless
        `remove_key`."""
        n = 0
        for path, st in self._files():
            temp = not path.endswith(SUFFIX)
            if temp and time.time() - st.st_mtime < _STALE_TEMP:
                continue  # a writer may still rename it into place
            if remove_entry(path):
                n += not temp
        if remove_key:
            try:
                os.unlink(os.path.join(os.path.realpath(self.directory), KEY_FILE))
            except OSError:
                pass
        return n
