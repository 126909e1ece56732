"""Files and directories only the user may write: the checks that a directory and its
parents are the user's own and writable by nobody else (`untrusted`, `problem`), and private
reads and writes (`read_private`: a regular file of the user's, links not followed;
`write_private`: whole or not at all, 0600). The disk kernel cache (`objcache`) trusts what
it reads only through these."""
from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

NO_FOLLOW = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class UntrustedError(PermissionError):
    """A cache file or directory that someone other than the user could have written."""


def why_not_private(st: os.stat_result, path: str | os.PathLike[str], *,
                    parent: bool = False) -> str | None:
    """Why someone other than the user could change `path` (`st`: its stat), with the fix; None
    when nobody else can. A parent directory may also be root's, and writable when sticky."""
    uid = os.geteuid()
    if st.st_uid != uid and not (parent and st.st_uid == 0):
        return (f"{path} is owned by uid {st.st_uid}, not by you (uid {uid}): point "
                "LAZYK_CACHE_DIR at a directory of your own")
    if st.st_mode & 0o022 and not (parent and st.st_mode & stat.S_ISVTX):
        return (f"{path} is writable by group or others: run "
                f"`chmod {'go-w' if parent else '700'} {path}`")
    return None


def untrusted(directory: str | os.PathLike[str]) -> str | None:
    """Why others could change what is in `directory` (a link is judged by its target), or None.

    The directory and each parent up to the home or temp directory (whichever holds it, else
    up to /) must pass `why_not_private`; parts that do not exist yet are made 0700 by `store`.
    """
    real = Path(os.path.realpath(directory))
    home = Path(os.path.realpath(os.path.expanduser("~")))
    stop = home if home in (real, *real.parents) else _temp_root()
    for d in (real, *real.parents):
        try:
            st = os.lstat(d)  # a link put here after realpath is judged as itself: refused
        except FileNotFoundError:
            continue
        except OSError as err:
            return f"{d}: {err.strerror}"
        why = why_not_private(st, d, parent=d != real)
        if why or d == stop:
            return why
    return None


def _temp_root() -> Path | None:
    """The temporary-files root, or None where there is none to write (then parents are
    checked up to /). NOTE: gettempdir's first call costs ~0.3 ms (it writes a file)."""
    try:
        return Path(os.path.realpath(tempfile.gettempdir()))
    except OSError:  # (FileNotFoundError: no usable temporary directory, e.g. a full disk)
        return None


def problem(directory: Path) -> str | None:
    """Why `directory` cannot hold the cache (a file in its place, not writable, or `untrusted`),
    or None."""
    try:
        for d in (directory, *directory.parents):  # the first part that exists decides
            if d.exists():
                if not d.is_dir():
                    return f"{d} is not a directory"
                if not os.access(d, os.W_OK | os.X_OK):
                    return f"{d} is not writable"
                break
    except OSError as err:  # (a part you may not enter, a name too long, a loop of links)
        return f"{err.filename or directory}: {err.strerror or err}"
    return foreign_link(directory) or untrusted(directory)


def foreign_link(directory: str | os.PathLike[str]) -> str | None:
    """Why a symbolic link on the path as given is not to be followed (one that someone
    other than you or root made: it could point the cache anywhere), or None."""
    uid, path = os.geteuid(), Path(os.path.abspath(directory))
    for d in (path, *path.parents):
        try:
            st = os.lstat(d)
        except OSError:  # (missing parts: made by `make_private_dirs`, judged by `untrusted`)
            continue
        if stat.S_ISLNK(st.st_mode) and st.st_uid not in (uid, 0):
            return (f"{d} is a link made by uid {st.st_uid}, not by you (uid {uid}): point "
                    "LAZYK_CACHE_DIR at a directory of your own")
    return None


def make_private_dirs(directory: Path) -> None:
    """Create `directory` and its missing parents with mode 0700, whatever the umask."""
    missing = []
    for d in (directory, *directory.parents):
        if d.exists():
            break
        missing.append(d)
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:  # another process was first: `untrusted` judges it
            continue
        os.chmod(d, 0o700)  # the umask may have taken the owner's bits


def read_private(path: str | os.PathLike[str], limit: int, *, secret: bool = False) -> bytes:
    """The bytes of `path` if it is a regular file of the user's that nobody else may write
    (`secret`: nor read), of at most `limit` bytes; else UntrustedError (or OSError, e.g.
    FileNotFoundError). Links are not followed, a FIFO never blocks: fstat checks the file
    opened."""
    try:
        fd = os.open(path, NO_FOLLOW)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise UntrustedError(f"{path} is a symbolic link") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):  # (a directory's fd: open() would raise, naming the fd)
        os.close(fd)
        raise UntrustedError(f"{path} is not a regular file")
    with open(fd, "rb") as f:
        why = why_not_private(st, path)
        if why is None and secret and st.st_mode & 0o077:
            why = f"{path} is readable by group or others"
        if why is None and st.st_size > limit:
            why = f"{path} has {st.st_size} bytes, more than {limit}"
        if why:
            raise UntrustedError(why)
        return f.read()


def write_private(path: Path, *parts: bytes, replace: bool = True, sync: bool = True) -> None:
    """Write `parts` to `path` whole or not at all: a 0600 temporary file in the same directory,
    fsynced (unless not `sync`), then renamed over `path` (`replace=False`: linked, so that an
    existing file wins)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
    try:
        with open(fd, "wb") as f:
            os.fchmod(fd, 0o600)
            for part in parts:
                f.write(part)
            f.flush()
            if sync:
                os.fsync(fd)
        if replace:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass
            os.unlink(tmp)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
