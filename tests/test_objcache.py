"""Disk object cache: hits skip codegen, corrupt or truncated entries recompile, new processes load."""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

llvm = pytest.importorskip("llvmlite.binding")

from lazyk.backend import objcache  # noqa: E402

IR = r"""
define void @triad(ptr noalias %o, ptr noalias %a, ptr noalias %b, i64 %n) {
entry:
  %c = icmp sgt i64 %n, 0
  br i1 %c, label %loop, label %done
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
  %pa = getelementptr double, ptr %a, i64 %i
  %pb = getelementptr double, ptr %b, i64 %i
  %va = load double, ptr %pa
  %vb = load double, ptr %pb
  %t = fmul double %vb, 3.0
  %r = fadd double %va, %t
  %po = getelementptr double, ptr %o, i64 %i
  store double %r, ptr %po
  %i1 = add i64 %i, 1
  %c2 = icmp slt i64 %i1, %n
  br i1 %c2, label %loop, label %done
done:
  ret void
}
"""

# The same flow a backend runs: key from unoptimized IR; on a miss optimize, on a hit skip it.
COMPILE = textwrap.dedent('''
    import ctypes, time
    t0 = time.perf_counter()
    import llvmlite.binding as llvm
    from lazyk.backend import objcache

    def compile_triad(cache, ir):
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        tm = llvm.Target.from_default_triple().create_target_machine(
            cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=3)
        key = objcache.make_key(ir, options="O3")
        hit = cache.lookup(key)
        mod = llvm.parse_assembly(ir)
        mod.name = key
        if not hit:
            pto = llvm.create_pipeline_tuning_options(speed_level=3)
            pb = llvm.create_pass_builder(tm, pto)
            pb.getModulePassManager().run(mod, pb)
        engine = llvm.create_mcjit_compiler(mod, tm)
        cache.attach(engine)
        engine.finalize_object()
        fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 3, ctypes.c_int64)(
            engine.get_function_address("triad"))
        return engine, fn, hit
''')

exec(COMPILE)  # defines compile_triad in this module for the in-process tests


def _check(fn) -> None:
    a, b, out = np.arange(100.0), np.ones(100), np.empty(100)
    fn(out.ctypes.data, a.ctypes.data, b.ctypes.data, 100)
    np.testing.assert_array_equal(out, a + 3 * b)


def test_default_dir_env(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("LAZYK_CACHE_DIR", str(tmp_path / "x"))
    assert objcache.default_dir() == tmp_path / "x"
    monkeypatch.delenv("LAZYK_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert objcache.default_dir() == tmp_path / "lazyk"


def test_key_covers_ir_cpu_and_options() -> None:
    k = objcache.make_key(IR)
    assert k == objcache.make_key(IR) and len(k) == 64
    assert k != objcache.make_key(IR + " ")
    assert k != objcache.make_key(IR, cpu="generic")
    assert k != objcache.make_key(IR, options="O2")


def test_miss_then_hit(tmp_path) -> None:
    cache = objcache.ObjectCache(tmp_path)
    engine, fn, hit = compile_triad(cache, IR)  # noqa: F821
    assert not hit and cache.info()["entries"] == 1
    _check(fn)
    cache2 = objcache.ObjectCache(tmp_path)
    engine2, fn2, hit2 = compile_triad(cache2, IR)  # noqa: F821
    assert hit2 and cache2.hits == 1
    _check(fn2)


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "garbage"])
def test_corrupt_entry_recompiles(tmp_path, damage: str) -> None:
    cache = objcache.ObjectCache(tmp_path)
    compile_triad(cache, IR)  # noqa: F821
    (entry,) = tmp_path.glob("*.o")
    blob = bytearray(entry.read_bytes())
    if damage == "flip":
        blob[len(blob) // 2] ^= 0xFF
    elif damage == "truncate":
        blob = blob[: len(blob) - 17]
    elif damage == "empty":
        blob = bytearray()
    else:
        blob = bytearray(b"\x90" * 300)
    entry.write_bytes(bytes(blob))
    cache2 = objcache.ObjectCache(tmp_path)
    engine, fn, hit = compile_triad(cache2, IR)  # noqa: F821
    assert not hit and cache2.corrupt == 1
    _check(fn)
    assert objcache.ObjectCache(tmp_path).load(entry.stem) is not None  # rewritten whole


def test_store_is_atomic_and_clear(tmp_path) -> None:
    cache = objcache.ObjectCache(tmp_path)
    cache.store("f" * 64, b"payload")
    assert cache.load("f" * 64) == b"payload"
    dead = tmp_path / f".{'f' * 64}.x1y2z3w4.tmp"  # a writer killed before its rename
    dead.write_bytes(objcache.MAGIC + b"half")
    os.utime(dead, (1000, 1000))
    assert cache.info()["entries"] == 1
    assert cache.clear() == 1
    assert cache.info()["entries"] == 0 and not dead.exists()
    with pytest.raises(ValueError, match="not a lazyk cache key"):
        cache.store("../k" + "0" * 60, b"payload")


def test_a_directory_at_one_entrys_name_loses_that_entry_only(tmp_path) -> None:
    import warnings
    cache = objcache.ObjectCache(tmp_path)
    (tmp_path / ("a" * 64 + objcache.SUFFIX)).mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no "the cache directory is unusable")
        cache.store("a" * 64, b"payload")
        cache.store("b" * 64, b"other")
    assert cache.load("a" * 64) is None and cache.load("b" * 64) == b"other"


def test_new_process_loads_from_cache(tmp_path) -> None:
    script = COMPILE + textwrap.dedent(f'''
        import json
        ir = open({str(tmp_path / "k.ll")!r}).read()
        cache = objcache.ObjectCache({str(tmp_path / "cache")!r})
        t1 = time.perf_counter()
        engine, fn, hit = compile_triad(cache, ir)
        t2 = time.perf_counter()
        print(json.dumps({{"hit": hit, "compile_ms": (t2 - t1) * 1e3}}))
    ''')
    (tmp_path / "k.ll").write_text(IR)
    env = dict(os.environ)
    runs = [json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                      env=env, check=True).stdout) for _ in range(2)]
    assert [r["hit"] for r in runs] == [False, True]
    print(f"cold {runs[0]['compile_ms']:.2f} ms, disk-cache load {runs[1]['compile_ms']:.2f} ms")
    ctypes.sizeof(ctypes.c_int)  # keep ctypes import used for the exec'd code


def test_source_digest_tracks_code() -> None:
    d = objcache.source_digest("lazyk.backend.objcache")
    assert d == objcache.source_digest("lazyk.backend.objcache") and len(d) == 64
    assert d != objcache.source_digest("lazyk.backend.vecmath")
    package = objcache.source_digest("lazyk.backend")  # every module of the package
    assert package == objcache.source_digest("lazyk.backend") and package != d


def test_concurrent_writers_leave_a_whole_entry(tmp_path) -> None:
    code = textwrap.dedent(f'''
        import sys
        from lazyk.backend import objcache
        c = objcache.ObjectCache({str(tmp_path)!r})
        payload = bytes([int(sys.argv[1])]) * 200_000
        for _ in range(30):
            c.store("e" * 64, payload)
            got = c.load("e" * 64)
            assert got is not None and len(got) == 200_000 and len(set(got)) == 1, "torn read"
    ''')
    procs = [subprocess.Popen([sys.executable, "-c", code, str(i)], stderr=subprocess.PIPE)
             for i in range(1, 5)]
    errors = [p.communicate()[1] for p in procs if p.wait() != 0]
    assert not errors, errors
    assert objcache.ObjectCache(tmp_path).load("e" * 64) is not None


def test_prune_keeps_recent_entries_under_the_limit(tmp_path, monkeypatch) -> None:
    # NOTE: no automatic background prune (store #1 starts one): it would race this test's
    # own stores and mtime edits and delete entries by the wrong order.
    monkeypatch.setattr(objcache, "_PRUNE_EVERY", 0)
    cache = objcache.ObjectCache(tmp_path, max_bytes=10_000)
    for i in range(20):
        cache.store(f"{i:064d}", bytes(1000))
        os.utime(cache.path(f"{i:064d}"), (1000 + i, 1000 + i))  # entry i is i seconds newer
    cache.load(f"{0:064d}")  # a hit makes the oldest entry the most recently used
    cache.prune()
    info = cache.info()
    assert info["bytes"] <= 8_000
    assert cache.load(f"{0:064d}") is not None and cache.load(f"{19:064d}") is not None
    assert cache.load(f"{1:064d}") is None


def test_the_module_cap_applies_to_a_cache_made_before_it_was_set(tmp_path, monkeypatch):
    monkeypatch.setattr(objcache, "_PRUNE_EVERY", 0)
    cache = objcache.ObjectCache(tmp_path)  # (as lazyk's own, made at the first kernel)
    monkeypatch.setattr(objcache, "MAX_BYTES", 5_000)
    assert cache.max_bytes == 5_000
    for i in range(10):
        cache.store(f"{i:064d}", bytes(1000))
    cache.prune()
    assert cache.info()["bytes"] <= 4_000
    cache.max_bytes = 123  # (its own cap wins)
    assert cache.max_bytes == 123


def _old_format(key: str, obj: bytes) -> bytes:
    """An entry as the previous format wrote it: checksum over the payload only."""
    import hashlib
    import struct

    return struct.pack("<8s32sQ", b"LZKOBJ1\n", hashlib.sha256(obj).digest(), len(obj)) + obj


@pytest.mark.parametrize("damage", ["other_key", "truncated", "flip_payload", "flip_header",
                                    "zeroed", "foreign", "old_format", "empty"])
def test_tampered_entry_is_a_miss_and_replaced(tmp_path, damage: str) -> None:
    cache = objcache.ObjectCache(tmp_path)
    ka, kb = "a" * 64, "b" * 64
    pa, pb = b"\x7fELF object of kernel a" * 50, b"\x7fELF object of kernel b" * 50
    cache.store(ka, pa)
    cache.store(kb, pb)
    entry = cache.path(ka)
    blob = bytearray(entry.read_bytes())
    if damage == "other_key":  # a whole, valid entry, but another kernel's
        blob = bytearray(cache.path(kb).read_bytes())
    elif damage == "truncated":
        blob = blob[:-1]
    elif damage == "flip_payload":
        blob[-7] ^= 0x04
    elif damage == "flip_header":
        blob[20] ^= 0x01
    elif damage == "zeroed":
        blob = bytearray(len(blob))
    elif damage == "foreign":  # bare object code (or anything else) dropped in its place
        blob = bytearray(pb)
    elif damage == "old_format":
        blob = bytearray(_old_format(ka, pa))
    else:
        blob = bytearray()
    entry.write_bytes(bytes(blob))
    fresh = objcache.ObjectCache(tmp_path)
    assert fresh.load(ka) is None
    assert (fresh.misses, fresh.corrupt, fresh.hits) == (1, 1, 0)
    assert not entry.exists()  # deleted, so the next compile replaces it
    fresh.store(ka, pa)
    assert fresh.load(ka) == pa and fresh.load(kb) == pb


def test_checksum_covers_identity(tmp_path, monkeypatch) -> None:
    cache = objcache.ObjectCache(tmp_path)
    cache.store("c" * 64, b"code")
    monkeypatch.setattr(objcache, "_versions_text", "lazyk=other")
    assert cache.load("c" * 64) is None and cache.corrupt == 1


def test_verified_entry_that_does_not_link_is_recompiled(tmp_path, monkeypatch) -> None:
    from lazyk.backend import cpu

    monkeypatch.setattr(cpu, "_disk", [objcache.ObjectCache(tmp_path)])
    first = cpu.JITModule(IR, ("triad",))
    other = IR.replace("@triad", "@other")
    (path,) = tmp_path.glob("*.o")
    second = cpu.JITModule(other, ("other",))
    # A checksummed entry whose code lacks the symbol: it must never fail forever.
    cache = cpu._disk[0]
    cache.store(path.stem, cache.load(next(p for p in tmp_path.glob("*.o") if p != path).stem))
    again = cpu.JITModule(IR, ("triad",))
    assert cache.corrupt == 1
    fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 3, ctypes.c_int64)(again.addresses["triad"])
    _check(fn)
    assert objcache.ObjectCache(tmp_path).load(path.stem) is not None  # replaced by good code
    for m in (first, second, again):
        m.close()


# Runs lazyk kernels by name; prints which cache entries each one stored.
_KERNEL = textwrap.dedent('''
    import json, sys, numpy as np, lazyk
    from lazyk.backend import objcache
    stored, store = [], objcache.ObjectCache.store
    objcache.ObjectCache.store = lambda self, key, obj: (stored.append(key), store(self, key, obj))
    a, b, c = (lazyk.placeholder(n, 'N * float64') for n in 'abc')
    exprs = {"A": (a * 2.0 + b, 2), "B": ((a + b) * 3.0, 2), "C": ((a + b) * 3.0 + c, 3),
             "W": (a - b, 2)}
    refs = {"A": lambda x, y, z: x * 2.0 + y, "B": lambda x, y, z: (x + y) * 3.0,
            "C": lambda x, y, z: (x + y) * 3.0 + z, "W": lambda x, y, z: x - y}
    x, y, z = np.arange(100.0), np.linspace(0, 1, 100), np.full(100, 7.0)
    keys = {}
    for name in sys.argv[1:]:
        n = len(stored)
        e, nin = exprs[name]
        r = np.asarray(lazyk.compile(e)(*(x, y, z)[:nin]))
        assert r.dtype == np.float64 and r.shape == (100,), (r.dtype, r.shape)
        np.testing.assert_array_equal(r, refs[name](x, y, z), err_msg=name)
        keys[name] = stored[n:]
    print(json.dumps(keys))
''')


def test_lazyk_entry_copied_under_another_kernels_name(tmp_path) -> None:
    env = dict(os.environ, LAZYK_CACHE_DIR=str(tmp_path))

    def run(*names: str) -> dict:
        r = subprocess.run([sys.executable, "-c", _KERNEL, *names], capture_output=True,
                           text=True, env=env, timeout=120)
        assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
        return json.loads(r.stdout)

    keys = run("W", "A", "B", "C")  # W first: the pool, guards and the rest every run shares
    cache = objcache.ObjectCache(tmp_path)
    (ka,), (kb,), (kc,) = keys["A"], keys["B"], keys["C"]
    b_code = cache.path(kb).read_bytes()
    cache.path(ka).write_bytes(b_code)  # A would compute (a+b)*3
    cache.path(kb).write_bytes(cache.path(kc).read_bytes())  # B would run 3-input code
    assert run("A", "B", "C") == {"A": [ka], "B": [kb], "C": []}  # two misses, replaced
    assert run("A", "B", "C") == {"A": [], "B": [], "C": []}  # the replacements are hits
    assert cache.load(ka) not in (None, b_code[48:])


def test_sigkill_during_writes_leaves_no_bad_entry(tmp_path) -> None:
    import signal
    import time

    code = textwrap.dedent(f'''
        from lazyk.backend import objcache
        c = objcache.ObjectCache({str(tmp_path)!r})
        print("ready", flush=True)
        i = 0
        while True:
            i += 1
            c.store("d" * 64, bytes([i % 251]) * 4_000_000)
    ''')
    for delay in (0.05, 0.13, 0.21):
        p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
        assert p.stdout.readline().strip() == b"ready"
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
        got = objcache.ObjectCache(tmp_path).load("d" * 64)
        # a whole entry from one store, or none: never a torn one
        assert got is None or (len(got) == 4_000_000 and len(set(got)) == 1)
    assert objcache.ObjectCache(tmp_path).info()["entries"] <= 1  # half-written temps are no entries


def test_info_says_why_a_directory_cannot_be_made(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    info = objcache.ObjectCache(blocker / "cache").info()  # (a file where a parent goes)
    assert info["problem"] and "not a directory" in info["problem"]
    fresh = tmp_path / "new" / "cache"
    assert objcache.ObjectCache(fresh).info()["problem"] is None
    assert not (tmp_path / "new").exists()  # (info made nothing that stays)
    if os.path.isdir("/proc/self") and os.geteuid() == 0:  # (root may "write" /proc)
        assert objcache.ObjectCache("/proc/lazyk-none").info()["problem"]


def test_structural_keys_digest_every_code_generator_module(monkeypatch):
    """Kernels found on disk by their spec (no IR made) must be keyed by every module that
    generates their code: a change to any of them is another key, never stale code."""
    from lazyk.kernel import flat, nest
    seen = []
    for mod in (flat, nest):
        monkeypatch.setattr(mod, "source_digest", lambda *m: seen.append(m) or "x")
    flat._structural_key(None, None)
    nest.structural_key(("a key",))
    assert all("lazyk.codegen" in modules for modules in seen) and len(seen) == 2
