"""Every `lazyk.a.b` name and `lazyk/...py` path the docs mention exists: the guides send users
and contributors to real modules, functions and caches."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

PATH = r"`((?:lazyk|passes|grammar|benchmarks)/[\w/]+\.(?:py|lark|md|json|toml|sh))"
ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md",
                                                 *sorted((ROOT / "benchmarks").glob("*.md"))]


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_names_and_paths_in_the_docs_exist():
    missing = []
    for doc in DOCS:
        text = doc.read_text()
        for name in sorted(set(re.findall(r"`(lazyk(?:\.[A-Za-z_]\w*)+)", text))):
            if not _resolves(name):
                missing.append(f"{doc.relative_to(ROOT)}: {name}")
        for path in sorted(set(re.findall(PATH, text))):
            if not (ROOT / path).exists():
                missing.append(f"{doc.relative_to(ROOT)}: {path}")
    assert not missing, "docs name what does not exist:\n" + "\n".join(missing)
