"""Shared test settings: hypothesis profiles keep CI (2 cores, < 10 min) fast."""
import os
import shutil
import tempfile

from hypothesis import HealthCheck, settings

# CI draws the same examples on every run (derandomize): a CI result is reproducible, and a
# failure found by the random `dev` profile is kept as a regression test of its own.
settings.register_profile("ci", max_examples=12, deadline=None, derandomize=True,
                          database=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=200, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_configure(config):
    # Tests write nothing under the user's home: without LAZYK_CACHE_DIR (kernel cache) or
    # MPLCONFIGDIR (matplotlib's font cache) they use a temporary directory (subprocesses
    # inherit it), removed when the run ends.
    tmp = tempfile.mkdtemp(prefix="lazyk-tests-")
    config.add_cleanup(lambda: shutil.rmtree(tmp, ignore_errors=True))
    for var, sub in (("LAZYK_CACHE_DIR", "kernels"), ("MPLCONFIGDIR", "matplotlib")):
        if not os.environ.get(var):
            os.environ[var] = os.path.join(tmp, sub)
