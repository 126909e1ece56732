"""The wheel installs only `lazyk` (grammar and passes inside it) and works from a fresh venv."""
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "-q", "-w", str(out), str(ROOT)],
        check=True, capture_output=True, text=True)
    (whl,) = out.glob("lazyk-*.whl")
    return whl


def test_wheel_adds_only_lazyk(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"lazyk"}
    assert "lazyk/grammar/types.lark" in names
    assert "lazyk/passes/__init__.py" in names


@pytest.mark.slow
def test_fresh_venv_parses_a_type(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    try:
        _check_fresh_venv(wheel, env_dir, tmp_path)
    finally:
        shutil.rmtree(env_dir, ignore_errors=True)  # ~270 MB with NumPy and llvmlite


def _check_fresh_venv(wheel: Path, env_dir: Path, tmp_path: Path) -> None:
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    # (no PYTHONPATH: a checkout on it would make pip see lazyk installed already)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    str(wheel)], check=True, capture_output=True, text=True, env=env,
                   cwd=tmp_path)
    code = ("import lazyk, sys; t = lazyk.dshape('3 * var * {x: float64, y: ?int32}');"
            "assert lazyk.dshape(str(t)) is t; assert 'site-packages' in lazyk.__file__;"
            "print(t.ndim, t.shape)")
    res = subprocess.run([str(py), "-c", code], capture_output=True, text=True, env=env,
                         cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "2 (3, None)"
    cli = subprocess.run([str(env_dir / "bin" / "lazyk"), "parse", "int33"],
                         capture_output=True, text=True, env=env, cwd=tmp_path)
    assert cli.returncode != 0 and "^" in cli.stderr
    ver = subprocess.run([str(env_dir / "bin" / "lazyk"), "--version"],
                         capture_output=True, text=True, env=env, cwd=tmp_path)
    assert ver.returncode == 0 and ver.stdout.strip() == "lazyk 0.1.0"
