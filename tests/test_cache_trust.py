"""The disk kernel cache runs machine code, so lazyk uses it only when nobody else can write it.

The attack: another local user plants an entry whose code calls `system("id > MARKER")` under
the key of `a * 2.0 + 1.0`; the victim's next `lazyk.evaluate` must not run it. Where we are
root the attacker really is another user (`nobody`, through `subprocess.run(user=...)`); a
positive control shows that the same planted code does run once it is signed with the user's
own key, so every refusal below is a real one.
"""
import hashlib
import hmac
import json
import os
import pwd
import stat
import subprocess
import sys
import tempfile
import textwrap

import pytest

pytest.importorskip("llvmlite.binding")

from lazyk.backend import objcache  # noqa: E402

EXPR = "a * 2.0 + 1.0"

# A fresh process evaluates EXPR (and, with an argument, a second expression), checks the values
# against NumPy and prints lazyk.stats(); warnings are shown every time they are issued.
VICTIM = textwrap.dedent(f'''
    import json, sys, warnings
    import numpy as np
    import lazyk
    warnings.simplefilter("always")
    a = np.arange(8.0)
    r = lazyk.evaluate({EXPR!r})
    assert r.dtype == np.float64 and r.shape == (8,)
    np.testing.assert_array_equal(r, a * 2.0 + 1.0)
    if len(sys.argv) > 1:
        np.testing.assert_array_equal(lazyk.evaluate("a - 3.0"), a - 3.0)
    print(json.dumps(lazyk.stats()))
''')

# Records the key and IR of every module compiled for EXPR, then builds the attacker's object
# code: the same IR with `system("id > MARKER")` at the entry of every function.
ATTACKER = textwrap.dedent(r'''
    import json, re, sys
    import numpy as np
    import lazyk
    from lazyk.backend import cpu
    seen = []
    compile_ = cpu.JITModule._compile
    def record(self, h, cache, key):
        seen.append((key, self.source_ir))
        return compile_(self, h, cache, key)
    cpu.JITModule._compile = record
    a = np.arange(8.0)
    lazyk.evaluate(sys.argv[2])
    cmd = f"id > {sys.argv[1]}".encode() + b"\0"
    text = "".join(f"\\{b:02X}" for b in cmd)
    call = f"  %mk = call i32 @system(i8* bitcast ([{len(cmd)} x i8]* @.mk to i8*))\n"
    out = {}
    for key, ir in seen:
        bad, n = re.subn(r"\ndefine [^\n]*\n\{\nentry:\n", lambda m: m.group(0) + call, ir)
        assert n, ir
        bad += f'\n@.mk = private constant [{len(cmd)} x i8] c"{text}"\ndeclare i32 @system(i8*)\n'
        with cpu._lock:
            out[key] = cpu.host().compile_ir(bad)[1].hex()
    print(json.dumps(out))
''')


def _run(code: str, cache, *args: str, timeout: float = 120, **env: str):
    full = dict(os.environ, LAZYK_CACHE_DIR=str(cache), **env)
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=full, timeout=timeout)


def _victim(cache, *args: str, timeout: float = 120, **env: str) -> tuple[dict, str]:
    """lazyk.stats() and stderr of a fresh process that evaluates EXPR with `cache`."""
    r = _run(VICTIM, cache, *args, timeout=timeout, **env)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.splitlines()[-1]), r.stderr


def _sign(secret: bytes, key: str, payload: bytes) -> bytes:
    """An entry in lazyk's format, signed with `secret` (the positive control proves the
    format: signed with the user's own key, it loads)."""
    mac = hmac.new(secret, objcache.MAGIC, hashlib.sha256)
    mac.update(objcache.identity().encode() + b"\0" + key.encode() + b"\0")
    mac.update(payload)
    return objcache._HEADER.pack(objcache.MAGIC, mac.digest(), len(payload)) + payload


def _old_checksum(key: str, payload: bytes) -> bytes:
    """An entry as lazyk used to check them: sha256 over public parts, no secret."""
    h = hashlib.sha256(b"LZKOBJ2\n")
    h.update(objcache.identity().encode() + b"\0" + key.encode() + b"\0")
    h.update(payload)
    return objcache._HEADER.pack(b"LZKOBJ2\n", h.digest(), len(payload)) + payload


def _nobody():
    """(uid, gid) of another user we can run as, or None (not root, or no such user)."""
    if os.geteuid() != 0:
        return None
    try:
        pw = pwd.getpwnam("nobody")
    except KeyError:
        return None
    return pw.pw_uid, pw.pw_gid


def _write_as(user, path, data: bytes) -> None:
    """Write `path` as `user` (another user's process), or as ourselves when user is None."""
    if user is None:
        path.write_bytes(data)
        return
    subprocess.run(["sh", "-c", 'umask 077; cat > "$1"', "sh", str(path)], input=data,
                   user=user[0], group=user[1], extra_groups=[], check=True, timeout=30)


@pytest.fixture
def shared_tmp():
    """A directory another user can reach (0711, in the temp root): pytest's tmp_path is 0700."""
    base = tempfile.mkdtemp(prefix="lazyk-trust-")
    os.chmod(base, 0o711)
    yield base
    subprocess.run(["rm", "-rf", base], check=False)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """(marker path, {key: object code that writes the marker}) for EXPR."""
    base = tmp_path_factory.mktemp("attacker")
    marker = base / "marker"
    r = _run(ATTACKER, base / "cache", str(marker), EXPR)
    assert r.returncode == 0, r.stderr[-3000:]
    code = {k: bytes.fromhex(v) for k, v in json.loads(r.stdout.splitlines()[-1]).items()}
    assert code and not marker.exists()
    return marker, code


@pytest.fixture
def attack(planted):
    """`planted`, with no marker left behind for the next test."""
    planted[0].unlink(missing_ok=True)
    yield planted
    planted[0].unlink(missing_ok=True)


def _plant(directory, code: dict, sign, user=None) -> None:
    for key, payload in code.items():
        _write_as(user, directory / (key + objcache.SUFFIX), sign(key, payload))


def _assert_not_run(marker, stats: dict) -> None:
    assert not marker.exists(), f"planted code ran: {marker.read_text()!r}"
    assert stats["disk_loads"] == 0 and stats["compiles"] >= 1, stats


# ------------------------------------------------------------------ the attack, end to end
def test_positive_control_planted_code_runs_when_signed_with_the_users_key(attack, tmp_path):
    marker, code = attack
    cache = tmp_path / "cache"
    _victim(cache)  # makes the directory (0700) and its key
    secret = (cache / objcache.KEY_FILE).read_bytes()
    _plant(cache, code, lambda k, p: _sign(secret, k, p))
    stats, _ = _victim(cache)
    assert stats["disk_loads"] >= 1, stats
    assert marker.read_text().startswith(f"uid={os.geteuid()}")


def test_directory_owned_by_another_user_is_not_used(attack, shared_tmp):
    user = _nobody()
    if user is None:
        pytest.skip("needs root and a 'nobody' user to play the other user")
    marker, code = attack
    cache = os.path.join(shared_tmp, "theirs")
    os.mkdir(cache, 0o755)
    os.chown(cache, *user)
    cache = objcache.Path(cache)
    their_key = os.urandom(32)
    _write_as(user, cache / objcache.KEY_FILE, their_key)  # their own 0600 key, and
    _plant(cache, code, lambda k, p: _sign(their_key, k, p), user)  # entries signed with it
    stats, err = _victim(cache)
    _assert_not_run(marker, stats)
    assert err.count("kernel cache directory") == 1 and f"owned by uid {user[0]}" in err, err


@pytest.mark.parametrize("via_link", [False, True])
def test_world_writable_directory_is_not_used(attack, shared_tmp, via_link):
    user = _nobody()  # None: we plant the entries ourselves; the mode alone must refuse them
    marker, code = attack
    cache = objcache.Path(shared_tmp) / "shared"
    cache.mkdir()
    os.chmod(cache, 0o777)
    their_key = os.urandom(32)
    _write_as(user, cache / objcache.KEY_FILE, their_key)
    _plant(cache, code, lambda k, p: _sign(their_key, k, p), user)
    target = cache
    if via_link:
        cache = objcache.Path(shared_tmp) / "link"
        cache.symlink_to(target)
    stats, err = _victim(cache, "second")
    _assert_not_run(marker, stats)
    assert err.count("kernel cache directory") == 1, err  # once, for two kernels
    assert f"{target} is writable by group or others" in err and f"chmod 700 {target}" in err
    assert sorted(p.name for p in target.iterdir()) == sorted(
        [objcache.KEY_FILE] + [k + objcache.SUFFIX for k in code])  # nothing written there
    info = _run("import sys; from lazyk.cli import main; sys.exit(main(['cache', 'info']))",
                cache)
    assert info.returncode == 0 and "unusable" in info.stdout
    assert f"chmod 700 {target}" in info.stdout, info.stdout


@pytest.mark.parametrize("forgery", ["other_key", "old_checksum"])
def test_entry_without_the_users_signature_is_refused(attack, tmp_path, forgery):
    # Permissions that look right (our own private directory, 0600 files of ours): only the
    # HMAC can tell that the user's lazyk did not write these entries.
    marker, code = attack
    cache = tmp_path / "cache"
    _victim(cache)
    other = os.urandom(32)
    sign = (lambda k, p: _sign(other, k, p)) if forgery == "other_key" else _old_checksum
    _plant(cache, code, sign)
    stats, _ = _victim(cache)
    _assert_not_run(marker, stats)
    again, _ = _victim(cache)  # the forged entries were replaced by good ones
    assert again["disk_loads"] >= 1 and again["compiles"] == 0 and not marker.exists()


@pytest.mark.parametrize("flaw", ["foreign_owner", "world_writable"])
def test_entry_file_others_could_write_is_refused(attack, tmp_path, flaw):
    marker, code = attack
    cache = tmp_path / "cache"
    _victim(cache)
    secret = (cache / objcache.KEY_FILE).read_bytes()
    _plant(cache, code, lambda k, p: _sign(secret, k, p))  # correctly signed, but ...
    for key in code:
        path = cache / (key + objcache.SUFFIX)
        if flaw == "world_writable":
            os.chmod(path, 0o666)
        elif _nobody() is None:
            pytest.skip("needs root to give a file to another user")
        else:
            os.chown(path, *_nobody())
    stats, _ = _victim(cache)
    _assert_not_run(marker, stats)


# ------------------------------------------------------------------ entries that are not files
@pytest.mark.parametrize("kind", ["fifo", "dev_zero_link", "huge"])
def test_special_entry_is_skipped_without_hanging(tmp_path, kind):
    cache = tmp_path / "cache"
    first, _ = _victim(cache)
    entries = list(cache.glob("*" + objcache.SUFFIX))
    assert first["compiles"] >= 1 and entries
    for path in entries:
        path.unlink()
        if kind == "fifo":
            os.mkfifo(path, 0o600)
        elif kind == "dev_zero_link":
            path.symlink_to("/dev/zero")
        else:  # sparse: takes no disk
            with open(path, "wb") as f:
                f.truncate(objcache.MAX_ENTRY + 1)
            os.chmod(path, 0o600)
    stats, err = _victim(cache, timeout=60)  # a FIFO opened blocking would hang here
    assert stats["disk_loads"] == 0 and stats["compiles"] == first["compiles"], stats
    assert "Traceback" not in err and "MemoryError" not in err
    for path in entries:  # the next store put a real entry in its place
        assert stat.S_ISREG(os.lstat(path).st_mode) and os.path.getsize(path) < 1 << 20


@pytest.mark.parametrize("kind", ["fifo", "directory", "link", "huge", "foreign",
                                  "group_writable"])
def test_read_private_checks_the_open_file(tmp_path, kind):
    path = tmp_path / "entry"
    want = {"fifo": "not a regular file", "link": "symbolic link", "huge": "more than 100",
            "foreign": "owned by uid", "group_writable": "writable by group or others",
            "directory": f"{path} is not a regular file"}[kind]
    if kind == "directory":  # (the message names the path, not the descriptor)
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path, 0o600)
    elif kind == "link":
        (tmp_path / "real").write_bytes(b"x")
        path.symlink_to(tmp_path / "real")
    else:
        path.write_bytes(bytes(101))
        os.chmod(path, 0o620 if kind == "group_writable" else 0o600)
        if kind == "foreign":
            if _nobody() is None:
                pytest.skip("needs root to give a file to another user")
            os.chown(path, *_nobody())
    with pytest.raises(objcache.UntrustedError, match=want):
        objcache.read_private(path, 100)
    (tmp_path / "fine").write_bytes(bytes(100))
    os.chmod(tmp_path / "fine", 0o600)
    assert objcache.read_private(tmp_path / "fine", 100) == bytes(100)


# ------------------------------------------------------------------ the directory and its key
def test_made_private_whatever_the_umask(tmp_path):
    cache = tmp_path / "a" / "b" / "cache"  # lazyk makes all three
    code = "import os; os.umask(0)\n" + VICTIM
    runs = []
    for _ in range(2):
        r = _run(code, cache)
        assert r.returncode == 0, r.stderr[-3000:]
        runs.append(json.loads(r.stdout.splitlines()[-1]))
    assert runs[0]["compiles"] >= 1 and runs[1]["disk_loads"] == runs[0]["compiles"]
    for d in (tmp_path / "a", tmp_path / "a" / "b", cache):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700, d
    files = list(cache.iterdir())
    # the key and the kernels (a kernel called once needs no native call guards)
    assert {f.name for f in files} >= {objcache.KEY_FILE} and len(files) == 1 + runs[0]["compiles"]
    for f in files:
        assert stat.S_IMODE(os.stat(f).st_mode) == 0o600, f


def test_good_cache_gives_disk_loads_in_a_fresh_process(tmp_path):
    cache = tmp_path / "cache"
    first, err = _victim(cache)
    assert first["disk_loads"] == 0 and first["compiles"] >= 1 and "kernel cache" not in err
    link = tmp_path / "link"
    link.symlink_to(cache)  # a link to a private directory is fine
    for where in (cache, link):
        again, err = _victim(where)
        assert again["disk_loads"] == first["compiles"] and again["compiles"] == 0, again
        assert "kernel cache" not in err


@pytest.mark.parametrize("parent_mode, ok", [(0o777, False), (0o1777, True), (0o755, True)])
def test_parents_are_checked(tmp_path, parent_mode, ok):
    parent = tmp_path / "parent"
    cache = parent / "cache"
    cache.mkdir(parents=True, mode=0o700)
    os.chmod(parent, parent_mode)
    why = objcache.untrusted(cache)
    if ok:
        assert why is None
    else:
        assert f"{parent} is writable by group or others" in why and "chmod go-w" in why
    if parent_mode & 0o022:  # as the cache directory itself, even sticky is not enough
        assert "chmod 700" in objcache.untrusted(parent)


def test_parents_are_checked_up_to_home(tmp_path, monkeypatch):
    shared = tmp_path / "shared"  # above home: not lazyk's business
    cache = shared / "home" / ".cache" / "lazyk"
    cache.mkdir(parents=True, mode=0o700)
    os.chmod(shared, 0o777)
    monkeypatch.setenv("HOME", str(shared / "home"))
    assert objcache.untrusted(cache) is None
    os.chmod(shared / "home", 0o775)
    assert "home is writable by group or others" in objcache.untrusted(cache)
    os.chmod(shared / "home", 0o700)
    monkeypatch.setenv("HOME", str(tmp_path / "elsewhere"))
    assert f"{shared} is writable by group or others" in objcache.untrusted(cache)


@pytest.mark.parametrize("flaw", ["mode_0644", "link", "short"])
def test_bad_key_file_refuses_the_cache(tmp_path, flaw):
    cache = objcache.ObjectCache(tmp_path)
    cache.store("a" * 64, b"code")
    key = tmp_path / objcache.KEY_FILE
    if flaw == "mode_0644":
        os.chmod(key, 0o644)
    elif flaw == "link":
        (tmp_path / "elsewhere").write_bytes(key.read_bytes())
        key.unlink()
        key.symlink_to(tmp_path / "elsewhere")
    else:
        key.write_bytes(b"short")
    fresh = objcache.ObjectCache(tmp_path)
    with pytest.warns(RuntimeWarning, match=f"delete .*{objcache.KEY_FILE}"):
        assert fresh.load("a" * 64) is None
    assert objcache.KEY_FILE in fresh.info()["problem"]
    fresh.store("b" * 64, b"code")
    assert not (tmp_path / ("b" * 64 + objcache.SUFFIX)).exists()


# ------------------------------------------------------------------ clear and pruning
def _cli(cache, *args: str):
    code = "import sys; from lazyk.cli import main; sys.exit(main(sys.argv[1:]))"
    r = _run(code, cache, "cache", *args)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_clear_and_prune_delete_only_lazyk_entries(tmp_path):
    cache = tmp_path / "build"
    first, _ = _victim(cache, "second")
    ours = sorted(cache.glob("*" + objcache.SUFFIX))
    assert len(ours) == first["compiles"] >= 2
    foreign = {"main.o": b"\x7fELF main", "util.o": b"\x7fELF util",
               "0" * 64 + ".o": b"\x7fELF named like an entry, not one"}
    for name, data in foreign.items():
        (cache / name).write_bytes(data)
    outside = tmp_path / ("1" * 64 + ".o")  # an entry-like file elsewhere, linked in
    outside.write_bytes(objcache.MAGIC + b"not in the cache")
    (cache / outside.name).symlink_to(outside)
    assert f"removed {len(ours)} entries" in _cli(cache, "clear")
    left = {p.name: p for p in cache.iterdir()}
    assert set(left) == set(foreign) | {objcache.KEY_FILE, outside.name}
    assert all(left[n].read_bytes() == d for n, d in foreign.items()) and outside.exists()
    # Pruning to nothing removes new entries the same way, and only them.
    _victim(cache, "second")
    assert objcache.ObjectCache(cache).prune(max_bytes=1) == len(ours)
    assert set(p.name for p in cache.iterdir()) == set(left)
    assert "and its secret key" in _cli(cache, "clear", "--key")
    assert not (cache / objcache.KEY_FILE).exists() and (cache / "main.o").exists()
    again, _ = _victim(cache)  # a new key: the cache works again
    assert again["compiles"] >= 1 and (cache / objcache.KEY_FILE).exists()
    _cli(cache, "clear", "--key")
    assert "secret key" not in _cli(cache, "clear", "--key")  # (none left to remove)


def test_link_made_by_another_user_is_not_followed(shared_tmp):
    """A link someone else made (in a shared sticky directory, say) could point the cache
    into any directory of yours: it is refused before anything is made or written."""
    user = _nobody()
    if user is None:
        pytest.skip("needs root and a 'nobody' user to play the other user")
    mine = objcache.Path(shared_tmp) / "private"
    mine.mkdir(mode=0o700)
    link = objcache.Path(shared_tmp) / "cache-link"
    link.symlink_to(mine)
    os.lchown(link, *user)
    stats, err = _victim(link)
    assert f"{link} is a link made by uid {user[0]}" in err, err
    assert stats["disk_loads"] == 0 and list(mine.iterdir()) == []  # nothing written there


def test_link_to_a_missing_directory_is_refused(tmp_path):
    """Nothing makes a link's missing target (someone else could, between the check and
    the use): the cache is refused, naming both."""
    link = tmp_path / "cache-link"
    link.symlink_to(tmp_path / "not-yet")
    stats, err = _victim(link)
    assert "does not exist" in err and "links to a missing directory" in err, err
    assert not (tmp_path / "not-yet").exists()


def test_a_path_that_cannot_be_checked_warns_and_evaluates(tmp_path):
    """A path part too long (or one you may not enter) leaves the cache unusable with a
    warning; evaluation goes on."""
    stats, err = _victim(tmp_path / ("a" * 300))
    assert "unusable" in err and "File name too long" in err, err


def test_no_usable_temporary_directory_is_no_crash(tmp_path, monkeypatch):
    def none():
        raise FileNotFoundError("No usable temporary directory found")
    monkeypatch.setattr(tempfile, "gettempdir", none)
    monkeypatch.setenv("HOME", str(tmp_path / "elsewhere"))
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    assert objcache.untrusted(cache) is None  # (its parents checked up to /)
    os.chmod(tmp_path, 0o777)
    try:
        assert f"{tmp_path} is writable by group or others" in objcache.untrusted(cache)
    finally:
        os.chmod(tmp_path, 0o700)


def test_cache_info_says_what_a_process_would_of_links_and_relative_paths(tmp_path):
    dangling, loop = tmp_path / "dangling", tmp_path / "loop"
    dangling.symlink_to(tmp_path / "missing")
    loop.symlink_to(loop)
    out = _cli(dangling, "info")
    assert "unusable" in out and "links to a missing directory" in out
    assert not (tmp_path / "missing").exists()  # (not made through the link)
    assert "a loop of symbolic links" in _cli(loop, "info")
    info = objcache.ObjectCache(os.path.relpath(tmp_path / "rel", os.getcwd())).info()
    assert info["directory"] == str(tmp_path / "rel") and info["problem"] is None
