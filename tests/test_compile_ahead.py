"""A query's first call compiles on two cores: a fill pass's kernel compiles in a helper
process while its count passes compile and run here. Whatever happens to the helper, the
results are those of the in-process compile, and errors are reported the same way.

Each test runs in a subprocess (its own helper, a temporary disk cache).
"""
import os
import subprocess
import sys
import textwrap

# pairs i < j of each row whose values sum past 3.5: a count pass (how many pairs each row
# keeps), then a fill pass, whose kernel compiles ahead
_SETUP = """
import itertools
import lazyk
from lazyk.backend import cpu
rows = [[1.0, 2.0, 3.0], [], [4.0, 5.0], [0.5], [3.0, 0.25, 1.0, 2.5]]
x = lazyk.array(rows)
p = lazyk.argcombinations(x, 2, fields=["i", "j"])
want = [[{"i": i, "j": j} for i, j in itertools.combinations(range(len(r)), 2)
         if r[i] + r[j] > 3.5] for r in rows]
def check():
    got = p[(x[p.i] + x[p.j]) > 3.5].eval()
    assert str(got.type) == "5 * var * {i: int64, j: int64}", got.type
    assert got.tolist() == want, got.tolist()
cpu.start_helper()
cpu.host()._ahead.started()  # (wait until it is ready: the test needs it used)
"""


def _run(code: str, cache) -> str:
    env = dict(os.environ, LAZYK_CACHE_DIR=str(cache))
    r = subprocess.run([sys.executable, "-c", _SETUP + textwrap.dedent(code)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    return r.stdout


def test_fill_kernels_compile_ahead_and_give_the_same_results(tmp_path):
    out = _run("""
        check()
        h = cpu.host()
        print(h.optimized["ahead"], h._ahead.queue, h._ahead.done)
    """, tmp_path / "cache")
    ahead, queue, done = out.split(maxsplit=2)
    assert int(ahead) >= 1 and queue == "[]" and done.strip() == "{}", out
    # the same query from the disk cache: nothing compiles, no helper starts
    out = _run("""
        cpu.host()._ahead.close()
        cpu.host()._ahead = None
        cpu.start_helper = lambda: None
        check()
        h = cpu.host()
        print(h.optimized["in_process"], h.optimized["ahead"], cpu.generated[0])
    """, tmp_path / "cache")
    assert out.split() == ["0", "0", "0"], out


def test_a_helper_that_dies_with_kernels_ahead_costs_nothing(tmp_path):
    # killed after it was sent each fill pass's kernel: this process compiles them (and the
    # next kernel ahead starts a new helper)
    out = _run("""
        real = cpu.Host.compile_ahead
        def then_killed(self, text):
            sent = real(self, text)
            self._ahead.proc.kill()
            self._ahead.proc.wait()
            return sent
        cpu.Host.compile_ahead = then_killed
        check()
        print(cpu.host().optimized["ahead"])
    """, tmp_path / "cache")
    assert out.split() == ["0"], out


def test_ir_llvm_rejects_ahead_is_reported_by_the_compile_here(tmp_path):
    out = _run("""
        from lazyk.errors import CompileError
        bad = "define i64 @g(i64 %x) {\\n  ret i32 %x\\n}\\n"
        cpu.compile_ahead(lambda: bad, "test:bad")
        assert cpu.host()._ahead.queue  # sent
        try:
            cpu.JITModule(lambda: bad, ("g",), key_text="test:bad")
            raise AssertionError("invalid IR must raise")
        except CompileError as e:
            assert "LLVM rejected generated IR" in str(e) and "ret i32" in str(e)
        check()  # the helper still works
        print(cpu.host().optimized["ahead"])
    """, tmp_path / "cache")
    assert int(out) >= 1, out


def test_a_query_that_fails_with_a_kernel_ahead_leaves_at_once(tmp_path):
    # an error between sending a kernel ahead and taking it back (here, while taking it):
    # at exit the helper is killed, not waited for (a reply nobody reads could block it)
    out = _run("""
        def error(self, digest):
            raise ValueError("stopped")
        cpu.Host.collect = error
        try:
            check()
        except ValueError:
            pass
        helper = cpu.host()._ahead
        assert helper.queue  # its reply never read
        cpu._close_helper()
        print(helper.proc.returncode)
    """, tmp_path / "cache")
    assert out.split() == ["-9"], out


def test_no_python_to_start_a_helper_compiles_here(tmp_path):
    # an embedded interpreter (no sys.executable): kernels compile in process, no error
    out = _run("""
        import sys
        cpu._close_helper()
        sys.executable = None
        check()
        h = cpu.host()
        print(h.optimized["ahead"], h._ahead is None, h._ahead_broken)
    """, tmp_path / "cache")
    assert out.split() == ["0", "True", "True"], out
